"""The readers ``kafkatool.fastparse`` derives from Construct declarations give what the declarations give.

For every declaration ``common.parse`` reads with a derived reader: on every record key and value of the
corpus's ``__consumer_offsets`` and ``__transaction_state`` partitions, on values of every version built from
random fields, and on seeded mutations of all of them (bit flips, cuts, bytes added, absurd lengths), the reader
gives either ``None`` (the declaration then parses, and words any error) or exactly ``decl.parse(data)``; and it
gives ``None`` only where the declaration fails or leaves bytes over, or for a varint longer than the reader
takes (5 bytes).
"""

from __future__ import annotations

import functools
import io
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from construct import ConstructError, Struct

from kafkatool.build import RecordSpec, record_batch
from kafkatool.fastparse import prefix_reader, reader
from kafkatool.formats import internal_topics as it
from kafkatool.formats import primitives
from kafkatool.internal import common, offsets, transactions

from .conftest import PROJECT_ROOT, corpus_root

FIXTURES = PROJECT_ROOT / "fixtures"

DECLS = {name: getattr(it, name) for name in ("CoordinatorKeyVersion", "OffsetCommitKey", "GroupMetadataKey",
                                               "OffsetCommitValue", "GroupMetadataValue", "TransactionLogKey",
                                               "TransactionLogValue")}


def _declared(decl: Any, data: bytes) -> Any:
    """``decl``'s reading of ``data`` whole, or None where it fails or leaves bytes over."""
    stream = io.BytesIO(data)
    try:
        value = decl.parse_stream(stream)
    except (ConstructError, UnicodeDecodeError):
        return None
    return value if stream.tell() == len(data) else None


def check(decl: Any, data: bytes) -> bool:
    """Assert the reader of ``decl`` agrees with ``decl`` on ``data``; True when the reader read it."""
    fast = reader(decl)(data)
    declared = _declared(decl, data)
    if fast is not None:
        assert declared is not None and fast == declared, (data.hex(), fast, declared)
        return True
    assert declared is None or _overlong_varint(data), (data.hex(), declared)
    return False


def _overlong_varint(data: bytes) -> bool:
    """A uvarint longer than 5 bytes anywhere (a run of 5 bytes with the continuation bit): the declaration's."""
    run = 0
    for b in data:
        run = run + 1 if b & 0x80 else 0
        if run >= 5:
            return True
    return False


@functools.cache
def corpus_records() -> list[tuple[str, bytes, bytes | None]]:
    """(partition kind, key, value) of every record in the corpus's internal-topic partitions."""
    out = []
    for kind in ("__consumer_offsets", "__transaction_state"):
        for d in sorted(corpus_root().rglob(f"{kind}-*")):
            if not d.is_dir():
                continue
            for seg in sorted(d.glob("*.log")):
                for item in common.file_records(seg, str(seg)):
                    if isinstance(item, tuple) and item[1].control_type is None and item[1].key is not None:
                        out.append((kind, item[1].key, item[1].value))
    return out


def test_every_declaration_internal_reads_first_has_a_reader() -> None:
    assert {id(d) for d in common._FAST_DECLS} == {id(d) for d in DECLS.values()}
    for decl in common._FAST_DECLS:
        assert reader(decl) is not None


def test_declarations_with_shapes_it_does_not_take_have_no_reader() -> None:
    # a Rebuild'ed length and a PaddedString; a zig-zag varint length and an Adapter: every reading is Construct's
    for decl in (primitives.compact_string, Struct("key" / primitives.varint_bytes())):
        assert reader(decl) is None


def _applicable(kind: str, key: bytes, value: bytes | None) -> list[tuple[Any, bytes]]:
    pairs: list[tuple[Any, bytes]] = [(it.CoordinatorKeyVersion, key[:2])]
    if kind == "__transaction_state":
        pairs += [(it.TransactionLogKey, key)]
        if value is not None:
            pairs += [(it.CoordinatorKeyVersion, value[:2]), (it.TransactionLogValue, value)]
        return pairs
    version = struct.unpack_from(">h", key)[0] if len(key) >= 2 else None
    if version in it.KEY_OFFSET_COMMIT:
        pairs += [(it.OffsetCommitKey, key)]
        if value is not None:
            pairs += [(it.CoordinatorKeyVersion, value[:2]), (it.OffsetCommitValue, value)]
    elif version == it.KEY_GROUP_METADATA:
        pairs += [(it.GroupMetadataKey, key)]
        if value is not None:
            pairs += [(it.CoordinatorKeyVersion, value[:2]), (it.GroupMetadataValue, value)]
    return pairs


def test_corpus_records_read_alike() -> None:
    records = corpus_records()
    read = {name: 0 for name in DECLS}
    names = {id(d): name for name, d in DECLS.items()}
    for kind, key, value in records:
        for decl, data in _applicable(kind, key, value):
            read[names[id(decl)]] += check(decl, data)
    # the corpus's records are the common case: the readers read them (the corpus has no __transaction_state
    # record: the generated test has transactional ids and states)
    assert len(records) > 1000 and all(n for name, n in read.items() if not name.startswith("Transaction")), read


def _s16(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _compact(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return _uvarint(len(b) + 1) + b


_TEXTS = [None, "", "m", "grüße", "日本語", "x" * 200, "emoji-\U0001F600"]


def offset_commit_value(rng: random.Random, version: int) -> bytes:
    """An ``OffsetCommitValue`` of ``version`` from its JSON schema, packed by hand (v4 with tagged fields at
    times)."""
    out = struct.pack(">hq", version, rng.randrange(-1, 1 << 62))
    if version >= 3:
        out += struct.pack(">i", rng.randrange(-1, 1 << 20))
    text = rng.choice(_TEXTS)
    out += _compact(text) if version >= 4 else _s16(text)
    out += struct.pack(">q", rng.randrange(-1, 1 << 42))
    if version == 1:
        out += struct.pack(">q", rng.randrange(-1, 1 << 42))
    return out + (_tags(rng) if version >= 4 else b"")


def _i32s(values: list[int], flexible: bool) -> bytes:
    count = _uvarint(len(values) + 1) if flexible else struct.pack(">i", len(values))
    return count + b"".join(struct.pack(">i", v) for v in values)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def _tags(rng: random.Random) -> bytes:
    """Tagged fields: none at most times, else one to three (tags 0-2 of TransactionLogValue v1, say)."""
    if rng.random() < 0.5:
        return b"\x00"
    tags = sorted(rng.sample(range(4), rng.randint(1, 3)))
    out = _uvarint(len(tags))
    for t in tags:
        data = bytes(rng.randrange(256) for _ in range(rng.choice((2, 8))))
        out += _uvarint(t) + _uvarint(len(data)) + data
    return out


def transaction_log_value(rng: random.Random, version: int) -> bytes:
    """A ``TransactionLogValue`` of ``version`` (0, or 1 flexible with tags) from its JSON schema."""
    flexible = version >= 1
    out = struct.pack(">hqhib", version, rng.randrange(-1, 1 << 40), rng.randrange(-1, 1 << 15),
                      rng.randrange(1 << 20), rng.randrange(8))
    partitions = [(rng.choice(_TEXTS[1:]), [rng.randrange(100) for _ in range(rng.randrange(4))])
                  for _ in range(rng.randrange(4))]
    out += _uvarint(len(partitions) + 1) if flexible else struct.pack(">i", len(partitions))
    for topic, ids in partitions:
        out += (_compact(topic) if flexible else _s16(topic)) + _i32s(ids, flexible) + (_tags(rng) if flexible else b"")
    out += struct.pack(">qq", rng.randrange(1 << 42), rng.randrange(-1, 1 << 42))
    return out + (_tags(rng) if flexible else b"")


def group_metadata_value(rng: random.Random, version: int) -> bytes:
    """A ``GroupMetadataValue`` of ``version`` (0..4; 4 flexible) with 0-3 members, from its JSON schema."""
    flexible = version >= 4

    def text(t: str | None) -> bytes:
        return _compact(t) if flexible else _s16(t)

    def blob(b: bytes | None) -> bytes:
        if flexible:
            return b"\x00" if b is None else _uvarint(len(b) + 1) + b
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b

    out = struct.pack(">h", version) + text(rng.choice(_TEXTS)) + struct.pack(">i", rng.randrange(-1, 500))
    out += text(rng.choice(_TEXTS)) + text(rng.choice(_TEXTS))
    if version >= 2:
        out += struct.pack(">q", rng.randrange(-1, 1 << 42))
    members = rng.randrange(4)
    out += _uvarint(members + 1) if flexible else struct.pack(">i", members)
    for _ in range(members):
        out += text(rng.choice(_TEXTS)) + (text(rng.choice(_TEXTS)) if version >= 3 else b"")
        out += text(rng.choice(_TEXTS)) + text(rng.choice(_TEXTS))
        out += struct.pack(">i", rng.randrange(1 << 20)) if version >= 1 else b""
        out += struct.pack(">i", rng.randrange(1 << 20))
        out += blob(rng.choice((None, b"", bytes(range(rng.randrange(40))))))
        out += blob(rng.choice((None, b"", bytes(range(rng.randrange(40))))))
        out += _tags(rng) if flexible else b""
    return out + (_tags(rng) if flexible else b"")


def offset_commit_key(rng: random.Random) -> bytes:
    return (struct.pack(">h", rng.choice((0, 1))) + _s16(rng.choice(_TEXTS)) + _s16(rng.choice(_TEXTS))
            + struct.pack(">i", rng.randrange(-1, 1000)))


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    case = rng.randrange(5)
    if case == 0 and b:  # bit flips
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif case == 1:  # cut short
        del b[rng.randrange(len(b) + 1):]
    elif case == 2:  # bytes added
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    elif case == 3 and len(b) >= 4:  # an absurd length or a negative one where a length may stand
        at = rng.randrange(len(b) - 1)
        b[at:at + 2] = struct.pack(">h", rng.choice((-2, -1, 0x7FFF, len(b))))
    elif b:  # continuation bits: varints run long
        at = rng.randrange(len(b))
        b[at:at + 6] = b"\xff" * 6
    return bytes(b)


@pytest.mark.parametrize("seed", range(4))
def test_generated_and_mutated_records_read_alike(seed: int) -> None:
    rng = random.Random(seed)
    corpus = corpus_records()
    read = 0
    for i in range(5000):
        if i % 3 == 0 and corpus:
            kind, key, value = rng.choice(corpus)
        elif i % 3 == 1:
            kind, key, value = "__transaction_state", struct.pack(">h", rng.choice((0, 0, 1))) + _s16(
                rng.choice(_TEXTS)), transaction_log_value(rng, rng.randrange(2))
        elif i % 2:
            kind, key, value = "__consumer_offsets", offset_commit_key(rng), offset_commit_value(rng, rng.randrange(5))
        else:
            kind, key, value = "__consumer_offsets", struct.pack(">h", 2) + _s16(rng.choice(_TEXTS)), \
                group_metadata_value(rng, rng.randrange(5))
        for decl, data in _applicable(kind, key, value):
            read += check(decl, data)
            check(decl, mutate(data, rng))
        check(it.OffsetCommitValue, mutate(offset_commit_value(rng, rng.randrange(-1, 7)), rng))
    assert read > 10000


def test_offsets_replay_is_the_same_with_the_declarations_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = sorted(d for d in corpus_root().rglob("__consumer_offsets-*") if d.is_dir() and any(d.glob("*.log")))

    def replay() -> list:
        offsets.decode_offsets_key.cache_clear()
        out = []
        for d in dirs:
            files = [(p, str(p)) for p in sorted(d.iterdir())]
            out += list(offsets.consumer_offsets_partition(files, d.name))
        return out

    fast = replay()
    monkeypatch.setattr(common, "_fast", {})
    monkeypatch.setattr(offsets, "_commit_readers", dict)  # no compiled reader: the declaration reads every value
    declared = replay()
    assert len(fast) > 20 and fast == declared


@pytest.mark.parametrize("seed", range(2))
def test_offset_commit_values_by_the_compiled_reader_equal_the_declarations(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay reads an ``OffsetCommitValue`` by its schema's compiled reader (``kafka_schema.reader``) and by
    the declaration where that misses: on the corpus's values, generated ones of every version and mutations of
    them, the same dict or the same Undecodable as the declaration alone."""
    rng = random.Random(seed)
    values = [v for kind, _k, v in corpus_records() if kind == "__consumer_offsets" and v is not None]
    values += [offset_commit_value(rng, rng.randrange(5)) for _ in range(3000)]
    values += [mutate(v, rng) for v in list(values)]

    def decoded(value: bytes) -> Any:
        try:
            return offsets.decode_offset_commit_value(value)
        except common.Undecodable as exc:
            return str(exc)

    fast = [decoded(v) for v in values]
    monkeypatch.setattr(offsets, "_commit_readers", dict)  # no compiled reader: the declaration reads every value
    declared = [decoded(v) for v in values]
    assert fast == declared
    assert sum(isinstance(v, dict) for v in fast) > 3000 and sum(isinstance(v, str) for v in fast) > 100


def test_transaction_state_replay_is_the_same_with_the_declarations_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    records = [RecordSpec(struct.pack(">h", 0) + _s16(f"tx-{rng.randrange(40)}"),
                          transaction_log_value(rng, rng.randrange(2)) if rng.random() < 0.9 else None,
                          1_700_000_000_000 + i)
               for i in range(3000)]
    part = tmp_path / "__transaction_state-5"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"".join(record_batch(i, [r]) for i, r in enumerate(records)))
    dirs = [part, *sorted(Path(FIXTURES).rglob("__transaction_state-*"))]

    def replay() -> list:
        transactions.decode_transaction_key.cache_clear()
        return [x for d in dirs for x in transactions.transaction_state_partition(
            [(p, str(p)) for p in sorted(d.iterdir())], d.name)]

    fast = replay()
    monkeypatch.setattr(common, "_fast", {})
    declared = replay()
    assert len(fast) > 40 and fast == declared


@functools.cache
def corpus_metadata_values() -> list[bytes]:
    """The value of every record of the corpus's KRaft metadata logs and snapshots (control records aside)."""
    out = []
    for d in sorted(corpus_root().rglob("__cluster_metadata-*")):
        for f in sorted([*d.glob("*.log"), *d.glob("*.checkpoint")]):
            for item in common.file_records(f, str(f)):
                if isinstance(item, tuple) and item[1].control_type is None and item[1].value is not None:
                    out.append(item[1].value)
    return out


def _metadata_pairs(value: bytes) -> list[tuple[Any, bytes]]:
    """(declaration, bytes) for a metadata record's body, and for each tag it declares."""
    frame = _declared_prefix(it.MetadataFrame, value)
    if frame is None:
        return []
    parsed, at = frame
    known = it.METADATA_RECORDS.get(parsed.record_type)
    if known is None or parsed.version not in known[1]:
        return []
    layout = common.metadata_layout(parsed.record_type, parsed.version)
    pairs = [(layout, value[at:])]
    body = _declared(layout, value[at:])
    tables = {it.PARTITION: it.PARTITION_RECORD_TAGS, it.PARTITION_CHANGE: it.PARTITION_CHANGE_TAGS,
              it.BROKER_REGISTRATION_CHANGE: it.BROKER_REGISTRATION_CHANGE_TAGS,
              it.BEGIN_TRANSACTION: it.METADATA_TRANSACTION_TAGS, it.ABORT_TRANSACTION: it.METADATA_TRANSACTION_TAGS}
    table = tables.get(parsed.record_type, {})
    for f in (body.tagged_fields.fields if body is not None else ()):
        if f.tag in table:
            pairs.append((table[f.tag][1], f.data))
    return pairs


def _declared_prefix(decl: Any, data: bytes) -> tuple[Any, int] | None:
    stream = io.BytesIO(data)
    try:
        return decl.parse_stream(stream), stream.tell()
    except (ConstructError, UnicodeDecodeError):
        return None


def check_prefix(decl: Any, data: bytes) -> bool:
    fast = prefix_reader(decl)(data)
    declared = _declared_prefix(decl, data)
    if fast is not None:
        assert declared is not None and fast[1] == declared[1] and fast[0] == declared[0], (data.hex(), fast, declared)
        return True
    assert declared is None or _overlong_varint(data), (data.hex(), declared)
    return False


def test_every_metadata_layout_has_a_reader() -> None:
    for decl in common.metadata_layouts():
        assert reader(decl) is not None, decl
    # one object per type and version: what the readers are found by
    assert common.metadata_layout(it.PARTITION, 2) is common.metadata_layout(it.PARTITION, 2)


@pytest.mark.parametrize("seed", range(3))
def test_metadata_records_read_alike(seed: int) -> None:
    rng = random.Random(seed)
    values = corpus_metadata_values()
    assert len(values) > 5000
    read = set()
    for value in values if seed == 0 else rng.sample(values, 2000):
        for data in (value, *(mutate(value, rng) for _ in range(seed))):
            if check_prefix(it.MetadataFrame, data):
                read.add("frame")
            for decl, body in _metadata_pairs(data):
                if check(decl, body):
                    read.add(id(decl))
                for _ in range(seed):
                    check(decl, mutate(body, rng))
    # the corpus has records of most declared types, and tags: the readers read them
    assert len(read) >= 10, len(read)


def test_flags_and_varints_read_alike_for_every_byte() -> None:
    from construct import Flag, VarInt

    decl = Struct("flag" / Flag, "n" / VarInt)
    for b in range(256):
        for tail in (b"", b"\x00", b"\x7f", b"\x80\x01", b"\xff\xff\xff\xff\x0f", b"\x80"):
            check(decl, bytes([b]) + tail)
