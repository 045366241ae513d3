"""``verify``: is a log dir healthy, as the broker would see it when it starts?

Three levels, each a small set of named checks yielding :class:`~kafkatool.model.Finding`:

* segment (:mod:`kafkatool.segment_check`): batches, their CRCs and offsets, the indexes against the
  log;
* partition (:func:`verify_partition` joins the segment reports in offset order): segment names and
  order, offsets continuing across segments, gaps, the ``.txnindex`` against the aborted
  transactions the log implies (producer state carried across segments), the leader epochs of the
  batches against ``leader-epoch-checkpoint``, producer snapshots, ``partition.metadata``, files the
  broker left half-way (``.swap``, ``.cleaned``, ``.deleted``);
* log dir: ``meta.properties``, the clean-shutdown marker, and the offset checkpoints (high
  watermark, recovery point, log start, cleaner offsets) against each partition's log.

Values come out in order: each partition's findings, then its :class:`PartitionSummary`; then the
log dir's findings; then one :class:`VerifySummary` for everything.

Each segment is read once: the segment checks' scan also feeds the partition loader
(:class:`kafkatool.loader.PartitionLoad`, Kafka's ``LogLoader``), which gives the summary's log start, log end
offset, high watermark, first unstable and last stable offsets and leader-epoch cache, as ``replicas``, ``repair``
and ``txns`` see them. With ``jobs > 1`` partitions (and files named alone) are checked side by side in threads
(:meth:`kafkatool.verify_files.Runner.ordered`), each partition's checks feeding its own load as with one job; the
values come out in the same order, byte for byte.
"""

from __future__ import annotations

import io
import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .epochs import EpochCache
from .errors import InputIOError
from .filetypes import METADATA_TOPIC, FileKind, classify, file_size, open_regular_sized, read_to_hole
from .findings import finding
from .index_interval import resolve_index_interval
from .loader import (
    COMPACTED_TOPICS,
    LoadedPartition,
    LogDirs,
    PartitionLoad,
    latest_snapshot,
    snapshot_beyond_log_end,
)
from .log_check import SegmentReport, SegmentTask
from .logdir import JOURNAL_NAME, TMP_SUFFIX
from .logfiles import CLEANED, DELETED, SWAP, TMP, PartitionFiles, misnamed, sort_files
from .model import Finding
from .segment_check import check_segment
from .smallfiles import (
    OFFSET_SLOT,
    EpochEntry,
    OffsetCheckpointEntry,
    ProducerSnapshotHeader,
    SmallReads,
    read_small_file,
)
from .verify_files import FileCount, Runner, VerifyOptions, record_file, tally
from .walk import FoundFile, LogDir, PartitionDir, Unit, discover

_CHECKPOINTS = {
    "replication-offset-checkpoint": "high watermark",
    "recovery-point-offset-checkpoint": "recovery point",
    "log-start-offset-checkpoint": "log start offset",
    "cleaner-offset-checkpoint": "cleaner offset",
}
_BEYOND = {  # the code of a checkpoint's value beyond the log end
    "replication-offset-checkpoint": "high-watermark-beyond-log-end",
    "recovery-point-offset-checkpoint": "recovery-point-beyond-log-end",
    "log-start-offset-checkpoint": "log-start-beyond-log-end",
    "cleaner-offset-checkpoint": "cleaner-offset-beyond-log-end",
}
_BELOW = {  # below the log start (a recovery point below it is not looked at)
    "replication-offset-checkpoint": "high-watermark-below-log-start",
    "log-start-offset-checkpoint": "log-start-below-log-start",
    "cleaner-offset-checkpoint": "cleaner-offset-below-log-start",
}


@dataclass
class PartitionSummary:
    """One partition's row of the table: what it holds, where the broker would start and end it, and its findings."""

    path: str
    topic: str | None
    partition: int | None
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    log_start_offset: int | None = None
    log_end_offset: int | None = None         # after the broker loads the log (kafkatool.loader)
    high_watermark: int | None = None         # the checkpoint clamped to [log start, LEO], as the broker holds it
    first_unstable_offset: int | None = None
    open_transactions: int = 0
    index: str = "-"
    findings: Counter[str] = field(default_factory=Counter)
    on_disk_end_offset: int | None = None     # after the last whole batch on disk (differs when recovery cuts)
    last_stable_offset: int | None = None
    high_watermark_checkpoint: int | None = None
    leader_epochs: list[tuple[int, int]] | None = None  # the leader-epoch cache after loading

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "summary", "scope": "partition", "path": self.path, "topic": self.topic,
            "partition": self.partition, "segments": self.segments, "bytes": self.bytes,
            "batches": self.batches, "records": self.records, "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset, "high_watermark": self.high_watermark,
            "first_unstable_offset": self.first_unstable_offset, "open_transactions": self.open_transactions,
            "index": self.index, "errors": self.findings.get("error", 0),  # not [...]: no __missing__ call each
            "warnings": self.findings.get("warning", 0), "infos": self.findings.get("info", 0),
            "on_disk_end_offset": self.on_disk_end_offset,
            "last_stable_offset": self.last_stable_offset, "high_watermark_checkpoint": self.high_watermark_checkpoint,
            "leader_epochs": None if self.leader_epochs is None else [list(e) for e in self.leader_epochs],
        }


# --- what the paths are ---------------------------------------------------------------------------------


# Discovery is kafkatool.walk's (one place for every command); the names verify's checks use for its values:
_Partition = PartitionDir
_LogDir = LogDir


# --- the command's library function -----------------------------------------------------------------------


def verify_paths(
    paths: Iterable[str | Path], options: VerifyOptions = VerifyOptions(),
    progress: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Findings, one summary per partition, and a final summary, for files, partition dirs or log dirs."""
    yield from verify_units(discover(paths), options, progress)


def verify_units(units: list[Unit], options: VerifyOptions = VerifyOptions(),
                 progress: Callable[[int], None] | None = None) -> Iterator[Any]:
    """:func:`verify_paths` of discovery's units (:func:`kafkatool.verify_files.verify_units` where they are only
    record files named alone)."""
    runner = Runner(options, progress, check_segment)
    units = _placed(units)

    def items_of(unit: LogDir | PartitionDir | FoundFile) -> Iterator[Any]:
        if isinstance(unit, FoundFile):
            return _verify_file(unit.path, unit.display, runner)
        if isinstance(unit, _LogDir):
            return itertools.chain(unit.findings, _verify_logdir(unit, options, runner))
        return verify_partition(unit, options, runner)

    return tally(units, items_of, runner, PartitionSummary, inline=_LogDir)


def _placed(units: list[Unit]) -> list[Unit]:
    """Discovery's units, each partition dir named alone with its log dir (:meth:`kafkatool.loader.LogDirs.place`:
    its siblings named alone share it) and, before the first of that log dir's, what reading its checkpoints met
    (its recovery point, log start and high watermark come from them, as :func:`_verify_logdir` says of a log dir
    named whole, which says it itself)."""
    logdirs = LogDirs()
    for unit in units:
        if isinstance(unit, _LogDir):
            logdirs.said(unit)
    placed: list[Unit] = []
    for unit in units:
        if isinstance(unit, _Partition):
            unit, met = logdirs.place(unit)
            placed.extend(met)
        placed.append(unit)
    return placed


def verify_partition_dir(part: PartitionDir, options: VerifyOptions = VerifyOptions(),
                         progress: Callable[[int], None] | None = None) -> Iterator[Any]:
    """:func:`verify_paths` of one partition dir already discovered (``walk.partition_dirs``): its findings and
    its :class:`PartitionSummary`, with its log dir's checkpoints read once for all the partitions that share it
    (a command that verifies partition after partition; naming each again made each re-read them all)."""
    runner = Runner(options, progress, check_segment)
    try:
        yield from (item for item in verify_partition(part, options, runner) if not isinstance(item, FileCount))
    finally:
        runner.close()


# --- small files ----------------------------------------------------------------------------------------


def _small(path: Path, kind: FileKind, display: str, read: SmallReads | None = None) -> tuple[list[Any], list[Finding]]:
    """The values and findings of a small file; ``read``: the partition's reads, shared with its load."""
    try:
        items = read(path, kind, display) if read is not None else list(read_small_file(path, kind, display))
    except InputIOError as exc:
        return [], [finding("io-error", display, None, str(exc))]
    values = [i for i in items if not isinstance(i, Finding)]
    return values, [i for i in items if isinstance(i, Finding)]


def _verify_file(path: Path, display: str, runner: Runner) -> Iterator[Any]:
    """A single file named on the command line: the checks that need nothing else."""
    info = classify(path, by_extension=True)
    if info.kind.holds_records:
        yield from record_file(path, display, runner)
        return
    yield FileCount(1)
    if info.kind in (FileKind.INDEX, FileKind.TIME_INDEX) and info.base_offset is not None:
        log = os.path.join(os.path.dirname(display), f"{info.base_offset:020d}.log")
        if os.path.exists(log):  # check it against its segment
            task = SegmentTask(info.base_offset, log, **{
                "index" if info.kind is FileKind.INDEX else "timeindex": display})
            for report in runner.run([task]):
                yield from (f for f in report.findings if f.path == display)
            return
    if info.kind in (FileKind.UNKNOWN, FileKind.LOCK):
        yield finding("unknown-file", display, None, "not a file kafkatool knows; not checked")
        return
    _values, findings = _small(path, info.kind, display)
    yield from findings


# --- a partition ------------------------------------------------------------------------------------------


def _sort_files(part: _Partition) -> tuple[PartitionFiles, list[Finding]]:
    """The partition dir's files by role (:func:`kafkatool.logfiles.sort_files`), and what discovery met in it with
    a word on each file the broker does not write there."""
    out, findings = sort_files(part.files), list(part.findings)
    if out.unknown and part.topic == METADATA_TOPIC:  # kafkatool.metadata_log: for that partition alone
        from .metadata_log import partial_snapshot
    for path, display in out.unknown:
        if interrupted := _interrupted_apply(path, display):
            findings.append(interrupted)
        elif part.topic == METADATA_TOPIC and partial_snapshot(path, display):
            continue  # a partial KRaft snapshot: the load says what becomes of it (kafkatool.metadata_log)
        elif misnamed(path.name):
            findings.append(finding("segment-name-invalid", display, None,
                                    f"{path.name}: segment files are named by a 20-digit base offset; "
                                    "the broker ignores this file"))
        else:
            findings.append(finding("unknown-file", display, None,
                                    "not a file the broker writes in a partition dir; ignored by it"))
    return out, findings


def _interrupted_apply(path: Path, display: str) -> Finding | None:
    """The journal or a temporary file of a kafkatool ``--apply`` that was killed (see kafkatool.safewrite.journal)."""
    if path.name == JOURNAL_NAME or path.name.endswith(TMP_SUFFIX):
        return finding("apply-interrupted", display, None,
                       "left by a kafkatool --apply that was interrupted (the broker ignores it): run the same "
                       "command with --apply again to complete it (its journal knows where the backup is)")
    return None


_NO_FILE = (None, None)  # (path, display) of an index file the segment has not

_LEFTOVER_MEANING = {
    DELETED: ("leftover-deleted", "a segment file scheduled for deletion (retention, truncation, compaction); "
                                  "the broker deletes it at start-up"),
    CLEANED: ("leftover-cleaned", "output of an interrupted log-cleaner pass; the broker deletes it at start-up "
                                  "and cleans again"),
    SWAP: ("leftover-swap", "an interrupted segment replacement (cleaner or split); the broker completes it at "
                            "start-up by renaming this file over the segment, so its contents become the log"),
    TMP: ("leftover-tmp", "a temporary file from an interrupted write; the broker ignores or deletes it"),
}


def verify_partition(part: _Partition, options: VerifyOptions, runner: Runner) -> Iterator[Any]:
    """Every check of one partition dir; ends with its :class:`PartitionSummary`."""
    summary = PartitionSummary(part.display, part.topic, part.partition)
    files, sorted_findings = _sort_files(part)

    def emit(f: Finding) -> Finding:
        summary.findings[f.severity] += 1
        return f

    yield FileCount(len(part.files))
    if part.state == "delete":
        yield emit(finding("partition-pending-delete", part.display, None,
                           "partition dir renamed for deletion (topic deleted or replica moved); the broker "
                           "deletes it; not checked further"))
        summary.bytes = sum(file_size(p) for p, _ in part.files)
        runner.skipped(path for path, _ in part.files)
        yield summary
        return
    if part.state in ("future", "stray"):
        what = ("a replica being moved between log dirs (alter-replica-log-dirs); the broker resumes the "
                "copy" if part.state == "future" else "a stray replica the controller no longer assigns here; "
                "the broker will delete it")
        code = "partition-future" if part.state == "future" else "partition-stray"
        yield emit(finding(code, part.display, None, what))
    for f in sorted_findings:
        yield emit(f)

    # Leftover files: what the broker will do with them; a .swap log is what the segment will become.
    swap_tasks = []
    for path, display, info in files.leftovers:
        suffix = info.leftover or ""
        code, meaning = _LEFTOVER_MEANING[suffix]
        yield emit(finding(code, display, None, meaning))
        if suffix == SWAP and info.kind is FileKind.LOG:
            swap_tasks.append(SegmentTask(info.base_offset or 0, display, standalone=True))
        else:
            runner.skipped([path])  # named, not read
    if swap_tasks:
        for report in runner.run(swap_tasks):
            for f in report.findings:
                yield emit(f)

    # Segments.
    bases = sorted(files.segments)
    tasks = []
    indexes, last = files.indexes, len(bases) - 1
    for i, base in enumerate(bases):
        tasks.append(SegmentTask(base, files.segments[base][1], indexes.get((base, FileKind.INDEX), _NO_FILE)[1],
                                 indexes.get((base, FileKind.TIME_INDEX), _NO_FILE)[1],
                                 indexes.get((base, FileKind.TXN_INDEX), _NO_FILE)[1], active=i == last))
    for (base, kind), (_path, display) in sorted(indexes.items()):
        if base not in files.segments:
            yield emit(finding("orphan-index", display, None,
                               f"no {base:020d}.log beside this {kind.value}: the broker deletes it at start-up"))
    compacted = part.topic in COMPACTED_TOPICS or _cleaner_knows(part)
    # The partition as the broker loads it (LogLoader), fed by the segment checks' scans: one read of each segment;
    # its files as sorted here, each small file read once for it and for the checks below (load.reads).
    load = PartitionLoad(part.path, part.display, files=files, logdir=part.logdir, options=options.check.scan)
    snapshot = _snapshot_state(files, bases[0] if bases else None, load)
    state = _PartitionState(prior=snapshot[0], prior_known=snapshot[1])
    state.recovered = {seg.base_offset: seg.recovered for seg in load.segs if seg.recovered is not None}
    check = options.check
    kept = _KeptIndexes(files)
    if tasks:  # index.interval.bytes as repair takes it: given, else what the partition's offset indexes fit
        interval = resolve_index_interval(part.path, options.index_interval_bytes, check.scan, files, kept.read)
        if interval.value != check.index_interval_bytes:
            check = check._replace(index_interval_bytes=interval.value)
    for report in runner.run(tasks, load, check, kept.open):
        for f in _join_segment(report, state, part, compacted):
            yield emit(f)
    summary.segments = len(bases)
    summary.batches, summary.records = state.batches, state.records
    summary.index = _index_word(state.index_status)
    loaded = load.finish()
    for f in _summarise_load(loaded, summary):
        yield emit(f)
    state.loaded_leo = loaded.log_end_offset

    for f in check_epochs(state.epochs, files.epoch_checkpoint, state.leo, state.first_offset, state.legacy,
                          part.display, compacted, load.reads):
        yield emit(f)
    # A KRaft log truncated to its latest snapshot deletes every producer snapshot (its finding says so).
    truncated = loaded.metadata_log is not None and loaded.metadata_log.truncated_to is not None
    for f in _check_snapshots(files, state, load.reads, beyond=not truncated):
        yield emit(f)
    for f in _check_partition_metadata(files, part):
        yield emit(f)
    for path, display, kind in files.others:  # KRaft snapshots, quorum-state
        if kind is FileKind.KRAFT_SNAPSHOT:
            for report in runner.run([SegmentTask(0, display, standalone=True)]):
                for f in report.findings:
                    yield emit(f)
        else:
            for f in _small(path, kind, display)[1]:
                yield emit(f)
    if part.logdir is not None:
        for f in _check_checkpoints_for(part, state, summary):
            yield emit(f)
    sizes = kept.sizes  # each file's size by its display where a reading here took it; the rest statted
    sizes.update(load.reads.sizes)
    sizes.update((seg.display, seg.size) for seg in loaded.segments)
    summary.bytes = sum(sizes[d] if d in sizes else file_size(p) for p, d in part.files)
    yield summary



def _summarise_load(loaded: LoadedPartition, summary: PartitionSummary) -> Iterator[Finding]:
    """The summary's offsets from the loaded partition, and a word where recovery cuts the log."""
    summary.log_start_offset = loaded.log_start_offset
    summary.log_end_offset = loaded.log_end_offset
    summary.on_disk_end_offset = loaded.on_disk_end_offset
    summary.high_watermark_checkpoint = loaded.hw_checkpoint
    summary.high_watermark = loaded.high_watermark if loaded.hw_checkpoint is not None else None
    summary.first_unstable_offset = loaded.first_unstable_offset
    summary.open_transactions = len(loaded.open_transactions)
    summary.last_stable_offset = loaded.last_stable_offset
    summary.leader_epochs = list(loaded.epoch_cache.entries)
    truncated = loaded.truncation()
    if truncated is not None:
        yield truncated
    for f in loaded.findings:
        if f.code == "log-end-below-log-start":
            yield f
    if loaded.metadata_log is not None:  # KafkaMetadataLog's snapshots against the log (kafkatool.metadata_log)
        yield from loaded.metadata_log.findings


class _KeptIndexes:
    """The offset indexes read to infer the partition's index interval, kept for the segment checks, which then
    read each one once (:func:`kafkatool.index_interval.infer_index_interval` reads the newest first, each up to a
    trailing hole): up to ``KEEP`` bytes a partition of whole files; the rest are read again. ``sizes``: each file
    read here or opened by the
    segment checks, by its display (the name they open it by), its size then (the partition's byte count takes them
    rather than a ``stat`` of each file again)."""

    KEEP = 1 << 20

    def __init__(self, files: PartitionFiles) -> None:
        self.display = {p: d for (_base, kind), (p, d) in files.indexes.items() if kind is FileKind.INDEX}
        self.data: dict[str, bytes] = {}
        self.room = self.KEEP
        self.sizes: dict[str, int] = {}

    def read(self, path: Path) -> tuple[bytes, int]:
        data, size = read_to_hole(path, OFFSET_SLOT)
        display = self.display.get(path)
        if display is not None:
            self.sizes[display] = size
            if len(data) == size <= self.room:  # kept whole (a sparse one is read again: only its data)
                self.data[display] = data
                self.room -= size
        return data, size

    def open(self, name: str) -> BinaryIO:
        data = self.data.pop(name, None)
        if data is not None:
            return io.BytesIO(data)
        fh, self.sizes[name] = open_regular_sized(name, buffering=0)  # log_check.open_local, with its size
        return fh


def _index_word(statuses: Counter[str]) -> str:
    for word in ("broken", "missing", "usable"):
        if statuses.get(word):
            return word
    return "sparse" if statuses else "-"


def _cleaner_knows(part: _Partition) -> bool:
    if part.logdir is None:
        return False
    cleaner = part.logdir.checkpoints.get("cleaner-offset-checkpoint", {})
    return (part.topic or "", part.partition or 0) in cleaner


@dataclass
class _PartitionState:
    """What the partition's earlier segments leave for the next one."""

    prior: dict[int, int]                    # producer id -> first offset of its open transaction
    prior_known: bool
    first_offset: int | None = None
    last_offset: int | None = None
    last_segment_base: int | None = None
    batches: int = 0
    records: int = 0
    epochs: list[tuple[int, int, int, str]] = field(default_factory=list)  # epoch, start offset, position, path
    legacy: bool = False
    index_status: Counter[str] = field(default_factory=Counter)
    loaded_leo: int | None = None            # the log end offset after the broker loads the log
    recovered: dict[int, str] = field(default_factory=dict)  # base offset -> why the broker recovers it at start-up

    @property
    def leo(self) -> int | None:
        if self.loaded_leo is not None:
            return self.loaded_leo
        if self.last_offset is not None:
            return self.last_offset + 1
        return self.last_segment_base


def _snapshot_state(files: PartitionFiles, first_base: int | None, load: PartitionLoad) -> tuple[dict[int, int], bool]:
    """Open transactions when the first segment starts: the producer snapshot at its base offset if the broker can
    read it (:func:`kafkatool.loader.latest_snapshot`, ``ProducerStateManager.truncateAndReload``, bounded to that
    offset); False when that state is not known."""
    if not first_base:
        return {}, True
    if first_base not in files.snapshots:
        return {}, False
    # bounded to [first_base, first_base]: that one snapshot is all latest_snapshot could take (not every one read)
    _start, entries, bad = latest_snapshot({first_base: files.snapshots[first_base][0]}, first_base, first_base,
                                           read=load.snapshot_items)
    if first_base in bad:
        return {}, False
    return {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}, True


def join_transactions(
    report: SegmentReport, prior: dict[int, int], prior_known: bool = True
) -> tuple[list[tuple[int, int | None, int, int | None]], dict[int, int]]:
    """The aborted transactions a segment's ``.txnindex`` must hold, and the transactions open after it.

    ``prior`` is producer id -> first offset of the transactions open when the segment starts. A
    segment resolves its own transactions alone (:mod:`kafkatool.segment_check`) except those begun
    before it; this puts them right, as ``ProducerStateManager`` would have seen them:
    ``AbortedTxn(pid, first offset, marker offset, last stable offset)`` where the last stable offset is
    the first offset of the earliest other open transaction, or the marker offset + 1.

    When the state before the segment is not known (a log starting after segments were deleted, with no
    readable producer snapshot there), a producer's first marker may close a transaction begun before the
    log start: its first offset is then None (unknown), and so is every last stable offset.
    """
    expected: list[tuple[int, int | None, int, int | None]] = []
    for pid, local_first, marker, local_lso in report.aborts:
        if pid in prior and report.first_marker.get(pid) == marker:
            first = prior[pid]
        elif not prior_known and report.first_marker.get(pid) == marker:
            expected.append((pid, None, marker, None))
            continue
        elif local_first is None:
            continue  # a marker with no transaction: Kafka records nothing
        else:
            first = local_first
        others = [f for p, f in prior.items() if p != pid and report.first_marker.get(p, 1 << 63) > marker]
        lso = min(others) if others else local_lso
        expected.append((pid, first, marker, lso if prior_known else None))
    after = {p: f for p, f in prior.items() if p not in report.first_marker}
    for p, f in report.ongoing.items():
        if p not in after:
            after[p] = f
    return expected, after


def _join_segment(
    report: SegmentReport, state: _PartitionState, part: _Partition, compacted: bool
) -> Iterator[Finding]:
    task = report.task
    yield from report.findings
    path = task.log or ""
    for verdict in (report.index, report.timeindex):
        if verdict is not None:
            state.index_status[verdict.status] += 1
    state.last_segment_base = task.base_offset
    if report.first_offset is None:
        if not task.active and not report.io_error:
            yield finding("segment-empty", path, 0, "segment holds no batch")
        return
    compacted = compacted or report.compacted_batches > 0 or report.delete_horizon
    if state.last_offset is not None:
        if task.base_offset <= state.last_offset:
            yield finding("segment-overlap", path, 0,
                          f"segment base offset {task.base_offset} is not above the previous segment's last "
                          f"offset {state.last_offset}")
        elif report.first_offset > state.last_offset + 1:
            missing = report.first_offset - state.last_offset - 1
            yield finding("offset-gap-compacted" if compacted else "offset-gap", path, 0,
                          f"offsets {state.last_offset + 1}..{report.first_offset - 1} ({missing}) are in no "
                          "segment" + (" (normal after compaction)" if compacted else
                                       ": a segment file removed by hand? (normal only on compacted topics)"))
    if report.gaps:
        pos, lo, hi = report.first_gap or (0, 0, 0)
        yield finding("offset-gaps-compacted" if compacted else "offset-gaps", path, pos,
                      f"{report.gaps} holes between batches, {report.missing_offsets} offsets in all (first: "
                      f"{lo}..{hi})" + (" — normal after compaction" if compacted else
                                        "; offsets are contiguous unless the topic is compacted"))
    if state.first_offset is None:
        state.first_offset = report.first_offset
    state.last_offset = report.last_offset
    state.batches += report.batches
    state.records += report.records
    state.legacy = state.legacy or report.legacy
    state.epochs.extend((e, o, p, path) for e, o, p in report.epochs)

    expected, state.prior = join_transactions(report, state.prior, state.prior_known)
    yield from _compare_txn_index(report, expected, state.prior_known, state.recovered.get(task.base_offset))


def _compare_txn_index(
    report: SegmentReport, expected: list[tuple[int, int | None, int, int | None]], prior_known: bool,
    recovered: str | None = None,
) -> Iterator[Finding]:
    """The segment's ``.txnindex`` against the aborts the log implies (None: not knowable, not compared).
    ``recovered``: why the broker recovers the segment at start-up (``LogSegment.recover`` rebuilds a missing
    ``.txnindex``: a read_committed fetch is then served the log's aborts, ``LogSegment.collectAbortedTxns``)."""
    task = report.task
    have = [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in report.txn_entries or []]
    if have == expected:
        return
    where = task.txnindex or (task.log[:-3] + "txnindex" if task.log else "")
    if report.txn_entries is None and expected:
        pid, first, marker, _lso = expected[0]
        span = (f"offsets {first}..{marker}" if first is not None
                else f"ended by its marker at {marker}, begun before the log start")
        if recovered is not None:
            yield finding("txnindex-missing-rebuilt", where, None,
                          f"the log holds {len(expected)} aborted transactions (first: producer {pid}, {span}) and "
                          f"there is no .txnindex, but the broker recovers this segment at start-up ({recovered}) "
                          "and rebuilds it from the log")
            return
        yield finding("txnindex-missing", where, None,
                      f"the log holds {len(expected)} aborted transactions (first: producer {pid}, {span}) but there "
                      "is no .txnindex: read_committed consumers would receive their records")
        return
    by_key = {(h[0], h[2]): (i, h) for i, h in enumerate(have)}
    for pid, first, marker, lso in expected:
        found = by_key.pop((pid, marker), None)
        if found is None and first is None:
            continue  # begun before the log start, maybe: the broker that wrote it knew; a replay from there does not
        if found is None:
            yield finding("txnindex-missing-abort", where, None,
                          f"aborted transaction of producer {pid} ({first}..{marker}) is not in the index: "
                          "read_committed consumers would receive its records")
            continue
        i, (_p, h_first, _m, h_lso) = found
        if first is not None and h_first != first:
            yield finding("txnindex-wrong-entry", where, i * 34,
                          f"entry {i}: producer {pid}'s aborted transaction starts at {first}, the index says "
                          f"{h_first}")
        elif lso is not None and h_lso != lso:
            yield finding("txnindex-wrong-lso", where, i * 34,
                          f"entry {i}: last stable offset {h_lso}, the log implies {lso}")
    for i, (pid, first, marker, _lso) in sorted(by_key.values()):
        yield finding("txnindex-extra-entry", where, i * 34,
                      f"entry {i}: producer {pid} aborted {first}..{marker}, but the log has no ABORT marker of "
                      "that producer there: read_committed consumers would drop its records")


def check_epochs(
    runs: list[tuple[int, int, int, str]], checkpoint: tuple[Path, str] | None, leo: int | None,
    first_offset: int | None, legacy: bool, partition_display: str, compacted: bool = False,
    read: SmallReads | None = None,
) -> Iterator[Finding]:
    """The leader epochs of the batches against ``leader-epoch-checkpoint`` (``LeaderEpochFileCache``).

    ``runs``: (epoch, first offset, byte position, segment path) wherever the batches' leader epoch changes, in
    offset order; ``checkpoint``: (path, display) of the file, None when there is none; ``legacy``: the log
    holds v0/v1 batches (which carry no epoch); ``compacted``: the log cleaner works on the partition, so an
    epoch's first batches may be gone (an epoch starting in the checkpoint before its first batch is normal);
    ``read``: the partition's small-file reads, shared with its load (the checkpoint is read once).
    """
    implied = EpochCache()  # the cache the batches imply, each epoch change assigned in offset order
    for epoch, start, position, path in runs:
        latest = implied.latest
        if latest is not None and epoch < latest[0]:
            yield finding("epoch-goes-back", path, position,
                          f"batch at offset {start} has leader epoch {epoch}, after epoch {latest[0]}: "
                          "a leader's data after a newer leader's (divergent log)")
        implied.assign(epoch, start)
    expected = implied.entries
    if checkpoint is None:
        if expected and not legacy:
            where = os.path.join(partition_display, "leader-epoch-checkpoint")
            yield finding("epoch-checkpoint-missing", where,
                          None, f"no leader-epoch-checkpoint, but the batches carry epochs {_epoch_list(expected)}: "
                          "the broker cannot answer OffsetsForLeaderEpoch correctly after a restart")
        return
    path, display = checkpoint
    values, findings = _small(path, FileKind.EPOCH_CHECKPOINT, display, read)
    yield from findings
    entries = [(e.epoch, e.start_offset) for e in values if isinstance(e, EpochEntry)]
    for i in range(1, len(entries)):
        if entries[i][0] <= entries[i - 1][0] or entries[i][1] <= entries[i - 1][1]:
            yield finding("epoch-checkpoint-not-increasing", display, None,
                          f"entry {entries[i]} does not follow {entries[i - 1]}: epochs and start offsets must "
                          "both increase")
    for epoch, start in entries:
        if leo is not None and start > leo:
            yield finding("epoch-start-beyond-log-end", display, None,
                          f"epoch {epoch} starts at {start}, beyond the log end offset {leo}; the broker drops it "
                          "when it loads the log")
        elif first_offset is not None and start < first_offset and (epoch, start) != entries[0]:
            yield finding("epoch-start-below-log-start", display, None,
                          f"epoch {epoch} starts at {start}, below the log start offset {first_offset}")
    if legacy:
        return  # v0/v1 batches carry no epoch; the cache cannot be rebuilt from them
    have = dict(entries)
    for i, (epoch, start) in enumerate(expected):
        if epoch not in have:
            yield finding("epoch-missing-from-checkpoint", display, None,
                          f"batches from offset {start} carry leader epoch {epoch}, which the checkpoint lacks "
                          f"(it has {_epoch_list(entries)})")
        elif have[epoch] != start and not ((i == 0 or compacted) and have[epoch] < start):
            yield finding("epoch-start-mismatch", display, None,
                          f"epoch {epoch}: the checkpoint says it starts at {have[epoch]}, its first batch is at "
                          f"offset {start}")


def _epoch_list(entries: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"{e}@{s}" for e, s in entries[:8])
    return shown + (f", … ({len(entries)} in all)" if len(entries) > 8 else "")


def _check_snapshots(files: PartitionFiles, state: _PartitionState, read: SmallReads,
                     beyond: bool = True) -> Iterator[Finding]:
    leo = state.leo
    for offset, (path, display) in sorted(files.snapshots.items()):
        values, findings = _small(path, FileKind.PRODUCER_SNAPSHOT, display, read)
        yield from findings
        header = next((v for v in values if isinstance(v, ProducerSnapshotHeader)), None)
        if header is None:
            continue
        if beyond and leo is not None and offset > leo:
            yield snapshot_beyond_log_end(display, offset, leo)


def _check_partition_metadata(files: PartitionFiles, part: _Partition) -> Iterator[Finding]:
    if files.partition_metadata is None:
        if files.segments and part.logdir is not None:
            yield finding("partition-metadata-missing", os.path.join(part.display, "partition.metadata"),
                          None, "no partition.metadata (topic id): written by brokers since 2.8; the broker "
                          "writes it when it next leads or follows this partition")
        return
    path, display = files.partition_metadata
    yield from _small(path, FileKind.PARTITION_METADATA, display)[1]


# --- a log dir --------------------------------------------------------------------------------------------


def _verify_logdir(logdir: _LogDir, options: VerifyOptions, runner: Runner) -> Iterator[Any]:
    yield FileCount(len(logdir.files))
    names = {p.name: (p, d) for p, d in logdir.files}
    if "meta.properties" in names:
        p, d = names["meta.properties"]
        yield from _small(p, FileKind.META_PROPERTIES, d)[1]
    else:
        yield finding("meta-properties-missing", os.path.join(logdir.display, "meta.properties"), None,
                      "no meta.properties: not a formatted broker log dir (a copy of partition dirs?); a KRaft "
                      "broker refuses to start on it")
    if logdir.clean_shutdown:
        p, d = names[".kafka_cleanshutdown"]
        yield from _small(p, FileKind.CLEAN_SHUTDOWN, d)[1]
    entries: dict[str, list[tuple[int, OffsetCheckpointEntry]]] = {}
    for name in _CHECKPOINTS:
        checkpoint = logdir.checkpoint(name)  # read once, shared with the partition checks (logdir.checkpoints)
        if checkpoint is None:
            continue
        yield from checkpoint.findings
        entries[name] = list(enumerate(checkpoint.entries))
    for p, d in logdir.files:
        info = classify(p)
        if interrupted := _interrupted_apply(p, d):
            yield interrupted
        elif info.kind is FileKind.UNKNOWN and info.leftover is None:
            yield finding("unknown-file", d, None, "not a file the broker writes in a log dir")
        elif info.leftover is not None:
            yield finding("leftover-tmp", d, None, "an interrupted checkpoint write; the broker ignores it")
        elif info.kind is FileKind.KRAFT_SNAPSHOT:  # bootstrap.checkpoint: the metadata a KRaft node is formatted with
            for report in runner.run([SegmentTask(0, d, standalone=True)]):
                yield from report.findings

    present: set[tuple[str, int]] = set()
    # each partition's checks, in the runner's pool where worth a thread (asked only where there is a pool)
    works: list[tuple[Callable[[], Iterable[Any]], bool | Callable[[], bool]]] = []
    for part in logdir.partitions:
        if part.topic is None:
            works.append((lambda part=part: [finding("unknown-dir", part.display, None,
                                                     "not a partition dir (topic-partition); the broker ignores it")],
                          False))
            continue
        if part.state is None:
            present.add((part.topic, part.partition or 0))
        works.append((lambda part=part: verify_partition(part, options, runner),
                      lambda part=part: runner.worth_a_thread(part)))
    yield from runner.ordered(works)
    for name, listed in entries.items():
        _p, display = names[name]
        for _i, entry in listed:
            if (entry.topic, entry.partition) not in present:
                yield finding("checkpoint-unknown-partition", display, None,
                              f"{entry.topic}-{entry.partition} has a {_CHECKPOINTS[name]} ({entry.offset}) but no "
                              "partition dir here")


def _check_checkpoints_for(part: _Partition, state: _PartitionState, summary: PartitionSummary) -> Iterator[Finding]:
    """The log dir's checkpoints against this partition's log (what ``LogManager``/``UnifiedLog`` do on load)."""
    assert part.logdir is not None
    key = (part.topic or "", part.partition or 0)
    leo, start = state.leo, state.first_offset
    display = part.logdir.display
    cps = part.logdir.checkpoints
    if leo is None or part.state is not None:
        return
    low = summary.log_start_offset if summary.log_start_offset is not None else start
    for name, what in _CHECKPOINTS.items():
        values = cps.get(name)
        value = None if values is None else values.get(key)
        if value is None:
            continue
        if value > leo:
            consequence = {
                "replication-offset-checkpoint": "the broker caps the high watermark at the log end offset; "
                                                 "acknowledged data may be missing from this replica",
                "recovery-point-offset-checkpoint": "the broker resets it and recovers every segment",
                "log-start-offset-checkpoint": "the log start is past the data: the broker deletes the segments",
                "cleaner-offset-checkpoint": "the cleaner resets it to the log start and cleans everything again",
            }[name]
            yield finding(_BEYOND[name], os.path.join(display, name), None,  # joined only for a finding
                          f"{part.topic}-{part.partition}: {what} {value} is beyond the log end offset {leo}; "
                          f"{consequence}")
        elif low is not None and value < low and name in _BELOW:
            yield finding(_BELOW[name], os.path.join(display, name), None,
                          f"{part.topic}-{part.partition}: {what} {value} is below the log start offset {low}; the "
                          "broker moves it up")
    recovery_points = cps.get("recovery-point-offset-checkpoint")
    if recovery_points is not None and key not in recovery_points and state.batches:
        yield finding("recovery-point-missing", os.path.join(display, "recovery-point-offset-checkpoint"),
                      None, f"{part.topic}-{part.partition} has no recovery point: after an unclean shutdown the "
                      "broker recovers all of its segments")
