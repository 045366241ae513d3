"""The one index builder (:class:`kafkatool.segment_indexes.SegmentIndexes`) and the one leader-epoch cache
(:class:`kafkatool.epochs.EpochCache`) against what Kafka wrote.

``LogSegment.recover`` / ``LogSegment.append`` (``storage/.../internals/log/LogSegment.java``) add an offset-index entry
when more than ``index.interval.bytes`` were appended since the last one, with a time-index entry of the max timestamp
so far (``TimeIndex.maybeAppend``), and ``LogSegment.close`` one last time-index entry; ``LeaderEpochFileCache.assign``
and ``LogSegment.recover``'s rule of assigning only newer epochs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkatool.epochs import EpochCache
from kafkatool.errors import IndexAppendError
from kafkatool.loader import Rebuild, load_partition
from kafkatool.model import Batch
from kafkatool.records import scan
from kafkatool.segment_indexes import SegmentIndexes

from .conftest import corpus_root

CASES = sorted(p.name for p in (corpus_root() / "kafka/recovery").iterdir() if p.is_dir())


def kafka_segments() -> list[tuple[str, Path]]:
    """Every segment Kafka closed in the recovery cases' ``after`` dirs (written by ``LogSegment.append`` or
    rebuilt by ``LogSegment.recover``, then trimmed by ``LogSegment.close``), but the swapped-in segment of
    ``leftovers``, which Kafka leaves with the empty indexes it opened (see kafkatool/repair.py)."""
    out = []
    for case in CASES:
        for log in sorted((corpus_root() / "kafka/recovery" / case / "after/rtopic-0").glob("*.log")):
            if not (case == "leftovers" and log.name.startswith("00000000000000000086")):
                out.append((case, log))
    return out


def interval(case: str) -> int:
    config = json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())
    return config["recovery_invocation"]["log_config"]["index.interval.bytes"]


@pytest.mark.parametrize(("case", "log"), kafka_segments(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_indexes_built_from_batch_headers_are_kafkas_bytes(case: str, log: Path) -> None:
    """``LogSegment.recover``'s index rule fed with each batch's (position, size, last offset, max timestamp) gives
    the ``.index`` and ``.timeindex`` Kafka wrote for the same segment, byte for byte."""
    base = int(log.stem)
    indexes = SegmentIndexes(base, interval(case))
    with open(log, "rb") as fh:
        for b in scan(fh, str(log)):
            if isinstance(b, Batch):
                indexes.append(b.position, b.size, b.last_offset, b.max_timestamp, b.last_offset)
    indexes.close()
    assert indexes.index_bytes() == log.with_suffix(".index").read_bytes()
    assert indexes.timeindex_bytes() == log.with_suffix(".timeindex").read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_the_loader_rebuilds_what_kafkas_recovery_wrote(case: str) -> None:
    """``LogLoader.recoverLog`` from the case's recovery point: for each segment the loader recovers, the indexes it
    rebuilt from batch headers and the aborted transactions its producer replay found (``LogSegment.updateTxnIndex``
    with ``ProducerStateManager.lastStableOffset``) are Kafka's ``.index``, ``.timeindex`` and ``.txnindex``."""
    from kafkatool.segment_indexes import txn_index_bytes

    config = json.loads((corpus_root() / "kafka/recovery" / case / "case.json").read_text())
    inv = config["recovery_invocation"]
    before = corpus_root() / "kafka/recovery" / case / "before/rtopic-0"
    after = before.parent.parent / "after/rtopic-0"
    loaded = load_partition(before, recovery_point=inv["recoveryPointCheckpoint"],
                            log_start=inv["logStartOffsetCheckpoint"],
                            rebuild=Rebuild(interval(case), 1 << 62, 1 << 62))
    recovered = [s for s in loaded.segments if s.recovered and not s.deleted and not s.path.name.endswith(".swap")]
    assert recovered
    for seg in recovered:
        stem = f"{seg.base_offset:020d}"
        assert seg.indexes is not None
        assert seg.indexes.index_bytes() == (after / f"{stem}.index").read_bytes(), stem
        assert seg.indexes.timeindex_bytes() == (after / f"{stem}.timeindex").read_bytes(), stem
        txnindex = after / f"{stem}.txnindex"
        assert txn_index_bytes(seg.aborted_txns or []) == (txnindex.read_bytes() if txnindex.exists() else b""), stem


def test_an_offset_going_back_cannot_be_indexed() -> None:
    """``OffsetIndex.append`` refuses an offset not above its last entry (``InvalidOffsetException``)."""
    indexes = SegmentIndexes(0, 0)
    indexes.append(0, 100, 9, 1000, 9)
    indexes.append(100, 100, 19, 1001, 19)
    with pytest.raises(IndexAppendError):
        indexes.append(200, 100, 15, 1002, 15)


def test_recovery_assigns_only_newer_epochs() -> None:
    """``LogSegment.recover`` assigns a batch's epoch only when it is above the latest; ``assign`` itself lets an older
    epoch truncate the cache (``maybeTruncateNonMonotonicEntries``)."""
    cache = EpochCache([(0, 0), (2, 50)])
    assert not cache.assign_recovered(1, 60)
    assert cache.entries == [(0, 0), (2, 50)]
    assert cache.assign_recovered(3, 70)
    assert cache.entries == [(0, 0), (2, 50), (3, 70)]
    assert cache.assign(1, 60)
    assert cache.entries == [(0, 0), (1, 60)]
    assert not cache.assign(1, 65)  # isUpdateNeeded: the same epoch, a later start
    assert cache.clear() and cache.entries == []
