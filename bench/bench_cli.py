"""The CLI's own costs: start-up against ``python -c pass``, and the verify table of many partitions.

- start-up: ``kafkatool --help`` and ``kafkatool verify`` of one small segment, whole processes, each run
  ``--repeat`` times interleaved with ``python -c pass``; min and median (the machine is shared: min is the
  figure), as ratios to ``python -c pass`` in the same run (the issue asks for at most 3x);
- table: a log dir of ``--partitions`` small partitions; ``verify`` as text (findings, then the table) against
  ``verify --format jsonl``, whole processes, and the table rendering alone against ``json.dumps`` of the same
  rows.

    python bench/bench_cli.py [--repeat 20] [--partitions 2000]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkatool.build import RecordSpec, record_batch

PY = sys.executable


def one_partition(path: Path, i: int) -> None:
    path.mkdir(parents=True)
    batch = record_batch(0, [RecordSpec(f"key-{i}".encode(), b"value" * 20, 1_700_000_000_000 + i)])
    (path / "00000000000000000000.log").write_bytes(batch)


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def runs(cmds: dict[str, list[str]], repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeat):  # interleaved: a load spike hits every command alike
        for name, cmd in cmds.items():
            times[name].append(timed(cmd))
    return times


def startup(tmp: Path, repeat: int) -> None:
    one_partition(tmp / "one-0", 0)
    segment = str(tmp / "one-0" / "00000000000000000000.log")
    times = runs({"python -c pass": [PY, "-c", "pass"],
                  "kafkatool --help": [PY, "-m", "kafkatool", "--help"],
                  "kafkatool verify SEGMENT": [PY, "-m", "kafkatool", "verify", segment]}, repeat)
    base = min(times["python -c pass"])
    print(f"start-up, {repeat} runs each (whole processes)")
    for name, ts in times.items():
        print(f"  {name:26} min {min(ts) * 1000:6.0f} ms  median {statistics.median(ts) * 1000:6.0f} ms  "
              f"min/min(python -c pass) {min(ts) / base:4.1f}x")


def table(tmp: Path, partitions: int, repeat: int) -> None:
    logdir = tmp / "many"
    for i in range(partitions):
        one_partition(logdir / f"topic-{i}", i)
    times = runs({"verify (text)": [PY, "-m", "kafkatool", "verify", str(logdir)],
                  "verify --format jsonl": [PY, "-m", "kafkatool", "verify", "-f", "jsonl", str(logdir)]},
                 max(1, repeat // 5))
    print(f"\nverify of {partitions} partitions, whole processes, min of {max(1, repeat // 5)}")
    text, jsonl = min(times["verify (text)"]), min(times["verify --format jsonl"])
    print(f"  text {text:.2f} s, jsonl {jsonl:.2f} s: text/jsonl {text / jsonl:.2f}x")

    from kafkatool.cli.output import Output

    lines = subprocess.run([PY, "-m", "kafkatool", "verify", "-f", "jsonl", str(logdir)], capture_output=True,
                           text=True).stdout.splitlines()
    rows = [r for r in map(json.loads, lines) if r["type"] == "summary"]
    t = time.perf_counter()
    out = Output("text", stream=io.StringIO())
    for r in rows:
        out.emit(r)
    out.close()
    render = time.perf_counter() - t
    t = time.perf_counter()
    io.StringIO().write("".join(json.dumps(r) + "\n" for r in rows))
    dumps = time.perf_counter() - t
    print(f"  the table alone ({len(rows)} rows): {render * 1000:.0f} ms; json.dumps of the same rows "
          f"{dumps * 1000:.0f} ms ({render / dumps:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        startup(Path(d), args.repeat)
        table(Path(d), args.partitions, args.repeat)


if __name__ == "__main__":
    main()
