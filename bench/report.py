"""Issue 30's "Must show" as one table, read from the JSON the benches of one run wrote (``make bench``,
``make bench-issue``).

``python bench/report.py --start`` (first in the run) writes ``bench/out/run_start.json``: the time and the load
average then. ``python bench/report.py`` (last) reads it and each bench's results, and prints one markdown table,
the seven rows of the issue (what, kafkatool's figure, the named comparison's figure in the same run, ratio, target,
met or not), under a header naming the machine (CPU, memory, OS, Python, kafkatool's git revision, whether the
native core is built, the load average at the start and at the end: the machine may be shared) and the date; and
writes it to ``bench/out/REPORT.md``. A row whose results file is missing, or older than the run's start, says so
instead of a figure: no figure from another run is shown as this run's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"
ROOT = BENCH.parent
START = OUT / "run_start.json"
LZ4 = ("big-lz4@kafka-python", "tiny-lz4@aiokafka", "big-lz4@aiokafka")


def machine() -> list[str]:
    """The header's lines: what ran the benches."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    mem = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")), 0) if Path("/proc/meminfo").exists() else 0
    osrel = Path("/etc/os-release")
    pretty = next((line.split("=", 1)[1].strip('"') for line in osrel.read_text().splitlines()
                   if line.startswith("PRETTY_NAME=")), "") if osrel.exists() else ""
    rev = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=10"],
                         capture_output=True, text=True, check=False).stdout.strip() or "unknown"
    branch = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--abbrev-ref", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    try:
        from kafkatool import _native  # noqa: F401
        native = "built" + (" (but KAFKATOOL_PURE_PYTHON=1)" if os.environ.get("KAFKATOOL_PURE_PYTHON") else "")
    except ImportError:
        native = "not built (pure-Python reader)"
    return [f"CPU: {models[0] if models else platform.processor() or 'unknown'} x {os.cpu_count()}"
            f" ({len(os.sched_getaffinity(0))} usable)",
            f"memory: {mem / 2**20:.1f} GiB; OS: {pretty or platform.system()} (kernel {platform.release()})",
            f"Python {platform.python_version()} ({sys.executable}); kafkatool {rev}"
            f"{f' on {branch}' if branch and branch != 'HEAD' else ''}; native core {native}"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def results(name: str, since: float) -> tuple[dict | None, str]:
    """A bench's results, or why not: missing, or written before this run began."""
    path = OUT / name
    if not path.exists():
        return None, f"no `bench/out/{name}`: its bench did not run"
    if path.stat().st_mtime < since:
        return None, f"`bench/out/{name}` is older than this run: its bench did not finish"
    return json.loads(path.read_text()), ""


def rows(since: float) -> list[tuple[str, str, str, str, str, str]]:
    """(what, kafkatool, comparison, ratio, target, met) of each of the seven."""
    out: list[tuple[str, str, str, str, str, str]] = []

    def row(what: str, ours: str, theirs: str, ratio: float, target: str, ok: bool) -> None:
        out.append((what, ours, theirs, f"{ratio:.2f}x", target, "**met**" if ok else "**not met**"))

    def missing(what: str, target: str, why: str) -> None:
        out.append((what, "-", "-", "-", target, why))

    linear, linear_why = results("linear_results.json", since)
    what = "`verify`, one partition of 20,000 one-batch segments (`bench_linear.py`)"
    if linear:
        small, large = linear["segments"]
        t = linear["cpu_s"]
        what = what.replace("20,000", f"{large:,}")
        row(what, f"{t['large']:.2f} s CPU", f"the same of {small:,} segments: {t['small']:.2f} s",
            linear["segments_ratio"], "<= 5x (linear: 4x)", linear["segments_ratio"] <= 5)
    else:
        missing(what, "<= 5x", linear_why)

    par, why = results("parallel_results.json", since)
    what = "`verify -j 2`, 4 partitions x 64 MiB as a killed broker leaves them, wall (`bench_parallel.py`)"
    if par and "4x64" in par:
        r = par["4x64"]
        row(what, f"{r['j2_wall_s']:.2f} s wall ({r['j2_cpu_s']:.2f} s CPU)",
            f"`verify -j 1`: {r['j1_wall_s']:.2f} s wall ({r['j1_cpu_s']:.2f} s CPU)"
            + (f"; load average {r['load_average']:.2f} on {r['cpus']} CPUs" if "load_average" in r else "")
            + ("" if r["same_output"] else "; OUTPUTS DIFFER"), r["wall_ratio"], "<= 0.85x", r["wall_ratio"] <= 0.85)
    else:
        missing(what, "<= 0.85x", why or "no 4x64 case in `bench/out/parallel_results.json`")

    dump, why = results("dump.json", since)
    what = "`verify --deep` of lz4 batches as Python clients write them, net of start-up (`bench_dump.py`)"
    lz4 = {k: dump[f"verify --deep {k}"] for k in LZ4 if f"verify --deep {k}" in dump} if dump else {}
    if lz4:
        rate = {k: r["verify --deep net rec/s"] / r["aiokafka net rec/s"] for k, r in lz4.items()}
        worst = min(rate, key=rate.__getitem__)
        r = lz4[worst]
        others = ", ".join(f"{k} {v:.2f}x" for k, v in rate.items() if k != worst)
        row(f"{what}; the worst of {len(lz4)}: {worst} ({r['bytes'] / 2**20:.0f} MiB)"
            + (f"; the others: {others}" if others else ""),
            f"{r['verify --deep net rec/s'] / 1e6:.2f} M records/s", f"aiokafka's C reader, same file: "
            f"{r['aiokafka net rec/s'] / 1e6:.2f} M records/s", rate[worst], ">= 1.2x", rate[worst] >= 1.2)
    else:
        missing(what, ">= 1.2x", why or "no lz4 case in `bench/out/dump.json`")

    internal, why = results("internal_results.json", since)
    what = "`offsets` of 200,050 commit records (`bench_internal.py`)"
    if internal and "offsets" in internal:
        r = internal["offsets"]
        what = what.replace("200,050", f"{r['records']:,}")
        row(what, f"{r['kafkatool_cpu_s']:.2f} s CPU ({r['records_per_s'] / 1e3:.0f} k records/s)",
            f"aiokafka's raw record decode: {r['aiokafka_cpu_s']:.2f} s ({r['aiokafka_records_per_s'] / 1e3:.0f} k "
            "records/s)", r["vs_aiokafka"], ">= 0.33x (rate)", r["vs_aiokafka"] >= 0.33)
    else:
        missing(what, ">= 0.33x (rate)", why or "no offsets case in `bench/out/internal_results.json`")

    search, why = results("search.json", since)
    what = "`dump --value` matching nothing, 256 MiB of 1-record batches (`bench_search.py`)"
    if search:
        r, grep = search["dump --value (no match)"], search["grep -c"]
        what = what.replace("256 MiB", f"{search['bytes'] / 2**20:.0f} MiB")
        row(what, f"{r['cpu s']:.2f} s CPU", f"`grep -c` on the segment: {grep['cpu s']:.2f} s", r["x grep -c"],
            "<= 4x", r["x grep -c"] <= 4)
    else:
        missing(what, "<= 4x", why)

    delivery, why = results("delivery_results.json", since)
    what = "`delivery --sink`, a sink of 10^6 rows (`bench_delivery.py`)"
    if delivery:
        what = what.replace("10^6 rows", f"{delivery['rows']:,} rows against {delivery['records']:,} records")
        row(what, f"{delivery['delivery_cpu_s']:.2f} s CPU",
            f"csv.reader + bitmap (`{delivery['floor']}`): {delivery['floor_cpu_s']:.2f} s",
            delivery["ratio"], "<= 2x", delivery["ratio"] <= 2)
    else:
        missing(what, "<= 2x", why)

    what = "`verify` of a log dir of 10,000 one-batch partitions (`bench_linear.py`)"
    if linear:
        t = linear["cpu_s"]
        what = what.replace("10,000", f"{linear['partitions']:,}")
        row(what, f"{t['partitions']:.2f} s CPU", f"scandir + read + CRC32C (`bench/{linear['floor']}`): "
            f"{t['floor']:.2f} s", linear["partitions_ratio"], "<= 5x", linear["partitions_ratio"] <= 5)
    else:
        missing(what, "<= 5x", linear_why)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", action="store_true", help="record the run's start (time, load average) and exit")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.start:
        START.write_text(json.dumps({"time": time.time(), "load": load()}) + "\n")
        return
    start = json.loads(START.read_text()) if START.exists() else {"time": 0.0, "load": "unknown"}
    began = datetime.datetime.fromtimestamp(start["time"], datetime.UTC) if start["time"] else None
    now = datetime.datetime.now(datetime.UTC)
    header = [f"run {began:%Y-%m-%d %H:%M} to {now:%H:%M} UTC ({(now - began).total_seconds() / 60:.0f} min)"
              if began else f"reported {now:%Y-%m-%d %H:%M} UTC (the run's start was not recorded)",
              *machine(), f"load average (1, 5, 15 min) at the start: {start['load']}; at the end: {load()}"]
    lines = ["## issue 30, Must show (`make bench`)", "", *(f"- {h}" for h in header), "",
             "Every figure the best of several runs, the ratio taken against the comparison in the same run "
             "(CPU time of whole processes unless it says wall).", "",
             "| what | kafkatool | comparison, same run | ratio | target | |", "|---|---|---|---|---|---|"]
    table = rows(start["time"])
    lines += ["| " + " | ".join(r) + " |" for r in table]
    lines += ["", f"{sum(r[5] == '**met**' for r in table)} of {len(table)} met."]
    text = "\n".join(lines) + "\n"
    (OUT / "REPORT.md").write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
