"""The partition loader (:mod:`kafkatool.loader`) against Kafka's ``LogLoader``, and every command agreeing with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.formats import checkpoints
from kafkatool.loader import PartitionLoad, load_partition
from kafkatool.locate import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, locate
from kafkatool.log_check import CheckOptions, SegmentTask
from kafkatool.producers import replay_partition
from kafkatool.repair import RepairOptions, plan_partition
from kafkatool.replicas import open_replica
from kafkatool.segment_check import check_segment
from kafkatool.verify import PartitionSummary, verify_paths
from kafkatool.walk import partition_dirs

from .conftest import corpus_root, load_essence

T0 = 1_700_000_000_000
CASES = sorted(p.name for p in (corpus_root() / "kafka/recovery").iterdir() if p.is_dir())


def case_json(case: str) -> dict:
    return json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())


# --- Kafka's own recovery ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("from_zero", [False, True], ids=["checkpointed", "recovery-point-0"])
def test_load_equals_what_kafkas_log_loader_did(case: str, from_zero: bool) -> None:
    """``LogLoader.load`` (with ``recoverLog``, ``LogSegment.recover``, ``LeaderEpochFileCache.assign/
    truncateFromEnd/truncateFromStart``, ``UnifiedLog.rebuildProducerState``) on each damaged partition: log start,
    next offset, segments after recovery, leader epochs and the first unstable offset are what Kafka's own classes
    made of it (``case.json`` ``kafka_result``). From recovery point 0 too (a partition dir copied without its log
    dir's checkpoints): the damage is in the last segment, so the result is the same."""
    c = case_json(case)
    inv, kafka = c["recovery_invocation"], c["kafka_result"]
    loaded = load_partition(corpus_root() / "kafka/recovery" / case / "before/rtopic-0",
                            recovery_point=0 if from_zero else inv["recoveryPointCheckpoint"],
                            clean_shutdown=inv["hadCleanShutdown"], log_start=inv["logStartOffsetCheckpoint"])
    assert loaded.log_start_offset == kafka["log_start_offset"]
    assert loaded.log_end_offset == kafka["next_offset"]
    assert [[s.base_offset, s.valid_bytes, s.next_offset] for s in loaded.segments if not s.deleted] == \
        kafka["segments"]
    assert [list(e) for e in loaded.epoch_cache.entries] == kafka["leader_epochs"]
    assert loaded.first_unstable_offset == kafka["first_unstable_offset"]
    assert sorted(loaded.open_transactions) == sorted(kafka["active_producers"])
    if loaded.log_end_offset != c["leo_intact"] and case != "torn-tail":  # the cut batches are still on disk
        assert loaded.on_disk_end_offset == c["leo_intact"]


# --- every command, one loader ------------------------------------------------------------------------------------


def test_verify_replicas_and_repair_load_every_corpus_partition_alike() -> None:
    """Every partition dir under ``kafka/`` and ``real/``: ``verify``'s summary, ``replicas``' Replica and
    ``repair``'s dry-run plan give the same log end offset (``LogLoader.load``), first unstable offset
    (``ProducerStateManager.firstUnstableOffset``) and leader-epoch cache (``LeaderEpochFileCache``), and so does
    ``producers``' replay for the first unstable offset."""
    roots = [corpus_root() / "kafka", corpus_root() / "real"]
    summaries = {s.path: s for s in verify_paths(roots) if isinstance(s, PartitionSummary)}
    seen = 0
    for pd in partition_dirs(roots):
        seen += 1
        v = summaries[pd.display]
        r = open_replica(pd, pd.display)
        plan = plan_partition(pd.path, pd.display, RepairOptions())
        cache = [tuple(e) for e in r.epoch_cache().entries]
        assert (v.log_end_offset, v.first_unstable_offset, v.leader_epochs) == (
            r.leo, r.first_unstable_offset, cache), pd.display
        if plan.leo_after is not None:
            assert plan.leo_after == r.leo, pd.display
        for action in plan.actions:
            if action.path.endswith("leader-epoch-checkpoint") and "epochs" in action.detail:
                assert [tuple(e) for e in action.detail["epochs"]] == cache, pd.display
        fuo = replay_partition(pd.path, pd.display, pd.files).lso
        assert fuo == (r.first_unstable_offset if r.first_unstable_offset is not None else r.leo), pd.display
    assert seen > 100


def test_the_loader_fed_by_verifys_segment_checks_loads_every_corpus_partition_as_it_reads_alone() -> None:
    """``verify`` reads each segment once: its checks' scan (``check_segment``) feeds the loader through
    ``PartitionLoad.tap``. Fed so, in ``verify``'s order (and with ``--deep``, whose scan keeps each batch's bytes), the
    loaded partition (``LogLoader.load``: cuts, segments, epochs, producer state) is the one the loader reads for
    itself, on every corpus partition; a tap of a file the broker does not load as a segment is None."""
    roots = [corpus_root() / "kafka", corpus_root() / "real"]
    seen = 0
    for deep in (False, True):
        options = CheckOptions(deep=deep)
        for pd in partition_dirs(roots):
            alone = load_partition(pd.path, pd.display, files=pd.files, logdir=pd.logdir)
            load = PartitionLoad(pd.path, pd.display, files=pd.files, logdir=pd.logdir)
            logs = sorted(d for p, d in pd.files if p.name.endswith(".log"))
            for display in logs:
                check_segment(SegmentTask(0, display), options, tap=load.tap(display))
                assert load.tap(display) is None
            assert load_essence(load.finish()) == load_essence(alone), pd.display
            seen += 1
    assert seen > 200


def test_locate_starts_and_ends_every_corpus_partition_where_the_loader_does() -> None:
    """``locate`` reads no more than it must (``UnifiedLog.fetchOffsetByTimestamp`` with LATEST/EARLIEST), yet its log
    start (``LogLoader``: max(log-start checkpoint, first segment's base offset)) is the loader's, and its log end
    (``LogSegment.readNextOffset`` of the files as they are, recovery not run) is the loader's on-disk end, on every
    corpus partition."""
    roots = [corpus_root() / "kafka", corpus_root() / "real"]
    seen = 0
    for pd in partition_dirs(roots):
        loaded = load_partition(pd.path, pd.display, files=pd.files, logdir=pd.logdir)
        if not loaded.segments:
            continue
        seen += 1
        latest = locate(pd.path, timestamp=LATEST_TIMESTAMP)
        earliest = locate(pd.path, timestamp=EARLIEST_TIMESTAMP)
        assert (latest.log_start_offset, latest.log_end_offset, earliest.offset) == (
            loaded.log_start_offset, loaded.on_disk_end_offset, loaded.log_start_offset), pd.display
    assert seen > 100


def test_crc_flip_verify_and_replicas_say_what_kafka_says() -> None:
    """The issue's case: a CRC error mid-segment in ``crc-flip/before``. Kafka's recovery ends the log at 264 with
    the transaction of producer 1000 from 261 open; ``verify`` said 269 and 266."""
    kafka = case_json("crc-flip")["kafka_result"]
    root = corpus_root() / "kafka/recovery/crc-flip/before"
    (summary,) = [s for s in verify_paths([root]) if isinstance(s, PartitionSummary)]
    (pd,) = partition_dirs([root])
    r = open_replica(pd, "r")
    assert (summary.log_end_offset, summary.first_unstable_offset) == (kafka["next_offset"],
                                                                       kafka["first_unstable_offset"]) == (264, 261)
    assert (r.leo, r.first_unstable_offset) == (264, 261)
    assert summary.on_disk_end_offset == 269


# --- compacted partitions -----------------------------------------------------------------------------------------


def test_compacted_partitions_raise_no_epoch_start_mismatch() -> None:
    """The log cleaner removed the first batches of an epoch in real ``__consumer_offsets-2`` and ``-15``: the
    checkpoint (``LeaderEpochFileCache``) rightly starts the epoch before the first batch left."""
    root = corpus_root() / "real/MashaKosher_Internship"
    items = list(verify_paths([root]))
    offsets = [s for s in items if isinstance(s, PartitionSummary)
               and s.path.endswith(("__consumer_offsets-2", "__consumer_offsets-15"))]
    assert len(offsets) >= 2
    assert not [f for f in items if getattr(f, "code", None) == "epoch-start-mismatch"
                and "__consumer_offsets-" in f.path]


def _compactable(root: Path, *, cleaner: bool) -> Path:
    """``orders-0``: epoch 0 at 0..3 and epoch 1 at 4..7, where the cleaner removed 4..5 (the checkpoint still
    starts epoch 1 at 4, the first batch left is at 6), written as a broker does (``LogDirWriter``)."""
    from kafkatool.logwriter import LogDirWriter

    with LogDirWriter(root, cluster_id="c1", node_id=1) as ld:
        w = ld.partition("orders", 0, b"\x01" * 16)
        for off, epoch in ((0, 0), (2, 0), (6, 1)):
            w.append(record_batch(off, [RecordSpec(b"k", b"v", T0 + off), RecordSpec(b"k", b"w", T0 + off + 1)],
                                  partition_leader_epoch=epoch))
        if cleaner:
            w.cleaner_offset = 8
    (root / "orders-0" / "leader-epoch-checkpoint").write_bytes(checkpoints.build_epoch_checkpoint([(0, 0), (1, 4)]))
    return root


@pytest.mark.parametrize("cleaner", [True, False])
def test_a_partition_in_cleaner_offset_checkpoint_is_compacted(tmp_path: Path, cleaner: bool) -> None:
    """A topic is compacted when the cleaner keeps an offset for it (``cleaner-offset-checkpoint``): then an epoch
    starting before its first batch is normal; otherwise it is reported."""
    root = _compactable(tmp_path / "logdir", cleaner=cleaner)
    codes = {f.code for f in verify_paths([root]) if hasattr(f, "code")}
    assert ("epoch-start-mismatch" in codes) is not cleaner
    assert load_partition(root / "orders-0").compacted is cleaner


# --- producer state -----------------------------------------------------------------------------------------------


def _idem(offset: int, n: int = 1, *, pid: int = 9, epoch: int = 0, seq: int = 0, txn: bool = False) -> bytes:
    return record_batch(offset, [RecordSpec(None, b"x", T0 + offset + i) for i in range(n)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, transactional=txn)


def _raw_partition(root: Path, segments: dict[int, list[bytes]], *, recovery_point: int | None = None) -> Path:
    """A partition dir ``t-0`` under log dir ``root``: one ``.log`` per base offset, empty (sane) indexes."""
    d = root / "t-0"
    d.mkdir(parents=True)
    for base, parts in segments.items():
        (d / f"{base:020d}.log").write_bytes(b"".join(parts))
        (d / f"{base:020d}.index").write_bytes(b"")
        (d / f"{base:020d}.timeindex").write_bytes(b"")
    if recovery_point is not None:
        (root / "recovery-point-offset-checkpoint").write_bytes(
            checkpoints.build_offset_checkpoint([("t", 0, recovery_point)]))
    return d


def _flip_crc(d: Path, base: int, position: int) -> None:
    """Flip the last byte of the batch at ``position`` (inside its records: the CRC no longer matches)."""
    log = d / f"{base:020d}.log"
    data = bytearray(log.read_bytes())
    size = int.from_bytes(data[position + 8:position + 12], "big") + 12
    data[position + size - 1] ^= 0xFF
    log.write_bytes(bytes(data))


def test_a_fenced_producer_epoch_never_becomes_current(tmp_path: Path) -> None:
    """``ProducerAppendInfo.checkProducerEpoch``: a batch or marker whose producer epoch is older than the
    producer's current one is refused from a client (``InvalidProducerEpochException``); in a log it changes
    nothing: not the epoch, not the last offset, not the transaction (kept open by epoch 1, an epoch-0 ABORT
    does not end it)."""
    txn = _idem(3, 2, pid=10, epoch=1, seq=0, txn=True)
    fenced_abort = end_transaction_marker(5, False, producer_id=10, producer_epoch=0, coordinator_epoch=0,
                                          timestamp=T0 + 5)
    parts = [_idem(0, epoch=1), _idem(1, epoch=1, seq=1), _idem(2, epoch=0, seq=2), txn, fenced_abort,
             _idem(6, pid=11, epoch=0, txn=True, seq=0)]
    d = _raw_partition(tmp_path / "logdir", {0: parts})
    loaded = load_partition(d)
    p9, p10 = loaded.producers[9], loaded.producers[10]
    assert (p9.epoch, p9.last_batch) == (1, (1, 1, 0))
    assert (p10.epoch, p10.txn_first_offset) == (1, 3)
    assert sorted(loaded.fenced) == [(9, 0, 2), (10, 0, 5)]
    assert loaded.open_transactions == {10: 3, 11: 6} and loaded.first_unstable_offset == 3
    history = replay_partition(d)  # the producers command: the same state, and the fenced writes reported
    assert {e.producer_id: e.producer_epoch for e in history.entries()} == {9: 1, 10: 1, 11: 0}
    assert [f.code for f in history.findings if f.code == "producer-fenced"] == ["producer-fenced"] * 2


@pytest.mark.parametrize("trusted", [True, False])
def test_a_batch_with_a_bad_crc_never_counts_toward_producer_state(tmp_path: Path, trusted: bool) -> None:
    """Producer 20's transactional batch at 2 has a bad CRC. In a segment the broker recovers (``LogSegment.recover``:
    ``batch.ensureValid()``) the log is cut there; in a segment below the recovery point, kept as it is, the batch
    stays in the log but opens no transaction (Kafka's ``loadProducersFromRecords`` does not check CRCs; the loader
    never counts such a batch)."""
    seg0 = [_idem(0, 2, pid=9), _idem(2, 2, pid=20, txn=True), _idem(4, pid=9, seq=2)]
    d = _raw_partition(tmp_path / "logdir", {0: seg0, 5: [_idem(5, pid=9, seq=3)]},
                       recovery_point=5 if trusted else 0)
    _flip_crc(d, 0, len(seg0[0]))
    loaded = load_partition(d)
    assert loaded.open_transactions == {} and loaded.first_unstable_offset is None
    assert 20 not in loaded.producers
    if trusted:
        assert loaded.cuts == [] and loaded.log_end_offset == 6
        assert loaded.producers[9].last_batch == (3, 5, 0)
    else:
        assert [(c.segment_base, c.position, c.ends_log) for c in loaded.cuts] == [(0, len(seg0[0]), True)]
        assert loaded.log_end_offset == 2 and [s.deleted for s in loaded.segments] == [False, True]
        assert loaded.producers[9].last_batch == (1, 1, 1)


def test_a_missing_index_cuts_its_segment_alone(tmp_path: Path) -> None:
    """``LogLoader.loadSegmentFiles``: a segment without its offset index is recovered on its own (``recoverSegment``)
    before ``recoverLog``; its invalid tail is cut and the segments after it stay (an offset gap remains)."""
    d = _raw_partition(tmp_path / "logdir", {0: [_idem(0, pid=-1), _idem(1, pid=-1)], 2: [_idem(2, pid=-1)],
                                             3: [_idem(3, pid=-1)]}, recovery_point=3)
    _flip_crc(d, 0, len(_idem(0, pid=-1)))
    (d / f"{0:020d}.index").unlink()
    loaded = load_partition(d)
    assert [(c.segment_base, c.ends_log) for c in loaded.cuts] == [(0, False)]
    assert [(s.base_offset, s.next_offset, s.deleted) for s in loaded.segments] == [(0, 1, False), (2, 3, False),
                                                                                    (3, 4, False)]
    assert loaded.log_end_offset == 4


def test_a_clean_shutdown_trusts_the_files_and_keeps_the_checkpointed_epochs(tmp_path: Path) -> None:
    """``recoverLog`` is skipped after a clean shutdown (``.kafka_cleanshutdown``): nothing is cut, no recovered
    batch's epoch is assigned, only ``truncateFromEnd``/``truncateFromStart`` touch the checkpoint's cache."""
    root = _compactable(tmp_path / "logdir", cleaner=False)
    shutil.copytree(root, tmp_path / "unclean")
    (tmp_path / "unclean" / ".kafka_cleanshutdown").unlink()
    (tmp_path / "unclean" / "recovery-point-offset-checkpoint").unlink()
    (root / "orders-0" / "leader-epoch-checkpoint").write_bytes(checkpoints.build_epoch_checkpoint([(0, 0)]))
    (tmp_path / "unclean" / "orders-0" / "leader-epoch-checkpoint").write_bytes(
        checkpoints.build_epoch_checkpoint([(0, 0)]))
    assert load_partition(root / "orders-0").epoch_cache.entries == [(0, 0)]
    assert load_partition(tmp_path / "unclean" / "orders-0").epoch_cache.entries == [(0, 0), (1, 6)]


def test_after_a_clean_shutdown_only_snapshots_at_segment_bases_or_the_log_end_count(tmp_path: Path) -> None:
    """``ProducerStateManager.removeStraySnapshots`` (``LogLoader.load``, before the final ``rebuildProducerState``):
    a snapshot at no segment's base offset below the last segment is deleted. With no other snapshot and a clean
    shutdown the broker then assumes no producer state (the upgrade path); a snapshot at the log end is kept."""
    seg0 = [_idem(0, 2, pid=20, txn=True, seq=0), _idem(2, pid=9)]
    d = _raw_partition(tmp_path / "logdir", {0: seg0, 3: [_idem(3, pid=9, seq=1)]})
    (tmp_path / "logdir" / ".kafka_cleanshutdown").write_bytes(b"")
    snapshot = corpus_root() / "kafka/recovery/crc-flip/before/rtopic-0" / f"{86:020d}.snapshot"  # readable, any
    shutil.copyfile(snapshot, d / f"{2:020d}.snapshot")  # stray: 2 is no segment's base, below the last (3)
    loaded = load_partition(d)
    assert (loaded.producers, loaded.replay_from, loaded.first_unstable_offset) == ({}, None, None)
    (d / f"{2:020d}.snapshot").rename(d / f"{0:020d}.snapshot")  # at a segment base: loaded, then the log replayed
    loaded = load_partition(d)
    assert loaded.producer_snapshot == 0 and loaded.first_unstable_offset == 0
    assert loaded.open_transactions[20] == 0


def test_a_stretch_that_ends_at_the_replay_start_is_replayed_from_there(tmp_path: Path) -> None:
    """The producer replay starts at a snapshot taken mid-segment, at offset 9 (the only one at or below the base
    of segment 15, which the recovery point 15 recovers): batch 9, the producer's last, is replayed, though it ends
    a run of batches that otherwise all lie before the snapshot (the native loader takes the run as one stretch; a
    new leader epoch ends it)."""
    from kafkatool.logwriter import PartitionWriter

    path = tmp_path / "t-0"
    # 69-byte batches: segment 0 holds offsets 0..14, segment 15 the rest
    with PartitionWriter(path, topic="t", partition=0, topic_id=bytes(range(16)), segment_bytes=15 * 69 + 68) as w:
        for i in range(9):
            w.append(_idem(i, pid=5, seq=i))
        assert w.take_snapshot() == path / f"{9:020d}.snapshot"  # the producer up to offset 8
        w.append(_idem(9, pid=5, seq=9))
        for i in range(10, 20):
            w.append(record_batch(i, [RecordSpec(None, b"x", T0 + i)], partition_leader_epoch=1))
    assert sorted(p.name for p in path.glob("*.log")) == [f"{0:020d}.log", f"{15:020d}.log"]
    for later in (15, 20):  # the roll's and the close's snapshots: gone, so the replay starts at 9
        (path / f"{later:020d}.snapshot").unlink()
    loaded = load_partition(path, recovery_point=15, clean_shutdown=False)
    assert loaded.producers[5].last_batch == (9, 9, 0)  # (last sequence, last offset, offset delta)
