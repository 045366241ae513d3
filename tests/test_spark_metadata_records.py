"""The Spark data source's ``decode`` option on ``__cluster_metadata`` and ``__remote_log_metadata``: the same
decoded objects as ``dump --decode auto`` gives, record by record (a real ``local[2]`` session).

The partitions are built at test time from every record type and version of Kafka's schemas (as
``test_metadata_records`` builds them); Spark's ``decoded`` struct carries ``fields`` and ``data`` as JSON strings,
which are read back before comparing. A metadata log's KRaft control records are decoded in both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.formats import metadata_records as mr

from .clirun import cli
from .test_metadata_records import control_records, every_record, write_partition

pytestmark = pytest.mark.spark

JSON_COLUMNS = ("fields", "data")


def _dumped(part: Path) -> dict[int, dict]:
    result = cli("dump", "--decode", "auto", "-f", "jsonl", part)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return {o["offset"]: o["decoded"] for o in result.jsonl() if o["type"] == "record"}


def _spark_rows(spark, decode: str, part: Path) -> dict[int, dict]:
    rows = spark.read.format("kafka-log").option("decode", decode).load(str(part)).collect()
    assert all(r["decode_error"] is None for r in rows)
    out = {}
    for r in rows:
        d = r["decoded"].asDict()
        out[r["offset"]] = {k: json.loads(v) if k in JSON_COLUMNS and v is not None else v for k, v in d.items()}
    return out


@pytest.mark.parametrize(("topic", "decode", "schemas"), [
    ("__cluster_metadata", "cluster-metadata", mr.metadata_schemas),
    ("__remote_log_metadata", "remote-log-metadata", mr.remote_log_metadata_schemas),
])
def test_decode_option_equals_dump_decode_auto(spark, tmp_path: Path, topic: str, decode: str, schemas) -> None:
    """Every record the schemas declare, and in a metadata log each KRaft control record (``LeaderChangeMessage``,
    ``SnapshotHeaderRecord``...: dump gives it ``record`` and ``data`` only, Spark the struct's other fields null)."""
    records = every_record(schemas())
    controls = control_records() if decode == "cluster-metadata" else []
    part = tmp_path / f"{topic}-0"
    write_partition(part, [mr.build_framed(schemas(), n, v, value) for n, v, value in records],
                    [c[2] for c in controls])
    dumped = _dumped(part)
    got = _spark_rows(spark, decode, part)
    assert len(got) == len(records) + len(controls) == len(dumped)
    for offset, want in dumped.items():
        assert {k: got[offset][k] for k in want} == want, offset
        assert all(v is None for k, v in got[offset].items() if k not in want), offset
    assert {d["record"] for d in got.values()} == set(schemas().values()) | {c[0] for c in controls}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """``fixtures/generate.py --schemas``: every record type and value version of the coordinator schemas; the
    generator module and the log dir."""
    import importlib.util

    from .conftest import PROJECT_ROOT

    spec = importlib.util.spec_from_file_location("fixtures_generate", PROJECT_ROOT / "fixtures" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    out = tmp_path_factory.mktemp("schemas") / "logdir"
    generate.schemas(out)
    return generate, out


@pytest.mark.parametrize(("topic", "decode"), [
    ("__consumer_offsets", "consumer-offsets"),
    ("__transaction_state", "transaction-state"),
    ("__share_group_state", "share-group-state"),
])
def test_coordinator_records_equal_dump_decode_auto(spark, generated, topic: str, decode: str) -> None:
    """Every field dump shows, Spark's ``decoded`` holds equal (``key``/``value`` as JSON text, read back); the
    struct's other fields (another record kind's) are null."""
    generate, logdir = generated
    part = logdir / f"{topic}-0"
    dumped = _dumped(part)
    rows = spark.read.format("kafka-log").option("decode", decode).load(str(part)).collect()
    got = {r["offset"]: (r["decoded"].asDict(recursive=True) if r["decoded"] else None, r["decode_error"])
           for r in rows}
    written = generate.schema_records(generate.SCHEMA_TOPICS[topic])
    assert len(got) == len(dumped) == len(written)
    names = set()
    for offset, want in dumped.items():
        have, error = got[offset]
        assert error is None and have is not None, (offset, error)
        for k in ("key", "value"):
            if have[k] is not None:
                have[k] = json.loads(have[k])
        assert {k: have[k] for k in want} == want, offset
        assert all(v is None for k, v in have.items() if k not in want), offset
        names.add(want["record"])
    assert names == {name for _type, name, _version, _key, _value, _fields in written}  # every record type
