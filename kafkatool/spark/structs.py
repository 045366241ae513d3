"""``value_struct``/``key_struct``: the decoded payloads as a struct column, typed from the writer's schema.

Given only where every Confluent-framed value (key) the data source scans names a schema of one subject (the
versions of one subject merged: Schema Registry's compatibility lets a later version add fields, which are null in
the rows of the earlier ones) or one schema. Several subjects, several schema types, or versions whose fields
cannot be merged (one name, two types) give no struct column and a warning on the ``kafkatool.spark`` logger
saying why: the records level has no findings rows, and the schema is settled before any row is read (in the
Python worker Spark runs ``DataSource.schema`` in).
Finding the schema ids reads the scanned records once more, when the schema is asked for.

Avro (``org.apache.avro.Schema``) to Spark types: record → struct, array → array, map → map<string, …>,
enum → string, a union with null → its other branch, nullable; a union of several other types → string holding
the value's JSON; bytes and fixed → string (base64, as the JSON decoding gives them); every logical type (date,
timestamp-millis/micros, decimal, uuid...) → string, as the JSON decoding renders it (ISO-8601 UTC, an exact
decimal): the struct holds what ``value_decoded`` holds. JSON Schema: an ``object`` with ``properties`` → struct
(each field nullable), ``additionalProperties`` alone → map<string, …>, ``array`` with ``items`` → array,
``string``/``integer``/``number``/``boolean`` → string/long/double/boolean, a type list with ``null`` → nullable;
anything else (``$ref``, ``oneOf``...) → string holding the JSON. Protobuf (``ProtobufSchema``): the message every
framed payload's message-index array names (one message across the topic, else no struct column, said), as proto3's
JSON mapping renders it with the schema's field names (``JsonFormat``): message → struct, every field nullable
(a field at its default is left out, a oneof's other members too), repeated → array, map → map<string, …> (JSON map
keys are strings), enum → string (the value's name), int32/sint32/sfixed32 → int, uint32/fixed32 → bigint,
int64/uint64/sint64/fixed64/sfixed64 → string (JSON renders them as strings), float/double → double, bool →
boolean, string → string, bytes → string (base64); a well-known type (``google.protobuf.*``: Timestamp, Duration,
wrappers, Struct, Value, Any...) → string holding its JSON form; a message nested in itself more than
:data:`PROTO_RECURSION` times on one path → string holding its JSON there.
A value that does not fit the type (a JSON Schema body not validated) is null where it does not fit.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from kafkatool.payloads.confluent import message_indexes, message_name, proto_schema
from kafkatool.payloads.decoded import compact

from .options import Payloads

log = logging.getLogger("kafkatool.spark")

_AVRO_PRIMITIVES: dict[str, DataType] = {
    "null": StringType(), "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "bytes": StringType(), "string": StringType(),
}
_JSON_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(), "integer": LongType(), "number": DoubleType(), "boolean": BooleanType(),
}

PROTO_RECURSION = 2  # times a message may be nested in itself on one path before the rest is its JSON text
PROTO_FIELDS = 10_000  # fields of a derived Protobuf struct, all levels: a schema's DAG of messages can fan out
MESSAGE_PATHS = 64  # distinct message-index arrays kept per schema id; more: several messages, said so
INDEX_BYTES = 5 * 64  # of a payload read for its message-index array (64 varints): a longer one names no message
# descriptor.proto's FieldDescriptorProto.Type numbers (protobuf is the schemas extra's, not needed to import this)
_PROTO_PRIMITIVES: dict[int, DataType] = {
    5: IntegerType(), 17: IntegerType(), 15: IntegerType(),  # int32, sint32, sfixed32
    13: LongType(), 7: LongType(),  # uint32, fixed32
    3: StringType(), 4: StringType(), 18: StringType(), 6: StringType(), 16: StringType(),  # the 64-bit ones
    2: DoubleType(), 1: DoubleType(), 8: BooleanType(), 9: StringType(),  # float, double, bool, string
    12: StringType(), 14: StringType(),  # bytes (base64), enum (its name)
}
_PROTO_MESSAGE, _PROTO_GROUP = 11, 10  # TYPE_MESSAGE, TYPE_GROUP


class NotDerived(Exception):
    """Why no struct column: said in the warning."""


def avro_type(schema: Any) -> DataType:
    """The Spark type of an Avro schema (parsed JSON); named types resolved by full and short name."""
    named: dict[str, DataType | None] = {}  # None: a record being derived (met again: recursive)

    def of(s: Any, ns: str | None) -> tuple[DataType, bool]:
        if isinstance(s, str):
            if s in _AVRO_PRIMITIVES:
                return _AVRO_PRIMITIVES[s], s == "null"
            name = s if s in named or ns is None else f"{ns}.{s}"
            if name not in named:
                raise NotDerived(f"Avro type {s!r} is not defined")
            if named[name] is None:
                raise NotDerived(f"Avro record {s!r} is recursive")
            return named[name], False  # type: ignore[return-value]
        if isinstance(s, list):
            branches = [b for b in s if b != "null"]
            types = [of(b, ns)[0] for b in branches]
            if not types:
                return StringType(), True
            same = all(t == types[0] for t in types)
            return (types[0] if same else StringType()), len(branches) < len(s) or not same
        if not isinstance(s, dict):
            raise NotDerived(f"not an Avro schema: {type(s).__name__}")
        t = s.get("type")
        if s.get("logicalType") is not None:
            if t == "fixed" or t == "enum" or t == "record":
                of({k: v for k, v in s.items() if k != "logicalType"}, ns)  # defines its name
            return StringType(), False
        if t in ("record", "error", "enum", "fixed"):
            space = s.get("namespace", ns)
            name = str(s.get("name"))
            full = name if "." in name or not space else f"{space}.{name}"
            if t != "record" and t != "error":
                named[full] = named[name] = StringType()
                return StringType(), False
            named[full] = named[name] = None
            fields = []
            for f in s.get("fields") or []:
                ft, nullable = of(f.get("type"), space)
                fields.append(StructField(str(f.get("name")), ft, nullable))
            named[full] = named[name] = StructType(fields)
            return named[full], False  # type: ignore[return-value]
        if t == "array":
            return ArrayType(of(s.get("items"), ns)[0], True), False
        if t == "map":
            return MapType(StringType(), of(s.get("values"), ns)[0], True), False
        return of(t, ns)

    return of(schema, None)[0]


def json_schema_type(schema: Any) -> DataType:
    """The Spark type of a JSON Schema (parsed JSON): the top level must be an object with ``properties``."""

    def of(s: Any) -> tuple[DataType, bool]:
        if not isinstance(s, dict):
            return StringType(), True
        t = s.get("type")
        nullable = True
        if isinstance(t, list):
            rest = [x for x in t if x != "null"]
            t = rest[0] if len(rest) == 1 else None
        if t == "object" and isinstance(s.get("properties"), dict):
            return StructType([StructField(str(k), of(v)[0], True) for k, v in s["properties"].items()]), nullable
        if t == "object" and isinstance(s.get("additionalProperties"), dict):
            return MapType(StringType(), of(s["additionalProperties"])[0], True), nullable
        if t == "array" and isinstance(s.get("items"), dict):
            return ArrayType(of(s["items"])[0], True), nullable
        if isinstance(t, str) and t in _JSON_PRIMITIVES:
            return _JSON_PRIMITIVES[t], nullable
        return StringType(), nullable  # the value's JSON

    t = of(schema)[0]
    if not isinstance(t, StructType):
        raise NotDerived("the JSON Schema is not an object with properties")
    return t


def proto_type(message: Any) -> StructType:
    """The Spark type of a Protobuf message descriptor (module docstring)."""
    count = 0

    def of_message(m: Any, path: tuple[str, ...]) -> DataType:
        nonlocal count
        if m.full_name.startswith("google.protobuf.") or path.count(m.full_name) > PROTO_RECURSION:
            return StringType()  # its JSON: a well-known type's own form, or the rest of a recursion
        fields = []
        for f in m.fields:
            count += 1
            if count > PROTO_FIELDS:
                raise NotDerived(f"Protobuf message {message.full_name} has more than {PROTO_FIELDS} fields nested")
            fields.append(StructField(f.name, of_field(f, (*path, m.full_name)), True))
        return StructType(fields)

    def of_field(f: Any, path: tuple[str, ...]) -> DataType:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            return MapType(StringType(), of_field(f.message_type.fields_by_name["value"], path), True)
        t = (of_message(f.message_type, path) if f.type in (_PROTO_MESSAGE, _PROTO_GROUP)
             else _PROTO_PRIMITIVES[f.type])
        return ArrayType(t, True) if f.is_repeated else t

    return of_message(message, ())  # type: ignore[return-value]


def _proto_message(registry: Any, v: Any, paths: set[tuple[int, ...]]) -> tuple[str, Any] | None:
    """(full name, descriptor) of the one message the index arrays ``paths`` of schema ``v`` name (an array that
    names none is said per record), None where none does; NotDerived where several do."""
    if len(paths) > MESSAGE_PATHS:
        raise NotDerived(f"schema id {v.id}: payloads name more than {MESSAGE_PATHS} messages")
    try:
        pool, top = proto_schema(registry, v)
    except Exception as exc:  # the schema's own text: why it does not compile
        raise NotDerived(str(exc)) from None
    names = set()
    for indexes in paths:
        try:
            names.add(message_name(top, indexes, v.id))
        except Exception:  # names no message: that record's value does not decode
            continue
    if len(names) > 1:
        raise NotDerived(f"schema id {v.id}: payloads name several messages ({', '.join(sorted(names))})")
    if not names:
        return None
    name = names.pop()
    return name, pool.FindMessageTypeByName(name)


def merge(a: DataType, b: DataType) -> DataType:
    """The type holding both: a struct's fields by name (the later version's new ones after), element and value
    types merged; NotDerived where one name has two types."""
    if a == b:
        return a
    if isinstance(a, StructType) and isinstance(b, StructType):
        theirs = {f.name: f for f in b.fields}
        fields = [StructField(f.name, merge(f.dataType, theirs[f.name].dataType), True) if f.name in theirs
                  else StructField(f.name, f.dataType, True) for f in a.fields]
        mine = {f.name for f in a.fields}
        return StructType(fields + [StructField(f.name, f.dataType, True) for f in b.fields if f.name not in mine])
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(merge(a.elementType, b.elementType), True)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return MapType(StringType(), merge(a.valueType, b.valueType), True)
    raise NotDerived(f"{a.simpleString()} and {b.simpleString()} in two versions")


def framed_ids(payloads: Iterable[bytes | None], into: dict[int, set[tuple[int, ...]]]) -> None:
    """The schema ids of the Confluent-framed payloads (magic byte 0, a 4-byte id) into ``into``, each with the
    message-index arrays read after it (meant for Protobuf; ignored for the other types), at most
    :data:`MESSAGE_PATHS` + 1 per id."""
    for p in payloads:
        if p is None or len(p) < 5 or p[0] != 0:
            continue
        paths = into.setdefault(int.from_bytes(p[1:5], "big"), set())
        if len(paths) <= MESSAGE_PATHS:
            try:
                paths.add(message_indexes(bytes(p[:5 + INDEX_BYTES]), 5)[0])
            except Exception:  # not an index array: the record's value does not decode, said per record
                continue


def struct_type(registry: Any, ids: dict[int, set[tuple[int, ...]]]) -> DataType:
    """The struct of the writer schemas ``ids`` name (module docstring), or NotDerived saying why not."""
    versions = [v for v in (registry.by_id(i) for i in sorted(ids)) if v is not None]  # unknown ids: said per record
    if not versions:
        raise NotDerived("no framed payload names a schema in the registry")
    subjects = sorted({v.subject or f"schema id {v.id}" for v in versions})
    if len(subjects) > 1:
        raise NotDerived(f"written with schemas of several subjects ({', '.join(subjects)})")
    kinds = {v.schema_type for v in versions}
    if len(kinds) > 1 or not kinds <= {"AVRO", "JSON", "PROTOBUF"}:
        raise NotDerived(f"written with {'/'.join(sorted(kinds))} schemas")
    messages: dict[int, tuple[str, Any]] = {}
    if kinds == {"PROTOBUF"}:
        messages = {v.id: m for v in versions if (m := _proto_message(registry, v, ids[v.id])) is not None}
        names = sorted({name for name, _ in messages.values()})
        if len(names) > 1:
            raise NotDerived(f"payloads name several messages ({', '.join(names)})")
        if not names:
            raise NotDerived("no framed payload names a message of its schema")
    out: DataType | None = None
    for v in sorted(versions, key=lambda v: (v.version, v.id)):
        if v.schema_type == "PROTOBUF":
            if v.id not in messages:
                continue
            t: DataType = proto_type(messages[v.id][1])
        else:
            try:
                parsed = json.loads(v.schema)
            except ValueError as exc:
                raise NotDerived(f"schema id {v.id} does not parse: {exc}") from None
            t = avro_type(parsed) if v.schema_type == "AVRO" else json_schema_type(parsed)
        if not isinstance(t, StructType):
            raise NotDerived(f"schema id {v.id} is not a record")
        out = t if out is None else merge(out, t)
    return out  # type: ignore[return-value]


def struct_sides(payloads: Payloads) -> tuple[str, ...]:
    """The sides whose decoder reads schemas: the ones that may get a struct column."""
    from kafkatool.payloads import SCHEMA_DECODERS

    return tuple(s for s, name in (("key", payloads.key), ("value", payloads.value)) if name in SCHEMA_DECODERS)


def struct_columns(ids: dict[str, dict[int, set[tuple[int, ...]]]], payloads: Payloads) -> dict[str, DataType]:
    """``{side: type}`` for each side of ``ids`` (the schema ids its framed payloads name, with their message-index
    arrays, as
    :func:`kafkatool.spark.read.framed_schema_ids` reads them) that all name one subject's schemas; a warning for each
    side that gets none, saying why."""
    from kafkatool.payloads.registry import load

    if not ids:
        return {}
    src = payloads.sources
    registry, _findings = load(tuple(Path(p) for p in src.paths), src.schema_log_dir, src.schemas_dir)
    out = {}
    for side, seen in ids.items():
        try:
            out[side] = struct_type(registry, seen)
        except (NotDerived, RecursionError, AttributeError, TypeError) as exc:  # the last two: a malformed schema
            why = str(exc) if isinstance(exc, NotDerived) else f"a schema not derived ({type(exc).__name__})"
            log.warning("kafka-log: no %s_struct column: %s", side, why)
    return out


def fill(t: DataType, v: Any) -> Any:
    """``v`` (a decoded JSON value) as a value of ``t``: null where it does not fit; a string takes any value's
    JSON."""
    if v is None:
        return None
    if isinstance(t, StructType):
        return {f.name: fill(f.dataType, v.get(f.name)) for f in t.fields} if isinstance(v, dict) else None
    if isinstance(t, ArrayType):
        return [fill(t.elementType, x) for x in v] if isinstance(v, list) else None
    if isinstance(t, MapType):
        return {str(k): fill(t.valueType, x) for k, x in v.items()} if isinstance(v, dict) else None
    if isinstance(t, StringType):
        return v if isinstance(v, str) else compact(v)
    if isinstance(t, BooleanType):
        return v if isinstance(v, bool) else None
    if isinstance(t, IntegerType | LongType):
        bits = 31 if isinstance(t, IntegerType) else 63
        return v if isinstance(v, int) and not isinstance(v, bool) and -(1 << bits) <= v < 1 << bits else None
    if isinstance(t, FloatType | DoubleType):
        if v in ("NaN", "Infinity", "-Infinity"):  # as JSON renders them
            return float(v)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
    return None


__all__ = ["NotDerived", "avro_type", "fill", "framed_ids", "json_schema_type", "merge", "proto_type",
           "struct_columns", "struct_sides", "struct_type"]
