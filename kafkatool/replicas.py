"""``replicas``: the same partition on several brokers' disks, side by side, as the brokers would load it.

A replica is a partition dir plus the broker-level checkpoints of the log dir holding it
(``replication-offset-checkpoint``: the high watermark, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``.kafka_cleanshutdown``). Its log is read in one streaming pass
(:func:`kafkatool.records.scan`, headers only) that stops at the first damaged batch, where the broker's
recovery would truncate (``LogSegment.recover``: the segment is cut there, later segments are deleted).
From that pass, as ``UnifiedLog`` / ``LogLoader`` compute them when the broker starts:

* log start offset: max(checkpoint, first segment's base offset); log end offset (LEO): the offset after the
  last valid batch (an empty active segment: its base offset);
* high watermark: the checkpoint clamped to [log start, LEO] (``updateHighWatermark``); last stable offset
  (LSO): the first offset of the oldest open transaction if below the high watermark, else the high
  watermark. Open transactions come from the latest readable producer snapshot at or below the LEO and
  the batches after it (``ProducerStateManager``: a transactional batch opens its producer's transaction,
  a COMMIT/ABORT control batch closes it);
* the leader-epoch cache (:class:`EpochCache`, ``LeaderEpochFileCache``): ``leader-epoch-checkpoint``
  entries assigned in order, then, after an unclean shutdown, the epochs of the batches in the segments
  recovery re-reads (from the one holding the recovery point), then truncated to [log start, LEO).

Replicas are compared batch by batch in one merged pass over all of them (:func:`merge`): two batches are
the same when offsets, partition leader epoch and CRC are (a follower stores the leader's batches byte for
byte). Per pair: the first offset both hold where they differ, and the runs of batches each has that the
other does not (divergent, ahead of the other's end, or below the other's log start).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputIOError, UsageError
from .filetypes import FileKind, classify
from .model import Batch, Finding
from .records import ScanOptions, scan
from .smallfiles import EpochEntry, OffsetCheckpointEntry, ProducerEntry, read_small_file
from .walk import PartitionDir, partition_dirs

UNDEFINED_EPOCH = -1          # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1   # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET
MAX_RUNS = 100                # runs of unshared batches listed per pair and direction (the rest are counted)


# --- the leader-epoch cache ----------------------------------------------------------------------------


class EpochCache:
    """``LeaderEpochFileCache`` (``storage/.../internals/epoch/LeaderEpochFileCache.java``) on (epoch, start offset)."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def copy(self) -> EpochCache:
        c = EpochCache()
        c.entries = list(self.entries)
        return c

    @property
    def latest(self) -> tuple[int, int] | None:
        return self.entries[-1] if self.entries else None

    def assign(self, epoch: int, start: int) -> None:
        """``assign``: a new epoch (or an earlier start of the latest) drops the entries it contradicts."""
        if epoch < 0 or start < 0:
            return  # Kafka refuses such an entry (IllegalArgumentException): the cache never holds one
        if self.entries and epoch == self.entries[-1][0] and start >= self.entries[-1][1]:
            return  # isUpdateNeeded: no
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start):
            self.entries.pop()  # maybeTruncateNonMonotonicEntries
        self.entries.append((epoch, start))

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop the entries starting at or after ``end_offset``."""
        while end_offset >= 0 and self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """``truncateFromStart``: entries starting at or before ``start_offset`` become one, starting there."""
        removed = None
        while self.entries and self.entries[0][1] <= start_offset:
            removed = self.entries.pop(0)
        if removed is not None:
            self.entries.insert(0, (removed[0], start_offset))

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: (the largest epoch <= requested, the start offset of the next epoch, or the LEO
        for the latest epoch); (-1, -1) when undefined."""
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and self.entries[-1][0] == requested:
            return requested, log_end_offset
        higher = next((e for e in self.entries if e[0] > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self.entries if e[0] <= requested]
        return (floor[-1][0] if floor else requested), higher[1]


# --- one replica ---------------------------------------------------------------------------------------


@dataclass
class Segment:
    base_offset: int
    path: Path
    display: str
    size: int
    valid_end: int | None = None   # after a full scan: end of the last valid batch read in it


@dataclass
class Replica:
    """One replica: its files (read when opened), then its log (read by :meth:`batches`)."""

    dir: PartitionDir
    name: str
    segments: list[Segment]
    hw_checkpoint: int | None
    recovery_point: int | None
    log_start_checkpoint: int | None
    clean_shutdown: bool
    epoch_checkpoint: list[tuple[int, int]] | None    # None: no leader-epoch-checkpoint file
    snapshots: list[tuple[int, Path, str]]            # producer snapshots (offset, path, display)
    findings: list[Finding] = field(default_factory=list)
    scan_options: ScanOptions = field(default_factory=ScanOptions)
    # set by a full pass of batches():
    scanned: bool = False
    first_batch_offset: int | None = None
    leo: int = 0
    batches_read: int = 0
    records: int = 0
    runs: list[tuple[int, int, int, str]] = field(default_factory=list)  # epoch, first offset, position, path
    legacy: bool = False
    damage: Finding | None = None
    open_txns: dict[int, int] = field(default_factory=dict)             # producer id -> first offset

    @property
    def path(self) -> str:
        return self.dir.display

    @property
    def log_start_offset(self) -> int:
        """``LogLoader``: max(log-start checkpoint, first segment's base offset)."""
        first = self.segments[0].base_offset if self.segments else 0
        return max(first, self.log_start_checkpoint or 0)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    # -- the log --------------------------------------------------------------------------------------
    def batches(self, from_offset: int | None = None) -> Iterator[tuple[Segment, Batch]]:
        """The valid batches in offset order, up to the first damage. A full pass (``from_offset`` None) also
        sets the replica's state (LEO, epochs, open transactions, damage); ``from_offset`` starts at the segment
        holding that offset and skips the batches ending below it."""
        full = from_offset is None
        if full and self.scanned:
            raise RuntimeError(f"{self.path}: read in full twice")  # its state is counted once
        segments = self.segments
        if from_offset is not None:
            first = max((i for i, s in enumerate(segments) if s.base_offset <= from_offset), default=0)
            segments = segments[first:]
        txn_from, txns = self._producer_state_start() if full else (0, {})
        last: int | None = None
        epoch_now = None
        damage: Finding | None = None
        for seg in segments:
            if full:
                self.leo = max(self.leo, seg.base_offset)
            try:
                fh = open(seg.path, "rb", buffering=0)
            except OSError as exc:
                damage = Finding("error", "io-error", seg.display, None, f"cannot read: {exc.strerror or exc}")
                break
            with fh:
                end = 0
                for item in scan(fh, seg.display, options=self.scan_options):
                    if item.__class__ is Batch:
                        b = item
                        if not b.crc_valid:
                            continue  # its crc-mismatch finding comes next
                        if last is not None and b.base_offset <= last:
                            damage = Finding("error", "offset-not-increasing", seg.display, b.position,
                                             f"batch offsets {b.base_offset}..{b.last_offset} do not follow the "
                                             f"previous batch (last offset {last}); the log is read up to here")
                            break
                        last, end = b.last_offset, b.position + b.size
                        if full:
                            self._count(b, txn_from, txns)
                            if b.magic >= 2 and b.partition_leader_epoch != epoch_now:
                                epoch_now = b.partition_leader_epoch
                                self.runs.append((epoch_now, b.base_offset, b.position, seg.display))
                        elif b.last_offset < from_offset:  # type: ignore[operator]
                            continue
                        yield seg, b
                    elif isinstance(item, Finding):
                        if item.severity == "error":
                            damage = item
                            break
                        if full:
                            self.findings.append(item)
            if full:
                seg.valid_end = end
                if last is not None:
                    self.leo = max(self.leo, last + 1)
            if damage is not None:
                break
        if full:
            self.scanned = True
            if damage is not None:
                self.damage = damage
                self.findings.append(damage)
            # the snapshot used lies beyond the damage: Kafka would load an earlier one and replay from it
            self.open_txns = self._replay_txns() if txn_from > self.leo else txns

    def _count(self, b: Batch, txn_from: int, txns: dict[int, int]) -> None:
        self.batches_read += 1
        self.records += b.record_count
        if self.first_batch_offset is None:
            self.first_batch_offset = b.base_offset
        if b.magic < 2:
            self.legacy = True
        elif b.transactional and b.producer_id >= 0 and b.base_offset >= txn_from:
            _txn_event(b, txns)

    def _producer_state_start(self, limit: int | None = None) -> tuple[int, dict[int, int]]:
        """(offset of the snapshot Kafka loads, its open transactions), or (log start, {}) without one."""
        for offset, path, display in sorted(self.snapshots, reverse=True):
            if offset < self.log_start_offset or (limit is not None and offset > limit):
                continue
            try:
                items = list(read_small_file(path, FileKind.PRODUCER_SNAPSHOT, display))
            except InputIOError:
                continue
            if any(isinstance(i, Finding) and i.severity == "error" for i in items):
                continue  # Kafka deletes a snapshot it cannot read and takes the one before
            return offset, {e.producer_id: e.current_txn_first_offset for e in items
                            if isinstance(e, ProducerEntry) and e.current_txn_first_offset >= 0}
        return self.log_start_offset, {}

    def _replay_txns(self) -> dict[int, int]:
        start, txns = self._producer_state_start(self.leo)
        for _seg, b in self.batches(start):
            if b.last_offset >= self.leo:
                break
            if b.magic >= 2 and b.transactional and b.producer_id >= 0 and b.base_offset >= start:
                _txn_event(b, txns)
        return txns

    # -- what the broker derives ------------------------------------------------------------------------
    def epoch_cache(self) -> EpochCache:
        """The leader-epoch cache the broker would hold after loading this log (see the module doc)."""
        cache = EpochCache(self.epoch_checkpoint or ())
        if not self.clean_shutdown:  # LogLoader.recoverLog: LogSegment.recover assigns every batch's epoch
            point = self.recovery_point or 0
            bases = [s.base_offset for s in self.segments if s.base_offset <= point]
            recovered_from = bases[-1] if bases else 0
            for epoch, start, _pos, _path in self.runs:
                if start >= recovered_from:
                    cache.assign(epoch, start)
        cache.truncate_from_end(self.leo)
        cache.truncate_from_start(self.log_start_offset)
        return cache

    @property
    def high_watermark(self) -> int:
        """``updateHighWatermark`` of the checkpointed value (0 when absent): clamped to [log start, LEO]."""
        return min(max(self.hw_checkpoint or 0, self.log_start_offset), self.leo)

    @property
    def first_unstable_offset(self) -> int | None:
        """The oldest open transaction's first offset, raised to the log start (``maybeIncrementFirstUnstableOffset``:
        a transaction begun in segments retention deleted still holds the LSO, at the log start)."""
        return max(min(self.open_txns.values()), self.log_start_offset) if self.open_txns else None

    @property
    def last_stable_offset(self) -> int:
        fuo = self.first_unstable_offset
        return fuo if fuo is not None and fuo < self.high_watermark else self.high_watermark


def _txn_event(b: Batch, txns: dict[int, int]) -> None:
    """``ProducerStateManager``: a transactional data batch opens its producer's transaction, a marker closes it."""
    if b.control:
        txns.pop(b.producer_id, None)
    else:
        txns.setdefault(b.producer_id, b.base_offset)


def open_replica(part: PartitionDir, name: str, options: ScanOptions | None = None) -> Replica:
    """A replica's files: segments, epoch checkpoint, producer snapshots, and its log dir's checkpoints."""
    findings: list[Finding] = list(part.findings)  # what discovery met in the dir (a link to nothing)
    segments, snapshots = [], []
    epochs = None
    for path, display in part.files:
        info = classify(path)
        if info.leftover is not None or info.base_offset is None and info.kind is not FileKind.EPOCH_CHECKPOINT:
            continue
        if info.kind is FileKind.LOG:
            segments.append(Segment(info.base_offset, path, display, _size(path)))
        elif info.kind is FileKind.PRODUCER_SNAPSHOT:
            snapshots.append((info.base_offset, path, display))
        elif info.kind is FileKind.EPOCH_CHECKPOINT:
            epochs = [(e.epoch, e.start_offset) for e in _read(path, display, FileKind.EPOCH_CHECKPOINT, findings)
                      if isinstance(e, EpochEntry)]
    segments.sort(key=lambda s: s.base_offset)
    key = (part.topic, part.partition)
    checkpoints = {}
    for name_ in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        path = part.logdir_path / name_
        if path.is_file():
            entries = _read(path, os.path.join(part.logdir_display, name_), FileKind.OFFSET_CHECKPOINT, findings)
            checkpoints[name_] = {(e.topic, e.partition): e.offset for e in entries
                                  if isinstance(e, OffsetCheckpointEntry)}.get(key)
    return Replica(part, name, segments, checkpoints.get("replication-offset-checkpoint"),
                   checkpoints.get("recovery-point-offset-checkpoint"), checkpoints.get("log-start-offset-checkpoint"),
                   (part.logdir_path / ".kafka_cleanshutdown").is_file(), epochs, snapshots, findings,
                   options or ScanOptions())


def _read(path: Path, display: str, kind: FileKind, findings: list[Finding]) -> list[Any]:
    try:
        items = list(read_small_file(path, kind, display))
    except InputIOError as exc:
        findings.append(Finding("error", "io-error", display, None, str(exc)))
        return []
    findings.extend(i for i in items if isinstance(i, Finding) and i.severity != "info")
    return [i for i in items if not isinstance(i, Finding)]


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def replica_groups(paths: Iterable[str | Path], topic: str | None = None,
                   partition: int | None = None, minimum: int = 2) -> list[list[tuple[PartitionDir, str]]]:
    """The partition dirs under ``paths`` grouped by partition, each named (its log dir's name when that tells
    the replicas apart, else its path); only partitions found at least ``minimum`` times."""
    groups: dict[tuple[str, int], list[PartitionDir]] = {}
    seen: set[Path] = set()
    for part in partition_dirs(paths):
        if (topic is not None and part.topic != topic) or (partition is not None and part.partition != partition):
            continue
        real = part.path.resolve()
        if real not in seen:
            seen.add(real)
            groups.setdefault((part.topic, part.partition), []).append(part)
    out = []
    for _key, parts in sorted(groups.items()):
        if len(parts) < minimum:
            continue
        names = [p.logdir_path.resolve().name for p in parts]
        unique = len(set(names)) == len(names)
        out.append([(p, n if unique else p.display) for p, n in zip(parts, names, strict=True)])
    return out


# --- comparing replicas ----------------------------------------------------------------------------------


def same_batch(x: Batch, y: Batch) -> bool:
    return (x.base_offset == y.base_offset and x.last_offset == y.last_offset and x.crc == y.crc
            and x.partition_leader_epoch == y.partition_leader_epoch)


def merge(streams: list[Iterator[tuple[Segment, Batch]]], starts: list[int]
          ) -> Iterator[tuple[int, Segment, Batch, list[str | None]]]:
    """Batches of several replicas in one offset-ordered pass: (replica index, segment, batch, verdict per replica).

    The verdict of a batch of replica ``i`` against replica ``j``: ``same`` (j holds the identical batch),
    ``diff`` (j holds other data at these offsets, or a hole while it goes on after them), ``ahead`` (past j's
    end), ``below`` (under j's log start ``starts[j]``); None for ``j == i``. Bounded memory: one batch per
    replica. The batch with the smallest last offset is consumed first, so every batch is judged against
    the other replicas' batches that overlap it.
    """
    n = len(streams)
    cur: list[tuple[Segment, Batch] | None] = [next(s, None) for s in streams]
    marks: list[dict[int, str]] = [{} for _ in range(n)]    # verdicts found for a current batch early
    done_to = [-1] * n                                       # last offset of the batches consumed
    while True:
        i, best = -1, None
        for k, c in enumerate(cur):
            if c is not None and (best is None or (c[1].last_offset, c[1].base_offset) < best):
                i, best = k, (c[1].last_offset, c[1].base_offset)
        if i < 0:
            return
        seg, x = cur[i]  # type: ignore[misc]
        verdicts: list[str | None] = [None] * n
        for j in range(n):
            if j == i:
                continue
            v = marks[i].get(j)
            if v is None:
                c = cur[j]
                y = c[1] if c is not None else None
                if y is not None and y.base_offset <= x.last_offset:
                    if same_batch(x, y):
                        v = marks[j][i] = "same"
                    else:
                        v = "diff"
                        marks[j].setdefault(i, "diff")
                elif y is None and x.base_offset > done_to[j]:
                    v = "ahead"
                else:
                    v = "diff"
            if v != "same" and x.last_offset < starts[j]:
                v = "below"
            verdicts[j] = v
        yield i, seg, x, verdicts
        done_to[i] = x.last_offset
        cur[i] = next(streams[i], None)
        marks[i] = {}


@dataclass
class Run:
    """Consecutive batches one replica holds and another does not."""

    kind: str                 # divergent | ahead | below-log-start
    first_offset: int
    last_offset: int
    partition_leader_epoch: int | None
    batches: int = 1
    records: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "first_offset": self.first_offset, "last_offset": self.last_offset,
                "partition_leader_epoch": self.partition_leader_epoch, "batches": self.batches,
                "records": self.records}


_KIND = {"diff": "divergent", "ahead": "ahead", "below": "below-log-start"}


@dataclass
class _Side:
    runs: list[Run] = field(default_factory=list)
    more_runs: int = 0
    batches: int = 0
    offsets: int = 0
    open_run: bool = False

    def add(self, x: Batch, verdict: str) -> None:
        kind = _KIND[verdict]
        self.batches += 1
        self.offsets += x.last_offset - x.base_offset + 1
        last = self.runs[-1] if self.runs and self.open_run else None
        if last is not None and last.kind == kind and last.partition_leader_epoch == x.partition_leader_epoch:
            last.last_offset, last.batches = x.last_offset, last.batches + 1
            last.records += x.record_count
        elif len(self.runs) < MAX_RUNS:
            self.runs.append(Run(kind, x.base_offset, x.last_offset, x.partition_leader_epoch, 1, x.record_count))
            self.open_run = True
        else:
            self.more_runs += 1
            self.open_run = False

    def as_dict(self) -> dict[str, Any]:
        return {"batches": self.batches, "offsets": self.offsets, "runs": [r.as_dict() for r in self.runs],
                "more_runs": self.more_runs}


@dataclass
class Divergence:
    """Two replicas compared batch by batch."""

    a: str
    b: str
    a_name: str
    b_name: str
    first_divergent_offset: int | None = None
    common_batches: int = 0
    only_a: _Side = field(default_factory=_Side)
    only_b: _Side = field(default_factory=_Side)

    def account(self, x: Batch, verdict: str, side_a: bool, other_start: int) -> None:
        side, other = (self.only_a, self.only_b) if side_a else (self.only_b, self.only_a)
        if verdict == "same":
            if side_a:
                self.common_batches += 1
            side.open_run = other.open_run = False
            return
        side.add(x, verdict)
        if verdict == "diff":
            at = max(x.base_offset, other_start)
            if self.first_divergent_offset is None or at < self.first_divergent_offset:
                self.first_divergent_offset = at

    @property
    def relation(self) -> str:
        if self.first_divergent_offset is not None:
            return "divergent"
        a_more, b_more = _has(self.only_a, "ahead"), _has(self.only_b, "ahead")
        return "a-ahead" if a_more and not b_more else "b-ahead" if b_more and not a_more else "identical"

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "first_divergent_offset": self.first_divergent_offset,
                "a_name": self.a_name, "b_name": self.b_name, "relation": self.relation,
                "common_batches": self.common_batches, "only_in_a": self.only_a.as_dict(),
                "only_in_b": self.only_b.as_dict()}


def _has(side: _Side, kind: str) -> bool:
    return any(r.kind == kind for r in side.runs) or (side.more_runs > 0 and kind == "ahead")


def compare(replicas: list[Replica]) -> list[Divergence]:
    """Read every replica once (a full pass each, in one merge) and compare every pair."""
    n = len(replicas)
    pairs = {(i, j): Divergence(replicas[i].path, replicas[j].path, replicas[i].name, replicas[j].name)
             for i in range(n) for j in range(i + 1, n)}
    starts = [r.log_start_offset for r in replicas]
    for i, _seg, x, verdicts in merge([r.batches() for r in replicas], starts):
        for j, v in enumerate(verdicts):
            if v is not None:
                pairs[min(i, j), max(i, j)].account(x, v, i < j, starts[j])
    return list(pairs.values())


# --- the report ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica as the ``replicas`` command reports it."""

    path: str
    name: str
    topic: str
    partition: int
    log_start_offset: int
    log_start_checkpoint: int | None
    first_batch_offset: int | None
    leo: int
    hw_checkpoint: int | None
    high_watermark: int
    recovery_point: int | None
    lso: int
    first_unstable_offset: int | None
    open_transactions: int
    latest_epoch: int | None
    latest_epoch_start_offset: int | None
    epochs: tuple[tuple[int, int], ...]
    segments: int
    size: int
    batches: int
    records: int
    lag: int
    in_isr: bool
    hw_ahead_of_leo: bool
    damaged_at: dict[str, Any] | None
    clean_shutdown: bool

    def as_dict(self) -> dict[str, Any]:
        return {"type": "replica", "path": self.path, "topic": self.topic, "partition": self.partition,
                "log_start_offset": self.log_start_offset, "leo": self.leo, "hw_checkpoint": self.hw_checkpoint,
                "recovery_point": self.recovery_point, "lso": self.lso, "latest_epoch": self.latest_epoch,
                "name": self.name, "latest_epoch_start_offset": self.latest_epoch_start_offset,
                "epochs": [list(e) for e in self.epochs], "log_start_checkpoint": self.log_start_checkpoint,
                "first_batch_offset": self.first_batch_offset, "high_watermark": self.high_watermark,
                "first_unstable_offset": self.first_unstable_offset, "open_transactions": self.open_transactions,
                "segments": self.segments, "size": self.size, "batches": self.batches, "records": self.records,
                "lag": self.lag, "in_isr": self.in_isr, "hw_ahead_of_leo": self.hw_ahead_of_leo,
                "damaged_at": self.damaged_at, "clean_shutdown": self.clean_shutdown}


def replica_state(r: Replica, max_leo: int, in_isr: bool) -> ReplicaState:
    cache = r.epoch_cache()
    latest = cache.latest
    d = r.damage
    return ReplicaState(
        r.path, r.name, r.dir.topic, r.dir.partition, r.log_start_offset, r.log_start_checkpoint,
        r.first_batch_offset, r.leo, r.hw_checkpoint, r.high_watermark, r.recovery_point, r.last_stable_offset,
        r.first_unstable_offset, len(r.open_txns), latest[0] if latest else None, latest[1] if latest else None,
        tuple(cache.entries), len(r.segments), r.size, r.batches_read, r.records, max_leo - r.leo, in_isr,
        r.hw_checkpoint is not None and r.hw_checkpoint > r.leo,
        None if d is None else {"path": d.path, "position": d.position, "code": d.code}, r.clean_shutdown)


@dataclass(frozen=True, slots=True)
class PartitionReplicas:
    """The derived view of one partition's replicas: the ISR's high watermark and the pairwise divergence."""

    topic: str
    partition: int
    replicas: tuple[str, ...]
    isr: tuple[str, ...]
    isr_hw: int
    max_leo: int
    divergence: tuple[Divergence, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"type": "partition", "topic": self.topic, "partition": self.partition, "isr_hw": self.isr_hw,
                "divergence": [d.as_dict() for d in self.divergence], "replicas": list(self.replicas),
                "isr": list(self.isr), "max_leo": self.max_leo}


def _in_isr(isr: list[str] | None, part: PartitionDir, name: str) -> bool:
    if isr is None:
        return True
    real = {part.path.resolve(), part.logdir_path.resolve()}
    return any(item in (name, part.display) or Path(item).resolve() in real for item in isr)


def inspect_replicas(
    paths: Iterable[str | Path], *, isr: list[str] | None = None, topic: str | None = None,
    partition: int | None = None, options: ScanOptions | None = None, unclean: bool = False,
) -> Iterator[Any]:
    """Per partition present in two or more of ``paths``: findings, one :class:`ReplicaState` per replica, then
    one :class:`PartitionReplicas`, then an :class:`kafkatool.election.UncleanElection` per replica outside the
    ISR (every replica with ``unclean``). ``isr``: the replicas in sync (names or paths; default all)."""
    from .election import unclean_election

    groups = replica_groups(paths, topic, partition)
    if not groups:
        raise UsageError("no partition is present in two or more of the given dirs (give one log dir per broker, "
                         "or the partition's dir on each broker; --topic/--partition narrow)")
    opened = [[open_replica(part, name, options) for part, name in group] for group in groups]
    members = [[_in_isr(isr, r.dir, r.name) for r in replicas] for replicas in opened]
    if isr is not None:  # checked before anything is read or shown
        unknown = [i for i in isr if not any(_in_isr([i], r.dir, r.name) for rs in opened for r in rs)]
        if unknown:
            raise UsageError(f"--isr: no replica named {', '.join(unknown)}")
        for replicas, m in zip(opened, members, strict=True):
            if not any(m):
                raise UsageError(f"--isr names none of the replicas of {replicas[0].dir.topic}-"
                                 f"{replicas[0].dir.partition}: {', '.join(r.name for r in replicas)}")
    for replicas, m in zip(opened, members, strict=True):
        divergence = compare(replicas)
        max_leo = max(r.leo for r in replicas)
        for r in replicas:
            yield from r.findings
            if r.hw_checkpoint is not None and r.hw_checkpoint > r.leo:
                yield Finding("warning", "high-watermark-beyond-log-end", r.path, None,
                              f"its high watermark checkpoint {r.hw_checkpoint} is beyond its log end offset {r.leo}: "
                              "acknowledged data is missing from this replica")
        for d in divergence:
            if d.first_divergent_offset is not None:
                yield Finding("warning", "replicas-diverge", d.a, None,
                              f"{d.a_name} and {d.b_name} hold different batches from offset "
                              f"{d.first_divergent_offset}")
        isr_replicas = [r for r, member in zip(replicas, m, strict=True) if member]
        for r, member in zip(replicas, m, strict=True):
            yield replica_state(r, max_leo, member)
        isr_hw = min(r.leo for r in isr_replicas)
        yield PartitionReplicas(replicas[0].dir.topic, replicas[0].dir.partition, tuple(r.path for r in replicas),
                                tuple(r.name for r in isr_replicas), isr_hw, max_leo, tuple(divergence))
        for k, (r, member) in enumerate(zip(replicas, m, strict=True)):
            if unclean or not member:
                rest = [i for i in range(len(replicas)) if i != k]
                yield unclean_election(r, [replicas[i] for i in rest], [m[i] for i in rest], isr_hw, member)


# --- leader-epoch history ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpochRow:
    """One leader epoch: where ``leader-epoch-checkpoint`` starts it, and where the batches stamped with it are."""

    epoch: int
    checkpoint_start: int | None
    log_start: int | None       # first offset of the run of batches carrying this epoch
    log_end: int | None         # last offset of that run
    status: str

    def as_dict(self) -> dict[str, Any]:
        return {"type": "epoch_compare", "epoch": self.epoch, "checkpoint_start": self.checkpoint_start,
                "log_start": self.log_start, "log_end": self.log_end, "status": self.status}


@dataclass(frozen=True, slots=True)
class EpochHistory:
    path: str
    topic: str
    partition: int
    log_start_offset: int
    leo: int
    checkpoint: tuple[tuple[int, int], ...] | None
    cache: tuple[tuple[int, int], ...]
    log: tuple[tuple[int, int], ...]
    disagreements: int

    def as_dict(self) -> dict[str, Any]:
        return {"type": "epochs", "path": self.path, "topic": self.topic, "partition": self.partition,
                "log_start_offset": self.log_start_offset, "leo": self.leo,
                "checkpoint": None if self.checkpoint is None else [list(e) for e in self.checkpoint],
                "cache": [list(e) for e in self.cache], "log": [list(e) for e in self.log],
                "disagreements": self.disagreements}


def epoch_rows(checkpoint: list[tuple[int, int]], runs: list[tuple[int, int]], leo: int) -> list[EpochRow]:
    """Checkpoint entries and the log's epoch runs (epoch, first offset) side by side, in offset order."""
    have = dict(checkpoint)
    in_log = {e for e, _s in runs}
    rows = []
    seen: set[int] = set()
    top = -1
    for k, (epoch, start) in enumerate(runs):
        end = (runs[k + 1][1] if k + 1 < len(runs) else leo) - 1
        for e, s in checkpoint:  # checkpoint epochs with no batches, before this run
            if e < epoch and e not in in_log and e not in seen:
                seen.add(e)
                rows.append(EpochRow(e, s, None, None, "beyond log end" if s > leo else "no batches"))
        ck = have.get(epoch)
        if epoch < top:
            status = "goes back"
        elif epoch in seen:
            status = "repeated"
        elif ck is None:
            status = "missing from checkpoint"
        elif ck == start or (k == 0 and ck < start):
            status = "ok"
        else:
            status = "start differs"
        seen.add(epoch)
        top = max(top, epoch)
        rows.append(EpochRow(epoch, ck if status != "repeated" else None, start, end, status))
    for e, s in checkpoint:
        if e not in seen:
            rows.append(EpochRow(e, s, None, None, "beyond log end" if s > leo else "no batches"))
    return rows


def epoch_history(paths: Iterable[str | Path], *, topic: str | None = None, partition: int | None = None,
                  options: ScanOptions | None = None) -> Iterator[Finding | EpochRow | EpochHistory]:
    """Per partition dir under ``paths``: findings (``verify``'s epoch checks and any damage), one
    :class:`EpochRow` per epoch, then the :class:`EpochHistory`."""
    from .verify import check_epochs

    groups = replica_groups(paths, topic, partition, minimum=1)
    if not groups:
        raise UsageError("no partition dir under the given paths" + (" (with that --topic/--partition)"
                                                                     if topic is not None or partition is not None
                                                                     else ""))
    for group in groups:
        for part, _name in group:
            r = open_replica(part, part.display, options)
            for _ in r.batches():
                pass
            ck_file = next(((p, d) for p, d in part.files if p.name == "leader-epoch-checkpoint"), None)
            findings = [*r.findings, *check_epochs(r.runs, ck_file, r.leo, r.first_batch_offset, r.legacy,
                                                   part.display)]
            rows = epoch_rows(r.epoch_checkpoint or [], [(e, s) for e, s, _p, _d in r.runs], r.leo)
            yield from findings
            yield from rows
            yield EpochHistory(part.display, part.topic, part.partition, r.log_start_offset, r.leo,
                               None if r.epoch_checkpoint is None else tuple(r.epoch_checkpoint),
                               tuple(r.epoch_cache().entries), tuple((e, s) for e, s, _p, _d in r.runs),
                               sum(row.status not in ("ok", "no batches") for row in rows))
