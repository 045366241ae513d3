"""The ``kafka-log`` data source on a hostile disk, in a real ``local[2]`` session: a record-count bomb is read
whole in bounded Arrow batches, and a partition path holding glob characters is read literally.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from kafkatool.spark.plan import plan
from kafkatool.spark.read import read_partition
from kafkatool.spark.scan import scan_paths

from .test_hostile_bombs import _batch, _logdir

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

BOMB = 18_000_000  # ~11 KB of zstd; once one Arrow batch of 18 M rows, 2 GB the JVM could not allocate (1 GiB limit)


def test_the_records_of_a_record_count_bomb_are_read_in_bounded_arrow_batches(spark, tmp_path) -> None:
    """Its 18 M records were one Arrow batch (``spark scan -r`` was seen to fail on it with ``OutOfDirectMemoryError:
    failed to allocate 2045250072 bytes``; this shared session survives that batch, so the bound itself is held by
    ``test_spark_arrow``). Now they come ``ROWS_PER_BATCH`` at a time: every one must still reach Spark as a row."""
    bomb = _logdir(tmp_path, _batch(BOMB, valid=False))
    df = spark.read.format("kafka-log").option("level", "records").load(str(bomb))
    (agg,) = df.agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                    F.count("key").alias("keys"), F.count("error").alias("errors"),
                    F.sum(F.size("headers")).alias("headers")).collect()
    assert agg.asDict() == {"n": BOMB, "lo": 0, "hi": 0, "keys": 0, "errors": 0, "headers": 0}
    rows = df.select("topic", "partition", "offset", "timestamp", "key", "value", "crc_valid").limit(3).collect()
    assert [r.asDict() for r in rows] == [{"topic": "bomb", "partition": 0, "offset": 0, "timestamp": 1_700_000_000_000,
                                            "key": None, "value": None, "crc_valid": True}] * 3


# ESC [ is the start of a terminal escape; the others are glob characters of Python's glob or Hadoop's Globber
GLOBBY = "we[ir]d*?{a,b}\x1b[1m"


def test_paths_with_glob_characters_are_taken_literally(spark, corpus, tmp_path) -> None:
    """A partition dir under a dir named with ``[``, ``]``, ``*``, ``?``, ``{`` and ESC ``[``: before, the data
    source took the existing path for a glob matching nothing (FileNotFoundError, ``spark scan`` exit 70), and
    reading the Parquet written under such an output dir back for the summary was globbed by Hadoop
    (PATH_NOT_FOUND). Both are read as the paths they are."""
    root, plain = tmp_path / GLOBBY, tmp_path / "plain"
    for d in (root, plain):
        shutil.copytree(Path(corpus) / "kafka" / "logdir" / "codecs-0", d / "codecs-0")
    batches, records = (sum(rb.num_rows for p in plan([str(plain / "codecs-0")]) for rb in read_partition(p, level))
                        for level in ("batches", "records"))
    assert batches and records
    result = scan_paths(spark, [str(root / "codecs-0")], root / "out", records=True)
    (row,) = result.partitions
    assert (row["topic"], row["partition"], row["batches"], row["records"]) == ("codecs", 0, batches, records)
    n = spark.read.format("kafka-log").option("level", "records").load(str(root / "codecs-0")).count()
    assert n == records
