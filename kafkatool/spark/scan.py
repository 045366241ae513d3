"""The job behind ``kafkatool spark scan``: segments to Parquet, plus a summary per topic partition.

Writes ``OUT/batches`` (and ``OUT/records`` with ``records=True``) and ``OUT/findings`` as Parquet
partitioned by topic, then aggregates the written batches and findings per topic partition: bytes,
batches, records, offset and time ranges, codecs, CRC failures, findings by severity, and transactions
committed/aborted (control batches by type). What the broker holds after loading the partition (log start,
log end offset, high watermark, last stable offset, open transactions with the oldest one's first offset,
producers with state) comes from the one partition loader (:mod:`kafkatool.loader`, Kafka's ``LogLoader``),
run in Spark tasks, one per partition dir. ``OUT/summary.json`` holds the same.

Each phase (``batches``, ``findings``, ``records`` with ``records=True``, ``summary``) runs its Spark
jobs under a job group of its own; with a ``progress`` callback, a thread follows the group's stages in
Spark's status tracker and reports ``(phase, tasks done, tasks total)``. Drawing is the caller's (the
CLI's rich bars); nothing here prints.
"""

from __future__ import annotations

import json
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

# Absolute imports: this file is also spark-submit's entry script (see the bottom).
from kafkatool.spark import FORMAT, SESSION_CONF, register
from kafkatool.spark.schema import BATCHES, FINDINGS


@dataclass
class ScanResult:
    out: str
    partitions: list[dict] = field(default_factory=list)
    total: dict = field(default_factory=dict)


ProgressCallback = Callable[[str, int, int], None]
"""``progress(phase, tasks_done, tasks_total)``; called from a background thread as well as the caller's."""

POLL_SECONDS = 0.2
# What SparkContext.setJobGroup sets (PySpark has no clearJobGroup): saved before a phase, put back after.
_JOB_GROUP_KEYS = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


class _GroupTasks:
    """Tasks done and total over the stages of one job group, from ``SparkContext.statusTracker()``.

    A stage counts once however many of the group's jobs list it, as its latest attempt. A stage of
    finished jobs only that completed no task was skipped (a later job listing an earlier one's shuffle
    stage again, under a new id: adaptive execution runs a query as several such jobs) and does not count.
    """

    def __init__(self, spark: SparkSession, group: str) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.group = group

    def poll(self) -> tuple[int, int, bool, frozenset[int]]:
        """(done, total, whether a job of the group still runs, the group's job ids)."""
        job_ids = frozenset(self.tracker.getJobIdsForGroup(self.group))
        live: set[int] = set()  # stages of running jobs
        ended: set[int] = set()  # stages of finished jobs
        for job_id in job_ids:
            job = self.tracker.getJobInfo(job_id)
            if job is not None:
                (live if job.status == "RUNNING" else ended).update(int(s) for s in job.stageIds)
        done = total = 0
        for stage_id in live | ended:
            stage = self.tracker.getStageInfo(stage_id)
            if stage is None or (stage_id not in live and stage.numCompletedTasks == 0):
                continue  # unknown (yet, or no longer) or skipped
            done += min(stage.numCompletedTasks, stage.numTasks)
            total += stage.numTasks
        return done, total, bool(live), job_ids

    def final(self, timeout: float = 10.0) -> tuple[int, int]:
        """The counts once the tracker has seen the group's jobs end.

        The tracker learns of Spark's events asynchronously, so just after the jobs ended it may still
        count a job as running or a task as not done: wait (a bounded while) until no job of the group
        runs and the set of jobs has stayed the same across two readings.
        """
        deadline = time.monotonic() + timeout
        before = None
        while True:
            done, total, running, jobs = self.poll()
            if (not running and jobs == before) or time.monotonic() >= deadline:
                return done, total
            before = None if running else jobs
            time.sleep(0.02)


@contextmanager
def _phase(spark: SparkSession, run: str, name: str, progress: ProgressCallback | None) -> Iterator[None]:
    """Run the block's Spark jobs under job group ``kafkatool-scan-RUN-NAME`` and report their progress.

    The thread's previous job group (a caller's own) is put back afterwards, also on errors; the
    polling thread is stopped and joined before this returns or raises.
    """
    sc = spark.sparkContext
    saved = {key: sc.getLocalProperty(key) for key in _JOB_GROUP_KEYS}
    group = f"kafkatool-scan-{run}-{name}"
    sc.setJobGroup(group, f"kafkatool spark scan: {name}")
    stop = threading.Event()
    failed: list[BaseException] = []
    tracker = _GroupTasks(spark, group) if progress is not None else None

    def follow() -> None:
        assert tracker is not None and progress is not None
        last = (0, 0)
        try:
            while not stop.wait(POLL_SECONDS):
                done, total, _, _ = tracker.poll()
                if (done, total) != last:
                    last = (done, total)
                    progress(name, done, total)
        except BaseException as exc:  # reported to the caller after the phase, never lost in a thread
            failed.append(exc)

    thread = None
    try:
        if progress is not None:
            progress(name, 0, 0)
            thread = threading.Thread(target=follow, name=f"kafkatool-scan-progress-{name}", daemon=True)
            thread.start()
        yield
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        for key, value in saved.items():
            sc.setLocalProperty(key, value)  # None removes the key
    if failed:
        raise failed[0]
    if tracker is not None and progress is not None:
        progress(name, *tracker.final())


def _reader(spark: SparkSession, level: str, paths: list[str], split_bytes: int, pack_bytes: int = 0,
            deep: bool = False) -> DataFrame:
    reader = spark.read.format(FORMAT).option("level", level)
    if deep and level == "findings":
        reader = reader.option("deep", "true")
    if split_bytes and level != "findings":
        reader = reader.option("splitBytes", str(split_bytes))
    if pack_bytes:  # packed no coarser than keeps every core busy, as Spark's file sources
        reader = reader.option("packBytes", str(pack_bytes))
        reader = reader.option("minPartitions", str(spark.sparkContext.defaultParallelism))
    return reader.load(paths if len(paths) > 1 else paths[0])


def _unglobbed(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark's file sources glob every path they read
    (``DataSource.checkAndGlobPathIfNecessary``, Hadoop's ``Globber``, which unescapes a ``\\``-escaped name),
    so an output dir named ``a[1]`` or ``{x}`` would be a pattern matching nothing (writing does not glob)."""
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


SUMMARY_FIELDS = ("dirs", "bytes", "batches", "records", "first_offset", "last_offset", "first_timestamp",
                  "max_timestamp", "codecs", "crc_failures", "committed", "aborted", "errors", "warnings", "info",
                  "codes")
"""A summary row's aggregates, in the order rows and summary.json give them (after the keys)."""

# How two partial values of each aggregate merge: sets are unions, counts and sums add, ranges take the ends.
# A sum, min or max of nothing is None, as in SQL.
_SETS = {"dirs", "codecs", "codes"}
_MIN = {"first_offset", "first_timestamp"}
_MAX = {"last_offset", "max_timestamp"}


def _merge(into: dict, key: tuple, part: dict) -> None:
    """Add one partial summary of partition ``key`` (:func:`_partial_summaries`) to ``into``."""
    have = into.get(key)
    if have is None:
        into[key] = {k: set(v) if k in _SETS else v for k, v in part.items()}
        return
    for k, v in part.items():
        if k in _SETS:
            have[k].update(v)
        elif v is None:
            continue
        elif have[k] is None:
            have[k] = v
        else:
            have[k] = min(have[k], v) if k in _MIN else max(have[k], v) if k in _MAX else have[k] + v


def _arrow_chunks(rows: Iterator, schema) -> Iterator:
    """Spark rows as pyarrow record batches of ``schema``, ``ROWS_PER_BATCH`` rows at most each."""
    import itertools

    import pyarrow as pa

    from kafkatool.spark.read import ROWS_PER_BATCH

    rows = iter(rows)
    while chunk := list(itertools.islice(rows, ROWS_PER_BATCH)):
        yield pa.RecordBatch.from_pylist([r.asDict() for r in chunk], schema=schema)


def _partial_summaries(batches: Iterator) -> Iterator[str]:
    """One task's rows (:func:`_summary`'s projection, as pyarrow record batches) aggregated per topic partition
    with pyarrow: the task's partial summary, one JSON line per partition, which the driver merges
    (:func:`_merge`). Sets hold the distinct dirs, codecs and codes, each bounded by what the partition has,
    never by its rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    merged: dict[tuple, dict] = {}
    for rb in batches:
        if not rb.num_rows:
            continue
        keys = [k for k in ("cluster", "topic", "partition") if k in rb.schema.names]
        col = rb.column

        def flag(mask) -> pa.Array:
            return pc.fill_null(mask, False).cast(pa.int64())

        severity = col("severity")
        ts = col("first_timestamp")
        table = pa.table({
            **{k: col(k) for k in keys}, "dir": col("dir"), "size": col("size"), "base_offset": col("base_offset"),
            "record_count": col("record_count"), "last_offset": col("last_offset"),
            "ts": pc.if_else(pc.greater_equal(ts, 0), ts, pa.scalar(None, ts.type)),
            "max_timestamp": col("max_timestamp"), "compression": col("compression"),
            "crc": flag(pc.invert(col("crc_valid"))),
            "commit": flag(pc.equal(col("control_type"), "COMMIT")),
            "abort": flag(pc.equal(col("control_type"), "ABORT")),
            **{s: flag(pc.equal(severity, s)) for s in ("error", "warning", "info")},
            "code": pc.if_else(pc.not_equal(severity, "info"), col("code"), pa.scalar(None, pa.string())),
        })
        aggs = [("dir", "distinct"), ("size", "sum"), ("base_offset", "count"), ("record_count", "sum"),
                ("base_offset", "min"), ("last_offset", "max"), ("ts", "min"), ("max_timestamp", "max"),
                ("compression", "distinct"), ("crc", "sum"), ("commit", "sum"), ("abort", "sum"),
                ("error", "sum"), ("warning", "sum"), ("info", "sum"), ("code", "distinct")]
        grouped = table.group_by(keys).aggregate(aggs).to_pylist()
        names = [f"{c}_{a}" for c, a in aggs]
        for g in grouped:
            part = dict(zip(SUMMARY_FIELDS, (g[n] for n in names), strict=True))
            for k in _SETS:
                part[k] = [v for v in part[k] if v is not None]
            key = tuple(g[k] for k in keys)
            _merge(merged, key, part)
    for key, p in merged.items():
        yield json.dumps([list(key), {k: sorted(v) if k in _SETS else v for k, v in p.items()}])


def _summary(spark: SparkSession, out: str, clusters: dict[str, str] | None = None) -> list[dict]:
    """Per topic partition aggregates of the written batches and findings, as dicts (keys, then
    :data:`SUMMARY_FIELDS`), in the order of their keys (nulls first).

    One pass over the union of the batches and the findings (not a join, whose equality would never match the
    null topic of a flat layout's rows): each task aggregates its rows per topic partition
    (:func:`_partial_summaries`) and the driver merges the few partial summaries; no shuffle, no sort, one job
    of one stage. Open transactions and producers are the loader's (:func:`_loaded`), not counted here. With
    ``clusters`` (partition dir -> cluster, :func:`_clusters`), grouped by cluster first: one row per cluster's
    partition, never several clusters' copies summed.
    """
    # With the schema given: a clean input writes no findings file, and Spark cannot infer a schema from none.
    batches = spark.read.schema(BATCHES).parquet(_unglobbed(f"{out}/batches"))
    findings = spark.read.schema(FINDINGS).parquet(_unglobbed(f"{out}/findings"))
    keys = ["topic", "partition"]
    rows = batches.unionByName(findings.select(*keys, "file", "severity", "code"), allowMissingColumns=True)
    if clusters:
        lookup = F.create_map(*(F.lit(x) for kv in sorted(clusters.items()) for x in kv))
        rows = rows.withColumn("cluster", F.coalesce(  # a file's partition dir, or a finding's dir itself
            F.element_at(lookup, F.regexp_extract("file", r"^(.*)/[^/]*$", 1)), F.element_at(lookup, F.col("file"))))
        keys = ["cluster", *keys]
    rows = rows.select(  # a file's dir by Spark's own regex: the copies of the partition summed (``dirs``)
        *keys, F.regexp_extract("file", r"^(.*)/[^/]*$", 1).alias("dir"), "size", "base_offset", "record_count",
        "last_offset", "first_timestamp", "max_timestamp", "compression", "crc_valid", "control_type", "severity",
        "code")
    # Over the rows' RDD (mapInArrow would need pandas, which the spark extra does not install).
    schema = to_arrow_schema(rows.schema, timezone="UTC")
    merged: dict[tuple, dict] = {}
    for line in rows.rdd.mapPartitions(lambda it: _partial_summaries(_arrow_chunks(it, schema))).collect():
        key, part = json.loads(line)
        _merge(merged, tuple(key), part)
    found = []
    for key in sorted(merged, key=lambda k: tuple((v is not None, v) for v in k)):
        m = merged[key]
        found.append({**dict(zip(keys, key, strict=True)), **{
            k: len(m[k]) if k == "dirs" else sorted(m[k]) if k in _SETS else m[k] for k in SUMMARY_FIELDS}})
    return found


LOADED_FIELDS = ("log_start_offset", "log_end_offset", "high_watermark", "last_stable_offset", "open_transactions",
                 "first_open_offset", "producers")


def _load_dir(item: tuple[str | None, int, str]) -> tuple[str | None, int, dict]:
    """One partition dir loaded as the broker loads it (:func:`kafkatool.loader.load_partition`, Kafka's
    ``LogLoader``, ``UnifiedLog``'s high watermark and last stable offset, ``ProducerStateManager``): runs in a
    Spark task."""
    from kafkatool.loader import load_partition
    from kafkatool.spark.fs import is_url

    topic, partition, d = item
    if is_url(d):
        with tempfile.TemporaryDirectory(prefix="kafkatool-load-") as tmp:
            loaded = load_partition(_fetch_partition(d, Path(tmp)))
    else:
        loaded = load_partition(Path(d))
    return topic, partition, {
        "log_start_offset": loaded.log_start_offset, "log_end_offset": loaded.log_end_offset,
        "high_watermark": loaded.high_watermark if loaded.hw_checkpoint is not None else None,
        "last_stable_offset": loaded.last_stable_offset, "open": loaded.open_transactions,
        "producers": sorted(loaded.producers)}


def _fetch_partition(url: str, into: Path) -> Path:
    """A partition dir read through a URL (tiered storage, a copy in a bucket), copied with its log dir's broker files
    (offset checkpoints, the clean-shutdown marker) into ``into``, so that the loader reads it as a local dir: the
    bytes a load reads anyway (every segment), once, in the Spark task. Returns the local partition dir."""
    import posixpath

    from pyarrow import fs as pafs

    from kafkatool.filetypes import OFFSET_CHECKPOINT_NAMES
    from kafkatool.spark.fs import filesystem_of

    filesystem, inner = filesystem_of(url)
    inner = inner.rstrip("/")
    part = into / "logdir" / posixpath.basename(inner)
    part.mkdir(parents=True)

    def copy(infos: list, to: Path) -> None:
        for info in infos:
            if info.type == pafs.FileType.File:
                target = to / posixpath.basename(info.path)
                with filesystem.open_input_stream(info.path) as src, open(target, "wb") as dst:
                    while chunk := src.read(1 << 22):
                        dst.write(chunk)

    copy(filesystem.get_file_info(pafs.FileSelector(inner)), part)
    parent = posixpath.dirname(inner)
    copy(filesystem.get_file_info([posixpath.join(parent, n) for n in (*sorted(OFFSET_CHECKPOINT_NAMES),
                                                                         ".kafka_cleanshutdown")]), part.parent)
    return part


def _dir_of(path: str) -> str:
    """The partition dir of a file: a local path's parent, or a URL with its last path segment cut (what the URL
    carries besides the path, credentials and ``?options``, kept)."""
    from kafkatool.spark.fs import is_url

    if not is_url(path):
        return str(Path(path).parent)
    head, sep, query = path.partition("?")
    return head.rsplit("/", 1)[0] + sep + query


def _clusters(paths: list[str]) -> dict[str, str]:
    """Partition dir -> the cluster.id of its log dir's ``meta.properties`` ("-" without one), when the dirs hold
    two clusters or more; else empty (the summary as it always was). Local dirs only: a URL's has none here."""
    from kafkatool.smallfiles import read_meta_properties
    from kafkatool.spark.fs import is_url
    from kafkatool.spark.plan import plan

    found: dict[str, str] = {}
    for d in {_dir_of(p.path) for p in plan(paths) if isinstance(p.path, str) and not is_url(p.path)}:
        props = read_meta_properties(Path(d).parent)
        found[d] = props.cluster_id if props is not None and props.cluster_id else "-"
    return found if len(set(found.values())) > 1 else {}


def _loaded(spark: SparkSession, paths: list[str], clusters: dict[str, str] | None = None
            ) -> dict[tuple[str | None, str | None, int], dict]:
    """Per topic partition, what the broker holds after loading it (:func:`_load_dir`, one Spark task per few dirs):
    log start, LEO, high watermark (None without a checkpoint), last stable offset, open transactions (the oldest
    one's first offset is the first unstable offset) and producers with state. Over several copies of a partition
    (``dirs`` > 1): the lowest log start, high watermark and LSO, the highest LEO, the union of open transactions
    and producers. A partition dir read through a URL is copied into the task's temp dir first
    (:func:`_fetch_partition`). Keyed (cluster, topic, partition): the cluster from ``clusters`` (None without)."""
    from kafkatool.spark.plan import plan

    dirs = sorted({(p.topic, p.partition, _dir_of(p.path)) for p in plan(paths) if isinstance(p.path, str)},
                  key=lambda t: (t[0] or "", t[1], t[2]))
    if not dirs:
        return {}
    n = max(1, min(len(dirs), spark.sparkContext.defaultParallelism))
    merged: dict[tuple[str | None, str | None, int], dict] = {}
    loads = spark.sparkContext.parallelize(dirs, n).map(_load_dir).collect()  # in the order of dirs
    for (_t, _p, d), (topic, partition, got) in zip(dirs, loads, strict=True):
        cluster = (clusters or {}).get(d)
        m = merged.setdefault((cluster, topic, partition), {"open": {}, "producers": set()})
        for name, pick in (("log_start_offset", min), ("log_end_offset", max), ("high_watermark", min),
                           ("last_stable_offset", min)):
            values = [v for v in (m.get(name), got[name]) if v is not None]
            m[name] = pick(values) if values else None
        for pid, first in got["open"].items():
            m["open"][pid] = min(first, m["open"].get(pid, first))
        m["producers"].update(got["producers"])
    return {key: {**{k: m[k] for k in LOADED_FIELDS[:4]}, "open_transactions": len(m["open"]),
                  "first_open_offset": min(m["open"].values(), default=None), "producers": len(m["producers"])}
            for key, m in merged.items()}


def scan_paths(spark: SparkSession, paths: list[str], out: str | Path, *, records: bool = False,
               split_bytes: int = 0, pack_bytes: int = 0, deep: bool = False, mode: str = "overwrite",
               force: bool = False, progress: ProgressCallback | None = None) -> ScanResult:
    """Run the scan; ``paths`` are what the data source takes (files, dirs, globs, URLs).

    ``deep``: the findings also decompress and decode every record (``verify --deep``).
    ``split_bytes`` and ``pack_bytes`` are the data source's ``splitBytes`` and ``packBytes`` options
    (``pack_bytes`` for every level: small segments packed into fewer tasks, but at least as many as the
    session's default parallelism where the data allows; 0: one task per segment).

    ``progress(phase, tasks_done, tasks_total)`` is called as Spark tasks finish, phase by phase
    (``batches``, ``findings``, ``records`` when asked, ``summary``): once with ``(0, 0)`` as a phase
    starts, on each change seen (polled every ``POLL_SECONDS``, from a background thread), and a last
    time when it has ended, with done == total. A phase's total may change while it runs: it grows as
    Spark plans more stages (adaptive execution submits a query as several jobs) and loses the stages
    Spark ends up skipping (their shuffle output reused).
    """
    from ..safewrite.outpath import output_dir, output_file

    out = str(out)
    # a file, a device, a FIFO, a dangling link or (without ``force``) a dir holding anything is refused before Spark
    # writes anything
    output_dir(out, force)
    register(spark)
    run = uuid.uuid4().hex[:12]
    levels = [("batches", split_bytes), ("findings", 0)] + ([("records", split_bytes)] if records else [])
    for level, split in levels:
        with _phase(spark, run, level, progress):
            df = _reader(spark, level, paths, split, pack_bytes, deep)
            df.write.mode(mode).partitionBy("topic").parquet(f"{out}/{level}")

    with _phase(spark, run, "summary", progress):
        clusters = _clusters(paths)
        rows = _summary(spark, out, clusters)
        loaded = _loaded(spark, paths, clusters)
    result = ScanResult(out)
    for d in rows:
        d.update(loaded.get((d.get("cluster"), d["topic"], d["partition"]), dict.fromkeys(LOADED_FIELDS)))
        for k in ("dirs", "bytes", "batches", "records", "crc_failures", "committed", "aborted",
                  "open_transactions", "producers", "errors", "warnings", "info"):
            d[k] = int(d[k] or 0)
        d["codecs"] = d["codecs"] or []
        d["codes"] = d["codes"] or []
        result.partitions.append(d)
    total = {k: sum(p[k] for p in result.partitions)
             for k in ("bytes", "batches", "records", "crc_failures", "committed", "aborted", "open_transactions",
                       "errors", "warnings", "info")}
    total["partitions"] = len(result.partitions)
    result.total = total
    Path(out).mkdir(parents=True, exist_ok=True)
    summary = json.dumps({"partitions": result.partitions, "total": total}, indent=1)
    if "://" in out:
        Path(out, "summary.json").write_text(summary)
    else:
        with output_file(Path(out, "summary.json"), force=True) as fh:  # whole or not at all; a link to it is kept
            fh.write(summary.encode())
    return result


def stderr_lines(spark: SparkSession) -> Callable[[str], None]:
    """How to write a line to stderr so that the user sees it as stderr.

    Under spark-submit the Python driver is a child of the JVM (``PythonRunner``), which merges the child's
    stderr into its own stdout: a line printed to our stderr would land among the results. There the line
    goes to the JVM's own stderr instead, where Spark's logs go too.
    """
    import os
    import sys

    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # set by the JVM that launched this Python process
        return spark.sparkContext._jvm.java.lang.System.err.println
    return lambda line: print(line, file=sys.stderr, flush=True)


LOG4J2 = Path(__file__).with_name("log4j2.properties")
"""The log4j2 configuration of the JVMs the CLI starts: the loggers that warn on a successful run at ERROR."""

# The one line a JVM Spark starts prints that no logging setting reaches: Spark's launcher adds this module to
# every JVM it starts (``JavaModuleOptions``) and the JVM's module system announces it on stderr as it boots.
JVM_NOTICES = (b"WARNING: Using incubator modules: jdk.incubator.vector\n",)


def _log4j_env() -> dict[str, str]:
    """The environment that gives a JVM started here :data:`LOG4J2`: log4j2 reads ``LOG4J_CONFIGURATION_FILE`` as
    the property ``log4j2.configurationFile`` (``PropertiesUtil``: environment variables, below system
    properties). So nothing of the user's is replaced: a ``-Dlog4j2.configurationFile`` in their
    ``spark.driver.extraJavaOptions`` (spark-defaults.conf, ``--driver-java-options``) wins, their other Java
    options stay, and a log4j2 file of their own in Spark's conf dir (on the JVM's classpath) or the variable
    already set keeps this out."""
    import os

    if os.environ.get("LOG4J_CONFIGURATION_FILE") or not LOG4J2.is_file():  # not inside a zip (--py-files)
        return {}
    conf = os.environ.get("SPARK_CONF_DIR") or os.path.join(os.environ.get("SPARK_HOME", ""), "conf")
    if any(os.path.exists(os.path.join(conf, f"log4j2{ext}")) for ext in (".properties", ".xml", ".json", ".yaml")):
        return {}
    return {"LOG4J_CONFIGURATION_FILE": str(LOG4J2)}


@contextmanager
def _jvm_stderr() -> Iterator[None]:
    """Start a JVM inside this block to give it a stderr of its own: a pipe whose lines a thread copies to ours,
    all but :data:`JVM_NOTICES`. The JVM, and the Python workers it forks, keep the pipe for their life; this
    process's own stderr is put back when the block ends. Errors, Spark's logs at ERROR and worker tracebacks
    still reach the terminal, through the thread, as they come."""
    import os

    read_end, write_end = os.pipe()
    ours = os.dup(2)

    def copy() -> None:
        with open(read_end, "rb", buffering=0) as pipe:
            for line in iter(pipe.readline, b""):
                if line not in JVM_NOTICES:
                    try:
                        os.write(ours, line)
                    except OSError:  # our stderr is gone: nothing to show it on
                        pass

    threading.Thread(target=copy, name="kafkatool-jvm-stderr", daemon=True).start()
    os.dup2(write_end, 2)  # inherited by the JVM spark-submit's launcher starts
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(ours, 2)


def session(master: str = "local[*]", app_name: str = "kafkatool spark scan") -> tuple[SparkSession, bool]:
    """A SparkSession for the CLI (spark-submit's under spark-submit) and whether it is new.

    The caller stops only a session it started; an active one (a notebook's, a test's) is reused. A JVM started
    here keeps quiet the warnings a successful local run has (:data:`LOG4J2` unless the user configures log4j,
    :func:`_log4j_env`: the loopback hostname, no native Hadoop library), and ERROR once it is up, on a stderr
    without the module notice of :data:`JVM_NOTICES` (:func:`_jvm_stderr`).
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
    builder = SparkSession.builder.appName(app_name)
    for key, value in SESSION_CONF.items():
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    launches = not os.environ.get("PYSPARK_GATEWAY_PORT")  # else spark-submit's JVM is there already
    env = _log4j_env() if launches else {}
    os.environ.update(env)  # the JVM inherits it at launch; taken back once it is up
    try:
        with _jvm_stderr() if launches else nullcontext():
            spark = builder.getOrCreate()
    finally:
        for key in env:
            os.environ.pop(key, None)
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


__all__ = ["ProgressCallback", "ScanResult", "scan_paths", "session", "stderr_lines"]
