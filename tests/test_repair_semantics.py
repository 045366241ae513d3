"""``repair`` does what Kafka's ``LogLoader`` does, and a second run plans nothing.

Each test cites the Kafka code it follows (``storage/.../log/LogLoader.java``, ``LogSegment.java``,
``UnifiedLog.java``; ``clients/.../record/FileLogInputStream.java``, ``DefaultRecordBatch.java``;
``storage/.../epoch/LeaderEpochFileCache.java``, ``server-common/.../CheckpointFile.java``).
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from crc32c import crc32c

from kafkatool.formats import record_batch
from kafkatool.model import Batch, Finding
from kafkatool.records import ScanOptions, scan
from kafkatool.smallfiles import read_epoch_checkpoint, read_offset_index, read_time_index, read_txn_index
from kafkatool.verify import verify_paths

from .clirun import cli
from .conftest import PROJECT_ROOT, corpus_root

CASES = sorted(p.name for p in (corpus_root() / "kafka/recovery").iterdir() if p.is_dir())
# The swapped-in segment (kafkatool/repair.py, step 1): Kafka leaves it with the empty indexes it opened, we rebuild
# them; and with recovery point 0 Kafka recovers it too, so only the checkpointed run is compared for it.
SWAPPED_IN = {"leftovers": "00000000000000000086"}


def case_json(case: str) -> dict:
    return json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())


def writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def copy_case(case: str, tmp_path: Path, mode: str) -> Path:
    """The damaged partition dir, writable. ``rp0``: the partition dir alone (no log dir checkpoints, so the
    recovery point is 0, as when a partition dir is copied away); ``checkpoint``: in a log dir whose
    recovery-point and log-start checkpoints hold what Kafka's LogLoader was given (case.json)."""
    before = corpus_root() / "kafka/recovery" / case / "before/rtopic-0"
    if mode == "rp0":
        return writable_copy(before, tmp_path / "data/rtopic-0")
    part = writable_copy(before, tmp_path / "logdir/rtopic-0")
    inv = case_json(case)["recovery_invocation"]
    (part.parent / "recovery-point-offset-checkpoint").write_text(f"0\n1\nrtopic 0 {inv['recoveryPointCheckpoint']}\n")
    (part.parent / "log-start-offset-checkpoint").write_text(f"0\n1\nrtopic 0 {inv['logStartOffsetCheckpoint']}\n")
    return part


def repair_jsonl(part: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    done = cli("repair", "-f", "jsonl", "--index-interval-bytes", "1024", *extra, str(part))
    return done, [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("mode", ["rp0", "checkpoint"])
@pytest.mark.parametrize("case", CASES)
def test_a_second_apply_plans_nothing(case: str, mode: str, tmp_path: Path) -> None:
    """``LogLoader.load`` on every recovery case, from recovery point 0 (every segment through
    ``recoverSegment``) and from the log dir's checkpoints: the first ``--apply`` leaves Kafka's ``.log`` files
    byte for byte and Kafka's log end offset; a second ``--apply`` finds nothing to do (no
    ``repair-not-idempotent``, no action)."""
    part = copy_case(case, tmp_path, mode)
    kafka = corpus_root() / "kafka/recovery" / case / "after/rtopic-0"
    expected = case_json(case)
    first, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup-1"))
    assert first.returncode == 0, first.stdout + first.stderr
    summary = lines[-1]
    assert summary["type"] == "partition" and summary["applied"] is True
    assert summary["leo_after"] == expected["kafka_result"]["next_offset"]
    rp = expected["recovery_invocation"]["recoveryPointCheckpoint"]
    assert (summary["recovery_point"], summary["recovery_point_source"]) == (
        (0, "none") if mode == "rp0" else (rp, "checkpoint"))
    assert not [d for d in lines if d["type"] == "finding"]

    logs = sorted(p.name for p in kafka.glob("*.log"))
    assert sorted(p.name for p in part.glob("*.log")) == logs
    for name in logs:
        assert (part / name).read_bytes() == (kafka / name).read_bytes(), name
    skip = SWAPPED_IN.get(case)
    for index in kafka.glob("*.index"):
        if skip and index.name.startswith(skip):
            continue
        assert read_offset_index(part / index.name) == read_offset_index(index), index.name
        timeindex = index.with_suffix(".timeindex")
        assert read_time_index(part / timeindex.name) == read_time_index(timeindex), timeindex.name
    if mode == "checkpoint":  # the same input as Kafka's: the same epoch cache, producer snapshots, .txnindex files
        for p in [*kafka.glob("*.snapshot"), *kafka.glob("*.txnindex"), kafka / "leader-epoch-checkpoint"]:
            assert (part / p.name).read_bytes() == p.read_bytes(), p.name
        assert (part.parent / "recovery-point-offset-checkpoint").read_text().split("\n")[2] == (
            f"rtopic 0 {expected['kafka_result']['next_offset']}")

    second, again = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup-2"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert [d for d in again if d["type"] != "partition"] == []
    assert again[-1]["actions"] == 0 and again[-1]["applied"] is False


@pytest.mark.parametrize("recovery_point", [174, 0])
def test_a_segment_recovered_as_it_is_loaded_is_cut_alone(recovery_point: int, tmp_path: Path) -> None:
    """``LogLoader.loadSegmentFiles``: a segment whose offset index is missing (``LogSegment.sanityCheck`` throws
    ``NoSuchFileException``) goes through ``recoverSegment`` as it is loaded, whatever the recovery point: its
    invalid tail is cut (``LogSegment.recover``) and the later segments stay. ``recoverLog`` then recovers the
    segments from the recovery point; the already cut segment truncates nothing more, so nothing ends the log
    there either. An offset gap remains, which ``verify`` reports.

    The middle segment 86 of the missing-indexes case (its .index and .timeindex deleted) gets a flipped byte in
    its last batch (offsets 171..173 at byte 7928); recovery point 174 puts it below, 0 above."""
    part = writable_copy(corpus_root() / "kafka/recovery/missing-indexes/before/rtopic-0", tmp_path / "data/rtopic-0")
    log = part / "00000000000000000086.log"
    data = bytearray(log.read_bytes())
    bad = 7928
    assert struct.unpack_from(">q", data, bad)[0] == 171 and bad + struct.unpack_from(">i", data, bad + 8)[0] + 12 \
        == len(data)
    data[bad + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    others = {p.name: p.read_bytes() for p in part.glob("*.log") if p != log}
    assert sorted(others) == ["00000000000000000000.log", "00000000000000000174.log", "00000000000000000259.log"]

    done, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup"),
                               "--recovery-point", str(recovery_point))
    assert done.returncode == 0, done.stdout + done.stderr
    truncations = [d for d in lines if d["type"] == "action" and d["action"] == "truncate"]
    assert [(Path(d["path"]).name, d["size_after"]) for d in truncations] == [(log.name, bad)]
    assert not [d for d in lines if d["type"] == "action" and d["action"] == "delete"]
    summary = lines[-1]
    assert (summary["leo_before"], summary["leo_after"], summary["offsets_removed"]) == (269, 269, [171, 173])
    assert log.read_bytes() == bytes(data[:bad])
    assert {p.name: p.read_bytes() for p in part.glob("*.log") if p != log} == others  # later segments kept
    assert (part / "00000000000000000086.index").exists() and (part / "00000000000000000174.index").exists()

    gaps = [f for f in verify_paths([part]) if getattr(f, "code", None) == "offset-gap"]
    assert [f.message.split(" (")[0] for f in gaps] == ["offsets 171..173"]
    again, lines = repair_jsonl(part, "--recovery-point", str(recovery_point))
    assert again.returncode == 0 and lines[-1]["actions"] == 0, again.stdout


@pytest.mark.parametrize(("recovery_point", "epochs"), [(174, [[1, 174]]), (0, [[0, 0], [1, 144]])])
def test_a_missing_epoch_checkpoint_is_created_as_the_broker_leaves_it(
        recovery_point: int, epochs: list[list[int]], tmp_path: Path) -> None:
    """``UnifiedLog.maybeCreateLeaderEpochCache`` opens ``leader-epoch-checkpoint`` (``CheckpointFile`` creates it
    empty when missing); ``LogSegment.recover`` calls ``LeaderEpochFileCache.assign`` for each recovered batch
    whose epoch is above the latest, which writes the file. So the broker's cache holds the epochs of the batches
    it recovers, no more: from recovery point 174 only epoch 1 at 174 (the cache forgets epoch 0 and that epoch 1
    began at 144), from 0 both."""
    part = writable_copy(corpus_root() / "kafka/recovery/torn-tail/before/rtopic-0", tmp_path / "data/rtopic-0")
    (part / "leader-epoch-checkpoint").unlink()
    done, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup"),
                               "--recovery-point", str(recovery_point))
    assert done.returncode == 0, done.stdout + done.stderr
    create = [d for d in lines if d["type"] == "action" and d["path"].endswith("leader-epoch-checkpoint")]
    assert [(d["action"], d["epochs"]) for d in create] == [("create", epochs)]
    assert [[e.epoch, e.start_offset] for e in read_epoch_checkpoint(part / "leader-epoch-checkpoint")] == epochs
    again, lines = repair_jsonl(part, "--recovery-point", str(recovery_point))
    assert again.returncode == 0 and lines[-1]["actions"] == 0, again.stdout


def test_a_missing_epoch_checkpoint_after_a_clean_shutdown_is_created_empty(tmp_path: Path) -> None:
    """After a clean shutdown ``LogLoader.recoverLog`` recovers nothing, so nothing is assigned and the file the
    broker creates (``CheckpointFile``: ``Files.createFile``) stays empty; a reader takes an empty file for no
    entries (``CheckpointReadBuffer.read``)."""
    logdir = writable_copy(PROJECT_ROOT / "fixtures/logdir", tmp_path / "logdir")
    assert (logdir / ".kafka_cleanshutdown").exists()
    (logdir / "orders-0/leader-epoch-checkpoint").unlink()
    done, lines = repair_jsonl(logdir / "orders-0", "--apply", "--backup-dir", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(d["action"], d["epochs"]) for d in lines if d["type"] == "action"] == [("create", [])]
    assert (logdir / "orders-0/leader-epoch-checkpoint").read_bytes() == b""
    again, lines = repair_jsonl(logdir / "orders-0")
    assert again.returncode == 0 and lines[-1]["actions"] == 0, again.stdout


@pytest.mark.parametrize(("magic", "position"), [(3, 347), (4, 156)])
def test_a_batch_with_a_magic_above_2_is_kept_and_flagged(magic: int, position: int, tmp_path: Path) -> None:
    """``FileLogInputStream.nextBatch`` reads any magic byte >= 2 as a ``DefaultRecordBatch``, whose ``ensureValid``
    checks its size and its CRC32C, computed from the attributes on: the magic byte is not covered. So
    ``LogSegment.recover`` keeps such a batch (and takes its epoch and producer state, ``batch.magic() >= 2``).
    In the torn-tail case, batch 264..265 (uncompressed, idempotent) gets magic 3, or batch 261..263 (lz4,
    transactional) magic 4: repair cuts only the torn tail, as Kafka did, and leaves every file as Kafka's
    recovery left it (the patched byte aside); verify reports the magic as an error, at its batch."""
    case = "torn-tail"
    part = copy_case(case, tmp_path, "checkpoint")
    log = part / "00000000000000000259.log"
    data = bytearray(log.read_bytes())
    assert data[position + 16] == 2
    data[position + 16] = magic
    log.write_bytes(bytes(data))

    with open(log, "rb") as fh:
        items = list(scan(fh, str(log)))
    batch = next(b for b in items if isinstance(b, Batch) and b.position == position)
    assert (batch.magic, batch.crc_valid) == (magic, True)
    assert [i.code for i in items if isinstance(i, Finding)] == ["torn-tail"]

    def magic_findings() -> list[tuple[str, int | None]]:
        return [(Path(f.path).name, f.position) for f in verify_paths([part]) if getattr(f, "code", "") ==
                "magic-above-v2" and f.severity == "error"]

    assert magic_findings() == [(log.name, position)]
    done, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stdout + done.stderr
    truncations = [(Path(d["path"]).name, d["size_after"]) for d in lines if d.get("action") == "truncate"]
    assert truncations == [(log.name, 846)]
    kafka = corpus_root() / "kafka/recovery" / case / "after/rtopic-0"
    expected_log = bytearray((kafka / log.name).read_bytes())
    expected_log[position + 16] = magic
    assert log.read_bytes() == bytes(expected_log)
    assert lines[-1]["leo_after"] == case_json(case)["kafka_result"]["next_offset"]
    for p in kafka.iterdir():
        if p.name == log.name:
            continue
        if p.suffix == ".index":
            assert read_offset_index(part / p.name) == read_offset_index(p), p.name
        elif p.suffix == ".timeindex":
            assert read_time_index(part / p.name) == read_time_index(p), p.name
        else:  # .log, .snapshot (the producer state took the batch in), .txnindex, leader-epoch-checkpoint
            assert (part / p.name).read_bytes() == p.read_bytes(), p.name
    assert magic_findings() == [(log.name, position)]
    again, lines = repair_jsonl(part)
    assert again.returncode == 0 and lines[-1]["actions"] == 0, again.stdout


def test_a_txnindex_failing_its_sanity_check_sends_its_segment_to_recovery(tmp_path: Path) -> None:
    """``LogSegment.sanityCheck`` at load runs ``TransactionIndex.sanityCheck``: an aborted transaction whose last
    offset is below the segment's base offset throws ``CorruptIndexException``, and ``loadSegmentFiles`` recovers
    the segment (below the recovery point too), which rebuilds its ``.txnindex``. A corrupt offset index, which
    the broker does not check at load, is rebuilt without recovering (or cutting) its segment."""
    part = copy_case("torn-tail", tmp_path, "checkpoint")  # recovery point 174
    txnindex = part / "00000000000000000086.txnindex"
    original = txnindex.read_bytes()
    txnindex.write_bytes(original + struct.pack(">hqqqq", 0, 77, 10, 20, 21))  # ends at 20 < 86
    index = part / "00000000000000000000.index"
    original_index = index.read_bytes()
    index.write_bytes(original_index + b"\x01" * 5)  # OffsetIndex.sanityCheck: not a multiple of 8 bytes
    done, lines = repair_jsonl(part)
    assert done.returncode == 1, done.stdout + done.stderr
    acts = {Path(d["path"]).name: d for d in lines if d["type"] == "action"}
    assert "TransactionIndex.sanityCheck" in acts[txnindex.name]["reason"]
    assert acts[index.name]["action"] == "rebuild"
    assert lines[-1]["recovered_segments"] == [86, 174, 259]  # 0's index is rebuilt, the segment not recovered
    done, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert txnindex.read_bytes() == original and index.read_bytes() == original_index


def test_a_snapshot_at_the_checkpointed_log_start_does_not_seed_the_replay(tmp_path: Path) -> None:
    """``LogLoader.recoverSegment`` hands the log start checkpoint to ``UnifiedLog.rebuildProducerState``, whose
    ``ProducerStateManager.truncateAndReload`` deletes every snapshot at or below it (and above the segment's base)
    before ``loadFromSnapshot``: with log start and recovery point 86, segment 86 is replayed from no producer
    state, so producer 1000's transaction begun at 81 is unknown when its abort marker (88) comes, and
    ``86.txnindex`` loses that entry (``ProducerAppendInfo.appendEndTxnMarker``: no first offset, no
    ``CompletedTxn``). Run again, the plan is empty."""
    part = copy_case("torn-tail", tmp_path, "checkpoint")
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (part.parent / name).write_text("0\n1\nrtopic 0 86\n")
    txnindex = part / "00000000000000000086.txnindex"
    before = read_txn_index(txnindex)
    assert (before[0].producer_id, before[0].first_offset, before[0].last_offset) == (1000, 81, 88)
    done, lines = repair_jsonl(part, "--apply", "--backup-dir", str(tmp_path / "backup"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_txn_index(txnindex) == before[1:]
    again, lines = repair_jsonl(part)
    assert again.returncode == 0 and lines[-1]["actions"] == 0, again.stdout


def test_the_output_says_where_the_recovery_point_came_from(tmp_path: Path, run_cli) -> None:
    """``LogLoader`` takes the recovery point from the log dir's ``recovery-point-offset-checkpoint`` (0 when the
    partition has no entry: every segment is recovered); ``--recovery-point`` overrides it. Text and JSONL say
    which (issue 17)."""
    part = copy_case("crc-flip", tmp_path, "checkpoint")
    checkpoint = part.parent / "recovery-point-offset-checkpoint"
    for extra, point, source, words in [
        ([], 174, "checkpoint", f"recovery point 174 from {checkpoint}"),
        (["--recovery-point", "86"], 86, "option", "recovery point 86 from --recovery-point"),
    ]:
        _done, lines = repair_jsonl(part, *extra)
        assert (lines[-1]["recovery_point"], lines[-1]["recovery_point_source"]) == (point, source)
        text = run_cli("repair", "--index-interval-bytes", "1024", *extra, str(part)).stdout
        assert words in " ".join(text.split()), text
    checkpoint.unlink()
    _done, lines = repair_jsonl(part)
    assert (lines[-1]["recovery_point"], lines[-1]["recovery_point_source"]) == (0, "none")
    text = " ".join(run_cli("repair", str(part)).stdout.split())
    assert f"recovery point 0 (none found: no {checkpoint}; every segment is recovered)" in text, text


@pytest.mark.parametrize("window", [64, 4 << 20])
def test_scan_reads_every_magic_from_2_to_127_as_v2_as_the_construct_does(window: int) -> None:
    """``FileLogInputStream.nextBatch`` takes the magic byte as a signed Java byte: below 2 (0, 1 and the negative
    ones, 128..255 unsigned) is a legacy message, anything else a ``DefaultRecordBatch``, whose CRC covers the
    bytes from the attributes on. Every batch of a segment, with its magic set to each of 3..127 in turn, scans
    as the Construct declaration ``RecordBatchHeader`` parses it (the magic kept), with the CRC verdict of the
    bytes it covers, whatever the scan window; 128 and up still stop the scan (``unknown-magic``)."""
    path = corpus_root() / "kafka/recovery/crc-flip/before/rtopic-0/00000000000000000259.log"
    original = path.read_bytes()  # 6 batches, the 4th with a flipped byte: one CRC mismatch
    with open(path, "rb") as fh:
        batches = [b for b in scan(fh, str(path)) if isinstance(b, Batch)]
    assert len(batches) == 6 and sum(not b.crc_valid for b in batches) == 1
    for victim in batches:
        for magic in (3, 4, 77, 127, 128, 255):
            data = bytearray(original)
            data[victim.position + 16] = magic
            items = list(scan(io.BytesIO(bytes(data)), "x", options=ScanOptions(window=window)))
            got = [b for b in items if isinstance(b, Batch)]
            if magic >= 128:
                assert got == [b for b in batches if b.position < victim.position]
                assert [(f.code, f.position) for f in items if isinstance(f, Finding)][-1] == (
                    "unknown-magic", victim.position)
                continue
            assert [b._replace(magic=2) for b in got] == batches
            b = next(g for g in got if g.position == victim.position)
            raw = bytes(data[b.position:b.position + b.size])
            h = record_batch.RecordBatchHeader.parse(raw)
            assert (b.magic, b.base_offset, b.last_offset, b.size, b.partition_leader_epoch, b.crc) == (
                h.magic, h.base_offset, h.base_offset + h.last_offset_delta, h.batch_length + 12,
                h.partition_leader_epoch, h.crc)
            assert (b.producer_id, b.producer_epoch, b.base_sequence, b.record_count, b.first_timestamp,
                    b.max_timestamp) == (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count,
                                         h.base_timestamp, h.max_timestamp)
            assert b.crc_valid == (crc32c(raw[record_batch.ATTRIBUTES_OFFSET:]) == h.crc) == victim.crc_valid
            assert [(f.code, f.position) for f in items if isinstance(f, Finding)] == [
                ("crc-mismatch", g.position) for g in batches if not g.crc_valid]
