"""``repair``: what the broker's recovery after an unclean shutdown would do to a partition, planned offline.

The plan follows Kafka's ``LogLoader`` (storage module) step by step, and every step becomes an
:class:`Action` holding the file operation that performs it (:class:`kafkatool.safewrite.journal.FileOp`):

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
3. **Recovery** (``LogSegment.recover``, ``UnifiedLog.rebuildProducerState``), from batch headers by the loader
   (:func:`kafkatool.loader.load_partition` with :class:`kafkatool.loader.Rebuild`; only control batches' records
   are decoded): the producer state is loaded from the latest readable snapshot at or before the first segment to
   recover (corrupt ones are skipped, as the broker deletes them), else from the log start with no producer, and
   the log is replayed from there; each recovered segment's ``.index``/``.timeindex`` are rebuilt by the writer's own
   rule (:class:`kafkatool.segment_indexes.SegmentIndexes`; a stretch of batches that follow each other at a time),
   its ``.txnindex`` from the aborts the replay completes, and the producer state is kept at each segment boundary
   and at the log end (the snapshots the broker takes there; producers expired by ``now_ms`` are dropped where the
   broker reloads a snapshot). A segment being recovered is cut at its first batch failing
   ``DefaultRecordBatch.ensureValid`` (CRC mismatch, size below the v2 header), the framing (torn tail,
   zero-filled tail, impossible size) or a last offset the segment cannot hold (``LogSegment.ensureOffsetInRange``;
   the broker would split the segment there, see :mod:`kafkatool.loader`; such a batch in a segment it trusts is a
   finding that refuses the apply); a magic byte from 3 to 127 is not among them
   (``FileLogInputStream`` reads it as v2, the CRC does not cover it). A cut in a segment recovered at load
   leaves the later segments (an offset gap remains); a cut found by ``recoverLog`` ends the log: every
   later segment is deleted with its files, and so is every producer snapshot past the new log end offset.
4. **Leader epochs** (``LeaderEpochFileCache``, :class:`kafkatool.epochs.EpochCache`, as the loader leaves it):
   epochs of the recovered batches newer than the latest entry are assigned (load-phase segments first, then
   ``recoverLog``'s), entries starting at or after the new log end are dropped (``truncateFromEnd``), and entries
   before the log start are folded into one starting at the log start (``truncateFromStart``). A missing
   ``leader-epoch-checkpoint`` is created, as the broker's ``CheckpointFile`` creates it: with the recovered
   epochs, or empty.
5. **Recovery point**: the log dir's ``recovery-point-offset-checkpoint`` entry for the partition becomes
   the new log end offset (everything repaired is on disk, fsynced). The file is read once for the log dir and,
   with ``--apply``, written once after its last partition with every applied partition's entry, as
   ``LogManager.checkpointRecoveryOffsetsInDir`` writes it (:class:`RecoveryPoints`).

Steps 1 to 4 are the loader's (one home for LogLoader's rules); this module only turns the difference between
what the broker would have on disk after loading and what is there into actions. Only files whose bytes would
change get an action, so a repaired partition plans nothing (idempotent).
With ``salvage`` the valid batches after a cut inside a segment are found again (resynchronising on the
next position holding a whole v2 batch with a valid CRC) and written to a side file in the backup dir.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import ApplyRefused, IndexAppendError, InputIOError, PlanError
from .filetypes import FileTooLarge, holds, open_regular, read_to_hole
from .findings import finding
from .formats import checkpoints
from .index_interval import resolve_index_interval
from .loader import LoadedPartition, LoadedSegment, LogDirs, Rebuild, load_partition, read_logdir
from .logdir import CLEAN_SHUTDOWN, Checkpoint, LogDir, parse_checkpoint
from .logfiles import offset_from_file_name, segment_file, without_swap
from .model import Finding
from .producer_state import snapshot_bytes
from .records import ScanOptions, resync, scan
from .safewrite.durable import atomic_write
from .safewrite.journal import FileOp, apply_ops, check_ops, resume
from .safewrite.lock import log_dir_lock
from .segment_indexes import INT64_MAX, SegmentIndexes, txn_index_bytes
from .smallfiles import OFFSET_SLOT, TIME_SLOT, offset_index_sanity, time_index_sanity
from .walk import PartitionDir, partition_dirs_and_findings

# the loader's findings that refuse an apply: a batch whose offsets do not fit a segment the broker trusts, a file
# named with an offset above 2^63-1 (the broker fails to load the partition)
_MISFIT_CODES = ("offset-beyond-segment-range", "offset-below-segment-base", "base-offset-overflow")


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
    recovery_point_source: str | None = None  # checkpoint (the log dir's), option (--recovery-point), none (0), clean
    recovery_point_note: str | None = None    # the same in words, with the checkpoint's path
    index_interval_bytes: int | None = None   # the spacing of rebuilt index entries
    index_interval_source: str | None = None  # option (--index-interval-bytes), inferred (from the indexes), default
    index_interval_note: str | None = None    # the same in words
    clean_shutdown: str | None = None   # the marker, when it makes the broker keep what recovery would cut
    unclean_actions: list[Action] = field(default_factory=list)  # what an unclean start would do (never applied)
    unclean: dict[str, Any] | None = None     # and what it comes to
    new_recovery_point: tuple[str, int, int] | None = None  # its recovery point checkpoint entry to write, if any

    @property
    def blocked(self) -> bool:
        """Its findings refuse the apply (:func:`repair_paths` applies nothing of it): a dry run says so too."""
        return bool(self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "partition", "path": self.path, "leo_before": self.leo_before, "leo_after": self.leo_after,
            "bytes_removed": self.bytes_removed, "batches_removed": self.batches_removed,
            "offsets_removed": list(self.offsets_removed) if self.offsets_removed else None,
            "recovered_segments": self.recovered_segments, "salvaged_batches": self.salvaged_batches,
            "actions": len(self.actions), "applied": self.applied, "backup_dir": self.backup_dir,
            "blocked": self.blocked,
            "recovery_point": self.recovery_point, "recovery_point_source": self.recovery_point_source,
            "recovery_point_note": self.recovery_point_note, "index_interval_bytes": self.index_interval_bytes,
            "index_interval_source": self.index_interval_source, "index_interval_note": self.index_interval_note,
            **({"clean_shutdown": self.clean_shutdown, "unclean_start": self.unclean} if self.clean_shutdown else {}),
        }


# --- the plan ------------------------------------------------------------------------------------------------


def plan_partition(part_dir: Path, display: str, options: RepairOptions = RepairOptions(),
                   progress: Callable[[int], None] | None = None, *, found: PartitionDir | None = None,
                   recovery_points: RecoveryPoints | None = None) -> PartitionRepair:
    """The repair of one partition dir; never changes anything. Without ``options.index_interval_bytes`` the
    interval is the one the partition's offset indexes were written with (:mod:`kafkatool.index_interval`).
    ``progress`` is called with the bytes of the segments as the load reads them. ``found``: the partition as
    discovery listed it, with its log dir (whose checkpoints are read once for all its partitions); None: listed,
    and its log dir read, here (after an apply changed them). ``recovery_points``: its log dir's recovery-point
    checkpoint as :func:`repair_paths` reads it once for all the log dir's partitions; None: read here."""
    files = found.files if found is not None else None
    interval = resolve_index_interval(Path(part_dir), options.index_interval_bytes, options.scan, files)
    options = replace(options, index_interval_bytes=interval.value)
    try:
        result = _plan(Path(part_dir), display, options, progress, found, recovery_points)
    except PlanError as exc:
        result = PartitionRepair(display, None, None)
        result.findings.append(finding("repair-impossible", display, None, str(exc)))
    result.index_interval_bytes, result.index_interval_source = interval.value, interval.source
    result.index_interval_note = interval.note
    return result


def _plan(part: Path, display: str, options: RepairOptions, progress: Callable[[int], None] | None,
          found: PartitionDir | None = None, points: RecoveryPoints | None = None) -> PartitionRepair:
    """(a) the leftover passes and (b) the load, both :func:`kafkatool.loader.load_partition`'s; (c) what the broker
    would have on disk after loading against what is there, as actions."""
    now = options.now_ms if options.now_ms is not None else int(time.time() * 1000)
    rebuild = Rebuild(options.index_interval_bytes, now, options.producer_id_expiration_ms)
    # An explicit --recovery-point plans the recovery from it, as after an unclean shutdown, whatever the marker says.
    unclean = False if options.recovery_point is not None else None
    listed, logdir = (found.files, found.logdir) if found is not None else (None, None)
    if logdir is None:  # read here, as the loader would, to share it with the recovery point's step
        logdir = read_logdir(part.parent, os.path.dirname(display) or ".")
    points = points if points is not None else RecoveryPoints(logdir)
    try:
        loaded = load_partition(part, display, files=listed, logdir=logdir, recovery_point=options.recovery_point,
                                clean_shutdown=unclean, options=options.scan, rebuild=rebuild, progress=progress)
    except InputIOError as exc:
        raise PlanError(str(exc)) from exc
    result = _planned(part, display, loaded, options, points)
    # Read again as after an unclean start only when the clean one kept something recovery cuts (an invalid batch,
    # a zero-filled tail): a clean shutdown's log dir is the common case, and that second load reads every segment.
    if loaded.clean_shutdown and loaded.segments and any(f.severity == "error" or f.code == "zero-filled-tail"
                                                         for f in loaded.findings):
        _unclean_start(part, display, loaded, result, options, rebuild, listed, logdir, points)
    return result


def _planned(part: Path, display: str, loaded: LoadedPartition, options: RepairOptions,
             points: RecoveryPoints) -> PartitionRepair:
    """(c) of :func:`_plan`: what the broker would have on disk after ``loaded`` against what is there."""
    actions = _leftover_actions(loaded, display)
    if not loaded.segments:
        return PartitionRepair(display, None, None, actions)
    rp_source, rp_note = _recovery_point_source(part.parent, loaded, options)
    result = PartitionRepair(display, loaded.on_disk_end_offset, loaded.log_end_offset, actions,
                             recovered_segments=sorted(s.base_offset for s in loaded.segments if s.recovered),
                             recovery_point=loaded.recovery_point, recovery_point_source=rp_source,
                             recovery_point_note=rp_note)
    bad = [f for f in loaded.findings if f.code == "index-rebuild-impossible"]
    if bad:
        raise PlanError(f"{bad[0].path}: {bad[0].message}")
    # A batch whose offsets do not fit its segment (LogSegment.ensureOffsetInRange) in a segment the broker trusts:
    # its recovery would not read it, so the plan leaves it and refuses to apply (--recovery-point recovers it).
    # A file named past 2^63-1: the broker would not load the partition at all.
    result.findings.extend(f for f in loaded.findings if f.code in _MISFIT_CODES)

    # A present .index/.timeindex failing the broker's sanity checks in a segment it trusts (LogSegment.sanityCheck
    # does not check them at load; the broker would keep and misuse them) is rebuilt, its segment not cut.
    indexes_only: dict[int, str] = {}
    for seg in loaded.segments:
        if seg.recovered is None and not seg.deleted and (problem := _index_problem(
                loaded.index_files.get((seg.base_offset, "index")),
                loaded.index_files.get((seg.base_offset, "timeindex")))):
            indexes_only[seg.base_offset] = problem
    recovered = [s for s in loaded.segments if s.recovered is not None]
    if recovered or indexes_only:
        _segment_actions(loaded, result, indexes_only, options)
    if recovered:
        _snapshot_actions(loaded, result)
    result.actions.extend(_epochs(part, display, loaded))
    moved = points.action(part.parent, loaded.topic, loaded.partition, loaded.log_end_offset) if recovered else None
    if moved is not None:
        result.actions.append(moved)
        result.new_recovery_point = (loaded.topic, loaded.partition, loaded.log_end_offset)
    for action in result.actions:  # never a file named past 2^63-1 (the loader reports no such offset: a bug)
        op = action.op
        if op is not None and op.kind == "write" and (offset_from_file_name(op.path.name) or 0) > INT64_MAX:
            raise PlanError(f"{action.path}: refusing to name a file with an offset above 2^63-1")
    # What the apply would refuse (a FIFO or a link where a file is written, truncated or deleted): refused in the
    # plan too, so the dry run and the apply tell the same story.
    if ops := [a.op for a in result.actions if a.op is not None]:
        try:
            check_ops(part.parent, ops)
        except ApplyRefused as exc:
            raise PlanError(str(exc)) from None
    if moved is not None and (refused := points.refused(part.parent)):
        raise PlanError(refused)
    cut = loaded.cut
    if cut is not None:
        result.cut = (cut.path, cut.position)
        if options.salvage:
            result.salvaged_batches = sum(1 for _ in salvage_batches(*result.cut))
    return result


def _unclean_start(part: Path, display: str, loaded: LoadedPartition, result: PartitionRepair,
                   options: RepairOptions, rebuild: Rebuild, files: tuple[tuple[Path, str], ...] | None,
                   logdir: LogDir, points: RecoveryPoints) -> None:
    """The log dir holds ``.kafka_cleanshutdown``: ``LogLoader.recoverLog`` skips recovery (``hadCleanShutdown``) and
    the broker trusts every segment as it is. When an unclean start's recovery would cut what the clean start keeps
    (an invalid batch the broker now serves), the plan says so: the invalid batches (as ``verify`` reports them: an
    error, so both exit alike), the marker, and the plan that recovery would make (its actions are shown, never
    applied: ``--recovery-point`` plans it for real)."""
    try:
        unclean = load_partition(part, display, files=files, logdir=logdir, clean_shutdown=False,
                                 options=options.scan, rebuild=rebuild)
        plan = _planned(part, display, unclean, options, points)
    except (InputIOError, PlanError) as exc:
        unclean, plan, why = None, None, str(exc)
    known = {(c.display, c.position) for c in loaded.cuts}
    cuts = [c for c in unclean.cuts if (c.display, c.position) not in known] if unclean is not None else []
    if unclean is not None and not cuts:
        return
    marker = os.path.join(os.path.dirname(display) or ".", CLEAN_SHUTDOWN)
    result.clean_shutdown = marker
    kept = {(f.path, f.position): f for f in loaded.findings if f.severity == "error"}
    result.findings.extend(kept.get((c.display, c.position), c.finding) for c in cuts)
    if plan is None:
        result.findings.append(finding("clean-shutdown-skips-recovery", marker, None, "the broker shut down "
                                       "cleanly and skips recovery (LogLoader.recoverLog: hadCleanShutdown); what "
                                       f"an unclean start would do cannot be planned: {why}"))
        return
    rp = unclean.recovery_point
    source, _note = _recovery_point_source(part.parent, unclean, RepairOptions())
    whence = ("its recovery point checkpoint" if source == "checkpoint"
              else "no recovery point checkpointed: every segment")
    first = cuts[0]
    removed = (f", offsets {plan.offsets_removed[0]}..{plan.offsets_removed[1]}" if plan.offsets_removed else "")
    result.findings.append(finding(
        "clean-shutdown-skips-recovery", marker, None,
        f"the broker shut down cleanly: it skips recovery (LogLoader.recoverLog: hadCleanShutdown), trusts every "
        f"segment as it is and keeps what recovery cuts at {first.display} byte {first.position} "
        f"({first.finding.code}); an unclean start, recovering from offset {rp} ({whence}), would cut it there: "
        f"{len(plan.actions)} actions, log end offset {unclean.on_disk_end_offset} -> {unclean.log_end_offset}, "
        f"{plan.bytes_removed:,} bytes ({plan.batches_removed} batches{removed}) removed (the actions above); "
        f"`kafkatool repair --recovery-point {rp}` plans that recovery, --apply does it"))
    result.unclean_actions = [Action(a.path, a.action, f"if the broker started uncleanly: {a.reason}", None,
                                     {**a.detail, "unclean_start": True}) for a in plan.actions]
    result.unclean = {"leo_after": plan.leo_after, "bytes_removed": plan.bytes_removed,
                      "batches_removed": plan.batches_removed, "recovery_point": rp, "actions": len(plan.actions),
                      "offsets_removed": list(plan.offsets_removed) if plan.offsets_removed else None}


def _leftover_actions(loaded: LoadedPartition, display: str) -> list[Action]:
    """(a) :class:`kafkatool.logfiles.Leftovers` as actions: deletions, then the renames completing a swap."""
    left = loaded.leftovers
    if left is None:
        return []
    actions = [Action(d, "delete", why, FileOp("delete", p)) for p, d, why in left.deleted]
    actions += [Action(d, "rename", f"completes the interrupted swap: becomes {dest.name}",
                       FileOp("rename", p, dest=dest), {"to": os.path.join(display, dest.name)})
                for p, d, dest in left.renamed]
    return actions


def _segment_actions(loaded: LoadedPartition, result: PartitionRepair, indexes_only: dict[int, str],
                     options: RepairOptions) -> None:
    """(c) per segment: the cut (``LogSegment.recover``), the rebuilt indexes, the segments recovery deletes."""
    part, display = loaded.path, loaded.display
    cuts = {c.segment_base: c for c in loaded.cuts}
    leo = loaded.log_end_offset
    ending = next((c for c in loaded.cuts if c.ends_log), None)
    for seg in loaded.segments:
        base = seg.base_offset
        if seg.deleted:
            result.bytes_removed += seg.size
            result.batches_removed += seg.dropped_batches
            why = (f"after the truncation at offset {leo}: the broker deletes every later unflushed segment"
                   if ending is not None else f"the log end offset is below the log start checkpoint {leo}: the "
                   "broker deletes every segment")
            for ext in ("log", "index", "timeindex", "txnindex"):
                path = without_swap(seg.path) if ext == "log" else loaded.index_files.get((base, ext))
                if path is not None:
                    result.actions.append(Action(os.path.join(display, path.name), "delete", why,
                                                 FileOp("delete", path)))
            continue
        if seg.recovered is not None:
            why = seg.recovered
            indexes = seg.indexes
            txns = seg.aborted_txns or []
            cut = cuts.get(base)
            if cut is not None:
                result.bytes_removed += seg.size - seg.valid_bytes
                result.batches_removed += seg.dropped_batches
                ends = ("the broker truncates the segment there" if cut.ends_log else
                        "the broker truncates the segment there and keeps the later segments")
                result.actions.append(Action(
                    os.path.join(display, without_swap(seg.path).name), "truncate",
                    f"{why}: the first invalid batch is at byte {cut.position} ({cut.finding.code}: "
                    f"{cut.finding.message}); {ends}", FileOp("truncate", without_swap(seg.path), size=seg.valid_bytes),
                    {"size_before": seg.size, "size_after": seg.valid_bytes, "bad_position": cut.position}))
        elif base in indexes_only:
            why, indexes, txns = indexes_only[base], _indexes_of(seg, options), None
        else:
            continue
        assert indexes is not None  # the load built them (or said why it could not: a PlanError above)
        built = {"index": indexes.index_bytes(), "timeindex": indexes.timeindex_bytes()}
        if txns is not None:
            built["txnindex"] = txn_index_bytes(txns)
        for ext, data in built.items():
            result.actions.extend(_rebuild(part, display, base, ext, loaded.index_files.get((base, ext)), data, why))
    if loaded.cuts:
        # the log-ending cut's offsets (to the old log end), else the first cut's (to its last whole batch)
        cut = loaded.cut
        assert cut is not None
        seg = next(s for s in loaded.segments if s.base_offset == cut.segment_base)
        # a cut at damaged framing: its offsets begin where the kept batches end (the batches found again after the
        # damage are counted as dropped, and the damaged entry's own offsets are unknown)
        at_batch = seg.first_dropped is not None and cut.finding.code == "crc-mismatch"
        first = seg.first_dropped if at_batch else cut.next_offset if seg.first_dropped is not None else leo
        last = loaded.on_disk_end_offset - 1 if cut.ends_log else seg.last_dropped
        if last is not None and last >= first:
            result.offsets_removed = (first, last)


def _indexes_of(seg: LoadedSegment, options: RepairOptions) -> SegmentIndexes:
    """The indexes of a segment the broker trusts, rebuilt from its batch headers (one header scan, stretches of
    batches that follow each other taken whole)."""
    indexes = SegmentIndexes(seg.base_offset, options.index_interval_bytes)
    try:
        with open_regular(seg.path) as fh:
            indexes.append_scan(scan(fh, seg.display, stretches=True, options=options.scan))
        indexes.close()
    except (OSError, IndexAppendError) as exc:
        raise PlanError(f"{seg.display}: its indexes cannot be rebuilt: {exc}") from exc
    return indexes


def _snapshot_actions(loaded: LoadedPartition, result: PartitionRepair) -> None:
    """Producer snapshots: one at each segment boundary the replay passed and one at the log end (what
    ``recoverSegment``, ``rebuildProducerState`` and ``UnifiedLog.close`` take); those past the new log end and the
    unreadable ones go."""
    display, leo = loaded.display, loaded.log_end_offset
    start = loaded.replay_from if loaded.replay_from is not None else leo
    states = {s.base_offset: s.producers_at_base for s in loaded.segments
              if s.producers_at_base is not None and not s.deleted}
    if leo > max([start, *states]):
        states[leo] = loaded.producers
    current = loaded.snapshot_files
    for offset, state in sorted(states.items()):
        if offset <= start or state is None:
            continue
        data = snapshot_bytes(state)
        path = current.get(offset)
        if path is not None and holds(path, data):
            continue
        target = segment_file(loaded.path, offset, "snapshot")
        reason = ("unreadable (" + loaded.bad_snapshots[offset] + "): rebuilt from the log"
                  if offset in loaded.bad_snapshots
                  else "producer state at the end of a recovered segment" if offset != leo
                  else "producer state at the log end (the broker writes it when it closes the log)")
        result.actions.append(Action(os.path.join(display, target.name), "rebuild" if path is not None else "create",
                                     reason, FileOp("write", target, data=data)))
    for offset, path in sorted(current.items()):
        if offset > leo:
            result.actions.append(Action(os.path.join(display, path.name), "delete", "producer snapshot beyond the new "
                                         f"log end offset {leo}: the broker deletes it", FileOp("delete", path)))
        elif offset in loaded.bad_snapshots and offset not in states:
            result.actions.append(Action(os.path.join(display, path.name), "delete", f"unreadable "
                                         f"({loaded.bad_snapshots[offset]}): the broker deletes it when it fails to "
                                         "load it", FileOp("delete", path)))


def _recovery_point_source(logdir: Path, loaded: LoadedPartition, options: RepairOptions) -> tuple[str, str]:
    """Where the recovery point ``recoverLog`` starts from came from (``option``, ``checkpoint`` or ``none``; ``clean``:
    not used, the log dir's ``.kafka_cleanshutdown`` skips recovery), and that said in words."""
    if options.recovery_point is not None:
        overridden = os.path.lexists(logdir / CLEAN_SHUTDOWN)
        return "option", "from --recovery-point" + (" (the log dir's .kafka_cleanshutdown is overridden: recovered as "
                                                    "after an unclean shutdown)" if overridden else "")
    path = logdir / "recovery-point-offset-checkpoint"
    if loaded.clean_shutdown:
        return "clean", (f"(not used: {logdir / CLEAN_SHUTDOWN} says the broker shut down cleanly; it skips "
                         "recovery: --recovery-point recovers)")
    if loaded.recovery_point_checkpoint is not None:
        return "checkpoint", f"from {path}"
    where = f"no entry for the partition in {path}" if path.exists() else f"no {path}"
    return "none", f"(none found: {where}; every segment is recovered)"


def _index_problem(index: Path | None, timeindex: Path | None) -> str | None:
    """Why the present offset or time index fails the broker's sanity checks (``OffsetIndex``/``TimeIndex``
    ``.sanityCheck``), or None."""
    if index is None:
        return None
    try:  # a preallocated one up to its hole: the rest reads as zeros
        data, size = read_to_hole(index, OFFSET_SLOT)
        if problem := offset_index_sanity(data, str(index), size):
            return f"its offset index is corrupt ({problem.message})"
        data, size = read_to_hole(timeindex, TIME_SLOT) if timeindex is not None else (b"", 0)
    except FileTooLarge as exc:
        return f"its index {os.path.basename(exc.filename)} is larger than any the broker writes ({exc.size} bytes)"
    if (problem := time_index_sanity(data, str(timeindex), size)) and data.count(0) != len(data):  # all zero: untrimmed
        return f"its time index is corrupt ({problem.message})"
    return None


def _rebuild(part: Path, display: str, base: int, ext: str, current: Path | None, data: bytes,
             why: str) -> list[Action]:
    """The rebuilt ``ext`` file of segment ``base`` against the one on disk: an action when they differ. An empty
    ``.txnindex`` is never created (``TransactionIndex`` creates its file on the first entry); a present one with
    no aborted transaction left is emptied (``TransactionIndex.reset``)."""
    target = segment_file(part, base, ext)
    if current is not None and holds(current, data):
        return []
    if current is None and ext == "txnindex" and not data:
        return []
    before = "missing" if current is None else f"{current.stat().st_size} bytes"
    if ext == "txnindex" and not data:
        return [Action(os.path.join(display, target.name), "rebuild", f"{why}: no aborted transaction in the "
                       "recovered log", FileOp("write", target, data=b""))]
    return [Action(os.path.join(display, target.name), "rebuild" if current is not None else "create",
                   f"{why}: rebuilt from the log (was {before}, now {len(data)} bytes)",
                   FileOp("write", target, data=data), {"size_before": None if current is None else
                                                         current.stat().st_size, "size_after": len(data)})]


def _epochs(part: Path, display: str, loaded: LoadedPartition) -> list[Action]:
    """``leader-epoch-checkpoint`` as the loader's cache leaves it (``LeaderEpochFileCache``: the checkpoint, the
    recovered batches' newer epochs assigned, ``truncateFromEnd``, ``truncateFromStart``)."""
    path = part / "leader-epoch-checkpoint"
    entries = list(loaded.epoch_cache.entries) if loaded.epoch_cache is not None else []
    data = checkpoints.build_epoch_checkpoint(entries)
    if loaded.epoch_checkpoint_file is None:
        # UnifiedLog.maybeCreateLeaderEpochCache opens the checkpoint, which creates the file empty
        # (CheckpointFile); LeaderEpochFileCache.assign writes it for the epochs of the recovered batches.
        data = data if entries else b""
        epochs = ", ".join(f"{e}@{o}" for e, o in entries) or "none: the broker leaves it empty"
        return [Action(os.path.join(display, path.name), "create", "leader epochs: the broker creates the missing "
                       f"file from the epochs of the batches it recovers ({epochs})",
                       FileOp("write", path, data=data), {"epochs": [list(e) for e in entries]})]
    if holds(path, data) or not entries and holds(path, b""):  # an empty file with no epoch to assign: left as it is
        return []
    return [Action(os.path.join(display, path.name), "write", "leader epochs: new epochs of the recovered batches, "
                   "none at or past the log end, none before the log start", FileOp("write", path, data=data),
                   {"epochs": [list(e) for e in entries]})]


RECOVERY_POINTS = "recovery-point-offset-checkpoint"


class RecoveryPoints:
    """Step 5 for every partition of one log dir: its ``recovery-point-offset-checkpoint``, read and parsed once (the
    :class:`~kafkatool.logdir.LogDir`'s reading, shared with the loads), each recovered partition's entry planned
    against it, and the entries of the partitions an apply repaired written in one go, after the log dir's last
    partition (:meth:`write_op`): ``LogManager.checkpointRecoveryOffsetsInDir`` writes the file once with every
    partition's value. Planning and writing it once a partition made a log dir's repair quadratic in its
    partitions. A file that is absent, cannot be read (a FIFO), is too large or fails to parse is left alone (the
    walk and the loader report it)."""

    def __init__(self, logdir: LogDir) -> None:
        cp = logdir.checkpoint(RECOVERY_POINTS)
        self._usable = _usable(cp)
        offsets: dict[tuple[str, int], set[int]] = {}
        for e in cp.entries if cp is not None and self._usable else ():
            offsets.setdefault((e.topic, e.partition), set()).add(e.offset)
        self._offsets = offsets
        # the file as the broker writes it: a changed entry is then the only change; else any write rewrites it
        self._canonical = self._usable and cp is not None and cp.data == checkpoints.build_offset_checkpoint(
            (e.topic, e.partition, e.offset) for e in cp.entries)
        self._refused: dict[Path, str | None] = {}
        self.moved: dict[tuple[str, int], int] = {}   # the new recovery points an apply is to write

    def action(self, logdir: Path, topic: str, partition: int, leo: int) -> Action | None:
        """The partition's new entry, when the file would change. No file op: the file is written once for the log
        dir (:meth:`write_op`), not once a partition."""
        if not self._usable or self._canonical and self._offsets.get((topic, partition)) == {leo}:
            return None
        return Action(str(logdir / RECOVERY_POINTS), "write", f"{topic}-{partition}: recovery point {leo}, the "
                      "repaired log end (all of it is on disk now): an unclean restart recovers only the segment "
                      "holding it, none before it")

    def refused(self, logdir: Path) -> str | None:
        """Why the apply would refuse to write the file (a link, a FIFO): checked once for the log dir."""
        if logdir not in self._refused:
            try:
                check_ops(logdir, [FileOp("write", logdir / RECOVERY_POINTS, data=b"")])
                self._refused[logdir] = None
            except ApplyRefused as exc:
                self._refused[logdir] = str(exc)
        return self._refused[logdir]

    def write_op(self, logdir: Path) -> FileOp | None:
        """The one write of the new recovery points in :attr:`moved`, from the file as it is now (read again: the
        caller holds the log dir's lock); None when nothing changes or the file is to be left alone."""
        path = logdir / RECOVERY_POINTS
        if not self.moved or not path.exists():
            return None
        cp = parse_checkpoint(path, str(path))
        if not _usable(cp):
            return None
        present = {(e.topic, e.partition) for e in cp.entries}
        new = [(e.topic, e.partition, self.moved.get((e.topic, e.partition), e.offset)) for e in cp.entries]
        new += [(t, p, o) for (t, p), o in self.moved.items() if (t, p) not in present]
        data = checkpoints.build_offset_checkpoint(new)
        if data == cp.data:
            return None
        return FileOp("write", path, data=data, reason=f"recovery points of {len(self.moved)} repaired partitions")


def _usable(cp: Checkpoint | None) -> bool:
    """The checkpoint was read whole and parsed without an error: repair may rewrite it."""
    return cp is not None and cp.data is not None and not any(f.severity == "error" for f in cp.findings)


# --- salvage -------------------------------------------------------------------------------------------------


def salvage_batches(path: Path, start: int) -> Iterator[tuple[int, bytes]]:
    """Whole v2 batches with a valid CRC found after ``start`` (a cut), resynchronising on the next plausible
    header after each damaged stretch (:func:`kafkatool.records.resync`), with their bytes."""
    with open_regular(path) as fh:
        for position, total in resync(fh, start + 1):
            fh.seek(position)
            raw = fh.read(total)
            if len(raw) < total:  # the file shrank under us
                return
            yield position, raw


# --- the command's library function ------------------------------------------------------------------------


def default_backup_dir(log_dir: Path, now: float | None = None) -> Path:
    """``<parent>/kafkatool-backup-<log dir name>-<UTC time>``: beside the log dir, never inside it."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return log_dir.parent / f"kafkatool-backup-{log_dir.name}-{stamp}"


def repair_paths(
    paths: list[Path], options: RepairOptions = RepairOptions(), *, apply: bool = False,
    backup_dir: Path | None = None, progress: Callable[[int], None] | None = None,
) -> Iterator[Action | PartitionRepair | Finding]:
    """Plan (and with ``apply`` carry out) the repair of every partition under ``paths``.

    Values come out per partition: its actions, then its :class:`PartitionRepair`. Each log dir's recovery-point
    checkpoint is read once for all its partitions (:class:`RecoveryPoints`). With ``apply``, the log dir's
    ``.lock`` is held for the whole partition (a live broker's lock refuses it), an interrupted earlier apply is
    completed first, the partition is planned once and that plan applied (originals backed up before anything
    changes; a truncation backs up only the bytes it removes, see :mod:`kafkatool.safewrite.backup`). Then every
    segment the plan cut is scanned again: it must now end with its last whole valid batch (a header scan of
    the cut segments only, not a second replay). The new recovery points of the partitions applied (each one's
    action in its plan) are written after the log dir's last partition, in one write of the checkpoint (under the
    lock again); a run killed before it leaves the old ones, which a re-run moves.
    """
    dirs: dict[Path, _LogDirRun] = {}   # the log dirs met so far (with apply: until their recovery points are written)
    seen: set[Path] = set()             # the partitions planned so far (with apply, one named twice is listed again)
    written: set[Path] = set()          # with apply: the log dirs whose recovery points were written (resolved)
    current: _LogDirRun | None = None
    logdirs = LogDirs()
    for found in partition_dirs_and_findings(paths):
        if isinstance(found, Finding):  # what discovery met outside a partition (a dir it cannot list, a loop)
            yield found
            continue
        found, met = logdirs.place(found)  # a malformed checkpoint: as Kafka, recovered from 0; said once, as verify
        part, display, log_dir = found.path, found.display, found.logdir_path
        if apply and current is not None and current.path != log_dir:
            _write_recovery_points(dirs.pop(current.path), written)
        yield from met
        yield from found.findings
        if not apply:  # nothing changes between partitions: discovery's listing and log dir serve every one
            current = dirs.get(log_dir) or dirs.setdefault(log_dir, _LogDirRun.of(found, stale=False))
            result = plan_partition(part, display, options, progress, found=current.found(found),
                                    recovery_points=current.points)
            yield from result.actions
            yield from result.unclean_actions
            yield from result.findings
            yield result
            continue
        with log_dir_lock(log_dir):
            finished = resume(log_dir)
            if finished is not None:
                yield finding("repair-resumed", display, None,
                              "completed an interrupted repair from its journal before planning again")
            current = dirs.get(log_dir)
            if current is None or finished is not None:  # read again after a resume (it may have changed anything)
                stale = finished is not None or log_dir.resolve() in written  # or after its recovery points' write
                current = dirs[log_dir] = _LogDirRun.of(found, stale=stale, backup_dir=backup_dir, before=current)
            backup = current.backup
            # discovery's listing holds until an apply changes the partition (one named twice is listed again)
            result = plan_partition(part, display, options, progress, found=None if part in seen else
                                    current.found(found), recovery_points=current.points)
            seen.add(part)
            yield from result.actions
            yield from result.unclean_actions
            yield from result.findings
            ops = [a.op for a in result.actions if a.op is not None]
            if (ops or result.new_recovery_point) and not result.findings:
                if options.salvage and result.salvaged_batches:
                    _write_salvage(result, backup, atomic_write)
                if ops:
                    apply_ops(log_dir, ops, backup)
                if result.new_recovery_point:  # written with the log dir's others after its last partition
                    topic, partition, point = result.new_recovery_point
                    current.points.moved[(topic, partition)] = point
                result.applied, result.backup_dir = True, str(backup)
                yield from _check_cuts(result, options)
        yield result
    if apply and current is not None:
        _write_recovery_points(dirs.pop(current.path), written)


@dataclass
class _LogDirRun:
    """A log dir during :func:`repair_paths`: what its partitions' plans share, and where an apply backs up."""

    path: Path
    logdir: LogDir
    points: RecoveryPoints
    stale: bool          # discovery's listing may no longer hold (an interrupted apply was completed): list again
    backup: Path

    @classmethod
    def of(cls, found: PartitionDir, *, stale: bool, backup_dir: Path | None = None,
           before: _LogDirRun | None = None) -> _LogDirRun:
        """Discovery's log dir of ``found`` (a partition dir named on its own: its parent, read here once), or
        (``stale``) the log dir read again; ``before``: the same log dir earlier in the run (its recovery points
        still to write and its backup dir are kept)."""
        path = found.logdir_path
        logdir = found.logdir if found.logdir is not None and not stale else read_logdir(path, found.logdir_display)
        run = cls(path, logdir, RecoveryPoints(logdir), stale,
                  before.backup if before is not None else backup_dir or default_backup_dir(path))
        if before is not None:
            run.points.moved.update(before.points.moved)
        return run

    def found(self, found: PartitionDir) -> PartitionDir | None:
        """``found`` with this log dir, for its plan; None (listed and read again by the plan) when stale."""
        return None if self.stale else found._replace(logdir=self.logdir)


def _write_recovery_points(run: _LogDirRun, written: set[Path]) -> None:
    """After a log dir's last partition: the new recovery points of its partitions applied, in one write of its
    ``recovery-point-offset-checkpoint`` (backed up, temp + fsync + rename, journalled like every apply). Nothing is
    reported: each partition's plan showed its entry's action, and its record says it was applied."""
    if not run.points.moved:
        return
    written.add(run.path.resolve())
    with log_dir_lock(run.path):
        resume(run.path)  # the protocol; none is pending (each apply of this run completed its journal, or raised)
        op = run.points.write_op(run.path)
        if op is not None:
            apply_ops(run.path, [op], run.backup)


def _check_cuts(result: PartitionRepair, options: RepairOptions) -> Iterator[Finding]:
    """After an apply: each truncated segment must scan clean to its new end (``LogSegment.recover`` would keep
    all of it). Cheap: one header scan of the cut segments, nothing else."""
    for action in result.actions:
        op = action.op
        if op is None or op.kind != "truncate" or not op.path.name.endswith(".log"):
            continue
        with open_regular(op.path) as fh:
            bad = next((f for f in scan(fh, str(op.path), options=options.scan)
                        if isinstance(f, Finding) and f.severity == "error"), None)
        if bad is not None:
            yield finding("repair-not-idempotent", action.path, bad.position,
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
