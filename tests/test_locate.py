"""``locate`` against brute force: every offset and a spread of timestamps of real and damaged partitions.

The brute force reads every batch and record of a partition (``scan`` + ``decode_records``) and answers
with the broker's rules spelled out the slow way:

- offset N: the first batch (in log order) whose last offset ≥ N; in it the first record with offset ≥ N
  (none: compacted away). N below the first segment's base offset or at/after the log end: not found.
- timestamp T (``FileRecords.searchForTimestamp`` over the log): the first batch whose max timestamp ≥ T
  that holds a record with timestamp ≥ T; that record. When every batch's max timestamp is its largest
  record timestamp (as producers and brokers write them) this is simply the first record in offset order
  with timestamp ≥ T, out-of-order timestamps or not; only a header claiming more than its records makes
  the batch-first rule visible (``test_batch_header_decides``).

``locate`` must give the same batch and record through its indexes, without them (``--no-index``), and with
indexes removed, garbled, or left preallocated by a crash.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.errors import UsageError
from kafkatool.locate import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    LocateOptions,
    Location,
    locate,
    locate_offset,
    locate_timestamp,
    parse_timestamp,
    partition_segments,
)
from kafkatool.logwriter import PartitionWriter
from kafkatool.model import Batch, Finding, Record
from kafkatool.records import RawBatch, decode_records, scan
from kafkatool.smallfiles import read_offset_index

from .clirun import cli
from .conftest import corpus_root

ROOT = corpus_root()
RECOVERY = "kafka/recovery/{}/rtopic-0"
NO_INDEX = LocateOptions(use_indexes=False)

PARTITIONS = [
    RECOVERY.format("missing-indexes/after"),   # 4 segments, lz4/zstd, transactions, index every 1024 bytes
    RECOVERY.format("missing-indexes/before"),  # segment 86 without .index/.timeindex
    RECOVERY.format("corrupt-index/before"),    # active segment's .index garbled
    RECOVERY.format("torn-tail/before"),        # torn last batch, preallocated active indexes
    RECOVERY.format("zero-tail/before"),        # zero-filled tail of the active segment
    RECOVERY.format("crc-flip/before"),         # a batch with a bad CRC
    "kafka/logdir/codecs-0",                    # 3 segments
    "kafka/logdir/txn-0",
    "kafka/logdir/appendtime-0",                # LOG_APPEND_TIME
    "kafka/logdir/horizon-0",
    "kafka/legacy/magic0-gzip-0",               # v0 wrappers, no indexes at all
    "kafka/legacy/magic1-lz4-0",
    "real/MashaKosher_Internship/4ec23dc0/data/jwtCheckRequest-0",  # log start 50 (segment 0 deleted)
    "real/MashaKosher_Internship/4ec23dc0/data/__consumer_offsets-15",  # compacted: offset gaps
    "real/MashaKosher_Internship/c335121f/data/__cluster_metadata-0",
    "real/kafkajs_fixtures/v4_response_mixed_formats/test-mixed-message-formats-0",
    "real/iechenyb_data/kafka-logs/test-0921-0",
    "real/tuyen-nnt_kafka_2.13-3.0.0/data/kafka/__consumer_offsets-13",
]


# --- brute force ------------------------------------------------------------------------------------


@dataclass
class Entry:
    segment: str
    batch: Batch
    records: list[Record]


@dataclass
class Truth:
    entries: list[Entry]
    log_start: int
    log_end: int

    def offset(self, n: int) -> tuple[str, int, int | None] | None:
        """(segment, batch position, record offset or None) the broker reads for offset ``n``."""
        if not self.log_start <= n < self.log_end:
            return None
        for e in self.entries:
            if e.batch.last_offset >= n:
                rec = next((r.offset for r in e.records if r.offset >= n), None)
                return e.segment, e.batch.position, rec
        return None

    def timestamp(self, t: int) -> tuple[str, int, int] | None:
        for e in self.entries:
            if e.batch.max_timestamp >= t:
                rec = next((r for r in e.records if r.timestamp >= t and r.offset >= self.log_start), None)
                if rec is not None:
                    return e.segment, e.batch.position, rec.offset
        return None

    def max_timestamp(self) -> tuple[str, int, int] | None:
        top = max((e.batch.max_timestamp for e in self.entries), default=-1)
        for e in self.entries:
            if e.batch.max_timestamp == top and top >= 0:
                rec = next((r for r in e.records if r.timestamp == top), None)
                return None if rec is None else (e.segment, e.batch.position, rec.offset)
        return None

    def timestamps_to_try(self, limit: int = 300) -> list[int]:
        """Every record and batch timestamp ±1, below all and above all (a fixed sample beyond ``limit``)."""
        seen = {r.timestamp for e in self.entries for r in e.records} | {e.batch.max_timestamp for e in self.entries}
        seen = {t for t in seen if t >= 0}
        if not seen:
            return [0, 1_700_000_000_000]
        spread = sorted(t for t in {t + d for t in seen for d in (-1, 0, 1)} if t >= 0)
        return sorted({0, max(0, min(seen) - 1000), max(seen) + 1, *sample(spread, limit)})


def sample(values: list[int], limit: int) -> list[int]:
    return values if len(values) <= limit else sorted(random.Random(0).sample(values, limit))


def brute_force(partition: Path) -> Truth:
    entries = []
    segments = partition_segments(partition)
    for seg in segments:
        with open(seg.log, "rb") as fh:
            for item in scan(fh, seg.display, with_raw=True):
                if isinstance(item, RawBatch):
                    records, _ = decode_records(item.batch, item.raw, seg.display)
                    entries.append(Entry(seg.display, item.batch, records))
    last = segments[-1]
    tail = [e for e in entries if e.segment == last.display]
    log_end = tail[-1].batch.next_offset if tail else last.base_offset
    return Truth(entries, segments[0].base_offset, log_end)


def answer(loc: Location) -> tuple[str, int, int | None] | None:
    if not loc.found:
        return None
    assert loc.segment is not None and loc.position is not None and loc.batch is not None
    assert loc.batch.position == loc.position
    return loc.segment, loc.position, None if loc.record is None else loc.record.offset


def partition_id(rel: str) -> str:
    return rel.replace("kafka/recovery/", "").replace("/rtopic-0", "").split("/data/")[-1]


# --- every offset, every timestamp ----------------------------------------------------------------------


# every offset of these is located one at a time: ~35 s and ~12 s of CPU
SLOW_PARTITIONS = {"real/kafkajs_fixtures/v4_response_mixed_formats/test-mixed-message-formats-0",
                   "real/tuyen-nnt_kafka_2.13-3.0.0/data/kafka/__consumer_offsets-13"}


@pytest.mark.parametrize("rel", [pytest.param(rel, marks=[pytest.mark.slow] if rel in SLOW_PARTITIONS else [])
                                 for rel in PARTITIONS], ids=partition_id)
def test_every_offset_agrees_with_brute_force(rel: str) -> None:
    partition = ROOT / rel
    truth = brute_force(partition)
    assert truth.log_end > truth.log_start, "a partition with records"
    every = [truth.log_start - 1, *range(truth.log_start, truth.log_end), truth.log_end, truth.log_end + 7]
    some = set(sample(every, 300))
    for n in every:
        expected = truth.offset(n)
        for options in (LocateOptions(), NO_INDEX) if n in some else (LocateOptions(),):
            loc = locate_offset(partition, n, options)
            assert answer(loc) == expected, (n, options, loc.steps, loc.note)
            if expected is None:
                assert loc.note and ("log end offset" in loc.note or "log start offset" in loc.note)
            else:
                assert loc.bytes_scanned == loc.batch.position + loc.batch.size - loc.scan_start
                if loc.record is not None and loc.record.offset != n:
                    assert loc.note and "not in the log" in loc.note


@pytest.mark.parametrize("rel", PARTITIONS, ids=partition_id)
def test_every_timestamp_agrees_with_brute_force(rel: str) -> None:
    partition = ROOT / rel
    truth = brute_force(partition)
    for t in truth.timestamps_to_try():
        expected = truth.timestamp(t)
        for options in (LocateOptions(), NO_INDEX):
            loc = locate_timestamp(partition, t, options)
            assert answer(loc) == expected, (t, options, loc.steps, loc.note)
            if expected is not None:
                assert loc.record is not None and loc.record.timestamp >= t
                assert loc.offset == loc.record.offset
    assert answer(locate_timestamp(partition, MAX_TIMESTAMP)) == truth.max_timestamp()
    assert locate_timestamp(partition, LATEST_TIMESTAMP).offset == truth.log_end
    earliest = locate_timestamp(partition, EARLIEST_TIMESTAMP)
    assert (earliest.found, earliest.offset) == (True, truth.log_start)
    assert answer(earliest)[:2] == truth.offset(truth.log_start)[:2]


def test_corpus_cases_exercise_the_interesting_paths() -> None:
    """The partitions above really contain gaps, log-append time, a late log start and legacy wrappers."""
    gaps = brute_force(ROOT / PARTITIONS[13])
    offsets = [r.offset for e in gaps.entries for r in e.records]
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets)))  # compaction left holes
    assert brute_force(ROOT / PARTITIONS[12]).log_start == 50
    assert {e.batch.timestamp_type for e in brute_force(ROOT / "kafka/logdir/appendtime-0").entries} == {"log_append"}
    assert {e.batch.magic for e in brute_force(ROOT / PARTITIONS[15]).entries} >= {1, 2}


# --- the index did the work ------------------------------------------------------------------------------


def test_index_bounds_the_scan() -> None:
    """With index.interval.bytes 1024, a lookup scans at most ~1 KiB plus two batches, never from 0."""
    partition = ROOT / RECOVERY.format("missing-indexes/after")
    truth = brute_force(partition)
    biggest = max(e.batch.size for e in truth.entries)
    segments = partition_segments(partition)
    entries = {s.base_offset: [(e.offset, e.position) for e in read_offset_index(s.index)] for s in segments}
    indexed = 0
    for n in range(truth.log_start, truth.log_end):
        loc = locate_offset(partition, n)
        assert loc.fallback is None
        base = max(s.base_offset for s in segments if s.base_offset <= n)
        assert loc.index_entry == max((e for e in entries[base] if e[0] <= n), default=None)  # OffsetIndex.lookup
        if loc.index_entry is not None:
            indexed += 1
            assert loc.scan_start == loc.index_entry[1] > 0
            assert loc.bytes_scanned <= 1024 + 2 * biggest, (n, loc.bytes_scanned)
            assert locate_offset(partition, n, NO_INDEX).bytes_scanned > loc.bytes_scanned
    assert indexed > 150


# --- damaged, missing and preallocated indexes ----------------------------------------------------------


def _copy(tmp_path: Path, rel: str) -> Path:
    dst = tmp_path / "rtopic-0"
    shutil.copytree(ROOT / rel, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


def _agrees(partition: Path, truth: Truth, offsets: range) -> list[Location]:
    locs = []
    for n in offsets:
        loc = locate_offset(partition, n)
        assert answer(loc) == truth.offset(n), (n, loc.steps)
        locs.append(loc)
    return locs


def test_missing_index_falls_back_and_says_so(tmp_path: Path) -> None:
    partition = _copy(tmp_path, RECOVERY.format("missing-indexes/after"))
    (partition / "00000000000000000086.index").unlink()
    (partition / "00000000000000000086.timeindex").unlink()
    truth = brute_force(partition)
    for loc in _agrees(partition, truth, range(86, 174)):
        assert loc.fallback == "00000000000000000086.index is missing: not used"
        assert loc.index_entry is None and loc.scan_start == 0
    for t in truth.timestamps_to_try():
        loc = locate_timestamp(partition, t)
        assert answer(loc) == truth.timestamp(t)
    assert "00000000000000000086.timeindex is missing" in (locate_timestamp(partition, 1700000113500).fallback or "")


@pytest.mark.parametrize("damage", ["garbage", "odd-size", "disorder", "wrong-batch", "mid-batch", "past-end"])
def test_broken_index_falls_back_and_stays_correct(tmp_path: Path, damage: str) -> None:
    partition = _copy(tmp_path, RECOVERY.format("missing-indexes/after"))
    index = partition / "00000000000000000086.index"
    data = bytearray(index.read_bytes())  # 7 entries: (98, 1074) (112, 2195) ... (170, 7850)
    if damage == "garbage":
        data[:] = random.Random(7).randbytes(len(data))
    elif damage == "odd-size":
        data += b"\x01\x02\x03"
    elif damage == "disorder":  # entries 2 and 5 swap positions
        data[16 + 4:16 + 8] = data[40 + 4:40 + 8]
        data[40 + 4:40 + 8] = (3380).to_bytes(4, "big")
    elif damage == "wrong-batch":  # entry 2 (offset 123) points, in order, at the batch of offsets 126..128
        data[16 + 4:16 + 8] = (3696).to_bytes(4, "big")
    elif damage == "mid-batch":  # a position inside a batch
        data[16 + 4:16 + 8] = (3380 + 17).to_bytes(4, "big")
    elif damage == "past-end":
        data[-4:] = (10_000_000).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    truth = brute_force(partition)
    locs = _agrees(partition, truth, range(86, 174))
    reasons = {loc.fallback for loc in locs if loc.fallback}
    assert reasons, "the damage was noticed"
    assert all("00000000000000000086.index" in r for r in reasons)
    if damage == "odd-size":
        assert reasons == {"00000000000000000086.index is 59 bytes, not a whole number of 8-byte entries: not used"}
    if damage == "disorder":
        assert any("not in ascending order" in r for r in reasons)
    if damage == "wrong-batch":
        assert any("the batch there starts at offset 126, outside 86..123" in r for r in reasons)
    if damage == "garbage":
        assert reasons == {"00000000000000000086.index: entry offsets 951379624..1963252068 are not within the"
                           " segment: not used"}
    if damage == "mid-batch":
        assert any("no whole batch starts there" in r or "CRC" in r for r in reasons)
    for t in truth.timestamps_to_try():
        assert answer(locate_timestamp(partition, t)) == truth.timestamp(t)


def test_corrupt_active_index_in_the_corpus() -> None:
    partition = ROOT / RECOVERY.format("corrupt-index/before")
    loc = locate_offset(partition, 262)
    assert loc.fallback and "00000000000000000259.index" in loc.fallback
    assert answer(loc) == brute_force(partition).offset(262)


def test_preallocated_indexes_use_their_written_prefix(tmp_path: Path) -> None:
    """Indexes a crash left preallocated (zero slots at the end) are used up to their last written entry."""
    partition = _copy(tmp_path, RECOVERY.format("missing-indexes/after"))
    for name, size in (("00000000000000000086.index", 4096), ("00000000000000000086.timeindex", 4092)):
        f = partition / name
        f.write_bytes(f.read_bytes().ljust(size, b"\0"))
    truth = brute_force(partition)
    locs = _agrees(partition, truth, range(86, 174))
    assert all(loc.fallback is None for loc in locs)
    assert {loc.index_entry for loc in locs if loc.index_entry} == {
        (98, 1074), (112, 2195), (123, 3380), (134, 4464), (148, 5579), (159, 6766), (170, 7850)}
    for t in truth.timestamps_to_try():
        loc = locate_timestamp(partition, t)
        assert answer(loc) == truth.timestamp(t) and loc.fallback is None
    # the corpus' own crash-left active segment (4096-byte .index with no entries yet)
    before = ROOT / RECOVERY.format("torn-tail/before")
    assert (before / "00000000000000000259.index").stat().st_size == 4096
    loc = locate_offset(before, 262)
    assert loc.fallback is None and loc.index_entry is None and loc.found


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A partition written as a broker would, left as a crash leaves it, with out-of-order timestamps.

    Offsets jump between some batches (as compaction leaves them), a tenth of the batches use
    log-append time, segments roll every 6 KiB, the index gets an entry every 300 bytes, and the
    active segment's index files stay preallocated with entries in them.
    """
    rng = random.Random(20261121)
    path = tmp_path_factory.mktemp("gen") / "gen-0"
    writer = PartitionWriter(path, topic="gen", partition=0, topic_id=bytes(16), segment_bytes=6 * 1024,
                             index_interval_bytes=300, segment_index_bytes=4096)
    offset, clock = 0, 1_700_000_000_000
    for _ in range(400):
        offset += rng.choice((0, 0, 0, 1, 5))
        clock += rng.randint(-3000, 5000)  # producers' clocks disagree: timestamps go back now and then
        n = rng.randint(1, 4)
        records = [RecordSpec(f"k{offset + i}".encode(), bytes(rng.randint(10, 120)), clock + rng.randint(-500, 500))
                   for i in range(n)]
        lat = clock + 700 if rng.random() < 0.1 else None
        writer.append(record_batch(offset, records, log_append_time=lat))
        offset += n
    writer.close(clean=False)
    return path


@pytest.mark.slow
def test_generated_partition_agrees_everywhere(generated: Path) -> None:
    truth = brute_force(generated)
    segments = partition_segments(generated)
    assert len(segments) > 5
    assert (segments[-1].index.stat().st_size, segments[-1].timeindex.stat().st_size) == (4096, 4092)
    for n in range(truth.log_start - 1, truth.log_end + 2):
        for options in (LocateOptions(), NO_INDEX):
            loc = locate_offset(generated, n, options)
            assert answer(loc) == truth.offset(n), (n, loc.steps)
            assert options is NO_INDEX or loc.fallback is None
    for t in truth.timestamps_to_try():
        for options in (LocateOptions(), NO_INDEX):
            loc = locate_timestamp(generated, t, options)
            assert answer(loc) == truth.timestamp(t), (t, loc.steps)
    assert answer(locate_timestamp(generated, MAX_TIMESTAMP)) == truth.max_timestamp()


def test_out_of_order_timestamps_still_give_the_first_record_at_or_after(generated: Path) -> None:
    """With honest batch headers, ListOffsets' batch-first rule is the first record (offset order) with ts ≥ T."""
    truth = brute_force(generated)
    records = [r for e in truth.entries for r in e.records]
    assert any(b.timestamp < a.timestamp for a, b in zip(records, records[1:], strict=False)), "time goes back"
    for t in truth.timestamps_to_try(limit=10_000):
        naive = next((r.offset for r in records if r.timestamp >= t), None)
        kafka = truth.timestamp(t)
        assert naive == (None if kafka is None else kafka[2])


def _claim_max_timestamp(batch: bytes, max_timestamp: int) -> bytes:
    """A v2 batch whose header claims ``max_timestamp`` (CRC32C recomputed, so only the claim is off)."""
    from crc32c import crc32c

    b = bytearray(batch)
    b[35:43] = max_timestamp.to_bytes(8, "big", signed=True)  # maxTimestamp; the CRC covers attributes..end
    b[17:21] = crc32c(bytes(b[21:])).to_bytes(4, "big")
    return bytes(b)


def test_batch_header_decides(tmp_path: Path) -> None:
    """A batch claiming max timestamp 5000 over records at 1005..1006: searched, skipped; MAX finds no record."""
    path = tmp_path / "odd-0"
    with PartitionWriter(path, topic="odd", partition=0, topic_id=bytes(16)) as w:
        w.append(record_batch(0, [RecordSpec(b"a", b"1", 1000), RecordSpec(b"b", b"2", 1001)]))
        w.append(_claim_max_timestamp(record_batch(2, [RecordSpec(b"c", b"3", 1005), RecordSpec(b"d", b"4", 1006)]),
                                      5000))
        w.append(record_batch(4, [RecordSpec(b"e", b"5", 3000)]))
    loc = locate_timestamp(path, 2000)
    assert (loc.offset, loc.position) == (4, brute_force(path).timestamp(2000)[1])
    assert any("max timestamp 5000 but no record at or after the target" in s.message for s in loc.steps)
    top = locate_timestamp(path, MAX_TIMESTAMP)
    assert not top.found and top.batch is not None and top.batch.base_offset == 2
    assert brute_force(path).max_timestamp() is None


# --- options and errors ---------------------------------------------------------------------------------


def test_parse_timestamp() -> None:
    assert parse_timestamp("1700000000000") == 1700000000000
    assert parse_timestamp("2023-11-14T22:13:20Z") == 1700000000000
    assert parse_timestamp("2023-11-14T22:13:20.5") == 1700000000500  # no zone: UTC
    assert parse_timestamp("2023-11-14T23:13:20+01:00") == 1700000000000
    assert [parse_timestamp(w) for w in ("latest", "EARLIEST", "max")] == [-1, -2, -3]
    for bad in ("yesterday", "-5", ""):
        with pytest.raises(UsageError):
            parse_timestamp(bad)


def test_usage_errors(tmp_path: Path) -> None:
    partition = ROOT / PARTITIONS[0]
    with pytest.raises(UsageError):
        locate(partition)
    with pytest.raises(UsageError):
        locate(partition, offset=1, timestamp=1)
    with pytest.raises(UsageError, match="log dir"):
        locate(ROOT / "kafka/logdir", offset=1)
    with pytest.raises(UsageError, match="no Kafka log dir, partition or segment under"):
        locate(tmp_path, offset=1)  # nothing Kafka under it: discovery's one message (kafkatool.walk)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
    with pytest.raises(UsageError, match="no .log segment"):
        locate(tmp_path / "t-0", offset=1)
    with pytest.raises(UsageError, match="no such file"):
        locate(tmp_path / "nope", offset=1)


def test_damage_met_on_the_way_is_reported() -> None:
    partition = ROOT / RECOVERY.format("crc-flip/before")
    loc = locate_offset(partition, 264)
    assert loc.found and loc.batch is not None and not loc.batch.crc_valid
    assert [(f.code, f.position) for f in loc.findings] == [("crc-mismatch", 347)]
    torn = locate_offset(ROOT / RECOVERY.format("torn-tail/before"), 10_000)
    assert not torn.found and any(isinstance(f, Finding) and f.code == "torn-tail" for f in torn.findings)


# --- the command line -----------------------------------------------------------------------------------


def kt(*args: str | Path) -> subprocess.CompletedProcess:
    return cli("locate", *args)


def test_cli_jsonl_contract() -> None:
    partition = ROOT / RECOVERY.format("missing-indexes/after")
    proc = kt(partition, "--offset", "120", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert line["type"] == "location" and line["found"] is True
    assert line["segment"] == str(partition / "00000000000000000086.log")
    assert line["index_entry"] == {"offset": 112, "position": 2195}
    assert (line["position"], line["batch"]["position"], line["batch"]["type"]) == (3041, 3041, "batch")
    assert line["batch"]["base_offset"] <= 120 <= line["batch"]["last_offset"]
    assert line["record"]["type"] == "record" and line["record"]["offset"] == 120
    assert line["bytes_scanned"] == 3041 + line["batch"]["size"] - 2195
    assert line["fallback"] is None and line["target"] == {"offset": 120}
    assert [s["step"] for s in line["steps"]] == ["segment", "index", "scan"]
    assert all(isinstance(s["message"], str) for s in line["steps"])

    ts = json.loads(kt(partition, "--timestamp", "2023-11-14T22:15:13.5Z", "-f", "jsonl").stdout)
    assert ts["target"] == {"timestamp": 1700000113500} and ts["record"]["offset"] == 126
    assert ts["time_index_entry"] == {"timestamp": 1700000113002, "offset": 119}
    latest = json.loads(kt(partition, "--timestamp", "latest", "-f", "jsonl").stdout)
    assert (latest["offset"], latest["batch"], latest["target"]["name"]) == (269, None, "latest")


def test_cli_not_found_with_an_unreadable_file_exits_3(tmp_path: Path) -> None:
    """The one exit policy (kafkatool/cli/exits.py): a file that could not be read is exit 3 whatever else was
    found, here an offset past the log end (which alone exits 1; locate exited 1 for both before)."""
    partition = tmp_path / "txn-0"
    shutil.copytree(ROOT / "kafka/logdir/txn-0", partition)
    index = partition / "00000000000000000000.index"
    index.unlink()
    os.mkfifo(index)  # never read from: an io-error finding
    proc = kt(partition, "--offset", "999999")
    assert "not found: offset 999999" in proc.stdout and "io-error" in proc.stdout, proc.stdout
    assert proc.returncode == 3, proc.stderr
    assert kt(partition, "--offset", "999999", "--fail-on", "error").returncode == 3


def test_cli_text_shows_each_step() -> None:
    partition = ROOT / RECOVERY.format("missing-indexes/before")
    proc = kt(partition, "--offset", "120")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "segment 00000000000000000086.log (base offset 86: binary search over 4 segments)" in out
    assert "fallback: 00000000000000000086.index is missing" in out
    assert "scanned 3,380 bytes (20 batches) from position 0 to the batch at position 3041" in out
    assert "offset 120..121  pos 3041" in out and "| 120  2023-11-14T22:15:13.000Z  key='key-120'" in out
    indexed = kt(ROOT / PARTITIONS[0], "--offset", "120").stdout
    assert "index entry offset 112 → position 2195 (00000000000000000086.index, slot 1 of 7" in indexed


def test_cli_exit_codes() -> None:
    partition = ROOT / PARTITIONS[0]
    missing = kt(partition, "--offset", "269")
    assert missing.returncode == 1 and "not found: offset 269 is at or past the log end offset 269" in missing.stdout
    flipped = kt(ROOT / RECOVERY.format("crc-flip/before"), "--offset", "264", "-f", "jsonl")
    assert flipped.returncode == 1
    assert [json.loads(x)["type"] for x in flipped.stdout.splitlines()] == ["location", "finding"]
    for args in ([], ["--offset", "1", "--timestamp", "1"], ["--timestamp", "soon"], ["--offset", "1", "-f", "xml"]):
        proc = kt(partition, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert kt(ROOT / "kafka/logdir", "--offset", "1").returncode == 2
    helped = kt("--help")
    assert helped.returncode == 0 and "Examples" in helped.stdout


def test_damage_met_twice_is_reported_once() -> None:
    """Past the torn tail the lookup scans the last segment for the target, then again for the log end."""
    loc = locate(ROOT / "kafka/recovery/torn-tail/before/rtopic-0", offset=268)
    assert not loc.found
    assert [(f.code, f.position) for f in loc.findings] == [("torn-tail", 846)]
