"""The records level's Arrow batches: built by the native core (``native/src/arrow.rs``) or from Python lists.

No Spark session: ``read_partition`` is what the data source's ``read()`` yields. The pure-Python builder
(``kafkatool.spark.arrow.PureRecords``, the data source's columns as they always were) is the reference;
the native one must give the same schema and the same value in every cell, on every record file of the
corpus and on seeded mutations of segments built by the project's writer, damaged batches included:
a batch with a bad CRC keeps its records (``crc_valid`` false), records that cannot be decoded are a
row with ``error`` set, never missing rows. The record layout is Kafka's ``DefaultRecord.readFrom``
(v2) and ``AbstractLegacyRecordBatch`` (v0/v1); the decoding itself is held to the pure reader by
``tests/test_native.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from kafkatool import native
from kafkatool.build import RecordSpec, record_batch
from kafkatool.spark.plan import SegmentPartition, plan
from kafkatool.spark.read import read_partition

from .conftest import corpus_root
from .test_native import mutate, seeds

ROOT = corpus_root()
PARTS = plan([str(ROOT)], include_leftovers=True, include_snapshots=True)


def _read(part, values: str = "binary", decode: str | None = None) -> tuple[pa.Schema | None, list, list[int]]:
    """The records level of ``part``: the schema of its Arrow batches (None: no batch), its rows (as
    ``to_pylist`` gives them: values and their types), and the sizes of the batches they came in."""
    batches = list(read_partition(part, "records", values, decode=decode))
    assert len({b.schema for b in batches}) <= 1
    rows = [row for b in batches for row in b.to_pylist()]
    return (batches[0].schema if batches else None), rows, [b.num_rows for b in batches]


def both(core, part, values: str = "binary", decode: str | None = None):
    """(pure, native): each the table, or the exception's type and text when reading raised one."""
    out = []
    for c in (None, core):
        with native.using(c):
            try:
                out.append(_read(part, values, decode))
            except Exception as exc:  # noqa: BLE001 - compared, not swallowed: both must raise the same
                out.append((type(exc).__name__, str(exc)))
    return out


def test_every_corpus_record_file_gives_the_same_batches(core) -> None:
    """Every record file of the corpus (leftovers and KRaft snapshots too): the same Arrow schema, the
    same rows, cut into the same batches; the internal topics also with their ``decode`` option."""
    assert len(PARTS) > 400
    decodes = {"__consumer_offsets": "consumer-offsets", "__transaction_state": "transaction-state",
               "__cluster_metadata": "cluster-metadata"}
    differ, rows = [], 0
    for part in PARTS:
        pure, fast = both(core, part)
        if pure != fast:
            differ.append(part.path)
        rows += len(pure[1])
        if part.topic in decodes:
            pure, fast = both(core, part, decode=decodes[part.topic])
            if pure != fast:
                differ.append(f"{part.path} decode={decodes[part.topic]}")
    assert not differ, f"native and pure differ on {len(differ)} files: {differ[:10]}"
    assert rows > 10_000


@pytest.mark.parametrize("values", ["base64", "none"])
def test_value_modes_give_the_same_batches(core, values) -> None:
    """``values=base64`` (the base64 text of each value, encoded natively) and ``values=none``."""
    parts = [p for p in PARTS if p.path.endswith(".log")][::7]
    differ = [p.path for p in parts if (lambda r: r[0] != r[1])(both(core, p, values))]
    offsets = [p for p in PARTS if p.topic == "__consumer_offsets" and p.path.endswith(".log")][:3]
    assert offsets
    differ += [p.path for p in offsets if (lambda r: r[0] != r[1])(both(core, p, values, "consumer-offsets"))]
    assert not differ, differ[:10]


def _segment(tmp_path: Path, data: bytes) -> SegmentPartition:
    part = tmp_path / "t-0"
    part.mkdir(exist_ok=True)
    (part / "00000000000000000000.log").write_bytes(data)
    (p,) = plan([str(part)])
    return p


MUTATIONS = 3000


def test_mutated_segments_give_the_same_batches_and_surface_their_damage(core, tmp_path) -> None:
    """Seeded mutations (bit flips, truncations, absurd lengths, overlong varints, zero tails, edge header
    values; half with the CRC recomputed so only the fields are wrong) of the differential seeds of
    ``test_native``: native and pure give the same rows, errors included, or fail the same way."""
    seed_list = seeds()
    differ, errors, bad_crc, failed, empty = [], 0, 0, 0, 0
    for case in range(MUTATIONS):
        rng = random.Random(case)
        data = mutate(seed_list[case % len(seed_list)], rng, case // len(seed_list))
        pure, fast = both(core, _segment(tmp_path, data))
        if pure != fast:
            differ.append(case)
            if len(differ) >= 5:
                break
        if len(pure) == 2:
            failed += 1
            continue
        empty += not pure[1]
        errors += sum(r["error"] is not None for r in pure[1])
        bad_crc += sum(not r["crc_valid"] for r in pure[1])
    assert not differ, f"native and pure differ on mutation cases {differ} (rebuild one with mutate(...))"
    assert failed == 0, f"{failed} mutated segments failed the read instead of giving rows"
    assert empty < MUTATIONS / 5
    assert errors > 100 and bad_crc > 1000  # the damage surfaces as rows, both ways


def test_values_beyond_64_bits_are_wrapped_as_kafka_computes_them(core, tmp_path) -> None:
    """A damaged base offset near ``Long.MAX_VALUE``: ``DefaultRecord.readFrom`` computes ``baseOffset +
    offsetDelta`` in Java's 64-bit arithmetic, so the second record's offset wraps to ``Long.MIN_VALUE``;
    the pure reader holds it as a Python integer, and both builders store it as Kafka computes it
    instead of failing the task."""
    data = record_batch(2**63 - 1, [RecordSpec(b"a", b"1", 5), RecordSpec(b"b", b"2", 6)])
    pure, fast = both(core, _segment(tmp_path, data))
    assert pure == fast
    assert [(r["offset"], r["batch_base_offset"], r["key"], r["error"]) for r in pure[1]] == [
        (2**63 - 1, 2**63 - 1, b"a", None), (-(2**63), 2**63 - 1, b"b", None)]


def test_a_corrupt_batch_between_good_ones_is_a_row_never_dropped(core, tmp_path) -> None:
    """A gzip batch whose payload does not decompress (its CRC recomputed, as a buggy producer writes it)
    between two good ones: one row with ``decompression-failed`` where its records would be, both ways."""
    import struct

    from crc32c import crc32c

    broken = bytearray(record_batch(2, [RecordSpec(b"k", b"v" * 100, 1)] * 3, compression="gzip"))
    broken[-12:-4] = b"\xff" * 8
    broken[17:21] = struct.pack(">I", crc32c(bytes(broken[21:])))
    data = (record_batch(0, [RecordSpec(b"k", b"v", 1)] * 2) + bytes(broken)
            + record_batch(5, [RecordSpec(None, b"z", 1)]))
    pure, fast = both(core, _segment(tmp_path, data))
    assert pure == fast
    got = [(r["offset"], r["key"], r["value"], (r["error"] or "").split(":")[0]) for r in fast[1]]
    assert got == [(0, b"k", b"v", ""), (1, b"k", b"v", ""), (2, None, None, "decompression-failed"),
                   (5, None, b"z", "")]


# --- a batch declaring more records than an Arrow batch holds: added a piece at a time ------------------------

BIG = 50_000  # records of one Kafka batch: six Arrow batches' worth and more


def _big_cases() -> dict[str, bytes]:
    """Kafka batches declaring over ``ROWS_PER_BATCH`` records (the zstd ones built as tests/test_hostile_bombs.py
    builds its record-count bombs, a few KB each): each must be cut into Arrow batches of at most that many rows."""
    from .test_hostile_bombs import MINIMAL, _batch

    headers = [RecordSpec(b"k%d" % i, b"v" * (i % 7), i, headers=((f"h{i % 3}", b"x"),)) for i in range(BIG)]
    return {
        "bomb": _batch(BIG, valid=False),  # every record at offset 0
        "valid": _batch(BIG, valid=True),
        "uncompressed": record_batch(7, headers),  # decoded in place, with keys, values and headers
        # a record of negative length half-way: the records before it, then an error row where the rest would be
        "damaged": _batch(BIG + 1, False, MINIMAL * (BIG // 2) + b"\x7f" + MINIMAL * (BIG // 2)),
        "trailing": _batch(BIG, False, MINIMAL * BIG + b"\x00"),  # all records, then a records-trailing-bytes row
    }


@pytest.mark.parametrize("case", ["bomb", "valid", "uncompressed", "damaged", "trailing"])
def test_a_batch_of_more_records_than_one_arrow_batch_holds_is_cut(core, tmp_path, case) -> None:
    """Before, a Kafka batch became one Arrow batch however many records it declared: an 11 KB zstd batch of
    18 M records one Arrow batch of 18 M rows, which Spark's JVM failed to allocate (2 GB of direct memory).
    Now its rows come a piece at a time, natively (``RecordsBuilder.add_v2_part``) or from the Python reader, the
    Arrow batch flushed between: never more than ``ROWS_PER_BATCH`` rows (one more for an error row), the same
    rows in the same order, cut in the same places, both ways."""
    from kafkatool.spark.read import ROWS_PER_BATCH

    pure, fast = both(core, _segment(tmp_path, _big_cases()[case]))
    assert pure == fast
    _schema, rows, sizes = fast
    assert len(sizes) > len(rows) // ROWS_PER_BATCH >= 3 and max(sizes) <= ROWS_PER_BATCH + 1, sizes
    assert sum(sizes) == len(rows)
    errors = [(i, r["offset"], r["error"].split(":")[0]) for i, r in enumerate(rows) if r["error"] is not None]
    offsets = [r["offset"] for r in rows if r["error"] is None]
    if case == "bomb":
        assert len(rows) == BIG and not errors and set(offsets) == {0}
        assert rows[-1]["key"] is None and rows[-1]["value"] is None and rows[-1]["headers"] == []
    elif case == "valid":
        assert offsets == list(range(BIG)) and not errors
    elif case == "uncompressed":
        assert offsets == list(range(7, 7 + BIG)) and not errors
        i = BIG - 1
        assert (rows[i]["key"], rows[i]["value"], rows[i]["headers"]) == (
            b"k%d" % i, b"v" * (i % 7), [{"key": f"h{i % 3}", "value": b"x"}])
    elif case == "damaged":
        assert offsets == [0] * (BIG // 2) and errors == [(BIG // 2, 1, "record-invalid")], errors
    else:
        assert offsets == [0] * BIG and errors == [(BIG, 1, "records-trailing-bytes")], errors
