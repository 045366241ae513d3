"""Unclean leader election, simulated: what electing a replica outside the ISR would lose.

With ``unclean.leader.election.enable`` a replica that is not in the ISR may become leader when no ISR member is
available. ``Partition.makeLeader`` then starts a new leader epoch at the candidate's log end offset
(``leaderEpochCache.assign(leaderEpoch, logEndOffset)``), and every other replica, on becoming its follower,
truncates by the leader-epoch protocol (``AbstractFetcherThread.truncateToEpochEndOffsets``;
:func:`kafkatool.truncation.epoch_rule`) to where its log stops agreeing with the candidate's epochs.

Records below the high watermark were acknowledged to ``acks=all`` producers (every ISR member held them); those
the new leader's followers truncate are gone from the cluster: acknowledged data lost. Records past the high
watermark that followers truncate were never acknowledged to ``acks=all`` producers (``acks=1`` producers were
told they were written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .epochs import EpochCache
from .replicas import Replica
from .truncation import epoch_rule


@dataclass
class OffsetRange:
    """Consecutive batches of one replica: offsets, records, and the producers that wrote them."""

    first_offset: int
    last_offset: int
    records: int = 0
    batches: int = 0
    producer_ids: set[int] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {"first_offset": self.first_offset, "last_offset": self.last_offset, "records": self.records,
                "batches": self.batches, "producer_ids": sorted(self.producer_ids)}


@dataclass
class FollowerTruncation:
    """What one other replica removes when it follows the candidate."""

    replica: str
    truncate_to: int
    leo: int
    acknowledged: list[OffsetRange]        # below the high watermark
    unacknowledged: list[OffsetRange]      # at or past it

    def as_dict(self) -> dict[str, Any]:
        return {"replica": self.replica, "truncate_to": self.truncate_to, "leo": self.leo,
                "offsets_removed": max(0, self.leo - self.truncate_to),
                "acknowledged": [r.as_dict() for r in self.acknowledged],
                "unacknowledged": [r.as_dict() for r in self.unacknowledged]}


@dataclass
class UncleanElection:
    """Electing ``candidate``: the acknowledged offsets lost, and what each other replica truncates."""

    topic: str
    partition: int
    candidate: str
    candidate_path: str
    in_isr: bool
    candidate_leo: int
    high_watermark: int
    new_epoch: int
    lost: list[OffsetRange]
    followers: list[FollowerTruncation]

    @property
    def lost_offsets(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.lost)

    def as_dict(self) -> dict[str, Any]:
        return {"type": "unclean_election", "topic": self.topic, "partition": self.partition,
                "candidate": self.candidate, "candidate_path": self.candidate_path, "in_isr": self.in_isr,
                "candidate_leo": self.candidate_leo, "high_watermark": self.high_watermark,
                "new_epoch": self.new_epoch, "lost": [r.as_dict() for r in self.lost],
                "lost_offsets": self.lost_offsets, "lost_records": sum(r.records for r in self.lost),
                "followers": [f.as_dict() for f in self.followers]}


def _ranges(replica: Replica, lo: int, hi: int) -> list[OffsetRange]:
    """``replica``'s batches overlapping ``[lo, hi)``, as ranges of consecutive offsets (clipped to them)."""
    out: list[OffsetRange] = []
    if lo >= hi:
        return out
    for _seg, b in replica.batches(lo):
        if b.base_offset >= hi:
            break
        if b.last_offset < lo:
            continue
        first, last = max(b.base_offset, lo), min(b.last_offset, hi - 1)
        whole = (first, last) == (b.base_offset, b.last_offset)
        contiguous = b.record_count == b.last_offset - b.base_offset + 1
        # a batch cut by the range counts its offsets inside it; a compacted one (gaps) cut there: all its records
        records = last - first + 1 if not whole and contiguous else b.record_count
        cur = out[-1] if out and out[-1].last_offset + 1 >= first else None
        if cur is None:
            cur = OffsetRange(first, last)
            out.append(cur)
        cur.last_offset = max(cur.last_offset, last)
        cur.records += records
        cur.batches += 1
        if b.producer_id is not None and b.producer_id >= 0:
            cur.producer_ids.add(b.producer_id)
    return out


def unclean_election(candidate: Replica, others: list[Replica], in_isr: list[bool], high_watermark: int,
                     candidate_in_isr: bool) -> UncleanElection:
    """Elect ``candidate`` (``others``: every other replica, ``in_isr`` theirs) and let the others follow it."""
    caches = [r.epoch_cache() for r in (candidate, *others)]
    new_epoch = 1 + max((c.latest[0] for c in caches if c.latest is not None), default=-1)
    leader_cache: EpochCache = caches[0].copy()
    leader_cache.assign(new_epoch, candidate.leo)  # Partition.makeLeader: the new epoch starts at its LEO
    followers: list[FollowerTruncation] = []
    lost_from: int | None = None
    reference: Replica | None = None
    for other, cache, member in zip(others, caches[1:], in_isr, strict=True):
        t, _steps = epoch_rule(leader_cache, candidate.leo, cache, other.leo, other.high_watermark)
        followers.append(FollowerTruncation(other.name, t, other.leo, _ranges(other, t, min(other.leo, high_watermark)),
                                            _ranges(other, max(t, high_watermark), other.leo)))
        if member and t < high_watermark and (lost_from is None or t < lost_from):
            lost_from, reference = t, other
    lost = _ranges(reference, lost_from, high_watermark) if reference is not None and lost_from is not None else []
    return UncleanElection(candidate.dir.topic, candidate.dir.partition, candidate.name, candidate.path,
                           candidate_in_isr, candidate.leo, high_watermark, new_epoch, lost, followers)


__all__ = ["FollowerTruncation", "OffsetRange", "UncleanElection", "unclean_election"]
