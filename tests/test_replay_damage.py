"""One truth for the loaded log (issue 26): the commands that replay a partition as the broker loads it
(``producers``, ``txns``, ``txns --hanging``: :func:`kafkatool.producers.replay_partition`) name what the load met as
``verify`` names it (same code, file, byte position and severity, once), and exit as ``verify --fail-on`` does; the
snapshot comparison never takes a snapshot the broker deletes. Built at test time from copies of the corpus."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

# What loading the log meets, as verify reports it: the invalid batch where recovery cuts a segment, the cut, and the
# producer snapshots the broker deletes (beyond the log end offset: ProducerStateManager.truncateAndReload; one it
# cannot read: loadFromSnapshot).
LOAD_CODES = ("crc-mismatch", "torn-tail", "recovery-truncates-log", "snapshot-beyond-log-end", "snapshot-crc-mismatch")
REPLAYING = (("producers",), ("txns",), ("txns", "--hanging"))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 1
    path.write_bytes(bytes(data))


def _crc_flip(part: Path) -> None:
    """A bit flipped inside a batch of the first segment (a partition dir copied alone: no recovery point, every
    segment recovered): recovery cuts there, offsets after it are lost, both snapshots end up beyond the log end."""
    _flip(part / "00000000000000000000.log", 3000)


def _torn_last_batch(part: Path) -> None:
    """The active segment's last batch cut short (a crash during its write)."""
    log = part / "00000000000000000174.log"
    log.write_bytes(log.read_bytes()[:-10])


def _snapshot_beyond(part: Path) -> None:
    """A readable producer snapshot past the log end offset, the log itself whole."""
    shutil.copyfile(part / "00000000000000000269.snapshot", part / "00000000000000000300.snapshot")


def _bad_snapshot(part: Path) -> None:
    """The newest producer snapshot's entries damaged (its CRC no longer matches)."""
    _flip(part / "00000000000000000269.snapshot", 40)


def _load_damage(lines: list[dict]) -> Counter[tuple]:
    return Counter((d["code"], d["path"], d["position"], d["severity"]) for d in lines
                   if d["type"] == "finding" and d["code"] in LOAD_CODES)


@pytest.mark.parametrize("damage", [_crc_flip, _torn_last_batch, _snapshot_beyond, _bad_snapshot],
                         ids=lambda f: f.__name__[1:])
def test_replaying_commands_name_the_loads_damage_as_verify(damage, corpus: Path, tmp_path: Path, run_cli) -> None:
    part = _copy(corpus / "kafka" / "logdir" / "txn-0", tmp_path / "txn-0")
    damage(part)
    verify = run_cli("verify", "-f", "jsonl", part)
    want = _load_damage(verify.jsonl())
    assert want, verify.stdout  # the case damages what the load reads
    exits = {level: run_cli("verify", "--fail-on", level, part).returncode for level in ("error", "warning")}
    for command in REPLAYING:
        out = run_cli(*command, "-f", "jsonl", part)
        assert out.returncode in (0, 1), out.stderr
        assert _load_damage(out.jsonl()) == want, (command, out.stdout)
        for level, code in exits.items():
            assert run_cli(*command, "--fail-on", level, part).returncode == code, (command, level)


@pytest.mark.parametrize(("damage", "said"), [(_crc_flip, "snapshot-beyond-log-end"),
                                              (_bad_snapshot, "snapshot-crc-mismatch")], ids=["cut", "unreadable"])
def test_snapshot_comparison_skips_the_snapshots_the_broker_deletes(damage, said: str, corpus: Path, tmp_path: Path,
                                                                   run_cli) -> None:
    """After a cut every snapshot is beyond the log end, and an unreadable one is no state at all: the broker deletes
    them at load, so nothing is compared with them (no producer-state-mismatch against a state the broker never
    holds, no producer "expired" from an unreadable file); what is said of them is verify's."""
    part = _copy(corpus / "kafka" / "logdir" / "txn-0", tmp_path / "txn-0")
    damage(part)
    lines = run_cli("producers", "-f", "jsonl", part).jsonl()
    compared = {d["path"] for d in lines if d["type"] == "finding" and d["code"].startswith("producer-")}
    assert compared <= {str(part / "00000000000000000174.snapshot")}
    assert any(d["type"] == "finding" and d["code"] == said for d in lines)


def test_a_kraft_log_truncated_to_its_snapshot_deletes_its_producer_snapshots(corpus: Path, run_cli) -> None:
    """A snapshot-only KRaft dir (MashaKosher 4ec23dc0: producer snapshots up to 482623, log end 476861 once the log
    starts at the latest snapshot): KafkaMetadataLog's truncateToLatestSnapshot deletes every producer snapshot and
    verify says so in its kraft-log-starts-at-snapshot; no replaying command calls one of them beyond the log end."""
    part = corpus / "real" / "MashaKosher_Internship" / "4ec23dc0" / "data" / "__cluster_metadata-0"
    verify = run_cli("verify", "-f", "jsonl", part)
    assert any(d["type"] == "finding" and d["code"] == "kraft-log-starts-at-snapshot" for d in verify.jsonl())
    want = _load_damage(verify.jsonl())
    assert not want
    for command in REPLAYING:
        out = run_cli(*command, "-f", "jsonl", part)
        assert _load_damage(out.jsonl()) == want, (command, out.stdout)
