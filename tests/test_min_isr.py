"""``metadata --under-min-isr``: when acks=all producers were refused because the ISR had shrunk.

Kafka's rule (``Partition.appendRecordsToLeader``): with ``acks=all`` the leader refuses a produce request with
NOT_ENOUGH_REPLICAS while ``inSyncReplicas.size < minIsr``; ``minIsr`` is the topic's ``min.insync.replicas``
(``LogConfig``: topic override, else the broker's dynamic then static default). Metadata records are packed
here with ``struct`` straight from Kafka's message JSON schemas (``PartitionRecord.json`` v0,
``PartitionChangeRecord.json``, ``ConfigRecord.json``, ``TopicRecord.json``), independent of the Construct
declarations under test.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from pathlib import Path

from kafkatool.build import RecordSpec, record_batch
from kafkatool.internal import metadata

from .conftest import corpus_root
from .test_internal_topics import _cs, _uv

TOPIC_ID = bytes(range(1, 17))
T0 = 1_700_000_000_000


def _ints(xs: list[int]) -> bytes:
    return _uv(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def _frame(record_type: int, version: int = 0) -> bytes:
    return bytes([1]) + _uv(record_type) + _uv(version)


def topic_record(name: str) -> bytes:
    return _frame(2) + _cs(name) + TOPIC_ID + b"\x00"


def partition_record(partition: int, replicas: list[int], isr: list[int], leader: int) -> bytes:
    return (_frame(3) + struct.pack(">i", partition) + TOPIC_ID + _ints(replicas) + _ints(isr) + _ints([])
            + _ints([]) + struct.pack(">iii", leader, 0, 0) + b"\x00")


def isr_change(partition: int, isr: list[int]) -> bytes:
    """``PartitionChangeRecord``: the ISR is tagged field 0."""
    tag = _ints(isr)
    return _frame(5) + struct.pack(">i", partition) + TOPIC_ID + _uv(1) + _uv(0) + _uv(len(tag)) + tag


def config_record(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    return _frame(4) + bytes([resource_type]) + _cs(resource) + _cs(name) + _cs(value) + b"\x00"


def metadata_log(tmp_path: Path, values: list[bytes]) -> Path:
    """One batch per record, offset i at time T0 + i seconds, in ``__cluster_metadata-0``."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir(parents=True)
    batches = [record_batch(i, [RecordSpec(None, v, T0 + 1000 * i)]) for i, v in enumerate(values)]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    return part


def intervals(items: list) -> list[tuple]:
    return [(u.partition, u.isr, u.min_insync_replicas, u.min_isr_source, u.from_offset, u.to_offset)
            for u in items if isinstance(u, metadata.UnderMinIsr)]


def test_isr_shrink_topic_config_and_cluster_default(tmp_path: Path, run_cli) -> None:
    part = metadata_log(tmp_path, [
        topic_record("orders"),                                    # 0
        partition_record(0, [1, 2, 3], [1, 2, 3], 1),              # 1
        partition_record(1, [2, 3, 1], [2, 3, 1], 2),              # 2
        isr_change(0, [1]),                                        # 3: below the default 2 (server.properties)
        isr_change(0, [1, 3]),                                     # 4: back
        config_record(2, "orders", "min.insync.replicas", "3"),    # 5: partition 0 under the topic's 3
        isr_change(1, [2, 3]),                                     # 6: partition 1 too
        config_record(2, "orders", "min.insync.replicas", None),   # 7: topic config deleted: default 2 again
        config_record(4, "", "min.insync.replicas", "1"),          # 8: cluster default 1 (dynamic)
        isr_change(0, []),                                         # 9: an empty ISR is under even 1
    ])
    items = list(metadata.metadata_timeline([part], min_insync_replicas=2))
    assert sorted(intervals(items), key=lambda t: (t[4], t[0])) == [
        (0, (1,), 2, "default", 3, 4),
        (0, (1, 3), 3, "topic", 5, 7),
        (1, (2, 3), 3, "topic", 6, 7),
        (0, (), 1, "cluster", 9, None),
    ]
    marks = [(s.offset, s.partition, s.min_isr) for s in items if isinstance(s, metadata.PartitionState) and s.min_isr]
    # a config change moves no row: the markers are on the partition records that crossed the line
    assert marks == [(3, 0, "under"), (4, 0, "back"), (6, 1, "under"), (9, 0, "under")]

    props = tmp_path / "server.properties"
    with props.open("wb") as fh:  # 4 GiB (sparse): an I/O error saying why, not gigabytes read
        fh.truncate(4 << 30)
    p = run_cli("metadata", "--under-min-isr", "--server-properties", str(props), str(part))
    assert p.returncode == 3 and "4294967296 bytes" in p.stderr and "Traceback" not in p.stderr, p.stderr
    props.unlink()
    props.write_text("# broker\nbroker.id=1\nmin.insync.replicas = 2\n")
    p = run_cli("metadata", "--under-min-isr", "-f", "jsonl", "--server-properties", str(props), str(part))
    assert p.returncode == 1, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["partition"], r["from_offset"], r["to_offset"], r["from_time"], r["to_time"]) for r in rows] == [
        (0, 3, 4, T0 + 3000, T0 + 4000), (0, 5, 7, T0 + 5000, T0 + 7000), (1, 6, 7, T0 + 6000, T0 + 7000),
        (0, 9, None, T0 + 9000, None)]
    assert {r["type"] for r in rows} == {"under_min_isr"} and rows[0]["isr"] == [1] and rows[0]["replicas"] == [1, 2, 3]
    text = run_cli("metadata", "--min-insync-replicas", "2", str(part))
    assert text.returncode == 0 and "UNDER min ISR" in text.stdout and "back to min ISR" in text.stdout
    # A static default of 1: the ISR of 1 at offset 3 is enough; the topic's own 3 and the empty ISR are not.
    p = run_cli("metadata", "--under-min-isr", "-f", "jsonl", "--min-insync-replicas", "1", str(part))
    assert [json.loads(line)["from_offset"] for line in p.stdout.splitlines()] == [5, 6, 9]


def _timelines(items: list) -> tuple[dict, dict]:
    """Per (metadata log, topic, partition): its rows' positions and replica counts, and its intervals."""
    rows: dict[tuple, list] = defaultdict(list)
    under: dict[tuple, list] = defaultdict(list)
    for i in items:
        if isinstance(i, metadata.PartitionState):
            where = Path(i.source).parent
            rows[(where, i.topic, i.partition)].append((i.offset, i.snapshot_end_offset, len(i.replicas), i.leader))
        elif isinstance(i, metadata.UnderMinIsr):
            under[(Path(i.source), i.topic, i.partition)].append(i)
    return rows, under


def test_real_kraft_metadata_single_replica_partitions_are_under_two() -> None:
    """Every real KRaft metadata log of the corpus: with min.insync.replicas 2 a partition with one replica is
    under it over its whole timeline (from its first record to the end of the log), broken only while it has no
    leader (every produce request then gets NOT_LEADER_OR_FOLLOWER, whatever the ISR); with 1 none is."""
    roots = [corpus_root() / "real", corpus_root() / "kafka"]
    two = list(metadata.metadata_timeline(roots, min_insync_replicas=2))
    rows, under = _timelines(two)
    single = [k for k, r in rows.items() if all(n == 1 for _o, _s, n, _leader in r)]
    assert len(single) > 100
    broken = 0
    for key in single:
        spans = under[key]
        leaderless = {o for o, _s, _n, leader in rows[key] if leader == -1}
        first_offset, first_snapshot, _n, leader = rows[key][0]
        if leader != -1:
            assert (spans[0].from_offset, spans[0].from_snapshot_end_offset) == (first_offset, first_snapshot), key
        for a, b in zip(spans, spans[1:], strict=False):
            assert a.to_offset == b.from_offset or a.to_offset in leaderless, key
            broken += a.to_offset in leaderless
        assert spans[-1].to_offset is None or spans[-1].to_offset in leaderless, key
    assert broken  # the corpus has leaderless intervals (a broker's controlled shutdown) inside the spans
    assert any(s.from_offset is None for k in single for s in under[k])  # some begin in a KRaft snapshot
    assert list(metadata.metadata_timeline(roots, min_insync_replicas=1)) and not intervals(
        list(metadata.metadata_timeline(roots, min_insync_replicas=1)))


def test_snapshot_rows_carry_the_snapshot_end_offset() -> None:
    """Records inside a KRaft snapshot are numbered from 0: their rows show the snapshot's end offset (its file
    name) instead, and log rows after it carry their own offsets."""
    data = corpus_root() / "real/MashaKosher_Internship/c335121f/data/__cluster_metadata-0"
    items = [i for i in metadata.metadata_timeline([data]) if isinstance(i, metadata.PartitionState)]
    snap = [i for i in items if i.source.endswith(".checkpoint")]
    log = [i for i in items if i.source.endswith(".log")]
    end = int(Path(snap[0].source).name.split("-")[0])
    assert snap and all(i.offset is None and i.snapshot_end_offset == end for i in snap)
    assert log and all(i.offset >= end and i.snapshot_end_offset is None for i in log)


def test_each_metadata_log_is_replayed_on_its_own() -> None:
    """Three voters' copies of one cluster's log give three identical timelines, never one merged one."""
    raft = corpus_root() / "real/hiage_kafka-raft/c5f680e5"
    per_voter = defaultdict(list)
    for i in metadata.metadata_timeline([raft]):
        if isinstance(i, metadata.PartitionState):
            per_voter[Path(i.source).parent.parent.name].append(
                (i.offset, i.topic, i.partition, i.leader, i.isr, i.leader_epoch, i.partition_epoch))
    assert sorted(per_voter) == ["kafka1", "kafka2", "kafka3"]
    assert per_voter["kafka1"] == per_voter["kafka2"] == per_voter["kafka3"]
