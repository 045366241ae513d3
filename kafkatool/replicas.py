"""``replicas``: the same partition on several brokers' disks, side by side, as the brokers would load it.

A replica is a partition dir plus the broker-level checkpoints of the log dir holding it
(``replication-offset-checkpoint``: the high watermark, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``.kafka_cleanshutdown``), loaded as the broker would load it when it starts
(:func:`kafkatool.loader.load_partition`, Kafka's ``LogLoader``): log start, log end offset (LEO), high watermark
clamped to [log start, LEO], last stable offset, and the leader-epoch cache (:class:`EpochCache`,
``LeaderEpochFileCache``) all come from there, the same numbers ``verify`` and ``repair`` show.

Replicas are compared batch by batch in one merged pass over all of them (:func:`merge`): two batches are
the same when offsets, partition leader epoch and CRC are (a follower stores the leader's batches byte for
byte). Per pair: the first offset both hold where they differ, and the runs of batches each has that the
other does not (divergent, ahead of the other's end, or below the other's log start).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .epochs import EpochCache
from .errors import NothingMatched, UsageError
from .filetypes import FileKind, classify, open_regular
from .loader import LoadedPartition, LoadedSegment, LogDirs, checkpoint_trouble, load_partition, segment_bytes
from .model import Batch, Finding
from .progress import Tally
from .records import ScanOptions, scan
from .verify import check_epochs
from .walk import PartitionDir, partition_dirs_and_findings

MAX_RUNS = 100                # runs of unshared batches listed per pair and direction (the rest are counted)


# --- one replica ---------------------------------------------------------------------------------------


Segment = LoadedSegment  # a segment of a replica's log: what the loader found (kafkatool.loader)


@dataclass
class Replica:
    """One replica: its partition dir loaded as the broker would (:func:`kafkatool.loader.load_partition`), then its
    log read again batch by batch for comparisons (:meth:`batches`)."""

    dir: PartitionDir
    name: str
    loaded: LoadedPartition
    findings: list[Finding] = field(default_factory=list)
    scan_options: ScanOptions = field(default_factory=ScanOptions)

    @property
    def path(self) -> str:
        return self.dir.display

    @property
    def segments(self) -> list[Segment]:
        return self.loaded.segments

    @property
    def snapshots(self) -> list[tuple[int, Path, str]]:
        """Producer snapshots (offset, path, display)."""
        out = []
        for path, display in self.dir.files:
            info = classify(path)
            if info.kind is FileKind.PRODUCER_SNAPSHOT and info.leftover is None and info.base_offset is not None:
                out.append((info.base_offset, path, display))
        return sorted(out)

    # what the loader found, under the names the replicas and truncation code use
    leo = property(lambda self: self.loaded.log_end_offset)
    log_start_offset = property(lambda self: self.loaded.log_start_offset)
    log_start_checkpoint = property(lambda self: self.loaded.log_start_checkpoint)
    hw_checkpoint = property(lambda self: self.loaded.hw_checkpoint)
    recovery_point = property(lambda self: self.loaded.recovery_point_checkpoint)
    clean_shutdown = property(lambda self: self.loaded.clean_shutdown)
    epoch_checkpoint = property(lambda self: self.loaded.epoch_checkpoint)
    high_watermark = property(lambda self: self.loaded.high_watermark)
    first_unstable_offset = property(lambda self: self.loaded.first_unstable_offset)
    last_stable_offset = property(lambda self: self.loaded.last_stable_offset)
    open_txns = property(lambda self: self.loaded.open_transactions)
    first_batch_offset = property(lambda self: self.loaded.first_batch_offset)
    batches_read = property(lambda self: self.loaded.batches)
    records = property(lambda self: self.loaded.records)
    legacy = property(lambda self: self.loaded.legacy)
    size = property(lambda self: self.loaded.size)

    @property
    def runs(self) -> list[tuple[int, int, int, str]]:
        """(epoch, first offset, position, path) wherever the kept batches' leader epoch changes."""
        return self.loaded.epoch_runs

    @property
    def damage(self) -> Finding | None:
        """Where recovery cuts the log (the first invalid batch of a segment the broker recovers)."""
        cut = self.loaded.cut
        return cut.finding if cut is not None else None

    def epoch_cache(self) -> EpochCache:
        """The leader-epoch cache the broker holds after loading this log (a copy)."""
        return self.loaded.epoch_cache.copy()

    # -- the log --------------------------------------------------------------------------------------
    def batches(self, from_offset: int | None = None, progress: Callable[[int], None] | None = None
                ) -> Iterator[tuple[Segment, Batch]]:
        """The batches the loaded log holds, in offset order: segments recovery deletes are skipped, recovered ones
        end at their cut, batches with a bad CRC are left out. ``from_offset`` starts at the segment holding that
        offset and skips the batches ending below it. Reading stops where offsets stop increasing.

        ``progress`` is told the bytes of this pass as they are read, and once it is over (or abandoned) what it
        skipped: a pass counts every segment the load read, :attr:`size` bytes in all."""
        tally = Tally(progress)
        try:
            yield from self._batches(from_offset, tally)
        finally:
            if progress is not None:
                tally.settle(self.size)

    def _batches(self, from_offset: int | None, progress: Tally) -> Iterator[tuple[Segment, Batch]]:
        segments = [s for s in self.segments if not s.deleted]
        if from_offset is not None:
            first = max((i for i, s in enumerate(segments) if s.base_offset <= from_offset), default=0)
            segments = segments[first:]
        last: int | None = None
        for seg in segments:
            try:
                fh = open_regular(seg.path, buffering=0)
            except OSError:
                return  # the loader reported it
            with fh:
                end = seg.valid_bytes if seg.recovered is not None else None
                for b in scan(fh, seg.display, end=end, options=self.scan_options, progress=progress):
                    if b.__class__ is not Batch or not b.crc_valid:
                        continue
                    if last is not None and b.base_offset <= last:
                        return
                    last = b.last_offset
                    if from_offset is not None and b.last_offset < from_offset:
                        continue
                    yield seg, b  # type: ignore[misc]


def open_replica(part: PartitionDir, name: str, options: ScanOptions | None = None,
                 progress: Callable[[int], None] | None = None) -> Replica:
    """A replica: its partition dir loaded with its log dir's checkpoints (``LogLoader``); ``progress`` is told the
    bytes of the segments as the load reads them (:func:`kafkatool.loader.segment_bytes` in all)."""
    options = options or ScanOptions()
    loaded = load_partition(part.path, part.display, files=part.files, logdir=part.logdir, options=options,
                            progress=progress)
    findings = list(part.findings)  # what discovery met in the dir (a link to nothing)
    findings += [f for f in loaded.findings if f.severity != "info"]
    findings += [c.finding for c in loaded.cuts]
    return Replica(part, name, loaded, findings, options)


def replica_groups(paths: Iterable[str | Path], topic: str | None = None, partition: int | None = None,
                   minimum: int = 2, met: list[Finding] | None = None) -> list[list[tuple[PartitionDir, str]]]:
    """The partition dirs under ``paths`` grouped by partition, each named (its log dir's name when that tells
    the replicas apart, else its path); only partitions found at least ``minimum`` times. ``met`` is given what
    discovery met outside the partitions (a dir it cannot list, a link loop)."""
    groups: dict[tuple[str, int], list[PartitionDir]] = {}
    seen: set[Path] = set()
    logdirs = LogDirs()
    for part in partition_dirs_and_findings(paths):
        if isinstance(part, Finding):
            if met is not None:
                met.append(part)
            continue
        if (topic is not None and part.topic != topic) or (partition is not None and part.partition != partition):
            continue
        part, read = logdirs.place(part)
        if met is not None:
            met.extend(checkpoint_trouble(part, read))
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


def filter_matched_nothing(paths: Iterable[str | Path], topic: str | None, partition: int | None,
                           minimum: int) -> NothingMatched | None:
    """Where ``--topic``/``--partition`` left no partition of those found ``minimum`` times under ``paths``: the
    note saying so (exit 0), naming what there was; None where there was nothing to filter (a usage error)."""
    if topic is None and partition is None:
        return None
    there = [f"{g[0][0].topic}-{g[0][0].partition}" for g in replica_groups(paths, minimum=minimum)]
    if not there:
        return None
    given = " ".join(f"{o} {v}" for o, v in (("--topic", topic), ("--partition", partition)) if v is not None)
    return NothingMatched(f"no partition matched {given} in {len(there):,} partition{'s' if len(there) != 1 else ''}"
                          f" of the given dirs: {', '.join(there[:5])}{', ...' if len(there) > 5 else ''}")


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


def compare(replicas: list[Replica], progress: Callable[[int], None] | None = None) -> list[Divergence]:
    """Read every replica once (a full pass each, in one merge) and compare every pair; ``progress`` is told the
    bytes of the passes (:meth:`Replica.batches`)."""
    n = len(replicas)
    pairs = {(i, j): Divergence(replicas[i].path, replicas[j].path, replicas[i].name, replicas[j].name)
             for i in range(n) for j in range(i + 1, n)}
    starts = [r.log_start_offset for r in replicas]
    for i, _seg, x, verdicts in merge([r.batches(progress=progress) for r in replicas], starts):
        for j, v in enumerate(verdicts):
            if v is not None:
                pairs[min(i, j), max(i, j)].account(x, v, i < j, starts[j])
    return list(pairs.values())


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
                  options: ScanOptions | None = None, progress: Callable[[int], None] | None = None,
                  ) -> Iterator[Finding | EpochRow | EpochHistory]:
    """Per partition dir under ``paths``: findings (``verify``'s epoch checks and any damage), one
    :class:`EpochRow` per epoch, then the :class:`EpochHistory`. ``progress`` is told the bytes of the segments as
    the loads read them, :func:`epochs_bytes` in all."""
    met: list[Finding] = []
    groups = replica_groups(paths, topic, partition, minimum=1, met=met)
    if not groups:
        raise filter_matched_nothing(paths, topic, partition, 1) or UsageError("no partition dir under the given paths")
    yield from met
    for group in groups:
        for part, _name in group:
            r = open_replica(part, part.display, options, progress)
            ck_file = next(((p, d) for p, d in part.files if p.name == "leader-epoch-checkpoint"), None)
            findings = [*r.findings, *check_epochs(r.runs, ck_file, r.leo, r.first_batch_offset, r.legacy,
                                                   part.display, r.loaded.compacted)]
            rows = epoch_rows(r.epoch_checkpoint or [], [(e, s) for e, s, _p, _d in r.runs], r.leo)
            yield from findings
            yield from rows
            yield EpochHistory(part.display, part.topic, part.partition, r.log_start_offset, r.leo,
                               None if r.epoch_checkpoint is None else tuple(r.epoch_checkpoint),
                               tuple(r.epoch_cache().entries), tuple((e, s) for e, s, _p, _d in r.runs),
                               sum(row.status not in ("ok", "no batches") for row in rows))


def epochs_bytes(paths: Iterable[str | Path], *, topic: str | None = None, partition: int | None = None) -> int:
    """What :func:`epoch_history` tells its ``progress`` in all (a progress bar's total): the segments of every
    partition dir it loads."""
    return sum(segment_bytes(part.files) for group in replica_groups(paths, topic, partition, minimum=1)
               for part, _name in group)
