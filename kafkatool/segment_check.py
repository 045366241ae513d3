"""Checking one segment (``.log`` with its ``.index``, ``.timeindex``, ``.txnindex``) on its own.

This is the unit of work of ``verify`` and of the Spark scan:
a pure function from file paths to a picklable :class:`~kafkatool.log_check.SegmentReport`. Everything that needs
the segments before it (offset continuity across segments, producer state, leader epochs, checkpoints)
is left as small summaries in the report for :mod:`kafkatool.verify` to join in offset order.

Here the index files are read (``OffsetIndex``/``TimeIndex``/``TransactionIndex.sanityCheck`` through
:mod:`kafkatool.smallfiles`); the log's one pass, which merges their entries with the batches and judges them, is
:mod:`kafkatool.log_check`'s.

Each index gets a verdict: ``sparse`` (what the broker writes: ``OffsetIndex`` and ``TimeIndex`` are sparse by
design, an entry after every ``index.interval.bytes`` of appends (``LogSegment.append``), so 3 entries for 9
batches is a whole index that Kafka accepts), ``usable`` (every lookup still lands at or before its batch, but
it is sparser or coarser than the broker's), ``broken`` (a lookup can go wrong, or the broker's own sanity check
rejects it), or ``missing``.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable

from .filetypes import FileKind, FileTooLarge, read_to_hole
from .log_check import (
    CheckOptions,
    Entries,
    IndexVerdict,
    OffsetEntries,
    Opener,
    SegmentReport,
    SegmentTask,
    Sink,
    Tap,
    check_log_file,
    open_local,
)
from .model import Finding
from .smallfiles import (
    OFFSET_SLOT,
    TIME_SLOT,
    AbortedTxn,
    index_slots,
    offset_index_sanity,
    offset_slots,
    parse_small_file,
    slots_written,
    time_index_sanity,
    too_large,
)

# --- index files -----------------------------------------------------------------------------------------


def _read_index(path: str, sink: Sink, unit: int, open_file: Opener = open_local) -> tuple[bytes, int] | None:
    """:func:`kafkatool.filetypes.read_to_hole` through ``open_file``: the bytes of an index file up to a trailing
    hole, rounded up to its ``unit`` (slot size), and the file's size; None when it cannot be read (a finding says
    why)."""
    try:
        return read_to_hole(path, unit, open_file=open_file)
    except FileTooLarge as exc:
        sink.add(too_large(FileKind.INDEX, path, exc.size))
    except OSError as exc:
        sink("io-error", path, None, f"cannot read: {exc.strerror or exc}")
    return None


def load_offset_index(path: str, base_offset: int, active: bool, sink: Sink,
                      open_file: Opener = open_local) -> tuple[OffsetEntries, IndexVerdict]:
    """The entries of an ``.index`` worth merging, and a first verdict.

    Decoded in bulk with ``array`` (a full 10 MiB index is 1.3 M entries; this runs in C):
    ``tests/test_verify.py`` checks it against the Construct-derived reader on every corpus index.
    """
    empty = OffsetEntries(base_offset, array("i"), array("i"))
    read = _read_index(path, sink, OFFSET_SLOT, open_file)
    if read is None:
        return empty, IndexVerdict("broken")
    data, size = read
    if not size:  # no slot (a segment with less than index.interval.bytes of batches): what follows would say so
        return empty, IndexVerdict("sparse")
    rel, pos, used, written, n = offset_slots(data, size)
    verdict = IndexVerdict("sparse", slots=n)
    if problem := offset_index_sanity(data, path, size):
        sink.add(problem)
        verdict.status = "broken"
    if used < n:
        tail = data[used * 8: written * 8]  # from ``written`` on every byte is zero (slots_written)
        if tail.count(0) != len(tail):
            bad = used + next(i for i in range(n - used) if rel[used + i] or pos[used + i])
            sink("index-entries-after-empty-slot", path, bad * 8,
                 f"slot {bad} holds an entry after the never-written slot {used}: the index is scrambled")
            verdict.status = "broken"
        else:
            _untrimmed(sink, path, used, n, active, "index")
    rel, pos = rel[:used], pos[:used]
    if used and (min(rel) < 0 or min(pos) < 0):
        i = next(i for i in range(used) if rel[i] < 0 or pos[i] < 0)
        sink("index-entry-invalid", path, i * 8,
             f"entry {i} has a negative {'relative offset' if rel[i] < 0 else 'position'} "
             f"({rel[i]}, {pos[i]}): garbage")
        verdict.status = "broken"
        return empty, verdict
    entries = OffsetEntries(base_offset, rel, pos)
    if not (all(map(operator.lt, rel, rel[1:])) and all(map(operator.lt, pos, pos[1:]))):
        i = next(i for i in range(1, used) if rel[i] <= rel[i - 1] or pos[i] <= pos[i - 1])
        (o1, p1), (o0, p0) = entries.entry(i), entries.entry(i - 1)
        sink("index-not-increasing", path, i * 8,
             f"entry {i} ({o1} at {p1}) does not follow entry {i - 1} ({o0} at {p0}): offsets and positions "
             "must both increase")
        verdict.status = "broken"
        return OffsetEntries(base_offset, rel[:i], pos[:i]), verdict
    verdict.entries = len(entries)
    return entries, verdict


def load_time_index(path: str, base_offset: int, active: bool, sink: Sink,
                    open_file: Opener = open_local) -> tuple[Entries, IndexVerdict]:
    """The entries (timestamp, absolute offset) of a ``.timeindex``, and a first verdict."""
    read = _read_index(path, sink, TIME_SLOT, open_file)
    if read is None:
        return [], IndexVerdict("broken")
    data, size = read
    n = size // TIME_SLOT
    # Slots from ``written`` on are all zero bytes (a crashed broker's preallocated ~870 k of them, a hole not even
    # read): counted, not decoded. A zero slot is never-written (relative offset 0), so the first never-written slot
    # is in the decoded ones or is slot ``written``.
    written = slots_written(data, min(n, len(data) // TIME_SLOT), TIME_SLOT)
    slots = list(index_slots(data[: written * 12], FileKind.TIME_INDEX))
    verdict = IndexVerdict("sparse", slots=n)
    used = written if written < n else n
    for i, (timestamp, relative) in enumerate(slots):
        if relative == 0 and (i > 0 or timestamp == 0):
            used = i
            break
    tail = slots[used:]  # the never-written slots among the decoded ones; the rest are zero
    untrimmed = used < n and all(s == (0, 0) for s in tail)
    problem = time_index_sanity(data, path, size)
    if problem and not (untrimmed and problem.code == "timeindex-last-timestamp-below-first"):
        # An untrimmed index fails this check by construction (last slot is zero); it is reported as such.
        sink.add(problem)
        verdict.status = "broken"
    if used < n:
        if not untrimmed:
            bad = next(i for i, s in enumerate(tail, used) if s != (0, 0))
            sink("timeindex-entries-after-empty-slot", path, bad * 12,
                 f"slot {bad} holds an entry after the never-written slot {used}: the index is scrambled")
            verdict.status = "broken"
        else:
            _untrimmed(sink, path, used, n, active, "time index")
    for i, (timestamp, relative) in enumerate(slots[:used]):
        if relative < 0 or timestamp < -1:
            sink("timeindex-entry-invalid", path, i * 12,
                 f"entry {i} has a negative {'relative offset' if relative < 0 else 'timestamp'} "
                 f"({timestamp}, {relative}): garbage")
            verdict.status = "broken"
            return [], verdict
    entries = [(t, base_offset + r) for t, r in slots[:used]]
    for i in range(1, len(entries)):
        if entries[i][0] <= entries[i - 1][0] or entries[i][1] < entries[i - 1][1]:
            sink("timeindex-not-increasing", path, i * 12,
                 f"entry {i} ({entries[i][0]} at offset {entries[i][1]}) does not follow entry {i - 1} "
                 f"({entries[i - 1][0]} at offset {entries[i - 1][1]}): timestamps must increase, offsets "
                 "must not go back")
            verdict.status = "broken"
            return entries[:i], verdict
    verdict.entries = len(entries)
    return entries, verdict


def _untrimmed(sink: Sink, path: str, used: int, slots: int, active: bool, what: str) -> None:
    if active:
        sink("index-preallocated", path, None,
             f"{what} uses {used} of {slots} preallocated slots: the active segment was not closed (broker "
             "running, or not shut down cleanly); the broker rebuilds it when it recovers the segment")
    else:
        sink("index-preallocated-rolled", path, None,
             f"{what} of a rolled segment uses {used} of {slots} preallocated slots: it was never trimmed "
             "(crash right after a roll?); the broker reads the zero slots as entries unless it recovers "
             "this segment")



# --- the segment ---------------------------------------------------------------------------------------


def check_segment(
    task: SegmentTask,
    options: CheckOptions = CheckOptions(),
    progress: Callable[[int], None] | None = None,
    open_file: Opener = open_local,
    tap: Tap | None = None,
) -> SegmentReport:
    """Check one segment and its indexes; see the module docstring. Never raises on bad data.

    ``open_file`` opens each of the task's files by the name the task gives (default: local files); the
    Spark data source passes a :mod:`pyarrow.fs` opener for URLs. What it returns needs ``seek``/``tell``/
    ``read``/``readinto``; with ``fileno`` (a local file) control batches are re-read by position, without
    it every batch's bytes come with the scan.

    ``tap``: the log's scan items (batches, findings, in file order) pass through it before they are checked, so
    another reader of the same bytes (the partition loader, :meth:`kafkatool.loader.PartitionLoad.tap`) shares
    this one read of the file.
    """
    return check_log_file(task, options, progress, open_file, tap, indexes=_load_indexes)


def _load_indexes(task: SegmentTask, report: SegmentReport, sink: Sink, open_file: Opener) -> tuple[OffsetEntries,
                                                                                                  Entries]:
    """The segment's index files, read before its log: the ``.index`` and ``.timeindex`` entries to merge with the
    batches (each with a first verdict in the report), the ``.txnindex`` entries into the report."""
    base = task.base_offset
    offset_entries = OffsetEntries(base, array("i"), array("i"))
    time_entries: Entries = []
    if task.index is not None:
        offset_entries, report.index = load_offset_index(task.index, base, task.active, sink, open_file)
    if task.timeindex is not None:
        time_entries, report.timeindex = load_time_index(task.timeindex, base, task.active, sink, open_file)
    if task.txnindex is not None:
        report.txn_entries = _load_txn_index(task.txnindex, base, sink, open_file)
    return offset_entries, time_entries


def _load_txn_index(path: str, base_offset: int, sink: Sink, open_file: Opener = open_local) -> list[AbortedTxn]:
    read = _read_index(path, sink, 1, open_file)
    if read is None:
        return []
    data, size = read  # never preallocated: a hole in one is read as the zeros it holds
    items = list(parse_small_file(data + bytes(size - len(data)), FileKind.TXN_INDEX, path, base_offset))
    out = []
    for item in items:
        if isinstance(item, Finding):
            sink.add(item)
        else:
            out.append(item)
    return out

