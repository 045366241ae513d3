"""Cost of ``verify`` on one partition against a bare header scan of the same bytes (``python bench/bench_verify.py``).

The partition is :mod:`bench_loader`'s (``--batches`` 1-record idempotent batches of one producer, one segment,
empty indexes, no checkpoints: every batch is recovered and replayed). ``verify`` checks each segment and loads
the partition as the broker would (:mod:`kafkatool.loader`) in one read of each segment; the ratio verify/scan is
what to compare across machines and commits. Both timings are the best of ``--runs`` in this process, in the same
run. Prints the figures and writes ``bench/out/verify_results.json``; asserts nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_loader import OUT, bare_scan, best, setup  # noqa: E402


def main() -> None:
    from kafkatool.loader import load_partition
    from kafkatool.verify import verify_paths

    args, part, log = setup(__doc__)

    def bare() -> None:
        bare_scan(log)

    def verify() -> None:
        for _ in verify_paths([part]):
            pass

    scan_s = best(bare, args.runs)
    load_s = best(lambda: load_partition(part), args.runs)
    verify_s = best(verify, args.runs)
    result = {"batches": args.batches, "bytes": log.stat().st_size, "scan_s": scan_s, "load_s": load_s,
              "verify_s": verify_s, "verify_over_scan": verify_s / scan_s, "load_over_scan": load_s / scan_s}
    print(f"{args.batches:,} 1-record idempotent batches, {result['bytes']:,} bytes: header scan {scan_s:.3f} s, "
          f"load {load_s:.3f} s ({result['load_over_scan']:.2f}x), verify {verify_s:.3f} s "
          f"({result['verify_over_scan']:.2f}x the scan)")
    (OUT / "verify_results.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
