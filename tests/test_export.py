"""``dump --format csv|parquet``: records as rows without Spark, in the Spark records level's columns.

The reference is the Spark data source's own reader (``kafkatool.spark.read.read_partition`` at the records
level, pyarrow only: no JVM needed), on every record file of the Kafka-written and real broker corpus; the CSV
is read back and must give the same rows.
"""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path

import pyarrow.parquet as pq  # noqa: TID251 - the test compares with the Spark source's Arrow batches

from kafkatool.spark.plan import plan  # noqa: TID251
from kafkatool.spark.read import read_partition  # noqa: TID251

from .conftest import corpus_root

DIRS = ["kafka/logdir", "kafka/recovery/crc-flip/before", "kafka/recovery/torn-tail/before",
        "real/kafkajs_fixtures", "real/SharaWeil_kafka-0.11.0"]


def spark_rows(root: Path) -> list[tuple]:
    rows = []
    for part in plan([str(root)]):
        for rb in read_partition(part, "records"):
            for r in rb.to_pylist():
                rows.append((r["topic"], r["partition"], r["segment"], Path(r["file"]).name, r["offset"],
                             r["timestamp"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]],
                             r["batch_base_offset"], r["control_type"], r["crc_valid"], r["error"]))
    return sorted(rows, key=lambda r: (r[0] or "", r[1], r[3], r[4], r[12] or ""))


def parquet_rows(path: Path) -> list[tuple]:
    rows = [(r["topic"], r["partition"], r["segment"], Path(r["file"]).name, r["offset"], r["timestamp"], r["key"],
             r["value"], [(h["key"], h["value"]) for h in r["headers"]], r["batch_base_offset"], r["control_type"],
             r["crc_valid"], r["error"]) for r in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda r: (r[0] or "", r[1], r[3], r[4], r[12] or ""))


def csv_rows(path: Path) -> list[tuple]:
    def b(v: str) -> bytes | None:
        return None if v == "" else base64.b64decode(v)

    with open(path, newline="") as fh:
        rows = [(r["topic"] or None, int(r["partition"]), None if r["segment"] == "" else int(r["segment"]),
                 Path(r["file"]).name, int(r["offset"]), int(r["timestamp"]), b(r["key"]), b(r["value"]),
                 [(k, None if v is None else base64.b64decode(v)) for k, v in json.loads(r["headers"])],
                 int(r["batch_base_offset"]), r["control_type"] or None, r["crc_valid"] == "true", r["error"] or None)
                for r in csv.DictReader(fh)]
    return sorted(rows, key=lambda r: (r[0] or "", r[1], r[3], r[4], r[12] or ""))


def test_parquet_and_csv_rows_equal_the_spark_records_level(tmp_path: Path, run_cli) -> None:
    for rel in DIRS:
        root = corpus_root() / rel
        want = spark_rows(root)
        assert want, rel
        name = rel.replace("/", "_")  # a new file each: --out refuses an existing one without --force
        pq_out, csv_out = tmp_path / f"{name}.parquet", tmp_path / f"{name}.csv"
        p = run_cli("dump", "-f", "parquet", "--out", pq_out, root)
        assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr
        assert parquet_rows(pq_out) == want, rel
        p = run_cli("dump", "-f", "csv", "--out", csv_out, root)
        # a CSV cell cannot tell an empty key or value from a null one: both are empty
        assert csv_rows(csv_out) == [(*r[:6], r[6] or None, r[7] or None, *r[8:]) for r in want], rel
        if any(r[12] for r in want):  # damage: findings on stderr, rows still written
            assert "ERROR" in p.stderr and p.returncode == 1


def test_csv_to_stdout_with_filters_and_values(tmp_path: Path, run_cli) -> None:
    part = corpus_root() / "kafka/logdir/headers-0"
    p = run_cli("dump", "-f", "csv", "--values", "text", "--header", "a=dup", part)
    rows = list(csv.DictReader(p.stdout.splitlines()))
    assert p.returncode == 0 and [(r["key"], r["offset"]) for r in rows] == [("k", "0"), ("k", "5")]
    assert rows[0]["topic"] == "headers"
    assert json.loads(rows[0]["headers"]) == [["a", "1"], ["b", None], ["c", ""], ["a", "dup"]]
    assert run_cli("dump", "-f", "parquet", part).returncode == 2  # parquet needs --out
    assert run_cli("dump", "--out", tmp_path / "x", part).returncode == 2  # --out is for csv/parquet
