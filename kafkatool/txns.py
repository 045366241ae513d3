"""Transactions of a partition, and what a ``read_committed`` consumer receives from it.

The transactions come from the replay of :mod:`kafkatool.producers` (data batches of a producer from its first
transactional batch to its COMMIT/ABORT marker). The ``.txnindex`` check is :mod:`kafkatool.verify`'s (its
``txnindex-*`` findings), not redone here.

A ``read_committed`` fetch (``UnifiedLog.read`` with ``FetchIsolation.TXN_COMMITTED``, then the consumer's
``CompletedFetch``) returns batches below the last stable offset (the first offset of the oldest open
transaction; also below the high watermark) and the aborted transactions overlapping them; the consumer drops
control batches and the transactional batches of a producer that fall in one of its aborted transactions
``[first offset, marker offset]``. The aborted transactions a fetch returns come from the segments'
``TransactionIndex`` (:func:`served_aborts`), which ``dump --isolation read_committed`` follows; ``delivery`` still
takes the log's markers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import InputIOError
from .findings import finding
from .loader import LoadedPartition, read_logdir, segment_bytes
from .model import Batch, Finding
from .producers import Transaction, replay_partition, replayed_partitions
from .progress import Tally
from .smallfiles import read_txn_index
from .verify import verify_partition_dir
from .walk import partition_dirs, partition_of, total_bytes


@dataclass(frozen=True, slots=True)
class CommittedView:
    """What decides whether a batch reaches a ``read_committed`` consumer."""

    aborted: dict[int, list[tuple[int, int]]]  # producer id -> [(first offset, marker offset)]
    lso: int | None
    high_watermark: int | None
    findings: tuple[Finding, ...] = ()  # where the aborts served differ from the log's ABORT markers

    @property
    def limit(self) -> int | None:
        """The fetch's upper bound (exclusive): the LSO, and the high watermark when it is known."""
        bounds = [b for b in (self.lso, self.high_watermark) if b is not None]
        return min(bounds) if bounds else None

    def delivers(self, batch: Batch) -> bool:
        """False for control batches and batches of aborted transactions (v0/v1 entries are always delivered)."""
        if batch.magic < 2:
            return True
        if batch.control:
            return False
        if not batch.transactional:
            return True
        return not any(first <= batch.base_offset <= last for first, last in self.aborted.get(batch.producer_id, ()))


def high_watermark(partition_dir: Path) -> int | None:
    """The partition's entry in its log dir's ``replication-offset-checkpoint``, if there is one."""
    return checkpointed_offset(partition_dir, "replication-offset-checkpoint")


def checkpointed_offset(partition_dir: Path, checkpoint_name: str) -> int | None:
    """The partition's entry in one of its log dir's offset checkpoints (high watermark, log start, recovery
    point), if there is one (read by :class:`kafkatool.logdir.LogDir`, as the loader reads it)."""
    tp = partition_of(partition_dir.name)
    if tp is None:
        return None
    return read_logdir(partition_dir.parent, str(partition_dir.parent)).offset(checkpoint_name, *tp)


def committed_view(partition_dir: Path, display: str | None = None, served: bool = False) -> CommittedView:
    """The aborted transactions, LSO and high watermark of the partition dir holding a segment, as the broker holds
    them after loading the log (:mod:`kafkatool.loader`); the high watermark is None when the log dir has none
    checkpointed for the partition.

    The aborted transactions are the log's ABORT markers; with ``served``, those the broker serves
    (:func:`served_aborts`), and where they differ the view says so (``read-committed-view-differs``, at
    ``display``, the partition dir as shown)."""
    history = replay_partition(partition_dir)
    loaded = history.loaded
    logged = history.aborted()
    given = served_aborts(loaded, logged) if served and loaded is not None else logged
    aborted: dict[int, list[tuple[int, int]]] = {}
    for pid, first, last in given:
        aborted.setdefault(pid, []).append((first, last))
    hw = loaded.high_watermark if loaded is not None and loaded.hw_checkpoint is not None else None
    where = display if display is not None else str(partition_dir)
    return CommittedView(aborted, history.lso, hw, tuple(_view_differs(where, logged, given)))


def served_aborts(loaded: LoadedPartition, logged: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(producer id, first offset, marker offset) of the aborted transactions a ``read_committed`` fetch returns:
    ``UnifiedLog.collectAbortedTransactions`` reads them from each segment's ``TransactionIndex``
    (``LogSegment.collectAbortedTxns``). A segment the broker recovers at start-up (``LogSegment.recover``: a missing
    offset index, or at or after the recovery point without a clean shutdown) gets its index rebuilt from the log:
    the aborts whose marker it holds (``logged``); any other serves its ``.txnindex`` as it is, a missing one as
    empty (no entry) and an unreadable one as empty too."""
    served: list[tuple[int, int, int]] = []
    for seg in loaded.segments:
        if seg.deleted:
            continue
        if seg.recovered is not None:
            served += [t for t in logged if seg.base_offset <= t[2] < seg.next_offset]
            continue
        path = loaded.index_files.get((seg.base_offset, "txnindex"))
        try:
            entries = read_txn_index(path, seg.base_offset) if path is not None else []
        except (OSError, InputIOError):
            entries = []
        served += [(t.producer_id, t.first_offset, t.last_offset) for t in entries]
    return served


def _view_differs(where: str, logged: list[tuple[int, int, int]], served: list[tuple[int, int, int]]
                  ) -> Iterator[Finding]:
    """What a read_committed consumer gets that the log's markers say otherwise: aborted records it receives (an
    abort in no ``.txnindex``), committed records it drops (an index entry without its ABORT marker)."""
    missing = [t for t in logged if t not in served]
    extra = [t for t in served if t not in logged]
    for differs, what in ((missing, "aborted transactions of the log are in no .txnindex the broker would serve"),
                          (extra, ".txnindex entries the broker would serve have no ABORT marker in the log")):
        if differs:
            pid, first, marker = differs[0]
            receives = "receives" if differs is missing else "drops"
            yield finding("read-committed-view-differs", where, None,
                          f"{len(differs)} {what} (first: producer {pid}, offsets {first}..{marker}): a read_committed "
                          f"consumer {receives} their records, and so does this view (LogSegment.collectAbortedTxns)")


def txns_paths(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None
               ) -> Iterator[Transaction | Finding]:
    """Per partition under ``paths``: its transactions in offset order, a finding per open transaction holding
    back the LSO, then the ``.txnindex`` findings of ``verify``. ``progress`` is told the bytes of the segments as
    they are read, :func:`txns_bytes` in all."""
    for item in replayed_partitions(paths, progress):
        if isinstance(item, Finding):
            yield item
            continue
        pd, history = item
        yield from (f for f in history.findings if f.severity != "info")
        for t in history.transactions:
            yield t
            if t.outcome == "OPEN":
                yield finding("txn-open", pd.display, None,
                              f"transaction of producer {t.producer_id} (epoch {t.producer_epoch}) open since offset "
                              f"{t.first_offset} holds the last stable offset back by {t.lso_held_back} offsets "
                              f"(log end offset {history.leo}): read_committed consumers stop at {t.first_offset}"
                              " until it ends (hanging, if its producer is gone)")
        checked = Tally(progress)
        yield from (f for f in verify_partition_dir(pd, progress=checked if progress is not None else None)
                    if isinstance(f, Finding) and f.code.startswith("txnindex-"))
        if progress is not None:
            checked.settle(total_bytes([pd.display]))  # the leftovers verify does not read (.deleted, .cleaned)


def txns_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`txns_paths` tells its ``progress`` in all (a progress bar's total): for each partition under
    ``paths``, its segments twice (the replay's load and pass, :func:`kafkatool.producers.replay_partition`) and its
    record files once more (``verify``'s read, for the ``.txnindex`` checks)."""
    return sum(2 * segment_bytes(pd.files) + total_bytes([pd.display]) for pd in partition_dirs(paths))


__all__ = ["CommittedView", "checkpointed_offset", "committed_view", "high_watermark", "served_aborts", "txns_bytes",
           "txns_paths"]
