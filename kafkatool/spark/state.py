"""Coordinator and producer state from the ``kafka-log`` data source's rows: each partition dir's batch rows and
record rows gathered in one task, in offset order, into the batches and records the CLI's own replays take
(:func:`kafkatool.producers.replay_batches`, ``consumer_offsets_partition`` and ``transaction_state_partition``
given ``items``), and KIP-664's hanging transactions judged on the driver by ``txns --hanging``'s one rule
(:func:`kafkatool.txns.find_hanging`, ``FindHangingTransactionsCommand.filterHangingTransactions``).

    from kafkatool.spark.state import hanging_transactions
    batches = spark.read.format("kafka-log").option("level", "batches").load(DIRS)
    records = spark.read.format("kafka-log").option("level", "records").load(DIRS)
    hanging_transactions(batches, records).show()
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

from ..internal.offsets import OFFSETS_TOPIC, CommittedOffset, consumer_offsets_partition
from ..internal.transactions import TRANSACTION_TOPIC, TransactionLogEntry, TxnClock, transaction_state_partition
from ..model import Batch, Marker, Record
from ..producers import replay_batches
from ..records import CODEC_BY_ID, control_record
from ..txns import MAX_TRANSACTION_TIMEOUT_MS, find_hanging, hanging_candidates

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame

_BATCH_COLUMNS = ("position", "base_offset", "last_offset", "size", "magic", "crc", "crc_valid", "compression",
                  "timestamp_type", "first_timestamp", "max_timestamp", "record_count", "partition_leader_epoch",
                  "producer_id", "producer_epoch", "base_sequence", "transactional", "control", "delete_horizon_ms")
_RECORD_COLUMNS = ("batch_base_offset", "offset", "timestamp", "key", "value", "control_type")
_DIR = r"^(.*)/[^/]+$"
_MARKERS = ("ABORT", "COMMIT")

# One row per hanging transaction: where, who, why, and its whole ``hanging_transaction`` line (``txns --hanging -f
# jsonl``) as JSON.
HANGING = StructType([
    StructField("topic", StringType(), False),
    StructField("partition", IntegerType(), False),
    StructField("producer_id", LongType(), False),
    StructField("first_offset", LongType(), False),
    StructField("reason", StringType(), False),
    StructField("possibly", BooleanType(), False),
    StructField("path", StringType(), False),   # the partition dir
    StructField("json", StringType(), False),
])


def partition_rows(batches: DataFrame, records: DataFrame, topics: tuple[str, ...] | None = None) -> RDD:
    """``(partition dir, [("b", segment, batch columns) | ("r", segment, record columns)])`` per partition dir among
    ``batches`` and ``records`` (the data source's batches and records levels, values binary, of the same dirs):
    every batch row (``topics``: only those topics'), and the record rows of control batches and of
    ``__consumer_offsets`` and ``__transaction_state`` (what the replays read), undamaged ones only (``error``
    null: the damage is the findings level's)."""
    from pyspark.sql import functions as F

    def tagged(df: DataFrame, tag: str, columns: tuple[str, ...]) -> RDD:
        df = df.where(F.col("topic").isNotNull()).withColumn("dir", F.regexp_extract("file", _DIR, 1))
        if topics is not None:
            df = df.where(F.col("topic").isin(*topics))
        return df.select("dir", "file", "segment", *columns).rdd.map(
            lambda r: (r[0], (tag, r[1], r[2], tuple(r[3:]))))

    wanted = (F.col("control_type").isNotNull() | F.col("topic").isin(OFFSETS_TOPIC, TRANSACTION_TOPIC))
    return tagged(batches, "b", _BATCH_COLUMNS).union(
        tagged(records.where(wanted & F.col("error").isNull()), "r", _RECORD_COLUMNS)).groupByKey()


def _batch(c: tuple) -> Batch:
    """A batch row as :class:`kafkatool.model.Batch`, its attributes made again from the columns (codec, timestamp
    type, transactional, control, delete horizon: ``DefaultRecordBatch``'s bits)."""
    (position, base, last, size, magic, crc, crc_valid, compression, ts_type, first_ts, max_ts, count, leader_epoch,
     pid, epoch, seq, transactional, control, horizon) = c
    attributes = (CODEC_BY_ID.index(compression) if compression in CODEC_BY_ID else 0) | (
        0x08 if ts_type == "log_append" else 0)
    attributes |= (0x10 if transactional else 0) | (0x20 if control else 0) | (0x40 if horizon is not None else 0)
    return Batch(position, base, last, size, magic, crc, crc_valid, attributes, compression, ts_type, first_ts,
                 max_ts, count, leader_epoch, pid, epoch, seq, transactional, control, horizon)


@dataclass
class DirRows:
    """One partition dir's rows in offset order: its batches, each control batch with its end-transaction marker,
    and the records read of it as (segment file, batch, record)."""

    directory: str
    batches: list[tuple[Batch, Marker | None]] = field(default_factory=list)
    items: list[tuple[str, Batch, Record]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.directory.rstrip("/").rsplit("/", 1)[-1]

    @property
    def leo(self) -> int | None:
        """The next offset after its last batch (the loader's log end offset, on an undamaged log)."""
        return self.batches[-1][0].last_offset + 1 if self.batches else None

    @property
    def log_start(self) -> int | None:
        return self.batches[0][0].base_offset if self.batches else None

    @property
    def newest(self) -> int:
        """The largest batch max timestamp (-1: none): what ``find-hanging``'s clock takes of it."""
        return max((b.max_timestamp for b, _m in self.batches), default=-1)


def dir_rows(directory: str, rows: Iterable[tuple[str, str, int | None, tuple]]) -> DirRows:
    """A partition dir's tagged rows (:func:`partition_rows`) put back in offset order: batches by segment and
    position, each batch's records by offset; a control record read by the scanner's own reading of one
    (``records.control_record``: its type and coordinator epoch)."""
    out = DirRows(directory)
    kept: list[tuple[tuple, str, Batch]] = []
    records: dict[tuple[str, int], list[tuple]] = {}
    for tag, file, segment, c in rows:
        if tag == "b":
            kept.append(((segment if segment is not None else -1, file, c[0]), file, _batch(c)))
        else:
            records.setdefault((file, c[0]), []).append(c[1:])
    for _order, file, b in sorted(kept, key=lambda k: k[0]):
        marker = None
        for offset, timestamp, key, value, control_type in sorted(records.get((file, b.base_offset), ()),
                                                                 key=lambda r: r[0]):
            key, value = None if key is None else bytes(key), None if value is None else bytes(value)
            if control_type is not None:
                try:
                    rec = control_record(offset, timestamp, key, value, ())
                except ValueError:
                    continue  # (the data source's findings level says why)
                if marker is None and rec.control_type in _MARKERS:
                    marker = Marker(rec.control_type, rec.coordinator_epoch, rec.timestamp)
            else:
                rec = Record(offset, timestamp, key, value)
            out.items.append((file, b, rec))
        out.batches.append((b, marker))
    return out


@dataclass
class _Gathered:
    """What find-hanging takes of one partition dir (:func:`kafkatool.txns.hanging_paths`' reads, from rows)."""

    newest: int
    candidates: list = field(default_factory=list)
    states: list[TransactionLogEntry] | None = None      # a __transaction_state partition's
    commits: list[CommittedOffset] = field(default_factory=list)
    pending: dict[int, list[CommittedOffset]] | None = None  # a __consumer_offsets partition's


def _gather(item: tuple[str, Iterable]) -> list[tuple[str, _Gathered]]:
    directory, rows = item
    d = dir_rows(directory, rows)
    topic, _, partition = d.name.rpartition("-")
    history = replay_batches(directory, d.batches, d.log_start, d.leo)
    out = _Gathered(d.newest, list(hanging_candidates(topic, int(partition), history)))
    if topic == TRANSACTION_TOPIC:
        clock = TxnClock()
        out.states = [e for e in transaction_state_partition((), d.name, clock=clock, items=d.items)
                      if isinstance(e, TransactionLogEntry)]
        out.newest = max(out.newest, clock.newest)
    elif topic == OFFSETS_TOPIC:
        out.pending = {}
        out.commits = [c for c in consumer_offsets_partition((), d.name, held=out.pending, items=d.items)
                       if isinstance(c, CommittedOffset)]
    return [(directory, out)]


def hanging_transactions(batches: DataFrame, records: DataFrame, *,
                         max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS, now: int | None = None) -> DataFrame:
    """``txns --hanging`` over the data source's rows: each partition dir's rows replayed in one task (its open
    transactions and producers, :func:`kafkatool.producers.replay_batches`; the ``__transaction_state`` and
    ``__consumer_offsets`` partitions' states and commits), then judged on the driver by
    :func:`kafkatool.txns.find_hanging` at ``now`` (default: the newest batch or coordinator record time read, as
    the CLI's ``--now``), one row per hanging transaction (:data:`HANGING`). ``batches`` and ``records``: the same
    dirs at the batches and records levels (values binary, the default)."""
    gathered = partition_rows(batches, records).flatMap(_gather).collect()
    clock = TxnClock(now)
    clock.newest = max((g.newest for _d, g in gathered), default=-1)
    states = [e for _d, g in gathered if g.states is not None for e in g.states]
    coordinators = any(g.states is not None for _d, g in gathered)
    commits: dict[tuple[str, int], list[tuple[str, int]]] = {}
    pending: dict[tuple[str, int], dict[int, list[CommittedOffset]]] = {}
    for directory, g in gathered:
        for c in g.commits:
            commits.setdefault((c.topic, c.partition), []).append((c.group, c.offset))
        if g.pending is not None:
            topic, _, partition = directory.rstrip("/").rsplit("/", 1)[-1].rpartition("-")
            pending[(topic, int(partition))] = g.pending
    candidates = [c for _d, g in sorted(gathered, key=lambda dg: dg[0]) for c in g.candidates]
    hanging = find_hanging(candidates, states if coordinators else None, commits, pending, clock.at, max_timeout_ms)
    rows = [(h.topic, h.partition, h.producer_id, h.first_offset, h.reason, h.possibly, h.path,
             json.dumps(h.as_dict())) for h in hanging]
    return batches.sparkSession.createDataFrame(rows, HANGING)


__all__ = ["HANGING", "DirRows", "dir_rows", "hanging_transactions", "partition_rows"]
