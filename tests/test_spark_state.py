"""``kafkatool.spark.state.hanging_transactions``: ``txns --hanging`` (KIP-664 find-hanging, KIP-890 v2 markers) over
the ``kafka-log`` data source's batch and record rows, against the CLI's ``hanging_transaction`` lines on the same
dirs (``fixtures/generate.py --hanging``, generated at test time; its docstring draws it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_fixtures import gen  # fixtures/generate.py, loaded once

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

MINUTE = 60_000


def _spark_hanging(spark, path: str, **kwargs) -> list[dict]:
    from kafkatool.spark.state import hanging_transactions

    rows = hanging_transactions(spark.read.format("kafka-log").option("level", "batches").load(path),
                                spark.read.format("kafka-log").option("level", "records").load(path),
                                **kwargs).collect()
    for r in rows:  # the columns are the line's
        d = json.loads(r["json"])
        assert (r["topic"], r["partition"], r["producer_id"], r["first_offset"], r["reason"], r["possibly"],
                r["path"]) == (d["topic"], d["partition"], d["producer_id"], d["first_offset"], d["reason"],
                               d["possibly"], d["path"])
    return sorted((json.loads(r["json"]) for r in rows), key=_order)


def _cli_hanging(run_cli, *args: object) -> list[dict]:
    proc = run_cli("txns", "--hanging", "-f", "jsonl", *args)
    assert proc.returncode == 1, proc.stderr
    return sorted((x for x in proc.jsonl() if x["type"] == "hanging_transaction"), key=_order)


def _order(d: dict) -> tuple:
    return d["path"], d["first_offset"], d["producer_id"]


def test_spark_hanging_transactions_are_the_clis(spark, tmp_path: Path, run_cli):
    """The four hanging transactions (one whose transactional id is CompleteCommit, two of producers without a
    transactional id, one of them in __consumer_offsets holding its group's commit pending, one whose coordinator
    lists another partition), neither the recent open one nor those a transactions v2 producer (KIP-890) ended with
    markers of bumped epochs, each line as the CLI's: at the newest time read, then at a --now and a
    --max-transaction-timeout that leave fewer."""
    gen.hanging(tmp_path / "hanging")
    path = str(tmp_path / "hanging")
    got = _spark_hanging(spark, path)
    assert got == _cli_hanging(run_cli, path)
    assert [(d["topic"], d["partition"], d["producer_id"], d["reason"]) for d in got] == [
        ("__consumer_offsets", 0, 9105, "no_transactional_id"), ("ledger", 0, 9100, "coordinator_completed"),
        ("ledger", 0, 9101, "no_transactional_id"), ("ledger", 1, 9104, "partition_not_in_transaction")]
    now = gen.NIGHT + 29 * MINUTE  # a millisecond before the newest record
    fewer = _spark_hanging(spark, path, now=now, max_timeout_ms=26 * MINUTE)
    assert fewer == _cli_hanging(run_cli, path, "--now", now, "--max-transaction-timeout", 26)
    assert [d["producer_id"] for d in fewer] == [9100, 9101]


def test_spark_without_transaction_state_only_possibly_hanging(spark, tmp_path: Path, run_cli):
    """The data partitions alone: no coordinator read, so those open too long are only possibly hanging, as the
    CLI says of the same dirs."""
    gen.hanging(tmp_path / "hanging")
    got = _spark_hanging(spark, str(tmp_path / "hanging" / "ledger-*"))
    assert got == _cli_hanging(run_cli, tmp_path / "hanging" / "ledger-0", tmp_path / "hanging" / "ledger-1")
    assert [(d["producer_id"], d["reason"], d["possibly"]) for d in got] == [
        (9100, "transaction_state_not_read", True), (9101, "transaction_state_not_read", True),
        (9104, "transaction_state_not_read", True)]
