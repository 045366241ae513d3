"""The ``kafka-log`` PySpark data source: segments as batches, records or findings.

``spark.read.format("kafka-log").option("level", "records").load("/var/lib/kafka/data")``

Options:

- ``level``: ``batches`` (default; one row per batch, damaged ones included with ``crc_valid = false``),
  ``records`` (one row per record, decompressed; ``crc_valid`` of its batch, and a row with ``error`` set
  where records cannot be decoded), ``findings`` (one row per finding: verify's per-segment
  check, :func:`kafkatool.segment_check.check_segment`, with the segment's indexes).
- ``values``: ``binary`` (default), ``base64`` (a string column) or ``none`` (no ``value`` column): records level.
- ``decode``: ``consumer-offsets``, ``transaction-state``, ``share-group-state`` or ``cluster-metadata``
  (records level, the default level then): each record of that internal topic decoded on its own, by the
  CLI's decoders, into a ``decoded`` struct column (:data:`DECODED`), with ``decode_error`` saying why a
  record does not decode (the row stays). Records of other topics, and control records, have both null. A
  flat layout (no topic in the path) is decoded as if it were that topic.
- ``splitBytes``: split segments larger than this many bytes into several input partitions, at batch
  starts taken from the segment's ``.index`` (each checked: a v2 batch with a valid CRC starts there); 0
  (default) or no usable index: one partition per segment. Not for the findings level (whole segments).
- ``packBytes``: pack consecutive planned partitions (after ``splitBytes``) into one input partition, one
  Spark task, while their summed size stays within this many bytes, each file counted
  ``PACK_OPEN_COST`` (4 MiB, like Spark's ``spark.sql.files.openCostInBytes``) more than its size; a piece
  bigger than that is a task of its own, and so is every URL (not statted). Rows keep their own topic,
  partition, segment and file. 0 (default): one partition per segment (or piece). All levels.
- ``minPartitions``: with ``packBytes``, shrink the budget so the packs number at least this many where the
  data allows (Spark's own file sources: ``min(maxPartitionBytes, max(openCostInBytes, total / cores))``);
  pass ``spark.sparkContext.defaultParallelism`` to keep every core busy (``kafkatool spark scan`` does).
- ``deep``: findings level: also decompress and decode every record (``verify --deep``).
- ``includeLeftovers``: also read ``.log.swap``/``.cleaned``/``.deleted`` files found in directories.
- ``includeSnapshots``: also read KRaft snapshots (``__cluster_metadata-0/<end offset>-<epoch>.checkpoint``,
  ``bootstrap.checkpoint``) found in directories; named explicitly they are always read. Their rows have a
  null ``segment`` (the name holds the snapshot's end offset, not a base offset), and their records repeat
  what the metadata log held, so a directory scan leaves them out by default.

Filters on the columns constant over a segment (``topic``, ``partition``, ``segment``, and ``file``
except at the findings level, where it is the file a finding is about) prune whole segments before any
is opened (PySpark >= 4.1 with ``spark.sql.python.filterPushdown.enabled``; see ``SESSION_CONF``):
``where("topic = 'orders' and partition in (0, 3)")`` reads only those partitions' segments. Spark still
applies every filter to the rows, so the result is the same with or without pruning.

Paths: files, partition dirs, log dirs, many log dirs, or globs (a path that exists is taken literally,
brackets and stars in its name included); local paths are read directly,
URLs (``s3://``, ``hdfs://``, ``file://``...) through :mod:`pyarrow.fs`, the same way (every level; the
findings level checks each segment's indexes found beside it). A URL's options travel with every file
under it, to the executors: ``s3://bucket/logs?endpoint_override=minio:9000&scheme=http`` for an
S3-compatible store, ``s3://KEY:SECRET@bucket/...`` for explicit credentials (otherwise the usual AWS
chain on each executor); the ``file`` column shows the URL without either. Topic and partition come
from the partition dir's name (``orders-3``; null and -1 for a flat layout), the segment from the file
name.

Rows leave ``read()`` as ``pyarrow.RecordBatch``es of about ``ROWS_PER_BATCH`` rows, columns built
whole: the batches level runs the scan in its columnar mode (``records.scan(columnar=True)``) and decodes
each block of v2 headers with numpy, so no Python object is made per batch. A block holds at most the
headers of one scan window (4 MiB), so memory stays bounded.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

ROWS_PER_BATCH = 8192
LEVELS = ("batches", "records", "findings")
VALUE_MODES = ("binary", "base64", "none")
# What packing (option packBytes) counts per file on top of its bytes: Spark's spark.sql.files.openCostInBytes.
PACK_OPEN_COST = 4 * 1024 * 1024

_SOURCE = [
    StructField("topic", StringType()),
    StructField("partition", IntegerType(), False),
    StructField("segment", LongType()),       # base offset from the file name (null: not a Kafka name)
    StructField("file", StringType(), False),
]

BATCH_FIELDS = [
    StructField("position", LongType(), False),
    StructField("base_offset", LongType(), False),
    StructField("last_offset", LongType(), False),
    StructField("partition_leader_epoch", IntegerType()),
    StructField("magic", IntegerType(), False),
    StructField("compression", StringType(), False),
    StructField("timestamp_type", StringType(), False),
    StructField("first_timestamp", LongType(), False),
    StructField("max_timestamp", LongType(), False),
    StructField("producer_id", LongType()),
    StructField("producer_epoch", IntegerType()),
    StructField("base_sequence", IntegerType()),
    StructField("transactional", BooleanType()),
    StructField("control", BooleanType()),
    StructField("crc", LongType(), False),
    StructField("crc_valid", BooleanType(), False),
    StructField("size", IntegerType(), False),
    StructField("record_count", IntegerType(), False),
    StructField("delete_horizon_ms", LongType()),  # set by the log cleaner on batches with tombstones
    StructField("control_type", StringType()),  # ABORT / COMMIT / ... for control batches
]
BATCHES = StructType(_SOURCE + BATCH_FIELDS)

HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


_MEMBER = StructType([
    StructField("member_id", StringType()),
    StructField("group_instance_id", StringType()),
    StructField("client_id", StringType()),
    StructField("client_host", StringType()),
    StructField("rebalance_timeout", IntegerType()),
    StructField("session_timeout", IntegerType()),
    StructField("subscription_bytes", IntegerType()),
    StructField("assignment_bytes", IntegerType()),
])

# The ``decoded`` column per ``decode`` option: the fields of kafkatool.internal's per-record decoders
# (offsets_record, transaction_record, share_state_record, metadata_record); a field a record does not have is
# null.
DECODED = {
    "consumer-offsets": StructType([
        StructField("kind", StringType()),  # offset_commit | group_metadata | unknown (a newer key version)
        StructField("key_version", IntegerType()),
        StructField("group", StringType()),
        StructField("topic", StringType()),  # offset_commit: the committed topic partition
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("leader_epoch", IntegerType()),
        StructField("metadata", StringType()),
        StructField("commit_timestamp", LongType()),
        StructField("expire_timestamp", LongType()),
        StructField("protocol_type", StringType()),  # group_metadata
        StructField("generation", IntegerType()),
        StructField("protocol", StringType()),
        StructField("leader", StringType()),
        StructField("current_state_timestamp", LongType()),
        StructField("members", ArrayType(_MEMBER, False)),
        StructField("value_version", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the key is deleted
    ]),
    "transaction-state": StructType([
        StructField("transactional_id", StringType()),
        StructField("producer_id", LongType()),
        StructField("producer_epoch", IntegerType()),
        StructField("timeout_ms", IntegerType()),
        StructField("state", StringType()),  # Empty, Ongoing, PrepareCommit, ..., CompleteAbort
        StructField("partitions", ArrayType(StructType([StructField("topic", StringType()),
                                                        StructField("partition", IntegerType())]), False)),
        StructField("last_update_timestamp", LongType()),
        StructField("start_timestamp", LongType()),
        StructField("previous_producer_id", LongType()),
        StructField("next_producer_id", LongType()),
        StructField("client_transaction_version", IntegerType()),
        StructField("value_version", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the transactional id expired
    ]),
    "share-group-state": StructType([
        StructField("kind", StringType()),  # share_snapshot | share_update
        StructField("record_type", IntegerType()),
        StructField("group", StringType()),
        StructField("topic_id", StringType()),  # as Kafka prints a Uuid
        StructField("partition", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the share-partition's state deleted
        StructField("value_version", IntegerType()),
        StructField("layout", StringType()),  # the Kafka release layout of value version 0: 4.1+ or 4.0
        StructField("snapshot_epoch", IntegerType()),
        StructField("state_epoch", IntegerType()),  # share_snapshot only
        StructField("leader_epoch", IntegerType()),
        StructField("start_offset", LongType()),
        StructField("delivery_complete_count", IntegerType()),  # KIP-1226 tag; null when absent
        StructField("create_timestamp", LongType()),  # share_snapshot, 4.1+
        StructField("write_timestamp", LongType()),
        StructField("state_batches", ArrayType(StructType([
            StructField("first_offset", LongType()), StructField("last_offset", LongType()),
            StructField("delivery_state", StringType()),  # Available, Acked, Archived
            StructField("delivery_count", IntegerType())]), False)),
    ]),
    "cluster-metadata": StructType([
        StructField("record_type", IntegerType()),
        StructField("version", IntegerType()),
        StructField("name", StringType()),  # TopicRecord, PartitionRecord, ... or "type N"
        StructField("decoded", BooleanType()),  # whether this type and version's fields are declared here
        StructField("fields", StringType()),  # the fields as JSON, as metadata --all -f jsonl shows them
    ]),
}


def records_schema(values: str = "binary", decode: str | None = None) -> StructType:
    fields = [
        *_SOURCE,
        StructField("offset", LongType(), False),
        StructField("timestamp", LongType(), False),
        StructField("key", BinaryType()),
    ]
    if values == "binary":
        fields.append(StructField("value", BinaryType()))
    elif values == "base64":
        fields.append(StructField("value", StringType()))
    fields += [
        StructField("headers", ArrayType(HEADER, False), False),
        StructField("batch_base_offset", LongType(), False),
        StructField("control_type", StringType()),
        StructField("crc_valid", BooleanType(), False),  # the record's batch's CRC: false, its bytes are damaged
        # Null for a record. A row of its own, with null key and value, for the records of a batch that
        # could not be decoded (decompression failed, a record cut short...): "<code>: <reason>", at the
        # first offset not decoded; the records before it in the batch are rows as usual.
        StructField("error", StringType()),
    ]
    if decode is not None:
        fields += [StructField("decoded", DECODED[decode]), StructField("decode_error", StringType())]
    return StructType(fields)


FINDINGS = StructType([
    *_SOURCE,
    StructField("severity", StringType(), False),
    StructField("code", StringType(), False),
    StructField("position", LongType()),
    StructField("message", StringType(), False),
])


@dataclass(frozen=True)
class SegmentPartition(InputPartition):
    """One task: the entries of a record file beginning in ``[start, end)`` (``end`` None: to the end)."""

    path: str                 # local path or URL
    topic: str | None
    partition: int
    segment: int | None
    start: int = 0
    end: int | None = None
    index: str | None = None      # sibling files, for the findings level (local only)
    timeindex: str | None = None
    txnindex: str | None = None
    active: bool = False          # the last segment of its partition dir

    @property
    def name(self) -> str:
        """The path as rows and findings show it: a URL without its credentials and options."""
        return _display(self.path)


@dataclass(frozen=True)
class PackedPartition(InputPartition):
    """One task over several planned partitions (option ``packBytes``), read one after the other."""

    parts: tuple[SegmentPartition, ...]


def _bool(value: str | None, default: bool = False) -> bool:
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _whole(options: dict, name: str) -> int:
    """A whole-number option (0 when not given), under its name as written or lowercased (Spark passes both)."""
    raw = options.get(name, options.get(name.lower(), 0))
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"kafka-log: option {name} must be a whole number >= 0, not {raw!r}")
    return value


def _paths(options: dict) -> list[str]:
    if "paths" in options and options["paths"]:
        paths = json.loads(options["paths"])
    elif options.get("path"):
        paths = [options["path"]]
    else:
        raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(path)")
    return [str(p) for p in paths]


def _is_url(path: str) -> bool:
    """Read through pyarrow.fs (``file://`` URLs too, which is how the tests exercise that path)."""
    return "://" in path


def _display(path: str) -> str:
    """``s3://key:secret@bucket/a?endpoint_override=...`` -> ``s3://bucket/a``; a local path unchanged."""
    if not _is_url(path):
        return path
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(path)
    return urlunsplit((u.scheme, u.netloc.rpartition("@")[2], u.path, "", ""))


# ---------------------------------------------------------------------------------------------
# Planning (driver side): which files, which byte ranges


def plan(paths: list[str], *, split_bytes: int = 0, include_leftovers: bool = False,
         include_snapshots: bool = False, pack_bytes: int = 0, min_partitions: int = 0,
         keep: Callable[[SegmentPartition], bool] | None = None) -> list[SegmentPartition | PackedPartition]:
    """Input partitions for every record file under ``paths`` (local paths, globs or URLs).

    ``keep``: only the segments it is true of (the reader's pushed filters, :func:`may_match`), chosen
    before splitting and packing, so a dropped segment is never opened. ``pack_bytes`` > 0: then packed
    with :func:`pack` (0: one partition per segment or piece), into at least ``min_partitions`` where
    the data allows.
    """
    out: list[SegmentPartition] = []
    for raw in paths:
        if _is_url(raw):
            out.extend(_plan_remote(raw, include_leftovers, include_snapshots))
            continue
        # a path that exists is itself: a dir named ``a[1]`` or ``x*`` is read, not taken for a pattern that
        # matches nothing (or something else); only a path naming nothing is a glob
        matches = sorted(glob.glob(raw)) if glob.has_magic(raw) and not os.path.lexists(raw) else [raw]
        if not matches:
            raise FileNotFoundError(f"kafka-log: no such file or directory: {raw}")
        for m in matches:
            out.extend(_plan_local(m, include_leftovers, include_snapshots))
    if keep is not None:
        out = [p for p in out if keep(p)]
    if split_bytes > 0:
        out = [piece for p in out for piece in _split(p, split_bytes)]
    return pack(out, pack_bytes, min_partitions) if pack_bytes > 0 else list(out)


def _wanted(kind, explicit: bool, leftover: str | None, include_leftovers: bool, include_snapshots: bool) -> bool:
    """Segments (leftovers only when asked or named); KRaft snapshots only when asked or named."""
    from kafkatool.filetypes import FileKind

    if kind is FileKind.LOG:
        return explicit or include_leftovers or leftover is None
    return kind is FileKind.KRAFT_SNAPSHOT and (explicit or include_snapshots)


def _partitions_of(found: list[tuple], sibling: Callable[[str], str | None]) -> list[SegmentPartition]:
    """Input partitions of the record files found under one path, local or remote alike.

    ``found``: ``(name, path, directory, partition dir name, FileInfo)`` per file, in plan order: ``name``
    as listed (what siblings are derived from), ``path`` as rows show and executors open it;
    ``sibling(name)`` is the path of a listed sibling file, else None. Each directory's files found are sorted
    by role as every reader sorts them (:func:`kafkatool.logfiles.sort_files`): its segments get their indexes,
    the active segment is the largest base offset.
    """
    from pathlib import Path

    from kafkatool.filetypes import FileKind
    from kafkatool.logfiles import sort_files
    from kafkatool.walk import partition_of

    listings: dict[str, list[tuple[Path, str]]] = {}
    for name, _path, d, _dir_name, _info in found:
        listings.setdefault(d, []).append((Path(name), name))
    roles = {d: sort_files(listing) for d, listing in listings.items()}
    out = []
    for name, path, d, dir_name, info in found:
        files, part = roles[d], partition_of(dir_name)
        segment = info.base_offset if info.kind is FileKind.LOG else None  # a snapshot's name is its end offset
        indexes = [None, None, None]
        if segment is not None and files.segments.get(segment, (None, None))[1] == name:
            indexes = [sibling(name[:-3] + ext) for ext in ("index", "timeindex", "txnindex")]
        out.append(SegmentPartition(path, part[0] if part else None, part[1] if part else -1, segment, 0, None,
                                    *indexes, active=segment is not None and files.active_base == segment))
    return out


def _plan_local(path: str, include_leftovers: bool, include_snapshots: bool = False) -> list[SegmentPartition]:
    from kafkatool.filetypes import classify
    from kafkatool.walk import expand

    found = []
    for f in expand([path], require=False):  # a glob may match dirs without data: they add no partitions
        info = classify(f.path, by_extension=True)
        if _wanted(f.kind, f.explicit, info.leftover, include_leftovers, include_snapshots):
            found.append((str(f.path), f.display, str(f.path.parent), f.path.resolve().parent.name, info))
    return _partitions_of(found, lambda sib: sib if os.path.exists(sib) else None)


def _plan_remote(url: str, include_leftovers: bool, include_snapshots: bool = False) -> list[SegmentPartition]:
    import posixpath

    from kafkatool.filetypes import classify
    from kafkatool.walk import url_files

    listed = url_files(url, _ArrowStore(url))
    if listed is None:
        raise FileNotFoundError(f"kafka-log: no such file or directory: {url}")
    root, files = listed
    found = []
    for name, file_url in files:
        ci = classify(name, by_extension=name == root)
        if _wanted(ci.kind, name == root, ci.leftover, include_leftovers, include_snapshots):
            d = posixpath.dirname(name)
            found.append((name, file_url, d, posixpath.basename(d), ci))
    return _partitions_of(found, dict(files).get)


_INDEX_ENTRY = struct.Struct(">ii")


def _split(p: SegmentPartition, split_bytes: int) -> list[SegmentPartition]:
    """Byte ranges of about ``split_bytes`` each, cut at batch starts named by the offset index.

    Every cut point is checked (a whole v2 batch with a valid CRC begins there: :func:`kafkatool.records.resync`
    of that one position), so a broken index can only cost parallelism, never a batch; ``scan(start=, end=)``
    takes the entries that begin in a range.
    """
    from kafkatool.filetypes import open_regular
    from kafkatool.records import RECORD_BATCH_OVERHEAD, resync

    if p.index is None or _is_url(p.path):
        return [p]
    try:
        size = os.path.getsize(p.path)
        if size <= split_bytes:
            return [p]
        with open_regular(p.index) as fh:
            data = fh.read()
    except OSError:
        return [p]
    positions = [pos for _rel, pos in _INDEX_ENTRY.iter_unpack(data[: len(data) // 8 * 8]) if pos > 0]
    cuts: list[int] = []
    target = split_bytes
    with open_regular(p.path) as log:
        for pos in positions:  # index positions increase; a non-increasing entry is skipped
            if pos < target or (cuts and pos <= cuts[-1]) or pos >= size:
                continue
            if pos + RECORD_BATCH_OVERHEAD > size:  # no v2 header fits here, nor further on
                break
            if next(resync(log, pos, pos + 1), None) is None:
                continue
            cuts.append(pos)
            target = pos + split_bytes
    if not cuts:
        return [p]
    bounds = [0, *cuts, None]
    return [SegmentPartition(p.path, p.topic, p.partition, p.segment, s, e, p.index, p.timeindex, p.txnindex,
                             p.active) for s, e in zip(bounds, bounds[1:], strict=False)]


def _pack_cost(p: SegmentPartition) -> int | None:
    """Bytes a planned partition counts for packing: its range plus ``PACK_OPEN_COST``; None: never packed."""
    if _is_url(p.path):
        return None  # not statted (a round trip per file to an object store): a task of its own
    try:
        end = os.path.getsize(p.path) if p.end is None else p.end
    except OSError:
        return None  # read() reports it, alone
    return max(0, end - p.start) + PACK_OPEN_COST


def pack_budget(costs: Iterable[int], pack_bytes: int, min_partitions: int = 0) -> int:
    """The bytes one pack may hold: ``pack_bytes``, made smaller when the data would then fill fewer than
    ``min_partitions`` packs, but never below one file's open cost. Spark's file sources size their
    splits the same way (``FilePartition.maxSplitBytes``), so a small input still spreads over every core.
    """
    if min_partitions <= 0:
        return pack_bytes
    return min(pack_bytes, max(PACK_OPEN_COST, sum(costs) // min_partitions))


def pack(parts: list[SegmentPartition], pack_bytes: int,
         min_partitions: int = 0) -> list[SegmentPartition | PackedPartition]:
    """Consecutive ``parts`` (order kept) grouped into packs of summed :func:`_pack_cost` within
    :func:`pack_budget` (``pack_bytes``, smaller if needed to make ``min_partitions`` packs).

    Spark's file sources do the same with small files (``maxPartitionBytes``, ``openCostInBytes``). A part
    costing more than the budget, or a URL, stands alone; a pack of one part is that part itself.
    """
    costs = [_pack_cost(p) for p in parts]
    pack_bytes = pack_budget((c for c in costs if c is not None), pack_bytes, min_partitions)
    out: list[SegmentPartition | PackedPartition] = []
    group: list[SegmentPartition] = []
    total = 0

    def flush() -> None:
        nonlocal group, total
        if group:
            out.append(group[0] if len(group) == 1 else PackedPartition(tuple(group)))
        group, total = [], 0

    for p, cost in zip(parts, costs, strict=True):
        if cost is None or cost > pack_bytes:
            flush()
            out.append(p)
            continue
        if total + cost > pack_bytes:
            flush()
        group.append(p)
        total += cost
    flush()
    return out


# ---------------------------------------------------------------------------------------------
# Filter pushdown (PySpark >= 4.1, spark.sql.python.filterPushdown.enabled): whole segments pruned

# The columns constant over a planned partition, with the Python type of their non-null values. At the
# findings level ``file`` is the file a finding is about (a segment's ``.index`` too), not a constant.
_CONSTANT_TYPES = {"topic": str, "partition": int, "segment": int, "file": str}


@functools.cache
def _filter_kinds() -> dict:
    """``{Filter class: operator}`` for the filters evaluated here; empty before PySpark 4.1 (no pushdown)."""
    try:
        from pyspark.sql.datasource import (
            EqualNullSafe,
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            IsNotNull,
            IsNull,
            LessThan,
            LessThanOrEqual,
            Not,
            StringContains,
            StringEndsWith,
            StringStartsWith,
        )
    except ImportError:
        return {}
    return {EqualTo: "=", EqualNullSafe: "<=>", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
            LessThanOrEqual: "<=", In: "in", IsNull: "null", IsNotNull: "notnull", Not: "not",
            StringStartsWith: "startswith", StringEndsWith: "endswith", StringContains: "contains"}


def _typed(value, typ: type) -> bool:
    """A literal of the column's own type (``type is``: True is no partition number); None is any type's."""
    return value is None or type(value) is typ


def pushable(f, level: str = "batches") -> bool:
    """Whether :func:`evaluate` decides ``f`` exactly from a planned partition's constants at ``level``:
    a supported filter (or ``Not`` of one) on ``topic``, ``partition``, ``segment`` or ``file`` (not at the
    findings level) with literals of that column's type."""
    kind = _filter_kinds().get(type(f))
    if kind is None:
        return False
    if kind == "not":
        return pushable(f.child, level)
    attr = f.attribute
    if not (isinstance(attr, tuple) and len(attr) == 1) or attr[0] not in _CONSTANT_TYPES:
        return False
    if level == "findings" and attr[0] == "file":
        return False
    typ = _CONSTANT_TYPES[attr[0]]
    if kind in ("null", "notnull"):
        return True
    if kind == "in":
        return isinstance(f.value, (tuple, list)) and len(f.value) > 0 and all(_typed(v, typ) for v in f.value)
    if kind in ("startswith", "endswith", "contains"):
        return typ is str and type(f.value) is str
    return _typed(f.value, typ)


def _constants_of(part: SegmentPartition) -> dict:
    return {"topic": part.topic, "partition": part.partition, "segment": part.segment, "file": part.name}


def evaluate(f, part: SegmentPartition) -> bool | None:
    """SQL's value of the :func:`pushable` filter ``f`` on ``part``'s rows: True, False or None (NULL)."""
    kind = _filter_kinds()[type(f)]
    if kind == "not":
        inner = evaluate(f.child, part)
        return None if inner is None else not inner
    x = _constants_of(part)[f.attribute[0]]
    if kind == "null":
        return x is None
    if kind == "notnull":
        return x is not None
    v = f.value
    if kind == "<=>":
        return x == v if x is not None and v is not None else x is None and v is None
    if x is None:
        return None
    if kind == "in":
        return True if x in [w for w in v if w is not None] else None if None in v else False
    if v is None:
        return None
    if kind == "=":
        return x == v
    if kind == ">":
        return x > v
    if kind == ">=":
        return x >= v
    if kind == "<":
        return x < v
    if kind == "<=":
        return x <= v
    if kind == "startswith":
        return x.startswith(v)
    if kind == "endswith":
        return x.endswith(v)
    return v in x  # contains


def may_match(filters: Iterable, part: SegmentPartition) -> bool:
    """False when some row-level condition of ``filters`` (:func:`pushable` ones, ANDed, as Spark pushes
    them) cannot be true for any row of ``part``: a WHERE keeps only rows where all are TRUE."""
    return all(evaluate(f, part) is True for f in filters)


# ---------------------------------------------------------------------------------------------
# The data source


class KafkaLogDataSource(DataSource):
    """``format("kafka-log")``: see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def _values(self) -> str:
        values = self.options.get("values", "binary").lower()
        if values not in VALUE_MODES:
            raise ValueError(f"kafka-log: option values must be one of {', '.join(VALUE_MODES)}, not {values!r}")
        return values

    def _decode(self) -> str | None:
        decode = self.options.get("decode")
        if decode is None or decode == "":
            return None
        decode = decode.lower()
        if decode not in DECODED:
            raise ValueError(f"kafka-log: option decode must be one of {', '.join(DECODED)}, not {decode!r}")
        return decode

    def _level(self) -> str:
        level = self.options.get("level")
        if level is None:
            return "records" if self._decode() else "batches"
        level = level.lower()
        if level not in LEVELS:
            raise ValueError(f"kafka-log: option level must be one of {', '.join(LEVELS)}, not {level!r}")
        if level != "records" and self._decode():
            raise ValueError(f"kafka-log: option decode decodes records; it needs level records, not {level!r}")
        return level

    def schema(self) -> StructType:
        level = self._level()
        if level == "batches":
            return BATCHES
        if level == "records":
            return records_schema(self._values(), self._decode())
        return FINDINGS

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = KafkaLogPushdownReader if _planning_pushdown() else KafkaLogReader
        return cls(dict(self.options), self._level(), self._values(), schema, self._decode())


def _planning_pushdown() -> bool:
    """Whether PySpark's filter-pushdown planner is asking for the reader (its worker,
    ``pyspark/sql/worker/data_source_pushdown_filters.py``, is on the stack).

    PySpark >= 4.1 fails every read whose reader implements ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is off (DATA_SOURCE_PUSHDOWN_DISABLED, raised by its
    ``plan_data_source_read`` worker), and that conf is off by default; only the planner that pushes
    filters, run when it is on, gets a reader with ``pushFilters``. Should a PySpark version plan some
    other way, this is False: no pruning, the same rows.
    """
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if os.path.basename(frame.f_code.co_filename) == "data_source_pushdown_filters.py":
            return True
        frame = frame.f_back
    return False


class KafkaLogReader(DataSourceReader):
    """Plans and reads; :meth:`partitions` leaves out the segments ``filters`` rule out (none unless
    :class:`KafkaLogPushdownReader` was given some)."""

    def __init__(self, options: dict, level: str, values: str, schema: StructType, decode: str | None = None) -> None:
        self.options = options
        self.level = level
        self.values = values
        self.schema = schema
        self.decode = decode
        self.split_bytes = 0 if level == "findings" else _whole(options, "splitBytes")
        self.deep = _bool(options.get("deep"))
        self.include_leftovers = _bool(options.get("includeLeftovers", options.get("includeleftovers")))
        self.include_snapshots = _bool(options.get("includeSnapshots", options.get("includesnapshots")))
        self.pack_bytes = _whole(options, "packBytes")
        self.min_partitions = _whole(options, "minPartitions")
        self.filters: tuple = ()  # pushed filters on the constant columns (KafkaLogPushdownReader.pushFilters)

    def partitions(self) -> list[SegmentPartition | PackedPartition]:
        filters = self.filters
        parts = plan(_paths(self.options), split_bytes=self.split_bytes, include_leftovers=self.include_leftovers,
                     include_snapshots=self.include_snapshots,
                     pack_bytes=self.pack_bytes, min_partitions=self.min_partitions,
                     keep=(lambda p: may_match(filters, p)) if filters else None)
        # Spark needs at least one partition; an empty input reads nothing.
        return parts or [SegmentPartition("", None, -1, None, 0, 0)]

    def read(self, partition: SegmentPartition | PackedPartition) -> Iterator:
        _freeze_imports()
        if isinstance(partition, SegmentPartition) and not partition.path:
            return iter(())
        return read_partition(partition, self.level, self.values, self.deep, self.schema, self.decode)


class KafkaLogPushdownReader(KafkaLogReader):
    """The reader Spark's filter pushdown gets (see :func:`_planning_pushdown`): it prunes segments."""

    def pushFilters(self, filters: list) -> Iterable:
        """Keep the filters a segment's constants decide (:func:`pushable`) to prune whole segments in
        :meth:`partitions`, and give every filter back: Spark still applies them all to the rows, so
        pruning only skips segments none of whose rows could pass, and never changes the result."""
        self.filters = tuple(f for f in filters if pushable(f, self.level))
        return filters


_FROZEN_IN: int | None = None  # the pid whose imports were frozen


def _freeze_imports() -> None:
    """Take this worker's imported modules out of the cyclic GC's sight, once per process.

    PySpark's daemon runs ``gc.collect()`` after every task of a reused worker. With pyspark, pyarrow
    and kafkatool imported, that full collection walks every module, class and function each time:
    measured on local[1] over 200 one-MiB segments, 7.8-10 s without the freeze and 3.2-4.0 s with it,
    about 25 ms per task, as long as scanning a 100 MiB segment. ``gc.freeze()`` moves
    what is alive now (imports, nothing of any task's data) to the permanent generation;
    reference counting still frees everything, and each task's own objects are still collected.
    """
    global _FROZEN_IN
    pid = os.getpid()
    if _FROZEN_IN == pid:
        return
    import gc

    import numpy  # noqa: F401  (everything a task imports, so it is frozen with the rest)
    import pyarrow  # noqa: F401

    import kafkatool.records  # noqa: F401
    import kafkatool.segment_check  # noqa: F401

    gc.collect()
    gc.freeze()
    _FROZEN_IN = pid


# ---------------------------------------------------------------------------------------------
# Reading (executor side): heavy imports stay inside these functions


def _open(path: str):
    """A binary file object for a local path or a pyarrow.fs URL (what ``records.scan`` reads through)."""
    if not _is_url(path):
        from kafkatool.filetypes import open_regular

        return open_regular(path, buffering=0)  # scan reads through its own window: no second copy
    filesystem, inner = filesystem_of(path)
    return filesystem.open_input_file(inner)


def _url_parts(url: str) -> tuple[str, str]:
    """``(the URL without its path, the percent-decoded path)``: every file of one store shares the first."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    u = urlsplit(url)
    return urlunsplit((u.scheme, u.netloc, "", u.query, "")), unquote(u.path)


# Store (a URL without its path) -> (filesystem, the inner path its URLs' paths are appended to), or None
# for a store whose URLs pyarrow does not map that way. One per executor process; see filesystem_of.
_STORES: dict[str, tuple | None] = {}


def filesystem_of(url: str) -> tuple:
    """``pyarrow.fs.FileSystem.from_uri(url)``, with one filesystem for all URLs of the same store.

    ``from_uri`` builds a new client each time: an S3 client walks the credential chain, and without
    ``region=`` in the URL it sends a HeadBucket to find the bucket's region (seen here: a 6 s timeout
    per call with no route to AWS). Per file opened that was up to four of each per segment at the
    findings level; now it is once per store and process. The first URL of a store is resolved by
    ``from_uri`` itself, which gives the prefix the others' paths go after (the bucket for ``s3://``,
    nothing for ``hdfs://`` or ``file://``); a store whose inner path does not end with the URL's path
    is never shared. pyarrow filesystems are safe to use from several threads.
    """
    from pyarrow import fs as pafs

    key, path = _url_parts(url)
    store = _STORES.get(key, False)
    if store is None:
        return pafs.FileSystem.from_uri(url)
    if store is not False:
        return store[0], store[1] + path
    filesystem, inner = pafs.FileSystem.from_uri(url)
    _STORES[key] = (filesystem, inner[:len(inner) - len(path)]) if inner.endswith(path) else None
    return filesystem, inner


class _ArrowStore:
    """:class:`kafkatool.walk.UrlStore` through :mod:`pyarrow.fs`, for one URL."""

    def __init__(self, url: str) -> None:
        from pyarrow import fs as pafs

        self.filesystem, self.root = pafs.FileSystem.from_uri(url)

    def files_under(self, path: str) -> list[str] | None:
        from pyarrow import fs as pafs

        info = self.filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            infos = self.filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
            return [i.path for i in infos if i.type == pafs.FileType.File]
        return [path] if info.type == pafs.FileType.File else None


def _arrow_schema(schema: StructType):
    """The Arrow schema Spark checks ``read()``'s batches against (its own conversion, so they match)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def read_partition(part: SegmentPartition | PackedPartition, level: str, values: str = "binary", deep: bool = False,
                   schema: StructType | None = None, decode: str | None = None) -> Iterator:
    """``pyarrow.RecordBatch``es of one input partition at ``level`` (also usable without Spark).

    A :class:`PackedPartition` gives those of each of its parts in turn (each opened only when reached).
    ``decode``: a :data:`DECODED` name, records level.
    """
    if isinstance(part, PackedPartition):
        return (rb for p in part.parts for rb in read_partition(p, level, values, deep, schema, decode))
    if schema is None:
        schema = {"batches": BATCHES, "findings": FINDINGS}.get(level) or records_schema(values, decode)
    arrow = _arrow_schema(schema)
    if level == "batches":
        return _read_batches(part, arrow)
    if level == "records":
        return _read_records(part, arrow, values, decode)
    return _read_findings(part, arrow, deep)


def _constants(part: SegmentPartition, n: int, file: str | None = None) -> list:
    import pyarrow as pa

    return [pa.repeat(pa.scalar(part.topic, pa.string()), n), pa.repeat(pa.scalar(part.partition, pa.int32()), n),
            pa.repeat(pa.scalar(part.segment, pa.int64()), n), pa.repeat(pa.scalar(file or part.name, pa.string()), n)]


def _control_type(batch, raw: bytes, name: str) -> str | None:
    """ABORT / COMMIT / ...: the type in a control batch's one record (its bytes kept by the columnar scan)."""
    from kafkatool.records import decode_records

    records, _findings = decode_records(batch, raw, name)
    return records[0].control_type if records else None


@functools.cache
def _header_dtype():
    """The numpy dtype of a v2 batch header, derived from ``formats.record_batch.RecordBatchHeader``.

    The Construct declaration stays the one source of the layout: field names, order, sizes and
    signedness come from it (a field without a struct format, the attributes bit struct, is taken as a
    signed integer of its size). Its 61 bytes are packed, big-endian.
    """
    import numpy as np

    from kafkatool.formats.record_batch import RecordBatchHeader

    fields = []
    for sub in RecordBatchHeader.subcons:
        fmt = getattr(sub.subcon, "fmtstr", None)
        kind = "u" if fmt and fmt[-1].isupper() else "i"
        fields.append((sub.name, np.dtype(f">{kind}{sub.sizeof()}")))
    dtype = np.dtype(fields)
    assert dtype.itemsize == RecordBatchHeader.sizeof()
    return dtype


def _run_columns(run, pa, np) -> tuple[dict, list[int]]:
    """The batches level's columns of a :class:`~kafkatool.records.HeaderRun`, column-wise (no per-row
    Python), and the rows that are control batches (their ``control_type`` needs their record)."""
    from kafkatool.records import CODECS

    h = np.frombuffer(run.headers, dtype=_header_dtype())
    attrs = h["attributes"].astype(np.int32)
    base = h["base_offset"].astype(np.int64)
    first_ts = h["base_timestamp"].astype(np.int64)
    codec_names = pa.array([*CODECS, "unknown(5)", "unknown(6)", "unknown(7)"], pa.string())
    control = (attrs & 0x20) != 0
    return {
        "position": pa.array(np.frombuffer(run.positions, dtype=np.int64)),
        "base_offset": pa.array(base),
        "last_offset": pa.array(base + h["last_offset_delta"].astype(np.int64)),
        "partition_leader_epoch": pa.array(h["partition_leader_epoch"].astype(np.int32)),
        "magic": pa.array(h["magic"].astype(np.int32)),
        "compression": codec_names.take(pa.array(attrs & 7)),
        "timestamp_type": pa.array(["create", "log_append"], pa.string()).take(pa.array((attrs >> 3) & 1)),
        "first_timestamp": pa.array(first_ts),
        "max_timestamp": pa.array(h["max_timestamp"].astype(np.int64)),
        "producer_id": pa.array(h["producer_id"].astype(np.int64)),
        "producer_epoch": pa.array(h["producer_epoch"].astype(np.int32)),
        "base_sequence": pa.array(h["base_sequence"].astype(np.int32)),
        "transactional": pa.array((attrs & 0x10) != 0),
        "control": pa.array(control),
        "crc": pa.array(h["crc"].astype(np.int64)),
        "crc_valid": pa.array(np.frombuffer(run.crc_valid, dtype=np.uint8) != 0),
        "size": pa.array(h["batch_length"].astype(np.int32) + 12),
        "record_count": pa.array(h["records_count"].astype(np.int32)),
        "delete_horizon_ms": pa.array(first_ts, mask=(attrs & 0x40) == 0),
    }, np.flatnonzero(control).tolist()


def _read_batches(part: SegmentPartition, arrow) -> Iterator:
    """The scan in columnar mode: runs of v2 headers decoded a block at a time; legacy messages as tuples."""
    import numpy as np
    import pyarrow as pa

    from kafkatool.model import Batch
    from kafkatool.records import HeaderRun, scan

    types = {f.name: f.type for f in arrow}
    as_struct = pa.struct([(name, types.get(name, pa.int32())) for name in Batch._fields])

    def record_batch(fields: dict, ctypes) -> pa.RecordBatch:
        columns = [*_constants(part, len(ctypes)), *(fields[name] for name in arrow.names[4:-1]), ctypes]
        return pa.RecordBatch.from_arrays(columns, schema=arrow)

    def from_runs(runs: list) -> pa.RecordBatch:
        run = HeaderRun.join(runs)
        fields, control_rows = _run_columns(run, pa, np)
        n = len(run.positions)
        if control_rows:  # rare: decode each control batch's record for its type
            ctypes = [None] * n
            for i in control_rows:
                ctypes[i] = _control_type(run.batch(i), run.controls[i], part.name)
            ctypes = pa.array(ctypes, pa.string())
        else:
            ctypes = pa.nulls(n, pa.string())
        return record_batch(fields, ctypes)

    def from_tuples(rows: list) -> pa.RecordBatch:  # legacy v0/v1 messages
        fields = dict(zip(Batch._fields, pa.array(rows, as_struct).flatten(), strict=True))
        return record_batch(fields, pa.nulls(len(rows), pa.string()))  # v0/v1 have no control batches

    runs: list = []
    legacy: list = []
    pending = 0
    with _open(part.path) as fh:
        for item in scan(fh, part.name, start=part.start, end=part.end, columnar=True):
            kind = item.__class__
            if kind is HeaderRun:
                if legacy:
                    yield from_tuples(legacy)
                    legacy = []
                runs.append(item)
                pending += len(item.positions)
            elif kind is Batch:
                if runs:
                    yield from_runs(runs)
                    runs, pending = [], 0
                legacy.append(item)
                pending += 1
            else:  # findings and trailing bytes: the findings level's business
                continue
            if pending >= ROWS_PER_BATCH:
                yield from_runs(runs) if runs else from_tuples(legacy)
                runs, legacy, pending = [], [], 0
    if runs:
        yield from_runs(runs)
    if legacy:
        yield from_tuples(legacy)


def _read_records(part: SegmentPartition, arrow, values: str, decode: str | None = None) -> Iterator:
    """One row per record, columns built by :mod:`kafkatool.spark.arrow` (in the native core where it is in
    use); a batch the builder does not take whole is added in pieces (``add_pieces``), and each error the
    Python reader reports is a row of its own where the records it lost would have been. An Arrow batch holds
    at most ``ROWS_PER_BATCH`` rows (one more where an error row ends it), whatever one Kafka batch declares,
    and its keys and values pass ``MAX_DATA_BYTES`` by one piece's at most."""
    import pyarrow as pa

    from kafkatool.internal import RECORD_DECODERS, decode_record
    from kafkatool.records import RawBatch, scan

    from .arrow import MAX_DATA_BYTES, base64_strings, records_builder

    name = part.name  # a property that parses the URL: once, not once per batch
    # decoded only where the partition is that internal topic's (or the layout names no topic)
    decoding = decode is not None and part.topic in (None, RECORD_DECODERS[decode][0])
    # the decoders need the values themselves: built as binary, the value column made after decoding
    builder = records_builder("binary", _arrow_schema(records_schema())) if decoding else records_builder(values, arrow)

    def flush() -> pa.RecordBatch:
        columns = builder.finish()
        n = len(columns[0])
        if decode is not None:
            if decoding:
                key, value, _headers, _base, ctype, _ok, error = (c.to_pylist() for c in columns[2:])
                results = [(None, None) if c is not None or e is not None else decode_record(decode, k, v)
                           for k, v, c, e in zip(key, value, ctype, error, strict=True)]
                if values == "base64":
                    columns[3] = base64_strings(value)
                elif values == "none":
                    del columns[3]
                columns += [pa.array([d for d, _ in results], arrow.field("decoded").type),
                            pa.array([e for _, e in results], pa.string())]
            else:
                columns += [pa.nulls(n, arrow.field("decoded").type), pa.nulls(n, pa.string())]
        return pa.RecordBatch.from_arrays([*_constants(part, n), *columns], schema=arrow)

    def room() -> int:  # rows the Arrow batch has room for (one at least: an error row may pass the mark)
        return max(ROWS_PER_BATCH - len(builder), 1)

    add_batch, add_pieces, data_bytes = builder.add_batch, builder.add_pieces, builder.data_bytes
    with _open(part.path) as fh:
        for item in scan(fh, name, start=part.start, end=part.end, with_raw=True):
            if item.__class__ is not RawBatch:
                continue
            batch, raw = item
            if add_batch(batch, raw, ROWS_PER_BATCH - len(builder)):  # the common case: a whole batch that fits
                if len(builder) >= ROWS_PER_BATCH or data_bytes() >= MAX_DATA_BYTES:
                    yield flush()
                continue
            for _ in add_pieces(batch, raw, name, room):  # never more than room() rows at a time, flushed between
                if len(builder) >= ROWS_PER_BATCH or data_bytes() >= MAX_DATA_BYTES:
                    yield flush()
        if len(builder):
            yield flush()


def _read_findings(part: SegmentPartition, arrow, deep: bool) -> Iterator:
    """verify's per-segment check (:func:`~kafkatool.segment_check.check_segment`) with the segment's
    indexes, on local files or, through :mod:`pyarrow.fs`, URLs alike."""
    import pyarrow as pa

    from kafkatool.segment_check import CheckOptions, SegmentTask, check_segment

    # The check sees each file by the name rows show (a URL without credentials or options, so a missing
    # index's name is derived from the .log's); the opener maps a name back to the URL to open.
    urls = {_display(u): u for u in (part.path, part.index, part.timeindex, part.txnindex) if u is not None}
    names = [None if u is None else _display(u) for u in (part.index, part.timeindex, part.txnindex)]
    standalone = part.segment is None or not part.name.endswith(".log")  # a lone file, or a leftover
    task = SegmentTask(part.segment or 0, part.name, *names, active=part.active, standalone=standalone)
    findings = check_segment(task, CheckOptions(deep=deep), open_file=lambda name: _open(urls.get(name, name))).findings
    for i in range(0, len(findings), ROWS_PER_BATCH):
        chunk = findings[i:i + ROWS_PER_BATCH]
        n = len(chunk)
        columns = [*_constants(part, n)[:3], [f.path for f in chunk], [f.severity for f in chunk],
                   [f.code for f in chunk], [f.position for f in chunk], [f.message for f in chunk]]
        yield pa.RecordBatch.from_arrays(
            [c if isinstance(c, pa.Array) else pa.array(c, f.type) for c, f in zip(columns, arrow, strict=True)],
            schema=arrow)


__all__ = ["BATCHES", "DECODED", "FINDINGS", "PACK_OPEN_COST", "KafkaLogDataSource", "KafkaLogPushdownReader",
           "KafkaLogReader", "PackedPartition", "SegmentPartition", "evaluate", "filesystem_of", "may_match", "pack",
           "pack_budget", "plan", "pushable", "read_partition", "records_schema"]
