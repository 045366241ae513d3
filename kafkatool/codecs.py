"""Kafka's compression codecs: bounded decompression and producer-identical compression.

A codec id is the low three bits of a batch's (v2) or wrapper message's (v0/v1) attributes.
``decompress`` never holds more than about ``limit`` bytes of output (plus one library call's chunk
of at most 1 MiB, or one snappy block): a decompression bomb raises
:class:`~kafkatool.errors.DecompressionLimitExceeded` as soon as the output would pass the limit, and
every other failure is a :class:`~kafkatool.errors.DecompressionError` with a one-line reason.

Reader behaviour follows Kafka's (``clients/.../common/compress/*Compression.java``):

- gzip: ``java.util.zip.GZIPInputStream``: gzip wrapper only, CRC32 and ISIZE checked, concatenated
  members read; bytes after a member that do not start another member are ignored.
- snappy: snappy-java ``SnappyInputStream``: xerial framing (``formats/codec_frames.py``), or one raw
  snappy block when the payload does not start with the xerial magic; concatenated streams read.
- lz4: ``Lz4BlockInputStream``: version 1, independent blocks, no dictionary; the header checksum is
  checked except for message format v0 (``legacy_lz4_checksum``), whose HC Kafka wrote wrong and
  skips; block and content checksums checked; bytes after the end mark ignored.
- zstd: zstd-jni ``ZstdInputStreamNoFinalizer``: frames read back to back, a cut-off frame is an error.

This module is the reference and the fallback: the native core (``native/src/codecs.rs``, through
``records.decompress_payload``) decompresses the payloads it can in one bounded pass, with the same
decoding libraries underneath, and hands every other one (damage, a bomb, a shape Kafka never writes)
back here, so every ``DecompressionError`` and its wording comes from this module.

``compress`` writes what Kafka's producer writes, byte for byte on the corpus: gzip as
``GZIPOutputStream`` (default level, header with mtime 0 and OS 255), snappy as
``SnappyOutputStream`` (32 KiB blocks), lz4 as ``Lz4BlockOutputStream`` (64 KiB independent blocks,
no content size, no checksums; broken HC for v0), zstd as ``ZstdOutputStreamNoFinalizer`` level 3
behind a flushed ``BufferedOutputStream`` (no content size, no checksum, empty last block).
"""

from __future__ import annotations

import functools
import io
import struct
import zlib

import construct
import cramjam
import lz4.frame
import zstandard

from kafkatool.errors import DecompressionError, DecompressionLimitExceeded
from kafkatool.formats.codec_frames import (
    LZ4_FRAME_HEADER,
    XERIAL_BLOCK,
    XERIAL_HEADER,
    XERIAL_MAGIC,
    lz4_header_checksum,
)

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(len(CODEC_NAMES))

_CHUNK = 1 << 20  # most output asked of a library per call: the budget is checked this often
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # GZIPOutputStream: no flags, mtime 0, OS 255
_GZIP_MEMBER = _GZIP_HEADER[:3]  # magic + CM 8: what GZIPInputStream needs to read another member
_SNAPPY_BLOCK_SIZE = 32 * 1024  # snappy-java SnappyOutputStream.DEFAULT_BLOCK_SIZE
_XERIAL_HEADER_LEN = XERIAL_HEADER.sizeof()


class _Sink:
    """Output buffer that refuses to grow past ``limit``. Held once: a first chunk of ``bytes`` is kept as it is (one
    zstd frame is the whole output) and later ones go to an ``io.BytesIO``, whose ``getvalue`` hands its buffer over
    without a copy (``bytes(bytearray)`` held a bomb's output twice)."""

    def __init__(self, name: str, limit: int) -> None:
        self.name, self.limit, self.size = name, limit, 0
        self.out: bytes | io.BytesIO = b""

    def room(self) -> int:
        """How much to ask for next: one byte past the limit is enough to notice a bomb."""
        return min(_CHUNK, self.limit - self.size + 1)

    def reserve(self, size: int) -> None:
        if self.size + size > self.limit:
            raise DecompressionLimitExceeded(f"{self.name}: output exceeds the limit of {self.limit} bytes")

    def add(self, chunk: bytes | bytearray | memoryview) -> None:
        self.reserve(len(chunk))
        if not self.size:
            self.out = chunk if chunk.__class__ is bytes else bytes(chunk)
        else:
            if self.out.__class__ is bytes:
                self.out = io.BytesIO(self.out)  # type: ignore[arg-type]
                self.out.seek(0, io.SEEK_END)
            self.out.write(chunk)  # type: ignore[union-attr]
        self.size += len(chunk)

    def value(self) -> bytes:
        return self.out if self.out.__class__ is bytes else self.out.getvalue()  # type: ignore[union-attr,return-value]


def decompress(
    codec: int, data: bytes | memoryview, *, limit: int, legacy_lz4_checksum: bool = False
) -> bytes:
    """Decompress one Kafka payload of codec ``codec`` (0..4), refusing output beyond ``limit`` bytes.

    ``legacy_lz4_checksum``: the payload is from a message format v0 (magic 0) wrapper, whose lz4
    header checksum is not checked (Kafka wrote it wrong and its reader skips it).
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if not 0 <= codec < len(CODEC_NAMES):
        raise DecompressionError(f"unknown compression codec id {codec}")
    name = CODEC_NAMES[codec]
    sink = _Sink(name, limit)
    if codec == NONE:
        sink.add(data)
        return sink.value()
    if not data:
        raise DecompressionError(f"{name}: empty payload")
    try:
        if codec == GZIP:
            _gunzip(bytes(data), sink)
        elif codec == SNAPPY:
            _unsnappy(bytes(data), sink)
        elif codec == LZ4:
            _unlz4(bytes(data), sink, legacy_lz4_checksum)
        else:
            _unzstd(bytes(data), sink)
    except construct.ConstructError as exc:
        raise DecompressionError(f"{name}: bad framing: {_reason(exc)}") from exc
    except (zlib.error, cramjam.DecompressionError, zstandard.ZstdError) as exc:
        raise DecompressionError(f"{name}: {_reason(exc).removeprefix(f'{name}: ')}") from exc
    return sink.value()


def _reason(exc: Exception) -> str:
    """Last line of a library's message (construct puts the field path first)."""
    lines = str(exc).strip().splitlines()
    return lines[-1].strip() if lines else type(exc).__name__


def _gunzip(data: bytes, sink: _Sink) -> None:
    rest = data
    while True:
        member = zlib.decompressobj(wbits=31)  # gzip wrapper only, as GZIPInputStream
        pending = rest
        while not member.eof:
            chunk = member.decompress(pending, sink.room())
            pending = member.unconsumed_tail
            if not chunk and not pending and not member.eof:
                raise DecompressionError("gzip: stream truncated")
            sink.add(chunk)
        rest = member.unused_data
        if not rest.startswith(_GZIP_MEMBER):
            return  # GZIPInputStream ignores whatever follows that is not another member


def _unsnappy(data: bytes, sink: _Sink) -> None:
    if len(data) < _XERIAL_HEADER_LEN or not data.startswith(XERIAL_MAGIC):
        _snappy_block(data, sink)  # SnappyInputStream: not xerial-framed, so one raw block
        return
    stream = io.BytesIO(data)
    XERIAL_HEADER.parse_stream(stream)
    while len(data) - (pos := stream.tell()) >= 4:  # SnappyInputStream stops at fewer than 4 bytes
        if data.startswith(XERIAL_MAGIC[:4], pos):  # length word 0x82534E41: a concatenated stream
            if len(data) - pos < _XERIAL_HEADER_LEN:
                raise DecompressionError("snappy: concatenated stream header truncated")
            if not data.startswith(XERIAL_MAGIC, pos):
                return  # snappy-java: not a valid header, so the end of the data
            XERIAL_HEADER.parse_stream(stream)
            continue
        block = XERIAL_BLOCK.parse_stream(stream)
        _snappy_block(block.block, sink)


def _snappy_block(block: bytes, sink: _Sink) -> None:
    sink.reserve(cramjam.snappy.decompress_raw_len(block))  # varint preamble, before allocating
    sink.add(memoryview(cramjam.snappy.decompress_raw(block)))


def _unlz4(data: bytes, sink: _Sink, legacy: bool) -> None:
    flg = data[4] if len(data) > 4 else 0  # content size (bit 3) and dict id (bit 0) lengthen the header
    hc_offset, expected_hc, found_hc = _lz4_header(data[: 6 + 8 * (flg >> 3 & 1) + 4 * (flg & 1) + 1])
    if legacy:  # Kafka skips the (wrongly computed) v0 HC; the library checks it, so set it right
        data = data[:hc_offset] + bytes([expected_hc]) + data[hc_offset + 1 :]
    elif found_hc != expected_hc:
        raise DecompressionError("lz4: frame descriptor checksum mismatch")
    decoder = lz4.frame.LZ4FrameDecompressor()
    pending = data
    while not decoder.eof:
        try:
            chunk = decoder.decompress(pending, max_length=sink.room())
        except RuntimeError as exc:  # python-lz4 reports every LZ4F error this way
            raise DecompressionError(f"lz4: {_reason(exc)}") from exc
        pending = b""
        if not chunk and not decoder.eof:
            raise DecompressionError("lz4: frame truncated")
        sink.add(chunk)


@functools.lru_cache(maxsize=64)  # a producer repeats one header: parse it once
def _lz4_header(header: bytes) -> tuple[int, int, int]:
    """Kafka's checks of an lz4 frame header (Lz4BlockInputStream.readHeader, FLG/BD validate()).

    Returns the HC's offset, the HC the descriptor should have, and the HC found.
    """
    try:
        parsed = LZ4_FRAME_HEADER.parse(header)
    except construct.ConstError as exc:
        raise DecompressionError("lz4: invalid magic bytes") from exc
    flg, bd = parsed.descriptor.value.flg, parsed.descriptor.value.bd
    if flg.version != 1:
        raise DecompressionError(f"lz4: frame version {flg.version} is unsupported")
    if flg.reserved or flg.dict_id or bd.reserved_hi or bd.reserved_lo:
        raise DecompressionError("lz4: reserved frame descriptor bits are set")
    if not flg.block_independence:
        raise DecompressionError("lz4: dependent block stream is unsupported")
    if bd.block_max_size < 4:
        raise DecompressionError(f"lz4: block size code {bd.block_max_size} is not between 4 and 7")
    return parsed.descriptor.offset2, lz4_header_checksum(parsed.descriptor.data), parsed.header_checksum


def _unzstd(data: bytes, sink: _Sink) -> None:
    dctx = zstandard.ZstdDecompressor()
    # Pass 1 bounds the output, keeping only its length: the streaming reader stops at the limit
    # but cannot tell a frame cut short from a complete one.
    reader = dctx.stream_reader(data, read_across_frames=True)
    produced = 0
    while chunk := reader.read(_CHUNK):
        produced += len(chunk)
        sink.reserve(produced)
    # Pass 2, now known to fit: frame by frame, each of which must end.
    rest = data
    while rest:
        frame = dctx.decompressobj()
        sink.add(frame.decompress(rest))
        if not frame.eof:
            raise DecompressionError("zstd: frame truncated")
        rest = frame.unused_data


def compress(codec: int, data: bytes, *, legacy_lz4_checksum: bool = False) -> bytes:
    """Compress ``data`` exactly as Kafka's producer does for codec ``codec`` (deterministic).

    ``legacy_lz4_checksum``: write Kafka's broken message format v0 lz4 header checksum.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        deflater = zlib.compressobj(6, zlib.DEFLATED, -15, 8)  # Deflater.DEFAULT_COMPRESSION, nowrap
        body = deflater.compress(data) + deflater.flush()
        return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if codec == SNAPPY:
        parts = [XERIAL_HEADER.build({"version": 1, "min_compatible_version": 1})]
        for start in range(0, len(data), _SNAPPY_BLOCK_SIZE):
            raw = bytes(cramjam.snappy.compress_raw(data[start : start + _SNAPPY_BLOCK_SIZE]))
            parts.append(XERIAL_BLOCK.build({"len_block": len(raw), "block": raw}))
        return b"".join(parts)
    if codec == LZ4:
        frame = lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
        if legacy_lz4_checksum:  # Kafka v0: HC over magic + descriptor (FLG, BD: 6 bytes)
            frame = frame[:6] + bytes([lz4_header_checksum(frame[:6])]) + frame[7:]
        return frame
    if codec == ZSTD:
        compressor = zstandard.ZstdCompressor(level=3).compressobj()  # zstd-jni default level
        return (
            compressor.compress(data)
            + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)  # BufferedOutputStream.flush()
            + compressor.flush()  # close(): an empty last block
        )
    raise ValueError(f"unknown compression codec id {codec}")
