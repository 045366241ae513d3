"""``dump --value`` / ``--key`` search against ``grep -c`` on the same segment (``make bench``; issue 30).

A partition of ``--size`` bytes (default 256 MiB) of uncompressed 1-record batches, appended with the project's
own writer (``kafkatool.logwriter.PartitionWriter``, as a broker appends them): a block of distinct batches
(``kafkatool.build.record_batch``: an order-like text value of ~150 bytes, a key, a header) built once, then
appended again and again with its offsets moved on. Measured, every figure a whole process's CPU time (user +
system), the fastest of ``--repeat`` interleaved runs, every ratio against ``grep -c PATTERN segment`` run in the
same loop:

- ``dump --value PATTERN`` where nothing matches (the issue's figure: at most 4x ``grep -c``), native and, with
  ``--pure``, ``KAFKATOOL_PURE_PYTHON=1``;
- ``dump --value`` matching one record in 1,000 and ``dump --key`` matching none, native: what a search that
  finds something costs.

Results go to stdout and ``bench/out/search.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scan import OUT  # noqa: E402

KAFKATOOL = [sys.executable, "-m", "kafkatool"]
BLOCK = 1000  # distinct batches, appended again and again


def cpu(argv: list[str], env: dict | None = None) -> float:
    """CPU seconds (user + system) of one whole process, output to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def generate(size: int) -> tuple[Path, dict]:
    """The partition dir (written once, kept while its stamp says the same size) and what it holds."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import PartitionWriter

    part = OUT / "search" / "orders-0"
    stamp = OUT / "search.stamp.json"
    block = b"".join(
        record_batch(i, [RecordSpec(f"order-{i:06d}".encode(),
                                    (f'{{"order": {i}, "customer": "c-{i % 97:04d}", "sku": "SKU-{i * 7 % 1000:04d}", '
                                     f'"qty": {i % 9 + 1}, "note": "deliver before noon, ring twice", '
                                     f'"ref": "{"#" if i == 0 else "r"}-{i:08d}"}}').encode(),
                                    1_700_000_000_000 + i, (("source", b"web" if i % 3 else b"app"),))],
                     partition_leader_epoch=1)
        for i in range(BLOCK))
    appends = max(1, size // len(block))
    meta = {"size": size, "block": len(block), "appends": appends, "records": appends * BLOCK}
    if stamp.exists() and json.loads(stamp.read_text()) == meta and part.is_dir():
        return part, meta
    shutil.rmtree(part.parent, ignore_errors=True)
    data = bytearray(block)
    starts, p = [], 0
    while p < len(data):
        starts.append(p)
        p += 12 + struct.unpack_from(">i", data, p + 8)[0]
    with PartitionWriter(part, topic="orders", partition=0, topic_id=bytes(range(16)),
                         segment_bytes=2**31 - 1) as writer:
        for n in range(appends):
            for k, at in enumerate(starts):  # the base offsets moved on: the CRC does not cover them
                struct.pack_into(">q", data, at, n * BLOCK + k)
            writer.append(bytes(data))
    stamp.write_text(json.dumps(meta))
    return part, meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=256 << 20, help="bytes of the segment (default 256 MiB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pure", action="store_true", help="also the pure-Python reader (minutes on 256 MiB)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    part, meta = generate(args.size)
    log = part / "00000000000000000000.log"
    native_env = {k: v for k, v in os.environ.items() if k != "KAFKATOOL_PURE_PYTHON"}
    pure_env = {**os.environ, "KAFKATOOL_PURE_PYTHON": "1"}
    none, some = "no-such-customer", r'"ref": "#'   # no record matches the first, one in BLOCK the second
    runs = {
        "grep -c": (["grep", "-c", none, str(log)], None),
        "dump --value (no match)": ([*KAFKATOOL, "dump", "--value", none, str(log)], native_env),
        "dump --value (1 in 1000)": ([*KAFKATOOL, "dump", "--value", some, str(log)], native_env),
        "dump --key (no match)": ([*KAFKATOOL, "dump", "--key", "^order-9{7}", str(log)], native_env),
    }
    if args.pure:
        runs["dump --value (no match) pure"] = ([*KAFKATOOL, "dump", "--value", none, str(log)], pure_env)
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeat):  # interleaved: each round runs every command once
        for name, (argv, env) in runs.items():
            best[name] = min(best[name], cpu(argv, env))
    grep = best["grep -c"]
    size = log.stat().st_size
    print(f"\nsearch: {meta['records']:,} 1-record batches, {size:,} bytes (CPU s, fastest of {args.repeat}, "
          "interleaved, whole processes)")
    results = {"bytes": size, "records": meta["records"]}
    for name, t in best.items():
        results[name] = {"cpu s": t, "x grep -c": t / grep, "s/GiB": t * (1 << 30) / size}
        print(f"  {name:<30} {t:7.2f} s   {t / grep:6.2f}x grep -c   {t * (1 << 30) / size:6.2f} s/GiB")
    print("  issue 30 asks: dump --value with no match <= 4x grep -c")
    (OUT / "search.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    main()
