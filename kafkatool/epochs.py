"""The leader-epoch cache: Kafka's ``LeaderEpochFileCache`` (``storage/.../internals/epoch/LeaderEpochFileCache.java``).

One method per Java method, on ``(epoch, start offset)`` entries in the order the cache holds them (epochs and start
offsets both increasing). The one home of ``assign``: the log writer calls it for every appended v2 batch
(``UnifiedLog.append``), the loader for every recovered batch of a newer epoch (``LogSegment.recover``, see
:meth:`EpochCache.assign_recovered`), ``replicas``/``election``/``truncation`` on the caches they model.
"""

from __future__ import annotations

from collections.abc import Iterable

UNDEFINED_EPOCH = -1          # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1   # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET


class EpochCache:
    """``LeaderEpochFileCache`` on (epoch, start offset) entries."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def copy(self) -> EpochCache:
        c = EpochCache()
        c.entries = list(self.entries)
        return c

    @property
    def latest(self) -> tuple[int, int] | None:
        """``latestEntry``."""
        return self.entries[-1] if self.entries else None

    def assign(self, epoch: int, start: int) -> bool:
        """``assign``: a new epoch (or an earlier start of the latest) drops the entries it contradicts
        (``maybeTruncateNonMonotonicEntries``). True when the cache changed (the broker then flushes the file)."""
        if epoch < 0 or start < 0:
            return False  # Kafka refuses such an entry (IllegalArgumentException): the cache never holds one
        entries = self.entries
        if entries and epoch == entries[-1][0] and start >= entries[-1][1]:
            return False  # isUpdateNeeded: no
        while entries and (entries[-1][0] >= epoch or entries[-1][1] >= start):
            entries.pop()
        entries.append((epoch, start))
        return True

    def assign_recovered(self, epoch: int, start: int) -> bool:
        """What ``LogSegment.recover`` does with each valid v2 batch: ``assign`` its partition leader epoch at its
        base offset only when that epoch is above the latest one (older epochs never rewrite the cache)."""
        entries = self.entries
        if epoch < 0 or entries and epoch <= entries[-1][0]:
            return False
        return self.assign(epoch, start)

    def clear(self) -> bool:
        """``clearAndFlush`` (a v0/v1 batch appended: the cache no longer applies). True when it held entries."""
        had = bool(self.entries)
        self.entries.clear()
        return had

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop the entries starting at or after ``end_offset``."""
        while end_offset >= 0 and self.entries and self.entries[-1][1] >= end_offset:
            self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """``truncateFromStart``: entries starting at or before ``start_offset`` become one, starting there."""
        removed = None
        while self.entries and self.entries[0][1] <= start_offset:
            removed = self.entries.pop(0)
        if removed is not None:
            self.entries.insert(0, (removed[0], start_offset))

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor``: (the largest epoch <= requested, the start offset of the next epoch, or the LEO
        for the latest epoch); (-1, -1) when undefined."""
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and self.entries[-1][0] == requested:
            return requested, log_end_offset
        higher = next((e for e in self.entries if e[0] > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = [e for e in self.entries if e[0] <= requested]
        return (floor[-1][0] if floor else requested), higher[1]


__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET", "EpochCache"]
