"""Throughput of the ``kafka-log`` Spark data source (batches level), against the single-process scan.

Writes ``--segments`` segments of ``--size`` bytes (default 4 x 512 MiB = 2 GiB) with
``bench_scan.generate`` under ``bench/out/spark/bench-<p>/00000000000000000000.log`` (one partition dir
each), then measures, each in a fresh process, best of ``--repeat``:

- ``cli``: ``kafkatool.records.scan`` over every segment, one after the other, in one process (what
  ``dump``/``verify`` run per segment);
- ``spark local[1]`` and ``local[2]``: ``spark.read.format("kafka-log").load(dir).count()`` (every
  column of every batch is built and handed to Spark as Arrow; a warm-up count runs first so the JVM and
  the Python workers are started).

Reported: GB/s, batches/s, the 1 -> 2 core speed-up (target >= 1.6x) and local[1] against the CLI scan
(target >= 0.7x per core). The files sit in the page cache: CPU cost, not disk speed. Results go to
stdout and ``bench/out/spark_results.json``. ``--kind tiny`` uses 1-record batches (the per-row worst case).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
JAVA17 = "/usr/lib/jvm/java-17-openjdk-amd64"


def m_cli(root: str) -> dict:
    from kafkatool.model import Batch
    from kafkatool.records import scan

    files = sorted(str(p) for p in Path(root).glob("*/*.log"))
    t = time.perf_counter()
    batches = 0
    for path in files:
        with open(path, "rb", buffering=0) as fh:
            for item in scan(fh, path):
                if type(item) is Batch:
                    batches += 1
    return {"seconds": time.perf_counter() - t, "batches": batches}


def m_spark(root: str, master: str, repeat: str) -> dict:
    if not os.environ.get("JAVA_HOME") and os.path.isdir(JAVA17):
        os.environ["JAVA_HOME"] = JAVA17
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kafkatool.spark import register

    spark = (SparkSession.builder.master(master).appName("bench_spark")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        spark.read.format("kafka-log").load(root).count()  # warm-up: JVM, Python workers, page cache
        best = None
        for _ in range(int(repeat)):
            t = time.perf_counter()
            n = spark.read.format("kafka-log").load(root).count()
            seconds = time.perf_counter() - t
            best = seconds if best is None else min(best, seconds)
    finally:
        spark.stop()
    return {"seconds": best, "batches": n}


def _child(argv: list[str]) -> None:
    name, *rest = argv
    print(json.dumps({"cli": m_cli, "spark": m_spark}[name](*rest)))


def run(*args: str, repeat: int = 1) -> dict:
    best = None
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                              check=True)
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        best = r if best is None or r["seconds"] < best["seconds"] else best
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=512 << 20, help="bytes per segment (default 512 MiB)")
    ap.add_argument("--segments", type=int, default=4, help="segments, one partition dir each (default 4)")
    ap.add_argument("--kind", choices=("big", "tiny"), default="big",
                    help="big: ~16 KiB batches of 16 x 1 KiB records; tiny: 1-record batches")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return
    sys.path.insert(0, str(HERE))
    from bench_scan import generate

    root = OUT / "spark" / args.kind
    total = {"bytes": 0, "batches": 0}
    for p in range(args.segments):
        d = root / f"bench-{p}"
        d.mkdir(parents=True, exist_ok=True)
        sys.stderr.write(f"generating {d} ...\n")
        meta = generate(d / "00000000000000000000.log", args.kind, args.size)
        total["bytes"] += meta["bytes"]
        total["batches"] += meta["batches"]
    for p in range(args.segments, 1000):  # a smaller --segments than last time: drop the extra dirs
        extra = root / f"bench-{p}"
        if not extra.exists():
            break
        for f in extra.iterdir():
            f.unlink()
        extra.rmdir()

    cli = run("cli", str(root), repeat=args.repeat)
    assert cli["batches"] == total["batches"], (cli, total)
    spark = {}
    for cores in (1, 2):
        r = run("spark", str(root), f"local[{cores}]", str(args.repeat))
        assert r["batches"] == total["batches"], (r, total)
        spark[cores] = r
    gb = total["bytes"] / 1e9
    results = {
        "data": {**total, "segments": args.segments, "kind": args.kind},
        "cli_scan_GBps": round(gb / cli["seconds"], 3),
        "cli_scan_batches_per_s": round(total["batches"] / cli["seconds"]),
        **{f"spark_local{c}_GBps": round(gb / spark[c]["seconds"], 3) for c in spark},
        **{f"spark_local{c}_batches_per_s": round(total["batches"] / spark[c]["seconds"]) for c in spark},
        "speedup_1_to_2": round(spark[1]["seconds"] / spark[2]["seconds"], 2),
        "local1_vs_cli": round(cli["seconds"] / spark[1]["seconds"], 2),
        "local2_per_core_vs_cli": round(cli["seconds"] / spark[2]["seconds"] / 2, 2),
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "spark_results.json").write_text(json.dumps(results, indent=2))
    print(f"| data | CLI scan | Spark local[1] | Spark local[2] | speed-up 1->2 | local[1] / CLI | "
          f"local[2] per core / CLI |\n|---|---|---|---|---|---|---|\n"
          f"| {args.segments} x {args.size / (1 << 20):.0f} MiB {args.kind} "
          f"({gb:.2f} GB, {total['batches']:,} batches) "
          f"| {results['cli_scan_GBps']} GB/s, {results['cli_scan_batches_per_s']:,} b/s "
          f"| {results['spark_local1_GBps']} GB/s, {results['spark_local1_batches_per_s']:,} b/s "
          f"| {results['spark_local2_GBps']} GB/s, {results['spark_local2_batches_per_s']:,} b/s "
          f"| {results['speedup_1_to_2']}x | {results['local1_vs_cli']}x | {results['local2_per_core_vs_cli']}x |")


if __name__ == "__main__":
    main()
