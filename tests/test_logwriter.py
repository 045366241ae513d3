"""``kafkatool.logwriter`` against what Kafka wrote, then rule by rule.

The proof: every batch of the corpus's Kafka-written partitions (``kafka/logdir``, generated with Kafka's own
``UnifiedLog``/``LogSegment``/``ProducerStateManager``; config from PROVENANCE.md) re-appended in segment order
through :class:`PartitionWriter` gives the same files, byte for byte: ``.log``, ``.index``, ``.timeindex``,
``.txnindex``, producer ``.snapshot``\\ s, ``leader-epoch-checkpoint``, ``partition.metadata``. The crash mode is
checked the same way against the ``kafka/recovery/*/before`` partitions, whose only differences are the
documented damage.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, legacy_entry, record_batch
from kafkatool.errors import AppendError
from kafkatool.formats.metadata_files import parse_partition_metadata, uuid_from_string
from kafkatool.javacompat import java_date, java_hashmap_order
from kafkatool.logwriter import LogDirWriter, PartitionWriter
from kafkatool.records import RawBatch, scan
from kafkatool.smallfiles import (
    AbortedTxn,
    IndexEntry,
    TimeIndexEntry,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    read_offset_index,
    read_producer_entries,
    read_time_index,
    read_txn_index,
)

from .conftest import corpus_root

CORPUS_PARTITIONS = ["codecs-0", "codecs-1", "codecs-2", "codecs-3", "codecs-4", "txn-0", "appendtime-0",
                     "horizon-0", "headers-0"]
CORPUS_CONFIG = {"segment_bytes": 16384, "index_interval_bytes": 1024, "segment_index_bytes": 4096}
T0 = 1_700_000_000_000


def whole_batches(partition_dir: Path) -> Iterator[bytes]:
    """The batches of a partition in segment order, up to the first thing that is not a whole, valid batch."""
    for log in sorted(partition_dir.glob("*.log")):
        with open(log, "rb") as fh:
            for item in scan(fh, str(log), with_raw=True):
                if not isinstance(item, RawBatch) or not item.batch.crc_valid:
                    return
                yield item.raw


def files(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(d.iterdir()) if f.is_file()}


def topic_id_of(partition_dir: Path) -> bytes:
    return parse_partition_metadata((partition_dir / "partition.metadata").read_bytes())[1]


# --- the corpus, rebuilt -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    """The corpus log dir re-appended: partitions in its checkpoints' order, each closed as ``UnifiedLog.close``
    (without ``LogManager``'s final flush: the corpus recovery points are the last roll's), cleaner offsets
    as the corpus lists them."""
    src = corpus_root() / "kafka" / "logdir"
    order = [f"{e.topic}-{e.partition}" for e in read_offset_checkpoint(src / "replication-offset-checkpoint")]
    assert sorted(order) == sorted(CORPUS_PARTITIONS)
    cleaner = {f"{e.topic}-{e.partition}": e.offset for e in read_offset_checkpoint(src / "cleaner-offset-checkpoint")}
    out = tmp_path_factory.mktemp("rebuilt")
    logdir = LogDirWriter(out, cluster_id=None, broker_id=0, **CORPUS_CONFIG)
    for name in order:
        topic, partition = name.rsplit("-", 1)
        writer = logdir.partition(topic, int(partition), topic_id_of(src / name))
        for raw in whole_batches(src / name):
            writer.append(raw)
        writer.close()
        writer.cleaner_offset = cleaner.get(name)
    logdir.close()
    return out


@pytest.mark.parametrize("name", CORPUS_PARTITIONS)
def test_corpus_partition_is_rebuilt_byte_for_byte(rebuilt: Path, name: str) -> None:
    expected = files(corpus_root() / "kafka" / "logdir" / name)
    got = files(rebuilt / name)
    assert sorted(got) == sorted(expected)
    assert [f for f in expected if got[f] != expected[f]] == []


@pytest.mark.parametrize("name", ["replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                                  "cleaner-offset-checkpoint"])
def test_corpus_broker_checkpoints_are_rebuilt_byte_for_byte(rebuilt: Path, name: str) -> None:
    """HW = log end offset; recovery point = base of the last roll's new segment (flushed by the roll)."""
    assert (rebuilt / name).read_bytes() == (corpus_root() / "kafka" / "logdir" / name).read_bytes()


def test_log_start_offsets_follow_log_manager(rebuilt: Path) -> None:
    """Not byte-identical, on purpose: ``LogManager.checkpointLogStartOffsetsInDir`` writes only logs whose start
    offset is above their first segment's base offset, so ours has no entries. The corpus generator wrote the
    file itself with every partition; each of its entries is exactly such a left-out one (start 0 = first base)."""
    assert (rebuilt / "log-start-offset-checkpoint").read_bytes() == b"0\n0\n"
    corpus = corpus_root() / "kafka" / "logdir"
    entries = read_offset_checkpoint(corpus / "log-start-offset-checkpoint")
    assert sorted(f"{e.topic}-{e.partition}" for e in entries) == sorted(CORPUS_PARTITIONS)
    for e in entries:
        first_base = int(min((corpus / f"{e.topic}-{e.partition}").glob("*.log")).stem)
        assert e.offset == first_base == 0


# --- crash mode against the recovery corpus ----------------------------------------------------------


def _deleted(ours: bytes, theirs: bytes | None) -> bool:
    return theirs is None


def _one_byte_flipped(ours: bytes, theirs: bytes | None) -> bool:
    if theirs is None or len(ours) != len(theirs):
        return False
    return sum(a != b for a, b in zip(ours, theirs, strict=True)) == 1


def _garbage_head(ours: bytes, theirs: bytes | None) -> bool:
    """case.json: the first 16 bytes overwritten with garbage and 5 garbage bytes appended (4,101 bytes)."""
    return (theirs is not None and len(theirs) == len(ours) + 5 and theirs[:16] != ours[:16]
            and theirs[16:len(ours)] == ours[16:])


def _torn(ours: bytes, theirs: bytes | None) -> bool:
    return theirs is not None and len(theirs) > len(ours) and theirs.startswith(ours)


def _zero_tail(ours: bytes, theirs: bytes | None) -> bool:
    return theirs is not None and theirs == ours + bytes(65536)


CRASH_CASES = {  # case: {file: how the damaged corpus file relates to ours} (damage as case.json describes it)
    "bad-snapshot": {"00000000000000000174.snapshot": _one_byte_flipped},
    "corrupt-index": {"00000000000000000259.index": _garbage_head},
    "missing-indexes": {"00000000000000000086.index": _deleted, "00000000000000000086.timeindex": _deleted},
    "torn-tail": {"00000000000000000259.log": _torn},
    "zero-tail": {"00000000000000000259.log": _zero_tail},
}


@pytest.mark.parametrize("case", sorted(CRASH_CASES))
def test_unclean_close_matches_a_killed_broker(tmp_path: Path, case: str) -> None:
    """``close(clean=False)``: active indexes still preallocated (4096 / 4092 bytes), no final time-index entry,
    no snapshot at the log end; every file equals the recovery case's ``before`` except the damaged ones."""
    src = corpus_root() / "kafka" / "recovery" / case / "before" / "rtopic-0"
    writer = PartitionWriter(tmp_path / "rtopic-0", topic="rtopic", partition=0, topic_id=topic_id_of(src),
                             **{**CORPUS_CONFIG, "segment_bytes": 8192})
    for raw in whole_batches(src):
        writer.append(raw)
    writer.close(clean=False)
    ours, theirs = files(tmp_path / "rtopic-0"), files(src)
    assert set(theirs) <= set(ours)
    assert len(ours["00000000000000000259.index"]) == 4096
    assert len(ours["00000000000000000259.timeindex"]) == 4092
    damaged = CRASH_CASES[case]
    assert [f for f in ours if f not in damaged and ours[f] != theirs[f]] == []
    assert all(relation(ours[f], theirs.get(f)) for f, relation in damaged.items())


# --- rules, one by one -------------------------------------------------------------------------------


def batch(offset: int, n: int = 1, *, t: int = T0, value_size: int = 50, **kw) -> bytes:
    records = [RecordSpec(f"k{offset + i}".encode(), bytes(value_size), t + i) for i in range(n)]
    return record_batch(offset, records, **kw)


def writer(tmp_path: Path, **config) -> PartitionWriter:
    return PartitionWriter(tmp_path / "t-0", topic="t", partition=0, topic_id=bytes(range(1, 17)), **config)


def test_roll_when_the_next_batch_would_pass_segment_bytes(tmp_path: Path) -> None:
    size = len(batch(0))
    w = writer(tmp_path, segment_bytes=3 * size)
    for offset in range(4):
        w.append(batch(offset))
    assert w.segment_base_offsets == [0, 3]  # exactly segment.bytes is allowed; one byte more rolls
    w.close()
    d = tmp_path / "t-0"
    assert (d / "00000000000000000000.log").stat().st_size == 3 * size
    assert sorted(p.name for p in d.glob("*.snapshot")) == ["00000000000000000003.snapshot",
                                                            "00000000000000000004.snapshot"]


def test_roll_when_an_index_is_full(tmp_path: Path) -> None:
    """segment.index.bytes=24: 3 offset entries, 2 time entries; the full time index rolls the segment."""
    w = writer(tmp_path, segment_index_bytes=24, index_interval_bytes=0)
    for offset in range(4):
        w.append(batch(offset, t=T0 + 10 * offset))
    assert w.segment_base_offsets == [0, 3]
    assert w.time_index(0) == [TimeIndexEntry(T0 + 10, 1), TimeIndexEntry(T0 + 20, 2)]
    w.close()
    assert (tmp_path / "t-0" / "00000000000000000000.index").stat().st_size == 16
    assert (tmp_path / "t-0" / "00000000000000000000.timeindex").stat().st_size == 24


def test_roll_on_segment_ms_measured_in_record_timestamps(tmp_path: Path) -> None:
    w = writer(tmp_path, segment_ms=1000)
    for offset, t in enumerate([T0, T0 + 1000, T0 + 1001, T0 + 1500]):
        w.append(batch(offset, t=t))
    assert w.segment_base_offsets == [0, 2]  # 1001 ms after the segment's first batch passes segment.ms
    w.close()


def test_index_entry_after_index_interval_bytes(tmp_path: Path) -> None:
    """Bytes are counted before the append: an entry when more than the interval precedes the batch."""
    size = len(batch(0))
    w = writer(tmp_path, index_interval_bytes=size * 5 // 2)
    for offset in range(10):
        w.append(batch(offset, t=T0 + offset))
    assert w.offset_index(0) == [IndexEntry(3, 3 * size), IndexEntry(6, 6 * size), IndexEntry(9, 9 * size)]
    w.close()
    d = tmp_path / "t-0"
    assert read_offset_index(d / "00000000000000000000.index") == w.offset_index(0)
    assert read_time_index(d / "00000000000000000000.timeindex") == [
        TimeIndexEntry(T0 + 3, 3), TimeIndexEntry(T0 + 6, 6), TimeIndexEntry(T0 + 9, 9)]


def test_time_index_keeps_the_offset_that_first_reached_the_max_timestamp(tmp_path: Path) -> None:
    w = writer(tmp_path, index_interval_bytes=0)
    for offset, t in enumerate([100, 300, 200, 300, 400]):
        w.append(batch(offset, t=T0 + t))
    assert [e.offset for e in w.offset_index(0)] == [1, 2, 3, 4]
    assert w.time_index(0) == [TimeIndexEntry(T0 + 300, 1), TimeIndexEntry(T0 + 400, 4)]
    w.close()


def test_aborted_transactions_and_the_lso_of_overlapping_transactions(tmp_path: Path) -> None:
    a, b = {"producer_id": 10, "producer_epoch": 0}, {"producer_id": 20, "producer_epoch": 0}

    def marker(offset: int, commit: bool, producer: dict) -> bytes:
        return end_transaction_marker(offset, commit, coordinator_epoch=5, timestamp=T0 + offset, **producer)

    w = writer(tmp_path, segment_bytes=700)
    w.append(batch(0, 2, base_sequence=0, transactional=True, **a))   # A opens at 0
    w.append(batch(2, 2, base_sequence=0, transactional=True, **b))   # B opens at 2
    w.append(marker(4, False, a))                                      # ABORT A: LSO = B's 2, not A's own 0
    w.append(batch(5, 2, base_sequence=2, transactional=True, **a))   # A opens again at 5
    w.append(marker(7, False, b))                                      # ABORT B: LSO = A's 5
    w.append(marker(8, True, a))                                       # COMMIT: no entry
    w.append(batch(9, 1, base_sequence=2, transactional=True, **b))
    w.append(marker(10, False, b))                                     # nothing else open: LSO = 11
    w.close()
    expected = [AbortedTxn(0, 10, 0, 4, 2), AbortedTxn(0, 20, 2, 7, 5), AbortedTxn(0, 20, 9, 10, 11)]
    by_segment = {base: w.aborted_transactions(base) for base in w.segment_base_offsets}
    assert [t for base in sorted(by_segment) for t in by_segment[base]] == expected
    assert len(w.segment_base_offsets) > 1  # markers land in the segment that holds them
    for base, txns in by_segment.items():
        path = tmp_path / "t-0" / f"{base:020d}.txnindex"
        if txns:
            assert read_txn_index(path, base) == txns
        else:
            assert not path.exists()  # created by the first append, as TransactionIndex does
    producers = {p.producer_id: p for p in read_producer_entries(tmp_path / "t-0" / f"{11:020d}.snapshot")}
    assert (producers[10].current_txn_first_offset, producers[20].current_txn_first_offset) == (-1, -1)
    assert (producers[20].last_offset, producers[20].timestamp, producers[20].coordinator_epoch) == (9, T0 + 10, 5)


def test_open_transaction_in_the_snapshot_and_epoch_bump_by_marker(tmp_path: Path) -> None:
    w = writer(tmp_path)
    w.append(batch(0, 3, base_sequence=7, producer_id=1, producer_epoch=0, transactional=True))
    w.append(batch(3, 2, base_sequence=0, producer_id=2, producer_epoch=4, transactional=True))
    w.append(end_transaction_marker(5, False, producer_id=1, producer_epoch=1, coordinator_epoch=3,
                                    timestamp=T0 + 99))
    w.close()
    p1, p2 = read_producer_entries(tmp_path / "t-0" / f"{6:020d}.snapshot")  # HashMap buckets 1, 2
    assert (p1.producer_id, p2.producer_id) == (1, 2)
    assert (p1.producer_epoch, p1.last_sequence, p1.last_offset, p1.offset_delta, p1.timestamp,
            p1.coordinator_epoch, p1.current_txn_first_offset) == (1, -1, -1, 0, T0 + 99, 3, -1)
    assert (p2.producer_epoch, p2.last_sequence, p2.last_offset, p2.offset_delta,
            p2.current_txn_first_offset) == (4, 1, 4, 1, 3)


def test_leader_epoch_cache(tmp_path: Path) -> None:
    w = writer(tmp_path)
    checkpoint = tmp_path / "t-0" / "leader-epoch-checkpoint"
    assert checkpoint.read_bytes() == b""  # created empty with the log
    w.append(batch(0, partition_leader_epoch=0))
    w.append(batch(1, partition_leader_epoch=2))
    w.append(batch(2, partition_leader_epoch=2))
    assert w.leader_epochs == [(0, 0), (2, 1)]
    w.append(batch(3, partition_leader_epoch=1))  # a lower epoch drops the entries it contradicts
    assert [(e.epoch, e.start_offset) for e in read_epoch_checkpoint(checkpoint)] == [(0, 0), (1, 3)]
    w.append(legacy_entry(4, [RecordSpec(b"k", b"v", T0 + 7)], magic=1))  # a v0/v1 entry clears the cache
    assert checkpoint.read_bytes() == b"0\n0\n"
    w.close()


def test_legacy_entries(tmp_path: Path) -> None:
    w = writer(tmp_path, index_interval_bytes=0)
    w.append(legacy_entry(0, [RecordSpec(None, b"v0", -1)], magic=0))
    w.append(legacy_entry(3, [RecordSpec(None, b"a", T0 + 1), RecordSpec(None, b"b", T0 + 5),
                              RecordSpec(None, b"c", T0 + 2)], magic=1, compression="gzip"))
    w.append(legacy_entry(4, [RecordSpec(b"k", b"v", T0 + 3)], magic=1))
    assert w.log_end_offset == 5
    assert [e.offset for e in w.offset_index(0)] == [3, 4]
    assert w.time_index(0) == [TimeIndexEntry(T0 + 5, 3)]  # v0 has no timestamp; the wrapper's is the max
    w.close()


def test_appends_kafka_refuses(tmp_path: Path) -> None:
    w = writer(tmp_path)
    w.append(batch(0, 2))
    damaged = bytearray(batch(2))
    damaged[-1] ^= 1
    txn = {"producer_id": 1, "producer_epoch": 0}
    refused = [
        batch(1),                        # below the log end offset
        bytes(damaged),                  # CRC mismatch
        batch(2)[:-3],                   # partial batch
        b"",
        batch(3) + batch(2),             # offsets going back inside one append
        batch(2, transactional=True, partition_leader_epoch=-1, **txn),  # no leader epoch
    ]
    for records in refused:
        with pytest.raises(AppendError):
            w.append(records)
    w.append(batch(2, transactional=True, **txn))
    with pytest.raises(AppendError, match="InvalidTxnState"):
        w.append(batch(3, **txn))
    w.close()
    assert w.log_end_offset == 3
    assert (tmp_path / "t-0" / "00000000000000000000.log").stat().st_size == len(batch(0, 2)) + len(
        batch(2, transactional=True, **txn))


def test_several_batches_in_one_append_index_as_one(tmp_path: Path) -> None:
    """One append of several batches (a follower's fetch) gets at most one index entry, at its first byte."""
    w = writer(tmp_path, index_interval_bytes=0)
    w.append(batch(0))
    w.append(batch(1, t=T0 + 50) + batch(2, t=T0 + 20))
    assert w.offset_index(0) == [IndexEntry(2, len(batch(0)))]
    assert w.time_index(0) == [TimeIndexEntry(T0 + 50, 1)]
    w.close()


def test_log_dir_writer_clean_shutdown(tmp_path: Path) -> None:
    with LogDirWriter(tmp_path, cluster_id="c1", node_id=3, broker_epoch=9) as logdir:
        p = logdir.partition("a", 0, bytes(range(1, 17)), segment_bytes=200)
        for offset in range(3):
            p.append(batch(offset))
        q = logdir.partition("b", 1, bytes(range(2, 18)))
        q.high_watermark = 0
    assert p.segment_base_offsets == [0, 1, 2]
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == b"0\n2\na 0 3\nb 1 0\n"
    assert (tmp_path / "replication-offset-checkpoint").read_bytes() == b"0\n2\na 0 3\nb 1 0\n"
    assert (tmp_path / "cleaner-offset-checkpoint").read_bytes() == b"0\n0\n"
    assert (tmp_path / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":9}'
    assert (tmp_path / "b-1" / "leader-epoch-checkpoint").read_bytes() == b""
    assert not list((tmp_path / "b-1").glob("*.snapshot"))  # nothing appended: no snapshot at 0


@pytest.mark.parametrize("sample, props", [
    ("real/apache_kafka_stray_core_data/023aafc3112/kafka-14742817827683959487/meta.properties",
     {"node_id": 2, "cluster_id": "cmsnF94nR4SecOYk7JtYWw", "directory_id": "H9Ogx1e_S4WGXyUnsXAtlw"}),
    ("real/tuyen-nnt_kafka_2.13-3.0.0/data/kafka/meta.properties",
     {"broker_id": 0, "cluster_id": "ZAJx9RX0SFuisj92dpmVfg"}),
])
def test_meta_properties_as_a_broker_writes_it(tmp_path: Path, sample: str, props: dict) -> None:
    """Same lines in the same (ConcurrentHashMap) order as real brokers' files; only the date differs (UTC here)."""
    if "directory_id" in props:
        props = {**props, "directory_id": uuid_from_string(props["directory_id"])}
    LogDirWriter(tmp_path, **props).close()
    ours = (tmp_path / "meta.properties").read_text("latin-1").splitlines()
    theirs = (corpus_root() / sample).read_text("latin-1").splitlines()
    assert ours[1] == "#" + java_date(1_700_000_000_000) == "#Tue Nov 14 22:13:20 UTC 2023"
    assert ours[:1] + ours[2:] == theirs[:1] + theirs[2:]


def test_java_hashmap_order() -> None:
    assert java_hashmap_order([1000, 2000, 3000]) == [2000, 1000, 3000]  # buckets 8, 0, 8
    assert java_hashmap_order([16, *range(1, 12)]) == [16, *range(1, 12)]  # 12 keys: table of 16
    assert java_hashmap_order([16, *range(1, 13)]) == [*range(1, 13), 16]  # 13th key doubles it
    colliding = [16 * i for i in range(9)]  # a 9th key in one bucket resizes a table under 64
    assert java_hashmap_order(colliding) == [0, 32, 64, 96, 128, 16, 48, 80, 112]
