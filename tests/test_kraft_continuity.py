"""KRaft continuity: ``__cluster_metadata-0`` as ``KafkaMetadataLog`` loads it (:mod:`kafkatool.metadata_log`).

On the corpus's real KRaft dirs and on copies of them changed at test time: a log starting above its newest snapshot
is an error (``recoverSnapshots``: the node does not start), a snapshot ahead of the log starts the log there
(``truncateToLatestSnapshot``), and the snapshots the load deletes are said, in every command that loads the dir.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafkatool.loader import load_partition

GAP = "real/MashaKosher_Internship/c335121f/data/__cluster_metadata-0"        # snapshots to 497081, log from 498211
SNAPSHOTS_ONLY = "real/MashaKosher_Internship/4ec23dc0/data/__cluster_metadata-0"  # no segment, latest 476861
RAFT = "real/hiage_kafka-raft/c5f680e5"                                         # three nodes, no snapshot


def _jsonl(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def _codes(rows: list[dict], code: str) -> list[dict]:
    return [r for r in rows if r.get("type") == "finding" and r["code"] == code]


def _copy(corpus: Path, tmp_path: Path, rel: str) -> Path:
    """The partition dir in a log dir of its own under ``tmp_path`` (writable: its files are changed by the test)."""
    dst = tmp_path / "data" / "__cluster_metadata-0"
    shutil.copytree(corpus / rel, dst)
    for p in (dst.parent, dst, *dst.iterdir()):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _overview(run_cli, part: Path) -> dict:
    p = run_cli("overview", "-f", "jsonl", str(part))
    return next(r for r in _jsonl(p.stdout) if r["type"] == "partition_overview") | {"rc": p.returncode}


# --- the gap: history before the log start in no snapshot -------------------------------------------------------


def test_a_gap_between_the_newest_snapshot_and_the_log_start_is_an_error(corpus: Path, run_cli) -> None:
    """``c335121f``: snapshots end at 497081, the log starts at 498211: ``recoverSnapshots`` finds no snapshot at or
    after the log start and throws (the node does not start); verify, overview and epochs say so and exit 1."""
    part = corpus / GAP
    p = run_cli("verify", "-f", "jsonl", str(part))
    rows = _jsonl(p.stdout)
    gap = _codes(rows, "kraft-snapshot-gap")
    assert p.returncode == 1 and len(gap) == 1, p.stdout[-2000:]
    assert gap[0]["severity"] == "error" and gap[0]["path"].endswith("00000000000000497081-0000000043.checkpoint")
    assert "offsets 497081..498210 (1,130)" in gap[0]["message"] and "does not start" in gap[0]["message"]
    summary = next(r for r in rows if r["type"] == "summary" and r["scope"] == "partition")
    assert (summary["log_start_offset"], summary["log_end_offset"]) == (498211, 499428)  # UnifiedLog's, as it stands
    assert not _codes(rows, "kraft-snapshot-deleted")  # it throws before deleting anything
    text = run_cli("verify", str(part))
    assert text.returncode == 1 and "ERROR kraft-snapshot-gap" in text.stdout
    o = _overview(run_cli, part)
    assert o["rc"] == 1 and o["problems"] == 1 and (o["log_start_offset"], o["log_end_offset"]) == (498211, 499428)
    e = run_cli("epochs", str(part))
    assert e.returncode == 1 and "kraft-snapshot-gap" in e.stdout


def test_a_snapshot_at_the_log_start_closes_the_gap(corpus: Path, tmp_path: Path, run_cli) -> None:
    """The same dir with a snapshot ending at the log start (498211, the log's epoch 44): the log loads; every
    older snapshot ends below the log start and is deleted (``recoverSnapshots``); exit 0."""
    part = _copy(corpus, tmp_path, GAP)
    older = sorted(part.glob("*.checkpoint"))
    shutil.copyfile(older[-1], part / "00000000000000498211-0000000044.checkpoint")
    p = run_cli("verify", "-f", "jsonl", str(part))
    rows = _jsonl(p.stdout)
    assert p.returncode == 0 and not _codes(rows, "kraft-snapshot-gap"), p.stdout[-2000:]
    deleted = _codes(rows, "kraft-snapshot-deleted")
    assert sorted(Path(r["path"]).name for r in deleted) == [s.name for s in older]
    assert all("below the log start offset 498211" in r["message"] for r in deleted)
    assert not _codes(rows, "kraft-log-starts-at-snapshot")
    o = _overview(run_cli, part)
    assert (o["rc"], o["problems"], o["log_start_offset"], o["log_end_offset"]) == (0, 0, 498211, 499428)


def test_no_snapshot_at_all_under_a_log_starting_above_zero(corpus: Path, tmp_path: Path, run_cli) -> None:
    part = _copy(corpus, tmp_path, GAP)
    for s in part.glob("*.checkpoint"):
        s.unlink()
    p = run_cli("verify", "-f", "jsonl", str(part))
    gap = _codes(_jsonl(p.stdout), "kraft-snapshot-gap")
    assert p.returncode == 1 and len(gap) == 1
    assert "there is no snapshot" in gap[0]["message"] and "offsets 0..498210 (498,211)" in gap[0]["message"]


# --- a snapshot ahead of the log: the log starts there ----------------------------------------------------------


def test_snapshots_and_no_segment_start_the_log_at_the_latest_snapshot(corpus: Path, run_cli) -> None:
    """``4ec23dc0``: snapshots, no segment. ``truncateToLatestSnapshot`` starts the log at 476861 (epoch 42 above the
    empty log's 0): overview gives log start = log end = 476861, text and JSONL; verify says the log starts there,
    that the 20 older snapshots are deleted, and none of a data partition's rules on what is beyond the log end."""
    part = corpus / SNAPSHOTS_ONLY
    o = _overview(run_cli, part)
    assert (o["rc"], o["log_start_offset"], o["log_end_offset"], o["problems"]) == (0, 476861, 476861, 0)
    text = run_cli("overview", str(part))
    row = next(line.split() for line in text.stdout.splitlines() if line.startswith(str(part)))
    assert row[3:5] == ["476861", "476861"], text.stdout
    p = run_cli("verify", "-f", "jsonl", str(part))
    rows = _jsonl(p.stdout)
    starts = _codes(rows, "kraft-log-starts-at-snapshot")
    assert len(starts) == 1 and starts[0]["path"].endswith("00000000000000476861-0000000042.checkpoint")
    assert "3 producer snapshots deleted" in starts[0]["message"]
    deleted = _codes(rows, "kraft-snapshot-deleted")
    older = sorted(s.name for s in part.glob("*.checkpoint"))[:-1]
    assert len(older) == 20 and sorted(Path(r["path"]).name for r in deleted) == older
    assert not _codes(rows, "epoch-start-beyond-log-end") and not _codes(rows, "snapshot-beyond-log-end")
    summary = next(r for r in rows if r["type"] == "summary" and r["scope"] == "partition")
    assert (summary["log_start_offset"], summary["log_end_offset"], summary["leader_epochs"]) == (476861, 476861, [])
    loaded = load_partition(part)
    assert loaded.metadata_log is not None and loaded.metadata_log.latest.end_offset == 476861
    assert [s.end_offset for s in loaded.metadata_log.snapshots] == [476861]


@pytest.mark.parametrize("name, why", [
    ("00000000000000499500-0000000044.checkpoint", "ends beyond the log end offset 499428"),
    ("00000000000000498220-0000000045.checkpoint", "its epoch 45 is above the log's latest epoch 44"),
])
def test_a_snapshot_ahead_of_the_log_truncates_it(corpus: Path, tmp_path: Path, run_cli, name: str,
                                                   why: str) -> None:
    """A follower that fetched a snapshot and crashed before truncating: the latest snapshot's epoch is above the
    log's, or the same with an end past the log end. The controller deletes the log and starts it at the snapshot."""
    part = _copy(corpus, tmp_path, GAP)
    shutil.copyfile(sorted(part.glob("*.checkpoint"))[-1], part / name)
    start = int(name.split("-")[0])
    p = run_cli("verify", "-f", "jsonl", str(part))
    rows = _jsonl(p.stdout)
    starts = _codes(rows, "kraft-log-starts-at-snapshot")
    assert p.returncode == 0 and len(starts) == 1 and why in starts[0]["message"], p.stdout[-2000:]
    assert "1 segment and 1 producer snapshot deleted" in starts[0]["message"]
    o = _overview(run_cli, part)
    assert (o["log_start_offset"], o["log_end_offset"], o["first_timestamp"], o["last_timestamp"]) == \
        (start, start, None, None)


def test_a_snapshot_not_ahead_of_the_log_leaves_it(corpus: Path, tmp_path: Path, run_cli) -> None:
    """A snapshot at the log end of the log's epoch is not ahead: the log stays as loaded."""
    part = _copy(corpus, tmp_path, GAP)
    shutil.copyfile(sorted(part.glob("*.checkpoint"))[-1], part / "00000000000000499428-0000000044.checkpoint")
    o = _overview(run_cli, part)
    assert (o["rc"], o["log_start_offset"], o["log_end_offset"]) == (0, 498211, 499428)


def test_a_partial_snapshot_is_deleted_not_ignored(corpus: Path, tmp_path: Path, run_cli) -> None:
    """A ``.checkpoint.part`` (``Snapshots.createTempFile``: a snapshot being written when the node stopped) is no
    stray file: ``recoverSnapshots`` deletes it."""
    part = _copy(corpus, tmp_path, SNAPSHOTS_ONLY)
    partial = part / "00000000000000480000-0000000042-8416113372545263452.checkpoint.part"
    shutil.copyfile(sorted(part.glob("*.checkpoint"))[-1], partial)
    p = run_cli("verify", "-f", "jsonl", str(part))
    rows = _jsonl(p.stdout)
    assert not [r for r in _codes(rows, "unknown-file") if r["path"] == str(partial)]
    said = [r for r in _codes(rows, "kraft-snapshot-deleted") if r["path"] == str(partial)]
    assert len(said) == 1 and "partial snapshot" in said[0]["message"]
    o = _overview(run_cli, part)  # not a snapshot the log starts at
    assert (o["log_start_offset"], o["log_end_offset"]) == (476861, 476861)


# --- metadata: the controller's replay ---------------------------------------------------------------------------


def _metadata(run_cli, part: Path) -> tuple[int, list[dict]]:
    p = run_cli("metadata", "-f", "jsonl", str(part))
    return p.returncode, _jsonl(p.stdout)


def test_metadata_says_the_gap_and_replays_what_there_is(corpus: Path, tmp_path: Path, run_cli) -> None:
    """``metadata`` on ``c335121f``: the gap is an error (exit 1), the replay of the newest snapshot and the log goes
    on; with the gap closed by a snapshot at the log start, the same dir replays cleanly from that snapshot."""
    rc, rows = _metadata(run_cli, corpus / GAP)
    gap = _codes(rows, "kraft-snapshot-gap")
    assert rc == 1 and len(gap) == 1 and "offsets 497081..498210 (1,130)" in gap[0]["message"]
    states = [r for r in rows if r["type"] == "partition_state"]
    assert {r["snapshot_end_offset"] for r in states if r["offset"] is None} == {497081}
    assert any(r["offset"] is not None for r in states)
    text = run_cli("metadata", str(corpus / GAP))
    assert text.returncode == 1 and "ERROR kraft-snapshot-gap" in text.stdout
    part = _copy(corpus, tmp_path, GAP)
    shutil.copyfile(sorted(part.glob("*.checkpoint"))[-1], part / "00000000000000498211-0000000044.checkpoint")
    rc, rows = _metadata(run_cli, part)
    assert rc == 0 and not [r for r in rows if r["type"] == "finding"]
    assert {r["snapshot_end_offset"] for r in rows if r["type"] == "partition_state" and r["offset"] is None} == \
        {498211}


def test_metadata_of_a_log_truncated_to_its_snapshot_replays_the_snapshot_only(corpus: Path, tmp_path: Path,
                                                                               run_cli) -> None:
    """A snapshot of a newer epoch than the log's, ending inside it: the controller drops the log, so the replay is
    that snapshot's alone (not the log's records after its end); on ``4ec23dc0`` (no segment) the latest snapshot,
    as before, and no finding."""
    part = _copy(corpus, tmp_path, GAP)
    shutil.copyfile(sorted(part.glob("*.checkpoint"))[-1], part / "00000000000000498220-0000000045.checkpoint")
    rc, rows = _metadata(run_cli, part)
    states = [r for r in rows if r["type"] == "partition_state"]
    assert rc == 0 and states and all(r["offset"] is None and r["snapshot_end_offset"] == 498220 for r in states)
    rc, rows = _metadata(run_cli, corpus / SNAPSHOTS_ONLY)
    states = [r for r in rows if r["type"] == "partition_state"]
    assert rc == 0 and not [r for r in rows if r["type"] == "finding"]
    assert states and {r["snapshot_end_offset"] for r in states} == {476861}


# --- the KRaft dirs without snapshots stay as they were ---------------------------------------------------------


def test_kraft_logs_from_offset_zero_have_no_snapshot_finding(corpus: Path, run_cli) -> None:
    """``hiage_kafka-raft``'s three nodes: logs from 0 and no snapshot, nothing for ``KafkaMetadataLog`` to say."""
    p = run_cli("verify", "-f", "jsonl", str(corpus / RAFT))
    rows = _jsonl(p.stdout)
    parts = [r for r in rows if r["type"] == "summary" and r.get("topic") == "__cluster_metadata"]
    assert len(parts) == 3 and all(r["log_start_offset"] == 0 for r in parts)
    assert not [r for r in rows if r.get("type") == "finding" and r["code"].startswith("kraft-")]

