"""Option ``decode``: records of Kafka's internal topics decoded into a ``decoded`` struct column.

Each record is decoded on its own by the CLI's decoders (``kafkatool.internal``); the tests replay the rows
with Spark SQL (the latest record per key wins, a tombstone deletes) and compare that with what the CLI's
own replays (``offsets``, ``txn-state``) make of the same partitions, and compare the metadata records
with ``metadata``'s record by record. The corpus holds real brokers' ``__consumer_offsets`` and
``__cluster_metadata`` partitions; ``__transaction_state`` partitions are built here, as in the CLI's tests.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.formats import metadata_records as mr
from kafkatool.internal import decode as internal_decode
from kafkatool.internal import metadata, transactions
from kafkatool.internal import offsets as internal_offsets
from kafkatool.model import Finding
from kafkatool.spark.plan import plan
from kafkatool.spark.read import read_partition
from kafkatool.spark.schema import DECODED
from kafkatool.walk import partition_dirs

from .conftest import PROJECT_ROOT, corpus_root
from .test_internal_topics import _commit, _commit_key, _s16, _txn_value, _write
from .test_metadata_records import every_record, write_partition

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

PACKED = {"packBytes": str(1 << 40), "minPartitions": "2"}  # hundreds of tiny partitions: two tasks


def _log_dirs_with(topic: str) -> list[str]:
    """Log dirs of the corpus holding ``topic`` partitions (not the goldens' mirror of them under expected/)."""
    root = corpus_root()
    found = sorted({str(d.parent) for d in root.glob(f"**/{topic}-*")
                    if d.is_dir() and d.relative_to(root).parts[0] != "expected"})
    assert found, topic
    return found


def _load(spark, decode: str, paths: list[str], **options: str):
    reader = spark.read.format("kafka-log").option("decode", decode)
    for k, v in {**PACKED, **options}.items():
        reader = reader.option(k, v)
    return reader.load(paths)


def test_consumer_offsets_rows_replay_to_what_offsets_finds(spark):
    """Latest offset_commit per key (per coordinator partition dir), unless a tombstone: the CLI's replay."""
    from pyspark.sql import functions as F

    logdirs = _log_dirs_with(internal_offsets.OFFSETS_TOPIC)
    df = _load(spark, "consumer-offsets", logdirs).where(f"topic = '{internal_offsets.OFFSETS_TOPIC}'")
    df = df.withColumn("dir", F.regexp_extract("file", r"^(.*)/[^/]+$", 1))
    assert df.where("decode_error is not null").count() == 0
    kinds = {r["kind"]: r["n"] for r in df.groupBy("decoded.kind").agg(F.count(F.lit(1)).alias("n")).collect()}
    assert kinds.get("offset_commit", 0) > 5000 and kinds.get("group_metadata", 0) > 700

    def latest(kind: str, *keys: str):
        rows = df.where(f"decoded.kind = '{kind}'").groupBy("dir", *(F.col(f"decoded.{k}").alias(k) for k in keys))
        last = rows.agg(F.max_by(F.struct("offset", "decoded"), "offset").alias("last"))
        return last.where("not last.decoded.tombstone").collect()

    commits = {(r["dir"], r["group"], r["topic"], r["partition"]):
               (r["last"]["decoded"]["offset"], r["last"]["decoded"]["commit_timestamp"], r["last"]["offset"])
               for r in latest("offset_commit", "group", "topic", "partition")}
    groups = {(r["dir"], r["group"]): (r["last"]["decoded"]["generation"], r["last"]["decoded"]["leader"],
                                       len(r["last"]["decoded"]["members"]), r["last"]["offset"])
              for r in latest("group_metadata", "group")}

    want_commits, want_groups = {}, {}
    for part in partition_dirs(logdirs):
        if part.topic != internal_offsets.OFFSETS_TOPIC:
            continue
        for item in internal_offsets.consumer_offsets_partition(part.files, part.display):
            if isinstance(item, internal_offsets.CommittedOffset):
                want_commits[(str(part.path), item.group, item.topic, item.partition)] = (
                    item.offset, item.commit_timestamp, item.log_offset)
            elif isinstance(item, internal_offsets.GroupState):
                want_groups[(str(part.path), item.group)] = (item.generation, item.leader, len(item.members),
                                                             item.log_offset)
            else:
                assert item.severity == "info", item  # nothing undecodable in the corpus
    # thousands of commits and hundreds of group records, most overwritten or deleted by a tombstone
    assert len(want_commits) > 10 and len(want_groups) > 3
    assert df.where("decoded.tombstone and decoded.kind = 'group_metadata'").count() > 0
    assert commits == want_commits
    assert groups == want_groups


def test_cluster_metadata_rows_are_metadata_records(spark):
    """Record by record what ``metadata`` decodes (type, version, name, fields), KRaft snapshots included."""
    logdirs = _log_dirs_with(metadata.METADATA_TOPIC)
    rows = (_load(spark, "cluster-metadata", logdirs, includeSnapshots="true")
            .where(f"topic = '{metadata.METADATA_TOPIC}' and control_type is null").collect())
    got = {(r["file"], r["offset"]): (r["decoded"]["record_type"], r["decoded"]["version"], r["decoded"]["name"],
                                      r["decoded"]["decoded"], r["decoded"]["fields"]) for r in rows}
    assert all(r["decode_error"] is None for r in rows)
    want = {}
    for p in plan(logdirs, include_snapshots=True):
        if p.topic != metadata.METADATA_TOPIC:
            continue
        for item in metadata.metadata_file(Path(p.path), p.name):
            assert not isinstance(item, Finding), item
            _batch, rec, (rtype, version, name, fields) = item
            want[(p.name, rec.offset)] = (rtype, version, name, fields is not None,
                                          None if fields is None else json.dumps(fields))
    assert len(want) > 3000 and any(f.endswith(".checkpoint") for f, _ in want)
    assert got == want
    names = {v[2] for v in got.values() if v[3]}
    assert {"TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RegisterBrokerRecord"} <= names
    partition = next(json.loads(v[4]) for v in got.values() if v[2] == "PartitionRecord")
    assert {"topic_id", "partition_id", "leader", "isr", "replicas"} <= set(partition)


@pytest.fixture
def txn_logdir(tmp_path: Path) -> Path:
    """__transaction_state-20 as the CLI's txn-state test builds it, next to a data topic and a transactional
    __consumer_offsets commit (whose COMMIT marker is a control record)."""
    key = struct.pack(">h", 0)
    _write(tmp_path / "__transaction_state-20" / "00000000000000000000.log",
           record_batch(0, [RecordSpec(key + _s16("tx-a"), _txn_value(0, state=1), 1),
                            RecordSpec(key + _s16("tx-b"), _txn_value(1, state=1), 1)]),
           record_batch(2, [RecordSpec(key + _s16("tx-a"), _txn_value(1, state=4), 2),    # later wins
                            RecordSpec(key + _s16("tx-b"), None, 2),                     # expired: deleted
                            RecordSpec(key + _s16("tx-c"), b"\x00\x00\x01", 2),          # truncated
                            RecordSpec(None, b"\x00\x00", 2)]))                          # no key
    _write(tmp_path / "orders-0" / "00000000000000000000.log",
           record_batch(0, [RecordSpec(b"k", b"v", 1)] * 3))
    _write(tmp_path / "__consumer_offsets-0" / "00000000000000000000.log",
           record_batch(0, [RecordSpec(_commit_key("g", "orders", 0), _commit(3), 1)], producer_id=9,
                        producer_epoch=0, transactional=True),
           end_transaction_marker(1, True, producer_id=9, producer_epoch=0, coordinator_epoch=1, timestamp=2))
    return tmp_path


def test_transaction_state_rows(spark, txn_logdir):
    from pyspark.sql import functions as F

    df = _load(spark, "transaction-state", [str(txn_logdir)])
    rows = {(r["topic"], r["offset"], r["decoded"]["transactional_id"] if r["decoded"] else None): r
            for r in df.orderBy("topic", "offset").collect()}
    txn = [r for (t, _, _), r in rows.items() if t == transactions.TRANSACTION_TOPIC]
    assert len(txn) == 6
    errors = [r["decode_error"] for r in txn if r["decode_error"] is not None]
    assert len(errors) == 2 and any("no key" in e for e in errors) and any("TransactionLogValue" in e for e in errors)
    assert all(r["decoded"] is None for r in txn if r["decode_error"] is not None)
    a = rows[transactions.TRANSACTION_TOPIC, 2, "tx-a"]["decoded"]
    assert (a["producer_id"], a["producer_epoch"], a["timeout_ms"], a["state"], a["value_version"]) == (
        4000, 2, 60000, "CompleteCommit", 1)
    assert [(p["topic"], p["partition"]) for p in a["partitions"]] == [("orders", 0), ("orders", 3)]
    assert rows[transactions.TRANSACTION_TOPIC, 3, "tx-b"]["decoded"]["tombstone"] is True
    # other topics (a data topic, another internal topic and its control record): neither decoded nor errors
    others = [r for (t, _, _), r in rows.items() if t != transactions.TRANSACTION_TOPIC]
    assert len(others) == 5 and all(r["decoded"] is None and r["decode_error"] is None for r in others)

    # the latest value per id, unless a tombstone: txn-state's replay
    last = (df.where("decoded is not null").groupBy(F.col("decoded.transactional_id").alias("id"))
            .agg(F.max_by("decoded", "offset").alias("d")).where("not d.tombstone").collect())
    (part,) = [p for p in partition_dirs([txn_logdir]) if p.topic == transactions.TRANSACTION_TOPIC]
    want = [e for e in transactions.transaction_state_partition(part.files, part.display)
            if isinstance(e, transactions.TransactionLogEntry)]
    assert [(r["id"], r["d"]["state"], r["d"]["producer_id"]) for r in last] == [
        (e.transactional_id, e.state, e.producer_id) for e in want] == [("tx-a", "CompleteCommit", 4000)]


def test_control_records_and_a_flat_layout(txn_logdir, tmp_path):
    """A control record is not decoded; a segment outside any partition dir is decoded as the topic's."""
    (offsets,) = [p for p in plan([str(txn_logdir)]) if p.topic == internal_offsets.OFFSETS_TOPIC]
    rows = [r for rb in read_partition(offsets, "records", decode="consumer-offsets") for r in rb.to_pylist()]
    assert [(r["control_type"], r["decoded"] and r["decoded"]["kind"], r["decode_error"]) for r in rows] == [
        (None, "offset_commit", None), ("COMMIT", None, None)]
    flat = tmp_path / "flat"
    flat.mkdir()
    src = txn_logdir / "__transaction_state-20" / "00000000000000000000.log"
    (flat / src.name).write_bytes(src.read_bytes())
    (part,) = plan([str(flat)])
    assert part.topic is None
    decoded = [r["decoded"] for rb in read_partition(part, "records", decode="transaction-state")
               for r in rb.to_pylist()]
    assert [d and d["transactional_id"] for d in decoded] == ["tx-a", "tx-b", "tx-a", "tx-b", None, None]


def test_decoders_fill_exactly_the_declared_fields(txn_logdir):
    """Each per-record decoder's dict keys are the struct's fields (Arrow would drop an undeclared key)."""
    seen: dict[str, set] = {name: set() for name in DECODED}
    remote = txn_logdir / "__remote_log_metadata-0"  # every record type and version of the storage schemas
    write_partition(remote, [mr.build_framed(mr.remote_log_metadata_schemas(), n, v, value)
                             for n, v, value in every_record(mr.remote_log_metadata_schemas())])
    paths = {"consumer-offsets": _log_dirs_with(internal_offsets.OFFSETS_TOPIC),
             "cluster-metadata": _log_dirs_with(metadata.METADATA_TOPIC),
             "transaction-state": [str(txn_logdir)],
             "share-group-state": [str(PROJECT_ROOT / "fixtures" / "incident")],
             "remote-log-metadata": [str(txn_logdir)]}
    for name, (topic, _decoder) in internal_decode.RECORD_DECODERS.items():
        for p in plan(paths[name]):
            if p.topic != topic:
                continue
            for rb in read_partition(p, "records", decode=name):
                for r in rb.to_pylist():
                    if r["control_type"] is None and r["decode_error"] is None:
                        fields, _ = internal_decode.decode_record(name, r["key"], r["value"])
                        assert set(fields) <= set(DECODED[name].fieldNames())
                        seen[name] |= set(fields)
    for name, struct_type in DECODED.items():
        assert seen[name] == set(struct_type.fieldNames()), name


def test_decode_option_checks(spark, txn_logdir):
    from pyspark.errors import PySparkException

    path = str(txn_logdir)
    df = spark.read.format("kafka-log").option("decode", "consumer-offsets").load(path)
    assert {"offset", "decoded", "decode_error"} <= set(df.columns)  # decode: records level by default
    plain = spark.read.format("kafka-log").option("level", "records").load(path)
    assert "decoded" not in plain.columns and df.count() == plain.count()
    with pytest.raises((PySparkException, Exception), match="decode must be one of"):
        spark.read.format("kafka-log").option("decode", "offsets").load(path).collect()
    with pytest.raises((PySparkException, Exception), match="needs level records"):
        spark.read.format("kafka-log").option("decode", "cluster-metadata").option("level", "batches").load(path)
