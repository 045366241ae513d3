"""A segment's offset and time index as Kafka builds them from its batches (the one home of that rule).

``LogSegment.append`` (the log writer, one append at a time) and ``LogSegment.recover`` (the loader, one batch at a
time; ``storage/.../internals/log/LogSegment.java``) follow the same rule, fed with the position, size, last offset
and max timestamp of each append:

- the largest timestamp so far and the offset it belongs to (``maxTimestampAndOffsetSoFar``; the shallow offset:
  the last offset of the batch that first reached it) are updated first;
- when more than ``index.interval.bytes`` were appended since the last index entry (``bytesSinceLastIndexEntry``,
  counted *before* this append; ``recover``: ``validBytes - lastIndexEntry``), the offset index gets (last
  offset of the append, its position) (``OffsetIndex.append``) and the time index (max timestamp so far, its
  offset) unless that timestamp is not above its last entry's (``TimeIndex.maybeAppend``);
- when the segment becomes inactive or is closed (``onBecomeInactiveSegment``, ``LogSegment.close``), the time
  index gets one last ``maybeAppend`` of the max timestamp so far; ``AbstractIndex.trimToValidSize`` leaves the
  files holding exactly their entries (a killed broker leaves them preallocated: zero-filled slots after them).

The loader recovers a run of batches that follow each other (:class:`kafkatool.model.Stretch`) in one step
(:meth:`SegmentIndexes.append_stretch`), with the same rule: such batches lie back to back, so the bytes since the last
entry at a batch are its position less that entry's, and the next entry falls on the first batch beginning more than
the interval after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import IndexAppendError
from .filetypes import FileKind
from .model import Batch, Stretch, placed
from .smallfiles import AbortedTxn, entry_struct

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1  # offsets are Java longs: a batch ending here has no next offset (lastOffset + 1 wraps)


def last_offset_limit(base_offset: int) -> int:
    """The largest last offset a batch of the segment based at ``base_offset`` may have: one its indexes can address
    (``OffsetIndex.canAppendOffset``: ``offset - baseOffset`` in ``[0, Integer.MAX_VALUE]``, which
    ``LogSegment.append`` and ``LogSegment.recover`` require of each batch's last offset, ``ensureOffsetInRange``)
    and whose next offset is still a signed 64-bit offset. The lower bound is ``base_offset`` itself."""
    return min(base_offset + INT32_MAX, INT64_MAX - 1)


def offset_misfit(base_offset: int, last_offset: int) -> str | None:
    """Why a batch ending at ``last_offset`` does not fit the segment based at ``base_offset``
    (:func:`last_offset_limit`), or None. Kafka throws ``LogSegmentOffsetOverflowException`` there."""
    if last_offset < base_offset:
        return (f"its last offset {last_offset} is below the segment base offset {base_offset}: a negative "
                "offset relative to the segment (LogSegment.ensureOffsetInRange)")
    if last_offset > INT64_MAX - 1:
        return (f"its last offset {last_offset} leaves no next offset below 2^63 (offsets are signed 64-bit; "
                "lastOffset + 1 would wrap)")
    if last_offset - base_offset > INT32_MAX:
        return (f"its last offset {last_offset} is more than 2^31-1 above the segment base offset {base_offset}: "
                "the indexes cannot address it (LogSegment.ensureOffsetInRange)")
    return None


class SegmentIndexes:
    """The ``.index`` and ``.timeindex`` of one segment, built append by append (see the module doc)."""

    __slots__ = ("base_offset", "interval", "offsets", "times", "bytes_since_last_entry", "max_timestamp",
                 "offset_of_max_timestamp")

    def __init__(self, base_offset: int, index_interval_bytes: int) -> None:
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.offsets: list[tuple[int, int]] = []   # (offset, position)
        self.times: list[tuple[int, int]] = []     # (timestamp, offset)
        self.bytes_since_last_entry = 0
        self.max_timestamp = -1                     # TimeIndex.lastEntry() of an empty index: (NO_TIMESTAMP, base)
        self.offset_of_max_timestamp = base_offset

    def append(self, position: int, size: int, last_offset: int, max_timestamp: int,
               offset_of_max_timestamp: int) -> None:
        """One append (``LogSegment.append``) or one recovered batch (``LogSegment.recover``) at ``position``."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, offset_of_max_timestamp
        if self.bytes_since_last_entry > self.interval:
            self._entry(last_offset, position)
            self.bytes_since_last_entry = 0
        self.bytes_since_last_entry += size

    def append_stretch(self, stretch: Stretch, start: int, end: int) -> None:
        """The batches of ``stretch``, which lie in bytes ``start:end`` of the segment, each recovered as :meth:`append`
        takes it (its last offset as the offset of its max timestamp), in one step: per index entry, not per batch.

        At batch ``j`` of the stretch, beginning at ``p_j``, ``bytes_since_last_entry`` is what it is at the first
        batch ``i`` plus ``p_j - p_i`` (the batches lie back to back), so the next entry is at the first batch
        beginning more than ``interval - bytes_since_last_entry`` bytes after batch ``i`` (:meth:`Stretch.seek`); the
        max timestamp there is the largest up to that batch, reached first at the batch
        :meth:`Stretch.first_reaching` finds."""
        advance, hi = stretch.columns.advance, stretch.hi
        i, at = stretch.lo, start
        while i < hi:
            j, position, _ = stretch.seek(at + self.interval - self.bytes_since_last_entry + 1, i, at, end)
            if j == hi:
                break
            _, last, top, _, after = advance(i, j + 1)  # batches i..j: the last offset of j, where it ends
            if top > self.max_timestamp:
                k = stretch.first_reaching(top, i, j + 1)
                self.max_timestamp, self.offset_of_max_timestamp = top, last if k == j else advance(k, k + 1)[1]
            self._entry(last, position)
            self.bytes_since_last_entry = after - position
            i, at = j + 1, after
        if i < hi:
            top = advance(i, hi)[2]
            if top > self.max_timestamp:
                k = stretch.first_reaching(top, i, hi)
                self.max_timestamp, self.offset_of_max_timestamp = top, advance(k, k + 1)[1]
            self.bytes_since_last_entry += end - at

    def append_scan(self, items: Iterable[Any]) -> None:
        """Every batch of a segment's scan (:func:`kafkatool.records.scan`, with or without ``stretches``: its
        :class:`Batch` es and :class:`Stretch` es in file order; findings and anything else passed over), as
        :meth:`append` and :meth:`append_stretch` take them: the indexes of a segment kept whole."""
        for item, start, end in placed(items):
            if item.__class__ is Stretch:
                self.append_stretch(item, start, end)
            elif item.__class__ is Batch:
                self.append(start, item.size, item.last_offset, item.max_timestamp, item.last_offset)

    def _entry(self, last_offset: int, position: int) -> None:
        """``OffsetIndex.append`` of the batch at ``position`` (its last offset), and ``TimeIndex.maybeAppend`` of the
        max timestamp so far."""
        self._relative(last_offset, position)
        if self.offsets and last_offset <= self.offsets[-1][0]:
            raise IndexAppendError(f"offset index entry {last_offset} at byte {position} is not above the last "
                                   f"one ({self.offsets[-1][0]}): InvalidOffsetException", position)
        self.offsets.append((last_offset, position))
        self.maybe_append_time(self.max_timestamp, self.offset_of_max_timestamp, position)

    def maybe_append_time(self, timestamp: int, offset: int, position: int | None = None) -> None:
        """``TimeIndex.maybeAppend``: only a timestamp above the last entry's is added (``position``: of the batch
        whose entry it is, for the error)."""
        times = self.times
        if times:
            last_timestamp, last_offset = times[-1]
            if offset < last_offset or timestamp < last_timestamp:
                raise IndexAppendError(f"time index entry ({timestamp}, {offset}) goes back from ({last_timestamp}, "
                                       f"{last_offset})", position)
            if timestamp > last_timestamp:
                self._relative(offset, position)
                times.append((timestamp, offset))
        elif timestamp > -1:
            self._relative(offset, position)
            times.append((timestamp, offset))

    def _relative(self, offset: int, position: int | None) -> None:
        """``AbstractIndex.relativeOffset``: an entry's offset must fit 32 bits above the base
        (``IndexOffsetOverflowException``), so the index files can be written at all."""
        if not 0 <= offset - self.base_offset <= INT32_MAX:
            raise IndexAppendError(f"index entry offset {offset} does not fit 32 bits relative to the segment base "
                                   f"offset {self.base_offset}: IndexOffsetOverflowException", position)

    def close(self) -> None:
        """``onBecomeInactiveSegment`` / ``LogSegment.close``: the last time-index entry."""
        self.maybe_append_time(self.max_timestamp, self.offset_of_max_timestamp)

    def index_bytes(self) -> bytes:
        """The ``.index`` file (:data:`kafkatool.formats.index.OffsetIndex`): its entries (a crash leaves them
        preallocated after: ``PartitionWriter`` extends the file). Packed with ``struct`` (the construct costs ~20 µs
        an entry)."""
        base = self.base_offset
        pack = _OFFSET_ENTRY.pack
        return b"".join([pack(o - base, p) for o, p in self.offsets])

    def timeindex_bytes(self) -> bytes:
        """The ``.timeindex`` file (:data:`kafkatool.formats.index.TimeIndex`): its entries."""
        base = self.base_offset
        pack = _TIME_ENTRY.pack
        return b"".join([pack(t, o - base) for t, o in self.times])


def txn_index_bytes(aborted: Iterable[AbortedTxn]) -> bytes:
    """``.txnindex`` bytes of these aborted transactions (``TransactionIndex.append``, one entry each)."""
    pack = entry_struct(FileKind.TXN_INDEX).pack
    return b"".join([pack(*t) for t in aborted])


# The entry layouts of kafkatool.formats.index (OffsetIndexEntry: relative offset, position; TimeIndexEntry:
# timestamp, relative offset), big-endian, as the readers decode them.
_OFFSET_ENTRY = entry_struct(FileKind.INDEX)
_TIME_ENTRY = entry_struct(FileKind.TIME_INDEX)


__all__ = ["INT32_MAX", "INT64_MAX", "SegmentIndexes", "last_offset_limit", "offset_misfit", "txn_index_bytes"]
