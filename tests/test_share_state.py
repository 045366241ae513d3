"""``share-state``: share partitions' state (KIP-932) replayed from ``__share_group_state`` as ``ShareCoordinatorShard``
loads it, on the log dir ``fixtures/generate.py --share-state`` writes (its docstring draws it), generated at test
time."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.internal.share_state import StateBatch, combine_state_batches, share_states, share_states_bytes

from .test_hanging import gen  # fixtures/generate.py, loaded once

SHARE_LOG = Path("__share_group_state-0") / f"{0:020d}.log"


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    gen.share_state(tmp_path / "shares")
    return tmp_path / "shares"


def states(proc) -> dict[tuple, dict]:
    return {(x["group_id"], x["topic"], x["partition"]): x for x in proc.jsonl()
            if x["type"] == "share_partition_state"}


def spans(state: dict) -> list[tuple]:
    return [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in state["state_batches"]]


def codes(proc) -> list[str]:
    return [x["code"] for x in proc.jsonl() if x["type"] == "finding"]


def keep_records(logdir: Path, n: int) -> None:
    """Cut ``__share_group_state-0`` after its first ``n`` records (one a batch): the state at that point."""
    log = logdir / SHARE_LOG
    data = log.read_bytes()
    end = 0
    for _ in range(n):
        end += 12 + int.from_bytes(data[end + 8:end + 12], "big")
    log.write_bytes(data[:end])


def test_replayed_state_jsonl(logdir: Path, run_cli) -> None:
    """The state the coordinator holds after all twelve records: workers' tasks-0 after a snapshot and three updates,
    replaced's newer snapshot alone, deleted's gone (tombstone), archive named by __cluster_metadata alone, and the
    data partitions' log start and end beside each; tasks-1's start beyond its LEO an error, tasks-2's below its
    log start a warning."""
    proc = run_cli("share-state", "-f", "jsonl", logdir)
    assert proc.returncode == 1, proc.stderr
    got = states(proc)
    assert sorted(got) == [("readers", "archive", 0), ("replaced", "tasks", 0), ("workers", "tasks", 0),
                           ("workers", "tasks", 1), ("workers", "tasks", 2)]
    workers = got[("workers", "tasks", 0)]
    # update 3's 20-24 Available×1 loses to 20-29 Acked×1 (fewer deliveries): PersisterStateBatchCombiner's rule
    assert (workers["state_epoch"], workers["leader_epoch"], workers["start_offset"], spans(workers)) == (
        0, 2, 20, [(20, 29, "Acked", 1)])
    assert workers["topic_id"] == "VGFza3MAAQIDBAUGBwgJCg" and workers["log_offset"] == 3
    assert (workers["log_start_offset"], workers["log_end_offset"]) == (0, 40)
    replaced = got[("replaced", "tasks", 0)]
    assert (replaced["snapshot_epoch"], replaced["state_epoch"], replaced["start_offset"], spans(replaced)) == (
        1, 1, 8, [(8, 9, "Archived", 3)])
    readers = got[("readers", "archive", 0)]
    assert (readers["start_offset"], readers["state_batches"], readers["log_end_offset"]) == (3, [], None)
    assert codes(proc) == ["share-start-beyond-leo", "share-start-below-log-start"]
    findings = [x for x in proc.jsonl() if x["type"] == "finding"]
    assert findings[0]["path"].endswith("tasks-1") and "start offset 45 beyond" in findings[0]["message"]
    assert findings[1]["path"].endswith("tasks-2") and "log start offset 30" in findings[1]["message"]
    assert run_cli("share-state", "--fail-on", "error", logdir).returncode == 1  # beyond the LEO is an error


@pytest.mark.parametrize(("records", "start", "leader_epoch", "expected"), [
    (1, 0, 1, [(0, 9, "Acked", 1), (10, 19, "Available", 1)]),                     # the snapshot
    (2, 0, 1, [(0, 14, "Acked", 1), (15, 19, "Available", 1)]),                    # an overlap: Acked wins, merged
    (3, 15, 2, [(15, 19, "Available", 2), (20, 29, "Acked", 1)]),                  # start 15: 0-14 dropped
    (4, 20, 2, [(20, 29, "Acked", 1)]),
])
def test_each_step_of_the_replay(logdir: Path, run_cli, records: int, start: int, leader_epoch: int,
                                 expected: list) -> None:
    """workers' tasks-0 after each of its records: the state the coordinator would hold had the log ended there."""
    keep_records(logdir, records)
    proc = run_cli("share-state", "-f", "jsonl", "--group", "workers", logdir / "__share_group_state-0")
    assert proc.returncode == 0, proc.stderr
    got = states(proc)
    assert list(got) == [("workers", None, 0)]  # no data partition or metadata given: no name
    state = got[("workers", None, 0)]
    assert (state["start_offset"], state["leader_epoch"], spans(state)) == (start, leader_epoch, expected)


def test_replaced_and_deleted_before_their_last_record(logdir: Path, run_cli) -> None:
    """replaced after its update (5-9 Archived×3 merged after 0-4 Acked×1), deleted before its tombstone."""
    keep_records(logdir, 7)
    got = states(run_cli("share-state", "-f", "jsonl", logdir))
    assert spans(got[("replaced", "tasks", 0)]) == [(0, 4, "Acked", 1), (5, 9, "Archived", 3)]
    assert got[("replaced", "tasks", 0)]["snapshot_epoch"] == 0
    gen.share_state(logdir)
    keep_records(logdir, 9)
    assert spans(states(run_cli("share-state", "-f", "jsonl", logdir))[("deleted", "tasks", 0)]) == [
        (0, 9, "Acked", 1)]
    gen.share_state(logdir)
    keep_records(logdir, 10)
    assert ("deleted", "tasks", 0) not in states(run_cli("share-state", "-f", "jsonl", logdir))


def test_text_table(logdir: Path, run_cli) -> None:
    proc = run_cli("share-state", logdir)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["group", "topic", "partition"]
    assert "state batches" in lines[0] and "start offset" in lines[0]
    rows = {tuple(line.split()[:3]): line.split() for line in lines[1:6]}
    assert rows[("workers", "tasks", "0")][3:10] == ["0", "2", "20", "0", "40", "20-29", "Acked×1"]
    assert rows[("replaced", "tasks", "0")][5:10] == ["8", "0", "40", "8-9", "Archived×3"]
    assert rows[("readers", "archive", "0")][3:9] == ["0", "1", "3", "-", "-", "-"]
    assert lines[6].startswith("ERROR share-start-beyond-leo") and lines[7].startswith(
        "WARNING share-start-below-log-start")


def test_group_filter_and_notes(logdir: Path, run_cli) -> None:
    proc = run_cli("share-state", "-f", "jsonl", "-g", "replaced", "-g", "readers", logdir)
    assert proc.returncode == 0, proc.stderr
    assert sorted(states(proc)) == [("readers", "archive", 0), ("replaced", "tasks", 0)]
    proc = run_cli("share-state", "--group", "nobody", logdir)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "note: no share partition state matched --group nobody in __share_group_state (3 groups: " in proc.stderr
    proc = run_cli("share-state", "-f", "jsonl", logdir / "tasks-0")  # nothing to replay
    assert proc.returncode == 1 and codes(proc) == ["share-state-none"]
    assert "note: no share partition state found" in proc.stderr


def test_undecodable_record_is_a_finding(logdir: Path, run_cli) -> None:
    """A ShareUpdate tombstone (which handleShareUpdate cannot replay) and a flipped batch: findings, the rest
    replayed, no traceback."""
    log = logdir / SHARE_LOG
    data = bytearray(log.read_bytes())
    starts = [0]
    while starts[-1] < len(data):
        starts.append(starts[-1] + 12 + int.from_bytes(data[starts[-1] + 8:starts[-1] + 12], "big"))
    data[starts[4] + 70] ^= 0xFF  # inside record 4 (workers' tasks-1 snapshot)
    log.write_bytes(bytes(data))
    proc = run_cli("share-state", "-f", "jsonl", logdir)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "crc-mismatch" in codes(proc) and ("workers", "tasks", 1) not in states(proc)
    assert spans(states(proc)[("workers", "tasks", 0)]) == [(20, 29, "Acked", 1)]


def test_share_update_tombstone(tmp_path: Path, run_cli) -> None:
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import kafka_schema as ks
    from kafkatool.logwriter import LogDirWriter

    key = ks.coordinator_key(ks.SHARE_COORDINATOR, 1, {"group_id": "g", "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ",
                                                       "partition": 0})
    with LogDirWriter(tmp_path / "ld", cluster_id="c1", node_id=1) as ld:
        ld.partition("__share_group_state", 0, b"\x01" * 16).append(record_batch(0, [RecordSpec(key, None, 0)]))
    proc = run_cli("share-state", "-f", "jsonl", tmp_path / "ld")
    assert proc.returncode == 1 and codes(proc) == ["share-state-undecodable"]
    assert "ShareUpdate tombstone" in proc.jsonl()[0]["message"]


# --- PersisterStateBatchCombiner, case by case -------------------------------------------------------------------


def b(first: int, last: int, state: int, count: int) -> StateBatch:
    return StateBatch(first, last, count, state)


@pytest.mark.parametrize(("so_far", "new", "start", "expected"), [
    # same state, overlapping or contiguous: one batch
    ([b(0, 9, 2, 1)], [b(5, 14, 2, 1)], -1, [b(0, 14, 2, 1)]),
    ([b(0, 9, 2, 1)], [b(10, 14, 2, 1)], -1, [b(0, 14, 2, 1)]),
    # contiguous, different state: both as they are
    ([b(0, 9, 2, 1)], [b(10, 14, 0, 1)], -1, [b(0, 9, 2, 1), b(10, 14, 0, 1)]),
    # candidate swallowed: the higher priority (more deliveries) splits the other around it
    ([b(0, 19, 0, 1)], [b(5, 9, 0, 2)], -1, [b(0, 4, 0, 1), b(5, 9, 0, 2), b(10, 19, 0, 1)]),
    # candidate swallowed with a lower priority: gone
    ([b(0, 19, 4, 3)], [b(5, 9, 0, 2)], -1, [b(0, 19, 4, 3)]),
    # first offsets aligned, the longer one of lower priority keeps its tail
    ([b(0, 9, 2, 2)], [b(0, 14, 0, 1)], -1, [b(0, 9, 2, 2), b(10, 14, 0, 1)]),
    # the start offset prunes and cuts
    ([b(0, 9, 2, 1), b(10, 19, 0, 1)], [], 15, [b(15, 19, 0, 1)]),
    # equal batches once (a TreeSet)
    ([b(0, 9, 2, 1)], [b(0, 9, 2, 1)], -1, [b(0, 9, 2, 1)]),
])
def test_combine_state_batches(so_far, new, start, expected) -> None:
    assert combine_state_batches(so_far, new, start) == expected


def test_progress_reaches_the_bars_total(logdir: Path) -> None:
    """share_states_bytes: the share-state segments, the metadata log for names, each data partition of its log dir
    (loaded or passed)."""
    for paths in ([logdir], [logdir / "__share_group_state-0"]):
        told: list[int] = []
        list(share_states(paths, progress=told.append))
        assert sum(told) == share_states_bytes(paths) > 0


# --- Spark: the same replay over the data source's decoded rows --------------------------------------------------


@pytest.mark.spark
def test_spark_rows_replay_to_what_share_state_finds(spark, logdir: Path) -> None:
    """The rows of __share_group_state-0 read with decode share-group-state on local[2], collected and replayed by
    kafkatool.spark.replay: the states the CLI's replay finds, and the same state after each record."""
    from kafkatool.internal.share_state import share_state_partition
    from kafkatool.spark.replay import share_states_of_rows
    from kafkatool.walk import partition_dirs

    df = spark.read.format("kafka-log").option("decode", "share-group-state").option("minPartitions", "2") \
        .load([str(logdir)]).where("topic = '__share_group_state'")
    rows = df.select("offset", "decoded", "decode_error").collect()
    assert len(rows) == 12
    got, skipped = share_states_of_rows(rows, "__share_group_state-0")
    part = next(p for p in partition_dirs([logdir]) if p.topic == "__share_group_state")
    want = list(share_state_partition(part.files, "__share_group_state-0"))
    assert skipped == [] and got == want and len(got) == 5
    workers = next(s for s in got if (s.group_id, s.partition) == ("workers", 0))
    assert [b.as_dict() for b in workers.state_batches] == [
        {"first_offset": 20, "last_offset": 29, "delivery_state": "Acked", "delivery_count": 1}]
    # after the first three records: the update's merge, from rows in any order
    early = [r for r in rows if r["offset"] < 3][::-1]
    (state,), _ = share_states_of_rows(early, "__share_group_state-0")
    assert [(b.first_offset, b.last_offset, b.delivery_count) for b in state.state_batches] == [
        (15, 19, 2), (20, 29, 1)]
