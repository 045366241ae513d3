"""``kafkatool.spark.groups.group_states``: the group coordinator's replay on the ``kafka-log`` data source's
batch and record rows, one task per ``__consumer_offsets`` partition dir, against the ``group_state`` lines of
``groups -f jsonl`` on the same log dir (``fixtures/generate.py --groups``, generated at test time): the groups,
their committed offsets and lag; topic names aside (the CLI's, from ``__cluster_metadata``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_fixtures import gen  # fixtures/generate.py, loaded once

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark


def _comparable(d: dict) -> dict:
    """A group_state line without the topic names the CLI takes from __cluster_metadata (``topic_names``, the
    members' ``assigned_topic_partitions``)."""
    d = {k: v for k, v in d.items() if k != "topic_names"}
    d["members"] = [{k: v for k, v in m.items() if k != "assigned_topic_partitions"} for m in d["members"]]
    return d


def test_spark_group_states_are_the_clis(spark, tmp_path: Path, run_cli):
    """Every group, deleted ones included, as the CLI's replay of the same partition holds it, with the same
    committed offsets and lag, to the high watermark the log dir checkpoints (orders-0's set at 9, a record below
    its log end of 10: orders-app's commit at 7 lags 2, legacy-app's at 3 lags 6; orders-1's at 8 lags 0); the
    deleted group only with deleted=True; one task's rows per coordinator partition."""
    from kafkatool.spark.groups import group_states

    gen.groups(tmp_path / "groups")
    checkpoint = tmp_path / "groups" / "replication-offset-checkpoint"
    assert "orders 0 10\n" in checkpoint.read_text()
    checkpoint.write_text(checkpoint.read_text().replace("orders 0 10\n", "orders 0 9\n"))
    batches = spark.read.format("kafka-log").option("level", "batches").load(str(tmp_path / "groups"))
    records = spark.read.format("kafka-log").option("level", "records").load(str(tmp_path / "groups"))
    got = {r["group_id"]: r for r in group_states(batches, records, deleted=True).collect()}
    proc = run_cli("groups", "--deleted", "-f", "jsonl", tmp_path / "groups")
    assert proc.returncode == 0, proc.stderr
    want = {d["group_id"]: d for d in proc.jsonl() if d["type"] == "group_state"}
    assert sorted(got) == sorted(want) == ["clicks-share", "legacy-app", "old-app", "orders-app", "orders-audit",
                                           "wordcount"]
    for group_id, row in got.items():
        assert _comparable(json.loads(row["json"])) == _comparable(want[group_id]), group_id
        assert (row["group_type"], row["epoch"], row["state"], row["deleted"]) == (
            want[group_id]["group_type"], want[group_id]["epoch"], want[group_id]["state"], want[group_id]["deleted"])
    lines = {g: json.loads(r["json"]) for g, r in got.items()}
    assert (lines["orders-app"]["committed_offsets"], lines["orders-app"]["lag"]) == (
        {"orders-0": 7, "orders-1": 8}, {"orders-0": 2, "orders-1": 0})
    assert (lines["legacy-app"]["committed_offsets"], lines["legacy-app"]["lag"]) == ({"orders-0": 3}, {"orders-0": 6})
    assert got["orders-app"]["dir"].endswith("__consumer_offsets-0")
    assert "old-app" not in {r["group_id"] for r in group_states(batches, records).collect()}
