"""What every reader of an internal topic shares: the coordinators' partition hash, record keys and values
parsed whole with their declarations (``formats/internal_topics.py``, derived fast readers first), and a
partition's records in offset order, with findings where they do not parse."""

from __future__ import annotations

import base64
import functools
import io
import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from construct import ConstructError

from ..fastparse import reader
from ..filetypes import FileKind, classify, file_size, open_regular
from ..findings import finding
from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from ..javacompat import java_string_hash
from ..model import Batch, Finding, Record, Trailing
from ..records import RECORD_CHUNK, RawBatch, decode_records, record_chunks, scan

# --- partitionFor ---------------------------------------------------------------------------------


def partition_for(key: str, partitions: int = 50) -> int:
    """``GroupMetadataManager.partitionFor`` / ``TransactionStateManager.partitionFor``:
    ``Utils.abs(key.hashCode()) % partitions``. Kafka's ``Utils.abs(n)`` (``clients/.../common/utils/Utils.java``)
    is ``Math.abs(n)``, except 0 for ``Integer.MIN_VALUE`` (not ``n & 0x7fffffff``, which differs for every
    negative hash: real brokers' ``__consumer_offsets-N`` confirm it)."""
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# --- parsing with the declarations ----------------------------------------------------------------


# Keys repeat: a group commits the same (group, topic, partition) over and over, and a transactional id's state is
# rewritten at every transition. Decoded keys are immutable, so each distinct key is decoded once (a key that does
# not decode raises again, every time: exceptions are not cached).
KEYS_CACHED = 1 << 16


class Undecodable(Exception):
    pass


# Readers derived from the declarations of the records a partition holds by the million (kafkatool.fastparse):
# built on first use, by the id of the declaration (module constants, and the metadata layouts metadata_layout
# keeps: alive as long as the process).
_FAST_DECLS = (it.CoordinatorKeyVersion, it.OffsetCommitKey, it.GroupMetadataKey, it.OffsetCommitValue,
               it.GroupMetadataValue, it.TransactionLogKey, it.TransactionLogValue)
_fast: dict[int, tuple[Any, Callable[[bytes], Any]]] | None = None  # id -> (the declaration, kept alive; reader)


def parse(decl: Any, data: bytes, what: str) -> Any:
    """Parse ``data`` whole with ``decl``: a short read or bytes left over is an error. The declarations of
    ``_FAST_DECLS`` and the metadata layouts are read by their derived :func:`kafkatool.fastparse.reader` first
    (the same result), and by Construct where it gives up, to word the error."""
    global _fast
    if _fast is None:
        _fast = {id(d): (d, r) for d in (*_FAST_DECLS, *metadata_layouts()) if (r := reader(d)) is not None}
    fast = _fast.get(id(decl))
    if fast is not None and data.__class__ is bytes and (value := fast[1](data)) is not None:
        return value
    stream = io.BytesIO(data)
    try:
        value = decl.parse_stream(stream)
    except (ConstructError, UnicodeDecodeError) as exc:
        raise Undecodable(f"{what}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    if stream.tell() != len(data):
        raise Undecodable(f"{what}: {len(data) - stream.tell()} bytes left over after the declared fields")
    return value


def nullable(field_: Any) -> str | None:
    """A parsed string/bytes field (``{length, value}``) as its value (None when null)."""
    return field_.value


def entries(field_: Any) -> list | None:
    return None if field_.entries is None else list(field_.entries)


def file_batches(path: Path, display: str, progress: Callable[[int], None] | None = None, columns: bool = False
                 ) -> Iterator[tuple[Batch, list[Record] | tuple] | Finding]:
    """Every batch of a record file (segment or KRaft snapshot) with its records, a batch of more records than
    ``RECORD_CHUNK`` in pieces (each with the batch); findings where it fails. ``progress`` is told the bytes
    read. The replays loop over a batch's list: no generator step per record. With ``columns``, the records of a
    batch the native core decodes whole come as its columns (``decode_records``: a tuple, not a list)."""
    try:
        fh = open_regular(path)
    except OSError as exc:
        yield finding("io-error", display, None, f"cannot read: {exc.strerror or exc}")
        return
    with fh:
        for item in scan(fh, display, with_raw=True, progress=progress):
            if isinstance(item, RawBatch):
                if not item.batch.crc_valid:
                    continue  # its crc-mismatch finding follows
                if item.batch[12] > RECORD_CHUNK:  # more records than any coordinator writes in a batch (a bomb):
                    # a chunk at a time, its findings after them, memory bounded by bytes (records.record_chunks)
                    for chunk in record_chunks(item.batch, item.raw, display):
                        yield chunk if isinstance(chunk, Finding) else (item.batch, chunk)
                    continue
                recs, findings = decode_records(item.batch, item.raw, display, columns=columns)
                yield from findings
                yield item.batch, recs
            elif isinstance(item, Finding):
                yield item
            elif isinstance(item, Trailing):
                yield finding("trailing-bytes", display, item.position,
                              f"{item.bytes} bytes at the end do not form a whole batch")


def file_records(path: Path, display: str, progress: Callable[[int], None] | None = None
             ) -> Iterator[tuple[Batch, Record] | Finding]:
    """Every record of a record file (segment or KRaft snapshot), with its batch; findings where it fails
    (:func:`file_batches`, a record at a time)."""
    for item in file_batches(path, display, progress):
        if isinstance(item, Finding):
            yield item
        else:
            batch, recs = item
            for r in recs:
                yield batch, r


def log_segments(files: Iterable[tuple[Path, str]], kind: FileKind = FileKind.LOG) -> list[tuple[int, Path, str]]:
    found = []
    for path, display in files:
        info = classify(path)
        if info.kind is kind and info.leftover is None and info.base_offset is not None:
            found.append((info.base_offset, path, display))
    return sorted(found)


def partition_records(files: Iterable[tuple[Path, str]], findings: list[Finding],
                       progress: Callable[[int], None] | None = None) -> Iterator[tuple[str, Batch, Record]]:
    """(segment display path, batch, record) of a partition's ``.log`` segments in offset order; findings met
    on the way are appended to ``findings``; ``progress`` is told the bytes read (:func:`log_bytes` in all)."""
    for display, batch, recs in partition_batches(files, findings, progress):
        for r in recs:
            yield display, batch, r


def partition_batches(files: Iterable[tuple[Path, str]], findings: list[Finding],
                      progress: Callable[[int], None] | None = None, columns: bool = False
                      ) -> Iterator[tuple[str, Batch, list[Record] | tuple]]:
    """(segment display path, batch, its records) of a partition's ``.log`` segments in offset order, as
    :func:`partition_records` gives them a record at a time (``columns``: as :func:`file_batches`)."""
    for _base, path, display in log_segments(files):
        for item in file_batches(path, display, progress, columns):
            if isinstance(item, Finding):
                findings.append(item)
            else:
                yield display, item[0], item[1]


def batched(items: Iterable[tuple[str, Batch, Record]]) -> Iterator[tuple[str, Batch, list[Record]]]:
    """(display path, batch, record) items, in offset order, as :func:`partition_batches` gives them: the records of
    one batch (consecutive items with the same batch) together."""
    for (display, batch), group in itertools.groupby(items, key=lambda item: (item[0], item[1])):
        yield display, batch, [rec for _display, _batch, rec in group]


def log_bytes(files: Iterable[tuple[Path, str]]) -> int:
    """Bytes of the ``.log`` segments :func:`partition_records` reads."""
    return sum(file_size(path) for _base, path, _display in log_segments(files))




def value_version(value: bytes, known: range, name: str) -> int:
    version = parse(it.CoordinatorKeyVersion, value[:2], f"{name} version").version
    if version not in known:
        raise Undecodable(f"{name} version {version} is not one this tool knows ({known.start}..{known.stop - 1})")
    return version


def schema_record(folder: str, topic: str, key: bytes, value: bytes | None) -> dict[str, Any]:
    """A coordinator record read by Kafka's JSON schemas (``formats/kafka_schema.py``, as ``CoordinatorRecordSerde``
    reads it): ``record`` (the schema's name without Key/Value), ``key`` and ``value`` with every field (``value``
    None for a tombstone), and ``value_version``. :class:`Undecodable` where the bytes do not read; its reason
    starts with the finding code ``coordinator-record-newer`` where the record type or value version is newer than
    the schemas."""
    try:
        r = ks.coordinator_record(folder, key, value)
    except ks.UnknownRecord as exc:
        raise Undecodable(f"coordinator-record-newer: {topic} {exc}") from None
    except ConstructError as exc:
        raise Undecodable(f"{topic} record by its schema: {exc}") from None
    return {"record": r["record"], "key": r["key"], "value": r["value"], "value_version": r["value_version"]}


def newer_record(folder: str, topic: str, key: bytes, value: bytes | None, display: str, pos: int | None,
                 offset: int) -> Finding | None:
    """The ``coordinator-record-newer`` finding for a record whose type or value version the schemas do not
    declare (a coordinator newer than them wrote it), else None."""
    try:
        ks.coordinator_record(folder, key, value)
    except ks.UnknownRecord as exc:
        return finding("coordinator-record-newer", display, pos, f"record at offset {offset}: {topic} {exc}; skipped")
    except ConstructError:
        return None
    return None


def kafka_uuid(b: bytes) -> str:
    """A Kafka ``Uuid`` as Kafka prints it: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(b).decode("ascii").rstrip("=")


def tagged(fields_: Any, declared: dict[int, tuple[str, Any]], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields_.fields:
        if f.tag in declared:
            name, decl = declared[f.tag]
            v = parse(decl, f.data, f"{what} tag {f.tag}")
            v = entries(v) if hasattr(v, "entries") else v
            # an array of uuids (Directories, LogDirs) as Kafka prints a Uuid
            out[name] = [kafka_uuid(x) if isinstance(x, bytes) else x for x in v] if isinstance(v, list) else v
    return out


@functools.cache
def metadata_layout(record_type: int, version: int) -> Any:
    """The declaration of a version of a metadata record type: one object for each (the factories of
    ``it.METADATA_RECORDS`` build some anew at every call), so that its derived reader is made once."""
    return it.METADATA_RECORDS[record_type][2](version)  # type: ignore[operator]


def metadata_layouts() -> list[Any]:
    """Every metadata record layout and tag layout declared here (for the derived readers of ``parse``)."""
    tags = (it.PARTITION_RECORD_TAGS, it.PARTITION_CHANGE_TAGS, it.BROKER_REGISTRATION_CHANGE_TAGS,
            it.METADATA_TRANSACTION_TAGS)
    return [it.MetadataFrame, it.PARTITION_RECORD_V1_PRERELEASE,
            *(metadata_layout(t, v) for t, (_name, versions, _f) in it.METADATA_RECORDS.items() for v in versions),
            *(decl for table in tags for _name, decl in table.values())]
