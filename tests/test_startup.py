"""What a command imports before it does anything: the fixed cost of every ``kafkatool`` run.

``--help`` needs typer and kafkatool's command modules, nothing more (a command's own help builds that command
alone); ``verify``, ``dump`` and ``dump --records`` of one segment need the readers, but never pydantic (typer
converts option values through it), the help renderer's markdown and syntax highlighting, the compression codecs
of an uncompressed segment, Spark or Arrow; nor rich when the output is no terminal, nor Construct (the reader's
numbers are in ``formats/constants.py``), nor the loader and small-file readers of a whole partition; and with
the native core, not crc32c either (whose import brings ``importlib.metadata``); and json only for jsonl. A whole
partition's verify needs the loader and the small-file readers, still without Construct, and its immutable values
are ``NamedTuple`` classes, not frozen dataclasses (kafkatool/__init__.py); a data partition's verify or dump needs
no json (its partition.metadata is not JSON), nor the KRaft metadata log's module, nor the payload decoders.
The timings are in ``bench/bench_cli.py`` (ratios against ``python -c pass`` taken in the same run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kafkatool import native

from .conftest import corpus_root

SEGMENT = str(corpus_root() / "kafka" / "recovery" / "crc-flip" / "before" / "rtopic-0" / "00000000000000000000.log")

# Never on a command's start path: each costs as much as starting Python, or more.
HEAVY = ("pydantic", "pydantic_core", "markdown_it", "pygments", "rich.markdown", "rich.syntax", "pyarrow",
         "pyspark", "numpy", "zstandard", "lz4", "cramjam")
# ``--help`` reads nothing: no readers, no output layer, no rich at all.
HELP_HEAVY = (*HEAVY, "rich", "construct", "crc32c", "json", "kafkatool.records", "kafkatool.cli.output")
# One segment, its output piped: what a partition, a terminal or the pure-Python reader would need.
SEGMENT_HEAVY = (*HEAVY, "rich", "construct", "kafkatool.loader", "kafkatool.smallfiles", "kafkatool.logwriter",
                 "kafkatool.locate", "kafkatool.replicas", "kafkatool.codecs")
NATIVE_HEAVY = ("crc32c", "importlib.metadata")  # the native core checks the CRCs
TEXT_HEAVY = ("json",)  # text output writes JSON only for a value it has no line for
COMMAND_MODULES = ("delivery_cmd", "dump_cmd", "internal_cmd", "locate_cmd", "overview_cmd", "producers_cmd",
                   "repair_cmd", "replicas_cmd", "spark_cmd", "verify_cmd")

RUN = """
import sys
sys.argv = ["kafkatool", *sys.argv[1:]]
from kafkatool.cli import main  # the console script's entry point
try:
    main()
except SystemExit:
    pass
modules = sorted(sys.modules)  # before this script's own imports
import gc, json
sys.__stderr__.write("\\nMODULES " + json.dumps(modules) + "\\n")
sys.__stderr__.write("GC " + json.dumps(gc.isenabled()) + "\\n")
"""


def run(*args: str, env: dict[str, str] | None = None) -> list[str]:
    """What ``kafkatool ARGS`` wrote to stderr, once it has run to its end in a fresh interpreter, and after it
    the modules loaded (``MODULES [...]``) and whether the cyclic garbage collector is on (``GC true``)."""
    p = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})})
    return p.stderr.splitlines()


def imported_by(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules loaded once ``kafkatool ARGS`` has run to its end, in a fresh interpreter."""
    line = next(x for x in run(*args, env=env) if x.startswith("MODULES "))
    return set(json.loads(line.removeprefix("MODULES ")))


def heavy(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n in modules or any(m.startswith(n + ".") for m in modules))


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["dump", "--help"], ["spark", "scan", "--help"],
                                  ["--version"]])
def test_help_imports_nothing_heavy(args: list[str]) -> None:
    assert heavy(imported_by(*args), HELP_HEAVY) == []


def test_a_commands_help_builds_that_command_alone() -> None:
    """The group lists its commands by their short help; building one (typer reads its signature) is for when it
    runs or shows its own help."""
    modules = imported_by("verify", "--help")
    assert [m for m in COMMAND_MODULES if f"kafkatool.cli.{m}" in modules] == ["verify_cmd"]


@pytest.mark.parametrize("args", [["verify"], ["verify", "-f", "jsonl"], ["dump"], ["dump", "--records"],
                                  ["dump", "--records", "-f", "jsonl"]])
def test_one_segment_imports_nothing_heavy(args: list[str]) -> None:
    """The default reader (the native core where it is built; ``KAFKATOOL_PURE_PYTHON`` of the test run set aside:
    the pure reader has its own test below)."""
    modules = imported_by(*args, SEGMENT, env={native.PURE_ENV: "0"})
    # it did run: verify of record files named alone is kafkatool.verify_files', without a partition's checks
    assert ("kafkatool.verify_files" if args[0] == "verify" else f"kafkatool.{args[0]}") in modules
    assert heavy(modules, SEGMENT_HEAVY) == []
    if args[0] == "verify":
        assert heavy(modules, ("kafkatool.dump", "kafkatool.verify", "kafkatool.segment_check")) == []
    if "jsonl" not in args:
        assert heavy(modules, TEXT_HEAVY) == []
    if native.available() is not None:
        assert heavy(modules, NATIVE_HEAVY) == []


def test_a_partition_with_producer_snapshots_checks_their_crcs_natively() -> None:
    """A partition's producer snapshots carry a CRC32C: the native core computes it, without the ``crc32c``
    package, whose import reads its metadata (~35 ms of each verify of a partition dir). In pure Python the package
    does it."""
    part = corpus_root() / "kafka" / "logdir" / "txn-0"
    assert list(part.glob("*.snapshot"))
    modules = imported_by("verify", str(part), env={native.PURE_ENV: "0"})
    assert "kafkatool.smallfiles" in modules  # it did read the partition's small files
    if native.available() is not None:
        assert heavy(modules, NATIVE_HEAVY) == []
    assert "crc32c" in imported_by("verify", str(part), env={native.PURE_ENV: "1"})


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_partition_is_verified_without_construct(pure: str) -> None:
    """A partition dir's small files (offset, time and transaction indexes, producer snapshots, checkpoints) are read
    with the layouts of formats/constants.py: Construct's import (~35 ms, pdb with it) is not on verify's path."""
    part = corpus_root() / "kafka" / "logdir" / "txn-0"
    assert {p.suffix for p in part.iterdir()} >= {".txnindex", ".snapshot", ".index", ".timeindex"}
    modules = imported_by("verify", str(part), env={native.PURE_ENV: pure})
    assert "kafkatool.loader" in modules and "kafkatool.smallfiles" in modules  # it did load the partition
    assert heavy(modules, ("construct",)) == []


# What a data partition's verify reads has no use for: json (only quorum-state and .kafka_cleanshutdown are JSON, and
# text output writes none), the KRaft metadata log's rules (__cluster_metadata alone), the decoded payloads of dump's
# --key-decoder/--value-decoder. Each was imported by every such verify until the readers deferred it.
PARTITION_UNUSED = ("json", "kafkatool.metadata_log", "kafkatool.payloads")


@pytest.mark.parametrize("command", ["verify", "dump"])
@pytest.mark.parametrize("name", ["headers-0", "txn-0"])
def test_a_data_partition_is_read_without_what_only_other_files_need(command: str, name: str) -> None:
    """A partition dir with its partition.metadata (and, txn-0, producer snapshots and a transaction index) is
    verified or dumped, as text, without json, kafkatool.metadata_log or kafkatool.payloads."""
    part = corpus_root() / "kafka" / "logdir" / name
    assert (part / "partition.metadata").is_file()
    modules = imported_by(command, str(part))
    assert "kafkatool.formats.metadata_files" in modules  # it did read partition.metadata
    assert heavy(modules, PARTITION_UNUSED) == []


VALUES = RUN + """
for name, module in sorted(sys.modules.items()):
    if name.startswith("kafkatool."):
        for value in vars(module).values():
            # made by @dataclass here (a subclass of another module's dataclass is not made again)
            params = isinstance(value, type) and vars(value).get("__dataclass_params__")
            if params and value.__module__ == name and params.frozen:
                sys.__stderr__.write(f"FROZEN {name}.{value.__qualname__}\\n")
"""


@pytest.mark.parametrize("command", [["verify"], ["dump"], ["dump", "--records", "--key", "k"], ["overview"],
                                     ["locate", "--offset", "3"]])
def test_the_values_on_a_partitions_path_are_named_tuples(command: list[str]) -> None:
    """kafkatool/__init__.py's rule: an immutable value on a command's path is a NamedTuple, not a frozen dataclass
    (~2 ms each to make at import here, where a NamedTuple costs ~0.2 ms): none among the modules a partition's
    verify, dump (its options and record filter), overview (its rows) or locate (its answer and steps) imports."""
    part = str(corpus_root() / "kafka" / "logdir" / "txn-0")
    p = subprocess.run([sys.executable, "-c", VALUES, *command, part], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert [line for line in p.stderr.splitlines() if line.startswith("FROZEN ")] == []


def test_one_segment_read_in_pure_python_imports_no_construct() -> None:
    """The pure-Python reader needs crc32c, but still not the Construct declarations (v2 batches are read with
    ``struct``, tied to the declarations by tests/test_records_formats.py)."""
    modules = imported_by("verify", SEGMENT, env={native.PURE_ENV: "1"})
    assert "crc32c" in modules  # it did read in Python
    assert heavy(modules, SEGMENT_HEAVY) == []


def test_option_values_are_converted_without_pydantic(run_cli) -> None:
    """Integers with a lower bound, paths and lists of them are checked as typer would (exit 2, one message),
    without the pydantic TypeAdapter typer 0.29 builds for them."""
    for value, message in (("x", "'x' is not a valid integer."), ("0", "0 is not in the range x>=1.")):
        p = run_cli("verify", "--jobs", value, SEGMENT)
        assert p.returncode == 2 and message in p.stderr, p.stderr
    assert heavy(imported_by("verify", "--jobs", "2", "--max-findings", "3", SEGMENT), HEAVY) == []


@pytest.mark.parametrize("args", [["--help"], ["verify", SEGMENT]])
def test_the_collector_is_back_on_once_the_cli_is_imported(args: list[str]) -> None:
    """The entry point turns the cyclic garbage collector off while it imports the CLI (whose objects all stay
    alive), never for good."""
    assert "GC true" in run(*args)
