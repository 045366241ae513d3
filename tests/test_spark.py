"""The ``kafka-log`` Spark data source and ``kafkatool spark scan`` on a real ``local[2]`` session.

The data source must give what ``kafkatool dump --format jsonl`` gives for the same files (it runs the
same per-segment code), field by field; damaged corpus partitions give their findings as rows.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from kafkatool.dump import DumpOptions, dump_paths
from kafkatool.model import Batch, Record
from kafkatool.spark.plan import plan
from kafkatool.spark.read import read_partition

from .conftest import corpus_root

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

@pytest.fixture(scope="session")
def kafka_corpus() -> Path:
    return corpus_root() / "kafka"


def _b64(v):
    return None if v is None else base64.b64encode(v).decode("ascii")


def _dump(files: list[str]) -> tuple[dict, dict]:
    """Batches and records of each file, as ``dump --format jsonl --records`` gives them."""
    batches: dict[str, list[dict]] = {}
    records: dict[str, list[dict]] = {}
    for f in files:
        bs, rs = batches.setdefault(f, []), records.setdefault(f, [])
        base = None
        for item in dump_paths([f], DumpOptions(records=True)):
            if isinstance(item, Batch):
                bs.append(item.as_dict())
                base = item.base_offset
            elif isinstance(item, Record):
                d = item.as_dict()
                d["batch_base_offset"] = base
                rs.append(d)
    return batches, records


def test_batches_and_records_equal_dump_jsonl(spark, kafka_corpus):
    files = sorted({p.path for p in plan([str(kafka_corpus)])})
    assert len(files) > 50
    want_batches, want_records = _dump(files)

    rows = spark.read.format("kafka-log").load(str(kafka_corpus)).collect()
    got_batches: dict[str, list[dict]] = {f: [] for f in files}
    for r in sorted(rows, key=lambda r: (r.file, r.position)):
        d = r.asDict()
        assert d.pop("control_type") is None or d["control"]
        got_batches[d.pop("file")].append(d)
    n = 0
    for f in files:
        assert len(got_batches[f]) == len(want_batches[f]), f
        for got, want in zip(got_batches[f], want_batches[f], strict=True):
            for k, v in want.items():
                # dump's context fields (path; a marker's type and epoch) are not the batches level's columns
                if k not in ("type", "path", "control_type", "coordinator_epoch"):
                    assert got[k] == v, (f, want["position"], k)
            n += 1
    assert n == len(rows) > 1000

    rows = spark.read.format("kafka-log").option("level", "records").load(str(kafka_corpus)).collect()
    got_records: dict[str, list] = {f: [] for f in files}
    for r in rows:
        got_records[r.file].append(r)
    for f in files:
        assert all(r.error is None for r in got_records[f]), f  # nothing undecodable in kafka/ (see below)
        got = sorted(got_records[f], key=lambda r: (r.batch_base_offset, r.offset))
        want = sorted(want_records[f], key=lambda d: (d["batch_base_offset"], d["offset"]))
        assert len(got) == len(want), f
        for g, w in zip(got, want, strict=True):
            assert (g.offset, g.timestamp, _b64(g.key), _b64(g.value), g.batch_base_offset) == (
                w["offset"], w["timestamp"], w["key"], w["value"], w["batch_base_offset"]), (f, w["offset"])
            assert [[h.key, _b64(h.value)] for h in g.headers] == w["headers"]
            assert g.control_type == w.get("control_type")
            assert g.topic is not None and g.partition >= 0


def test_findings_of_damaged_partitions(spark, kafka_corpus):
    recovery = kafka_corpus / "recovery"
    df = spark.read.format("kafka-log").option("level", "findings").load(
        [f"{recovery}/crc-flip/before", f"{recovery}/torn-tail/before"])
    rows = {(Path(r.file).parts[-4], Path(r.file).name, r.code, r.position, r.severity) for r in df.collect()}
    assert ("crc-flip", "00000000000000000259.log", "crc-mismatch", 347, "error") in rows
    assert any(r[0] == "torn-tail" and r[2] == "torn-tail" and r[3] == 846 for r in rows), rows

    # the damaged batch stays a row of the batches level, flagged
    bad = spark.read.format("kafka-log").load(f"{recovery}/crc-flip/before").where("not crc_valid").collect()
    assert [(r.position, r.base_offset, r.topic, r.partition, r.segment) for r in bad] == [(347, 264, "rtopic", 0, 259)]


def test_records_level_flags_damage_and_never_drops_it(spark, kafka_corpus, tmp_path):
    """Records of a batch with a bad CRC have crc_valid false; records that cannot be decoded are a row with
    ``error`` (code and reason, as dump reports them) where they would have been, not missing rows."""
    import struct as st

    import crc32c

    from kafkatool.build import RecordSpec, record_batch

    flip = kafka_corpus / "recovery" / "crc-flip" / "before"
    rows = spark.read.format("kafka-log").option("level", "records").load(str(flip)).collect()
    (bad,) = spark.read.format("kafka-log").load(str(flip)).where("not crc_valid").collect()
    assert {r.offset for r in rows if not r.crc_valid} == set(range(bad.base_offset, bad.last_offset + 1)) != set()
    assert all(r.error is None for r in rows)

    # a gzip batch whose payload is damaged, with its CRC recomputed (as a buggy producer would write it)
    good = record_batch(0, [RecordSpec(b"k", b"v", 1)] * 2)
    broken = bytearray(record_batch(2, [RecordSpec(b"k", b"v" * 100, 1)] * 3, compression="gzip"))
    broken[-12:-4] = b"\xff" * 8
    broken[17:21] = st.pack(">I", crc32c.crc32c(bytes(broken[21:])))
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(good + bytes(broken) + record_batch(5, [RecordSpec(None, b"z", 1)]))
    kafkajs = corpus_root() / "real" / "kafkajs_fixtures" / "v0_recordbatch_zstd"
    df = spark.read.format("kafka-log").option("level", "records").load([str(part), str(kafkajs)])
    got = sorted((r.topic, r.offset, r.crc_valid, r.key, r.value, (r.error or "").split(":")[0]) for r in df.collect())
    assert got == [("fixture", 0, True, None, None, "record-invalid"),
                   ("t", 0, True, b"k", b"v", ""), ("t", 1, True, b"k", b"v", ""),
                   ("t", 2, True, None, None, "decompression-failed"), ("t", 5, True, None, b"z", "")]
    # the same codes, at the same batches, as dump --records reports
    dumped = [f for f in dump_paths([str(part), str(kafkajs)], DumpOptions(records=True)) if hasattr(f, "code")]
    assert sorted(f.code for f in dumped) == ["decompression-failed", "record-invalid"]
    assert all(r.error.endswith(next(f.message for f in dumped if r.error.startswith(f.code)))
               for r in df.where("error is not null").collect())


def test_cli_spark_scan_deep(spark, tmp_path):
    """``--deep``: the findings decode every record, as verify --deep (a payload that does not decompress,
    with a valid CRC, is only found that way)."""
    import json
    import struct as st

    import crc32c
    from typer.testing import CliRunner

    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.cli.main import app

    broken = bytearray(record_batch(0, [RecordSpec(b"k", b"v" * 100, 1)] * 3, compression="gzip"))
    broken[-12:-4] = b"\xff" * 8
    broken[17:21] = st.pack(">I", crc32c.crc32c(bytes(broken[21:])))
    part = tmp_path / "in" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(bytes(broken))

    def summary(*flags):
        done = CliRunner().invoke(app, ["spark", "scan", "-f", "jsonl", *flags, str(part), "--out",
                                        str(tmp_path / f"out{len(flags)}")])
        return done.exit_code, json.loads(done.stdout.splitlines()[0])

    shallow_code, shallow = summary()
    deep_code, deep = summary("--deep")
    assert "decompression-failed" not in shallow["codes"] and "decompression-failed" in deep["codes"]
    assert deep_code == 1 and deep["errors"] > shallow["errors"]
    assert shallow_code == (1 if shallow["errors"] else 0)
    from kafkatool.log_check import CheckOptions
    from kafkatool.model import Finding
    from kafkatool.verify import verify_paths
    from kafkatool.verify_files import VerifyOptions

    verdicts = {f.code for f in verify_paths([str(part)], VerifyOptions(CheckOptions(deep=True)))
                if isinstance(f, Finding) and f.severity != "info"}
    # verify --deep's per-segment verdicts (it also checks what only a whole partition dir shows)
    assert "decompression-failed" in verdicts and set(deep["codes"]) <= verdicts


def test_values_option_and_glob(spark, kafka_corpus):
    path = str(kafka_corpus / "logdir" / "codecs-*")
    binary = spark.read.format("kafka-log").option("level", "records").load(path)
    b64 = spark.read.format("kafka-log").option("level", "records").option("values", "base64").load(path)
    none = spark.read.format("kafka-log").option("level", "records").option("values", "none").load(path)
    assert dict(b64.dtypes)["value"] == "string" and "value" not in none.columns
    assert binary.count() == b64.count() == none.count() > 0
    assert {r.topic for r in binary.select("topic").distinct().collect()} == {"codecs"}
    got = sorted((r.file, r.offset, r.value) for r in b64.collect())
    want = sorted((r.file, r.offset, _b64(r.value)) for r in binary.collect())
    assert got == want


def test_split_by_index_never_shares_or_loses_a_batch(spark, kafka_corpus):
    path = str(kafka_corpus / "logdir")
    whole = plan([path])
    split = plan([path], split_bytes=2048)
    assert len(split) > len(whole)  # some segments were cut at indexed batch starts

    def positions(parts):
        return sorted((p.path, rb["position"][i].as_py()) for p in parts for rb in read_partition(p, "batches")
                      for i in range(rb.num_rows))

    assert positions(split) == positions(whole)
    df = spark.read.format("kafka-log").option("splitBytes", 2048).load(path)
    assert df.rdd.getNumPartitions() == len(split)
    assert df.count() == len(positions(whole))


def test_parquet_round_trip(spark, kafka_corpus, tmp_path):
    from pyspark.testing import assertDataFrameEqual

    df = spark.read.format("kafka-log").option("level", "records").load(str(kafka_corpus / "logdir"))
    df.write.mode("overwrite").partitionBy("topic").parquet(str(tmp_path / "records"))
    back = spark.read.parquet(str(tmp_path / "records")).select(*df.columns)
    assertDataFrameEqual(back, df)


def test_spark_scan_writes_parquet_and_summary(spark, kafka_corpus, tmp_path):
    from kafkatool.spark.scan import scan_paths

    logdir = str(kafka_corpus / "logdir")
    result = scan_paths(spark, [logdir, str(kafka_corpus / "recovery" / "crc-flip" / "before")],
                        tmp_path / "out", records=True)
    batches = spark.read.parquet(str(tmp_path / "out" / "batches"))
    assert batches.count() == sum(s["batches"] for s in result.partitions)
    assert spark.read.parquet(str(tmp_path / "out" / "records")).count() == sum(s["records"] for s in result.partitions)
    by = {(s["topic"], s["partition"]): s for s in result.partitions}
    rtopic = by["rtopic", 0]
    assert rtopic["crc_failures"] == 1 and rtopic["errors"] >= 1
    txn = by["txn", 0]
    assert txn["committed"] > 0 and txn["aborted"] > 0
    assert set(by["codecs", 0]["codecs"]) <= {"none", "gzip", "snappy", "lz4", "zstd"}
    assert (tmp_path / "out" / "summary.json").is_file()


def test_spark_scan_open_transactions_are_what_txns_finds(spark, kafka_corpus, tmp_path):
    """Per partition: the open transactions (and the oldest one's first offset, where the LSO stops) that
    the CLI's ``txns`` replay finds; a flat layout (null topic) is one summary row, not one per source."""
    from kafkatool.producers import Transaction
    from kafkatool.spark.scan import scan_paths
    from kafkatool.txns import txns_paths

    paths = [str(kafka_corpus / "logdir"), str(kafka_corpus / "recovery" / "torn-tail" / "before")]
    result = scan_paths(spark, paths, tmp_path / "out")
    got = {(p["topic"], p["partition"]): (p["open_transactions"], p["first_open_offset"]) for p in result.partitions}
    want: dict[tuple, list[int]] = {}
    for t in txns_paths(paths):
        if isinstance(t, Transaction) and t.outcome == "OPEN":
            want.setdefault((Path(t.partition).name.rpartition("-")[0], int(t.partition.rpartition("-")[2])),
                            []).append(t.first_offset)
    assert sum(len(v) for v in want.values()) >= 3 and max(len(v) for v in want.values()) >= 2
    assert {k: v for k, v in got.items() if v[0]} == {k: (len(v), min(v)) for k, v in want.items()}
    assert result.total["open_transactions"] == sum(len(v) for v in want.values())

    flat = tmp_path / "flat"
    flat.mkdir()
    for f in (kafka_corpus / "recovery" / "torn-tail" / "before" / "rtopic-0").glob("*.log"):
        (flat / f.name).write_bytes(f.read_bytes())
    (row,) = scan_paths(spark, [str(flat)], tmp_path / "flat-out").partitions
    torn = got["rtopic", 0]
    assert (row["topic"], row["partition"], row["open_transactions"], row["first_open_offset"]) == (None, -1, *torn)
    assert row["batches"] > 100 and row["errors"] >= 1  # the batches' and the findings' sides in one row


def test_spark_summary_takes_what_the_broker_holds_from_the_loader(spark, kafka_corpus, tmp_path):
    """Per partition dir, the summary's log start, log end offset, high watermark, last stable offset, open
    transactions and producers are the partition loader's (``LogLoader``, ``UnifiedLog.lastStableOffset``,
    ``ProducerStateManager``), as ``verify`` and ``replicas`` report them; crc-flip's log ends where Kafka's
    recovery ends it (264), not after the batches still on disk."""
    from kafkatool.loader import load_partition
    from kafkatool.spark.scan import scan_paths
    from kafkatool.walk import partition_dirs

    paths = [str(kafka_corpus / "logdir"), str(kafka_corpus / "recovery" / "crc-flip" / "before")]
    result = scan_paths(spark, paths, tmp_path / "out")
    by = {(p["topic"], p["partition"]): p for p in result.partitions}
    seen = 0
    for pd in partition_dirs(paths):
        loaded = load_partition(pd.path, pd.display, files=pd.files, logdir=pd.logdir)
        if not loaded.segments:
            continue
        row = by[pd.topic, pd.partition]
        assert row["dirs"] == 1
        opened = loaded.open_transactions
        assert (row["log_start_offset"], row["log_end_offset"], row["last_stable_offset"], row["open_transactions"],
                row["first_open_offset"], row["producers"]) == (
            loaded.log_start_offset, loaded.log_end_offset, loaded.last_stable_offset, len(opened),
            min(opened.values(), default=None), len(loaded.producers)), pd.display
        assert row["high_watermark"] == (loaded.high_watermark if loaded.hw_checkpoint is not None else None)
        seen += 1
    assert seen >= 10
    assert by["rtopic", 0]["log_end_offset"] == 264


def test_spark_scan_counts_the_dirs_it_sums(spark, kafka_corpus, tmp_path):
    """Replicas of one partition on three brokers are one summary row over three dirs, their batches summed."""
    from kafkatool.spark.scan import scan_paths

    replicas = kafka_corpus / "replicas" / "in-sync"
    result = scan_paths(spark, [str(replicas), str(kafka_corpus / "logdir" / "txn-0")], tmp_path / "out")
    by = {(p["topic"], p["partition"]): p for p in result.partitions}
    per_dir = [sum(rb.num_rows for rb in read_partition(part, "batches")) for part in plan([str(replicas)])]
    assert len(plan([str(replicas)])) >= 3
    assert (by["orders", 0]["dirs"], by["orders", 0]["batches"]) == (3, sum(per_dir))
    assert by["txn", 0]["dirs"] == 1


def test_spark_summary_keeps_each_clusters_partition_apart(spark, kafka_corpus, tmp_path):
    """Two clusters' log dirs (meta.properties' cluster.id) holding the same topic partition are two summary rows,
    each over its own dir, never one row over both (issue 26); one cluster's replicas stay one row (above)."""
    from kafkatool.spark.scan import scan_paths

    copies = {}
    for name, cluster in (("a", "clusterA"), ("b", "clusterB")):
        logdir = tmp_path / name
        shutil.copytree(kafka_corpus / "logdir" / "codecs-0", logdir / "codecs-0")
        (logdir / "meta.properties").write_text(f"version=1\nnode.id=1\ncluster.id={cluster}\n")
        copies[cluster] = sum(rb.num_rows for part in plan([str(logdir)]) for rb in read_partition(part, "batches"))
    result = scan_paths(spark, [str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "out")
    rows = {(p["cluster"], p["topic"], p["partition"]): p for p in result.partitions}
    assert set(rows) == {("clusterA", "codecs", 0), ("clusterB", "codecs", 0)}
    for cluster, batches in copies.items():
        row = rows[cluster, "codecs", 0]
        assert (row["dirs"], row["batches"]) == (1, batches)
        assert row["log_end_offset"] is not None  # the loader's figures found under the cluster's key too
    assert result.total["partitions"] == 2


def test_spark_scan_reports_task_progress_per_phase(spark, kafka_corpus, tmp_path):
    """``progress(phase, done, total)`` follows each phase's Spark tasks; the caller's job group survives."""
    import threading

    from kafkatool.spark.scan import scan_paths

    paths = [str(kafka_corpus / "logdir"), str(kafka_corpus / "recovery" / "crc-flip" / "before")]
    calls: dict[str, list[tuple[int, int]]] = {}
    lock = threading.Lock()  # called from the polling thread as well as this one

    def progress(phase: str, done: int, total: int) -> None:
        with lock:
            calls.setdefault(phase, []).append((done, total))

    sc = spark.sparkContext
    keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    before = {k: sc.getLocalProperty(k) for k in keys}
    sc.setJobGroup("callers-group", "the caller's own", True)
    try:
        scan_paths(spark, paths, tmp_path / "out", records=True, progress=progress)
        assert [sc.getLocalProperty(k) for k in keys] == ["callers-group", "the caller's own", "true"]
    finally:
        for k, v in before.items():
            sc.setLocalProperty(k, v)

    assert list(calls) == ["batches", "findings", "records", "summary"]
    for phase, seen in calls.items():
        assert all(0 <= done <= total for done, total in seen), phase
        done, total = seen[-1]
        assert done == total > 0, (phase, seen)
    # the batches phase is one task per input partition the data source plans
    n = len(plan(paths))
    assert n > 10
    assert calls["batches"][-1] == (n, n)
    assert max(total for _, total in calls["batches"]) == n


def test_cli_spark_scan(spark, kafka_corpus, tmp_path):
    """The command end to end (in process: it reuses the active session and leaves it running)."""
    import json

    from typer.testing import CliRunner

    from kafkatool.cli.main import app

    def kt(*args):
        return CliRunner().invoke(app, [str(a) for a in args])

    missing = kt("spark", "scan", tmp_path / "nope", "--out", tmp_path / "o")
    assert missing.exit_code == 2 and "no such file" in missing.output
    damaged = kafka_corpus / "recovery" / "crc-flip" / "before"
    done = kt("spark", "scan", "-f", "jsonl", "--records", damaged, "--out", tmp_path / "o")
    assert done.exit_code == 1, done.output[-2000:]  # an error finding (the CRC mismatch)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["topic"] == "rtopic" and lines[0]["crc_failures"] == 1 and "crc-mismatch" in lines[0]["codes"]
    assert lines[-1]["scope"] == "total" and lines[-1]["batches"] == 149 and lines[-1]["records"] == 269
    assert {p.name for p in (tmp_path / "o").iterdir()} >= {"batches", "records", "findings", "summary.json"}
    assert spark.range(3).count() == 3  # the session is still usable
    text = kt("spark", "scan", damaged, "--out", tmp_path / "o", "--force")  # its tables replaced
    assert text.exit_code == 1 and "rtopic-0" in text.stdout and "1 CRC failures" in text.stdout
    # stderr is no terminal here (a log file under spark-submit or a scheduler): progress as plain lines,
    # none of them on stdout
    tasks = len(plan([str(damaged)]))
    for phase in ("batches", "findings", "records", "summary"):
        assert f"kafkatool spark scan: {phase}: started" in done.stderr
    assert f"kafkatool spark scan: batches: {tasks}/{tasks} tasks done" in done.stderr
    assert "kafkatool spark scan" not in done.stdout


def test_progress_lines_are_rate_limited():
    from kafkatool.cli.spark_cmd import _ProgressLines

    lines: list[str] = []
    update = _ProgressLines(lines.append, every=3600)
    update("batches", 0, 0)
    for done in range(1, 50):
        update("batches", done, 100)  # within the interval: nothing
    update("batches", 100, 100)
    update("batches", 120, 120)  # the total grew: still only the last count is shown, once, at the end
    update("summary", 0, 0)
    update("summary", 3, 3)
    update.close()
    update.close()  # once only
    assert [line.split(" (")[0] for line in lines] == [
        "kafkatool spark scan: batches: started", "kafkatool spark scan: batches: 120/120 tasks done",
        "kafkatool spark scan: summary: started", "kafkatool spark scan: summary: 3/3 tasks done"]
    lines.clear()
    every = _ProgressLines(lines.append, every=0)
    every("records", 0, 0)
    every("records", 1, 4)
    every("records", 1, 4)  # unchanged: nothing
    every("records", 2, 4)
    assert lines[1:] == ["kafkatool spark scan: records: 1/4 tasks (0 s)",
                         "kafkatool spark scan: records: 2/4 tasks (0 s)"]

def test_urls_read_through_pyarrow_fs(kafka_corpus):
    """A URL goes through pyarrow.fs (as s3:// or hdfs:// would): same batches, records and scan findings."""
    part_dir = kafka_corpus / "recovery" / "torn-tail" / "before"
    local, remote = plan([str(part_dir)]), plan([part_dir.as_uri()])
    assert [(p.topic, p.partition, p.segment) for p in remote] == [(p.topic, p.partition, p.segment) for p in local]
    assert all(p.path.startswith("file://") for p in remote)
    for level in ("batches", "records"):
        def rows(parts, level=level):
            return [{k: v for k, v in row.items() if k != "file"}
                    for p in parts for rb in read_partition(p, level) for row in rb.to_pylist()]
        assert rows(remote) == rows(local) != []
    found = [(row["code"], row["position"]) for p in remote for rb in read_partition(p, "findings")
             for row in rb.to_pylist()]
    assert ("torn-tail", 846) in found


def test_file_urls_share_one_filesystem_and_decode_their_paths(tmp_path, kafka_corpus):
    """``file://`` URLs (and any store) resolve as ``from_uri`` resolves them, escapes included, through
    one filesystem per process."""
    from pyarrow import fs

    from kafkatool.spark.fs import filesystem_of

    odd = tmp_path / "log dir%1" / "orders-0"
    odd.mkdir(parents=True)
    src = kafka_corpus / "logdir" / "codecs-0" / "00000000000000000000.log"
    (odd / src.name).write_bytes(src.read_bytes())
    urls = [src.as_uri(), (odd / src.name).as_uri(), (kafka_corpus / "logdir").as_uri()]
    assert "%25" in urls[1] and "%20" in urls[1]
    filesystems = set()
    for url in urls:
        filesystem, inner = filesystem_of(url)
        assert inner == fs.FileSystem.from_uri(url)[1]
        filesystems.add(id(filesystem))
    assert len(filesystems) == 1
    remote = plan([(odd.parent).as_uri()])
    rows = [r for p in remote for rb in read_partition(p, "batches") for r in rb.to_pylist()]
    local = [r for p in plan([str(odd.parent)]) for rb in read_partition(p, "batches") for r in rb.to_pylist()]
    assert [{k: v for k, v in r.items() if k != "file"} for r in rows] == \
        [{k: v for k, v in r.items() if k != "file"} for r in local] != []
