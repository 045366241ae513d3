"""Planning on the driver (Spark's ``DataSourceReader.partitions``): which record files, which byte ranges.

Partition dirs are found through :mod:`kafkatool.walk` (URLs too) and their files sorted by role by
:mod:`kafkatool.logfiles`, as every reader sorts them; a big segment is split at batch starts its offset
index names (``OffsetIndex``), each checked through :func:`kafkatool.records.resync`; small ones are packed
into one task, as Spark's file sources pack small files (``FilePartition``).
"""

from __future__ import annotations

import glob
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from .fs import ArrowStore, display, is_url

# What packing (option packBytes) counts per file on top of its bytes: Spark's spark.sql.files.openCostInBytes.
PACK_OPEN_COST = 4 * 1024 * 1024


@dataclass(frozen=True)
class SegmentPartition(InputPartition):
    """One task: the entries of a record file beginning in ``[start, end)`` (``end`` None: to the end)."""

    path: str                 # local path or URL
    topic: str | None
    partition: int
    segment: int | None
    start: int = 0
    end: int | None = None
    index: str | None = None      # sibling files, for the findings level (local only)
    timeindex: str | None = None
    txnindex: str | None = None
    active: bool = False          # the last segment of its partition dir

    @property
    def name(self) -> str:
        """The path as rows and findings show it: a URL without its credentials and options."""
        return display(self.path)


@dataclass(frozen=True)
class PackedPartition(InputPartition):
    """One task over several planned partitions (option ``packBytes``), read one after the other."""

    parts: tuple[SegmentPartition, ...]


def plan(paths: list[str], *, split_bytes: int = 0, include_leftovers: bool = False,
         include_snapshots: bool = False, pack_bytes: int = 0, min_partitions: int = 0,
         keep: Callable[[SegmentPartition], bool] | None = None) -> list[SegmentPartition | PackedPartition]:
    """Input partitions for every record file under ``paths`` (local paths, globs or URLs).

    ``keep``: only the segments it is true of (the reader's pushed filters, :func:`may_match`), chosen
    before splitting and packing, so a dropped segment is never opened. ``pack_bytes`` > 0: then packed
    with :func:`pack` (0: one partition per segment or piece), into at least ``min_partitions`` where
    the data allows.
    """
    out: list[SegmentPartition] = []
    for raw in paths:
        if is_url(raw):
            out.extend(_plan_remote(raw, include_leftovers, include_snapshots))
            continue
        # a path that exists is itself: a dir named ``a[1]`` or ``x*`` is read, not taken for a pattern that
        # matches nothing (or something else); only a path naming nothing is a glob
        matches = sorted(glob.glob(raw)) if glob.has_magic(raw) and not os.path.lexists(raw) else [raw]
        if not matches:
            raise FileNotFoundError(f"kafka-log: no such file or directory: {raw}")
        for m in matches:
            out.extend(_plan_local(m, include_leftovers, include_snapshots))
    if keep is not None:
        out = [p for p in out if keep(p)]
    if split_bytes > 0:
        out = [piece for p in out for piece in _split(p, split_bytes)]
    return pack(out, pack_bytes, min_partitions) if pack_bytes > 0 else list(out)


def _wanted(kind, explicit: bool, leftover: str | None, include_leftovers: bool, include_snapshots: bool) -> bool:
    """Segments (leftovers only when asked or named); KRaft snapshots only when asked or named."""
    from kafkatool.filetypes import FileKind

    if kind is FileKind.LOG:
        return explicit or include_leftovers or leftover is None
    return kind is FileKind.KRAFT_SNAPSHOT and (explicit or include_snapshots)


def _partitions_of(found: list[tuple], sibling: Callable[[str], str | None]) -> list[SegmentPartition]:
    """Input partitions of the record files found under one path, local or remote alike.

    ``found``: ``(name, path, directory, partition dir name, FileInfo)`` per file, in plan order: ``name``
    as listed (what siblings are derived from), ``path`` as rows show and executors open it;
    ``sibling(name)`` is the path of a listed sibling file, else None. Each directory's files found are sorted
    by role as every reader sorts them (:func:`kafkatool.logfiles.sort_files`): its segments get their indexes,
    the active segment is the largest base offset.
    """
    from pathlib import Path

    from kafkatool.filetypes import FileKind
    from kafkatool.logfiles import sort_files
    from kafkatool.walk import partition_of

    listings: dict[str, list[tuple[Path, str]]] = {}
    for name, _path, d, _dir_name, _info in found:
        listings.setdefault(d, []).append((Path(name), name))
    roles = {d: sort_files(listing) for d, listing in listings.items()}
    out = []
    for name, path, d, dir_name, info in found:
        files, part = roles[d], partition_of(dir_name)
        segment = info.base_offset if info.kind is FileKind.LOG else None  # a snapshot's name is its end offset
        indexes = [None, None, None]
        if segment is not None and files.segments.get(segment, (None, None))[1] == name:
            indexes = [sibling(name[:-3] + ext) for ext in ("index", "timeindex", "txnindex")]
        out.append(SegmentPartition(path, part[0] if part else None, part[1] if part else -1, segment, 0, None,
                                    *indexes, active=segment is not None and files.active_base == segment))
    return out


def _plan_local(path: str, include_leftovers: bool, include_snapshots: bool = False) -> list[SegmentPartition]:
    from kafkatool.filetypes import classify
    from kafkatool.walk import expand

    found = []
    for f in expand([path], require=False):  # a glob may match dirs without data: they add no partitions
        info = classify(f.path, by_extension=True)
        if _wanted(f.kind, f.explicit, info.leftover, include_leftovers, include_snapshots):
            found.append((str(f.path), f.display, str(f.path.parent), f.path.resolve().parent.name, info))
    return _partitions_of(found, lambda sib: sib if os.path.exists(sib) else None)


def _plan_remote(url: str, include_leftovers: bool, include_snapshots: bool = False) -> list[SegmentPartition]:
    import posixpath

    from kafkatool.filetypes import classify
    from kafkatool.walk import url_files

    listed = url_files(url, ArrowStore(url))
    if listed is None:
        raise FileNotFoundError(f"kafka-log: no such file or directory: {url}")
    root, files = listed
    found = []
    for name, file_url in files:
        ci = classify(name, by_extension=name == root)
        if _wanted(ci.kind, name == root, ci.leftover, include_leftovers, include_snapshots):
            d = posixpath.dirname(name)
            found.append((name, file_url, d, posixpath.basename(d), ci))
    return _partitions_of(found, dict(files).get)


_INDEX_ENTRY = struct.Struct(">ii")


def _split(p: SegmentPartition, split_bytes: int) -> list[SegmentPartition]:
    """Byte ranges of about ``split_bytes`` each, cut at batch starts named by the offset index.

    Every cut point is checked (a whole v2 batch with a valid CRC begins there: :func:`kafkatool.records.resync`
    of that one position), so a broken index can only cost parallelism, never a batch; ``scan(start=, end=)``
    takes the entries that begin in a range.
    """
    from kafkatool.filetypes import open_regular
    from kafkatool.records import RECORD_BATCH_OVERHEAD, resync

    if p.index is None or is_url(p.path):
        return [p]
    try:
        size = os.path.getsize(p.path)
        if size <= split_bytes:
            return [p]
        with open_regular(p.index) as fh:
            data = fh.read()
    except OSError:
        return [p]
    positions = [pos for _rel, pos in _INDEX_ENTRY.iter_unpack(data[: len(data) // 8 * 8]) if pos > 0]
    cuts: list[int] = []
    target = split_bytes
    with open_regular(p.path) as log:
        for pos in positions:  # index positions increase; a non-increasing entry is skipped
            if pos < target or (cuts and pos <= cuts[-1]) or pos >= size:
                continue
            if pos + RECORD_BATCH_OVERHEAD > size:  # no v2 header fits here, nor further on
                break
            if next(resync(log, pos, pos + 1), None) is None:
                continue
            cuts.append(pos)
            target = pos + split_bytes
    if not cuts:
        return [p]
    bounds = [0, *cuts, None]
    return [SegmentPartition(p.path, p.topic, p.partition, p.segment, s, e, p.index, p.timeindex, p.txnindex,
                             p.active) for s, e in zip(bounds, bounds[1:], strict=False)]


def _pack_cost(p: SegmentPartition) -> int | None:
    """Bytes a planned partition counts for packing: its range plus ``PACK_OPEN_COST``; None: never packed."""
    if is_url(p.path):
        return None  # not statted (a round trip per file to an object store): a task of its own
    try:
        end = os.path.getsize(p.path) if p.end is None else p.end
    except OSError:
        return None  # read() reports it, alone
    return max(0, end - p.start) + PACK_OPEN_COST


def pack_budget(costs: Iterable[int], pack_bytes: int, min_partitions: int = 0) -> int:
    """The bytes one pack may hold: ``pack_bytes``, made smaller when the data would then fill fewer than
    ``min_partitions`` packs, but never below one file's open cost. Spark's file sources size their
    splits the same way (``FilePartition.maxSplitBytes``), so a small input still spreads over every core.
    """
    if min_partitions <= 0:
        return pack_bytes
    return min(pack_bytes, max(PACK_OPEN_COST, sum(costs) // min_partitions))


def pack(parts: list[SegmentPartition], pack_bytes: int,
         min_partitions: int = 0) -> list[SegmentPartition | PackedPartition]:
    """Consecutive ``parts`` (order kept) grouped into packs of summed :func:`_pack_cost` within
    :func:`pack_budget` (``pack_bytes``, smaller if needed to make ``min_partitions`` packs).

    Spark's file sources do the same with small files (``maxPartitionBytes``, ``openCostInBytes``). A part
    costing more than the budget, or a URL, stands alone; a pack of one part is that part itself.
    """
    costs = [_pack_cost(p) for p in parts]
    pack_bytes = pack_budget((c for c in costs if c is not None), pack_bytes, min_partitions)
    out: list[SegmentPartition | PackedPartition] = []
    group: list[SegmentPartition] = []
    total = 0

    def flush() -> None:
        nonlocal group, total
        if group:
            out.append(group[0] if len(group) == 1 else PackedPartition(tuple(group)))
        group, total = [], 0

    for p, cost in zip(parts, costs, strict=True):
        if cost is None or cost > pack_bytes:
            flush()
            out.append(p)
            continue
        if total + cost > pack_bytes:
            flush()
        group.append(p)
        total += cost
    flush()
    return out


__all__ = ["PACK_OPEN_COST", "PackedPartition", "SegmentPartition", "pack", "pack_budget", "plan"]
