"""``locate``: where an offset or a timestamp lives in a partition, found the way the broker finds it.

The one library operation behind ``kafkatool locate``. It returns a :class:`Location` (the steps taken, the
batch, the record, the bytes read) and never prints. Kafka sources followed (storage module unless noted):

- **Offset** (``UnifiedLog.read`` → ``LocalLog.read`` → ``LogSegment.translateOffset`` →
  ``clients/.../record/FileRecords.searchForOffsetWithSize``): the segment with the largest base offset ≤ N
  (binary search over the base offsets in the file names); in it the offset-index entry with the largest
  offset ≤ N (``OffsetIndex.lookup``, a binary search; no such entry: position 0); from that position, the
  first batch whose last offset ≥ N. A segment with no such batch (compacted tail) hands over to the next
  segment, from position 0, as ``LocalLog.read`` does. The record shown is N itself or, when N is gone
  (compaction), the first record after it, and the location says so.
- **Timestamp** (``UnifiedLog.fetchOffsetByTimestamp`` → ``LogSegment.findOffsetByTimestamp`` →
  ``FileRecords.searchForTimestamp``): the first segment whose largest timestamp ≥ T; in it the time-index
  entry with the largest timestamp ≤ T (``TimeIndex.lookup``; none: the base offset), the offset-index
  position of ``max(that offset, log start)``, then the first batch with max timestamp ≥ T holding a record
  with timestamp ≥ T and offset ≥ the log start: that record (ListOffsets' answer). When each batch's max
  timestamp is its largest record timestamp (as written by producers and brokers) that is the first record
  in offset order with timestamp ≥ T, even with out-of-order timestamps; the batch-first rule only shows when
  a header claims more than its records. ``earliest`` / ``latest`` / ``max`` (-2 / -1 / -3) are the
  ListOffsets specials.
- **A segment's largest timestamp** is its time index's last entry (what ``LogSegment.maxTimestampSoFar``
  reads after a restart; a rolled segment gets its final entry on roll). The last segment, and any segment
  whose time index was never trimmed (preallocated slots left: a crash), may have batches after that entry,
  so their tail is scanned from the entry's offset-index position (``LogSegment.readLargestTimestamp``).
  Without a usable time index the segment is scanned. (Kafka falls back to the file's mtime when a segment
  has no timestamp at all; an offline copy's mtime means nothing, so the data decides here.)

Indexes are memory-mapped and binary-searched: a lookup touches O(log n) index pages and reads one 64 KiB
window of the ``.log`` (plus the target batch again for its records), whatever the segment size. Only the
written prefix of an index counts (a crash leaves the active segment's index files preallocated, zero
slots at the end: :func:`kafkatool.smallfiles.index_slots` has the same rule). An index is trusted only
after Kafka's own sanity checks (``offset_index_sanity`` / ``time_index_sanity``), with the entries around
the one found in order, its position inside the ``.log``, and a whole batch with a valid CRC starting
exactly there whose base offset is between the segment base and the entry's offset. Otherwise (or when
the file is missing) the segment is scanned from position 0 and :attr:`Location.fallback` says why.

The partition's files are discovery's (:mod:`kafkatool.walk`) and its segments and log start offset the
loader's rules (:func:`kafkatool.loader.segment_files`: ``.swap`` leftovers in place as ``LogLoader.load`` puts
them; :func:`kafkatool.loader.log_start_offset`: the log dir's ``log-start-offset-checkpoint``, a
``DeleteRecords`` start, when above the first segment's base offset), without reading the segments.
An offset below it or at/after the log end offset, or a timestamp after every record, gives a Location
with ``found`` false and a ``note`` saying why (ListOffsets would answer -1 for such a timestamp).
Damage met on the way (CRC mismatch, torn tail...) comes back as :class:`~kafkatool.model.Finding`\\ s.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .errors import InputIOError, UsageError
from .filetypes import FileKind, classify, open_regular
from .findings import finding
from .formats.index import OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE
from .loader import log_start_offset, read_logdir, segment_files
from .model import Batch, Finding, Record
from .records import ScanOptions, record_chunks, scan
from .segment_indexes import offset_misfit
from .smallfiles import offset_index_sanity, time_index_sanity
from .walk import LogDir, PartitionDir, discover

# ListOffsetsRequest's special timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
SPECIAL_TIMESTAMPS = {"latest": LATEST_TIMESTAMP, "earliest": EARLIEST_TIMESTAMP, "max": MAX_TIMESTAMP}
_SPECIAL_NAMES = {v: k for k, v in SPECIAL_TIMESTAMPS.items()}

LOCATE_WINDOW = 64 * 1024  # scan window: what one refill reads from the .log

_OFFSET_SLOT = struct.Struct(">ii")  # relative_offset, position   (formats.index.OffsetIndexEntry)
_TIME_SLOT = struct.Struct(">qi")    # timestamp, relative_offset  (formats.index.TimeIndexEntry)
assert (_OFFSET_SLOT.size, _TIME_SLOT.size) == (OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE)
_PAST_ANY_RELATIVE = 1 << 32  # an offset-index key above every 32-bit relative offset


# --- values -----------------------------------------------------------------------------------------
# NamedTuples, as every immutable value on a command's path (kafkatool/__init__.py): locate, txns, dump --from-*
# and the internal topics' commands import this module.


class LocateOptions(NamedTuple):
    use_indexes: bool = True  # False: ignore .index/.timeindex and scan (to cross-check them)
    scan: ScanOptions = ScanOptions(window=LOCATE_WINDOW)


class Target(NamedTuple):
    """What was asked for: an offset, or a timestamp (ms, or a ListOffsets special value)."""

    offset: int | None = None
    timestamp: int | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.offset is not None:
            return {"offset": self.offset}
        d: dict[str, Any] = {"timestamp": self.timestamp}
        if self.timestamp in _SPECIAL_NAMES:
            d["name"] = _SPECIAL_NAMES[self.timestamp]
        return d


class Step(NamedTuple):
    """One step of the search, as a line a person reads (``kind``: segment, index, timeindex, scan, fallback...)."""

    kind: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"type": "locate_step", "step": self.kind, "message": self.message}


class Location(NamedTuple):
    """The answer of one lookup, with how it was reached.

    ``offset`` is the answer (the record's offset; for ``latest``/``earliest`` the log end/start offset).
    ``position`` is the batch's byte position in ``segment``; ``bytes_scanned`` the span of the ``.log``
    walked batch by batch to reach it (from ``scan_start``); ``bytes_read`` every byte actually read from
    ``.log`` files by the whole lookup. ``findings`` are emitted on their own lines, not in ``as_dict``.
    """

    partition: str
    target: Target
    found: bool
    offset: int | None = None
    segment: str | None = None
    index_entry: tuple[int, int] | None = None       # (offset, position)
    time_index_entry: tuple[int, int] | None = None  # (timestamp, offset); (-1, base offset) when none applies
    scan_start: int | None = None
    position: int | None = None
    bytes_scanned: int = 0
    batches_scanned: int = 0
    bytes_read: int = 0
    batch: Batch | None = None
    record: Record | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None  # only when the lookup needed it
    fallback: str | None = None
    note: str | None = None
    steps: tuple[Step, ...] = ()
    findings: tuple[Finding, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "location",
            "partition": self.partition,
            "target": self.target.as_dict(),
            "found": self.found,
            "offset": self.offset,
            "segment": self.segment,
            "index_entry": None if self.index_entry is None else dict(zip(("offset", "position"), self.index_entry,
                                                                          strict=True)),
            "time_index_entry": None if self.time_index_entry is None else dict(
                zip(("timestamp", "offset"), self.time_index_entry, strict=True)),
            "scan_start": self.scan_start,
            "position": self.position,
            "bytes_scanned": self.bytes_scanned,
            "batches_scanned": self.batches_scanned,
            "bytes_read": self.bytes_read,
            "batch": None if self.batch is None else self.batch.as_dict(),
            "record": None if self.record is None else self.record.as_dict(),
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "fallback": self.fallback,
            "note": self.note,
            "steps": [s.as_dict() for s in self.steps],
        }


# --- entry points ---------------------------------------------------------------------------------------


def locate(
    path: str | Path, *, offset: int | None = None, timestamp: int | None = None,
    options: LocateOptions = LocateOptions(),
) -> Location:
    """Locate ``offset`` or ``timestamp`` (exactly one) in the partition dir (or single ``.log``) at ``path``."""
    if (offset is None) == (timestamp is None):
        raise UsageError("give exactly one of --offset or --timestamp")
    if offset is not None:
        return locate_offset(path, offset, options)
    assert timestamp is not None
    return locate_timestamp(path, timestamp, options)


def locate_offset(path: str | Path, offset: int, options: LocateOptions = LocateOptions()) -> Location:
    """Where offset ``offset`` is: segment, index entry, batch and record (see the module doc)."""
    with _Search(path, options) as search:
        return search.find_offset(offset, Target(offset=offset))


def locate_timestamp(path: str | Path, timestamp: int, options: LocateOptions = LocateOptions()) -> Location:
    """The record Kafka's ListOffsets answers for ``timestamp`` (ms, or -1 latest, -2 earliest, -3 max)."""
    if timestamp < 0 and timestamp not in _SPECIAL_NAMES:
        raise UsageError(f"timestamp {timestamp} is negative (only -1 latest, -2 earliest, -3 max are defined)")
    with _Search(path, options) as search:
        return search.find_timestamp(timestamp, Target(timestamp=timestamp))


def parse_timestamp(text: str) -> int:
    """``--timestamp``: milliseconds since the epoch, ISO-8601 (no zone: UTC), or earliest | latest | max."""
    word = text.strip().lower()
    if word in SPECIAL_TIMESTAMPS:
        return SPECIAL_TIMESTAMPS[word]
    try:
        value = int(word)
    except ValueError:
        value = None
    if value is None:
        try:
            when = datetime.fromisoformat(text.strip().replace("z", "Z"))
        except ValueError:
            when = None
        if when is None:
            raise UsageError(f"--timestamp {text!r}: not milliseconds, an ISO-8601 time, or earliest|latest|max")
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return round(when.timestamp() * 1000)
    if value < 0 and value not in _SPECIAL_NAMES:
        raise UsageError(f"--timestamp {value}: negative (only -1 latest, -2 earliest, -3 max are defined)")
    return value


# --- the partition's files ----------------------------------------------------------------------------------


class Segment(NamedTuple):
    base_offset: int
    log: Path
    display: str  # the .log path as the user would write it
    size: int

    @property
    def index(self) -> Path:
        return self.log.with_suffix(".index")

    @property
    def timeindex(self) -> Path:
        return self.log.with_suffix(".timeindex")


def partition_segments(path: str | Path) -> list[Segment]:
    """The ``.log`` segments of a partition dir by base offset (or the one ``.log`` named). UsageError if none."""
    return partition_files(path).segments


class PartitionFiles(NamedTuple):
    """What a lookup needs of a partition before reading it: its segments as the broker sees them and its log start
    offset (:func:`kafkatool.loader.segment_files`, :func:`kafkatool.loader.log_start_offset`, Kafka's
    ``LogLoader``), from the files discovery found (:func:`kafkatool.walk.discover`)."""

    segments: list[Segment]
    log_start: int
    log_start_source: str   # how the log start was found, for the steps
    findings: tuple[Finding, ...] = ()   # what discovery met in the dir (a FIFO, a link loop or to nothing)


def partition_files(path: str | Path) -> PartitionFiles:
    """The segments and log start of the partition dir at ``path`` (or of the one ``.log`` named). UsageError if
    there is no segment."""
    p = Path(path)
    if p.exists() and not p.is_dir():  # a FIFO named too: its reading refuses it
        info = classify(p, by_extension=True)
        if info.kind is not FileKind.LOG or info.leftover:
            raise UsageError(f"{path}: not a partition dir or a .log segment")
        if info.base_offset is None:
            raise UsageError(f"{path}: the segment's base offset comes from its name (20 digits + .log)")
        return PartitionFiles([Segment(info.base_offset, p, str(path), p.stat().st_size)], info.base_offset,
                              "the segment's base offset")
    units = [u for u in discover([path]) if isinstance(u, LogDir | PartitionDir)]  # UsageError if nothing
    if len(units) != 1 or not isinstance(units[0], PartitionDir):
        parts = [q for u in units for q in (u.partitions if isinstance(u, LogDir) else [u]) if q.topic is not None]
        example = f", e.g. {parts[0].display}" if parts else ""
        what = "is a log dir" if len(units) == 1 else "holds several log dirs or partitions"
        raise UsageError(f"{path} {what}: name one partition dir{example}")
    part = units[0]
    segments = [Segment(s.base_offset, s.path, s.display, s.size) for s in segment_files(part.files)]
    if not segments:
        unread = next((f for f in part.findings if f.code == "io-error" and f.path.endswith(".log")), None)
        if unread is not None:  # its segments are there but cannot be read (a FIFO, a link loop)
            raise InputIOError(f"{unread.path}: {unread.message}")
        raise UsageError(f"{path}: no .log segment files (not a partition dir?)")
    checkpoint, met = None, ()
    if part.topic is not None:
        logdir = part.logdir or read_logdir(part.logdir_path, part.logdir_display)
        checkpoint = logdir.offset("log-start-offset-checkpoint", part.topic, part.partition or 0)
        # what reading the checkpoint the log start comes from met (malformed: read as none, as the broker does)
        met = tuple(f for f in logdir.checkpoint_findings if os.path.basename(f.path) == "log-start-offset-checkpoint")
    start = log_start_offset(checkpoint, segments[0].base_offset)
    source = ("the log-start-offset-checkpoint" if checkpoint is not None and checkpoint > segments[0].base_offset
              else "the first segment's base offset")
    return PartitionFiles(segments, start, source, (*met, *part.findings))


# --- reading indexes and the log -------------------------------------------------------------------------


class _IndexFile:
    """The written entries of one ``.index`` / ``.timeindex``, memory-mapped: only probed slots are read."""

    def __init__(self, name: str, mm: mmap.mmap | None, slot: struct.Struct, count: int, slots: int) -> None:
        self.name, self._mm, self._unpack, self.count, self.slots = name, mm, slot.unpack_from, count, slots
        self._size = slot.size

    @property
    def preallocated(self) -> bool:
        """Unwritten (zero) slots after the entries: the file was never trimmed (active segment or a crash)."""
        return self.slots > self.count

    def entry(self, i: int) -> tuple[int, int]:
        assert self._mm is not None
        return self._unpack(self._mm, i * self._size)

    def floor(self, key_field: int, target: int) -> int:
        """``AbstractIndex.largestLowerBoundSlotFor``: the last slot whose key is ≤ ``target``, or -1."""
        lo, hi = 0, self.count - 1
        if hi < 0 or self.entry(0)[key_field] > target:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.entry(mid)[key_field] <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def disorder(self, i: int, strict_second: bool) -> str | None:
        """Why the entries around slot ``i`` are not in order (both fields ascending), or None."""
        cur = self.entry(i)
        for j in (i - 1, i + 1):
            if not 0 <= j < self.count:
                continue
            lo, hi = (self.entry(j), cur) if j < i else (cur, self.entry(j))
            if not (lo[0] < hi[0] and (lo[1] < hi[1] if strict_second else lo[1] <= hi[1])):
                return f"slots {min(i, j)} and {max(i, j)} are not in ascending order"
        return None

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()


def _open_index(path: Path, time: bool) -> tuple[_IndexFile | None, str | None]:
    """The index at ``path`` and None, or None and why it cannot be used."""
    slot = _TIME_SLOT if time else _OFFSET_SLOT
    name = path.name
    try:
        with open_regular(path) as fh:
            length = os.fstat(fh.fileno()).st_size
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if length else None
    except FileNotFoundError:
        return None, f"{name} is missing"
    except OSError as exc:
        return None, f"{name} cannot be read: {exc.strerror or exc}"
    if length % slot.size:
        if mm is not None:
            mm.close()
        return None, f"{name} is {length} bytes, not a whole number of {slot.size}-byte entries"
    slots = length // slot.size
    index = _IndexFile(name, mm, slot, 0, slots)
    index.count = _written_slots(index, time)
    if index.count:
        assert mm is not None
        sanity = time_index_sanity if time else offset_index_sanity
        with memoryview(mm) as whole, whole[: index.count * slot.size] as written:
            problem = sanity(written, name)  # type: ignore[arg-type]  # reads len() and two entries only
        if problem is not None:
            index.close()
            return None, f"{name} fails Kafka's sanity check: {problem.message}"
    return index, None


def _written_slots(index: _IndexFile, time: bool) -> int:
    """How many leading slots were written: a never-written slot is all zero (slot 0) or has relative offset 0.

    The same rule as ``smallfiles._offset_index`` / ``_time_index``, found by binary search: written slots
    after the first have relative offsets above 0, preallocated ones 0, so the boundary is one flip.
    """
    if index.slots == 0 or index.entry(0) == (0, 0):
        return 0
    rel = 1 if time else 0
    lo, hi = 1, index.slots  # the first unwritten slot is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if index.entry(mid)[rel] == 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


class _CountingFile:
    """A binary file that counts the bytes read through it (what the scanner really pulls from disk)."""

    def __init__(self, path: Path) -> None:
        self._fh = open_regular(path, buffering=0)  # unbuffered: no read-ahead beyond what is asked
        self.bytes_read = 0

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def readinto(self, buf: Any) -> int:
        n = self._fh.readinto(buf) or 0
        self.bytes_read += n
        return n

    def read(self, size: int = -1) -> bytes:
        data = self._fh.read(size) or b""
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        self._fh.close()


class _BadPosition(Exception):
    """The batch at an index-given position does not confirm the index entry."""


def iso_time(ts: int) -> str:
    """A time in milliseconds as ISO-8601 UTC with milliseconds (as the findings say it); a negative one as it is."""
    if ts < 0:
        return str(ts)
    try:
        return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ts)


# --- the search ---------------------------------------------------------------------------------------------


class _Scan:
    """The batches of one segment from ``start``; with an index ``entry``, the first one must confirm it.

    When it does not, the scan restarts from position 0 (recorded as a fallback). Findings go to the
    search; a batch with a bad CRC is yielded after its ``crc-mismatch`` finding has been collected.
    """

    def __init__(self, search: _Search, seg: Segment, start: int, entry: tuple[int, int] | None) -> None:
        self.search, self.seg, self.start, self.entry = search, seg, start, entry
        self.batches = 0
        self.end = start  # end of the last batch yielded

    def __iter__(self) -> Iterator[Batch]:
        if self.entry is not None:
            try:
                yield from self._batches(check=True)
                return
            except _BadPosition as exc:
                offset, position = self.entry
                self.search.fallback(f"{self.seg.index.name} entry offset {offset} → position {position}: {exc};"
                                     f" scanning {self.seg.log.name} from position 0")
                self.start, self.entry, self.end = 0, None, 0
        yield from self._batches(check=False)

    def _batches(self, check: bool) -> Iterator[Batch]:
        items = scan(self.search.log(self.seg), self.seg.display, start=self.start,
                     options=self.search.options.scan)
        pending: Batch | None = None
        for item in items:
            if check:
                check = False
                self._confirm(item)
            if isinstance(item, Batch):
                if pending is not None:
                    yield self._count(pending)
                    pending = None
                if item.crc_valid:
                    yield self._count(item)
                else:
                    pending = item  # its crc-mismatch finding comes next
            else:
                if isinstance(item, Finding):
                    self.search.findings.append(item)
                if pending is not None:
                    yield self._count(pending)
                    pending = None
        if check:
            raise _BadPosition(f"the position is at or past the end of the {self.seg.size}-byte log")
        if pending is not None:
            yield self._count(pending)

    def _count(self, batch: Batch) -> Batch:
        self.batches += 1
        self.end = batch.position + batch.size
        return batch

    def _confirm(self, item: object) -> None:
        assert self.entry is not None
        if not isinstance(item, Batch) or item.position != self.start:
            what = f" ({item.code})" if isinstance(item, Finding) else ""
            raise _BadPosition(f"no whole batch starts there{what}")
        if not item.crc_valid:
            raise _BadPosition("the batch there fails its CRC check")
        if not self.seg.base_offset <= item.base_offset <= self.entry[0]:
            raise _BadPosition(f"the batch there starts at offset {item.base_offset}, outside "
                               f"{self.seg.base_offset}..{self.entry[0]}")

    @property
    def scanned(self) -> int:
        return self.end - self.start


class _Files:
    """A partition's files during one lookup: the segments' ``.log`` files opened once and counted, their indexes
    memory-mapped once and judged usable or not (Kafka's sanity checks, and what their first and last entries say
    against the segment). Nothing here records steps: the searches (:class:`_Search`) do."""

    def __init__(self, partition: PartitionFiles, options: LocateOptions) -> None:
        self.segments = partition.segments
        self.bases = [s.base_offset for s in self.segments]
        self.options = options
        self._logs: dict[int, _CountingFile] = {}
        self._indexes: dict[tuple[int, bool], tuple[_IndexFile | None, str | None]] = {}

    def close(self) -> None:
        for f in self._logs.values():
            f.close()
        for ix, _problem in self._indexes.values():
            if ix is not None:
                ix.close()

    @property
    def bytes_read(self) -> int:
        return sum(f.bytes_read for f in self._logs.values())

    def log(self, seg: Segment) -> BinaryIO:
        f = self._logs.get(seg.base_offset)
        if f is None:
            f = self._logs[seg.base_offset] = _CountingFile(seg.log)
        return f  # type: ignore[return-value]  # duck-typed: seek/tell/read/readinto

    def index(self, seg: Segment, time: bool) -> tuple[_IndexFile | None, str | None, bool]:
        """The segment's usable ``.index``/``.timeindex``, or None and why not; and whether this is the first ask."""
        key = (seg.base_offset, time)
        first = key not in self._indexes
        if first:
            path = seg.timeindex if time else seg.index
            ix, problem = _open_index(path, time)
            if ix is not None:
                problem = self._implausible(ix, seg, time)
                if problem is not None:
                    ix.close()
                    ix, problem = None, f"{path.name}: {problem}"
            self._indexes[key] = (ix, problem)
        return (*self._indexes[key], first)

    def _implausible(self, ix: _IndexFile, seg: Segment, time: bool) -> str | None:
        """What the first and last entries say against the segment (O(1) reads; Kafka checks only the last)."""
        if not ix.count:
            return None
        first, last = ix.entry(0), ix.entry(ix.count - 1)
        rel = 1 if time else 0
        i = bisect.bisect_right(self.bases, seg.base_offset)
        limit = self.bases[i] - seg.base_offset if i < len(self.bases) else _PAST_ANY_RELATIVE
        if not 0 <= first[rel] <= last[rel] < limit:
            return (f"entry offsets {seg.base_offset + first[rel]}..{seg.base_offset + last[rel]} are not within the"
                    " segment")
        if first[1 - rel] > last[1 - rel]:
            return "its first entry is above its last"
        if not time and not 0 <= first[1] <= last[1] < seg.size:
            return f"entry positions {first[1]}..{last[1]} are not within the {seg.size}-byte log"
        return None

    def read(self, seg: Segment, position: int, size: int) -> bytes:
        fh = self.log(seg)
        fh.seek(position)
        return fh.read(size)


class _Search:
    """One lookup (Kafka's read paths, see the module doc) over a partition's :class:`_Files`: the steps taken,
    fallbacks and findings collected."""

    def __init__(self, path: str | Path, options: LocateOptions) -> None:
        self.display = str(path)
        self.options = options
        partition = partition_files(path)
        self.files = _Files(partition, options)
        self.segments = partition.segments
        self.bases = self.files.bases
        self.log_start = partition.log_start
        self.log_start_source = partition.log_start_source
        self.steps: list[Step] = []
        self.fallbacks: list[str] = []
        self.findings: list[Finding] = list(partition.findings)
        self.quiet = False
        self._largest: dict[int, tuple[int, int, str]] = {}
        self._leo: int | None = None

    def __enter__(self) -> _Search:
        return self

    def __exit__(self, *exc: object) -> None:
        self.files.close()

    # -- bookkeeping ------------------------------------------------------------------------------------
    def step(self, kind: str, message: str) -> None:
        if not self.quiet:
            self.steps.append(Step(kind, message))

    def fallback(self, reason: str) -> None:
        self.fallbacks.append(reason)
        self.steps.append(Step("fallback", reason))

    @property
    def bytes_read(self) -> int:
        return self.files.bytes_read

    def log(self, seg: Segment) -> BinaryIO:
        return self.files.log(seg)

    def index(self, seg: Segment, time: bool) -> _IndexFile | None:
        if not self.options.use_indexes:
            if not self.fallbacks:
                self.fallback("--no-index: index files not used")
            return None
        ix, problem, first = self.files.index(seg, time)
        if first and problem is not None:
            self.fallback(f"{problem}: not used")
        return ix

    def location(self, target: Target, found: bool, **fields: Any) -> Location:
        return Location(
            partition=self.display, target=target, found=found, bytes_read=self.bytes_read,
            log_start_offset=self.log_start, log_end_offset=self._leo,
            fallback="; ".join(self.fallbacks) or None, steps=tuple(self.steps),
            findings=tuple(dict.fromkeys(self.findings)),  # a file scanned twice reports its damage once
            **fields,
        )

    # -- building blocks --------------------------------------------------------------------------------
    def index_position(self, seg: Segment, offset: int) -> tuple[tuple[int, int] | None, int]:
        """``OffsetIndex.lookup(offset)``: (entry, position) of the last entry ≤ ``offset``; (None, 0) if none."""
        ix = self.index(seg, time=False)
        if ix is None:
            why = "--no-index" if not self.options.use_indexes else "no usable offset index"
            self.step("index", f"{why}: scanning {seg.log.name} from position 0")
            return None, 0
        slot = ix.floor(0, offset - seg.base_offset)
        if slot < 0:
            self.step("index", f"no entry at or below offset {offset} in {ix.name} ({ix.count} entries):"
                               " scanning from position 0")
            return None, 0
        relative, position = ix.entry(slot)
        entry = (seg.base_offset + relative, position)
        problem = ix.disorder(slot, strict_second=True)
        if problem is None and relative < 0:
            problem = "negative relative offset"
        if problem is None and not 0 <= position < seg.size:
            problem = f"position outside the {seg.size}-byte log"
        if problem is not None:
            self.fallback(f"{ix.name} slot {slot} (offset {entry[0]} → position {position}): {problem};"
                          f" scanning {seg.log.name} from position 0")
            return None, 0
        self.step("index", f"index entry offset {entry[0]} → position {position} ({ix.name}, slot {slot} of"
                           f" {ix.count}, binary search)")
        return entry, position

    def first_record(self, seg: Segment, batch: Batch, wanted: Callable[[Record], bool]) -> Record | None:
        """The batch's first record that is ``wanted``, and every finding of decoding it. Its records come a chunk
        at a time (:func:`records.record_chunks`) and only the answer is kept: a few KB that expand to millions of
        records cost a chunk, not all of them. Decoding goes on past the answer for the findings after it."""
        raw = self.files.read(seg, batch.position, batch.size)
        found = None
        for chunk in record_chunks(batch, raw, seg.display, self.options.scan):
            if chunk.__class__ is Finding:
                self.findings.append(chunk)
            elif found is None:
                found = next((r for r in chunk if wanted(r)), None)
        return found

    def log_end_offset(self) -> int:
        """``LogSegment.readNextOffset`` of the last segment: after its last batch (its base offset if empty)."""
        if self._leo is None:
            seg = self.segments[-1]
            quiet, self.quiet = self.quiet, True
            try:
                entry, start = self.index_position(seg, seg.base_offset + _PAST_ANY_RELATIVE)
                last = None
                sc = _Scan(self, seg, start, entry)
                for batch in sc:
                    if (why := offset_misfit(seg.base_offset, batch.last_offset)) is None:
                        last = batch
                    else:  # the loader's rule: no log end from a batch the segment cannot hold (past 2^63-1)
                        self.findings.append(finding("offset-beyond-segment-range", seg.display,
                                                     batch.position, f"batch at offsets {batch.base_offset}.."
                                                     f"{batch.last_offset}: {why}; not counted for the log end"))
            finally:
                self.quiet = quiet
            self._leo = last.next_offset if last is not None else seg.base_offset
            self.step("log-end", f"log end offset {self._leo}: "
                      + (f"after the last batch of {seg.log.name} (scanned {sc.scanned:,} bytes from position"
                         f" {sc.start})" if last is not None else f"{seg.log.name} is empty (its base offset)"))
        return self._leo

    def largest_timestamp(self, i: int) -> tuple[int, int, str]:
        """(largest timestamp, offset of the batch that first reached it, how it was found) of segment ``i``."""
        if i in self._largest:
            return self._largest[i]
        seg = self.segments[i]
        tix = self.index(seg, time=True)
        last = tix.entry(tix.count - 1) if tix is not None and tix.count else None
        is_last = i == len(self.segments) - 1
        if last is not None and not is_last and not tix.preallocated:  # type: ignore[union-attr]
            result = (last[0], seg.base_offset + last[1], "its time index's last entry")
        else:  # the entries may not cover the tail: scan from the last entry's position
            quiet, self.quiet = self.quiet, True
            try:
                best_ts, best_off = (last[0], seg.base_offset + last[1]) if last is not None else (-1, seg.base_offset)
                entry, start = self.index_position(seg, best_off) if last is not None else (None, 0)
                sc = _Scan(self, seg, start, entry)
                for batch in sc:
                    if batch.max_timestamp > best_ts:
                        best_ts, best_off = batch.max_timestamp, batch.last_offset
            finally:
                self.quiet = quiet
            how = ("its time index and a scan of the rest" if last is not None
                   else "a scan (no usable time index)" if tix is None else "a scan (its time index has no entries)")
            result = (best_ts, best_off, f"{how}: {sc.scanned:,} bytes from position {sc.start}")
        self._largest[i] = result
        return result

    # -- offsets ----------------------------------------------------------------------------------------
    def find_offset(self, n: int, target: Target) -> Location:
        segs = self.segments
        if n < self.log_start:
            return self.location(target, False, note=f"offset {n} is below the log start offset {self.log_start}"
                                 f" ({self.log_start_source})")
        first = bisect.bisect_right(self.bases, n) - 1
        self.step("segment", f"segment {segs[first].log.name} (base offset {segs[first].base_offset}: binary search"
                             f" over {len(segs)} segment{'s' if len(segs) > 1 else ''})")
        for i in range(first, len(segs)):
            seg = segs[i]
            entry, start = self.index_position(seg, n) if i == first else (None, 0)
            sc = _Scan(self, seg, start, entry)
            for batch in sc:
                if batch.last_offset >= n:
                    return self._found_offset(n, target, seg, sc, batch)
            self.step("scan", f"scanned {sc.scanned:,} bytes ({sc.batches} batches) of {seg.log.name} from position"
                              f" {sc.start}: no batch reaches offset {n}")
            if i + 1 < len(segs):
                self.step("segment", f"next segment {segs[i + 1].log.name} (base offset {segs[i + 1].base_offset})")
        leo = self.log_end_offset()
        note = (f"offset {n} is at or past the log end offset {leo}" if n >= leo
                else f"no batch holds offset {n} or a later one (log end offset {leo})")
        return self.location(target, False, segment=segs[-1].display, note=note)

    def _found_offset(self, n: int, target: Target, seg: Segment, sc: _Scan, batch: Batch) -> Location:
        self.step("scan", f"scanned {sc.scanned:,} bytes ({sc.batches} batch{'es' if sc.batches != 1 else ''}) from"
                          f" position {sc.start} to the batch at position {batch.position}")
        record = self.first_record(seg, batch, lambda r: r.offset >= n)
        note = None
        if record is None:
            note = (f"the batch holds no record at or after offset {n} (compacted, or its records cannot be decoded);"
                    f" a consumer fetching {n} goes on with the next batch")
        elif record.offset != n:
            note = f"offset {n} is not in the log (compacted away?); the first record after it is {record.offset}"
        return self.location(
            target, True, offset=None if record is None else record.offset, segment=seg.display,
            index_entry=sc.entry, scan_start=sc.start, position=batch.position, bytes_scanned=sc.scanned,
            batches_scanned=sc.batches, batch=batch, record=record, note=note,
        )

    # -- timestamps -------------------------------------------------------------------------------------
    def find_timestamp(self, t: int, target: Target) -> Location:
        if t == EARLIEST_TIMESTAMP:
            self.step("target", f"earliest: the log start offset {self.log_start} ({self.log_start_source})")
            loc = self.find_offset(self.log_start, target)
            note = loc.note if loc.found else f"the log is empty ({loc.note})"
            return loc._replace(found=True, offset=self.log_start, note=note)
        if t == LATEST_TIMESTAMP:
            leo = self.log_end_offset()
            return self.location(target, True, offset=leo, segment=self.segments[-1].display,
                                 note=f"the log end offset {leo}: the offset the next record appended will get")
        if t == MAX_TIMESTAMP:
            return self._find_max(target)
        segs = self.segments
        for i in range(len(segs)):
            largest, _, how = self.largest_timestamp(i)
            if largest >= t:
                seg = segs[i]
                break
        else:
            top = max(self.largest_timestamp(i)[0] for i in range(len(segs)))
            return self.location(target, False, note=f"no record has a timestamp at or after {t} ({iso_time(t)}); the"
                                 f" largest is {top} ({iso_time(top)}): ListOffsets answers offset -1")
        self.step("segment", f"segment {seg.log.name}: the first of {len(segs)} whose largest timestamp is at or"
                             f" after the target ({largest}, {iso_time(largest)}, from {how})")
        base = seg.base_offset
        time_entry = (-1, base)
        tix = self.index(seg, time=True)
        if tix is None:
            self.step("timeindex", f"no usable time index: starting from the base offset {base}")
        else:
            slot = tix.floor(0, t)
            if slot < 0:
                self.step("timeindex", f"no entry at or below the target in {tix.name} ({tix.count} entries):"
                                       f" starting from the base offset {base}")
            else:
                ts, relative = tix.entry(slot)
                problem = tix.disorder(slot, strict_second=False)
                nxt = bisect.bisect_right(self.bases, base)
                if problem is None and (relative < 0 or (nxt < len(segs) and base + relative >= self.bases[nxt])):
                    problem = "offset outside the segment"
                if problem is not None:
                    self.fallback(f"{tix.name} slot {slot} ({ts} → offset {base + relative}): {problem};"
                                  f" starting from the base offset {base}")
                else:
                    time_entry = (ts, base + relative)
                    self.step("timeindex", f"time index entry {ts} ({iso_time(ts)}) → offset {base + relative} "
                                           f"({tix.name}, slot {slot} of {tix.count}, binary search)")
        entry, start = self.index_position(seg, max(time_entry[1], self.log_start))
        sc = _Scan(self, seg, start, entry)
        for batch in sc:
            if batch.max_timestamp >= t:
                record = self.first_record(seg, batch, lambda r: r.timestamp >= t and r.offset >= self.log_start)
                if record is not None:
                    self.step("scan", f"scanned {sc.scanned:,} bytes ({sc.batches} batches) from position {sc.start}"
                                      f" to the first batch with max timestamp at or after the target")
                    return self.location(
                        target, True, offset=record.offset, segment=seg.display, index_entry=sc.entry,
                        time_index_entry=time_entry, scan_start=sc.start, position=batch.position,
                        bytes_scanned=sc.scanned, batches_scanned=sc.batches, batch=batch, record=record,
                    )
                self.step("scan", f"the batch at position {batch.position} has max timestamp {batch.max_timestamp}"
                                  " but no record at or after the target: going on")
        return self.location(target, False, segment=seg.display, time_index_entry=time_entry,
                             note=f"{seg.log.name} holds no record with a timestamp at or after {t} although its"
                                  " largest timestamp says so: ListOffsets answers offset -1")

    def _find_max(self, target: Target) -> Location:
        """ListOffsets MAX_TIMESTAMP: the first record with the largest timestamp of the log."""
        best = None
        for i in range(len(self.segments)):
            ts, offset, _how = self.largest_timestamp(i)
            if best is None or ts > best[1]:  # the first segment holding the maximum (Scala's maxBy)
                best = (i, ts, offset)
        assert best is not None
        i, ts, offset = best
        seg = self.segments[i]
        if ts < 0:
            return self.location(target, False, note="no batch carries a timestamp")
        self.step("segment", f"segment {seg.log.name} holds the largest timestamp {ts} ({iso_time(ts)}), reached at"
                             f" offset {offset} (largest timestamp of each of {len(self.segments)} segments compared)")
        entry, start = self.index_position(seg, offset)
        sc = _Scan(self, seg, start, entry)
        for batch in sc:
            if batch.max_timestamp == ts:
                record = self.first_record(seg, batch, lambda r: r.timestamp == ts)  # RecordBatch.offsetOfMaxTimestamp
                self.step("scan", f"scanned {sc.scanned:,} bytes ({sc.batches} batches) from position {sc.start}"
                                  " to the first batch with that max timestamp")
                if record is None:
                    return self.location(target, False, segment=seg.display, position=batch.position, batch=batch,
                                         note="no record of that batch has its max timestamp (v0, or undecodable)")
                return self.location(
                    target, True, offset=record.offset, segment=seg.display, index_entry=sc.entry,
                    scan_start=sc.start, position=batch.position, bytes_scanned=sc.scanned,
                    batches_scanned=sc.batches, batch=batch, record=record,
                )
        return self.location(target, False, segment=seg.display,
                             note=f"no batch of {seg.log.name} has max timestamp {ts}")


def first_at_offset(partition: Path, from_offset: int) -> tuple[Path, int] | bool:
    """``dump --from-offset``: where the batch holding ``from_offset`` (or the first after it) is (segment, batch
    position), found as a fetch finds it: the segment by base offset, then its ``.index`` (a missing or broken index:
    a scan of that segment). False when ``from_offset`` is at or past the log end (nothing to show); True when it
    cannot be placed (below the log start, or no batch reaches it): every batch is read, and the range filters them."""
    loc = locate_offset(partition, from_offset)
    if loc.found and loc.segment is not None and loc.position is not None:
        return Path(loc.segment), loc.position
    if loc.log_end_offset is not None and from_offset >= loc.log_end_offset:
        return False
    return True


def first_at_time(partition: Path, from_time: int) -> tuple[Path, int] | bool:
    """``dump --from-time``: where the first record at or after ``from_time`` is (segment, batch position), found as
    Kafka's ListOffsets finds it: through each segment's ``.timeindex`` and ``.index`` (a missing or broken index: a
    scan of that segment); False when every record is older."""
    loc = locate_timestamp(partition, from_time)
    if not loc.found or loc.segment is None or loc.position is None:
        return False
    return Path(loc.segment), loc.position


__all__ = [
    "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "LocateOptions", "Location", "Segment", "Step",
    "PartitionFiles", "Target", "first_at_offset", "first_at_time", "iso_time", "locate", "locate_offset",
    "locate_timestamp", "parse_timestamp", "partition_files", "partition_segments",
]
