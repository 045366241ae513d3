"""Every ``__cluster_metadata`` and ``__remote_log_metadata`` record type and version, decoded by its schema name
with every field, from the command line.

The records are built at test time by the compiler from Kafka's JSON schemas (``formats.kafka_schema.example``:
deterministic values; several seeds give nulls, empty and full arrays, tagged fields absent and present), framed
as ``AbstractApiMessageSerde`` writes them (``formats.metadata_records``), and appended to a partition by the
project's writer (``kafkatool.logwriter``); ``dump --decode auto -f jsonl`` must give each one back by name,
field for field. The KRaft control records of a metadata log (``LeaderChangeMessage``, ``SnapshotHeaderRecord``,
``SnapshotFooterRecord``, ``KRaftVersionRecord``, ``VotersRecord``) likewise.
"""

from __future__ import annotations

import json
from pathlib import Path

from kafkatool.build import RecordSpec, record_batch
from kafkatool.formats import kafka_schema as ks
from kafkatool.formats import metadata_records as mr
from kafkatool.formats.constants import CONTROL_TYPES
from kafkatool.formats.control import ControlRecordKey
from kafkatool.logwriter import PartitionWriter

from .clirun import cli

SEEDS = (1, 2, 3, 4, 5)
CONTROL_IDS = {name: i for i, name in CONTROL_TYPES.items()}
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # the topic the timeline tests' records name


def every_record(schemas: dict[int, str]) -> list[tuple[str, int, dict]]:
    """(schema name, version, value) of every type and valid version, one per seed."""
    return [(name, v, ks.example(name, v, seed)) for _t, name in sorted(schemas.items())
            for v in ks.valid_versions(name) for seed in SEEDS]


def write_partition(path: Path, values: list[bytes], controls: list[bytes] = ()) -> None:
    """A partition of ``values`` (one batch), then one control batch per KRaft control record ``controls``
    (``ControlRecordKey`` + value), as a broker appends them."""
    topic = path.name.rsplit("-", 1)[0]
    with PartitionWriter(path, topic=topic, partition=0, topic_id=bytes(range(1, 17))) as w:
        offset = 0
        if values:
            w.append(record_batch(0, [RecordSpec(None, v, 1_700_000_000_000 + i) for i, v in enumerate(values)]))
            offset = len(values)
        for i, (key, value) in enumerate(controls):
            w.append(record_batch(offset + i, [RecordSpec(key, value, 1_700_000_000_000)], control=True))


def control_records() -> list[tuple[str, dict, tuple[bytes, bytes]]]:
    """(schema name, value, (key, value bytes)) of each KRaft control record, at the version Kafka writes them."""
    out = []
    for control, name in mr.CONTROL_SCHEMAS.items():
        for seed in SEEDS:
            value = ks.example(name, mr.CONTROL_VERSION, seed)
            key = ControlRecordKey.build({"version": 0, "type": CONTROL_IDS[control]})
            out.append((name, value, (key, mr.build_control_value(control, value))))
    return out


def decoded_records(result) -> list[dict]:
    assert "Traceback" not in result.stderr, result.stderr
    return [o for o in result.jsonl() if o["type"] == "record"]


def test_every_metadata_record_decoded_by_name_with_every_field(tmp_path: Path) -> None:
    """Each metadata record type and version the schemas declare, and each KRaft control record, by its schema name
    with every field (``record`` and ``data``); today's shorthand (``name``, ``fields``) beside it."""
    records = every_record(mr.metadata_schemas())
    controls = control_records()
    assert len({(n, v) for n, v, _ in records}) >= 33 and "ClearElrRecord" in {n for n, _, _ in records}
    values = [mr.build_framed(mr.metadata_schemas(), n, v, value) for n, v, value in records]
    part = tmp_path / "__cluster_metadata-0"
    write_partition(part, values, [c[2] for c in controls])
    result = cli("dump", "--decode", "auto", "-f", "jsonl", part)
    assert result.returncode == 0, result.stderr
    got = decoded_records(result)
    assert len(got) == len(records) + len(controls)
    for (name, version, value), r in zip(records, got, strict=False):
        d = r["decoded"]
        assert (d["record"], d["name"], d["version"], d["decoded"]) == (name, name, version, True), r
        assert d["data"] == value, (name, version)
        assert d["fields"] is not None
    for (name, value, _kv), r in zip(controls, got[len(records):], strict=True):
        assert r["decoded"] == {"record": name, "data": value}, r


def test_every_remote_log_metadata_record_decoded_by_name(tmp_path: Path) -> None:
    """``__remote_log_metadata`` (KIP-405), as ``RemoteLogMetadataSerde`` frames it: ``--decode auto`` by the
    topic's name and ``--decode remote-log-metadata`` give every record by name with every field."""
    records = every_record(mr.remote_log_metadata_schemas())
    assert {n for n, _, _ in records} == {"RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord",
                                           "RemotePartitionDeleteMetadataRecord",
                                           "RemoteLogSegmentMetadataSnapshotRecord"}
    part = tmp_path / "__remote_log_metadata-0"
    write_partition(part, [mr.build_framed(mr.remote_log_metadata_schemas(), n, v, value)
                           for n, v, value in records])
    for choice in ("auto", "remote-log-metadata"):
        result = cli("dump", "--decode", choice, "-f", "jsonl", part)
        assert result.returncode == 0, result.stderr
        got = decoded_records(result)
        assert len(got) == len(records)
        for (name, version, value), r in zip(records, got, strict=True):
            types = mr.remote_log_metadata_schemas()
            assert r["decoded"] == {"record_type": next(t for t, n in types.items() if n == name),
                                    "version": version, "record": name, "data": value}, r
    text = cli("dump", "--decode", "auto", part)
    assert text.returncode == 0 and "record=RemoteLogSegmentMetadataRecord" in text.stdout, text.stderr


def _partition_change(**fields) -> bytes:
    value = {**ks.default_value("PartitionChangeRecord", 2), "topic_id": TOPIC_ID, "partition_id": 0, **fields}
    return mr.build_framed(mr.metadata_schemas(), "PartitionChangeRecord", 2, value)


def test_partition_change_with_directories(tmp_path: Path) -> None:
    """The tagged ``Directories`` every JBOD cluster writes: dump exited 70 (bytes is not JSON serializable)."""
    dirs = ["AQEBAQEBAQEBAQEBAQEBAQ", "AgICAgICAgICAgICAgICAg"]
    part = tmp_path / "__cluster_metadata-0"
    write_partition(part, [_partition_change(leader=2, isr=[2, 3], directories=dirs)])
    for fmt in ("jsonl", "text"):
        result = cli("dump", "--decode", "auto", "-f", fmt, part)
        assert result.returncode == 0, result.stderr
    d = decoded_records(cli("dump", "--decode", "auto", "-f", "jsonl", part))[0]["decoded"]
    assert d["fields"]["directories"] == dirs and d["data"]["directories"] == dirs
    assert d["data"]["leader"] == 2 and d["data"]["isr"] == [2, 3]


def test_newer_record_version_is_a_finding(tmp_path: Path) -> None:
    """A type or version newer than the schemas: a warning naming type and version, the record shown undecoded;
    never a crash. ``dump`` exits by ``--fail-on`` (default error: 0), ``metadata`` by its default (warning: 1)."""
    newest = max(ks.valid_versions("PartitionChangeRecord"))
    part = tmp_path / "__cluster_metadata-0"
    write_partition(part, [mr.frame(5, newest + 1) + b"\x00" * 21, mr.frame(4000, 0) + b"\x00"])
    result = cli("dump", "--decode", "auto", "-f", "jsonl", part)
    assert result.returncode == 0, result.stderr
    findings = [o for o in result.jsonl() if o["type"] == "finding"]
    assert [f["code"] for f in findings] == ["metadata-record-unknown"] * 2
    assert f"PartitionChangeRecord version {newest + 1}" in findings[0]["message"]
    assert "type 4000 version 0" in findings[1]["message"]
    assert [r["decoded"]["decoded"] for r in decoded_records(result)] == [False, False]
    assert cli("dump", "--decode", "auto", "--fail-on", "warning", part).returncode == 1
    meta = cli("metadata", "--all", "-f", "jsonl", part)
    assert meta.returncode == 1 and "Traceback" not in meta.stderr
    assert [o["code"] for o in meta.jsonl() if o["type"] == "finding"] == ["metadata-record-unknown"] * 2

    remote = tmp_path / "__remote_log_metadata-0"
    write_partition(remote, [mr.frame(0, 1) + b"\x00", mr.frame(9, 0)])
    result = cli("dump", "--decode", "auto", "-f", "jsonl", remote)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    findings = [o for o in result.jsonl() if o["type"] == "finding"]
    assert [f["code"] for f in findings] == ["remote-log-metadata-unknown"] * 2
    assert "RemoteLogSegmentMetadataRecord version 1" in findings[0]["message"]
    assert "type 9 version 0" in findings[1]["message"]


def _metadata_log(path: Path) -> None:
    schemas = mr.metadata_schemas()
    topic = {"name": "t", "topic_id": TOPIC_ID}
    partition = {**ks.default_value("PartitionRecord", 2), "partition_id": 0, "topic_id": TOPIC_ID,
                 "replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1, "leader_epoch": 5, "partition_epoch": 7,
                 "eligible_leader_replicas": [], "last_known_elr": []}
    write_partition(path, [
        mr.build_framed(schemas, "TopicRecord", 0, topic),
        mr.build_framed(schemas, "PartitionRecord", 2, partition),
        _partition_change(isr=[1], eligible_leader_replicas=[2, 3]),        # 2 and 3 out of the ISR, into the ELR
        _partition_change(leader=-1, isr=[], eligible_leader_replicas=[2, 3], last_known_elr=[1]),
        mr.build_framed(schemas, "ClearElrRecord", 0, {"topic_name": ""}),  # every topic's ELR cleared
    ])


def test_metadata_timeline_shows_elr_and_applies_clear_elr(tmp_path: Path) -> None:
    part = tmp_path / "__cluster_metadata-0"
    _metadata_log(part)
    result = cli("metadata", "-f", "jsonl", part)
    assert "Traceback" not in result.stderr
    rows = [o for o in result.jsonl() if o["type"] == "partition_state"]
    assert [(r["record"], r["isr"], r.get("elr"), r.get("last_known_elr"), r["partition_epoch"]) for r in rows] == [
        ("PartitionRecord", [1, 2, 3], None, None, 7),  # empty ELRs: no columns until one names a replica
        ("PartitionChangeRecord", [1], [2, 3], [], 8),
        ("PartitionChangeRecord", [], [2, 3], [1], 9),
        ("ClearElrRecord", [], [], [], 10),
    ]
    text = cli("metadata", part).stdout
    assert "ELR" in text and "last known ELR" in text and "ClearElrRecord" in text
    every = cli("metadata", "--all", part).stdout
    assert "ClearElrRecord v0" in every and "type 28" not in every and "ELR 2,3" in every


def test_real_timeline_unchanged_without_elr(corpus: Path) -> None:
    """Real KRaft logs whose records carry no ELR (hiage) or only empty ones (a 3.7 trunk build's test run): no ELR
    column, no elr key (the timeline as before)."""
    real = corpus / "real"
    for part in (real / "hiage_kafka-raft" / "c5f680e5" / "kafka1" / "__cluster_metadata-0",
                 real / "apache_kafka_stray_core_data" / "023aafc3112" / "kafka-1168504093769635972" /
                 "__cluster_metadata-0"):
        result = cli("metadata", "-f", "jsonl", part)
        rows = [o for o in result.jsonl() if o["type"] == "partition_state"]
        assert rows and all(list(r)[-1] == "election" for r in rows)
        assert "ELR" not in cli("metadata", part).stdout
    carried = cli("dump", "--decode", "auto", "-f", "jsonl", part).jsonl()
    assert any(((o.get("decoded") or {}).get("fields") or {}).get("eligible_leader_replicas") == []
               for o in carried if o["type"] == "record")


# Shorthand fields that give the value in other words than the schema's field of that name (as ``metadata`` has
# always shown them): left out of the comparison below.
WORDED = {"RegisterBrokerRecord": {"endpoints"}, "RegisterControllerRecord": {"endpoints", "features"},
          "ConfigRecord": {"resource_type"}, "BrokerRegistrationChangeRecord": {"fenced", "in_controlled_shutdown"},
          "ZkMigrationStateRecord": {"zk_migration_state"}}
# Shorthand fields under another name than the schema's (``FenceBrokerRecord.json``: Id, Epoch)
RENAMED = {"FenceBrokerRecord": {"broker_id": "id", "broker_epoch": "epoch"},
           "UnfenceBrokerRecord": {"broker_id": "id", "broker_epoch": "epoch"}}


def test_shorthand_fields_equal_the_schema_fields(corpus: Path) -> None:
    """The hand-written metadata declarations of ``formats/internal_topics.py`` (the timeline's fast path) read
    what the compiled schemas read: each shorthand field equals the schema's field of that name, on every
    generated record and on every real metadata record of the corpus."""
    from kafkatool.internal.common import file_records
    from kafkatool.internal.metadata import metadata_record

    values = [mr.build_framed(mr.metadata_schemas(), n, v, value)
              for n, v, value in every_record(mr.metadata_schemas())]
    real = [f for f in sorted((corpus / "real").rglob("__cluster_metadata-0/*")) if f.suffix in (".log", ".checkpoint")]
    for f in real:
        values += [item[1].value for item in file_records(f, str(f))
                   if isinstance(item, tuple) and item[1].control_type is None]
    compared = prerelease = 0
    for value in values:
        d = metadata_record(None, value)
        if d["data"] is None:  # PartitionRecord v1 as trunk builds of early 2024 wrote it: not the schema's v1
            assert (d["name"], d["version"]) == ("PartitionRecord", 1)
            prerelease += 1
            continue
        fields, data = json.loads(d["fields"]), json.loads(d["data"])
        shared = set(fields) - WORDED.get(d["record"], set())
        renamed = RENAMED.get(d["record"], {})
        assert {k: fields[k] for k in shared} == {k: data[renamed.get(k, k)] for k in shared}, d
        compared += 1
    assert len(real) > 20 and compared > 10_000 and prerelease > 0
