"""A partition as Kafka's ``Partition`` sees its replicas: who is in the ISR, the high watermark the ISR gives
(``Partition.maybeIncrementLeaderHW``: the smallest log end offset of the ISR), and what an unclean election of a
replica outside it would do (:mod:`kafkatool.election`). The ``replicas`` command's engine: the replicas themselves,
loaded and compared batch by batch, are :mod:`kafkatool.replicas`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .election import unclean_election
from .errors import UsageError
from .findings import finding
from .internal.metadata import PartitionState, metadata_sources, metadata_timeline
from .loader import segment_bytes
from .model import Finding
from .records import ScanOptions
from .replicas import Divergence, Replica, compare, filter_matched_nothing, open_replica, replica_groups
from .smallfiles import read_meta_properties
from .truncation import exposed_finding
from .walk import PartitionDir


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica as the ``replicas`` command reports it."""

    path: str
    name: str
    topic: str
    partition: int
    log_start_offset: int
    log_start_checkpoint: int | None
    first_batch_offset: int | None
    leo: int
    hw_checkpoint: int | None
    high_watermark: int
    recovery_point: int | None
    lso: int
    first_unstable_offset: int | None
    open_transactions: int
    latest_epoch: int | None
    latest_epoch_start_offset: int | None
    epochs: tuple[tuple[int, int], ...]
    segments: int
    size: int
    batches: int
    records: int
    lag: int
    in_isr: bool
    hw_ahead_of_leo: bool
    damaged_at: dict[str, Any] | None
    clean_shutdown: bool

    def as_dict(self) -> dict[str, Any]:
        return {"type": "replica", "path": self.path, "topic": self.topic, "partition": self.partition,
                "log_start_offset": self.log_start_offset, "leo": self.leo, "hw_checkpoint": self.hw_checkpoint,
                "recovery_point": self.recovery_point, "lso": self.lso, "latest_epoch": self.latest_epoch,
                "name": self.name, "latest_epoch_start_offset": self.latest_epoch_start_offset,
                "epochs": [list(e) for e in self.epochs], "log_start_checkpoint": self.log_start_checkpoint,
                "first_batch_offset": self.first_batch_offset, "high_watermark": self.high_watermark,
                "first_unstable_offset": self.first_unstable_offset, "open_transactions": self.open_transactions,
                "segments": self.segments, "size": self.size, "batches": self.batches, "records": self.records,
                "lag": self.lag, "in_isr": self.in_isr, "hw_ahead_of_leo": self.hw_ahead_of_leo,
                "damaged_at": self.damaged_at, "clean_shutdown": self.clean_shutdown}


def replica_state(r: Replica, max_leo: int, in_isr: bool) -> ReplicaState:
    cache = r.epoch_cache()
    latest = cache.latest
    d = r.damage
    return ReplicaState(
        r.path, r.name, r.dir.topic, r.dir.partition, r.log_start_offset, r.log_start_checkpoint,
        r.first_batch_offset, r.leo, r.hw_checkpoint, r.high_watermark, r.recovery_point, r.last_stable_offset,
        r.first_unstable_offset, len(r.open_txns), latest[0] if latest else None, latest[1] if latest else None,
        tuple(cache.entries), len(r.segments), r.size, r.batches_read, r.records, max_leo - r.leo, in_isr,
        r.hw_checkpoint is not None and r.hw_checkpoint > r.leo,
        None if d is None else {"path": d.path, "position": d.position, "code": d.code}, r.clean_shutdown)


@dataclass(frozen=True, slots=True)
class PartitionReplicas:
    """The derived view of one partition's replicas: the ISR's high watermark and the pairwise divergence."""

    topic: str
    partition: int
    replicas: tuple[str, ...]
    isr: tuple[str, ...]
    isr_hw: int
    max_leo: int
    divergence: tuple[Divergence, ...]
    isr_from: str       # where the ISR comes from: --isr, metadata, checkpoints, or assumed (every replica)
    isr_basis: str      # what it was taken from, in words

    def as_dict(self) -> dict[str, Any]:
        return {"type": "partition", "topic": self.topic, "partition": self.partition, "isr_hw": self.isr_hw,
                "divergence": [d.as_dict() for d in self.divergence], "replicas": list(self.replicas),
                "isr": list(self.isr), "max_leo": self.max_leo, "isr_from": self.isr_from,
                "isr_basis": self.isr_basis}


def _in_isr(isr: list[str] | None, part: PartitionDir, name: str) -> bool:
    if isr is None:
        return True
    real = {part.path.resolve(), part.logdir_path.resolve()}
    return any(item in (name, part.display) or Path(item).resolve() in real for item in isr)


def _metadata_isr(paths: Iterable[str | Path]) -> dict[tuple[str, int], PartitionState]:
    """The latest state of every partition in the KRaft metadata logs under ``paths`` (``__cluster_metadata-0``
    dirs beside the replicas): PartitionRecord / PartitionChangeRecord replayed as the controller does
    (:func:`kafkatool.internal.metadata.metadata_timeline`); of several logs (one per controller), the newest state by
    leader epoch, then partition epoch."""
    if not metadata_sources(paths):
        return {}
    latest: dict[tuple[str, int], PartitionState] = {}
    for item in metadata_timeline(paths):
        if isinstance(item, PartitionState):
            key, old = (item.topic, item.partition), latest.get((item.topic, item.partition))
            rank = (item.leader_epoch or -1, item.partition_epoch or -1)
            if old is None or rank >= (old.leader_epoch or -1, old.partition_epoch or -1):
                latest[key] = item
    return latest


def _known_isr(replicas: list[Replica], metadata: dict[tuple[str, int], PartitionState]
               ) -> tuple[list[bool], str, str]:
    """Which replicas are in the ISR when ``--isr`` does not say, and where that comes from.

    From the KRaft metadata when it holds the partition and every replica's log dir names its node
    (``meta.properties``). Else from the high-watermark checkpoints: the leader's high watermark is the largest
    any replica checkpointed, and ``Partition.maybeIncrementLeaderHW`` only moves it to an offset every ISR member
    holds, so a replica whose log ends below it was out of the ISR; the others are taken as in it. Else (no
    checkpoint) every replica is assumed in sync, and said so."""
    part = replicas[0].dir
    state = metadata.get((part.topic, part.partition))
    if state is not None:
        props = [read_meta_properties(r.dir.logdir_path) for r in replicas]
        nodes = [p.node_id if p is not None else None for p in props]
        if None not in nodes:
            members = [n in state.isr for n in nodes]
            if any(members):
                return members, "metadata", (f"ISR {','.join(map(str, state.isr))} of {state.source} (leader epoch "
                                             f"{state.leader_epoch})")
    hws = [r.hw_checkpoint for r in replicas if r.hw_checkpoint is not None]
    if hws and any(r.leo >= max(hws) for r in replicas):
        hw = max(hws)
        return ([r.leo >= hw for r in replicas], "checkpoints",
                f"the replicas whose log reaches the highest high-watermark checkpoint, {hw}")
    return [True] * len(replicas), "assumed", "no metadata or high-watermark checkpoint: every replica assumed in sync"


def inspect_replicas(
    paths: Iterable[str | Path], *, isr: list[str] | None = None, topic: str | None = None,
    partition: int | None = None, options: ScanOptions | None = None, unclean: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Per partition present in two or more of ``paths``: findings, one :class:`ReplicaState` per replica, then
    one :class:`PartitionReplicas`, then an :class:`kafkatool.election.UncleanElection` per replica outside the
    ISR (every replica with ``unclean``). ``isr``: the replicas in sync (names or paths; default: from the KRaft
    metadata or the high-watermark checkpoints under ``paths``, else all, see :func:`_known_isr`).
    ``progress`` is told the bytes of the segments as the loads and the comparison read them,
    :func:`replicas_bytes` in all (an election's look at the batches from an offset on is not counted)."""
    met: list[Finding] = []
    groups = replica_groups(paths, topic, partition, met=met)
    if not groups:
        raise filter_matched_nothing(paths, topic, partition, 2) or UsageError(
            "no partition is present in two or more of the given dirs (give one log dir per broker, or the "
            "partition's dir on each broker; --topic/--partition narrow)")
    opened = [[open_replica(part, name, options, progress) for part, name in group] for group in groups]
    if isr is None:
        metadata = _metadata_isr(paths)
        known = [_known_isr(replicas, metadata) for replicas in opened]
        members = [m for m, _f, _b in known]
    else:
        members = [[_in_isr(isr, r.dir, r.name) for r in replicas] for replicas in opened]
        known = [(m, "--isr", "named by --isr") for m in members]  # checked before anything is read or shown
        unknown = [i for i in isr if not any(_in_isr([i], r.dir, r.name) for rs in opened for r in rs)]
        if unknown:
            raise UsageError(f"--isr: no replica named {', '.join(unknown)}")
        for replicas, m in zip(opened, members, strict=True):
            if not any(m):
                raise UsageError(f"--isr names none of the replicas of {replicas[0].dir.topic}-"
                                 f"{replicas[0].dir.partition}: {', '.join(r.name for r in replicas)}")
    yield from met
    for replicas, (m, isr_from, isr_basis) in zip(opened, known, strict=True):
        divergence = compare(replicas, progress)
        max_leo = max(r.leo for r in replicas)
        for r in replicas:
            yield from r.findings
            if r.hw_checkpoint is not None and r.hw_checkpoint > r.leo:
                yield finding("high-watermark-beyond-log-end", r.path, None,
                              f"its high watermark checkpoint {r.hw_checkpoint} is beyond its log end offset {r.leo}: "
                              "acknowledged data is missing from this replica")
        for d in divergence:
            if d.first_divergent_offset is not None:
                yield finding("replicas-diverge", d.a, None,
                              f"{d.a_name} and {d.b_name} hold different batches from offset "
                              f"{d.first_divergent_offset}")
        isr_replicas = [r for r, member in zip(replicas, m, strict=True) if member]
        isr_hw = min(r.leo for r in isr_replicas)
        yield from _exposed(isr_replicas, isr_hw)
        for r, member in zip(replicas, m, strict=True):
            yield replica_state(r, max_leo, member)
        yield PartitionReplicas(replicas[0].dir.topic, replicas[0].dir.partition, tuple(r.path for r in replicas),
                                tuple(r.name for r in isr_replicas), isr_hw, max_leo, tuple(divergence), isr_from,
                                isr_basis)
        for k, (r, member) in enumerate(zip(replicas, m, strict=True)):
            if unclean or not member:
                rest = [i for i in range(len(replicas)) if i != k]
                yield unclean_election(r, [replicas[i] for i in rest], [m[i] for i in rest], isr_hw, member)


def _exposed(isr_replicas: list[Replica], isr_hw: int) -> Iterator[Finding]:
    """Acknowledged offsets (below the ISR's high watermark: consumers may have read them) that one ISR replica
    alone would keep if the others truncated to their high-watermark checkpoints (the rule before KIP-101,
    ``AbstractFetcherThread.truncateToHighWatermark``; KIP-101 scenario 1): reported on each replica that would
    discard them. ``truncation --rule hw`` reports the same offsets for a leader and one follower."""
    kept = sorted(min(r.hw_checkpoint if r.hw_checkpoint is not None else r.leo, r.leo) for r in isr_replicas)
    if len(kept) < 2:
        return
    first_alone = max(kept[-2], 0)   # from here on only the replica keeping the most holds them
    for r in isr_replicas:
        if r.hw_checkpoint is None:
            continue
        first, last = max(r.hw_checkpoint, first_alone, r.log_start_offset), min(isr_hw, r.leo) - 1
        if first <= last:
            yield exposed_finding(r.path, r.name, first, last)


def replicas_bytes(paths: Iterable[str | Path], *, topic: str | None = None, partition: int | None = None) -> int:
    """What :func:`inspect_replicas` tells its ``progress`` in all (a progress bar's total): the segments of every
    replica it compares twice, read by its load and by the comparison."""
    return sum(2 * segment_bytes(part.files) for group in replica_groups(paths, topic, partition)
               for part, _name in group)
