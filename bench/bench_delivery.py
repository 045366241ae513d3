"""``delivery --sink`` against the honest floor of its job, a reader + bitmap script (``make bench``).

Built at bench time in ``bench/out/delivery/`` (reused while its stamp matches): one partition of ``--rows``
records written by :class:`kafkatool.logwriter.PartitionWriter` (uncompressed batches of 500 small records), and a
sink of about as many rows, as CSV (``key,topic,partition,offset``) and as JSON lines (``{"key":..,"topic":..,
"partition":..,"offset":..}``): every offset once, in batch-sized blocks taken in a shuffled order, but one offset
in 1,000 missing and one in 500 processed twice.

The floors, :data:`FLOOR` (``bench/out/delivery/floor.py``, written here and named in the output) and
:data:`FLOOR_JSONL` (``floor_jsonl.py``): ``csv.reader`` (or ``json.loads`` per line) over the sink, a ``bytearray``
bitmap of the offsets seen per partition, then the unset bits in the log's range counted. They check nothing (no
row rules, no duplicates, no transactions, the log's range given to them): what any Python reading of the sink
costs. Each sink's command and its floor run as whole processes, interleaved, ``--repeat`` times; CPU time (user +
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

FLOOR_JSONL = '''"""The floor of delivery on JSON lines: json.loads per line, a bytearray bitmap per partition."""
import json
import sys

sink, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen: dict[tuple[str, int], bytearray] = {}
with open(sink) as fh:
    for line in fh:
        row = json.loads(line)
        key = (row["topic"], row["partition"])
        bits = seen.get(key)
        if bits is None:
            bits = seen[key] = bytearray(hi - lo + 1)
        off = row["offset"]
        if lo <= off <= hi:
            bits[off - lo] = 1
for key, bits in seen.items():
    print(*key, "missing", bits.count(0))
'''


def generate(rows: int) -> tuple[Path, Path, Path]:
    """The log dir and the sinks (CSV, JSON lines), reused while the stamp matches."""
    import shutil

    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import PartitionWriter

    logdir, sink, sink_jsonl, stamp = OUT / "logdir", OUT / "sink.csv", OUT / "sink.jsonl", OUT / "stamp.json"
    meta = {"rows": rows, "per_batch": PER_BATCH, "version": 2}
    if stamp.exists() and json.loads(stamp.read_text()) == meta:
        return logdir, sink, sink_jsonl
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    with PartitionWriter(logdir / "bench-0", topic="bench", partition=0, topic_id=bytes(range(16))) as w:
        for base in range(0, rows, PER_BATCH):
            n = min(PER_BATCH, rows - base)
            w.append(record_batch(base, [RecordSpec(b"k", b"v" * 16, 1_700_000_000_000 + base + i)
                                         for i in range(n)]))
    blocks = list(range(0, rows, PER_BATCH))
    random.Random(30).shuffle(blocks)
    with open(sink, "w") as fh, open(sink_jsonl, "w") as fj:
        fh.write("key,topic,partition,offset\n")
        for base in blocks:
            kept = [o for o in range(base, min(base + PER_BATCH, rows)) if o % 1000 != 3
                    for _ in range(2 if o % 500 == 7 else 1)]
            fh.write("".join(f"k{o},bench,0,{o}\n" for o in kept))
            fj.write("".join(f'{{"key":"k{o}","topic":"bench","partition":0,"offset":{o}}}\n' for o in kept))
    stamp.write_text(json.dumps(meta))
    return logdir, sink, sink_jsonl


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
    logdir, sink, sink_jsonl = generate(args.rows)
    floors = {"CSV": (sink, OUT / "floor.py", FLOOR, "csv.reader"),
              "JSON lines": (sink_jsonl, OUT / "floor_jsonl.py", FLOOR_JSONL, "json.loads")}
    runs = {}
    for kind, (path, floor, text, _how) in floors.items():
        floor.write_text(text)
        runs[kind] = ([sys.executable, "-m", "kafkatool", "delivery", "-f", "jsonl", "--sink", str(path), str(logdir)],
                      [sys.executable, str(floor), str(path), "0", str(args.rows - 1)])
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeat):
        for kind, (ours, theirs) in runs.items():
            times.setdefault((kind, "delivery"), []).append(cpu(ours))
            times.setdefault((kind, "floor"), []).append(cpu(theirs))
    best = {k: min(v) for k, v in times.items()}
    rows = sum(1 for _ in open(sink)) - 1
    print(f"delivery --sink, {rows:,} rows (CSV, JSON lines) against one partition of {args.rows:,} records "
          f"(CPU time, best of {args.repeat}, interleaved)")
    print("| sink | command | CPU s | ratio to its floor |\n|---|---|---|---|")
    for kind, (_path, floor, _text, how) in floors.items():
        ours, theirs = best[(kind, "delivery")], best[(kind, "floor")]
        print(f"| {kind} | `kafkatool delivery --sink` | {ours:.2f} | {ours / theirs:.2f}x (must be at most 2x) |")
        print(f"| {kind} | floor: {how} + bytearray bitmap (`{floor.relative_to(OUT.parents[2])}`) | {theirs:.2f} "
              "| 1.00x |")
    if os.environ.get("BENCH_DELIVERY_PURE"):  # the pure-Python reader, for the record (not a Must show)
        env_pure = {**os.environ, "KAFKATOOL_PURE_PYTHON": "1"}
        for kind, (ours, _theirs) in runs.items():
            pure = min(cpu(ours, env_pure) for _ in range(args.repeat))
            print(f"| {kind} | `KAFKATOOL_PURE_PYTHON=1 kafkatool delivery --sink` | {pure:.2f} | "
                  f"{pure / best[(kind, 'floor')]:.2f}x |")
    csv_kind, (_p, csv_floor, _t, _h) = "CSV", floors["CSV"]
    (OUT.parent / "delivery_results.json").write_text(json.dumps({  # the row: the CSV sink
        "rows": rows, "records": args.rows, "repeat": args.repeat, "delivery_cpu_s": best[(csv_kind, "delivery")],
        "floor_cpu_s": best[(csv_kind, "floor")], "ratio": best[(csv_kind, "delivery")] / best[(csv_kind, "floor")],
        "floor": str(csv_floor.relative_to(OUT.parents[2])),
        "jsonl": {"delivery_cpu_s": best[("JSON lines", "delivery")], "floor_cpu_s": best[("JSON lines", "floor")],
                  "ratio": best[("JSON lines", "delivery")] / best[("JSON lines", "floor")]}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
