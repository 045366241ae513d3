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
   and ``.txnindex`` rebuilt): a documented difference.
2. **Segments to recover**: every segment from the one holding the recovery point on (``recoverLog``),
   and any segment whose offset index is missing or fails the broker's sanity checks
   (``loadSegmentFiles``).
3. **Recovery** (``LogSegment.recover``, ``UnifiedLog.rebuildProducerState``): the producer state is
   loaded from the latest readable snapshot at or before the first segment to recover (corrupt ones are
   skipped, as the broker deletes them) and the log is replayed from there, one batch per append, into a
   scratch partition written by :class:`kafkatool.logwriter.PartitionWriter` (byte-identical to Kafka's
   ``LogSegment``/``ProducerStateManager`` output): this yields the rebuilt ``.index``, ``.timeindex``,
   ``.txnindex`` and the producer snapshots at each segment end and at the log end. A segment being
   recovered is cut at its first invalid batch (CRC mismatch, torn tail, zero-filled tail, impossible
   size); after a cut every later segment is deleted with its files, and so is every producer snapshot
   past the new log end offset.
4. **Leader epochs** (``LeaderEpochFileCache``): epochs of the recovered batches newer than the latest
   entry are assigned, entries starting at or after the new log end are dropped (``truncateFromEnd``),
   and entries before the log start are folded into one starting at the log start (``truncateFromStart``).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crc32c import crc32c

from .filetypes import FileKind, classify
from .formats import checkpoints
from .logwriter import AppendError, PartitionWriter, segment_file
from .model import Batch, Finding
from .records import RawBatch, ScanOptions, scan
from .safewrite import FileOp
from .smallfiles import (
    EpochEntry,
    OffsetCheckpointEntry,
    ProducerEntry,
    offset_index_sanity,
    read_small_file,
    time_index_sanity,
)
from .walk import PARTITION_DIR

_V2_MIN = 61


@dataclass(frozen=True, slots=True)
class RepairOptions:
    index_interval_bytes: int = 4096      # the topic's index.interval.bytes (the corpus cases: 1024)
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "partition", "path": self.path, "leo_before": self.leo_before, "leo_after": self.leo_after,
            "bytes_removed": self.bytes_removed, "batches_removed": self.batches_removed,
            "offsets_removed": list(self.offsets_removed) if self.offsets_removed else None,
            "recovered_segments": self.recovered_segments, "salvaged_batches": self.salvaged_batches,
            "actions": len(self.actions), "applied": self.applied, "backup_dir": self.backup_dir,
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
    """The repair of one partition dir; never changes anything."""
    try:
        return _plan(Path(part_dir), display, options)
    except PlanError as exc:
        result = PartitionRepair(display, None, None)
        result.findings.append(Finding("error", "repair-impossible", display, None, str(exc)))
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
    swap_snapshots: dict[int, Path] = {}  # deleted with the segment a swap replaces: still the state at its base
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
                    if info.kind is FileKind.PRODUCER_SNAPSHOT:
                        swap_snapshots[info.base_offset] = p
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
    recovery_point = options.recovery_point
    key = _partition_key(part)
    if recovery_point is None:
        recovery_point = _checkpoint_entry(logdir / "recovery-point-offset-checkpoint", key) or 0
    log_start = max(_checkpoint_entry(logdir / "log-start-offset-checkpoint", key) or 0, bases[0])

    # 2. segments to recover (none by the recovery point after a clean shutdown: the broker trusts the files)
    clean_shutdown = (logdir / ".kafka_cleanshutdown").exists()
    floor = max((b for b in bases if b <= recovery_point), default=bases[0])
    recover = set() if clean_shutdown else {b for b in bases if b >= floor}
    if clean_shutdown:
        floor = bases[-1] + 1  # a cut (in a segment recovered for its index) never ends the log
    why: dict[int, str] = {b: f"at or after the recovery point {recovery_point}" for b in recover}
    for b in bases:
        problem = _index_problem(existing(b, "index"), existing(b, "timeindex"))
        if problem:
            recover.add(b)
            why[b] = problem
        if segs[b].swapped:
            recover.add(b)
            why[b] = "swapped in without its indexes"
    if not recover:
        result = PartitionRepair(display, None, None, actions)
        result.leo_before = result.leo_after = _log_end(segs, bases, options)
        actions.extend(_epochs(part, display, [], result.leo_after, log_start))
        return result
    first = min(recover)

    # 3. replay into a scratch partition
    snapshots = {classify(p).base_offset: p for p in files if p not in deleted
                 and classify(p).kind is FileKind.PRODUCER_SNAPSHOT and classify(p).leftover is None}
    # A swap rewrites a segment's batches (cleaning), not the producer state at its base offset: the snapshot
    # there, deleted with the old segment, still seeds the replay of the swapped-in segment.
    seeds = {**snapshots, **{o: p for o, p in swap_snapshots.items() if o in swapped_logs}}
    start, producers, bad_snapshots = _latest_snapshot(seeds, first, log_start)
    leo_before = _log_end(segs, bases, options)
    result = PartitionRepair(display, leo_before, None, actions, recovered_segments=sorted(recover))
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
        cut: tuple[int, int, int] | None = None   # (segment base, valid bytes, position of the first bad batch)
        removed_batches = 0
        first_removed = None
        recovered_epochs: list[tuple[int, int]] = []
        replayed = [b for b in bases if b >= _segment_of(bases, start)]
        for b in replayed:
            if b > start:
                writer.roll_at(b)  # a snapshot at the boundary, as recoverSegment / rebuildProducerState take
                if b in recover and b > first:
                    writer.reload_producers(now, expiry)  # the next recoverSegment reloads that snapshot
            valid, bad_at, dropped, first_dropped = _replay_segment(writer, segs[b], start, b in recover, options,
                                                                    recovered_epochs)
            if bad_at is not None:
                cut = (b, valid, bad_at)
                removed_batches += dropped
                first_removed = first_dropped
                if b >= floor:  # recoverLog: corruption in an unflushed segment ends the log there
                    break
        writer.close(clean=True)
        leo_after = writer.log_end_offset
        result.leo_after = leo_after

        # 3b. compare what the broker would have on disk with what is there
        later = [b for b in bases if cut is not None and cut[0] >= floor and b > cut[0]]
        for b in sorted(recover):
            if b in later:
                continue
            seg = segs[b]
            if cut is not None and b == cut[0]:
                size = seg.log.stat().st_size
                result.bytes_removed += size - cut[1]
                bad = _bad_reason(seg.log, cut[2], options)
                actions.append(Action(os.path.join(display, seg.final.name), "truncate",
                                      f"{why[b]}: the first invalid batch is at byte {cut[2]} ({bad}); the broker "
                                      "truncates the segment there", FileOp("truncate", seg.final, size=cut[1]),
                                      {"size_before": size, "size_after": cut[1], "bad_position": cut[2]}))
            for ext in ("index", "timeindex", "txnindex"):
                actions.extend(_rebuild(part, display, scratch, b, ext, existing(b, ext), why[b]))
        for b in later:
            seg = segs[b]
            result.bytes_removed += seg.log.stat().st_size
            removed_batches += _count_batches(seg.log, options)
            for ext in ("log", "index", "timeindex", "txnindex"):
                path = seg.final if ext == "log" else existing(b, ext)  # ops run after the swap renames
                if path is not None:
                    actions.append(Action(os.path.join(display, path.name), "delete",
                                          f"after the truncation at offset {leo_after}: the broker deletes every "
                                          "later unflushed segment", FileOp("delete", path)))
        if cut is not None:
            result.batches_removed = removed_batches
            last = leo_before - 1 if leo_before is not None else None
            if first_removed is not None and last is not None and last >= first_removed:
                result.offsets_removed = (first_removed, last)
            elif last is not None and leo_after <= last:
                result.offsets_removed = (leo_after, last)

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
    if cut is not None:
        result.cut = (segs[cut[0]].log, cut[2])
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


def _index_problem(index: Path | None, timeindex: Path | None) -> str | None:
    """Why the broker's ``LogSegment.sanityCheck`` would send the segment to recovery, or None."""
    if index is None:
        return "its offset index is missing"
    if problem := offset_index_sanity(index.read_bytes(), str(index)):
        return f"its offset index is corrupt ({problem.message})"
    data = timeindex.read_bytes() if timeindex is not None else b""
    if (problem := time_index_sanity(data, str(timeindex))) and data.count(0) != len(data):  # all zero: untrimmed
        return f"its time index is corrupt ({problem.message})"
    return None


def _latest_snapshot(
    snapshots: dict[int | None, Path], first: int, log_start: int
) -> tuple[int, list[ProducerEntry], dict[int, str]]:
    """Where the replay starts: the latest readable snapshot at or before ``first``, else the log start."""
    bad: dict[int, str] = {}
    readable: dict[int, list[ProducerEntry]] = {}
    for offset, path in snapshots.items():
        if offset is None:
            continue
        items = list(read_small_file(path, FileKind.PRODUCER_SNAPSHOT, str(path)))
        problems = [f for f in items if isinstance(f, Finding) and f.severity == "error"]
        if problems:
            bad[offset] = problems[0].message
        else:
            readable[offset] = [e for e in items if isinstance(e, ProducerEntry)]
    usable = [o for o in readable if log_start <= o <= first]
    if usable:
        return max(usable), readable[max(usable)], bad
    return log_start, [], bad


def _replay_segment(
    writer: PartitionWriter, seg: _Seg, start: int, recovering: bool, options: RepairOptions,
    epochs: list[tuple[int, int]],
) -> tuple[int, int | None, int, int | None]:
    """Append the segment's batches (from offset ``start`` on) to the scratch partition.

    Returns (valid bytes, position of the first invalid batch or None, batches dropped, first dropped offset).
    Only a segment being recovered is cut; a trusted one is replayed for its producer state only.
    """
    valid = 0
    with open(seg.log, "rb") as fh:
        items = scan(fh, str(seg.log), with_raw=True, options=options.scan)
        for item in items:
            if isinstance(item, RawBatch):
                b = item.batch
                if not b.crc_valid and recovering:
                    dropped, first = _rest(item, items)
                    return valid, b.position, dropped, first
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
                return valid, item.position if item.position is not None else valid, 0, None
    return valid, None, 0, None


def _rest(first_bad: RawBatch, items: Iterator[Any]) -> tuple[int, int | None]:
    """Batches from the first invalid one to the end of the segment (what the cut removes)."""
    n, first = 1, first_bad.batch.base_offset
    for item in items:
        if isinstance(item, RawBatch):
            n += 1
    return n, first


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
    before = [e for e in entries if e[1] < log_start]  # truncateFromStart(log start offset)
    if before and (len(before) > 1 or before[-1][1] != log_start):
        entries = [(before[-1][0], log_start), *[e for e in entries if e[1] >= log_start]]
    data = checkpoints.build_epoch_checkpoint(entries)
    if current is None or current == data or not entries and current is None:
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
    from .verify import partition_dirs

    for found in partition_dirs(paths):
        part, display, log_dir = found.path, found.display, found.logdir
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
