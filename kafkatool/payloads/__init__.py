"""Keys and values read as the application wrote them: Kafka's own serializers, JSON, and schemas.

The simple decoders follow Kafka's ``org.apache.kafka.common.serialization`` deserializers: ``string``
(``StringDeserializer``: UTF-8, invalid bytes replaced), ``int`` (``IntegerDeserializer``: exactly 4 bytes, big
endian), ``long`` (``LongDeserializer``: 8 bytes), ``double`` (``DoubleDeserializer``: 8 bytes, IEEE 754),
``uuid`` (``UUIDDeserializer``: the UUID's 36-character text; 16 raw big-endian bytes are read too, as many
applications write them). ``json`` is the payload as UTF-8 JSON. The schema decoders (``avro``, ``protobuf``,
``json-schema``) read Confluent's wire format (magic byte 0, a 4-byte schema id, for Protobuf a message-index
array, then the body) with the writer's schema from Schema Registry's ``_schemas`` topic on disk or a
``--schemas`` dir; ``auto`` takes Confluent framing to the schema's type and anything else as JSON, then text,
then raw bytes, except in a topic whose subject (TopicNameStrategy: ``<topic>-value``) the registry holds, where a
payload that is not framed does not decode.

A decoder is a function of the payload (``None`` for a null key or value) to :class:`Decoded`; it never raises on
untrusted bytes: a payload that does not decode gives ``Decoded(error=...)``, which the caller turns into a
``payload-undecodable`` finding at the record's offset while the record is still shown raw.
"""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Callable

from ..errors import UsageError
from ..model import Finding
from .decoded import Decoded, PayloadDecoder, SchemaSources

SIMPLE_DECODERS = ("string", "int", "long", "double", "uuid", "json")
SCHEMA_DECODERS = ("avro", "protobuf", "json-schema", "auto")
DECODERS = SIMPLE_DECODERS + SCHEMA_DECODERS


def _string(data: bytes) -> Decoded:
    return Decoded(data.decode("utf-8", "replace"))


def _fixed(fmt: str, what: str) -> Callable[[bytes], Decoded]:
    size = struct.calcsize(fmt)

    def read(data: bytes) -> Decoded:
        if len(data) != size:
            return Decoded(error=f"{len(data)} bytes where {what} has {size}")
        (value,) = struct.unpack(fmt, data)
        if isinstance(value, float) and not math.isfinite(value):
            # NaN and the infinities have no JSON number: shown as Java's Double.toString prints them
            value = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[str(value)]
        return Decoded(value)

    return read


def _uuid(data: bytes) -> Decoded:
    if len(data) == 16:
        return Decoded(str(uuid.UUID(bytes=data)))
    try:
        return Decoded(str(uuid.UUID(data.decode("ascii"))))
    except (UnicodeDecodeError, ValueError):
        return Decoded(error=f"{len(data)} bytes: neither a UUID's text nor its 16 bytes")


def _json(data: bytes) -> Decoded:
    import json  # here: the output layer imports this package at every start, which must not load json (test_startup)

    try:
        return Decoded(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return Decoded(error=f"not UTF-8 JSON: {e}")


_SIMPLE: dict[str, Callable[[bytes], Decoded]] = {
    "string": _string,
    "int": _fixed(">i", "an int32"),
    "long": _fixed(">q", "an int64"),
    "double": _fixed(">d", "a double"),
    "uuid": _uuid,
    "json": _json,
}


def _nulls_pass(read: Callable[[bytes], Decoded]) -> PayloadDecoder:
    def decode(data: bytes | None, subject: str | None = None) -> Decoded:
        return Decoded() if data is None else read(bytes(data))
    return decode


def payload_decoder(name: str, sources: SchemaSources | None = None) -> tuple[PayloadDecoder, list[Finding]]:
    """The decoder ``--key-decoder``/``--value-decoder NAME`` asks for, with the findings met while loading its
    schemas (an unreadable ``_schemas`` record, a schema that does not parse). A name not in :data:`DECODERS` is a
    usage error."""
    if name in _SIMPLE:
        return _nulls_pass(_SIMPLE[name]), []
    if name not in SCHEMA_DECODERS:
        raise UsageError(f"unknown decoder {name!r}: one of {', '.join(DECODERS)}")
    # Here, not at the top: the schema registry's reader brings the internal-topic decoders (Construct, the
    # compiled schemas: ~150 ms), which every command's output layer would pay for at start-up (tests/test_startup.py).
    from .confluent import schema_decoder

    return schema_decoder(name, sources or SchemaSources())
