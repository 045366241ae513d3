"""Record-count bombs: memory bounded by a batch's bytes, not by how many records they expand to.

An ~11 KB zstd batch declaring 18 M minimal records (7 bytes each, 126 MB decompressed, under the default
``--max-decompressed``) once cost ``verify --deep`` 4.8 GB and ``dump -r`` 1.5 GB; a valid batch of 12 M records
1.1 GB. Records are now decoded :data:`kafkatool.records.RECORD_CHUNK` at a time (``records.record_chunks``; the
native window decoder leaves a batch declaring more to it), so the peak is the decompressed bytes held once plus
a chunk. Each peak is a child process's (``RUSAGE_CHILDREN``, in a fresh interpreter per measurement).
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from kafkatool import native
from kafkatool.formats import legacy
from kafkatool.formats import record_batch as fmt
from kafkatool.logwriter import LogDirWriter
from kafkatool.records import RECORD_CHUNK, RawBatch, decode_records, record_chunks, scan
from tests.conftest import CORE

from .clirun import KAFKATOOL

LIMIT_MB = 256  # the README's bound for a record-count bomb under the default --max-decompressed
MINIMAL = b"\x0c\x00\x00\x00\x01\x01\x00"  # length 6, attributes, timestamp delta 0, offset delta 0, null key/value
TS = 1_700_000_000_000
# the pure reader takes ~3 s a million records: its bomb is smaller, and still 1.5 GB of records before the chunks
MODES = [pytest.param(({}, 18_000_000), id="native"),
         pytest.param(({"KAFKATOOL_PURE_PYTHON": "1"}, 6_000_000), id="pure")]


def _section(count: int, valid: bool) -> bytes:
    """``count`` minimal records: all at offset delta 0 (a bomb), or at deltas 0..count-1 (a valid batch)."""
    if not valid:
        return MINIMAL * count
    parts = []
    for width, lo, hi in ((1, 0, 1 << 6), (2, 1 << 6, 1 << 13), (3, 1 << 13, 1 << 20), (4, 1 << 20, 1 << 27)):
        hi = min(hi, count)
        if lo >= hi:
            continue
        # length (attributes, two deltas, key, value, header count), attributes, timestamp delta, the offset
        # delta's varint (zig-zag: 2 * delta), null key, null value, no header; one varint byte at a time
        rows = bytearray((bytes((2 * (5 + width), 0, 0)) + bytes(width) + b"\x01\x01\x00") * (hi - lo))
        for k in range(width):
            more = 0x80 if k < width - 1 else 0
            rows[3 + k::6 + width] = bytes(((z >> 7 * k) & 0x7F) | more for z in range(2 * lo, 2 * hi, 2))
        parts.append(rows)
    return b"".join(parts)


def _batch(count: int, valid: bool, section: bytes | None = None, last_offset_delta: int | None = None) -> bytes:
    """One zstd v2 batch at offset 0 declaring ``count`` records of ``section`` (default: :func:`_section`), its last
    offset ``last_offset_delta`` (default: ``count - 1``)."""
    data = _section(count, valid) if section is None else section
    body = {"attributes": {"unused": 0, "has_delete_horizon_ms": False, "is_control": False,
                           "is_transactional": False, "timestamp_type": "create", "compression": "zstd"},
            "last_offset_delta": count - 1 if last_offset_delta is None else last_offset_delta, "base_timestamp": TS,
            "max_timestamp": TS, "producer_id": -1, "producer_epoch": -1, "base_sequence": -1, "records_count": count,
            "records": zstandard.ZstdCompressor().compress(data)}
    return fmt.RecordBatch.build({"base_offset": 0, "batch": {"partition_leader_epoch": 0, "body": body}})


def _logdir(root: Path, raw: bytes) -> Path:
    with LogDirWriter(root, cluster_id="bomb", node_id=1) as w:
        w.partition("bomb", 0, bytes(range(1, 17))).append(raw)
    return root / "bomb-0"


def _peak(args: list[str], env: dict[str, str]) -> tuple[int, int, str]:
    """(exit code, peak RSS in MB, stdout) of ``kafkatool ARGS`` run in a fresh interpreter."""
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
             "sys.stdout.buffer.write(r.stdout[-4000:])\n"
             "print('\\nPEAK', r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n")
    out = subprocess.run([sys.executable, "-c", probe, *KAFKATOOL, *args],
                         env={**os.environ, **env}, capture_output=True, text=True, check=True).stdout
    text, _, tail = out.rpartition("\nPEAK ")
    code, peak = map(int, tail.split())
    return code, peak, text


_BOMBS: dict[int, Path] = {}


def _bomb(count: int, tmp_path_factory) -> Path:
    """``count`` records of 7 bytes in one zstd batch of a few KB (18 M: ~11 KB, 126 MB decompressed), every one
    at the batch's base offset; built once per count."""
    if count not in _BOMBS:
        raw = _batch(count, valid=False)
        assert len(raw) < 16 << 10
        _BOMBS[count] = _logdir(tmp_path_factory.mktemp("bomb"), raw)
    return _BOMBS[count]


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    """A valid batch of 12 M records at offsets 0..12 M - 1."""
    return _logdir(tmp_path_factory.mktemp("valid"), _batch(12_000_000, valid=True))


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_verify_deep_on_a_record_count_bomb_is_bounded(tmp_path_factory, mode) -> None:
    env, count = mode
    bomb = _bomb(count, tmp_path_factory)
    code, peak, out = _peak(["verify", "--deep", "-f", "jsonl", str(bomb)], env)
    assert code == 1
    assert '"code": "record-offset-invalid"' in out and "record offset 0 is not increasing" in out
    assert peak < LIMIT_MB, f"verify --deep peaked at {peak} MB"


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_dump_records_of_a_record_count_bomb_is_bounded(tmp_path_factory, mode) -> None:
    env, count = mode
    bomb = _bomb(count, tmp_path_factory)
    # every record decoded and searched, none shown (their keys are null): the peak is the decoding's, not the output's
    code, peak, out = _peak(["dump", "-r", "-f", "jsonl", "--key", "k", str(bomb)], env)
    assert code == 0
    assert out.strip() == ""
    assert peak < LIMIT_MB, f"dump -r peaked at {peak} MB"


def test_dump_records_shows_every_record_of_a_bomb_natively_and_bounded(tmp_path_factory) -> None:
    # every record shown, not searched: the native core renders the batch a chunk at a time (RecordChunk), and the
    # peak is the decompressed bytes plus a chunk, not the batch's records (1.5 GB when a window decoded them whole)
    if native.CORE is None:  # (the pure reader's records go through Python's output: minutes for 18 M)
        pytest.skip("the native core is not built here, or KAFKATOOL_PURE_PYTHON asks for the pure reader")
    bomb = _bomb(18_000_000, tmp_path_factory)
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
             "lines, tail = 0, b''\n"
             "while piece := p.stdout.read(1 << 20):\n"
             "    lines, tail = lines + piece.count(b'\\n'), (tail + piece)[-1000:]\n"
             "print(p.wait(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, lines, tail)\n")
    out = subprocess.run([sys.executable, "-c", probe, *KAFKATOOL, "dump", "-r", "-f", "jsonl",
                          str(bomb / "00000000000000000000.log")], capture_output=True, text=True, check=True).stdout
    code, peak, lines, tail = out.split(" ", 3)
    assert (code, lines) == ("0", "18000001")  # the batch line, then each record once
    assert '{"type": "record", "offset": 0, "timestamp": 1700000000000' in tail
    assert int(peak) < LIMIT_MB, f"dump -r peaked at {peak} MB"


@pytest.mark.slow
def test_a_valid_twelve_million_record_batch_is_bounded(valid: Path) -> None:
    code, peak, out = _peak(["verify", "--deep", "-f", "jsonl", str(valid)], {})
    assert code == 0, out
    assert peak < LIMIT_MB, f"verify --deep peaked at {peak} MB"
    code, peak, out = _peak(["dump", "-r", "-f", "jsonl", "--key", "k", str(valid)], {})
    assert code == 0 and out.strip() == ""
    assert peak < LIMIT_MB, f"dump -r peaked at {peak} MB"


# --- the chunks are the records decode_records gives, with its findings -------------------------------------


def _chunks_agree(data: bytes, core) -> None:
    """record_chunks (with ``core``) gives decode_records' records (the pure reader's) and findings, in pieces."""
    (batch, raw), = (i for i in scan(io.BytesIO(data), "x", with_raw=True) if i.__class__ is RawBatch)
    with native.using(None):
        whole, findings = decode_records(batch, raw, "x")
    with native.using(core):
        chunks = list(record_chunks(batch, raw, "x"))
        times = list(record_chunks(batch, raw, "x", times=True))
    assert [r for c in chunks if c.__class__ is list for r in c] == whole
    assert all(len(c) <= RECORD_CHUNK for c in chunks if c.__class__ is list)
    assert [c for c in chunks if c.__class__ is not list] == list(findings)
    assert [o for c in times if c.__class__ is tuple for o in c[0]] == [r.offset for r in whole]
    assert [t for c in times if c.__class__ is tuple for t in c[1]] == [r.timestamp for r in whole]


@pytest.mark.parametrize("mode", ["native", "pure"])
def test_record_chunks_are_decode_records_in_pieces(mode: str) -> None:
    core = None
    if mode == "native":
        if CORE is None:
            pytest.skip("kafkatool._native is not built here")
        core = CORE
    n = 2 * RECORD_CHUNK + 5
    good = _section(n, valid=True)
    _chunks_agree(_batch(n, True, good), core)
    bad = bytearray(good)
    bad[len(_section(RECORD_CHUNK + 3, valid=True))] = 0x7F  # a record of the second chunk runs past the end
    _chunks_agree(_batch(n, True, bytes(bad)), core)
    _chunks_agree(_batch(n, True, good + b"\x00\x00"), core)  # trailing bytes after the last record
    _chunks_agree(_batch(n, True, good[:-1]), core)  # the last record cut short
    _chunks_agree(_batch(n + 1, True, good), core)  # one record more declared than there is
    with native.using(core):  # the bomb's first chunk: RECORD_CHUNK records, every one at offset 0
        batch, raw = next(i for i in scan(io.BytesIO(_batch(n, False)), "x", with_raw=True)
                          if i.__class__ is RawBatch)
        first = next(iter(record_chunks(batch, raw, "x")))
    assert len(first) == RECORD_CHUNK and {r.offset for r in first} == {0}


def test_a_damaged_record_count_bomb_is_bounded_too(tmp_path) -> None:
    # one byte after the 18 M records: the native core gives up at the last chunk, the pure reader words it
    bomb = _logdir(tmp_path, _batch(18_000_000, False, MINIMAL * 18_000_000 + b"\x00"))
    code, peak, out = _peak(["verify", "--deep", "-f", "jsonl", str(bomb)], {})
    assert code == 1 and "1 bytes remain after the declared 18000000 records" in out
    assert peak < LIMIT_MB, f"verify --deep peaked at {peak} MB"


@pytest.mark.slow
def test_a_control_batch_declaring_millions_of_records_is_bounded(tmp_path) -> None:
    # a COMMIT record (key version 0 type 1, value version 0 epoch 5) 2 M times in one control batch: plain verify
    # reads a control batch's records (its marker, its count): 460 MB of them before they came a chunk at a time
    n = 2_000_000
    marker = bytes((32, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 5, 0))
    body = {"attributes": {"unused": 0, "has_delete_horizon_ms": False, "is_control": True,
                           "is_transactional": True, "timestamp_type": "create", "compression": "zstd"},
            "last_offset_delta": n - 1, "base_timestamp": TS, "max_timestamp": TS, "producer_id": 5,
            "producer_epoch": 0, "base_sequence": -1, "records_count": n,
            "records": zstandard.ZstdCompressor().compress(marker * n)}
    raw = fmt.RecordBatch.build({"base_offset": 0, "batch": {"partition_leader_epoch": 0, "body": body}})
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(raw)
    code, peak, out = _peak(["verify", "-f", "jsonl", str(tmp_path)], {})
    assert code == 1 and f"control batch holds {n} records (header says {n}); it must hold one" in out
    assert peak < LIMIT_MB, f"verify peaked at {peak} MB"


# --- locate (and dump --from-offset / --from-time): the found batch read a chunk at a time -------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_locate_in_a_record_count_bomb_is_bounded(tmp_path_factory, mode) -> None:
    env, count = mode
    bomb = _bomb(count, tmp_path_factory)
    # offset 5 lies in the batch (0..count-1) but every record is at 0: the same batch, no record, as before
    code, peak, out = _peak(["locate", "--offset", "5", "-f", "jsonl", str(bomb)], env)
    assert code == 0, out
    assert '"position": 0' in out and f'"record_count": {count}' in out and '"record": null' in out
    assert "the batch holds no record at or after offset 5" in out
    assert peak < LIMIT_MB, f"locate peaked at {peak} MB (3.36 GB before its records came a chunk at a time)"


@pytest.mark.slow
def test_dump_from_an_offset_in_a_record_count_bomb_is_bounded(tmp_path_factory) -> None:
    env, count = MODES[0].values[0]
    bomb = _bomb(count, tmp_path_factory)
    code, peak, out = _peak(["dump", "-r", "--from-offset", "1", "-f", "jsonl", "--key", "k", str(bomb)], env)
    assert code == 0 and out.strip() == ""
    assert peak < LIMIT_MB, f"dump -r --from-offset peaked at {peak} MB"


# --- v1 compressed wrappers holding millions of inner messages ---------------------------------------------


def _wrapper(count: int) -> bytes:
    """A v1 gzip wrapper at offset ``count - 1`` whose inner message set is ``count`` v1 messages with null key and
    value (34 bytes each: 3.9 M fill 133 MB, under the default --max-decompressed) at relative offsets 0..count-1."""
    one = legacy.LogEntry.build({"offset": 0, "message": {"body": {
        "magic": 1, "attributes": {"unused": 0, "timestamp_type": "create", "compression": "none"},
        "timestamp": TS, "key": None, "value": None}}})
    rows = bytearray(one * count)
    for k in range(5, 8):  # the offset's three low bytes (count < 2^24); the CRC does not cover the offset
        rows[k::len(one)] = bytes((i >> 8 * (7 - k)) & 0xFF for i in range(count))
    return legacy.LogEntry.build({"offset": count - 1, "message": {"body": {
        "magic": 1, "attributes": {"unused": 0, "timestamp_type": "create", "compression": "gzip"},
        "timestamp": TS, "key": None, "value": gzip.compress(bytes(rows), 1)}}})


@pytest.mark.parametrize("mode", ["native", "pure"])
def test_a_legacy_wrappers_chunks_are_its_records(mode: str) -> None:
    if mode == "native" and CORE is None:
        pytest.skip("kafkatool._native is not built here")
    n = 2 * RECORD_CHUNK + 5
    with native.using(CORE if mode == "native" else None):
        (batch, raw), = (i for i in scan(io.BytesIO(_wrapper(n)), "x", with_raw=True) if i.__class__ is RawBatch)
        whole, findings = decode_records(batch, raw, "x")
        chunks = list(record_chunks(batch, raw, "x"))
    assert (batch.base_offset, batch.last_offset, batch.record_count, findings) == (0, n - 1, n, [])
    assert [r.offset for r in whole] == list(range(n)) and {r.timestamp for r in whole} == {TS}
    assert [len(c) for c in chunks] == [RECORD_CHUNK, RECORD_CHUNK, 5]
    assert [r for c in chunks for r in c] == whole


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    count = 3_900_000
    raw = _wrapper(count)
    d = tmp_path_factory.mktemp("wrapper") / "w-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(raw)
    return d


@pytest.mark.slow
def test_a_legacy_wrapper_of_millions_of_messages_is_bounded(wrapper: Path) -> None:
    code, peak, out = _peak(["verify", "-f", "jsonl", str(wrapper)], {})
    assert code == 0, out
    assert peak < LIMIT_MB, f"verify peaked at {peak} MB"
    code, peak, out = _peak(["dump", "-r", "-f", "jsonl", "--key", "k", str(wrapper)], {})
    assert code == 0 and out.strip() == ""
    assert peak < LIMIT_MB, f"dump -r peaked at {peak} MB"
    code, peak, out = _peak(["locate", "--offset", "3899998", "-f", "jsonl", str(wrapper)], {})
    assert code == 0 and '"offset": 3899998' in out
    assert peak < LIMIT_MB, f"locate peaked at {peak} MB"


# --- delivery: a batch whose offsets it must decode (a gap, as compaction leaves) read a chunk at a time -------


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_delivery_over_a_record_count_bomb_is_bounded(tmp_path, isolation: str) -> None:
    # 18 M records at offset 0 in a batch whose last offset is 18 M: its count does not fill its offsets, so the
    # delivery check decodes it for the offsets it holds; a consumer takes the first and skips the 17,999,999 others
    # (below its position): a chunk of them at a time, not one range each (175 s and "missing 17,999,999" before)
    count = 18_000_000
    bomb = _logdir(tmp_path / "log", _batch(count, False, last_offset_delta=count))
    sink = tmp_path / "sink.csv"
    sink.write_text("topic,partition,offset\nbomb,0,0\n")
    code, peak, out = _peak(["delivery", "-s", str(sink), "--isolation", isolation, "-f", "jsonl", str(bomb)], {})
    assert code == 1 and '"verdict": "exactly-once"' in out and '"expected": 1,' in out, out[-500:]
    assert '"message": "17999999 records at offsets below the consumer\'s position, the first at offset 0 ' in out
    assert peak < LIMIT_MB, f"delivery peaked at {peak} MB"


def test_offsets_over_a_record_count_bomb_in_consumer_offsets_is_bounded(tmp_path) -> None:
    """A ``__consumer_offsets`` batch of 1.5 M keyless records: the replay reads it a chunk at a time and keeps 100
    of its 1.5 M ``offsets-null-key`` findings, counting the rest in one (it held every record and every finding:
    ~500 MB here, 1 GB at 3 M)."""
    with LogDirWriter(tmp_path, cluster_id="bomb", node_id=1) as w:
        w.partition("__consumer_offsets", 0, bytes(range(1, 17))).append(_batch(1_500_000, valid=False))
    code, peak, out = _peak(["offsets", "-f", "jsonl", str(tmp_path)], {})
    assert code == 1
    assert "and 1499900 more offsets-null-key findings in this file" in out  # (out: the last 4,000 bytes)
    assert peak < LIMIT_MB, f"offsets peaked at {peak} MB"
