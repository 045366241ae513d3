"""Option ``splitBytes`` on damaged input: a segment is cut only where its offset index names a whole v2 batch with a
valid CRC (``records.resync`` of that one position), whatever the damage there (garbage, a flipped length or magic, a
torn batch, zeros, an index entry inside a batch), and the pieces never share or lose a batch that begins in them.

Planning and reading are checked without Spark (``plan``, ``read_partition``); corpus copies are damaged here.
"""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest

from kafkatool import native
from kafkatool.smallfiles import read_offset_index
from kafkatool.spark.plan import plan
from kafkatool.spark.read import read_partition

from .conftest import CORE

pytestmark = pytest.mark.spark

PARTITION = "kafka/logdir/codecs-0"
SEGMENT = "00000000000000000000"
SPLIT = 2048


def framing(data: bytes) -> dict[int, int]:
    """position -> size of every entry of an undamaged segment, by its framing."""
    out, pos = {}, 0
    while pos + 12 <= len(data):
        out[pos] = struct.unpack_from(">i", data, pos + 8)[0] + 12
        pos += out[pos]
    return out


@pytest.fixture
def part(corpus: Path, tmp_path: Path) -> tuple[Path, bytes, dict[int, int], list[int]]:
    """A writable copy of a partition, its first segment's bytes, entries and offset index positions."""
    dst = tmp_path / "codecs-0"
    shutil.copytree(corpus / PARTITION, dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    log = dst / f"{SEGMENT}.log"
    data = log.read_bytes()
    entries = framing(data)
    indexed = [e.position for e in read_offset_index(dst / f"{SEGMENT}.index") if e.position > 0]
    assert len(indexed) > 4 and set(indexed) <= set(entries) and len(data) > 4 * SPLIT
    return log, data, entries, indexed


def expected_cuts(indexed: list[int], size: int, intact) -> list[int]:
    """The cut points the spec gives: the first indexed position at or past each target where ``intact`` holds."""
    cuts, target = [], SPLIT
    for pos in indexed:
        if pos < target or (cuts and pos <= cuts[-1]) or pos >= size:
            continue
        if pos + 61 > size:
            break
        if intact(pos):
            cuts.append(pos)
            target = pos + SPLIT
    return cuts


def planned(log: Path) -> list[tuple[int, int | None]]:
    """The ranges of ``log`` planned with ``splitBytes``, both ways (which must agree)."""
    with native.using(None):
        pure = [(p.start, p.end) for p in plan([str(log.parent)], split_bytes=SPLIT) if p.path == str(log)]
    if CORE is not None:
        with native.using(CORE):
            assert [(p.start, p.end) for p in plan([str(log.parent)], split_bytes=SPLIT)
                    if p.path == str(log)] == pure
    return pure


def check(log: Path, cuts: list[int]) -> None:
    """``log`` is planned as cut at ``cuts``; each piece reads only batches that begin in its range, none twice."""
    ranges = planned(log)
    assert ranges == list(zip([0, *cuts], [*cuts, None], strict=True))
    parts = [p for p in plan([str(log.parent)], split_bytes=SPLIT) if p.path == str(log)]
    seen = []
    for p in parts:
        for rb in read_partition(p, "batches"):
            positions = rb.column("position").to_pylist()
            assert all(p.start <= q and (p.end is None or q < p.end) for q in positions)
            seen += positions
    assert len(seen) == len(set(seen))


def damaged(log: Path, data: bytes, lo: int, replacement: bytes) -> None:
    log.write_bytes(data[:lo] + replacement + data[lo + len(replacement):])


# These pin the behaviour of the decoder _split had (they pass on it and on records.resync).

def test_a_batch_crossing_the_split_target(part) -> None:
    log, data, entries, indexed = part
    assert SPLIT not in entries  # the target falls inside a batch: the cut is the next indexed batch start
    cuts = expected_cuts(indexed, len(data), lambda pos: True)
    assert cuts and cuts[0] == min(p for p in indexed if p >= SPLIT)
    check(log, cuts)


@pytest.mark.parametrize("damage", ["garbage", "length", "magic", "zeros", "crc"])
def test_an_indexed_position_that_holds_no_valid_batch_is_not_a_cut(part, damage: str) -> None:
    log, data, entries, indexed = part
    first = expected_cuts(indexed, len(data), lambda pos: True)[0]
    size = entries[first]
    if damage == "garbage":  # a split point inside garbage (with magic bytes in it)
        rng = random.Random(25)
        junk = bytes(2 if rng.random() < 0.2 else rng.randrange(256) for _ in range(size))
        damaged(log, data, first - 10, junk)
    elif damage == "length":
        damaged(log, data, first + 8, struct.pack(">i", size - 12 + 4))  # its CRC no longer covers its bytes
    elif damage == "magic":
        damaged(log, data, first + 16, b"\x01")
    elif damage == "zeros":
        damaged(log, data, first - 7, bytes(40))
    else:
        damaged(log, data, first + size - 1, bytes([data[first + size - 1] ^ 1]))
    lo, hi = {"garbage": (first - 10, first - 10 + size), "zeros": (first - 7, first + 33)}.get(damage,
                                                                                              (first, first + size))
    cuts = expected_cuts(indexed, len(data), lambda pos: pos + entries[pos] <= lo or pos >= hi)
    assert first not in cuts and cuts
    check(log, cuts)


def test_a_torn_batch_at_an_indexed_position(part) -> None:
    log, data, entries, indexed = part
    last = [p for p in indexed if p + entries[p] < len(data)][-1]
    log.write_bytes(data[:last + entries[last] - 1])  # the indexed batch is torn; later entries point past the end
    cuts = expected_cuts(indexed, last + entries[last] - 1, lambda pos: pos < last)
    assert last not in cuts
    check(log, cuts)


def test_an_index_entry_inside_a_batch(part) -> None:
    """A corrupt index naming a position inside a batch (even one whose bytes there look like a header)."""
    log, data, entries, indexed = part
    first = expected_cuts(indexed, len(data), lambda pos: True)[0]
    inside = first + 20
    index = log.with_suffix(".index")
    raw = bytearray(index.read_bytes())
    k = [pos for _rel, pos in struct.iter_unpack(">ii", raw)].index(first)
    struct.pack_into(">i", raw, 8 * k + 4, inside)  # the entry of `first` now names a position inside it
    index.write_bytes(bytes(raw))
    positions = [inside if p == first else p for p in indexed]
    cuts = expected_cuts(positions, len(data), lambda pos: pos in entries)
    assert inside not in cuts and cuts
    check(log, cuts)
