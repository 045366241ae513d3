"""``s3://`` log sets, read through pyarrow's S3 client from a real S3-compatible HTTP server.

The server is moto's (``moto.server.ThreadedMotoServer``): an in-memory object store speaking the S3
REST API over HTTP on localhost, which pyarrow's own (AWS SDK) client talks to exactly as to any
S3-compatible store (MinIO, Ceph, a tiered-storage bucket). Corpus files are uploaded to it from where
they lie; results must equal reading the same files from disk, with the ``file`` column showing the
clean ``s3://bucket/key`` (no credentials, no endpoint options).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.spark.plan import plan
from kafkatool.spark.read import read_partition

from .conftest import corpus_root

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

BUCKET = "kafka-tiered"
# Credentials in the URL's user info: they must reach the executors and never show in the rows.
USER = "AKIDKAFKATOOL:s3cr3t-kafkatool"


@pytest.fixture(scope="module")
def store():
    """(URL prefix with credentials and endpoint, query) of a bucket holding three corpus log sets."""
    from moto.server import ThreadedMotoServer
    from pyarrow import fs

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    query = f"?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    s3, _ = fs.FileSystem.from_uri(f"s3://{USER}@{BUCKET}{query}&allow_bucket_creation=true")
    s3.create_dir(BUCKET)
    kafka = corpus_root() / "kafka"
    uploads = {
        "cluster/logdir": kafka / "logdir",                       # a log dir: partition dirs of segments
        "cluster/damaged": kafka / "recovery" / "crc-flip" / "before",
        "flat": kafka / "logdir" / "txn-0",                       # a flat bucket layout: segments only
    }
    for prefix, src in uploads.items():
        for f in sorted(src.rglob("*")):
            if f.is_file():
                key = f"{BUCKET}/{prefix}/{f.relative_to(src).as_posix()}"
                with s3.open_output_stream(key) as out:
                    out.write(f.read_bytes())
    # a segment uploaded without its indexes
    with s3.open_output_stream(f"{BUCKET}/noindex/codecs-0/00000000000000000000.log") as out:
        out.write((kafka / "logdir" / "codecs-0" / "00000000000000000000.log").read_bytes())
    try:
        yield f"s3://{USER}@{BUCKET}", query, uploads
    finally:
        server.stop()


def _rows(parts, level: str) -> list[dict]:
    return [row for p in parts for rb in read_partition(p, level) for row in rb.to_pylist()]


def _without_file(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "file"} for row in rows]


@pytest.mark.parametrize("prefix", ["cluster/logdir", "cluster/damaged", "flat"])
def test_plan_and_read_equal_local(store, prefix):
    base, query, uploads = store
    local_dir = uploads[prefix]
    local = plan([str(local_dir)])
    remote = plan([f"{base}/{prefix}{query}"])
    assert len(remote) == len(local) > 0
    if prefix == "flat":  # no partition dir in the key: no topic, partition -1
        assert {(p.topic, p.partition) for p in remote} == {(None, -1)}
        assert [p.segment for p in remote] == [p.segment for p in local]
    else:
        assert [(p.topic, p.partition, p.segment) for p in remote] == [(p.topic, p.partition, p.segment)
                                                                         for p in local]
    for p in remote:  # every file keeps the endpoint and the credentials, for the executor that opens it
        assert p.path.startswith(f"{base}/{prefix}/") and p.path.endswith(query), p.path
        assert p.name.startswith(f"s3://{BUCKET}/{prefix}/") and "?" not in p.name and "@" not in p.name
    for level in ("batches", "records", "findings"):
        got, want = _rows(remote, level), _rows(local, level)
        assert len(got) == len(want) and (got or level == "findings")  # a clean log set has no findings
        if prefix == "flat":
            for row in [*got, *want]:
                row["topic"], row["partition"] = None, -1
        assert _without_file(got) == _without_file(want), level
        if level != "findings":
            assert {row["file"] for row in got} == {p.name for p in remote}
        # a finding names the file it is about (an index, say), as the bucket shows it
        assert {row["file"].rsplit("/", 1)[1] for row in got} == {row["file"].rsplit("/", 1)[1] for row in want}
        assert all(row["file"].startswith(f"s3://{BUCKET}/{prefix}/") for row in got)


def test_findings_of_a_damaged_partition_in_s3(store):
    base, query, _ = store
    found = _rows(plan([f"{base}/cluster/damaged{query}"]), "findings")
    crc = [r for r in found if r["code"] == "crc-mismatch"]
    assert len(crc) == 1 and crc[0]["file"] == f"s3://{BUCKET}/cluster/damaged/rtopic-0/00000000000000000259.log"
    assert "s3cr3t" not in json.dumps(found)


def test_spark_reads_s3_like_local(spark, store):
    base, query, uploads = store
    url = f"{base}/cluster{query}"
    local = [str(uploads["cluster/logdir"]), str(uploads["cluster/damaged"])]
    for level in ("batches", "records"):
        remote_df = spark.read.format("kafka-log").option("level", level).load(url)
        local_df = spark.read.format("kafka-log").option("level", level).load(local[0])
        local_df = local_df.unionByName(spark.read.format("kafka-log").option("level", level).load(local[1]))
        cols = [c for c in remote_df.columns if c != "file"]
        assert sorted(map(tuple, remote_df.select(*cols).collect())) == \
            sorted(map(tuple, local_df.select(*cols).collect())), level
        files = {r.file for r in remote_df.select("file").distinct().collect()}
        assert files and all(f.startswith(f"s3://{BUCKET}/cluster/") for f in files)
    bad = spark.read.format("kafka-log").load(url).where("not crc_valid").collect()
    assert [(r.topic, r.partition) for r in bad] == [("rtopic", 0)]


def test_cli_spark_scan_of_a_bucket(spark, store, tmp_path):
    """``kafkatool spark scan s3://...`` gives the summary the local copy gives (in process, reusing the session)."""
    from typer.testing import CliRunner

    from kafkatool.cli.main import app

    base, query, uploads = store

    def summary(*paths: str | Path, out: Path) -> list[dict]:
        res = CliRunner().invoke(app, ["spark", "scan", "-f", "jsonl", "--records", *map(str, paths),
                                       "--out", str(out)])
        assert res.exit_code == 1, res.output[-2000:]  # the damaged partition's CRC mismatch
        return [json.loads(line) for line in res.stdout.splitlines()]

    remote = summary(f"{base}/cluster{query}", out=tmp_path / "s3")
    local = summary(uploads["cluster/logdir"], uploads["cluster/damaged"], out=tmp_path / "local")
    assert remote == local
    assert remote[-1]["scope"] == "total" and remote[-1]["batches"] > 100 and remote[-1]["crc_failures"] == 1


@pytest.mark.parametrize("level", ["batches", "findings"])
def test_control_batches_cost_no_request_of_their_own(store, caplog, level):
    """A transactional segment's commit/abort markers are typed from the bytes the scan already fetched:
    an object store is asked for each segment in a few window-sized ranges, not once per control batch."""
    import logging

    base, query, _ = store
    parts = [p for p in plan([f"{base}/flat{query}"]) if p.segment == 0]
    (part,) = parts
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        rows = _rows(parts, level)
    controls = sum(1 for r in _rows(parts, "batches") if r["control"])
    assert controls >= 20  # the segment holds many markers: a request each would show
    key = part.name.split(f"{BUCKET}/", 1)[1]
    gets = [r.getMessage() for r in caplog.records if f"GET /{BUCKET}/{key} " in r.getMessage()]
    assert 1 <= len(gets) <= 3, gets
    if level == "batches":
        assert {r["control_type"] for r in rows if r["control"]} == {"COMMIT", "ABORT"}


def test_a_missing_index_is_named_as_the_bucket_would_name_it(store):
    base, query, _ = store
    found = _rows(plan([f"{base}/noindex{query}"]), "findings")
    missing = {r["code"]: r["file"] for r in found if "-missing" in r["code"]}
    prefix = f"s3://{BUCKET}/noindex/codecs-0/00000000000000000000"
    # codecs-0 spans more than one index interval: the -large codes (findings.py)
    assert missing == {"index-missing-large": f"{prefix}.index", "timeindex-missing-large": f"{prefix}.timeindex"}


def test_executors_share_one_client_per_store(store):
    """Every file of a bucket is opened through one S3 client per process, at the very path ``from_uri``
    gives (a new client per file walks the credential chain and, without ``region=``, asks AWS for the
    bucket's region: a request per file)."""
    from pyarrow import fs

    from kafkatool.spark import fs as urlfs
    from kafkatool.spark.fs import filesystem_of

    base, query, _ = store
    parts = plan([f"{base}/cluster{query}", f"{base}/flat{query}"])
    urlfs._STORES.clear()  # what a fresh executor process starts with
    assert _rows(parts, "findings") and _rows(parts[:4], "batches")  # the executors' own opening path
    (shared,) = urlfs._STORES.values()  # every segment and index of the bucket: one client
    assert shared is not None and shared[1] == BUCKET
    urls = [u for p in parts for u in (p.path, p.index, p.timeindex, p.txnindex) if u is not None]
    assert len(urls) > 20
    clients = {id(shared[0])}
    for url in urls:
        filesystem, inner = filesystem_of(url)
        expected_fs, expected_inner = fs.FileSystem.from_uri(url)
        assert (filesystem.type_name, inner) == (expected_fs.type_name, expected_inner)
        clients.add(id(filesystem))
        with filesystem.open_input_file(inner) as fh:
            assert fh.size() == expected_fs.get_file_info(expected_inner).size
    assert len(clients) == 1
    # another store (other credentials: another client), and the first one still shared
    other = urls[0].replace(USER, "AKIDOTHER:other-secret")
    assert id(filesystem_of(other)[0]) not in clients
    assert id(filesystem_of(urls[-1])[0]) in clients
