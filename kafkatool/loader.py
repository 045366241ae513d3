"""Loading a partition as the broker does when it starts: Kafka's ``LogLoader``, offline, from batch headers.

One home for what every command needs to know about a partition as the broker would hold it after loading
it (``storage/.../internals/log/LogLoader.java``, ``load``), in the broker's order:

1. **Leftovers** (``removeTempFilesAndCollectSwapFiles``, then the swap passes of ``load``): ``.deleted`` and
   ``.cleaned`` files are ignored, and so is every ``.swap`` at or above the smallest ``.cleaned`` base offset
   (KAFKA-6264); the remaining ``.swap`` logs replace the segments whose base offsets lie in their offset range
   (every file with an offset there goes: indexes and producer snapshots too).
   :func:`kafkatool.logfiles.leftover_passes` is that step, also as the file operations ``repair`` performs.
2. **Load-phase recovery** (``loadSegmentFiles`` -> ``recoverSegment``): a segment whose offset index is missing
   or fails ``LogSegment.sanityCheck`` is recovered on its own, before and independently of step 3: its invalid
   tail is cut, later segments stay.
3. **Recovery from the recovery point** (``recoverLog``), unless the log dir holds ``.kafka_cleanshutdown``:
   every segment from the one holding the recovery point on is recovered (``LogSegment.recover``); the first
   invalid batch (CRC mismatch, torn or zero-filled tail, impossible size) cuts its segment there, and every
   later segment is deleted. A segment already cut in step 2 is whole when step 3 reads it again, so its cut
   does not end the log.
4. **Log end offset**: the recovered log's next offset (``readNextOffset`` of the active segment: after its last
   whole batch, or its base offset when empty); below the log-start checkpoint, the broker deletes every
   segment and starts an empty log there (``deleteSegmentsIfLogStartGreaterThanLogEnd``). Log start:
   max(log-start checkpoint, first segment's base offset).
5. **Leader epochs** (``LeaderEpochFileCache``, :class:`kafkatool.epochs.EpochCache`): ``leader-epoch-checkpoint``
   entries ``assign``-ed in order; each recovered batch whose epoch is newer than the latest is ``assign``-ed
   (``LogSegment.recover``: step 2's segments first, then step 3's); then ``truncateFromEnd(log end offset)`` and
   ``truncateFromStart(log start)``.
6. **Producer state** (``UnifiedLog.rebuildProducerState``, ``ProducerStateManager.truncateAndReload``): the latest
   readable snapshot at or before the first recovered segment (without recovery: at or before the log end),
   else the log start, then every batch from there to the log end replayed (``ProducerAppendInfo``, in
   :class:`kafkatool.producer_state.ProducerReplay`). After a clean shutdown with no snapshot file at all the broker
   assumes no producer state and replays nothing.
7. **Offsets the broker derives** (``UnifiedLog``): the high watermark is the checkpoint clamped to
   [log start, LEO] (``updateHighWatermark``); the first unstable offset is the oldest open transaction's
   first offset, raised to the log start (``maybeIncrementFirstUnstableOffset``); the last stable offset is the
   first unstable offset when below the high watermark, else the high watermark.
8. **The KRaft metadata log** (``__cluster_metadata``, ``KafkaMetadataLog.apply``,
   :mod:`kafkatool.metadata_log`): its snapshots against the loaded log; a snapshot ahead of the log starts the
   log there (log start = log end = its end offset, no epochs, no producers); a log starting above 0 with no
   snapshot at or after its start does not load (``kraft-snapshot-gap``). The segments stay as loaded.

Everything is computed from batch headers (:func:`kafkatool.records.scan`, columnar); only control batches'
single record is decoded, for its marker type. Nothing is written: the result is plain data plus findings.

Where this deliberately differs from the broker (say so when you read the numbers):

- a batch whose CRC does not match never counts toward producer state, even in a segment the broker trusts
  (below the recovery point, or after a clean shutdown), where its own replay does not check CRCs;
- a data batch or marker with a producer epoch older than the producer's current one is fenced: it changes
  nothing (the broker's replay, origin REPLICATION, only logs a warning and takes the older epoch; a leader
  never accepts such a write from a client: ``InvalidProducerEpochException``);
- producers idle longer than ``producer.id.expiration.ms`` are not expired from the snapshot loaded (expiry
  never removes a producer with an open transaction, so the first unstable offset is the broker's);
- a segment swapped in from a ``.swap`` file is recovered like one with a missing index (as ``repair`` rebuilds
  its indexes); the broker gives it the empty index files it opened with the ``.swap`` suffix and trusts it;
- a batch whose last offset does not fit its segment (below the base offset, more than 2^31-1 above it, or with
  no next offset below 2^63: :func:`kafkatool.segment_indexes.offset_misfit`) is an invalid batch: recovery cuts
  the segment there. ``LogSegment.recover`` throws ``LogSegmentOffsetOverflowException`` (``ensureOffsetInRange``)
  and ``LogLoader.retryOnOffsetOverflow`` splits the segment at it (KAFKA-6264, for segments written before
  KAFKA-5413), which on a damaged disk (one flipped bit of a base offset, outside the CRC) would move the log end
  to the damaged offset or past 2^63-1. In a segment the broker trusts such a batch is a finding and its offsets
  are left out (no log end offset above 2^63-1).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .epochs import EpochCache
from .errors import IndexAppendError, InputIOError
from .filetypes import METADATA_TOPIC, FileKind, file_size, open_regular
from .findings import finding
from .logdir import LogDir
from .logfiles import Leftovers, PartitionFiles, leftover_passes, sort_files
from .model import Batch, Finding, Marker, Stretch, column_batch, pushback
from .producer_state import ProducerReplay, ProducerState, fenced
from .records import ScanOptions, scan
from .segment_indexes import INT64_MAX, SegmentIndexes, last_offset_limit, offset_misfit
from .smallfiles import (
    AbortedTxn,
    EpochEntry,
    ProducerEntry,
    ProducerSnapshotHeader,
    SmallReads,
    cannot_read,
    read_small_file,
    read_txn_index,
)
from .walk import PARTITION_DIR, PartitionDir, dir_files

if TYPE_CHECKING:
    from .metadata_log import MetadataLogLoad, SnapshotFile

# Topics that are always compacted (cleanup.policy=compact): their first batches of an epoch may be gone.
COMPACTED_TOPICS = ("__consumer_offsets", "__transaction_state")


# --- the result ------------------------------------------------------------------------------------------------


@dataclass
class LoadedSegment:
    """One segment of the loaded log (``LogSegment``)."""

    base_offset: int
    path: Path                     # where its bytes are now (a ``.swap`` file the broker would rename into place)
    display: str
    size: int
    recovered: str | None = None   # why the broker recovers it (None: trusted as it is)
    next_offset: int = 0           # after load (``readNextOffset``)
    valid_bytes: int = 0           # bytes kept after load (the segment is cut here when smaller than ``size``)
    deleted: bool = False          # recovery deletes it (it follows a cut that ends the log)
    dropped_batches: int = 0       # whole batches past the kept bytes (a cut's, or all of a deleted segment's)
    first_dropped: int | None = None   # base offset of the first of them
    last_dropped: int | None = None    # last offset of the last of them
    # With ``load_partition(rebuild=...)``, for each segment recovered (``LogSegment.recover``): its rebuilt indexes
    # and aborted transactions (``.txnindex``); for each segment boundary the replay passes, the producer state there
    # (the snapshot ``recoverSegment``/``rebuildProducerState`` take at the segment's base offset).
    indexes: SegmentIndexes | None = None
    aborted_txns: list[AbortedTxn] | None = None
    producers_at_base: dict[int, ProducerState] | None = None


class Rebuild(NamedTuple):
    """What ``repair`` needs from a load beyond the broker's view: the derived files ``LogSegment.recover`` and
    ``ProducerStateManager`` write (see :class:`LoadedSegment`), with the broker's settings and clock."""

    index_interval_bytes: int        # index.interval.bytes
    now_ms: int                      # the broker's clock: loadFromSnapshot drops producers expired by then
    producer_id_expiration_ms: int   # producer.id.expiration.ms


class RecoveryCut(NamedTuple):
    """Where recovery cuts the log: the first invalid batch of a segment the broker recovers."""

    path: Path
    display: str
    segment_base: int
    position: int
    next_offset: int               # the segment's next offset after the cut
    ends_log: bool                 # step 3 cut it: every later segment is deleted
    finding: Finding


@dataclass
class LoadedPartition:
    """A partition as the broker holds it after ``LogLoader.load`` (see the module doc); plain data."""

    path: Path
    display: str
    topic: str
    partition: int
    segments: list[LoadedSegment]
    recovery_point: int            # the checkpoint's (0 when absent) or the caller's
    recovery_point_checkpoint: int | None
    clean_shutdown: bool
    log_start_checkpoint: int | None
    hw_checkpoint: int | None
    log_start_offset: int = 0
    log_end_offset: int = 0        # after load
    on_disk_end_offset: int = 0    # after the last whole batch on disk, whatever recovery would cut
    high_watermark: int = 0
    compacted: bool = False        # a compacted topic, or the partition is in cleaner-offset-checkpoint
    epoch_checkpoint: list[tuple[int, int]] | None = None   # None: no leader-epoch-checkpoint file
    epoch_cache: EpochCache | None = None   # after load
    epoch_runs: list[tuple[int, int, int, str]] = field(default_factory=list)  # epoch, first offset, position, path
    cuts: list[RecoveryCut] = field(default_factory=list)
    producers: dict[int, ProducerState] = field(default_factory=dict)
    producer_snapshot: int | None = None   # offset of the snapshot the producer state starts from
    snapshot_files: dict[int, Path] = field(default_factory=dict)  # every producer snapshot of the dir, by offset
    replay_from: int | None = None         # first offset replayed (None: nothing replayed)
    aborted: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, first, marker) seen in the replay
    fenced: list[tuple[int, int, int]] = field(default_factory=list)   # (pid, epoch, offset) of fenced batches
    batches: int = 0               # kept batches
    records: int = 0
    first_batch_offset: int | None = None
    first_timestamp: int | None = None     # of the first kept batch
    max_timestamp: int | None = None       # the largest batch max timestamp kept (-1: none carried one)
    legacy: bool = False
    findings: list[Finding] = field(default_factory=list)
    # the files the load read, after the leftover passes (``leftovers`` says what those passes do)
    leftovers: Leftovers | None = None
    index_files: dict[tuple[int, str], Path] = field(default_factory=dict)   # (base offset, "index"...) -> path
    snapshot_files: dict[int, Path] = field(default_factory=dict)            # offset -> producer snapshot
    epoch_checkpoint_file: Path | None = None
    bad_snapshots: dict[int, str] = field(default_factory=dict)              # unreadable snapshots: why
    metadata_log: MetadataLogLoad | None = None   # __cluster_metadata: what KafkaMetadataLog makes of it (step 8)

    @property
    def cut(self) -> RecoveryCut | None:
        """The cut that ends the log (step 3), else the first load-phase cut, else None."""
        ending = [c for c in self.cuts if c.ends_log]
        return ending[0] if ending else (self.cuts[0] if self.cuts else None)

    @property
    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction."""
        return {pid: p.txn_first_offset for pid, p in self.producers.items() if p.txn_first_offset >= 0}

    @property
    def first_unstable_offset(self) -> int | None:
        """``ProducerStateManager.firstUnstableOffset``, raised to the log start
        (``maybeIncrementFirstUnstableOffset``)."""
        txns = self.open_transactions
        return max(min(txns.values()), self.log_start_offset) if txns else None

    @property
    def last_stable_offset(self) -> int:
        """``UnifiedLog.lastStableOffset``: the first unstable offset if below the high watermark, else the HW."""
        fuo = self.first_unstable_offset
        return fuo if fuo is not None and fuo < self.high_watermark else self.high_watermark

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    def producer_entries(self) -> list[ProducerEntry]:
        return [self.producers[pid].entry() for pid in sorted(self.producers)]

    def truncation(self) -> Finding | None:
        """``recovery-truncates-log`` where recovery cuts batches that are on disk (at :attr:`cut`), else None: what
        ``verify`` and every command that reads the loaded log say of the cut (:func:`load_findings`)."""
        cut = self.cut
        if self.on_disk_end_offset == self.log_end_offset or cut is None:
            return None
        gone = sum(1 for s in self.segments if s.deleted)
        return finding("recovery-truncates-log", cut.display, cut.position,
                       f"the broker's recovery cuts this segment here ({cut.finding.code}): the log end offset after "
                       f"loading is {self.log_end_offset}, the batches on disk end at {self.on_disk_end_offset} "
                       f"(offsets {self.log_end_offset}..{self.on_disk_end_offset - 1} are lost"
                       + (f", and the {gone} segments after it are deleted)" if gone else ")"))

    def kept_snapshots(self) -> dict[int, Path]:
        """The producer snapshots ``ProducerStateManager.truncateAndReload`` leaves: those at or below the log end
        offset (it deletes every one beyond it, ``snapshot-beyond-log-end``)."""
        return {o: p for o, p in self.snapshot_files.items() if o <= self.log_end_offset}


# --- small pure helpers (also used by repair) ---------------------------------------------------------------------


def load_problem(base: int, index: Path | None, txnindex: Path | None) -> str | None:
    """Why ``LogLoader.loadSegmentFiles`` recovers the segment as it loads it (``LogSegment.sanityCheck``), or None.

    Only a missing offset index (``NoSuchFileException``) or a ``.txnindex`` entry whose last offset is below the
    segment's base offset (``TransactionIndex.sanityCheck``: ``CorruptIndexException``) do; the offset and time
    indexes are not checked at load (they are opened lazily).
    """
    if index is None:
        return "its offset index is missing"
    if txnindex is not None:
        try:
            entries = read_txn_index(txnindex)
        except (OSError, InputIOError) as exc:
            return f"its .txnindex cannot be read ({exc})"
        for txn in entries:
            if txn.last_offset < base:
                return (f"its .txnindex names an aborted transaction ending at {txn.last_offset}, below the segment "
                        f"base offset {base} (TransactionIndex.sanityCheck)")
    return None


def latest_snapshot(
    snapshots: dict[int | None, Path], first: int | None, log_start: int, log_start_checkpoint: int | None = None,
    read: Callable[[Path], list[Any]] | None = None,
) -> tuple[int, list[ProducerEntry], dict[int, str]]:
    """``ProducerStateManager.truncateAndReload``: the latest readable snapshot in [log start, ``first``] (no upper
    bound when ``first`` is None), its entries, and the unreadable ones (the broker deletes them); without one, the
    log start and no entries.

    ``recoverSegment`` passes the log dir's log start checkpoint (``log_start_checkpoint``; 0 when there is none) to
    ``truncateAndReload``, which deletes every snapshot at or below it before ``loadFromSnapshot`` takes the latest
    one left: such a snapshot never seeds a replay.

    Every snapshot is read (the unreadable ones are named), and only the entries of the latest usable one so far are
    kept: memory is one snapshot's entries, not every snapshot's (a partition of N segments has N snapshots).
    ``read(path)``: the snapshot's items (:func:`kafkatool.smallfiles.read_small_file`), e.g. read once for every
    reader of the partition (:class:`kafkatool.smallfiles.SmallReads`); InputIOError names ``str(path)``."""
    bad: dict[int, str] = {}
    best: tuple[int, list[ProducerEntry]] | None = None
    for offset, path in snapshots.items():
        if offset is None:
            continue
        try:
            items = (read(path) if read is not None
                     else list(read_small_file(path, FileKind.PRODUCER_SNAPSHOT, str(path))))
        except InputIOError as exc:
            bad[offset] = str(exc)
            continue
        problems = [f for f in items if isinstance(f, Finding) and f.severity == "error"]
        if problems:
            bad[offset] = problems[0].message
        elif (log_start <= offset and (first is None or offset <= first)
              and (log_start_checkpoint is None or offset > log_start_checkpoint)
              and (best is None or offset > best[0])):
            best = offset, [e for e in items if isinstance(e, ProducerEntry)]
    if best is not None:
        return best[0], best[1], bad
    return log_start, [], bad


def snapshot_beyond_log_end(display: str, offset: int, leo: int) -> Finding:
    """A producer snapshot past the log end offset, which ``ProducerStateManager.truncateAndReload`` deletes at load."""
    return finding("snapshot-beyond-log-end", display, None,
                   f"producer snapshot at offset {offset}, beyond the log end offset {leo}: the broker deletes it when "
                   "it loads the log")


def load_findings(loaded: LoadedPartition) -> list[Finding]:
    """What loading the partition met, said as ``verify`` says it (same code, file, byte position, severity) for a
    command that reads the loaded log rather than the files: each recovered segment's first invalid batch, where
    ``LogSegment.recover`` cuts it (``verify`` has it from its scan of the file; the load's own scan stops there, the
    cut's finding standing for what follows), ``recovery-truncates-log`` when that loses batches, the load's other
    findings (:attr:`LoadedPartition.findings`), then each producer snapshot as read (the broker deletes one it
    cannot read, ``ProducerStateManager.loadFromSnapshot``) and, readable and beyond the log end offset,
    :func:`snapshot_beyond_log_end`."""
    out = [c.finding for c in loaded.cuts]
    truncated = loaded.truncation()
    if truncated is not None:
        out.append(truncated)
    out += loaded.findings
    # a KRaft log truncated to its latest snapshot deletes every producer snapshot (kraft-log-starts-at-snapshot
    # says so): none is beyond its log end, as verify says
    kraft_truncated = loaded.metadata_log is not None and loaded.metadata_log.truncated_to is not None
    for offset, path in sorted(loaded.snapshot_files.items()):
        display = os.path.join(loaded.display, path.name)
        try:
            items = list(read_small_file(path, FileKind.PRODUCER_SNAPSHOT, display))
        except InputIOError as exc:
            out.append(finding("io-error", display, None, str(exc)))
            continue
        out += [i for i in items if isinstance(i, Finding)]
        if (not kraft_truncated and offset > loaded.log_end_offset
                and any(isinstance(i, ProducerSnapshotHeader) for i in items)):
            out.append(snapshot_beyond_log_end(display, offset, loaded.log_end_offset))
    return out


# --- producer state ------------------------------------------------------------------------------------------------


def _producer_runs(stretch: Stretch, replay: ProducerReplay | None, start: int, next_offset: int,
                   last_offset: int) -> list[tuple[Batch, Marker | None]] | None:
    """The batches a producer replay of a :class:`Stretch` (offsets ``next_offset..last_offset``) must see, in order,
    each with the end-transaction marker it holds (None for a data batch): none when it ends before the replay's
    ``start`` (the replay begins at a snapshot taken there); else the batches ``columns.producer_events`` names; or
    None when some batch must be replayed on its own: the stretch begins before ``start`` (only its batches from
    there on are replayed), or a batch's epoch is older than its producer's (it is fenced, and counted so).

    Replaying those leaves the state replaying every batch does (``tests/test_native.py`` holds the two equal). A
    data batch of a current epoch sets its producer's epoch, last batch and timestamp whatever came before, and
    touches no other producer, so its producer's last data batch in the stretch sets what its later markers leave of
    them (a marker keeps the last batch when its epoch is the same), and its last batch the timestamp; on the way
    there a producer's state may lag behind, which nothing in the stretch reads (a marker only compares the epoch
    with its own, and the later data batch sets both again). A data batch begins a transaction at its first offset
    when it is transactional and none is ongoing, which only the producer's first transactional one after each of
    its markers can do, or its first in the stretch (when it has none ongoing before; else that batch changes
    nothing); a marker ends it, and of the other producers reads only where their ongoing transactions began (an
    ABORT's last stable offset): the batches named, in order, give it that. No batch is fenced when each producer's
    epochs never go down in the stretch and its first is not below its epoch before. A new producer enters the state
    at its first batch, named too."""
    if replay is None or last_offset < start:
        return []
    columns, lo, hi, markers = stretch
    producers = replay.producers
    for pid, _first, _last, first_epoch, rising in columns.producer_spans(lo, hi):
        if pid < 0:  # no producer id: nothing to replay
            continue
        if next_offset < start:
            return None
        p = producers.get(pid)
        if not rising or fenced(p, first_epoch):
            return None
    marker = markers.get
    return [(column_batch(columns, i), marker(i)) for i, pid, _base, _kinds in columns.producer_events(lo, hi)
            if pid >= 0]


# --- reading one segment -------------------------------------------------------------------------------------------


def segment_items(path: Path, display: str, options: ScanOptions, end: int | None = None,
                  progress: Callable[[int], None] | None = None, stretches: bool = False
                  ) -> Iterator[tuple[Batch, bytes | None] | Stretch | Finding]:
    """The batches of a segment file (with the bytes of each control batch) and the scan's findings, in file
    order, up to byte ``end``: a header scan, records left undecoded; ``progress`` is told the bytes scanned. With
    ``stretches`` (and the native core), batches that follow each other come as :class:`Stretch` es (the only control
    batches in one are the end-transaction markers the scan read, in its ``markers``)."""
    try:
        fh = open_regular(path, buffering=0)
    except OSError as exc:
        yield finding("io-error", display, None, f"cannot read: {exc.strerror or exc}")
        return
    with fh:
        fd = fh.fileno()
        for item in scan(fh, display, end=end, options=options, progress=progress, stretches=stretches):
            if item.__class__ is Batch:
                yield item, (os.pread(fd, item[3], item[0]) if item[18] else None)  # type: ignore[index,misc]
            elif item.__class__ is Finding or item.__class__ is Stretch:
                yield item  # type: ignore[misc]


# --- the loader ----------------------------------------------------------------------------------------------------


@dataclass
class _Files:
    segments: dict[int, LoadedSegment] = field(default_factory=dict)
    indexes: dict[tuple[int, str], Path] = field(default_factory=dict)
    snapshots: dict[int | None, Path] = field(default_factory=dict)
    epoch_checkpoint: Path | None = None
    swapped: set[int] = field(default_factory=set)
    leftovers: Leftovers = field(default_factory=Leftovers)
    unnamed: list[Finding] = field(default_factory=list)  # files named with an offset above 2^63-1, left out
    raft_snapshots: list[SnapshotFile] = field(default_factory=list)  # KRaft .checkpoint snapshots
    raft_partial: list[SnapshotFile] = field(default_factory=list)    # and .checkpoint.part ones


def _by_role(part: Path, display: str, files: Iterable[tuple[Path, str]] | PartitionFiles | None) -> PartitionFiles:
    """The dir's files by role: as given (``verify`` sorted them already: one classification of each name), else its
    listing's (given, or listed here)."""
    if isinstance(files, PartitionFiles):
        return files
    return sort_files(files if files is not None else dir_files(part, display))


def _sort_files(files: PartitionFiles, options: ScanOptions) -> _Files:
    """The files as the broker sees them after the leftover passes of ``LogLoader.load`` (step 1)."""
    if files.leftovers:
        out = _Files(leftovers=leftover_passes(files, lambda p, d, base: _next_offset(p, d, base, options)))
        gone = {p for p, _, _ in out.leftovers.deleted}
    else:  # no leftover (most partitions): the passes do nothing
        out, gone = _Files(), _NOTHING
    for p, d, info in files.files:
        base = info.base_offset
        if base is not None and base > INT64_MAX and info.leftover is None and p not in gone:
            out.unnamed.append(finding("base-offset-overflow", d, None, f"named with offset "
                                       f"{base}, above 2^63-1: the broker cannot parse the name "
                                       "(LogFileUtils.offsetFromFileName, Long.parseLong) and fails to load the "
                                       "partition; left out here"))
    # A file gone or unnamed is left out (a leftover has no role: none is among the segments, indexes, snapshots).
    if gone or out.unnamed:
        live = {p for p, _, i in files.files if p not in gone and (i.base_offset or 0) <= INT64_MAX}
        kept: Callable[[Path], bool] = live.__contains__
    else:  # every file is live (most partitions): no set of paths to hash
        kept = _every
    out.segments = {b: LoadedSegment(b, p, d, file_size(p)) for b, (p, d) in files.segments.items() if kept(p)}
    out.indexes = {(b, _EXTENSION[k]): p for (b, k), (p, _d) in files.indexes.items() if kept(p)}
    out.snapshots = {b: p for b, (p, _d) in files.snapshots.items() if kept(p)}
    # kafkatool.metadata_log: imported for a dir that may hold its files, never for a data partition's load
    if files.others:  # only there are KRaft snapshots (sort_files)
        from .metadata_log import snapshot_files

        out.raft_snapshots = snapshot_files(files.files)
    if files.unknown:
        from .metadata_log import partial_snapshot

        out.raft_partial = [s for p, d in files.unknown if (s := partial_snapshot(p, d)) is not None]
    if files.epoch_checkpoint is not None:
        out.epoch_checkpoint = files.epoch_checkpoint[0]
    for base, (p, d) in out.leftovers.swapped_logs.items():
        out.segments[base] = LoadedSegment(base, p, d, file_size(p))
        out.swapped.add(base)
    return out


def _every(path: Path) -> bool:
    return True


_NOTHING: frozenset[Path] = frozenset()
_EXTENSION = {k: k.value for k in FileKind}  # an enum member's .value is a descriptor call; a dict lookup is not


def segment_files(files: Iterable[tuple[Path, str]], options: ScanOptions | None = None) -> list[LoadedSegment]:
    """The segments of a partition dir's (path, display) listing as ``LogLoader.load`` sees them after its leftover
    passes (step 1: ``.swap`` logs in place of the segments they replace), by base offset; nothing else is read
    (for a caller that looks up one offset, ``locate``)."""
    out = _sort_files(sort_files(files), options or ScanOptions())
    return [out.segments[b] for b in sorted(out.segments)]


def segment_bytes(files: Iterable[tuple[Path, str]]) -> int:
    """Bytes of the segments :func:`segment_files` lists: what a load of the partition dir reads (each segment
    whole), what ``load_partition(progress=...)`` counts."""
    return sum(s.size for s in segment_files(files))


def log_start_offset(checkpoint: int | None, first_base: int | None, log_end: int = 0) -> int:
    """The log start offset after loading (``LogLoader``: ``max(logStartOffsetCheckpoint, first segment's base
    offset)``; an empty log starts at its log end)."""
    return max(checkpoint or 0, first_base if first_base is not None else log_end)


def _next_offset(path: Path, display: str, base: int, options: ScanOptions) -> int:
    """``LogSegment.readNextOffset``: after the last whole batch, or the base offset."""
    end, limit = base, last_offset_limit(base)
    for item in segment_items(path, display, options):
        if not isinstance(item, Finding) and base <= item[0].last_offset <= limit:  # (batch, control bytes)
            end = item[0].last_offset + 1  # (a batch that does not fit the segment: see PartitionLoad._segment)
    return end



def load_partition(
    path: Path, display: str | None = None, *, files: Iterable[tuple[Path, str]] | PartitionFiles | None = None,
    logdir: LogDir | None = None, recovery_point: int | None = None, clean_shutdown: bool | None = None,
    log_start: int | None = None, options: ScanOptions | None = None, rebuild: Rebuild | None = None,
    progress: Callable[[int], None] | None = None,
) -> LoadedPartition:
    """Load the partition dir ``path`` as ``LogLoader.load`` would (see the module doc); never writes.

    ``files``: the dir's (path, display) listing when already known, or those files by role
    (:class:`kafkatool.logfiles.PartitionFiles`, as ``verify`` sorted them); ``logdir``: its log dir as discovery
    found it (:class:`kafkatool.logdir.LogDir`, whose broker files are read once; read from ``path``'s parent when
    None); ``recovery_point``/``clean_shutdown``/``log_start`` override what the log dir says; ``rebuild``: also
    rebuild what recovery writes (see :class:`Rebuild`; producers expire as the broker's reloads drop them);
    ``progress``: called with the bytes of each segment's scan as they are read (a progress bar).
    """
    load = PartitionLoad(path, display, files=files, logdir=logdir, recovery_point=recovery_point,
                         clean_shutdown=clean_shutdown, log_start=log_start, options=options, rebuild=rebuild,
                         progress=progress)
    return load.finish()


class PartitionLoad:
    """``LogLoader.load`` in three steps, so that a caller already reading each segment (``verify``'s checks) feeds
    the loader the same scan instead of the loader reading the segment again:

    1. construction: the files as the broker sees them (leftovers), which segments it recovers and why, where the
       producer state starts (the module doc's steps 1, 2 and 6's first half);
    2. :meth:`tap`: a pass-through over one segment's scan items (:func:`kafkatool.records.scan`'s batches and
       findings, in file order) that loads them as they go by; segments nobody taps are read here;
    3. :meth:`finish`: steps 4 to 7, the :class:`LoadedPartition`.

    Segments are loaded in offset order (recovery deletes what follows a cut; producer state is replayed in
    order): a tap of a segment first reads the earlier ones nobody fed. A tap whose scan stopped half-way (an
    I/O error) leaves the load unusable, and :meth:`finish` loads the partition again from the files.

    Each step is O(1) per segment (a tap finds its segment in ``seg_index``); what is kept is per segment, not per
    batch: its :class:`LoadedSegment` (with ``rebuild``, its rebuilt indexes and aborted transactions), its epoch
    changes, and the latest usable producer snapshot's entries (``docs/performance.md``: ~6 KB a segment in all).
    """

    def __init__(
        self, path: Path, display: str | None = None, *,
        files: Iterable[tuple[Path, str]] | PartitionFiles | None = None,
        logdir: LogDir | None = None, recovery_point: int | None = None, clean_shutdown: bool | None = None,
        log_start: int | None = None, options: ScanOptions | None = None, rebuild: Rebuild | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        path = path if isinstance(path, Path) else Path(path)  # a Path made again is parsed again
        self.progress = progress  # the segments this load reads itself (a tapped one is its reader's to count)
        display = display if display is not None else str(path)
        self.args = dict(display=display, files=files, logdir=logdir, recovery_point=recovery_point,
                         clean_shutdown=clean_shutdown, log_start=log_start, options=options, rebuild=rebuild)
        self.options = options = options or ScanOptions()
        m = PARTITION_DIR.match(path.name)
        topic, partition = (m["topic"], int(m["partition"])) if m else (path.name, 0)
        key = (topic, partition)
        if logdir is None:
            logdir = read_logdir(path.parent, os.path.dirname(display) or ".")
        cps = logdir.checkpoints
        clean = logdir.clean_shutdown if clean_shutdown is None else clean_shutdown
        rp_checkpoint = cps.get("recovery-point-offset-checkpoint", {}).get(key)
        rp = recovery_point if recovery_point is not None else (rp_checkpoint or 0)
        ls_checkpoint = log_start if log_start is not None else cps.get("log-start-offset-checkpoint", {}).get(key)
        hw_checkpoint = cps.get("replication-offset-checkpoint", {}).get(key)
        self.files = sorted_files = _sort_files(_by_role(path, display, files), options)
        self.bases = bases = sorted(sorted_files.segments)
        self.segs = segs = [sorted_files.segments[b] for b in bases]
        self.seg_index = seg_index = {s.display: i for i, s in enumerate(segs)}  # tap's lookup
        if len(seg_index) < len(segs):  # a display named twice: the first wins
            self.seg_index = {s.display: i for i, s in reversed(list(enumerate(segs)))}
        self.loaded = loaded = LoadedPartition(path, display, topic, partition, segs, rp, rp_checkpoint, clean,
                                               ls_checkpoint, hw_checkpoint,
                                               findings=list(logdir.unreadable_checkpoints))
        loaded.snapshot_files = {o: p for o, p in sorted(sorted_files.snapshots.items()) if o is not None}
        loaded.leftovers, loaded.index_files = sorted_files.leftovers, sorted_files.indexes
        loaded.epoch_checkpoint_file = sorted_files.epoch_checkpoint
        loaded.compacted = topic in COMPACTED_TOPICS or key in cps.get("cleaner-offset-checkpoint", {})
        # each small file read once, by this load and by a reader of the same files (verify's checks)
        self.reads = SmallReads()
        loaded.epoch_checkpoint = _read_epoch_checkpoint(sorted_files.epoch_checkpoint, display, loaded.findings,
                                                         self.reads)
        loaded.findings.extend(sorted_files.unnamed)

        # Steps 2 and 3: which segments the broker recovers, and why.
        self.load_phase = load_phase = set()
        for seg in segs:
            if seg.base_offset in sorted_files.swapped:
                problem: str | None = "swapped in (.swap) without its indexes"
            else:
                problem = load_problem(seg.base_offset, sorted_files.indexes.get((seg.base_offset, "index")),
                                       sorted_files.indexes.get((seg.base_offset, "txnindex")))
            if problem:
                seg.recovered = problem
                load_phase.add(seg.base_offset)
        # recoverLog starts at the segment holding the recovery point (the first when it is below every base)
        self.unflushed = unflushed = set() if clean else set(bases[max(bisect_right(bases, rp) - 1, 0):])
        for seg in segs:
            if seg.base_offset in unflushed and seg.recovered is None:
                seg.recovered = f"at or after the recovery point {rp}"
        recovered_bases = load_phase | unflushed
        log_start_guess = log_start_offset(ls_checkpoint, bases[0] if bases else None)

        # Step 6, first half: where the producer state starts (revisited in finish if that is past the log end). The
        # first segment recovered loads the latest snapshot at or before it; without recovery, the final rebuild
        # does, once ProducerStateManager.removeStraySnapshots has dropped the snapshots at no segment's base offset.
        bound = min(recovered_bases) if recovered_bases else None
        self.snapshots = snapshots = (sorted_files.snapshots if recovered_bases
                                      else _without_strays(sorted_files.snapshots, bases))
        no_state = clean and not snapshots and not recovered_bases
        # recoverSegment's truncateAndReload gets the log-start checkpoint (0 without one): no snapshot at or below it
        self.start, entries, loaded.bad_snapshots = latest_snapshot(snapshots, bound, log_start_guess,
                                                                    (ls_checkpoint or 0) if recovered_bases else None,
                                                                    self.snapshot_items)
        self.replay = None if no_state else ProducerReplay(entries)
        self.rebuild = rebuild
        self.first_recovered = bound
        if self.replay is not None and rebuild is not None:
            self.replay.expire(rebuild.now_ms, rebuild.producer_id_expiration_ms)
        loaded.producer_snapshot = self.start if entries or self.start in sorted_files.snapshots else None
        loaded.replay_from = None if no_state else self.start

        # The one pass over every segment (tap/_read): cuts, kept batches, epochs, producer events.
        self.seg_epochs: dict[int, list[tuple[int, int]]] = {}
        self.disk_end = bases[0] if bases else (ls_checkpoint or 0)
        self.ended = False
        self.run = _Runs()
        self.next = 0               # index in segs of the next segment to load
        self.broken = False         # a tap stopped half-way: finish loads again from the files

    def snapshot_items(self, path: Path) -> list[Any]:
        """A producer snapshot's items, read once (:attr:`reads`, shown as the dir's listing shows it); the
        InputIOError of :func:`latest_snapshot` (naming ``str(path)``)."""
        try:
            return self.reads(path, FileKind.PRODUCER_SNAPSHOT, os.path.join(self.loaded.display, path.name))
        except InputIOError as exc:
            cause = exc.__cause__
            raise (cannot_read(str(path), cause) if isinstance(cause, OSError) else exc) from cause

    # --- step 2: the segments, in offset order ---

    def tap(self, display: str) -> Callable[[Iterator[Any]], Iterator[Any]] | None:
        """For the segment file shown as ``display`` (as in ``files``), a function that passes its scan items (the
        batches and findings of :func:`kafkatool.records.scan` over the whole file, in order) through while loading
        them; None when the broker does not load that file as a segment (a replaced segment, a leftover) or it is
        already loaded."""
        i = self.seg_index.get(display)
        if i is None or i < self.next:
            return None

        def passing(items: Iterator[Any]) -> Iterator[Any]:
            while self.next < i:
                self._read(self.segs[self.next])
            if self.next != i or self.broken:  # fed already (a second tap of the same file)
                yield from items
                return
            self.next += 1
            self.broken = True  # until the pass has seen the whole file
            with _Pread(self.segs[i].path) as pread:
                yield from self._segment(self.segs[i], items, pread)
            self.broken = False

        return passing

    def _read(self, seg: LoadedSegment) -> None:
        """Load a segment nobody fed: read it here."""
        self.next += 1
        try:
            fh = open_regular(seg.path, buffering=0)
        except OSError as exc:
            self.loaded.findings.append(finding("io-error", seg.display, None,
                                                f"cannot read: {exc.strerror or exc}"))
            deque(self._segment(seg, iter(()), _no_pread), maxlen=0)
            return
        with fh:
            fd = fh.fileno()
            items = scan(fh, seg.display, stretches=True, resynchronise=True, options=self.options,
                         progress=self.progress)
            deque(self._segment(seg, items, lambda size, position: os.pread(fd, size, position)), maxlen=0)

    def _segment(self, seg: LoadedSegment, items: Iterator[Any], pread: Callable[[int, int], bytes]
                 ) -> Iterator[Any]:
        """One segment's scan items into the load (the hot loop: tuple fields by index), passed on unchanged. A
        recovered segment is cut at its first invalid batch (``LogSegment.recover``); after a cut that ends the log
        its batches only count toward the on-disk end."""
        loaded, ended = self.loaded, self.ended
        seg.deleted = ended
        recovering = seg.recovered is not None and not ended
        ends_log = seg.base_offset in self.unflushed and seg.base_offset not in self.load_phase
        kept = not ended
        replay, start, run = self.replay, self.start, self.run
        self._recover_begin(seg, recovering, ended)
        indexes = seg.indexes
        epochs = self.seg_epochs.setdefault(seg.base_offset, [])
        next_offset, valid_bytes, disk_end = seg.base_offset, 0, seg.base_offset
        seg_base, limit = seg.base_offset, last_offset_limit(seg.base_offset)  # the offsets a batch may end at
        misfit_seen = False
        batches = records = 0
        max_ts = -1
        seg_epoch: int | None = None
        display = seg.display
        back: list[Any] = []  # a stretch taken batch by batch
        for b in pushback(items, back):
            if b.__class__ is Stretch:
                # Batches that follow each other (model.Stretch): CRC valid, one leader epoch, markers only as the
                # native core read them. Batch by batch they would only move the counters, the ends, the rebuilt
                # indexes' entries and the producer state, which the batches producer_events names leave as all of
                # them do (_producer_runs); taken whole unless the producer replay would not take every batch alike
                # (then halved). Past a cut they are only counted as dropped.
                columns, lo, hi, markers = b
                _, last, top, count, end = columns.advance(lo, hi)
                if last > limit:  # a batch that does not fit the segment: halved until it is taken on its own below
                    if hi - lo > 1:
                        mid = (lo + hi) // 2
                        back += (Stretch(columns, mid, hi, markers), Stretch(columns, lo, mid, markers))
                    else:
                        back.append(b.batch(lo))
                    continue
                if not kept:
                    yield b
                    if last >= disk_end:
                        disk_end = last + 1
                    seg.dropped_batches += hi - lo
                    if seg.first_dropped is None:
                        seg.first_dropped = b.batch(lo)[1]  # base_offset
                    seg.last_dropped = last
                    continue
                runs = _producer_runs(b, replay, start, next_offset, last)
                if runs is None:
                    if hi - lo > 1:  # halved, until the replay takes each part whole or batch by batch
                        mid = (lo + hi) // 2
                        back += (Stretch(columns, mid, hi, markers), Stretch(columns, lo, mid, markers))
                    else:
                        back.extend(reversed(list(b.batches())))
                    continue
                yield b
                if indexes is not None:  # LogSegment.recover: the entries the stretch's batches get
                    try:
                        indexes.append_stretch(b, valid_bytes, end)
                    except IndexAppendError as exc:
                        loaded.findings.append(finding("index-rebuild-impossible", display, exc.position,
                                                       str(exc)))
                        indexes = seg.indexes = None
                if last >= disk_end:
                    disk_end = last + 1
                next_offset, valid_bytes = last + 1, end
                batches += b.hi - b.lo
                records += count
                if top > max_ts:
                    max_ts = top
                for seen, marker in runs:  # the state the stretch leaves (_producer_runs)
                    replay.batch(seen, None, display, marker)  # type: ignore[union-attr]
                continue
            yield b
            if b.__class__ is not Batch:
                if b.__class__ is not Finding or not kept:
                    continue  # past the cut: the cut's finding stands for what follows
                kept = self._scan_finding(seg, b, recovering, ends_log, next_offset, valid_bytes)
                continue
            last = b[2]  # last_offset
            fits = seg_base <= last <= limit  # else: not an offset of this segment (see below)
            if fits and last >= disk_end:
                disk_end = last + 1
            if not kept:
                seg.dropped_batches += 1
                if fits:
                    if seg.first_dropped is None:
                        seg.first_dropped = b[1]
                    seg.last_dropped = last
                continue
            if recovering and (not b[6] or not fits):  # crc_valid; LogSegment.recover: ensureValid, ensureOffsetInRange
                kept = False
                self._cut_at_batch(seg, b, fits, next_offset, ends_log)
                continue
            if not fits:  # in a segment the broker trusts: one finding, its offsets left out
                if not misfit_seen:
                    misfit_seen = True
                    self._trusted_misfit(seg, b)
                continue
            next_offset, valid_bytes = last + 1, b[0] + b[3]
            if indexes is not None:  # LogSegment.recover: the indexes rebuilt batch by batch
                try:
                    indexes.append(b[0], b[3], last, b[11], last)
                except IndexAppendError as exc:
                    loaded.findings.append(finding("index-rebuild-impossible", display, b[0], str(exc)))
                    indexes = seg.indexes = None
            batches += 1
            records += b[12]
            if b[11] > max_ts:
                max_ts = b[11]
            if loaded.first_batch_offset is None:
                loaded.first_batch_offset, loaded.first_timestamp = b[1], b[10]
            if b[4] < 2:  # magic: v0/v1 carry no epoch and no producer
                loaded.legacy = True
                continue
            epoch = b[13]
            if epoch != seg_epoch:
                seg_epoch = epoch
                epochs.append((epoch, b[1]))
                if epoch != run.epoch:
                    run.epoch = epoch
                    loaded.epoch_runs.append((epoch, b[1], b[0], display))
            if b[14] >= 0 and replay is not None and last >= start:  # producer_id
                control = pread(b[3], b[0]) if b[18] else None  # a control batch's bytes: its marker type
                loaded.findings.extend(replay.batch(b, control, display))
        loaded.batches += batches
        loaded.records += records
        if batches and (loaded.max_timestamp is None or max_ts > loaded.max_timestamp):
            loaded.max_timestamp = max_ts
        seg.next_offset = next_offset
        seg.valid_bytes = valid_bytes if recovering else seg.size
        self.disk_end = max(self.disk_end, disk_end)
        self._recover_end(seg, indexes, recovering, ends_log)

    # --- the named steps of one segment's pass (LogSegment.recover, LogLoader.recoverLog) ---

    def _recover_begin(self, seg: LoadedSegment, recovering: bool, ended: bool) -> None:
        """``LogSegment.recover``'s start, with ``load_partition(rebuild=...)``: a recovered segment's indexes and
        ``.txnindex`` are rebuilt from empty as its batches go by; at each segment boundary the replay passes, the
        producer state is kept (the snapshot ``recoverSegment`` and ``rebuildProducerState`` take at the segment's
        base offset; each later ``recoverSegment`` reads it back: ``loadFromSnapshot`` drops expired producers)."""
        replay, rebuild = self.replay, self.rebuild
        if rebuild is not None and recovering:
            seg.indexes = SegmentIndexes(seg.base_offset, rebuild.index_interval_bytes)
            seg.aborted_txns = []
        if rebuild is not None and replay is not None and not ended and seg.base_offset > self.start:
            seg.producers_at_base = replay.state()
            if recovering and self.first_recovered is not None and seg.base_offset > self.first_recovered:
                replay.expire(rebuild.now_ms, rebuild.producer_id_expiration_ms)
        if replay is not None:
            replay.txn_index = seg.aborted_txns

    def _scan_finding(self, seg: LoadedSegment, f: Finding, recovering: bool, ends_log: bool, next_offset: int,
                      valid_bytes: int) -> bool:
        """A finding of the scan before any cut: ``LogSegment.recover`` cuts a recovered segment at an invalid
        batch's framing (torn tail, impossible size...) and at a zero-filled tail (a warning: nothing was written
        there, but the log ends there all the same); otherwise it is the load's finding (a CRC mismatch is judged on
        its batch, :meth:`_cut_at_batch`). Whether the segment's batches are still kept."""
        if f.code == "resynchronised":  # the batches found again after damage: the broker's reading ended there
            return False
        loaded = self.loaded
        cuts = f.severity == "error" or f.code == "zero-filled-tail"
        if recovering and cuts and f.code != "crc-mismatch":
            at = f.position if f.position is not None else valid_bytes
            loaded.cuts.append(RecoveryCut(seg.path, seg.display, seg.base_offset, at, next_offset, ends_log, f))
            return False
        if not recovering or f.code != "crc-mismatch":
            loaded.findings.append(f)
        return True

    def _cut_at_batch(self, seg: LoadedSegment, b: Batch, fits: bool, next_offset: int, ends_log: bool) -> None:
        """``LogSegment.recover`` meets an invalid batch in a recovered segment and cuts it there, the batch the first
        dropped: ``batch.ensureValid()`` fails (its CRC), or then ``ensureOffsetInRange`` throws (a last offset the
        segment cannot hold: the broker would split the segment there, ``retryOnOffsetOverflow``, KAFKA-6264, for
        segments older than KAFKA-5413; here it is an invalid batch, see the module doc)."""
        last, display = b[2], seg.display
        if not b[6]:  # crc_valid
            seg.dropped_batches = 1
            seg.first_dropped, seg.last_dropped = (b[1], last) if fits else (None, None)
            invalid = finding("crc-mismatch", display, b[0], f"batch at offsets {b[1]}..{last}: stored CRC32C {b[5]} "
                              "does not match its contents; recovery cuts the segment here")
        else:
            seg.dropped_batches, seg.first_dropped, seg.last_dropped = 1, None, None
            code = "offset-below-segment-base" if last < seg.base_offset else "offset-beyond-segment-range"
            invalid = finding(code, display, b[0], f"batch at offsets {b[1]}..{last}: "
                              f"{offset_misfit(seg.base_offset, last)}; recovery cuts the segment here")
        self.loaded.cuts.append(RecoveryCut(seg.path, display, seg.base_offset, b[0], next_offset, ends_log, invalid))

    def _trusted_misfit(self, seg: LoadedSegment, b: Batch) -> None:
        """A batch whose last offset the segment cannot hold, in a segment the broker trusts (no
        ``ensureOffsetInRange`` without recovery): a finding; the caller leaves its offsets out."""
        last, base = b[2], seg.base_offset
        code = "offset-below-segment-base" if last < base else "offset-beyond-segment-range"
        self.loaded.findings.append(finding(
            code, seg.display, b[0], f"batch at offsets {b[1]}..{last}: {offset_misfit(base, last)}; the broker "
            "trusts this segment (before the recovery point) and would misread it; its offsets are left out here "
            "(recovering it, e.g. repair --recovery-point at or below its base offset, cuts it there)"))

    def _recover_end(self, seg: LoadedSegment, indexes: SegmentIndexes | None, recovering: bool,
                     ends_log: bool) -> None:
        """``LogSegment.recover``'s end: the rebuilt indexes closed (``LogSegment.close``, as ``UnifiedLog.close``
        after recovery: the last time-index entry); a cut made by ``recoverLog`` ends the log (corruption in an
        unflushed segment deletes every later segment)."""
        loaded = self.loaded
        if indexes is not None:
            try:
                indexes.close()
            except IndexAppendError as exc:
                loaded.findings.append(finding("index-rebuild-impossible", seg.display, None, str(exc)))
                seg.indexes = None
        if recovering and ends_log and loaded.cuts and loaded.cuts[-1].segment_base == seg.base_offset:
            self.ended = True

    # --- steps 4 to 7 ---

    def finish(self) -> LoadedPartition:
        """The loaded partition (reads the segments nobody fed)."""
        if self.broken:
            path = self.loaded.path
            return PartitionLoad(path, **self.args).finish()  # type: ignore[arg-type]
        while self.next < len(self.segs):
            self._read(self.segs[self.next])
        loaded, segs, bases, display = self.loaded, self.segs, self.bases, self.loaded.display
        ls_checkpoint, replay, start, snapshots = loaded.log_start_checkpoint, self.replay, self.start, self.snapshots

        # Step 4: the log end offset and log start.
        live = [s for s in segs if not s.deleted]
        leo = live[-1].next_offset if live else (ls_checkpoint or 0)
        if ls_checkpoint is not None and live and leo < ls_checkpoint:
            loaded.findings.append(finding("log-end-below-log-start", display, None,
                                           f"the log end offset {leo} is below the log start checkpoint "
                                           f"{ls_checkpoint}: the broker deletes every segment and starts an empty "
                                           "log there"))
            for s in live:
                s.deleted = True
            live, leo = [], ls_checkpoint
        loaded.log_end_offset = leo
        loaded.on_disk_end_offset = max(self.disk_end, bases[-1] if bases else self.disk_end)
        loaded.log_start_offset = log_start_offset(ls_checkpoint, live[0].base_offset if live else None, leo)
        loaded.high_watermark = min(max(loaded.hw_checkpoint or 0, loaded.log_start_offset), leo)

        # Step 5: the leader-epoch cache.
        cache = EpochCache(loaded.epoch_checkpoint or ())
        order = [b for b in bases if b in self.load_phase] + [b for b in bases if b in self.unflushed]
        for base in order:
            if self.files.segments[base].deleted:
                continue
            for epoch, offset in self.seg_epochs.get(base, ()):
                cache.assign_recovered(epoch, offset)
        cache.truncate_from_end(leo)
        # LogLoader passes the log-start checkpoint (0 when the partition has none); the log start is what that
        # checkpoint holds whenever the broker wrote it, and the best guess for a copied partition dir without it.
        cache.truncate_from_start(loaded.log_start_offset)
        loaded.epoch_cache = cache

        # Step 6, second half: a snapshot past the log end is deleted by the broker; start again from an earlier one.
        if replay is not None and start > leo:
            start, entries, _bad = latest_snapshot(snapshots, leo, loaded.log_start_offset, read=self.snapshot_items)
            loaded.producer_snapshot = start if entries or start in self.files.snapshots else None
            loaded.replay_from = start
            replay = ProducerReplay(entries)
            for seg in live:
                if seg.next_offset <= start:
                    continue
                for item in segment_items(seg.path, seg.display, self.options):
                    if isinstance(item, Finding):
                        continue
                    b, control_raw = item
                    if b.base_offset >= seg.next_offset:
                        break
                    if b.magic >= 2 and b.producer_id >= 0 and b.last_offset >= start:  # type: ignore[operator]
                        replay.batch(b, control_raw, seg.display)
        if replay is not None:
            loaded.producers, loaded.aborted, loaded.fenced = replay.producers, replay.aborted, replay.fenced
        loaded.segments = segs
        if loaded.topic == METADATA_TOPIC:
            _metadata_log(loaded, self.files.raft_snapshots, self.files.raft_partial)
        return loaded


def _metadata_log(loaded: LoadedPartition, snapshots: list[SnapshotFile], partial: list[SnapshotFile]) -> None:
    """Step 8: ``KafkaMetadataLog.apply`` over the loaded log; a log truncated to the latest snapshot
    (``UnifiedLog.truncateFullyAndStartAt``) starts and ends there, with no epoch, producer or batch kept."""
    from .metadata_log import load_metadata_log  # __cluster_metadata alone (see _sort_files)

    latest = loaded.epoch_cache.latest if loaded.epoch_cache is not None else None
    kraft = load_metadata_log(snapshots, loaded.display, loaded.log_start_offset, loaded.log_end_offset,
                              latest[0] if latest else None, sum(1 for s in loaded.segments if not s.deleted),
                              len(loaded.snapshot_files), partial)
    loaded.metadata_log = kraft
    loaded.findings.extend(kraft.findings)
    if kraft.truncated_to is not None:
        start = kraft.truncated_to.end_offset
        loaded.log_start_offset = loaded.log_end_offset = loaded.high_watermark = start
        loaded.epoch_cache = EpochCache()
        loaded.producers, loaded.aborted, loaded.producer_snapshot, loaded.replay_from = {}, [], None, None
        loaded.first_batch_offset = loaded.first_timestamp = loaded.max_timestamp = None


@dataclass
class _Runs:
    """The leader epoch of the last kept batch, across segments (for ``epoch_runs``)."""

    epoch: int | None = None


class _Pread:
    """``pread(size, position)`` on a segment file opened on first use (a tap reads a control batch's bytes again:
    rare, and the scan feeding the tap keeps none)."""

    def __init__(self, path: Path) -> None:
        self.path, self.fh = path, None

    def __enter__(self) -> Callable[[int, int], bytes]:
        return self

    def __call__(self, size: int, position: int) -> bytes:
        if self.fh is None:
            self.fh = open_regular(self.path, buffering=0)
        return os.pread(self.fh.fileno(), size, position)

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()


def _no_pread(size: int, position: int) -> bytes:
    return b""


def read_logdir(path: Path, display: str) -> LogDir:
    """The log dir holding a partition dir named on its own (its broker files, read on first use)."""
    try:
        files = dir_files(path, display)
    except InputIOError:
        files = []
    return LogDir(path, display, files)


class LogDirs:
    """The log dirs of the partitions a command loads, each once: a partition dir named alone gets its parent's
    (:func:`read_logdir`), shared by its siblings named alone, so its checkpoints are read once, not once a partition;
    and what reading a log dir's checkpoints met is handed out once (every partition's offsets come from them)."""

    def __init__(self) -> None:
        self._by_path: dict[Path, LogDir] = {}

    def place(self, part: PartitionDir) -> tuple[PartitionDir, tuple[Finding, ...]]:
        """``part`` with its log dir, and :attr:`LogDir.checkpoint_findings` the first time that log dir is met
        (else nothing)."""
        logdir = self._by_path.get(part.logdir_path)
        if logdir is not None:
            return (part if part.logdir is logdir else part._replace(logdir=logdir)), ()
        logdir = self._by_path[part.logdir_path] = part.logdir or read_logdir(part.logdir_path, part.logdir_display)
        return (part if part.logdir is logdir else part._replace(logdir=logdir)), logdir.checkpoint_findings

    def said(self, logdir: LogDir) -> None:
        """``logdir`` says what reading its checkpoints met itself (``verify`` of a log dir named whole): its
        partitions placed here hand out nothing more."""
        self._by_path.setdefault(logdir.path, logdir)


def checkpoint_trouble(part: PartitionDir, read: Iterable[Finding]) -> list[Finding]:
    """Of what reading ``part``'s log dir's checkpoints met (:meth:`LogDirs.place`), what its loads' findings do not
    carry already (an unreadable file is in every load's findings, :attr:`LoadedPartition.findings`), for a command
    that shows its loads' findings: a malformed or oversized checkpoint the high watermark, recovery point or log
    start would be silently missing from."""
    carried = part.logdir.unreadable_checkpoints if part.logdir is not None else ()
    return [f for f in read if f not in carried]


def _without_strays(snapshots: dict[int | None, Path], bases: list[int]) -> dict[int | None, Path]:
    """``ProducerStateManager.removeStraySnapshots``: snapshots at a segment's base offset stay, and the latest
    other one when it is at or past the last segment's base (the snapshot of the log end). ``bases``: sorted."""
    at_base = set(bases)  # one hash a snapshot, not a scan of the bases (a partition of N segments has N snapshots)
    kept = {o: p for o, p in snapshots.items() if o in at_base}
    strays = sorted(o for o in snapshots if o is not None and o not in at_base)
    if strays and (not bases or strays[-1] >= bases[-1]):
        kept[strays[-1]] = snapshots[strays[-1]]
    return kept


def _read_epoch_checkpoint(path: Path | None, display: str, findings: list[Finding],
                           reads: SmallReads) -> list[tuple[int, int]] | None:
    if path is None:
        return None
    shown = os.path.join(display, path.name)
    try:
        items = reads(path, FileKind.EPOCH_CHECKPOINT, shown)
    except InputIOError as exc:
        findings.append(finding("io-error", shown, None, str(exc)))
        return []
    entries = []
    for i in items:  # one pass: the entries, and the findings that are not mere notes
        if isinstance(i, EpochEntry):
            entries.append((i.epoch, i.start_offset))
        elif isinstance(i, Finding) and i.severity != "info":
            findings.append(i)
    return entries


__all__ = ["COMPACTED_TOPICS", "LoadedPartition", "LoadedSegment", "LogDirs", "PartitionLoad",
           "Rebuild", "RecoveryCut", "checkpoint_trouble", "latest_snapshot", "load_findings", "load_problem",
           "load_partition", "log_start_offset", "read_logdir", "segment_bytes", "segment_files", "segment_items",
           "snapshot_beyond_log_end"]
