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
