"""``groups``: every group of ``__consumer_offsets`` as the group coordinator rebuilds it at load
(``GroupMetadataManager.replay``), on the log dir ``fixtures/generate.py --groups`` writes (its docstring draws it),
generated at test time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.internal.common import kafka_uuid
from kafkatool.internal.groups import group_states, group_states_bytes
from kafkatool.logwriter import LogDirWriter

from .test_fixtures import gen  # fixtures/generate.py, loaded once

ORDERS = kafka_uuid(gen.GROUPS_TOPIC_IDS["orders"])
CLICKS = kafka_uuid(gen.GROUPS_TOPIC_IDS["clicks"])


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    gen.groups(tmp_path / "groups")
    return tmp_path / "groups"


def states(proc) -> dict[str, dict]:
    return {x["group_id"]: x for x in proc.jsonl() if x["type"] == "group_state"}


def members(state: dict) -> dict[str, dict]:
    return {m["member_id"]: m for m in state["members"]}


def test_kip848_group_life_jsonl(logdir: Path, run_cli) -> None:
    """orders-app after joins (epochs 1-3), a revocation and app-a leaving (its three tombstones): epoch 4, both
    epochs agreed, app-b (regex) on orders 1 and app-c on orders 0, app-a gone; its commits and their lag against
    orders-0 (LEO 10) and orders-1 (LEO 8); the topic id named from __cluster_metadata."""
    proc = run_cli("groups", "-f", "jsonl", logdir)
    assert proc.returncode == 0, proc.stderr
    g = states(proc)["orders-app"]
    assert (g["group_type"], g["epoch"], g["assignment_epoch"], g["state"]) == ("consumer", 4, 4, "Stable")
    m = members(g)
    assert sorted(m) == ["app-b", "app-c"]
    assert (m["app-b"]["member_epoch"], m["app-b"]["previous_member_epoch"], m["app-b"]["client_id"]) == (4, 3,
                                                                                                         "client-b")
    assert m["app-b"]["subscribed_topic_regex"] == "ord.*" and m["app-b"]["subscribed_topic_names"] == []
    assert m["app-b"]["assigned_partitions"] == {ORDERS: [1]} and m["app-c"]["assigned_partitions"] == {ORDERS: [0]}
    assert m["app-c"]["rack_id"] == "rack-3" and m["app-c"]["subscribed_topic_names"] == ["orders"]
    assert m["app-c"]["target_assignment"] == {ORDERS: [0]} and m["app-c"]["assigned_topic_partitions"] == {
        "orders": [0]}
    assert g["resolved_regular_expressions"] == {"ord.*": ["orders"]}
    assert g["committed_offsets"] == {"orders-0": 7, "orders-1": 8} and g["lag"] == {"orders-0": 3, "orders-1": 0}
    assert g["topic_names"] == {ORDERS: "orders"}


def test_pending_revocation_is_not_assigned(logdir: Path, run_cli) -> None:
    """orders-audit, left mid-rebalance: audit-x holds orders 0 with orders 1 pending revocation (not assigned),
    audit-y waits for it (UNRELEASED_PARTITIONS): the group is Reconciling."""
    g = states(run_cli("groups", "-f", "jsonl", "--group", "orders-audit", logdir))["orders-audit"]
    assert g["state"] == "Reconciling"
    x, y = members(g)["audit-x"], members(g)["audit-y"]
    assert x["assigned_partitions"] == {ORDERS: [0]} and x["partitions_pending_revocation"] == {ORDERS: [1]}
    assert x["state"] == "UNREVOKED_PARTITIONS"
    assert y["assigned_partitions"] == {} and y["target_assignment"] == {ORDERS: [1]}
    assert y["state"] == "UNRELEASED_PARTITIONS"


def test_share_streams_and_classic_groups(logdir: Path, run_cli) -> None:
    """The share group keyed by topic id, the streams group by subtopology (its active tasks) with its topology,
    the classic group by topic name, from its members' consumer protocol bytes."""
    got = states(run_cli("groups", "-f", "jsonl", logdir))
    share = got["clicks-share"]
    assert (share["group_type"], share["epoch"], share["state"]) == ("share", 1, "Stable")
    assert members(share)["share-1"]["assigned_partitions"] == {CLICKS: [0]}
    assert members(share)["share-1"]["subscribed_topic_names"] == ["clicks"]
    streams = got["wordcount"]
    assert (streams["group_type"], streams["epoch"], streams["state"]) == ("streams", 1, "Stable")
    wc = members(streams)["wc-1"]
    assert wc["assigned_partitions"] == {"0": [0, 1]} and wc["process_id"] == "proc-1"
    assert wc["standby_tasks"] == {} and wc["warmup_tasks"] == {}
    assert streams["topology"]["subtopologies"][0]["source_topics"] == ["orders"]
    classic = got["legacy-app"]
    assert (classic["group_type"], classic["epoch"], classic["protocol_type"], classic["protocol"],
            classic["leader"]) == ("classic", 5, "consumer", "range", "legacy-0")
    assert {k: (m["member_epoch"], m["client_id"], m["subscribed_topic_names"], m["assigned_partitions"])
            for k, m in members(classic).items()} == {
        "legacy-0": (5, "legacy-client-0", ["orders"], {"orders": [0]}),
        "legacy-1": (5, "legacy-client-1", ["orders"], {"orders": [1]})}
    assert classic["committed_offsets"] == {"orders-0": 3}


def test_deleted_group_only_with_deleted(logdir: Path, run_cli) -> None:
    """old-app, deleted by its tombstones (member, assignments, commit, group), is not shown; --deleted shows it,
    Dead, with no commit."""
    proc = run_cli("groups", "-f", "jsonl", logdir)
    assert sorted(states(proc)) == ["clicks-share", "legacy-app", "orders-app", "orders-audit", "wordcount"]
    old = states(run_cli("groups", "-f", "jsonl", "--deleted", logdir))["old-app"]
    assert (old["deleted"], old["state"], old["members"], old["committed_offsets"]) == (True, "Dead", [], {})
    proc = run_cli("groups", "--group", "old-app", logdir)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "no group matched --group old-app" in proc.stderr
    assert "1 of them deleted by tombstones: --deleted shows them" in proc.stderr


def test_text(logdir: Path, run_cli) -> None:
    """Text: a line per group, one per member (topic ids named), the commits with their lag."""
    proc = run_cli("groups", logdir)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "group orders-app  consumer  Stable  epoch 4  assignment epoch 4  2 members" in out
    assert "member app-b  epoch 4 (previous 3, STABLE)  client client-b  subscribed  regex ord.*  assigned orders:1" \
        in out
    assert "assigned orders:0  pending revocation orders:1" in out
    assert "member wc-1  epoch 1 (previous 0, STABLE)  client wordcount-1  active tasks 0:0,1" in out
    assert "committed orders-0 7  lag 3" in out and "old-app" not in out


def test_without_cluster_metadata_ids_stay(logdir: Path, run_cli) -> None:
    """Given the __consumer_offsets partition alone (no __cluster_metadata, no data partition's partition.metadata),
    topic ids are not named (and stay ids) and no lag is known; the commits stay."""
    g = states(run_cli("groups", "-f", "jsonl", logdir / "__consumer_offsets-0"))["orders-app"]
    assert not g.get("topic_names") and members(g)["app-c"]["assigned_partitions"] == {ORDERS: [0]}
    assert members(g)["app-c"].get("assigned_topic_partitions", {ORDERS: [0]}) == {ORDERS: [0]}
    assert g["committed_offsets"] == {"orders-0": 7, "orders-1": 8} and g["lag"] == {}


def test_named_from_partition_metadata_without_cluster_metadata(logdir: Path, run_cli) -> None:
    """Without __cluster_metadata, the data partitions' partition.metadata names their topic ids."""
    shutil.rmtree(logdir / "__cluster_metadata-0")
    g = states(run_cli("groups", "-f", "jsonl", logdir))["clicks-share"]
    assert g["topic_names"] == {CLICKS: "clicks"}


def test_member_tombstone_before_its_assignment_is_inconsistent(tmp_path: Path, run_cli) -> None:
    """A member's metadata tombstone before its current assignment's: GroupMetadataManager.replay throws
    IllegalStateException (the load fails); here group-replay-inconsistent (error, exit 1), the member kept."""
    types = {name: t for t, name in gen.ks.record_types(gen.ks.GROUP_COORDINATOR).items()}
    key = {"group_id": "g", "member_id": "m"}
    recs = [gen._coordinator(types["ConsumerGroupMemberMetadata"], key, "ConsumerGroupMemberMetadata",
                             {"client_id": "c"}),
            gen._coordinator(types["ConsumerGroupCurrentMemberAssignment"], key, "ConsumerGroupCurrentMemberAssignment",
                             {"member_epoch": 3}),
            gen._coordinator(types["ConsumerGroupMemberMetadata"], key)]
    with LogDirWriter(tmp_path / "d", cluster_id=gen.CLUSTER_ID, node_id=1) as d:
        w = d.partition("__consumer_offsets", 0, bytes(range(16)))
        for offset, (k, v) in enumerate(recs):
            w.append(record_batch(offset, [RecordSpec(k, v, gen.NIGHT)]))
    proc = run_cli("groups", "-f", "jsonl", tmp_path / "d")
    assert proc.returncode == 1
    found = [x for x in proc.jsonl() if x["type"] == "finding"]
    assert [x["code"] for x in found] == ["group-replay-inconsistent"]
    assert "before its current assignment's tombstone" in found[0]["message"]
    assert list(members(states(proc)["g"])) == ["m"]


def test_a_fault_repeated_per_record_is_counted_not_kept(tmp_path: Path, run_cli) -> None:
    """150 member tombstones the coordinator would refuse: 100 findings kept, the rest one counting finding."""
    types = {name: t for t, name in gen.ks.record_types(gen.ks.GROUP_COORDINATOR).items()}
    key = {"group_id": "g", "member_id": "m"}
    t = types["ConsumerGroupMemberMetadata"]
    recs = [gen._coordinator(t, key, "ConsumerGroupMemberMetadata", {"client_id": "c"}),
            *[gen._coordinator(t, key)] * 150]
    with LogDirWriter(tmp_path / "d", cluster_id=gen.CLUSTER_ID, node_id=1) as d:
        w = d.partition("__consumer_offsets", 0, bytes(range(16)))
        for offset, (k, v) in enumerate(recs):
            w.append(record_batch(offset, [RecordSpec(k, v, gen.NIGHT)]))
    proc = run_cli("groups", "-f", "jsonl", tmp_path / "d")
    found = [x for x in proc.jsonl() if x["type"] == "finding"]
    assert len(found) == 101 and {x["code"] for x in found} == {"group-replay-inconsistent"}
    assert found[-1]["message"].startswith("... and 50 more group-replay-inconsistent findings")


def test_progress_reaches_the_bars_total(logdir: Path) -> None:
    told: list[int] = []
    list(group_states([logdir], progress=told.append))
    assert sum(told) == group_states_bytes([logdir]) > 0
