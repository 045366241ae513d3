"""The ``index.interval.bytes`` a partition's offset indexes were written with, read back from the indexes.

Kafka adds an offset index entry for a batch when more than ``index.interval.bytes`` bytes lie between the start of
the last indexed batch (or the segment's start) and this batch's start: ``LogSegment.append`` checks
``bytesSinceLastIndexEntry > indexIntervalBytes`` before counting the batch, then resets the count, and
``LogSegment.recover`` applies the same rule to ``validBytes - lastIndexEntry``. The entry is the batch's last offset
and its position. So a segment's batch positions and its entries bound the interval:

- an indexed batch at ``gap`` bytes after the previous entry: ``interval < gap``;
- a batch not indexed at ``gap`` bytes after the previous entry: ``interval >= gap``.

Every segment whose ``.index`` holds entries gives a range ``[low, high)``; the ranges of a partition's segments
are intersected. Within it the broker default 4096 is preferred, then other common values, else its low end (any
value in it rebuilds the same entries). A segment whose entries fit no interval (a corrupt index, an entry that is
not at a batch start, a broker restarted mid-segment: its count starts again at 0, or the topic's interval changed)
is left out and counted. No entries at all, or segments that disagree, give 4096, and the note says so.

The batches are read as stretches where the native core finds them (:class:`RangeFit`): between two entries only the
batch just before the later one bounds the interval from below, so a stretch costs a search per entry, not a look at
each batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from .filetypes import FileKind, open_regular, read_to_hole
from .logfiles import Named, PartitionFiles, sort_files
from .model import Batch, Stretch, placed
from .records import ScanOptions, scan
from .smallfiles import OFFSET_SLOT, offset_index_sanity, offset_slots

DEFAULT = 4096          # the broker's log.index.interval.bytes
COMMON = (4096, 1024, 8192, 2048, 16384, 512, 32768, 65536, 1 << 20)
SCAN_BYTES = 4 << 20    # each segment is read this far: hundreds of entries at the usual intervals
TOTAL_BYTES = 16 << 20  # and no more than this in all, newest segments first (a partition of many small segments
                        # would otherwise be read twice by repair: a topic's interval is one setting)
_SCAN = ScanOptions()


class IndexInterval(NamedTuple):
    """The interval and where it came from: ``option`` (given), ``inferred`` (from ``entries`` index entries in
    ``segments`` segments, consistent with ``low`` <= interval < ``high``; None: no upper bound) or ``default``."""

    value: int
    source: str
    note: str
    entries: int = 0
    segments: int = 0
    low: int | None = None
    high: int | None = None


_NO_ENTRIES = IndexInterval(DEFAULT, "default", "(default: no offset index entries to infer it from)")


def segment_range(positions: list[int], entry_positions: list[int]) -> tuple[int, int | None] | None:
    """``(low, high)``: the intervals ``low <= I < high`` (``high`` None: unbounded) under which Kafka's rule indexes
    exactly the batches at ``entry_positions`` among the batches at ``positions`` (ascending, from the segment's
    start); None when no interval does. Entries past the last position are not judged."""
    fit = RangeFit(entry_positions)
    for p in positions:
        fit.batch(p)
    return fit.range()


class RangeFit:
    """:func:`segment_range` fed a segment's batches in file order: one at a time (:meth:`batch`), or the back-to-back
    batches of a :class:`kafkatool.model.Stretch` at once (:meth:`stretch`, a search per entry).

    Each batch at ``gap`` bytes after the last indexed one (or the segment's start) bounds the interval: indexed,
    ``I < gap``; not indexed, ``I >= gap``. Between two entries the gaps grow batch by batch, so of the batches not
    indexed only the last one before the next entry (or the last batch fed) bounds it from below."""

    __slots__ = ("entries", "next", "low", "high", "last", "end", "fits")

    def __init__(self, entry_positions: list[int]) -> None:
        self.entries = sorted(set(entry_positions))
        self.next = 0                   # the first entry not met yet
        self.low, self.high = 0, None   # high None: unbounded
        self.last = 0                   # where the last indexed batch begins (0: the segment's start)
        self.end: int | None = None     # where the last batch fed begins
        self.fits = True                # False: an entry is not at a batch start

    def batch(self, position: int) -> None:
        """The batch beginning at ``position``."""
        entries, k = self.entries, self.next
        if k < len(entries) and entries[k] <= position:
            if entries[k] < position:
                self.fits = False  # an entry inside the batch before, not at its start
                return
            gap = position - self.last
            self.high = gap if self.high is None else min(self.high, gap)
            self.last, self.next = position, k + 1
        else:
            self.low = max(self.low, position - self.last)
        self.end = position

    def stretch(self, stretch: Stretch, start: int, end: int) -> None:
        """The batches of ``stretch``, which lie in bytes ``start:end`` of the segment: each entry among them found
        with :meth:`Stretch.seek`, with the batch just before it."""
        entries, k = self.entries, self.next
        i, at = stretch.lo, start
        tail = stretch.batch(stretch.hi - 1)[0]  # where its last batch begins: entries past it are the next batch's
        while k < len(entries) and entries[k] <= tail:
            e = entries[k]
            j, p, before = stretch.seek(e, i, at, end)
            if p != e:
                self.fits = False
                return
            if before is not None and before > self.last:
                self.low = max(self.low, before - self.last)
            gap = e - self.last
            self.high = gap if self.high is None else min(self.high, gap)
            self.last, k = e, k + 1
            i, at = j, e
        self.next = k
        if tail > self.last:
            self.low = max(self.low, tail - self.last)
        self.end = tail

    def feed(self, items: Iterable[object]) -> None:
        """A segment's scan (:func:`kafkatool.records.scan`, with or without ``stretches``) in file order, up to its
        first damage (what follows is not evidence) or the first batch no interval fits."""
        for item, start, end in placed(items):
            if item.__class__ is Stretch:
                self.stretch(item, start, end)
            elif item.__class__ is Batch:
                self.batch(start)
            else:
                break
            if not self.fits:
                break

    def range(self) -> tuple[int, int | None] | None:
        """``(low, high)`` as :func:`segment_range` gives it for the batches fed."""
        if not self.fits or self.high is not None and self.low >= self.high:
            return None
        return self.low, self.high


def _fit(log: Path, options: ScanOptions, limit: int, entry_positions: list[int]) -> RangeFit:
    """The batches of ``log`` beginning before byte ``limit`` up to its first damage, fed to a :class:`RangeFit` (as
    stretches where the native core finds them)."""
    fit = RangeFit(entry_positions)
    with open_regular(log) as fh:
        fit.feed(scan(fh, str(log), end=limit, stretches=True, options=options))
    return fit


def _read_index(path: Path) -> tuple[bytes, int]:
    """An offset index's bytes up to a trailing hole, and its size (:func:`kafkatool.filetypes.read_to_hole`)."""
    return read_to_hole(path, OFFSET_SLOT)


def infer_index_interval(part_dir: Path, options: ScanOptions = _SCAN,
                         scan_bytes: int = SCAN_BYTES, total_bytes: int = TOTAL_BYTES,
                         files: Iterable[Named] | PartitionFiles | None = None,
                         read_index: Callable[[Path], tuple[bytes, int]] = _read_index) -> IndexInterval:
    """The ``index.interval.bytes`` the offset indexes of the partition at ``part_dir`` fit (see the module); the
    newest segments first (the setting the broker writes with now), ``scan_bytes`` of each, ``total_bytes`` in all.
    ``files``: the dir's (path, display) listing when discovery has it (not listed again), or that listing by role
    (:func:`kafkatool.logfiles.sort_files`, as ``verify`` has it: no name classified again); each index is read once
    (a partition of many one-batch segments has nothing but empty ones), by ``read_index``: its bytes up to a
    trailing hole and its size (``verify`` keeps the bytes for its check of the index)."""
    low, high, entries, used, skipped, read = 0, None, 0, 0, 0, 0
    if not isinstance(files, PartitionFiles):
        files = sort_files(files if files is not None
                           else [(p, str(p)) for p in Path(part_dir).iterdir() if p.is_file()])
    segments, indexes = files.segments, files.indexes
    for base in sorted(segments, reverse=True):  # a segment's name is its base offset in 20 digits: name order
        if read >= total_bytes:
            break
        named = indexes.get((base, FileKind.INDEX))
        if named is None:
            continue
        log, index = segments[base][0], named[0]
        try:
            data, size = read_index(index)
        except OSError:  # unreadable, or too large to be an index: the segment's check says so; no entry here
            continue
        if size < OFFSET_SLOT:  # no whole slot: no entry (a one-batch segment's index is empty)
            continue
        slots = offset_slots(data, size)
        listed = slots.position[: slots.used]
        if not listed:
            continue
        read += min(scan_bytes, log.stat().st_size)
        sane = offset_index_sanity(data, str(index), size) is None
        fitted = _fit(log, options, scan_bytes, listed.tolist()) if sane else None
        fit = None if fitted is None else fitted.range()
        if fit is None:
            skipped += 1
            continue
        used += 1
        last = fitted.end  # type: ignore[union-attr]
        entries += sum(1 for position in listed if last is not None and position <= last)
        low = max(low, fit[0])
        high = fit[1] if high is None else (high if fit[1] is None else min(high, fit[1]))
    left_out = f"; {skipped} segment(s) whose entries fit no interval left out" if skipped else ""
    if entries == 0:
        if not used and not skipped:  # every index empty: one value for every such partition
            return _NO_ENTRIES
        return IndexInterval(DEFAULT, "default", f"(default: no offset index entries to infer it from{left_out})",
                             segments=used)
    if high is not None and low >= high:
        return IndexInterval(DEFAULT, "default", f"(default: the {entries} offset index entries of {used} segments "
                             f"fit no single interval{left_out})", entries, used, low, high)
    value = next((c for c in COMMON if low <= c and (high is None or c < high)), max(low, 1))
    if high is not None and value >= high:
        value = low
    span = f"{low}..{high - 1}" if high is not None else f"{low} or more"
    return IndexInterval(value, "inferred", f"(inferred from {entries} offset index entries in {used} segments: "
                         f"they fit {span}{left_out})", entries, used, low, high)


def resolve_index_interval(part_dir: Path, given: int | None, options: ScanOptions = _SCAN,
                           files: Iterable[Named] | PartitionFiles | None = None,
                           read_index: Callable[[Path], tuple[bytes, int]] = _read_index) -> IndexInterval:
    """``given`` (``--index-interval-bytes``) when set, else what the partition's indexes say (``files``: its
    listing or its files by role, ``read_index``: how an index is read, see :func:`infer_index_interval`)."""
    if given is not None:
        return IndexInterval(given, "option", "(from --index-interval-bytes)")
    return infer_index_interval(part_dir, options, files=files, read_index=read_index)


__all__ = ["COMMON", "DEFAULT", "IndexInterval", "RangeFit", "infer_index_interval", "resolve_index_interval",
           "segment_range"]
