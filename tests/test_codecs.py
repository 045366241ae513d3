"""Codecs: round trips, the framing declarations, decompression bombs, corrupt input, and Kafka's
own bytes from the corpus (legacy wrappers incl. the broken magic-0 lz4 checksum; v2 batches)."""

from __future__ import annotations

import base64
import random
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import cramjam
import lz4.block
import lz4.frame
import pytest
import zstandard

from kafkatool.codecs import CODEC_NAMES, GZIP, LZ4, NONE, SNAPPY, ZSTD, compress, decompress
from kafkatool.errors import DecompressionError, DecompressionLimitExceeded
from kafkatool.formats.codec_frames import (
    LZ4_FRAME,
    XERIAL_BLOCK,
    XERIAL_HEADER,
    XERIAL_MAGIC,
    lz4_block_max_size,
    lz4_header_checksum,
)
from tests.conftest import read_jsonl

CODECS = range(len(CODEC_NAMES))
COMPRESSED = (GZIP, SNAPPY, LZ4, ZSTD)
MiB, GiB = 1 << 20, 1 << 30
_rnd = random.Random(20241025)
PAYLOADS = {
    "empty": b"",
    "one": b"k",
    "small": bytes(_rnd.randrange(256) for _ in range(1000)),
    # > one block of every codec (snappy 32 KiB, lz4 64 KiB, zstd 128 KiB), half incompressible
    "multi-block": b"lorem ipsum dolor " * 10000 + _rnd.randbytes(150_000),
}


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("name", PAYLOADS)
@pytest.mark.parametrize("codec", CODECS, ids=CODEC_NAMES)
def test_round_trip_and_exact_limit(codec: int, name: str, legacy: bool) -> None:
    data = PAYLOADS[name]
    packed = compress(codec, data, legacy_lz4_checksum=legacy)
    assert packed == compress(codec, data, legacy_lz4_checksum=legacy)  # deterministic
    assert decompress(codec, packed, limit=len(data), legacy_lz4_checksum=legacy) == data
    assert decompress(codec, memoryview(packed), limit=len(data), legacy_lz4_checksum=legacy) == data
    if data:
        with pytest.raises(DecompressionLimitExceeded):
            decompress(codec, packed, limit=len(data) - 1, legacy_lz4_checksum=legacy)


# --- the Construct declarations ---------------------------------------------------------------


def test_xerial_stream_parses_and_rebuilds_identically() -> None:
    data = PAYLOADS["multi-block"]
    stream = compress(SNAPPY, data)
    header = XERIAL_HEADER.parse(stream)
    assert (header.version, header.min_compatible_version) == (1, 1)
    assert XERIAL_HEADER.build(header) == stream[:16]
    pos, blocks = 16, []
    while pos < len(stream):
        block = XERIAL_BLOCK.parse(stream[pos:])
        assert XERIAL_BLOCK.build(block) == stream[pos : pos + 4 + block.len_block]
        blocks.append(block)
        pos += 4 + block.len_block
    assert pos == len(stream)
    assert len(blocks) == -(-len(data) // (32 * 1024))  # snappy-java's 32 KiB blocks


def test_kafka_lz4_frame_parses_and_rebuilds_identically() -> None:
    frame = compress(LZ4, PAYLOADS["multi-block"])
    parsed = LZ4_FRAME.parse(frame)
    assert LZ4_FRAME.build(parsed) == frame
    descriptor = parsed.header.descriptor
    assert descriptor.data == b"\x60\x40"  # Kafka: version 1, independent blocks, 64 KiB, nothing else
    assert lz4_block_max_size(descriptor.value.bd.block_max_size) == 64 * 1024
    assert parsed.header.header_checksum == lz4_header_checksum(descriptor.data)
    *data_blocks, end_mark = parsed.blocks
    assert end_mark.size.length == 0 and len(data_blocks) == -(-len(PAYLOADS["multi-block"]) // 65536)
    assert all(0 < block.size.length <= 64 * 1024 for block in data_blocks)
    assert any(block.size.uncompressed for block in data_blocks)  # the random part is stored
    assert parsed.content_checksum is None


@pytest.mark.parametrize("checksums", [False, True])
@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
def test_lz4_optional_fields_and_header_checksum(checksums: bool, store_size: bool, block_size: int) -> None:
    frame = lz4.frame.compress(
        PAYLOADS["multi-block"],
        block_size=block_size,
        block_checksum=checksums,
        content_checksum=checksums,
        store_size=store_size,
    )
    parsed = LZ4_FRAME.parse(frame)
    assert LZ4_FRAME.build(parsed) == frame
    assert parsed.header.header_checksum == lz4_header_checksum(parsed.header.descriptor.data)
    assert (parsed.header.descriptor.value.content_size is not None) == store_size
    assert (parsed.content_checksum is not None) == checksums
    assert all((b.block_checksum is not None) == checksums for b in parsed.blocks[:-1])


def test_kafka_legacy_lz4_header_checksum_covers_the_magic() -> None:
    assert compress(LZ4, b"")[:7] == bytes.fromhex("04224d18604082")
    assert compress(LZ4, b"", legacy_lz4_checksum=True)[:7] == bytes.fromhex("04224d1860401a")
    assert lz4_header_checksum(bytes.fromhex("04224d186040")) == 0x1A


# --- decompression bombs ----------------------------------------------------------------------


def _zeros_gzip_members(total: int) -> bytes:
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = deflater.compress(bytes(4 * MiB)) + deflater.flush()
    return member * (total // (4 * MiB))  # concatenated members, as GZIPInputStream reads them


def _zeros_lz4_frame(total: int) -> bytes:
    block = lz4.block.compress(bytes(4 * MiB), store_size=False)
    flags = {"version": 1, "block_independence": True, "block_checksum": False}
    flags |= {"content_size": False, "content_checksum": False, "reserved": 0, "dict_id": False}
    descriptor = {"flg": flags, "bd": {"reserved_hi": 0, "block_max_size": 7, "reserved_lo": 0}}
    descriptor |= {"content_size": None, "dict_id": None}
    blocks = [{"size": {"uncompressed": False, "length": len(block)}, "data": block, "block_checksum": None}]
    end_mark = {"size": {"uncompressed": False, "length": 0}, "data": b"", "block_checksum": None}
    header = {"descriptor": {"value": descriptor}, "header_checksum": lz4_header_checksum(b"\x60\x70")}
    blocks = blocks * (total // (4 * MiB)) + [end_mark]
    return LZ4_FRAME.build({"header": header, "blocks": blocks, "content_checksum": None})


def _zeros_zstd_frames(total: int) -> bytes:
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    frame = b"".join(compressor.compress(bytes(4 * MiB)) for _ in range(32)) + compressor.flush()
    return frame * (total // (128 * MiB))  # frames without content size, back to back


def _snappy_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _lying_snappy_block(claimed: int) -> bytes:
    return _snappy_varint(claimed) + b"\x00\x00"  # claims `claimed` bytes; snappy-java would allocate them


BOMBS = {
    "gzip": (GZIP, lambda: _zeros_gzip_members(GiB)),
    "snappy-xerial-claims-1GiB": (
        SNAPPY,
        lambda: XERIAL_HEADER.build({"version": 1, "min_compatible_version": 1})
        + XERIAL_BLOCK.build({"len_block": 7, "block": _lying_snappy_block(GiB)}),
    ),
    "snappy-raw-claims-4GiB": (SNAPPY, lambda: _lying_snappy_block(4 * GiB - 1)),
    "snappy-many-blocks": (SNAPPY, lambda: compress(SNAPPY, bytes(4 * MiB))),
    "lz4": (LZ4, lambda: _zeros_lz4_frame(GiB)),
    "zstd": (ZSTD, lambda: _zeros_zstd_frames(GiB)),
}


@pytest.mark.parametrize("bomb", BOMBS)
def test_bomb_stops_at_the_limit_quickly_and_without_big_memory(bomb: str) -> None:
    codec, build = BOMBS[bomb]
    payload = build()
    assert len(payload) < 8 * MiB
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(DecompressionLimitExceeded, match="exceeds the limit of 1048576 bytes"):
            decompress(codec, payload, limit=MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 32 * MiB, f"peak {peak / MiB:.1f} MiB"


# --- corrupt input ----------------------------------------------------------------------------


def _mutations(base: bytes, rnd: random.Random, count: int):
    for _ in range(count):
        kind, data = rnd.randrange(5), bytearray(base)
        if kind == 0:  # bit flips
            for _ in range(rnd.randrange(1, 4)):
                data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        elif kind == 1:  # truncation
            del data[rnd.randrange(len(data)) :]
        elif kind == 2:  # garbage over a random span
            at = rnd.randrange(len(data))
            data[at : at + rnd.randrange(1, 16)] = rnd.randbytes(rnd.randrange(1, 16))
        elif kind == 3:  # the frame's opening bytes, then garbage
            data = data[: rnd.randrange(1, 24)] + rnd.randbytes(rnd.randrange(64))
        else:  # random length words / headers: overwrite 4 bytes with an extreme value
            at = rnd.randrange(len(data))
            data[at : at + 4] = rnd.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
        yield bytes(data)


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("codec", COMPRESSED, ids=CODEC_NAMES[1:])
def test_fuzzed_payloads_only_raise_decompression_errors(codec: int, legacy: bool) -> None:
    rnd = random.Random(codec * 2 + legacy)
    base = compress(codec, PAYLOADS["multi-block"][:100_000], legacy_lz4_checksum=legacy)
    for payload in _mutations(base, rnd, 300):
        try:
            decompress(codec, payload, limit=4 * MiB, legacy_lz4_checksum=legacy)
        except DecompressionError:
            pass  # includes DecompressionLimitExceeded; anything else fails the test


@pytest.mark.parametrize("codec", COMPRESSED, ids=CODEC_NAMES[1:])
def test_empty_and_cut_payloads_are_errors(codec: int) -> None:
    with pytest.raises(DecompressionError, match=f"{CODEC_NAMES[codec]}: empty payload"):
        decompress(codec, b"", limit=MiB)
    packed = compress(codec, PAYLOADS["multi-block"])
    cut = 40 if codec == SNAPPY else len(packed) - 3  # snappy: inside the first block
    with pytest.raises(DecompressionError):
        decompress(codec, packed[:cut], limit=MiB)


def test_unknown_codec_and_none_limit() -> None:
    with pytest.raises(DecompressionError, match="unknown compression codec id 5"):
        decompress(5, b"abc", limit=10)
    assert decompress(NONE, b"abc", limit=3) == b"abc"
    with pytest.raises(DecompressionLimitExceeded):
        decompress(NONE, b"abc", limit=2)


def test_lz4_rules_of_kafkas_reader() -> None:
    linked = lz4.frame.compress(PAYLOADS["multi-block"], block_linked=True)
    with pytest.raises(DecompressionError, match="dependent block stream"):
        decompress(LZ4, linked, limit=MiB)
    legacy = compress(LZ4, b"payload", legacy_lz4_checksum=True)
    with pytest.raises(DecompressionError, match="descriptor checksum mismatch"):
        decompress(LZ4, legacy, limit=MiB)  # magic >= 1: the HC is checked
    garbage_hc = legacy[:6] + b"\x00" + legacy[7:]
    assert decompress(LZ4, garbage_hc, limit=MiB, legacy_lz4_checksum=True) == b"payload"  # v0: skipped
    assert decompress(LZ4, compress(LZ4, b"payload") + b"trailing", limit=MiB) == b"payload"


def test_gzip_members_and_trailing_bytes_like_gzipinputstream() -> None:
    two = compress(GZIP, b"first,") + compress(GZIP, b"second")
    assert decompress(GZIP, two, limit=MiB) == b"first,second"
    assert decompress(GZIP, two + b"\x00junk", limit=MiB) == b"first,second"
    with pytest.raises(DecompressionError, match="truncated"):
        decompress(GZIP, two[:-3], limit=MiB)


def test_snappy_raw_block_and_concatenated_streams_like_snappyinputstream() -> None:
    raw = bytes(cramjam.snappy.compress_raw(b"not framed"))
    assert decompress(SNAPPY, raw, limit=MiB) == b"not framed"
    two = compress(SNAPPY, b"first,") + compress(SNAPPY, b"second")
    assert decompress(SNAPPY, two, limit=MiB) == b"first,second"
    assert decompress(SNAPPY, two + b"\x00\x00\x00", limit=MiB) == b"first,second"  # < 4 bytes: the end
    assert decompress(SNAPPY, two + XERIAL_MAGIC[:4] + b"PPX\x00" + bytes(8), limit=MiB) == b"first,second"
    negative = XERIAL_HEADER.build({"version": 1, "min_compatible_version": 1}) + b"\xff\xff\xff\xfe"
    with pytest.raises(DecompressionError, match="non-negative"):
        decompress(SNAPPY, negative, limit=MiB)


def test_zstd_frames_back_to_back_and_cut_frames() -> None:
    two = compress(ZSTD, b"first,") + compress(ZSTD, b"second")
    assert decompress(ZSTD, two, limit=MiB) == b"first,second"
    with pytest.raises(DecompressionError, match="truncated"):
        decompress(ZSTD, two[:-2], limit=MiB)  # zstandard's stream reader alone would not notice
    with pytest.raises(DecompressionError):
        decompress(ZSTD, two + b"junk", limit=MiB)


# --- Kafka's own bytes ------------------------------------------------------------------------


def _legacy_entries(log: bytes):
    """(magic, attributes, key, value) of each v0/v1 log entry: offset int64, size int32, message."""
    pos = 0
    while pos < len(log):
        _offset, size = struct.unpack_from(">qi", log, pos)
        message = log[pos + 12 : pos + 12 + size]
        _crc, magic, attributes = struct.unpack_from(">IbB", message)
        at = 6 + (8 if magic == 1 else 0)  # magic 1 has an int64 timestamp
        fields = []
        for _ in ("key", "value"):
            (length,) = struct.unpack_from(">i", message, at)
            fields.append(None if length < 0 else message[at + 4 : at + 4 + length])
            at += 4 + max(length, 0)
        yield magic, attributes, *fields
        pos += 12 + size


def _b64(raw: bytes | None) -> str | None:
    return None if raw is None else base64.b64encode(raw).decode()


LEGACY = [f"magic{magic}-{codec}-0" for magic in (0, 1) for codec in ("gzip", "snappy", "lz4")]


@pytest.mark.parametrize("case", LEGACY)
def test_kafka_legacy_wrappers_decode_and_recompress_identically(corpus: Path, case: str) -> None:
    rel = Path("kafka/legacy", case, "00000000000000000000.log")
    golden = [line for line in read_jsonl(corpus / "expected" / f"{rel}.jsonl") if line["type"] == "record"]
    inner_records = []
    for magic, attributes, _key, value in _legacy_entries((corpus / rel).read_bytes()):
        codec, legacy = attributes & 7, magic == 0
        assert CODEC_NAMES[codec] == case.split("-")[1]
        inner = decompress(codec, value, limit=MiB, legacy_lz4_checksum=legacy)
        inner_records += [(key, val) for _m, _a, key, val in _legacy_entries(inner)]
        assert compress(codec, inner, legacy_lz4_checksum=legacy) == value  # the whole frame
        if codec == LZ4:
            assert value[:7] == bytes.fromhex("04224d1860401a" if legacy else "04224d18604082")
            if legacy:
                with pytest.raises(DecompressionError, match="checksum mismatch"):
                    decompress(codec, value, limit=MiB)
    assert [(_b64(k), _b64(v)) for k, v in inner_records] == [(r["key"], r["value"]) for r in golden]


def test_kafka_v2_batches_recompress_identically(corpus: Path) -> None:
    """Every compressed v2 batch Kafka wrote in kafka/logdir: decompress, compress, same bytes."""
    seen = set()
    for log in sorted((corpus / "kafka" / "logdir").rglob("*.log")):
        data, pos = log.read_bytes(), 0
        while pos + 12 <= len(data):
            (size,) = struct.unpack_from(">i", data, pos + 8)
            magic, (attributes,) = data[pos + 16], struct.unpack_from(">h", data, pos + 21)
            codec = attributes & 7
            if magic == 2 and codec != NONE:
                records = data[pos + 61 : pos + 12 + size]
                assert compress(codec, decompress(codec, records, limit=MiB)) == records, (log, pos)
                seen.add(codec)
            pos += 12 + size
    assert seen == set(COMPRESSED)
