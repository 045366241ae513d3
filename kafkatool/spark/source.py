"""The ``kafka-log`` PySpark data source: segments as batches, records or findings.

``spark.read.format("kafka-log").option("level", "records").load("/var/lib/kafka/data")``

The data source and its readers, the classes Spark registers and pickles to its executors; the work is in
the package's other modules, by job: :mod:`~kafkatool.spark.options` (the options, listed there),
:mod:`~kafkatool.spark.schema` (each level's rows), :mod:`~kafkatool.spark.plan` (files and byte ranges as
input partitions), :mod:`~kafkatool.spark.pushdown` (segments pruned by filters),
:mod:`~kafkatool.spark.fs` (URLs) and :mod:`~kafkatool.spark.read` (a partition into Arrow batches).

Paths: files, partition dirs, log dirs, many log dirs, or globs (a path that exists is taken literally,
brackets and stars in its name included); local paths are read directly,
URLs (``s3://``, ``hdfs://``, ``file://``...) through :mod:`pyarrow.fs`, the same way (every level; the
findings level checks each segment's indexes found beside it). A URL's options travel with every file
under it, to the executors: ``s3://bucket/logs?endpoint_override=minio:9000&scheme=http`` for an
S3-compatible store, ``s3://KEY:SECRET@bucket/...`` for explicit credentials (otherwise the usual AWS
chain on each executor); the ``file`` column shows the URL without either. Topic and partition come
from the partition dir's name (``orders-3``; null and -1 for a flat layout), the segment from the file
name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from .options import Payloads, decode_of, flag, level_of, paths_of, payloads_of, values_of, whole
from .plan import PackedPartition, SegmentPartition, plan
from .pushdown import may_match, planning_pushdown, pushable
from .read import framed_schema_ids, read_partition
from .schema import BATCHES, FINDINGS, records_schema
from .structs import struct_columns, struct_sides


class KafkaLogDataSource(DataSource):
    """``format("kafka-log")``: its options are listed in :mod:`kafkatool.spark.options`."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> StructType:
        level = level_of(self.options)
        if level == "batches":
            return BATCHES
        if level == "records":
            payloads = payloads_of(self.options)
            structs = None if payloads is None else struct_columns(
                framed_schema_ids(paths_of(self.options), struct_sides(payloads)), payloads)
            return records_schema(values_of(self.options), decode_of(self.options),
                                  () if payloads is None else payloads.sides, structs)
        return FINDINGS

    def reader(self, schema: StructType) -> DataSourceReader:
        cls = KafkaLogPushdownReader if planning_pushdown() else KafkaLogReader
        options = self.options
        return cls(dict(options), level_of(options), values_of(options), schema, decode_of(options),
                   payloads_of(options))


class KafkaLogReader(DataSourceReader):
    """Plans and reads; :meth:`partitions` leaves out the segments ``filters`` rule out (none unless
    :class:`KafkaLogPushdownReader` was given some)."""

    def __init__(self, options: dict, level: str, values: str, schema: StructType, decode: str | None = None,
                 payloads: Payloads | None = None) -> None:
        self.options = options
        self.payloads = payloads
        self.level = level
        self.values = values
        self.schema = schema
        self.decode = decode
        self.split_bytes = 0 if level == "findings" else whole(options, "splitBytes")
        self.deep = flag(options.get("deep"))
        self.include_leftovers = flag(options.get("includeLeftovers", options.get("includeleftovers")))
        self.include_snapshots = flag(options.get("includeSnapshots", options.get("includesnapshots")))
        self.pack_bytes = whole(options, "packBytes")
        self.min_partitions = whole(options, "minPartitions")
        self.filters: tuple = ()  # pushed filters on the constant columns (KafkaLogPushdownReader.pushFilters)

    def partitions(self) -> list[SegmentPartition | PackedPartition]:
        filters = self.filters
        parts = plan(paths_of(self.options), split_bytes=self.split_bytes, include_leftovers=self.include_leftovers,
                     include_snapshots=self.include_snapshots,
                     pack_bytes=self.pack_bytes, min_partitions=self.min_partitions,
                     keep=(lambda p: may_match(filters, p)) if filters else None)
        # Spark needs at least one partition; an empty input reads nothing.
        return parts or [SegmentPartition("", None, -1, None, 0, 0)]

    def read(self, partition: SegmentPartition | PackedPartition) -> Iterator:
        _freeze_imports()
        if isinstance(partition, SegmentPartition) and not partition.path:
            return iter(())
        return read_partition(partition, self.level, self.values, self.deep, self.schema, self.decode, self.payloads)


class KafkaLogPushdownReader(KafkaLogReader):
    """The reader Spark's filter pushdown gets (see :func:`planning_pushdown`): it prunes segments."""

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


__all__ = ["KafkaLogDataSource", "KafkaLogPushdownReader", "KafkaLogReader"]
