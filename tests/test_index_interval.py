"""``repair`` reads the ``index.interval.bytes`` a partition was written with back from its offset indexes.

Kafka's rule (``LogSegment.append``, and ``LogSegment.recover`` when it rebuilds an index): a batch gets an offset
index entry when more than ``indexIntervalBytes`` bytes lie between the start of the last indexed batch (or of the
segment) and its own start. Partitions here are written by the project's writer, which follows that rule, at
several intervals; the corpus's Kafka-written recovery cases were written at 1024.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.filetypes import FileKind
from kafkatool.index_interval import infer_index_interval, segment_range
from kafkatool.logwriter import PartitionWriter
from kafkatool.repair import RepairOptions, plan_partition
from kafkatool.smallfiles import IndexEntry, offset_slots, parse_small_file

from .conftest import corpus_root


def write(dir: Path, intervals: list[int], batches: int = 120, segment_bytes: int = 40_000) -> Path:
    """A partition of batches of uneven sizes (60..660 bytes of value), rolled every ``segment_bytes``; the n-th
    segment is written with ``intervals[n]`` (the last one from then on), as after a topic config change: a
    ``LogSegment`` keeps the ``indexIntervalBytes`` it was created with: a new value applies from the next roll."""
    w = PartitionWriter(dir, topic=dir.name.rsplit("-", 1)[0], partition=0, topic_id=b"\x01" * 16,
                        segment_bytes=segment_bytes, index_interval_bytes=intervals[0])
    for i in range(batches):
        w.index_interval_bytes = intervals[min(len(w.segment_base_offsets), len(intervals) - 1)]  # the next segment's
        w.append(record_batch(i, [RecordSpec(b"k", bytes(60 + (i * 37) % 600), 1_700_000_000_000 + i)]))
    w.close()
    return dir


def test_segment_range_follows_kafkas_rule() -> None:
    """``LogSegment.append``: an entry when ``bytesSinceLastIndexEntry > indexIntervalBytes``, strictly."""
    positions = [0, 100, 200, 300, 400, 500]
    assert segment_range(positions, [200, 400]) == (100, 200)   # 200 > I, 100 <= I; 400 - 200 > I, 300 - 200 <= I
    assert segment_range(positions, [100, 200, 300, 400, 500]) == (0, 100)
    assert segment_range(positions, []) == (500, None)
    assert segment_range(positions, [250]) is None        # not at a batch start
    assert segment_range(positions, [200, 300]) is None   # 100 bytes apart, yet 200 needed more than 100
    assert segment_range(positions, [0]) is None          # the segment's first batch is never indexed
    assert segment_range(positions, [200, 400, 900]) == (100, 200)  # an entry past the scanned batches: not judged


def kafka_indexed(positions: list[int], interval: int) -> list[int]:
    """The batches (by position, from the segment's start) ``LogSegment.append`` indexes at ``interval``."""
    last, out = 0, []
    for p in positions:
        if p - last > interval:
            out.append(p)
            last = p
    return out


def test_segment_range_is_every_interval_kafkas_rule_agrees_with() -> None:
    """Against the rule itself, tried at every interval: ``segment_range`` is exactly the intervals under which
    ``LogSegment.append`` indexes the given entries among the batches (None: none does), for entries the rule put at
    some interval, or moved, dropped, added, past the batches."""
    rng = random.Random(7)
    for _ in range(300):
        positions = [0]
        for _ in range(rng.randint(0, 30)):
            positions.append(positions[-1] + rng.randint(61, 400))
        top = positions[-1] + 2
        entries = kafka_indexed(positions, rng.randrange(top))
        kind = rng.randrange(4)
        if kind == 1 and entries:
            entries[rng.randrange(len(entries))] += rng.choice((-1, 1, -61, 61))
        elif kind == 2 and entries:
            del entries[rng.randrange(len(entries))]
        elif kind == 3:
            entries.append(rng.choice(positions) + rng.choice((0, 0, 1, 500)))
        judged = sorted({e for e in entries if e <= positions[-1]})
        agree = [i for i in range(top) if kafka_indexed(positions, i) == judged]
        fit = segment_range(positions, entries)
        if fit is None:
            assert not agree, (positions, entries)
        else:
            low, high = fit
            assert agree == list(range(low, top if high is None else high)), (positions, entries, fit)


@pytest.mark.parametrize("interval", [1024, 4096, 8192, 300])
def test_inferred_interval_is_the_one_written_and_healthy_indexes_are_kept(tmp_path: Path, interval: int) -> None:
    """Without the option, a healthy partition written at 1024 or 8192 is not proposed for an index rebuild
    (recovery with no checkpoint recovers every segment, ``LogSegment.recover`` rebuilding its index at the
    topic's interval); with the old fixed 4096 it was. An uncommon interval infers a value that rebuilds the same
    entries."""
    part = write(tmp_path / "t-0", [interval])
    found = infer_index_interval(part)
    assert found.source == "inferred" and found.entries >= 5
    assert found.low <= interval < found.high
    if interval in (1024, 4096, 8192):
        assert found.value == interval
    result = plan_partition(part, str(part), RepairOptions())
    assert result.index_interval_bytes == found.value and result.index_interval_source == "inferred"
    assert [a for a in result.actions if a.path.endswith(".index")] == []
    if interval != 4096:
        forced = plan_partition(part, str(part), RepairOptions(index_interval_bytes=4096))
        assert forced.index_interval_source == "option"
        assert [a for a in forced.actions if a.path.endswith(".index")]


def test_disagreeing_or_missing_entries_fall_back_to_4096_and_say_so(tmp_path: Path) -> None:
    part = write(tmp_path / "t-0", [1024, 8192])   # the topic's interval changed after the first segment
    found = infer_index_interval(part)
    assert (found.value, found.source) == (4096, "default") and "fit no single interval" in found.note
    small = write(tmp_path / "s-0", [4096], batches=3)
    found = infer_index_interval(small)
    assert (found.value, found.source) == (4096, "default") and "no offset index entries" in found.note


def test_cli_says_where_the_interval_came_from(tmp_path: Path, run_cli) -> None:
    part = write(tmp_path / "t-0", [1024])
    p = run_cli("repair", part)
    assert "index interval 1024 bytes (inferred from" in p.stdout, p.stdout
    p = run_cli("repair", "--index-interval-bytes", "2048", "-f", "jsonl", part)
    (d,) = [json.loads(x) for x in p.stdout.splitlines() if '"partition"' in x]
    assert (d["index_interval_bytes"], d["index_interval_source"]) == (2048, "option")


def test_kafka_written_recovery_cases_infer_1024() -> None:
    """The corpus's recovery cases were written by Kafka's own ``UnifiedLog`` at index.interval.bytes 1024
    (PROVENANCE.md); a corrupt index (``OffsetIndex.sanityCheck`` fails) is left out, not believed."""
    for case in sorted((corpus_root() / "kafka" / "recovery").glob("*/before/rtopic-0")):
        found = infer_index_interval(case)
        assert (found.value, found.source) == (1024, "inferred"), (case, found)


def _objects(data: bytes) -> list[int]:
    return [e.position for e in parse_small_file(data, FileKind.INDEX, "x.index", 0) if isinstance(e, IndexEntry)]


def test_the_bulk_positions_are_the_entries_the_index_reader_yields(corpus: Path) -> None:
    """``offset_slots`` (the index decoded in bulk, for the interval and verify's index check) stops where the entry
    reader does, on every corpus index, preallocated, cut mid-slot, and with the first never-written slot at and
    around a 64 KiB boundary (the chunk ``slots_written`` compares with zeros)."""
    datas = [p.read_bytes() for p in sorted(corpus.rglob("*.index")) if p.is_file()]
    assert datas
    datas += [d + bytes(80_000) for d in datas[:20]] + [d[:-3] for d in datas[:20] if len(d) > 8]
    full = b"".join(struct.pack(">ii", i + 1, 100 * (i + 1)) for i in range(20_000))
    for at in (0, 1, 8191, 8192, 8193, 19_999):
        datas.append(full[: at * 8] + bytes(8) + full[at * 8 + 8:])  # slot ``at`` never written, entries after it
    datas += [full, bytes(8), bytes(16), struct.pack(">ii", 0, 5) + bytes(8)]
    for data in datas:
        slots = offset_slots(data)
        assert slots.position[: slots.used].tolist() == _objects(data)
