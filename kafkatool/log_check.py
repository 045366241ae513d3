"""One segment's log checked batch by batch, as ``LogSegment.recover`` reads it, with its indexes merged as it passes.

The body of :func:`kafkatool.segment_check.check_segment` (which reads the indexes first) and, alone, the check of a
record file named on its own (a ``.log``, a KRaft snapshot, a ``.swap``: :mod:`kafkatool.verify_files`), which needs
none of the index readers. What is checked, per batch (one pass, streaming, bounded memory):

* framing, size, magic and CRC (CRC32C for v2, CRC32 for v0/v1) — :func:`kafkatool.records.scan`; a magic
  above 2, which the broker reads as v2 and keeps, is flagged here;
* offsets strictly increasing; gaps counted (legal after compaction, judged by the caller);
* v2 record count against ``lastOffsetDelta + 1`` (fewer is compaction, more is corruption);
* timestamps: none below -1, max >= first for CREATE_TIME, none far in the future;
* control batches decoded and checked (one record, known type, end-transaction markers only in
  transactional batches of a producer);
* with ``deep``: every batch decompressed and every record decoded, offsets and timestamps checked.

The index entries given are merged with the batch stream as it passes (entries sorted by position / offset), so a
10 MB index and a 1 GiB log never need more memory than the index entries, and judged once the log has passed:

* ``.index``: each entry points at the first byte of a batch, no earlier offset lives after it, its
  offset is the last offset of a batch at or after that position (Kafka writes the last offset of
  the append, the position of its first batch), and it is not beyond the log;
* ``.timeindex``: each ``(timestamp, offset)`` names a batch at which the running maximum timestamp
  of the segment became ``timestamp``; for a rolled segment the last entry is the segment's maximum
  (``onBecomeInactiveSegment``), which is what the broker reads back as its largest timestamp.
"""

from __future__ import annotations

import operator
import os
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from .filetypes import descriptor, open_regular, stream_size
from .findings import finding
from .model import (
    EVENT_BEGINS,
    EVENT_CONTROL,
    NO_MARKERS,
    Batch,
    Finding,
    Stretch,
    Trailing,
    column_batch,
    pushback,
)
from .records import RawBatch, RecordRun, ScanOptions, record_chunks, scan, stretch_bounds

if TYPE_CHECKING:  # the index readers are segment_check's: a record file checked alone needs none
    from .smallfiles import AbortedTxn

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_NEVER = 1 << 64  # an offset or position no batch reaches (a last offset can pass 2^63: a base near it + delta)
_tuple_new = tuple.__new__
TXN_MARKERS = ("ABORT", "COMMIT")
KRAFT_CONTROL = ("LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS")


class CheckOptions(NamedTuple):
    """How segments are checked: ``verify``'s options that reach each segment."""

    deep: bool = False                 # decompress and decode every record
    index_interval_bytes: int = 4096   # index.interval.bytes of the topic: Kafka's default (index_interval.DEFAULT,
                                       # not imported: it reads indexes); verify resolves it per partition there
    now_ms: int | None = None          # "now" for future timestamps; None: the wall clock
    future_tolerance_ms: int = 24 * 3600 * 1000
    max_findings_per_code: int = 100   # per file; the rest are counted in one summary finding
    scan: ScanOptions = ScanOptions()


Opener = Callable[[str], BinaryIO]
Tap = Callable[[Iterator[object]], Iterator[object]]


def open_local(path: str) -> BinaryIO:
    """The default :data:`Opener`: a local file, unbuffered (the scan reads through its own window)."""
    return open_regular(path, buffering=0)


def _preader(fh) -> Callable[[int, int], bytes] | None:
    """``pread(size, position)`` on a local file, without moving its position (the scan is reading it); None
    for other files (pyarrow's): there a positioned read can be a request of its own, so the check keeps
    the bytes of each batch from the scan instead."""
    fd = descriptor(fh)
    return None if fd is None else lambda size, position: os.pread(fd, size, position)


class SegmentTask(NamedTuple):
    """The files of one segment (paths as strings: picklable, and shown as given)."""

    base_offset: int
    log: str | None
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    active: bool = False        # the partition's last segment (the broker's active segment)
    standalone: bool = False    # a lone record file (KRaft snapshot, .swap): batch checks only
    check_indexes: bool = True  # False: a .log named alone; its indexes are not part of the question


@dataclass
class IndexVerdict:
    """How good one ``.index`` or ``.timeindex`` of the segment is (the table's index column)."""

    status: str                  # sparse | usable | broken | missing | empty
    entries: int = 0
    slots: int = 0               # entry slots in the file (more than entries: preallocated, untrimmed)
    worst_scan_bytes: int = 0    # the most bytes a lookup through this index scans

    def as_dict(self) -> dict:
        return {"status": self.status, "entries": self.entries, "slots": self.slots,
                "worst_scan_bytes": self.worst_scan_bytes}


@dataclass
class SegmentReport:
    """What one segment told us; joined in offset order by :mod:`kafkatool.verify`."""

    task: SegmentTask
    findings: list[Finding] = field(default_factory=list)
    size: int = 0
    valid_end: int = 0             # end of the last whole batch (where recovery would truncate)
    batches: int = 0
    records: int = 0               # from the batch headers (v2) or messages (v0/v1)
    first_offset: int | None = None
    last_offset: int | None = None
    max_timestamp: int = -1
    gaps: int = 0                  # holes in the offsets between batches
    missing_offsets: int = 0
    first_gap: tuple[int, int, int] | None = None  # (position, first missing offset, last missing offset)
    compacted_batches: int = 0     # v2 batches with fewer records than offsets (the cleaner's work)
    delete_horizon: bool = False   # a batch carries the cleaner's delete horizon
    legacy: bool = False           # v0/v1 entries present (they carry no leader epoch)
    epochs: list[tuple[int, int, int]] = field(default_factory=list)  # (epoch, first offset, position) changes
    # Transactions, resolved within the segment (see :func:`kafkatool.verify.join_transactions`):
    aborts: list[tuple[int, int | None, int, int]] = field(default_factory=list)  # pid, local first, marker, lso
    first_marker: dict[int, int] = field(default_factory=dict)   # pid -> offset of its first marker here
    ongoing: dict[int, int] = field(default_factory=dict)        # pid -> first offset, open at the end
    txn_entries: list[AbortedTxn] | None = None                   # the .txnindex (None: no file)
    index: IndexVerdict | None = None
    timeindex: IndexVerdict | None = None
    io_error: bool = False


class Sink:
    """Findings of one file, at most ``cap`` per code; the rest become one counting finding."""

    def __init__(self, out: list[Finding], cap: int) -> None:
        self.out, self.cap = out, cap
        self.counts: dict[tuple[str, str], int] = {}  # not a Counter: one per segment, its __init__ costs 3 calls
        self.first: dict[tuple[str, str], Finding] = {}

    def add(self, f: Finding) -> None:
        key = (f.path, f.code)
        n = self.counts[key] = self.counts.get(key, 0) + 1
        if n <= self.cap:
            self.out.append(f)
        elif n == self.cap + 1:
            self.first[key] = f

    def __call__(self, code: str, path: str, position: int | None, message: str) -> None:
        self.add(finding(code, path, position, message))

    def close(self) -> None:
        for (path, code), f in self.first.items():
            more = self.counts[(path, code)] - self.cap
            self.out.append(finding(code, path, f.position,
                                    f"... and {more} more {code} findings in this file, from here on "
                                    f"(--max-findings {self.cap})"))



Entries = list[tuple[int, int]]


class OffsetEntries(NamedTuple):
    """The usable entries of an ``.index``: entry ``i`` is (``base + relative[i]``, ``position[i]``)."""

    base: int
    relative: array
    position: array

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.relative)

    def entry(self, i: int) -> tuple[int, int]:
        return self.base + self.relative[i], self.position[i]



IndexLoader = Callable[["SegmentTask", "SegmentReport", "Sink", "Opener"], "tuple[OffsetEntries, Entries]"]
"""Reads a segment's index files into its report before its log is checked: (offset entries, time entries) to merge
(:func:`kafkatool.segment_check.check_segment` gives it)."""


def check_log_file(
    task: SegmentTask,
    options: CheckOptions = CheckOptions(),
    progress: Callable[[int], None] | None = None,
    open_file: Opener = open_local,
    tap: Tap | None = None,
    indexes: IndexLoader | None = None,
) -> SegmentReport:
    """Check one segment's log, its index files first read by ``indexes``; without it a record file alone (``verify``
    of a ``.log``, KRaft snapshot or ``.swap`` named on its own: batch checks only). Never raises on bad data.
    ``open_file``, ``tap``: as :func:`kafkatool.segment_check.check_segment` takes them."""
    report = SegmentReport(task)
    sink = Sink(report.findings, options.max_findings_per_code)
    base = task.base_offset
    if base > _INT64_MAX and not task.standalone:
        sink("base-offset-overflow", task.log or task.index or task.timeindex, None,
             f"named with offset {base}, above 2^63-1: the broker cannot parse the name (LogFileUtils."
             "offsetFromFileName, Long.parseLong) and fails to load the partition; not checked")
        sink.close()
        return report
    offset_entries = OffsetEntries(base, array("i"), array("i"))
    time_entries: Entries = []
    if indexes is not None and not task.standalone:
        offset_entries, time_entries = indexes(task, report, sink, open_file)
    if task.log is not None:
        try:
            _check_log(task, options, report, sink, offset_entries, time_entries, progress, open_file, tap)
        except OSError as exc:
            report.io_error = True
            sink("io-error", task.log, None, f"cannot read: {exc.strerror or exc}")
    sink.close()
    return report


def _check_log(
    task: SegmentTask,
    options: CheckOptions,
    report: SegmentReport,
    sink: Sink,
    offset_entries: OffsetEntries,
    time_entries: list[tuple[int, int]],
    progress: Callable[[int], None] | None,
    open_file: Opener = open_local,
    tap: Tap | None = None,
) -> None:
    """The log's one pass: each batch checked as ``LogSegment.recover`` takes it (size and CRC in the scan, offsets
    following each other, the record count, timestamps, leader-epoch changes, transactions and control batches),
    with the ``.index`` and ``.timeindex`` entries merged as the batches pass (:class:`_IndexMerge`) and judged at the
    end (:func:`_judge_indexes`).
    """
    path = task.log
    assert path is not None
    deep = options.deep
    now = options.now_ms if options.now_ms is not None else int(time.time() * 1000)
    future_limit = now + options.future_tolerance_ms
    base_offset = task.base_offset
    standalone = task.standalone

    merge = _IndexMerge(offset_entries, time_entries)
    next_ipos = merge.next_ipos()    # the position of the next .index entry
    next_event = merge.next_toff     # the next offset an index entry waits for: min(next_toff, pending_exact)

    prev_last = base_offset - 1
    seg_max = -1
    epoch_now = None
    epochs = report.epochs
    batches = records = 0
    gaps = missing = compacted = 0
    legacy = False
    first_gap = None
    ongoing = report.ongoing
    first_marker = report.first_marker
    aborts = report.aborts
    valid_end = 0
    first_offset = None

    with open_file(path) as fh:
        report.size = stream_size(fh)
        pread = _preader(fh)
        # The loop runs once per batch over terabytes: locals only, and the common case (a plain v2 batch
        # following the previous one) takes one comparison per check; anything unusual branches out.
        batch = None
        keep_raw = deep or pread is None
        raw_of_deep: list[bytes] = [b""]  # the current batch's bytes, when kept (the decoding happens in _deep)
        items = _log_items(fh, path, options, sink, progress, tap, keep_raw, raw_of_deep)
        back: list = []  # the rest of a stretch, to take batch by batch from where something happens in it
        stream = pushback(items, back)
        damage = None  # where the last finding of the scan is: the damage, when a resynchronisation follows
        for item in stream:
            if item.__class__ is Batch:
                batch = item
            elif item.__class__ is Stretch:
                # Batches that follow each other (model.Stretch): the loop below would only count them and note
                # where a producer's transaction begins and where one of the stretch's markers ends it, up to the
                # first that reaches an index entry (by offset or position) or the future; that one comes back as a
                # Batch, the rest of the stretch after it.
                columns, lo, hi, markers = item
                k, last, top, count, next_ipos, next_event = merge.stretch(columns, lo, hi, next_ipos, next_event,
                                                                           future_limit, base_offset, seg_max)
                if k > lo:
                    batches += k - lo
                    records += count
                    prev_last = last
                    if top > seg_max:
                        seg_max = top
                    _stretch_transactions(columns, lo, k, markers, ongoing, first_marker, aborts)
                if k < hi:
                    if k + 1 < hi:
                        back.append(_tuple_new(Stretch, (columns, k + 1, hi, markers)))
                    back.append(item.batch(k))
                else:
                    batch = item  # the last batch seen, made a Batch after the loop if nothing follows
                continue
            elif item.__class__ is Trailing:
                continue
            else:
                if item.code == "resynchronised":  # the segment ends at the damage, as LogSegment.recover cuts it
                    _after_damage(stream, item, damage, sink)
                    break
                damage = item.position
                sink.add(item)
                continue
            (position, base, last, size, magic, _crc, _ok, attrs, _codec, _tstype, first_ts, max_ts,
             count, epoch, pid, _pepoch, _seq, _txn, _control, _horizon) = batch
            batches += 1
            if magic > 2:
                _magic_above_v2(sink, path, position, magic)
            # offsets: each batch follows the previous one (prev_last is the last offset before this batch)
            if base != prev_last + 1:
                if batches == 1:
                    first_offset = base
                    _first_batch_offset(sink, path, position, base, base_offset, standalone)
                elif base <= prev_last:
                    sink("offset-not-increasing", path, position,
                         f"batch offsets {base}..{last} do not follow the previous batch (last offset {prev_last})")
                else:
                    gaps += 1
                    missing += base - prev_last - 1
                    if first_gap is None:
                        first_gap = (position, prev_last + 1, base - 1)
            # record count vs offsets (v2: lastOffsetDelta + 1; a v0/v1 wrapper: its inner offsets)
            if count != last - base + 1:
                compacted += _fewer_records(sink, path, position, base, last, count)
            records += count
            if epoch != epoch_now:  # leader epoch changes (LeaderEpochFileCache.assign; v0/v1 carry none: -1)
                epoch_now = epoch
                if magic >= 2:
                    epochs.append((epoch, base, position))
                else:
                    legacy = True
            if not -1 <= first_ts <= max_ts <= future_limit:
                _timestamp_finding(sink, path, position, first_ts, max_ts, attrs, future_limit, magic)
            # index entries named by offset: the time index, and an offset-index entry awaiting its batch end
            if last >= next_event:
                next_event = merge.by_offset(sink, task.timeindex or path, base, last, seg_max, max_ts)
            if max_ts > seg_max:
                seg_max = max_ts
            # the offset index, by position: an entry must point at the first byte of a batch
            if position >= next_ipos:
                next_ipos, next_event = merge.at_position(sink, report, task.index or path, position, size, base, last,
                                                          prev_last, next_event)
            # transactions, control batches, the delete horizon (attributes 0x10, 0x20, 0x40)
            if attrs & 0x70 and magic >= 2:
                _transaction_batch(path, batch, raw_of_deep[0] if keep_raw else None, pread, options, sink, report)
            prev_last = last
        if batch.__class__ is Stretch:
            batch = batch.batch(batch.hi - 1)
        if batch is not None:
            valid_end = batch.position + batch.size
            merge.largest = max(merge.largest, batch.size)
            if first_offset is None:
                first_offset = base_offset
            _check_offset_range(sink, path, batch.position, prev_last, base_offset, standalone)

    merge.release()
    report.batches, report.records = batches, records
    report.first_offset = first_offset
    report.last_offset = prev_last if first_offset is not None else None
    report.max_timestamp = seg_max
    report.gaps, report.missing_offsets, report.first_gap = gaps, missing, first_gap
    report.compacted_batches, report.legacy = compacted, legacy
    report.valid_end = valid_end
    if not standalone and task.check_indexes:
        _judge_indexes(task, options, report, sink, offset_entries, (merge.oi, merge.pending_exact, merge.inexact,
                       merge.largest), time_entries, (merge.ti, merge.time_usable, merge.time_inexact, seg_max))


class _IndexMerge:
    """The ``.index`` and ``.timeindex`` entries merged with the log's batches as they pass: the index checks (an entry
    names a batch as ``LogSegment.append`` writes it: ``OffsetIndex`` the last offset of an append at its first
    batch's position, ``TimeIndex`` the batch at which the segment's max timestamp grew), and what the merges found,
    judged once the log has passed (:func:`_judge_indexes`). The batch loop keeps two numbers as locals, the position
    of the next ``.index`` entry and the next offset an entry waits for, and calls in here only when a batch reaches
    one, or for a :class:`~kafkatool.model.Stretch` (the native core passes the entries a stretch names exactly)."""

    __slots__ = ("offsets", "oi", "n_oi", "irel_bytes", "ipos_bytes", "pending_exact", "inexact", "largest", "times",
                 "ti", "n_ti", "next_toff", "time_stamps", "time_offsets", "time_in_native", "time_usable",
                 "time_inexact")

    def __init__(self, offset_entries: OffsetEntries, time_entries: Entries) -> None:
        # Offset-index merge state: the next entry by position.
        self.offsets, self.oi, self.n_oi = offset_entries, 0, len(offset_entries.position)
        self.irel_bytes = memoryview(offset_entries.relative).cast("B")  # for the native core
        self.ipos_bytes = memoryview(offset_entries.position).cast("B")
        self.pending_exact = _NEVER  # an entry's offset waiting for the batch that ends at or after it
        self.inexact = 0
        self.largest = 0  # largest batch at an index entry, or the last: the broker's entry spacing
        # Time-index merge state: the next entry by offset.
        self.times, self.ti, self.n_ti = time_entries, 0, len(time_entries)
        self.next_toff = time_entries[0][1] if self.n_ti else _NEVER
        self.time_stamps, self.time_offsets = _time_columns(time_entries)  # for the native core
        # else a stretch stops at every time-index entry, as at the others
        self.time_in_native = len(self.time_offsets) == 8 * self.n_ti
        self.time_usable = True
        self.time_inexact = 0

    def next_ipos(self) -> int:
        return self.offsets.position[self.oi] if self.oi < self.n_oi else _NEVER

    def stretch(self, columns, lo: int, hi: int, next_ipos: int, next_event: int, future_limit: int, base_offset: int,
                seg_max: int) -> tuple[int, int, int, int, int, int]:
        """Batches ``lo..hi`` of a stretch up to the first that reaches an index entry (by offset or position) or the
        future: ``(k, last offset, max timestamp, records, next_ipos, next_event)``, batch ``k`` the one reached."""
        k, last, top, count, _end, oi_passed, largest, ti_passed = columns.advance_indexed(
            lo, hi, self.pending_exact if self.time_in_native else next_event, future_limit, base_offset,
            self.irel_bytes, self.ipos_bytes, self.oi, self.time_stamps, self.time_offsets, self.ti, seg_max)
        if k > lo:
            if oi_passed != self.oi:  # offset-index entries naming a batch of it exactly, as the broker writes them
                self.oi = oi_passed
                next_ipos = self.next_ipos()
                if largest > self.largest:
                    self.largest = largest
            if ti_passed != self.ti:  # time-index entries naming a batch of it exactly (its new max timestamp)
                self.ti = ti_passed
                self.next_toff = self.times[self.ti][1] if self.ti < self.n_ti else _NEVER
                next_event = min(self.next_toff, self.pending_exact)
        return k, last, top, count, next_ipos, next_event

    def by_offset(self, sink: Sink, where: str, base: int, last: int, seg_max: int, max_ts: int) -> int:
        """The entries named by offset that the batch ``base..last`` reaches: the time index's, and an offset-index
        entry awaiting the end of its append; the next offset an entry waits for."""
        if last >= self.pending_exact:
            if last != self.pending_exact and base <= self.pending_exact:
                self.inexact += 1
            self.pending_exact = _NEVER
        if last >= self.next_toff:
            self.ti, wrong, n_inexact = _time_entries_reached(sink, where, self.times, self.ti, last, seg_max, max_ts)
            self.time_usable = self.time_usable and not wrong
            self.time_inexact += n_inexact
            self.next_toff = self.times[self.ti][1] if self.ti < self.n_ti else _NEVER
        return min(self.next_toff, self.pending_exact)

    def at_position(self, sink: Sink, report: SegmentReport, where: str, position: int, size: int, base: int,
                    last: int, prev_last: int, next_event: int) -> tuple[int, int]:
        """The offset index, by position: the entries up to the batch at ``position`` (:func:`_offset_entries_at`);
        ``(next_ipos, next_event)``."""
        if size > self.largest:
            self.largest = size
        self.oi, pending, n_inexact = _offset_entries_at(sink, report, where, self.offsets, self.oi, position, base,
                                                         last, prev_last)
        self.inexact += n_inexact
        if pending != _NEVER:
            self.pending_exact = pending
            next_event = min(next_event, pending)
        return self.next_ipos(), next_event

    def release(self) -> None:
        self.irel_bytes.release()
        self.ipos_bytes.release()


def _magic_above_v2(sink: Sink, path: str, position: int, magic: int) -> None:
    """A magic above 2 is read as v2 (:func:`kafkatool.records.scan`, as ``FileLogInputStream.nextBatch`` does): the
    CRC skips the magic."""
    sink("magic-above-v2", path, position,
         f"magic byte {magic}: the broker reads it as a v2 batch and its recovery keeps it "
         "(DefaultRecordBatch.ensureValid checks the size and the CRC, which does not cover the magic), "
         "but clients and tools reading it will reject or misread it")


def _fewer_records(sink: Sink, path: str, position: int, base: int, last: int, count: int) -> int:
    """1 for a batch with fewer records than offsets (the cleaner's work: its offsets stay), 0 after a finding for
    one with more, or a negative count."""
    if count > last - base + 1 or count < 0:
        sink("record-count-mismatch", path, position,
             f"{count} records declared for {last - base + 1} offsets (lastOffsetDelta {last - base})")
        return 0
    return 1


def _first_batch_offset(sink: Sink, path: str, position: int, base: int, base_offset: int, standalone: bool) -> None:
    """The first batch of a segment begins at its base offset or later (``LogSegment.ensureOffsetInRange``: an offset
    below the base does not fit the segment's relative offsets)."""
    if base < base_offset and not standalone:
        sink("offset-below-segment-base", path, position,
             f"first batch starts at offset {base}, below the segment's base offset {base_offset} (file name)")


def _transaction_batch(path: str, batch: Batch, raw: bytes | None, pread, options: CheckOptions, sink: Sink,
                       report: SegmentReport) -> None:
    """A transactional, control or delete-horizon batch (attributes 0x10, 0x20, 0x40) as ``ProducerStateManager``
    takes it: a producer's transaction begins at its first transactional batch, a control batch's marker ends it
    (:func:`_control_batch`; rare and small: its bytes read again, ``raw`` when kept, rather than keep every
    batch's)."""
    attrs, pid = batch[7], batch[14]
    ongoing = report.ongoing
    if attrs & 0x20:
        data = raw if raw is not None else pread(batch[3], batch[0])
        _control_batch(path, batch, data, options, sink, ongoing, report.first_marker, report.aborts)
    elif attrs & 0x10 and pid >= 0 and pid not in ongoing:
        ongoing[pid] = batch[1]
    if attrs & 0x40:
        report.delete_horizon = True


def _judge_indexes(task: SegmentTask, options: CheckOptions, report: SegmentReport, sink: Sink,
                   offset_entries: OffsetEntries, offset_merge: tuple, time_entries: list[tuple[int, int]],
                   time_merge: tuple) -> None:
    """The ``.index`` and ``.timeindex`` judged once the log has passed (``OffsetIndex``/``TimeIndex.sanityCheck``
    and what the broker's lookups would make of their entries), from where the merges with the log left them; a
    missing one said so."""
    if report.index is None:
        report.index = _missing(task, options, report, sink, "index")
    else:
        _finish_offset_index(task, options, report, sink, offset_entries, *offset_merge)
    if report.timeindex is None:
        report.timeindex = _missing(task, options, report, sink, "timeindex")
    else:
        _finish_time_index(task, options, report, sink, time_entries, *time_merge)


def _after_damage(items: Iterator, found: Finding | None, damage: int | None, sink: Sink) -> None:
    """The rest of a log after its framing was lost and found again (``records.scan`` with ``resynchronise``): its
    intact batches (a valid CRC: what ``repair --salvage`` copies) counted, not checked as the segment's
    (``LogSegment.recover`` truncates the segment at the damage and drops them), and each resynchronisation reported
    with what follows it up to the next (their findings after it)."""
    while found is not None:
        n, first, last, later, again, next_damage = 0, None, None, [], None, damage
        for item in items:
            cls = item.__class__
            if cls is Stretch:
                n += item.hi - item.lo
                if first is None:
                    first = item.batch(item.lo).base_offset
                last = item.batch(item.hi - 1).last_offset
            elif cls is Batch and item.crc_valid:  # a damaged one has its own finding
                n += 1
                if first is None:
                    first = item.base_offset
                last = item.last_offset
            elif cls is Finding:
                if item.code == "resynchronised":
                    again = item
                    break
                next_damage = item.position
                later.append(item)
        offsets = f" (offsets {first}..{last})" if first is not None else ""
        sink(found.code, found.path, found.position,
             f"{n} intact batches{offsets} from byte {found.position} on, after the damage at byte {damage}: "
             f"LogSegment.recover truncates the segment at byte {damage} and drops them; repair --salvage keeps "
             "a copy")
        for f in later:
            sink.add(f)
        found, damage = again, next_damage


def _log_items(fh, path: str, options: CheckOptions, sink: Sink, progress: Callable[[int], None] | None,
               tap: Tap | None, keep_raw: bool, raw_of_deep: list[bytes]) -> Iterator:
    """The log's scan items as :func:`_check_log` takes them: batches (runs of them as :class:`Stretch` es when their
    bytes need not be kept), findings; with ``keep_raw`` each batch's bytes in ``raw_of_deep[0]`` and, with
    ``--deep``, its records decoded and checked (:func:`_deep`); through ``tap`` when given."""
    deep = options.deep
    items = scan(fh, path, with_raw=keep_raw and not deep, decoded=deep, stretches=not keep_raw, resynchronise=True,
                 options=options.scan, progress=progress)
    if keep_raw:
        items = _deep(items, path, options, sink, raw_of_deep, check=deep)
    if tap is not None:
        items = tap(items)
    return items


def _time_columns(entries: Entries) -> tuple[memoryview, memoryview]:
    """A time index's timestamps and offsets as int64 bytes for the native core; none (every entry then judged batch
    by batch) where an offset does not fit 64 bits (a segment base near 2^63, from a file name)."""
    try:
        stamps, offsets = array("q", [t for t, _ in entries]), array("q", [o for _, o in entries])
    except OverflowError:
        stamps, offsets = array("q"), array("q")
    return memoryview(stamps).cast("B"), memoryview(offsets).cast("B")


def _sibling(log_path: str, ext: str) -> str:
    return log_path[: -len("log")] + ext if log_path.endswith(".log") else f"{log_path}.{ext}"


def _broken(report: SegmentReport) -> None:
    if report.index is not None:
        report.index.status = "broken"


def _stretch_transactions(columns, lo: int, hi: int, markers, ongoing, first_marker, aborts) -> None:
    """The transactions a stretch's batches ``lo:hi`` begin and end, in order (``ProducerStateManager``'s view, as
    the per-batch path below): each producer's first transactional data batch, and its first after each of its
    markers, begins its transaction; each marker (of a transactional batch with a producer id) ends it, as
    :func:`_control_batch`."""
    for i, pid, base, kinds in columns.producer_events(lo, hi, EVENT_BEGINS | EVENT_CONTROL):
        if kinds & EVENT_CONTROL:
            _end_transaction(pid, base, markers[i].control_type, ongoing, first_marker, aborts)
        elif pid >= 0 and pid not in ongoing:
            ongoing[pid] = base


def _time_entries_reached(sink, where: str, entries: Entries, ti: int, last: int, seg_max: int,
                          max_ts: int) -> tuple[int, bool, int]:
    """The ``.timeindex`` entries from ``ti`` whose offset the batch ending at ``last`` reaches. Each must name the
    batch at which the segment's running maximum timestamp became its timestamp (``LogSegment.append`` adds an
    entry when ``maxTimestampSoFar`` grows): one whose time an earlier batch already reached is wrong (a search
    for that time would skip it), one that differs from this batch's max timestamp inexact. Returns the next
    entry, whether one was wrong, and how many were inexact."""
    wrong, inexact = False, 0
    n = len(entries)
    while ti < n and last >= entries[ti][1]:
        t_e, o_e = entries[ti]
        if seg_max >= t_e:
            wrong = True
            sink("timeindex-entry-wrong", where, ti * 12,
                 f"entry {ti} ({t_e} at offset {o_e}): an earlier batch already has timestamp "
                 f"{seg_max}; a search for that time would skip it")
        elif max_ts != t_e:
            inexact += 1
        ti += 1
    return ti, wrong, inexact


def _offset_entries_at(sink, report: SegmentReport, where: str, entries: OffsetEntries, oi: int, position: int,
                       base: int, last: int, prev_last: int) -> tuple[int, int, int]:
    """The ``.index`` entries from ``oi`` up to the batch at ``position`` (offsets ``base..last``). An entry must
    point at the first byte of a batch (``OffsetIndex.lookup`` positions a read there), and its offset must not
    live in an earlier batch; the broker writes the last offset of an append at the position of its first batch
    (``LogSegment.append``), so an offset inside the batch is inexact. Returns the next entry, the offset of an
    entry at this position that a later batch must end (``_NEVER``: none), and how many were inexact."""
    pending, inexact = _NEVER, 0
    irel, ipos = entries.relative, entries.position
    n = len(ipos)
    while oi < n and ipos[oi] < position:
        o_e, p_e = entries.base + irel[oi], ipos[oi]
        sink("index-entry-not-batch-start", where, oi * 8,
             f"entry {oi} (offset {o_e}) points at position {p_e}, which is not the start of a batch")
        _broken(report)
        oi += 1
    if oi < n and ipos[oi] == position:
        o_e = entries.base + irel[oi]
        if o_e <= prev_last:  # the offset lives in an earlier batch
            sink("index-entry-points-too-far", where, oi * 8,
                 f"entry {oi} (offset {o_e}) points at position {position}, a batch starting at "
                 f"offset {base}: a lookup of offset {o_e} would not find it")
            _broken(report)
        elif last >= o_e:
            if last != o_e and base <= o_e:
                inexact += 1
        else:
            pending = o_e
        oi += 1
    return oi, pending, inexact


def _check_offset_range(sink, path: str, position: int, last: int, base_offset: int, standalone: bool) -> None:
    """The segment's last offset against what its index can address (``LogSegment.ensureOffsetInRange``: an
    offset more than 2^31-1 above the base cannot be an index entry's relative offset) and the 64-bit limit."""
    if last > base_offset + _INT32_MAX and not standalone:
        sink("offset-beyond-segment-range", path, position,
             f"offsets up to {last} are more than 2^31-1 above the segment base {base_offset}: "
             "the index cannot address them")
    elif last >= _INT64_MAX:
        sink("offset-beyond-segment-range", path, position,
             f"offsets up to {last}: the next offset passes 2^63-1 (offsets are signed 64-bit)")


def _finish_offset_index(task, options, report, sink, entries, oi, pending_exact, inexact, largest_batch) -> None:
    """The ``.index`` entries no batch reached, and how close the index is to what the broker writes."""
    verdict = report.index
    for i in range(oi, len(entries)):
        o_e, p_e = entries.entry(i)
        sink("index-entry-beyond-log", task.index, i * 8,
             f"entry {i} (offset {o_e}) points at position {p_e}, past the last whole batch (ends at "
             f"{report.valid_end}): the broker would start reading the next offset from there")
        verdict.status = "broken"
    if pending_exact != _NEVER and verdict.status != "broken":
        sink("index-entry-beyond-log", task.index, (oi - 1) * 8,
             f"the last entry's offset {pending_exact} is beyond the segment's last offset {report.last_offset}: "
             "the broker derives the next offset to write from it")
        verdict.status = "broken"
    positions = list(entries.position[:oi])
    spans = [b - a for a, b in zip([0, *positions], [*positions, report.valid_end], strict=True)]
    verdict.worst_scan_bytes = max(spans) if spans else 0
    if verdict.status == "broken":
        return
    tail = spans[-1] if spans else 0
    interval = options.index_interval_bytes
    between = max(spans[:-1], default=0)
    coarse = tail > interval + largest_batch and tail > between
    if inexact or coarse:
        verdict.status = "usable"
        why = []
        if inexact:
            why.append(f"{inexact} entries name an offset inside a batch rather than a batch's last offset")
        if coarse:
            why.append(f"the last {tail} bytes have no entry (index.interval.bytes {interval})")
        sink("index-sparse", task.index, None,
             f"usable but not what the broker writes: {'; '.join(why)}; a lookup scans up to "
             f"{verdict.worst_scan_bytes} bytes")


_MISSING_COSTS = {
    "index": "the broker rebuilds it when loading (slow start); offset lookups scan the whole segment until then",
    "timeindex": "the broker rebuilds it when loading; until then time-based retention and offset-for-time lookups "
                 "see this segment as empty",
}


_MISSING = {"index": ("index-missing-large", "index-missing"),  # by "small": below one index interval
             "timeindex": ("timeindex-missing-large", "timeindex-missing")}


def _missing(task, options, report, sink, ext: str) -> IndexVerdict | None:
    """A missing index of a segment holding batches. It costs a segment recovery at start-up; below one index
    interval the rebuilt one would be empty anyway (info)."""
    if not report.batches:
        return None
    small = report.valid_end <= options.index_interval_bytes
    sink(_MISSING[ext][small], _sibling(task.log, ext), None, f"no .{ext} for this segment: {_MISSING_COSTS[ext]}")
    return IndexVerdict("missing")


def _finish_time_index(task, options, report, sink, entries, ti, usable, inexact, seg_max) -> None:
    """The ``.timeindex`` entries no batch reached, and whether its last entry is the segment's largest timestamp
    (what ``onBecomeInactiveSegment`` writes and the broker reads back)."""
    verdict = report.timeindex
    for i in range(ti, len(entries)):
        t_e, o_e = entries[i]
        sink("timeindex-entry-beyond-log", task.timeindex, i * 12,
             f"entry {i} ({t_e} at offset {o_e}) is beyond the segment's last offset {report.last_offset}")
        usable = False
    if not usable:
        verdict.status = "broken"
        return
    if verdict.status == "broken":
        return
    last_ts = entries[-1][0] if entries else -1
    closed = not task.active or verdict.slots == verdict.entries
    if report.batches and closed and last_ts < seg_max:
        verdict.status = "usable"
        if verdict.slots > verdict.entries:  # untrimmed: the broker maps every slot, the last one is all zero
            seen = (f"the broker reads all {verdict.slots} slots, so the last one, all zero, makes timestamp 0 "
                    "(1970) this segment's largest")
        else:
            seen = f"the last entry's timestamp {last_ts} is what the broker takes as this segment's largest"
        sink("timeindex-max-missing", task.timeindex, None,
             f"{seen}, but its batches reach {seg_max}: retention.ms judges the segment by it (deleting it too "
             "early) and offset-for-time lookups may skip it")
    elif inexact:
        verdict.status = "usable"
        sink("timeindex-inexact", task.timeindex, None,
             f"{inexact} entries name a batch whose max timestamp differs from the entry: lookups stay correct")


def _timestamp_finding(sink, path, position, first_ts, max_ts, attrs, future_limit, magic) -> None:
    """Called when not ``-1 <= first <= max <= limit``; decides which of those is really wrong."""
    if first_ts < -1 or max_ts < -1:
        sink("timestamp-invalid", path, position,
             f"timestamp {min(first_ts, max_ts)} is negative (only -1, 'none', is valid)")
    elif max_ts > future_limit:
        sink("timestamp-in-future", path, position,
             f"max timestamp {max_ts} is more than a day ahead of now: time-based retention and rolling "
             "will not treat this segment as old")
    elif magic >= 2 and max_ts < first_ts and not attrs & 0x48:  # not LOG_APPEND_TIME, no delete horizon
        sink("timestamp-order", path, position,
             f"max timestamp {max_ts} is below the first timestamp {first_ts} of a CREATE_TIME batch")


def _control_batch(path, batch, raw, options, sink, ongoing, first_marker, aborts) -> None:
    position = batch.position
    first, count, problems = None, 0, []  # its records a chunk at a time: one counts, millions must not be held
    for chunk in record_chunks(batch, raw, path, options.scan):
        if chunk.__class__ is Finding:
            problems.append(chunk)
        elif chunk:
            first = first or chunk[0]
            count += len(chunk)
    for p in problems:
        sink("control-batch-invalid", path, position, f"control batch: {p.message}")
    if problems or first is None:
        return  # (no record: the cleaner keeps emptied control batches)
    if count > 1 or batch.record_count != 1:
        sink("control-batch-invalid", path, position,
             f"control batch holds {count} records (header says {batch.record_count}); it must hold one")
    ctype = first.control_type
    if ctype in TXN_MARKERS:
        if batch.producer_id < 0 or not batch.transactional:
            sink("control-batch-invalid", path, position,
                 f"{ctype} marker in a batch that is not transactional or has no producer id")
            return
        _end_transaction(batch.producer_id, batch.base_offset, ctype, ongoing, first_marker, aborts)
    elif ctype not in KRAFT_CONTROL:
        sink("control-type-unknown", path, position,
             f"control record type {ctype}: not one Kafka defines")


def _end_transaction(pid, marker, ctype, ongoing, first_marker, aborts) -> None:
    """Producer ``pid``'s ``ctype`` (ABORT or COMMIT) marker at offset ``marker`` ends its ongoing transaction; an
    ABORT of one begun here, or the producer's first marker of the segment (its transaction may have begun in an
    earlier one), is an aborted transaction with the last stable offset then (the first offset of another producer's
    ongoing one, else the offset after the marker)."""
    first = ongoing.pop(pid, None)
    is_first = pid not in first_marker
    if is_first:
        first_marker[pid] = marker
    if ctype == "ABORT" and (first is not None or is_first):
        others = [f for p, f in ongoing.items() if p != pid]
        aborts.append((pid, first, marker, min(others) if others else marker + 1))


def _deep(items, path, options, sink, raw_of_deep: list[bytes], check: bool = True):
    """Keep each batch's bytes in ``raw_of_deep[0]`` as it passes and, with ``check`` (``--deep``), decode
    every (non-control) batch; the main loop sees plain batches, and :class:`Stretch` es of natively decoded
    ones that the deep checks would not flag."""
    for item in items:
        if item.__class__ is RawBatch:
            batch, raw = item
            raw_of_deep[0] = raw
            if check and not batch.control:
                _deep_check(path, batch, raw, options, sink)
            yield batch
        elif item.__class__ is RecordRun:  # records decoded natively: only a batch the columns flag is checked here
            cols, lo, hi = item
            # the batches inside a stretch follow with no deep suspect (``follows(deep=True)``): only a
            # stretch's first batch can be one, asked of once
            for i, k in stretch_bounds(cols, lo, hi, True):
                batch = column_batch(cols, i)
                if check and cols.deep_suspects(i, i + 1):
                    _deep_check(path, batch, cols.raw(i), options, sink)
                yield batch
                if k > i + 1:
                    yield _tuple_new(Stretch, (cols, i + 1, k, NO_MARKERS))
        else:
            yield item


def _deep_check(path, batch, raw, options, sink) -> None:
    """The records of a batch checked against its header: their count, offsets increasing within the batch's range,
    the largest timestamp. Read a chunk at a time (:func:`records.record_chunks`: offsets and timestamps only), the
    count, the previous offset and the largest timestamp carried from chunk to chunk; reported only once every
    record decoded (a batch that does not decode gets its decoding findings alone)."""
    problems = []
    decoded = 0
    prev = batch.base_offset - 1
    last = batch.last_offset
    top = -1
    bad = None  # the first record offset not increasing within the range (the rest then goes unchecked)
    for chunk in record_chunks(batch, raw, path, options.scan, times=True):
        if chunk.__class__ is Finding:
            problems.append(chunk)
            continue
        offsets, timestamps = chunk
        if not offsets:
            continue
        decoded += len(offsets)
        if bad is not None:
            continue
        # a chunk at C speed; only a chunk that breaks the rule is walked, for its first offending offset
        if offsets[0] > prev and max(offsets) <= last and all(map(operator.lt, offsets, offsets[1:])):
            prev = offsets[-1]
            top = max(top, max(timestamps))
            continue
        for offset in offsets:
            if offset <= prev or offset > last:
                bad = offset
                break
            prev = offset
    for p in problems:
        sink.add(p)
    if problems:
        return
    if decoded != batch.record_count:
        sink("record-count-mismatch", path, batch.position,
             f"{decoded} records decoded, the header declares {batch.record_count}")
    if bad is not None:
        sink("record-offset-invalid", path, batch.position,
             f"record offset {bad} is not increasing within {batch.base_offset}..{batch.last_offset}")
        return
    if batch.magic >= 2 and batch.timestamp_type == "create" and decoded and top != batch.max_timestamp:
        if top > batch.max_timestamp or batch.record_count == batch.last_offset - batch.base_offset + 1:
            sink("max-timestamp-mismatch", path, batch.position,
                 f"records' largest timestamp is {top}, the header says {batch.max_timestamp}")
