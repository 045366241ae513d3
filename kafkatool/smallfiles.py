"""Readers for the small (non-record) files of a log dir: indexes, producer snapshots, checkpoints, metadata.

:func:`read_small_file` yields, in file order, the values below (each ``as_dict()`` is the corpus
``SCHEMA.md`` JSON-lines shape) and :class:`~kafkatool.model.Finding`\\ s for what Kafka would reject.
Semantics follow the Kafka classes the corpus goldens were produced with:

- ``.index`` / ``.timeindex``: entries are listed up to the first zero-filled (preallocated) slot,
  then ``sanityCheck()`` runs on the whole file; a failure is one error Finding at the end.
- ``.txnindex``: ``allAbortedTxns()`` then ``sanityCheck()``; an entry with a version Kafka rejects
  ends the listing with an error.
- producer ``.snapshot``: the header, then either all producers or (when Kafka's ``readSnapshot``
  throws: schema, version, CRC) an error Finding and no producers.
- text files: the header and entries up to the point Kafka's reader throws, then an error Finding.

Bad content never raises: it becomes a Finding and the reader stops. Only a file that cannot be
read raises :class:`~kafkatool.errors.InputIOError`. Index files are bulk-decoded with ``struct``
(``.index`` files can be 10 MiB preallocated); the formats are the Construct declarations in
``kafkatool.formats``, whose layouts and numbers ``formats/constants.py`` holds for the readers here (tests hold them
equal): a partition's small files are read without importing Construct, which costs more than checking them.
"""

from __future__ import annotations

import functools
import struct
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from .errors import InputIOError, UsageError
from .filetypes import MAX_SMALL_FILE_BYTES, FileKind, FileTooLarge, classify, read_small
from .findings import finding
from .formats import checkpoints
from .formats import constants as layout
from .formats.checkpoints import TextFileError
from .model import Finding
from .records import crc32c

# --- values ---------------------------------------------------------------------------------------


class IndexEntry(NamedTuple):
    offset: int    # absolute: segment base offset + relative offset
    position: int  # byte position in the .log

    def as_dict(self) -> dict[str, Any]:
        return {"type": "index_entry", "offset": self.offset, "position": self.position}


class TimeIndexEntry(NamedTuple):
    timestamp: int
    offset: int  # absolute

    def as_dict(self) -> dict[str, Any]:
        return {"type": "time_index_entry", "timestamp": self.timestamp, "offset": self.offset}


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "aborted_txn",
            "version": self.version,
            "producer_id": self.producer_id,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "last_stable_offset": self.last_stable_offset,
        }


class ProducerSnapshotHeader(NamedTuple):
    version: int
    crc: int
    crc_valid: bool
    count: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "producer_snapshot",
            "version": self.version,
            "crc": self.crc,
            "crc_valid": self.crc_valid,
            "count": self.count,
        }


class ProducerEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no open transaction

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "producer",
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "last_sequence": self.last_sequence,
            "last_offset": self.last_offset,
            "offset_delta": self.offset_delta,
            "timestamp": self.timestamp,
            "coordinator_epoch": self.coordinator_epoch,
            "current_txn_first_offset": self.current_txn_first_offset,
        }


class CheckpointHeader(NamedTuple):
    version: int
    count: int | None  # None: the file ends after the version line

    def as_dict(self) -> dict[str, Any]:
        return {"type": "checkpoint", "version": self.version, "count": self.count}


class OffsetCheckpointEntry(NamedTuple):
    topic: str
    partition: int
    offset: int

    def as_dict(self) -> dict[str, Any]:
        return {"type": "offset", "topic": self.topic, "partition": self.partition, "offset": self.offset}


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int

    def as_dict(self) -> dict[str, Any]:
        return {"type": "epoch", "epoch": self.epoch, "start_offset": self.start_offset}


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str  # Uuid.toString(): URL-safe base64, no padding

    def as_dict(self) -> dict[str, Any]:
        return {"type": "partition_metadata", "version": self.version, "topic_id": self.topic_id}


class MetaProperties(NamedTuple):
    """``meta.properties``: the raw properties plus what Kafka derives from them."""

    version: int | None  # None when the file is unusable (see the accompanying Finding)
    node_id: int | None  # broker.id (v0) or node.id (v1)
    cluster_id: str | None
    directory_id: str | None
    properties: tuple[tuple[str, str], ...]  # file order

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "meta_properties",
            "version": self.version,
            "node_id": self.node_id,
            "cluster_id": self.cluster_id,
            "directory_id": self.directory_id,
            "properties": dict(self.properties),
        }


class CleanShutdown(NamedTuple):
    """``.kafka_cleanshutdown``: present means the broker shut down cleanly; epoch since Kafka 3.7."""

    version: int | None
    broker_epoch: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"type": "clean_shutdown", "version": self.version, "broker_epoch": self.broker_epoch}


class QuorumState(NamedTuple):
    """KRaft ``quorum-state``: ``data_version`` plus the QuorumStateData fields as written (camelCase)."""

    data_version: int
    fields: tuple[tuple[str, Any], ...]  # file order, data_version excluded

    def as_dict(self) -> dict[str, Any]:
        fields = {_snake(k): _snake_keys(v) for k, v in self.fields}
        return {"type": "quorum_state", "data_version": self.data_version, **fields}


SmallFileValue = (
    IndexEntry | TimeIndexEntry | AbortedTxn | ProducerSnapshotHeader | ProducerEntry | CheckpointHeader
    | OffsetCheckpointEntry | EpochEntry | PartitionMetadata | MetaProperties | CleanShutdown | QuorumState
)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {_snake(k): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


# --- entry point ------------------------------------------------------------------------------------

Reader = Callable[[bytes, str, int], Iterator[SmallFileValue | Finding]]


def read_small_file(
    path: Path, kind: FileKind, display_path: str, base_offset: int | None = None
) -> Iterator[SmallFileValue | Finding]:
    """Values and Findings of one small file, in file order.

    ``base_offset`` (segment base offset, for index kinds) defaults to the one in the file name.
    The file is read when this is called: :class:`InputIOError` is raised here, not while iterating.
    """
    return _read_small_file(path, kind, display_path, base_offset)[1]


def _read_small_file(
    path: Path, kind: FileKind, display_path: str, base_offset: int | None = None
) -> tuple[int, Iterator[SmallFileValue | Finding]]:
    """:func:`read_small_file`, and the file's size (the bytes read)."""
    reader = _reader(kind, display_path)
    try:
        data = _read_bytes(path, display_path)
    except FileTooLarge as exc:
        return exc.size, iter([too_large(kind, display_path, exc.size)])
    if base_offset is None and kind in _BASED:
        base_offset = classify(path).base_offset
    return len(data), _parse(reader, data, kind, display_path, base_offset)


def too_large(kind: FileKind, display_path: str, size: int) -> Finding:
    """The finding of a small file larger than :data:`~kafkatool.filetypes.MAX_SMALL_FILE_BYTES`: not read."""
    if kind in _BASED:  # the indexes
        return finding("index-too-large", display_path, None, f"{size} bytes: larger than any index the broker "
                       f"writes ({MAX_SMALL_FILE_BYTES}); not read")
    what = kind.value.replace("_", " ")
    return finding("file-too-large", display_path, None,
                   f"{size} bytes: larger than any {what} file the broker writes ({MAX_SMALL_FILE_BYTES}); not read")


_BASED = frozenset({FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX})  # the kinds whose offsets are relative


def parse_small_file(
    data: bytes, kind: FileKind, display_path: str, base_offset: int | None
) -> Iterator[SmallFileValue | Finding]:
    """:func:`read_small_file` on bytes already read (from any filesystem); ``base_offset`` as given."""
    return _parse(_reader(kind, display_path), data, kind, display_path, base_offset)


def _reader(kind: FileKind, display_path: str) -> Reader:
    """The reader of ``kind``; UsageError for a kind none here reads (the caller's mistake, said before a read)."""
    reader = _READERS.get(kind)
    if reader is None:
        raise UsageError(f"{display_path}: {kind.value} files are not read by read_small_file")
    return reader


def _parse(
    reader: Reader, data: bytes, kind: FileKind, display_path: str, base_offset: int | None
) -> Iterator[SmallFileValue | Finding]:
    """:func:`parse_small_file` by ``reader``, the reader of ``kind``."""
    if base_offset is None and kind in _BASED:
        return _with_first(
            finding("base-offset-unknown", display_path, None,
                    "no segment base offset in the file name; offsets shown relative to 0"),
            reader(data, display_path, 0),
        )
    return reader(data, display_path, base_offset or 0)


def _read_bytes(path: Path, display_path: str) -> bytes:
    """The file's bytes; FileTooLarge beyond ``MAX_SMALL_FILE_BYTES``, InputIOError when it cannot be read."""
    try:
        return read_small(path)
    except FileTooLarge:
        raise
    except OSError as e:
        raise cannot_read(display_path, e) from e


def cannot_read(display_path: str, exc: OSError) -> InputIOError:
    """What :func:`read_small_file` raises when the file cannot be read."""
    return InputIOError(f"{display_path}: cannot read: {exc.strerror or exc}")


class SmallReads:
    """The small files of one partition dir, each read and parsed once (:func:`read_small_file`) however many
    readers ask: the loader (``leader-epoch-checkpoint``, producer snapshots) and ``verify``'s checks of the same
    files. Keyed by path: every reader names a file by the display of the dir's listing (its findings say it).
    ``sizes``: each file read, by that display, its length (the partition's byte count takes it rather than a
    ``stat`` of it)."""

    __slots__ = ("_items", "sizes")

    def __init__(self) -> None:
        self._items: dict[Path, list[SmallFileValue | Finding] | InputIOError] = {}
        self.sizes: dict[str, int] = {}

    def __call__(self, path: Path, kind: FileKind, display_path: str) -> list[SmallFileValue | Finding]:
        """``list(read_small_file(path, kind, display_path))``, read at the first call; InputIOError the same."""
        got = self._items.get(path)
        if got is None:
            try:
                self.sizes[display_path], items = _read_small_file(path, kind, display_path)
                got = list(items)
            except InputIOError as exc:
                got = exc
            self._items[path] = got
        if isinstance(got, InputIOError):
            raise got
        return got


def _with_first(first: Finding, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _error(path: str, code: str, position: int | None, message: str) -> Finding:
    return finding(code, path, position, message)


# The entry layouts, from formats/constants.py (held equal to the Construct declarations by
# tests/test_formats_small.py): each a tuple of its fields in declaration order, which the values above follow.
_OFFSET_ENTRY = struct.Struct(layout.OFFSET_INDEX_ENTRY)
_TIME_ENTRY = struct.Struct(layout.TIME_INDEX_ENTRY)
OFFSET_SLOT, TIME_SLOT = _OFFSET_ENTRY.size, _TIME_ENTRY.size  # an .index's and a .timeindex's slot sizes (8, 12)
_TXN_ENTRY = struct.Struct(layout.ABORTED_TXN_ENTRY)
_SNAPSHOT_HEADER = struct.Struct(layout.SNAPSHOT_HEADER)  # version, crc, num_entries
_SNAPSHOT_ENTRY = struct.Struct(layout.SNAPSHOT_ENTRY)    # ProducerEntry's fields
_SLOTS = {FileKind.INDEX: _OFFSET_ENTRY, FileKind.TIME_INDEX: _TIME_ENTRY, FileKind.TXN_INDEX: _TXN_ENTRY}


@functools.cache
def _metadata_files() -> ModuleType:
    """:mod:`kafkatool.formats.metadata_files`, imported at the first text metadata file read: a lone segment's
    check needs none (tests/test_startup.py). json comes later still: only with a JSON file (quorum-state,
    .kafka_cleanshutdown), never for a partition's partition.metadata."""
    from .formats import metadata_files

    return metadata_files


def entry_struct(kind: FileKind) -> struct.Struct:
    """The ``struct`` of one entry of an index kind (its Construct declaration's layout)."""
    return _SLOTS[kind]


def index_slots(data: bytes, kind: FileKind) -> Iterator[tuple]:
    """Every whole entry slot of an index file, as a tuple of its fields in declaration order.

    Bulk ``struct`` decoding; a partial last slot is left out (``len(data) % entry size`` bytes).
    """
    packer = _SLOTS[kind]
    return packer.iter_unpack(memoryview(data)[: len(data) - len(data) % packer.size])


# --- .index / .timeindex / .txnindex ------------------------------------------------------------------


def _offset_index(data: bytes, path: str, base_offset: int) -> Iterator[IndexEntry | Finding]:
    for i, (relative, position) in enumerate(index_slots(data, FileKind.INDEX)):
        if relative == 0 and (i > 0 or position == 0):  # preallocated, never-written slot
            break
        yield IndexEntry(base_offset + relative, position)
    if problem := offset_index_sanity(data, path):
        yield problem


_ZEROS = bytes(1 << 16)


def slots_written(data: bytes, n: int, size: int) -> int:
    """Of the first ``n`` slots of ``size`` bytes, those up to the last holding a byte other than zero:
    ``data[: n * size].rstrip(b"\\0")`` rounded up to a slot, found 64 KiB at a time by comparing with zeros
    (``rstrip`` tests one byte at a time, holding the GIL: 25 ms for a crashed broker's preallocated 10 MiB)."""
    end = n * size
    while end > 0:
        start = max(0, end - len(_ZEROS))
        chunk = data[start:end]
        if chunk != _ZEROS[: end - start]:
            return -(-(start + len(chunk.rstrip(b"\0"))) // size)
        end = start
    return 0


class OffsetSlots(NamedTuple):
    """An ``.index`` decoded in bulk (:func:`offset_slots`): its slots up to the last written one."""

    relative: array  # relative offsets of slots ``0 .. written``
    position: array  # their positions
    used: int        # the first never-written slot: the entries are slots ``0 .. used`` (:func:`_offset_index`'s)
    written: int     # slots from here on are all zero bytes
    slots: int       # whole slots in the file


def offset_slots(data: bytes, size: int | None = None) -> OffsetSlots:
    """The slots of an ``.index`` in bulk with ``array`` (a full 10 MiB index is 1.3 M slots; this runs in C), the
    zero ones past the last written counted, not decoded (a crashed broker's preallocated ~1.3 M of them). A slot of
    relative offset 0 is never-written, but slot 0 when its position is not 0 (:func:`_offset_index`'s rule), so the
    first never-written slot is among the decoded ones or is slot ``written``. ``size``: the file's, when ``data``
    is only its bytes up to a trailing hole (``filetypes.data_end``): zeros from there on."""
    n = (len(data) if size is None else size) // 8
    written = slots_written(data, min(n, len(data) // 8), 8)
    words = array("i", data[: written * 8])
    if sys.byteorder == "little":
        words.byteswap()  # the file is big-endian int32 pairs (relative offset, position)
    rel, pos = words[0::2], words[1::2]
    if n and (not written or (rel[0] == 0 and pos[0] == 0)):
        used = 0
    else:
        try:
            used = rel.index(0, 1)
        except ValueError:
            used = written
    return OffsetSlots(rel, pos, used, written, n)


def offset_index_sanity(data: bytes, path: str, size: int | None = None) -> Finding | None:
    """``OffsetIndex.sanityCheck()``: the last (mapped) entry below the base offset, or a partial entry. ``size``: the
    file's, when ``data`` stops at a trailing hole (:func:`offset_slots`): a last slot in it is zeros."""
    entry = _OFFSET_ENTRY
    length = len(data) if size is None else size
    entries = length // OFFSET_SLOT
    last = (entries - 1) * OFFSET_SLOT
    if entries and last + OFFSET_SLOT <= len(data) and entry.unpack_from(data, last)[0] < 0:
        return _error(path, "index-last-offset-below-base", last,
                      f"last slot ({entries - 1}) has a negative relative offset: below the base offset")
    if length % OFFSET_SLOT:
        return _error(path, "index-size-not-multiple", entries * OFFSET_SLOT,
                      f"index is {length} bytes, not a multiple of {OFFSET_SLOT}")
    return None


def _time_index(data: bytes, path: str, base_offset: int) -> Iterator[TimeIndexEntry | Finding]:
    for i, (timestamp, relative) in enumerate(index_slots(data, FileKind.TIME_INDEX)):
        if relative == 0 and (i > 0 or timestamp == 0):  # preallocated, never-written slot
            break
        yield TimeIndexEntry(timestamp, base_offset + relative)
    if problem := time_index_sanity(data, path):
        yield problem


def time_index_sanity(data: bytes, path: str, size: int | None = None) -> Finding | None:
    """``TimeIndex.sanityCheck()``: last timestamp below the first, last offset below base, partial entry. ``size``:
    as :func:`offset_index_sanity`'s."""
    entry = _TIME_ENTRY
    length = len(data) if size is None else size
    entries = length // TIME_SLOT
    if entries:
        last = (entries - 1) * TIME_SLOT  # a slot past ``data`` is in the hole: zeros
        first_timestamp = entry.unpack_from(data)[0] if len(data) >= TIME_SLOT else 0
        last_timestamp, last_relative = entry.unpack_from(data, last) if last + TIME_SLOT <= len(data) else (0, 0)
        if last_timestamp < first_timestamp:
            return _error(path, "timeindex-last-timestamp-below-first", last,
                          f"last timestamp {last_timestamp} (slot {entries - 1}) is less than the first "
                          f"timestamp {first_timestamp}")
        if last_relative < 0:
            return _error(path, "timeindex-last-offset-below-base", last,
                          f"last slot ({entries - 1}) has a negative relative offset: below the base offset")
    if length % TIME_SLOT:
        return _error(path, "timeindex-size-not-multiple", entries * TIME_SLOT,
                      f"time index is {length} bytes, not a multiple of {TIME_SLOT}")
    return None


def _txn_index(data: bytes, path: str, base_offset: int) -> Iterator[AbortedTxn | Finding]:
    size = _TXN_ENTRY.size
    txns: list[AbortedTxn] = []
    for i, fields in enumerate(index_slots(data, FileKind.TXN_INDEX)):
        txn = AbortedTxn(*fields)
        seen_by_kafka = layout.txn_kafka_version(txn.version)
        if seen_by_kafka > layout.TXN_INDEX_VERSION:
            yield _error(path, "txnindex-bad-version", i * size,
                         f"entry {i} has version {txn.version} (Kafka reads {seen_by_kafka}, "
                         f"supports {layout.TXN_INDEX_VERSION})")
            return
        if txn.version != layout.TXN_INDEX_VERSION:
            yield finding("txnindex-odd-version", path, i * size,
                          f"entry {i} has version {txn.version}; Kafka reads only the first byte, accepts it")
        txns.append(txn)
        yield txn
    if len(data) % size:
        yield finding("txnindex-partial-entry", path, len(data) - len(data) % size,
                      f"{len(data) % size} trailing bytes do not form a whole entry (Kafka ignores them)")
    for i, txn in enumerate(txns):  # TransactionIndex.sanityCheck()
        if txn.last_offset < base_offset:
            yield _error(path, "txnindex-last-offset-below-base", i * size,
                         f"aborted transaction {i} ends at offset {txn.last_offset}, "
                         f"before the segment base offset {base_offset}")
            return


# --- producer .snapshot -----------------------------------------------------------------------------


def _producer_snapshot(data: bytes, path: str, base_offset: int) -> Iterator[Any]:
    if len(data) < layout.SNAPSHOT_HEADER_SIZE:
        yield _error(path, "snapshot-truncated", 0,
                     f"snapshot is {len(data)} bytes, shorter than its {layout.SNAPSHOT_HEADER_SIZE}-byte header")
        return
    version, crc, num_entries = _SNAPSHOT_HEADER.unpack_from(data)
    computed = layout.snapshot_crc(data, crc32c)
    crc_valid = computed == crc
    yield ProducerSnapshotHeader(version, crc, crc_valid, num_entries)
    available = len(data) - layout.SNAPSHOT_HEADER_SIZE
    if num_entries < 0:
        yield _error(path, "snapshot-bad-count", layout.SNAPSHOT_ENTRIES_OFFSET,
                     f"negative entry count {num_entries}")
    elif not layout.entries_fit(num_entries, available):
        yield _error(path, "snapshot-truncated", layout.SNAPSHOT_ENTRIES_OFFSET,
                     f"{num_entries} entries of {layout.PRODUCER_ENTRY_SIZE} bytes do not fit in the "
                     f"{available} bytes after the header")
    elif version != layout.SNAPSHOT_VERSION:
        yield _error(path, "snapshot-bad-version", 0,
                     f"unknown snapshot version {version} (expected {layout.SNAPSHOT_VERSION})")
    elif not crc_valid:
        yield _error(path, "snapshot-crc-mismatch", layout.SNAPSHOT_CRC_OFFSET,
                     f"stored CRC {crc} != computed CRC {computed}")
    else:
        end = layout.SNAPSHOT_HEADER_SIZE + num_entries * layout.PRODUCER_ENTRY_SIZE
        for fields in _SNAPSHOT_ENTRY.iter_unpack(memoryview(data)[layout.SNAPSHOT_HEADER_SIZE : end]):
            yield ProducerEntry(*fields)
        if end < len(data):
            yield finding("snapshot-trailing-bytes", path, end,
                          f"{len(data) - end} bytes after the last entry (CRC-covered; Kafka ignores them)")


def producer_snapshot_bytes(entries: Iterable[ProducerEntry]) -> bytes:
    """A producer snapshot file of ``entries`` as ``ProducerStateManager.writeSnapshot`` writes it (the CRC filled in):
    the layouts above, equal to :func:`kafkatool.formats.producer_snapshot.build_snapshot` (tests/test_formats_small.py)
    without importing Construct."""
    pack = _SNAPSHOT_ENTRY.pack
    body = [pack(*e) for e in entries]
    raw = bytearray(_SNAPSHOT_HEADER.pack(layout.SNAPSHOT_VERSION, 0, len(body)) + b"".join(body))
    _SNAPSHOT_HEADER.pack_into(raw, 0, layout.SNAPSHOT_VERSION, layout.snapshot_crc(raw, crc32c), len(body))
    return bytes(raw)


# --- text checkpoints and metadata files ----------------------------------------------------------


def _checkpoint(parse_line: Callable[[str], tuple | None], make: Callable[..., Any]) -> Reader:
    def read(data: bytes, path: str, base_offset: int) -> Iterator[Any]:
        try:
            items = checkpoints.parse_checkpoint(data, parse_line)
            for i, item in enumerate(items):
                if i == 0:
                    yield CheckpointHeader(*item)
                    if item[1] is None:
                        yield finding("checkpoint-no-count", path, len(data),
                                      "file ends after the version line (Kafka reads it as empty)")
                else:
                    yield make(*item)
        except TextFileError as e:
            yield _error(path, e.code, e.position, e.message)

    return read


def _partition_metadata(data: bytes, path: str, base_offset: int) -> Iterator[PartitionMetadata | Finding]:
    metadata_files = _metadata_files()
    try:
        version, topic_id = metadata_files.parse_partition_metadata(data)
    except TextFileError as e:
        yield _error(path, e.code, e.position, e.message)
        return
    yield PartitionMetadata(version, metadata_files.uuid_to_string(topic_id))


def _meta_properties(data: bytes, path: str, base_offset: int) -> Iterator[MetaProperties | Finding]:
    metadata_files = _metadata_files()
    try:
        _, props = metadata_files.parse_properties(data)
    except TextFileError as e:
        yield _error(path, e.code, e.position, e.message)
        return
    problem = None
    try:
        version, node_id = metadata_files.meta_properties_node_id(props)
    except TextFileError as e:
        version, node_id, problem = None, None, _error(path, e.code, e.position, e.message)
    yield MetaProperties(version, node_id, props.get("cluster.id"), props.get("directory.id"),
                         tuple(props.items()))
    if problem:
        yield problem


def _clean_shutdown(data: bytes, path: str, base_offset: int) -> Iterator[CleanShutdown | Finding]:
    metadata_files = _metadata_files()
    try:
        version, epoch = metadata_files.parse_clean_shutdown(data)
    except TextFileError as e:  # Kafka still treats the shutdown as clean; only the epoch is lost
        yield CleanShutdown(None, None)
        yield finding(e.code, path, e.position, e.message)
        return
    yield CleanShutdown(version, epoch)


def _quorum_state(data: bytes, path: str, base_offset: int) -> Iterator[QuorumState | Finding]:
    metadata_files = _metadata_files()
    try:
        state = metadata_files.parse_quorum_state(data)
    except TextFileError as e:
        yield _error(path, e.code, e.position, e.message)
        return
    yield QuorumState(state["data_version"], tuple((k, v) for k, v in state.items() if k != "data_version"))


_READERS: dict[FileKind, Reader] = {
    FileKind.INDEX: _offset_index,
    FileKind.TIME_INDEX: _time_index,
    FileKind.TXN_INDEX: _txn_index,
    FileKind.PRODUCER_SNAPSHOT: _producer_snapshot,
    FileKind.OFFSET_CHECKPOINT: _checkpoint(checkpoints.parse_offset_line, OffsetCheckpointEntry),
    FileKind.EPOCH_CHECKPOINT: _checkpoint(checkpoints.parse_epoch_line, EpochEntry),
    FileKind.PARTITION_METADATA: _partition_metadata,
    FileKind.META_PROPERTIES: _meta_properties,
    FileKind.CLEAN_SHUTDOWN: _clean_shutdown,
    FileKind.QUORUM_STATE: _quorum_state,
}


# --- helpers for the rest of the tool ---------------------------------------------------------------


def _values(path: Path, kind: FileKind, base_offset: int | None, cls: type) -> list:
    return [v for v in read_small_file(path, kind, str(path), base_offset) if isinstance(v, cls)]


def read_offset_index(path: Path, base_offset: int | None = None) -> list[IndexEntry]:
    """The entries of an ``.index`` file as listed (preallocated slots dropped; Findings dropped)."""
    return _values(path, FileKind.INDEX, base_offset, IndexEntry)


def read_time_index(path: Path, base_offset: int | None = None) -> list[TimeIndexEntry]:
    """The entries of a ``.timeindex`` file as listed (preallocated slots dropped; Findings dropped)."""
    return _values(path, FileKind.TIME_INDEX, base_offset, TimeIndexEntry)


def read_txn_index(path: Path, base_offset: int | None = None) -> list[AbortedTxn]:
    """The aborted transactions of a ``.txnindex`` file (up to an entry Kafka would reject)."""
    return _values(path, FileKind.TXN_INDEX, base_offset, AbortedTxn)


def read_producer_entries(path: Path) -> list[ProducerEntry]:
    """The producers of a ``.snapshot`` file; empty when Kafka could not load it (bad CRC, version...)."""
    return _values(path, FileKind.PRODUCER_SNAPSHOT, None, ProducerEntry)


def read_offset_checkpoint(path: Path) -> list[OffsetCheckpointEntry]:
    """The entries of an offset checkpoint file, in file order (up to a line Kafka would reject)."""
    return _values(path, FileKind.OFFSET_CHECKPOINT, None, OffsetCheckpointEntry)


def read_epoch_checkpoint(path: Path) -> list[EpochEntry]:
    """The entries of a ``leader-epoch-checkpoint``, in file order (up to a line Kafka would reject)."""
    return _values(path, FileKind.EPOCH_CHECKPOINT, None, EpochEntry)


def read_topic_id(path: Path) -> str | None:
    """The topic id in a ``partition.metadata`` file, or ``None`` when Kafka could not read one."""
    found = _values(path, FileKind.PARTITION_METADATA, None, PartitionMetadata)
    return found[0].topic_id if found else None



def read_meta_properties(logdir: Path) -> MetaProperties | None:
    """The ``meta.properties`` of a log dir (``MetaPropertiesEnsemble``: which cluster and node the dir belongs to),
    or None when it has none Kafka could read."""
    path = logdir / "meta.properties"
    try:
        found = _values(path, FileKind.META_PROPERTIES, None, MetaProperties)
    except (InputIOError, OSError):
        return None
    return found[0] if found else None
