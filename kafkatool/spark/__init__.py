"""Kafka log segments as Spark DataFrames: the ``kafka-log`` Python data source and ``kafkatool spark scan``.

The only package that imports ``pyspark``/``pyarrow`` (the ``[spark]`` extra). The per-segment work is
the CLI's own (:func:`kafkatool.records.scan`, :func:`kafkatool.records.decode_records`,
:func:`kafkatool.segment_check.check_segment`); this package only fans it out over Spark tasks and turns
its values into Arrow columns.

    from kafkatool.spark import register
    register(spark)
    spark.read.format("kafka-log").option("level", "records").load("/var/lib/kafka/data")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FORMAT = "kafka-log"

# Spark settings the scan wants; ``kafkatool spark scan`` sets them on the session it starts, and a
# session of your own (or spark-submit's ``--conf``) should too. Not ``spark.python.unix.domain.socket.enabled``
# (Spark >= 4.1), though it cut the fixed cost per task from 60 to 25 ms (local[1], 200 small segments: a
# Nagle/delayed-ACK stall on the TCP socket between the JVM and the Python worker): over a Unix socket, each
# reused Python worker the JVM closes while idle (the data source's planning workers, after a minute idle and
# at every stop: ``PythonWorkerFactory.cleanupIdleWorkers``) takes the close for a failed task, reports it on
# the closed socket, and its daemon prints a BrokenPipeError traceback (``pyspark.daemon``, since SPARK-54344);
# over TCP that last write is taken and nothing is printed. A tiny scan on local[2] printed 3 such tracebacks
# with it and none without. ``--pack-bytes`` cuts the tasks, and that cost, where segments are many and small.
SESSION_CONF = {
    "spark.ui.showConsoleProgress": "false",  # kafkatool draws its own progress on stderr
    # Hand WHERE conditions to the data source's pushFilters, which drops the segments whose topic,
    # partition, segment or file rule them out before any is opened. Spark >= 4.1 (an internal SQL conf,
    # false by default, settable at runtime); without it queries read every segment, with the same rows.
    "spark.sql.python.filterPushdown.enabled": "true",
}


def register(spark: SparkSession) -> None:
    """Register the ``kafka-log`` data source with ``spark`` (once per session; repeating is harmless)."""
    from .source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)


__all__ = ["FORMAT", "SESSION_CONF", "register"]
