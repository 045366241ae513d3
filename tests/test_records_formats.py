"""The Construct declarations of record files are the source of truth; the hot path must agree.

- Every batch and record of every record file in the corpus: the ``struct`` scanner and the
  inlined varint decoder give the same fields as the Construct declarations.
- Round trips: parse -> build gives the same bytes, for every v2 batch, v0/v1 entry, records
  section and control record of the corpus, and for hand-built values.
- The windowed scanner gives the same answer whatever the window size and however a file is split
  into byte ranges.
- Its columnar mode (``scan(columnar=True)``, the Spark batches level) gives the very same batches,
  findings and order on every record file, and its raw headers parse with the Construct declaration.
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path

import pytest
from construct import ConstructError
from crc32c import crc32c

from kafkatool.errors import DecompressionError
from kafkatool.filetypes import classify
from kafkatool.formats import control as ctl
from kafkatool.formats import legacy, record_batch
from kafkatool.model import Batch, Finding, Trailing
from kafkatool.records import HeaderRun, RawBatch, ScanOptions, decode_records, decompress_records, scan

from .conftest import corpus_root

ROOT = corpus_root()
RECORD_FILES = sorted(p for p in (ROOT / "real").rglob("*") if p.is_file() and classify(p).kind.holds_records) + \
    sorted(p for p in (ROOT / "kafka").rglob("*") if p.is_file() and classify(p).kind.holds_records)


def _raw_batches(path: Path) -> list[RawBatch]:
    with open(path, "rb") as fh:
        return [x for x in scan(fh, str(path), with_raw=True) if isinstance(x, RawBatch)]


def test_corpus_has_record_files() -> None:
    assert len(RECORD_FILES) > 500


def test_reader_structs_are_the_declared_layouts() -> None:
    """The reader's structs and numbers (imported without Construct, see formats/constants.py) have the sizes
    of the Construct declarations (DefaultRecordBatch.RECORD_BATCH_OVERHEAD, LegacyRecord.RECORD_OVERHEAD_V0/V1)."""
    from kafkatool import records

    assert records._V2_HEADER.size == record_batch.RecordBatchHeader.sizeof() == records.RECORD_BATCH_OVERHEAD
    assert records._LOG_HEADER.size == record_batch.LOG_OVERHEAD
    header = record_batch.RecordBatchHeader
    offset_of = {}
    at = 0
    for sub in header.subcons:
        offset_of[sub.name] = at
        at += sub.sizeof()
    assert (offset_of["magic"], offset_of["crc"], offset_of["attributes"]) == (
        records.MAGIC_OFFSET, record_batch.CRC_OFFSET, records.ATTRIBUTES_OFFSET)
    entry = legacy.LogEntry.build({"offset": 0, "message": {"body": {
        "magic": 0, "attributes": {"unused": 0, "timestamp_type": "create", "compression": "none"}, "timestamp": None,
        "key": None, "value": None}}})
    assert len(entry) - record_batch.LOG_OVERHEAD == records.RECORD_OVERHEAD_V0
    entry = legacy.LogEntry.build({"offset": 0, "message": {"body": {
        "magic": 1, "attributes": {"unused": 0, "timestamp_type": "create", "compression": "none"}, "timestamp": 0,
        "key": None, "value": None}}})
    assert len(entry) - record_batch.LOG_OVERHEAD == records.RECORD_OVERHEAD_V1
    assert ctl.CONTROL_TYPES is records.CONTROL_TYPES


@pytest.mark.parametrize("path", RECORD_FILES, ids=[str(p.relative_to(ROOT)) for p in RECORD_FILES])
def test_fast_path_agrees_with_construct(path: Path) -> None:
    for rb in _raw_batches(path):
        b, raw = rb.batch, rb.raw
        if b.magic == 2:
            _check_v2(b, raw)
        else:
            _check_legacy(b, raw)


def _check_v2(b: Batch, raw: bytes) -> None:
    h = record_batch.RecordBatchHeader.parse(raw)
    full = record_batch.RecordBatch.parse(raw)
    a = h.attributes
    assert (b.base_offset, b.last_offset, b.size) == (h.base_offset, h.base_offset + h.last_offset_delta,
                                                      h.batch_length + record_batch.LOG_OVERHEAD)
    assert (b.partition_leader_epoch, b.crc, b.first_timestamp, b.max_timestamp) == (
        h.partition_leader_epoch, h.crc, h.base_timestamp, h.max_timestamp)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.record_count) == (
        h.producer_id, h.producer_epoch, h.base_sequence, h.records_count)
    assert (b.compression, b.timestamp_type, b.transactional, b.control) == (
        str(a.compression), str(a.timestamp_type), a.is_transactional, a.is_control)
    assert b.delete_horizon_ms == (h.base_timestamp if a.has_delete_horizon_ms else None)
    assert b.crc_valid == (crc32c(record_batch.BatchBody.build(full.batch.body)) == h.crc)
    # Round trip of the whole batch; building recomputes the CRC, so a damaged batch differs there only.
    rebuilt = record_batch.RecordBatch.build(full)
    if b.crc_valid:
        assert rebuilt == raw
    else:
        crc_at = record_batch.CRC_OFFSET
        assert rebuilt[:crc_at] + rebuilt[crc_at + 4:] == raw[:crc_at] + raw[crc_at + 4:]
    records, findings = decode_records(b, raw, "x")
    if findings:
        with pytest.raises((ConstructError, DecompressionError)):
            record_batch.records_section(b.record_count).parse(decompress_records(b, raw))
        return
    section = decompress_records(b, raw)
    parsed = record_batch.records_section(b.record_count).parse(section)
    assert record_batch.records_section(b.record_count).build(parsed) == section
    assert len(parsed.records) == len(records)
    for r, c in zip(records, parsed.records, strict=True):
        assert r.offset == b.base_offset + c.offset_delta
        if b.timestamp_type == "create":
            assert r.timestamp == b.first_timestamp + c.timestamp_delta
        assert (r.key, r.value) == (c.key, c.value)
        assert r.headers == tuple((h.key.decode("utf-8", "replace"), h.value) for h in c.headers)
        if b.control:
            key = ctl.ControlRecordKey.parse(c.key)
            assert r.control_type == ctl.CONTROL_TYPES.get(key.type, "UNKNOWN")
            assert ctl.ControlRecordKey.build(key) == c.key
            value_format = ctl.CONTROL_VALUES.get(r.control_type)
            if value_format is not None:
                value = value_format.parse(c.value)
                if r.control_type in ("ABORT", "COMMIT"):
                    assert value.coordinator_epoch == r.coordinator_epoch
                else:
                    assert value_format.build(value) == c.value


def _check_legacy(b: Batch, raw: bytes) -> None:
    entry = legacy.LogEntry.parse(raw)
    body = entry.message.body
    assert legacy.LogEntry.build(entry) == raw
    assert (b.last_offset, b.crc, b.magic, b.max_timestamp) == (
        entry.offset, entry.message.crc, body.magic, body.timestamp if body.magic else -1)
    assert b.crc_valid == ((zlib.crc32(legacy.MessageBody.build(body)) & 0xFFFFFFFF) == entry.message.crc)
    assert b.compression == str(body.attributes.compression)


def test_v2_batch_built_from_values_round_trips() -> None:
    record = {"attributes": 0, "timestamp_delta": 3, "offset_delta": 1, "key": None, "value": b"v" * 200,
              "headers": [{"key": b"h", "value": None}, {"key": b"", "value": b"x"}]}
    section = record_batch.records_section(1).build({"records": [record]})
    body = {
        "attributes": {"unused": 0, "has_delete_horizon_ms": False, "is_control": False,
                       "is_transactional": True, "timestamp_type": "create", "compression": "none"},
        "last_offset_delta": 1, "base_timestamp": 1_700_000_000_000, "max_timestamp": 1_700_000_000_003,
        "producer_id": 42, "producer_epoch": 1, "base_sequence": 7, "records_count": 1, "records": section,
    }
    raw = record_batch.RecordBatch.build({"base_offset": 100, "batch": {"partition_leader_epoch": 5, "body": body}})
    with io.BytesIO(raw) as fh:
        (batch,) = list(scan(fh, "built"))
    assert batch.crc_valid and batch.transactional and not batch.control
    assert (batch.base_offset, batch.last_offset, batch.size, batch.producer_id) == (100, 101, len(raw), 42)
    records, findings = decode_records(batch, raw, "built")
    assert not findings
    assert records[0].offset == 101 and records[0].key is None and records[0].value == b"v" * 200
    assert records[0].headers == (("h", None), ("", b"x"))
    assert record_batch.RecordBatch.build(record_batch.RecordBatch.parse(raw)) == raw


def test_legacy_message_built_from_values_round_trips() -> None:
    for magic in (0, 1):
        entry = {"offset": 9, "message": {"body": {
            "magic": magic, "attributes": {"unused": 0, "timestamp_type": "create", "compression": "none"},
            "timestamp": 1_700_000_000_000 if magic else None, "key": b"k", "value": None}}}
        raw = legacy.LogEntry.build(entry)
        assert legacy.LogEntry.build(legacy.LogEntry.parse(raw)) == raw
        with io.BytesIO(raw) as fh:
            (batch,) = list(scan(fh, "built"))
        assert batch.crc_valid and batch.magic == magic and batch.base_offset == batch.last_offset == 9


def test_control_values_round_trip() -> None:
    samples = {
        ctl.EndTransactionMarker: {"version": 0, "coordinator_epoch": 7},
        ctl.LeaderChangeMessage: {"version": 0, "leader_id": 1,
                                  "voters": {"entries": [{"voter_id": 1, "tagged_fields": {"fields": []}}]},
                                  "granting_voters": {"entries": []}, "tagged_fields": {"fields": []}},
        ctl.SnapshotHeaderRecord: {"version": 0, "last_contained_log_timestamp": 5,
                                   "tagged_fields": {"fields": []}},
        ctl.SnapshotFooterRecord: {"version": 0, "tagged_fields": {"fields": [{"tag": 3, "data": b"ab"}]}},
        ctl.KRaftVersionRecord: {"version": 0, "kraft_version": 1, "tagged_fields": {"fields": []}},
        ctl.VotersRecord: {"version": 0, "voters": {"entries": [{
            "voter_id": 1, "voter_directory_id": bytes(range(16)),
            "endpoints": {"entries": [{"name": {"value": "CONTROLLER"}, "host": {"value": "localhost"},
                                     "port": 9093, "tagged_fields": {"fields": []}}]},
            "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1,
                                      "tagged_fields": {"fields": []}},
            "tagged_fields": {"fields": []}}]}, "tagged_fields": {"fields": []}},
    }
    for fmt, value in samples.items():
        raw = fmt.build(value)
        assert fmt.build(fmt.parse(raw)) == raw


# -- the scanner's windowing and byte-range splits -------------------------------------------------

SPLIT_FILES = [ROOT / "kafka/logdir/txn-0/00000000000000000000.log",
               ROOT / "kafka/legacy/magic1-gzip-0/00000000000000000000.log",
               ROOT / "kafka/recovery/torn-tail/before/rtopic-0/00000000000000000259.log",
               ROOT / "kafka/recovery/zero-tail/before/rtopic-0/00000000000000000259.log"]


def _items(path: Path, **kw) -> list:
    with open(path, "rb") as fh:
        return list(scan(fh, "f", **kw))


@pytest.mark.parametrize("path", SPLIT_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_window_size_does_not_change_the_result(path: Path) -> None:
    reference = _items(path)
    for window in (16, 61, 100, 1000, 4096):
        assert _items(path, options=ScanOptions(window=window)) == reference


@pytest.mark.parametrize("path", SPLIT_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_byte_range_splits_partition_the_batches(path: Path) -> None:
    batches = [b for b in _items(path) if isinstance(b, Batch)]
    starts = [b.position for b in batches]
    size = path.stat().st_size
    # Split at every batch start: the union of the splits is the whole file, in order, once.
    cuts = [0, *starts[1::3], size]
    got = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        got += [b for b in _items(path, start=lo, end=hi) if isinstance(b, Batch)]
    assert got == batches


def test_damage_is_reported_at_the_right_byte() -> None:
    torn = _items(ROOT / "kafka/recovery/torn-tail/before/rtopic-0/00000000000000000259.log")
    assert Trailing(846, 39) in torn
    assert [f.position for f in torn if isinstance(f, Finding)] == [846]
    zero = _items(ROOT / "kafka/recovery/zero-tail/before/rtopic-0/00000000000000000259.log")
    (finding,) = [f for f in zero if isinstance(f, Finding)]
    assert (finding.code, finding.position) == ("zero-filled-tail", 924)
    assert "65536 zero bytes" in finding.message


# -- the columnar mode ----------------------------------------------------------------------------


def _expanded(items: list) -> list:
    """Columnar scan output with each HeaderRun replaced by its batches: comparable with the tuple scan."""
    out = []
    for item in items:
        out.extend(item.batches() if isinstance(item, HeaderRun) else [item])
    return out


def _control_bytes(items: list) -> dict[int, bytes]:
    """position -> bytes of every control batch the columnar runs kept."""
    return {run.positions[i]: raw for run in items if isinstance(run, HeaderRun) for i, raw in run.controls.items()}


def _control_bytes_on_disk(path: Path, **kw) -> dict[int, bytes]:
    return {r.batch.position: r.raw for r in _items(path, with_raw=True, **kw)
            if isinstance(r, RawBatch) and r.batch.magic == 2 and r.batch.control}


@pytest.mark.parametrize("path", RECORD_FILES, ids=[str(p.relative_to(ROOT)) for p in RECORD_FILES])
def test_columnar_scan_agrees_with_the_tuple_scan_and_construct(path: Path) -> None:
    reference = _items(path)
    columnar = _items(path, columnar=True)
    assert _expanded(columnar) == reference
    runs = [r for r in columnar if isinstance(r, HeaderRun)]
    assert all(len(r.headers) == 61 * len(r.positions) == 61 * len(r.crc_valid) for r in runs)
    if any(isinstance(b, Batch) and b.magic == 2 for b in reference):
        assert runs
    for run in runs:
        for i, batch in enumerate(run.batches()):
            assert run.batch(i) == batch
            h = record_batch.RecordBatchHeader.parse(run.headers[61 * i:61 * i + 61])
            assert (h.base_offset, h.batch_length + 12, h.crc, h.records_count) == (
                batch.base_offset, batch.size, batch.crc, batch.record_count)
    # control batches come with their bytes (their type is in their record), and only they
    assert _control_bytes(columnar) == _control_bytes_on_disk(path)
    for run in runs:
        assert all(run.batch(i).control for i in run.controls)
    joined = HeaderRun.join(runs) if runs else None
    if joined is not None:
        assert list(joined.batches()) == [b for r in runs for b in r.batches()]
        assert _control_bytes([joined]) == _control_bytes(columnar)


@pytest.mark.parametrize("path", SPLIT_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_columnar_scan_agrees_at_any_window_and_split(path: Path) -> None:
    reference = _items(path)
    controls = _control_bytes_on_disk(path)
    if path.parent.name in ("txn-0", "rtopic-0"):  # transactional topics: commit/abort markers
        assert controls
    for window in (16, 61, 100, 1000, 4096):
        items = _items(path, columnar=True, options=ScanOptions(window=window))
        assert _expanded(items) == reference
        assert _control_bytes(items) == controls
    batches = [b for b in reference if isinstance(b, Batch)]
    cuts = [0, *[b.position for b in batches][1::2], path.stat().st_size]
    got = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        got += [b for b in _expanded(_items(path, start=lo, end=hi, columnar=True)) if isinstance(b, Batch)]
    assert got == batches


def test_columnar_scan_reports_a_bad_crc_right_after_its_batch() -> None:
    path = ROOT / "kafka/recovery/crc-flip/before/rtopic-0/00000000000000000259.log"
    items = _items(path, columnar=True)
    (finding,) = [f for f in items if isinstance(f, Finding)]
    assert (finding.code, finding.position) == ("crc-mismatch", 347)
    before = items[items.index(finding) - 1]
    assert isinstance(before, HeaderRun) and before.positions[-1] == 347 and before.crc_valid[-1] == 0


def test_columnar_and_with_raw_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="columnar"):
        _items(SPLIT_FILES[0], columnar=True, with_raw=True)
