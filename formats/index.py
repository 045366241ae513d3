"""Offset index (``.index``) and time index (``.timeindex``) files of a log segment.

Follows Kafka's ``storage/src/main/java/org/apache/kafka/storage/internals/log/OffsetIndex.java``,
``TimeIndex.java`` and their base class ``AbstractIndex.java``. Both files are flat arrays of
fixed-size big-endian entries, with offsets stored relative to the segment's base offset (the
20-digit number in the file name)::

    .index      entry (8 bytes):  relative_offset int32 | position int32   (byte position in the .log)
    .timeindex  entry (12 bytes): timestamp int64       | relative_offset int32

The active segment's index files are preallocated (``segment.index.bytes``, 10 MiB by default,
rounded down to a whole number of entries) and zero-filled; Kafka trims them to the written
entries when the segment is rolled or closed, so a crash leaves zero-filled slots after the last
real entry. A file whose length is not a whole number of entries is corrupt
(``AbstractIndex`` maps ``length / entry_size`` whole entries; ``sanityCheck()`` rejects the rest).
"""

from __future__ import annotations

from construct import Array, Construct, GreedyBytes, Int32sb, Int64sb, Struct, stream_size, stream_tell

OffsetIndexEntry = Struct(
    "relative_offset" / Int32sb,  # offset - base offset of the segment
    "position" / Int32sb,         # physical byte position of the batch in the .log
)

TimeIndexEntry = Struct(
    "timestamp" / Int64sb,        # largest timestamp seen up to (and including) this offset
    "relative_offset" / Int32sb,  # offset - base offset of the segment
)

OFFSET_INDEX_ENTRY_SIZE = OffsetIndexEntry.sizeof()  # 8
TIME_INDEX_ENTRY_SIZE = TimeIndexEntry.sizeof()      # 12


def whole_entries(entry: Construct) -> Construct:
    """A file made of as many whole ``entry`` records as fit, then any leftover bytes.

    The count comes from the file length (never from the data), so a bad entry cannot make the
    parser run past the end; ``trailing`` holds the partial entry Kafka ignores (and reports).
    """
    size = entry.sizeof()

    def count(this) -> int:
        if this._building:
            return len(this.entries)
        return (stream_size(this._io) - stream_tell(this._io, None)) // size

    return Struct("entries" / Array(count, entry), "trailing" / GreedyBytes)


OffsetIndex = whole_entries(OffsetIndexEntry)
TimeIndex = whole_entries(TimeIndexEntry)
