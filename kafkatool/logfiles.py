"""A partition dir's files by role, and the leftover passes the broker runs on them before it loads the log.

Home to Kafka's file naming in a partition dir (``LogFileUtils``, used by ``LocalLog``: ``logFile``,
``offsetIndexFile``, ``timeIndexFile``, ``transactionIndexFile``, ``producerSnapshotFile``, ``isLogFile``,
``isIndexFile``, the ``.deleted``/``.cleaned``/``.swap`` suffixes; a name is read by
:func:`kafkatool.filetypes.classify`) and to ``LogLoader``'s leftover passes (``load``,
``removeTempFilesAndCollectSwapFiles``). Every reader of a partition dir takes its files from here: the loader
(:mod:`kafkatool.loader`), ``verify``, ``repair`` (through the loader) and the Spark planner.

One vocabulary for leftovers, by the pass of ``LogLoader`` that meets each:

* ``.deleted``: a file marked for deletion; ``removeTempFilesAndCollectSwapFiles`` deletes it;
* ``.cleaned``: the output of an interrupted cleaner pass; deleted too, after every ``.swap`` at or above its base
  offset (KAFKA-6264: those belong to a split that did not finish, ``LocalLog.splitOverflowedSegment``);
* ``.swap``: an interrupted replacement (cleaner or split); ``load`` deletes the files it replaces (offsets in
  [smallest ``.log.swap`` base offset, largest ``.log.swap`` next offset)) and renames it into place;
* ``.tmp``: no ``LogLoader`` pass; a temporary file of a checkpoint write (``Utils.atomicMoveWithFallback``'s
  source), which the broker never reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .filetypes import FileInfo, FileKind, classify

DELETED, CLEANED, SWAP, TMP = ".deleted", ".cleaned", ".swap", ".tmp"   # filetypes.LEFTOVER_SUFFIXES

INDEX_KINDS = (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX)
"""``LogFileUtils.isIndexFile``: the offset, time and transaction indexes of a segment, in that order."""

# A segment file's name whose offset is not 20 digits: Kafka writes none (``filenamePrefixFromOffset``). Compiled by re
# at the first name a partition dir holds that no file kind claims (most partitions have none).
_MISNAMED = r"^(\d+)\.(log|index|timeindex|txnindex|snapshot)$"

Named = tuple[Path, str]   # (path, display) of a file of a listing


def segment_file(dir: Path, base_offset: int, suffix: str) -> Path:
    """``<dir>/<base offset, 20 digits>.<suffix>`` (``LogFileUtils.logFile``, ``offsetIndexFile``, ``timeIndexFile``,
    ``transactionIndexFile``, ``producerSnapshotFile``: ``filenamePrefixFromOffset`` then the suffix)."""
    return dir / f"{base_offset:020d}.{suffix}"


def misnamed(name: str) -> bool:
    """A segment file's name whose offset is not the 20 digits Kafka writes (``5.log``, a 21-digit offset)."""
    return bool(re.match(_MISNAMED, name))


def offset_from_file_name(name: str) -> int | None:
    """``LogFileUtils.offsetFromFileName``: the number before the name's first dot, or None where ``Long.parseLong``
    would throw (no digits; signs aside, which Kafka never writes)."""
    stem = name.split(".")[0]
    return int(stem) if stem.isascii() and stem.isdigit() else None


def without_swap(path: Path) -> Path:
    """Where a ``.swap`` file goes when ``load`` renames it into place (``Utils.replaceSuffix``); others unchanged."""
    return path.with_name(path.name[: -len(SWAP)]) if path.name.endswith(SWAP) else path


@dataclass
class PartitionFiles:
    """A partition dir's files by role, from the names alone (nothing is read); each role in listing order.

    A leftover (a name ending in ``.deleted``, ``.cleaned``, ``.swap`` or ``.tmp``) has no other role whatever its
    inner name. ``segments`` holds every ``<20 digits>.log``, an offset above 2^63-1 too (the broker cannot parse
    that name: each reader says so its own way)."""

    files: list[tuple[Path, str, FileInfo]] = field(default_factory=list)   # the listing, each name classified
    segments: dict[int, Named] = field(default_factory=dict)                # base offset -> .log (isLogFile)
    indexes: dict[tuple[int, FileKind], Named] = field(default_factory=dict)  # (base offset, INDEX_KINDS)
    snapshots: dict[int, Named] = field(default_factory=dict)               # producer snapshots by offset
    epoch_checkpoint: Named | None = None                                   # leader-epoch-checkpoint
    partition_metadata: Named | None = None                                 # partition.metadata
    others: list[tuple[Path, str, FileKind]] = field(default_factory=list)  # KRaft snapshots, quorum-state
    leftovers: list[tuple[Path, str, FileInfo]] = field(default_factory=list)
    unknown: list[Named] = field(default_factory=list)   # not a file the broker writes in a partition dir

    @property
    def active_base(self) -> int | None:
        """The active segment's base offset: the largest (``LocalLog.segments.lastSegment``); None with none."""
        return max(self.segments, default=None)


def sort_files(listing: Iterable[Named]) -> PartitionFiles:
    """The (path, display) ``listing`` of one partition dir (:func:`kafkatool.walk.dir_files`, discovery's
    ``PartitionDir.files``, or a URL's listing) by role."""
    out = PartitionFiles()
    files, segments, indexes, snapshots = out.files, out.segments, out.indexes, out.snapshots
    for path, display in listing:
        info = classify(path)
        files.append((path, display, info))
        kind = info.kind
        if info.leftover is not None:
            out.leftovers.append((path, display, info))
        elif kind is _LOG:
            segments[info.base_offset] = (path, display)  # type: ignore[index]
        elif kind in INDEX_KINDS:
            indexes[(info.base_offset, kind)] = (path, display)  # type: ignore[index]
        elif kind is _PRODUCER_SNAPSHOT:
            snapshots[info.base_offset] = (path, display)  # type: ignore[index]
        elif kind is _EPOCH_CHECKPOINT:
            out.epoch_checkpoint = (path, display)
        elif kind is _PARTITION_METADATA:
            out.partition_metadata = (path, display)
        elif kind in _OTHERS:
            out.others.append((path, display, kind))
        else:
            out.unknown.append((path, display))
    return out


# A member of an enum is a lookup through its class each time (~0.25 us): the roles sort_files tells apart, once.
_LOG, _PRODUCER_SNAPSHOT = FileKind.LOG, FileKind.PRODUCER_SNAPSHOT
_EPOCH_CHECKPOINT, _PARTITION_METADATA = FileKind.EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA
_OTHERS = (FileKind.KRAFT_SNAPSHOT, FileKind.QUORUM_STATE)


# --- the leftover passes of LogLoader.load ----------------------------------------------------------------------


@dataclass
class Leftovers:
    """What the leftover passes of ``LogLoader`` do to a partition dir's files (step 1 of :mod:`kafkatool.loader`).

    ``removeTempFilesAndCollectSwapFiles`` deletes ``*.deleted`` and ``*.cleaned`` files, and every ``*.swap`` file at
    or above the smallest ``.cleaned`` base offset (KAFKA-6264); ``load``'s second pass deletes every other file whose
    offset lies in [smallest ``.log.swap`` base offset, largest ``.log.swap`` next offset) (the segments the swap
    replaces, their indexes and producer snapshots), then renames the ``.swap`` files into place."""

    deleted: list[tuple[Path, str, str]] = field(default_factory=list)   # (path, display, why)
    renamed: list[tuple[Path, str, Path]] = field(default_factory=list)  # (.swap path, display, destination)
    swapped_logs: dict[int, tuple[Path, str]] = field(default_factory=dict)  # base offset -> its .log.swap


def leftover_passes(files: PartitionFiles, next_offset: Callable[[Path, str, int], int]) -> Leftovers:
    """The leftover passes of ``LogLoader.load`` over a partition dir's files; ``next_offset(path, display, base)``
    reads a ``.log.swap`` file's next offset (``LogSegment.readNextOffset``), the only file read."""
    out = Leftovers()
    cleaned = [i.base_offset for _, _, i in files.leftovers if i.leftover == CLEANED and i.base_offset is not None]
    min_cleaned = min(cleaned, default=None)
    swaps: list[tuple[Path, str, FileInfo]] = []
    for p, d, info in files.leftovers:
        if info.leftover == DELETED:
            out.deleted.append((p, d, "marked for deletion (.deleted): the broker deletes it at start-up"))
        elif info.leftover == CLEANED:
            out.deleted.append((p, d, "output of an interrupted cleaner pass (.cleaned): the broker deletes it and "
                                      "cleans again"))
        elif info.leftover == SWAP:
            if min_cleaned is not None and (info.base_offset or 0) >= min_cleaned:
                out.deleted.append((p, d, f"swap file at or above the interrupted cleaning at {min_cleaned} "
                                          "(KAFKA-6264): the broker deletes it"))
            else:
                swaps.append((p, d, info))
    logs = {i.base_offset or 0: (p, d) for p, d, i in swaps if i.kind is FileKind.LOG}
    if logs:
        lo = min(logs)
        hi = max(next_offset(p, d, base) for base, (p, d) in logs.items())
        for p, d, info in files.files:  # every other file with an offset in the swap's range, by offsetFromFile
            if (info.leftover is None and info.base_offset is not None and lo <= info.base_offset < hi
                    and info.kind is not FileKind.KRAFT_SNAPSHOT):
                out.deleted.append((p, d, f"replaced by the interrupted swap of offsets {lo}..{hi - 1}: the broker "
                                          "deletes it before renaming the .swap files"))
        out.swapped_logs = logs
    for p, d, _info in swaps:
        out.renamed.append((p, d, without_swap(p)))
    return out


__all__ = ["CLEANED", "DELETED", "INDEX_KINDS", "SWAP", "TMP", "Leftovers", "PartitionFiles",
           "leftover_passes", "misnamed", "offset_from_file_name", "segment_file", "sort_files", "without_swap"]
