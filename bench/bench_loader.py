"""Cost of loading a partition as the broker does (:func:`kafkatool.loader.load_partition`) against a bare header
scan of the same bytes (``python bench/bench_loader.py``).

The partition: ``--batches`` (default 114,000) 1-record idempotent batches of one producer in one segment with
empty indexes and no checkpoints, so the whole segment is recovered and every batch goes through the producer state
(the loader's worst case per byte). Also timed: the same load with ``Rebuild`` (``repair``'s: indexes,
``.txnindex`` and producer snapshots rebuilt from the batch headers). Written to ``bench/out/loader/`` once and
reused. Each timing is the best of ``--runs`` in this process, taken in the same run; the ratio is what to compare
across machines. Prints the figures and writes ``bench/out/loader_results.json``; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
T0 = 1_700_000_000_000


def generate(root: Path, batches: int) -> Path:
    from kafkatool.build import RecordSpec, record_batch

    part = root / "bench-0"
    log = part / f"{0:020d}.log"
    stamp = root / "bench-0.json"
    if stamp.exists() and json.loads(stamp.read_text()) == {"batches": batches} and log.exists():
        return part
    part.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        for i in range(batches):
            fh.write(record_batch(i, [RecordSpec(b"k", b"v" * 100, T0 + i)], producer_id=5, producer_epoch=0,
                                  base_sequence=i))
    for ext in ("index", "timeindex"):
        (part / f"{0:020d}.{ext}").write_bytes(b"")
    stamp.write_text(json.dumps({"batches": batches}))
    return part


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def setup(doc: str) -> tuple[argparse.Namespace, Path, Path]:
    """The options (``--batches``, ``--runs``), the bench partition dir and its one segment."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--batches", type=int, default=114_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    part = generate(OUT / "loader", args.batches)
    return args, part, part / f"{0:020d}.log"


def bare_scan(log: Path) -> None:
    """The comparison: a bare header scan of the segment (:func:`kafkatool.records.scan`)."""
    from kafkatool.records import scan

    with open(log, "rb", buffering=0) as fh:
        for _ in scan(fh, str(log)):
            pass


def main() -> None:
    from kafkatool.loader import Rebuild, load_partition

    args, part, log = setup(__doc__)

    def bare() -> None:
        bare_scan(log)

    rebuild = Rebuild(4096, T0, 86_400_000)  # what repair asks for: indexes, .txnindex, snapshots rebuilt

    loaded = load_partition(part)
    scan_s, load_s = best(bare, args.runs), best(lambda: load_partition(part), args.runs)
    rebuild_s = best(lambda: load_partition(part, rebuild=rebuild), args.runs)
    result = {"batches": args.batches, "bytes": log.stat().st_size, "leo": loaded.log_end_offset,
              "scan_s": scan_s, "load_s": load_s, "load_over_scan": load_s / scan_s,
              "load_batches_per_s": args.batches / load_s,
              "load_rebuild_s": rebuild_s, "load_rebuild_over_scan": rebuild_s / scan_s}
    print(f"{args.batches:,} 1-record idempotent batches, {result['bytes']:,} bytes: header scan {scan_s:.3f} s, "
          f"load {load_s:.3f} s ({result['load_over_scan']:.2f}x the scan, "
          f"{result['load_batches_per_s']:,.0f} batches/s), load rebuilding indexes and snapshots as repair does "
          f"{rebuild_s:.3f} s ({result['load_rebuild_over_scan']:.2f}x the scan)")
    (OUT / "loader_results.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
