"""Options ``keyDecoder``/``valueDecoder`` on a real ``local[2]`` session: the records level's ``key_decoded`` /
``value_decoded`` JSON text and schema id columns equal what ``dump --value-decoder`` gives on the same topics
(written at test time by :mod:`tests.test_dump_payloads`' fixture), raw values kept where a payload does not decode.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_dump_payloads import BAD, TOPICS, compact, expected, logdir  # noqa: F401 - logdir: the fixture

pytestmark = pytest.mark.spark


def test_decoded_columns_equal_the_values_written(spark, logdir: Path, run_cli) -> None:  # noqa: F811
    for topic, (decoder, values) in TOPICS.items():
        part = str(logdir / f"{topic}-0")
        df = (spark.read.format("kafka-log").option("valueDecoder", decoder).option("key-decoder", "string")
              .option("packBytes", str(1 << 30)).option("minPartitions", "2").load(part))
        assert {"key_decoded", "key_schema_id", "value_decoded", "value_schema_id"} <= set(df.columns)
        rows = {r["offset"]: r for r in df.collect()}
        assert sorted(rows) == sorted(expected(topic)), topic
        for offset, (raw, want) in enumerate(values):
            r = rows[offset]
            assert r["value"] == (None if raw is None else bytearray(raw)) and r["value_schema_id"] is None
            assert r["value_decoded"] == (None if want is BAD or want is None else compact(want)), (topic, offset)
            assert r["key_decoded"] == json.dumps(f"k{offset}")
        cli = {line["offset"]: line.get("value_decoded") for line in
               run_cli("dump", "-f", "jsonl", "--value-decoder", decoder, part).jsonl() if line["type"] == "record"}
        assert {o: None if v is None else json.loads(v) for o, v in
                ((o, r["value_decoded"]) for o, r in rows.items())} == cli, topic
    # Spark SQL reads the fields of the text
    orders = (spark.read.format("kafka-log").option("valueDecoder", "json").load(str(logdir / "orders-0"))
              .where("get_json_object(value_decoded, '$.customer.id') = 42"))
    assert sorted(r["offset"] for r in orders.collect()) == [
        o for o, v in expected("orders").items() if isinstance(v, dict) and v["customer"]["id"] == 42]


def test_a_decoder_option_needs_the_records_level(spark, logdir: Path) -> None:  # noqa: F811
    with pytest.raises(Exception, match="need level records"):
        spark.read.format("kafka-log").option("valueDecoder", "int").option("level", "batches").load(
            str(logdir / "ints-0")).collect()
    with pytest.raises(Exception, match="valueDecoder must be one of"):
        spark.read.format("kafka-log").option("valueDecoder", "int32").load(str(logdir / "ints-0")).collect()


def test_one_subject_per_topic_gives_a_struct_column_equal_to_the_decoded_values(spark, tmp_path: Path,
                                                                                  run_cli, caplog) -> None:
    """The generator's Avro topic (two versions of one subject, merged) and JSON Schema topic get ``value_struct``,
    typed from the writer schemas, its fields the values ``dump --value-decoder auto`` gives (fields a row's schema
    lacks are null); the Protobuf topic and a scan of two topics (several subjects) get none, and a warning why."""
    pytest.importorskip("fastavro")
    from pyspark.sql.types import MapType, StringType, StructType

    from .test_fixtures import gen

    out = tmp_path / "logdir"
    gen.payloads(out)

    def read(*parts: str):
        return spark.read.format("kafka-log").option("valueDecoder", "auto").load([str(out / p) for p in parts])

    for topic in ("orders", "clicks"):
        df = read(f"{topic}-0")
        assert "value_struct" in df.columns, topic
        struct = df.schema["value_struct"].dataType
        assert isinstance(struct, StructType)
        cli = {r["offset"]: r.get("value_decoded") for r in
               run_cli("dump", "-r", "-f", "jsonl", "--value-decoder", "auto", out / f"{topic}-0").jsonl()
               if r["type"] == "record"}
        rows = {r["offset"]: r["value_struct"] for r in df.select("offset", "value_struct").collect()}
        assert sorted(rows) == sorted(cli)
        for offset, want in cli.items():
            got = rows[offset]
            if not isinstance(want, dict):
                assert got is None, (topic, offset)
                continue
            got = got.asDict(recursive=True)
            assert set(got) == {f.name for f in struct.fields}  # a property the schema does not declare: not there
            assert _same(struct, got, want), (topic, offset, got, want)
    orders = read("orders-0").schema["value_struct"].dataType
    assert isinstance(orders["attrs"].dataType, MapType) and orders["total"].dataType == StringType()
    assert "value_struct" not in read("payments-0").columns
    assert "value_struct" not in read("orders-0", "clicks-0").columns
    # the warning why, from the data source's schema() (in Spark, a Python worker's: its stderr), here in-process
    from kafkatool.spark.options import payloads_of
    from kafkatool.spark.read import framed_schema_ids
    from kafkatool.spark.structs import struct_columns

    with caplog.at_level("WARNING", logger="kafkatool.spark"):
        for parts in (["payments-0"], ["orders-0", "clicks-0"]):
            paths = [str(out / p) for p in parts]
            payloads = payloads_of({"paths": json.dumps(paths), "valueDecoder": "auto"})
            assert struct_columns(framed_schema_ids(paths, ("value",)), payloads) == {}
    said = [r.getMessage() for r in caplog.records if r.name == "kafkatool.spark"]
    assert any("several messages (acme.payments.Header, acme.payments.Payment, acme.payments.Payment.Line)" in m
               for m in said) and any("several subjects" in m for m in said), said


def test_one_protobuf_message_per_topic_gives_a_struct_column_equal_to_the_decoded_values(spark, tmp_path: Path,
                                                                                           run_cli) -> None:
    """The generator's Protobuf payloads that name ``acme.payments.Payment`` (index array ``[1]``: int64, enum,
    repeated nested Line with Money, map, bytes, oneof; a bad body too), written alone to a partition of another log
    dir with the generator's ``_schemas`` as ``schemaLogDir``: ``value_struct`` typed from the message descriptor, each
    field what ``dump --value-decoder auto`` gives (the generator's ``payments-0`` mixes three messages: no struct, see
    above)."""
    pytest.importorskip("google.protobuf")
    from pyspark.sql.types import ArrayType, IntegerType, MapType, StringType, StructField, StructType

    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import LogDirWriter

    from .test_fixtures import gen

    registry = tmp_path / "registry"
    gen.payloads(registry)
    payments = [r["value"] for r in gen.payload_records()["payments"] if r["value"][5:7] == b"\x02\x02"]  # [1]
    assert len(payments) == 4
    single = tmp_path / "single"
    with LogDirWriter(single, cluster_id=gen.CLUSTER_ID, node_id=1) as disk:
        w = disk.partition("payments", 0, gen.PAYLOADS_TOPIC_IDS["payments"])
        for offset, value in enumerate(payments):
            w.append(record_batch(offset, [RecordSpec(b"k", value, gen.NIGHT + offset * gen.MINUTE)]))
    df = (spark.read.format("kafka-log").option("valueDecoder", "auto").option("schemaLogDir", str(registry))
          .load(str(single / "payments-0")))
    assert "value_struct" in df.columns
    struct = df.schema["value_struct"].dataType
    assert isinstance(struct, StructType)
    assert [f.name for f in struct.fields] == ["id", "account", "method", "lines", "labels", "signature", "iban",
                                               "card_token", "header", "refs"]
    line = struct["lines"].dataType
    assert isinstance(line, ArrayType) and isinstance(line.elementType, StructType)
    assert line.elementType["amount"].dataType == StructType([  # Money, from the referenced acme/common.proto
        StructField("currency", StringType()), StructField("units", StringType()), StructField("nanos", IntegerType())])
    assert isinstance(struct["labels"].dataType, MapType) and struct["refs"].dataType == ArrayType(StringType())
    cli = {r["offset"]: r.get("value_decoded") for r in
           run_cli("dump", "-r", "-f", "jsonl", "--value-decoder", "auto", "--schema-log-dir", registry,
                   single / "payments-0").jsonl() if r["type"] == "record"}
    rows = {r["offset"]: r["value_struct"] for r in df.select("offset", "value_struct").collect()}
    assert sorted(rows) == sorted(cli) == [0, 1, 2, 3]
    assert [o for o, v in cli.items() if v is None] == [3]  # the bad body
    for offset, want in cli.items():
        got = rows[offset]
        if want is None:
            assert got is None, offset
            continue
        got = got.asDict(recursive=True)
        assert set(got) == {f.name for f in struct.fields}
        assert _same(struct, got, want), (offset, got, want)
    assert rows[0]["account"] == "-9223372036854775808" and rows[1]["iban"] and rows[1]["card_token"] is None


def _same(t, got, want) -> bool:
    """``got`` (a struct column's value, as a dict) holds ``want`` (the CLI's decoded JSON) by the type ``t``: a
    string field holds a non-string value's JSON (an Avro union of several types), a field ``want`` lacks is null."""
    from pyspark.sql.types import ArrayType, MapType, StringType, StructType

    if want is None:
        return got is None
    if isinstance(t, StructType):
        return all(_same(f.dataType, got.get(f.name), want.get(f.name)) for f in t.fields)
    if isinstance(t, ArrayType):
        return len(got) == len(want) and all(_same(t.elementType, g, w) for g, w in zip(got, want, strict=True))
    if isinstance(t, MapType):
        return got.keys() == want.keys() and all(_same(t.valueType, got[k], want[k]) for k in want)
    if isinstance(t, StringType) and not isinstance(want, str):
        return json.loads(got) == want
    return got == want
