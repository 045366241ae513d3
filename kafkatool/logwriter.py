"""Appending record batches to a partition as a Kafka broker does, and writing the log dir's broker-level files.

Kafka's writer side: used by the fixtures, the tests, the benchmarks and ``repair``'s rewrite (:func:`segment_file`,
:func:`snapshot_bytes`, :func:`txn_index_bytes`). ``repair`` rebuilds indexes and snapshots through the loader
(:func:`kafkatool.loader.load_partition`), with the same index builder (:mod:`kafkatool.segment_indexes`), epoch
cache (:mod:`kafkatool.epochs`) and producer state (:mod:`kafkatool.producer_state`) as this writer.
Every file goes through the build helpers of :mod:`kafkatool.formats`; nothing depends on the wall clock.

One :meth:`PartitionWriter.append` is one ``UnifiedLog.append`` with the offsets taken as given (the follower
path, origin REPLICATION; ``core/src/main/scala/kafka/log/UnifiedLog.scala``), in Kafka's order:

1. Leader-epoch cache (``storage/.../internals/epoch/LeaderEpochFileCache.java``, ``assign``, in
   :class:`kafkatool.epochs.EpochCache`): a v2 batch whose partition leader epoch differs from the latest entry
   starts that epoch at its base offset, after dropping trailing entries with an epoch or start offset not below
   the new one; a v0/v1 entry clears the cache.
   ``leader-epoch-checkpoint`` is rewritten on each change (created empty with the log).
2. Roll (``UnifiedLog.maybeRoll``, ``LogSegment.shouldRoll``): when ``size > segment.bytes - append size``, when
   the append's max timestamp is more than ``segment.ms`` past the first append's of the segment (only
   timestamp-based rolling: Kafka's wall-clock fallback for timestamp-less segments is left out), when either
   index is full (``segment.index.bytes // entry size`` entries, ``AbstractIndex``), or when the last offset does
   not fit a 32-bit offset relative to the segment base. The new segment's base is the first batch's base
   offset (v0/v1 carry only their last offset, so Kafka falls back to the log end offset). The old segment
   gets a last time-index entry and trimmed index files (``LogSegment.onBecomeInactiveSegment``); a producer
   snapshot is taken at the new base offset (``UnifiedLog.roll``, ``ProducerStateManager.takeSnapshot``).
3. Segment append (``LogSegment.append``, ``OffsetIndex.append``, ``TimeIndex.maybeAppend``, in
   :class:`kafkatool.segment_indexes.SegmentIndexes`, which the loader also feeds when it recovers): when more than
   ``index.interval.bytes`` were appended since the last index entry (counted *before* this append), the offset
   index gets (last offset of the append, its file position) and the time index (max timestamp so far, offset
   of the batch that first reached it) unless that timestamp is not above its last entry's.
4. Producer state (``ProducerAppendInfo``, ``ProducerStateEntry``, ``ProducerStateManager.update``; their rules are
   :mod:`kafkatool.producer_state`'s): per batch with a producer id; a new producer epoch forgets the previous
   batch; a transactional data batch with no open transaction opens one at its base offset; a COMMIT/ABORT marker
   closes it, sets the coordinator epoch and the timestamp and keeps the last data batch's sequence/offset (same
   epoch).
5. Aborted transactions (``LogSegment.updateTxnIndex``, ``ProducerStateManager.lastStableOffset``): each ABORT of
   a non-empty transaction appends (producer id, first offset, marker offset, LSO) to the ``.txnindex`` of the
   segment that holds the marker; LSO = first offset of the earliest still-open transaction of *another*
   producer, else marker offset + 1.

:meth:`PartitionWriter.close` is ``UnifiedLog.close``: a producer snapshot at the log end offset, then
``LogSegment.close`` (last time-index entry, index files trimmed to their entries by ``AbstractIndex.close``).
``close(clean=False)`` leaves what a killed broker leaves: the active segment's index files still
preallocated (extended to ``segment.index.bytes`` rounded down to whole entries with a hole after the entries,
as ``RandomAccessFile.setLength`` leaves them: sparse, read as zeros), no final time-index entry,
no snapshot at the log end. :class:`LogDirWriter` adds what ``LogManager.shutdown`` and ``ReplicaManager`` write:
offset checkpoints, ``meta.properties`` and ``.kafka_cleanshutdown``.

Orders Kafka takes from Java hash maps are reproduced (:mod:`kafkatool.javacompat`): snapshot entries in
``HashMap<Long, _>`` order, ``meta.properties`` keys in ``Properties`` (``ConcurrentHashMap``) order as
``Properties.store`` writes them on JDK 17 (JDK 18+ sorts the keys). Offset checkpoints list partitions in the
order they were created (Kafka's own order comes from a hash map of ``TopicPartition``).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import BinaryIO, NamedTuple

from .epochs import EpochCache
from .errors import AppendError, IndexAppendError
from .formats import checkpoints, metadata_files
from .formats import index as index_format
from .formats import txnindex as txn_format
from .javacompat import java_date, java_properties_order
from .logfiles import segment_file
from .model import Batch, Marker
from .producer_state import (
    ProducerState,
    ProducerStateManager,
    append_data_batch,
    append_end_txn_marker,
    invalid_txn_state,
    snapshot_bytes,
    snapshot_entries,
)
from .records import RawBatch, decode_records, scan
from .segment_indexes import SegmentIndexes, txn_index_bytes
from .smallfiles import AbortedTxn, IndexEntry, ProducerEntry, TimeIndexEntry

DEFAULT_SEGMENT_BYTES = 1 << 30          # segment.bytes
DEFAULT_INDEX_INTERVAL_BYTES = 4096      # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES = 10 << 20   # segment.index.bytes
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000  # segment.ms
_INT32_MAX = (1 << 31) - 1
_new_tuple = tuple.__new__  # builds a NamedTuple without its Python-level __new__ (once per append)


class Appended(NamedTuple):
    """Where one append went."""

    first_offset: int     # base offset of the first batch (v0/v1: its last offset)
    last_offset: int
    segment_base_offset: int
    position: int         # byte position in the segment's .log


# --- in-memory state ----------------------------------------------------------------------------------


@dataclasses.dataclass
class _Segment:
    base_offset: int
    fh: BinaryIO | None
    indexes: SegmentIndexes
    size: int = 0
    aborted: list[AbortedTxn] = dataclasses.field(default_factory=list)
    rolling_timestamp: int | None = None  # max timestamp of the segment's first append


class _Pending(NamedTuple):
    """The producer-state effect of one append, computed before anything is written."""

    producers: dict[int, ProducerState]                # updated copies
    started: list[tuple[int, int]]                     # (first offset, producer id)
    completed: list[tuple[int, int, int, bool]]        # (producer id, first offset, marker offset, aborted)


# --- one partition ------------------------------------------------------------------------------------


class PartitionWriter:
    """A partition directory written batch by batch as a broker's ``UnifiedLog`` writes it (see module doc).

    ``dir`` must be absent or empty. ``start_offset`` is the log start offset of the new log (the first
    segment's base offset). ``high_watermark`` (default: log end offset), ``log_start_offset`` and
    ``cleaner_offset`` are what :class:`LogDirWriter` puts in the broker-level checkpoints.
    """

    def __init__(
        self,
        dir: Path,
        *,
        topic: str,
        partition: int,
        topic_id: bytes,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        start_offset: int = 0,
    ) -> None:
        self.dir = Path(dir)
        self.topic, self.partition, self.topic_id = topic, partition, topic_id
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.segment_ms = segment_ms
        self.max_offset_entries = segment_index_bytes // index_format.OFFSET_INDEX_ENTRY_SIZE
        self.max_time_entries = segment_index_bytes // index_format.TIME_INDEX_ENTRY_SIZE
        self.high_watermark: int | None = None
        self.log_start_offset = start_offset
        self.cleaner_offset: int | None = None
        self.recovery_point = start_offset
        self.closed = False
        self._log_end_offset = start_offset
        self._epochs = EpochCache()  # LeaderEpochFileCache
        self._state = ProducerStateManager()
        self._map_end_offset = self._last_snapshot_offset = start_offset
        self._sealed: list[_Segment] = []

        self.dir.mkdir(parents=True, exist_ok=True)
        if any(self.dir.iterdir()):
            raise AppendError(f"{self.dir}: not empty; PartitionWriter only creates new logs")
        (self.dir / "partition.metadata").write_bytes(metadata_files.build_partition_metadata(topic_id))
        (self.dir / "leader-epoch-checkpoint").write_bytes(b"")  # CheckpointFile creates it empty
        self._active = self._new_segment(start_offset)

    # --- state ---------------------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def segment_base_offsets(self) -> list[int]:
        return [s.base_offset for s in self._segments()]

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        """``(epoch, start offset)`` entries of the leader-epoch cache."""
        return list(self._epochs.entries)

    def producers(self) -> list[ProducerEntry]:
        """The producer state as a snapshot taken now would list it (and in that order)."""
        return snapshot_entries(self._state.producers)

    def offset_index(self, base_offset: int) -> list[IndexEntry]:
        return [IndexEntry(o, p) for o, p in self._segment(base_offset).indexes.offsets]

    def time_index(self, base_offset: int) -> list[TimeIndexEntry]:
        return [TimeIndexEntry(t, o) for t, o in self._segment(base_offset).indexes.times]

    def aborted_transactions(self, base_offset: int) -> list[AbortedTxn]:
        return list(self._segment(base_offset).aborted)

    def _segments(self) -> list[_Segment]:
        return [*self._sealed, self._active]

    def _segment(self, base_offset: int) -> _Segment:
        for s in self._segments():
            if s.base_offset == base_offset:
                return s
        raise KeyError(f"no segment with base offset {base_offset}")

    # --- append --------------------------------------------------------------------------------------

    def append(self, records: bytes | RawBatch) -> Appended:
        """Append one or more whole batches (v2, or v0/v1 log entries) as one ``UnifiedLog.append``.

        ``records`` is their bytes, or one batch as :func:`kafkatool.records.scan` yields it (``with_raw``): its
        header is then taken as scanned, not parsed again, and only a control batch's record is decoded (for its
        marker type).
        """
        if self.closed:
            raise AppendError(f"{self.dir}: closed")
        if isinstance(records, RawBatch):
            if not records.batch.crc_valid:
                raise AppendError(f"records cannot be appended: batch at offset {records.batch.base_offset} "
                                  "fails its CRC check")
            batches, records = [records], records.raw
        else:
            batches = _parse(records)
        first, last = batches[0].batch, batches[-1].batch
        first_or_last = first.base_offset if first.magic >= 2 else first.last_offset
        if first_or_last < self._log_end_offset:
            raise AppendError(f"first offset {first_or_last} is below the log end offset {self._log_end_offset}")
        max_timestamp, shallow_offset = -1, -1
        for rb in batches:
            b = rb.batch
            if b.max_timestamp > max_timestamp:
                max_timestamp, shallow_offset = b.max_timestamp, b.last_offset
        pending = self._producer_updates(batches)  # raises before anything is written, as Kafka does
        if len(records) > self.segment_bytes:
            raise AppendError(f"{len(records)} bytes exceed segment.bytes {self.segment_bytes}")

        for rb in batches:
            b = rb.batch
            if b.magic >= 2:
                if b.partition_leader_epoch < 0:
                    raise AppendError(f"batch at offset {b.base_offset} has no partition leader epoch "
                                      f"({b.partition_leader_epoch})")
                if self._epochs.assign(b.partition_leader_epoch, b.base_offset):
                    self._write_epochs()
            elif self._epochs.clear():
                self._write_epochs()

        size, last_offset = len(records), last.last_offset
        if self._should_roll(size, max_timestamp, last_offset):
            roll_offset = first.base_offset if first.magic >= 2 else last_offset - _INT32_MAX
            self._roll(max(roll_offset, self._log_end_offset))
        seg = self._active
        position = seg.size
        if position == 0:
            seg.rolling_timestamp = max_timestamp
        if not 0 <= last_offset - seg.base_offset <= _INT32_MAX:
            raise AppendError(f"offset {last_offset} does not fit segment {seg.base_offset}")
        seg.fh.write(records)  # type: ignore[union-attr]
        seg.size = position + size
        try:
            seg.indexes.append(position, size, last_offset, max_timestamp, shallow_offset)
        except IndexAppendError as exc:
            raise AppendError(str(exc)) from exc
        self._log_end_offset = self._map_end_offset = last_offset + 1

        if pending is not None:
            self._apply(pending, seg)
        return _new_tuple(Appended, (first_or_last, last_offset, seg.base_offset, position))

    def _should_roll(self, size: int, max_timestamp: int, last_offset: int) -> bool:
        seg = self._active
        reached_ms = (seg.size > 0 and seg.rolling_timestamp is not None and seg.rolling_timestamp >= 0
                      and max_timestamp - seg.rolling_timestamp > self.segment_ms)
        return (seg.size > self.segment_bytes - size or reached_ms
                or len(seg.indexes.offsets) >= self.max_offset_entries
                or len(seg.indexes.times) >= self.max_time_entries
                or not 0 <= last_offset - seg.base_offset <= _INT32_MAX)

    def _producer_updates(self, batches: list[RawBatch]) -> _Pending | Batch | None:
        """``analyzeAndValidateProducerState``: the appends' effect on copies of the producer entries.

        The common cases cost no copy: None when no batch has a producer id, and a single data batch itself (it
        is validated here and applied in place by :meth:`_apply`: nothing can fail in between)."""
        if len(batches) == 1:
            b = batches[0].batch
            if b.magic < 2 or b.producer_id < 0:
                return None
            if not b.control:
                if invalid_txn_state(self._state.producers.get(b.producer_id), b.transactional):
                    raise _not_transactional(b)
                return b
        pending = _Pending({}, [], [])
        for raw_batch in batches:
            b = raw_batch.batch
            if b.magic < 2 or b.producer_id < 0:
                continue
            pid = b.producer_id
            p = pending.producers.get(pid)
            if p is None:
                known = self._state.producers.get(pid)
                p = known.copy() if known is not None else ProducerState(pid)
            pending.producers[pid] = p
            if b.control:
                _end_transaction(p, raw_batch, pending)
            else:
                if invalid_txn_state(p, b.transactional):
                    raise _not_transactional(b)
                if append_data_batch(p, b):
                    pending.started.append((b.base_offset, pid))
        return pending

    def _apply(self, pending: _Pending | Batch | None, seg: _Segment) -> None:
        """``ProducerStateManager.update`` for each producer, then the completed transactions."""
        if pending is None:
            return
        state = self._state
        if isinstance(pending, Batch):
            pid = pending.producer_id
            p = state.producers.get(pid)
            if p is None:
                p = state.producers[pid] = ProducerState(pid)
            if append_data_batch(p, pending):
                state.ongoing.add((pending.base_offset, pid))
            return
        state.update(pending.producers, pending.started)
        for pid, first_offset, marker_offset, aborted in pending.completed:
            lso = state.last_stable_offset(pid, marker_offset)
            if aborted:
                txn = AbortedTxn(txn_format.CURRENT_VERSION, pid, first_offset, marker_offset, lso)
                seg.aborted.append(txn)
                with open(segment_file(self.dir, seg.base_offset, "txnindex"), "ab") as fh:
                    fh.write(txn_index_bytes([txn]))
            if not state.complete_txn(pid, first_offset):
                raise AppendError(f"producer {pid}: completed transaction at {first_offset} was never started")

    # --- segments, snapshots, close ------------------------------------------------------------------

    def _new_segment(self, base_offset: int) -> _Segment:
        fh = open(segment_file(self.dir, base_offset, "log"), "xb")  # closed when the segment is sealed
        return _Segment(base_offset, fh, SegmentIndexes(base_offset, self.index_interval_bytes))

    def _roll(self, new_offset: int) -> None:
        """``UnifiedLog.roll``: seal the active segment, open one at ``new_offset``, snapshot producers there."""
        if new_offset != self._active.base_offset:  # an empty active segment at that offset is kept as is
            self._seal(self._active, clean=True)
            self._sealed.append(self._active)
            self._active = self._new_segment(new_offset)
        self._map_end_offset = new_offset
        self.take_snapshot()
        self.recovery_point = new_offset  # the roll schedules a flush up to the new segment

    def _seal(self, seg: _Segment, *, clean: bool) -> None:
        """``onBecomeInactiveSegment`` / ``LogSegment.close``: last time entry, index files written trimmed."""
        indexes = seg.indexes
        if clean:
            try:
                indexes.close()
            except IndexAppendError as exc:
                raise AppendError(str(exc)) from exc
        # not clean: still preallocated, as the mmap left them: the entries, then a hole to the preallocated length
        # (AbstractIndex: RandomAccessFile.setLength; the file is sparse and its unwritten slots read as zeros)
        for ext, data, length in (
                ("index", indexes.index_bytes(), self.max_offset_entries * index_format.OFFSET_INDEX_ENTRY_SIZE),
                ("timeindex", indexes.timeindex_bytes(), self.max_time_entries * index_format.TIME_INDEX_ENTRY_SIZE)):
            with segment_file(self.dir, seg.base_offset, ext).open("wb") as fh:
                fh.write(data)
                if not clean and length > len(data):
                    fh.truncate(length)
        if seg.fh is not None:
            seg.fh.close()
            seg.fh = None

    def take_snapshot(self) -> Path | None:
        """``ProducerStateManager.takeSnapshot``: a snapshot at the map end offset, if newer than the last."""
        if self._map_end_offset <= self._last_snapshot_offset:
            return None
        path = segment_file(self.dir, self._map_end_offset, "snapshot")
        path.write_bytes(snapshot_bytes(self._state.producers))
        self._last_snapshot_offset = self._map_end_offset
        return path

    def flush(self) -> None:
        """``UnifiedLog.flush``: everything is on disk already; the recovery point moves to the log end."""
        self.recovery_point = self._log_end_offset

    def close(self, *, clean: bool = True) -> None:
        """``UnifiedLog.close`` (clean), or leave the partition as a killed broker would (``clean=False``)."""
        if self.closed:
            return
        if clean:
            self.take_snapshot()
        self._seal(self._active, clean=clean)
        self.closed = True

    def abandon(self) -> None:
        """Release the open file without writing anything more (after an error)."""
        if self._active.fh is not None:
            self._active.fh.close()
            self._active.fh = None
        self.closed = True

    def _write_epochs(self) -> None:
        (self.dir / "leader-epoch-checkpoint").write_bytes(checkpoints.build_epoch_checkpoint(self._epochs.entries))

    def __enter__(self) -> PartitionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()


def _parse(records: bytes) -> list[RawBatch]:
    """The whole batches of ``records``; anything Kafka's append validation would reject raises."""
    batches: list[RawBatch] = []
    for item in scan(io.BytesIO(records), "<append>", with_raw=True):
        if not isinstance(item, RawBatch):
            raise AppendError(f"records cannot be appended: {getattr(item, 'message', item)}")
        if batches and item.batch.last_offset <= batches[-1].batch.last_offset:
            raise AppendError(f"offsets go back at offset {item.batch.base_offset} (OffsetsOutOfOrderException)")
        batches.append(item)
    if not batches:
        raise AppendError("no batch to append")
    return batches


def _not_transactional(b: Batch) -> AppendError:
    return AppendError(f"producer {b.producer_id}: non-transactional batch at offset {b.base_offset} inside its open "
                       "transaction (InvalidTxnStateException)")


def _end_transaction(p: ProducerState, raw_batch: RawBatch, pending: _Pending) -> None:
    """``ProducerAppendInfo.appendEndTxnMarker`` for a control batch (an empty one changes nothing)."""
    b = raw_batch.batch
    records, findings = decode_records(b, raw_batch.raw, "<append>")
    if findings:
        raise AppendError(f"control batch at offset {b.base_offset}: {findings[0].message}")
    if not records:
        return
    marker = records[0]
    if marker.control_type not in ("ABORT", "COMMIT"):
        raise AppendError(f"control batch at offset {b.base_offset} with producer id {p.producer_id} is "
                          f"{marker.control_type}, not an end-transaction marker")
    first = append_end_txn_marker(p, b, Marker(marker.control_type, marker.coordinator_epoch, marker.timestamp))
    if first >= 0:
        pending.completed.append((p.producer_id, first, b.base_offset, marker.control_type == "ABORT"))


# --- a log dir --------------------------------------------------------------------------------------------


class LogDirWriter:
    """A broker log dir: partitions made with :meth:`partition`, broker-level files written by :meth:`close`.

    ``node_id`` gives a KRaft ``meta.properties`` (version 1, with ``directory_id`` if given), ``broker_id`` a
    ZooKeeper-mode one (version 0). ``written_at_ms`` is the date ``Properties.store`` puts in its comment.
    ``broker_epoch`` goes in ``.kafka_cleanshutdown`` (``None``: the empty pre-3.7 file). Partition config
    keyword arguments given here are the defaults of every :meth:`partition`.
    """

    def __init__(
        self,
        root: Path,
        *,
        cluster_id: str | None,
        node_id: int | None = None,
        broker_id: int | None = None,
        directory_id: bytes | None = None,
        broker_epoch: int | None = -1,
        written_at_ms: int = 1_700_000_000_000,
        **partition_defaults: int,
    ) -> None:
        if (node_id is None) == (broker_id is None):
            raise ValueError("give exactly one of node_id (KRaft) and broker_id (ZooKeeper mode)")
        self.root = Path(root)
        self.cluster_id, self.node_id, self.broker_id = cluster_id, node_id, broker_id
        self.directory_id, self.broker_epoch, self.written_at_ms = directory_id, broker_epoch, written_at_ms
        self.partition_defaults = partition_defaults
        self.partitions: list[PartitionWriter] = []
        self.root.mkdir(parents=True, exist_ok=True)

    def partition(self, topic: str, partition: int, topic_id: bytes, **config: int) -> PartitionWriter:
        """A new partition directory ``<root>/<topic>-<partition>``."""
        writer = PartitionWriter(self.root / f"{topic}-{partition}", topic=topic, partition=partition,
                                 topic_id=topic_id, **{**self.partition_defaults, **config})
        self.partitions.append(writer)
        return writer

    def close(self, *, clean: bool = True) -> None:
        """``LogManager.shutdown``: flush and close open partitions, then the checkpoints and marker files.

        Partitions already closed keep their recovery point (no flush). ``clean=False`` closes them as a crash
        leaves them and writes neither the offset checkpoints nor ``.kafka_cleanshutdown``.
        """
        for p in self.partitions:
            if not p.closed:
                if clean:
                    p.flush()
                p.close(clean=clean)
        self._write("meta.properties", self._meta_properties())
        if not clean:
            return

        def offsets(value) -> bytes:
            entries = [(p.topic, p.partition, value(p)) for p in self.partitions]
            return checkpoints.build_offset_checkpoint(e for e in entries if e[2] is not None)

        self._write("replication-offset-checkpoint", offsets(
            lambda p: p.log_end_offset if p.high_watermark is None else p.high_watermark))
        self._write("recovery-point-offset-checkpoint", offsets(lambda p: p.recovery_point))
        # LogManager.checkpointLogStartOffsetsInDir lists only logs starting above their first segment
        self._write("log-start-offset-checkpoint", offsets(
            lambda p: p.log_start_offset if p.log_start_offset > p.segment_base_offsets[0] else None))
        self._write("cleaner-offset-checkpoint", offsets(lambda p: p.cleaner_offset))
        self._write(".kafka_cleanshutdown", metadata_files.build_clean_shutdown(self.broker_epoch))

    def _meta_properties(self) -> bytes:
        """``MetaProperties.toProperties`` stored by ``PropertiesUtils.writePropertiesFile``."""
        props = {"version": "1" if self.node_id is not None else "0"}
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            props["node.id"] = str(self.node_id)
        else:
            props["broker.id"] = str(self.broker_id)
        if self.directory_id is not None:
            props["directory.id"] = metadata_files.uuid_to_string(self.directory_id)
        ordered = {k: props[k] for k in java_properties_order(props)}
        return metadata_files.build_properties(ordered, comments=("", java_date(self.written_at_ms)))

    def _write(self, name: str, data: bytes) -> None:
        (self.root / name).write_bytes(data)

    def __enter__(self) -> LogDirWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            for p in self.partitions:
                p.abandon()
