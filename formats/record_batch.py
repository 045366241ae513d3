"""Message format v2: the record batch and its records (Kafka >= 0.11).

Follows ``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` and
``DefaultRecord.java`` (and KIP-98 / KIP-32 for the fields)::

    RecordBatch =>                                  offset in batch
      base_offset            int64                  0
      batch_length           int32                  8   bytes after this field
      partition_leader_epoch int32                  12
      magic                  int8 (= 2)             16
      crc                    uint32                 17  CRC32C of attributes .. end of batch
      attributes             int16                  21  bits 0-2 codec, 3 timestamp type,
                                                         4 transactional, 5 control, 6 delete horizon
      last_offset_delta      int32                  23
      base_timestamp         int64                  27  (the delete horizon when bit 6 is set)
      max_timestamp          int64                  35
      producer_id            int64                  43
      producer_epoch         int16                  51
      base_sequence          int32                  53
      records_count          int32                  57
      records                (compressed as a whole) 61

    Record =>
      length          varint   bytes after this field
      attributes      int8     (unused)
      timestamp_delta varlong
      offset_delta    varint
      key             varint length (-1 = null) + bytes
      value           varint length (-1 = null) + bytes
      headers         varint count, each: varint key length + UTF-8 key, varint value length (-1 = null) + bytes

``records`` is bounded by ``batch_length`` and each record by its ``length``; a record must consume
exactly its declared length (``Terminated``), as ``DefaultRecord.readFrom`` insists.
"""

from __future__ import annotations

from construct import (
    Array,
    BitsInteger,
    BitStruct,
    Const,
    Enum,
    Flag,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Prefixed,
    Rebuild,
    Struct,
    Terminated,
)
from crc32c import crc32c

from .constants import ATTRIBUTES_OFFSET as ATTRIBUTES_OFFSET
from .constants import CRC_OFFSET as CRC_OFFSET
from .constants import LOG_OVERHEAD as LOG_OVERHEAD
from .constants import MAGIC_OFFSET as MAGIC_OFFSET
from .constants import RECORD_BATCH_OVERHEAD as RECORD_BATCH_OVERHEAD
from .primitives import log_entry, varint, varint_bytes

Compression = Enum(BitsInteger(3), none=0, gzip=1, snappy=2, lz4=3, zstd=4)
TimestampType = Enum(BitsInteger(1), create=0, log_append=1)

Attributes = BitStruct(
    "unused" / BitsInteger(9),
    "has_delete_horizon_ms" / Flag,
    "is_control" / Flag,
    "is_transactional" / Flag,
    "timestamp_type" / TimestampType,
    "compression" / Compression,
)

# The header fields the CRC covers (attributes .. records_count), shared by the two views below.
_CRC_COVERED_HEADER = (
    "attributes" / Attributes,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)

# Everything the CRC covers.
BatchBody = Struct(
    *_CRC_COVERED_HEADER,
    "records" / GreedyBytes,  # bounded by batch_length (Prefixed below); compressed as one unit
)


def _body_crc(ctx) -> int:
    return crc32c(BatchBody.build(ctx.body))


RecordBatch = log_entry(  # base_offset, batch_length, then the batch
    "base_offset",
    "batch",
    Struct(
        "partition_leader_epoch" / Int32sb,
        "magic" / Const(2, Int8sb),
        "crc" / Rebuild(Int32ub, _body_crc),  # parsed as stored; computed when building
        "body" / BatchBody,
    ),
)

# The fixed-size part, for reading a header without its records.
RecordBatchHeader = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    *_CRC_COVERED_HEADER,
)
assert RecordBatchHeader.sizeof() == RECORD_BATCH_OVERHEAD


Header = Struct(
    "key" / varint_bytes(),     # Kafka requires a non-null key; kept as bytes, decoded by readers
    "value" / varint_bytes(),
)

RecordBody = Struct(
    "attributes" / Int8sb,
    "timestamp_delta" / varint,
    "offset_delta" / varint,
    "key" / varint_bytes(),
    "value" / varint_bytes(),
    "headers_count" / Rebuild(varint, lambda ctx: len(ctx.headers)),
    "headers" / Array(lambda ctx: ctx.headers_count, Header),
    Terminated,
)

Record = Prefixed(varint, RecordBody)


def records_section(count: int) -> Struct:
    """The (decompressed) records section: exactly ``count`` records and nothing after them."""
    return Struct("records" / Array(count, Record), Terminated)
