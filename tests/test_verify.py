"""``verify`` against the corpus (clean dirs stay clean, damaged ones are caught where the damage is) and
against copies damaged on purpose, one check at a time."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kafkatool.log_check import CheckOptions, SegmentTask
from kafkatool.model import Finding
from kafkatool.segment_check import check_segment
from kafkatool.verify import PartitionSummary, verify_paths
from kafkatool.verify_files import VerifyOptions, VerifySummary

from .conftest import PROJECT_ROOT, corpus_root

FIXTURES = PROJECT_ROOT / "fixtures" / "logdir"
OPTIONS = VerifyOptions()


Result = tuple[list[Finding], list[PartitionSummary], VerifySummary]


def run(*paths: Path | str, options: VerifyOptions = OPTIONS) -> Result:
    findings, parts, total = [], [], None
    for item in verify_paths(list(paths), options):
        if isinstance(item, Finding):
            findings.append(item)
        elif isinstance(item, PartitionSummary):
            parts.append(item)
        else:
            assert isinstance(item, VerifySummary)
            total = item
    assert total is not None
    return findings, parts, total


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def codes(findings: list[Finding], severity: str | None = None) -> set[str]:
    return {f.code for f in findings if severity is None or f.severity == severity}


# --- the corpus: what must verify clean ---------------------------------------------------------------------


def _clean_dirs() -> list[str]:
    root = corpus_root() if os.environ.get("KAFKATOOL_CORPUS") or (PROJECT_ROOT.parent / "shared").exists() else None
    if root is None:
        return ["<corpus missing>"]
    dirs = ["kafka/logdir", "kafka/legacy"]
    dirs += sorted(str(p.relative_to(root)) for p in (root / "kafka/replicas").glob("*/broker-*"))
    dirs += sorted(str(p.relative_to(root)) for p in (root / "kafka/recovery").glob("*/after")
                   if p.parent.name != "leftovers")
    dirs += sorted(str(p.relative_to(root)) for p in (root / "real").iterdir() if p.name != "kafkajs_fixtures")
    return dirs


# The one real error of the corpus dirs: c335121f's metadata log starts 1,130 offsets after its newest snapshot
# (KafkaMetadataLog does not load it; tests/test_kraft_continuity.py).
_REAL_ERRORS = {("kraft-snapshot-gap", "MashaKosher_Internship/c335121f/data/__cluster_metadata-0")}


@pytest.mark.parametrize("rel", _clean_dirs())
def test_corpus_dirs_verify_without_errors(rel: str) -> None:
    findings, parts, total = run(corpus_root() / rel)
    assert [f for f in errors(findings) if not any(f.code == c and w in f.path for c, w in _REAL_ERRORS)] == []
    assert parts and total.partitions == len(parts)
    assert all(p.log_end_offset is not None for p in parts if p.segments)


def test_kafka_written_logdir_has_no_warnings_at_all() -> None:
    """Written by Kafka's own classes and closed cleanly: nothing to say beyond the missing meta.properties."""
    findings, parts, _ = run(corpus_root() / "kafka/logdir")
    assert codes(findings) <= {"meta-properties-missing"}
    assert {p.index for p in parts} == {"sparse"}
    # The checkpoints were read: every partition shows its high watermark.
    assert all(p.high_watermark is not None for p in parts)


def test_fixtures_verify_clean() -> None:
    findings, parts, _ = run(FIXTURES)
    assert findings == []
    payments = next(p for p in parts if p.path.endswith("payments-0"))
    assert payments.open_transactions == 1 and payments.first_unstable_offset is not None


def test_kafkajs_fetch_responses_are_flagged_where_they_are_not_segments() -> None:
    """Fetch-response extractions: partial trailing batches and a file named after the fetch offset."""
    root = corpus_root() / "real/kafkajs_fixtures"
    found = {(f.code, Path(f.path).parent.name, f.position) for f in errors(run(root)[0])}
    assert ("torn-tail", "test-topic-index-out-of-range-1", 129) in found
    assert ("offset-below-segment-base", "fixture-0", 0) in found
    assert {c for c, _, _ in found} <= {"torn-tail", "offset-below-segment-base", "decompression-failed",
                                        "record-invalid", "control-batch-invalid"}


# --- the corpus: damaged partitions, caught at the damage ------------------------------------------------------

DAMAGE = {
    # case: (severity, code, file, byte position)
    "crc-flip": ("error", "crc-mismatch", "00000000000000000259.log", 347),
    "torn-tail": ("error", "torn-tail", "00000000000000000259.log", 846),
    "zero-tail": ("warning", "zero-filled-tail", "00000000000000000259.log", 924),
    "corrupt-index": ("error", "index-size-not-multiple", "00000000000000000259.index", 4096),
    "bad-snapshot": ("error", "snapshot-crc-mismatch", "00000000000000000174.snapshot", 2),
    "missing-indexes": ("warning", "index-missing-large", "00000000000000000086.index", None),
}
# Damage with a second symptom: the corrupt index's first 16 bytes are garbage too (case.json), so its first
# slot holds a negative relative offset besides the file being 4,101 bytes long.
ALSO_DAMAGED = {
    "corrupt-index": {("error", "index-entry-invalid", "00000000000000000259.index", 0)},
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_partition_is_reported_at_the_damage(case: str) -> None:
    severity, code, name, position = DAMAGE[case]
    findings, parts, _ = run(corpus_root() / "kafka/recovery" / case / "before")
    hits = [f for f in findings if f.code == code and Path(f.path).name == name]
    assert hits, [f"{f.severity} {f.code} {f.path} {f.position}" for f in findings]
    assert hits[0].severity == severity and hits[0].position == position
    # Nothing else is wrong with these partitions: the only errors are the damage itself.
    also = ALSO_DAMAGED.get(case, set())
    seen = {(f.severity, f.code, Path(f.path).name, f.position) for f in findings}
    assert also <= seen
    assert {f.code for f in errors(findings)} <= {code} | {c for _, c, _, _ in also}
    case_json = json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())
    # The log end offset is the one the broker has after loading the log (LogLoader.recoverLog cuts at the damage);
    # the batches on disk end where the intact log did (except the torn batch, which is not a whole batch).
    assert parts[0].log_end_offset == case_json["kafka_result"]["next_offset"]
    if case != "torn-tail":
        assert parts[0].on_disk_end_offset == case_json["leo_intact"]


def test_damaged_partition_missing_indexes_names_both_files() -> None:
    findings, parts, _ = run(corpus_root() / "kafka/recovery/missing-indexes/before")
    missing = {(f.code, Path(f.path).name) for f in findings if "index-missing" in f.code}
    assert missing == {("index-missing-large", "00000000000000000086.index"),
                       ("timeindex-missing-large", "00000000000000000086.timeindex")}
    assert parts[0].index == "missing"


def test_leftovers_are_explained() -> None:
    findings, parts, _ = run(corpus_root() / "kafka/recovery/leftovers/before")
    left = sorted((f.code, Path(f.path).name) for f in findings if f.code.startswith("leftover-"))
    assert left == sorted([
        ("leftover-deleted", "00000000000000000000.index.deleted"),
        ("leftover-deleted", "00000000000000000000.log.deleted"),
        ("leftover-deleted", "00000000000000000000.timeindex.deleted"),
        ("leftover-deleted", "00000000000000000000.txnindex.deleted"),
        ("leftover-swap", "00000000000000000086.log.swap"),
        ("leftover-cleaned", "00000000000000000259.log.cleaned"),
    ])
    assert errors(findings) == []
    assert parts[0].log_start_offset == 86  # the .deleted segment is not part of the log


def test_leftovers_after_kafka_recovery_lost_the_txnindex() -> None:
    """Kafka completed the swap with a .log.swap that had no index files beside it: segment 86 came back with a
    preallocated empty index and no .txnindex, although it holds 8 aborted transactions (see the issue note). The
    copy has no recovery point checkpoint and no .kafka_cleanshutdown: the next start recovers segment 86 and
    rebuilds its .txnindex (LogSegment.recover), which verify says (as dump's read_committed view follows it)."""
    findings, _, _ = run(corpus_root() / "kafka/recovery/leftovers/after")
    assert errors(findings) == []
    assert ("txnindex-missing-rebuilt", "00000000000000000086.txnindex") in {(f.code, Path(f.path).name)
                                                                              for f in findings}
    assert ("index-preallocated-rolled", "00000000000000000086.index") in {(f.code, Path(f.path).name)
                                                                            for f in findings}


# --- damage on purpose: one check at a time -----------------------------------------------------------------


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """A copy of the project's fixture log dir (our own generated data), to damage."""
    dst = tmp_path / "logdir"
    shutil.copytree(FIXTURES, dst)
    return dst


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(position)
        fh.write(data)


def _batch_positions(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, base offset, last offset, size) of every batch, straight from the framing."""
    data, out, pos = log.read_bytes(), [], 0
    while pos + 61 <= len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((pos, base, base + delta, size + 12))
        pos += size + 12
    return out


def _recrc(path: Path, position: int) -> None:
    """Recompute a v2 batch's CRC32C after a header edit (so only the edited field is wrong)."""
    data = bytearray(path.read_bytes())
    size = struct.unpack_from(">i", data, position + 8)[0] + 12
    struct.pack_into(">I", data, position + 17, crc32c(bytes(data[position + 21:position + size])))
    path.write_bytes(bytes(data))


def test_record_count_above_offsets_is_an_error(logdir: Path) -> None:
    log = logdir / "orders-0/00000000000000000000.log"
    pos, base, last, _size = _batch_positions(log)[1]
    _patch(log, pos + 57, struct.pack(">i", last - base + 2))
    _recrc(log, pos)
    findings, _, _ = run(logdir / "orders-0")
    assert [(f.code, f.position) for f in errors(findings)] == [("record-count-mismatch", pos)]


def test_offsets_going_back_are_an_error(logdir: Path) -> None:
    log = logdir / "events-0/00000000000000000000.log"
    batches = _batch_positions(log)
    pos = batches[2][0]
    _patch(log, pos, struct.pack(">q", batches[0][1]))  # base offset is outside the CRC
    findings, _, _ = run(logdir / "events-0")
    assert ("offset-not-increasing", pos) in {(f.code, f.position) for f in errors(findings)}


def test_index_entry_pointing_inside_a_batch_is_broken(logdir: Path) -> None:
    index = logdir / "orders-0/00000000000000000000.index"
    relative, position = struct.unpack_from(">ii", index.read_bytes(), 0)
    _patch(index, 4, struct.pack(">i", position + 1))
    findings, parts, _ = run(logdir / "orders-0")
    hit = [f for f in errors(findings) if f.code == "index-entry-not-batch-start"]
    assert hit and hit[0].position == 0 and Path(hit[0].path).name == index.name
    assert parts[0].index == "broken"


@pytest.mark.parametrize("suffix, width", [(".index", 8), (".timeindex", 12)])
@pytest.mark.parametrize("stray", [None, "in-the-last-slot", "right-after-the-entries"])
def test_preallocated_slots_are_counted_and_an_entry_among_them_found(logdir: Path, suffix: str, width: int,
                                                                      stray: str | None) -> None:
    """A crashed broker leaves the active segment's indexes preallocated (10 MiB of zero slots): they are counted,
    not decoded; an entry written among them is found at its slot, wherever it is."""
    index = logdir / f"orders-0/00000000000000000104{suffix}"
    entries = index.read_bytes()
    used = len(entries) // width
    slots = used + 100_000
    data = bytearray(entries + bytes((slots - used) * width))
    bad = {None: None, "in-the-last-slot": slots - 1, "right-after-the-entries": used + 1}[stray]
    if bad is not None:
        data[bad * width + width - 1] = 7  # the slot's last byte: a position, or a relative offset
    index.write_bytes(bytes(data))
    findings, _, _ = run(logdir / "orders-0")
    mine = [f for f in findings if Path(f.path).name == index.name]
    scrambled = f"{suffix[1:]}-entries-after-empty-slot"
    if bad is None:
        assert [(f.code, f.severity) for f in mine] == [("index-preallocated", "info")]
        assert f"uses {used} of {slots} preallocated slots" in mine[0].message
    else:
        # (a .timeindex whose last slot is zero also fails Kafka's sanity check: its last timestamp is below the first)
        hits = [f for f in errors(mine) if f.code == scrambled]
        assert [f.position for f in hits] == [bad * width]
        assert f"slot {bad} holds an entry after the never-written slot {used}" in hits[0].message


def test_index_entry_beyond_the_log_is_broken(logdir: Path) -> None:
    index = logdir / "orders-0/00000000000000000000.index"
    data = index.read_bytes()
    relative, position = struct.unpack_from(">ii", data, len(data) - 8)
    log_size = (logdir / "orders-0/00000000000000000000.log").stat().st_size
    index.write_bytes(data + struct.pack(">ii", relative + 1000, log_size + 100))
    findings, _, _ = run(logdir / "orders-0")
    assert ("index-entry-beyond-log", len(data)) in {(f.code, f.position) for f in errors(findings)}


def test_time_index_entry_that_would_skip_an_earlier_batch_is_broken(logdir: Path) -> None:
    tindex = logdir / "orders-0/00000000000000000000.timeindex"
    data = bytearray(tindex.read_bytes())
    assert len(data) >= 24
    ts0, _ = struct.unpack_from(">qi", data, 0)
    struct.pack_into(">q", data, 12, ts0 + 1)  # still increasing, but below what earlier batches reached
    tindex.write_bytes(bytes(data))
    findings, parts, _ = run(logdir / "orders-0")
    assert [(f.code, f.position) for f in errors(findings)] == [("timeindex-entry-wrong", 12)]
    assert parts[0].index == "broken"


def test_missing_txnindex_entry_is_an_error(logdir: Path) -> None:
    part = logdir / "payments-0"
    txn = next(p for p in sorted(part.glob("*.txnindex")) if p.stat().st_size >= 34)
    data = txn.read_bytes()
    txn.write_bytes(data[34:])  # drop the first aborted transaction
    findings, _, _ = run(part)
    assert "txnindex-missing-abort" in codes(findings, "error")


def test_extra_txnindex_entry_is_an_error(logdir: Path) -> None:
    part = logdir / "payments-0"
    txn = next(p for p in sorted(part.glob("*.txnindex")) if p.stat().st_size >= 34)
    data = txn.read_bytes()
    version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, 0)
    txn.write_bytes(data + struct.pack(">hqqqq", version, pid + 77, first, last, lso))
    findings, _, _ = run(part)
    assert ("txnindex-extra-entry", len(data)) in {(f.code, f.position) for f in errors(findings)}


def test_transactions_spanning_segments_are_joined_like_kafka(logdir: Path) -> None:
    """Every .txnindex Kafka wrote for the corpus' transactional partitions is what verify derives from the log,
    including transactions that began in an earlier segment (producer state carried across segments)."""
    for rel in ("kafka/logdir/txn-0", "kafka/recovery/bad-snapshot/after/rtopic-0"):
        findings, _, _ = run(corpus_root() / rel)
        assert not {c for c in codes(findings) if c.startswith("txnindex")}, rel
    # and it does look: one aborted transaction of the recovery partition starts in the segment before its marker
    report = check_segment(SegmentTask(86, str(corpus_root() / "kafka/recovery/bad-snapshot/after/rtopic-0/"
                                               "00000000000000000086.log")))
    assert any(first is None for _pid, first, _m, _lso in report.aborts)


def test_epoch_checkpoint_against_the_batches(logdir: Path) -> None:
    part = logdir / "orders-0"
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 5\n")
    findings, _, _ = run(part)
    assert "epoch-start-mismatch" in codes(findings, "warning")
    (part / "leader-epoch-checkpoint").unlink()
    findings, _, _ = run(part)
    assert "epoch-checkpoint-missing" in codes(findings, "warning")


def test_checkpoints_beyond_the_log_end(logdir: Path) -> None:
    (logdir / "replication-offset-checkpoint").write_text("0\n1\norders 0 999\n")
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n2\norders 0 999\nghost 3 7\n")
    findings, parts, _ = run(logdir)
    found = codes(findings)
    assert {"high-watermark-beyond-log-end", "recovery-point-beyond-log-end", "checkpoint-unknown-partition"} <= found
    orders = next(p for p in parts if p.path.endswith("orders-0"))
    # UnifiedLog.updateHighWatermark caps the checkpointed 999 at the log end offset
    assert (orders.high_watermark_checkpoint, orders.high_watermark) == (999, orders.log_end_offset)


def test_broken_checkpoint_syntax_is_an_error_with_a_position(logdir: Path) -> None:
    (logdir / "replication-offset-checkpoint").write_text("0\n2\norders 0 120\n")
    findings, _, _ = run(logdir)
    bad = [f for f in errors(findings) if f.path.endswith("replication-offset-checkpoint")]
    assert bad and bad[0].position is not None


def test_a_segment_removed_by_hand_leaves_a_gap(logdir: Path) -> None:
    part = logdir / "events-0"
    middle = sorted(part.glob("*.log"))[1]
    for p in part.glob(middle.stem + ".*"):
        p.unlink()
    findings, _, _ = run(part)
    assert "offset-gap" in codes(findings, "warning")


def test_names_leftovers_and_odd_dirs(logdir: Path) -> None:
    part = logdir / "orders-1"
    shutil.copy(part / "00000000000000000000.log", part / "123.log")
    shutil.copy(part / "00000000000000000000.log", part / "00000000000000000000.log.cleaned")
    (logdir / ("orders-7." + "a" * 32 + "-delete")).mkdir()
    (logdir / "lost+found").mkdir()
    findings, _, _ = run(logdir)
    found = {(f.code, Path(f.path).name) for f in findings}
    assert ("segment-name-invalid", "123.log") in found
    assert ("leftover-cleaned", "00000000000000000000.log.cleaned") in found
    assert ("partition-pending-delete", "orders-7." + "a" * 32 + "-delete") in found
    assert ("unknown-dir", "lost+found") in found


def test_corrupt_producer_snapshot(logdir: Path) -> None:
    snap = sorted((logdir / "payments-0").glob("*.snapshot"))[0]
    data = bytearray(snap.read_bytes())
    data[-1] ^= 1
    snap.write_bytes(bytes(data))
    findings, _, _ = run(logdir / "payments-0")
    assert [(f.code, Path(f.path).name) for f in errors(findings)] == [("snapshot-crc-mismatch", snap.name)]


def test_deep_decodes_every_batch(tmp_path: Path) -> None:
    """A compressed batch whose payload is garbage but whose CRC was recomputed: only --deep notices."""
    src = corpus_root() / "kafka/logdir/codecs-1"
    part = tmp_path / "codecs-1"
    shutil.copytree(src, part)
    log = sorted(part.glob("*.log"))[0]
    pos, _b, _l, size = _batch_positions(log)[0]
    _patch(log, pos + 61, b"\xff" * min(16, size - 61))
    _recrc(log, pos)
    assert errors(run(part)[0]) == []
    deep = VerifyOptions(check=CheckOptions(deep=True))
    assert [(f.code, f.position) for f in errors(run(part, options=deep)[0])] == [("decompression-failed", pos)]


def test_deep_is_clean_on_the_corpus_logdir() -> None:
    deep = VerifyOptions(check=CheckOptions(deep=True))
    assert errors(run(corpus_root() / "kafka/logdir", corpus_root() / "kafka/legacy", options=deep)[0]) == []


def test_findings_per_file_are_capped_and_counted(tmp_path: Path) -> None:
    part = tmp_path / "flip-0"
    shutil.copytree(FIXTURES / "events-0", part)
    log = sorted(part.glob("*.log"))[0]
    positions = [b[0] for b in _batch_positions(log)]
    for pos in positions:
        _patch(log, pos + 17, b"\0\0\0\0")
    options = VerifyOptions(check=CheckOptions(max_findings_per_code=2))
    crc = [f for f in run(part, options=options)[0] if f.code == "crc-mismatch"]
    assert len(crc) == 3 and f"{len(positions) - 2} more" in crc[-1].message


def test_parallel_jobs_give_the_same_answer() -> None:
    paths = [corpus_root() / "kafka/recovery/crc-flip/before", corpus_root() / "kafka/logdir", FIXTURES]
    one = run(*paths)
    two = run(*paths, options=VerifyOptions(jobs=2))
    assert one[0] == two[0]
    assert [p.as_dict() for p in one[1]] == [p.as_dict() for p in two[1]]


def test_single_files(logdir: Path) -> None:
    log = logdir / "orders-0/00000000000000000000.log"
    assert run(log)[0] == []
    index = logdir / "orders-0/00000000000000000000.index"
    _patch(index, 4, struct.pack(">i", struct.unpack_from(">i", index.read_bytes(), 4)[0] + 1))
    assert codes(run(index)[0], "error") == {"index-entry-not-batch-start"}
    assert run(logdir / "replication-offset-checkpoint")[0] == []


# --- the command ------------------------------------------------------------------------------------------


def test_cli_jsonl_contract_and_exit_codes(run_cli) -> None:
    result = run_cli("verify", "--format", "jsonl", str(corpus_root() / "kafka/recovery/crc-flip/before"))
    assert result.returncode == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    finding = next(d for d in lines if d["type"] == "finding" and d["code"] == "crc-mismatch")
    assert set(finding) == {"type", "severity", "code", "path", "position", "message"}
    assert finding["position"] == 347 and finding["severity"] == "error"
    assert lines[-1]["type"] == "summary" and lines[-1]["scope"] == "total" and lines[-1]["errors"] == 1
    part = next(d for d in lines if d["type"] == "summary" and d["scope"] == "partition")
    # recovery cuts at the bad CRC (Kafka: next offset 264); the batches on disk end at 269
    assert (part["log_end_offset"], part["on_disk_end_offset"], part["segments"]) == (264, 269, 4)


def test_cli_text_table_and_fail_on(run_cli) -> None:
    clean = run_cli("verify", str(FIXTURES))
    assert clean.returncode == 0, clean.stderr
    assert "payments-0" in clean.stdout and "clean" in clean.stdout
    zero = str(corpus_root() / "kafka/recovery/zero-tail/before")
    assert run_cli("verify", zero).returncode == 0                       # a warning is not an error
    assert run_cli("verify", "--fail-on", "warning", zero).returncode == 1
    assert run_cli("verify", "--fail-on", "fatal", zero).returncode == 2
    assert run_cli("verify", "/nonexistent/dir").returncode == 2


def test_bulk_index_loader_agrees_with_the_construct_reader() -> None:
    """``load_offset_index`` decodes with ``array``; the entries must be the Construct-derived reader's, on every
    ``.index`` of the corpus (preallocated, trimmed, garbage)."""
    from kafkatool.filetypes import FileKind, classify
    from kafkatool.log_check import Sink
    from kafkatool.segment_check import load_offset_index
    from kafkatool.smallfiles import IndexEntry, read_small_file

    checked = 0
    for path in sorted(corpus_root().rglob("*.index")):
        base = classify(path).base_offset or 0
        entries, verdict = load_offset_index(str(path), base, True, Sink([], 100))
        theirs = [(e.offset, e.position) for e in read_small_file(path, FileKind.INDEX, str(path), base)
                  if isinstance(e, IndexEntry)]
        ours = [entries.entry(i) for i in range(len(entries))]
        if verdict.status == "broken":
            assert ours == theirs[: len(ours)], path
        else:
            assert ours == theirs, path
        checked += 1
    assert checked > 100


def test_an_interrupted_apply_is_named(logdir: Path) -> None:
    (logdir / ".kafkatool-apply.journal").write_text("{}\n")
    (logdir / "orders-0" / "00000000000000000000.index.kafkatool-tmp").write_bytes(b"")
    found = {(f.code, Path(f.path).name) for f in run(logdir)[0]}
    assert ("apply-interrupted", ".kafkatool-apply.journal") in found
    assert ("apply-interrupted", "00000000000000000000.index.kafkatool-tmp") in found


def test_a_record_file_named_alone_counts_in_the_total() -> None:
    log = corpus_root() / "kafka/recovery/crc-flip/before/rtopic-0/00000000000000000259.log"
    findings, parts, total = run(log)
    assert parts == [] and (total.files, total.bytes, total.batches) == (1, log.stat().st_size, 6)
    assert [(f.code, f.position) for f in findings] == [("crc-mismatch", 347)]


def test_progress_is_told_every_record_byte_a_bar_counts() -> None:
    """What ``verify``'s progress bar is told adds up to what it was sized with (``walk.total_bytes``) on the whole
    corpus and the fixtures: files read, and the leftovers and pending-delete dirs it names without reading."""
    from kafkatool.walk import total_bytes

    for root in (corpus_root() / "kafka", corpus_root() / "real", FIXTURES):
        seen: list[int] = []
        list(verify_paths([root], OPTIONS, progress=seen.append))
        assert sum(seen) == total_bytes([root]), root


def test_a_damaged_bootstrap_checkpoint_is_found(tmp_path: Path) -> None:
    """``bootstrap.checkpoint`` (the metadata a KRaft node is formatted with, a snapshot-format record file in the
    log dir) is checked like the partition dirs' KRaft snapshots."""
    src = next(corpus_root().rglob("bootstrap.checkpoint")).parent
    logdir = tmp_path / "logdir"
    shutil.copytree(src, logdir)
    clean, _, _ = run(logdir)
    data = bytearray((logdir / "bootstrap.checkpoint").read_bytes())
    data[-1] ^= 0xFF  # the last byte of the snapshot footer (a control batch): covered by its CRC
    (logdir / "bootstrap.checkpoint").write_bytes(bytes(data))
    damaged, _, _ = run(logdir)
    new = [f for f in damaged if f not in clean]
    assert {os.path.basename(f.path) for f in new} == {"bootstrap.checkpoint"}, new
    assert "crc-mismatch" in {f.code for f in new}, new


def test_a_partitions_bytes_are_its_files_sizes(corpus: Path, tmp_path: Path) -> None:
    """The summary's bytes are what a ``stat`` of each of the dir's files says, whichever reading took a size on the
    way (the loader's segments, the .index files read whole, partition.metadata) and whatever the file is (a FIFO,
    a link, a leftover, a file nobody reads, one that cannot be read)."""
    part = tmp_path / "logdir" / "txn-0"
    shutil.copytree(corpus / "kafka/logdir/txn-0", part)
    (part.parent / "meta.properties").write_bytes(b"version=1\nnode.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    (part / "00000000000000000174.log").rename(part / "00000000000000000174.log.swap")
    (part / "00000000000000000269.snapshot").write_bytes(b"not a snapshot" * 9)
    (part / "notes.txt").write_bytes(b"x" * 1234)
    os.mkfifo(part / "00000000000000000300.index")
    (part / "partition.metadata").rename(part / "pm")
    (part / "partition.metadata").symlink_to(part / "pm")
    (part / "pm").write_bytes((part / "pm").read_bytes() + b"\n" * 77)
    _findings, parts, _total = run(part.parent)
    sizes = {p.name: os.stat(p).st_size for p in part.iterdir()}
    assert sizes["pm"] > 43 and sizes["00000000000000000300.index"] == 0
    assert [(s.path, s.bytes) for s in parts] == [(str(part), sum(sizes.values()))]
