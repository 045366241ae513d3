"""Kafka's JSON message schemas (``formats/schemas/``, see its ``SOURCES.md``) compiled to Construct: for a
(message, version), one Construct that reads and writes the bytes exactly as the ``read``/``write`` that Kafka's
``MessageGenerator`` (``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``) generates
from the same schema. The schema format (JSON with ``//`` comments; ``validVersions``, ``flexibleVersions``,
fields with ``versions``/``nullableVersions``/``taggedVersions``/``tag``/``default``/``ignorable``, inline and
``commonStructs``) is ``clients/src/main/resources/common/message/README.md``.

A parsed value is a plain dict: Kafka's field names in snake_case (``MessageGenerator.toSnakeCase``), bytes as
base64 (standard alphabet, padded), uuids as ``Uuid.toString`` prints them (URL-safe base64, no padding), nested
structs as dicts, arrays as lists; every field the version has, a tagged field absent from the bytes at its
default (as the generated reader leaves it). Unknown tags are kept, in ``_unknown_tagged_fields``
(``[{"tag", "data"}]``, data in base64), and written back in tag order (``RawTaggedFieldWriter``). Building takes
such a dict; a field it lacks is written at its default, a tagged field at its default is not written.

Every length is checked against the bytes that remain before anything is read (``Tried to allocate a collection
of size N, but there are only M bytes remaining``): a huge count or length is a parse error, never an allocation
or a long loop. A null where the version does not allow one is a parse error (``non-nullable field X was
serialized as null``), so is a known tag whose bytes are not exactly its size. Errors are ``ConstructError``.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import operator
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from construct import (
    Construct,
    ConstructError,
    ExplicitError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    SizeofError,
    StreamError,
    StringError,
    stream_read,
    stream_write,
)
from construct.core import stream_size

from .primitives import compact_length, tagged_fields, uuid, uvarint

SCHEMA_DIR = Path(__file__).with_name("schemas")
UNKNOWN_TAGS = "_unknown_tagged_fields"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # ``Uuid.ZERO_UUID``, the default of a uuid field


# --- the schema files ---------------------------------------------------------------------------------------


_STRING_OR_COMMENT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|//[^\n]*')


def strip_comments(text: str) -> str:
    """JSON from a schema file: its ``//`` comments removed (not inside strings; Kafka's parser allows them)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


class Versions(NamedTuple):
    """A version range as schemas write it (``Versions.parse``): ``"3"``, ``"1-4"``, ``"2+"``, ``"none"``."""

    lo: int
    hi: int  # inclusive; "N+" is open (32767, Short.MAX_VALUE)

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        if text is None:
            if default is None:
                raise ValueError("no versions")
            return default
        text = text.strip()
        if text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), 0x7FFF)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def range(self) -> range:
        return range(self.lo, self.hi + 1)


NONE = Versions(0, -1)


@functools.cache
def schemas() -> dict[str, dict[str, Any]]:
    """Every schema under ``formats/schemas/``, by its ``name``, each with ``_path`` (relative to that folder)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(SCHEMA_DIR.glob("*/*.json")):
        spec = json.loads(strip_comments(path.read_text(encoding="utf-8")))
        spec["_path"] = path.relative_to(SCHEMA_DIR).as_posix()
        out[spec["name"]] = spec
    return out


def schema(name: str) -> dict[str, Any]:
    return schemas()[name]


def valid_versions(name: str) -> range:
    return Versions.parse(schema(name)["validVersions"]).range()


def snake_case(name: str) -> str:
    """``MessageGenerator.toSnakeCase``: ``MemberEpoch`` -> ``member_epoch``, ``leaderEpoch`` -> ``leader_epoch``."""
    out, prev_upper = [], True
    for c in name:
        if c.isupper():
            if not prev_upper:
                out.append("_")
            out.append(c.lower())
            prev_upper = True
        else:
            out.append(c)
            prev_upper = False
    return "".join(out)


# --- the building blocks ---------------------------------------------------------------------------------------


def _remaining(stream) -> int:
    return stream_size(stream) - stream.tell()


def _length(flexible: bool, fixed: Construct, stream, context, path) -> int:
    return compact_length._parsereport(stream, context, path) if flexible else fixed._parsereport(stream, context,
                                                                                                     path)


class _Variable(Construct):
    """A string, bytes or records field (``generateVariableLengthReader``): an int16 (string) or int32 length, or
    in flexible versions uvarint ``length + 1``; negative is null."""

    def __init__(self, field: str, kind: str, flexible: bool, nullable: bool):
        super().__init__()
        self.field, self.kind, self.flexible, self.nullable = field, kind, flexible, nullable
        self.fixed = Int16sb if kind == "string" else Int32sb

    def _parse(self, stream, context, path):
        n = _length(self.flexible, self.fixed, stream, context, path)
        if n < 0:
            if self.nullable:
                return None
            raise ExplicitError(f"non-nullable field {self.field} was serialized as null", path=path)
        if self.kind == "string" and n > 0x7FFF:
            raise ExplicitError(f"string field {self.field} had invalid length {n}", path=path)
        if n > _remaining(stream):
            raise StreamError(f"{self.field}: length {n}, but only {_remaining(stream)} bytes remain", path=path)
        data = stream_read(stream, n, path)
        if self.kind != "string":
            return base64.b64encode(data).decode("ascii")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StringError(f"{self.field}: {exc}", path=path) from None

    def _build(self, obj, stream, context, path):
        if obj is None:
            if not self.nullable:
                raise ExplicitError(f"non-nullable field {self.field} is null", path=path)
            data, n = b"", -1
        else:
            try:
                data = obj.encode("utf-8") if self.kind == "string" else base64.b64decode(obj, validate=True)
            except (AttributeError, TypeError, ValueError) as exc:
                raise ExplicitError(f"{self.field}: {exc}", path=path) from None
            n = len(data)
        (compact_length if self.flexible else self.fixed)._build(n, stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


class _Array(Construct):
    """An array: int32 count, or uvarint ``count + 1`` in flexible versions; the count bounded by the bytes that
    remain, as the generated reader bounds it."""

    def __init__(self, field: str, element: Construct, flexible: bool, nullable: bool):
        super().__init__()
        self.field, self.element, self.flexible, self.nullable = field, element, flexible, nullable

    def _parse(self, stream, context, path):
        n = _length(self.flexible, Int32sb, stream, context, path)
        if n < 0:
            if self.nullable:
                return None
            raise ExplicitError(f"non-nullable field {self.field} was serialized as null", path=path)
        if n > _remaining(stream):
            raise StreamError(f"{self.field}: tried to allocate a collection of size {n}, but there are only "
                              f"{_remaining(stream)} bytes remaining", path=path)
        element = self.element
        return [element._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj, stream, context, path):
        if obj is None:
            if not self.nullable:
                raise ExplicitError(f"non-nullable field {self.field} is null", path=path)
            (compact_length if self.flexible else Int32sb)._build(-1, stream, context, path)
            return obj
        (compact_length if self.flexible else Int32sb)._build(len(obj), stream, context, path)
        for item in obj:
            self.element._build(item, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


class _Uuid(Construct):
    """A ``Uuid``: 16 bytes, shown as ``Uuid.toString`` (URL-safe base64 without padding)."""

    def _parse(self, stream, context, path):
        return base64.urlsafe_b64encode(uuid._parsereport(stream, context, path)).decode("ascii").rstrip("=")

    def _build(self, obj, stream, context, path):
        raw = base64.urlsafe_b64decode(obj + "==")
        if len(raw) != 16:
            raise ExplicitError(f"not a Uuid: {obj!r}", path=path)
        uuid._build(raw, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        return 16


class _NullableStruct(Construct):
    """A nullable struct field: an int8 marker before it (-1 null, 1 present), or as a tagged field a uvarint
    (0 null, 1 present): ``generateStructReader``."""

    def __init__(self, struct: Construct, tagged: bool):
        super().__init__()
        self.struct, self.marker = struct, uvarint if tagged else Int8sb

    def _parse(self, stream, context, path):
        m = self.marker._parsereport(stream, context, path)
        if m < 0 or (m == 0 and self.marker is uvarint):
            return None
        return self.struct._parsereport(stream, context, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            self.marker._build(0 if self.marker is uvarint else -1, stream, context, path)
        else:
            self.marker._build(1, stream, context, path)
            self.struct._build(obj, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


class _Tagged(NamedTuple):
    key: str
    layout: Construct
    default: Any


class _Struct(Construct):
    """A message or struct at one version: its untagged fields in order, then (flexible versions) the tagged
    fields, each as uvarint tag, uvarint size, that many bytes (``formats.primitives.tagged_fields``)."""

    def __init__(self, name: str, version: int, fields: list[tuple[str, Construct, Any]],
                 absent: list[tuple[str, Any, bool]], tagged: dict[int, _Tagged] | None):
        super().__init__()
        self.name, self.version = name, version
        self.fields, self.absent, self.tagged = fields, absent, tagged

    def _parse(self, stream, context, path):
        out: dict[str, Any] = {}
        for key, layout, _default in self.fields:
            out[key] = layout._parsereport(stream, context, path)
        if self.tagged is None:
            return out
        for t in self.tagged.values():
            out[t.key] = _copy(t.default)
        unknown = []
        for f in tagged_fields._parsereport(stream, context, path).fields:
            t = self.tagged.get(f.tag)
            if t is None:
                unknown.append({"tag": f.tag, "data": base64.b64encode(f.data).decode("ascii")})
                continue
            sub = io.BytesIO(f.data)
            out[t.key] = t.layout._parsereport(sub, context, path)
            if sub.tell() != len(f.data):
                raise ExplicitError(f"{self.name} v{self.version}: tag {f.tag} ({t.key}) has {len(f.data)} bytes, "
                                    f"its value {sub.tell()}", path=path)
        if unknown:
            out[UNKNOWN_TAGS] = unknown
        return out

    def _build(self, obj, stream, context, path):
        if not isinstance(obj, dict):
            raise ExplicitError(f"{self.name} v{self.version}: not a dict: {obj!r}", path=path)
        for key, default, ignorable in self.absent:
            if not ignorable and key in obj and obj[key] != default:
                raise ExplicitError(f"attempted to write a non-default {key} at version {self.version} of "
                                    f"{self.name}", path=path)
        for key, layout, default in self.fields:
            layout._build(obj.get(key, default), stream, context, path)
        raw = obj.get(UNKNOWN_TAGS) or []
        if self.tagged is None:
            if raw:
                raise ExplicitError(f"version {self.version} of {self.name} has no tagged fields", path=path)
            return obj
        entries = []
        for tag, t in sorted(self.tagged.items()):
            value = obj.get(t.key, t.default)
            if value != t.default:
                entries.append((tag, 0, t.layout.build(value)))
        entries += [(u["tag"], 1, base64.b64decode(u["data"], validate=True)) for u in raw]
        entries.sort(key=lambda e: e[:2])
        tagged_fields._build({"fields": [{"tag": tag, "data": data} for tag, _, data in entries]},
                             stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError(path=path)


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value)) if isinstance(value, list | dict) else value


_FIXED: dict[str, Construct] = {
    "int8": Int8sb, "int16": Int16sb, "int32": Int32sb, "int64": Int64sb, "uint16": Int16ub, "uint32": Int32ub,
    "float64": Float64b, "bool": Flag,
}


# --- the compiler -----------------------------------------------------------------------------------------------


class _Compiler:
    """One message's structs (inline and ``commonStructs``), compiled at one version."""

    def __init__(self, spec: dict[str, Any], version: int):
        self.spec, self.version = spec, version
        self.flexible = version in Versions.parse(spec.get("flexibleVersions", "none"))
        self.structs: dict[str, dict[str, Any]] = {s["name"]: s for s in spec.get("commonStructs", [])}
        self._collect(spec.get("fields", []))

    def _collect(self, fields: list[dict[str, Any]]) -> None:
        for f in fields:
            if "fields" in f:
                self.structs[f["type"].removeprefix("[]")] = f
                self._collect(f["fields"])
        for s in self.spec.get("commonStructs", []):
            if s is not None:
                for f in s.get("fields", []):
                    if "fields" in f:
                        self.structs.setdefault(f["type"].removeprefix("[]"), f)

    def struct(self, name: str, fields: list[dict[str, Any]]) -> _Struct:
        v = self.version
        present, absent, tagged = [], [], {}
        for f in fields:
            key = snake_case(f["name"])
            tagged_versions = Versions.parse(f.get("taggedVersions"), NONE)
            versions = _field_versions(f)
            default = self.default(f)
            if v not in versions:
                absent.append((key, default, bool(f.get("ignorable"))))
            elif v in tagged_versions:
                tagged[int(f["tag"])] = _Tagged(key, self.field(f, tagged=True), default)
            else:
                present.append((key, self.field(f, tagged=False), default))
        return _Struct(name, v, present, absent, tagged if self.flexible else None)

    def field(self, f: dict[str, Any], tagged: bool) -> Construct:
        v, kind = self.version, f["type"]
        nullable = v in Versions.parse(f.get("nullableVersions"), NONE)
        # a field's own flexibleVersions (strings, bytes) override the message's; tagged fields are always compact
        own = f.get("flexibleVersions")
        flexible = tagged or (self.flexible if own is None else v in Versions.parse(own))
        if kind.startswith("[]"):
            element = kind[2:]
            if element in ("string", "bytes", "records"):
                inner: Construct = _Variable(f["name"] + " element", element, flexible, False)
            else:
                inner = self.scalar_or_struct(element)
            return _Array(f["name"], inner, flexible, nullable)
        if kind in ("string", "bytes", "records"):
            return _Variable(f["name"], kind, flexible, nullable)
        layout = self.scalar_or_struct(kind)
        if isinstance(layout, _Struct) and nullable:
            return _NullableStruct(layout, tagged)
        return layout

    def scalar_or_struct(self, kind: str) -> Construct:
        if kind in _FIXED:
            return _FIXED[kind]
        if kind == "uuid":
            return _Uuid()
        return self.struct(kind, self.structs[kind]["fields"])

    def default(self, f: dict[str, Any]) -> Any:
        """``FieldSpec.fieldDefault``: the value of a field the bytes do not hold."""
        kind, d = f["type"], f.get("default")
        if d == "null" or (d is None and "default" in f):
            return None
        if kind.startswith("[]"):
            return []
        if kind in ("bool",):
            return d is True or str(d).lower() == "true"
        if kind in _FIXED:
            if d in (None, ""):
                return 0.0 if kind == "float64" else 0
            return float(d) if kind == "float64" else int(str(d), 0)
        if kind == "string":
            return "" if d is None else str(d)
        if kind in ("bytes", "records"):
            return ""
        if kind == "uuid":
            return ZERO_UUID
        struct = self.structs[kind]
        return self.default_struct(struct["fields"])

    def default_struct(self, fields: list[dict[str, Any]]) -> dict[str, Any]:
        return {snake_case(f["name"]): self.default(f) for f in fields if self.version in _field_versions(f)}

    def example(self, f: dict[str, Any], seed: int, tagged: bool) -> Any:
        """A value of field ``f`` that varies with ``seed``: nulls, empties and defaults among them."""
        kind, v = f["type"], self.version
        if tagged and seed % 2 == 0:
            return self.default(f)
        if v in Versions.parse(f.get("nullableVersions"), NONE) and seed % 4 == 0:
            return None
        if kind.startswith("[]"):
            element = {**f, "type": kind[2:], "nullableVersions": "none"}
            return [self.example(element, seed * 7 + i + 1, False) for i in range(seed % 3)]
        if kind in _FIXED:
            bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 16, "uint32": 32}.get(kind)
            if kind == "bool":
                return seed % 2 == 1
            if kind == "float64":
                return seed / 4.0 - 1.5
            n = (seed * 0x9E3779B97F4A7C15 + 12345) % (1 << bits)
            return n if kind.startswith("u") or n < 1 << (bits - 1) else n - (1 << bits)
        if kind == "string":
            return f"{f['name']}-{seed}" + ("-é" if seed % 3 == 0 else "")
        if kind in ("bytes", "records"):
            return base64.b64encode(bytes((seed + i) % 256 for i in range(seed % 6))).decode("ascii")
        if kind == "uuid":
            return base64.urlsafe_b64encode(seed.to_bytes(16, "big")).decode("ascii").rstrip("=")
        return self.example_struct(self.structs[kind]["fields"], seed)

    def example_struct(self, fields: list[dict[str, Any]], seed: int) -> dict[str, Any]:
        return {snake_case(f["name"]): self.example(f, seed * 31 + i, self.version in Versions.parse(
                    f.get("taggedVersions"), NONE)) for i, f in enumerate(fields) if self.version in _field_versions(f)}


def _field_versions(f: dict[str, Any]) -> Versions:
    """``FieldSpec``: a field's ``versions``, its ``taggedVersions`` when it has none."""
    tagged = Versions.parse(f.get("taggedVersions"), NONE)
    return Versions.parse(f.get("versions"), None if tagged == NONE else tagged)


@functools.cache
def message(name: str, version: int) -> Construct:
    """The Construct of schema ``name`` at ``version`` (one of its ``validVersions``), made once."""
    spec = schema(name)
    if version not in Versions.parse(spec["validVersions"]):
        raise KeyError(f"{name} has no version {version} (valid: {spec['validVersions']})")
    return _Compiler(spec, version).struct(name, spec.get("fields", []))


def default_value(name: str, version: int) -> dict[str, Any]:
    """Schema ``name`` at ``version`` with every field at its default (the generated class's no-arg instance)."""
    return _Compiler(schema(name), version).default_struct(schema(name).get("fields", []))


def example(name: str, version: int, seed: int = 1) -> dict[str, Any]:
    """A value of schema ``name`` at ``version`` for builders and tests (``fixtures/generate.py``): every field,
    deterministic in ``seed``; different seeds give nulls, empty and full arrays, tagged fields at their default
    (not written) or not."""
    return _Compiler(schema(name), version).example_struct(schema(name).get("fields", []), seed)


def decode(name: str, version: int, data: bytes) -> dict[str, Any]:
    """``data`` read as schema ``name`` at ``version``, to the end: bytes left over are an error, as they are
    where Kafka reads a record's value (``CoordinatorRecordSerde``, ``AbstractApiMessageSerde``)."""
    value = read(name, version, data)  # the compiled reader first; the Construct where it misses, to word why
    if value is not None:
        return value
    stream = io.BytesIO(data)
    try:
        value = message(name, version).parse_stream(stream)
    except ConstructError as exc:  # one line naming the message: Construct's own text names only its path
        lines = [line for line in str(exc).splitlines() if line.strip() and not line.startswith("Error in path")]
        raise ExplicitError(f"{name} v{version}: {lines[-1] if lines else type(exc).__name__}") from None
    if stream.tell() != len(data):
        raise ExplicitError(f"{name} v{version}: {len(data) - stream.tell()} bytes left after the message")
    return value


# --- compiled readers -------------------------------------------------------------------------------------------
# A message's Construct interprets its fields one object at a time (~30 µs an OffsetCommitValue); the reader
# compiled from that very Construct (its _Struct/_Array/_Variable/... tree, not the schema again) is one generated
# Python function per struct doing ``struct.unpack_from`` over the bytes, with the same bounds checks. It gives
# the value the Construct gives, or raises _Miss for anything it does not take (a length past the end, a null
# where none is allowed, bad UTF-8, a uvarint over 5 bytes, bytes not exactly a tag's size, ...): :func:`decode`
# then parses with the Construct, which words the error. tests/test_kafka_schema.py holds the two equal.


class _Miss(Exception):
    pass


_MISSES = (_Miss, UnicodeDecodeError, struct.error)
_FORMATS = {id(Int8sb): "b", id(Int16sb): "h", id(Int32sb): "i", id(Int64sb): "q", id(Int16ub): "H",
            id(Int32ub): "I", id(Float64b): "d", id(Flag): "?"}  # "?": any byte but 0 is true, as Flag reads it


def _uv(d: bytes, p: int, n: int) -> tuple[int, int]:
    """A uvarint (``VarInt``) of up to 5 bytes at ``p``, before ``n``: (value, next position)."""
    if p < n:
        b = d[p]
        if b < 0x80:
            return b, p + 1
    value = shift = 0
    for i in range(p, min(p + 5, n)):
        b = d[i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i + 1
        shift += 7
    raise _Miss


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class _Codegen:
    """The source of one message's reader: a function per struct and per array, ``f(d, p, n) -> (value, p)``
    over ``d[p:n]``."""

    def __init__(self, tags_absent: bool = False) -> None:
        self.tags_absent = tags_absent
        self.defs: list[str] = []
        self.names: dict[int, str] = {}
        self.env: dict[str, Any] = {"_Miss": _Miss, "_MISSES": _MISSES, "_uv": _uv, "_b64": _b64, "_uuid": _uuid_text,
                                    "_copy": _copy, "_unpack": struct.unpack_from, "_ABSENT": _ABSENT}

    def const(self, value: Any) -> str:
        name = f"_k{len(self.env)}"
        self.env[name] = value
        return name

    def fn(self, layout: Construct) -> str:
        """The name of the function reading ``layout``, generated once per layout object."""
        name = self.names.get(id(layout))
        if name is None:
            name = self.names[id(layout)] = f"_f{len(self.names)}"
            self.env[f"_keep{len(self.names)}"] = layout  # id() stays valid while the source is made
            lines = self.struct_body(layout) if isinstance(layout, _Struct) else [*self.read(layout, "v"),
                                                                                  "return v, p"]
            self.defs.append("\n".join([f"def {name}(d, p, n):", *("    " + ln for ln in lines)]))
        return name

    def whole(self, s: _Struct) -> str:
        """The name of a function ``f(d, p) -> value | None`` reading ``d[p:]`` whole as ``s`` (its body inline), None
        where it misses or leaves bytes over."""
        lines = self.struct_body(s, whole=True)
        self.defs.append("\n".join(["def _whole(d, p):", "    n = len(d)", "    try:",
                                    *("        " + ln for ln in lines), "    except _MISSES:", "        return None"]))
        return "_whole"

    def struct_body(self, s: _Struct, whole: bool = False) -> list[str]:
        lines: list[str] = []
        keys: list[tuple[str, str]] = []
        run: list[tuple[str, str]] = []  # (variable, struct format) of fixed-size fields not yet read

        def flush() -> None:
            if run:
                fmt = struct.Struct(">" + "".join(f for _v, f in run))
                lines.extend([f"if p + {fmt.size} > n: raise _Miss",
                              f"{', '.join(v for v, _f in run)}, = {self.const(fmt.unpack_from)}(d, p)",
                              f"p += {fmt.size}"])
                run.clear()

        for i, (key, layout, _default) in enumerate(s.fields):
            var = f"v{i}"
            keys.append((key, var))
            if id(layout) in _FORMATS:
                run.append((var, _FORMATS[id(layout)]))
                continue
            # a fixed-size length (int16 of a string, int32 of bytes or an array) is read with the run before it
            fixed = isinstance(layout, _Variable | _Array) and not layout.flexible
            if fixed:
                run.append(("m", "h" if isinstance(layout, _Variable) and layout.kind == "string" else "i"))
            flush()
            lines.extend(self.read(layout, var, length_read=fixed))
        flush()
        items = [f"{key!r}: {var}" for key, var in keys]
        if s.tagged is not None:
            for j, t in enumerate(s.tagged.values()):
                mutable = isinstance(t.default, list | dict)
                lines.append(f"t{j} = " + ("_ABSENT" if self.tags_absent else f"_copy({self.const(t.default)})"
                                           if mutable else repr(t.default)))
                items.append(f"{t.key!r}: t{j}")
            lines.extend(["c, p = _uv(d, p, n)", "u = None", "for _ in range(c):",
                          "    tag, p = _uv(d, p, n)", "    size, p = _uv(d, p, n)", "    e = p + size",
                          "    if e > n: raise _Miss"])
            first = True
            for j, (tag, t) in enumerate(s.tagged.items()):
                lines.extend([f"    {'if' if first else 'elif'} tag == {tag}:",
                              f"        t{j}, q = {self.fn(t.layout)}(d, p, e)", "        if q != e: raise _Miss"])
                first = False
            lines.extend([f"    {'if True' if first else 'else'}:",
                          "        if u is None: u = []", "        u.append({'tag': tag, 'data': _b64(d[p:e])})",
                          "    p = e"])
            if self.tags_absent:  # a tagged field the bytes lack: left out, not at its default
                lines.append("o = {" + ", ".join(items[:len(keys)]) + "}")
                lines.extend(f"if t{j} is not _ABSENT: o[{t.key!r}] = t{j}" for j, t in enumerate(s.tagged.values()))
            else:
                lines.append("o = {" + ", ".join(items) + "}")
            lines.append(f"if u is not None: o[{UNKNOWN_TAGS!r}] = u")
            lines.append("return o if p == n else None" if whole else "return o, p")
        else:
            value = "{" + ", ".join(items) + "}"
            lines.append(f"return {value} if p == n else None" if whole else f"return {value}, p")
        return lines

    def read(self, layout: Construct, var: str, length_read: bool = False) -> list[str]:
        """Lines reading ``layout`` at ``p`` into ``var`` (and moving ``p`` past it); ``length_read``: a string's,
        bytes' or array's fixed-size length is in ``m`` already, ``p`` past it."""
        if id(layout) in _FORMATS:
            fmt = struct.Struct(">" + _FORMATS[id(layout)])
            return [f"if p + {fmt.size} > n: raise _Miss", f"{var}, = {self.const(fmt.unpack_from)}(d, p)",
                    f"p += {fmt.size}"]
        if isinstance(layout, _Uuid):
            return ["if p + 16 > n: raise _Miss", f"{var} = _uuid(d[p:p + 16])", "p += 16"]
        if isinstance(layout, _Variable):
            lines = self.length(layout.flexible, 2 if layout.kind == "string" else 4, layout.nullable, var,
                                length_read)
            check = " or m > 0x7FFF" if layout.kind == "string" else ""
            value = "d[p:p + m].decode('utf-8')" if layout.kind == "string" else "_b64(d[p:p + m])"
            return lines + [f"    if p + m > n{check}: raise _Miss", f"    {var} = {value}", "    p += m"]
        if isinstance(layout, _Array):
            lines = self.length(layout.flexible, 4, layout.nullable, var, length_read)
            lines.append("    if m > n - p: raise _Miss")
            element = layout.element
            if id(element) in _FORMATS and _FORMATS[id(element)] not in "?d":
                size = struct.calcsize(">" + _FORMATS[id(element)])
                return lines + [f"    {var} = list(_unpack('>%d{_FORMATS[id(element)]}' % m, d, p))",
                                f"    p += m * {size}"]
            return lines + [f"    {var} = []", "    for _ in range(m):", f"        x, p = {self.fn(element)}(d, p, n)",
                            f"        {var}.append(x)"]
        if isinstance(layout, _NullableStruct):
            if layout.marker is uvarint:
                head = ["m, p = _uv(d, p, n)", "if m == 0:"]
            else:
                head = ["if p >= n: raise _Miss", "m = d[p]", "p += 1", "if m >= 0x80:"]
            return head + [f"    {var} = None", "else:", f"    {var}, p = {self.fn(layout.struct)}(d, p, n)"]
        if isinstance(layout, _Struct):
            return [f"{var}, p = {self.fn(layout)}(d, p, n)"]
        raise TypeError(f"no compiled reader for {layout!r}")

    @staticmethod
    def length(flexible: bool, size: int, nullable: bool, var: str, length_read: bool) -> list[str]:
        """A length or count into ``m``: uvarint ``m + 1`` when flexible, else a signed int16/int32 (in ``m``
        already when ``length_read``); negative is null (``var`` None where the field is nullable), and the lines
        after it run for a length."""
        if length_read:
            lines = []
        elif flexible:
            lines = ["m, p = _uv(d, p, n)", "m -= 1"]
        else:
            fmt = ">h" if size == 2 else ">i"
            lines = [f"if p + {size} > n: raise _Miss", f"m, = _unpack({fmt!r}, d, p)", f"p += {size}"]
        lines.append("if m < 0:")
        lines.append(f"    {var} = None" if nullable else "    raise _Miss")
        lines.append("else:")
        return lines


def read(name: str, version: int, data: bytes, pos: int = 0) -> dict[str, Any] | None:
    """``data[pos:]`` read whole by the compiled :func:`reader` of schema ``name`` at ``version``, or None where it
    misses or leaves bytes over (:func:`decode` then reads with the Construct, which words why)."""
    return reader(name, version)(data, pos) if data.__class__ is bytes else None


_ABSENT = object()


@functools.cache
def reader(name: str, version: int, tags_absent: bool = False) -> Callable[[bytes, int], dict[str, Any] | None]:
    """The compiled reader of schema ``name`` at ``version``: ``read(data, pos)``, the value :func:`message`
    parses from ``data[pos:]`` read to its end, or None where the reader does not take the bytes (see above).
    ``data`` is ``bytes``. With ``tags_absent``, a tagged field the bytes lack is left out of its struct's dict
    (for readers that tell a tag written at its default from one not written)."""
    gen = _Codegen(tags_absent)
    top = gen.whole(message(name, version))
    source = "\n\n".join(gen.defs)
    exec(compile(source, f"<kafka_schema reader {name} v{version}{' tags_absent' * tags_absent}>", "exec"),
         gen.env)  # noqa: S102
    return gen.env[top]


@functools.cache
def _string_shape(name: str, version: int) -> tuple[int, int | None] | None:
    """``(fixed, at)`` of a schema version whose fields are fixed-size numbers and at most one string of int16
    length (no tagged fields): the bytes of all but the string's content, and where the string's length is (None:
    no string); None for any other layout."""
    s = message(name, version)
    if not isinstance(s, _Struct) or s.tagged is not None:
        return None
    fixed, at = 0, None
    for _key, layout, _default in s.fields:
        if id(layout) in _FORMATS:
            fixed += struct.calcsize(">" + _FORMATS[id(layout)])
        elif isinstance(layout, _Variable) and layout.kind == "string" and not layout.flexible and at is None:
            at = fixed
            fixed += 2
        else:
            return None
    return fixed, at


def read_all(name: str, version: int, values: list[bytes], pos: int) -> bool:
    """Whether the compiled :func:`reader` of schema ``name`` at ``version`` reads every one of ``values`` (``bytes``,
    each from ``pos``), decided for them at once without reading one: True only where it does. For layouts of
    fixed-size numbers and at most one string (``_string_shape``), whose numbers read from any bytes: every value of
    the one length that the layout and its string length make, each string's UTF-8 checked once per distinct string.
    False where that does not decide (another layout, lengths that differ, a null string): the caller reads them one
    by one, and the reader decides."""
    shape = _string_shape(name, version)
    if shape is None or not values:
        return False
    fixed, at = shape
    lengths = set(map(len, values))
    if len(lengths) != 1:
        return False
    m = lengths.pop() - pos - fixed  # the string's length, the same in every value of this length
    if at is None:
        return m == 0
    if not 0 <= m <= 0x7FFF or set(map(operator.itemgetter(slice(pos + at, pos + at + 2)), values)) != {
            m.to_bytes(2, "big")}:
        return False
    try:
        for text in set(map(operator.itemgetter(slice(pos + at + 2, pos + at + 2 + m)), values)):
            text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- coordinator records (``CoordinatorRecordSerde``) ------------------------------------------------------------

# The schema folders of the coordinators that write ``__consumer_offsets``, ``__share_group_state`` and
# ``__transaction_state``.
GROUP_COORDINATOR, SHARE_COORDINATOR, TRANSACTION_COORDINATOR = "group-coordinator", "share-coordinator", \
    "transaction-coordinator"
# ``__consumer_offsets`` keys 0 and 1 are both an offset commit (``OffsetCommitKey`` versions 0 and 1 before 4.0,
# ``LegacyOffsetCommitKey``/``OffsetCommitKey`` after), their value an ``OffsetCommitValue`` of its own version.
_OFFSET_COMMIT_TYPES = (0, 1)


class UnknownRecord(ConstructError):
    """A coordinator record whose type, or whose value's version, no schema here declares (newer than them)."""

    def __init__(self, message: str, record_type: int, version: int | None):
        super().__init__(message)
        self.record_type, self.version = record_type, version


@functools.cache
def record_types(folder: str) -> dict[int, str]:
    """``CoordinatorRecordType`` of a coordinator: record type (the key schema's ``apiKey``, or the value's where
    an older key schema has none) -> the record's name (the schema's without Key/Value)."""
    out: dict[int, str] = {}
    for name, spec in schemas().items():
        if spec["_path"].startswith(folder + "/") and name.endswith("Key"):
            base = name.removesuffix("Key")
            api_key = spec.get("apiKey", schemas().get(base + "Value", {}).get("apiKey"))
            if api_key is not None:
                out[int(api_key)] = base
    if folder == GROUP_COORDINATOR:
        out.update(dict.fromkeys(_OFFSET_COMMIT_TYPES, "OffsetCommit"))
    return out


def _int16(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise ExplicitError(f"{what}: {len(data)} bytes, too short for its int16 version")
    return int.from_bytes(data[:2], "big", signed=True)


def coordinator_record(folder: str, key: bytes, value: bytes | None) -> dict[str, Any]:
    """A coordinator record read as ``CoordinatorRecordSerde.deserialize`` reads it: the key's int16 is the record
    type, the key body its schema at version 0 (or the one version an older key schema has); the value's int16
    is its version, the body the value schema at that version; a null value is a tombstone. Gives ``record``
    (the name), ``record_type``, ``key`` and ``value`` (dicts of every field; ``value`` None for a tombstone)
    and ``value_version``. :class:`UnknownRecord` for a type or value version no schema here declares."""
    rtype = _int16(key, "key")
    name = record_types(folder).get(rtype)
    if name is None:
        version = _int16(value, "value") if value is not None and len(value) >= 2 else None
        raise UnknownRecord(f"record type {rtype}" + ("" if version is None else f" (value version {version})")
                            + f" is newer than the {folder} schemas here (types {min(record_types(folder))}.."
                            f"{max(record_types(folder))})",
                            rtype, version)
    key_name = "OffsetCommitKey" if name == "OffsetCommit" else name + "Key"
    key_versions = valid_versions(key_name)
    key_fields = decode(key_name, 0 if 0 in key_versions else key_versions[0], key[2:])
    out: dict[str, Any] = {"record": name, "record_type": rtype, "key": key_fields, "value_version": None,
                           "value": None}
    if value is not None:
        version = _int16(value, "value")
        if version not in valid_versions(name + "Value"):
            raise UnknownRecord(f"record type {rtype} ({name}) value version {version} is newer than the schema "
                                f"here (valid: {schema(name + 'Value')['validVersions']})", rtype, version)
        out.update(value_version=version, value=decode(name + "Value", version, value[2:]))
    return out


def coordinator_key(folder: str, record_type: int, fields: dict[str, Any]) -> bytes:
    """A coordinator record's key as ``CoordinatorRecordSerde.serializeKey`` writes it: the int16 record type,
    then the key schema's fields (the inverse of :func:`coordinator_record`)."""
    name = record_types(folder)[record_type]
    key_name = "OffsetCommitKey" if name == "OffsetCommit" else name + "Key"
    key_versions = valid_versions(key_name)
    return record_type.to_bytes(2, "big") + message(key_name, 0 if 0 in key_versions else key_versions[0]).build(
        fields)


def coordinator_value(name: str, version: int, fields: dict[str, Any]) -> bytes:
    """A coordinator record's value (``serializeValue``): the int16 version, then the ``{name}Value`` fields."""
    return version.to_bytes(2, "big") + message(name + "Value", version).build(fields)


__all__ = [
    "GROUP_COORDINATOR",
    "SHARE_COORDINATOR",
    "TRANSACTION_COORDINATOR",
    "UnknownRecord",
    "coordinator_key",
    "coordinator_record",
    "coordinator_value",
    "record_types",
    "SCHEMA_DIR",
    "UNKNOWN_TAGS",
    "ZERO_UUID",
    "ConstructError",
    "Versions",
    "decode",
    "default_value",
    "example",
    "message",
    "read",
    "read_all",
    "reader",
    "schema",
    "schemas",
    "snake_case",
    "strip_comments",
    "valid_versions",
]
