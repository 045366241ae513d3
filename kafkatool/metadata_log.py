"""The KRaft metadata log as the controller loads it: Kafka's ``KafkaMetadataLog`` over its ``UnifiedLog``.

``KafkaMetadataLog.apply`` (``core/.../kafka/raft/KafkaMetadataLog.scala``) first loads ``__cluster_metadata-0``
as any partition (``UnifiedLog``, :mod:`kafkatool.loader`: log start, log end offset, leader epochs), then:

1. ``recoverSnapshots``: when the log starts above 0, a snapshot at or after the log start must be there (it
   holds the metadata of every offset before it), else ``IllegalStateException("Inconsistent snapshot state
   ...")``: the node does not start. This is the one rule of continuity ``ReplicatedLog`` relies on: history
   before the log start lives in a snapshot only. Then every ``<end offset>-<epoch>.checkpoint``
   (``Snapshots.parse``) below the log start is deleted, and so is every partial one (``.checkpoint.part``: being
   written when the node stopped).
2. ``truncateToLatestSnapshot``: when the latest snapshot's epoch is above the log's latest epoch (0 without one),
   or the same with an end offset beyond the log end, ``UnifiedLog.truncateFullyAndStartAt`` deletes every segment
   and starts the log at the snapshot (log start = log end = its end offset; leader-epoch cache cleared, producer
   snapshots deleted); the snapshots before it are forgotten and deleted. A dir holding snapshots and no segment
   starts there.

Snapshots are KRaft's own files: the producer-state rules of a data partition (``.snapshot``) never apply to them.
Retention at run time (``maybeClean``, ``deleteBeforeSnapshot``) keeps the newest snapshot and deletes older ones
with the log before them; a load deletes only what the two steps above say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .filetypes import METADATA_TOPIC, FileInfo, FileKind
from .findings import finding
from .model import Finding

# Snapshots.createTempFile: "<end offset>-<epoch>-" + a random part + ".checkpoint.part"
_PARTIAL = re.compile(r"^(?P<offset>\d{20})-(?P<epoch>\d{10}).*\.checkpoint\.part$")


class SnapshotFile(NamedTuple):
    """A KRaft snapshot file (``SnapshotPath``): its id (``OffsetAndEpoch``: the end offset, then the epoch)."""

    end_offset: int
    epoch: int
    path: Path
    display: str


@dataclass
class MetadataLogLoad:
    """What ``KafkaMetadataLog.apply`` does with a loaded ``__cluster_metadata`` partition (see the module doc)."""

    snapshots: list[SnapshotFile]                 # the snapshots it keeps, oldest first (all of them when it fails)
    deleted: list[tuple[SnapshotFile, str]] = field(default_factory=list)   # the snapshots it deletes, and why
    truncated_to: SnapshotFile | None = None      # truncateToLatestSnapshot: the log starts again there
    inconsistent: bool = False                    # recoverSnapshots throws: the node does not start
    findings: list[Finding] = field(default_factory=list)

    @property
    def latest(self) -> SnapshotFile | None:
        """``latestSnapshotId``: the snapshot the controller replays first."""
        return self.snapshots[-1] if self.snapshots else None


def snapshot_files(files: list[tuple[Path, str, FileInfo]]) -> list[SnapshotFile]:
    """The immutable snapshots of a partition dir's classified listing, by id (``OffsetAndEpoch.compareTo``);
    ``.checkpoint.deleted`` leftovers are the leftover passes' (the broker deletes them too)."""
    out = [SnapshotFile(i.base_offset, i.epoch, p, d) for p, d, i in files
           if i.kind is FileKind.KRAFT_SNAPSHOT and i.leftover is None and i.base_offset is not None
           and i.epoch is not None]
    return sorted(out, key=lambda s: (s.end_offset, s.epoch))


def partial_snapshot(path: Path, display: str) -> SnapshotFile | None:
    """A partial snapshot (``SnapshotPath.partial``), named as ``Snapshots.createTempFile`` names it, or None."""
    m = _PARTIAL.match(path.name)
    return SnapshotFile(int(m["offset"]), int(m["epoch"]), path, display) if m else None


def load_metadata_log(snapshots: list[SnapshotFile], display: str, log_start: int, log_end: int,
                      latest_epoch: int | None, segments: int = 0, producer_snapshots: int = 0,
                      partial: list[SnapshotFile] | None = None) -> MetadataLogLoad:
    """``KafkaMetadataLog.apply`` after its ``UnifiedLog`` loaded the partition shown as ``display``: ``log_start``,
    ``log_end`` and ``latest_epoch`` (the leader-epoch cache's, None when empty) are that log's; ``segments`` and
    ``producer_snapshots`` count its files a truncation to the latest snapshot drops; ``partial``: its
    ``.checkpoint.part`` files (:func:`partial_snapshot`)."""
    kept = [s for s in snapshots if s.end_offset >= log_start]
    expired = [s for s in snapshots if s.end_offset < log_start]
    if log_start > 0 and not kept:  # recoverSnapshots checks before it deletes anything
        newest = expired[-1].end_offset if expired else 0
        what = (f"the newest snapshot ends at {newest}" if expired else "there is no snapshot")
        f = finding("kraft-snapshot-gap", expired[-1].display if expired else display, None,
                    f"{what} and the log starts at {log_start}: offsets {newest}..{log_start - 1} "
                    f"({log_start - newest:,}) of metadata history are in no file; KafkaMetadataLog refuses to load "
                    "the log (recoverSnapshots: Inconsistent snapshot state) and the node does not start")
        return MetadataLogLoad(list(snapshots), inconsistent=True, findings=[f])
    out = MetadataLogLoad(kept)
    for s in partial or ():
        out.deleted.append((s, "a partial snapshot (.checkpoint.part: being written when the node stopped): "
                               "KafkaMetadataLog deletes it when it loads the log (recoverSnapshots)"))
    for s in expired:
        out.deleted.append((s, f"ends below the log start offset {log_start}: KafkaMetadataLog deletes it when it "
                               "loads the log (recoverSnapshots)"))
    latest = kept[-1] if kept else None
    epoch = latest_epoch if latest_epoch is not None else 0
    if latest is not None and (latest.epoch > epoch or (latest.epoch == epoch and latest.end_offset > log_end)):
        out.truncated_to, out.snapshots = latest, [latest]
        why = (f"it ends beyond the log end offset {log_end}" if latest.epoch == epoch
               else f"its epoch {latest.epoch} is above the log's latest epoch {latest_epoch}"
               if latest_epoch is not None else "the log has no leader epoch")
        out.findings.append(finding(
            "kraft-log-starts-at-snapshot", latest.display, None,
            f"the latest snapshot ({latest.end_offset}, epoch {latest.epoch}) is ahead of the log ({why}): "
            f"KafkaMetadataLog starts the log at {latest.end_offset} (truncateToLatestSnapshot: "
            f"{_count(segments, 'segment')} and {_count(producer_snapshots, 'producer snapshot')} deleted, the "
            "leader-epoch cache cleared) and replays the metadata from this snapshot"))
        for s in kept[:-1]:
            out.deleted.append((s, f"before the latest snapshot ({latest.end_offset}, epoch {latest.epoch}) the "
                                   "log is truncated to: KafkaMetadataLog deletes it (truncateToLatestSnapshot)"))
    out.deleted.sort(key=lambda x: (x[0].end_offset, x[0].epoch))
    out.findings.extend(finding("kraft-snapshot-deleted", s.display, None, why) for s, why in out.deleted)
    return out


def _count(n: int, what: str) -> str:
    return f"no {what}" if n == 0 else f"{n} {what}{'' if n == 1 else 's'}"


__all__ = ["METADATA_TOPIC", "MetadataLogLoad", "SnapshotFile", "load_metadata_log", "partial_snapshot",
           "snapshot_files"]
