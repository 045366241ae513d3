"""Kafka's rules where a command used to say less than the rule does (issue 26), each from the CLI on a case built
here: an index as sparse as the broker writes it, a retry inside or outside the producer's 5-batch window, a
transaction open past its timeout, and the KRaft timeline's unclean elections, min ISR and leaderless intervals."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkatool.build import RecordSpec, record_batch
from kafkatool.logwriter import PartitionWriter

from .test_internal_topics import _uv
from .test_min_isr import TOPIC_ID, _frame, _ints, config_record, metadata_log, partition_record, topic_record

T0 = 1_700_000_000_000


# --- a sparse index (LogSegment.append: an entry every index.interval.bytes) --------------------------------------


def test_a_sparse_index_is_called_sparse_not_exact(tmp_path: Path, run_cli) -> None:
    """Nine batches of ~1.5 kB with index.interval.bytes 4096: the broker indexes 2 of them (``LogSegment.append``
    adds an entry once ``bytesSinceLastIndexEntry`` passes the interval). Kafka accepts that index as whole: verify
    says it is sparse, never "exact", and finds nothing."""
    part = tmp_path / "t-0"
    with PartitionWriter(part, topic="t", partition=0, topic_id=b"\x01" * 16, index_interval_bytes=4096) as w:
        for i in range(9):
            w.append(record_batch(i, [RecordSpec(None, bytes([65 + i]) * 1500, T0 + i)]))
    entries = (part / "00000000000000000000.index").stat().st_size // 8
    assert 0 < entries < 9
    p = run_cli("verify", "-f", "jsonl", part)
    assert p.returncode == 0, p.stderr
    rows = p.jsonl()
    assert [r["index"] for r in rows if r.get("scope") == "partition"] == ["sparse"]
    assert [r for r in rows if r["type"] == "finding"] == []
    text = run_cli("verify", part)
    assert "exact" not in text.stdout and " sparse " in text.stdout


# --- a retry inside and outside the producer's 5-batch window (ProducerStateEntry.NUM_BATCHES_TO_RETAIN) -------


def _idempotent(offset: int, seq: int) -> bytes:
    return record_batch(offset, [RecordSpec(None, b"x", T0 + offset)], producer_id=7, producer_epoch=0,
                        base_sequence=seq)


def test_a_retry_inside_the_window_and_one_outside_get_kafkas_two_answers(tmp_path: Path, run_cli) -> None:
    """Producer 7 writes sequences 0..5 (one record a batch), then repeats sequence 3 (3 batches from it on: among
    the 5 ``ProducerStateEntry`` keeps, ``findDuplicateBatch`` finds it: DUPLICATE_SEQUENCE_NUMBER) and sequence 0
    (7 batches from it on: forgotten, ``checkSequence`` refuses it: OUT_OF_ORDER_SEQUENCE_NUMBER)."""
    part = tmp_path / "t-0"
    part.mkdir()
    seqs = [0, 1, 2, 3, 4, 5, 3, 0]
    batches = [_idempotent(i, s) for i, s in enumerate(seqs)]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    p = run_cli("producers", "-f", "jsonl", part)
    assert p.returncode == 1, p.stderr
    found = [(r["code"], r["severity"], r["position"]) for r in p.jsonl() if r["type"] == "finding"]
    at = [sum(map(len, batches[:i])) for i in (6, 7)]
    assert found == [("duplicate-sequence-number", "error", at[0]), ("duplicate-out-of-order-sequence", "error", at[1])]
    text = run_cli("producers", part).stdout
    assert "DUPLICATE_SEQUENCE_NUMBER" in text and "OUT_OF_ORDER_SEQUENCE_NUMBER" in text


# --- a transaction open past its timeout (TransactionStateManager.timedOutTransactions) -------------------------

T2023 = 1_685_577_600_000  # 2023-06-01T00:00:00Z
STATES = {"Ongoing": 1, "PrepareCommit": 2, "CompleteCommit": 4}


def _txn_record(tid: str, state: str, start: int, updated: int, pid: int) -> RecordSpec:
    """A TransactionLogKey/Value v0 (TransactionLogValue.json), stamped with its last update as the coordinator
    stamps it."""
    def s16(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    value = struct.pack(">hqhib", 0, pid, 0, 60_000, STATES[state])
    value += struct.pack(">i", 1) + s16("orders") + struct.pack(">ii", 1, 0) if state != "CompleteCommit" else \
        struct.pack(">i", 0)
    value += struct.pack(">qq", updated, start)
    return RecordSpec(struct.pack(">h", 0) + s16(tid), value, updated)


def test_a_transaction_open_past_its_timeout_is_found_at_the_newest_record_time(tmp_path: Path, run_cli) -> None:
    """tx-a: Ongoing since 2023-06-01 with a 60 s timeout; the log's newest record (tx-b completed an hour later) is
    the default now: tx-a is past its timeout (the coordinator aborts it). tx-c: PrepareCommit since 10 minutes
    before: its markers are not all written. tx-d: Ongoing for 10 s: within its timeout."""
    newest = T2023 + 3_600_000
    part = tmp_path / "__transaction_state-7"
    part.mkdir()
    records = [_txn_record("tx-a", "Ongoing", T2023, T2023, 1),
               _txn_record("tx-c", "PrepareCommit", newest - 900_000, newest - 600_000, 3),
               _txn_record("tx-d", "Ongoing", newest - 10_000, newest - 10_000, 4),
               _txn_record("tx-b", "CompleteCommit", newest - 1000, newest, 2)]
    (part / "00000000000000000000.log").write_bytes(b"".join(record_batch(i, [r]) for i, r in enumerate(records)))

    p = run_cli("txn-state", "-f", "jsonl", tmp_path)
    assert p.returncode == 1, p.stderr
    rows = p.jsonl()
    assert rows[0] == {"type": "txn_clock", "now": newest, "source": "newest record time"}
    found = [(r["code"], r["severity"], r["message"].split("'")[1]) for r in rows if r["type"] == "finding"]
    assert found == [("txn-timed-out", "warning", "tx-a"), ("txn-completion-pending", "warning", "tx-c")]
    text = run_cli("txn-state", tmp_path).stdout
    assert text.startswith("judged at 2023-06-01T01:00:00.000Z (the newest record time") and "txn-timed-out" in text

    # --now before tx-a's timeout ran out (and before tx-c's): nothing open too long
    p = run_cli("txn-state", "-f", "jsonl", "--now", "2023-06-01T00:00:59Z", tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.jsonl()[0] == {"type": "txn_clock", "now": T2023 + 59_000, "source": "--now"}
    assert [r for r in p.jsonl() if r["type"] == "finding"] == []
    # only tx-b asked for: the others' findings are not its
    p = run_cli("txn-state", "-f", "jsonl", "--transactional-id", "tx-b", tmp_path)
    assert p.returncode == 0 and [r["type"] for r in p.jsonl()] == ["txn_clock", "transaction_state"]
    assert run_cli("txn-state", "--now", "soon", tmp_path).returncode == 2


# --- the KRaft timeline: unclean elections, the min ISR in force, no leader ----------------------------------------


def _change(partition: int, *, isr: list[int] | None = None, leader: int | None = None,
            recovering: bool = False) -> bytes:
    """``PartitionChangeRecord`` (PartitionChangeRecord.json): ISR tag 0, leader tag 1, leader recovery state
    tag 5 (1: RECOVERING)."""
    tags = []
    if isr is not None:
        tags.append((0, _ints(isr)))
    if leader is not None:
        tags.append((1, struct.pack(">i", leader)))
    if recovering:
        tags.append((5, b"\x01"))
    body = _uv(len(tags)) + b"".join(_uv(t) + _uv(len(d)) + d for t, d in tags)
    return _frame(5) + struct.pack(">i", partition) + TOPIC_ID + body


def test_the_timeline_flags_an_unclean_election_shows_the_min_isr_and_says_no_leader(tmp_path: Path,
                                                                                    run_cli) -> None:
    """orders-0's ISR shrinks to broker 1 under the topic's min.insync.replicas 2, then it has no leader (-1; the
    ISR stays [1], as KRaft keeps it): produce requests get NOT_LEADER_OR_FOLLOWER, not NOT_ENOUGH_REPLICAS, so
    that interval is not under min ISR. Broker 3, outside the ISR, is then elected (RECOVERING): an unclean
    election (``PartitionChangeBuilder.electLeader``). orders-1's leader moves within the ISR: clean."""
    part = metadata_log(tmp_path, [
        topic_record("orders"),                                    # 0
        partition_record(0, [1, 2, 3], [1, 2, 3], 1),              # 1: min ISR 1, Kafka's default
        partition_record(1, [1, 2, 3], [1, 2], 1),                 # 2
        config_record(2, "orders", "min.insync.replicas", "2"),    # 3
        _change(0, isr=[1]),                                       # 4: under 2
        _change(0, leader=-1),                                     # 5: no leader
        _change(0, leader=3, isr=[3], recovering=True),            # 6: unclean, under again
        _change(1, leader=2),                                      # 7: clean
        _change(0, isr=[3, 1]),                                    # 8: back
    ])
    p = run_cli("metadata", "-f", "jsonl", part)
    assert p.returncode == 1, p.stderr
    rows = p.jsonl()
    steps = [(r["offset"], r["partition"], r["min_insync_replicas"], r["min_isr_source"], r["min_isr"], r["election"])
             for r in rows if r["type"] == "partition_state"]
    assert steps == [(1, 0, 1, "default", None, None), (2, 1, 1, "default", None, None),
                     (4, 0, 2, "topic", "under", None), (5, 0, 2, "topic", "no leader", None),
                     (6, 0, 2, "topic", "under", "unclean"), (7, 1, 2, "topic", None, None),
                     (8, 0, 2, "topic", "back", None)]
    found = [(r["code"], r["severity"]) for r in rows if r["type"] == "finding"]
    assert found == [("unclean-leader-election", "warning")]
    message = next(r["message"] for r in rows if r["type"] == "finding")
    assert "orders-0 at offset 6" in message and "not in the ISR 1" in message and "RECOVERING" in message

    intervals = [(r["partition"], r["from_offset"], r["to_offset"]) for r in
                 run_cli("metadata", "--under-min-isr", "-f", "jsonl", part).jsonl() if r["type"] == "under_min_isr"]
    assert intervals == [(0, 4, 5), (0, 6, 8)]  # not through the leaderless 5..6

    text = run_cli("metadata", part).stdout
    lines = {line.split()[0]: line for line in text.splitlines() if line[:1].isdigit()}
    assert lines["1"].endswith("1 (default)") and lines["4"].endswith("2 (topic) UNDER min ISR")
    assert lines["5"].endswith("2 (topic) no leader") and lines["8"].endswith("2 (topic) back to min ISR")
    assert "WARNING unclean-leader-election" in text
