"""Schema Registry's store, rebuilt from its ``_schemas`` topic on disk as ``KafkaStoreReaderThread`` rebuilds it.

Every ``_schemas`` record has a JSON key and value (``SchemaRegistrySerializer``): the key's ``keytype`` names its
class (``SchemaRegistryKeyType``: ``SCHEMA`` {subject, version}, ``CONFIG`` and ``MODE`` {subject, absent or null
for the global one}, ``NOOP``, ``DELETE_SUBJECT``, ``CLEAR_SUBJECT``, ``CONTEXT``). The reader applies them in offset
order to its local store: a null value (tombstone) removes the key, anything else replaces it
(``KafkaStoreReaderThread.doWork``); then ``KafkaStoreMessageHandler.handleUpdate`` marks versions 1..N of a subject
deleted for a ``DELETE_SUBJECT`` {subject, version} and drops a subject's soft-deleted versions for a
``CLEAR_SUBJECT`` (``InMemoryCache.clearSubjects``). A ``SchemaValue`` (subject, version, id, schemaType: absent
is AVRO, schema, references [{name, subject, version}], deleted) with ``deleted: true`` is soft-deleted: Schema
Registry still serves it by id (``GET /schemas/ids/{id}`` looks up deleted schemas too), and so does this reader.
A record the serializer refuses is logged and skipped by Schema Registry; here it is a ``schema-record-invalid``
finding and the rest still loads.

``--schemas DIR`` adds ``<id>.avsc``, ``<id>.proto`` and ``<id>.json`` files, which take precedence over the topic.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KafkaToolError, UsageError
from ..filetypes import open_regular
from ..findings import finding
from ..internal.common import log_bytes, partition_records
from ..logdir import LogDir
from ..model import CappedFindings, Finding
from ..walk import PartitionDir, discover, partition_dirs, partition_dirs_and_findings

SCHEMAS_TOPIC = "_schemas"  # Schema Registry's kafkastore.topic default
TYPES = ("AVRO", "PROTOBUF", "JSON")
FILE_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
MAX_SCHEMA_FILE = 16 << 20  # a schema file above this is refused (a schema is kilobytes; the topic's records too)
KEY_TYPES = ("SCHEMA", "CONFIG", "MODE", "NOOP", "DELETE_SUBJECT", "CLEAR_SUBJECT", "CONTEXT")
_ID_FILE = re.compile(r"^(\d{1,10})(\.avsc|\.proto|\.json)$")


@dataclass(frozen=True, slots=True)
class Reference:
    """``SchemaReference``: the import name a schema uses and the subject/version it resolves to (-1: latest)."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One ``SchemaValue`` (or one ``--schemas`` file: subject None, version 0)."""

    subject: str | None
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...] = ()
    deleted: bool = False
    where: str = ""      # the segment (or file) it was read from
    offset: int = -1     # its offset in _schemas (-1: a file)

    def as_dict(self) -> dict[str, Any]:
        return {"type": "schema_version", "subject": self.subject, "version": self.version, "id": self.id,
                "schema_type": self.schema_type, "deleted": self.deleted,
                "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                               for r in self.references],
                "schema": self.schema, "source": self.where, "offset": self.offset}


@dataclass(frozen=True, slots=True)
class SubjectConfig:
    """A ``CONFIG`` (compatibility, from ``ConfigValue``) or ``MODE`` (``ModeValue``) setting; subject None: global."""

    kind: str            # "config" or "mode"
    subject: str | None
    value: dict[str, Any]
    offset: int

    def as_dict(self) -> dict[str, Any]:
        setting = self.value.get("compatibilityLevel") if self.kind == "config" else self.value.get("mode")
        return {"type": "schema_setting", "kind": self.kind, "subject": self.subject, "setting": setting,
                "value": self.value, "offset": self.offset}


@dataclass
class Registry:
    """The store: schema versions by (subject, version), ids to the versions holding them, the settings."""

    versions: dict[tuple[str, int], SchemaVersion] = field(default_factory=dict)
    settings: dict[tuple[str, str | None], SubjectConfig] = field(default_factory=dict)
    files: dict[int, SchemaVersion] = field(default_factory=dict)   # --schemas DIR, by id
    partitions: list[str] = field(default_factory=list)            # the _schemas partitions read

    def by_id(self, schema_id: int) -> SchemaVersion | None:
        """The schema a Confluent-framed payload names: a ``--schemas`` file first, else the version holding the id
        that was written last (``guidToSchemaKey`` keeps the last), soft-deleted or not."""
        if schema_id in self.files:
            return self.files[schema_id]
        found = None
        for v in self.versions.values():
            if v.id == schema_id and (found is None or v.offset > found.offset):
                found = v
        return found

    def reference(self, ref: Reference) -> SchemaVersion | None:
        """What a reference resolves to: its subject's version, or its latest live one for -1
        (``KafkaSchemaRegistry.lookUpSchemaUnderSubject``/``latestVersion``)."""
        if ref.version != -1:
            return self.versions.get((ref.subject, ref.version))
        live = [v for (s, _n), v in self.versions.items() if s == ref.subject and not v.deleted]
        return max(live, key=lambda v: v.version, default=None)

    def schemas(self) -> list[SchemaVersion]:
        return sorted(self.versions.values(), key=lambda v: (v.subject or "", v.version))


class _Invalid(Exception):
    pass


def _field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str, *, required: bool = True,
           default: Any = None) -> Any:
    if name not in obj or obj[name] is None:
        if required:
            raise _Invalid(f"{what} has no {name}")
        return default
    value = obj[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Invalid(f"{what}'s {name} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}")
    return value


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Invalid(f"{what} is not UTF-8 JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise _Invalid(f"{what} is a JSON {type(obj).__name__}, not an object")
    return obj


def parse_key(data: bytes) -> tuple[str, str | None, int | None]:
    """A ``_schemas`` key (``SchemaRegistrySerializer.deserializeKey``) as (keytype, subject, version)."""
    obj = _json_object(data, "key")
    keytype = _field(obj, "keytype", str, "key")
    if keytype not in KEY_TYPES:
        raise _Invalid(f"key type {keytype!r} is not one of {', '.join(KEY_TYPES)}")
    subject = _field(obj, "subject", str, f"{keytype} key", required=keytype in ("SCHEMA", "DELETE_SUBJECT",
                                                                                   "CLEAR_SUBJECT"))
    version = _field(obj, "version", int, "SCHEMA key") if keytype == "SCHEMA" else None
    return keytype, subject, version


def parse_schema_value(data: bytes, where: str, offset: int) -> SchemaVersion:
    """A ``SchemaValue``; its subject and version are the value's own (Schema Registry's store keeps what the value
    says)."""
    obj = _json_object(data, "SCHEMA value")
    what = "SCHEMA value"
    schema_type = _field(obj, "schemaType", str, what, required=False, default="AVRO")
    if schema_type not in TYPES:
        raise _Invalid(f"schemaType {schema_type!r} is not one of {', '.join(TYPES)}")
    refs = _field(obj, "references", list, what, required=False, default=[])
    references = []
    for n, r in enumerate(refs):
        if not isinstance(r, dict):
            raise _Invalid(f"reference {n} is a JSON {type(r).__name__}, not an object")
        references.append(Reference(_field(r, "name", str, f"reference {n}"), _field(r, "subject", str,
                                    f"reference {n}"), _field(r, "version", int, f"reference {n}")))
    version = _field(obj, "version", int, what)
    schema_id = _field(obj, "id", int, what)
    if not 0 <= schema_id < 1 << 31:
        raise _Invalid(f"id {schema_id} is not a schema id (0..2^31-1)")
    return SchemaVersion(_field(obj, "subject", str, what), version, schema_id, schema_type,
                         _field(obj, "schema", str, what), tuple(references),
                         _field(obj, "deleted", bool, what, required=False, default=False), where, offset)


def schemas_partitions(sources_paths: Iterable[Path], schema_log_dir: Path | None
                       ) -> Iterator[PartitionDir | Finding]:
    """The ``_schemas-N`` partition dirs among ``sources_paths`` (dirs only: files named on a command line hold no
    partition), in the log dir of a partition dir named alone (the dir it sits in, when discovery takes that for a
    log dir: ``dump OUT/orders-0`` finds ``OUT/_schemas-0``, as the broker keeps both there) and under
    ``schema_log_dir``, with what discovery could not read; each found once. Only ``schema_log_dir``'s findings are
    said: the other dirs are said by the command that reads them, and a log dir looked in beside a named partition is
    not one the user named (a parent that cannot be listed or is no log dir is passed over)."""
    dirs = [Path(p) for p in sources_paths if Path(p).is_dir()]
    if schema_log_dir is not None:
        dirs.append(Path(schema_log_dir))
    seen: set[Path] = set()
    for d in dirs:
        try:
            units = list(partition_dirs_and_findings([d]))
        except KafkaToolError:
            continue  # nothing Kafka under it (or it went): no _schemas there either
        for unit in [*units, *_beside(d, units)]:
            if isinstance(unit, Finding):
                if d == schema_log_dir:
                    yield unit
            elif unit.topic == SCHEMAS_TOPIC and unit.path.resolve() not in seen:
                seen.add(unit.path.resolve())
                yield unit


def _beside(d: Path, units: list[PartitionDir | Finding]) -> list[PartitionDir]:
    """The ``_schemas`` partitions of the log dir ``d`` sits in, when ``d`` is one partition dir alone (its name's
    parent, as discovery lists a linked partition dir in the log dir holding the link)."""
    if not any(isinstance(u, PartitionDir) and u.logdir is None and u.path == d for u in units):
        return []
    parent = Path(os.path.abspath(d)).parent
    try:
        found = discover([parent])
    except KafkaToolError:  # the parent cannot be listed, or holds nothing Kafka
        return []
    return [part for u in found if isinstance(u, LogDir) and u.path == parent for part in u.partitions
            if part.topic == SCHEMAS_TOPIC and part.state is None]


def load_partition(registry: Registry, part: PartitionDir, findings: CappedFindings,
                   progress: Callable[[int], None] | None = None) -> None:
    """Apply one ``_schemas`` partition's records to ``registry`` in offset order (module docstring)."""
    registry.partitions.append(f"{part.topic}-{part.partition}")
    store: dict[tuple[str, str | None, int | None], Any] = {}
    findings.extend(part.findings)
    raw: list[Finding] = []
    for display, batch, rec in partition_records(part.files, raw, progress):
        if rec.control_type is not None:
            continue
        try:
            if rec.key is None:
                raise _Invalid("no key")
            key = parse_key(rec.key)
            keytype, subject, version = key
            if keytype == "NOOP":
                continue  # the reader's offset marker
            if rec.value is None:
                store.pop(key, None)
                if keytype == "SCHEMA":
                    registry.versions.pop((subject, version), None)  # type: ignore[arg-type]
                elif keytype in ("CONFIG", "MODE"):
                    registry.settings.pop((keytype.lower(), subject), None)
                continue
            if keytype == "SCHEMA":
                value = parse_schema_value(rec.value, display, rec.offset)
                registry.versions[(subject, version)] = value  # type: ignore[index]
            elif keytype in ("CONFIG", "MODE"):
                registry.settings[(keytype.lower(), subject)] = SubjectConfig(
                    keytype.lower(), subject, _json_object(rec.value, f"{keytype} value"), rec.offset)
            elif keytype == "DELETE_SUBJECT":
                till = _field(_json_object(rec.value, "DELETE_SUBJECT value"), "version", int, "DELETE_SUBJECT value")
                for (s, n), v in list(registry.versions.items()):  # the versions there are, not range(1, till)
                    if s == subject and n <= till and not v.deleted:
                        registry.versions[(s, n)] = _soft_deleted(v)
            elif keytype == "CLEAR_SUBJECT":
                _json_object(rec.value, "CLEAR_SUBJECT value")
                for (s, n), v in list(registry.versions.items()):
                    if s == subject and v.deleted:
                        del registry.versions[(s, n)]
            else:  # CONTEXT: Schema Registry's contexts, nothing to decode by
                _json_object(rec.value, f"{keytype} value")
        except _Invalid as exc:
            findings.append(finding("schema-record-invalid", display, batch.position,
                                    f"{SCHEMAS_TOPIC} record at offset {rec.offset}: {exc}; skipped"))
    findings.extend(raw)


def _soft_deleted(v: SchemaVersion) -> SchemaVersion:
    return SchemaVersion(v.subject, v.version, v.id, v.schema_type, v.schema, v.references, True, v.where, v.offset)


def load_dir(registry: Registry, schemas_dir: Path, findings: list[Finding]) -> None:
    """``--schemas DIR``: ``<id>.avsc`` (Avro), ``<id>.proto`` (Protobuf), ``<id>.json`` (JSON Schema). Other names
    are left alone; a file that cannot be read (not a regular file, too big, not UTF-8) is a finding."""
    try:
        names = sorted(p.name for p in Path(schemas_dir).iterdir())
    except OSError as exc:
        raise UsageError(f"--schemas {schemas_dir}: {exc.strerror or exc}") from None
    for name in names:
        m = _ID_FILE.match(name)
        if m is None:
            continue
        path = Path(schemas_dir) / name
        try:
            with open_regular(path) as fh:
                data = fh.read(MAX_SCHEMA_FILE + 1)
            if len(data) > MAX_SCHEMA_FILE:
                raise _Invalid(f"more than {MAX_SCHEMA_FILE} bytes")
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError, _Invalid) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            findings.append(finding("schema-file-invalid", str(path), None, f"not read: {reason}"))
            continue
        schema_id = int(m.group(1))
        if schema_id >= 1 << 31:
            findings.append(finding("schema-file-invalid", str(path), None, "not a schema id (0..2^31-1)"))
            continue
        registry.files[schema_id] = SchemaVersion(None, 0, schema_id, FILE_TYPES[m.group(2)], text, where=str(path))


def check_references(registry: Registry, findings: list[Finding]) -> None:
    """Each live schema's references must resolve, without a cycle (Schema Registry refuses both at registration:
    ``AbstractSchemaProvider.resolveReferences``); one that does not is a ``schema-reference-invalid`` finding
    (decoding by it fails, said per record)."""
    for v in registry.schemas():
        problem = reference_problem(registry, v)
        if problem:
            findings.append(finding("schema-reference-invalid", v.where, None,
                                    f"{v.subject} version {v.version} (id {v.id}): {problem}"))


def reference_problem(registry: Registry, root: SchemaVersion) -> str | None:
    """Why ``root``'s references do not resolve (a missing one or a cycle), else None; walked without recursion."""
    stack: list[tuple[SchemaVersion, tuple[tuple[str | None, int], ...]]] = [(root, ((root.subject, root.version),))]
    visited: set[tuple[str | None, int]] = set()
    while stack:
        v, path = stack.pop()
        for r in v.references:
            target = registry.reference(r)
            if target is None:
                return f"reference {r.name!r} to {r.subject} version {r.version} is not in the registry"
            node = (target.subject, target.version)
            if node in path:
                return f"reference cycle through {r.subject} version {target.version}"
            if node not in visited:
                visited.add(node)
                stack.append((target, (*path, node)))
    return None


@functools.lru_cache(maxsize=4)
def load(paths: tuple[Path, ...], schema_log_dir: Path | None, schemas_dir: Path | None,
         ) -> tuple[Registry, tuple[Finding, ...]]:
    """The registry for one command: every ``_schemas`` partition found, then the ``--schemas`` files. Read once
    per (paths, log dir, dir): the key and value decoders of a command share it."""
    registry = Registry()
    findings = CappedFindings()
    for unit in schemas_partitions(paths, schema_log_dir):
        if isinstance(unit, Finding):
            findings.append(unit)
        else:
            load_partition(registry, unit, findings)
    if schemas_dir is not None:
        load_dir(registry, schemas_dir, findings)
    elif not registry.partitions:  # said once here, not only as each framed record's unknown id
        where = [*map(str, paths), *([] if schema_log_dir is None else [str(schema_log_dir)])]
        findings.append(finding("schemas-none", ", ".join(where), None,
                                f"no {SCHEMAS_TOPIC}-* partition dir in the paths, in the log dir of a partition dir "
                                "named, or in --schema-log-dir, and no --schemas: no schema to decode by"))
    check_references(registry, findings)
    return registry, (*findings, *findings.summary())


def registry_listing(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None,
                     ) -> Iterator[SchemaVersion | SubjectConfig | Finding]:
    """``schemas``: every schema version left in the ``_schemas-*`` partitions under ``paths`` (soft-deleted ones
    too, flagged) by subject and version, then the compatibility and mode settings (global first), then the
    findings; ``schemas-none`` when no ``_schemas`` partition is there. ``progress`` is told the bytes read
    (:func:`registry_bytes` in all)."""
    registry = Registry()
    findings = CappedFindings()
    for unit in partition_dirs_and_findings(paths):
        if isinstance(unit, Finding):
            findings.append(unit)
        elif unit.topic == SCHEMAS_TOPIC:
            load_partition(registry, unit, findings, progress)
    check_references(registry, findings)
    yield from registry.schemas()
    yield from sorted(registry.settings.values(), key=lambda c: (c.kind, c.subject is not None, c.subject or ""))
    yield from findings
    yield from findings.summary()
    if not registry.partitions:
        yield finding("schemas-none", ", ".join(str(p) for p in paths), None, f"no {SCHEMAS_TOPIC}-* partition dirs "
                      "found")


def registry_bytes(paths: Iterable[str | Path]) -> int:
    """The bytes of the ``_schemas`` segments :func:`registry_listing` reads (a progress bar's total)."""
    return sum(log_bytes(part.files) for part in partition_dirs(paths) if part.topic == SCHEMAS_TOPIC)
