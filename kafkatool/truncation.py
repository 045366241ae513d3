"""``truncation``: what a follower does to its log when it (re)joins a leader, simulated from both disks.

Two rules, each giving the offset the follower truncates to, the rounds that led there, exactly which
batches it discards (offsets, epoch, producer, whether the leader holds the same batch, whether it was
acknowledged) and a :class:`TruncationPlan` (which files change how) for applying it later:

* ``epoch`` — the leader-epoch protocol (KIP-101, KIP-279; ``AbstractFetcherThread.getOffsetTruncationState``):
  the follower sends its latest epoch; the leader answers ``endOffsetFor(epoch, leader LEO)`` = (epoch',
  end offset) from the cache it holds live (:func:`live_leader_epoch_cache`: with the entry it wrote at its log
  end when it became leader, before any batch of that epoch); the follower looks up its own
  ``endOffsetFor(epoch', follower LEO)``: the same epoch truncates to min(leader's end, own end, own LEO) and
  ends; a different one truncates to min(own end, own LEO) and asks again with its (now lower) latest epoch.
  A follower without epochs, or a leader answering an undefined offset, truncates to its high watermark
  (``truncateToHighWatermark``);
* ``hw`` — before KIP-101: the follower truncates to its own high watermark; when that is beyond the
  leader's log end its next fetch is out of range and it truncates to the leader's LEO
  (``fetchOffsetAndTruncate``, the unclean-election path).

Either way, a fetch offset below the leader's log start ends in ``truncateFullyAndStartAt``: the follower
empties its log and starts at the leader's log start.

The plan follows ``UnifiedLog.truncateTo`` / ``LocalLog.truncateTo``: segments whose base offset is above
the target are deleted, the new active segment is cut at the first batch ending at or after the target
(so a batch straddling it goes whole), its indexes trimmed; leader-epoch entries starting at or after the
target are dropped (``truncateFromEnd``), producer snapshots above it deleted, and the high watermark and
recovery point lowered to it.

The leader is live: it answers from the cache it holds in memory and never reloads its log. Only the follower
restarts, so its cache is the one ``LogLoader`` leaves (:meth:`~kafkatool.replicas.Replica.epoch_cache`).

:func:`apply_truncations` carries one rule's plan out on the follower's dir through the safe-write layer, as
``repair`` does (the log dir's ``.lock`` held throughout, an interrupted apply resumed first, originals backed up,
a kill at any point harmless), then plans again: nothing may be left to do. :func:`plan_ops` turns the plan into
file operations, in this order, so that a broker started on a half-applied dir (without the resume) still loads
a log that is a prefix of the original, with a high watermark and recovery point never above its end:

1. the log dir's ``replication-offset-checkpoint`` / ``recovery-point-offset-checkpoint`` /
   ``log-start-offset-checkpoint``: only this partition's entry is rewritten (lowered), the others kept;
2. the segments after the target, last first (``LocalLog.truncateTo``): each ``.log``, then its indexes (an
   index left without its ``.log`` is an orphan the broker deletes when it loads the log);
3. the cut segment as ``LogSegment.truncateTo`` does it: the indexes first, written without their entries at or
   past the target (``OffsetIndex.truncateTo`` / ``TimeIndex.truncateTo``: entries with offset >= target;
   ``TransactionIndex.truncateTo``: from the first entry with last offset >= target), then the ``.log`` cut;
4. the producer snapshots past the target;
5. the new ``leader-epoch-checkpoint``.

``truncateFullyAndStartAt`` (``start_fresh_at``) deletes every segment instead and creates an empty one at the
new offset: an empty ``.log``, ``.index`` and ``.timeindex`` (no ``.txnindex``: Kafka creates it on first use).
Kafka preallocates the new active segment's indexes and trims them when it closes the segment; the files written
here are the trimmed ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .epochs import UNDEFINED_EPOCH_OFFSET, EpochCache
from .errors import ApplyRefused, UsageError
from .filetypes import FileKind, FileTooLarge, classify, open_regular, read_small
from .findings import finding
from .formats.checkpoints import build_epoch_checkpoint, build_offset_checkpoint
from .loader import LogDirs, checkpoint_trouble, segment_bytes
from .model import Batch, Finding
from .progress import Tally
from .records import ScanOptions, scan
from .repair import default_backup_dir
from .replicas import Replica, Segment, compare, filter_matched_nothing, merge, open_replica
from .safewrite.journal import FileOp, apply_ops, resume
from .safewrite.lock import log_dir_lock
from .smallfiles import OffsetCheckpointEntry, entry_struct, index_slots, read_small_file
from .walk import PartitionDir, list_partition, partition_dirs_and_findings

RULES = ("epoch", "hw")
DEFAULT_MAX_LOST = 1000


# --- the rules -------------------------------------------------------------------------------------------


def epoch_rule(leader: EpochCache, leader_leo: int, follower: EpochCache, follower_leo: int,
               follower_hw: int) -> tuple[int, list[dict[str, Any]]]:
    """(offset the follower truncates to, the rounds), by the leader-epoch protocol (see the module doc)."""
    cache, leo = follower.copy(), follower_leo
    steps: list[dict[str, Any]] = []
    for _ in range(len(cache.entries) + 1):  # every round but the last drops an entry of the follower's cache
        if cache.latest is None:
            t = min(follower_hw, leo)
            steps.append({"requested_epoch": None, "truncate_to": t,
                          "note": "the follower has no leader epochs: it truncates to its high watermark"})
            return t, steps
        requested = cache.latest[0]
        l_epoch, l_end = leader.end_offset_for(requested, leader_leo)
        step: dict[str, Any] = {"requested_epoch": requested, "leader_epoch": l_epoch, "leader_end_offset": l_end}
        steps.append(step)
        if l_end == UNDEFINED_EPOCH_OFFSET:
            t = min(follower_hw, leo)
            step.update(follower_epoch=None, follower_end_offset=None, truncate_to=t,
                        note="the leader knows no such epoch (undefined offset): the follower truncates to its "
                             "high watermark")
            return t, steps
        f_epoch, f_end = cache.end_offset_for(l_epoch, leo)
        if f_end == UNDEFINED_EPOCH_OFFSET:  # below every epoch the follower tracks: trust the leader
            t = min(l_end, leo)
            step.update(follower_epoch=None, follower_end_offset=None, truncate_to=t)
            return t, steps
        step.update(follower_epoch=f_epoch, follower_end_offset=f_end)
        if f_epoch == l_epoch:
            step["truncate_to"] = t = min(f_end, l_end, leo)
            return t, steps
        step["truncate_to"] = t = min(f_end, leo)  # an epoch the follower does not know: cut, then ask again
        leo = min(leo, t)
        cache.truncate_from_end(t)
    raise AssertionError("the epoch rule did not converge")  # unreachable: each round drops a cache entry


def live_leader_epoch_cache(leader: Replica) -> EpochCache:
    """The epoch cache a live leader answers ``OffsetsForLeaderEpoch`` from (``Partition.lastOffsetForLeaderEpoch``
    -> ``UnifiedLog.endOffsetForEpoch`` -> ``LeaderEpochFileCache.endOffsetFor``).

    ``Partition.makeLeader`` assigns the new leader epoch at the log end (``maybeAssignEpochStartOffset(leaderEpoch,
    logEndOffset)``), and ``assign`` writes ``leader-epoch-checkpoint`` at once, before any batch of that epoch
    exists. A reload would drop that entry (``LogLoader``: ``truncateFromEnd(LEO)``); the live leader keeps it, so
    a follower asking about an epoch between the leader's last written one and its current one is told the end of
    the epoch below (the current epoch's start, KIP-279), not "undefined". So: the cache as the leader's log loads
    (:meth:`Replica.epoch_cache`), plus the checkpoint's latest entry when it starts exactly at the leader's log
    end with a newer epoch. An entry past the log end is not one a live leader can hold (its load cut it), and is
    left out as the load leaves it out."""
    cache = leader.epoch_cache()
    written = EpochCache(leader.epoch_checkpoint or ()).latest
    if written is not None and written[1] == leader.leo and (cache.latest is None or written[0] > cache.latest[0]):
        cache.assign(*written)
    return cache


def hw_rule(follower_hw: int, follower_leo: int, leader_leo: int) -> tuple[int, list[dict[str, Any]]]:
    """(offset the follower truncates to, the steps), by the old high-watermark rule."""
    t = min(follower_hw, follower_leo)
    steps: list[dict[str, Any]] = [{"follower_high_watermark": follower_hw, "truncate_to": t}]
    if leader_leo < t:
        t = leader_leo
        steps.append({"leader_leo": leader_leo, "truncate_to": t,
                      "note": "the fetch from the high watermark is out of range: the follower truncates to the "
                              "leader's log end offset"})
    return t, steps


# --- the result -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LostBatch:
    base_offset: int
    last_offset: int
    partition_leader_epoch: int | None
    producer_id: int | None
    producer_epoch: int | None
    record_count: int
    transactional: bool | None
    control: bool | None
    segment: str
    position: int
    on_leader: bool       # the leader holds this very batch: the follower fetches it again
    acknowledged: bool    # below a high watermark that covered it: consumers may have read it
    below_leader_log_start: bool = False  # the leader's retention removed these offsets already

    def as_dict(self) -> dict[str, Any]:
        return {"base_offset": self.base_offset, "last_offset": self.last_offset,
                "partition_leader_epoch": self.partition_leader_epoch, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "record_count": self.record_count,
                "transactional": self.transactional, "control": self.control, "segment": self.segment,
                "position": self.position, "on_leader": self.on_leader, "acknowledged": self.acknowledged,
                "below_leader_log_start": self.below_leader_log_start}


@dataclass(frozen=True, slots=True)
class SegmentChange:
    base_offset: int
    log: str
    action: str                 # delete | truncate
    size: int
    keep_bytes: int             # bytes of the .log kept (0: delete)
    files: tuple[str, ...]      # the segment's index files: deleted with it, or trimmed to entries below the target

    def as_dict(self) -> dict[str, Any]:
        return {"base_offset": self.base_offset, "log": self.log, "action": self.action, "size": self.size,
                "keep_bytes": self.keep_bytes, "files": list(self.files)}


@dataclass(frozen=True, slots=True)
class TruncationPlan:
    """What truncating the follower's log to ``truncate_to`` changes, file by file (for the safe-write layer)."""

    partition: str
    truncate_to: int
    segments: tuple[SegmentChange, ...]
    epoch_checkpoint: tuple[tuple[int, int], ...] | None  # the new leader-epoch-checkpoint (None: unchanged)
    delete_snapshots: tuple[str, ...]
    checkpoints: tuple[tuple[str, int], ...]              # (log dir checkpoint file, new offset for this partition)
    start_fresh_at: int | None = None                     # truncateFullyAndStartAt: delete all, start here
    # where the files are (the paths above are for display): the partition dir, its log dir, (topic, partition)
    dir: Path | None = None
    logdir: Path | None = None
    key: tuple[str, int] | None = None

    @property
    def changes(self) -> bool:
        return bool(self.segments or self.epoch_checkpoint is not None or self.delete_snapshots or self.checkpoints
                    or self.start_fresh_at is not None)

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "truncate_to": self.truncate_to, "changes": self.changes,
                "segments": [s.as_dict() for s in self.segments],
                "epoch_checkpoint": None if self.epoch_checkpoint is None else [list(e) for e in self.epoch_checkpoint],
                "delete_snapshots": list(self.delete_snapshots), "checkpoints": dict(self.checkpoints),
                "start_fresh_at": self.start_fresh_at}


@dataclass
class Truncation:
    """One rule's outcome for one follower."""

    rule: str
    topic: str
    partition: int
    leader: str
    follower: str
    leader_name: str
    follower_name: str
    truncate_to: int
    follower_leo: int
    leader_leo: int
    leader_log_start: int
    follower_hw_checkpoint: int | None
    leader_hw_checkpoint: int | None
    steps: list[dict[str, Any]]
    first_divergent_offset: int | None
    full_truncation: bool = False
    lost: list[LostBatch] = field(default_factory=list)
    lost_batches: int = 0
    lost_records: int = 0
    lost_not_on_leader: int = 0
    lost_acknowledged: int = 0
    acknowledged_lost: list[list[int]] = field(default_factory=list)     # offset ranges lost, no copy on the leader
    acknowledged_at_risk: list[list[int]] = field(default_factory=list)  # offset ranges left only on the leader
    producer_ids: set[int] = field(default_factory=set)
    cut_at: tuple[str, int] | None = None  # (segment, byte position) of the first discarded batch
    plan: TruncationPlan | None = None
    applied: bool = False                  # the plan was carried out on the follower's dir (apply_truncations)
    backup_dir: str | None = None          # where the originals were copied first

    @property
    def offsets_removed(self) -> int:
        return max(0, self.follower_leo - self.truncate_to)

    @property
    def keeps_divergence_from(self) -> int | None:
        """The follower keeps batches the leader does not have, from this offset (its log stays inconsistent)."""
        d = self.first_divergent_offset
        return d if d is not None and d < self.truncate_to and not self.full_truncation else None

    @property
    def data_loss(self) -> bool:
        return self.lost_not_on_leader > 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "truncation", "rule": self.rule, "truncate_to": self.truncate_to, "follower_leo": self.follower_leo,
            "lost": [b.as_dict() for b in self.lost], "topic": self.topic, "partition": self.partition,
            "leader": self.leader, "follower": self.follower, "leader_name": self.leader_name,
            "follower_name": self.follower_name, "leader_leo": self.leader_leo,
            "leader_log_start": self.leader_log_start,
            "follower_hw_checkpoint": self.follower_hw_checkpoint, "leader_hw_checkpoint": self.leader_hw_checkpoint,
            "steps": self.steps, "offsets_removed": self.offsets_removed, "full_truncation": self.full_truncation,
            "lost_batches": self.lost_batches, "lost_records": self.lost_records,
            "lost_complete": len(self.lost) == self.lost_batches, "lost_not_on_leader": self.lost_not_on_leader,
            "lost_acknowledged": self.lost_acknowledged, "acknowledged_lost": self.acknowledged_lost,
            "acknowledged_at_risk": self.acknowledged_at_risk,
            "producer_ids": sorted(self.producer_ids), "data_loss": self.data_loss,
            "first_divergent_offset": self.first_divergent_offset,
            "keeps_divergence_from": self.keeps_divergence_from,
            "plan": None if self.plan is None else self.plan.as_dict(),
            "applied": self.applied, "backup_dir": self.backup_dir,
        }


# --- simulating -----------------------------------------------------------------------------------------


def simulate(leader: Replica, follower: Replica, rules: tuple[str, ...] = RULES,
             max_lost: int = DEFAULT_MAX_LOST, progress: Callable[[int], None] | None = None) -> list[Truncation]:
    """Both logs read (and compared) once, each rule applied, then the follower's discarded batches read.

    ``progress`` is told the bytes of both passes over both logs, each pass whole (what the second skips, before
    the truncation offset or all of it when nothing is discarded, counted as skipped)."""
    tally = Tally(progress)
    (divergence,) = compare([leader, follower], tally)
    l_cache, f_cache = live_leader_epoch_cache(leader), follower.epoch_cache()
    results = []
    for rule in rules:
        if rule == "epoch":
            t, steps = epoch_rule(l_cache, leader.leo, f_cache, follower.leo, follower.high_watermark)
        else:
            t, steps = hw_rule(follower.high_watermark, follower.leo, leader.leo)
        full = t < leader.log_start_offset
        if full:
            steps.append({"leader_log_start": leader.log_start_offset, "truncate_to": t,
                          "note": "the fetch offset is below the leader's log start: the follower deletes its whole "
                                  "log and starts again at the leader's log start"})
        results.append(Truncation(
            rule, follower.dir.topic, follower.dir.partition, leader.path, follower.path, leader.name, follower.name,
            t, follower.leo, leader.leo, leader.log_start_offset, follower.hw_checkpoint, leader.hw_checkpoint,
            steps, divergence.first_divergent_offset, full))
    _collect_lost(leader, follower, results, max_lost, tally)
    if progress is not None:
        tally.settle(2 * (leader.size + follower.size))
    for r in results:
        r.plan = plan(follower, r.truncate_to, f_cache, leader.log_start_offset if r.full_truncation else None,
                      r.cut_at)
    return results


def _collect_lost(leader: Replica, follower: Replica, results: list[Truncation], max_lost: int,
                  progress: Callable[[int], None] | None = None) -> None:
    """The follower batches each rule discards, judged against the leader's (one partial pass of both)."""
    cuts = [follower.log_start_offset if r.full_truncation else r.truncate_to for r in results]
    start = min(cuts, default=follower.leo)
    if start >= follower.leo:
        return
    acked_on_leader = max(leader.high_watermark, follower.high_watermark)
    streams = [leader.batches(start, progress), follower.batches(start, progress)]
    for i, seg, b, verdicts in merge(streams, [leader.log_start_offset, follower.log_start_offset]):
        if i != 1 or b.last_offset < start:
            continue
        on_leader, retention = verdicts[0] == "same", verdicts[0] == "below"
        acked = b.base_offset < (acked_on_leader if on_leader else follower.high_watermark)
        for r, cut in zip(results, cuts, strict=True):
            if b.last_offset >= cut:
                _lose(r, b, seg, on_leader, acked, retention, max_lost)


def _lose(r: Truncation, b: Batch, seg: Segment, on_leader: bool, acked: bool, retention: bool,
          max_lost: int) -> None:
    if r.cut_at is None:
        r.cut_at = (seg.display, b.position)
    r.lost_batches += 1
    r.lost_records += b.record_count
    if b.producer_id is not None and b.producer_id >= 0:
        r.producer_ids.add(b.producer_id)
    if not on_leader and not retention:
        r.lost_not_on_leader += 1
        if acked:
            r.lost_acknowledged += 1
            _extend(r.acknowledged_lost, b)
    elif acked:  # the follower fetches it again; until then only the leader has it (KIP-101, scenario 1)
        _extend(r.acknowledged_at_risk, b)
    if len(r.lost) < max_lost:
        r.lost.append(LostBatch(b.base_offset, b.last_offset, b.partition_leader_epoch, b.producer_id,
                                b.producer_epoch, b.record_count, b.transactional, b.control, seg.display, b.position,
                                on_leader, acked, retention))


def _extend(ranges: list[list[int]], b: Batch) -> None:
    if ranges and ranges[-1][1] + 1 == b.base_offset:
        ranges[-1][1] = b.last_offset
    else:
        ranges.append([b.base_offset, b.last_offset])


def plan(follower: Replica, truncate_to: int, cache: EpochCache, start_fresh_at: int | None,
         cut_at: tuple[str, int] | None) -> TruncationPlan:
    """What ``UnifiedLog.truncateTo(truncate_to)`` (or ``truncateFullyAndStartAt``) changes in the follower's files."""
    target = start_fresh_at if start_fresh_at is not None else truncate_to
    part = follower.dir
    where = {"dir": part.path, "logdir": part.logdir_path, "key": (part.topic, part.partition)}
    if start_fresh_at is None and truncate_to >= follower.leo:
        return TruncationPlan(part.display, truncate_to, (), None, (), (), **where)
    full = start_fresh_at is not None or bool(follower.segments and follower.segments[0].base_offset > truncate_to)
    changes = []
    keep = [s for s in follower.segments if s.base_offset <= truncate_to] if not full else []
    for s in follower.segments:
        if keep and s is keep[-1]:  # the new active segment: cut at the first discarded batch
            if cut_at is not None and cut_at[0] == s.display:
                changes.append(SegmentChange(s.base_offset, s.display, "truncate", s.size, cut_at[1], _companions(s)))
        elif s not in keep:
            changes.append(SegmentChange(s.base_offset, s.display, "delete", s.size, 0, _companions(s)))
    new_cache = cache.copy()
    if full:
        new_cache.entries = []
    else:
        new_cache.truncate_from_end(truncate_to)
    epochs = tuple(new_cache.entries) if new_cache.entries != (follower.epoch_checkpoint or []) else None
    snapshots = tuple(d for offset, _p, d in sorted(follower.snapshots) if offset > truncate_to or full)
    checkpoints = []
    for name, value in (("replication-offset-checkpoint", follower.hw_checkpoint),
                        ("recovery-point-offset-checkpoint", follower.recovery_point),
                        ("log-start-offset-checkpoint", follower.log_start_checkpoint)):
        if (full and name != "log-start-offset-checkpoint") or (value is not None and value > target):
            checkpoints.append((os.path.join(part.logdir_display, name), target))
    return TruncationPlan(part.display, truncate_to, tuple(changes), epochs, snapshots, tuple(checkpoints),
                          start_fresh_at if start_fresh_at is not None else (truncate_to if full else None), **where)


def _companions(s: Segment) -> tuple[str, ...]:
    stem = s.display[: -len(".log")]
    return tuple(f"{stem}.{ext}" for ext in ("index", "timeindex", "txnindex")
                 if s.path.with_suffix(f".{ext}").exists())


def _pairs(leader: str | Path, follower: str | Path, topic: str | None, partition: int | None,
           met: list[Finding] | None = None) -> Iterator[tuple[PartitionDir, PartitionDir, str, str]]:
    """(leader's dir, follower's dir, their names) for every partition under both; ``met`` is given what
    discovery met outside the partitions (a dir it cannot list, a link loop) before the first pair."""
    logdirs = LogDirs()

    def found(path: str | Path) -> dict[tuple[str, int], Any]:
        units = list(partition_dirs_and_findings([path]))
        if met is not None:
            met.extend(u for u in units if isinstance(u, Finding))
        parts = {}
        for p in units:
            if isinstance(p, PartitionDir) and (topic is None or p.topic == topic) and (
                    partition is None or p.partition == partition):
                p, read = logdirs.place(p)
                if met is not None:
                    met.extend(checkpoint_trouble(p, read))
                parts[p.topic, p.partition] = p
        return parts

    leaders, followers = found(leader), found(follower)
    keys = sorted(set(leaders) & set(followers))
    if not keys:
        raise filter_matched_nothing([leader, follower], topic, partition, 2) or UsageError(
            "no partition is under both --leader and --follower (name the partition's dir on each broker, or their "
            "log dirs; --topic/--partition narrow)")
    for key in keys:
        lp, fp = leaders[key], followers[key]
        if lp.path.resolve() == fp.path.resolve():
            raise UsageError(f"--leader and --follower are the same dir: {lp.display}")
        l_name, f_name = lp.logdir_path.resolve().name, fp.logdir_path.resolve().name
        if l_name == f_name:
            l_name, f_name = lp.display, fp.display
        yield lp, fp, l_name, f_name


def truncations(
    leader: str | Path, follower: str | Path, *, rules: tuple[str, ...] = RULES, topic: str | None = None,
    partition: int | None = None, max_lost: int = DEFAULT_MAX_LOST, options: ScanOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Finding | Truncation]:
    """For every partition under both ``leader`` and ``follower`` (partition dirs or log dirs): the follower's
    findings (damage), then one :class:`Truncation` per rule. ``progress`` is told the bytes of the segments as
    they are read (the loads, then :func:`simulate`'s passes), :func:`truncation_bytes` in all."""
    if any(r not in RULES for r in rules):
        raise UsageError(f"unknown rule: give {' or '.join(RULES)}")
    met: list[Finding] = []
    for lp, fp, l_name, f_name in _pairs(leader, follower, topic, partition, met):
        yield from met
        met.clear()
        lr, fr = open_replica(lp, l_name, options, progress), open_replica(fp, f_name, options, progress)
        results = simulate(lr, fr, rules, max_lost, progress)
        yield from lr.findings
        yield from fr.findings
        at_risk = {tuple(span) for r in results for span in r.acknowledged_at_risk}
        yield from (exposed_finding(fr.path, f_name, first, last) for first, last in sorted(at_risk))
        yield from results


def exposed_finding(path: str, name: str, first: int, last: int) -> Finding:
    """The one finding ``replicas`` and ``truncation`` give acknowledged offsets a replica's truncation to its high
    watermark would leave on the leader alone."""
    return finding("acknowledged-offsets-exposed", path, None,
                   f"{name} holds acknowledged offsets {first}..{last} above its high watermark checkpoint: "
                   "truncating to it (the rule before KIP-101) leaves them on the leader alone")



# --- applying -----------------------------------------------------------------------------------------------


def apply_truncations(
    leader: str | Path, follower: str | Path, *, rule: str, topic: str | None = None, partition: int | None = None,
    max_lost: int = DEFAULT_MAX_LOST, options: ScanOptions | None = None, backup_dir: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Finding | Truncation]:
    """Carry ``rule``'s truncation out on the follower's dir of every partition under both, as ``repair --apply``
    does: the follower's log dir ``.lock`` held for the whole partition (a live broker's lock refuses it with
    :class:`~kafkatool.errors.LogDirLocked`), an interrupted earlier apply completed first, the plan made, its
    originals backed up to ``backup_dir`` (default: beside the log dir), applied, and planned again: the follower
    must then truncate to its own log end, changing nothing.

    Refused (an error finding, nothing changed) when either log is damaged or the follower's dir holds
    ``.swap``/``.cleaned`` leftovers: ``kafkatool repair`` first. Values come out as for :func:`truncations`, the
    :class:`Truncation` last, with ``applied`` and ``backup_dir`` set.

    ``progress`` is told the bytes of the segments as they are read: per partition the reads of
    :func:`truncations` and, once applied, the same again for the check; a check not needed (nothing applied)
    counted as skipped, :func:`truncation_bytes` (``apply=True``) in all."""
    if rule not in RULES:
        raise UsageError(f"applying needs one rule: {' or '.join(RULES)}")
    backups: dict[Path, Path] = {}  # one default backup dir per log dir, however many partitions it holds
    met: list[Finding] = []
    for lp, fp, l_name, f_name in _pairs(leader, follower, topic, partition, met):
        yield from met
        met.clear()
        backup = Path(backup_dir) if backup_dir is not None else backups.setdefault(
            fp.logdir_path, default_backup_dir(fp.logdir_path))
        tally = Tally(progress)
        planned = _APPLY_PASSES * (segment_bytes(lp.files) + segment_bytes(fp.files)) if progress is not None else 0
        with log_dir_lock(fp.logdir_path):
            if resume(fp.logdir_path) is not None:
                yield finding("apply-resumed", fp.display, None,
                              "completed an interrupted apply from its journal before planning again")
            fp = list_partition(fp)
            lr, fr = open_replica(lp, l_name, options, tally), open_replica(fp, f_name, options, tally)
            (result,) = simulate(lr, fr, (rule,), max_lost, tally)
            yield from lr.findings
            yield from fr.findings
            refused = _refusal(lr, fr)
            plan_ = result.plan
            if refused:
                yield finding("truncation-not-applied", fp.display, None, refused + "; nothing was changed")
            elif plan_ is not None and plan_.changes:
                apply_ops(fp.logdir_path, plan_ops(plan_), backup)
                result.applied, result.backup_dir = True, str(backup)
                fp = list_partition(fp)
                lr, fr = open_replica(lp, l_name, options, tally), open_replica(fp, f_name, options, tally)
                (again,) = simulate(lr, fr, (rule,), 0, tally)
                if again.plan is None or again.plan.changes or again.truncate_to != again.follower_leo:
                    yield finding("truncation-not-idempotent", fp.display, None,
                                  f"after applying, the {rule} rule still truncates {again.follower_leo} to "
                                  f"{again.truncate_to} (changes planned: "
                                  f"{bool(again.plan and again.plan.changes)}); please report this")
        tally.settle(planned)
        yield result


_PASSES = 3  # per log: the load, simulate's comparison and its discarded batches
_APPLY_PASSES = 2 * _PASSES  # and the same again to check the apply


def truncation_bytes(leader: str | Path, follower: str | Path, *, topic: str | None = None,
                     partition: int | None = None, apply: bool = False) -> int:
    """What :func:`truncations` (``apply``: :func:`apply_truncations`) tells its ``progress`` in all (a progress
    bar's total): for every partition under both, three passes over the segments of each log (the load, the
    comparison, the discarded batches), twice with ``apply``."""
    passes = _APPLY_PASSES if apply else _PASSES
    return sum(passes * (segment_bytes(lp.files) + segment_bytes(fp.files))
               for lp, fp, _l, _f in _pairs(leader, follower, topic, partition))


def _refusal(leader: Replica, follower: Replica) -> str | None:
    """Why the follower's dir must not be truncated as planned, if it must not."""
    for who, r in (("the follower", follower), ("the leader", leader)):
        damage = next((f for f in r.findings if f.severity == "error" or f.code == "zero-filled-tail"), None)
        if damage is not None:
            where = f" at byte {damage.position}" if damage.position is not None else ""
            return (f"{who}'s {r.path} has an error ({damage.code} in {damage.path}{where}): the truncation offset "
                    "may not be the broker's; run `kafkatool repair` on it first")
    leftovers = [d for p, d in follower.dir.files if classify(p).leftover in (".swap", ".cleaned")]
    if leftovers:
        return (f"the follower's {follower.path} holds an interrupted segment replacement ({leftovers[0]}) the "
                "broker would complete when loading the log; run `kafkatool repair` on it first")
    return None


def plan_ops(plan: TruncationPlan) -> list[FileOp]:
    """The plan as safe-write operations on the follower's files, in the order of the module doc."""
    if plan.dir is None or plan.logdir is None or plan.key is None:
        raise ValueError(f"{plan.partition}: the plan does not say where its files are")
    d, target, fresh = plan.dir, plan.truncate_to, plan.start_fresh_at

    def here(display: str) -> Path:
        return d / os.path.basename(display)

    ops = _checkpoint_ops(plan)
    for s in sorted((s for s in plan.segments if s.action == "delete"), key=lambda s: -s.base_offset):
        if s.base_offset == fresh:
            continue  # the new empty segment takes its place (below)
        why = (f"the log starts again at {fresh}" if fresh is not None
               else f"segment {s.base_offset}: every offset in it is at or past {target}")
        ops.append(FileOp("delete", here(s.log), reason=why))
        ops += [FileOp("delete", here(f), reason=why) for f in s.files]
    for s in plan.segments:
        if s.action == "truncate":
            ops += _cut_ops(here(s.log), s, target)
    ops += [FileOp("delete", here(x), reason=f"producer snapshot past {target}")
            for x in reversed(plan.delete_snapshots)]
    if fresh is not None:
        stem = d / f"{fresh:020d}"
        why = f"truncateFullyAndStartAt({fresh}): a new, empty segment"
        if stem.with_name(stem.name + ".txnindex").exists():
            ops.append(FileOp("delete", stem.with_name(stem.name + ".txnindex"), reason=why))
        ops += [FileOp("write", stem.with_name(f"{stem.name}.{ext}"), data=b"", reason=why)
                for ext in ("index", "timeindex", "log")]
    if plan.epoch_checkpoint is not None:
        ops.append(FileOp("write", d / "leader-epoch-checkpoint", data=build_epoch_checkpoint(plan.epoch_checkpoint),
                          reason=f"leader epochs: none starting at or past {target}"))
    return ops


def _checkpoint_ops(plan: TruncationPlan) -> list[FileOp]:
    """This partition's entry of each log dir checkpoint set to its new offset, the other entries kept."""
    assert plan.logdir is not None and plan.key is not None
    ops = []
    for display, value in plan.checkpoints:
        path = plan.logdir / os.path.basename(display)
        if not path.is_file():
            continue  # the broker has not written it yet: nothing to lower
        items = list(read_small_file(path, FileKind.OFFSET_CHECKPOINT, display))
        bad = next((i for i in items if isinstance(i, Finding) and i.severity == "error"), None)
        if bad is not None:
            raise ApplyRefused(f"{display}: unreadable ({bad.message}); nothing was changed")
        entries = [(e.topic, e.partition, e.offset) for e in items if isinstance(e, OffsetCheckpointEntry)]
        new = [(t, p, value if (t, p) == plan.key else o) for t, p, o in entries]
        if plan.key not in {(t, p) for t, p, _ in entries}:
            new.append((*plan.key, value))
        data = build_offset_checkpoint(new)
        if data != read_small(path):
            ops.append(FileOp("write", path, data=data, reason=f"{plan.key[0]}-{plan.key[1]}: {value}, the new log "
                                                               "end (never above it)"))
    return ops


_INDEX_OFFSET_FIELD = {FileKind.INDEX: 0, FileKind.TIME_INDEX: 1}  # relative offset's place in the entry


def _cut_ops(log: Path, s: SegmentChange, target: int) -> list[FileOp]:
    """``LogSegment.truncateTo(target)``: the indexes trimmed first, then the ``.log`` cut."""
    ops = []
    stem = log.name[: -len(".log")]
    for kind in (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX):
        path = log.with_name(f"{stem}.{kind.value}")
        if not path.is_file():
            continue
        try:  # bounded: an index no broker writes is not read into memory whole
            data = read_small(path)
        except FileTooLarge as exc:
            raise ApplyRefused(f"{path}: {exc.size:,} bytes, larger than any {kind.value} the broker writes (verify: "
                               f"index-too-large); nothing was changed") from None
        new = trim_index(data, kind, s.base_offset, target)
        if kind is FileKind.TIME_INDEX:
            new = _with_largest_timestamp(new if new is not None else data, log, s)
        if new is not None and new != data:
            ops.append(FileOp("write", path, data=new, reason=f"no entry at or past offset {target}"))
    ops.append(FileOp("truncate", log, size=s.keep_bytes, reason=f"the batches from offset {target} on go"))
    return ops


def _with_largest_timestamp(data: bytes, log: Path, s: SegmentChange) -> bytes:
    """The trimmed time index plus the entry ``LogSegment.close`` appends for the now active segment: its largest
    timestamp and the last offset of the first batch holding it (``readLargestTimestamp`` after ``truncateTo``),
    when it is above the last entry's; what the segment's time index holds after a clean shutdown."""
    packer = entry_struct(FileKind.TIME_INDEX)
    largest, offset = -1, None
    with open_regular(log) as fh:
        for item in scan(fh, str(log), end=s.keep_bytes):
            if isinstance(item, Batch) and item.position + item.size <= s.keep_bytes and item.max_timestamp > largest:
                largest, offset = item.max_timestamp, item.last_offset
    entries = list(index_slots(data, FileKind.TIME_INDEX))
    if offset is None or (entries and entries[-1][0] >= largest):
        return data
    return data + packer.pack(largest, offset - s.base_offset)


def trim_index(data: bytes, kind: FileKind, base_offset: int, target: int) -> bytes | None:
    """An index file's content after Kafka's ``truncateTo(target)`` (None: the file is not changed).

    ``.index`` / ``.timeindex`` (``OffsetIndex``/``TimeIndex.truncateTo``): the entries before the first one at or
    past ``target`` (their offsets only grow), as the file holds after Kafka trims it to its valid size; the
    zero-filled slots of a preallocated file end the entries. ``.txnindex`` (``TransactionIndex.truncateTo``): cut
    at the first aborted transaction whose last offset is at or past ``target``; none: unchanged."""
    packer = entry_struct(kind)
    kept = []
    if kind is FileKind.TXN_INDEX:
        for fields in index_slots(data, kind):
            if fields[3] >= target:  # version, producer id, first offset, last offset, last stable offset
                return b"".join(packer.pack(*f) for f in kept)
            kept.append(fields)
        return None
    at = _INDEX_OFFSET_FIELD[kind]
    for i, fields in enumerate(index_slots(data, kind)):
        if fields[at] == 0 and (i > 0 or fields[1 - at] == 0):  # preallocated, never written
            break
        if base_offset + fields[at] >= target:
            break
        kept.append(fields)
    return b"".join(packer.pack(*f) for f in kept)
