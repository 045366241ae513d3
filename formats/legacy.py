"""Message formats v0 and v1: the legacy message set (Kafka < 0.11, still readable by every broker).

Follows ``clients/src/main/java/org/apache/kafka/common/record/LegacyRecord.java`` and
``AbstractLegacyRecordBatch.java`` (KIP-32 added the v1 timestamp)::

    LogEntry =>
      offset        int64     absolute offset (a compressed wrapper carries its LAST inner offset)
      message_size  int32     bytes of message
      message       Message

    Message =>                      offset in entry
      crc           uint32          12   CRC32 of magic .. end of message
      magic         int8 (0 or 1)   16
      attributes    int8            17   bits 0-2 codec, bit 3 timestamp type (v1 only)
      timestamp     int64           18   v1 only
      key           int32 length (-1 = null) + bytes
      value         int32 length (-1 = null) + bytes

A compressed message ("wrapper") holds, in its value, a compressed message set of inner entries.
In v1 the inner offsets are relative (0..n-1) and the absolute offset of an inner message is
``wrapper offset - last inner offset + inner offset``; in v0 they are absolute.
"""

from __future__ import annotations

import zlib

from construct import (
    BitsInteger,
    BitStruct,
    If,
    Int8sb,
    Int32ub,
    Int64sb,
    Rebuild,
    Struct,
    Terminated,
    this,
)

from .constants import RECORD_OVERHEAD_V0 as RECORD_OVERHEAD_V0
from .constants import RECORD_OVERHEAD_V1 as RECORD_OVERHEAD_V1
from .primitives import int32_bytes, log_entry
from .record_batch import Compression, TimestampType

CRC_COVERAGE_OFFSET = 4  # within the message: from magic to the end

LegacyAttributes = BitStruct(  # the low byte of v2's attributes, with the same codec ids
    "unused" / BitsInteger(4),
    "timestamp_type" / TimestampType,  # v1 only; always 0 in v0
    "compression" / Compression,
)

MessageBody = Struct(  # what the CRC covers
    "magic" / Int8sb,
    "attributes" / LegacyAttributes,
    "timestamp" / If(this.magic >= 1, Int64sb),
    "key" / int32_bytes(),
    "value" / int32_bytes(),
    Terminated,
)


def _message_crc(ctx) -> int:
    return zlib.crc32(MessageBody.build(ctx.body))


Message = Struct(
    "crc" / Rebuild(Int32ub, _message_crc),  # parsed as stored; computed when building
    "body" / MessageBody,
)

LogEntry = log_entry("offset", "message", Message)  # offset, message_size, message
