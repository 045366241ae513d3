"""Output that cannot lie to the terminal: names, paths, keys, values and headers read from a hostile disk hold ESC,
CR, newline, C1 controls and bidi overrides; every human-readable output (text and dump-log, findings and tables,
stderr too) shows them escaped (``output.printable``: as ``repr`` does), so none clears the screen or writes a fake
line. JSON lines stay exact JSON."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.cli.output.terminal import printable
from kafkatool.formats import internal_topics as it
from kafkatool.logwriter import LogDirWriter

from .clirun import cli
from .conftest import PROJECT_ROOT

# A screen clear and cursor home, a CR then a fake finding, a newline then a line reversed by a bidi override, a
# C1 CSI (0x9b: ESC [ on terminals that take 8-bit controls), NEL, BEL, an OSC that sets the window title.
EVIL = "\x1b[2J\x1b[H\rERROR fake-finding\n\u202eevil\u2066\x9b31m\x85\x07\x1b]0;pwned\x07"
SHOWN = printable(EVIL)
TOPIC = "t" + EVIL.replace("\n", "")  # a partition dir name (a newline makes no topic-partition: an unknown-dir)
T0 = 1_700_000_000_000
TOPIC_ID = bytes(range(1, 17))


def _generator():
    spec = importlib.util.spec_from_file_location("fixtures_generate", PROJECT_ROOT / "fixtures" / "generate.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


gen = _generator()
_s, _array, NO_TAGS = gen._s, gen._array, gen.NO_TAGS


def _data(w, epochs: list[int]) -> None:
    """A transaction of hostile records (key, value, header key and value), its commit, then one batch per epoch."""
    evil = EVIL.encode()
    recs = [RecordSpec(evil, evil, T0, ((EVIL, evil),)), RecordSpec(b"k", b"v", T0 + 1, (("h", b"\x1b[31m"),))]
    w.append(record_batch(0, recs, producer_id=1, producer_epoch=0, base_sequence=0, transactional=True))
    w.append(end_transaction_marker(2, True, producer_id=1, producer_epoch=0, coordinator_epoch=1, timestamp=T0 + 2))
    for epoch in epochs:
        offset = w.log_end_offset
        w.append(record_batch(offset, [RecordSpec(evil, f"{offset}".encode(), T0 + offset)],
                              partition_leader_epoch=epoch, producer_id=2, producer_epoch=0, base_sequence=offset - 3))


def _consumer_offsets(w) -> None:
    key = it.OffsetCommitKey.build({"version": 1, "group": _s(EVIL), "topic": _s(TOPIC), "partition": 0})
    value = it.OffsetCommitValue.build({"version": 3, "body": {"offset": 2, "leader_epoch": -1, "metadata": _s(EVIL),
                                                                "commit_timestamp": T0}})
    member = {"member_id": _s(EVIL), "group_instance_id": _s(EVIL), "client_id": _s(EVIL), "client_host": _s(EVIL),
              "rebalance_timeout": 300_000, "session_timeout": 45_000, "subscription": {"length": 0, "value": b""},
              "assignment": {"length": 0, "value": b""}}
    group = it.GroupMetadataValue.build({"version": 3, "body": {
        "protocol_type": _s(EVIL), "generation": 1, "protocol": _s(EVIL), "leader": _s(EVIL),
        "current_state_timestamp": T0, "members": _array([member])}})
    w.append(record_batch(0, [RecordSpec(key, value, T0),
                              RecordSpec(it.GroupMetadataKey.build({"version": 2, "group": _s(EVIL)}), group, T0)]))


def _transaction_state(w) -> None:
    key = it.TransactionLogKey.build({"version": 0, "transactional_id": _s(EVIL)})
    value = it.TransactionLogValue.build({"version": 0, "body": {
        "producer_id": 1, "producer_epoch": 0, "transaction_timeout_ms": 60_000, "transaction_status": 1,
        "transaction_partitions": _array([{"topic": _s(TOPIC), "partition_ids": _array([0])}]),
        "transaction_last_update_timestamp_ms": T0, "transaction_start_timestamp_ms": T0}})
    w.append(record_batch(0, [RecordSpec(key, value, T0)]))


def _cluster_metadata(w) -> None:
    values = [
        gen._metadata(it.TOPIC, {"name": _s(TOPIC), "topic_id": TOPIC_ID, "tagged_fields": NO_TAGS}),
        gen._metadata(it.PARTITION, {
            "partition_id": 0, "topic_id": TOPIC_ID, "replicas": _array([1, 2]), "isr": _array([1, 2]),
            "removing_replicas": _array([]), "adding_replicas": _array([]), "leader": 1, "leader_epoch": 0,
            "partition_epoch": 0, "tagged_fields": NO_TAGS}),
        gen._metadata(it.CONFIG, {"resource_type": 2, "resource_name": _s(TOPIC), "name": _s("min.insync.replicas"),
                                  "value": _s("2"), "tagged_fields": NO_TAGS}),
        gen._metadata(it.CONFIG, {"resource_type": 2, "resource_name": _s(TOPIC), "name": _s(EVIL),
                                  "value": _s(EVIL), "tagged_fields": NO_TAGS}),
        gen._metadata(it.PARTITION_CHANGE, {"partition_id": 0, "topic_id": TOPIC_ID, "tagged_fields": {
            "count": 1, "fields": [{"tag": 0, "data": it.int32_array.build(_array([1]))}]}}),
    ]
    for offset, value in enumerate(values):
        w.append(record_batch(offset, [RecordSpec(None, value, T0 + offset)], partition_leader_epoch=1))


def hostile(root: Path) -> tuple[Path, Path]:
    """Two brokers' log dirs (their names hostile too) holding partition ``TOPIC``-0, which diverges after offset 3
    (epochs 1 on broker 1; 2, then 3 on broker 2), the internal topics with hostile ids, names and strings, and a
    torn write at the end of broker 1's segment (a finding, and something for repair to cut)."""
    dirs = []
    for n, epochs in ((1, [1, 1]), (2, [2, 3])):
        with LogDirWriter(root / f"broker-{n}{EVIL}", cluster_id="c1", node_id=n) as logdir:
            _data(logdir.partition(TOPIC, 0, TOPIC_ID), epochs)
            if n == 1:
                _consumer_offsets(logdir.partition("__consumer_offsets", 0, bytes(16)))
                _transaction_state(logdir.partition("__transaction_state", 0, bytes(range(16))))
                _cluster_metadata(logdir.partition("__cluster_metadata", 0, bytes(range(2, 18))))
        dirs.append(logdir.root)
    (dirs[0] / ".kafka_cleanshutdown").unlink()  # the torn write of an unclean shutdown: repair recovers
    with open(dirs[0] / f"{TOPIC}-0" / f"{0:020d}.log", "ab") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x00\x40" + b"\xff" * 20)  # a batch header cut short
    return dirs[0], dirs[1]


# What must never reach a terminal raw: C0 controls but the newline ending each line, DEL, C1 controls, bidi
# embeddings, overrides and isolates, line and paragraph separators, the Arabic letter mark.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
SGR = re.compile("\x1b\\[[0-9;]*m")  # the colours kafkatool writes itself on a colour terminal


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return hostile(tmp_path_factory.mktemp("hostile"))


def run(*args: object, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``kafkatool ARGS``: exit code, stdout and stderr (both must be UTF-8: no raw byte of a file name)."""
    p = cli(*args, env={"FORCE_COLOR": None, "TTY_COMPATIBLE": None, "NO_COLOR": None, **(env or {})}, text=False)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def partition(logdir: Path) -> Path:
    return logdir / f"{TOPIC}-0"


def shown_safely(out: str, *expected: str) -> None:
    """No raw control character in ``out``, each of ``expected`` shown escaped, and no line made by the data."""
    assert RAW.findall(out) == [], printable(out)  # (the output itself would act on the terminal showing it)
    for text in expected:
        assert printable(text) in out
    assert not any(line.startswith(("ERROR fake", "evil")) for line in out.splitlines())


def case(name: str, b1: Path, b2: Path) -> tuple[list[object], int, list[str]]:
    """A command on the two log dirs: its arguments, its exit code, and what its output must show escaped."""
    p1, p2, sink = partition(b1), partition(b2), b1.parent / "sink.jsonl"
    return {
        "verify": (["verify", b1], 1, [str(p1), TOPIC]),
        "verify --deep": (["verify", "--deep", b1], 1, [str(p1)]),
        "overview": (["overview", b1], 1, [str(p1), TOPIC]),
        "offsets": (["offsets", b1], 0, [EVIL, TOPIC]),
        "groups": (["groups", b1], 0, [EVIL, TOPIC]),
        "txn-state": (["txn-state", b1], 0, [EVIL, TOPIC]),
        "metadata": (["metadata", b1], 0, [TOPIC]),
        "metadata --all": (["metadata", "--all", b1], 0, [TOPIC, EVIL]),
        "metadata --under-min-isr": (["metadata", "--under-min-isr", b1], 1, [TOPIC]),
        "producers": (["producers", b1], 1, [str(p1)]),  # the load's torn tail, as verify says
        "txns": (["txns", b1], 1, [str(p1)]),
        "replicas": (["replicas", b1, b2], 1, [b1.name, TOPIC]),
        "replicas --unclean": (["replicas", "--unclean", b1, b2], 1, [b1.name, b2.name, TOPIC]),
        "truncation": (["truncation", "-l", p2, "-F", p1], 1, [b1.name, TOPIC]),
        "epochs": (["epochs", b1, b2], 1, [str(p1), str(p2)]),
        "delivery": (["delivery", "--sink", sink, "-g", EVIL, b1], 1, [EVIL]),
        "locate": (["locate", p1, "--offset", "0"], 0, [str(p1), EVIL]),
        "repair": (["repair", b1], 1, [str(p1)]),
        "dump": (["dump", "-r", b1], 1, [str(p1), EVIL]),
        "dump --values hex": (["dump", "-r", "--values", "hex", b1], 1, [str(p1), EVIL]),
        "dump --decode": (["dump", "-r", "--decode", "auto", b1], 1, [str(b1), EVIL, TOPIC]),
        "dump --key": (["dump", "--key", "evil", p1], 1, [str(p1), EVIL]),
    }[name]


COMMANDS = ["verify", "verify --deep", "overview", "offsets", "groups", "txn-state", "metadata", "metadata --all",
            "metadata --under-min-isr", "producers", "txns", "replicas", "replicas --unclean", "truncation", "epochs",
            "delivery", "locate", "repair", "dump", "dump --values hex", "dump --decode", "dump --key"]


@pytest.mark.parametrize("name", COMMANDS)
def test_text_output_of_every_command_shows_control_characters_escaped(brokers: tuple[Path, Path],
                                                                       name: str) -> None:
    b1, b2 = brokers
    # a row of the hostile partition (or, where delivery refuses a topic that is not a Kafka topic name, a finding
    # quoting it), and one of a partition it checks
    (b1.parent / "sink.jsonl").write_text("".join(json.dumps({"topic": topic, "partition": 0, "offset": 0}) + "\n"
                                                  for topic in (TOPIC, "__consumer_offsets")))
    args, code, expected = case(name, b1, b2)
    rc, out, err = run(*args)
    assert rc == code, err
    shown_safely(out, *expected)
    shown_safely(err)


@pytest.mark.parametrize("name", ["verify", "offsets", "replicas --unclean", "repair", "dump", "dump --decode"])
def test_on_a_colour_terminal_only_kafkatools_own_colours_are_escape_codes(brokers: tuple[Path, Path],
                                                                          name: str) -> None:
    """Through rich's markup (the Python renderers, with colours): the data escaped as piped, SGR codes around."""
    args, code, expected = case(name, *brokers)
    rc, out, _err = run(*args, env={"FORCE_COLOR": "1"})
    assert rc == code and SGR.search(out)
    shown_safely(SGR.sub("", out), *expected)


@pytest.mark.parametrize("values", ["text", "hex", "none"])
def test_native_and_pure_records_escape_alike(brokers: tuple[Path, Path], values: str) -> None:
    """The native core renders text record lines itself (native/src/render.rs: what is not printable ASCII goes back
    to Python's repr): byte for byte what the pure reader's lines are."""
    p1 = partition(brokers[0])
    native = run("dump", "-r", "--values", values, p1)
    pure = run("dump", "-r", "--values", values, p1, env={"KAFKATOOL_PURE_PYTHON": "1"})
    assert native == pure
    shown_safely(native[1], str(p1), *([EVIL] if values == "text" else []))


def test_dump_log_escapes_what_kafka_dump_log_prints_raw(brokers: tuple[Path, Path]) -> None:
    b1, _b2 = brokers
    rc, out, err = run("dump", "-f", "dump-log", "-r", partition(b1))
    assert rc == 1
    shown_safely(out, str(partition(b1)))
    shown_safely(err)
    first = next(line for line in out.splitlines() if line.startswith("| offset: 0 "))
    assert first.endswith(f"headerKeys: [{SHOWN}] key: {SHOWN} payload: {SHOWN}")
    assert "ERROR torn-tail @ " in err  # the finding, on stderr as kafka-dump-log's stdout stays its own


def test_jsonl_stays_exact(brokers: tuple[Path, Path]) -> None:
    """JSON lines carry the names and bytes as they are (JSON escapes them its own way)."""
    b1, _b2 = brokers
    rc, out, _err = run("dump", "-f", "jsonl", "-r", partition(b1))
    assert rc == 1
    rows = [json.loads(line) for line in out.splitlines()]
    record = next(r for r in rows if r["type"] == "record")
    assert record["headers"][0][0] == EVIL and base64.b64decode(record["key"]) == EVIL.encode()
    assert {r["path"] for r in rows if r["type"] == "finding"} == {str(partition(b1) / f"{0:020d}.log")}
    rc, out, _err = run("offsets", "-f", "jsonl", b1)
    assert {r["group"] for r in map(json.loads, out.splitlines()) if r["type"] == "committed_offset"} == {EVIL}


def test_error_lines_on_stderr_are_escaped(brokers: tuple[Path, Path]) -> None:
    b1, _b2 = brokers
    rc, out, err = run("dump", b1 / f"missing{EVIL}")
    assert rc == 2 and out == ""
    shown_safely(err, f"missing{EVIL}")
    assert err.startswith("kafkatool: error: ") and err.count("\n") == 1


def test_a_file_name_that_is_not_utf8_shows_its_bytes(tmp_path: Path) -> None:
    """A byte that is no UTF-8 (an os.fsdecode surrogate) reaches neither stdout raw nor a crash: ``\\xff``."""
    root = Path(os.fsdecode(bytes(tmp_path) + b"/broker\xff\xfe"))
    with LogDirWriter(root, cluster_id="c1", node_id=1) as logdir:
        _data(logdir.partition("t", 0, TOPIC_ID), [1])
    for args in (["verify", root], ["dump", "-f", "dump-log", root], ["overview", root]):
        rc, out, err = run(*args)
        assert rc in (0, 1), err
        assert "broker\\xff\\xfe" in out and RAW.findall(out + err) == []


@pytest.mark.spark
def test_spark_scan_table_shows_the_topic_escaped(spark, tmp_path: Path) -> None:
    """(No ``[`` in the name: spark scan takes a path holding one as a glob.)"""
    from typer.testing import CliRunner

    from kafkatool.cli.main import app

    topic = "s\x1b]0;pwned\x07\rERROR fake-finding\u202eevil\x85"
    with LogDirWriter(tmp_path / "in", cluster_id="c1", node_id=1) as logdir:
        _data(logdir.partition(topic, 0, TOPIC_ID), [1])
    done = CliRunner().invoke(app, ["spark", "scan", str(tmp_path / "in" / f"{topic}-0"), "--out",
                                    str(tmp_path / f"out{topic}")])
    assert done.exit_code == 0, printable(done.output)
    shown_safely(done.stdout, f"{topic}-0", str(tmp_path / f"out{topic}"))


def test_summary_rows_show_each_value_as_its_printable_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify's summary rows are kept as emitted and made printable cell by cell at the table (an int, None or a
    printable string written without a call, for 10,000 partitions): a value of any other kind in any column shows
    as the row made printable (``terminal._printable``) shows it through ``text._cell``, and nothing reaches the
    terminal raw (the total line neither)."""
    monkeypatch.delenv("COLUMNS", raising=False)  # piped, no width asked for: the table is never cut
    import io

    from kafkatool.cli.output import Output
    from kafkatool.cli.output.tables import _SUMMARY_COLUMNS
    from kafkatool.cli.output.terminal import _printable
    from kafkatool.cli.output.text import _cell

    odd = {"segments": True, "bytes": 1234567, "batches": None, "log_start_offset": -1, "log_end_offset": 2 ** 70,
           "high_watermark": 1.5, "open_transactions": [1, EVIL], "index": EVIL, "errors": 0, "warnings": 1,
           "infos": False}
    rows = [{"type": "summary", "scope": "partition", "path": f"/data/{TOPIC}-0", **odd},
            {"type": "summary", "scope": "partition", "path": os.fsdecode(b"/data/t\xff-1"), "segments": 2,
             "bytes": 10, "batches": 1, "log_start_offset": 0, "log_end_offset": None, "high_watermark": EVIL,
             "open_transactions": 0, "index": "sparse", "errors": 1, "warnings": 0, "infos": 0},
            {"type": "summary", "scope": "partition", "path": "/data/t-2", "segments": 1, "errors": 0, "warnings": 0}]
    total = {"type": "summary", "scope": "total", "partitions": 3, "files": 9, "bytes": 1234577, "batches": 1,
             "errors": 1, "warnings": f"1{EVIL}", "infos": 0}
    stream = io.StringIO()
    out = Output("text", stream=stream)
    for row in (*rows, total):
        out.emit(row)
    out.close()
    cells = [[_cell(k, _printable(r).get(k)) for k in _SUMMARY_COLUMNS] for r in rows]
    table = [list(_SUMMARY_COLUMNS.values()), *cells]
    widths = [max(map(len, column)) for column in zip(*table, strict=True)]  # piped: two spaces apart, never cut
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    text = stream.getvalue()
    assert text.startswith("\n" + "\n".join(lines) + "\n\nerrors: 3 partitions, 9 files, 1,234,577 bytes"), text
    assert SHOWN in text and "t\\xff-1" in text and "yes" in text and RAW.findall(text) == []
