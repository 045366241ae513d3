"""``repair``: what the broker's recovery after an unclean shutdown would do to a partition, planned offline.

The plan follows Kafka's ``LogLoader`` (storage module) step by step, and every step becomes an
:class:`Action` holding the file operation that performs it (:class:`kafkatool.safewrite.FileOp`):

1. **Leftovers** (``removeTempFilesAndCollectSwapFiles``, then the swap passes of ``load``): ``*.deleted``
   files are deleted; ``*.cleaned`` files are deleted, and so is every ``*.swap`` file whose base offset is
   at or above the smallest ``.cleaned`` one; the remaining ``.swap`` segments replace every segment file
   whose offset lies in their offset range and are renamed into place. Kafka gives a swapped-in segment the
   (empty, preallocated) index files it opened with the ``.swap`` suffix and no ``.txnindex``, and does not
   recover it when it lies below the recovery point: its indexes stay empty and its aborted transactions are
   lost to ``read_committed`` consumers. Here a swapped-in segment is recovered like the others (its indexes
   and ``.txnindex`` rebuilt): a documented difference. The producer snapshot of a replaced segment is
   deleted with its other files before anything reads it, so it never seeds a replay.
2. **Segments to recover**, in two passes as in ``LogLoader``. ``loadSegmentFiles`` recovers each segment
   whose offset index is missing or whose ``.txnindex`` fails ``TransactionIndex.sanityCheck`` as it loads
   it, whatever the recovery point (``LogSegment.sanityCheck`` does not check the offset and time indexes);
   then ``recoverLog`` recovers every segment from the one holding the recovery point on (none after a
   clean shutdown). The recovery point comes from ``--recovery-point``, else the log dir's
   ``recovery-point-offset-checkpoint``, else 0 (every segment); the plan says which. A present
   ``.index``/``.timeindex`` failing the broker's sanity checks in a segment neither pass recovers is
   rebuilt (derived data; the broker would keep and misuse it) without touching its segment.
3. **Recovery** (``LogSegment.recover``, ``UnifiedLog.rebuildProducerState``): the producer state is
   loaded from the latest readable snapshot at or before the first segment to recover (corrupt ones are
   skipped, as the broker deletes them), else from the log start with no producer, and the log is replayed
   from there, one batch per append, into a scratch partition written by
   :class:`kafkatool.logwriter.PartitionWriter` (byte-identical to Kafka's ``LogSegment``/
   ``ProducerStateManager`` output): this yields the rebuilt ``.index``, ``.timeindex``, ``.txnindex`` and
   the producer snapshots at each segment end and at the log end. A segment being recovered is cut at its
   first batch failing ``DefaultRecordBatch.ensureValid`` (CRC mismatch, size below the v2 header) or the
   framing (torn tail, zero-filled tail, impossible size); a magic byte from 3 to 127 is not among them
   (``FileLogInputStream`` reads it as v2, the CRC does not cover it). A cut in a segment recovered at load
   leaves the later segments (an offset gap remains); a cut found by ``recoverLog`` ends the log: every
   later segment is deleted with its files, and so is every producer snapshot past the new log end offset.
4. **Leader epochs** (``LeaderEpochFileCache``): epochs of the recovered batches newer than the latest
   entry are assigned (load-phase segments first, then ``recoverLog``'s), entries starting at or after the
   new log end are dropped (``truncateFromEnd``), and entries before the log start are folded into one
   starting at the log start (``truncateFromStart``). A missing ``leader-epoch-checkpoint`` is created, as
   the broker's ``CheckpointFile`` creates it: with the recovered epochs, or empty.
5. **Recovery point**: the log dir's ``recovery-point-offset-checkpoint`` entry for the partition becomes
   the new log end offset (everything repaired is on disk, fsynced).

Only files whose bytes would change get an action, so a repaired partition plans nothing (idempotent).
With ``salvage`` the valid batches after a cut inside a segment are found again (resynchronising on the
next position holding a whole v2 batch with a valid CRC) and written to a side file in the backup dir.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from crc32c import crc32c

from .filetypes import FileKind, classify
from .formats import checkpoints
from .index_interval import resolve_index_interval
from .loader import latest_snapshot as _latest_snapshot
from .loader import load_problem as _load_problem
from .logwriter import AppendError, PartitionWriter, segment_file
from .model import Batch, Finding
from .records import RawBatch, ScanOptions, scan
from .safewrite import FileOp
from .smallfiles import (
    EpochEntry,
    OffsetCheckpointEntry,
    offset_index_sanity,
    read_small_file,
    time_index_sanity,
)
from .walk import PARTITION_DIR, partition_dirs

_V2_MIN = 61


@dataclass(frozen=True, slots=True)
class RepairOptions:
    index_interval_bytes: int | None = None  # the topic's index.interval.bytes; None: inferred from its indexes
    recovery_point: int | None = None     # None: the log dir's recovery-point-offset-checkpoint, else 0
    salvage: bool = False
    now_ms: int | None = None             # the broker's clock for producer expiry; None: the wall clock
    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms
    scan: ScanOptions = field(default_factory=ScanOptions)


@dataclass
class Action:
    """One step of a plan: what, on which file, and why; ``op`` performs it."""

    path: str
    action: str            # delete | rename | truncate | rebuild | create | write | salvage
    reason: str
    op: FileOp | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"type": "action", "path": self.path, "action": self.action, "reason": self.reason, **self.detail}


@dataclass
class PartitionRepair:
    path: str
    leo_before: int | None
    leo_after: int | None
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    bytes_removed: int = 0
    batches_removed: int = 0
    offsets_removed: tuple[int, int] | None = None   # [first, last] no longer in the log
    salvaged_batches: int = 0
    recovered_segments: list[int] = field(default_factory=list)
    applied: bool = False
    backup_dir: str | None = None
    cut: tuple[Path, int] | None = None   # the segment cut and where its first invalid batch starts
    recovery_point: int | None = None     # where recoverLog starts
    recovery_point_source: str | None = None  # checkpoint (the log dir's), option (--recovery-point), none (0)
    recovery_point_note: str | None = None    # the same in words, with the checkpoint's path
    index_interval_bytes: int | None = None   # the spacing of rebuilt index entries
    index_interval_source: str | None = None  # option (--index-interval-bytes), inferred (from the indexes), default
    index_interval_note: str | None = None    # the same in words

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "partition", "path": self.path, "leo_before": self.leo_before, "leo_after": self.leo_after,
            "bytes_removed": self.bytes_removed, "batches_removed": self.batches_removed,
            "offsets_removed": list(self.offsets_removed) if self.offsets_removed else None,
            "recovered_segments": self.recovered_segments, "salvaged_batches": self.salvaged_batches,
            "actions": len(self.actions), "applied": self.applied, "backup_dir": self.backup_dir,
            "recovery_point": self.recovery_point, "recovery_point_source": self.recovery_point_source,
            "recovery_point_note": self.recovery_point_note, "index_interval_bytes": self.index_interval_bytes,
            "index_interval_source": self.index_interval_source, "index_interval_note": self.index_interval_note,
        }


class PlanError(Exception):
    """The partition cannot be planned safely (reported as a finding; nothing is changed)."""


# --- the plan ------------------------------------------------------------------------------------------------


@dataclass
class _Seg:
    base: int
    log: Path            # where its bytes are now (a .swap file until renamed)
    final: Path          # where the .log will be
    swapped: bool = False


def plan_partition(part_dir: Path, display: str, options: RepairOptions = RepairOptions()) -> PartitionRepair:
    """The repair of one partition dir; never changes anything. Without ``options.index_interval_bytes`` the
    interval is the one the partition's offset indexes were written with (:mod:`kafkatool.index_interval`)."""
    interval = resolve_index_interval(Path(part_dir), options.index_interval_bytes, options.scan)
    options = replace(options, index_interval_bytes=interval.value)
    try:
        result = _plan(Path(part_dir), display, options)
    except PlanError as exc:
        result = PartitionRepair(display, None, None)
        result.findings.append(Finding("error", "repair-impossible", display, None, str(exc)))
    result.index_interval_bytes, result.index_interval_source = interval.value, interval.source
    result.index_interval_note = interval.note
    return result


def _plan(part: Path, display: str, options: RepairOptions) -> PartitionRepair:
    files = sorted(p for p in part.iterdir() if p.is_file())
    shown = {p: os.path.join(display, p.name) for p in files}
    actions: list[Action] = []

    # 1. leftovers
    deleted: set[Path] = set()
    swaps: list[Path] = []
    cleaned: list[Path] = []
    for p in files:
        info = classify(p)
        if info.leftover == ".deleted":
            actions.append(Action(shown[p], "delete", "marked for deletion (.deleted): the broker deletes it at "
                                  "start-up", FileOp("delete", p)))
            deleted.add(p)
        elif info.leftover == ".cleaned":
            cleaned.append(p)
        elif info.leftover == ".swap":
            swaps.append(p)
    min_cleaned = min((classify(p).base_offset or 0 for p in cleaned), default=None)
    for p in cleaned:
        actions.append(Action(shown[p], "delete", "output of an interrupted cleaner pass (.cleaned): the broker "
                              "deletes it and cleans again", FileOp("delete", p)))
        deleted.add(p)
    valid_swaps = []
    for p in swaps:
        base = classify(p).base_offset or 0
        if min_cleaned is not None and base >= min_cleaned:
            actions.append(Action(shown[p], "delete", f"swap file at or above the interrupted cleaning at "
                                  f"{min_cleaned} (KAFKA-6264): the broker deletes it", FileOp("delete", p)))
            deleted.add(p)
        else:
            valid_swaps.append(p)
    swapped_logs: dict[int, Path] = {}
    if valid_swaps:
        logs = [p for p in valid_swaps if classify(p).kind is FileKind.LOG]
        lo = min((classify(p).base_offset or 0 for p in logs), default=None)
        hi = max((_next_offset(p, options) for p in logs), default=None)
        if lo is not None and hi is not None:
            for p in files:
                info = classify(p)
                if (p not in deleted and info.leftover is None and info.base_offset is not None
                        and lo <= info.base_offset < hi and info.kind is not FileKind.KRAFT_SNAPSHOT):
                    actions.append(Action(shown[p], "delete", f"replaced by the interrupted swap of offsets {lo}.."
                                          f"{hi - 1}: the broker deletes it before renaming the .swap files",
                                          FileOp("delete", p)))
                    deleted.add(p)
        for p in valid_swaps:
            dest = p.with_name(p.name[: -len(".swap")])
            actions.append(Action(shown[p], "rename", f"completes the interrupted swap: becomes {dest.name}",
                                  FileOp("rename", p, dest=dest), {"to": os.path.join(display, dest.name)}))
            if classify(p).kind is FileKind.LOG:
                swapped_logs[classify(p).base_offset or 0] = p

    # The partition as the broker sees it after step 1.
    segs: dict[int, _Seg] = {}
    for p in files:
        info = classify(p)
        if info.kind is FileKind.LOG and info.leftover is None and p not in deleted:
            segs[info.base_offset or 0] = _Seg(info.base_offset or 0, p, p)
    for base, p in swapped_logs.items():
        segs[base] = _Seg(base, p, p.with_name(p.name[: -len(".swap")]), swapped=True)
    bases = sorted(segs)
    if not bases:
        result = PartitionRepair(display, None, None, actions)
        return result

    def existing(base: int, ext: str) -> Path | None:
        path = segment_file(part, base, ext)
        return path if path.exists() and path not in deleted and base not in swapped_logs else None

    logdir = part.parent
    key = _partition_key(part)
    recovery_point, rp_source, rp_note = _recovery_point_of(logdir, key, options)
    log_start_checkpoint = _checkpoint_entry(logdir / "log-start-offset-checkpoint", key) or 0
    log_start = max(log_start_checkpoint, bases[0])

    # 2. segments to recover. LogLoader.loadSegmentFiles recovers, one by one as it loads them, the segments
    # whose offset index is missing or whose .txnindex fails TransactionIndex.sanityCheck; a cut there never
    # ends the log (later segments stay, an offset gap remains). recoverLog then recovers every segment from the
    # one holding the recovery point (none after a clean shutdown: the broker trusts the files), and the first
    # cut there ends the log. Two differences, both on derived files only: a swapped-in segment is recovered
    # like a load-phase one (Kafka leaves it with empty indexes), and a present .index/.timeindex failing the
    # broker's sanity checks (which LogSegment.sanityCheck skips at load) is rebuilt, its segment not cut.
    clean_shutdown = (logdir / ".kafka_cleanshutdown").exists()
    floor = max((b for b in bases if b <= recovery_point), default=bases[0])
    recover_log = set() if clean_shutdown else {b for b in bases if b >= floor}
    why: dict[int, str] = {b: f"at or after the recovery point {recovery_point}" for b in recover_log}
    load_phase: set[int] = set()
    indexes_only: set[int] = set()
    for b in bases:
        if segs[b].swapped:
            load_phase.add(b)
            why[b] = "swapped in without its indexes"
        elif problem := _load_problem(b, existing(b, "index"), existing(b, "txnindex")):
            load_phase.add(b)
            why[b] = problem
        elif b not in recover_log and (problem := _index_problem(existing(b, "index"), existing(b, "timeindex"))):
            indexes_only.add(b)
            why[b] = problem
    cut_here = recover_log | load_phase       # LogSegment.recover runs on these: they can be cut
    recover = cut_here | indexes_only         # their index files are compared with the rebuilt ones
    if not recover:
        result = PartitionRepair(display, None, None, actions, recovery_point=recovery_point,
                                 recovery_point_source=rp_source, recovery_point_note=rp_note)
        result.leo_before = result.leo_after = _log_end(segs, bases, options)
        actions.extend(_epochs(part, display, [], result.leo_after, log_start))
        return result
    first = min(recover)

    # 3. replay into a scratch partition. Kafka deletes the producer snapshot of a segment replaced by a swap
    # with the segment's other files (LogLoader.load, second pass) before it reads any: it never seeds a replay.
    snapshots = {classify(p).base_offset: p for p in files if p not in deleted
                 and classify(p).kind is FileKind.PRODUCER_SNAPSHOT and classify(p).leftover is None}
    start, producers, bad_snapshots = _latest_snapshot(snapshots, first, log_start, log_start_checkpoint)
    leo_before = _log_end(segs, bases, options)
    result = PartitionRepair(display, leo_before, None, actions, recovered_segments=sorted(cut_here),
                             recovery_point=recovery_point, recovery_point_source=rp_source,
                             recovery_point_note=rp_note)
    with tempfile.TemporaryDirectory(prefix="kafkatool-repair-") as tmp:
        scratch = Path(tmp) / part.name
        writer = PartitionWriter(scratch, topic=key[0], partition=key[1], topic_id=bytes(16),
                                 segment_bytes=2**62, index_interval_bytes=options.index_interval_bytes,
                                 start_offset=min(start, _segment_of(bases, start)),
                                 write_records=False)  # the batches stay where they are
        now = options.now_ms if options.now_ms is not None else int(time.time() * 1000)
        expiry = options.producer_id_expiration_ms
        writer.load_producers(producers)
        writer.reload_producers(now, expiry)  # loadFromSnapshot drops expired producers
        cuts: dict[int, _Cut] = {}
        ended_at: int | None = None  # the segment whose cut ends the log (recoverLog)
        epochs_of: dict[int, list[tuple[int, int]]] = {}
        replayed = [b for b in bases if b >= _segment_of(bases, start)]
        for b in replayed:
            if b > start:
                writer.roll_at(b)  # a snapshot at the boundary, as recoverSegment / rebuildProducerState take
                if b in cut_here and b > first:
                    writer.reload_producers(now, expiry)  # the next recoverSegment reloads that snapshot
            epochs_of[b] = []
            cut = _replay_segment(writer, segs[b], start, b in cut_here, options, epochs_of[b])
            if cut is not None:
                cuts[b] = cut
                if b in recover_log and b not in load_phase:  # recoverLog: corruption ends the log there
                    ended_at = b
                    break
        writer.close(clean=True)
        leo_after = writer.log_end_offset
        result.leo_after = leo_after
        # LeaderEpochFileCache.assign as LogSegment.recover calls it: the load-phase segments first, in offset
        # order, then recoverLog's (assign ignores an epoch not above the latest, so the order matters).
        recovered_epochs = [e for b in sorted(load_phase) if b in epochs_of for e in epochs_of[b]]
        recovered_epochs += [e for b in sorted(recover_log) if b in epochs_of for e in epochs_of[b]]

        # 3b. compare what the broker would have on disk with what is there
        later = [b for b in bases if ended_at is not None and b > ended_at]
        for b in sorted(recover):
            if b in later:
                continue
            seg = segs[b]
            if b in cuts:
                c = cuts[b]
                size = seg.log.stat().st_size
                result.bytes_removed += size - c.valid
                result.batches_removed += c.dropped
                bad = _bad_reason(seg.log, c.bad_at, options)
                ends = ("the broker truncates the segment there" if b == ended_at else
                        "the broker truncates the segment there and keeps the later segments")
                actions.append(Action(os.path.join(display, seg.final.name), "truncate",
                                      f"{why[b]}: the first invalid batch is at byte {c.bad_at} ({bad}); {ends}",
                                      FileOp("truncate", seg.final, size=c.valid),
                                      {"size_before": size, "size_after": c.valid, "bad_position": c.bad_at}))
            for ext in ("index", "timeindex") if b in indexes_only else ("index", "timeindex", "txnindex"):
                actions.extend(_rebuild(part, display, scratch, b, ext, existing(b, ext), why[b]))
        for b in later:
            seg = segs[b]
            result.bytes_removed += seg.log.stat().st_size
            result.batches_removed += _count_batches(seg.log, options)
            for ext in ("log", "index", "timeindex", "txnindex"):
                path = seg.final if ext == "log" else existing(b, ext)  # ops run after the swap renames
                if path is not None:
                    actions.append(Action(os.path.join(display, path.name), "delete",
                                          f"after the truncation at offset {leo_after}: the broker deletes every "
                                          "later unflushed segment", FileOp("delete", path)))
        if cuts:
            # the log-ending cut's offsets (to the old log end), else the first cut's (to its last whole batch)
            b, c = (ended_at, cuts[ended_at]) if ended_at is not None else min(cuts.items())
            last = leo_before - 1 if ended_at is not None else c.last_dropped
            first_removed = c.first_dropped if c.first_dropped is not None else leo_after
            if ended_at is not None and last >= first_removed or ended_at is None and last is not None:
                result.offsets_removed = (first_removed, last)

        # producer snapshots
        scratch_snaps = {classify(p).base_offset: p for p in scratch.glob("*.snapshot")}
        for offset, path in sorted(scratch_snaps.items()):
            if offset is None or offset <= start:
                continue
            data = path.read_bytes()
            current = snapshots.get(offset)
            if current is not None and current.read_bytes() == data:
                continue
            target = segment_file(part, offset, "snapshot")
            verb = "rebuild" if current is not None else "create"
            reason = ("unreadable (" + bad_snapshots[offset] + "): rebuilt from the log" if offset in bad_snapshots
                      else "producer state at the end of a recovered segment" if offset != leo_after
                      else "producer state at the log end (the broker writes it when it closes the log)")
            actions.append(Action(os.path.join(display, target.name), verb, reason, FileOp("write", target, data=data)))
        for offset, path in sorted(snapshots.items()):
            if offset is not None and offset > leo_after:
                actions.append(Action(shown[path], "delete", f"producer snapshot beyond the new log end offset "
                                      f"{leo_after}: the broker deletes it", FileOp("delete", path)))
            elif offset in bad_snapshots and offset not in scratch_snaps:
                actions.append(Action(shown[path], "delete", f"unreadable ({bad_snapshots[offset]}): the broker "
                                      "deletes it when it fails to load it", FileOp("delete", path)))

    # 4. leader epochs
    actions.extend(_epochs(part, display, recovered_epochs, leo_after, log_start))
    # 5. the recovery point
    actions.extend(_recovery_point(logdir, key, leo_after, display))
    if cuts:
        b = ended_at if ended_at is not None else min(cuts)
        result.cut = (segs[b].log, cuts[b].bad_at)
        if options.salvage:
            result.salvaged_batches = sum(1 for _ in salvage_batches(*result.cut))
    return result


def _partition_key(part: Path) -> tuple[str, int]:
    m = PARTITION_DIR.match(part.name)
    return (m["topic"], int(m["partition"])) if m else (part.name, 0)


def _segment_of(bases: list[int], offset: int) -> int:
    return max((b for b in bases if b <= offset), default=bases[0])


def _checkpoint_entry(path: Path, key: tuple[str, int]) -> int | None:
    if not path.exists():
        return None
    for item in read_small_file(path, FileKind.OFFSET_CHECKPOINT, str(path)):
        if isinstance(item, OffsetCheckpointEntry) and (item.topic, item.partition) == key:
            return item.offset
    return None


def _recovery_point_of(logdir: Path, key: tuple[str, int], options: RepairOptions) -> tuple[int, str, str]:
    """The recovery point ``recoverLog`` starts from, where it came from (``option``, ``checkpoint`` or ``none``),
    and that said in words."""
    if options.recovery_point is not None:
        return options.recovery_point, "option", "from --recovery-point"
    path = logdir / "recovery-point-offset-checkpoint"
    entry = _checkpoint_entry(path, key)
    if entry is not None:
        return entry, "checkpoint", f"from {path}"
    where = f"no entry for the partition in {path}" if path.exists() else f"no {path}"
    return 0, "none", f"(none found: {where}; every segment is recovered)"


def _index_problem(index: Path | None, timeindex: Path | None) -> str | None:
    """Why the present offset or time index fails the broker's sanity checks (``OffsetIndex``/``TimeIndex``
    ``.sanityCheck``), or None."""
    if index is None:
        return None
    if problem := offset_index_sanity(index.read_bytes(), str(index)):
        return f"its offset index is corrupt ({problem.message})"
    data = timeindex.read_bytes() if timeindex is not None else b""
    if (problem := time_index_sanity(data, str(timeindex))) and data.count(0) != len(data):  # all zero: untrimmed
        return f"its time index is corrupt ({problem.message})"
    return None


@dataclass(frozen=True, slots=True)
class _Cut:
    """Where ``LogSegment.recover`` stops in a segment, and what it removes."""

    valid: int                    # bytes kept (the segment is truncated to this size)
    bad_at: int                   # position of the first invalid batch
    dropped: int                  # whole batches from there to the end of the segment
    first_dropped: int | None     # base offset of the first of them (None: not a readable batch)
    last_dropped: int | None      # last offset of the last of them


def _replay_segment(
    writer: PartitionWriter, seg: _Seg, start: int, recovering: bool, options: RepairOptions,
    epochs: list[tuple[int, int]],
) -> _Cut | None:
    """Append the segment's batches (from offset ``start`` on) to the scratch partition.

    Returns where ``LogSegment.recover`` cuts the segment, or None. Only a segment being recovered is cut (at
    the first batch failing ``DefaultRecordBatch.ensureValid``: size, CRC; a magic byte above 2 is read as v2 by
    ``FileLogInputStream`` and kept); a trusted one is replayed for its producer state only.
    """
    valid = 0
    with open(seg.log, "rb") as fh:
        items = scan(fh, str(seg.log), with_raw=True, options=options.scan)
        for item in items:
            if isinstance(item, RawBatch):
                b = item.batch
                if not b.crc_valid and recovering:
                    return _rest(valid, item, items)
                if b.last_offset >= start:
                    try:
                        writer.append(item)  # the header as scanned: not parsed again
                    except AppendError as exc:
                        raise PlanError(f"{seg.log.name}: batch at byte {b.position} cannot be replayed as the "
                                        f"broker would: {exc}") from exc
                    if recovering and b.magic >= 2 and b.partition_leader_epoch >= 0:
                        epochs.append((b.partition_leader_epoch, b.base_offset))
                valid = b.position + b.size
            elif isinstance(item, Finding) and recovering and item.code != "crc-mismatch":
                return _Cut(valid, item.position if item.position is not None else valid, 0, None, None)
    return None


def _rest(valid: int, first_bad: RawBatch, items: Iterator[Any]) -> _Cut:
    """The cut at the first invalid batch: the whole batches from there to the end of the segment."""
    n, last = 1, first_bad.batch.last_offset
    for item in items:
        if isinstance(item, RawBatch):
            n += 1
            last = item.batch.last_offset
    return _Cut(valid, first_bad.batch.position, n, first_bad.batch.base_offset, last)


def _batches(path: Path, options: RepairOptions) -> Iterator[Batch]:
    with open(path, "rb") as fh:
        for item in scan(fh, str(path), options=options.scan):
            if isinstance(item, Batch):
                yield item


def _count_batches(path: Path, options: RepairOptions) -> int:
    return sum(1 for _ in _batches(path, options))


def _next_offset(path: Path, options: RepairOptions) -> int:
    """``LogSegment.readNextOffset`` of a log file: last offset of its last whole batch + 1."""
    last = classify(path).base_offset or 0
    for b in _batches(path, options):
        last = b.last_offset + 1
    return last


def _log_end(segs: dict[int, _Seg], bases: list[int], options: RepairOptions) -> int:
    """The log end offset as the files stand (after the last whole batch of the last non-empty segment)."""
    for b in reversed(bases):
        last = None
        for batch in _batches(segs[b].log, options):
            last = batch.last_offset
        if last is not None:
            return last + 1
    return bases[-1]


def _bad_reason(path: Path, position: int, options: RepairOptions) -> str:
    with open(path, "rb") as fh:
        for item in scan(fh, str(path), start=position, options=options.scan):
            if isinstance(item, Finding):
                return f"{item.code}: {item.message}"
    return "invalid"


def _rebuild(part: Path, display: str, scratch: Path, base: int, ext: str, current: Path | None,
             why: str) -> list[Action]:
    built = segment_file(scratch, base, ext)
    target = segment_file(part, base, ext)
    if not built.exists():
        if ext == "txnindex" and current is not None and current.stat().st_size:
            # TransactionIndex.reset(): the file stays, emptied
            return [Action(os.path.join(display, target.name), "rebuild", f"{why}: no aborted transaction in the "
                           "recovered log", FileOp("write", target, data=b""))]
        return []
    data = built.read_bytes()
    if current is not None and current.read_bytes() == data:
        return []
    if current is None and ext == "txnindex" and not data:
        return []
    before = "missing" if current is None else f"{current.stat().st_size} bytes"
    return [Action(os.path.join(display, target.name), "rebuild" if current is not None else "create",
                   f"{why}: rebuilt from the log (was {before}, now {len(data)} bytes)",
                   FileOp("write", target, data=data), {"size_before": None if current is None else
                                                         current.stat().st_size, "size_after": len(data)})]


def _epochs(part: Path, display: str, recovered: list[tuple[int, int]], leo: int, log_start: int) -> list[Action]:
    path = part / "leader-epoch-checkpoint"
    current = path.read_bytes() if path.exists() else None
    entries: list[tuple[int, int]] = []
    if current is not None:
        entries = [(e.epoch, e.start_offset) for e in read_small_file(path, FileKind.EPOCH_CHECKPOINT, str(path))
                   if isinstance(e, EpochEntry)]
    for epoch, start in recovered:  # LeaderEpochFileCache.assign, only for epochs newer than the latest
        if entries and epoch <= entries[-1][0]:
            continue
        while entries and (entries[-1][0] >= epoch or entries[-1][1] >= start):
            entries.pop()
        entries.append((epoch, start))
    entries = [e for e in entries if e[1] < leo]  # truncateFromEnd(log end offset)
    before = [e for e in entries if e[1] <= log_start]  # truncateFromStart(log start offset)
    if before and (len(before) > 1 or before[-1][1] != log_start):
        entries = [(before[-1][0], log_start), *[e for e in entries if e[1] > log_start]]
    data = checkpoints.build_epoch_checkpoint(entries)
    if current is None:
        # UnifiedLog.maybeCreateLeaderEpochCache opens the checkpoint, which creates the file empty
        # (CheckpointFile); LeaderEpochFileCache.assign writes it for the epochs of the recovered batches.
        data = data if entries else b""
        epochs = ", ".join(f"{e}@{o}" for e, o in entries) or "none: the broker leaves it empty"
        return [Action(os.path.join(display, path.name), "create", "leader epochs: the broker creates the missing "
                       f"file from the epochs of the batches it recovers ({epochs})",
                       FileOp("write", path, data=data), {"epochs": [list(e) for e in entries]})]
    if current == data or not entries and not current:  # an empty file with no epoch to assign: left as it is
        return []
    return [Action(os.path.join(display, path.name), "write", "leader epochs: new epochs of the recovered batches, "
                   "none at or past the log end, none before the log start", FileOp("write", path, data=data),
                   {"epochs": [list(e) for e in entries]})]


def _recovery_point(logdir: Path, key: tuple[str, int], leo: int, display: str) -> list[Action]:
    path = logdir / "recovery-point-offset-checkpoint"
    if not path.exists():
        return []
    items = list(read_small_file(path, FileKind.OFFSET_CHECKPOINT, str(path)))
    if any(isinstance(i, Finding) and i.severity == "error" for i in items):
        return []
    entries = [(e.topic, e.partition, e.offset) for e in items if isinstance(e, OffsetCheckpointEntry)]
    new = [(t, p, leo if (t, p) == key else o) for t, p, o in entries]
    if (key[0], key[1]) not in {(t, p) for t, p, _ in entries}:
        new.append((key[0], key[1], leo))
    data = checkpoints.build_offset_checkpoint(new)
    if data == path.read_bytes():
        return []
    return [Action(str(path), "write", f"{key[0]}-{key[1]}: recovery point {leo}, the repaired log end (all of it is "
                   "on disk now): the broker will not recover it again", FileOp("write", path, data=data))]


# --- salvage -------------------------------------------------------------------------------------------------


def salvage_batches(path: Path, start: int) -> Iterator[tuple[int, bytes]]:
    """Whole v2 batches with a valid CRC found after ``start`` by resynchronising on the next plausible header.

    Candidates are the positions whose magic byte (16 bytes in) is 2, found with ``find`` over a memory map, so
    long stretches of garbage cost little and the file is never read into memory whole.
    """
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size <= start + 1:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            n = len(data)
            pos = start + 1
            while pos + _V2_MIN <= n:
                magic_at = data.find(b"\x02", pos + 16)
                if magic_at < 0:
                    return
                pos = magic_at - 16
                total = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True) + 12
                if (_V2_MIN <= total <= n - pos
                        and crc32c(data[pos + 21:pos + total]) == int.from_bytes(data[pos + 17:pos + 21], "big")):
                    yield pos, data[pos:pos + total]
                    pos += total
                else:
                    pos += 1


# --- the command's library function ------------------------------------------------------------------------


def default_backup_dir(log_dir: Path, now: float | None = None) -> Path:
    """``<parent>/kafkatool-backup-<log dir name>-<UTC time>``: beside the log dir, never inside it."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return log_dir.parent / f"kafkatool-backup-{log_dir.name}-{stamp}"


def repair_paths(
    paths: list[Path], options: RepairOptions = RepairOptions(), *, apply: bool = False,
    backup_dir: Path | None = None,
) -> Iterator[Action | PartitionRepair | Finding]:
    """Plan (and with ``apply`` carry out) the repair of every partition under ``paths``.

    Values come out per partition: its actions, then its :class:`PartitionRepair`. With ``apply``, the log dir's
    ``.lock`` is held for the whole partition (a live broker's lock refuses it), an interrupted earlier apply is
    completed first, the partition is planned once and that plan applied (originals backed up before anything
    changes; a truncation backs up only the bytes it removes, see :mod:`kafkatool.safewrite`). Then every
    segment the plan cut is scanned again: it must now end with its last whole valid batch (a header scan of
    the cut segments only, not a second replay).
    """
    from .safewrite import apply_ops, atomic_write, log_dir_lock, resume

    for found in partition_dirs(paths):
        part, display, log_dir = found.path, found.display, found.logdir_path
        yield from found.findings
        if not apply:
            result = plan_partition(part, display, options)
            yield from result.actions
            yield from result.findings
            yield result
            continue
        backup = backup_dir or default_backup_dir(log_dir)
        with log_dir_lock(log_dir):
            finished = resume(log_dir)
            if finished is not None:
                yield Finding("info", "repair-resumed", display, None,
                              "completed an interrupted repair from its journal before planning again")
            result = plan_partition(part, display, options)
            yield from result.actions
            yield from result.findings
            ops = [a.op for a in result.actions if a.op is not None]
            if ops and not result.findings:
                if options.salvage and result.salvaged_batches:
                    _write_salvage(result, backup, atomic_write)
                apply_ops(log_dir, ops, backup)
                result.applied, result.backup_dir = True, str(backup)
                yield from _check_cuts(result, options)
        yield result


def _check_cuts(result: PartitionRepair, options: RepairOptions) -> Iterator[Finding]:
    """After an apply: each truncated segment must scan clean to its new end (``LogSegment.recover`` would keep
    all of it). Cheap: one header scan of the cut segments, nothing else."""
    for action in result.actions:
        op = action.op
        if op is None or op.kind != "truncate" or not op.path.name.endswith(".log"):
            continue
        with open(op.path, "rb") as fh:
            bad = next((f for f in scan(fh, str(op.path), options=options.scan)
                        if isinstance(f, Finding) and f.severity == "error"), None)
        if bad is not None:
            yield Finding("error", "repair-not-idempotent", action.path, bad.position,
                          f"after applying, the cut segment still has an invalid batch ({bad.code}: {bad.message}); "
                          "the broker would cut it again; please report this")


def _write_salvage(result: PartitionRepair, backup: Path, atomic_write) -> None:
    """The batches found after a cut, in a side file (in the backup dir, never in the log dir)."""
    if result.cut is None:
        return
    path, start = result.cut
    batches = [raw for _pos, raw in salvage_batches(path, start)]
    if batches:
        atomic_write(backup / "salvaged" / path.parent.name / path.name, b"".join(batches))
