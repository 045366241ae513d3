"""``verify`` of record files named alone: a segment's ``.log``, a KRaft snapshot, a leftover ``.swap``.

Such a file is checked batch by batch (:func:`kafkatool.log_check.check_log_file`) and needs nothing of a partition:
the CLI runs :func:`verify_units` when discovery found only such files (:func:`lone_record_files`), so that a segment
checked alone imports none of the loader, the index and small-file readers, or the partition's checks (they cost
more to import than checking a small segment: ``tests/test_startup.py``). Anything else is
:func:`kafkatool.verify.verify_paths`'s, which takes its values, its runner and this check of a record file from here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .filetypes import FileKind, classify, file_size
from .log_check import CheckOptions, SegmentReport, SegmentTask, check_log_file
from .model import Finding
from .walk import FoundFile, Unit

if TYPE_CHECKING:
    from .loader import PartitionLoad

SegmentCheck = Callable[..., SegmentReport]
"""``(task, options, progress, tap=...)``: a segment's check, run by :class:`Runner` in this process or a pool's
(:func:`kafkatool.log_check.check_log_file` for a record file alone, :func:`kafkatool.segment_check.check_segment`
with its indexes)."""


class VerifyOptions(NamedTuple):
    """``verify``'s options: how each segment is checked, and in how many processes."""

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


def tally(units: list[Unit], items_of: Callable[[Any], Iterator[Any]], runner: Runner,
          partition_summary: type | tuple[()] = ()) -> Iterator[Any]:
    """The values of each unit (``items_of``; discovery's findings as they are), each counted into the final
    :class:`VerifySummary` (a ``partition_summary`` as a partition, a :class:`FileCount` not shown), then that summary;
    the runner closed at the end."""
    total = VerifySummary()
    try:
        for unit in units:
            items = iter([unit]) if isinstance(unit, Finding) else items_of(unit)
            for item in items:
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


class Runner:
    """Runs segment checks in this process, or in a pool of ``jobs`` processes, results in task order."""

    def __init__(self, options: VerifyOptions, progress: Callable[[int], None] | None,
                 check: SegmentCheck = check_log_file) -> None:
        self.options, self.progress, self.check = options, progress, check
        self.pool = None
        if options.jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn: no fork of a process that may run a progress thread; workers import little.
            self.pool = ProcessPoolExecutor(options.jobs, mp_context=multiprocessing.get_context("spawn"))

    def run(self, tasks: list[SegmentTask], load: PartitionLoad | None = None, check: CheckOptions | None = None
            ) -> Iterator[SegmentReport]:
        """The tasks' reports in order; ``load``: the partition being loaded, fed by the checks' scans in this
        process (one read of each segment), left to read the segments itself with a pool; ``check``: the partition's
        own (its index interval), else the options'."""
        check = check or self.options.check
        if self.pool is None:
            for task in tasks:
                tap = load.tap(task.log) if load is not None and task.log is not None else None
                yield self.check(task, check, self.progress, tap=tap)
            return
        futures = [self.pool.submit(self.check, task, check) for task in tasks]
        for task, fut in zip(tasks, futures, strict=True):
            report = fut.result()
            if self.progress is not None:
                self.progress(report.size if task.log else 0)
            yield report

    def skipped(self, paths: Iterable[Path]) -> None:
        """Tell the progress bar the record files of ``paths`` that are not read (it counts every record file)."""
        if self.progress is not None:
            self.progress(sum(file_size(p) for p in paths if classify(p).kind.holds_records))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
