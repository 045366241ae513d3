"""``txns --hanging`` (KIP-664, as ``kafka-transactions.sh find-hanging``) and transactions v2 (KIP-890) markers, on
the log dir ``fixtures/generate.py --hanging`` writes (its docstring draws it), generated at test time."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.logwriter import LogDirWriter
from kafkatool.txns import hanging_bytes, hanging_paths

from .conftest import PROJECT_ROOT

MINUTE = 60_000


def _generator():
    spec = importlib.util.spec_from_file_location("fixtures_generate", PROJECT_ROOT / "fixtures" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()
NEWEST = gen.NIGHT + 29 * MINUTE + 1  # ledger-0's last batch (producer 9102's, 02:29): what --now defaults to


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    gen.hanging(tmp_path / "hanging")
    return tmp_path / "hanging"


def rows(proc) -> list[tuple]:
    return [(x["topic"], x["partition"], x["producer_id"], x["first_offset"], x["transactional_id"], x["state"],
             x["reason"], x["possibly"]) for x in proc.jsonl() if x["type"] == "hanging_transaction"]


def codes(proc) -> list[str]:
    return [x["code"] for x in proc.jsonl() if x["type"] == "finding"]


def test_hanging_beside_open_and_committed_jsonl(logdir: Path, run_cli) -> None:
    """Hanging: 9105's offset commit in __consumer_offsets (no id), 9100 (its id CompleteCommit), 9101 (no id), 9104
    (its id's Ongoing transaction lacks ledger-1). Not: 9102 (open 0 min, and Ongoing on ledger-0), 9103 (transactions
    v2, each transaction ended by a bumped marker)."""
    proc = run_cli("txns", "--hanging", "-f", "jsonl", logdir)
    assert proc.returncode == 1, proc.stderr
    lines = proc.jsonl()
    assert lines[0] == {"type": "txn_clock", "now": NEWEST, "source": "newest record time"}
    assert rows(proc) == [
        ("__consumer_offsets", 0, 9105, 2, None, None, "no_transactional_id", False),
        ("ledger", 0, 9100, 3, "ledger-writer-a", "CompleteCommit", "coordinator_completed", False),
        ("ledger", 0, 9101, 5, None, None, "no_transactional_id", False),
        ("ledger", 1, 9104, 0, "ledger-writer-d", "Ongoing", "partition_not_in_transaction", False),
    ]
    offsets, first = [x for x in lines if x["type"] == "hanging_transaction"][:2]
    # in __consumer_offsets, what it holds back is its own commit, pending until it ends
    assert offsets["holds_back"] == {"last_stable_offset": 2, "log_end_offset": 3, "offsets": 1, "groups": [],
                                     "pending_commits": [{"group": "ledger-exactly-once", "topic": "ledger",
                                                          "partition": 0, "offset": 5}]}
    # find-hanging's duration: since the producer's last write in the partition (9100's 3-4 at 02:01:00.000..001)
    assert first["last_timestamp"] == gen.NIGHT + MINUTE + 1 and first["open_ms"] == NEWEST - first["last_timestamp"]
    assert first["producer_epoch"] == 0 and first["coordinator_epoch"] == 2
    # the LSO its read_committed consumers stop at; ledger-audit committed there, ledger-late (at 1) not yet
    assert first["holds_back"] == {"last_stable_offset": 3, "log_end_offset": 15, "offsets": 12,
                                   "groups": [{"group": "ledger-audit", "committed_offset": 3}], "pending_commits": []}
    assert codes(proc) == ["txn-hanging"] * 4
    assert "note" not in proc.stderr
    # a hanging transaction is an error: --fail-on error still fails
    assert run_cli("txns", "--hanging", "--fail-on", "error", logdir).returncode == 1


def test_hanging_text(logdir: Path, run_cli) -> None:
    proc = run_cli("txns", "--hanging", logdir)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "judged at 2023-11-15T02:29:00.001Z (the newest record time in the log; --now to choose another)"
    assert lines[1].split() == ["topic", "partition", "producer", "epoch", "coord.", "epoch", "first", "offset", "last",
                                "write", "open", "ms", "transactional", "id", "reason", "LSO", "groups", "held"]
    assert lines[2].split()[:10] == ["__consumer_offsets", "0", "9105", "0", "-1", "2", "2023-11-15T02:10:00.000Z",
                                     "1140001", "-", "no_transactional_id"]
    assert lines[2].endswith("  2    ledger-exactly-once (pending ledger-0 5)")
    assert lines[3].split() == ["ledger", "0", "9100", "0", "2", "3", "2023-11-15T02:01:00.001Z", "1680000",
                                "ledger-writer-a", "coordinator_completed", "3", "ledger-audit", "(3)"]
    assert lines[4].split()[:10] == ["ledger", "0", "9101", "0", "-1", "5", "2023-11-15T02:02:00.001Z", "1620000",
                                     "-", "no_transactional_id"]
    assert lines[5].split()[9] == "partition_not_in_transaction"
    errors = [line for line in lines if line.startswith("ERROR txn-hanging")]
    assert len(errors) == 4 and f"{logdir}/ledger-0: producer 9100" in errors[1]
    assert "'ledger-writer-a' is CompleteCommit" in errors[1] and "'ledger-audit' (committed 3)" in errors[1]


def test_without_transaction_state_only_possibly_hanging(logdir: Path, run_cli) -> None:
    """The coordinator's state not among the dirs: open too long is all that can be said, a warning, and a note."""
    data = [logdir / "ledger-0", logdir / "ledger-1"]
    proc = run_cli("txns", "--hanging", "-f", "jsonl", *data)
    assert proc.returncode == 1, proc.stderr
    assert [(r[2], r[4], r[6], r[7]) for r in rows(proc)] == [
        (9100, None, "transaction_state_not_read", True), (9101, None, "transaction_state_not_read", True),
        (9104, None, "transaction_state_not_read", True)]
    assert codes(proc) == ["txn-possibly-hanging"] * 3
    assert "note: no __transaction_state partition in the dirs given" in proc.stderr
    assert run_cli("txns", "--hanging", "--fail-on", "error", *data).returncode == 0
    text = run_cli("txns", "--hanging", *data)
    assert "possibly: transaction_state_not_read" in text.stdout and "WARNING txn-possibly-hanging" in text.stdout


def test_now_and_max_transaction_timeout(logdir: Path, run_cli) -> None:
    # at 02:16:30, 9100 last wrote 15.5 min ago (hanging), 9101 14.5 (not yet), 9104 11.5
    proc = run_cli("txns", "--hanging", "-f", "jsonl", "--now", "2023-11-15T02:16:30", logdir)
    assert proc.returncode == 1, proc.stderr
    assert proc.jsonl()[0] == {"type": "txn_clock", "now": gen.NIGHT + 16 * MINUTE + 30_000, "source": "--now"}
    assert [r[2] for r in rows(proc)] == [9100]
    proc = run_cli("txns", "--hanging", "--max-transaction-timeout", "60", logdir)
    assert proc.returncode == 0, proc.stderr
    assert "note: no hanging transaction found in 4 partitions" in proc.stderr
    for bad in (("--now", "yesterday"), ("--max-transaction-timeout", "-1")):
        proc = run_cli("txns", "--hanging", *bad, logdir)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    proc = run_cli("txns", "--now", "2023-11-15T02:16:30", logdir)  # --now judges hanging transactions only
    assert proc.returncode == 2 and "--hanging" in proc.stderr


def test_undecodable_transaction_state_is_a_finding(logdir: Path, run_cli) -> None:
    """A __transaction_state batch whose bytes were flipped: a finding, and the ids it held are not known (9104's
    ledger-writer-d, the third record, is read as no transactional id at all)."""
    log = logdir / "__transaction_state-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    starts = [0]
    while starts[-1] < len(data):
        starts.append(starts[-1] + 12 + int.from_bytes(data[starts[-1] + 8:starts[-1] + 12], "big"))
    data[starts[2] + 70] ^= 0xFF  # inside the third batch's record
    log.write_bytes(bytes(data))
    proc = run_cli("txns", "--hanging", "-f", "jsonl", logdir)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert ("ledger", 1, 9104, 0, None, None, "no_transactional_id", False) in rows(proc)
    assert "crc-mismatch" in codes(proc)


# --- transactions v2 (KIP-890) markers ---------------------------------------------------------------------------


def test_v2_markers_end_transactions_without_an_epoch_finding(logdir: Path, run_cli) -> None:
    """9103's markers have its data's epoch + 1 (5 -> COMMIT 6, 6 -> ABORT 7): each ends its transaction, and is
    no epoch bump worth a finding (ProducerAppendInfo.appendEndTxnMarker: the marker's epoch becomes the producer's)."""
    txns = run_cli("txns", "-f", "jsonl", logdir / "ledger-0").jsonl()
    assert [(x["first_offset"], x["last_offset"], x["outcome"]) for x in txns
            if x["type"] == "transaction" and x["producer_id"] == 9103] == [(7, 9, "COMMIT"), (10, 12, "ABORT")]
    proc = run_cli("producers", "-f", "jsonl", logdir / "ledger-0")
    assert proc.returncode == 0, proc.stderr
    assert codes(proc) == []
    producer = next(x for x in proc.jsonl() if x["type"] == "producer" and x["producer_id"] == 9103)
    assert (producer["producer_epoch"], producer["ongoing_transaction"]) == (7, False)


def test_bumped_abort_first_is_either_and_v1_fence_stays(tmp_path: Path, run_cli) -> None:
    """An ABORT with a bumped epoch is a v1 fence or a v2 abort: said so, unless the producer ended a transaction
    before with its own epoch (v1: fixtures/logdir's 7001, fenced once a round) or with a bumped COMMIT (v2)."""
    with LogDirWriter(tmp_path / "ld", cluster_id="c1", node_id=1) as ld:
        w = ld.partition("t", 0, b"\x01" * 16)
        for i, (pid, epoch, commit) in enumerate(((1, 0, False), (1, 1, True), (2, 0, True), (2, 1, False))):
            w.append(record_batch(2 * i, [RecordSpec(None, b"x", i)], producer_id=pid, producer_epoch=epoch,
                                  base_sequence=0, transactional=True))
            w.append(end_transaction_marker(2 * i + 1, commit, producer_id=pid, producer_epoch=epoch + 1,
                                            coordinator_epoch=0, timestamp=i))
    proc = run_cli("producers", "-f", "jsonl", tmp_path / "ld" / "t-0")
    found = [x["message"] for x in proc.jsonl() if x["type"] == "finding"]
    # 1: its first end an ABORT at 0 -> 1 (either), then a COMMIT at 1 -> 2 (v2: nothing); 2: COMMIT 0 -> 1 (v2),
    # then ABORT 1 -> 2 (v2: nothing)
    assert found == ["producer 1: epoch 0 → 1 by the ABORT marker at offset 1 (the coordinator bumped it: a fenced "
                     "or timed-out transaction, or a transactions v2 (KIP-890) abort)"]
    fixture = PROJECT_ROOT / "fixtures" / "logdir"
    shutil.copytree(fixture / "payments-0", tmp_path / "payments-0")
    messages = [x["message"] for x in run_cli("producers", "-f", "jsonl", tmp_path / "payments-0").jsonl()
                if x["type"] == "finding" and x["code"] == "producer-epoch-bump"]
    assert len(messages) == 4 and all(m.endswith("(the coordinator bumped it: a fenced or timed-out transaction)")
                                      for m in messages)


def test_progress_reaches_the_bars_total(logdir: Path) -> None:
    """The bar's total (hanging_bytes): every segment read twice by the replay, the coordinators' once more."""
    told: list[int] = []
    for paths in ([logdir], [logdir / "ledger-0", logdir / "__transaction_state-0"]):
        told.clear()
        list(hanging_paths(paths, progress=told.append))
        assert sum(told) == hanging_bytes(paths) > 0
