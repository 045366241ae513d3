"""``delivery --sink`` against the honest floor of its job, a csv.reader + bitmap script (``make bench``).

Built at bench time in ``bench/out/delivery/`` (reused while its stamp matches): one partition of ``--rows``
records written by :class:`kafkatool.logwriter.PartitionWriter` (uncompressed batches of 500 small records), and a
CSV sink of about as many rows (``key,topic,partition,offset``): every offset once, in batch-sized blocks taken in
a shuffled order, but one offset in 1,000 missing and one in 500 processed twice.

The floor, :data:`FLOOR` (``bench/out/delivery/floor.py``, written here and named in the output): ``csv.reader``
over the sink, a ``bytearray`` bitmap of the offsets seen per partition, then the unset bits in the log's range
counted. It checks nothing (no row rules, no duplicates, no transactions, the log's range given to it): what any
Python reading of the sink costs. Both run as whole processes, interleaved, ``--repeat`` times; CPU time (user +
system of the child), best of the runs, and their ratio in the same run (the issue asks for at most 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out" / "delivery"
PER_BATCH = 500

FLOOR = '''"""The floor of delivery: csv.reader over the sink, a bytearray bitmap per partition, unset bits counted."""
import csv
import sys

sink, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen: dict[tuple[str, str], bytearray] = {}
with open(sink, newline="") as fh:
    rows = csv.reader(fh)
    header = next(rows)
    t, p, o = header.index("topic"), header.index("partition"), header.index("offset")
    for row in rows:
        key = (row[t], row[p])
        bits = seen.get(key)
        if bits is None:
            bits = seen[key] = bytearray(hi - lo + 1)
        off = int(row[o])
        if lo <= off <= hi:
            bits[off - lo] = 1
for key, bits in seen.items():
    print(*key, "missing", bits.count(0))
'''


def generate(rows: int) -> tuple[Path, Path]:
    """The log dir and the sink, reused while the stamp matches."""
    import shutil

    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import PartitionWriter

    logdir, sink, stamp = OUT / "logdir", OUT / "sink.csv", OUT / "stamp.json"
    meta = {"rows": rows, "per_batch": PER_BATCH, "version": 1}
    if stamp.exists() and json.loads(stamp.read_text()) == meta:
        return logdir, sink
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    with PartitionWriter(logdir / "bench-0", topic="bench", partition=0, topic_id=bytes(range(16))) as w:
        for base in range(0, rows, PER_BATCH):
            n = min(PER_BATCH, rows - base)
            w.append(record_batch(base, [RecordSpec(b"k", b"v" * 16, 1_700_000_000_000 + base + i)
                                         for i in range(n)]))
    blocks = list(range(0, rows, PER_BATCH))
    random.Random(30).shuffle(blocks)
    with open(sink, "w") as fh:
        fh.write("key,topic,partition,offset\n")
        for base in blocks:
            fh.write("".join(f"k{o},bench,0,{o}\n" * (2 if o % 500 == 7 else 1)
                             for o in range(base, min(base + PER_BATCH, rows)) if o % 1000 != 3))
    stamp.write_text(json.dumps(meta))
    return logdir, sink


def cpu(argv: list[str], env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of one child process (its output discarded, its exit code checked)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {p.returncode}: {p.stderr.decode()[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    logdir, sink = generate(args.rows)
    floor = OUT / "floor.py"
    floor.write_text(FLOOR)
    ours = [sys.executable, "-m", "kafkatool", "delivery", "-f", "jsonl", "--sink", str(sink), str(logdir)]
    theirs = [sys.executable, str(floor), str(sink), "0", str(args.rows - 1)]
    env_pure = {**os.environ, "KAFKATOOL_PURE_PYTHON": "1"}
    times: dict[str, list[float]] = {"delivery": [], "floor": []}
    for _ in range(args.repeat):
        times["delivery"].append(cpu(ours))
        times["floor"].append(cpu(theirs))
    best = {k: min(v) for k, v in times.items()}
    rows = sum(1 for _ in open(sink)) - 1
    print(f"delivery --sink, {rows:,} CSV rows against one partition of {args.rows:,} records "
          f"(CPU time, best of {args.repeat}, interleaved)")
    print("| command | CPU s | ratio to the floor |\n|---|---|---|")
    print(f"| `kafkatool delivery --sink` | {best['delivery']:.2f} | {best['delivery'] / best['floor']:.2f}x "
          "(must be at most 2x) |")
    print(f"| floor: csv.reader + bytearray bitmap (`{floor.relative_to(OUT.parents[2])}`) | {best['floor']:.2f} "
          "| 1.00x |")
    if os.environ.get("BENCH_DELIVERY_PURE"):  # the pure-Python reader, for the record (not a Must show)
        pure = min(cpu(ours, env_pure) for _ in range(args.repeat))
        print(f"| `KAFKATOOL_PURE_PYTHON=1 kafkatool delivery --sink` | {pure:.2f} | {pure / best['floor']:.2f}x |")
    (OUT.parent / "delivery_results.json").write_text(json.dumps({
        "rows": rows, "records": args.rows, "repeat": args.repeat, "delivery_cpu_s": best["delivery"],
        "floor_cpu_s": best["floor"], "ratio": best["delivery"] / best["floor"],
        "floor": str(floor.relative_to(OUT.parents[2]))}, indent=2) + "\n")


if __name__ == "__main__":
    main()
