"""Producer state: Kafka's ``ProducerStateManager``, ``ProducerAppendInfo`` and ``ProducerStateEntry``
(``storage/src/main/java/org/apache/kafka/storage/internals/log/``), the one home of their rules.

The log writer (:mod:`kafkatool.logwriter`, ``UnifiedLog.append``), the loader's replay (:mod:`kafkatool.loader`,
``LogSegment.recover`` and ``UnifiedLog.rebuildProducerState``) and the audits (:mod:`kafkatool.producers`,
:mod:`kafkatool.txns`) all move producer state with these rules:

- a data batch with a producer id (``ProducerAppendInfo.appendDataBatch``, :func:`append_data_batch`): a new
  producer epoch forgets the previous batch (``ProducerStateEntry.maybeUpdateProducerEpoch``); the batch becomes the
  last one (sequence, offset, offset delta) with its max timestamp; a transactional batch with no open transaction
  begins one at its base offset (``TxnMetadata``). A non-transactional batch inside the producer's open transaction
  is refused (``InvalidTxnStateException``, :func:`invalid_txn_state`): the writer refuses it, the audit finds it, the
  replay takes the log as it is;
- an end-transaction marker (``appendEndTxnMarker``, :func:`append_end_txn_marker`): an ABORT or COMMIT closes the
  open transaction (a ``CompletedTxn`` only when one was open: an empty transaction touches no LSO and no
  ``.txnindex``), takes the marker's producer epoch, coordinator epoch and record timestamp, and keeps the last data
  batch when the epoch is the same;
- an epoch older than the producer's current one is fenced (``checkProducerEpoch``, :func:`fenced`);
- ``ProducerStateManager``: producers by id in ``HashMap`` insertion order, ongoing transactions by first offset
  (``ongoingTxns``, updated by ``update`` and ``completeTxn``), the last stable offset of a completed transaction
  (``lastStableOffset``: the first offset of the earliest ongoing transaction of *another* producer, else the marker
  offset + 1), snapshots in ``HashMap<Long, _>`` order (``takeSnapshot``/``writeSnapshot``) and read back without
  expired producers (``loadFromSnapshot``, ``isProducerExpired``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from .javacompat import java_hashmap_order
from .model import Batch, Finding, Marker
from .records import read_marker
from .smallfiles import AbortedTxn, ProducerEntry, producer_snapshot_bytes

_INT32_MAX = (1 << 31) - 1


def last_sequence(b: Batch) -> int:
    """``DefaultRecordBatch.lastSequence``: base sequence + last offset delta, wrapping past Int.MAX."""
    if b.base_sequence < 0:
        return -1
    delta = b.last_offset - b.base_offset
    seq = b.base_sequence + delta
    return seq - _INT32_MAX - 1 if seq > _INT32_MAX else seq


@dataclasses.dataclass(slots=True)
class ProducerState:
    """``ProducerStateEntry`` reduced to what a snapshot stores (only the last batch's metadata is kept)."""

    producer_id: int
    epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    txn_first_offset: int = -1
    last_batch: tuple[int, int, int] | None = None  # last sequence, last offset, offset delta

    @classmethod
    def from_entry(cls, e: ProducerEntry) -> ProducerState:
        """A snapshot's entry (``ProducerStateManager.readSnapshot``; no last batch when its offset is -1)."""
        return cls(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp, e.current_txn_first_offset,
                   (e.last_sequence, e.last_offset, e.offset_delta) if e.last_offset >= 0 else None)

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:  # maybeUpdateProducerEpoch: a new epoch forgets the batch metadata
            self.epoch, self.last_batch = epoch, None

    def copy(self) -> ProducerState:
        """A copy to change (``dataclasses.replace`` costs several times more, once per batch)."""
        return ProducerState(self.producer_id, self.epoch, self.coordinator_epoch, self.last_timestamp,
                             self.txn_first_offset, self.last_batch)

    def entry(self) -> ProducerEntry:
        seq, offset, delta = self.last_batch or (-1, -1, 0)
        return ProducerEntry(self.producer_id, self.epoch, seq, offset, delta, self.last_timestamp,
                             self.coordinator_epoch, self.txn_first_offset)


# --- ProducerAppendInfo -------------------------------------------------------------------------------------------


def fenced(p: ProducerState | None, producer_epoch: int) -> bool:
    """``ProducerAppendInfo.checkProducerEpoch``: an epoch older than the producer's current one (a leader refuses
    it from a client: ``InvalidProducerEpochException``)."""
    return p is not None and p.epoch >= 0 and producer_epoch < p.epoch


def invalid_txn_state(p: ProducerState | None, transactional: bool) -> bool:
    """``appendDataBatch``: a non-transactional batch while the producer's transaction is open
    (``InvalidTxnStateException``)."""
    return not transactional and p is not None and p.txn_first_offset >= 0


def append_data_batch(p: ProducerState, b: Batch) -> bool:
    """``ProducerAppendInfo.appendDataBatch`` (``ProducerStateEntry.addBatch``) for a v2 batch of producer ``p``; True
    when it begins a transaction (at its base offset). :func:`invalid_txn_state` is the caller's to check."""
    p.set_epoch(b[15])  # producer_epoch
    p.last_batch = (last_sequence(b), b[2], b[2] - b[1])  # last_offset, base_offset
    p.last_timestamp = b[11]  # max_timestamp
    if b[17] and p.txn_first_offset < 0:  # transactional, and no transaction open: it begins one
        p.txn_first_offset = b[1]
        return True
    return False


def append_end_txn_marker(p: ProducerState, b: Batch, marker: Marker) -> int:
    """``ProducerAppendInfo.appendEndTxnMarker`` for the ABORT/COMMIT ``marker`` of control batch ``b``: the first
    offset of the transaction it completes (``CompletedTxn``), or -1 when none was open."""
    completed = p.txn_first_offset
    p.set_epoch(b[15])  # producer_epoch
    epoch = marker.coordinator_epoch
    p.coordinator_epoch = epoch if epoch is not None else -1
    p.txn_first_offset = -1
    p.last_timestamp = marker.timestamp
    return completed


NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN


def retained(batches_since: int) -> bool:
    """Whether the leader still knows a batch of the producer's current epoch, the producer having appended
    ``batches_since`` batches from that one on (1: it was the last), and so what it answers a retry of it.

    ``ProducerStateEntry`` keeps the metadata of the last ``NUM_BATCHES_TO_RETAIN`` batches (``addBatchMetadata``
    drops the oldest; a new epoch clears them): ``findDuplicateBatch`` finds the retry among them and the leader
    answers with the first write's offsets, writing nothing (DUPLICATE_SEQUENCE_NUMBER; the audit's
    ``duplicate-sequence-number``). Older, it is not found, and ``ProducerAppendInfo.checkSequence`` refuses it as
    not following the last sequence (OUT_OF_ORDER_SEQUENCE_NUMBER; ``duplicate-out-of-order-sequence``)."""
    return batches_since <= NUM_BATCHES_TO_RETAIN


# --- ProducerStateManager -----------------------------------------------------------------------------------------


class ProducerStateManager:
    """``ProducerStateManager``: the producers (``producers``, a dict in ``HashMap`` insertion order) and the ongoing
    transactions (``ongoingTxns``), seeded from a snapshot's ``entries`` (``loadProducerEntry``)."""

    def __init__(self, entries: Iterable[ProducerEntry] = ()) -> None:
        self.producers: dict[int, ProducerState] = {}
        # ongoingTxns, (first offset, producer id): a TreeMap by first offset in Kafka; read in order when needed
        self.ongoing: set[tuple[int, int]] = set()
        for e in entries:
            self.producers[e.producer_id] = ProducerState.from_entry(e)
            if e.current_txn_first_offset >= 0:
                self.ongoing.add((e.current_txn_first_offset, e.producer_id))

    def update(self, producers: dict[int, ProducerState], started: Iterable[tuple[int, int]]) -> None:
        """``update(ProducerAppendInfo)``: the appends' updated entries, and the transactions they began
        (``(first offset, producer id)``) added to the ongoing ones."""
        self.producers.update(producers)
        self.ongoing.update(started)

    def last_stable_offset(self, producer_id: int, marker_offset: int) -> int:
        """``lastStableOffset(CompletedTxn)`` (``findNextIncompleteTxn``): the first offset of the earliest ongoing
        transaction of another producer, else the offset after the marker; what ``.txnindex`` records."""
        others = [first for first, pid in self.ongoing if pid != producer_id]
        return min(others) if others else marker_offset + 1

    def complete_txn(self, producer_id: int, first_offset: int) -> bool:
        """``completeTxn``: the transaction leaves the ongoing ones; False when it was not among them."""
        try:
            self.ongoing.remove((first_offset, producer_id))
        except KeyError:
            return False
        return True

    def expire(self, now_ms: int, expiration_ms: int) -> None:
        """The state as ``loadFromSnapshot`` reads back a snapshot taken now: in the snapshot's (hash map) order,
        without the producers with no open transaction idle for ``producer.id.expiration.ms``
        (``isProducerExpired``)."""
        self.producers = {pid: p for pid in java_hashmap_order(list(self.producers))
                          if (p := self.producers[pid]).txn_first_offset >= 0
                          or now_ms - p.last_timestamp < expiration_ms}

    def state(self) -> dict[int, ProducerState]:
        """A copy of the producer state (what a snapshot taken now holds)."""
        return {pid: p.copy() for pid, p in self.producers.items()}


def snapshot_entries(producers: dict[int, ProducerState]) -> list[ProducerEntry]:
    """The producers as a snapshot lists them: ``ProducerStateManager``'s ``HashMap<Long, _>`` order, ``producers``
    holding them in the order they were put in the map."""
    return [producers[pid].entry() for pid in java_hashmap_order(list(producers))]


def snapshot_bytes(producers: dict[int, ProducerState]) -> bytes:
    """``ProducerStateManager.takeSnapshot``'s file for this producer state (``writeSnapshot``)."""
    return producer_snapshot_bytes(snapshot_entries(producers))


class ProducerReplay(ProducerStateManager):
    """``ProducerStateManager`` fed by ``ProducerAppendInfo.append`` with origin REPLICATION, from batch headers
    (``LogSegment.recover``'s ``updateProducerState``, one batch at a time).

    A batch with a bad CRC and a fenced batch (an epoch older than the current one) change nothing; a
    non-transactional batch inside an open transaction is taken as it is. ``aborted``: (producer id, first offset,
    marker offset) of each ABORT of a non-empty transaction; ``txn_index``, when a list: their ``.txnindex`` entries.
    """

    def __init__(self, entries: Iterable[ProducerEntry] = ()) -> None:
        super().__init__(entries)
        self.aborted: list[tuple[int, int, int]] = []
        self.fenced: list[tuple[int, int, int]] = []
        self.txn_index: list[AbortedTxn] | None = None  # a list: each ABORT's .txnindex entry goes there

    def batch(self, b: Batch, control_raw: bytes | None, path: str, marker: Marker | None = None) -> list[Finding]:
        """Apply one v2 batch with a producer id; returns the findings of decoding a control batch (its bytes
        ``control_raw``; or ``marker``, the end-transaction marker it holds as the scan read it)."""
        if not b[6]:  # crc_valid
            return []
        pid = b[14]  # producer_id
        p = self.producers.get(pid)  # type: ignore[arg-type]
        if fenced(p, b[15]):  # type: ignore[arg-type]
            self.fenced.append((pid, b[15], b[1]))  # type: ignore[arg-type]
            return []
        if b[18]:  # control
            return self._marker(b, control_raw, path, p, marker)
        if p is None:
            p = self.producers[pid] = ProducerState(pid)  # type: ignore[arg-type]
        if append_data_batch(p, b):
            self.ongoing.add((b[1], pid))  # type: ignore[arg-type]
        return []

    def _marker(self, b: Batch, raw: bytes | None, path: str, p: ProducerState | None,
                marker: Marker | None) -> list[Finding]:
        """``appendEndTxnMarker``: an ABORT/COMMIT closes the open transaction; an empty control batch does nothing."""
        findings: Sequence[Finding] = ()
        if marker is None:
            if raw is None:
                return []
            marker, findings = read_marker(b, raw, path)
            if marker is None:
                return list(findings)
        pid = b.producer_id
        if p is None:
            p = self.producers[pid] = ProducerState(pid)  # type: ignore[arg-type]
        first = p.txn_first_offset
        if first >= 0 and marker.control_type == "ABORT":
            self.aborted.append((pid, first, b.base_offset))  # type: ignore[arg-type]
            if self.txn_index is not None:  # LogSegment.updateTxnIndex, with ProducerStateManager.lastStableOffset
                lso = self.last_stable_offset(pid, b.base_offset)  # type: ignore[arg-type]
                self.txn_index.append(AbortedTxn(0, pid, first, b.base_offset, lso))  # type: ignore[arg-type]
        if append_end_txn_marker(p, b, marker) >= 0:
            self.complete_txn(pid, first)  # type: ignore[arg-type]
        return list(findings)
