"""Producer state snapshot (``<offset 20>.snapshot``), written at every segment roll and at shutdown.

Follows Kafka's ``storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateManager.java``
(``readSnapshot`` / ``writeSnapshot``, schema ``PID_SNAPSHOT_MAP_SCHEMA``) and the equivalent generated
message ``storage/src/main/resources/message/ProducerSnapshot.json`` (version 1, not flexible)::

    version int16 (=1) | crc uint32 | num_entries int32 | num_entries x entry (46 bytes each)
    entry: producer_id int64 | producer_epoch int16 | last_sequence int32 | last_offset int64 |
           offset_delta int32 | timestamp int64 | coordinator_epoch int32 | current_txn_first_offset int64

``crc`` is CRC32C over every byte from offset 6 (``num_entries``) to the end of the file, trailing
bytes included. Kafka parses the schema first (a negative count or entries running past the end
fail), then rejects a version other than 1, then a CRC mismatch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from construct import Array, Check, Int16sb, Int32sb, Int32ub, Int64sb, Struct, stream_size, stream_tell, this

from . import constants

# The numbers and the two rules the readers use without Construct (formats/constants.py), declared with the layout
VERSION = constants.SNAPSHOT_VERSION
CRC_OFFSET = constants.SNAPSHOT_CRC_OFFSET
ENTRIES_OFFSET = constants.SNAPSHOT_ENTRIES_OFFSET  # CRC32C covers [6, end of file)
PRODUCER_ENTRY_SIZE = constants.PRODUCER_ENTRY_SIZE  # 46
HEADER_SIZE = constants.SNAPSHOT_HEADER_SIZE  # 10
entries_fit = constants.entries_fit
snapshot_crc = constants.snapshot_crc

ProducerEntry = Struct(
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "last_sequence" / Int32sb,           # last sequence number written
    "last_offset" / Int64sb,             # offset of the last record written
    "offset_delta" / Int32sb,            # last offset - first offset of the last batch
    "timestamp" / Int64sb,               # max timestamp of the last batch
    "coordinator_epoch" / Int32sb,       # epoch of the last transaction coordinator
    "current_txn_first_offset" / Int64sb,  # first offset of the open transaction, -1 if none
)

SnapshotHeader = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "num_entries" / Int32sb,
)


def _entries_fit_stream(ctx) -> bool:
    return ctx._building or entries_fit(ctx.num_entries, stream_size(ctx._io) - stream_tell(ctx._io, None))


ProducerSnapshot = Struct(
    *SnapshotHeader.subcons,
    Check(_entries_fit_stream),  # reject a count that cannot fit before Array allocates anything
    "entries" / Array(this.num_entries, ProducerEntry),
)


def build_snapshot(entries: Iterable[Mapping[str, int]], version: int = VERSION) -> bytes:
    """Snapshot file bytes exactly as ``ProducerStateManager.writeSnapshot`` writes them (CRC filled in)."""
    entries = list(entries)
    snapshot = dict(version=version, crc=0, num_entries=len(entries), entries=entries)
    raw = bytearray(ProducerSnapshot.build(snapshot))
    raw[CRC_OFFSET:ENTRIES_OFFSET] = Int32ub.build(snapshot_crc(bytes(raw)))
    return bytes(raw)

