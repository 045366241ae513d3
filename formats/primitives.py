"""Kafka's primitive encodings, as Construct building blocks.

Follows ``clients/src/main/java/org/apache/kafka/common/utils/ByteUtils.java`` (varints) and
``common/protocol/types/Type.java`` / the generated-message conventions of ``clients/src/main/resources/
common/message/README.md`` (compact arrays and strings, tagged fields).

- ``varint`` / ``varlong``: zig-zag encoded base-128 little-endian groups (record fields).
- ``uvarint``: unsigned base-128 (lengths in flexible-version messages).
- Nullable byte fields: a signed length, -1 meaning null, then that many bytes.
- Compact (flexible) arrays/strings/bytes: unsigned varint of ``length + 1``; 0 means null.
- Tagged fields: uvarint count, then per field uvarint tag, uvarint size, ``size`` raw bytes.
- A log entry: int64 offset, int32 size, then ``size`` bytes: how every magic is framed in a log file.
"""

from __future__ import annotations

from construct import (
    Adapter,
    Array,
    Bytes,
    Construct,
    If,
    Int32sb,
    Int64sb,
    PaddedString,
    Prefixed,
    Rebuild,
    Struct,
    VarInt,
    ZigZag,
    this,
)

varint = ZigZag
uvarint = VarInt


def nullable_bytes(length_field: Construct) -> Struct:
    """``length`` (signed; -1 = null) then ``length`` bytes. Parses to a struct with ``.data``."""
    return Struct(
        "length" / Rebuild(length_field, lambda ctx: -1 if ctx.data is None else len(ctx.data)),
        "data" / If(this.length >= 0, Bytes(this.length)),
    )


class _Unwrap(Adapter):
    """Expose a ``{length, data}`` struct as plain ``bytes | None``."""

    def _decode(self, obj, context, path):
        return obj.data

    def _encode(self, obj, context, path):
        return {"data": obj}


def varint_bytes() -> Construct:
    """Record key/value: zig-zag varint length (-1 = null) then bytes."""
    return _Unwrap(nullable_bytes(varint))


def int32_bytes() -> Construct:
    """Legacy message key/value: int32 length (-1 = null) then bytes."""
    return _Unwrap(nullable_bytes(Int32sb))


def log_entry(offset: str, entry: str, body: Construct) -> Struct:
    """The framing every entry of a log file has, whatever its magic: an int64 offset named ``offset``, then an
    int32 size and exactly that many bytes, ``body`` named ``entry`` (``Records.OFFSET_OFFSET``/``SIZE_OFFSET``,
    ``LOG_OVERHEAD`` = 12; ``FileLogInputStream.nextBatch`` reads it before it looks at the magic)."""
    return Struct(offset / Int64sb, entry / Prefixed(Int32sb, body))


class _CompactLength(Adapter):
    """uvarint ``N + 1`` on the wire; -1 (null) as 0."""

    def _decode(self, obj, context, path):
        return obj - 1

    def _encode(self, obj, context, path):
        return obj + 1


compact_length = _CompactLength(uvarint)


def compact_array(element: Construct) -> Struct:
    """Flexible-version array: uvarint ``count + 1`` (0 = null), then ``count`` elements."""
    return Struct(
        "count" / Rebuild(compact_length, lambda ctx: -1 if ctx.entries is None else len(ctx.entries)),
        "entries" / If(this.count >= 0, Array(this.count, element)),
    )


compact_string = Struct(
    "length" / Rebuild(compact_length, lambda ctx: len(ctx.value.encode("utf-8"))),
    "value" / PaddedString(this.length, "utf8"),
)

tagged_field = Struct(
    "tag" / uvarint,
    "size" / Rebuild(uvarint, lambda ctx: len(ctx.data)),
    "data" / Bytes(this.size),
)

tagged_fields = Struct(
    "count" / Rebuild(uvarint, lambda ctx: len(ctx.fields)),
    "fields" / Array(this.count, tagged_field),
)

uuid = Bytes(16)

__all__ = [
    "compact_array",
    "compact_length",
    "compact_string",
    "int32_bytes",
    "log_entry",
    "nullable_bytes",
    "tagged_fields",
    "uuid",
    "uvarint",
    "varint",
    "varint_bytes",
]
