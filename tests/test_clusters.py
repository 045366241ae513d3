"""Several clusters (or several controllers of one) in one run are never merged into one anonymous table or row
(issue 26): ``metadata`` names each row's cluster and node, ``overview`` totals a topic per cluster.

A cluster is known by its log dir's ``meta.properties`` (``cluster.id``, ``node.id``), written here as Kafka's
``MetaProperties`` stores it; metadata records are packed by ``tests/test_min_isr.py`` from Kafka's JSON schemas.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .test_min_isr import isr_change, metadata_log, partition_record, topic_record


def meta_properties(logdir: Path, cluster: str, node: int) -> None:
    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "meta.properties").write_text(f"#\nnode.id={node}\nversion=1\ncluster.id={cluster}\n")


def two_clusters(tmp_path: Path) -> Path:
    """Cluster A (one controller, node 1) and cluster B's two controllers (nodes 1 and 2), each with a metadata log
    naming the same topic partition ``orders-0``."""
    for name, cluster, node in (("a1", "clusterA", 1), ("b1", "clusterB", 1), ("b2", "clusterB", 2)):
        meta_properties(tmp_path / name, cluster, node)
        metadata_log(tmp_path / name, [topic_record("orders"), partition_record(0, [1, 2], [1, 2], 1),
                                       isr_change(0, [node])])
    return tmp_path


def test_metadata_of_several_clusters_names_each_rows_cluster_and_node(tmp_path: Path, run_cli) -> None:
    root = two_clusters(tmp_path)
    proc = run_cli("metadata", "-f", "jsonl", root)
    rows = [x for x in proc.jsonl() if x["type"] == "partition_state"]
    assert len(rows) == 6
    assert {(x["cluster"], tuple(x["isr"])) for x in rows if x["record"] == "PartitionChangeRecord"} == {
        ("clusterA node 1", (1,)), ("clusterB node 1", (1,)), ("clusterB node 2", (2,))}
    text = run_cli("metadata", root).stdout.splitlines()
    assert text[0].split()[0] == "cluster"
    assert sorted(line.split("  ")[0] for line in text[1:]) == sorted(
        ["clusterA node 1"] * 2 + ["clusterB node 1"] * 2 + ["clusterB node 2"] * 2)
    # one metadata log: its rows as they always were, no cluster column
    assert run_cli("metadata", root / "b2").stdout.split()[0] == "offset"
    assert all("cluster" not in x for x in run_cli("metadata", "-f", "jsonl", root / "b2").jsonl())


def test_overview_totals_a_topic_per_cluster(tmp_path: Path, corpus: Path, run_cli) -> None:
    root = two_clusters(tmp_path)
    for name in ("a1", "b1"):  # the same topic partition in both clusters
        shutil.copytree(corpus / "kafka" / "logdir" / "codecs-0", root / name / "codecs-0")
    proc = run_cli("overview", "-f", "jsonl", root)
    totals = {(x["cluster"], x["topic"]): x["partitions"] for x in proc.jsonl() if x["type"] == "topic_overview"}
    assert totals == {("clusterA", "__cluster_metadata"): 1, ("clusterB", "__cluster_metadata"): 2,
                      ("clusterA", "codecs"): 1, ("clusterB", "codecs"): 1}
    rows = [x for x in proc.jsonl() if x["type"] == "partition_overview"]
    assert {(x["cluster"], Path(x["path"]).parent.name) for x in rows} == {
        ("clusterA", "a1"), ("clusterB", "b1"), ("clusterB", "b2")}
    text = run_cli("overview", root).stdout
    assert [line.split()[0] for line in text.splitlines() if "__cluster_metadata " in line] == ["clusterB", "clusterA"]
    # one cluster: the rows and totals as they always were, no cluster column
    one = run_cli("overview", "-f", "jsonl", root / "b1", root / "b2").jsonl()
    assert all("cluster" not in x for x in one)
    assert [x["partitions"] for x in one if x["type"] == "topic_overview" and x["topic"] == "__cluster_metadata"] == [2]
