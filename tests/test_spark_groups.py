"""``kafkatool.spark.groups.group_states``: the group coordinator's replay on the ``kafka-log`` data source's
records, one task per ``__consumer_offsets`` partition dir, against what ``groups`` makes of the same log dir
(``fixtures/generate.py --groups``, generated at test time), committed offsets aside (``groups``' own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.internal.groups import group_states as cli_group_states

from .test_fixtures import gen  # fixtures/generate.py, loaded once

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

WITHOUT_COMMITS = ("committed_offsets", "lag", "topic_names")


def _comparable(d: dict) -> dict:
    """A group_state line without what only the CLI gives (commits, lag, topic names) and the member fields
    naming topic ids (the CLI names them from __cluster_metadata)."""
    d = {k: v for k, v in d.items() if k not in WITHOUT_COMMITS}
    d["members"] = [{k: v for k, v in m.items() if k != "assigned_topic_partitions"} for m in d["members"]]
    return d


def test_spark_group_states_are_the_clis(spark, tmp_path: Path):
    """Every group, deleted ones included, as the CLI's replay of the same partition holds it; the deleted group
    only with deleted=True; one task's rows per coordinator partition."""
    from kafkatool.spark.groups import group_states

    gen.groups(tmp_path / "groups")
    records = spark.read.format("kafka-log").option("level", "records").load(str(tmp_path / "groups"))
    got = {r["group_id"]: r for r in group_states(records, deleted=True).collect()}
    want = {v.group.group_id: v.as_dict() for v in cli_group_states([tmp_path / "groups"], deleted=True)}
    assert sorted(got) == sorted(want) == ["clicks-share", "legacy-app", "old-app", "orders-app", "orders-audit",
                                           "wordcount"]
    for group_id, row in got.items():
        assert _comparable(json.loads(row["json"])) == _comparable(want[group_id]), group_id
        assert (row["group_type"], row["epoch"], row["state"], row["deleted"]) == (
            want[group_id]["group_type"], want[group_id]["epoch"], want[group_id]["state"], want[group_id]["deleted"])
    assert got["orders-app"]["dir"].endswith("__consumer_offsets-0")
    assert "old-app" not in {r["group_id"] for r in group_states(records).collect()}
