"""Never silent (issue 26): a path holding nothing Kafka exits 2 with one line on stderr; a filter that matched
nothing, or a command that found nothing, exits as it would and says so in a note on stderr, naming the filter
and what was read (stdout stays empty: pure JSON lines with --format jsonl); a delivery check whose --group has
no committed offset says what that leaves unchecked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import PROJECT_ROOT, corpus_root
from .test_delivery import offsets_partition, sink

ROOT = corpus_root()
LOGDIR = ROOT / "kafka/logdir"
CODECS = LOGDIR / "codecs-0"
INCIDENT = PROJECT_ROOT / "fixtures/incident"   # __consumer_offsets, __transaction_state, __cluster_metadata
FIXTURES = PROJECT_ROOT / "fixtures/logdir"

# Every command that reads log dirs, with the arguments it needs besides the path.
_COMMANDS = {
    "dump": [], "verify": [], "overview": [], "locate": ["--offset", "0"], "repair": [], "replicas": [],
    "epochs": [], "producers": [], "txns": [], "offsets": [], "groups": [], "txn-state": [],
    "metadata": [],
}


@pytest.mark.parametrize("command", [*_COMMANDS, "truncation", "delivery"])
def test_a_file_that_is_not_kafka_exits_2_with_one_line(tmp_path: Path, command: str, run_cli) -> None:
    """A named file with no Kafka log-dir file's name (``/etc/passwd``) is nothing Kafka, as a dir of such files
    already was: exit 2, one line on stderr naming it, nothing on stdout (before: verify said "clean ... 1 files"
    and exited 0, dump and metadata read it and exited 1)."""
    wrong = tmp_path / "passwd"
    wrong.write_text("root:x:0:0:root:/root:/bin/bash\n" * 40)
    if command == "truncation":
        proc = run_cli(command, "--leader", wrong, "--follower", CODECS)
    elif command == "delivery":
        proc = run_cli(command, "--sink", sink(tmp_path, [0], topic="codecs"), wrong)
    else:
        proc = run_cli(command, *_COMMANDS[command], wrong)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.startswith("kafkatool: error: ") and str(wrong) in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr


def _record_files(part: Path) -> str:
    logs = sorted(part.glob("*.log"))
    return f"{len(logs)} record files ({sum(p.stat().st_size for p in logs):,} bytes)"


@pytest.mark.parametrize(("args", "what"), [
    (["--key", "nope"], "record matched --key nope"),
    (["--value", "^nope$"], "record matched --value ^nope$"),
    (["--header", "nosuch"], "record matched --header nosuch"),
    (["--producer-id", "424242"], "batch matched --producer-id 424242"),
    (["--from-time", "2099-01-01T00:00:00Z"], "batch matched --from-time 2099-01-01T00:00:00Z"),
    (["--to-time", "1"], "batch matched --to-time 1"),
    (["--from-offset", "1000000"], "batch matched --from-offset 1000000"),
    (["--records", "--from-offset", "1000000"], "record matched --from-offset 1000000"),
])
@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_dump_filter_that_matched_nothing_says_so(args: list[str], what: str, fmt: str, run_cli) -> None:
    """``dump --key nope``: nothing to show is an answer (exit 0), said on stderr with the filter and what was
    read; stdout stays empty (before: nothing at all)."""
    proc = run_cli("dump", "-f", fmt, *args, CODECS)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"kafkatool: note: no {what} in {_record_files(CODECS)}\n"


def test_dump_csv_search_that_matched_nothing_says_so(run_cli) -> None:
    """The rows go to stdout (only the csv header here), the note to stderr."""
    proc = run_cli("dump", "-f", "csv", "--key", "nope", CODECS)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1 and proc.stdout.startswith("topic,partition,")
    assert proc.stderr == f"kafkatool: note: no record matched --key nope in {_record_files(CODECS)}\n"


def test_a_filter_that_matches_adds_no_note(run_cli) -> None:
    first = next(r for r in run_cli("dump", "-f", "jsonl", "--values", "text", "-r", CODECS).jsonl()
                 if r["type"] == "record")
    proc = run_cli("dump", "-f", "jsonl", "--key", f"^{first['key']}$", CODECS)
    assert proc.returncode == 0 and proc.jsonl() and proc.stderr == ""
    proc = run_cli("dump", "-f", "csv", "--key", f"^{first['key']}$", CODECS)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 2 and proc.stderr == ""
    assert run_cli("offsets", INCIDENT).stderr == "" and run_cli("overview", "--topic", "codecs", LOGDIR).stderr == ""


def _names(label: str, names: set[str]) -> str:
    shown = sorted(names)
    return f"{len(shown)} {label}{'' if len(shown) == 1 else 's'}: {', '.join(shown[:5])}" + \
        (", ..." if len(shown) > 5 else "")


# command, its filter matching nothing, the rows of an unfiltered run that hold the names the filter could match
# (their type and field), the note's words before and after them
_LOOKUPS = [
    ("offsets", ["--group", "nosuch"], INCIDENT, ("committed_offset", "group_state"), "group",
     "commit or group matched --group nosuch in __consumer_offsets (", "group", ")"),
    ("txn-state", ["--transactional-id", "nosuch"], INCIDENT, ("transaction_state",), "transactional_id",
     "transactional id matched --transactional-id nosuch in __transaction_state (", "transactional id", ")"),
    ("metadata", ["--topic", "nosuch"], INCIDENT, ("partition_state",), "topic",
     "partition state matched --topic nosuch in the metadata read (", "topic", ")"),
    ("metadata", ["--under-min-isr", "--topic", "nosuch"], INCIDENT, ("partition_state",), "topic",
     "interval matched --under-min-isr --topic nosuch in the metadata read (", "topic", ")"),
]


@pytest.mark.parametrize(("command", "args", "path", "types", "field", "before", "label", "after"), _LOOKUPS)
def test_lookups_that_matched_nothing_say_so(command: str, args: list[str], path: Path, types: tuple[str, ...],
                                             field: str, before: str, label: str, after: str, run_cli) -> None:
    """``offsets --group``, ``txn-state --transactional-id``, ``metadata --topic`` (and ``--under-min-isr``):
    exit 0, no line on stdout, a note naming the filter and what there was to match (before: nothing at all)."""
    there = {r[field] for r in run_cli(command, "-f", "jsonl", path).jsonl() if r["type"] in types}
    assert there
    proc = run_cli(command, "-f", "jsonl", *args, path)
    assert proc.returncode == 0
    assert [r for r in proc.jsonl() if r["type"] != "txn_clock"] == []  # txn-state's clock: context, not a result
    assert proc.stderr == f"kafkatool: note: no {before}{_names(label, there)}{after}\n"


def test_overview_topic_that_matched_nothing_says_so(run_cli) -> None:
    parts = [r for r in run_cli("overview", "-f", "jsonl", LOGDIR).jsonl() if r["type"] == "partition_overview"]
    proc = run_cli("overview", "-f", "jsonl", "--topic", "nosuch", LOGDIR)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == (f"kafkatool: note: no partition matched --topic nosuch in {len(parts)} partitions of "
                           f"{_names('topic', {p['topic'] for p in parts})}\n")


def test_producers_and_txns_that_found_nothing_say_so(run_cli) -> None:
    """A partition written without idempotence: no producer id, no transaction; said on stderr, not a blank."""
    for command, what in (("producers", "producer id"), ("txns", "transaction")):
        proc = run_cli(command, "-f", "jsonl", CODECS)
        assert (proc.returncode, proc.stdout) == (0, "")
        assert proc.stderr.startswith(f"kafkatool: note: no {what} found in 1 partition"), proc.stderr


def test_delivery_group_without_a_committed_offset_says_so(tmp_path: Path, run_cli) -> None:
    """``delivery --group nosuch`` (before: ``committed offset -`` and nothing else): the group was not found, or
    has no commit for a partition of the sink, said on stderr with what that leaves unchecked."""
    logdir = tmp_path / "logdir"
    shutil.copytree(FIXTURES, logdir)
    offsets_partition(logdir, "billing", 3)   # payments-0 only
    rows = sink(tmp_path, [0, 1, 2])
    proc = run_cli("delivery", "-f", "jsonl", "--group", "nosuch", "--sink", rows, logdir)
    assert [r["committed_offset"] for r in proc.jsonl() if r["type"] == "delivery"] == [None]
    assert proc.stderr.startswith("kafkatool: note: group 'nosuch' not found: no committed offset of it in the "
                                  "__consumer_offsets partitions read: the check covers the sink's rows only")
    assert run_cli("delivery", "--group", "billing", "--sink", rows, logdir).stderr == ""
    both = tmp_path / "both.csv"
    both.write_text(rows.read_text() + "k,orders,0,0\n")
    proc = run_cli("delivery", "--group", "billing", "--sink", both, logdir)
    assert "kafkatool: note: group 'billing' has no committed offset for 1 partition: orders-0: " in proc.stderr


def test_delivery_sink_naming_a_partition_not_there_exits_1(tmp_path: Path, run_cli) -> None:
    """A sink row of a partition that is not under the paths is an error finding: exit 1 by the exit policy."""
    proc = run_cli("delivery", "-f", "jsonl", "--sink", sink(tmp_path, [0], topic="codecs"), CODECS.parent / "txn-0")
    assert proc.returncode == 1
    assert [(r["code"], r["severity"]) for r in proc.jsonl()] == [("delivery-partition-missing", "error")]


@pytest.mark.parametrize("command", ["replicas", "epochs", "truncation"])
@pytest.mark.parametrize("narrow", [["--topic", "nosuch"], ["--partition", "7"]])
def test_replica_commands_whose_filter_matched_nothing_say_so(command: str, narrow: list[str], run_cli) -> None:
    """``replicas``/``epochs``/``truncation`` with a --topic or --partition that none of the dirs' partitions has:
    exit 0 and a note naming what there was (before: exit 2, as if the dirs held nothing); dirs that hold no
    partition at all are still a usage error (exit 2)."""
    case = ROOT / "kafka" / "replicas" / "hw-loss"
    dirs = (["--leader", case / "broker-1", "--follower", case / "broker-2"] if command == "truncation"
            else [case])
    proc = run_cli(command, "-f", "jsonl", *narrow, *dirs)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stderr
    assert proc.stderr == f"kafkatool: note: no partition matched {' '.join(narrow)} in 1 partition of the given " \
                          "dirs: orders-0\n"
    whole = run_cli(command, "-f", "jsonl", *dirs)
    assert any(line.get("topic") == "orders" or "orders-0" in str(line) for line in whole.jsonl())
    empty = ["--leader", case / "case.json", "--follower", case / "case.json"] if command == "truncation" \
        else [case / "case.json"]
    assert run_cli(command, *narrow, *empty).returncode == 2
