"""``groups`` over the ``kafka-log`` data source's rows: the group coordinator's replay at load
(:class:`kafkatool.internal.groups.GroupsReplay`, ``GroupMetadataManager.replay``) and its committed offsets
(``OffsetMetadataManager.replay``, by the offsets engine's own pass, ``consumer_offsets_partition``: latest per key, a
tombstone deletes, transactional commits once their COMMIT marker is read) applied on the executors to the rows of
each ``__consumer_offsets`` partition dir, in offset order (:func:`kafkatool.spark.state.dir_rows`); each commit's
lag from the data partition of the same log dir, as ``groups`` takes it.

    from kafkatool.spark.groups import group_states
    batches = spark.read.format("kafka-log").option("level", "batches").load(DIRS)
    records = spark.read.format("kafka-log").option("level", "records").load(DIRS)
    group_states(batches, records).where("group_type = 'consumer'").show()
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from ..internal.groups import GroupsReplay, GroupView
from ..internal.offsets import OFFSETS_TOPIC, CommittedOffset, consumer_offsets_partition
from ..txns import high_watermark
from .fs import is_url
from .state import dir_rows, partition_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# One row per group: where it is, what it is, and its whole ``group_state`` line (``groups -f jsonl``, without
# topic names) as JSON; findings (group-replay-inconsistent) as rows whose group_type is "finding".
GROUP_STATES = StructType([
    StructField("dir", StringType(), False),          # the __consumer_offsets-N dir
    StructField("group_id", StringType()),
    StructField("group_type", StringType(), False),   # classic | consumer | share | streams | finding
    StructField("epoch", IntegerType()),
    StructField("state", StringType()),
    StructField("deleted", BooleanType()),
    StructField("json", StringType(), False),
])


def group_states(batches: DataFrame, records: DataFrame, deleted: bool = False) -> DataFrame:
    """The groups of the ``__consumer_offsets`` partitions among ``batches`` and ``records`` (the data source's
    batches and records levels of the same dirs, values binary, the default), one row each
    (:data:`GROUP_STATES`), with their committed offsets and, where the committed partition's dir is in the log dir
    of the ``__consumer_offsets`` partition, its lag (:attr:`kafkatool.internal.offsets.CommittedOffset.lag`: to the
    high watermark its log dir's ``replication-offset-checkpoint`` holds for it when that dir is local, else to its
    log end, the next offset after its last batch); groups deleted by tombstones only ``deleted``. Each partition
    dir's rows are replayed in one task (an RDD's ``groupByKey``: ``applyInArrow`` would need pandas, which the
    ``[spark]`` extra does not install)."""
    from pyspark.sql import functions as F

    ends = {(r["dir"], r["topic"], r["partition"]): (r["log_start"], r["leo"]) for r in (
        batches.where(F.col("topic").isNotNull() & (F.col("topic") != OFFSETS_TOPIC))
        .withColumn("dir", F.regexp_extract("file", r"^(.*)/[^/]+$", 1))
        .groupBy("dir", "topic", "partition")
        .agg(F.min("base_offset").alias("log_start"), (F.max("last_offset") + 1).alias("leo")).collect())}
    by_home = {(d.rpartition("/")[0], t, p): (d, start, leo) for (d, t, p), (start, leo) in ends.items()}
    replayed = partition_rows(batches, records, (OFFSETS_TOPIC,)).flatMap(functools.partial(_replay, deleted, by_home))
    return records.sparkSession.createDataFrame(replayed, GROUP_STATES)


def _with_end(c: CommittedOffset, home: str, by_home: dict[tuple[str, str, int], tuple[str, int, int]]
              ) -> CommittedOffset:
    """``c`` with its data partition's log start, end and high watermark where that dir is in ``home``."""
    found = by_home.get((home, c.topic, c.partition))
    if found is None:
        return c
    directory, start, leo = found
    hw = None if is_url(directory) else high_watermark(Path(directory))
    if hw is not None:  # bounded by the log as the loader bounds it (UnifiedLog.updateHighWatermark)
        hw = min(max(hw, start), leo)
    return dataclasses.replace(c, log_start_offset=start, log_end_offset=leo, high_watermark=hw)


def _replay(deleted: bool, by_home: dict[tuple[str, str, int], tuple[str, int, int]],
            dir_and_rows: tuple[str, Iterable]) -> list[tuple]:
    """One partition dir's rows replayed: its groups, with their commits, and findings as rows of
    :data:`GROUP_STATES`."""
    directory, rows = dir_and_rows
    d = dir_rows(directory, rows)
    replay = GroupsReplay(d.name)
    home = directory.rpartition("/")[0]
    committed: dict[str, list[CommittedOffset]] = {}
    for c in consumer_offsets_partition((), d.name, replay=replay, items=d.items):
        if isinstance(c, CommittedOffset):
            committed.setdefault(c.group, []).append(_with_end(c, home, by_home))
    views = [GroupView(g, tuple(committed.get(g.group_id, ())), {}) for g in replay.groups.values()]
    if deleted:
        views += [GroupView(g, tuple(committed.get(g.group_id, ())), {}, deleted=True)
                  for g in replay.deleted.values()]
    out = [(directory, v.group.group_id, v.group.group_type, v.group.epoch, d["state"], v.deleted, json.dumps(d))
           for v in sorted(views, key=lambda v: v.group.group_id) for d in (v.as_dict(),)]
    out += [(directory, None, "finding", None, None, None, json.dumps(f.as_dict()))
            for f in (*replay.findings, *replay.findings.summary())]
    return out
