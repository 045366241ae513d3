"""The batches level's column-wise decoding, without a Spark session: it must give exactly the scan's batches.

``read_partition(level="batches")`` runs ``records.scan(columnar=True)`` and decodes each block of raw
v2 headers with numpy (dtype derived from the Construct declaration). Every record file of the corpus
(and a generated file long enough to span several blocks and scan windows, with legacy messages and a
damaged batch in between) must come out field for field as the tuple scan and ``dump`` see it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatool.records import RawBatch, decode_records, scan
from kafkatool.spark.plan import SegmentPartition, plan
from kafkatool.spark.read import ROWS_PER_BATCH, read_partition

from .conftest import corpus_root

ROOT = corpus_root()
PARTS = plan([str(ROOT)], include_leftovers=True, include_snapshots=True)


def _expected(path: str) -> list[dict]:
    """What each row must be: the tuple scan's batch, plus the control record's type for control batches."""
    out = []
    with open(path, "rb") as fh:
        for item in scan(fh, path, with_raw=True):
            if isinstance(item, RawBatch):
                d = item.batch._asdict()
                del d["attributes"]  # not a column: its parts are (codec, timestamp type, flags)
                records = decode_records(item.batch, item.raw, path)[0] if item.batch.control else []
                d["control_type"] = records[0].control_type if records else None
                out.append(d)
    return out


def _rows(part: SegmentPartition) -> list[dict]:
    return [row for rb in read_partition(part, "batches") for row in rb.to_pylist()]


def test_the_corpus_is_planned() -> None:
    assert len(PARTS) > 400
    assert any(p.path.endswith(".swap") for p in PARTS)
    snapshots = [p for p in PARTS if p.path.endswith(".checkpoint")]
    assert len(snapshots) > 10 and all(p.segment is None for p in snapshots)
    # a directory scan leaves KRaft snapshots out unless asked; named, one is read
    assert not any(p.path.endswith(".checkpoint") for p in plan([str(ROOT)], include_leftovers=True))
    assert [p.path for p in plan([snapshots[0].path])] == [snapshots[0].path]


@pytest.mark.parametrize("part", PARTS, ids=[str(Path(p.path).relative_to(ROOT)) for p in PARTS])
def test_batches_level_equals_the_scan(part: SegmentPartition) -> None:
    rows = _rows(part)
    want = _expected(part.path)
    assert len(rows) == len(want)
    for row, expected in zip(rows, want, strict=True):
        assert (row.pop("topic"), row.pop("partition"), row.pop("segment"), row.pop("file")) == (
            part.topic, part.partition, part.segment, part.path)
        assert row == expected


def _entries(path: Path) -> list[RawBatch]:
    with open(path, "rb") as fh:
        return [x for x in scan(fh, str(path), with_raw=True) if isinstance(x, RawBatch)]


def test_long_mixed_file_spans_blocks_and_windows_in_file_order(tmp_path: Path) -> None:
    v2 = [rb for rb in _entries(ROOT / "kafka/logdir/txn-0/00000000000000000000.log") if rb.batch.magic == 2]
    control = next(rb.raw for rb in v2 if rb.batch.control)
    plain = next(rb.raw for rb in v2 if not rb.batch.control)
    legacy = _entries(ROOT / "kafka/legacy/magic1-gzip-0/00000000000000000000.log")[0].raw
    damaged = bytearray(plain)
    damaged[-1] ^= 0xFF  # the CRC no longer matches: a row with crc_valid false, never a lost row

    # 5 MiB of small batches (past one 4 MiB scan window and many ROWS_PER_BATCH blocks), then a
    # legacy message, a damaged batch, a control batch, and more batches. Offsets need not be patched:
    # the scan does not judge them, and the CRC does not cover the base offset.
    n = (5 << 20) // len(plain) + 1
    body = plain * n + legacy + bytes(damaged) + control + plain * 3
    path = tmp_path / "orders-7" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(body)

    (part,) = plan([str(path)])
    blocks = list(read_partition(part, "batches"))
    assert len(blocks) > (n // ROWS_PER_BATCH) // 2 and all(b.num_rows > 0 for b in blocks)
    rows = [row for rb in blocks for row in rb.to_pylist()]
    want = _expected(str(path))
    assert len(rows) == len(want) == n + 6
    for row, expected in zip(rows, want, strict=True):
        assert (row.pop("topic"), row.pop("partition"), row.pop("segment")) == ("orders", 7, 0)
        row.pop("file")
        assert row == expected
    ctype = want[n + 2]["control_type"]
    assert ctype in ("COMMIT", "ABORT")
    assert [(r["magic"], r["crc_valid"], r["control_type"]) for r in want[n:]] == [
        (1, True, None), (2, False, None), (2, True, ctype), (2, True, None), (2, True, None), (2, True, None)]
