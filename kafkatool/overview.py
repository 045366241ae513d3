"""``overview``: one row per partition of a log dir, biggest first, with totals per topic.

Every number comes from the one partition loader (:func:`kafkatool.loader.load_partition`: batch headers and the
log dir's checkpoints, as ``LogLoader`` reads them), so the offsets are those ``verify``, ``replicas`` and
``repair`` show. ``problems`` counts the warnings and errors the load met (damage, a recovery cut, unreadable
files); what reading a log dir's checkpoints met comes once, as findings, before its rows; ``verify`` checks far
more and says what each is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .filetypes import file_size
from .loader import LoadedPartition, LogDirs, load_partition
from .model import Finding
from .smallfiles import read_meta_properties
from .walk import partition_dirs_and_findings


class PartitionOverview(NamedTuple):
    """One partition's row (a NamedTuple, as every immutable value on a command's path: kafkatool/__init__.py)."""

    topic: str
    partition: int
    path: str
    segments: int
    bytes: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None     # None: the log dir has no high watermark checkpoint entry for it
    first_timestamp: int | None
    last_timestamp: int | None
    open_transactions: int
    producers: int
    compacted: bool
    problems: int
    cluster: str | None = None     # with several clusters: its log dir's cluster.id ("-": no meta.properties)

    def as_dict(self) -> dict[str, Any]:
        return {"type": "partition_overview", **_cluster(self.cluster), "topic": self.topic,
                "partition": self.partition, "path": self.path,
                "segments": self.segments, "bytes": self.bytes, "log_start_offset": self.log_start_offset,
                "log_end_offset": self.log_end_offset, "high_watermark": self.high_watermark,
                "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
                "open_transactions": self.open_transactions, "producers": self.producers,
                "compacted": self.compacted, "problems": self.problems}


@dataclass
class TopicOverview:
    topic: str
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    records: int = 0         # offsets held: the sum of (LEO - log start), compacted gaps included
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    open_transactions: int = 0
    problems: int = 0
    cluster: str | None = None

    def add(self, p: PartitionOverview) -> None:
        self.partitions += 1
        self.segments += p.segments
        self.bytes += p.bytes
        self.records += p.log_end_offset - p.log_start_offset
        self.open_transactions += p.open_transactions
        self.problems += p.problems
        if p.first_timestamp is not None and p.first_timestamp >= 0:
            old = self.first_timestamp
            self.first_timestamp = p.first_timestamp if old is None else min(old, p.first_timestamp)
        if p.last_timestamp is not None:
            old = self.last_timestamp
            self.last_timestamp = p.last_timestamp if old is None else max(old, p.last_timestamp)

    def as_dict(self) -> dict[str, Any]:
        return {"type": "topic_overview", **_cluster(self.cluster), "topic": self.topic, "partitions": self.partitions,
                "segments": self.segments, "bytes": self.bytes, "offsets": self.records,
                "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
                "open_transactions": self.open_transactions, "problems": self.problems}


def _cluster(cluster: str | None) -> dict[str, str]:
    return {} if cluster is None else {"cluster": cluster}


def partition_overview(loaded: LoadedPartition, files: Iterable[tuple[Path, str]] = ()) -> PartitionOverview:
    """``loaded`` as a row; ``bytes`` is what the partition dir's ``files`` take on disk (segments, indexes,
    snapshots: what deleting the partition would free), or its segments' when no listing is given."""
    live = [s for s in loaded.segments if not s.deleted]
    listed = list(files)
    size = sum(file_size(p) for p, _ in listed) if listed else loaded.size
    problems = sum(1 for f in loaded.findings if f.severity != "info") + len(loaded.cuts)
    ts = loaded.max_timestamp
    return PartitionOverview(
        loaded.topic, loaded.partition, loaded.display, len(loaded.segments), size, loaded.log_start_offset,
        loaded.log_end_offset, loaded.high_watermark if loaded.hw_checkpoint is not None else None,
        loaded.first_timestamp if live else None,
        None if ts is None or ts < 0 else ts, len(loaded.open_transactions), len(loaded.producers), loaded.compacted,
        problems)


def overview_paths(paths: Iterable[str | Path], *, topic: str | None = None
                   ) -> Iterator[PartitionOverview | TopicOverview | Finding]:
    """Per partition under ``paths`` (only ``topic``'s when given), biggest first; then one total per topic,
    biggest first."""
    rows: list[PartitionOverview] = []
    clusters: dict[Path, str] = {}  # log dir -> its cluster.id: rows of two clusters are never one total
    logdirs = LogDirs()
    for pd in partition_dirs_and_findings(paths):
        if isinstance(pd, Finding):  # what discovery met outside a partition (a dir it cannot list, a loop)
            yield pd
            continue
        if topic is not None and pd.topic != topic:
            continue
        yield from pd.findings
        # the checkpoints every row's offsets come from: what reading them met, said once a log dir (as verify does)
        pd, met = logdirs.place(pd)
        yield from met
        if pd.logdir_path not in clusters:
            props = read_meta_properties(pd.logdir_path)
            clusters[pd.logdir_path] = props.cluster_id if props is not None and props.cluster_id else "-"
        row = partition_overview(load_partition(pd.path, pd.display, files=pd.files, logdir=pd.logdir), pd.files)
        rows.append(row._replace(cluster=clusters[pd.logdir_path]))
    if len(set(clusters.values())) < 2:  # one cluster (or none known): the rows as they always were
        rows = [r._replace(cluster=None) for r in rows]
    rows.sort(key=lambda r: (-r.bytes, r.topic, r.partition, r.path))
    yield from rows
    totals: dict[tuple[str | None, str], TopicOverview] = {}
    for r in rows:  # per cluster: __cluster_metadata of ten clusters is ten rows, not one
        totals.setdefault((r.cluster, r.topic), TopicOverview(r.topic, cluster=r.cluster)).add(r)
    yield from sorted(totals.values(), key=lambda t: (-t.bytes, t.topic, t.cluster or ""))



__all__ = ["PartitionOverview", "TopicOverview", "overview_paths", "partition_overview"]
