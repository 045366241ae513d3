"""Framings Kafka wraps around compressed record payloads (snappy and lz4).

The compressed bytes of a record batch (v2: everything after the 61-byte batch header; v0/v1: the
value of the wrapper message) are one codec stream. gzip and zstd streams are self-describing and
are left to ``zlib`` / ``zstandard``; snappy and lz4 come in a framing of their own, declared here.
Codec ids and the stream classes Kafka wraps around them are in
``clients/src/main/java/org/apache/kafka/common/compress/{GzipCompression,SnappyCompression,
Lz4Compression,ZstdCompression}.java`` (before 3.8: ``common/record/CompressionType.java``).

**snappy** -- Kafka writes ``org.xerial.snappy.SnappyOutputStream`` (snappy-java, default block size
32 KiB) and reads with ``SnappyInputStream``. Layout (snappy-java ``SnappyCodec`` / ``SnappyOutputStream``)::

    header  magic "\\x82SNAPPY\\x00" (8) | version int32 BE (=1) | min compatible version int32 BE (=1)
    block*  len_block int32 BE | raw snappy block (len_block bytes; starts with a varint of its
            uncompressed length, snappy format_description.txt)

``SnappyInputStream`` rules the reader follows: a stream that does not start with the 8 magic bytes
(or is shorter than the 16-byte header) is one raw snappy block; a block length equal to the first
four magic bytes (0x82534E41) starts a concatenated stream's header; fewer than 4 bytes left end
the stream; a negative length is an error.

**lz4** -- Kafka writes its own partial implementation of the LZ4 frame format v1.5.1
(``compress/Lz4BlockOutputStream.java``, before 3.8 ``KafkaLZ4BlockOutputStream``) and reads with
``Lz4BlockInputStream``. Layout (lz4 ``doc/lz4_Frame_format.md``)::

    magic 0x184D2204 uint32 LE
    descriptor  FLG | BD | [content size uint64 LE] | [dict id uint32 LE]
    HC          (xxh32(descriptor, seed 0) >> 8) & 0xFF
    block*      uint32 LE (bit 31 = stored uncompressed, bits 0-30 = length) | data | [xxh32 uint32 LE]
    end mark    uint32 0
    [content checksum xxh32 uint32 LE]

Kafka writes FLG 0x60 (version 1, independent blocks, nothing else), BD 0x40 (64 KiB blocks), no
content size, no checksums. For message format v0 it writes a *wrong* HC, hashed over the magic
bytes too (``useBrokenFlagDescriptorChecksum``), and for v0 its reader skips the HC unchecked.
"""

from __future__ import annotations

from construct import (
    BitsInteger,
    BitStruct,
    Bytes,
    ByteSwapped,
    Const,
    Flag,
    If,
    Int8ub,
    Int32sb,
    Int32ul,
    Int64ul,
    RawCopy,
    RepeatUntil,
    Struct,
    obj_,
    this,
)

# --- snappy: xerial snappy-java stream ---------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"

XERIAL_HEADER = Struct(
    "magic" / Const(XERIAL_MAGIC),
    "version" / Int32sb,  # snappy-java writes 1 (SnappyCodec.DEFAULT_VERSION)
    "min_compatible_version" / Int32sb,  # writes 1; 1.1.10 checks neither field of a first header
)

XERIAL_BLOCK = Struct(
    "len_block" / Int32sb,  # negative is an error (snappy-java: INVALID_CHUNK_SIZE)
    "block" / Bytes(this.len_block),  # raw snappy block, bounded by its declared length
)

# --- lz4: frame format ---------------------------------------------------------------------------

LZ4_MAGIC = 0x184D2204

LZ4_FLG = BitStruct(  # most significant bit first, as the spec draws it
    "version" / BitsInteger(2),  # must be 1
    "block_independence" / Flag,  # Kafka only supports independent blocks
    "block_checksum" / Flag,
    "content_size" / Flag,
    "content_checksum" / Flag,
    "reserved" / BitsInteger(1),
    "dict_id" / Flag,  # Kafka's FLG (spec v1.5.1) counts this bit as reserved: must be 0
)

LZ4_BD = BitStruct(
    "reserved_hi" / BitsInteger(1),
    "block_max_size" / BitsInteger(3),  # 4..7 = 64 KiB, 256 KiB, 1 MiB, 4 MiB: 1 << (2 * n + 8)
    "reserved_lo" / BitsInteger(4),
)

LZ4_FRAME_DESCRIPTOR = Struct(
    "flg" / LZ4_FLG,
    "bd" / LZ4_BD,
    "content_size" / If(this.flg.content_size, Int64ul),  # Kafka's reader skips it unchecked
    "dict_id" / If(this.flg.dict_id, Int32ul),
)

LZ4_FRAME_HEADER = Struct(
    "magic" / Const(LZ4_MAGIC, Int32ul),
    "descriptor" / RawCopy(LZ4_FRAME_DESCRIPTOR),  # raw bytes kept: HC is computed over them
    "header_checksum" / Int8ub,
)

LZ4_BLOCK_SIZE = ByteSwapped(  # uint32 LE whose top bit is a flag
    BitStruct("uncompressed" / Flag, "length" / BitsInteger(31))
)

LZ4_DATA_BLOCK = Struct(  # parsed inside LZ4_FRAME (reads the flags of the enclosing header)
    "size" / LZ4_BLOCK_SIZE,  # length 0 = end mark
    "data" / Bytes(this.size.length),
    "block_checksum" / If(  # not after the end mark
        (this.size.length > 0) & this._.header.descriptor.value.flg.block_checksum, Int32ul
    ),
)

LZ4_FRAME = Struct(
    "header" / LZ4_FRAME_HEADER,
    "blocks" / RepeatUntil(obj_.size.length == 0, LZ4_DATA_BLOCK),
    "content_checksum" / If(this.header.descriptor.value.flg.content_checksum, Int32ul),
)


def lz4_block_max_size(block_max_size: int) -> int:
    """Bytes a block may hold for a BD ``block_max_size`` code (4..7)."""
    return 1 << (2 * block_max_size + 8)


_M32 = 0xFFFFFFFF
_PRIME1, _PRIME2, _PRIME3, _PRIME4, _PRIME5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _M32


def lz4_header_checksum(covered: bytes) -> int:
    """HC byte: second byte of xxh32(covered, seed 0) (lz4 frame format, "Header Checksum").

    ``covered`` is the descriptor (FLG..dict id, 2-14 bytes); Kafka's broken v0 HC covers the 4
    magic bytes as well (6 bytes). xxHash spec (``doc/xxhash_spec.md``), short-input path only:
    descriptors are always below the 16 bytes where xxh32 switches to its striped loop.
    """
    if len(covered) >= 16:
        raise ValueError("lz4 descriptors are shorter than 16 bytes")
    acc = (_PRIME5 + len(covered)) & _M32
    end4 = len(covered) - len(covered) % 4
    for i in range(0, end4, 4):
        lane = int.from_bytes(covered[i : i + 4], "little")
        acc = _rotl32((acc + lane * _PRIME3) & _M32, 17) * _PRIME4 & _M32
    for byte in covered[end4:]:
        acc = _rotl32((acc + byte * _PRIME5) & _M32, 11) * _PRIME1 & _M32
    acc = (acc ^ (acc >> 15)) * _PRIME2 & _M32
    acc = (acc ^ (acc >> 13)) * _PRIME3 & _M32
    acc ^= acc >> 16
    return (acc >> 8) & 0xFF
