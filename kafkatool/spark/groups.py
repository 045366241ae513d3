"""``groups`` over the ``kafka-log`` data source's records: the group coordinator's replay at load
(:class:`kafkatool.internal.groups.GroupsReplay`, ``GroupMetadataManager.replay``) applied on the executors to the
rows of each ``__consumer_offsets`` partition dir, in offset order. Committed offsets are not replayed here: the
``offset_commit`` rows of ``option("decode", "consumer-offsets")`` are (the latest per key, a tombstone deletes).

    from kafkatool.spark.groups import group_states
    rows = spark.read.format("kafka-log").option("level", "records").load("/var/lib/kafka/data")
    group_states(rows).where("group_type = 'consumer'").show()
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from ..internal.groups import GroupsReplay, GroupView
from ..internal.offsets import OFFSETS_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# One row per group: where it is, what it is, and its whole ``group_state`` line (``groups -f jsonl``, without
# committed offsets) as JSON; findings (group-replay-inconsistent) as rows whose group_type is "finding".
GROUP_STATES = StructType([
    StructField("dir", StringType(), False),          # the __consumer_offsets-N dir
    StructField("group_id", StringType()),
    StructField("group_type", StringType(), False),   # classic | consumer | share | streams | finding
    StructField("epoch", IntegerType()),
    StructField("state", StringType()),
    StructField("deleted", BooleanType()),
    StructField("json", StringType(), False),
])
_COLUMNS = ("file", "offset", "timestamp", "key", "value")  # (records rows carry no batch position)


def group_states(records: DataFrame, deleted: bool = False) -> DataFrame:
    """The groups of the ``__consumer_offsets`` partitions among ``records`` (the data source's records level,
    values binary, the default), one row each (:data:`GROUP_STATES`); groups deleted by tombstones only
    ``deleted``. Each partition dir's rows are replayed in one task, sorted by offset (an RDD's ``groupByKey``:
    ``applyInArrow`` would need pandas, which the ``[spark]`` extra does not install)."""
    from pyspark.sql import functions as F

    rows = (records.where((F.col("topic") == OFFSETS_TOPIC) & F.col("control_type").isNull() & F.col("error").isNull())
            .withColumn("dir", F.regexp_extract("file", r"^(.*)/[^/]+$", 1))
            .select("dir", *_COLUMNS))
    replayed = rows.rdd.map(lambda r: (r["dir"], tuple(r[c] for c in _COLUMNS))).groupByKey().flatMap(
        functools.partial(_replay, deleted))
    return records.sparkSession.createDataFrame(replayed, GROUP_STATES)


def _replay(deleted: bool, dir_rows: tuple[str, Iterable[tuple]]) -> list[tuple]:
    """One partition dir's rows replayed: its groups and findings as rows of :data:`GROUP_STATES`."""
    directory, rows = dir_rows
    replay = GroupsReplay(directory.rstrip("/").rsplit("/", 1)[-1])
    for file, offset, timestamp, key, value in sorted(rows, key=lambda r: r[1]):
        replay.record(file, None, offset, timestamp, None if key is None else bytes(key),
                      None if value is None else bytes(value))
    views = [GroupView(g, (), {}) for g in replay.groups.values()]
    if deleted:
        views += [GroupView(g, (), {}, deleted=True) for g in replay.deleted.values()]
    out = [(directory, v.group.group_id, v.group.group_type, v.group.epoch, d["state"], v.deleted, json.dumps(d))
           for v in sorted(views, key=lambda v: v.group.group_id) for d in (v.as_dict(),)]
    out += [(directory, None, "finding", None, None, None, json.dumps(f.as_dict()))
            for f in (*replay.findings, *replay.findings.summary())]
    return out
