"""``kafkatool.producer_state``: Kafka's ``ProducerAppendInfo`` / ``ProducerStateManager`` rules one by one, then the
writer (``UnifiedLog.append``) and the loader (``LogSegment.recover``, ``rebuildProducerState``) agreeing on a log the
writer wrote with transactions: the loader's producer state, snapshots and ``.txnindex`` entries are the writer's."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.errors import AppendError
from kafkatool.loader import Rebuild, load_partition
from kafkatool.logwriter import PartitionWriter
from kafkatool.model import Batch, Marker
from kafkatool.producer_state import (
    ProducerReplay,
    ProducerState,
    ProducerStateManager,
    append_data_batch,
    append_end_txn_marker,
    fenced,
    invalid_txn_state,
    last_sequence,
    snapshot_bytes,
    snapshot_entries,
)
from kafkatool.records import scan
from kafkatool.segment_indexes import txn_index_bytes
from kafkatool.smallfiles import AbortedTxn, read_producer_entries

INT32_MAX = 2**31 - 1
T0 = 1_700_000_000_000


def data(offset: int, pid: int, epoch: int, seq: int, n: int = 1, *, txn: bool = False, ts: int = T0) -> bytes:
    return record_batch(offset, [RecordSpec(b"k", b"v", ts + i) for i in range(n)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, transactional=txn)


def marker(offset: int, pid: int, epoch: int, *, commit: bool, coordinator_epoch: int = 3, ts: int = T0 + 99) -> bytes:
    return end_transaction_marker(offset, commit, producer_id=pid, producer_epoch=epoch,
                                  coordinator_epoch=coordinator_epoch, timestamp=ts)


def header(raw: bytes) -> Batch:
    (b,) = scan(io.BytesIO(raw), "<test>")
    assert isinstance(b, Batch)
    return b


# --- ProducerAppendInfo -------------------------------------------------------------------------------------------


def test_last_sequence_wraps_past_int_max() -> None:
    """``DefaultRecordBatch.lastSequence``: base sequence + last offset delta, wrapping to 0 past Int.MAX."""
    assert last_sequence(header(data(10, 1, 0, 5, 3))) == 7
    assert last_sequence(header(data(10, 1, 0, INT32_MAX - 1, 3))) == 0
    assert last_sequence(header(data(10, 1, 0, -1, 3))) == -1  # no sequence (not idempotent)


def test_data_batch_sets_last_batch_and_epoch_bump_forgets_it() -> None:
    p = ProducerState(7)
    assert not append_data_batch(p, header(data(0, 7, 0, 0, 2, ts=T0)))
    assert (p.epoch, p.last_batch, p.last_timestamp) == (0, (1, 1, 1), T0 + 1)
    append_data_batch(p, header(data(2, 7, 0, 2, 3)))
    assert p.last_batch == (4, 4, 2)
    p.coordinator_epoch = 9
    append_data_batch(p, header(data(5, 7, 1, 0)))  # maybeUpdateProducerEpoch: the new epoch's batch replaces it
    assert (p.epoch, p.last_batch, p.coordinator_epoch) == (1, (0, 5, 0), 9)


def test_transaction_begins_at_the_first_transactional_batch_only() -> None:
    p = ProducerState(7)
    assert append_data_batch(p, header(data(10, 7, 0, 0, txn=True)))  # began: TxnMetadata at its base offset
    assert p.txn_first_offset == 10
    assert not append_data_batch(p, header(data(11, 7, 0, 1, txn=True)))  # already open
    assert p.txn_first_offset == 10
    assert invalid_txn_state(p, False) and not invalid_txn_state(p, True)  # InvalidTxnStateException
    assert not invalid_txn_state(ProducerState(8), False) and not invalid_txn_state(None, False)


def test_end_txn_marker_completes_only_a_non_empty_transaction() -> None:
    p = ProducerState(7)
    append_data_batch(p, header(data(10, 7, 0, 0, 2, txn=True)))
    b = header(marker(12, 7, 0, commit=False))
    assert append_end_txn_marker(p, b, Marker("ABORT", 4, T0 + 50)) == 10  # CompletedTxn(first offset 10)
    # the same epoch keeps the last data batch; the marker sets the coordinator epoch and its record's timestamp
    assert (p.txn_first_offset, p.coordinator_epoch, p.last_timestamp, p.last_batch) == (-1, 4, T0 + 50, (1, 11, 1))
    assert append_end_txn_marker(p, header(marker(13, 7, 1, commit=True)), Marker("COMMIT", 5, T0 + 60)) == -1
    assert (p.epoch, p.last_batch, p.coordinator_epoch) == (1, None, 5)  # a bumped epoch forgets the last batch


def test_fenced_is_an_epoch_older_than_the_current_one() -> None:
    assert not fenced(None, 0) and not fenced(ProducerState(1), 0)  # unknown producer, or no epoch yet
    assert fenced(ProducerState(1, epoch=3), 2) and not fenced(ProducerState(1, epoch=3), 3)


# --- ProducerStateManager -----------------------------------------------------------------------------------------


def test_last_stable_offset_is_the_earliest_other_ongoing_transaction() -> None:
    """``lastStableOffset(CompletedTxn)`` / ``findNextIncompleteTxn``: the producer's own transaction never holds
    its LSO back; another's earliest does; none: the marker offset + 1."""
    m = ProducerStateManager()
    m.update({}, [(30, 2), (10, 1), (20, 3)])
    assert m.last_stable_offset(1, 40) == 20
    assert m.last_stable_offset(3, 40) == 10
    assert m.complete_txn(1, 10) and not m.complete_txn(1, 10)  # completeTxn: gone once
    assert m.last_stable_offset(3, 40) == 30
    assert m.complete_txn(2, 30) and m.last_stable_offset(3, 40) == 41


def test_replay_keeps_ongoing_transactions_from_a_snapshot_and_ignores_fenced_batches() -> None:
    m = ProducerStateManager()
    p = m.producers[5] = ProducerState(5)
    append_data_batch(p, header(data(100, 5, 2, 0, txn=True)))
    replay = ProducerReplay(snapshot_entries(m.producers))  # loadProducerEntry: the open transaction is ongoing
    assert replay.ongoing == {(100, 5)} and replay.producers[5].last_batch == (0, 100, 0)
    replay.txn_index = []
    replay.batch(header(data(101, 6, 0, 0, txn=True)), None, "<t>")
    replay.batch(header(data(102, 5, 1, 7)), None, "<t>")  # epoch 1 < 2: fenced, changes nothing
    assert replay.fenced == [(5, 1, 102)] and replay.producers[5].last_batch == (0, 100, 0)
    raw = marker(103, 5, 2, commit=False)
    assert replay.batch(header(raw), raw, "<t>") == []
    assert replay.aborted == [(5, 100, 103)]
    assert replay.txn_index == [AbortedTxn(0, 5, 100, 103, 101)]  # producer 6's open transaction holds the LSO
    assert replay.ongoing == {(101, 6)}


# --- the writer and the loader agree ------------------------------------------------------------------------------


def _write(part: Path) -> PartitionWriter:
    """A partition of several segments: idempotent and transactional producers, commits and aborts (of
    transactions interleaved with others), an epoch bump, an empty transaction's marker, a sequence wrapping past
    Int.MAX, a transaction left open, and one append of several producers' batches and markers."""
    w = PartitionWriter(part, topic="t", partition=0, topic_id=bytes(range(16)), segment_bytes=700,
                        index_interval_bytes=100)
    o = 0

    def put(raw: bytes) -> None:
        nonlocal o
        o = w.append(raw).last_offset + 1

    first_1000 = o
    put(data(o, 1000, 0, 0, 2, txn=True))
    put(data(o, 2000, 0, 0, txn=True))
    put(data(o, 3000, 0, 0, 3))
    put(data(o, 1000, 0, 2, txn=True))
    put(marker(o, 2000, 0, commit=False, coordinator_epoch=5))   # held back by producer 1000's transaction
    assert w.aborted_transactions(w.segment_base_offsets[-1])[-1].last_stable_offset == first_1000
    put(marker(o, 1000, 0, commit=True))
    put(data(o, 2000, 1, 0, 2, txn=True))                       # epoch bump
    put(marker(o, 2000, 1, commit=False, coordinator_epoch=6))  # nothing else open: marker + 1
    put(marker(o, 5000, 0, commit=True))                        # an empty transaction: no CompletedTxn
    put(data(o, 6000, 0, INT32_MAX - 1, 3))                     # last sequence wraps to 0
    put(data(o, 3000, 0, 3, 2))
    put(data(o, 4000, 0, 0, txn=True, ts=T0 + 5))               # left open
    many = [data(o, 7000, 0, 0, txn=True), data(o + 1, 8000, 0, 0, txn=True),
            marker(o + 2, 8000, 0, commit=False), marker(o + 3, 7000, 0, commit=True)]
    put(b"".join(many))
    for i in range(6):
        put(data(o, 3000, 0, 5 + 2 * i, 2, ts=T0 + 10 + i))
    assert len(w.segment_base_offsets) > 2
    return w


def test_writer_and_loader_agree(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    w = _write(part)
    writer_state = w.producers()
    bases = w.segment_base_offsets
    aborted = {b: w.aborted_transactions(b) for b in bases}
    assert sum(len(a) for a in aborted.values()) == 3
    w.close(clean=False)
    snapshots = {int(p.name.split(".")[0]): p for p in part.glob("*.snapshot")}
    assert sorted(snapshots) == bases[1:]  # UnifiedLog.roll: one at each new segment

    # Recovery from offset 0 replays every batch (no snapshot at or below the first segment).
    loaded = load_partition(part, "t-0", recovery_point=0, clean_shutdown=False)
    assert not loaded.findings and not loaded.cuts and loaded.replay_from == 0
    assert snapshot_entries(loaded.producers) == writer_state  # same producers, same snapshot (HashMap) order
    assert loaded.open_transactions == {4000: writer_state[[e.producer_id for e in writer_state].index(4000)]
                                        .current_txn_first_offset}
    assert [(pid, first, last) for pid, first, last in loaded.aborted] == [
        (t.producer_id, t.first_offset, t.last_offset) for b in bases for t in aborted[b]]

    # What repair rebuilds (LogSegment.recover's .txnindex, a snapshot at each segment base): the writer's files.
    last_ts = T0 + 100
    rebuilt = load_partition(part, "t-0", recovery_point=0, clean_shutdown=False,
                             rebuild=Rebuild(100, last_ts, 10**12))
    for seg in rebuilt.segments:
        assert seg.aborted_txns == aborted[seg.base_offset], seg.base_offset
        txnindex = part / f"{seg.base_offset:020d}.txnindex"
        assert (txnindex.read_bytes() if txnindex.exists() else b"") == txn_index_bytes(seg.aborted_txns or [])
        if seg.base_offset in snapshots:
            assert seg.producers_at_base is not None
            theirs = {e.producer_id: e for e in snapshot_entries(seg.producers_at_base)}
            mine = {e.producer_id: e for e in read_producer_entries(snapshots[seg.base_offset])}
            assert mine
            assert theirs == mine, seg.base_offset
    # The snapshot a clean close takes at the log end: the loader's state, byte for byte.
    assert snapshot_bytes(loaded.producers) == _end_snapshot(tmp_path, w.log_end_offset)


def _end_snapshot(tmp: Path, leo: int) -> bytes:
    """The writer's snapshot at the log end (``UnifiedLog.close``), from the same appends written again."""
    part = tmp / "again" / "t-0"
    w = _write(part)
    w.close()
    return (part / f"{leo:020d}.snapshot").read_bytes()


def test_writer_refuses_a_non_transactional_batch_inside_a_transaction(tmp_path: Path) -> None:
    """The same rule (:func:`invalid_txn_state`) the audit reports as ``txn-invalid-state``: the writer refuses it
    whole, alone or inside a bigger append."""
    w = PartitionWriter(tmp_path / "t-0", topic="t", partition=0, topic_id=bytes(16))
    w.append(data(0, 9, 0, 0, txn=True))
    with pytest.raises(AppendError, match="InvalidTxnStateException"):
        w.append(data(1, 9, 0, 1))
    with pytest.raises(AppendError, match="InvalidTxnStateException"):
        w.append(data(1, 10, 0, 0) + data(2, 9, 0, 1))
    assert w.log_end_offset == 1
    w.close()
