"""``repair`` against Kafka's own recovery of the corpus' damaged partitions, its safety (dry run, lock, backup,
crash at any point), and salvage."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkatool.smallfiles import read_offset_index, read_time_index, read_txn_index
from kafkatool.verify import verify_paths

from .clirun import cli
from .conftest import PROJECT_ROOT, corpus_root, read_manifest

CASES = sorted(p.name for p in (corpus_root() / "kafka/recovery").iterdir() if p.is_dir())


def case_json(case: str) -> dict:
    return json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())


def copy_before(case: str, dst: Path) -> Path:
    """A writable copy of the damaged log dir (the corpus is read-only and must stay untouched)."""
    logdir = dst / "logdir"
    shutil.copytree(corpus_root() / "kafka/recovery" / case / "before", logdir)
    for p in logdir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return logdir


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256), skipping the lock file."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def assert_restores(logdir: Path, backup: Path, originals: dict[str, str]) -> None:
    """``repair --restore BACKUP --apply`` makes every file byte-identical to ``originals`` again."""
    done = cli("repair", "--restore", str(backup), "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(logdir) == originals
    again = cli("repair", "--restore", str(backup))
    assert again.returncode == 0 and "nothing to restore" in again.stdout, again.stdout + again.stderr


def repair_args(case: str) -> list[str]:
    rp = case_json(case)["recovery_invocation"]["recoveryPointCheckpoint"]
    return ["--index-interval-bytes", "1024", "--recovery-point", str(rp)]


# --- what Kafka's recovery made of the same damage ---------------------------------------------------------

# The one place we do not copy Kafka (see kafkatool/repair.py, step 1): Kafka completes an interrupted swap by
# renaming the .swap files; the case has only a .log.swap, so Kafka leaves segment 86 with an untrimmed empty
# .index, an empty .timeindex and no .txnindex, below the recovery point, never recovered. We rebuild them.
SWAPPED_IN = {"leftovers": "00000000000000000086"}


@pytest.mark.parametrize("case", CASES)
def test_repair_matches_kafkas_recovery(case: str, tmp_path: Path, run_cli) -> None:
    logdir = copy_before(case, tmp_path)
    backup = tmp_path / "backup"
    originals = tree(logdir)
    result = run_cli("repair", "--apply", "--backup-dir", str(backup), "-f", "jsonl", *repair_args(case),
                     str(logdir / "rtopic-0"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    summary = lines[-1]
    assert summary["type"] == "partition" and summary["applied"] is True
    assert summary["leo_after"] == case_json(case)["kafka_result"]["next_offset"]

    ours, kafka = logdir / "rtopic-0", corpus_root() / "kafka/recovery" / case / "after/rtopic-0"
    skip = SWAPPED_IN.get(case)
    ours_names = {p.name for p in ours.iterdir()}
    kafka_names = {p.name for p in kafka.iterdir()}
    extra = {n for n in ours_names - kafka_names if not (skip and n == f"{skip}.txnindex")}
    assert extra == set() and kafka_names - ours_names == set()
    for name in sorted(kafka_names):
        mine, theirs = ours / name, kafka / name
        if skip and name.startswith(skip) and not name.endswith(".log"):
            continue
        if name.endswith(".index"):
            assert read_offset_index(mine) == read_offset_index(theirs), name
        elif name.endswith(".timeindex"):
            assert read_time_index(mine) == read_time_index(theirs), name
        else:  # .log, .snapshot, .txnindex, leader-epoch-checkpoint, partition.metadata: byte for byte
            assert mine.read_bytes() == theirs.read_bytes(), name
    if skip:  # the swapped-in segment's indexes are what Kafka wrote for the same bytes before the swap
        before = corpus_root() / "kafka/recovery" / case / "before/rtopic-0"
        assert read_offset_index(ours / f"{skip}.index") == read_offset_index(before / f"{skip}.index")
        assert read_time_index(ours / f"{skip}.timeindex") == read_time_index(before / f"{skip}.timeindex")
        # ... and its aborted transactions those a replay from the log start (86) finds: Kafka deletes the
        # 86.snapshot with the files the swap replaces (LogLoader.load, second pass) before reading any, so
        # producer 1000's transaction begun at 81, below the log start, is unknown when its abort marker (88)
        # is replayed (ProducerAppendInfo.appendEndTxnMarker: no CompletedTxn without a first offset).
        log_start = case_json(case)["kafka_result"]["log_start_offset"]
        assert read_txn_index(ours / f"{skip}.txnindex") == [
            t for t in read_txn_index(before / f"{skip}.txnindex") if t.first_offset >= log_start]

    # Idempotent: nothing left to do, and the partition verifies without errors.
    again = run_cli("repair", *repair_args(case), str(logdir / "rtopic-0"))
    assert again.returncode == 0 and "nothing to repair" in again.stdout, again.stdout
    assert not [f for f in verify_paths([ours]) if getattr(f, "severity", None) == "error"]
    # The backup holds every original byte of what changed or went away: restoring it gives them back.
    assert_restores(logdir, backup, originals)


def test_dry_run_changes_nothing_and_shows_the_plan(tmp_path: Path, run_cli) -> None:
    logdir = copy_before("crc-flip", tmp_path)
    before = tree(logdir)
    result = run_cli("repair", "-f", "jsonl", *repair_args("crc-flip"), str(logdir))
    assert result.returncode == 1, result.stderr
    assert tree(logdir) == before
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    truncate = next(d for d in lines if d["type"] == "action" and d["action"] == "truncate")
    assert truncate["path"].endswith("00000000000000000259.log") and truncate["size_after"] == 347
    part = lines[-1]
    assert part["type"] == "partition" and part["applied"] is False
    assert (part["leo_before"], part["leo_after"], part["bytes_removed"]) == (269, 264, 924 - 347)
    assert part["offsets_removed"] == [264, 268]
    text = run_cli("repair", *repair_args("crc-flip"), str(logdir))
    assert "dry run" in text.stdout and "truncate" in text.stdout


def test_clean_partitions_need_nothing(run_cli) -> None:
    result = run_cli("repair", str(PROJECT_ROOT / "fixtures/logdir"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("nothing to repair") == 4


# --- safety -----------------------------------------------------------------------------------------------


HOLD_LOCK = """
import fcntl, sys, time
fh = open(sys.argv[1], "a+")
if sys.argv[2] == "flock":
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:  # what a Kafka broker takes (FileChannel.tryLock: a POSIX record lock)
    fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("kind", ["lockf", "flock"])
def test_apply_refuses_a_log_dir_whose_lock_is_held(tmp_path: Path, kind: str, run_cli) -> None:
    logdir = copy_before("torn-tail", tmp_path)
    lock = logdir / ".lock"
    lock.touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock), kind], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = tree(logdir)
        result = run_cli("repair", "--apply", *repair_args("torn-tail"), str(logdir / "rtopic-0"))
        assert result.returncode != 0 and ".lock" in result.stderr, result.stderr
        assert tree(logdir) == before and lock.exists()
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes the pipe
    assert run_cli("repair", "--apply", *repair_args("torn-tail"), str(logdir / "rtopic-0")).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("case", ["crc-flip", "leftovers"])
def test_killed_at_any_point_a_rerun_completes_the_repair(case: str, tmp_path: Path, run_cli) -> None:
    """SIGKILL a real ``repair --apply`` before one of its durable steps (fsync, rename, unlink, truncate), then
    run it again: the result must be the uninterrupted repair's, and the backup must hold every original byte.

    The steps are counted on an uninterrupted run; a spread of them (the first ones, every twelfth of the way,
    the last ones) is interrupted here; ``tests/test_safewrite.py`` interrupts every step of the layer itself.
    """
    from kafkatool.repair import RepairOptions, repair_paths
    from kafkatool.safewrite import durable

    reference = copy_before(case, tmp_path / "reference")
    rp = case_json(case)["recovery_invocation"]["recoveryPointCheckpoint"]
    before_steps = durable.steps_taken()
    items = list(repair_paths([reference / "rtopic-0"], RepairOptions(index_interval_bytes=1024, recovery_point=rp),
                              apply=True, backup_dir=tmp_path / "reference-backup"))
    total = durable.steps_taken() - before_steps
    assert items[-1].applied and total > 20
    expected = tree(reference)
    points = sorted({1, 2, 3, *range(1, total + 1, max(1, total // 12)), total - 1, total})
    for step in points:
        run = tmp_path / f"run-{step}"
        logdir = copy_before(case, run)
        originals = tree(logdir)
        backup = run / "backup"
        args = ["repair", "--apply", "--backup-dir", str(backup), *repair_args(case), str(logdir / "rtopic-0")]
        crashed = run_cli(*args, env={"KAFKATOOL_CRASH_AT": str(step)})
        assert crashed.returncode == -9, (step, crashed.stdout, crashed.stderr)
        finished = run_cli(*args)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert tree(logdir) == expected, f"killed before step {step} of {total}"
        temporary = [p.name for p in logdir.rglob("*") if "kafkatool" in p.name]
        assert temporary == [], temporary
        assert_restores(logdir, backup, originals)
        shutil.rmtree(run)
    # one step past the last: the run is not interrupted at all
    logdir = copy_before(case, tmp_path / "past")
    args = ["repair", "--apply", "--backup-dir", str(tmp_path / "past-backup"), *repair_args(case),
            str(logdir / "rtopic-0")]
    assert run_cli(*args, env={"KAFKATOOL_CRASH_AT": str(total + 1)}).returncode == 0
    assert tree(logdir) == expected


# --- salvage ------------------------------------------------------------------------------------------------


def test_salvage_keeps_the_valid_batches_after_a_cut(tmp_path: Path, run_cli) -> None:
    logdir = copy_before("crc-flip", tmp_path)
    log = logdir / "rtopic-0/00000000000000000259.log"
    data = log.read_bytes()
    after_bad = []  # the batches after the damaged one at 347, as the file has them
    pos = 347 + struct.unpack_from(">i", data, 347 + 8)[0] + 12
    while pos < len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        after_bad.append(data[pos:pos + size])
        pos += size
    assert after_bad
    dry = run_cli("repair", "--salvage", "-f", "jsonl", *repair_args("crc-flip"), str(logdir / "rtopic-0"))
    assert json.loads(dry.stdout.splitlines()[-1])["salvaged_batches"] == len(after_bad)
    backup = tmp_path / "backup"
    done = run_cli("repair", "--apply", "--salvage", "--backup-dir", str(backup), *repair_args("crc-flip"),
                   str(logdir / "rtopic-0"))
    assert done.returncode == 0, done.stderr
    side = backup / "salvaged/rtopic-0/00000000000000000259.log"
    assert side.read_bytes() == b"".join(after_bad)
    assert run_cli("verify", str(side)).returncode == 0  # a readable segment file on its own


def test_timestamped_default_backup_dir_is_beside_the_log_dir(tmp_path: Path, run_cli) -> None:
    logdir = copy_before("torn-tail", tmp_path)
    start = time.time()
    assert run_cli("repair", "--apply", *repair_args("torn-tail"), str(logdir)).returncode == 0
    backups = [p for p in tmp_path.iterdir() if p.name.startswith("kafkatool-backup-logdir-")]
    # the segment's backup is the 39 bytes cut (846..885), not the segment
    assert len(backups) == 1 and (backups[0] / "rtopic-0/00000000000000000259.log.removed").stat().st_size == 39
    assert backups[0].stat().st_mtime >= start - 1


def test_a_crashed_log_dir_is_repaired_partition_by_partition(tmp_path: Path, run_cli) -> None:
    """The fixture log dir after a crash (no clean-shutdown marker) with one flipped byte in orders-0: only
    orders-0 loses data; every partition's recovery point moves to its log end; the other partitions' files,
    recovered from their recovery point with the topic's index interval, come out as they were."""
    logdir = tmp_path / "logdir"
    shutil.copytree(PROJECT_ROOT / "fixtures/logdir", logdir)
    (logdir / ".kafka_cleanshutdown").unlink()
    log = sorted((logdir / "orders-0").glob("*.log"))[-1]
    data = bytearray(log.read_bytes())
    second = struct.unpack_from(">i", data, 8)[0] + 12  # the second batch of the active segment
    data[second + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    untouched = {k: v for k, v in tree(logdir).items() if not k.startswith("orders-0/")
                 and k != "recovery-point-offset-checkpoint"}
    result = run_cli("repair", "--apply", "--index-interval-bytes", "1024", "-f", "jsonl", str(logdir))
    assert result.returncode == 0, result.stdout + result.stderr
    parts = {Path(d["path"]).name: d for d in map(json.loads, result.stdout.splitlines()) if d["type"] == "partition"}
    assert set(parts) == {"events-0", "orders-0", "orders-1", "payments-0"}
    orders = parts["orders-0"]
    assert orders["leo_after"] < orders["leo_before"] and orders["bytes_removed"] == len(data) - second
    assert all(not d["bytes_removed"] for name, d in parts.items() if name != "orders-0")
    after = tree(logdir)
    assert {k: after.get(k) for k in untouched} == untouched
    points = (logdir / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert f"orders 0 {orders['leo_after']}" in points
    assert run_cli("repair", "--index-interval-bytes", "1024", str(logdir)).returncode == 0  # nothing left


def test_progress_counts_every_segment_byte_the_load_reads() -> None:
    """What a progress bar is told (``repair_paths(progress=...)``): the bytes of every segment the plan's load
    reads, each once."""
    from kafkatool.repair import repair_paths

    case = corpus_root() / "kafka" / "recovery" / "crc-flip" / "before"
    seen: list[int] = []
    list(repair_paths([case], progress=seen.append))
    assert seen and sum(seen) == sum(p.stat().st_size for p in case.rglob("*.log"))


def test_every_corpus_dir_can_be_planned() -> None:
    """Real broker dirs (compacted, KRaft metadata, legacy, a log start above the first segment with no snapshot,
    fetch-response extractions): a plan for each, never a 'repair-impossible'."""
    from kafkatool.model import Finding
    from kafkatool.repair import PartitionRepair, repair_paths

    root = corpus_root()
    dirs = [*sorted((root / "real").iterdir()), root / "kafka/logdir", root / "kafka/legacy",
            *sorted((root / "kafka/replicas").glob("*/broker-*"))]
    planned = 0
    for d in dirs:
        for item in repair_paths([d]):
            assert not isinstance(item, Finding), item
            planned += isinstance(item, PartitionRepair)
    assert planned > 600


def test_damage_inside_a_swapped_in_segment(tmp_path: Path, run_cli) -> None:
    """The operations on a segment coming from a .swap file act on its final name (the rename comes first)."""
    logdir = copy_before("leftovers", tmp_path)
    swap = logdir / "rtopic-0/00000000000000000086.log.swap"
    data = bytearray(swap.read_bytes())
    second = struct.unpack_from(">i", data, 8)[0] + 12
    data[second + 70] ^= 0xFF
    swap.write_bytes(bytes(data))
    result = run_cli("repair", "--apply", "-f", "jsonl", "--backup-dir", str(tmp_path / "backup"),
                     *repair_args("leftovers"), str(logdir / "rtopic-0"))
    assert result.returncode == 0, result.stdout + result.stderr
    log = logdir / "rtopic-0/00000000000000000086.log"
    assert not swap.exists() and log.read_bytes() == bytes(data[:second])
    assert run_cli("repair", *repair_args("leftovers"), str(logdir / "rtopic-0")).returncode == 0


# --- backups of what was removed, and restoring them -------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_apply_from_offset_0_then_restore_gives_every_original_byte_back(case: str, tmp_path: Path, run_cli) -> None:
    """Recovery point 0 (every segment recovered: ``LogLoader.recoverLog`` from the log start, the most a repair
    changes), then ``repair --restore``: the dry run lists the files and changes nothing, the restore makes the
    log dir byte-identical to the damaged original (cut bytes appended back, whole files copied back, files the
    repair created deleted), and a second restore has nothing to do."""
    logdir = copy_before(case, tmp_path)
    originals = tree(logdir)
    backup = tmp_path / "backup"
    done = run_cli("repair", "--apply", "--backup-dir", str(backup), "--index-interval-bytes", "1024",
                   "--recovery-point", "0", str(logdir / "rtopic-0"))
    assert done.returncode == 0, done.stdout + done.stderr
    repaired = tree(logdir)
    assert repaired != originals
    dry = run_cli("repair", "--restore", str(backup))
    assert dry.returncode == 1 and "dry run" in dry.stdout, dry.stdout + dry.stderr
    assert tree(logdir) == repaired
    assert_restores(logdir, backup, originals)


def _torn_partition(root: Path, batches: int, torn: int) -> Path:
    """A log dir as a killed broker leaves it (``kafkatool.logwriter``): one segment of ``batches`` 1-record
    batches, the first ``torn`` bytes of one more at its end, recovery point 0."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import checkpoints
    from kafkatool.logwriter import LogDirWriter

    logdir = LogDirWriter(root, cluster_id="restoretestcluster0000", node_id=1)
    writer = logdir.partition("t", 0, bytes(range(16)))
    for i in range(batches):
        writer.append(record_batch(i, [RecordSpec(b"k", b"v" * 100, 1_700_000_000_000 + i)],
                                   partition_leader_epoch=3))
    logdir.close(clean=False)
    more = record_batch(batches, [RecordSpec(b"k", b"v" * 100, 1_700_000_000_000)], partition_leader_epoch=3)
    assert torn < len(more)
    with open(root / "t-0" / "00000000000000000000.log", "ab") as fh:
        fh.write(more[:torn])
    (root / "recovery-point-offset-checkpoint").write_bytes(checkpoints.build_offset_checkpoint([("t", 0, 0)]))
    return root / "t-0"


def test_a_cut_backs_up_only_the_bytes_it_removes(tmp_path: Path, run_cli) -> None:
    """``LogSegment.recover`` truncates the segment at its torn last batch (``truncateTo``) and trims the
    preallocated indexes (``AbstractIndex.trimToValidSize``): the backup holds the torn bytes and a manifest, not
    the segment, and no copy of the zero bytes trimmed from the indexes."""
    part = _torn_partition(tmp_path / "logdir", 400, 50)
    segment = part / "00000000000000000000.log"
    size = segment.stat().st_size
    torn = segment.read_bytes()[-50:]
    originals = tree(tmp_path / "logdir")
    backup = tmp_path / "backup"
    done = run_cli("repair", "--apply", "--backup-dir", str(backup), str(part))
    assert done.returncode == 0, done.stdout + done.stderr
    assert segment.stat().st_size == size - 50
    copies = {p.relative_to(backup).as_posix(): p.stat().st_size for p in backup.rglob("*") if p.is_file()}
    assert (backup / "t-0/00000000000000000000.log.removed").read_bytes() == torn
    manifest = read_manifest(backup)
    cut = next(e for e in manifest["files"] if e["path"] == "t-0/00000000000000000000.log")
    assert (cut["backup"], cut["offset"], cut["before"]["size"], cut["after"]["size"]) == ("tail", size - 50, size,
                                                                                         size - 50)
    assert cut["before"]["sha256"] == originals["t-0/00000000000000000000.log"]
    # Whatever else was backed up is small: the rewritten small files, never a segment or a preallocated index.
    others = {k: v for k, v in copies.items() if k not in ("MANIFEST.json", "t-0/00000000000000000000.log.removed")}
    assert sum(others.values()) < 4096, others
    assert_restores(tmp_path / "logdir", backup, originals)


def test_a_trimmed_index_zeros_are_recorded_by_length_and_checked_by_the_restore(tmp_path: Path, run_cli) -> None:
    """Recovery trims a killed broker's preallocated indexes (``AbstractIndex.trimToValidSize``): the manifest
    (version 3) records the zeros cut by their length, and the state before by the kept prefix's sha256 and where the
    zeros start (a 10 MiB index's zeros are not hashed). The restore gives each file back byte for byte, finds it
    restored when run again, and refuses once a byte was written into those zeros since."""
    part = _torn_partition(tmp_path / "logdir", 400, 50)
    originals = tree(tmp_path / "logdir")
    indexes = {p.name: p.read_bytes() for p in part.iterdir() if p.suffix in (".index", ".timeindex")}
    assert all(len(data) > (10 << 20) - 12 for data in indexes.values()) and len(indexes) == 2  # preallocated
    backup = tmp_path / "backup"
    done = run_cli("repair", "--apply", "--backup-dir", str(backup), str(part))
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = read_manifest(backup)
    zeros = {e["path"]: e for e in manifest["files"] if e["backup"] == "zeros"}
    assert manifest["version"] == 3 and sorted(zeros) == sorted(f"t-0/{name}" for name in indexes)
    for path, e in zeros.items():
        data, kept = indexes[path.split("/")[1]], e["offset"]
        assert 0 < kept < len(data) and data[kept:].count(0) == len(data) - kept and e["sha256"] is None
        assert e["before"] == {"size": len(data), "sha256": hashlib.sha256(data[:kept]).hexdigest(), "zeros_from": kept}
        after = (part / path.split("/")[1]).read_bytes()  # trimmed, or rebuilt over the zeros: hashed whole
        assert e["after"] == {"size": len(after), "sha256": hashlib.sha256(after).hexdigest()} and kept <= len(after)
    assert_restores(tmp_path / "logdir", backup, originals)
    index = part / "00000000000000000000.index"
    with open(index, "r+b") as fh:  # the broker, or a hand, wrote into the zeros the restore put back
        fh.seek((10 << 20) - 1)
        fh.write(b"\x01")
    refused = run_cli("repair", "--restore", str(backup), "--apply")
    assert refused.returncode == 2 and "changed since apply 1" in refused.stderr, refused.stdout + refused.stderr
    assert "then zeros" in refused.stderr and index.stat().st_size == 10 << 20


def test_a_version_2_manifest_still_restores(tmp_path: Path, run_cli) -> None:
    """A backup dir written before version 3 hashed the zeros it cut, and each file's whole state before: its
    restore still gives every byte back."""
    part = _torn_partition(tmp_path / "logdir", 400, 50)
    originals = tree(tmp_path / "logdir")
    whole = {f"t-0/{p.name}": p.read_bytes() for p in part.iterdir()}
    backup = tmp_path / "backup"
    assert run_cli("repair", "--apply", "--backup-dir", str(backup), str(part)).returncode == 0
    manifest = read_manifest(backup)
    for e in manifest["files"]:  # as version 2 wrote them
        if e["backup"] == "zeros":
            data = whole[e["path"]]
            e["sha256"] = hashlib.sha256(data[e["offset"]:]).hexdigest()
            e["before"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert any(e["backup"] == "zeros" for e in manifest["files"])
    (backup / "MANIFEST.json").write_text(json.dumps({**manifest, "version": 2}))
    assert_restores(tmp_path / "logdir", backup, originals)


@pytest.mark.parametrize("change", ["appended", "prefix", "copy"])
def test_restore_refuses_when_a_file_changed_since_the_apply(tmp_path: Path, change: str, run_cli) -> None:
    """A broker started after the repair appends to the cut segment (``UnifiedLog.append``): appending the cut
    bytes back would bury its batches, so the restore is refused and nothing changes. So is a segment whose kept
    prefix no longer has the recorded sha256, and a damaged backup copy."""
    part = _torn_partition(tmp_path / "logdir", 100, 30)
    backup = tmp_path / "backup"
    assert run_cli("repair", "--apply", "--backup-dir", str(backup), str(part)).returncode == 0
    segment = part / "00000000000000000000.log"
    if change == "appended":
        with open(segment, "ab") as fh:
            fh.write(segment.read_bytes()[:200])
    elif change == "prefix":
        data = bytearray(segment.read_bytes())
        data[100] ^= 1
        segment.write_bytes(bytes(data))
    else:
        (backup / "t-0/00000000000000000000.log.removed").write_bytes(b"x" * 30)
    now = tree(tmp_path / "logdir")
    for args in (["--restore", str(backup)], ["--restore", str(backup), "--apply"]):
        refused = run_cli("repair", *args)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert ("changed since apply 1" if change != "copy" else "damaged") in refused.stderr, refused.stderr
        assert tree(tmp_path / "logdir") == now


def test_restore_refuses_a_log_dir_whose_lock_is_held(tmp_path: Path, run_cli) -> None:
    """The broker holds ``<log dir>/.lock`` while it runs (``LogManager.lockLogDirs``): no restore under it."""
    part = _torn_partition(tmp_path / "logdir", 100, 30)
    backup = tmp_path / "backup"
    assert run_cli("repair", "--apply", "--backup-dir", str(backup), str(part)).returncode == 0
    lock = tmp_path / "logdir" / ".lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock), "lockf"], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        now = tree(tmp_path / "logdir")
        result = run_cli("repair", "--restore", str(backup), "--apply")
        assert result.returncode == 2 and ".lock" in result.stderr, result.stderr
        assert tree(tmp_path / "logdir") == now
    finally:
        holder.kill()
        holder.communicate()


# What a whole kafkatool run opens and lists, counted by an audit hook (sys.addaudithook: the interpreter's own
# "open" and "os.scandir" events), printed as JSON on stderr's last line.
_COUNT_READS = """
import collections, json, os, sys
counts = collections.Counter()
def hook(event, args):
    if event in ("open", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        counts[f"{event} {os.path.basename(os.fsdecode(args[0]))}"] += 1
sys.addaudithook(hook)
from kafkatool.cli.main import main
sys.argv = ["kafkatool", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps(counts), file=sys.stderr)
sys.exit(code)
"""


def test_a_dry_run_reads_the_log_dirs_files_once_not_once_a_partition(tmp_path: Path) -> None:
    """``repair`` without ``--apply`` plans every partition of a log dir from discovery's listing and its log dir's
    checkpoints read once: before, each partition's plan listed the log dir and read its four checkpoints again
    (1,000 crashed partitions: 1,001 listings, 4,000 checkpoint reads, 42 s of CPU with the sparse indexes)."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import LogDirWriter

    logdir = tmp_path / "logdir"
    with LogDirWriter(logdir, cluster_id="repair-reads-cluster-00", node_id=1) as d:
        for i in range(12):
            w = d.partition(f"topic{i % 3}", i // 3, bytes([i % 3 + 1] * 16))
            w.append(record_batch(0, [RecordSpec(b"k", b"v" * 50, 1_700_000_000_000 + i)]))
        d.close(clean=False)
    run = subprocess.run([sys.executable, "-c", _COUNT_READS, "repair", "--format", "jsonl", str(logdir)],
                         capture_output=True, text=True, cwd=tmp_path)
    counts = json.loads(run.stderr.splitlines()[-1])
    plans = [json.loads(line) for line in run.stdout.splitlines()]
    assert sum(p["type"] == "partition" for p in plans) == 12, run.stdout
    assert counts["os.scandir logdir"] == 1
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        assert counts[f"open {name}"] == 1, counts


def _crashed_log_dir(root: Path, partitions: int) -> dict[tuple[str, int], int]:
    """A log dir as a killed broker leaves it (no ``.kafka_cleanshutdown``), its periodic recovery-point checkpoint
    taken before anything was flushed (every partition at 0, so every segment is recovered); the log end offsets."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.formats import checkpoints
    from kafkatool.logwriter import LogDirWriter

    logdir = LogDirWriter(root, cluster_id="repair-rp-once-cluster0", node_id=1)  # no ``with``: it closes cleanly
    ends = {}
    for i in range(partitions):
        w = logdir.partition(f"topic{i % 3}", i // 3, bytes([i % 3 + 1] * 16))
        for k in range(1 + i % 2):
            w.append(record_batch(k, [RecordSpec(b"k", b"v" * 50, 1_700_000_000_000 + k)]))
        ends[(f"topic{i % 3}", i // 3)] = 1 + i % 2
    logdir.close(clean=False)
    (root / "recovery-point-offset-checkpoint").write_bytes(
        checkpoints.build_offset_checkpoint((t, p, 0) for t, p in ends))
    return ends


@pytest.mark.parametrize("apply", [False, True])
def test_the_recovery_point_checkpoint_is_read_and_written_once_a_log_dir(tmp_path: Path, apply: bool) -> None:
    """Every recovered partition moves its entry in the log dir's ``recovery-point-offset-checkpoint``: the file is
    read once for the log dir, not once a partition, and ``--apply`` writes it once with every partition's new
    recovery point after the log dir's last partition (``LogManager.checkpointRecoveryOffsetsInDir``), backed up
    once. Before, each partition's plan read and rebuilt the whole file and each apply backed it up and rewrote it:
    quadratic in partitions (12 partitions: 12 reads on a dry run, 36 opens and 12 backup copies on --apply)."""
    logdir = tmp_path / "logdir"
    ends = _crashed_log_dir(logdir, 12)
    backup = tmp_path / "backup"
    args = ["--apply", "--backup-dir", str(backup)] if apply else []
    run = subprocess.run([sys.executable, "-c", _COUNT_READS, "repair", *args, "--format", "jsonl", str(logdir)],
                         capture_output=True, text=True, cwd=tmp_path)
    counts = json.loads(run.stderr.splitlines()[-1])
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    checkpoint = str(logdir / "recovery-point-offset-checkpoint")
    moves = [d for d in lines if d["type"] == "action" and d["path"] == checkpoint]
    parts = [d for d in lines if d["type"] == "partition"]
    # each partition's plan still says its entry moves (the output is as before)
    assert len(parts) == 12 and all(d["applied"] == apply for d in parts), run.stdout + run.stderr
    assert [d["reason"].split(",")[0] for d in moves] == [f"{t}-{p}: recovery point {o}"
                                                         for (t, p), o in sorted(ends.items())]
    assert lines[-1]["type"] == "partition"
    if not apply:
        assert run.returncode == 1 and counts["open recovery-point-offset-checkpoint"] == 1, counts
        return
    assert run.returncode == 0, run.stdout + run.stderr
    # read by discovery's log dir, again under the lock before writing it, and by the apply of that one write (is
    # its start kept? journal._kept_length; its backup copy)
    assert counts["open recovery-point-offset-checkpoint"] == 4, counts
    assert [p.name for p in backup.rglob("recovery-point-offset-checkpoint*")] == ["recovery-point-offset-checkpoint"]
    from kafkatool.smallfiles import read_offset_checkpoint
    assert {(e.topic, e.partition): e.offset for e in read_offset_checkpoint(logdir / "recovery-point-offset-"
                                                                            "checkpoint")} == ends
    again = subprocess.run([sys.executable, "-m", "kafkatool", "repair", str(logdir)], capture_output=True,
                           text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr  # nothing left to do
