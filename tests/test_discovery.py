"""Discovery (kafkatool.walk): which log dirs, partition dirs and files every command reads.

Kafka's rules it follows: ``LogManager.loadLogs`` takes each directory of a log dir as a partition's log
(``UnifiedLog.parseTopicPartitionName``), and ``LogLoader.loadSegmentFiles`` reads only the *files* of a
partition dir (``listFiles`` filtered by ``File::isFile``, sorted by name), so a directory there, or a symbolic
link to nothing, is never part of the log. The cases below are bugs met on the corpus and by users.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kafkatool.errors import UsageError
from kafkatool.filetypes import LEFTOVER_SUFFIXES, classify, holds_records
from kafkatool.internal.offsets import consumer_offsets
from kafkatool.model import Finding
from kafkatool.partition import ReplicaState, inspect_replicas
from kafkatool.verify import PartitionSummary, verify_paths
from kafkatool.walk import FoundFile, LogDir, PartitionDir, discover, expand, partition_dirs

from .conftest import corpus_root

ROOT = corpus_root()
CODECS = ROOT / "kafka/logdir/codecs-0"
IN_SYNC = ROOT / "kafka/replicas/in-sync"
MASHA = ROOT / "real/MashaKosher_Internship"   # one broker's log dir, copied on two days


def _summaries(paths: list[Path]) -> list[PartitionSummary]:
    return [v for v in verify_paths(paths) if isinstance(v, PartitionSummary)]


def _findings(paths: list[Path]) -> list[Finding]:
    return [v for v in verify_paths(paths) if isinstance(v, Finding)]


# --- nothing found ---------------------------------------------------------------------------------------


def test_a_path_with_nothing_kafka_under_it_is_a_usage_error(tmp_path: Path) -> None:
    """An empty dir, a dir of unrelated files and a dir holding only a kafkatool backup have no log dir,
    partition or segment: discovery refuses them (exit 2 in the CLI) instead of reporting all clean."""
    empty = tmp_path / "empty"
    empty.mkdir()
    unrelated = tmp_path / "unrelated"
    (unrelated / "sub").mkdir(parents=True)
    (unrelated / "notes.txt").write_text("not kafka\n")
    (unrelated / "sub" / "data.bin").write_bytes(b"\x00" * 16)
    only_backup = tmp_path / "only-backup"
    shutil.copytree(CODECS, only_backup / "kafkatool-backup-data-20260101T000000Z" / CODECS.name)
    for d in (empty, unrelated, only_backup):
        with pytest.raises(UsageError, match=f"no Kafka log dir, partition or segment under {d}"):
            discover([d])
        with pytest.raises(UsageError, match="no Kafka log dir"):
            list(partition_dirs([CODECS, d]))  # one good path does not excuse a wrong one


def test_a_formatted_log_dir_without_partitions_is_found(tmp_path: Path) -> None:
    """A broker log dir with only ``meta.properties`` is a real (empty) log dir, not a wrong path."""
    meta = next(ROOT.glob("real/*/*/meta.properties"))
    shutil.copyfile(meta, tmp_path / "meta.properties")
    (unit,) = discover([tmp_path])
    assert isinstance(unit, LogDir) and unit.partitions == []
    assert list(partition_dirs([tmp_path])) == []


# --- each log dir keeps its partitions ------------------------------------------------------------------


def test_each_log_dir_keeps_its_partitions_together() -> None:
    """A dir holding several brokers' log dirs: one LogDir each, its partitions in (topic, partition) order,
    and partition_dirs gives them log dir by log dir."""
    container = ROOT / "real/tuyen-nnt_kafka_2.13-3.0.0/data"
    units = discover([container])
    logdirs = [u for u in units if isinstance(u, LogDir)]
    assert len(logdirs) >= 2 and all(isinstance(u, LogDir) for u in units)
    for ld in logdirs:
        assert all(p.logdir is ld and p.path.parent == ld.path for p in ld.partitions)
        named = [(p.topic, p.partition) for p in ld.partitions if p.topic is not None]
        assert named == sorted(named)
    homes = [p.logdir_path for p in partition_dirs([container])]
    runs = [h for i, h in enumerate(homes) if i == 0 or homes[i - 1] != h]
    assert len(runs) == len(set(runs)) == len(logdirs)


def test_a_log_dir_reads_its_broker_files_once(tmp_path: Path) -> None:
    """``LogDir.checkpoint`` reads a checkpoint file on first use and keeps it: the offsets equal what the file
    says (``OffsetCheckpointFile``), and deleting the file afterwards changes nothing for this LogDir."""
    logdir = tmp_path / "logdir"
    shutil.copytree(ROOT / "kafka/logdir", logdir)
    (unit,) = discover([logdir])
    assert isinstance(unit, LogDir)
    lines = (logdir / "replication-offset-checkpoint").read_text().split("\n")
    expected = {(t, int(p)): int(o) for t, p, o in (line.split(" ") for line in lines[2:] if line.strip())}
    assert unit.checkpoints["replication-offset-checkpoint"] == expected
    (logdir / "replication-offset-checkpoint").unlink()
    topic, partition = next(iter(expected))
    assert unit.offset("replication-offset-checkpoint", topic, partition) == expected[(topic, partition)]
    assert unit.clean_shutdown == (logdir / ".kafka_cleanshutdown").exists()


# --- the corpus / user bugs ----------------------------------------------------------------------------


def test_a_partition_holding_a_directory_named_like_a_segment_is_still_verified(tmp_path: Path, run_cli) -> None:
    """``LogLoader.loadSegmentFiles`` keeps only files: a *directory* ``00000000000000000099.log`` in a partition
    dir is ignored by the broker, and the partition is loaded from its real segments. verify used to drop the
    whole partition ("clean: 0 partitions"); now it verifies it as the unmodified copy and reports the dir."""
    logdir = tmp_path / "logdir"
    part = logdir / CODECS.name
    shutil.copytree(CODECS, part)
    odd = part / "00000000000000000099.log"
    odd.mkdir()
    original = _summaries([CODECS])
    for named, shown in ((part, str(part)), (logdir, str(part))):
        (summary,) = _summaries([named])
        assert (summary.path, summary.topic, summary.partition) == (shown, "codecs", 0)
        assert (summary.segments, summary.batches, summary.records, summary.log_end_offset) == (
            original[0].segments, original[0].batches, original[0].records, original[0].log_end_offset)
        found = [f for f in _findings([named]) if f.path == str(odd)]
        assert [(f.code, f.severity) for f in found] == [("unknown-dir-segment-name", "warning")]
    # dump reads the same record files as in the unmodified partition, and says why it skips the dir
    assert [f.path.name for f in expand([part]) if f.kind.holds_records] == [
        f.path.name for f in expand([CODECS]) if f.kind.holds_records]
    proc = run_cli("dump", "-f", "jsonl", "--fail-on", "warning", part)
    assert proc.returncode == 1, proc.stderr  # the warning
    assert [x["path"] for x in proc.jsonl() if x["type"] == "finding"] == [str(odd)]


def test_a_symbolic_link_to_nothing_is_an_io_error_and_the_rest_is_read(tmp_path: Path, run_cli) -> None:
    """A dangling link ``00000000000000000300.log``: the broker's ``File.isFile`` is false for it, so the
    segment silently is not there. kafkatool says so: an ``io-error`` naming the link (exit 3), and the real
    segments are still read (the same batches as the unmodified partition)."""
    part = tmp_path / CODECS.name
    shutil.copytree(CODECS, part)
    link = part / "00000000000000000300.log"
    link.symlink_to(tmp_path / "gone" / "00000000000000000300.log")
    (summary,) = _summaries([part])
    assert summary.batches == _summaries([CODECS])[0].batches
    errors = [f for f in _findings([part]) if f.severity == "error"]
    assert [(f.code, f.path) for f in errors] == [("io-error", str(link))]
    dumped = run_cli("dump", "-f", "jsonl", part)
    baseline = run_cli("dump", "-f", "jsonl", CODECS)
    assert dumped.returncode == 3, dumped.stderr
    assert Counter(x["type"] for x in dumped.jsonl() if x["type"] != "finding") == Counter(
        x["type"] for x in baseline.jsonl() if x["type"] != "finding")
    for command in ("verify", "producers", "txns", "epochs", "repair"):
        proc = run_cli(command, "-f", "jsonl", part)
        assert proc.returncode == 3, (command, proc.stdout, proc.stderr)
        assert any(x.get("code") == "io-error" and x.get("path") == str(link) for x in proc.jsonl()), command


def test_offsets_compares_commits_only_with_partitions_of_the_same_log_dir(tmp_path: Path, run_cli) -> None:
    """Two copies of one broker's log dir (taken a day apart) side by side: each alone is consistent, so
    together they must give exactly the union of what each gives alone, and no false ``commit-beyond-leo``
    from comparing one day's commits with the other day's partitions."""
    (tmp_path / "b1").symlink_to(MASHA / "c335121f" / "data")
    (tmp_path / "b2").symlink_to(MASHA / "4ec23dc0" / "data")

    def values(paths: list[Path]) -> Counter[str]:
        return Counter(json.dumps(v.as_dict(), sort_keys=True) for v in consumer_offsets(paths))

    alone = [values([tmp_path / b]) for b in ("b1", "b2")]
    together = values([tmp_path])
    assert together == alone[0] + alone[1]
    assert not any('"commit-beyond-leo"' in v for v in together)
    assert any('"committed_offset"' in v for v in together)
    codes = [run_cli("offsets", tmp_path / b).returncode for b in ("b1", "b2")]
    assert run_cli("offsets", tmp_path).returncode == max(codes)


def test_a_kafkatool_backup_beside_the_log_dirs_is_not_a_replica(tmp_path: Path, run_cli) -> None:
    """``repair --apply`` writes ``kafkatool-backup-<log dir>-<time>`` beside the log dir it repaired
    (``repair.default_backup_dir``). ``replicas`` on the dir holding the three brokers' log dirs must still
    see three replicas, and verify/dump must not read the backup (one info finding says it was skipped)."""
    for broker in sorted(IN_SYNC.glob("broker-*")):
        shutil.copytree(broker, tmp_path / broker.name)
    brokers = sorted(p.name for p in tmp_path.iterdir())
    active = sorted((tmp_path / brokers[0]).glob("*-0/*.log"))[-1]
    with open(active, "ab") as fh:  # a torn tail: a batch header with its body missing
        fh.write((0).to_bytes(8, "big") + (60).to_bytes(4, "big") + b"torn")
    repaired = run_cli("repair", "--apply", tmp_path / brokers[0])
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    (backup,) = [p for p in tmp_path.iterdir() if p.name not in brokers]
    # files named as a segment's: the cut's removed bytes ("*.log.removed") and whole copies of rewritten files
    assert backup.name.startswith(f"kafkatool-backup-{brokers[0]}-") and any(backup.rglob("0000*.*"))

    states = [v for v in inspect_replicas([tmp_path]) if isinstance(v, ReplicaState)]
    assert sorted(s.name for s in states) == brokers
    proc = run_cli("replicas", "-f", "jsonl", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not any(str(backup) in line for line in proc.stdout.splitlines())

    for command in ("verify", "dump"):
        lines = run_cli(command, "-f", "jsonl", tmp_path).jsonl()
        inside = [x for x in lines if str(backup) in str(x.get("path", ""))]
        assert [(x["type"], x.get("code")) for x in inside] == [("finding", "backup-dir-skipped")], command
    assert not [p for p in partition_dirs([tmp_path]) if backup in p.path.parents]


def test_named_files_and_partition_dirs_are_units_of_their_own() -> None:
    """A file named on the command line is read as it is; a partition dir named alone has no LogDir (its
    parent is where its log dir's checkpoints are)."""
    log = CODECS / "00000000000000000000.log"
    (f,) = discover([log])
    assert isinstance(f, FoundFile) and f.explicit
    (p,) = discover([CODECS])
    assert isinstance(p, PartitionDir) and p.logdir is None and p.logdir_path == CODECS.parent
    with pytest.raises(UsageError, match="a file"):
        list(partition_dirs([log]))


def test_log_dirs_of_a_container_come_in_number_order(tmp_path: Path) -> None:
    """``data-2`` before ``data-10`` (as ``dump`` always listed them), each with its own partitions; a dir named
    like a partition (``data-2``) that holds partition dirs is a log dir, never a partition."""
    for name in ("data-10", "data-2", "extra"):
        (tmp_path / name).mkdir()
        (tmp_path / name / CODECS.name).symlink_to(CODECS, target_is_directory=True)
    units = discover([tmp_path])
    assert [(type(u).__name__, u.path.name) for u in units] == [
        ("LogDir", "data-2"), ("LogDir", "data-10"), ("LogDir", "extra")]
    assert [(p.logdir_path.name, p.topic, p.partition) for p in partition_dirs([tmp_path])] == [
        ("data-2", "codecs", 0), ("data-10", "codecs", 0), ("extra", "codecs", 0)]


@pytest.mark.parametrize("name", ["", ".", "..", "...", "x/", "x/.", "/", "00000000000000000000.log",
                                  "dir/00000000000000000000.log/", "00000000000000000000.index.swap", " .log"])
def test_a_bare_name_is_classified_as_its_path_is(name: str) -> None:
    """classify of a name (a dir's entry) as of the Path made of it: what pathlib calls its name is classified."""
    assert classify(name) == classify(Path(name))


def test_holds_records_by_a_names_ending_is_classifys_word(corpus: Path) -> None:
    """filetypes.holds_records (verify -j's pool, by a name's ending first) says of every name in the corpus, each
    also as a leftover (``.swap``...), and of names that are no Kafka file, what classify says."""
    names = {p.name for p in corpus.rglob("*")} | {"bootstrap.checkpoint", "x.log", ".log", "1.log", "log",
                                                   "00000000000000000000.log.jsonl", "checkpoint"}
    names |= {name + suffix for name in names for suffix in LEFTOVER_SUFFIXES}
    said = {name: holds_records(name) for name in names}
    assert said == {name: classify(name).kind.holds_records for name in names}
    assert {"00000000000000000000.log.swap", "00000000000000307588-0000000027.checkpoint.deleted",
            "bootstrap.checkpoint.tmp"} <= {name for name, holds in said.items() if holds}
