"""``overview``: one row per partition from the loader, equal to ``verify``'s partition summaries on every corpus
partition, biggest first, with totals per topic that add the rows up; first and last timestamps from the batches."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from .clirun import cli
from .conftest import PROJECT_ROOT, corpus_root


def kt(*args: str | Path) -> tuple[int, list[dict]]:
    p = cli(*args, "-f", "jsonl")
    return p.returncode, p.jsonl()


def test_overview_equals_verify_on_every_corpus_partition() -> None:
    roots = [corpus_root() / "kafka", corpus_root() / "real"]
    _code, rows = kt("overview", *roots)
    _code, checked = kt("verify", *roots)
    parts = [r for r in rows if r["type"] == "partition_overview"]
    summaries = {r["path"]: r for r in checked if r.get("scope") == "partition" and r.get("topic") is not None}
    assert len(parts) > 400
    assert [r["bytes"] for r in parts] == sorted((r["bytes"] for r in parts), reverse=True)
    compared = 0
    for r in parts:
        s = summaries.get(r["path"])
        if s is None:
            continue
        compared += 1
        assert (r["segments"], r["bytes"], r["log_start_offset"], r["log_end_offset"], r["high_watermark"],
                r["open_transactions"]) == (s["segments"], s["bytes"], s["log_start_offset"], s["log_end_offset"],
                                            s["high_watermark"], s["open_transactions"]), r["path"]
    assert compared == len(parts)
    # several clusters here: a topic is totalled per cluster (meta.properties' cluster.id), never across them
    totals = {(r["cluster"], r["topic"]): r for r in rows if r["type"] == "topic_overview"}
    by_topic: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in parts:
        by_topic[r["cluster"], r["topic"]].append(r)
    assert len({cluster for cluster, topic in totals if topic == "__cluster_metadata"}) > 3
    assert set(totals) == set(by_topic)
    for topic, members in by_topic.items():
        t = totals[topic]
        assert (t["partitions"], t["segments"], t["bytes"]) == (len(members), sum(m["segments"] for m in members),
                                                               sum(m["bytes"] for m in members))


def test_timestamps_topic_filter_and_compacted(run_cli) -> None:
    incident = PROJECT_ROOT / "fixtures" / "incident"
    code, rows = kt("overview", "--topic", "clicks", incident)
    (clicks,) = [r for r in rows if r["type"] == "partition_overview"]
    records = [json.loads(x) for x in run_cli("dump", "-f", "jsonl", "-r", incident / "clicks-0").stdout.splitlines()
               if '"record"' in x]
    assert code == 0 and (clicks["first_timestamp"], clicks["last_timestamp"]) == (
        records[0]["timestamp"], max(r["timestamp"] for r in records))
    assert clicks["producers"] == 1 and not clicks["compacted"]
    _code, rows = kt("overview", incident)
    compacted = {r["path"].rsplit("/", 1)[1] for r in rows if r["type"] == "partition_overview" and r["compacted"]}
    assert compacted == {"__consumer_offsets-0", "__transaction_state-0"}
    code, rows = kt("overview", corpus_root() / "kafka/recovery/crc-flip/before")
    assert code == 1 and rows[0]["problems"] >= 1 and rows[0]["log_end_offset"] == 264


def test_a_damaged_checkpoint_is_said_once_a_log_dir_and_fails_the_run(tmp_path: Path) -> None:
    """Every row's offsets come from the log dir's checkpoints: what reading them met is a finding (as verify's),
    said once for the log dir (not once a row, not lost when partition dirs are named alone), and exit 1."""
    import shutil

    logdir = tmp_path / "logdir"
    shutil.copytree(PROJECT_ROOT / "fixtures" / "incident", logdir, symlinks=True)
    rp = logdir / "recovery-point-offset-checkpoint"
    code, rows = kt("overview", logdir)
    assert code == 0 and not [r for r in rows if r["type"] == "finding" and r["path"] == str(rp)]
    rp.write_text("0\n1\ngarbage\n")
    _code, checked = kt("verify", logdir)
    said = [(r["code"], r["severity"]) for r in checked if r["type"] == "finding" and r["path"] == str(rp)
            and r["code"] != "recovery-point-missing"]  # verify's own check of each partition against the file
    assert said == [("checkpoint-malformed", "error")]
    partitions = sorted(p for p in logdir.iterdir() if p.is_dir() and p.name[-1].isdigit())
    for named in ([logdir], partitions[:2]):
        code, rows = kt("overview", *named)
        assert [(r["code"], r["severity"]) for r in rows if r["type"] == "finding" and r["path"] == str(rp)] == said
        assert code == 1 and len([r for r in rows if r["type"] == "partition_overview"]) >= 2
    with rp.open("r+b") as fh:  # 4 GiB, sparse: larger than any the broker writes, so not read
        fh.truncate(4 << 30)
    code, rows = kt("overview", logdir)
    assert code == 1 and [r["code"] for r in rows if r["type"] == "finding" and r["path"] == str(rp)] == [
        "file-too-large"]
