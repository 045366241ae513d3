"""``producers``, ``txns`` and ``dump --isolation read_committed``: against Kafka's own files and generated logs."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.logwriter import LogDirWriter
from kafkatool.model import Batch
from kafkatool.producers import compare_snapshot, replay_partition, segment_logs
from kafkatool.records import scan
from kafkatool.smallfiles import read_producer_entries, read_txn_index
from kafkatool.txns import committed_view

from .conftest import corpus_root

T0 = 1_700_000_000_000


def batches(dir: Path) -> list[Batch]:
    out = []
    for _, log in segment_logs(dir):
        with open(log, "rb") as fh:
            out.extend(b for b in scan(fh, str(log)) if isinstance(b, Batch))
    return out


# --- Kafka's own files ----------------------------------------------------------------------------------------


def txn_partition() -> Path:
    return corpus_root() / "kafka" / "logdir" / "txn-0"


def test_aborted_transactions_equal_kafkas_txnindex() -> None:
    d = txn_partition()
    history = replay_partition(d)
    written = [(a.producer_id, a.first_offset, a.last_offset)
               for _, log in segment_logs(d) for a in read_txn_index(log.with_suffix(".txnindex"))]
    assert len(written) == 24
    assert history.aborted() == sorted(written, key=lambda t: t[2])
    # every marker in the log closes exactly one transaction, with the marker's outcome
    markers = [b for b in batches(d) if b.control]
    closed = [t for t in history.transactions if t.outcome != "OPEN"]
    assert sorted(t.last_offset for t in closed) == [b.base_offset for b in markers]
    assert sum(t.outcome == "COMMIT" for t in closed) == len(markers) - 24
    opened = [t for t in history.transactions if t.outcome == "OPEN"]
    assert [(t.producer_id, t.first_offset, t.lso_held_back) for t in opened] == [(2000, 266, 3)]
    assert history.lso == 266 and history.leo == 269
    assert history.findings == []


def test_producer_state_equals_kafkas_snapshots() -> None:
    """Kafka's snapshots list entries in HashMap order: compared by producer id. Here none had expired."""
    d = txn_partition()
    history = replay_partition(d)
    assert sorted(history.states) == [174, 269]
    for offset, rebuilt in history.states.items():
        written = read_producer_entries(d / f"{offset:020d}.snapshot")
        assert len(written) == 3
        assert {e.producer_id: e for e in rebuilt} == {e.producer_id: e for e in written}
    assert list(compare_snapshot(history)) == []


def test_expired_producer_missing_from_snapshot_is_info() -> None:
    """After recovery Kafka reloaded its snapshot dropping producer 3000 as expired: an expected difference."""
    d = corpus_root() / "kafka" / "recovery" / "crc-flip" / "after" / "rtopic-0"
    findings = list(compare_snapshot(replay_partition(d)))
    assert [(f.severity, f.code) for f in findings] == [("info", "producer-not-in-snapshot")]
    assert "producer 3000" in findings[0].message


def test_txns_cli_matches_txnindex_and_reports_open(run_cli) -> None:
    proc = run_cli("txns", "-f", "jsonl", txn_partition())
    assert proc.returncode == 1, proc.stderr  # the open transaction is a warning
    lines = proc.jsonl()
    txns = [x for x in lines if x["type"] == "transaction"]
    assert len(txns) == 60
    assert {"producer_id", "producer_epoch", "first_offset", "last_offset", "outcome", "records"} <= txns[0].keys()
    assert [x["code"] for x in lines if x["type"] == "finding"] == ["txn-open"]


# --- generated logs -------------------------------------------------------------------------------------------


def rec(i: int, t: int) -> list[RecordSpec]:
    return [RecordSpec(f"k{i}".encode(), f"v{i}".encode(), t), RecordSpec(None, f"w{i}".encode(), t + 1)]


def txn_logdir(root: Path) -> Path:
    """Through the broker model: pid 1 commits 0..2, pid 2 aborts 3..6 (data 3-4, marker at 6, pid 3 at 5),
    pid 1 opens a transaction at 7 (7-8) that stays open, pid 3 writes 9-10. HW checkpoint = LEO."""
    with LogDirWriter(root, cluster_id="c1", node_id=1) as ld:
        w = ld.partition("t", 0, b"\x01" * 16)
        w.append(record_batch(0, rec(0, T0), producer_id=1, producer_epoch=0, base_sequence=0, transactional=True))
        w.append(end_transaction_marker(2, True, producer_id=1, producer_epoch=0, coordinator_epoch=3,
                                        timestamp=T0 + 500))
        w.append(record_batch(3, rec(3, T0 + 1000), producer_id=2, producer_epoch=0, base_sequence=0,
                              transactional=True))
        w.append(record_batch(5, rec(5, T0 + 1100)[:1], producer_id=3, producer_epoch=0, base_sequence=0))
        w.append(end_transaction_marker(6, False, producer_id=2, producer_epoch=0, coordinator_epoch=3,
                                        timestamp=T0 + 1900))
        w.append(record_batch(7, rec(7, T0 + 2000), producer_id=1, producer_epoch=0, base_sequence=2,
                              transactional=True))
        w.append(record_batch(9, rec(9, T0 + 2100), producer_id=3, producer_epoch=0, base_sequence=1))
    return root / "t-0"


def test_generated_transactions_and_snapshot(tmp_path: Path) -> None:
    d = txn_logdir(tmp_path / "logdir")
    history = replay_partition(d)
    got = [(t.producer_id, t.first_offset, t.last_offset, t.outcome, t.records, t.coordinator_epoch)
           for t in history.transactions]
    assert got == [(1, 0, 2, "COMMIT", 2, 3), (2, 3, 6, "ABORT", 2, 3), (1, 7, 8, "OPEN", 2, None)]
    assert history.transactions[1].as_dict()["duration_ms"] == 900
    assert history.aborted() == [(a.producer_id, a.first_offset, a.last_offset)
                                 for a in read_txn_index(d / f"{0:020d}.txnindex")]
    assert history.lso == 7 and history.transactions[2].lso_held_back == 4
    assert history.findings == []
    assert list(compare_snapshot(history)) == []
    assert {e.producer_id: e for e in history.states[11]} == {
        e.producer_id: e for e in read_producer_entries(d / f"{11:020d}.snapshot")}


def test_dump_read_committed(tmp_path: Path, run_cli) -> None:
    d = txn_logdir(tmp_path / "logdir")

    def offsets(*extra: str) -> list[int]:
        proc = run_cli("dump", "-f", "jsonl", "--records", *extra, d)
        assert proc.returncode == 0, proc.stderr
        return [x["offset"] for x in proc.jsonl() if x["type"] == "record"]

    assert offsets() == list(range(11))
    # the commit marker (2), the aborted 3-4 and its marker (6) are dropped; pid 3's 5 is kept; stop at LSO 7
    assert offsets("--isolation", "read_committed") == [0, 1, 5]
    view = committed_view(d)
    assert (view.lso, view.high_watermark, view.aborted) == (7, 11, {2: [(3, 6)]})
    proc = run_cli("dump", "--isolation", "read_mostly", d)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_read_committed_stops_at_high_watermark(tmp_path: Path, run_cli) -> None:
    root = tmp_path / "logdir"
    with LogDirWriter(root, cluster_id="c1", node_id=1) as ld:
        w = ld.partition("h", 0, b"\x02" * 16)
        for i in range(0, 6, 2):
            w.append(record_batch(i, rec(i, T0 + i), producer_id=5, producer_epoch=0, base_sequence=i))
        w.high_watermark = 4
    proc = run_cli("dump", "-f", "jsonl", "--isolation", "read_committed", root / "h-0")
    assert [x["base_offset"] for x in proc.jsonl() if x["type"] == "batch"] == [0, 2]


def write_raw_log(d: Path, parts: list[bytes]) -> Path:
    d.mkdir(parents=True)
    (d / f"{0:020d}.log").write_bytes(b"".join(parts))
    return d


def idem(offset: int, n: int, *, pid: int = 9, epoch: int = 0, seq: int, txn: bool = False) -> bytes:
    return record_batch(offset, [RecordSpec(None, b"x", T0 + offset + i) for i in range(n)], producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq, transactional=txn)


def test_injected_idempotence_anomalies(tmp_path: Path, run_cli) -> None:
    parts = [
        idem(0, 2, seq=0),              # 0-1  seq 0..1
        idem(2, 2, seq=2),              # 2-3  seq 2..3
        idem(4, 2, seq=2),              # 4-5  duplicate of 2-3
        idem(6, 2, seq=7),              # 6-7  gap: 4..6 missing
        idem(8, 1, seq=5),              # 8    goes back (out of order)
        idem(9, 1, epoch=1, seq=3),     # 9    new epoch not at 0
        idem(10, 1, epoch=0, seq=9),    # 10   fenced: epoch 0 after 1
        idem(11, 2, pid=10, seq=0, txn=True),
        idem(13, 1, pid=10, seq=2),     # 13   non-transactional inside its open transaction
    ]
    d = write_raw_log(tmp_path / "anom-0", parts)
    positions = [0]
    for p in parts:
        positions.append(positions[-1] + len(p))
    history = replay_partition(d)
    got = [(f.code, f.position) for f in history.findings]
    assert got == [
        ("duplicate-sequence-number", positions[2]),
        ("sequence-gap", positions[3]),
        ("sequence-out-of-order", positions[4]),
        ("producer-epoch-bump", positions[5]),
        ("sequence-out-of-order", positions[5]),
        ("producer-fenced", positions[6]),
        ("txn-invalid-state", positions[8]),
    ]
    assert "offset 2" in history.findings[0].message
    assert "4..6 are missing" in history.findings[1].message

    proc = run_cli("producers", "-f", "jsonl", d)
    assert proc.returncode == 1, proc.stderr
    lines = proc.jsonl()
    assert [x["code"] for x in lines if x["type"] == "finding"] == [c for c, _ in got]
    producers = {x["producer_id"]: x for x in lines if x["type"] == "producer"}
    # the fenced batch at 10 (epoch 0 after 1) changes nothing: the producer stays at epoch 1, last offset 9
    # (ProducerAppendInfo.checkProducerEpoch refuses it from a client; producer_state.ProducerReplay ignores it)
    assert producers[9]["producer_epoch"] == 1 and producers[9]["last_offset"] == 9
    assert producers[10]["ongoing_transaction"] and producers[10]["current_txn_first_offset"] == 11

    txns = run_cli("txns", "-f", "jsonl", d).jsonl()
    assert [(x["producer_id"], x["first_offset"], x["last_offset"], x["outcome"], x["records"])
            for x in txns if x["type"] == "transaction"] == [(10, 11, 12, "OPEN", 2)]


def test_clean_log_exits_zero_and_text_output(tmp_path: Path, run_cli) -> None:
    d = write_raw_log(tmp_path / "ok-0", [idem(0, 2, seq=0), idem(2, 2, seq=2)])
    proc = run_cli("producers", d)
    assert proc.returncode == 0, proc.stderr
    assert "producer_id" in proc.stdout and "ERROR" not in proc.stdout
    proc = run_cli("txns", d)
    assert proc.returncode == 0 and proc.stdout.strip() == ""


def test_cli_usage_errors_and_help(tmp_path: Path, run_cli) -> None:
    for cmd in ("producers", "txns"):
        proc = run_cli(cmd, tmp_path / "nope")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        proc = run_cli(cmd, "-f", "xml", tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "Examples" in run_cli(cmd, "--help").stdout


# --- progress -------------------------------------------------------------------------------------------------


def log_bytes(*dirs: Path) -> int:
    return sum(p.stat().st_size for d in dirs for p in d.rglob("*.log"))


def crashed_in_its_first_segment(tmp_path: Path) -> Path:
    """crc-flip/before (an unclean shutdown, no recovery point: every segment recovered) with a CRC flipped in
    the first batch as well: recovery cuts the first segment at 0 and deletes the three after it."""
    case = tmp_path / "crashed"
    shutil.copytree(corpus_root() / "kafka" / "recovery" / "crc-flip" / "before", case)
    for p in case.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    first = case / "rtopic-0" / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    data[70] ^= 0xFF  # in the first batch's records, after its 61-byte header: its CRC no longer matches
    first.write_bytes(bytes(data))
    return case


def test_producers_and_txns_progress_counts_every_segment_byte_they_read(tmp_path: Path) -> None:
    """What a progress bar is told (``producers_paths``/``txns_paths(progress=...)``): producers reads each segment
    twice (the load, then the replay), txns a third time (verify, for the .txnindex checks); what the replay skips
    after a cut (the tail of a segment, the segments recovery deletes) counts as it skips it, so that the bar reaches
    the total it was given (``producers_bytes``/``txns_bytes``)."""
    from kafkatool.loader import load_partition
    from kafkatool.producers import producers_bytes, producers_paths
    from kafkatool.txns import txns_bytes, txns_paths

    crashed = crashed_in_its_first_segment(tmp_path)
    loaded = load_partition(crashed / "rtopic-0")
    assert [s.deleted for s in loaded.segments] == [False, True, True, True] and loaded.segments[0].valid_bytes == 0
    cases = [txn_partition(), corpus_root() / "kafka" / "logdir", corpus_root() / "kafka" / "recovery" / "crc-flip" /
             "before", crashed]
    for case in cases:
        seen: list[int] = []
        list(producers_paths([case], progress=seen.append))
        assert seen and sum(seen) == 2 * log_bytes(case) == producers_bytes([case]), case
        seen = []
        list(txns_paths([case], progress=seen.append))
        assert sum(seen) == 3 * log_bytes(case) == txns_bytes([case]), case
    # the replay alone (the load given): nothing to read before the cut at 0, the first segment counted when it is
    # skipped, then the three segments recovery deletes
    seen = []
    replay_partition(crashed / "rtopic-0", loaded=loaded, progress=seen.append)
    sizes = [s.size for s in loaded.segments]
    assert seen == [sizes[0], sum(sizes[1:])]


def test_progress_reaches_the_bars_total_on_every_corpus_dir() -> None:
    """Leftovers, torn and zero-filled tails, legacy logs, real brokers' dirs: producers and txns tell ``progress``
    what ``producers_bytes`` and ``txns_bytes`` say, no more, no less."""
    from kafkatool.producers import producers_bytes, producers_paths
    from kafkatool.txns import txns_bytes, txns_paths

    roots = [p for top in ("kafka", "real") for p in sorted((corpus_root() / top).iterdir()) if p.is_dir()]
    for root in roots:
        for run, total in ((producers_paths, producers_bytes), (txns_paths, txns_bytes)):
            seen: list[int] = []
            list(run([root], progress=seen.append))
            assert sum(seen) == total([root]), (run.__name__, root)
