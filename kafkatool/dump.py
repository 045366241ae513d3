"""``dump``: every file under the given paths, decoded into the values of :mod:`kafkatool.model`.

The one library function behind ``kafkatool dump``; it yields values and never prints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import native
from .errors import InputIOError, UsageError
from .filetypes import FileKind, classify, open_regular
from .findings import finding
from .model import Batch, ControlBatch, FileStart, Finding, Record, Stretch, Trailing
from .pattern import translate
from .records import (
    RawBatch,
    RecordRun,
    ScanOptions,
    column_batch,
    columns_to_records,
    read_marker,
    record_chunks,
    scan,
)
from .walk import FoundFile, discover, found_files, partition_of

if TYPE_CHECKING:
    from .payloads.fields import PayloadView
    from .txns import CommittedView


class RecordFilter(NamedTuple):
    """Which records ``dump`` shows (every given condition must hold): ``key``/``value`` regular expressions
    searched in the bytes decoded as UTF-8 (a null key or value never matches), a header by name (and a
    regular expression on its value), the batch's producer id, and a time range (inclusive) on the record's
    timestamp. Batch-level conditions (producer id, time) are tested on the header first.

    ``native``: the same conditions compiled once by the native core (``_native.RecordSearch``: the ``regex`` crate's
    patterns :func:`kafkatool.pattern.translate` made of these, which match exactly what these match), applied to the
    records it decodes; None where a pattern is not translated (the records are searched here, the reference).
    A NamedTuple, as every immutable value on a command's path (kafkatool/__init__.py)."""

    key: re.Pattern[str] | None = None
    value: re.Pattern[str] | None = None
    header: tuple[str, re.Pattern[str] | None] | None = None
    producer_id: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    native: Any = None

    @property
    def needs_records(self) -> bool:
        return self.key is not None or self.value is not None or self.header is not None

    @property
    def active(self) -> bool:
        return self.needs_records or self.producer_id is not None or self.from_time is not None \
            or self.to_time is not None

    def batch(self, b: Batch) -> bool:
        if self.producer_id is not None and b.producer_id != self.producer_id:
            return False
        if self.from_time is not None and b.max_timestamp is not None and b.max_timestamp < self.from_time:
            return False
        return True

    def record(self, r: Record) -> bool:
        if self.from_time is not None and r.timestamp < self.from_time:
            return False
        if self.to_time is not None and r.timestamp > self.to_time:
            return False
        if self.key is not None and (r.key is None or not self.key.search(_text(r.key))):
            return False
        if self.value is not None and (r.value is None or not self.value.search(_text(r.value))):
            return False
        if self.header is not None:
            name, pattern = self.header
            values = [v for k, v in r.headers if k == name]
            if not values or (pattern is not None and not any(v is not None and pattern.search(_text(v))
                                                              for v in values)):
                return False
        return True


def record_filter(*, key: str | None = None, value: str | None = None, header: str | None = None,
                  producer_id: int | None = None, from_time: str | int | None = None,
                  to_time: str | int | None = None, parse_time: Callable[[str], int] | None = None) -> RecordFilter:
    """A :class:`RecordFilter` from command-line words; a bad pattern, time or range is a UsageError. A time given
    as text is read by ``parse_time`` (:func:`kafkatool.locate.parse_timestamp`, imported by the caller where a time
    is given)."""
    def pattern(option: str, text: str | None) -> re.Pattern[str] | None:
        if text is None:
            return None
        try:
            return re.compile(text)
        except re.error as exc:
            raise UsageError(f"{option} {text!r}: not a regular expression ({exc})") from exc

    def when(option: str, text: str | int | None) -> int | None:
        if text is None:
            return None
        if isinstance(text, int):
            ms = text
        elif parse_time is None:
            raise UsageError(f"{option} {text!r}: give epoch ms")
        else:
            ms = parse_time(text)
        if ms < 0:
            raise UsageError(f"{option} {text!r}: give a time (ISO-8601 or epoch ms)")
        return ms

    named = on_header = None
    if header is not None:
        name, sep, rx = header.partition("=")
        if not name:
            raise UsageError(f"--header {header!r}: give NAME or NAME=REGEX")
        named, on_header = (name, pattern("--header", rx) if sep else None), rx if sep else None
    start, end = when("--from-time", from_time), when("--to-time", to_time)
    if start is not None and end is not None and start > end:
        raise UsageError(f"--from-time {from_time} is after --to-time {to_time}")
    return RecordFilter(pattern("--key", key), pattern("--value", value), named, producer_id, start, end,
                        _native_search((key, value, on_header), None if named is None else named[0], producer_id, start,
                                       end))


def _native_search(texts: tuple[str | None, str | None, str | None], header: str | None, producer_id: int | None,
                   start: int | None, end: int | None):  # -> _native.RecordSearch | None
    """The native core's :class:`RecordFilter` for the key, value and header-value patterns ``texts`` (and the header
    name ``header``), compiled once, here; None without the core, or where a pattern is not translated exactly
    (:func:`kafkatool.pattern.translate`)."""
    core = native.available()
    if core is None:
        return None
    translated = [None if p is None else translate(p) for p in texts]
    if any(t is None and p is not None for t, p in zip(translated, texts, strict=True)):
        return None
    key, value, on_header = translated
    try:
        return core.RecordSearch(key, value, None if header is None else (header, on_header), producer_id, start, end)
    except (ValueError, OverflowError):  # a pattern too big for the crate, a number beyond 64 bits: Python searches
        return None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class DumpOptions(NamedTuple):
    """What ``dump`` reads and shows (a NamedTuple: see :class:`RecordFilter`)."""

    records: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    max_batches: int | None = None   # per record file
    max_bytes: int | None = None     # per record file: entries starting within the first N bytes
    scan: ScanOptions = ScanOptions()
    filter: RecordFilter = RecordFilter()
    columnar: bool = False  # the consumer takes RecordRuns (records as native columns; the CLI's text and jsonl)
    # What the options need from other engines, given by the caller (the CLI imports each where its option is set):
    # read_committed: a partition dir's view, only what such a consumer receives (kafkatool.txns.committed_view);
    committed: Callable[[Path, str], CommittedView] | None = None
    # --decode: a file's record decoder, None for a file whose records are shown as they are
    # (kafkatool.internal.decode.file_decoder);
    decoder: Callable[[Path], Callable[[Record], object] | None] | None = None
    # --key-decoder/--value-decoder: keys and values decoded, and the filters on decoded fields (applied after
    # ``filter``) (kafkatool.payloads.fields.payload_view)
    payload: PayloadView | None = None
    # where the first batch of from_offset's and of filter.from_time's range is in a partition dir, found through
    # its indexes (kafkatool.locate.first_at_offset, first_at_time); without them every batch is read, and the range
    # filters them.
    offset_start: Callable[[Path, int], tuple[Path, int] | bool] | None = None
    time_start: Callable[[Path, int], tuple[Path, int] | bool] | None = None

    def wants(self, first: int, last: int) -> bool:
        if self.from_offset is not None and last < self.from_offset:
            return False
        return not (self.to_offset is not None and first > self.to_offset)


def dump_paths(
    paths: list[str] | list[Path],
    options: DumpOptions = DumpOptions(),
    progress: Callable[[int], None] | None = None,
    name_files: bool = False,
) -> Iterator[object]:
    """Values for every file under ``paths``; a FileStart before each file when there are several (or always,
    with ``name_files``). What discovery met on the way (a symbolic link to nothing, a directory inside a
    partition dir) comes as a Finding."""
    found = list(found_files(discover(paths)))
    separate = name_files or sum(isinstance(f, FoundFile) for f in found) > 1 or any(Path(p).is_dir() for p in paths)
    views: dict[Path, CommittedView] = {}
    wanted = options.filter
    # a search, or an offset range: only the record files, named only where something is shown
    selective = wanted.active or options.from_offset is not None or options.to_offset is not None \
        or bool(options.payload and options.payload.tests)
    # where the first batch of --from-offset's and of --from-time's range is, per partition dir (found once)
    seeks = [(find, value) for find, value in ((options.offset_start, options.from_offset),
                                               (options.time_start, wanted.from_time))
             if find is not None and value is not None]
    firsts: dict[tuple[Callable, Path], tuple[Path, int] | bool] = {}
    for f in found:
        if isinstance(f, Finding):
            yield f
            continue
        if selective and not f.kind.holds_records:
            continue
        start = 0
        if f.kind is FileKind.LOG:
            base = classify(f.path).base_offset
            if options.to_offset is not None and base is not None and base > options.to_offset:
                continue  # the segment begins after the range
            parent = f.path.resolve().parent
            for find, value in seeks:
                if (find, parent) not in firsts:
                    firsts[find, parent] = find(parent, value)
            ats = [_start_in(firsts[find, parent], f.path, base) for find, _ in seeks]
            if None in ats:
                continue
            start = max(ats, default=0)  # type: ignore[type-var]
        committed = None
        if options.committed is not None and f.kind is FileKind.LOG:
            parent = f.path.resolve().parent
            if parent not in views:
                views[parent] = options.committed(parent, os.path.dirname(f.display) or ".")
                yield from views[parent].findings  # once per partition: the view is the broker's, not the markers'
            committed = views[parent]
        items = dump_file(f, options, progress, committed, start=start)
        part = partition_of(f.path.resolve().parent.name)
        start_of = FileStart(f.display, *(part or (None, None)), separate)  # once a file: its lines' context
        if separate and selective:  # a search or a range names only the files where it shows something
            first = next(items, None)
            if first is None:
                continue
            yield start_of
            yield first
        else:
            yield start_of
        yield from items


def _start_in(first: tuple[Path, int] | bool, log: Path, base: int | None) -> int | None:
    """Where to begin reading segment ``log`` (base offset ``base``) for a range whose first batch is ``first``
    (:func:`kafkatool.locate.first_at_offset`, :func:`~kafkatool.locate.first_at_time`): at that batch in its
    segment, at 0 in the later ones and where it could not be placed (True); None, skipping the segment, in the
    earlier ones and where nothing is in range (False)."""
    if first is True:
        return 0
    if first is False:
        return None
    segment, position = first
    if base is not None and base < (classify(segment).base_offset or 0):
        return None  # every batch of this segment comes before the range
    return position if segment.name == log.name else 0


def dump_file(
    f: FoundFile, options: DumpOptions = DumpOptions(), progress: Callable[[int], None] | None = None,
    committed: CommittedView | None = None, start: int = 0,
) -> Iterator[object]:
    """Values of one file. A file that cannot be read yields an ``io-error`` finding, not an exception.

    ``committed`` (a :class:`kafkatool.txns.CommittedView`): only the batches a read_committed consumer receives.
    ``start``: the byte position of the first batch to read (a batch boundary).
    """
    try:
        if f.kind.holds_records:
            yield from _dump_records(f, options, progress, committed, start)
        elif f.kind is FileKind.UNKNOWN:
            yield finding("unknown-file-type", f.display, None,
                          "not a Kafka log-dir file name; cannot tell how to read it")
        else:
            from .smallfiles import read_small_file  # here, not at the top: a lone segment's dump never needs it

            yield from read_small_file(f.path, f.kind, f.display, classify(f.path).base_offset)
    except (OSError, InputIOError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        yield finding(IO_ERROR, f.display, None, f"cannot read the file: {reason}")


IO_ERROR = "io-error"  # the finding code the CLI turns into exit code 3


def _dump_records(
    f: FoundFile, options: DumpOptions, progress, committed: CommittedView | None = None, start: int = 0
) -> Iterator[object]:
    wanted = options.filter
    decoder = None if options.decoder is None else options.decoder(f.path)
    if wanted.needs_records or (wanted.active and options.records) or (options.payload and options.payload.tests):
        yield from _search_records(f, options, progress, committed, start, decoder)
        return
    # Every batch (and record) shown as it is: runs of batches the native core holds as columns go to the output
    # layer as they are, with their records (RecordRun) or without (Stretch: batches that simply follow each other).
    columnar = (options.columnar and committed is None and decoder is None and options.payload is None
                and not wanted.active
                and options.from_offset is None and options.to_offset is None and options.max_batches is None)
    with open_regular(f.path) as fh:
        batches = 0
        for item in scan(fh, f.display, start=start, end=options.max_bytes, with_raw=options.records,
                         decoded=columnar and options.records, stretches=columnar and not options.records,
                         resynchronise=True, options=options.scan, progress=progress):
            if item.__class__ is RecordRun or item.__class__ is Stretch:
                yield item
                continue
            if committed is not None and isinstance(item, (RawBatch, Batch)):
                b = item.batch if isinstance(item, RawBatch) else item
                if committed.limit is not None and b.base_offset >= committed.limit:
                    break  # the last stable offset (or high watermark): a read_committed fetch stops here
                if not committed.delivers(b):
                    continue
            if isinstance(item, RawBatch):
                batch: Batch = item.batch
                if options.to_offset is not None and batch.base_offset > options.to_offset:
                    break  # past the range: a fetch of it ends here
                if not options.wants(batch.base_offset, batch.last_offset):
                    continue
                yield marked(batch, item.raw, f.display) if batch.control else batch
                # then its records and findings; with a columnar consumer, each chunk of a big batch the native core
                # decodes as a RecordRun of its records (rendered natively, its batch line written once above)
                for records in record_chunks(batch, item.raw, f.display, options.scan, lines=columnar):
                    if records.__class__ is Finding:
                        yield records
                    elif records.__class__ is not list:
                        yield RecordRun(records, 0, len(records))
                    elif options.payload is not None:
                        yield from options.payload.shown(_in_range(records, options), f.display, batch.position)
                    elif decoder is None:
                        yield from _in_range(records, options)
                    else:
                        yield from _decoded(decoder, _in_range(records, options))
            elif isinstance(item, Batch):
                if options.to_offset is not None and (item.base_offset or 0) > options.to_offset:
                    break  # past the range: a fetch of it ends here
                if not options.wants(item.base_offset, item.last_offset) or not wanted.batch(item):
                    continue
                if wanted.active and not _batch_in_time(item, wanted):
                    continue
                # a control batch's marker read from its bytes (bounded by its framed size): rare, a pread each
                yield marked(item, os.pread(fh.fileno(), item.size, item.position), f.display) if item.control \
                    else item
            else:
                yield item
                continue
            batches += 1
            if options.max_batches is not None and batches >= options.max_batches:
                break


def marked(batch: Batch, raw: bytes, path: str) -> Batch | ControlBatch:
    """A control batch with its end-transaction marker when it holds one (:func:`kafkatool.records.read_marker`; its
    findings come with its records, when they are read), else the batch as it is."""
    marker, _findings = read_marker(batch, raw, path)
    return batch if marker is None else ControlBatch(batch, marker)


def _batch_in_time(b: Batch, wanted: RecordFilter) -> bool:
    """Without records: a batch is shown when its time span meets the range."""
    if wanted.to_time is not None and b.first_timestamp is not None and b.first_timestamp > wanted.to_time:
        return False
    return True


def _search_records(
    f: FoundFile, options: DumpOptions, progress, committed: CommittedView | None, start: int,
    decoder: Callable[[Record], object] | None = None,
) -> Iterator[object]:
    """Records matching the filter, each batch's line shown before its first match; findings as they come."""
    wanted = options.filter
    batches = 0
    # The native core searches the batches it decodes (RecordRuns): only their matches become Python objects; a
    # read_committed view then judges the batches that matched, and cuts a run where the fetch stops. The filters on
    # decoded payloads read each record's Python object: the search then stays here.
    search = wanted.native if native.CORE is not None and options.payload is None else None
    limit = committed.limit if committed is not None else None
    with open_regular(f.path) as fh:
        for item in scan(fh, f.display, start=start, end=options.max_bytes, with_raw=search is None,
                         decoded=search is not None, resynchronise=True, options=options.scan, progress=progress):
            if item.__class__ is RecordRun:
                columns, hi = item.columns, item.hi
                if limit is not None:  # the first batch at or past it ends the fetch, as below
                    bases = columns.batch_columns(item.lo, item.hi)[1]
                    hi = next((item.lo + k for k, o in enumerate(bases) if o >= limit), hi)
                for i, matched in columns.search(item.lo, hi, search, options.from_offset, options.to_offset):
                    b = column_batch(columns, i)  # never a control batch: those come as RawBatch
                    if committed is not None and not committed.delivers(b):
                        continue
                    yield b
                    hits = columns_to_records(matched)
                    yield from hits if decoder is None else _decoded(decoder, hits)
                    batches += 1
                    if options.max_batches is not None and batches >= options.max_batches:
                        return
                if hi < item.hi:
                    return
                continue
            if not isinstance(item, RawBatch):
                yield item
                continue
            b = item.batch
            if committed is not None:
                if committed.limit is not None and b.base_offset >= committed.limit:
                    break
                if not committed.delivers(b):
                    continue
            if not options.wants(b.base_offset, b.last_offset) or not wanted.batch(b):
                continue
            shown = False
            for records in record_chunks(b, item.raw, f.display, options.scan):  # then its findings
                if records.__class__ is Finding:
                    yield records
                    continue
                hits: list = [r for r in _in_range(records, options) if wanted.record(r)]
                if options.payload is not None:  # decoded, then the filters on decoded fields
                    hits = options.payload.shown(hits, f.display, b.position)
                if any(h.__class__ is not Finding for h in hits):
                    if not shown:
                        yield marked(b, item.raw, f.display) if b.control else b
                        shown = True
                    yield from hits if decoder is None else _decoded(decoder, hits)
                else:
                    yield from hits  # the findings of records the filters could not read
            batches += shown
            if options.max_batches is not None and batches >= options.max_batches:
                break


def _decoded(decoder: Callable[[Record], object], records: Iterable[Record]) -> Iterator[object]:
    """Each record as ``decoder`` shows it, then the finding it made of the record, if any (a record type or
    version newer than the schemas: ``DecodedRecord.finding``)."""
    for r in records:
        shown = decoder(r)
        yield shown
        made = getattr(shown, "finding", None)
        if made is not None:
            yield made


def _in_range(records: list[Record], options: DumpOptions) -> Iterator[Record]:
    if options.from_offset is None and options.to_offset is None:
        yield from records
        return
    for r in records:
        if options.wants(r.offset, r.offset):
            yield r


__all__ = ["DumpOptions", "RecordFilter", "Trailing", "dump_file", "dump_paths", "record_filter"]
