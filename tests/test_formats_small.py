"""Declarations of the small files: round trips on the corpus and on hand-built values, Kafka's parsing
rules on hand-built edge cases, and the readers' Findings on hand-built damage.

Round trip = parse -> build gives the identical bytes, and build -> parse gives the values back.
"""

from __future__ import annotations

import shutil
import struct
from contextlib import nullcontext
from pathlib import Path

import pytest
from construct import ConstructError

from kafkatool.errors import InputIOError, UsageError
from kafkatool.filetypes import FileKind, classify
from kafkatool.formats import checkpoints as cp
from kafkatool.formats import constants as c
from kafkatool.formats import index as ix
from kafkatool.formats import metadata_files as mf
from kafkatool.formats import producer_snapshot as ps
from kafkatool.formats import txnindex as tx
from kafkatool.model import Finding
from kafkatool.segment_indexes import txn_index_bytes
from kafkatool.smallfiles import (
    AbortedTxn,
    CheckpointHeader,
    EpochEntry,
    IndexEntry,
    ProducerEntry,
    TimeIndexEntry,
    index_slots,
    producer_snapshot_bytes,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    read_offset_index,
    read_producer_entries,
    read_small_file,
    read_time_index,
    read_topic_id,
    read_txn_index,
)

from .conftest import corpus_root


def corpus_files(*kinds: FileKind) -> list:
    root = corpus_root()
    return [
        pytest.param(p, id=str(p.relative_to(root)))
        for top in ("real", "kafka")
        for p in sorted((root / top).rglob("*"))
        if p.is_file() and classify(p).kind in kinds
    ]


def fields(container) -> dict:
    return {k: v for k, v in container.items() if not k.startswith("_")}


def run(tmp_path: Path, name: str, data: bytes, kind: FileKind | None = None) -> list:
    path = tmp_path / name
    path.write_bytes(data)
    return list(read_small_file(path, kind or classify(path).kind, name))


def codes(values: list) -> list[str]:
    return [v.code for v in values if isinstance(v, Finding)]


# --- .index / .timeindex / .txnindex ---------------------------------------------------------------

INDEX_DECLARATIONS = {  # kind: (whole file, one entry)
    FileKind.INDEX: (ix.OffsetIndex, ix.OffsetIndexEntry),
    FileKind.TIME_INDEX: (ix.TimeIndex, ix.TimeIndexEntry),
    FileKind.TXN_INDEX: (tx.TransactionIndex, tx.AbortedTxnEntry),
}


@pytest.mark.parametrize("path", corpus_files(*INDEX_DECLARATIONS))
def test_index_file_round_trip_and_bulk_decoder_agrees(path: Path) -> None:
    data = path.read_bytes()
    kind = classify(path).kind
    declaration, entry = INDEX_DECLARATIONS[kind]
    parsed = declaration.parse(data)
    assert declaration.build(parsed) == data
    assert len(parsed.trailing) == len(data) % entry.sizeof()
    # the readers' struct decoding sees exactly the entries of the Construct declaration
    assert list(index_slots(data, kind)) == [tuple(fields(e).values()) for e in parsed.entries]


@pytest.mark.parametrize(
    ("declaration", "entry", "size"),
    [
        (ix.OffsetIndexEntry, dict(relative_offset=2**31 - 1, position=-1), 8),
        (ix.TimeIndexEntry, dict(timestamp=-(2**63), relative_offset=7), 12),
        (tx.AbortedTxnEntry,
         dict(version=0, producer_id=1000, first_offset=10, last_offset=20, last_stable_offset=10), 34),
    ],
)
def test_index_entry_round_trip(declaration, entry: dict, size: int) -> None:
    raw = declaration.build(entry)
    assert len(raw) == size == declaration.sizeof()
    assert fields(declaration.parse(raw)) == entry


def test_whole_entries_keeps_a_partial_tail() -> None:
    entries = [dict(relative_offset=1, position=2), dict(relative_offset=3, position=4)]
    raw = ix.OffsetIndex.build(dict(entries=entries, trailing=b"xyz"))
    assert raw == struct.pack(">iiii", 1, 2, 3, 4) + b"xyz"
    parsed = ix.OffsetIndex.parse(raw)
    assert [fields(e) for e in parsed.entries] == entries and parsed.trailing == b"xyz"


def test_offset_index_listing_stops_at_preallocated_slots(tmp_path: Path) -> None:
    data = struct.pack(">iiii", 5, 100, 9, 200) + bytes(8 * 10)
    assert run(tmp_path, f"{100:020d}.index", data) == [IndexEntry(105, 100), IndexEntry(109, 200)]
    assert run(tmp_path, f"{100:020d}.index", bytes(1 << 16)) == []  # all-zero preallocated: no error
    # a first entry at relative offset 0 is real unless its position is 0 too
    assert run(tmp_path, f"{100:020d}.index", struct.pack(">ii", 0, 70) + bytes(8)) == [IndexEntry(100, 70)]
    assert read_offset_index(tmp_path / f"{100:020d}.index") == [IndexEntry(100, 70)]


def test_offset_index_sanity_check(tmp_path: Path) -> None:
    out = run(tmp_path, f"{0:020d}.index", struct.pack(">ii", 3, 10) + b"\x01\x02\x03\x04\x05")
    assert out[0] == IndexEntry(3, 10)
    assert codes(out) == ["index-size-not-multiple"] and out[-1].position == 8 and out[-1].severity == "error"
    # Kafka checks the last *mapped* slot: garbage there is below the base offset
    out = run(tmp_path, f"{50:020d}.index", struct.pack(">iiii", 3, 10, -1, 20))
    assert out[:2] == [IndexEntry(53, 10), IndexEntry(49, 20)]
    assert codes(out) == ["index-last-offset-below-base"]
    assert out[-1].position == 8


def test_corrupt_index_case_with_its_appended_bytes(tmp_path: Path, corpus: Path) -> None:
    """The corpus case as Kafka saw it: garbage over the first two slots, 5 bytes appended (4,101 bytes).

    Kafka's ``OffsetIndex.sanityCheck`` raises ``CorruptIndexException`` ("found 4101 bytes which is neither
    positive nor a multiple of 8"); the entries before that are listed as the golden lists them."""
    stored = corpus / "kafka/recovery/corrupt-index/before/rtopic-0/00000000000000000259.index"
    data = stored.read_bytes()
    assert len(data) == 4096 + 5
    out = run(tmp_path, stored.name, data)
    assert [v for v in out if not isinstance(v, Finding)] == [IndexEntry(-559038478, -889275714),
                                                               IndexEntry(19089002, -1985229329)]
    assert codes(out) == ["index-size-not-multiple"] and out[-1].position == 4096
    assert "4101 bytes" in out[-1].message


def test_time_index_listing_and_sanity_check(tmp_path: Path) -> None:
    name = f"{10:020d}.timeindex"
    entries = struct.pack(">qi", 1_700_000_000_000, 4) + struct.pack(">qi", 1_700_000_000_050, 9)
    listed = [TimeIndexEntry(1_700_000_000_000, 14), TimeIndexEntry(1_700_000_000_050, 19)]
    assert run(tmp_path, name, entries) == listed
    assert read_time_index(tmp_path / name) == listed
    # crash-left active index, still preallocated: last (zero) timestamp below the first
    out = run(tmp_path, name, entries + bytes(12 * 5))
    assert len(out) == 3 and codes(out) == ["timeindex-last-timestamp-below-first"]
    assert out[-1].position == 12 * 6
    out = run(tmp_path, name, entries + struct.pack(">qi", 1_700_000_000_099, -20))
    assert codes(out) == ["timeindex-last-offset-below-base"]
    assert codes(run(tmp_path, name, entries + b"\x00")) == ["timeindex-size-not-multiple"]
    assert run(tmp_path, name, bytes(4092)) == []  # all-zero preallocated: first slot is not an entry


def test_txn_index_reader(tmp_path: Path) -> None:
    name = f"{100:020d}.txnindex"
    txns = [(0, 1000, 90, 120, 95), (0, 2000, 110, 130, 121)]
    names = [sc.name for sc in tx.AbortedTxnEntry.subcons]
    entries = [dict(zip(names, t, strict=True)) for t in txns]
    data = tx.TransactionIndex.build(dict(entries=entries, trailing=b""))
    assert run(tmp_path, name, data) == [AbortedTxn(*t) for t in txns]
    assert read_txn_index(tmp_path / name) == [AbortedTxn(*t) for t in txns]
    # partial tail: Kafka ignores it; reported as a warning
    out = run(tmp_path, name, data + b"\x00" * 5)
    assert out[:2] == [AbortedTxn(*t) for t in txns] and codes(out) == ["txnindex-partial-entry"]
    assert out[-1].severity == "warning"
    # an ABORT marker before the segment base: sanityCheck() fails after the listing
    low = struct.pack(">hqqqq", 0, 3000, 10, 50, 12)
    out = run(tmp_path, name, data + low)
    assert len(out) == 4 and codes(out) == ["txnindex-last-offset-below-base"] and out[-1].position == 68
    # Kafka reads the version's first byte only: 0x0100 is version 1 (rejected), 0x0001 is version 0
    out = run(tmp_path, name, data + struct.pack(">hqqqq", 0x0100, 1, 200, 201, 200))
    assert codes(out) == ["txnindex-bad-version"] and out[-1].position == 68 and len(out) == 3
    out = run(tmp_path, name, struct.pack(">hqqqq", 0x0001, 1, 200, 201, 200))
    assert codes(out) == ["txnindex-odd-version"] and out[-1] == AbortedTxn(1, 1, 200, 201, 200)


# --- producer .snapshot ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_files(FileKind.PRODUCER_SNAPSHOT))
def test_producer_snapshot_round_trip(path: Path) -> None:
    data = path.read_bytes()
    parsed = ps.ProducerSnapshot.parse(data)
    assert ps.ProducerSnapshot.build(parsed) == data
    if parsed.crc == ps.snapshot_crc(data):  # Kafka-written: rebuilding from the entries recomputes the CRC
        assert ps.build_snapshot([fields(e) for e in parsed.entries]) == data
    if parsed.crc == ps.snapshot_crc(data) and parsed.version == ps.VERSION:  # the reader's bulk decoding agrees
        assert read_producer_entries(path) == [ProducerEntry(**fields(e)) for e in parsed.entries]


PRODUCERS = [
    dict(producer_id=1000, producer_epoch=0, last_sequence=89, last_offset=512, offset_delta=2,
         timestamp=1_700_000_129_000, coordinator_epoch=7, current_txn_first_offset=-1),
    dict(producer_id=2**63 - 1, producer_epoch=-1, last_sequence=-1, last_offset=-1, offset_delta=0,
         timestamp=-1, coordinator_epoch=-1, current_txn_first_offset=500),
]


def _layout(decl) -> str:
    """The ``struct`` layout of a Construct Struct of big-endian fixed-size fields, in declaration order (Construct
    spells a 4-byte int ``l``, which in ``>`` mode is ``i``)."""
    fields = "".join(sc.subcon.fmtstr.lstrip("<>=!") for sc in decl.subcons)
    return ">" + fields.replace("l", "i").replace("L", "I")


def test_the_readers_layouts_are_the_declarations() -> None:
    """formats/constants.py spells the small files' layouts for the readers and writers that run without Construct:
    each is its declaration's (an entry field added, retyped or moved there fails here)."""
    assert [struct.calcsize(c.OFFSET_INDEX_ENTRY), struct.calcsize(c.TIME_INDEX_ENTRY)] == [
        ix.OffsetIndexEntry.sizeof(), ix.TimeIndexEntry.sizeof()]
    for constant, decl in [(c.OFFSET_INDEX_ENTRY, ix.OffsetIndexEntry), (c.TIME_INDEX_ENTRY, ix.TimeIndexEntry),
                           (c.ABORTED_TXN_ENTRY, tx.AbortedTxnEntry), (c.SNAPSHOT_HEADER, ps.SnapshotHeader),
                           (c.SNAPSHOT_ENTRY, ps.ProducerEntry)]:
        assert constant == _layout(decl)
    assert (c.SNAPSHOT_HEADER_SIZE, c.PRODUCER_ENTRY_SIZE) == (ps.SnapshotHeader.sizeof(), ps.ProducerEntry.sizeof())
    header = {sub.name: ps.SnapshotHeader.subcons[:i] for i, sub in enumerate(ps.SnapshotHeader.subcons)}
    assert sum(s.sizeof() for s in header["crc"]) == c.SNAPSHOT_CRC_OFFSET
    assert sum(s.sizeof() for s in header["num_entries"]) == c.SNAPSHOT_ENTRIES_OFFSET
    # the values follow their declarations' field order (they are built from the bulk-decoded tuples)
    assert list(ProducerEntry._fields) == [sc.name for sc in ps.ProducerEntry.subcons]
    assert list(AbortedTxn._fields) == [sc.name for sc in tx.AbortedTxnEntry.subcons]


@pytest.mark.parametrize("producers", [[], PRODUCERS[:1], PRODUCERS])
def test_a_snapshot_written_without_construct_is_the_declarations(producers: list[dict]) -> None:
    """What repair and the log writer write (kafkatool.smallfiles.producer_snapshot_bytes): the Construct build's
    bytes, the CRC included."""
    assert producer_snapshot_bytes([ProducerEntry(**p) for p in producers]) == ps.build_snapshot(producers)


def test_a_txnindex_written_without_construct_is_the_declarations() -> None:
    txns = [AbortedTxn(0, 1000, 5, 9, 5), AbortedTxn(0, 2**63 - 1, -1, 2**63 - 1, 0)]
    assert txn_index_bytes(txns) == b"".join(tx.AbortedTxnEntry.build(t._asdict()) for t in txns)


def test_producer_snapshot_build_parse(tmp_path: Path) -> None:
    raw = ps.build_snapshot(PRODUCERS)
    assert len(raw) == ps.HEADER_SIZE + 2 * ps.PRODUCER_ENTRY_SIZE == 10 + 2 * 46
    parsed = ps.ProducerSnapshot.parse(raw)
    assert (parsed.version, parsed.num_entries, parsed.crc) == (1, 2, ps.snapshot_crc(raw))
    assert [fields(e) for e in parsed.entries] == PRODUCERS
    out = run(tmp_path, f"{512:020d}.snapshot", raw)
    assert out[0].as_dict() == {"type": "producer_snapshot", "version": 1, "crc": parsed.crc,
                                "crc_valid": True, "count": 2}
    assert out[1:] == [ProducerEntry(**p) for p in PRODUCERS]
    assert read_producer_entries(tmp_path / f"{512:020d}.snapshot") == out[1:]
    assert ps.build_snapshot([]) == b"\x00\x01" + struct.pack(">I", ps.snapshot_crc(b"\x00" * 10)) + bytes(4)


@pytest.mark.parametrize("count", [-1, 3, 2**31 - 1])
def test_producer_snapshot_count_is_bounded_by_the_file(count: int) -> None:
    raw = bytearray(ps.build_snapshot(PRODUCERS))
    raw[6:10] = struct.pack(">i", count)
    with pytest.raises(ConstructError):
        ps.ProducerSnapshot.parse(bytes(raw))


def test_producer_snapshot_reader_findings(tmp_path: Path) -> None:
    name = f"{512:020d}.snapshot"
    good = ps.build_snapshot(PRODUCERS)
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    out = run(tmp_path, name, flipped)  # Kafka's readSnapshot throws: header, error, no producers
    assert len(out) == 2 and out[0].crc_valid is False and codes(out) == ["snapshot-crc-mismatch"]
    assert read_producer_entries(tmp_path / name) == []
    assert codes(run(tmp_path, name, good[:-3])) == ["snapshot-truncated"]
    assert codes(run(tmp_path, name, good[:7])) == ["snapshot-truncated"]
    assert codes(run(tmp_path, name, b"")) == ["snapshot-truncated"]
    assert codes(run(tmp_path, name, ps.build_snapshot(PRODUCERS, version=2))) == ["snapshot-bad-version"]
    negative = bytearray(good)
    negative[6:10] = struct.pack(">i", -5)
    assert codes(run(tmp_path, name, bytes(negative))) == ["snapshot-bad-count"]
    # bytes after the last entry: CRC-covered, so only legible if the CRC was computed over them
    padded = bytearray(good + b"\x00\x00")
    padded[2:6] = struct.pack(">I", ps.snapshot_crc(bytes(padded)))
    out = run(tmp_path, name, bytes(padded))
    assert len(out) == 4 and codes(out) == ["snapshot-trailing-bytes"] and out[-1].severity == "warning"


# --- text checkpoints -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_files(FileKind.OFFSET_CHECKPOINT, FileKind.EPOCH_CHECKPOINT))
def test_checkpoint_round_trip(path: Path) -> None:
    data = path.read_bytes()
    offsets = classify(path).kind is FileKind.OFFSET_CHECKPOINT
    parsed = list(cp.parse_checkpoint(data, cp.parse_offset_line if offsets else cp.parse_epoch_line))
    if not data:
        assert parsed == []  # an empty file: no entries and no error (Kafka writes none like it)
        return
    (version, count), entries = parsed[0], parsed[1:]
    assert version == 0 and count == len(entries)
    rebuilt = cp.build_offset_checkpoint(entries) if offsets else cp.build_epoch_checkpoint(entries)
    assert rebuilt == data


def test_checkpoint_build_parse() -> None:
    offsets = [("codecs", 0, 200), ("__consumer_offsets", 49, 2**63 - 1), ("t", -1, -1)]
    raw = cp.build_offset_checkpoint(offsets)
    assert raw == b"0\n3\ncodecs 0 200\n__consumer_offsets 49 9223372036854775807\nt -1 -1\n"
    assert list(cp.parse_checkpoint(raw, cp.parse_offset_line)) == [(0, 3), *offsets]
    epochs = [(0, 0), (3, 125)]
    assert cp.build_epoch_checkpoint(epochs) == b"0\n2\n0 0\n3 125\n"
    parsed = cp.parse_checkpoint(cp.build_epoch_checkpoint(epochs), cp.parse_epoch_line)
    assert list(parsed) == [(0, 2), *epochs]
    assert cp.build_epoch_checkpoint([]) == b"0\n0\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("t 0 5", ("t", 0, 5)),
        ("t\t0  \x0b5", ("t", 0, 5)),      # any run of Java \s separates
        ("t 0 5 ", ("t", 0, 5)),           # trailing empty field dropped by Pattern.split
        (" 0 5", ("", 0, 5)),              # leading empty field kept: an empty topic name
        (" t 0 5", None),                  # ... which makes four fields here
        ("t +1 -0", ("t", 1, 0)),          # Integer.parseInt accepts a sign
        ("t \u0661 5", ("t", 1, 5)),       # ... and any Unicode decimal digit
        ("t 2147483648 5", None),          # partition beyond int32
        ("t 0 9223372036854775808", None),  # offset beyond int64
        ("t 0 1_0", None),
        ("t 0", None),
        ("", None),
        ("t 0 5\u00a0", None),             # NBSP is not Java \s
        ("t 2147483647 9223372036854775807", ("t", 2147483647, 9223372036854775807)),  # the largest of each
        ("t 0 " + "1" * 5000, None),       # NumberFormatException (int() would refuse it: ValueError)
        ("t 0 " + "0" * 5000 + "5", ("t", 0, 5)),   # Long.parseLong takes leading zeros, however many
        ("t -" + "\u0660" * 5000 + "1 5", ("t", -1, 5)),
    ],
)
def test_offset_line_java_rules(line: str, expected) -> None:
    assert cp.parse_offset_line(line) == expected


@pytest.mark.parametrize(
    ("data", "items", "code"),
    [
        (b"", [], None),
        (b"0\n", [(0, None)], None),                      # Kafka: no count line means no entries
        (b"0\n0\n", [(0, 0)], None),
        (b"0\r\n1\r1 5", [(0, 1), (1, 5)], None),          # \r\n, \r and no final newline are all line ends
        (b"1\n0\n", [], "checkpoint-bad-version"),
        (b" 0\n0\n", [], "checkpoint-malformed"),          # version line must be exactly an int
        (b"0\nx\n", [], "checkpoint-malformed"),
        (b"0\n-1\n", [], "checkpoint-bad-count"),          # new ArrayList<>(-1) throws
        (b"0\n2\n1 5\n", [(0, 2), (1, 5)], "checkpoint-count-mismatch"),
        (b"0\n1\n1 5\n2 9\n", [(0, 1), (1, 5), (2, 9)], "checkpoint-count-mismatch"),
        (b"0\n2\n1 5\n\n2 9\n", [(0, 2), (1, 5)], "checkpoint-malformed"),  # no blank lines
        (b"0\n1\n1 5 7\n", [(0, 1)], "checkpoint-malformed"),
        (b"0\n1\n1 \xff\n", [(0, 1)], "text-bad-encoding"),
        (b"0\n1\n1 " + b"9" * 5000 + b"\n", [(0, 1)], "checkpoint-malformed"),  # beyond a long, however long
    ],
)
def test_checkpoint_read_buffer_rules(data: bytes, items: list, code: str | None) -> None:
    got = []
    with pytest.raises(cp.TextFileError) if code else nullcontext() as raised:
        for item in cp.parse_checkpoint(data, cp.parse_epoch_line):
            got.append(item)
    assert got == items
    if code:
        assert raised.value.code == code


def _read_all(items) -> tuple[list, str | None]:
    got = []
    try:
        for item in items:
            got.append(item)
    except cp.TextFileError as e:
        return got, f"{e.code} at {e.position}: {e.message}"
    return got, None


@pytest.mark.parametrize(
    ("data", "read"),
    [
        (cp.build_epoch_checkpoint([(0, 0)]), ([(0, 1), (0, 0)], None)),
        (cp.build_epoch_checkpoint([]), ([(0, 0)], None)),
        (cp.build_epoch_checkpoint([(3, 1), (5, 9)]), ([(0, 2), (3, 1), (5, 9)], None)),
        (cp.build_offset_checkpoint([("t", 0, 5), ("u", 3, 2**63 - 1)]),
         ([(0, 2)], "checkpoint-malformed at 4: malformed line 't 0 5'")),
        (b"0\n007\n" + b"1 5\n" * 7, ([(0, 7)] + [(1, 5)] * 7, None)),  # Integer.parseInt reads 007 as 7
        (b"0\n1\n1 5\n2 9\n",
         ([(0, 1), (1, 5), (2, 9)], "checkpoint-count-mismatch at 12: expected 1 entries, found 2")),
        (b"0\n2\n1 5\n", ([(0, 2), (1, 5)], "checkpoint-count-mismatch at 8: expected 2 entries, found 1")),
        (b"0\n1\n\n", ([(0, 1)], "checkpoint-malformed at 4: malformed line ''")),
        (b"0\n1\n1 5", ([(0, 1), (1, 5)], None)),
        (b"00\n1\n1 5\n", ([(0, 1), (1, 5)], None)),
        (b"+0\n1\n1 5\n", ([(0, 1), (1, 5)], None)),
        (b"0\n1\n1  5\n", ([(0, 1), (1, 5)], None)),
        (b"0\n1\n1 \xd9\xa1\n", ([(0, 1), (1, 1)], None)),  # an Arabic-Indic digit one
        (b"0\n1\r\n1 5\n", ([(0, 1), (1, 5)], None)),
        (b"0\n9999999999\n", ([], "checkpoint-malformed at 2: malformed line '9999999999' (expected an int)")),
        (b"0\n", ([(0, None)], None)),
        (b"0\n-1\n1 5\n", ([], "checkpoint-bad-count at 2: negative entry count -1")),
    ],
)
def test_checkpoint_written_and_odd_files_read_as_kafka_reads_them(data: bytes, read: tuple) -> None:
    """Files as the broker writes them and odd ones beside them: the items, and where and why the reader stops (what
    the reader gave when a second one read the broker's files, held equal to it here)."""
    assert _read_all(cp.parse_checkpoint(data, cp.parse_epoch_line)) == read


def test_checkpoint_reader(tmp_path: Path) -> None:
    out = run(tmp_path, "leader-epoch-checkpoint", b"0\n2\n0 0\n3 125\n")
    assert out == [CheckpointHeader(0, 2), EpochEntry(0, 0), EpochEntry(3, 125)]
    assert read_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint") == out[1:]
    out = run(tmp_path, "replication-offset-checkpoint", b"0\n2\nt 0 5\nt x 6\n")
    assert [v.as_dict()["type"] for v in out] == ["checkpoint", "offset", "finding"]
    assert codes(out) == ["checkpoint-malformed"] and out[-1].position == len(b"0\n2\nt 0 5\n")
    assert [e.as_dict() for e in read_offset_checkpoint(tmp_path / "replication-offset-checkpoint")] == [
        {"type": "offset", "topic": "t", "partition": 0, "offset": 5}]
    assert run(tmp_path, "cleaner-offset-checkpoint", b"") == []
    out = run(tmp_path, "log-start-offset-checkpoint", b"0\n")
    assert out[0] == CheckpointHeader(0, None) and codes(out) == ["checkpoint-no-count"]
    assert out[-1].severity == "warning"


def test_a_number_of_thousands_of_digits_is_a_finding(tmp_path: Path, corpus: Path, run_cli) -> None:
    """A leader-epoch-checkpoint whose start offset has 5,000 digits: Kafka's ``Long.parseLong`` throws, the file is
    malformed; Python's ``int()`` refuses more than 4,300 digits with a ValueError, which was an internal error."""
    part = tmp_path / "codecs-0"
    shutil.copytree(corpus / "kafka/logdir/codecs-0", part)
    (part / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 " + b"1" * 5000 + b"\n")
    result = run_cli("verify", "--format", "jsonl", part)
    assert result.returncode == 1, result.stderr
    found = [d for d in result.jsonl() if d.get("code") == "checkpoint-malformed"]
    assert [d["path"] for d in found] == [str(part / "leader-epoch-checkpoint")]


# --- partition.metadata ---------------------------------------------------------------------------

TOPIC_ID = bytes.fromhex("edcba9875b748e5210fedcba9876a443")


@pytest.mark.parametrize("path", corpus_files(FileKind.PARTITION_METADATA))
def test_partition_metadata_round_trip(path: Path) -> None:
    data = path.read_bytes()
    version, topic_id = mf.parse_partition_metadata(data)
    assert mf.build_partition_metadata(topic_id, version) == data


def test_partition_metadata_build_parse(tmp_path: Path) -> None:
    raw = mf.build_partition_metadata(TOPIC_ID)
    assert raw == b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw"
    assert mf.parse_partition_metadata(raw) == (0, TOPIC_ID)
    out = run(tmp_path, "partition.metadata", raw)
    assert [v.as_dict() for v in out] == [{"type": "partition_metadata", "version": 0,
                                          "topic_id": "7cuph1t0jlIQ_ty6mHakQw"}]
    assert read_topic_id(tmp_path / "partition.metadata") == "7cuph1t0jlIQ_ty6mHakQw"


@pytest.mark.parametrize(
    ("data", "result"),
    [
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw\n", TOPIC_ID),  # final newline or not
        (b"x:  0\r\ny:\t7cuph1t0jlIQ_ty6mHakQw\nignored", TOPIC_ID),  # key names are not checked
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw==", TOPIC_ID),  # padding accepted
        (b"", "partition-metadata-malformed"),
        (b"version:0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw", "partition-metadata-malformed"),
        (b"version: 1\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw", "partition-metadata-bad-version"),
        (b"version: 0\n", "partition-metadata-malformed"),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "partition-metadata-bad-topic-id"),  # zero UUID
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHak", "partition-metadata-bad-topic-id"),  # 15 bytes
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ+ty6mHakQw", "partition-metadata-bad-topic-id"),  # not URL-safe
    ],
)
def test_partition_metadata_reader_rules(data: bytes, result) -> None:
    if isinstance(result, bytes):
        assert mf.parse_partition_metadata(data) == (0, result)
    else:
        with pytest.raises(cp.TextFileError) as raised:
            mf.parse_partition_metadata(data)
        assert raised.value.code == result


@pytest.mark.parametrize(
    ("data", "read"),
    [
        (mf.build_partition_metadata(TOPIC_ID), (0, TOPIC_ID)),
        (mf.build_partition_metadata(bytes(16)), ("partition-metadata-bad-topic-id", 11, "topic id is the zero UUID")),
        (mf.build_partition_metadata(TOPIC_ID) + b"\n", (0, TOPIC_ID)),
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQx", (0, TOPIC_ID)),  # bits past 128 dropped
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ_ty6mHak",
         ("partition-metadata-bad-topic-id", 11, "'7cuph1t0jlIQ_ty6mHak' decodes to 15 bytes, not 16")),
        (b"version: 1\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw", ("partition-metadata-bad-version", 0, "unknown version 1")),
        (b"version:  0\ntopic_id: 7cuph1t0jlIQ_ty6mHakQw", (0, TOPIC_ID)),
        (b"version: 0\ntopic_id: 7cuph1t0jlIQ+ty6mHakQw",
         ("partition-metadata-bad-topic-id", 11, "'7cuph1t0jlIQ+ty6mHakQw' is not a base64 UUID")),
    ],
)
def test_partition_metadata_written_and_odd_files_read_as_kafka_reads_them(data: bytes, read: tuple) -> None:
    """The file as the broker writes it and odd ones beside it: what the reader gives, or where and why it refuses
    (what it gave when a second reader read the broker's files, held equal to it here)."""
    try:
        got = mf.parse_partition_metadata(data)
    except cp.TextFileError as e:
        got = e.code, e.position, e.message
    assert got == read


# --- meta.properties, quorum-state, .kafka_cleanshutdown --------------------------------------------


@pytest.mark.parametrize("path", corpus_files(FileKind.META_PROPERTIES))
def test_meta_properties_round_trip(path: Path) -> None:
    data = path.read_bytes()
    comments, props = mf.parse_properties(data)
    assert mf.build_properties(props, comments) == data
    version, node_id = mf.meta_properties_node_id(props)
    assert node_id == int(props["broker.id" if version == 0 else "node.id"])


def test_properties_java_rules() -> None:
    text = (b"# comment\n  ! other\n\n"
            b"a=1\n b : 2\nc 3\nd\te=4\n"            # separators: '=', ':', whitespace (then an optional '=')
            b"long=x\\\n    y\\\\\n"                  # continuation; escaped backslash ends the value
            b"sp\\ ace=\\u00e9\\t\\q\n"
            b"empty\n"
            b"a=last\n")
    comments, props = mf.parse_properties(text)
    assert comments == [" comment", " other"]
    assert props == {"b": "2", "c": "3", "d": "e=4", "long": "xy\\", "sp ace": "\u00e9\tq", "empty": "",
                     "a": "last"}
    with pytest.raises(cp.TextFileError):
        mf.parse_properties(b"bad=\\u00g1\n")
    # build -> parse round trip, with everything that needs escaping
    props = {"k y:=": " v#!\u00e9\n", "node.id": "3"}
    raw = mf.build_properties(props, ["", "Mon Mar 31 09:32:14 UTC 2025"])
    assert raw == (b"#\n#Mon Mar 31 09:32:14 UTC 2025\n"
                   b"k\\ y\\:\\==\\ v\\#\\!\\u00E9\\n\nnode.id=3\n")
    assert mf.parse_properties(raw) == (["", "Mon Mar 31 09:32:14 UTC 2025"], props)


@pytest.mark.parametrize(
    ("props", "result"),
    [
        ({"version": "0", "broker.id": "4"}, (0, 4)),
        ({"broker.id": "4"}, (0, 4)),                         # version defaults to 0
        ({"version": "0"}, (0, None)),                        # v0 may lack broker.id
        ({"version": "1", "node.id": "2", "cluster.id": "c"}, (1, 2)),
        ({"version": "1", "node.id": "2"}, "meta-properties-missing-key"),
        ({"version": "1", "cluster.id": "c"}, "meta-properties-missing-key"),
        ({"version": "2", "node.id": "2"}, "meta-properties-bad-version"),
        ({"version": "0", "broker.id": "x"}, "meta-properties-bad-value"),
        ({"version": "0", "broker.id": "1", "directory.id": "nope"}, "meta-properties-bad-value"),
    ],
)
def test_meta_properties_rules(props: dict, result) -> None:
    if isinstance(result, tuple):
        assert mf.meta_properties_node_id(props) == result
    else:
        with pytest.raises(cp.TextFileError) as raised:
            mf.meta_properties_node_id(props)
        assert raised.value.code == result


def test_meta_properties_reader(tmp_path: Path) -> None:
    props = {"node.id": "1", "directory.id": "7cNUW9GOvDJ2t1P3VbOOKg", "version": "1",
             "cluster.id": "MkU3OEVBNTcwNTJENDM2Qk"}
    [meta] = run(tmp_path, "meta.properties", mf.build_properties(props, ["", "date"]))
    assert meta.as_dict() == {"type": "meta_properties", "version": 1, "node_id": 1,
                              "cluster_id": "MkU3OEVBNTcwNTJENDM2Qk",
                              "directory_id": "7cNUW9GOvDJ2t1P3VbOOKg", "properties": props}
    out = run(tmp_path, "meta.properties", b"version=1\nnode.id=1\n")
    assert out[0].version is None and codes(out) == ["meta-properties-missing-key"]


# JSON nested deeper than the interpreter's stack: json.loads raises RecursionError, not ValueError (it was exit 70)
DEEP_JSON = b'{"data_version":' * 100_000 + b"0" + b"}" * 100_000


@pytest.mark.parametrize("path", corpus_files(FileKind.QUORUM_STATE))
def test_quorum_state_round_trip(path: Path) -> None:
    data = path.read_bytes()
    assert mf.build_quorum_state(mf.parse_quorum_state(data)) == data


def test_quorum_state_reader(tmp_path: Path) -> None:
    state = {"clusterId": "", "leaderId": 1, "leaderEpoch": 44, "votedId": -1, "appliedOffset": 0,
             "currentVoters": [{"voterId": 1}], "data_version": 0}
    raw = mf.build_quorum_state(state)
    assert raw.startswith(b'{"clusterId":"","leaderId":1,') and raw.endswith(b'"data_version":0}')
    [value] = run(tmp_path, "quorum-state", raw)
    assert value.as_dict() == {"type": "quorum_state", "data_version": 0, "cluster_id": "", "leader_id": 1,
                               "leader_epoch": 44, "voted_id": -1, "applied_offset": 0,
                               "current_voters": [{"voter_id": 1}]}
    assert dict(value.fields)["leaderEpoch"] == 44
    for bad in (b"", b"[1]", b"{", b'{"leaderId":1}', b'{"data_version":true}', DEEP_JSON):
        assert codes(run(tmp_path, "quorum-state", bad)) == ["quorum-state-malformed"]


@pytest.mark.parametrize("path", corpus_files(FileKind.CLEAN_SHUTDOWN))
def test_clean_shutdown_round_trip(path: Path) -> None:
    data = path.read_bytes()
    version, epoch = mf.parse_clean_shutdown(data)
    assert mf.build_clean_shutdown(epoch, version if version is not None else 0) == data


def test_clean_shutdown_reader(tmp_path: Path) -> None:
    assert mf.build_clean_shutdown(469622) == b'{"version":0,"brokerEpoch":469622}'
    assert mf.parse_clean_shutdown(b'{"version":"0","broker_epoch":"7"}') == (0, 7)  # early 3.7 form
    assert [v.as_dict() for v in run(tmp_path, ".kafka_cleanshutdown", b"")] == [
        {"type": "clean_shutdown", "version": None, "broker_epoch": None}]
    for garbage in (b"garbage", DEEP_JSON):
        out = run(tmp_path, ".kafka_cleanshutdown", garbage)  # still a clean shutdown for Kafka
        assert out[0].broker_epoch is None and codes(out) == ["clean-shutdown-unreadable"]
        assert out[-1].severity == "warning"


# --- the reader's contract --------------------------------------------------------------------------


def test_unreadable_file_raises_input_io_error(tmp_path: Path) -> None:
    with pytest.raises(InputIOError):
        read_small_file(tmp_path / "missing.index", FileKind.INDEX, "missing.index", 0)
    with pytest.raises(InputIOError):
        read_small_file(tmp_path, FileKind.EPOCH_CHECKPOINT, "a directory")
    with pytest.raises(UsageError):
        read_small_file(tmp_path / "x.log", FileKind.LOG, "x.log")


def test_base_offset_from_name_or_argument(tmp_path: Path) -> None:
    data = struct.pack(">ii", 5, 100)
    (tmp_path / "renamed.idx").write_bytes(data)
    out = list(read_small_file(tmp_path / "renamed.idx", FileKind.INDEX, "renamed.idx"))
    assert codes(out) == ["base-offset-unknown"] and out[1:] == [IndexEntry(5, 100)]
    assert list(read_small_file(tmp_path / "renamed.idx", FileKind.INDEX, "renamed.idx", 1000)) == [
        IndexEntry(1005, 100)]


@pytest.mark.parametrize("kind", [FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX,
                                  FileKind.PRODUCER_SNAPSHOT, FileKind.OFFSET_CHECKPOINT,
                                  FileKind.EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA,
                                  FileKind.META_PROPERTIES, FileKind.CLEAN_SHUTDOWN, FileKind.QUORUM_STATE])
@pytest.mark.parametrize("size", [0, 1, 7, 13, 35, 47, 100, 4099])
def test_garbage_never_raises(tmp_path: Path, kind: FileKind, size: int) -> None:
    data = bytes((i * 151 + 7) % 256 for i in range(size))
    (tmp_path / "f").write_bytes(data)
    for value in read_small_file(tmp_path / "f", kind, "f", 0):
        assert isinstance(value.as_dict(), dict)
