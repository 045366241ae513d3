"""Confluent's wire format and the schema decoders: Avro, Protobuf and JSON Schema with the writer's schema by id.

A framed payload is magic byte 0, the schema id (4 bytes, big endian), for Protobuf the message-index array, then
the body (``AbstractKafkaSchemaSerDe.getByteBuffer``, ``MessageIndexes.readFrom``: a zig-zag varint count, then
that many zig-zag varint indexes, the single ``[0]`` written as one 0 byte). Every count and length is bounded by
the payload's own bytes. The bodies are read by the official libraries (extra ``kafkatool[schemas]``): fastavro
(``KafkaAvroDeserializer``'s ``GenericDatumReader`` with the writer's schema), protobuf's runtime over a
``FileDescriptorSet`` compiled by grpcio-tools' protoc (``KafkaProtobufDeserializer``), jsonschema
(``KafkaJsonSchemaDeserializer``, which validates when asked). Each schema is compiled once per id; a payload or
schema that does not decode gives ``Decoded(error=...)``, never an exception.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import importlib.util
import io
import json
import math
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import UsageError
from ..model import Finding
from .decoded import Decoded, PayloadDecoder, SchemaSources
from .registry import Registry, SchemaVersion, load, reference_problem

MAGIC = 0
EXTRA = "pip install 'kafkatool[schemas]'"
# what each decoder needs from the extra (module names, as importlib finds them)
NEEDS = {"avro": ("fastavro",), "protobuf": ("google.protobuf", "grpc_tools"), "json-schema": ("jsonschema",)}
NEEDS["auto"] = tuple(m for ms in NEEDS.values() for m in ms)
TYPE_OF = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}
PROTOC_TIMEOUT = 120  # seconds for one schema's compilation (protoc reads only the files written for it)
_IMPORT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*$")


class _Bad(Exception):
    """Why a payload or a schema does not decode (the ``Decoded.error``)."""


# --- the framing --------------------------------------------------------------------------------------------------


def frame(data: bytes) -> tuple[int, int]:
    """(schema id, where the rest starts) of a Confluent-framed payload (``AbstractKafkaSchemaSerDe.getByteBuffer``)."""
    if len(data) < 5:
        raise _Bad(f"{len(data)} bytes: shorter than the magic byte and schema id")
    if data[0] != MAGIC:
        raise _Bad(f"magic byte {data[0]}, not {MAGIC}: not Confluent's wire format")
    return int.from_bytes(data[1:5], "big"), 5


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """``ByteUtils.readVarint``: at most 5 bytes, within ``data``."""
    value = shift = 0
    for i in range(pos, min(pos + 5, len(data))):
        b = data[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), i + 1
        shift += 7
    raise _Bad(f"message-index varint at byte {pos} runs past the payload or beyond 5 bytes")


def message_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """``MessageIndexes.readFrom``: the path of the message in its schema (``[0]`` for a count of 0), and where the
    body starts. A count cannot exceed the bytes left (each index is at least one)."""
    count, pos = _zigzag_varint(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0 or count > len(data) - pos:
        raise _Bad(f"message-index count {count} with {len(data) - pos} bytes left")
    out = []
    for _ in range(count):
        index, pos = _zigzag_varint(data, pos)
        if index < 0:
            raise _Bad(f"message index {index} is negative")
        out.append(index)
    return tuple(out), pos


# --- JSON values --------------------------------------------------------------------------------------------------


def _iso(t: dt.datetime) -> str:
    """A timestamp as ISO-8601: UTC with ``Z`` (an aware one), milliseconds or microseconds (the fewest that hold it
    exactly)."""
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC)
    frac = f".{t.microsecond // 1000:03d}" if t.microsecond % 1000 == 0 else f".{t.microsecond:06d}"
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + ("Z" if t.tzinfo is not None else "")


def jsonable(v: Any) -> Any:
    """An Avro datum as JSON: logical types as text (date ``YYYY-MM-DD``, timestamps ISO-8601 UTC, decimal exact,
    uuid), bytes and fixed base64; NaN and the infinities as Java prints them."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, bytes | bytearray):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, dt.datetime):
        return _iso(v)
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


# --- compiling a schema -------------------------------------------------------------------------------------------

Reader = Callable[[bytes, tuple[int, ...]], Any]  # body, message indexes -> JSON value


def _closure(registry: Registry, root: SchemaVersion) -> list[tuple[str, SchemaVersion]]:
    """``root``'s references, transitively, each (import name, schema) once, dependencies before what uses them."""
    problem = reference_problem(registry, root)
    if problem:
        raise _Bad(problem)
    out: list[tuple[str, SchemaVersion]] = []
    seen: set[tuple[str | None, int]] = set()

    def visit(v: SchemaVersion) -> None:  # acyclic (checked above), so bounded by the registry's size
        for r in v.references:
            target = registry.reference(r)
            assert target is not None
            if (target.subject, target.version) not in seen:
                seen.add((target.subject, target.version))
                visit(target)
                out.append((r.name, target))

    visit(root)
    return out


def _avro(registry: Registry, v: SchemaVersion) -> Reader:
    """fastavro's parsed writer schema, the referenced named types parsed first into the same names
    (``AvroSchemaProvider``: references are schemas whose named types the schema uses)."""
    import fastavro

    named: dict[str, Any] = {}
    try:
        for _name, ref in _closure(registry, v):
            fastavro.parse_schema(json.loads(ref.schema), named_schemas=named)
        parsed = fastavro.parse_schema(json.loads(v.schema), named_schemas=named)
    except _Bad:
        raise
    except Exception as exc:  # the schema is untrusted text: any failure of the parser is the schema's
        raise _Bad(f"Avro schema id {v.id} does not parse: {_short(exc)}") from None

    if _zero_width_items(parsed, named):
        raise _Bad(f"Avro schema id {v.id} has an array of items written in 0 bytes: its counts cannot be bounded "
                   "by the payload's length, not decoded")

    def read(body: bytes, _indexes: tuple[int, ...]) -> Any:
        return jsonable(fastavro.schemaless_reader(io.BytesIO(body), parsed, None))

    return read


def _zero_width_items(schema: Any, named: dict[str, Any]) -> bool:
    """Whether an array of the schema holds items written in no bytes (null, an empty record, fixed of size 0): its
    block count is then bounded by nothing in the payload, and 2^62 of them would be read (every other item, a map's
    key, a union's branch, takes a byte at least)."""
    def zero(t: Any, seen: frozenset[str]) -> bool:
        if isinstance(t, str):
            return t == "null" or (t in named and t not in seen and zero(named[t], seen | {t}))
        if isinstance(t, dict):
            kind = t.get("type")
            if kind in ("record", "error"):
                name = t.get("name", "")
                return name not in seen and all(zero(f.get("type"), seen | {name}) for f in t.get("fields", ()))
            if kind == "fixed":
                return t.get("size") == 0
            return kind == "null"
        return False

    stack, seen = [schema], set()
    while stack:
        t = stack.pop()
        if isinstance(t, str):
            if t in named and t not in seen:
                seen.add(t)
                stack.append(named[t])
        elif isinstance(t, list):
            stack.extend(t)
        elif isinstance(t, dict):
            kind = t.get("type")
            if kind == "array":
                if zero(t.get("items"), frozenset()):
                    return True
                stack.append(t.get("items"))
            elif kind == "map":
                stack.append(t.get("values"))
            elif kind in ("record", "error"):
                stack.extend(f.get("type") for f in t.get("fields", ()))
            elif not isinstance(kind, str) or kind not in ("fixed", "enum"):
                stack.append(kind)
    return False


def _safe_import_name(name: str) -> str:
    if not _IMPORT_NAME.match(name) or ".." in PurePosixPath(name).parts or not name.endswith(".proto"):
        raise _Bad(f"reference name {name!r} is not a relative .proto path")
    return name


def compile_proto(files: dict[str, str], main: str, include: Path | None = None) -> bytes:
    """A ``FileDescriptorSet`` (imports included) of ``main`` among ``files`` (import name -> text), by grpcio-tools'
    protoc in a child process (its errors captured, not printed) in a private temp dir; ``include`` is searched for
    imports too (``--schemas``)."""
    with tempfile.TemporaryDirectory(prefix="kafkatool-proto-") as tmp:
        for name, text in files.items():
            path = Path(tmp, _safe_import_name(name))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        out = Path(tmp, "descriptor-set.bin")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={tmp}",
               *([f"--proto_path={include}"] if include is not None else []),
               f"--descriptor_set_out={out}", "--include_imports", main]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=PROTOC_TIMEOUT, cwd=tmp, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise _Bad(f"protoc did not finish in {PROTOC_TIMEOUT} s") from None
        if done.returncode != 0:
            text = done.stderr.decode("utf-8", "replace").strip().replace(tmp + "/", "")
            raise _Bad(f"does not compile: {text[:500] or f'protoc exit {done.returncode}'}")
        return out.read_bytes()


def proto_schema(registry: Registry, v: SchemaVersion) -> tuple[Any, Any]:
    """(descriptor pool, the schema's own ``FileDescriptorProto``) from its ``.proto`` text and its references (import
    name -> referenced schema), as ``ProtobufSchema`` resolves them."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    main = f"kafkatool_schema_{v.id}.proto"
    files = {name: ref.schema for name, ref in _closure(registry, v)}
    files[main] = v.schema
    include = Path(v.where).parent if v.subject is None and v.where else None  # --schemas DIR: its other files
    try:
        fds = descriptor_pb2.FileDescriptorSet.FromString(compile_proto(files, main, include))
        pool = descriptor_pool.DescriptorPool()
        for f in fds.file:
            pool.Add(f)
    except _Bad as exc:
        raise _Bad(f"Protobuf schema id {v.id} {exc}") from None
    except Exception as exc:
        raise _Bad(f"Protobuf schema id {v.id}: {_short(exc)}") from None
    return pool, next(f for f in fds.file if f.name == main)


def message_name(top: Any, indexes: tuple[int, ...], schema_id: int) -> str:
    """The full name of the message ``indexes`` names in ``top`` (``ProtobufSchema.toMessageName``: the n-th message
    at the top, then the n-th nested type, ...)."""
    types, name = top.message_type, top.package
    for depth, i in enumerate(indexes):
        if i >= len(types):
            raise _Bad(f"message index {list(indexes)}: schema id {schema_id} has {len(types)} message types "
                      f"at depth {depth}")
        name = f"{name}.{types[i].name}" if name else types[i].name
        types = types[i].nested_type
    return name


def _protobuf(registry: Registry, v: SchemaVersion) -> Reader:
    """The schema's messages (:func:`proto_schema`); the message a payload names is found by its index array
    (:func:`message_name`)."""
    from google.protobuf import json_format, message_factory

    pool, top = proto_schema(registry, v)
    classes: dict[tuple[int, ...], Any] = {}

    def message_class(indexes: tuple[int, ...]) -> Any:
        if indexes not in classes:
            classes[indexes] = message_factory.GetMessageClass(
                pool.FindMessageTypeByName(message_name(top, indexes, v.id)))
        return classes[indexes]

    def read(body: bytes, indexes: tuple[int, ...]) -> Any:
        msg = message_class(indexes)()
        msg.ParseFromString(body)
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)

    return read


def _json_schema(registry: Registry, v: SchemaVersion, validate: bool) -> Reader:
    """The body as JSON; with ``validate`` checked against the schema (its references by name, as
    ``JsonSchema`` resolves them), the first failing path named."""
    try:
        schema = json.loads(v.schema)
        refs = [(name, json.loads(ref.schema)) for name, ref in _closure(registry, v)]
    except _Bad:
        raise
    except (ValueError, RecursionError) as exc:
        raise _Bad(f"JSON schema id {v.id} is not JSON: {_short(exc)}") from None
    validator = None
    if validate:
        import jsonschema
        import referencing
        import referencing.jsonschema

        try:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            resources = [(name, referencing.Resource.from_contents(
                s, default_specification=referencing.jsonschema.DRAFT202012)) for name, s in refs]
            validator = cls(schema, registry=referencing.Registry().with_resources(resources))
        except Exception as exc:
            raise _Bad(f"JSON schema id {v.id} is not a JSON Schema: {_short(exc)}") from None

    def read(body: bytes, _indexes: tuple[int, ...]) -> Any:
        try:
            value = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _Bad(f"body is not UTF-8 JSON: {_short(exc)}") from None
        if validator is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                raise _Bad(f"does not validate against schema id {v.id} at {error.json_path}: "
                          f"{_short(error.message)}")
        return value

    return read


def _short(exc: Any) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "..."


# --- the decoders -------------------------------------------------------------------------------------------------


class SchemaDecoders:
    """The registry and each schema compiled once per id (or why it does not compile)."""

    def __init__(self, registry: Registry, validate: bool = False) -> None:
        self.registry, self.validate = registry, validate
        # the subjects with a version (soft-deleted ones too): their topics' payloads were written framed
        self.subjects = frozenset(subject for subject, _version in registry.versions)
        self._compiled: dict[int, tuple[str, Reader] | str] = {}  # id -> (type, reader) or why not

    def compiled(self, schema_id: int) -> tuple[str, Reader]:
        if schema_id not in self._compiled:
            v = self.registry.by_id(schema_id)
            if v is None:
                self._compiled[schema_id] = f"schema id {schema_id} is not in the registry"
            else:
                try:
                    reader = (_avro(self.registry, v) if v.schema_type == "AVRO" else
                              _protobuf(self.registry, v) if v.schema_type == "PROTOBUF" else
                              _json_schema(self.registry, v, self.validate))
                    self._compiled[schema_id] = (v.schema_type, reader)
                except _Bad as exc:
                    self._compiled[schema_id] = str(exc)
        got = self._compiled[schema_id]
        if isinstance(got, str):
            raise _Bad(got)
        return got

    def framed(self, data: bytes, want: str | None) -> Decoded:
        """A Confluent-framed payload by its writer's schema; ``want`` the type asked for (None: the schema's)."""
        schema_id = None
        try:
            schema_id, pos = frame(data)
            kind, reader = self.compiled(schema_id)
            if want is not None and kind != want:
                raise _Bad(f"schema id {schema_id} is {kind}, not {want}")
            indexes: tuple[int, ...] = ()
            if kind == "PROTOBUF":
                indexes, pos = message_indexes(data, pos)
            return Decoded(reader(data[pos:], indexes), schema_id)
        except _Bad as exc:
            return Decoded(schema_id=schema_id, error=str(exc))
        except Exception as exc:  # the libraries' errors on untrusted bodies (EOF, bad varint, bad UTF-8, depth)
            return Decoded(schema_id=schema_id, error=f"body does not decode by schema id {schema_id}: "
                                                      f"{type(exc).__name__}: {_short(exc)}")

    def auto(self, data: bytes, subject: str | None = None) -> Decoded:
        """Confluent framing to its schema's type; else UTF-8 JSON, then UTF-8 text, then the bytes as base64. When
        the registry holds ``subject`` (the payload's topic's subject under TopicNameStrategy, the serializers'
        default), the topic's payloads are written framed: one that is not (a wrong magic byte, a cut frame) does
        not decode, as the schema's deserializer refuses it (``AbstractKafkaSchemaSerDe.getByteBuffer``)."""
        expected = subject is not None and subject in self.subjects
        if (len(data) >= 5 or expected) and data[:1] == bytes([MAGIC]):
            return self.framed(data, None)
        if expected:
            got = f"magic byte {data[0]}" if data else "an empty payload"
            return Decoded(error=f"{got}, not Confluent framing, in a topic whose subject {subject} is in the "
                                 "registry")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return Decoded(base64.b64encode(data).decode("ascii"))
        try:
            return Decoded(json.loads(text))
        except (ValueError, RecursionError):
            return Decoded(text)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        return False


def schema_decoder(name: str, sources: SchemaSources) -> tuple[PayloadDecoder, list[Finding]]:
    """``avro``, ``protobuf``, ``json-schema`` or ``auto`` over the registry of ``sources`` (read once per sources:
    :func:`kafkatool.payloads.registry.load`), with the findings of its loading. Without the extra, a usage error
    that names it."""
    missing = [m for m in NEEDS[name] if not _installed(m)]
    if missing:
        raise UsageError(f"the {name} decoder needs {', '.join(missing)}: {EXTRA}")
    registry, findings = load(tuple(Path(p) for p in sources.paths), sources.schema_log_dir, sources.schemas_dir)
    decoders = SchemaDecoders(registry, sources.validate)
    want = TYPE_OF.get(name)

    def decode(data: bytes | None, subject: str | None = None) -> Decoded:
        if data is None:
            return Decoded()
        data = bytes(data)
        return decoders.auto(data, subject) if want is None else decoders.framed(data, want)

    return decode, list(findings)
