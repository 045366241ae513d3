"""Kafka's rules where a command used to say less than the rule does (issue 26), each from the CLI on a case built
here: an index as sparse as the broker writes it, a retry inside or outside the producer's 5-batch window, a
transaction open past its timeout, and the KRaft timeline's unclean elections, min ISR and leaderless intervals."""

from __future__ import annotations

from pathlib import Path

from kafkatool.build import RecordSpec, record_batch
from kafkatool.logwriter import PartitionWriter

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
