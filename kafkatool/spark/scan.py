"""The job behind ``kafkatool spark scan``: segments to Parquet, plus a summary per topic partition.

Writes ``OUT/batches`` (and ``OUT/records`` with ``records=True``) and ``OUT/findings`` as Parquet
partitioned by topic, then aggregates the written batches and findings per topic partition: bytes,
batches, records, offset and time ranges, codecs, producers, CRC failures, findings by severity, and
transactions committed/aborted (control batches by type). ``OUT/summary.json`` holds the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

# Absolute imports: this file is also spark-submit's entry script (see the bottom).
from kafkatool.spark import FORMAT, register
from kafkatool.spark.source import BATCHES, FINDINGS


@dataclass
class ScanResult:
    out: str
    partitions: list[dict] = field(default_factory=list)
    total: dict = field(default_factory=dict)


def _reader(spark: SparkSession, level: str, paths: list[str], split_bytes: int) -> DataFrame:
    reader = spark.read.format(FORMAT).option("level", level)
    if split_bytes and level != "findings":
        reader = reader.option("splitBytes", str(split_bytes))
    return reader.load(paths if len(paths) > 1 else paths[0])


def scan_paths(spark: SparkSession, paths: list[str], out: str | Path, *, records: bool = False,
               split_bytes: int = 0, mode: str = "overwrite") -> ScanResult:
    """Run the scan; ``paths`` are what the data source takes (files, dirs, globs, URLs)."""
    register(spark)
    out = str(out)
    _reader(spark, "batches", paths, split_bytes).write.mode(mode).partitionBy("topic").parquet(f"{out}/batches")
    _reader(spark, "findings", paths, 0).write.mode(mode).partitionBy("topic").parquet(f"{out}/findings")
    if records:
        _reader(spark, "records", paths, split_bytes).write.mode(mode).partitionBy("topic").parquet(f"{out}/records")

    # With the schema given: a clean input writes no findings file, and Spark cannot infer a schema from none.
    batches = spark.read.schema(BATCHES).parquet(f"{out}/batches")
    findings = spark.read.schema(FINDINGS).parquet(f"{out}/findings")
    keys = ["topic", "partition"]
    per_batch = batches.groupBy(*keys).agg(
        F.sum("size").alias("bytes"),
        F.count(F.lit(1)).alias("batches"),
        F.sum("record_count").alias("records"),
        F.min("base_offset").alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        F.min(F.when(F.col("first_timestamp") >= 0, F.col("first_timestamp"))).alias("first_timestamp"),
        F.max("max_timestamp").alias("max_timestamp"),
        F.sort_array(F.collect_set("compression")).alias("codecs"),
        F.countDistinct(F.when(F.col("producer_id") >= 0, F.col("producer_id"))).alias("producers"),
        F.sum(F.when(~F.col("crc_valid"), 1).otherwise(0)).alias("crc_failures"),
        F.sum(F.when(F.col("control_type") == "COMMIT", 1).otherwise(0)).alias("committed"),
        F.sum(F.when(F.col("control_type") == "ABORT", 1).otherwise(0)).alias("aborted"),
    )
    per_finding = findings.groupBy(*keys).agg(
        *(F.sum(F.when(F.col("severity") == s, 1).otherwise(0)).alias(s + ("s" if s != "info" else ""))
          for s in ("error", "warning", "info")),
        F.sort_array(F.collect_set(F.when(F.col("severity") != "info", F.col("code")))).alias("codes"),
    )
    joined = per_batch.join(per_finding, on=keys, how="full_outer").orderBy(*keys)
    result = ScanResult(out)
    for row in joined.collect():
        d = row.asDict(recursive=True)
        for k in ("bytes", "batches", "records", "crc_failures", "committed", "aborted", "producers",
                  "errors", "warnings", "info"):
            d[k] = int(d[k] or 0)
        d["codecs"] = d["codecs"] or []
        d["codes"] = d["codes"] or []
        result.partitions.append(d)
    total = {k: sum(p[k] for p in result.partitions)
             for k in ("bytes", "batches", "records", "crc_failures", "committed", "aborted", "errors", "warnings",
                       "info")}
    total["partitions"] = len(result.partitions)
    result.total = total
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, "summary.json").write_text(json.dumps({"partitions": result.partitions, "total": total}, indent=1))
    return result


def session(master: str = "local[*]", app_name: str = "kafkatool spark scan") -> tuple[SparkSession, bool]:
    """A SparkSession for the CLI (spark-submit's under spark-submit) and whether it is new.

    The caller stops only a session it started; an active one (a notebook's, a test's) is reused.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    import os
    import sys

    java17 = "/usr/lib/jvm/java-17-openjdk-amd64"
    if not os.environ.get("JAVA_HOME") and os.path.isdir(java17):
        os.environ["JAVA_HOME"] = java17
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    if master:
        builder = builder.master(master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


__all__ = ["ScanResult", "scan_paths", "session"]


if __name__ == "__main__":  # spark-submit .../kafkatool/spark/scan.py PATH... --out DIR --master ''
    import sys

    from kafkatool.cli.main import main

    sys.argv = ["kafkatool", "spark", "scan", *sys.argv[1:]]
    main()
