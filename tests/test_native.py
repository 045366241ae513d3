"""The native core (``kafkatool._native``) against the pure-Python reader: identical on every input.

``kafkatool.native.CORE`` picks the reader; :func:`kafkatool.native.using` switches it for one block,
so both read the same bytes in one process. "Identical" is compared through ``repr``: the same
batches, records, runs, findings and trailing bytes, in the same order, field types included (a
``True`` is not a ``1``). The reference for the framing is Kafka's ``FileLogInputStream.nextBatch``
and ``DefaultRecordBatch``/``DefaultRecord`` (``readFrom``, ``ByteUtils.readVarint/readVarlong``);
the pure reader follows them and is held to the Construct declarations by ``test_records_formats.py``.

The extension must be built in CI (``CI=true``): there a missing extension fails instead of skipping.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from crc32c import crc32c

from kafkatool import native
from kafkatool.build import RecordSpec, end_transaction_marker, legacy_entry, record_batch
from kafkatool.codecs import CODEC_NAMES, GZIP, LZ4, SNAPPY, ZSTD, compress
from kafkatool.errors import DecompressionError
from kafkatool.formats.codec_frames import lz4_header_checksum
from kafkatool.loader import PartitionLoad, Rebuild, load_partition
from kafkatool.log_check import CheckOptions, SegmentTask
from kafkatool.records import RawBatch, ScanOptions, _resync_window, decode_records, decompress_payload, resync, scan
from kafkatool.segment_check import check_segment

from .conftest import CORE, PROJECT_ROOT, load_essence


def read_all(data: bytes, options: ScanOptions, *, start: int = 0, end: int | None = None,
             modes: str = "rbc") -> list:
    """What ``scan`` yields in its modes (``r``: with_raw, and ``decode_records`` of every batch; ``b``:
    batches; ``c``: columnar), in one list."""
    out = []
    if "r" in modes:
        for item in scan(io.BytesIO(data), "seg.log", start=start, end=end, with_raw=True, options=options):
            out.append(item)
            if item.__class__ is RawBatch:
                out.append(decode_records(item.batch, item.raw, "seg.log", options))
    if "b" in modes:
        out.append(list(scan(io.BytesIO(data), "seg.log", start=start, end=end, options=options)))
    if "c" in modes:
        out.append(list(scan(io.BytesIO(data), "seg.log", start=start, end=end, columnar=True, options=options)))
    return out


def both(core, data: bytes, options: ScanOptions, exact: bool = True, **kw) -> tuple:
    """(pure, native) results of ``read_all``: as ``repr``s with ``exact`` (every field's type compared
    too), else as lists with the class of every item (cheaper: for the 10^5 mutations)."""
    with native.using(None):
        pure = read_all(data, options, **kw)
    with native.using(core):
        fast = read_all(data, options, **kw)
    if exact:
        return repr(pure), repr(fast)
    return (pure, [x.__class__ for x in pure]), (fast, [x.__class__ for x in fast])


def record_files() -> list[Path]:
    corpus = Path(os.environ.get("KAFKATOOL_CORPUS", PROJECT_ROOT.parent / "shared" / "corpus"))
    files = [p for p in sorted(corpus.rglob("*")) if p.is_file() and ".log" in p.name and "expected" not in p.parts]
    return files + sorted((PROJECT_ROOT / "fixtures").rglob("*.log"))


def test_every_corpus_and_fixture_record_file_reads_the_same(core) -> None:
    """Every ``*.log`` (leftovers ``.log.deleted``/``.cleaned``/``.swap`` too) of the corpus and of
    ``fixtures/``: identical batches, records, runs and findings, at the default window and at a window
    small enough that batches straddle refills, and for a byte-range split in the middle."""
    files = record_files()
    assert len(files) > 100, f"only {len(files)} record files found: is KAFKATOOL_CORPUS right?"
    differ = []
    for path in files:
        data = path.read_bytes()
        for options in (ScanOptions(), ScanOptions(window=97)):
            pure, fast = both(core, data, options)
            if pure != fast:
                differ.append(f"{path} (window {options.window})")
        with native.using(None):
            positions = [b.position for b in scan(io.BytesIO(data), "seg.log") if hasattr(b, "base_offset")]
        if len(positions) > 2:
            middle = positions[len(positions) // 2]
            for start, end in ((0, middle), (middle, None)):
                pure, fast = both(core, data, ScanOptions(), start=start, end=end)
                if pure != fast:
                    differ.append(f"{path} [{start}, {end})")
    assert not differ, f"native and pure differ on {len(differ)} files: {differ[:10]}"


# -- mutated inputs ----------------------------------------------------------------------------------

MUTATIONS_PER_RUN = 100_000


def seeds() -> list[bytes]:
    """Small segments, built with the project's own writer, covering what the readers branch on."""
    ts = 1_700_000_000_000
    plain = [RecordSpec(b"k1", b"v" * 20, ts, (("h", b"x"), ("null", None))), RecordSpec(None, b"", ts + 5),
             RecordSpec(b"", None, ts - 3, (("", b""),))]
    many = [RecordSpec(f"key-{i}".encode(), bytes(range(i % 50)), ts + 200 * i) for i in range(12)]
    return [
        record_batch(0, plain, partition_leader_epoch=3) + record_batch(3, many[:2]) + record_batch(5, plain[:1]),
        record_batch(10, many, producer_id=42, producer_epoch=1, base_sequence=7, transactional=True)
        + end_transaction_marker(22, True, producer_id=42, producer_epoch=1, coordinator_epoch=5, timestamp=ts),
        record_batch(100, plain, log_append_time=ts + 9) + record_batch(103, many[:3], delete_horizon_ms=ts),
        record_batch(0, many, compression="gzip") + record_batch(12, plain, compression="zstd"),
        record_batch(0, plain, compression="lz4") + record_batch(3, many[:4], compression="snappy"),
        legacy_entry(0, plain[:1], magic=1) + legacy_entry(3, plain, magic=0, compression="gzip")
        + record_batch(4, plain),
        record_batch(2**62, many[:2]) + record_batch(7, [RecordSpec(b"a", b"b", -1)]),
    ]


def _varint(value: int) -> bytes:
    u = (value << 1) ^ (value >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_EDGE_INT32 = (0, 1, -1, 13, 14, 48, 49, 60, 61, 2**31 - 1, -(2**31), 2**20, 2**28)


def mutate(data: bytes, rng: random.Random, case: int) -> bytes:
    """One mutation of ``data``: bit flips, truncation, an absurd length (entry, record, count), an
    overlong or endless varint, a zero tail, or a header field set to an edge value."""
    b = bytearray(data)
    n = len(b)
    entries = []  # positions of the entries (whole ones) in the seed
    p = 0
    while p + 12 <= n:
        entries.append(p)
        p += 12 + struct.unpack_from(">i", b, p + 8)[0]
    at = rng.choice(entries)
    kind = case % 7
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        del b[rng.randrange(n):]
    elif kind == 2:  # an entry's batch length
        length = rng.choice(_EDGE_INT32) if rng.random() < 0.7 else rng.randrange(-(2**31), 2**31)
        struct.pack_into(">i", b, at + 8, length)
    elif kind == 3:  # a record-level length or count: record length, key/value length, header count
        i = min(at + 61 + rng.randrange(8), n)
        b[i:i + 1] = _varint(rng.choice((-2, -1, 0, 1, 2**31 - 1, 2**34, -(2**34), rng.randrange(-300, 300))))
    elif kind == 4:  # an overlong or endless varint inside a records section
        i = min(at + 61 + rng.randrange(12), n)
        b[i:i] = b"\x80" * rng.randint(1, 11) if rng.random() < 0.5 else b"\xff" * rng.randint(4, 11)
    elif kind == 5:  # a zero tail (preallocated or crash-left)
        cut = rng.randrange(n)
        b[cut:] = bytes(n - cut + rng.choice((0, 0, 7, 64)))
    else:  # a header field at an edge value: base offset, epoch, magic, attributes, last delta, count
        field = rng.choice(((0, ">q"), (12, ">i"), (16, ">b"), (21, ">h"), (23, ">i"), (57, ">i")))
        off, fmt = field
        if at + off + struct.calcsize(fmt) <= n:
            edges = {">q": (2**63 - 1, -(2**63), 2**63 - 2), ">b": (0, 1, 2, 3, -1), ">h": tuple(range(-1, 128))}
            struct.pack_into(fmt, b, at + off, rng.choice(edges.get(fmt, _EDGE_INT32)))
    if rng.random() < 0.5 and at + 61 <= len(b):  # a correct CRC, so the damage is only what the fields say
        end = min(len(b), at + 12 + max(0, struct.unpack_from(">i", b, at + 8)[0]))
        if end > at + 21:
            struct.pack_into(">I", b, at + 17, crc32c(bytes(b[at + 21:end])))
    return bytes(b)


def test_mutated_inputs_read_the_same(core) -> None:
    """10^5 mutations of the seeds, generated from fixed seeds (so a failure names a reproducible case),
    read at windows small enough to split batches over refills: every one reads identically both ways."""
    seed_list = seeds()
    differ = []
    options = [ScanOptions(window=w, max_decompressed=1 << 16, max_batch=1 << 12) for w in (61, 200, 4096)]
    for case in range(MUTATIONS_PER_RUN):
        rng = random.Random(case)
        data = mutate(seed_list[case % len(seed_list)], rng, case // len(seed_list))
        pure, fast = both(core, data, options[case % 3], exact=False,
                          modes=("rb", "r", "rc", "r")[case % 4])
        if pure != fast:
            differ.append(case)
            if len(differ) >= 5:
                break
    assert not differ, f"native and pure differ on mutation cases {differ} (rebuild one with mutate(...))"


# -- resynchronising (records.resync: repair --salvage, the Spark source's cut points) --------------------------

def resync_reference(data: bytes, start: int) -> list[tuple[int, int]]:
    """What ``resync`` means, spelled out over the whole buffer: from ``start`` on, every position where a whole v2
    batch with a valid CRC begins (magic 2, at least 61 bytes, within the data), going on after each."""
    out, pos = [], start
    while pos + 61 <= len(data):
        total = struct.unpack_from(">i", data, pos + 8)[0] + 12
        if (data[pos + 16] == 2 and 61 <= total <= len(data) - pos
                and crc32c(data[pos + 21:pos + total]) == struct.unpack_from(">I", data, pos + 17)[0]):
            out.append((pos, total))
            pos += total
        else:
            pos += 1
    return out


def test_resync_finds_the_same_batches_both_ways_at_any_window(core) -> None:
    """Mutated seeds, some with garbage (full of magic bytes) put between their batches, from a random start to a
    random end: the native search and the pure one find exactly the reference's batches, at windows small enough
    that batches and headers straddle them."""
    seed_list = seeds()
    differ = []
    for case in range(3000):
        rng = random.Random(case)
        data = mutate(seed_list[case % len(seed_list)], rng, case // len(seed_list))
        if case % 3:
            at = rng.randrange(len(data) + 1)
            junk = bytes(2 if rng.random() < 0.2 else rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            data = data[:at] + junk + data[at:]
        start = rng.randrange(len(data) + 1) if case % 2 else 0
        end = rng.choice((None, start, start + 1, rng.randrange(len(data) + 2)))
        want = [hit for hit in resync_reference(data, start) if end is None or hit[0] < end]
        for window in (61, 97, 4096):
            for reader in (None, core):
                with native.using(reader):
                    got = list(resync(io.BytesIO(data), start, end, window=window))
                if got != want:
                    differ.append((case, window, reader is not None))
    assert not differ, f"resync differs from the reference: {differ[:5]} (case, window, native)"


def test_resync_window_is_the_native_search(core) -> None:
    """The pure twin and ``frame::resync`` on every start, bound and room of a buffer cut anywhere."""
    seed = seeds()[0] + bytes([2]) * 30 + seeds()[3]
    for cut in range(0, len(seed) + 1, 7):
        buf = seed[:cut]
        for start in range(0, cut + 2, 3):
            for until in (start, start + 1, cut, 1 << 40):
                for room in (0, 5, 1 << 40):
                    assert core.resync(buf, start, until, room) == _resync_window(buf, start, until, room), (
                        cut, start, until, room)


# -- control batches: the markers the native core reads for every reader ------------------------------

def control_batch(offset: int, key: bytes | None, value: bytes | None, *, producer_id: int = 42,
                  transactional: bool = True, records: int = 1, **kw) -> bytes:
    """A control batch of ``records`` records of this key and value (any bytes: a marker, a KRaft record, garbage)."""
    spec = RecordSpec(key, value, 1_700_000_000_000 + offset)
    return record_batch(offset, [spec] * records, producer_id=producer_id, producer_epoch=1,
                        transactional=transactional, control=True, **kw)


def emptied(batch: bytes) -> bytes:
    """``batch`` with its records section removed and a record count of 0 (the cleaner's emptied control batch)."""
    b = bytearray(batch[:61])
    struct.pack_into(">i", b, 8, 61 - 12)
    struct.pack_into(">i", b, 57, 0)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def control_seed() -> bytes:
    """Control batches of every shape the readers branch on, each after a transactional data batch: ABORT and COMMIT
    markers as the coordinator writes them, and with a longer key or value, log-append time or a header; KRaft's
    control records; a type Kafka does not define; a negative key version; a value too short or null; a key too
    short or null; a marker in a batch that is not transactional or has no producer id; two records; none
    (emptied); compressed."""
    commit, abort = b"\0\0\0\1", b"\0\0\0\0"
    value = b"\0\0\0\0\0\5"
    shapes = [
        dict(key=commit, value=value), dict(key=abort, value=value), dict(key=commit + b"\7\7", value=value + b"\1"),
        dict(key=abort, value=value, log_append_time=1_700_000_009_999), dict(key=b"\0\0\0\2", value=b"\0\0" * 9),
        dict(key=b"\0\0\0\5", value=b"\0\0\0\1\0"), dict(key=b"\0\0\0\x09", value=value),
        dict(key=b"\xff\xff\0\1", value=value), dict(key=commit, value=value[:5]), dict(key=abort, value=None),
        dict(key=b"\0\0\1", value=value), dict(key=None, value=value),
        dict(key=commit, value=value, transactional=False), dict(key=commit, value=value, producer_id=-1),
        dict(key=abort, value=value, records=2),
        dict(key=commit, value=value, compression="gzip"),
    ]
    out, offset = [], 0
    for shape in shapes:
        out.append(record_batch(offset, [RecordSpec(b"k", b"v", 1_700_000_000_000)], producer_id=42, producer_epoch=1,
                                base_sequence=offset, transactional=True))
        out.append(control_batch(offset + 1, **shape))
        offset += 2 + shape.get("records", 1) - 1
    out.append(emptied(control_batch(offset, commit, value)))
    out.append(control_batch(offset + 1, abort, value, partition_leader_epoch=1))
    return b"".join(out)


def test_the_event_bits_are_the_native_cores(core) -> None:
    from kafkatool import model

    names = ("FIRST", "BEGINS", "LAST_DATA", "CONTROL", "LAST")
    assert [getattr(model, f"EVENT_{n}") for n in names] == [getattr(core, f"EVENT_{n}") for n in names]


def marker_reads(core, data: bytes) -> tuple[list, list]:
    """For each control batch of the whole v2 batches ``data`` begins with: the end-transaction marker that
    ``stretch_markers`` finds natively, and the one :func:`decode_records` reads where it gives one without a finding
    (ABORT/COMMIT, one record, uncompressed, a transactional batch with a producer id); None where there is none."""
    from kafkatool.model import Marker, column_batch
    from kafkatool.records import stretch_markers

    native_reads, pure_reads = [], []
    p, stop = 0, 2
    while stop == 2:  # a bad CRC stops a walk after its batch; a stretch is never made of it, but it is read
        p, stop, columns = core.decode_window_columns(data, (p, 0, 1 << 62, 1 << 20), False)
        markers = stretch_markers(columns, 0, len(columns))
        for i in range(len(columns)):
            b = column_batch(columns, i)
            if not b.control:
                continue
            recs, problems = decode_records(b, data[b.position:b.position + b.size], "seg.log")
            plain = (not problems and len(recs) == 1 and b.record_count == 1 and b.compression == "none"
                     and recs[0].control_type in ("ABORT", "COMMIT") and b.producer_id >= 0 and b.transactional)
            pure_reads.append(Marker(recs[0].control_type, recs[0].coordinator_epoch, recs[0].timestamp) if plain
                              else None)
            native_reads.append(markers.get(i))
    return native_reads, pure_reads


def test_markers_read_natively_are_the_ones_decode_records_reads(core) -> None:
    """The end-transaction markers a stretch may hold (``records.stretch_markers``, from the record the native core
    reads of each control batch) are exactly those :func:`decode_records` reads without a finding, with the same type,
    coordinator epoch and timestamp: on the control batches of every shape (``control_seed``), on every corpus and
    fixture record file, and on 20,000 mutations of the control batches (bit flips, lengths, varints, header fields)."""
    native_reads, pure_reads = marker_reads(core, control_seed())
    assert native_reads == pure_reads
    assert sum(m is not None for m in pure_reads) == 5, "the seed's plain markers are not all read"
    markers = 0
    for path in record_files():
        native_reads, pure_reads = marker_reads(core, path.read_bytes())
        assert native_reads == pure_reads, path
        markers += sum(m is not None for m in pure_reads)
    assert markers > 100, f"only {markers} markers in the corpus: is KAFKATOOL_CORPUS right?"
    seed, differ, read = control_seed(), [], 0
    for case in range(20_000):
        data = mutate(seed, random.Random(f"control {case}"), case)
        native_reads, pure_reads = marker_reads(core, data)
        read += sum(m is not None for m in pure_reads)
        if native_reads != pure_reads:
            differ.append(case)
    assert not differ, f"markers read differently on mutation cases {differ[:5]}"
    assert read > 20_000, "the mutations leave too few markers to compare"


# -- the switch, the build, panics --------------------------------------------------------------------

def test_pure_python_is_forced_by_the_environment() -> None:
    code = "from kafkatool import native; print(native.CORE is None)"
    env = {**os.environ, "KAFKATOOL_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    env["KAFKATOOL_PURE_PYTHON"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(CORE is None)


def _stub_names(node: ast.AST) -> set[str]:
    """The public names a stub body declares: functions, classes, annotated or assigned names (``_``-private type
    aliases and dunders left out, ``_panic_for_test`` kept: the extension exports it)."""
    names = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("__") and (not n.startswith("_") or n == "_panic_for_test")}


def test_the_stub_names_exactly_what_the_extension_exports(core) -> None:
    """``kafkatool/_native.pyi`` types the native API: every function, class and constant the built extension
    exports, no more (its own type aliases aside), and every method of each class."""
    stub = ast.parse((PROJECT_ROOT / "kafkatool" / "_native.pyi").read_text())
    aliases = {"BatchColumns", "BatchFields", "BatchWalk", "RecordColumns", "ChunkColumns", "VarParts"}
    exported = {n for n in dir(core) if not n.startswith("__")}
    assert _stub_names(stub) - aliases == exported
    assert set(core.__all__) == exported
    for cls in (c for c in stub.body if isinstance(c, ast.ClassDef) and c.name != "NativePanic"):
        declared = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)} - {"__buffer__"}  # PEP 688's name
        own = {n for n in vars(getattr(core, cls.name)) if not n.startswith("__") or n in ("__len__", "__new__")}
        assert declared == own, cls.name


def test_a_native_panic_is_the_internal_error_exit(core, capsys) -> None:
    """A panic inside the crate reaches Python as ``NativePanic`` (a RuntimeError, not PyO3's
    BaseException ``PanicException``), so the CLI's handler turns it into exit 70 with one line."""
    from kafkatool.cli.exits import EXIT_INTERNAL, command

    with pytest.raises(RuntimeError, match="panicked"):
        core._panic_for_test()

    def body() -> int:
        core._panic_for_test()
        return 0

    with pytest.raises(typer.Exit) as exit_info:
        command(body)()
    assert exit_info.value.exit_code == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: NativePanic: the native core panicked" in err


def test_the_native_core_takes_any_contiguous_buffer(core) -> None:
    """bytes, bytearray, memoryview: the window the scanner reads is a memoryview of a bytearray."""
    data = record_batch(0, [RecordSpec(b"k", b"v", 1)])
    results = [core.scan_batches(buf, (0, 0, 1 << 40, 1 << 20), False)[:2]
               for buf in (data, bytearray(data), memoryview(data))]
    assert results == [(len(data), 0)] * 3
    assert core.scan_batches(b"", (0, 0, 1, 1), False)[:2] == (0, 0)
    assert core.scan_batches(data, (len(data) + 10, 0, 1 << 40, 1 << 20), False)[:2] == (len(data) + 10, 0)


# -- compressed payloads: one bounded pass in the native core, every decision the pure reader's ------

def _wrapper(codec: str, inner: bytes, magic: int) -> bytes:
    """A v0/v1 compressed wrapper message around ``inner`` (log entries), as ``build.legacy_entry``."""
    from kafkatool.formats import legacy as legacy_fmt

    return legacy_fmt.LogEntry.build({"offset": 9, "message": {"body": {
        "magic": magic, "attributes": {"unused": 0, "timestamp_type": "create", "compression": codec},
        "timestamp": 5 if magic >= 1 else None, "key": None,
        "value": compress(CODEC_NAMES.index(codec), inner, legacy_lz4_checksum=magic == 0)}}})


def payloads() -> list[tuple[int, bytes, bool]]:
    """``(codec, payload, legacy_lz4)``: what Kafka's producers write (1 record, 16 x 1 KiB, several
    lz4/snappy blocks), concatenated gzip members and zstd frames, a raw snappy block, lz4 with the
    message format v0 header checksum, the lz4 frames other clients write (:func:`client_lz4_frames`), and the
    records section of every compressed corpus batch."""
    import cramjam

    rng = random.Random(14)
    texts = [b"v", b"".join(rng.choice((b"lorem ", b"ipsum ", bytes([rng.randrange(256)]))) for _ in range(3000)),
             bytes(rng.randrange(256) for _ in range(300)) * 3 + bytes(200_000)]
    out = []
    for codec in (GZIP, SNAPPY, LZ4, ZSTD):
        for text in texts:
            out.append((codec, compress(codec, text), False))
        out.append((codec, record_batch(0, [RecordSpec(b"k", b"x" * 1024, 1)] * 16,
                                        compression=CODEC_NAMES[codec])[61:], False))
    out += [(LZ4, frame, legacy) for frame, legacy in client_lz4_frames(texts)]
    out += [(LZ4, compress(LZ4, texts[1], legacy_lz4_checksum=True), True),
            (GZIP, compress(GZIP, texts[1]) + compress(GZIP, b"second member") + b"\x1f\x8b", False),
            (ZSTD, compress(ZSTD, texts[0]) + compress(ZSTD, texts[1]), False),
            (SNAPPY, bytes(cramjam.snappy.compress_raw(texts[1])), False)]
    for path in record_files():
        data = path.read_bytes()
        with native.using(None):
            for item in scan(io.BytesIO(data), "seg.log", with_raw=True):
                if item.__class__ is RawBatch and item.batch.magic == 2 and 0 < item.batch.attributes & 7 < 5:
                    out.append((item.batch.attributes & 7, bytes(item.raw[61:]), False))
    return out


def client_lz4_frames(texts: list[bytes]) -> list[tuple[bytes, bool]]:
    """``(frame, legacy_lz4)``: lz4 frames of every independent-block shape a client writes, as python-lz4
    (kafka-python: ``lz4.frame.compress``, FLG 0x68 by default) and cramjam (aiokafka: block checksums, 0x70)
    write them: every block size (64 KiB..4 MiB), content size, block and content checksums, over each of
    ``texts``; and the v0 form of the content-size one, its HC over the magic bytes too (kafka-python's
    ``lz4_encode_old_kafka``)."""
    import cramjam
    import lz4.frame

    out = []
    for text in texts:
        for block_size, store_size, block_checksum, content_checksum in itertools.product(
                (lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB, lz4.frame.BLOCKSIZE_MAX1MB,
                 lz4.frame.BLOCKSIZE_MAX4MB), (False, True), (False, True), (False, True)):
            out.append((lz4.frame.compress(text, block_size=block_size, block_linked=False, store_size=store_size,
                                           block_checksum=block_checksum, content_checksum=content_checksum), False))
        aiokafka = cramjam.lz4.Compressor(level=9, content_checksum=False, block_linked=False)
        aiokafka.compress(text)
        out.append((bytes(aiokafka.finish()), False))
        frame = lz4.frame.compress(text, block_linked=False)
        out.append((frame[:14] + bytes([lz4_header_checksum(frame[:14])]) + frame[15:], True))
    return out


def outcome(codec: int, payload: bytes, limit: int, legacy: bool) -> tuple:
    """What ``decompress_payload`` gives: the bytes, or the error's class and message."""
    try:
        return ("ok", decompress_payload(codec, payload, 0, limit, legacy_lz4=legacy))
    except DecompressionError as exc:
        return (type(exc).__name__, str(exc))


def test_every_compressed_payload_decompresses_natively(core) -> None:
    """Every payload Kafka's producers write, and every compressed batch of the corpus (gzip, snappy,
    lz4, zstd goldens), is decompressed by the native core itself (not handed back), to the pure
    reader's bytes; and decoded with its records in the same call (``decode_v2_compressed``).
    Readers: Kafka's ``GzipCompression``/``SnappyCompression``/``Lz4Compression``/``ZstdCompression``
    ``wrapForInput`` (``kafkatool/codecs.py`` follows them)."""
    count = 0
    for codec, payload, legacy in payloads():
        with native.using(None):
            expected = outcome(codec, payload, 1 << 27, legacy)
        assert expected[0] == "ok"
        assert core.decompress(codec, payload, 0, 1 << 27, legacy) == expected[1]
        assert core.decompress(codec, b"\0" * 61 + payload, 61, len(expected[1]), legacy) == expected[1]
        assert core.decompress(codec, payload, 0, len(expected[1]) - 1, legacy) is None  # the bound, exactly
        count += 1
    assert count > 40
    for path in record_files():
        data = path.read_bytes()
        with native.using(None):
            raws = [item for item in scan(io.BytesIO(data), "seg.log", with_raw=True)
                    if item.__class__ is RawBatch and item.batch.magic == 2 and item.batch.attributes & 7
                    and item.batch.attributes & 7 < 5 and not item.batch.attributes & 0x20]
        for item in raws:
            b = item.batch
            got = core.decode_v2_compressed(item.raw, b.attributes & 7, 1 << 27, b.record_count, b.base_offset,
                                            b.first_timestamp, b.max_timestamp if b.attributes & 8 else None)
            with native.using(None):
                records, findings = decode_records(b, item.raw, str(path))
            assert got.__class__ is tuple, f"{path} at {b.position}: handed back to the pure reader"
            assert not findings
            assert [tuple(r)[:5] for r in records] == list(zip(*got, strict=True)), f"{path} at {b.position}"


def mutate_payload(payload: bytes, rng: random.Random, case: int) -> bytes:
    """Bit flips (anywhere, or in the first bytes: the codec's header), a cut, garbage appended, a
    block or frame length set to an edge value."""
    b = bytearray(payload)
    n = len(b)
    kind = case % 5
    if kind == 0:
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        i = rng.randrange(min(n, 24))
        b[i] ^= 1 << rng.randrange(8)
    elif kind == 2:
        del b[rng.randrange(n):]
    elif kind == 3:
        b += rng.choice((b"\x1f\x8b\x08", b"\0\0\0\0", b"\x82SNAPPY\0", b"\x28\xb5\x2f\xfd",
                         bytes([rng.randrange(256)])))
    else:
        i = rng.randrange(max(1, n - 4))
        struct.pack_into(">I" if rng.random() < 0.5 else "<I", b, i, rng.choice((0, 1, 0x7FFFFFFF, 0x80000000,
                                                                                 0x80000001, 65536, 65537)))
    return bytes(b)


def test_mutated_compressed_payloads_decompress_the_same(core) -> None:
    """Seeded mutations of every payload of :func:`payloads`, at limits under and over the output (a
    bomb is output over the limit): native and pure give the same bytes or the same error, class and
    message (``DecompressionLimitExceeded`` or ``DecompressionError``), lz4 with and without the v0
    header checksum quirk (``Lz4BlockInputStream`` skips the HC for magic 0)."""
    seed_list = payloads()
    differ, accepted = [], 0
    for case in range(20_000):
        rng = random.Random(case)
        codec, payload, legacy = seed_list[case % len(seed_list)]
        data = mutate_payload(payload, rng, case // len(seed_list))
        limit = rng.choice((1 << 20, 1 << 16, 1024, 64, len(payload)))
        if codec == LZ4 and rng.random() < 0.3:
            legacy = not legacy
        with native.using(None):
            pure = outcome(codec, data, limit, legacy)
        with native.using(core):
            fast = outcome(codec, data, limit, legacy)
        accepted += core.decompress(codec, data, 0, limit, legacy) is not None
        if pure != fast:
            differ.append(case)
            if len(differ) >= 5:
                break
    assert not differ, f"native and pure differ on payload mutation cases {differ}"
    assert accepted > 2000  # the native core decided many itself


def test_edited_lz4_frames_decompress_the_same(core) -> None:
    """Client lz4 frames (:func:`client_lz4_frames`) edited where a hostile frame would lie: the declared content
    size (0, one short, one over, past the limit, 2^63, 2^64 - 1; the HC recomputed so the decoder sees it, or
    left), every header bit, a checksum, a block size word, dependent blocks and a dictionary id (refused by
    ``Lz4BlockInputStream``), every cut; with and without the v0 HC quirk, at limits under and over the output:
    native and pure give the same bytes or the same error, and the native core decides the intact ones itself."""
    import lz4.frame

    rng = random.Random(30)
    text = b"".join(rng.choice((b"lorem ", b"ipsum ", bytes([rng.randrange(256)]))) for _ in range(40_000))
    size = len(text)

    def with_hc(frame: bytes) -> bytes:
        end = 14 if frame[4] & 8 else 6
        return frame[:end] + bytes([lz4_header_checksum(frame[4:end])]) + frame[end + 1:]

    def sized(frame: bytes, declared: int) -> bytes:
        return frame[:6] + struct.pack("<Q", declared) + frame[14:]

    edits: list[bytes] = []
    for frame, _ in client_lz4_frames([text]):
        if not frame[4] & 8:
            continue
        edits += [sized(frame, n) for n in (0, size - 1, size + 1, 1 << 20, 1 << 63, (1 << 64) - 1)]
        edits += [with_hc(e) for e in edits[-6:]]
        edits += [frame[:i] for i in range(0, 40)] + [frame[: len(frame) - i] for i in range(1, 9)]
        for i in range(15):
            edits += [frame[:i] + bytes([frame[i] ^ 1 << bit]) + frame[i + 1:] for bit in range(8)]
        edits += [frame[:-1 - i] + bytes([frame[-1 - i] ^ 0x10]) + frame[len(frame) - i:] for i in range(8)]
        edits.append(frame[:15] + struct.pack("<I", 0x7FFFFFFF) + frame[19:])
    linked = lz4.frame.compress(text, block_linked=True, block_checksum=True)
    edits += [linked, with_hc(linked[:4] + bytes([linked[4] | 1]) + linked[5:])]
    differ, decided = [], 0
    for i, data in enumerate(edits):
        for limit, legacy in itertools.product((size, size - 1, 1 << 20), (False, True)):
            with native.using(None):
                pure = outcome(LZ4, data, limit, legacy)
            with native.using(core):
                fast = outcome(LZ4, data, limit, legacy)
            decided += core.decompress(LZ4, data, 0, limit, legacy) is not None
            if pure != fast:
                differ.append((i, limit, legacy, pure[0], fast[0]))
    assert not differ[:5], f"native and pure differ on lz4 frame edits {differ[:5]}"
    assert decided > 100  # the ones the pure reader reads too (the content-size ones, flips of checksums the
    # decoder does not need), the native core read itself


def test_bombs_and_nested_compression_give_the_same_findings(core) -> None:
    """A batch whose records inflate past ``--max-decompressed`` (``decompression-limit``), a legacy
    wrapper inside a wrapper (``nested-compression``: Kafka's ``AbstractLegacyRecordBatch`` rejects a
    compressed inner message), lz4 v0 wrappers: identical batches, records and findings both ways."""
    big = [RecordSpec(b"k", bytes(300_000), 1)] * 8
    small = [RecordSpec(b"k", b"v" * 100, 1)]
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        inner = legacy_entry(0, small * 3, magic=1, compression=codec)
        segment = (record_batch(0, big, compression=codec) + record_batch(8, small, compression=codec)
                   + _wrapper(codec, inner, 1) + legacy_entry(12, small * 2, magic=0, compression=codec))
        for limit in (1 << 10, 1 << 20, 1 << 23):
            pure, fast = both(core, segment, ScanOptions(max_decompressed=limit), modes="r")
            assert pure == fast, (codec, limit)
            assert ("decompression-limit" in pure) == (limit < 8 * 300_000)
        assert "nested-compression" in pure


# -- records as columns: dump's lines and verify --deep's checks ------------------------------------

RENDER_MODES = (("jsonl", "base64"), ("jsonl", "text"), ("jsonl", "hex"), ("jsonl", "none"),
                ("text", "text"), ("text", "base64"), ("text", "hex"), ("text", "none"))


def dumped(data: bytes, options: ScanOptions, fmt: str, values: str) -> str:
    """What ``dump --records`` prints for ``data`` (piped: plain lines), through the one output layer:
    ``scan(decoded=True)`` gives RecordRuns (native columns, rendered in Rust) with the native core, and
    RawBatches decoded record by record (rendered in Python) without."""
    from kafkatool.cli.output import Output

    stream = io.StringIO()
    out = Output(fmt, values, stream=stream)
    for item in scan(io.BytesIO(data), "seg.log", decoded=True, options=options):
        if item.__class__ is RawBatch:
            out.emit(item.batch)
            records, findings = decode_records(item.batch, item.raw, "seg.log", options)
            for x in (*records, *findings):
                out.emit(x)
        else:
            out.emit(item)
    out.close()
    return stream.getvalue()


def dumped_batches(path: Path, options: ScanOptions, fmt: str) -> str:
    """What ``dump`` (batches, no records) prints for the record file ``path``, piped (plain lines), through the
    library function and the output layer the command uses: with the native core, the batches that follow each
    other come as Stretches, rendered in Rust."""
    from kafkatool.cli.output import Output
    from kafkatool.dump import DumpOptions, dump_paths

    stream = io.StringIO()
    out = Output(fmt, stream=stream)
    for item in dump_paths([path], DumpOptions(records=False, columnar=True, scan=options)):
        out.emit(item)
    out.close()
    return stream.getvalue()


def deep_misses(data: bytes, options: ScanOptions) -> list[int]:
    """Positions of batches inside RecordRuns where ``verify --deep``'s Python check
    (``log_check._deep_check``) finds something the columns did not flag as suspect."""
    from kafkatool.log_check import Sink, _deep_check
    from kafkatool.records import RecordRun

    misses = []
    for item in scan(io.BytesIO(data), "seg.log", decoded=True, options=options):
        if item.__class__ is RecordRun:
            cols, lo, hi = item
            suspects = cols.deep_suspects(lo, hi)
            for i, batch in enumerate(item.batches(), lo):
                found: list = []
                _deep_check("seg.log", batch, cols.raw(i), CheckOptions(deep=True, scan=options), Sink(found, 9))
                if found and i not in suspects:
                    misses.append(batch.position)
    return misses


def render_seeds() -> list[bytes]:
    """Records whose lines take every branch of the renderers: quotes, backslashes, non-ASCII and invalid
    UTF-8 in keys, values and header keys, control characters, null and empty fields, timestamps before
    1970, past 2242 and past year 9999, LOG_APPEND_TIME, delete horizons, producers, bad offsets."""
    ts = 1_700_000_000_123
    odd = [b"it's", b'say "hi"', b"both '\"", b"back\\slash", "zoë ☃ 𝄞".encode(), b"\xff\xfe bad \xc3",
           b"\xed\xa0\x80", b"tab\there\n\x7f\x00", b"", b":smile: [bold]x[/bold]"]
    records = [RecordSpec(k, v, ts + i, ((k.decode("latin-1"), v), (b"\xc3(".decode("utf-8", "replace"), None)))
               for i, (k, v) in enumerate(zip(odd, reversed(odd), strict=True))]
    records.append(RecordSpec(None, None, ts, ()))
    header_bytes = record_batch(50, [RecordSpec(b"k", b"v", ts, (("h\xe9", b"x"),))])
    return [
        record_batch(0, records, partition_leader_epoch=4, producer_id=7, producer_epoch=2, base_sequence=9),
        record_batch(20, [RecordSpec(b"a", b"b", -5), RecordSpec(b"a", b"b", 9_000_000_000_000),
                          RecordSpec(b"a", b"b", 300_000_000_000_000), RecordSpec(b"a", b"b", 8_000_000_000_000)]),
        record_batch(30, records[:3], log_append_time=ts + 9) + record_batch(33, records[3:5], delete_horizon_ms=ts)
        + record_batch(40, records[:2], transactional=True, producer_id=3, producer_epoch=0, base_sequence=0),
        header_bytes,
    ]


def test_columns_render_and_check_like_the_per_record_path(core, tmp_path: Path) -> None:
    """Every corpus and fixture record file, and the rendering seeds: ``dump --records`` and ``dump`` print the
    same bytes from the native columns as from Batch/Record objects, in every format and --values mode, at two
    window sizes; and every batch of a run that ``verify --deep``'s checks (``_deep_check``, after Kafka's
    ``DefaultRecordBatch`` iteration) would flag is flagged by the columns."""
    differ = []
    inputs = [(str(p), p.read_bytes()) for p in record_files()] + [(f"seed {i}", s)
                                                                     for i, s in enumerate(render_seeds())]
    for name, data in inputs:
        seg = tmp_path / f"{0:020d}.log"
        seg.write_bytes(data)
        for options in (ScanOptions(), ScanOptions(window=97)):
            for fmt in ("text", "jsonl"):
                with native.using(None):
                    pure = dumped_batches(seg, options, fmt)
                with native.using(core):
                    fast = dumped_batches(seg, options, fmt)
                if pure != fast:
                    differ.append(f"{name} (dump, {fmt}, window {options.window})")
            for fmt, values in RENDER_MODES if name.startswith("seed") or options.window == 97 else RENDER_MODES[:1]:
                with native.using(None):
                    pure = dumped(data, options, fmt, values)
                with native.using(core):
                    fast = dumped(data, options, fmt, values)
                if pure != fast:
                    differ.append(f"{name} ({fmt}, {values}, window {options.window})")
            with native.using(core):
                if deep_misses(data, options):
                    differ.append(f"{name}: deep checks missed (window {options.window})")
    assert not differ, f"columns and per-record path differ on {len(differ)}: {differ[:10]}"


def test_columns_render_and_check_like_the_per_record_path_on_mutations(core, tmp_path: Path) -> None:
    """Seeded mutations (those of ``test_mutated_inputs_read_the_same`` and of the rendering seeds): the
    same dump lines both ways (with records; one case in four also without) and no missed deep finding."""
    seg = tmp_path / f"{0:020d}.log"
    seed_list = seeds() + render_seeds()
    differ = []
    options = [ScanOptions(window=w, max_decompressed=1 << 16, max_batch=1 << 12) for w in (61, 200, 4096)]
    for case in range(20_000):
        rng = random.Random(case)
        data = mutate(seed_list[case % len(seed_list)], rng, case // len(seed_list))
        fmt, values = RENDER_MODES[case % len(RENDER_MODES)]
        opts = options[case % 3]
        with native.using(None):
            pure = dumped(data, opts, fmt, values)
        with native.using(core):
            fast = dumped(data, opts, fmt, values)
            missed = deep_misses(data, opts) if case % 4 == 0 else []
        if case % 4 == 1:
            seg.write_bytes(data)
            with native.using(None):
                pure += dumped_batches(seg, opts, fmt)
            with native.using(core):
                fast += dumped_batches(seg, opts, fmt)
        if pure != fast or missed:
            differ.append(case)
            if len(differ) >= 5:
                break
    assert not differ, f"columns and per-record path differ on mutation cases {differ}"


def test_columns_render_in_pieces_of_whole_lines(core, monkeypatch) -> None:
    """A run whose lines are many times the renderer's piece (64 KiB): every piece handed to ``write`` is
    whole lines (text holding non-ASCII decodes piece by piece), and the pieces together are what the
    per-record path prints, in every format and --values mode."""
    from kafkatool import records as reader
    from kafkatool.cli.output.text import _RENDER_FALLBACK
    from kafkatool.records import RecordRun

    ts = 1_700_000_000_123
    odd = [b"it's", "zoë ☃ 𝄞".encode(), b"\xff\xfe bad \xc3", b"tab\there\n\x7f\x00", b"x" * 3000, b""]
    records = [RecordSpec(k, v, ts + i, (("h\xe9", v),))
               for i, (k, v) in enumerate(zip(odd, reversed(odd), strict=True))]
    data = b"".join(record_batch(n * len(records), records, producer_id=n) for n in range(400))
    options = ScanOptions(window=len(data))
    monkeypatch.setattr(reader, "DECODE_PIECE", len(data))  # the whole segment in one run
    for fmt, values in RENDER_MODES:
        with native.using(None):
            pure = dumped(data, options, fmt, values)
        with native.using(core):
            runs = list(scan(io.BytesIO(data), "seg.log", decoded=True, options=options))
        assert [item.__class__ for item in runs] == [RecordRun], (fmt, values)
        pieces: list[bytes] = []
        runs[0].render(fmt, values, _RENDER_FALLBACK, pieces.append)
        assert len(pieces) > 3 and all(p.endswith(b"\n") for p in pieces), (fmt, values)
        assert "".join(p.decode() for p in pieces) == pure, (fmt, values)


def _big_batch(base_offset: int, count: int, codec: int) -> bytes:
    """One v2 batch of ``count`` records (more than a window decodes), each one told apart by its key, value and
    headers (quotes, non-ASCII, invalid UTF-8, null and empty fields among them), its records section written
    here (the builders take seconds for 10^5 records)."""
    from kafkatool.formats import record_batch as fmt

    odd = [b"it's", b'say "hi"', "zo\u00eb \u2603".encode(), b"\xff\xfe bad", b"", None]
    section = bytearray()
    for i in range(count):
        key = None if i % 7 == 3 else b"k%d" % i
        value = odd[i % len(odd)]
        value = value if value is None else value + b"%d" % i
        headers = [("h\xe9" if i % 2 else "h", b"v%d" % i)] * (i % 3) + [("n", None)] * (i % 5 == 0)
        body = bytearray(b"\x00") + _varint(i % 1000) + _varint(i)
        for field in (key, value):
            body += _varint(-1) if field is None else _varint(len(field)) + field
        body += _varint(len(headers))
        for name, v in headers:
            body += _varint(len(name.encode())) + name.encode()
            body += _varint(-1) if v is None else _varint(len(v)) + v
        section += _varint(len(body)) + body
    ts = 1_700_000_000_000
    batch = {"attributes": {"unused": 0, "has_delete_horizon_ms": False, "is_control": False,
                            "is_transactional": False, "timestamp_type": "create", "compression": CODEC_NAMES[codec]},
             "last_offset_delta": count - 1, "base_timestamp": ts, "max_timestamp": ts + 999, "producer_id": -1,
             "producer_epoch": -1, "base_sequence": -1, "records_count": count,
             "records": compress(codec, bytes(section))}
    return fmt.RecordBatch.build({"base_offset": base_offset, "batch": {"partition_leader_epoch": 0, "body": batch}})


def test_a_big_batch_renders_natively_a_chunk_at_a_time(core, tmp_path: Path) -> None:
    """A batch declaring more records than a window decodes (``records.RECORD_CHUNK``) is rendered natively a chunk
    at a time (``record_chunks`` with ``lines``: RecordRuns of ``RecordChunk``s, the batch line written once): what
    ``dump --records`` prints is the per-record path's, byte for byte, in every format and --values mode, each record
    once at its offset across the chunk boundaries, and a chunk's items are the per-record path's records."""
    from kafkatool.cli.output import Output
    from kafkatool.dump import DumpOptions, dump_paths
    from kafkatool.model import Batch, FileStart
    from kafkatool.records import RECORD_CHUNK, RecordRun

    n = RECORD_CHUNK + 3  # a boundary, a last chunk of 3 (the decompressed section); then one of raw bytes
    seg = tmp_path / f"{0:020d}.log"
    seg.write_bytes(_big_batch(0, n, ZSTD) + _big_batch(n, RECORD_CHUNK + 1, 0))
    options = DumpOptions(records=True, columnar=True)

    def dump(fmt: str, values: str) -> str:
        stream = io.StringIO()
        out = Output(fmt, values, stream=stream)
        for item in dump_paths([seg], options):
            out.emit(item)
        out.close()
        return stream.getvalue()

    with native.using(core):
        items = list(dump_paths([seg], options))
        chunks = [item for item in items if item.__class__ is RecordRun]
        assert [len(c.columns) for c in chunks] == [RECORD_CHUNK, 3, RECORD_CHUNK, 1]
        expanded = [x for item in items for x in (item.items() if item.__class__ is RecordRun else [item])]
    with native.using(None):
        assert repr(expanded) == repr(list(dump_paths([seg], options)))
    offsets = [r.offset for r in expanded if r.__class__ is not Batch and r.__class__ is not FileStart]
    assert offsets == list(range(n + RECORD_CHUNK + 1))
    # each format, each --values mode (the pure path takes seconds a mode)
    for fmt, values in (("jsonl", "base64"), ("jsonl", "none"), ("text", "text"), ("text", "hex")):
        with native.using(None):
            pure = dump(fmt, values)
        with native.using(core):
            fast = dump(fmt, values)
        assert fast == pure, (fmt, values)


def test_columns_decoded_in_pieces_of_any_size(core, monkeypatch) -> None:
    """Whatever the bytes decoded per call (``records.DECODE_PIECE``: one batch per call, a few, the default), the
    seeds (compressed, control and legacy batches among them), the rendering seeds and their mutations print the
    same lines, with the same findings, as the per-record path."""
    from kafkatool import records as reader
    from kafkatool.records import RecordRun

    seed_list = seeds() + render_seeds()
    cases = [(seed, RENDER_MODES[i % len(RENDER_MODES)]) for i, seed in enumerate(seed_list)]
    for case in range(400):
        rng = random.Random(case)
        cases.append((mutate(seed_list[case % len(seed_list)], rng, case // len(seed_list)),
                      RENDER_MODES[case % len(RENDER_MODES)]))
    options = ScanOptions(window=4096)
    differ = []
    for piece in (1, 200, reader.DECODE_PIECE):
        monkeypatch.setattr(reader, "DECODE_PIECE", piece)
        if piece == 1:  # a call per batch: each (uncompressed) batch its own RecordRun, none left to Python
            with native.using(core):
                runs = [item for seed in render_seeds() for item in scan(io.BytesIO(seed), "seg.log", decoded=True)]
            assert all(item.__class__ is RecordRun and item.hi - item.lo == 1 for item in runs)
        for n, (data, (fmt, values)) in enumerate(cases):
            with native.using(None):
                pure = dumped(data, options, fmt, values)
            with native.using(core):
                fast = dumped(data, options, fmt, values)
            if pure != fast:
                differ.append((piece, n))
    assert not differ, f"columns and per-record path differ (piece size, case): {differ[:10]}"


# -- verify through stretches (native) against batch by batch (pure) ------------------------------------

def verified(paths: list[Path], options) -> str:
    from kafkatool.verify import verify_paths

    return repr(list(verify_paths(paths, options)))


def verify_modes() -> list:
    from kafkatool.verify_files import VerifyOptions

    return [VerifyOptions(CheckOptions(deep=deep, scan=ScanOptions(window=window)))
            for deep in (False, True) for window in (ScanOptions().window, 1500)]


def test_verify_of_the_corpus_is_the_same_through_stretches(core) -> None:
    """``verify`` (and ``--deep``) of every corpus and fixture log dir: the native core hands the checks and the
    loader whole stretches of batches (``model.Stretch``), the pure reader one batch at a time; every finding and
    every summary (LEO, HW, open transactions, index verdicts, ...) is the same, at a window small enough that
    stretches are cut at every refill."""
    corpus = Path(os.environ.get("KAFKATOOL_CORPUS", PROJECT_ROOT.parent / "shared" / "corpus"))
    roots = [corpus / "kafka", corpus / "real", PROJECT_ROOT / "fixtures"]
    differ = []
    for options in verify_modes():
        with native.using(None):
            pure = verified(roots, options)
        with native.using(core):
            fast = verified(roots, options)
        if pure != fast:
            differ.append(f"deep={options.check.deep} window={options.check.scan.window}")
    assert not differ, f"verify differs through stretches: {differ}"


EOS_PRODUCERS = (20, 21, 22)


def stretchy_partition(path: Path, rng: random.Random, segment_bytes: int = 6 * 1024) -> None:
    """A partition written by the project's writer (indexes every ~300 bytes, segments of ~``segment_bytes``) whose
    batches follow each other in long stretches, broken by what a reader must look at: leader epoch changes,
    producers (idempotent runs, a new producer epoch), transactions and their markers, gaps, compressed batches,
    timestamps of -1 and far in the future; long runs of transactional batches of exactly-once producers
    (``eos_run``); half of them with a recovery point at a later segment (the producer replay starts at its
    snapshot)."""
    from kafkatool.logwriter import PartitionWriter

    ts = 1_700_000_000_000
    with PartitionWriter(path, topic="s", partition=0, topic_id=bytes(range(1, 17)), segment_bytes=segment_bytes,
                         index_interval_bytes=300) as w:
        offset, epoch, seqs = 0, 0, {}
        eos_epochs = dict.fromkeys(EOS_PRODUCERS, 0)
        for _ in range(rng.randint(60, 160)):
            kinds = ("plain", "producer", "txn", "gzip", "epoch", "gap", "odd-ts", "eos")
            kind = rng.choices(kinds, (40, 30, 4, 4, 2, 2, 2, 5))[0]
            if kind == "eos":
                offset = eos_run(w, rng, offset, epoch, seqs, eos_epochs, ts)
                continue
            n = rng.randint(1, 3)
            records = [RecordSpec(f"k{offset + i}".encode(), bytes(rng.randint(0, 40)), ts + offset + i)
                       for i in range(n)]
            kw: dict = {"partition_leader_epoch": epoch}
            if kind == "epoch":
                epoch += 1
                kw["partition_leader_epoch"] = epoch
            elif kind == "gap":
                offset += rng.randint(1, 5)
            elif kind == "odd-ts":
                records = [r._replace(timestamp=rng.choice((-1, ts + 10**12))) for r in records]
            elif kind == "gzip":
                kw["compression"] = "gzip"
            if kind in ("producer", "txn"):
                pid = rng.choice((7, 7, 7, 9))
                pepoch = 1 if rng.random() > 0.05 else 2
                if seqs.get(pid, (None, 0))[0] != pepoch:
                    seqs[pid] = (pepoch, 0)
                kw.update(producer_id=pid, producer_epoch=pepoch, base_sequence=seqs[pid][1])
                seqs[pid] = (pepoch, seqs[pid][1] + n)
                if kind == "txn":
                    kw["transactional"] = True
                    w.append(record_batch(offset, records, **kw))
                    offset += n
                    w.append(end_transaction_marker(offset, rng.random() < 0.5, producer_id=pid, producer_epoch=pepoch,
                                                    coordinator_epoch=0, timestamp=ts + offset))
                    offset += 1
                    continue
            w.append(record_batch(offset, records, **kw))
            offset += n
    bases = sorted(int(log.name[:20]) for log in path.glob("*.log"))
    if len(bases) > 1 and rng.random() < 0.5:  # the broker flushed up to a later segment: replay starts at its snapshot
        from kafkatool.formats import checkpoints

        point = rng.choice(bases[1:])
        (path.parent / "recovery-point-offset-checkpoint").write_bytes(
            checkpoints.build_offset_checkpoint([("s", 0, point)]))


def eos_run(w, rng: random.Random, offset: int, leader_epoch: int, seqs: dict, epochs: dict, ts: int) -> int:
    """Appends to ``w`` from ``offset`` on what exactly-once producers (``EOS_PRODUCERS``, Kafka Streams EOS) write:
    bursts of transactional batches of each, interleaved, each producer ending its transaction now and then with a
    COMMIT or an ABORT (some of them with an epoch the coordinator bumped); now and then a producer's epoch bumped in
    the middle of its transaction, or a zombie's batch with the epoch before (fenced). Transactions stay open from one
    run to the next, across segment ends and up to the log end. Returns the next offset."""
    for _ in range(rng.randint(1, 12)):
        pid = rng.choice(EOS_PRODUCERS)
        for _ in range(rng.randint(1, 8)):
            pepoch = epochs[pid]
            if rng.random() < 0.03:  # a producer epoch bump mid-transaction (KIP-360: the producer starts again at 0)
                pepoch = epochs[pid] = pepoch + 1
            elif rng.random() < 0.02 and pepoch > 0:  # a zombie's batch: fenced
                pepoch -= 1
            if seqs.get(pid, (None, 0))[0] != pepoch:
                seqs[pid] = (pepoch, 0)
            n = rng.randint(1, 3)
            records = [RecordSpec(f"e{offset + i}".encode(), bytes(rng.randint(0, 30)), ts + offset + i)
                       for i in range(n)]
            w.append(record_batch(offset, records, partition_leader_epoch=leader_epoch, producer_id=pid,
                                  producer_epoch=pepoch, base_sequence=seqs[pid][1], transactional=True,
                                  compression="gzip" if rng.random() < 0.05 else "none"))
            seqs[pid] = (pepoch, seqs[pid][1] + n)
            offset += n
            if rng.random() < 0.12:  # the coordinator ends the transaction
                commit = rng.random() < 0.7
                if not commit and rng.random() < 0.3:  # aborted on a timeout: the coordinator bumped the epoch
                    epochs[pid] += 1
                w.append(end_transaction_marker(offset, commit, producer_id=pid, producer_epoch=epochs[pid],
                                                coordinator_epoch=0, timestamp=ts + offset,
                                                partition_leader_epoch=leader_epoch))
                offset += 1
    return offset


def control_batches(data: bytes) -> list[int]:
    """Where the control batches of the whole v2 batches ``data`` begins with are."""
    out, p = [], 0
    while p + 61 <= len(data) and data[p + 16] == 2:
        size = struct.unpack_from(">i", data, p + 8)[0]
        if size < 49 or p + 12 + size > len(data):
            break
        if data[p + 22] & 0x20:
            out.append(p)
        p += 12 + size
    return out


def damage_marker(data: bytes, rng: random.Random) -> bytes:
    """``data`` with one of its control batches (a transaction marker as ``build.end_transaction_marker`` writes it:
    its one record's key at bytes 66..70, its value at 71..77) damaged or made unusual: bits flipped (its CRC
    recomputed half the time); another control type (KRaft's, one Kafka does not define) or a negative key version;
    another value version or coordinator epoch; a record count of 0 or 2; emptied (the cleaner's); two records; its
    records section cut short; compressed (in name), not transactional, without a producer id or in log-append time;
    or the file cut inside it. The CRC is recomputed unless said."""
    starts = control_batches(data)
    if not starts:
        return data
    at = rng.choice(starts)
    end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
    b = bytearray(data[at:end])
    marker = len(b) == 78 and b[61] == 32 and b[65] == 8 and b[70] == 12  # the layout above
    kind = rng.randrange(10) if marker else 0
    crc = True
    if kind == 0:
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        crc = rng.random() < 0.5
    elif kind == 1:
        struct.pack_into(">hh", b, 66, *rng.choice(((0, 2), (0, 3), (0, 5), (0, 6), (0, 9), (0, -2), (-1, 1),
                                                     (-1, 0), (1, 0))))
    elif kind == 2:
        struct.pack_into(">hi", b, 71, rng.choice((0, 1, -1)), rng.choice((0, 7, -1, 2**31 - 1)))
    elif kind == 3:
        struct.pack_into(">i", b, 57, rng.choice((0, 2, -1)))
    elif kind == 4:
        b = bytearray(emptied(bytes(b)))
    elif kind == 5:  # the same record twice, both at offset delta 0
        b = b[:61] + b[61:] * 2
        struct.pack_into(">i", b, 57, 2)
    elif kind == 6:
        del b[len(b) - rng.randint(1, 16):]
        crc = rng.random() < 0.5
    elif kind == 7:
        attrs = struct.unpack_from(">h", b, 21)[0]
        attrs = rng.choice((attrs | rng.randint(1, 4), attrs & ~0x10, attrs | 0x08))
        struct.pack_into(">h", b, 21, attrs)
        if rng.random() < 0.3:
            struct.pack_into(">q", b, 43, -1)
    elif kind == 8:
        return data[:at + rng.randrange(len(b))]
    else:  # the timestamp, far ahead or before the batch's
        struct.pack_into(">q", b, 35, struct.unpack_from(">q", b, 35)[0] + rng.choice((10**12, -5)))
    struct.pack_into(">i", b, 8, len(b) - 12)
    if crc:
        struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return data[:at] + bytes(b) + data[end:]


def damage(path: Path, rng: random.Random) -> None:
    """One of: a bit flipped in a log, a header field of a batch set (CRC recomputed), an index or time index
    entry moved, a log cut short, a transaction marker damaged (``damage_marker``)."""
    logs = sorted(path.glob("*.log"))
    log = rng.choice(logs)
    kind = rng.randrange(6)
    if kind == 5:
        logs = [log for log in logs if control_batches(log.read_bytes())] or logs
        log = rng.choice(logs)
    data = bytearray(log.read_bytes())
    if kind == 5:
        data = bytearray(damage_marker(bytes(data), rng))
    elif kind == 0 and data:
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif kind == 1 and len(data) > 61:
        at, p = 0, 0
        starts = []
        while p + 12 <= len(data):
            starts.append(p)
            p += 12 + struct.unpack_from(">i", data, p + 8)[0]
        at = rng.choice(starts)
        off, fmt, value = rng.choice(((0, ">q", rng.randrange(0, 400)), (12, ">i", rng.randrange(0, 4)),
                                      (23, ">i", rng.randrange(0, 4)), (35, ">q", 1_700_000_000_000 + 10**12),
                                      (35, ">q", 1_700_000_000_000 + 10**6),  # above the later time-index entries
                                      (43, ">q", rng.choice((-1, 7))), (57, ">i", rng.randrange(0, 4))))
        if at + 61 <= len(data):
            struct.pack_into(fmt, data, at + off, value)
            end = min(len(data), at + 12 + struct.unpack_from(">i", data, at + 8)[0])
            struct.pack_into(">I", data, at + 17, crc32c(bytes(data[at + 21:end])))
    elif kind in (2, 3):
        index = log.with_suffix(".index" if kind == 2 else ".timeindex")
        entries = bytearray(index.read_bytes()) if index.exists() else bytearray()
        if entries:
            width = 8 if kind == 2 else 12
            i = rng.randrange(len(entries) // width) * width
            if rng.random() < 0.5:  # the position (.index) or the relative offset (.timeindex)
                struct.pack_into(">i", entries, i + width - 4, rng.randrange(0, 6000))
            elif kind == 2:  # the relative offset, often by one (the offset of a neighbouring batch)
                rel = struct.unpack_from(">i", entries, i)[0]
                struct.pack_into(">i", entries, i, max(0, rel + rng.choice((-2, -1, 1, 1, 2, 40))))
            else:  # the timestamp
                struct.pack_into(">q", entries, i, 1_700_000_000_000 + rng.randrange(-5, 400))
            index.write_bytes(bytes(entries))
    elif kind == 4:
        del data[rng.randrange(len(data) + 1):]
    log.write_bytes(bytes(data))


def test_verify_of_generated_and_damaged_partitions_is_the_same_through_stretches(core, tmp_path: Path) -> None:
    """Partitions whose stretches are cut by every kind of event (``stretchy_partition``), whole and damaged
    (``damage``): native verify (stretches) and pure verify (batch by batch) give the same findings and summaries,
    deep or not, at two windows; and the partition loaded natively, fed by verify's scans or reading for itself,
    is the one the pure reader loads, also as ``repair`` loads it (rebuilding indexes, ``.txnindex`` and producer
    snapshots, with producers expiring)."""
    from kafkatool.loader import Rebuild

    rebuild = Rebuild(300, 1_700_000_000_000 + 400, 300)
    differ = []
    transactional = 0
    for case in range(120):
        rng = random.Random(case)
        part = tmp_path / f"c{case}" / "s-0"
        stretchy_partition(part, rng)
        if case % 3:
            damage(part, rng)
        for options in verify_modes():
            with native.using(None):
                pure = verified([part.parent], options)
            with native.using(core):
                fast = verified([part.parent], options)
                tapped = tapped_load(part, options.check)
                alone_native = load_essence(load_partition(part, str(part)))  # the loader's own reads: stretches
            with native.using(None):
                alone = load_essence(load_partition(part, str(part)))
            if pure != fast or tapped != alone or alone_native != alone:
                differ.append(f"case {case} deep={options.check.deep} window={options.check.scan.window}")
        with native.using(core):
            rebuilt_native = load_partition(part, str(part), rebuild=rebuild)
        with native.using(None):
            rebuilt = load_partition(part, str(part), rebuild=rebuild)
        if load_essence(rebuilt_native) != load_essence(rebuilt):
            differ.append(f"case {case} rebuild")
        transactional += any(p.txn_first_offset >= 0 for p in rebuilt.producers.values())
    assert not differ, f"verify differs through stretches: {differ[:5]}"
    assert transactional > 20, "too few partitions end with a transaction open"


def test_verify_and_load_of_damaged_markers_are_the_same_through_stretches(core, tmp_path: Path) -> None:
    """400 partitions of exactly-once producers' runs (``eos_run``, one segment), each with one transaction marker
    damaged or made unusual (``damage_marker``): native verify, where the markers the native core reads lie inside
    stretches and the damaged one breaks them, gives the findings and summaries of pure verify (batch by batch, every
    marker decoded in Python), and the partition loads the same, fed by verify's scan or reading for itself."""
    from kafkatool.logwriter import PartitionWriter
    from kafkatool.model import Stretch
    from kafkatool.verify_files import VerifyOptions

    ts = 1_700_000_000_000
    options = VerifyOptions(CheckOptions(now_ms=ts + 10**9))
    differ, inside = [], 0
    for case in range(400):
        rng = random.Random(f"marker {case}")
        part = tmp_path / f"m{case}" / "s-0"
        with PartitionWriter(part, topic="s", partition=0, topic_id=bytes(range(1, 17)), segment_bytes=1 << 20,
                             index_interval_bytes=300) as w:
            offset, seqs, epochs = 0, {}, dict.fromkeys(EOS_PRODUCERS, 0)
            for _ in range(rng.randint(1, 3)):
                offset = eos_run(w, rng, offset, 0, seqs, epochs, ts)
        log = part / f"{0:020d}.log"
        log.write_bytes(damage_marker(log.read_bytes(), rng))
        with native.using(None):
            pure = verified([part.parent], options)
            alone = load_essence(load_partition(part, str(part)))
        with native.using(core):
            fast = verified([part.parent], options)
            tapped = tapped_load(part, options.check)
            alone_native = load_essence(load_partition(part, str(part)))
            with open(log, "rb") as fh:
                inside += any(any(s.lo <= i < s.hi for i in s.markers)
                              for s in scan(fh, str(log), stretches=True) if s.__class__ is Stretch)
        if pure != fast or tapped != alone or alone_native != alone:
            differ.append(case)
    assert not differ, f"damaged markers read differently through stretches: cases {differ[:5]}"
    assert inside > 300, f"only {inside} of the partitions have a marker inside a stretch"


def tapped_load(part: Path, options: CheckOptions) -> tuple:
    """The partition loaded as ``verify`` loads it: fed by its segment checks' scans (``PartitionLoad.tap``)."""
    load = PartitionLoad(part, str(part))
    for log in sorted(part.glob("*.log")):
        check_segment(SegmentTask(0, str(log)), options, tap=load.tap(str(log)))
    return load_essence(load.finish())


# -- repair's rebuild through stretches (native) against batch by batch (pure) ----------------------------

@functools.cache
def following_segment(case: int) -> bytes:
    """A segment (20 to 500 batches, seeded by ``case``) whose batches mostly follow each other (``model.Stretch``:
    offsets in a row, one leader epoch), of uneven sizes (1..3 records of 0..400 bytes), with max timestamps that
    rise, repeat, fall back or are -1 (none); now and then a new leader epoch, or offsets going back (an index cannot
    take them), ends a stretch."""
    rng = random.Random(f"following {case}")
    out, offset, epoch, ts = [], 0, 0, 1_700_000_000_000
    for _ in range(rng.randint(20, 500)):
        if rng.random() < 0.01:
            epoch += 1
        if rng.random() < 0.005:
            offset = max(0, offset - rng.randint(1, 20))
        ts += rng.choice((0, 0, 1, 7, -5, 1000))
        n = rng.randint(1, 3)
        none = rng.random() < 0.03
        records = [RecordSpec(b"k", bytes(rng.randint(0, 400)), -1 if none else ts + rng.randint(-3, 3))
                   for _ in range(n)]
        out.append(record_batch(offset, records, partition_leader_epoch=epoch))
        offset += n
    return b"".join(out)


def test_a_stretch_finds_byte_positions_and_running_maxima_as_its_batches_say(core) -> None:
    """``Stretch.seek`` (the first batch beginning at or after a byte, searched from any batch of the stretch) and
    ``Stretch.first_reaching`` (where a running max timestamp first reaches a value) against the stretch's own
    batches, on segments of uneven batch sizes and timestamps, read through windows that cut stretches anywhere."""
    from bisect import bisect_left

    from kafkatool.model import Batch, Stretch

    checked = 0
    for case in range(40):
        rng = random.Random(case)
        data = following_segment(case)
        options = ScanOptions(window=rng.choice((1500, 9000, 1 << 20)))
        with native.using(core):
            items = list(scan(io.BytesIO(data), "seg.log", stretches=True, options=options))
        at = 0
        for item in items:
            if item.__class__ is Batch:
                at = item.position + item.size
            if item.__class__ is not Stretch:
                continue
            batches = list(item.batches())
            positions = [b.position for b in batches]
            end = positions[-1] + batches[-1].size
            assert positions[0] == at  # back to back with the batch before it
            for _ in range(30):
                i = rng.randrange(len(batches))
                position = rng.randrange(positions[i] - 10, end + 10)
                j = bisect_left(positions, position, i)
                expected = (item.lo + j, positions[j] if j < len(batches) else end, positions[j - 1] if j > i else None)
                assert item.seek(position, item.lo + i, positions[i], end) == expected, (case, i, position)
                k = rng.randrange(i + 1, len(batches) + 1)
                stamps = [b.max_timestamp for b in batches[i:k]]
                t = rng.choice(stamps)
                first = i + next(x for x, s in enumerate(stamps) if s >= t)
                assert item.first_reaching(t, item.lo + i, item.lo + k) == item.lo + first, (case, i, k, t)
                checked += 1
            at = end
    assert checked > 1000


def test_indexes_rebuilt_a_stretch_at_a_time_are_the_batch_by_batch_ones(core) -> None:
    """``SegmentIndexes.append_stretch`` (native stretches) against ``append`` per batch (the pure reader): the same
    entries, the same state after them, the same ``.index`` and ``.timeindex`` bytes once closed, or the same
    ``IndexAppendError`` at the same batch; at intervals from 0 to beyond the segment, so that entries fall on the
    first batch of a stretch, in its middle, on its last batch or nowhere in it, and with max timestamps reached
    early, late or never again."""
    from kafkatool.errors import IndexAppendError
    from kafkatool.segment_indexes import SegmentIndexes

    def built(data: bytes, interval: int, options: ScanOptions) -> tuple:
        indexes = SegmentIndexes(0, interval)
        try:
            indexes.append_scan(scan(io.BytesIO(data), "seg.log", stretches=True, options=options))
            state = (indexes.bytes_since_last_entry, indexes.max_timestamp, indexes.offset_of_max_timestamp)
            indexes.close()
        except IndexAppendError as exc:
            return str(exc), exc.position, indexes.offsets, indexes.times
        return state, indexes.index_bytes(), indexes.timeindex_bytes()

    errors = 0
    for case in range(150):
        rng = random.Random(case)
        data = following_segment(case % 50)
        interval = rng.choice((0, 1, 61, 62, 100, 333, 1000, 4095, 4096, 20_000, 1 << 30))
        options = ScanOptions(window=rng.choice((1500, 9000, 1 << 20)))
        with native.using(None):
            pure = built(data, interval, options)
        with native.using(core):
            fast = built(data, interval, options)
        assert pure == fast, (case, interval, options.window)
        errors += isinstance(pure[0], str)
    assert errors  # offsets going back were met by an entry


NOW_MS = 1_700_000_000_000 + 3_600_000  # the broker's clock for producer expiry: an hour after the batches


def rebuilt(part: Path, options) -> tuple[str, int]:
    """What ``repair`` makes of ``part`` with the reader in use: its plan (every action, with the bytes each write
    would put: ``.index``, ``.timeindex``, ``.txnindex``, producer snapshots, checkpoints), and the load behind it as
    verify's segment checks would feed it, with what it rebuilt for every recovered segment (indexes, aborted
    transactions, producer state at its base) whether or not that differs from the files; and how many stretches
    that load took whole in the segments it recovered (a tap hands on a stretch it takes whole, the batches of one
    it takes apart)."""
    from kafkatool.model import Stretch
    from kafkatool.producer_state import snapshot_bytes
    from kafkatool.repair import plan_partition

    plan = plan_partition(part, str(part), options)
    load = PartitionLoad(part, str(part), recovery_point=options.recovery_point, options=options.scan,
                         rebuild=Rebuild(plan.index_interval_bytes, options.now_ms, options.producer_id_expiration_ms))
    taken = 0
    for seg in list(load.segs):
        tap = load.tap(seg.display)
        if tap is None:
            continue
        with open(seg.path, "rb") as fh:
            stretches = sum(item.__class__ is Stretch for item in tap(scan(fh, seg.display, stretches=True,
                                                                            options=options.scan)))
        taken += stretches if seg.recovered is not None and not seg.deleted else 0
    loaded = load.finish()
    segments = [(s.base_offset, s.recovered, s.indexes and (s.indexes.index_bytes(), s.indexes.timeindex_bytes()),
                 s.aborted_txns, None if s.producers_at_base is None else snapshot_bytes(s.producers_at_base))
                for s in loaded.segments]
    return repr((plan, load_essence(loaded), segments)), taken


def test_repair_of_the_corpus_is_the_same_through_stretches(core) -> None:
    """``repair``'s plan and rebuild of every corpus and fixture partition (Kafka's recovery cases, real brokers'
    dirs, compacted, transactional, legacy): the native core hands the loader stretches, which it takes whole in the
    segments it recovers too (``SegmentIndexes.append_stretch``), the pure reader hands it one batch at a time; the
    plans, the rebuilt files and the loads are the same, from the checkpointed recovery point at the inferred
    interval, and from offset 0 (every segment recovered) at intervals that put entries on every batch or mid-stretch,
    at a window small enough to cut stretches at every refill; and from the last segment only."""
    from kafkatool.repair import RepairOptions
    from kafkatool.walk import partition_dirs

    corpus = Path(os.environ.get("KAFKATOOL_CORPUS", PROJECT_ROOT.parent / "shared" / "corpus"))
    parts = [found.path for found in partition_dirs([corpus / "kafka", corpus / "real", PROJECT_ROOT / "fixtures"])]
    settings = [RepairOptions(now_ms=NOW_MS),
                RepairOptions(index_interval_bytes=1, recovery_point=0, now_ms=NOW_MS, scan=ScanOptions(window=1500)),
                RepairOptions(index_interval_bytes=333, recovery_point=0, now_ms=NOW_MS),
                RepairOptions(index_interval_bytes=4096, recovery_point=1 << 62, now_ms=NOW_MS)]
    differ, taken = [], 0
    for options in settings:
        for part in parts:
            with native.using(None):
                pure, _ = rebuilt(part, options)
            with native.using(core):
                fast, took = rebuilt(part, options)
            taken += took
            if pure != fast:
                differ.append(f"{part} {options}")
    assert not differ, f"repair differs through stretches: {differ[:3]}"
    assert taken > 1000  # the recovered segments' stretches were taken whole


def test_repair_of_generated_and_damaged_partitions_is_the_same_through_stretches(core, tmp_path: Path) -> None:
    """Partitions whose stretches are cut by every kind of event (``stretchy_partition``, in segments of 6 or 64 KiB),
    whole and damaged (``damage``; some with an index cut mid-entry, rebuilt even in a segment the broker trusts),
    planned for repair at odd index intervals (entries on every batch, mid-stretch, rare), from a recovery point
    anywhere (the checkpoint's, 0, any offset, the log end: the segment holding it is recovered, its stretches cross
    it), at two windows, with producers idle for ``producer.id.expiration.ms`` dropped where the broker reloads a
    snapshot or none: the plans, rebuilt files and loads through stretches are the batch-by-batch ones."""
    from kafkatool.repair import RepairOptions

    differ, taken, trusted = [], 0, 0
    for case in range(90):
        rng = random.Random(case)
        part = tmp_path / f"c{case}" / "s-0"
        stretchy_partition(part, rng, segment_bytes=rng.choice((6 * 1024, 64 * 1024)))
        if case % 3:
            damage(part, rng)
        if case % 2 == 0:  # an index cut mid-entry: rebuilt even where the broker trusts its segment
            index = rng.choice(sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex")))
            index.write_bytes(index.read_bytes()[:-3])
        end = load_partition(part, str(part)).on_disk_end_offset
        for _ in range(3):
            options = RepairOptions(index_interval_bytes=rng.choice((None, 1, 61, 100, 299, 300, 333, 1000, 4096)),
                                    recovery_point=rng.choice((None, 0, rng.randint(0, end), end)),
                                    now_ms=NOW_MS, producer_id_expiration_ms=rng.choice((86_400_000, 3_600_000 - 150)),
                                    scan=ScanOptions(window=rng.choice((1500, ScanOptions().window))))
            with native.using(None):
                pure, _ = rebuilt(part, options)
            with native.using(core):
                fast, took = rebuilt(part, options)
            taken += took
            trusted += "index is corrupt" in fast
            if pure != fast:
                differ.append(f"case {case} {options}")
    assert not differ, f"repair differs through stretches: {differ[:3]}"
    assert taken > 1000
    assert trusted > 10


def test_the_index_interval_is_inferred_the_same_through_stretches(core, tmp_path: Path) -> None:
    """``infer_index_interval`` reads each segment natively as stretches (``RangeFit.stretch``: a search per index
    entry) and purely one batch at a time: the same interval, bounds and note on every corpus and fixture partition,
    and on partitions written at odd intervals, in long stretches (``stretchy_partition``) or short, whole and
    damaged (an index entry moved, to another batch or into one), reading each segment whole or only its first
    bytes (entries past them not judged)."""
    from kafkatool.index_interval import infer_index_interval
    from kafkatool.logwriter import PartitionWriter
    from kafkatool.walk import partition_dirs

    corpus = Path(os.environ.get("KAFKATOOL_CORPUS", PROJECT_ROOT.parent / "shared" / "corpus"))
    parts = [found.path for found in partition_dirs([corpus / "kafka", corpus / "real", PROJECT_ROOT / "fixtures"])]
    cases = [(part, ScanOptions(), 4 << 20) for part in parts]
    for case in range(60):
        rng = random.Random(case)
        part = tmp_path / f"c{case}" / "s-0"
        if case % 2:
            stretchy_partition(part, rng, segment_bytes=rng.choice((6 * 1024, 64 * 1024)))
        else:  # long stretches: one leader epoch, no producer
            with PartitionWriter(part, topic="s", partition=0, topic_id=bytes(range(1, 17)), segment_bytes=64 * 1024,
                                 index_interval_bytes=rng.choice((1, 61, 100, 333, 1000, 4096))) as w:
                for i in range(rng.randint(50, 400)):
                    w.append(record_batch(i, [RecordSpec(b"k", bytes(rng.randint(0, 300)), 1_700_000_000_000 + i)]))
        if case % 3:
            damage(part, rng)
        for window in (1500, ScanOptions().window):
            cases.append((part, ScanOptions(window=window), rng.choice((100, 3000, 20_000, 4 << 20))))
    differ = []
    for part, options, scan_bytes in cases:
        with native.using(None):
            pure = infer_index_interval(part, options, scan_bytes=scan_bytes)
        with native.using(core):
            fast = infer_index_interval(part, options, scan_bytes=scan_bytes)
        if pure != fast:
            differ.append((part, options.window, scan_bytes, pure, fast))
    assert not differ, f"the inferred interval differs through stretches: {differ[:3]}"
    assert sum(c[0].is_relative_to(tmp_path) and infer_index_interval(c[0]).source == "inferred" for c in cases) > 60


def test_an_interval_fit_through_stretches_is_the_batch_by_batch_one(core) -> None:
    """``RangeFit`` fed a segment's stretches (native) and its batches one at a time (pure), with index entries as
    Kafka's rule puts them at some interval, or moved (into a batch, onto the next batch, into the last batch read,
    past it), dropped or added, reading the whole segment or only its first bytes: the same range and last batch."""
    from kafkatool.index_interval import RangeFit
    from kafkatool.model import Batch

    def fitted(data: bytes, entries: list[int], limit: int, options: ScanOptions) -> tuple:
        fit = RangeFit(entries)
        fit.feed(scan(io.BytesIO(data), "seg.log", end=limit, stretches=True, options=options))
        return fit.range(), fit.fits and fit.end

    fits = 0
    for case in range(200):
        rng = random.Random(case)
        data = following_segment(case % 50)
        with native.using(None):
            batches = [b for b in scan(io.BytesIO(data), "seg.log") if b.__class__ is Batch]
        interval, last, entries = rng.choice((0, 61, 100, 333, 1000, 4096)), 0, []
        for b in batches:  # LogSegment.append's rule
            if b.position - last > interval:
                entries.append(b.position)
                last = b.position
        limit = rng.choice((len(data), rng.randrange(len(data) + 1)))
        read = [b for b in batches if b.position < limit]
        kind = rng.randrange(6)
        if kind == 1 and entries:  # moved by a few bytes: into a batch
            entries[rng.randrange(len(entries))] += rng.choice((-3, -1, 1, 5))
        elif kind == 2 and entries:
            del entries[rng.randrange(len(entries))]
        elif kind == 3:
            entries.append(rng.choice(batches).position)
        elif kind == 4 and read:  # into the last batch read, or just past it
            entries.append(read[-1].position + rng.choice((1, read[-1].size // 2, read[-1].size, read[-1].size + 1)))
        options = ScanOptions(window=rng.choice((1500, 9000, 1 << 20)))
        with native.using(None):
            pure = fitted(data, entries, limit, options)
        with native.using(core):
            fast = fitted(data, entries, limit, options)
        assert pure == fast, (case, kind, limit, interval)
        fits += pure[0] is not None
    assert 50 < fits < 190


def history_essence(h) -> tuple:
    """Everything a :class:`kafkatool.producers.PartitionHistory` holds but the loaded partition (compared on its
    own by the loader's tests): findings in order, producer state, first sequences, batch counts, transactions (in
    order, with records, batches and last offsets), the states at each snapshot's offset."""
    return (h.findings, h.entries(), h.first_sequence, h.batches, h.transactions, h.states, h.log_start, h.leo,
            h.snapshot)


AUDIT_PRODUCERS = (30, 31, 32, 33)
_SEQ_WRAP = 1 << 31


def audit_partition(path: Path, rng: random.Random) -> None:
    """A partition of long stretches of idempotent batches of ``AUDIT_PRODUCERS`` taking turns in bursts, broken by
    what the idempotence audit must find: a batch written twice (right after itself or a few batches back, inside a
    stretch, or far apart), sequence gaps, sequences going back (out of order, not a duplicate), epoch bumps (at 0
    or not), fenced zombies, sequences wrapping around past 2^31 - 1, batches without a producer id, and
    exactly-once producers' transactions (``eos_run``), some batches of one of them out of its transaction
    (``out_of_transaction``); segments of 6 or 64 KiB (a producer snapshot at each roll, and one copied to an offset
    inside a segment), half of them with a recovery point at a later segment."""
    from kafkatool.logwriter import PartitionWriter

    ts = 1_700_000_000_000
    epochs = dict.fromkeys(AUDIT_PRODUCERS, 0)
    seqs = dict.fromkeys(AUDIT_PRODUCERS, 0)
    written: dict[int, list[tuple[int, int, int]]] = {pid: [] for pid in AUDIT_PRODUCERS}  # (epoch, seq, records)
    eos_seqs: dict = {}
    eos_epochs = dict.fromkeys(EOS_PRODUCERS, 0)
    with PartitionWriter(path, topic="a", partition=0, topic_id=bytes(range(2, 18)),
                         segment_bytes=rng.choice((6 * 1024, 64 * 1024)), index_interval_bytes=300) as w:
        offset = 0

        def put(pid: int, epoch: int, seq: int, n: int) -> None:
            nonlocal offset
            records = [RecordSpec(f"a{offset + i}".encode(), bytes(rng.randint(0, 20)), ts + offset + i)
                       for i in range(n)]
            w.append(record_batch(offset, records, producer_id=pid, producer_epoch=epoch,
                                  base_sequence=seq % _SEQ_WRAP if pid >= 0 else -1))
            offset += n

        for _ in range(rng.randint(40, 120)):
            kind = rng.choices(("burst", "dup-near", "dup-far", "gap", "back", "bump", "zombie", "wrap", "nopid",
                                "eos"), (60, 4, 4, 3, 3, 2, 2, 2, 2, 8))[0]
            if kind == "eos":
                offset = eos_run(w, rng, offset, 0, eos_seqs, eos_epochs, ts)
                continue
            if kind == "nopid":
                put(-1, -1, -1, rng.randint(1, 3))
                continue
            pid = rng.choice(AUDIT_PRODUCERS)
            if kind in ("dup-near", "dup-far") and written[pid]:
                done = written[pid]
                epoch, seq, n = done[-rng.randint(1, min(4, len(done)))] if kind == "dup-near" else rng.choice(done)
                put(pid, epoch, seq, n)
                continue
            if kind == "gap":
                seqs[pid] += rng.randint(1, 5)
            elif kind == "back":
                seqs[pid] = max(0, seqs[pid] - rng.randint(1, 3))
            elif kind == "bump":
                epochs[pid] += 1
                seqs[pid] = 0 if rng.random() < 0.7 else rng.randint(1, 9)
            elif kind == "zombie" and epochs[pid] > 0:
                put(pid, epochs[pid] - 1, seqs[pid], 1)
            elif kind == "wrap":
                seqs[pid] = _SEQ_WRAP - 1 - rng.randint(0, 6)
            for _ in range(rng.randint(1, 40)):  # a burst of the producer, the others taking turns now and then
                who = pid if rng.random() < 0.8 else rng.choice(AUDIT_PRODUCERS)
                n = rng.randint(1, 3)
                written[who].append((epochs[who], seqs[who] % _SEQ_WRAP, n))
                put(who, epochs[who], seqs[who], n)
                seqs[who] = (seqs[who] + n) % _SEQ_WRAP
    if rng.random() < 0.5:
        out_of_transaction(path, rng)
    snapshots = sorted(path.glob("*.snapshot"))
    if snapshots and rng.random() < 0.7:  # a snapshot in the middle of a segment: its state is taken inside a stretch
        (path / f"{rng.randrange(1, offset):020d}.snapshot").write_bytes(rng.choice(snapshots).read_bytes())
    bases = sorted(int(log.name[:20]) for log in path.glob("*.log"))
    if len(bases) > 1 and rng.random() < 0.5:
        from kafkatool.formats import checkpoints

        (path.parent / "recovery-point-offset-checkpoint").write_bytes(
            checkpoints.build_offset_checkpoint([("a", 0, rng.choice(bases[1:]))]))


def out_of_transaction(path: Path, rng: random.Random) -> None:
    """Clears the transactional bit (CRC recomputed) of some of an exactly-once producer's data batches inside its
    transaction, in each segment from one of them on up to its next marker: what the broker refuses
    (InvalidTxnState), which the writer does not write."""
    pid = rng.choice(EOS_PRODUCERS)
    for log in sorted(path.glob("*.log")):
        data = bytearray(log.read_bytes())
        starts, p = [], 0
        while p + 61 <= len(data):
            if struct.unpack_from(">q", data, p + 43)[0] == pid:
                starts.append(p)
            p += 12 + struct.unpack_from(">i", data, p + 8)[0]
        if len(starts) < 2:
            continue
        for at in starts[rng.randrange(1, len(starts)):]:
            attributes = struct.unpack_from(">h", data, at + 21)[0]
            if attributes & 0x20:  # its marker
                break
            struct.pack_into(">h", data, at + 21, attributes & ~0x10)
            end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
            struct.pack_into(">I", data, at + 17, crc32c(bytes(data[at + 21:end])))
        log.write_bytes(bytes(data))


def audited(part: Path) -> tuple:
    """The replay of ``part`` and the ``producers`` and ``txns`` outputs of its log dir."""
    from kafkatool.producers import producers_paths, replay_partition
    from kafkatool.txns import txns_paths

    return (history_essence(replay_partition(part, str(part))), list(producers_paths([part.parent])),
            list(txns_paths([part.parent])))


def test_the_idempotence_audit_of_the_corpus_is_the_same_through_stretches(core) -> None:
    """``replay_partition`` of every corpus and fixture partition, and ``producers``/``txns`` of every log dir: the
    native core hands the audit's replay stretches (``_Replay.stretch``), the pure reader one batch at a time; the
    findings, producer state, counts, transactions and snapshot states are the same."""
    from kafkatool.producers import producers_paths, replay_partition
    from kafkatool.txns import txns_paths
    from kafkatool.walk import partition_dirs

    corpus = Path(os.environ.get("KAFKATOOL_CORPUS", PROJECT_ROOT.parent / "shared" / "corpus"))
    roots = [corpus / "kafka", corpus / "real", PROJECT_ROOT / "fixtures"]
    parts = [pd.path for pd in partition_dirs(roots)]
    assert len(parts) > 100
    differ = []
    for part in parts:
        with native.using(None):
            pure = history_essence(replay_partition(part))
        with native.using(core):
            fast = history_essence(replay_partition(part))
        if pure != fast:
            differ.append(str(part))
    for run in (producers_paths, txns_paths):
        with native.using(None):
            pure = list(run(roots))
        with native.using(core):
            fast = list(run(roots))
        if pure != fast:
            differ.append(run.__name__)
    assert not differ, f"the audit differs through stretches: {differ[:5]}"


def test_the_idempotence_audit_of_generated_and_damaged_partitions_is_the_same_through_stretches(
        core, tmp_path: Path) -> None:
    """Partitions of every case the audit judges (``audit_partition``) and ``stretchy_partition`` s, whole and
    damaged (``damage``): the audit's replay through stretches is the batch-by-batch one, and ``producers`` and
    ``txns`` print the same; every finding the audit makes shows up."""
    differ = []
    codes: set[str] = set()
    for case in range(80):
        rng = random.Random(1000 + case)
        part = tmp_path / f"c{case}" / ("a-0" if case % 4 else "s-0")
        (audit_partition if case % 4 else stretchy_partition)(part, rng)
        if case % 3 == 2:
            damage(part, rng)
        with native.using(None):
            pure = audited(part)
        with native.using(core):
            fast = audited(part)
        if pure != fast:
            differ.append(f"case {case}")
        codes |= {f.code for f in pure[0][0]}
    assert not differ, f"the audit differs through stretches: {differ[:5]}"
    assert {"duplicate-sequence-number", "sequence-gap", "sequence-out-of-order", "producer-epoch-bump",
            "producer-fenced", "txn-invalid-state"} <= codes, codes


def test_crc32c_is_the_packages(core, corpus: Path) -> None:
    """The native core's CRC32C (a producer snapshot's, a batch the general path checks) is the ``crc32c``
    package's, the pure path's: on every corpus log and snapshot, whole and continued from a CRC of its first half."""
    files = [p for p in sorted(corpus.rglob("*")) if p.suffix in (".log", ".snapshot") and p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        half = len(data) // 2
        assert core.crc32c(data) == crc32c(data), path
        assert core.crc32c(memoryview(data)[half:], crc32c(data[:half])) == crc32c(data), path
    assert core.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
