"""``repair --salvage`` on damaged input: the whole v2 batches with a valid CRC after a cut, found by resynchronising
(``records.resync``) past garbage, a flipped length or magic, a torn batch and zero runs, on corpus copies damaged
here; the same batches with the native core and without; memory bounded whatever a candidate declares."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool import native
from kafkatool.build import RecordSpec, record_batch
from kafkatool.repair import salvage_batches

from .conftest import CORE, PROJECT_ROOT

SEGMENT = "kafka/logdir/codecs-0/00000000000000000000.log"


def framing(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of every entry of an undamaged segment, by its framing."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        out.append((pos, size))
        pos += size
    return out


def garbage(n: int, seed: int) -> bytes:
    """Random bytes, one in eight a magic 2 (so candidates abound), none of them a valid batch."""
    rng = random.Random(seed)
    return bytes(2 if rng.random() < 0.125 else rng.randrange(256) for _ in range(n))


@pytest.fixture
def segment(corpus: Path, tmp_path: Path) -> tuple[Path, bytes, list[tuple[int, int]]]:
    """A writable copy of a corpus segment (uncompressed and compressed batches), its bytes and its entries."""
    path = tmp_path / "00000000000000000000.log"
    shutil.copyfile(corpus / SEGMENT, path)
    path.chmod(0o644)
    data = path.read_bytes()
    entries = framing(data)
    assert len(entries) > 10 and sum(entries[-1]) == len(data)
    return path, data, entries


def salvaged(path: Path, start: int) -> list[tuple[int, bytes]]:
    """``salvage_batches`` read both ways, which must agree."""
    with native.using(None):
        pure = list(salvage_batches(path, start))
    if CORE is not None:
        with native.using(CORE):
            assert list(salvage_batches(path, start)) == pure
    return pure


def batches(data: bytes, entries: list[tuple[int, int]], shift: int = 0) -> list[tuple[int, bytes]]:
    return [(pos + shift, data[pos:pos + size]) for pos, size in entries]


# Each case damages the copy after its 3rd batch, cuts there (as the loader would), and expects exactly the intact
# batches after the damage: these pin the behaviour of the decoder salvage had (they pass on it and on records.resync).

def test_garbage_between_batches(segment) -> None:
    path, data, entries = segment
    at = entries[4][0]
    junk = garbage(333, 1)
    path.write_bytes(data[:at] + junk + data[at:])
    assert salvaged(path, entries[3][0]) == batches(data, entries[4:], len(junk))


def test_a_flipped_length(segment) -> None:
    path, data, entries = segment
    damaged = bytearray(data)
    damaged[entries[3][0] + 9] ^= 0x10  # the batch length, off by 1 MiB: past the file
    damaged[entries[5][0] + 11] ^= 0x04  # a later one, off by 4 bytes: its CRC no longer covers its bytes
    path.write_bytes(bytes(damaged))
    assert salvaged(path, entries[3][0]) == batches(data, [entries[4], *entries[6:]])


def test_a_flipped_magic(segment) -> None:
    path, data, entries = segment
    damaged = bytearray(data)
    for k in (3, 6):
        damaged[entries[k][0] + 16] = 1  # read as a v1 message by the framing; no v2 batch for salvage
    path.write_bytes(bytes(damaged))
    assert salvaged(path, entries[3][0]) == batches(data, [*entries[4:6], *entries[7:]])


def test_a_torn_last_batch(segment) -> None:
    path, data, entries = segment
    path.write_bytes(data[:entries[-1][0] + entries[-1][1] // 2])
    assert salvaged(path, entries[3][0]) == batches(data, entries[4:-1])
    path.write_bytes(data[:entries[-1][0] + 60])  # not even its header
    assert salvaged(path, entries[3][0]) == batches(data, entries[4:-1])


def test_zero_runs(segment) -> None:
    path, data, entries = segment
    damaged = bytearray(data)
    lo, hi = entries[3][0], entries[6][0] + 30  # zeros over three batches and the head of a fourth (CRC-covered)
    damaged[lo:hi] = bytes(hi - lo)
    path.write_bytes(bytes(damaged) + bytes(4096))  # and a preallocated tail
    assert salvaged(path, lo) == batches(data, entries[7:])


def test_nothing_after_the_cut(segment) -> None:
    path, data, entries = segment
    assert salvaged(path, len(data) - 1) == []
    assert salvaged(path, len(data) + 100) == []
    path.write_bytes(b"")
    assert salvaged(path, 0) == []


def test_a_batch_bigger_than_the_window(tmp_path: Path) -> None:
    """A valid batch of 5 MiB after garbage (more than the 4 MiB read at a time) is found whole."""
    big = record_batch(7, [RecordSpec(b"k", random.Random(3).randbytes(5 << 20), 1_700_000_000_000)])
    small = record_batch(8, [RecordSpec(b"k", b"v", 1_700_000_000_000)])
    path = tmp_path / "00000000000000000000.log"
    junk = garbage(1000, 2)
    path.write_bytes(small + junk + big + junk + small)
    assert salvaged(path, 0) == [(len(small) + 1000, big), (len(small) + 2000 + len(big), small)]


_PEAK = """
import resource, sys
from pathlib import Path
from kafkatool.repair import salvage_batches
found = list(salvage_batches(Path(sys.argv[1]), 0))
assert [p for p, _ in found] == [int(sys.argv[2])], found
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.parametrize("pure", [False, True])
def test_memory_is_bounded_whatever_a_candidate_declares(tmp_path: Path, pure: bool) -> None:
    """A candidate header in garbage declaring 400 MB, which the file holds (zeros, sparse): its CRC is checked in
    pieces, not read whole. The decoder salvage had (the file mapped, the candidate sliced into bytes) peaked 770 MB
    above an idle import: this fails on it."""
    small = record_batch(8, [RecordSpec(b"k", b"v", 1_700_000_000_000)])
    liar = bytearray(garbage(61, 4))
    struct.pack_into(">qiib", liar, 0, 0, 400_000_000 - 12, 0, 2)
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as fh:
        fh.write(small + liar)
        fh.truncate(len(small) + 400_000_000 + 10)
        fh.seek(0, 2)
        fh.write(small)
    baseline = _peak_rss("import kafkatool.repair; import resource; "
                         "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)", pure)
    peak = _peak_rss(_PEAK, pure, str(path), str(len(small) + 400_000_000 + 10))
    assert peak - baseline < 100_000, f"salvage peaked at {peak} KB, {peak - baseline} KB above an idle import"


def _peak_rss(code: str, pure: bool, *args: str) -> int:
    env = {"KAFKATOOL_PURE_PYTHON": "1" if pure else "0"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env}, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])
