"""The CLI's own costs: start-up against ``python -c pass``, and the verify table of many partitions.

Every process runs kafkatool as a wheel installs it, not as the development checkout runs: the package is copied
into a scratch directory in the wheel's layout (``formats/`` as ``kafkatool/formats``, the native core if it is
built) and its bytecode compiled, as pip does at install (``compileall`` writes it whatever
``PYTHONDONTWRITEBYTECODE`` says; without it every run compiles ~50 modules, ~35 ms), then run by the console
script pip writes, in a scratch venv of this interpreter whose only ``.pth`` puts that directory and this
environment's site-packages (typer, rich, ...) on the path. ``python -c pass`` runs in that venv too: an editable
install's ``.pth`` imports its finder (pathlib, importlib.util: ~12 ms) at every start of Python, which would
charge both sides for what an installed kafkatool pays alone.

- start-up: ``kafkatool --help`` and ``kafkatool verify`` of one small segment, whole processes, each run
  ``--repeat`` times interleaved with ``python -c pass``; min and median (the machine is shared: min is the
  figure), as ratios to ``python -c pass`` in the same run (the issue asks for at most 3x), beside the floor
  typer sets: ``import typer`` alone and the ``--help`` of a one-command typer app;
- table: a log dir of ``--partitions`` small partitions; ``verify`` as text (findings, then the table) against
  ``verify --format jsonl``, whole processes, and the table rendering alone against ``json.dumps`` of the same
  rows.

    python bench/bench_cli.py [--repeat 20] [--partitions 2000] [--source DIR]

``--source`` times another checkout's ``kafkatool/``, ``formats/`` and console script (a branch's base, say) in
the same way.
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import shutil
import site
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
import venv
from pathlib import Path

from kafkatool.build import RecordSpec, record_batch

ROOT = Path(__file__).resolve().parents[1]
# what pip writes as bin/kafkatool for [project.scripts] kafkatool = "MODULE:FUNCTION"
CONSOLE_SCRIPT = """import re
import sys
from {module} import {function}
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit({function}())
"""


# the floor of any CLI made with typer (a required dependency): one command of one argument, asked for --help
TYPER_HELLO = """import typer

app = typer.Typer()


@app.command()
def hello(name: str) -> None:
    \"\"\"Say hello.\"\"\"
    print(f"hello {name}")


app()
"""


def installed(source: Path, into: Path) -> tuple[list[str], list[str]]:
    """``python`` and ``kafkatool`` as they run once a wheel of ``source`` is installed (see the module's help)."""
    site_dir = into / "site"
    skip = shutil.ignore_patterns("__pycache__")
    def ignore(d: str, names: list[str]) -> list[str]:  # and a checkout's kafkatool/formats link: copied below
        return [*skip(d, names), *(["formats"] if Path(d) == source / "kafkatool" else ())]

    shutil.copytree(source / "kafkatool", site_dir / "kafkatool", ignore=ignore)
    shutil.copytree(source / "formats", site_dir / "kafkatool" / "formats", ignore=skip)  # pyproject's package-dir
    if not compileall.compile_dir(site_dir, quiet=1):
        sys.exit(f"could not compile {site_dir}")
    env = into / "venv"
    venv.create(env, symlinks=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": env, "platbase": env}))
    # plain entries: the .pth files in this environment's site-packages (an editable finder) are not run
    (purelib / "kafkatool-bench.pth").write_text("".join(f"{d}\n" for d in [site_dir, *site.getsitepackages()]))
    script = env / "bin" / "kafkatool"
    entry = tomllib.loads((source / "pyproject.toml").read_text())["project"]["scripts"]["kafkatool"]
    module, function = entry.split(":")
    script.write_text(CONSOLE_SCRIPT.format(module=module, function=function))
    python = str(env / "bin" / "python")
    return [python], [python, str(script)]


def one_partition(path: Path, i: int) -> None:
    path.mkdir(parents=True)
    batch = record_batch(0, [RecordSpec(f"key-{i}".encode(), b"value" * 20, 1_700_000_000_000 + i)])
    (path / "00000000000000000000.log").write_bytes(batch)


def timed(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - t


def runs(cmds: dict[str, list[str]], repeat: int, cwd: Path) -> dict[str, list[float]]:
    """Each command's times, ``repeat`` runs interleaved, in ``cwd`` (where no kafkatool/ shadows the installed one)."""
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeat):  # interleaved: a load spike hits every command alike
        for name, cmd in cmds.items():
            times[name].append(timed(cmd, cwd))
    return times


def startup(tmp: Path, python: list[str], kafkatool: list[str], repeat: int) -> None:
    one_partition(tmp / "one-0", 0)
    segment = str(tmp / "one-0" / "00000000000000000000.log")
    hello = tmp / "typer_hello.py"  # the least a typer CLI can be: one command, one argument, its --help
    hello.write_text(TYPER_HELLO)
    times = runs({"python -c pass": [*python, "-c", "pass"],
                  "python -c 'import typer'": [*python, "-c", "import typer"],  # the CLI framework alone
                  "typer hello --help": [*python, str(hello), "--help"],
                  "kafkatool --help": [*kafkatool, "--help"],
                  "kafkatool verify SEGMENT": [*kafkatool, "verify", segment]}, repeat, tmp)
    base = min(times["python -c pass"])
    print(f"start-up, {repeat} runs each (whole processes, kafkatool as installed from a wheel, bytecode compiled)")
    for name, ts in times.items():
        print(f"  {name:26} min {min(ts) * 1000:6.1f} ms  median {statistics.median(ts) * 1000:6.1f} ms  "
              f"min/min(python -c pass) {min(ts) / base:4.2f}x")


def table(tmp: Path, kafkatool: list[str], partitions: int, repeat: int) -> None:
    logdir = tmp / "many"
    for i in range(partitions):
        one_partition(logdir / f"topic-{i}", i)
    times = runs({"verify (text)": [*kafkatool, "verify", str(logdir)],
                  "verify --format jsonl": [*kafkatool, "verify", "-f", "jsonl", str(logdir)]},
                 max(1, repeat // 5), tmp)
    print(f"\nverify of {partitions} partitions, whole processes, min of {max(1, repeat // 5)}")
    text, jsonl = min(times["verify (text)"]), min(times["verify --format jsonl"])
    print(f"  text {text:.2f} s, jsonl {jsonl:.2f} s: text/jsonl {text / jsonl:.2f}x")

    from kafkatool.cli.output import Output

    lines = subprocess.run([*kafkatool, "verify", "-f", "jsonl", str(logdir)], capture_output=True, text=True,
                           cwd=tmp).stdout.splitlines()
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
    ap.add_argument("--source", type=Path, default=ROOT, help="the checkout to time (default: this one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        python, kafkatool = installed(args.source, Path(d) / "installed")
        startup(Path(d), python, kafkatool, args.repeat)
        table(Path(d), kafkatool, args.partitions, args.repeat)


if __name__ == "__main__":
    main()
