"""A crashed broker's preallocated indexes are sparse: read up to their trailing hole, judged as if read whole.

Kafka makes a segment's ``.index`` and ``.timeindex`` with ``RandomAccessFile.setLength(segment.index.bytes)``
(10 MiB) and writes entries through a mapping, so the active segment of a broker that did not shut down cleanly has
its entries, then a hole to 10 MiB. ``verify`` reads such a file only up to the hole (``filetypes.data_end``): the
rest reads as zeros, and every check sees the same slots as if it had read them (``size`` given to
``offset_slots`` and the sanity checks). ``PartitionWriter.close(clean=False)`` leaves them so too.
"""

from __future__ import annotations

import io
import os
import random
import struct
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.filetypes import holds, read_to_hole
from kafkatool.logwriter import PartitionWriter
from kafkatool.smallfiles import OFFSET_SLOT, TIME_SLOT, offset_index_sanity, offset_slots, time_index_sanity

T0 = 1_700_000_000_000


def crashed(part: Path, batches: int = 40) -> Path:
    """A partition left as a killed broker leaves it: two segments, the active one's indexes preallocated."""
    with PartitionWriter(part, topic=part.name.rsplit("-", 1)[0], partition=0, topic_id=b"\x02" * 16,
                         segment_bytes=4000, index_interval_bytes=256) as w:
        for i in range(batches):
            w.append(record_batch(i, [RecordSpec(b"k", bytes(100 + i % 50), T0 + i)]))
        w.close(clean=False)
    return part


def dense_copy(part: Path, to: Path) -> Path:
    """``part`` with every file written out byte for byte: its holes become real zeros."""
    to.mkdir(parents=True)
    for f in part.iterdir():
        (to / f.name).write_bytes(f.read_bytes())
    return to


def test_a_crashed_partitions_indexes_are_sparse_and_read_to_their_hole(tmp_path: Path) -> None:
    part = crashed(tmp_path / "t-0")
    active = max(part.glob("*.index"))
    for path, unit in ((active, OFFSET_SLOT), (active.with_suffix(".timeindex"), TIME_SLOT)):
        st = os.stat(path)
        assert st.st_size == 10 * 1024 * 1024 // unit * unit
        assert st.st_blocks * 512 < st.st_size // 4, "the writer left the preallocated slots a hole, as Kafka does"
        data, size = read_to_hole(path, unit)
        whole = path.read_bytes()
        assert size == len(whole) and len(data) < size // 4
        assert len(data) % unit == 0 and whole[: len(data)] == data and whole.count(0, len(data)) == size - len(data)


def test_a_file_with_data_after_its_first_hole_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    with path.open("wb") as fh:
        fh.write(struct.pack(">ii", 1, 100))
        fh.seek(1 << 20)
        fh.write(struct.pack(">ii", 7, 700))  # an entry beyond the hole: a scrambled index, read as it is
        fh.truncate(2 << 20)
    data, size = read_to_hole(path, OFFSET_SLOT)
    assert data == path.read_bytes() and size == 2 << 20


def test_verify_of_sparse_and_dense_preallocated_indexes_is_the_same(tmp_path: Path, run_cli) -> None:
    """The same crashed partition, its indexes sparse and written out whole: the same findings, byte for byte
    (``index-preallocated`` among them, with the slot counts of the whole file)."""
    sparse = crashed(tmp_path / "sparse" / "t-0")
    dense = dense_copy(sparse, tmp_path / "dense" / "t-0")
    assert sum(os.stat(f).st_blocks for f in sparse.iterdir()) < sum(os.stat(f).st_blocks for f in dense.iterdir())
    out = {}
    for name, part in (("sparse", sparse), ("dense", dense)):
        result = run_cli("verify", "--format", "jsonl", str(part))
        assert result.returncode == 0, result.stderr
        out[name] = result.stdout.replace(str(part.parent), "ROOT")
    assert out["sparse"] == out["dense"]
    assert f"of {10 * 1024 * 1024 // OFFSET_SLOT} preallocated slots" in out["sparse"]
    assert f"of {10 * 1024 * 1024 // TIME_SLOT} preallocated slots" in out["sparse"]


def _zero_tailed(rng: random.Random, slot: int, fmt: str) -> list[bytes]:
    """Index contents with a run of zeros to their end after some slots, odd ones among them: negative fields, a
    last timestamp below the first, a partial slot, nothing but zeros."""
    cases = [b"", bytes(slot), bytes(slot * 5), bytes(slot * 5 + 3)]
    for _ in range(300):
        n = rng.randrange(0, 40)
        data = b"".join(struct.pack(fmt, *(rng.choice((-5, 0, 1, rng.randrange(1, 1 << 30))) for _ in fmt[1:]))
                        for _ in range(n))
        cases.append(data + bytes(slot * rng.randrange(0, 30) + rng.choice((0, 0, 0, 1, slot - 1))))
    return cases


@pytest.mark.parametrize("slot, fmt, sanity", [(OFFSET_SLOT, ">ii", offset_index_sanity),
                                               (TIME_SLOT, ">qi", time_index_sanity)])
def test_the_bytes_before_a_hole_and_the_size_judge_as_the_whole_file(slot: int, fmt: str, sanity) -> None:
    """``offset_slots`` and the sanity checks given the bytes up to any point after which all are zero (at a slot
    boundary, as ``read_to_hole`` rounds) and the file's size say what they say of the whole file."""
    for whole in _zero_tailed(random.Random(slot), slot, fmt):
        data_end = len(whole.rstrip(b"\0"))
        for cut in {-(-data_end // slot) * slot, -(-data_end // slot) * slot + slot, len(whole)}:
            data = whole[:cut]
            assert sanity(data, "i", len(whole)) == sanity(whole, "i"), (whole, cut)
            if slot == OFFSET_SLOT:
                got, want = offset_slots(data, len(whole)), offset_slots(whole)
                assert (got.relative, got.position, got.used, got.written, got.slots) == tuple(want), (whole, cut)


def test_repair_plans_the_same_for_sparse_and_dense_preallocated_indexes(tmp_path: Path, run_cli) -> None:
    sparse = crashed(tmp_path / "sparse" / "t-0")
    dense = dense_copy(sparse, tmp_path / "dense" / "t-0")
    plans = [run_cli("repair", "--format", "jsonl", str(p)).stdout.replace(str(p.parent), "ROOT")
             for p in (sparse, dense)]
    assert plans[0] == plans[1]
    assert f"was {10 * 1024 * 1024 // OFFSET_SLOT * OFFSET_SLOT} bytes" in plans[0]  # the preallocated one rebuilt


def test_holds_compares_the_zeros_of_a_hole_without_reading_them(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with path.open("wb") as fh:
        fh.write(b"abc")
        fh.truncate(1 << 20)
    assert holds(path, b"abc" + bytes((1 << 20) - 3))
    assert not holds(path, b"abc")
    assert not holds(path, b"abc" + bytes((1 << 20) - 4) + b"x")
    assert not holds(path, b"abd" + bytes((1 << 20) - 3))
    assert not holds(path, b"abc" + bytes(1 << 20))


def test_a_preallocated_segments_zero_tail_is_judged_without_reading_its_hole(tmp_path: Path, run_cli) -> None:
    """A segment preallocated (``log.preallocate``: ``FileRecords`` extends it with ``setLength``) and cut short by a
    crash: its batches, then a hole. ``zero-filled-tail`` says so from the bytes before the hole; the same message
    as for the tail written out in zeros, and a byte after the hole is still seen."""
    part = tmp_path / "sparse" / "t-0"
    part.mkdir(parents=True)
    batches = b"".join(record_batch(i, [RecordSpec(b"k", b"v" * 100, T0 + i)]) for i in range(3))
    log = part / "00000000000000000000.log"
    with log.open("wb") as fh:
        fh.write(batches)
        fh.truncate(64 << 20)
    assert os.stat(log).st_blocks * 512 < 1 << 20
    dense = dense_copy(part, tmp_path / "dense" / "t-0")
    outs = [run_cli("verify", "--format", "jsonl", str(p)).stdout.replace(str(p.parent), "ROOT") for p in (part, dense)]
    assert outs[0] == outs[1]
    assert f'"zero-filled-tail", "path": "ROOT/t-0/{log.name}", "position": {len(batches)}' in outs[0]
    with log.open("r+b") as fh:  # a byte of data past the hole: not a zero tail any more
        fh.seek((64 << 20) - 1)
        fh.write(b"\x01")
    assert "zero-filled-tail" not in run_cli("verify", "--format", "jsonl", str(part)).stdout


def test_data_end_leaves_a_buffered_readers_position_as_it_was(tmp_path: Path) -> None:
    """``data_end`` moves the descriptor to find the hole and puts it back: a buffered reader over it, part-way
    through its buffer, reads on from where it was (it does not seek the descriptor for a seek inside its buffer)."""
    from kafkatool.filetypes import data_end

    path = tmp_path / "f"
    content = bytes(range(256)) * 64
    with path.open("wb") as fh:
        fh.write(content)
        fh.truncate(1 << 20)
    with path.open("rb", buffering=8192) as fh:
        assert fh.read(100) == content[:100]
        assert len(content) <= data_end(fh, 1 << 20) < 1 << 20  # the hole's start (a file system block)
        fh.seek(50)  # inside the buffer
        assert fh.read(10_000) == content[50:10_050]


def test_data_extents_walk_a_sparse_files_data_and_skip_its_holes(tmp_path: Path) -> None:
    """``filetypes.data_extents``, the one walk over a file's holes (``data_end`` and the zero-filled-tail check stand
    on it): the data between two positions, in order; every byte outside it a zero of a hole, not to be read; past
    the file's end a stretch too (nothing there to read); the descriptor's position as it was at every stretch."""
    from kafkatool.filetypes import data_end, data_extents

    mib = 1 << 20
    path = tmp_path / "f"
    with path.open("wb") as fh:  # data, a hole, data after it, a hole to the end
        fh.write(bytes(range(256)) * 64)  # 16 KiB, more than the reader below buffers
        fh.seek(mib)
        fh.write(b"\x02" * 100)
        fh.truncate(3 * mib)
    content = path.read_bytes()
    with path.open("rb", buffering=8192) as fh:
        assert fh.read(10) == content[:10]
        extents = list(data_extents(fh, 0, 3 * mib))
        assert len(extents) == 2 and extents[0][0] == 0 and 16384 <= extents[0][1] < extents[1][0] <= mib < mib + 100 \
            <= extents[1][1] < 3 * mib  # at the file system's block size
        data = bytearray(3 * mib)
        for at, to in extents:
            data[at:to] = content[at:to]
        assert data == content  # outside them: zeros
        assert list(data_extents(fh, 200, mib + 50)) == [(200, extents[0][1]), (mib, mib + 50)]  # where asked
        assert list(data_extents(fh, 0, 4 * mib))[-1] == (3 * mib, 4 * mib)  # past the end
        assert list(data_extents(fh, 0, mib // 2)) == [extents[0]]  # to the middle of a hole
        assert data_end(fh, 3 * mib) == 3 * mib  # data after the first hole: read whole
        walk = data_extents(fh, 0, 3 * mib)
        next(walk)  # stopped part-way: the buffered reader reads on from where it was
        fh.seek(5)  # inside its buffer
        assert fh.read(10_000) == content[5:10_005]
    os.truncate(path, 0)
    os.truncate(path, 3 * mib)  # only a hole
    with path.open("rb") as fh:
        assert list(data_extents(fh, 0, 3 * mib)) == [] and data_end(fh, 3 * mib) == 0
        assert list(data_extents(fh, mib, 4 * mib)) == [(3 * mib, 4 * mib)]
    stream = io.BytesIO(content)  # no descriptor: all of it data, to read
    assert list(data_extents(stream, 7, 3 * mib)) == [(7, 3 * mib)] and data_end(stream, 3 * mib) == 3 * mib
    assert list(data_extents(stream, 7, 7)) == []


def test_an_index_served_by_an_opener_is_read_as_the_file_on_the_disk(tmp_path: Path) -> None:
    """``read_to_hole`` through an opener (a Spark task's pyarrow file; here bytes already read, with no descriptor:
    read whole), as ``segment_check`` takes a segment's indexes: the same slots, findings and verdicts as the sparse
    file on the disk, and the same cap on their size."""
    from kafkatool.filetypes import FileTooLarge
    from kafkatool.log_check import SegmentTask
    from kafkatool.segment_check import check_segment

    part = crashed(tmp_path / "t-0")
    index = max(part.glob("*.index"))
    opened: list[str] = []

    def from_bytes(path: str) -> io.BytesIO:
        opened.append(path)
        return io.BytesIO(Path(path).read_bytes())

    whole = index.read_bytes()
    assert read_to_hole(index, OFFSET_SLOT, open_file=from_bytes) == (whole, len(whole))
    data, size = read_to_hole(index, OFFSET_SLOT)  # on the disk: up to its hole
    assert size == len(whole) and len(data) < size and whole.startswith(data)
    with pytest.raises(FileTooLarge):
        read_to_hole(index, OFFSET_SLOT, limit=len(whole) - 1, open_file=from_bytes)
    base = int(index.stem)
    task = SegmentTask(base, str(index.with_suffix(".log")), str(index), str(index.with_suffix(".timeindex")),
                       active=True)
    opened.clear()
    local, served = check_segment(task), check_segment(task, open_file=from_bytes)
    assert sorted(opened) == sorted([task.log, task.index, task.timeindex])
    assert (served.findings, served.index, served.timeindex) == (local.findings, local.index, local.timeindex)
    assert any(f.code == "index-preallocated" for f in local.findings)
