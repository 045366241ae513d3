"""``tiered``: each partition's remote log segments (KIP-405) replayed from ``__remote_log_metadata`` as
``TopicBasedRemoteLogMetadataManager``'s consumer does, and checked against the local log, on the log dir
``fixtures/generate.py --tiered`` writes (its docstring draws it), generated at test time."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.formats import metadata_records as mr
from kafkatool.internal.remote_log_metadata import (
    RemoteSegment,
    _leader_epochs_disagree,
    remote_segments,
    remote_segments_bytes,
)
from kafkatool.logwriter import LogDirWriter

from .test_hanging import gen  # fixtures/generate.py, loaded once

A, B, C, D, E, G = (gen.tiered_segment_id(n) for n in "ABCDEG")


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    gen.tiered(tmp_path / "tiered")
    return tmp_path / "tiered"


def segments(proc) -> dict[str, dict]:
    return {x["segment_id"]: x for x in proc.jsonl() if x["type"] == "remote_segment"}


def findings(proc) -> list[dict]:
    return [x for x in proc.jsonl() if x["type"] == "finding"]


def test_replayed_segments_jsonl(logdir: Path, run_cli) -> None:
    """The state after all seventeen records: B copied, C left copying, D copied (its invalid update dropped), E
    copied; A deleted (DELETE_SEGMENT_FINISHED) and scratch-0 deleted (DELETE_PARTITION_FINISHED) are gone. Then the
    findings: the invalid transition, C stuck for 10 minutes at the newest time read, ledger-1's offsets 40..59 on
    no tier, E's epochs against ledger-2's checkpoint."""
    proc = run_cli("tiered", "-f", "jsonl", logdir)
    assert proc.returncode == 1, proc.stderr
    assert proc.jsonl()[0] == {"type": "txn_clock", "now": gen.NIGHT + 16 * gen.MINUTE,
                               "source": "newest record time"}
    got = segments(proc)
    assert list(got) == [B, C, D, E]  # by topic, partition, start offset
    assert {s: (x["topic"], x["partition"], x["start_offset"], x["end_offset"], x["state"]) for s, x in got.items()} \
        == {B: ("ledger", 0, 50, 99, "COPY_SEGMENT_FINISHED"), C: ("ledger", 0, 100, 149, "COPY_SEGMENT_STARTED"),
            D: ("ledger", 1, 0, 39, "COPY_SEGMENT_FINISHED"), E: ("ledger", 2, 0, 29, "COPY_SEGMENT_FINISHED")}
    # the update's broker and event time replace the first record's (createWithUpdates); size and epochs stay
    assert (got[B]["event_timestamp"], got[B]["log_offset"], got[B]["segment_size"]) == (
        gen.NIGHT + 3 * gen.MINUTE, 3, 5000)
    assert got[E]["segment_leader_epochs"] == {"0": 0, "1": 20}
    assert got[B]["topic_id"] == "TGVkZ2VyAAECAwQFBgcIqg"  # Kafka's base64 Uuid
    assert [(f["code"], f["severity"]) for f in findings(proc)] == [
        ("remote-segment-invalid-transition", "error"), ("remote-segment-stuck", "warning"),
        ("tiered-offset-gap", "error"), ("remote-segment-epochs-mismatch", "warning")]
    invalid, stuck, gap, epochs = findings(proc)
    assert "record at offset 9" in invalid["message"] and \
        "COPY_SEGMENT_FINISHED -> COPY_SEGMENT_STARTED" in invalid["message"]
    assert f"{C} (100-149) in COPY_SEGMENT_STARTED" in stuck["message"] and "600000 ms (10.0 min)" in stuck["message"]
    assert gap["path"].endswith("ledger-1") and "offsets 40..59 are on no tier" in gap["message"]
    assert epochs["path"].endswith("ledger-2") and \
        "after epoch 0 it has epoch 1 from 20, the checkpoint epoch 1 from 25" in epochs["message"]
    assert run_cli("tiered", "--fail-on", "error", logdir).returncode == 1  # the gap is an error


@pytest.mark.parametrize(("records", "expected"), [
    (1, {A: "COPY_SEGMENT_STARTED"}),
    (2, {A: "COPY_SEGMENT_FINISHED"}),
    (5, {A: "DELETE_SEGMENT_STARTED", B: "COPY_SEGMENT_FINISHED"}),
    (6, {B: "COPY_SEGMENT_FINISHED"}),                                   # DELETE_SEGMENT_FINISHED: A gone
    (14, {B: "COPY_SEGMENT_FINISHED", C: "COPY_SEGMENT_STARTED", D: "COPY_SEGMENT_FINISHED",
          E: "COPY_SEGMENT_FINISHED", G: "COPY_SEGMENT_FINISHED"}),
    (16, {B: "COPY_SEGMENT_FINISHED", C: "COPY_SEGMENT_STARTED", D: "COPY_SEGMENT_FINISHED",
          E: "COPY_SEGMENT_FINISHED", G: "COPY_SEGMENT_FINISHED"}),      # MARKED, STARTED: the partition stays
])
def test_each_step_of_the_lifecycle(tmp_path: Path, run_cli, records: int, expected: dict) -> None:
    """The segments' states after the first ``records`` records: each transition taken, a deleted segment gone,
    a partition whose deletion has not finished still listed."""
    gen.tiered(tmp_path / "t", records)
    proc = run_cli("tiered", "-f", "jsonl", tmp_path / "t")
    assert {s: x["state"] for s, x in segments(proc).items()} == expected


def test_delete_started_is_stuck_too(tmp_path: Path, run_cli) -> None:
    """After five records A is in DELETE_SEGMENT_STARTED since 02:04, judged at --now 02:30: 26 minutes."""
    gen.tiered(tmp_path / "t", 5)
    proc = run_cli("tiered", "-f", "jsonl", "--now", "2023-11-15T02:30:00", tmp_path / "t")
    assert proc.jsonl()[0] == {"type": "txn_clock", "now": gen.NIGHT + 30 * gen.MINUTE, "source": "--now"}
    (stuck,) = [f for f in findings(proc) if f["code"] == "remote-segment-stuck"]
    assert f"{A} (0-49) in DELETE_SEGMENT_STARTED" in stuck["message"] and "(26.0 min)" in stuck["message"]


def test_text_table(logdir: Path, run_cli) -> None:
    """Text: the time judged at, then a table a segment a row (topic by name, epochs as epoch@start, event time as
    ISO), then the findings."""
    proc = run_cli("tiered", logdir)
    lines = proc.stdout.splitlines()
    assert lines[0] == "judged at 2023-11-15T02:16:00.000Z (the newest record time in the log; --now to choose another)"
    assert lines[1].split()[:6] == ["topic", "partition", "segment", "start", "end", "state"]
    rows = [line.split() for line in lines[2:6]]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [("ledger", "0", B, "COPY_SEGMENT_FINISHED"),
                                                        ("ledger", "0", C, "COPY_SEGMENT_STARTED"),
                                                        ("ledger", "1", D, "COPY_SEGMENT_FINISHED"),
                                                        ("ledger", "2", E, "COPY_SEGMENT_FINISHED")]
    assert rows[3][8:11] == ["0@0", "1@20", "3000"] and rows[0][7] == "2023-11-15T02:03:00.000Z"
    assert [line.split()[:2] for line in lines[6:]] == [
        ["ERROR", "remote-segment-invalid-transition"], ["WARNING", "remote-segment-stuck"],
        ["ERROR", "tiered-offset-gap"], ["WARNING", "remote-segment-epochs-mismatch"]]


def test_topic_and_partition_filters_and_notes(logdir: Path, run_cli) -> None:
    """--topic/--partition keep one partition's segments and its local checks; a filter matching nothing is a note
    naming the partitions read."""
    proc = run_cli("tiered", "-f", "jsonl", "--topic", "ledger", "--partition", "1", logdir)
    assert list(segments(proc)) == [D]
    assert [f["code"] for f in findings(proc)] == ["remote-segment-invalid-transition", "tiered-offset-gap"]
    proc = run_cli("tiered", "--topic", "orders", logdir)
    assert "no remote segment matched --topic orders in __remote_log_metadata (3 partitions: ledger-0, ledger-1, " \
           "ledger-2)" in proc.stderr


def test_without_the_local_log_no_local_checks(logdir: Path, run_cli) -> None:
    """Only the __remote_log_metadata partition given: the segments and the replay's findings, no comparison with
    a local log that was not given."""
    proc = run_cli("tiered", "-f", "jsonl", logdir / "__remote_log_metadata-0")
    assert list(segments(proc)) == [B, C, D, E]
    assert [f["code"] for f in findings(proc)] == ["remote-segment-invalid-transition", "remote-segment-stuck"]


def test_no_remote_log_metadata(logdir: Path, run_cli) -> None:
    """Log dirs without __remote_log_metadata: a tiered-none warning, nothing else."""
    proc = run_cli("tiered", "-f", "jsonl", logdir / "ledger-0")
    assert proc.returncode == 1
    assert [(x["type"], x.get("code")) for x in proc.jsonl()] == [("finding", "tiered-none")]


def test_undecodable_and_snapshot_records_are_findings(tmp_path: Path, run_cli) -> None:
    """A value that does not parse and a RemoteLogSegmentMetadataSnapshotRecord (which only snapshot files hold:
    handleRemoteLogMetadata refuses it) are tiered-record-undecodable; the record after them is replayed."""
    schemas = mr.remote_log_metadata_schemas()
    snapshot = mr.build_framed(schemas, "RemoteLogSegmentMetadataSnapshotRecord", 0,
                               gen.ks.example("RemoteLogSegmentMetadataSnapshotRecord", 0))
    good = gen.ks.example("RemoteLogSegmentMetadataRecord", 0)
    good["remote_log_segment_state"] = 0
    values = [b"\x00\x00\x00\xff", snapshot, mr.build_framed(schemas, "RemoteLogSegmentMetadataRecord", 0, good)]
    with LogDirWriter(tmp_path / "d", cluster_id=gen.CLUSTER_ID, node_id=1) as logdir:
        w = logdir.partition("__remote_log_metadata", 0, gen.TIERED_TOPIC_IDS["__remote_log_metadata"])
        for offset, value in enumerate(values):
            w.append(record_batch(offset, [RecordSpec(None, value, gen.NIGHT)]))
    proc = run_cli("tiered", "-f", "jsonl", "--now", str(gen.NIGHT), tmp_path / "d")
    found = findings(proc)
    assert [f["code"] for f in found][:2] == ["tiered-record-undecodable"] * 2
    assert "record at offset 0" in found[0]["message"]
    assert "RemoteLogSegmentMetadataSnapshotRecord in the topic" in found[1]["message"]
    assert [x["segment_id"] for x in proc.jsonl() if x["type"] == "remote_segment"] == [
        good["remote_log_segment_id"]["id"]]


def seg(epochs: dict[int, int], start: int = 0, end: int = 99) -> RemoteSegment:
    return RemoteSegment("t", 0, "s", start, end, 1, 1, 0, 0, tuple(sorted(epochs.items())), 0, None, "m", 0)


STD = {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 7: 70}


@pytest.mark.parametrize(("epochs", "start", "end", "lineage", "agrees"), [
    # RemoteLogManagerTest.testRemoteSegmentWithinLeaderEpochs's cases: the lineage STD, a LEO of 90
    ({1: 15, 2: 20, 3: 30}, 15, 35, STD, True),    # several epochs within the lineage
    ({1: 15}, 15, 19, STD, True),                   # one
    ({0: 0}, 0, 5, STD, True),                      # starting where its epoch starts
    ({7: 70}, 70, 75, STD, True),
    ({1: 15, 2: 20}, 15, 29, STD, True),            # ending where epoch 2 ends
    ({5: 55, 6: 60, 7: 70}, 55, 85, STD, False),    # epoch 6 is not in the lineage
    ({1: 15, 2: 20, 4: 40}, 15, 45, STD, False),    # the lineage's epoch 3 is not in the segment
    (STD, 15, 95, STD, False),                      # past the LEO
    (STD, 15, 90, STD, False),                      # at the LEO
    ({1: 5, 2: 20}, 5, 25, STD, False),             # epoch 1 from 5, before the lineage's 10
    ({1: 15, 2: 20}, 15, 35, STD, False),           # past epoch 2's end
    # buildFilteredLeaderEpochMap: a segment epoch with no records (starting where the next does) is left out
    ({0: 0, 1: 20, 2: 20}, 0, 25, {0: 0, 2: 20}, True),
    ({0: 0}, 0, 9, {}, True),                       # no checkpoint: nothing to compare
])
def test_leader_epochs_disagree(epochs, start, end, lineage, agrees) -> None:
    """RemoteLogManager.isRemoteSegmentWithinLeaderEpochs, case by case."""
    got = _leader_epochs_disagree(seg(epochs, start, end), 90, sorted(lineage.items()))
    assert (got is None) is agrees, got


def test_progress_reaches_the_bars_total(logdir: Path) -> None:
    """remote_segments_bytes: the __remote_log_metadata segments and every user partition (loaded or passed)."""
    for paths in ([logdir], [logdir / "__remote_log_metadata-0"], [logdir / "__remote_log_metadata-0",
                                                                   logdir / "ledger-2"]):
        told: list[int] = []
        list(remote_segments(paths, progress=told.append))
        assert sum(told) == remote_segments_bytes(paths) > 0


# --- Spark: the same replay over the data source's decoded rows --------------------------------------------------


@pytest.mark.spark
def test_spark_rows_replay_to_what_tiered_finds(spark, logdir: Path) -> None:
    """The rows of __remote_log_metadata-0 read with decode remote-log-metadata on local[2], collected and replayed
    by kafkatool.spark.replay: the segments the CLI's replay finds (A and scratch-0 gone), the invalid update as the
    one row not replayed, and the state after the first five records from rows in any order."""
    from kafkatool.spark.replay import remote_segments_of_rows

    df = spark.read.format("kafka-log").option("decode", "remote-log-metadata").option("minPartitions", "2") \
        .load([str(logdir)]).where("topic = '__remote_log_metadata'")
    rows = df.select("partition", "offset", "decoded", "decode_error").collect()
    assert len(rows) == 17
    got, skipped = remote_segments_of_rows(rows)
    want = [x for x in remote_segments([logdir / "__remote_log_metadata-0"]) if isinstance(x, RemoteSegment)]
    assert [s.as_dict() for s in got] == [s.as_dict() for s in want] and [s.segment_id for s in got] == [B, C, D, E]
    assert len(skipped) == 1 and "offset 9" in skipped[0] and "COPY_SEGMENT_FINISHED -> COPY_SEGMENT_STARTED" \
        in skipped[0]
    early, _ = remote_segments_of_rows([r for r in rows if r["offset"] < 5][::-1])
    assert [(s.segment_id, s.state) for s in early] == [(A, 2), (B, 1)]  # A DELETE_SEGMENT_STARTED, B copied
