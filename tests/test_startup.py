"""What a command imports before it does anything: the fixed cost of every ``kafkatool`` run.

``--help`` needs typer and kafkatool's command modules, nothing more; ``verify`` of one segment needs the
readers and rich for its table, but never pydantic (typer converts option values through it), the help
renderer's markdown and syntax highlighting, the compression codecs of an uncompressed segment, Spark or Arrow.
The timings are in ``bench/bench_startup.py`` (ratios against ``python -c pass`` taken in the same run).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import corpus_root

SEGMENT = str(corpus_root() / "kafka" / "recovery" / "crc-flip" / "before" / "rtopic-0" / "00000000000000000000.log")

# Never on a command's start path: each costs as much as starting Python, or more.
HEAVY = ("pydantic", "pydantic_core", "markdown_it", "pygments", "rich.markdown", "rich.syntax", "pyarrow",
         "pyspark", "numpy", "zstandard", "lz4", "cramjam")
# ``--help`` reads nothing: no readers, no output layer, no rich at all.
HELP_HEAVY = (*HEAVY, "rich", "construct", "crc32c", "kafkatool.records", "kafkatool.cli.output")

RUN = """
import json, sys
sys.argv = ["kafkatool", *json.loads(sys.argv[1])]
from kafkatool.cli.main import main
try:
    main()
except SystemExit:
    pass
sys.__stderr__.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def imported_by(*args: str) -> set[str]:
    """The modules loaded once ``kafkatool ARGS`` has run to its end, in a fresh interpreter."""
    p = subprocess.run([sys.executable, "-c", RUN, json.dumps(args)], capture_output=True, text=True, timeout=120)
    line = next(x for x in p.stderr.splitlines() if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def heavy(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["dump", "--help"], ["spark", "scan", "--help"],
                                  ["--version"]])
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    assert heavy(imported_by(*args), HELP_HEAVY) == []


def test_verify_of_one_segment_imports_nothing_heavy() -> None:
    modules = imported_by("verify", SEGMENT)
    assert "kafkatool.verify" in modules  # it did run
    assert heavy(modules, HEAVY) == []


def test_option_values_are_converted_without_pydantic() -> None:
    """Integers with a lower bound, paths and lists of them are checked as typer would (exit 2, one message),
    without the pydantic TypeAdapter typer 0.29 builds for them."""
    for value, message in (("x", "'x' is not a valid integer."), ("0", "0 is not in the range x>=1.")):
        p = subprocess.run([sys.executable, "-m", "kafkatool", "verify", "--jobs", value, SEGMENT],
                           capture_output=True, text=True)
        assert p.returncode == 2 and message in p.stderr, p.stderr
    assert heavy(imported_by("verify", "--jobs", "2", "--max-findings", "3", SEGMENT), HEAVY) == []
