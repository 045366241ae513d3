"""The command line as a user meets it: real subprocesses, real files, exit codes and streams."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch

from .conftest import PROJECT_ROOT, corpus_root

ROOT = corpus_root()
TXN = ROOT / "kafka/logdir/txn-0"


def test_clean_dump_exits_0_and_jsonl_is_plain_json(run_cli) -> None:
    proc = run_cli("dump", "--format", "jsonl", "--records", TXN)
    assert proc.returncode == 0, proc.stderr
    lines = proc.jsonl()
    assert lines[0] == {"type": "file", "path": str(TXN / "00000000000000000000.log")}
    assert not [x for x in lines if x["type"] == "finding"]
    assert {"batch", "record", "index_entry", "time_index_entry", "aborted_txn", "producer"} <= {
        x["type"] for x in lines}


def test_damaged_file_exits_1_with_findings_on_stdout(run_cli) -> None:
    torn = ROOT / "kafka/recovery/torn-tail/before/rtopic-0/00000000000000000259.log"
    proc = run_cli("dump", "--format", "jsonl", torn)
    assert proc.returncode == 1
    finding = proc.jsonl()[-1]
    assert finding == {"type": "finding", "severity": "error", "code": "torn-tail", "path": str(torn),
                       "position": 846, "message": finding["message"]}


def test_usage_errors_exit_2(run_cli) -> None:
    assert run_cli("dump", "/no/such/path").returncode == 2
    assert run_cli("dump", "--format", "xml", TXN).returncode == 2
    assert run_cli("dump", "--no-such-option", TXN).returncode == 2
    assert run_cli("no-such-command").returncode == 2


def test_unreadable_file_is_a_finding_and_exits_3(tmp_path: Path, run_cli) -> None:
    """An I/O error on one file is reported with its path; the other files are still dumped."""
    (tmp_path / "00000000000000000000.log").symlink_to("/proc/self/mem")  # any read fails, even for root
    shutil.copyfile(TXN / "leader-epoch-checkpoint", tmp_path / "leader-epoch-checkpoint")
    proc = run_cli("dump", "-f", "jsonl", tmp_path)
    assert proc.returncode == 3, proc.stderr
    lines = proc.jsonl()
    (err,) = [x for x in lines if x["type"] == "finding"]
    assert (err["code"], err["path"]) == ("io-error", str(tmp_path / "00000000000000000000.log"))
    assert any(x["type"] == "epoch" for x in lines)
    assert "Traceback" not in proc.stderr


def test_help_has_examples_and_does_not_import_the_engines(run_cli) -> None:
    for args in (["--help"], ["dump", "--help"]):
        proc = run_cli(*args)
        assert proc.returncode == 0
    assert "Examples" in run_cli("dump", "--help").stdout
    probe = ("import sys, kafkatool.cli.main as m; "
             "print(sorted(x for x in sys.modules if x.split('.')[0] in ('construct', 'crc32c', 'zstandard', 'lz4', "
             "'cramjam', 'pyspark') or x in ('kafkatool.records', 'kafkatool.codecs', 'kafkatool.dump')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"heavy modules imported at start-up: {out}"


def test_filters_and_limits(run_cli) -> None:
    seg = TXN / "00000000000000000000.log"
    lines = run_cli("dump", "-f", "jsonl", "-r", "--from-offset", "20", "--to-offset", "25", seg).jsonl()
    batches = [x for x in lines if x["type"] == "batch"]
    assert batches and all(b["last_offset"] >= 20 and b["base_offset"] <= 25 for b in batches)
    assert sorted({x["offset"] for x in lines if x["type"] == "record"}) == list(range(20, 26))
    assert len([x for x in run_cli("dump", "-f", "jsonl", "--max-batches", "3", seg).jsonl()
                if x["type"] == "batch"]) == 3
    first = [x for x in run_cli("dump", "-f", "jsonl", "--max-bytes", "1", seg).jsonl() if x["type"] == "batch"]
    assert [b["position"] for b in first] == [0]


def test_value_renderings(run_cli) -> None:
    seg = ROOT / "kafka/logdir/headers-0/00000000000000000000.log"
    base = run_cli("dump", "-f", "jsonl", "-r", "--max-batches", "1", seg).jsonl()
    for mode in ("text", "hex", "none"):
        got = run_cli("dump", "-f", "jsonl", "-r", "--max-batches", "1", "--values", mode, seg).jsonl()
        assert len(got) == len(base)
        rec = [x for x in got if x["type"] == "record"][0]
        if mode == "none":
            assert "key" not in rec and "value" not in rec
        elif mode == "hex":
            assert rec["key"] == b"k".hex()
        else:
            assert rec["key"] == "k"
    text = run_cli("dump", "-r", "--max-batches", "1", seg)
    assert text.returncode == 0 and "key='k'" in text.stdout and "0x000102fffe" in text.stdout


def test_decompression_bomb_is_a_finding_not_an_allocation(tmp_path: Path, run_cli) -> None:
    bomb = record_batch(0, [RecordSpec(None, bytes(64 << 20), 1_700_000_000_000)], compression="zstd")
    assert len(bomb) < 64 << 10
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(bomb)
    proc = run_cli("dump", "-f", "jsonl", "-r", "--max-decompressed", str(1 << 20), seg)
    assert proc.returncode == 1
    findings = [x for x in proc.jsonl() if x["type"] == "finding"]
    assert [(f["code"], f["position"]) for f in findings] == [("decompression-limit", 0)]


@pytest.mark.parametrize("seed", range(6))
def test_mutated_segments_never_crash(tmp_path: Path, seed: int, run_cli) -> None:
    """Random byte flips, truncations and garbage: always findings with positions, never a traceback."""
    rng = random.Random(seed)
    sources = [TXN / "00000000000000000000.log", ROOT / "kafka/logdir/codecs-4/00000000000000000000.log",
               ROOT / "kafka/legacy/magic1-snappy-0/00000000000000000000.log",
               ROOT / "kafka/legacy/magic0-lz4-0/00000000000000000000.log"]
    data = bytearray(sources[seed % len(sources)].read_bytes())
    for _ in range(rng.randint(1, 40)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    if seed % 2:
        del data[rng.randrange(len(data)):]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(bytes(data))
    for fmt in ("jsonl", "text"):
        proc = run_cli("dump", "-f", fmt, "-r", seg)
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    for f in run_cli("dump", "-f", "jsonl", "-r", seg).jsonl():
        if f["type"] == "finding":
            assert f["path"] == str(seg) and isinstance(f["position"], int) and f["message"]


def test_text_dump_of_a_whole_log_dir(run_cli) -> None:
    proc = run_cli("dump", "--records", ROOT / "kafka/logdir")
    assert proc.returncode == 0, proc.stderr
    assert "── " in proc.stdout and "COMMIT" in proc.stdout and "ABORT" in proc.stdout
    assert "producer_id" in proc.stdout  # producer snapshot table header


def test_absurd_length_field_is_a_finding_not_an_allocation(tmp_path: Path, run_cli) -> None:
    """A size field that fits in the file but exceeds --max-batch-bytes is corruption, not a 1 GiB read."""
    good = record_batch(0, [RecordSpec(b"k", b"v", 1_700_000_000_000)])
    bad = bytearray(record_batch(1, [RecordSpec(b"k", b"v" * 5000, 1_700_000_000_000)]))
    bad[8:12] = (len(bad) - 12 + 1).to_bytes(4, "big")  # declares more than it holds, still within the file
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(good + bytes(bad) + bytes(4096))
    proc = run_cli("dump", "-f", "jsonl", "--max-batch-bytes", "4096", seg)
    assert proc.returncode == 1
    lines = proc.jsonl()
    assert [x["type"] for x in lines] == ["batch", "finding"]
    assert (lines[1]["code"], lines[1]["position"]) == ("batch-too-large", len(good))


# Every command that takes paths, with the arguments it needs besides them.
_PATH_COMMANDS = {
    "verify": [], "dump": [], "txns": [], "producers": [], "replicas": [], "offsets": [], "repair": [],
    "epochs": [], "txn-state": [], "metadata": [], "locate": ["--offset", "0"],
}


@pytest.mark.parametrize("layout", ["empty", "unrelated"])
@pytest.mark.parametrize("command", [*_PATH_COMMANDS, "truncation"])
def test_nothing_kafka_under_the_path_exits_2_with_one_line(tmp_path: Path, command: str, layout: str, run_cli) -> None:
    """A wrong path (an empty dir, or a dir of files that are not Kafka's) is a usage error for every command:
    exit 2, one line on stderr naming the path, nothing on stdout (before: verify said "clean", dump, txns,
    producers and repair printed nothing and exited 0)."""
    wrong = tmp_path / layout
    wrong.mkdir()
    if layout == "unrelated":
        (wrong / "notes.txt").write_text("nothing to do with kafka\n")
        (wrong / "photos").mkdir()
        (wrong / "photos" / "a.jpg").write_bytes(b"\xff\xd8\xff")
    if command == "truncation":
        proc = run_cli(command, "--leader", wrong, "--follower", TXN)
    else:
        proc = run_cli(command, *_PATH_COMMANDS[command], wrong)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr == f"kafkatool: error: no Kafka log dir, partition or segment under {wrong}\n"
    assert proc.stdout == ""


def test_shell_completion_script_for_the_running_shell() -> None:
    """``--show-completion`` prints the script ``--install-completion`` would install, for the shell it runs in
    (typer detects it from the parent process): it calls kafkatool back with its completion variable set."""
    # "; exit $?": bash does not exec the command, so it stays the parent typer looks at
    p = subprocess.run(["bash", "-c", f"'{sys.executable}' -m kafkatool --show-completion; exit $?"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "_KAFKATOOL_COMPLETE=complete_bash" in p.stdout, (p.stdout, p.stderr)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_shell_completion_script(shell: str, run_cli) -> None:
    """Each shell typer supports gets its script. The shell is named through typer's own switch for that
    (``_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION``: the option then takes the shell's name), since only bash is
    sure to be installed here."""
    p = run_cli("--show-completion", shell, env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert p.returncode == 0 and "_KAFKATOOL_COMPLETE" in p.stdout, (p.stdout, p.stderr)


def test_shell_completion_completes_commands_and_options(run_cli) -> None:
    """The callback the bash script makes: command names, then a command's own options."""
    def complete(words: str) -> list[str]:
        env = {"_KAFKATOOL_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
        p = run_cli(env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    assert complete("kafkatool ver") == ["verify"]
    assert complete("kafkatool tr") == ["truncation"]
    assert set(complete("kafkatool verify --f")) == {"--format", "--fail-on"}


def _commands() -> dict[str, object]:
    """Every command of the CLI by its full name (``spark scan`` too), each built as it is when it runs."""
    from typer import _click
    from typer.main import get_group

    from kafkatool.cli.commands import LazyGroup
    from kafkatool.cli.main import app

    found: dict[str, object] = {}

    def walk(prefix: str, group: LazyGroup) -> None:
        for name in group.list_commands(_click.Context(group)):
            command = group.commands[name]
            if isinstance(command, LazyGroup):
                walk(f"{prefix}{name} ", command)
            else:
                found[prefix + name] = command

    walk("", get_group(app))
    return found


def test_a_short_flag_means_one_long_option_across_the_cli() -> None:
    """``-o`` was --offset (locate) and --out (spark scan); ``-t`` --timestamp, --topic and --transactional-id."""
    meanings: dict[str, set[str]] = {}
    for name, command in _commands().items():
        for param in command.params:  # type: ignore[attr-defined]
            names = [*param.opts, *param.secondary_opts]
            longs = {n for n in names if n.startswith("--")}
            for short in (n for n in names if n.startswith("-") and not n.startswith("--")):
                meanings.setdefault(short, set()).update(f"{long} ({name})" for long in longs)
    clashes = {s: sorted(m) for s, m in meanings.items() if len({x.split()[0] for x in m}) != 1}
    assert not clashes, clashes
    assert {s: next(iter(m)).split()[0] for s, m in meanings.items()} == {
        "-f": "--format", "-o": "--out", "-t": "--topic", "-p": "--partition", "-r": "--records", "-g": "--group",
        "-j": "--jobs", "-s": "--sink", "-l": "--leader", "-F": "--follower"}


def test_every_command_that_reports_findings_takes_fail_on() -> None:
    """One exit policy (kafkatool/cli/exits.py): each command with findings has --fail-on; partition-for has none."""
    lacking = [name for name, command in _commands().items()
               if "--fail-on" not in {o for p in command.params for o in p.opts}]  # type: ignore[attr-defined]
    assert lacking == ["partition-for"]


@pytest.mark.parametrize("args", [["verify"], ["dump"], ["overview"], ["producers"], ["txns"], ["offsets"],
                                  ["txn-state"], ["metadata"], ["replicas"], ["epochs"], ["repair"],
                                  ["locate", "--offset", "0"], ["delivery", "--sink", "-"]])
def test_fail_on_is_checked_before_anything_is_read(args: list[str], run_cli) -> None:
    proc = run_cli(*args, "--fail-on", "fatal", TXN)
    assert proc.returncode == 2 and "--fail-on must be one of info, warning, error" in proc.stderr, proc.stderr


def test_fail_on_sets_the_severity_that_exits_1(run_cli) -> None:
    """producers of the fixture log dir: info findings only (epoch bumps); the incident's: errors."""
    logdir, incident = PROJECT_ROOT / "fixtures/logdir", PROJECT_ROOT / "fixtures/incident"
    assert run_cli("producers", logdir).returncode == 0
    assert run_cli("producers", "--fail-on", "info", logdir).returncode == 1
    assert run_cli("producers", "--fail-on", "error", incident).returncode == 1
