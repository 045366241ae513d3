"""``verify`` of record files named alone: a segment's ``.log``, a KRaft snapshot, a leftover ``.swap``.

Such a file is checked batch by batch (:func:`kafkatool.log_check.check_log_file`) and needs nothing of a partition:
the CLI runs :func:`verify_units` when discovery found only such files (:func:`lone_record_files`), so that a segment
checked alone imports none of the loader, the index and small-file readers, or the partition's checks (they cost
more to import than checking a small segment: ``tests/test_startup.py``). Anything else is
:func:`kafkatool.verify.verify_paths`'s, which takes its values, its runner and this check of a record file from here.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .filetypes import FileKind, classify, file_size, holds_records
from .log_check import CheckOptions, Opener, SegmentReport, SegmentTask, check_log_file, open_local
from .model import Finding
from .walk import FoundFile, PartitionDir, Unit

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from .loader import PartitionLoad

SegmentCheck = Callable[..., SegmentReport]
"""``(task, options, progress, tap=...)``: a segment's check, run by :class:`Runner` in the thread of its partition
(:func:`kafkatool.log_check.check_log_file` for a record file alone, :func:`kafkatool.segment_check.check_segment`
with its indexes)."""


class VerifyOptions(NamedTuple):
    """``verify``'s options: how each segment is checked, and how many partitions at a time (threads)."""

    check: CheckOptions = CheckOptions()
    jobs: int = 1
    # index.interval.bytes, to judge an index's density; None: per partition, the one its offset indexes fit, else
    # Kafka's default (kafkatool.index_interval: repair's rule for the indexes it rebuilds)
    index_interval_bytes: int | None = None


@dataclass
class VerifySummary:
    """The last line: everything looked at, and the findings by severity."""

    partitions: int = 0
    files: int = 0
    bytes: int = 0
    batches: int = 0
    findings: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "summary", "scope": "total", "partitions": self.partitions, "files": self.files,
            "bytes": self.bytes, "batches": self.batches, "errors": self.findings["error"],
            "warnings": self.findings["warning"], "infos": self.findings["info"],
        }


def lone_record_files(units: Iterable[Unit]) -> bool:
    """Discovery found record files named alone and nothing else (its findings aside): :func:`verify_units` is all
    ``verify`` needs."""
    return all(isinstance(u, Finding) or (isinstance(u, FoundFile) and u.kind.holds_records) for u in units)


def verify_units(units: list[Unit], options: VerifyOptions = VerifyOptions(),
                 progress: Callable[[int], None] | None = None) -> Iterator[Any]:
    """:func:`kafkatool.verify.verify_paths` of discovery's units when they are :func:`lone_record_files`."""
    runner = Runner(options, progress)
    return tally(units, lambda unit: record_file(unit.path, unit.display, runner), runner)


def tally(units: list[Unit], items_of: Callable[[Any], Iterable[Any]], runner: Runner,
          partition_summary: type | tuple[()] = (), inline: type | tuple[()] = ()) -> Iterator[Any]:
    """The values of each unit (``items_of``; discovery's findings as they are), each counted into the final
    :class:`VerifySummary` (a ``partition_summary`` as a partition, a :class:`FileCount` not shown), then that summary;
    the runner closed at the end. Units run in the runner's pool (:meth:`Runner.ordered`), but for the ``inline``
    ones (a log dir: its partitions are the pool's)."""
    total = VerifySummary()
    works = ((lambda unit=unit: [unit], False) if isinstance(unit, Finding)
             else (lambda unit=unit: items_of(unit), False if isinstance(unit, inline) else
                   lambda unit=unit: runner.worth_a_thread(unit)) for unit in units)
    try:
        for item in runner.ordered(works):
            if isinstance(item, Finding):
                total.findings[item.severity] += 1
            elif isinstance(item, partition_summary):
                total.partitions += 1
                total.bytes += item.bytes
                total.batches += item.batches
            elif isinstance(item, FileCount):
                total.files += item.n
                total.bytes += item.bytes
                total.batches += item.batches
                continue
            yield item
    finally:
        runner.close()
    yield total


def record_file(path: Path, display: str, runner: Runner) -> Iterator[Any]:
    """A record file named alone: its batches checked, not its indexes (they are not part of the question)."""
    info = classify(path, by_extension=True)
    standalone = info.kind is FileKind.KRAFT_SNAPSHOT or info.leftover is not None or info.base_offset is None
    task = SegmentTask(info.base_offset or 0, display, standalone=standalone, check_indexes=False)
    for report in runner.run([task]):
        yield FileCount(1, report.size, report.batches)
        yield from report.findings


class FileCount(NamedTuple):
    """Files looked at (and, for record files named alone, their bytes and batches) for the total summary."""

    n: int
    bytes: int = 0
    batches: int = 0


POOLED_FROM = 1 << 20
"""Record bytes a unit of work (a partition, a file named alone) holds at least for :class:`Runner` to run it in a
thread of the pool: below that its checks are mostly Python holding the GIL (listing, small files, the loader's
state), and a second thread only adds GIL hand-offs at each system call. Measured on 10,000 one-batch partitions:
``-j 2`` in threads cost 1.6x the CPU of ``-j 1`` and more wall time (``bench/bench_linear.py``)."""


class Runner:
    """Runs segment checks in the calling thread; with ``jobs > 1``, :meth:`ordered` runs units of work (a
    partition, a file named alone) in a pool of ``jobs`` threads, their values in the order of the units (those
    :meth:`worth_a_thread`; the others in the calling thread when their turn comes).

    Threads, not processes: a partition's checks feed its load in the thread that checks it (one read of each
    segment, as with one job), nothing is pickled or imported again, and the native core releases the GIL around
    its byte work (reading, CRCs, decompression, record decode: ``Python::detach`` in ``native/src``), as file reads
    do. A partition is the unit: its load replays its segments in offset order."""

    def __init__(self, options: VerifyOptions, progress: Callable[[int], None] | None,
                 check: SegmentCheck = check_log_file) -> None:
        self.options, self.progress, self.check = options, progress, check
        self.shown = progress  # the progress bar's, if any
        self.pool: ThreadPoolExecutor | None = None
        self.stopped = False  # set once by close(), read by the pool's threads

    def _advance(self, n: int) -> None:
        """The progress of a pooled work's checks (called window by window): where a stop ends them."""
        if self.stopped:
            raise _Stopped
        if self.shown is not None:
            self.shown(n)

    def ordered(self, works: Iterable[tuple[Callable[[], Iterable[Any]], bool | Callable[[], bool]]]) -> Iterator[Any]:
        """The values of each work ``(function, pooled)`` in order (``pooled``: a bool, or a predicate asked only where
        there is a pool). Without a pool, each is run when its turn comes; with one, a pooled work runs in a
        thread up to ``2 * jobs`` works ahead of the one being yielded, its values listed whole (bounded: a
        file's findings are capped by code), and the others (a log dir, whose partitions are works of their own)
        in this thread when their turn comes."""
        rest = iter(works)
        head = list(itertools.islice(rest, 2))
        todo = itertools.chain(head, rest)
        if self.options.jobs < 2 or len(head) < 2:  # one work: nothing to run beside it
            for function, _pooled in todo:
                yield from function()
            return
        if self.pool is None:
            # Here, not at the top: a segment named alone (the start-up figure) needs no pool, nor logging and queue.
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(self.options.jobs, thread_name_prefix="kafkatool-verify")
            self.progress = self._advance
        pool, ahead = self.pool, 2 * self.options.jobs
        window: deque[Future[list[Any]] | Callable[[], Iterable[Any]]] = deque()  # a work to run here is callable

        def fill() -> None:
            while len(window) < ahead and (work := next(todo, None)) is not None:
                function, pooled = work
                if pooled if pooled.__class__ is bool else pooled():
                    window.append(pool.submit(_listed, function))
                else:
                    window.append(function)

        fill()
        while window:
            work = window.popleft()
            if callable(work):
                fill()
                yield from work()
            else:
                values = work.result()
                fill()
                yield from values

    def worth_a_thread(self, unit: PartitionDir | FoundFile) -> bool:
        """With ``jobs > 1``: whether ``unit``'s record files hold :data:`POOLED_FROM` bytes (a ``stat`` each until
        they do; never with one job)."""
        if self.options.jobs < 2:
            return False
        if isinstance(unit, FoundFile):  # its kind is classify(path, by_extension=True)'s (walk.discover)
            return unit.kind.holds_records and file_size(unit.path) >= POOLED_FROM
        total = 0
        for path, _display in unit.files:
            if holds_records(path.name):
                total += file_size(path)
                if total >= POOLED_FROM:
                    return True
        return False

    def run(self, tasks: list[SegmentTask], load: PartitionLoad | None = None, check: CheckOptions | None = None,
            open_file: Opener = open_local) -> Iterator[SegmentReport]:
        """The tasks' reports in order, checked in this thread; ``load``: the partition being loaded, fed by the
        checks' scans (one read of each segment); ``check``: the partition's own (its index interval), else the
        options'; ``open_file``: how the checks open the tasks' files (bytes read already, served again)."""
        check = check or self.options.check
        for task in tasks:
            tap = load.tap(task.log) if load is not None and task.log is not None else None
            yield self.check(task, check, self.progress, open_file, tap=tap)

    def skipped(self, paths: Iterable[Path]) -> None:
        """Tell the progress bar the record files of ``paths`` that are not read (it counts every record file)."""
        if self.shown is not None:
            self.progress(sum(file_size(p) for p in paths if holds_records(p.name)))

    def close(self) -> None:
        """Stop the pool's works (each at its next window: no thread outlives the command, Ctrl-C does not wait
        for a partition to end) and wait for its threads."""
        if self.pool is not None:
            self.stopped = True
            self.pool.shutdown(wait=True, cancel_futures=True)


class _Stopped(Exception):
    """A pooled work ended by :meth:`Runner.close` (caught by :func:`_listed`: its values are not wanted)."""


def _listed(function: Callable[[], Iterable[Any]]) -> list[Any]:
    """A pooled work's values, or none when it was stopped."""
    try:
        return list(function())
    except _Stopped:
        return []


def default_jobs() -> int:
    """``--jobs`` when not given: the CPUs this process may run on (its affinity, as ``os.process_cpu_count``
    of Python 3.13), at most 8 (each job holds a partition's values, and past that the GIL-held part of the work
    dominates)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))
