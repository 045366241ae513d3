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

Hanging transactions (KIP-664, :func:`hanging_paths`) are judged as ``kafka-transactions.sh find-hanging``
(``TransactionsCommand.FindHangingTransactionsCommand``) judges them, with the coordinator's state read from the
``__transaction_state`` partitions given instead of asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputIOError
from .findings import finding
from .internal.offsets import OFFSETS_TOPIC, CommittedOffset, consumer_offsets_bytes, consumer_offsets_partition
from .internal.transactions import (
    TRANSACTION_TOPIC,
    TransactionLogEntry,
    TxnClock,
    transaction_state_partition,
    transaction_states_bytes,
)
from .loader import LoadedPartition, load_findings, read_logdir, segment_bytes
from .locate import iso_time
from .model import Batch, Finding
from .producers import PartitionHistory, Transaction, replay_partition, replayed_partitions
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
    """Per partition under ``paths``: what its load met and the audit found (errors and warnings), its transactions
    in offset order, a finding per open transaction holding back the LSO, then the ``.txnindex`` findings of
    ``verify``. ``progress`` is told the bytes of the segments as they are read, :func:`txns_bytes` in all."""
    for item in replayed_partitions(paths, progress):
        if isinstance(item, Finding):
            yield item
            continue
        pd, history = item
        yield from (f for f in (*history.load_findings, *history.findings) if f.severity != "info")
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
                    if isinstance(f, Finding) and (f.code.startswith("txnindex-") or f.path.endswith(".txnindex")))
        if progress is not None:
            checked.settle(total_bytes([pd.display]))  # the leftovers verify does not read (.deleted, .cleaned)


def txns_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`txns_paths` tells its ``progress`` in all (a progress bar's total): for each partition under
    ``paths``, its segments twice (the replay's load and pass, :func:`kafkatool.producers.replay_partition`) and its
    record files once more (``verify``'s read, for the ``.txnindex`` checks)."""
    return sum(2 * segment_bytes(pd.files) + total_bytes([pd.display]) for pd in partition_dirs(paths))


# --- hanging transactions (KIP-664) ------------------------------------------------------------------------------

MAX_TRANSACTION_TIMEOUT_MS = 15 * 60_000  # find-hanging's --max-transaction-timeout default (15 minutes)
# States whose transaction the coordinator has ended: it writes no more markers (TransactionState; Dead is the id
# being expired, which ListTransactions and DescribeTransactions do not show)
_COMPLETED = ("CompleteCommit", "CompleteAbort", "Empty", "Dead")


@dataclass(frozen=True, slots=True)
class HangingTransaction:
    """An open transaction no coordinator will end (``FindHangingTransactionsCommand.filterHangingTransactions``), or,
    ``possibly``, one open too long whose coordinator's state was not read."""

    topic: str
    partition: int
    path: str                  # the partition dir, as shown
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    first_offset: int
    first_timestamp: int
    last_timestamp: int        # its producer's last write in the partition (DescribeProducers' lastTimestamp)
    open_ms: int               # now - last_timestamp: find-hanging's duration
    transactional_id: str | None
    state: str | None          # the transactional id's state at its coordinator
    reason: str                # no_transactional_id | coordinator_completed | partition_not_in_transaction |
    #                            transaction_state_not_read
    last_stable_offset: int | None
    log_end_offset: int | None
    groups: tuple[tuple[str, int], ...] = ()  # (group, committed offset) at or past the first offset
    possibly: bool = False
    # in __consumer_offsets: the transaction's own offset commits, pending until it ends (group, topic, partition,
    # offset)
    pending_commits: tuple[tuple[str, str, int, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "hanging_transaction", "topic": self.topic, "partition": self.partition,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "coordinator_epoch": self.coordinator_epoch, "first_offset": self.first_offset,
            "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp, "open_ms": self.open_ms,
            "transactional_id": self.transactional_id, "state": self.state, "reason": self.reason,
            "possibly": self.possibly, "path": self.path,
            "holds_back": {"last_stable_offset": self.last_stable_offset, "log_end_offset": self.log_end_offset,
                           "offsets": None if self.log_end_offset is None else self.log_end_offset - self.first_offset,
                           "groups": [{"group": g, "committed_offset": o} for g, o in self.groups],
                           "pending_commits": [{"group": g, "topic": t, "partition": p, "offset": o}
                                               for g, t, p, o in self.pending_commits]},
        }


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: str
    topic: str
    partition: int
    txn: Transaction
    coordinator_epoch: int
    last_timestamp: int
    lso: int | None
    leo: int | None


def hanging_candidates(pd_topic: str, pd_partition: int, history: PartitionHistory) -> Iterator[_Candidate]:
    """The partition's open transactions, each with its producer's state (``DescribeProducers``' active producers
    with a ``currentTransactionStartOffset``): what :func:`find_hanging` judges."""
    for t in history.transactions:
        if t.outcome != "OPEN":
            continue
        p = history.producers.get(t.producer_id)
        last = p.last_timestamp if p is not None else t.first_timestamp
        yield _Candidate(history.display, pd_topic, pd_partition, t, p.coordinator_epoch if p is not None else -1,
                         last, history.lso, history.leo)


def _judge(c: _Candidate, by_producer: dict[int, list[TransactionLogEntry]] | None) -> tuple[str, str | None,
                                                                                            str | None] | None:
    """(reason, transactional id, its state) when no coordinator will end ``c``'s transaction, else None
    (``filterHangingTransactions``): no live transactional id has its producer id (``ListTransactions`` with
    ``filterProducerIds``, which leaves out ``Dead`` ones), or the id's transaction does not hold the partition
    (``DescribeTransactions``' partitions: those of an ongoing transaction, and those whose markers are not yet
    written in ``PrepareCommit``/``PrepareAbort``; a completed one holds none). ``by_producer`` None: the coordinator's
    state was not read."""
    if by_producer is None:
        return "transaction_state_not_read", None, None
    entries = [e for e in by_producer.get(c.txn.producer_id, ()) if e.state != "Dead"]
    if not entries:
        return "no_transactional_id", None, None
    for e in entries:
        if e.state not in _COMPLETED and any(t == c.topic and c.partition in ps for t, ps in e.partitions):
            return None
    e = entries[0]
    return ("coordinator_completed" if e.state in _COMPLETED else "partition_not_in_transaction",
            e.transactional_id, e.state)


def hanging_paths(paths: Iterable[str | Path], *, max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS,
                  now: int | None = None, progress: Callable[[int], None] | None = None,
                  coordinators: list[str] | None = None) -> Iterator[TxnClock | HangingTransaction | Finding]:
    """The hanging transactions of the partitions under ``paths``, as ``find-hanging`` finds them: an open
    transaction whose producer last wrote to the partition more than ``max_timeout_ms`` before ``now`` (else the
    newest timestamp of the partitions read, said first as the :class:`~kafkatool.internal.transactions.TxnClock`),
    and that no coordinator will end (:func:`_judge`, on the ``__transaction_state`` partitions among ``paths``;
    where there is none, each such transaction is only *possibly* hanging). Each comes with what it holds back: the
    partition's LSO, and the groups whose commit on the partition (``__consumer_offsets`` among ``paths``) is at or
    past its first offset. Then a finding for each, and those the reads met (discovery, the partitions' loads as
    :func:`kafkatool.loader.load_findings` says them, the coordinators' records), not the idempotence audit's
    (:func:`txns_paths`).

    ``coordinators`` is given the ``__transaction_state`` partitions read. ``progress`` is told the bytes of the
    segments as they are read, :func:`hanging_bytes` in all."""
    clock = TxnClock(now)
    candidates: list[_Candidate] = []
    states: list[TransactionLogEntry] = []
    commits: dict[tuple[str, int], list[tuple[str, int]]] = {}
    pending: dict[tuple[str, int], dict[int, list[CommittedOffset]]] = {}  # __consumer_offsets-N -> pid -> commits
    read: list[str] = [] if coordinators is None else coordinators
    findings: list[Finding] = []
    for item in replayed_partitions(paths, progress):
        if isinstance(item, Finding):
            findings.append(item)
            continue
        pd, history = item
        if history.loaded is not None:  # what loading it met; the idempotence audit is producers' and txns'
            findings.extend(f for f in load_findings(history.loaded) if f.severity != "info")
        newest = history.loaded.max_timestamp if history.loaded is not None else None
        if newest is not None and newest > clock.newest:
            clock.newest = newest
        if pd.topic is None or pd.partition is None:
            continue
        name = f"{pd.topic}-{pd.partition}"
        candidates.extend(hanging_candidates(pd.topic, pd.partition, history))
        if pd.topic == TRANSACTION_TOPIC:
            read.append(name)
            for e in transaction_state_partition(pd.files, name, progress, clock):
                if isinstance(e, Finding):
                    findings.append(e)
                else:
                    states.append(e)
        elif pd.topic == OFFSETS_TOPIC:
            for c in consumer_offsets_partition(pd.files, name, progress, pending.setdefault((pd.topic, pd.partition),
                                                                                             {})):
                if isinstance(c, CommittedOffset):
                    commits.setdefault((c.topic, c.partition), []).append((c.group, c.offset))
                elif isinstance(c, Finding) and c.severity != "info":
                    findings.append(c)
    if clock.at >= 0:
        yield clock
    hanging = find_hanging(candidates, states if read else None, commits, pending, clock.at, max_timeout_ms)
    yield from hanging
    yield from (_hanging_finding(h, max_timeout_ms) for h in hanging)
    yield from findings


def find_hanging(candidates: Iterable[_Candidate], states: Iterable[TransactionLogEntry] | None,
                 commits: dict[tuple[str, int], list[tuple[str, int]]],
                 pending: dict[tuple[str, int], dict[int, list[CommittedOffset]]], at: int,
                 max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS) -> list[HangingTransaction]:
    """``filterHangingTransactions`` at time ``at`` (-1: no time, none): of the open transactions ``candidates``
    (:func:`hanging_candidates`), those whose producer last wrote more than ``max_timeout_ms`` before and that no
    coordinator will end (:func:`_judge` on ``states``, the ``__transaction_state`` entries; None: no such partition
    read, each only *possibly* hanging), with the groups' commits on their partition at or past their first offset
    (``commits``: (topic, partition) -> [(group, offset)]) and their own pending offset commits (``pending``:
    ``__consumer_offsets`` (topic, partition) -> producer id -> commits). The one rule of :func:`hanging_paths` and
    of the Spark data source's rows (:mod:`kafkatool.spark.state`)."""
    by_producer: dict[int, list[TransactionLogEntry]] | None = None
    if states is not None:
        by_producer = {}
        for e in sorted(states, key=lambda e: (e.transactional_id, e.coordinator_partition)):
            by_producer.setdefault(e.producer_id, []).append(e)
    hanging: list[HangingTransaction] = []
    for c in candidates:
        if at < 0 or at - c.last_timestamp <= max_timeout_ms:
            continue
        judged = _judge(c, by_producer)
        if judged is None:
            continue
        reason, tid, state = judged
        t = c.txn
        groups = tuple(sorted({(g, o) for g, o in commits.get((c.topic, c.partition), ()) if o >= t.first_offset}))
        held = tuple(sorted({(p.group, p.topic, p.partition, p.offset)
                             for p in pending.get((c.topic, c.partition), {}).get(t.producer_id, ())}))
        hanging.append(HangingTransaction(
            c.topic, c.partition, c.path, t.producer_id, t.producer_epoch, c.coordinator_epoch, t.first_offset,
            t.first_timestamp, c.last_timestamp, at - c.last_timestamp, tid, state, reason, c.lso, c.leo, groups,
            possibly=by_producer is None, pending_commits=held))
    return hanging


_REASONS = {
    "no_transactional_id": "no transactional id in __transaction_state has its producer id",
    "coordinator_completed": "its transactional id {tid!r} is {state} at the coordinator, which writes no more markers",
    "partition_not_in_transaction": "its transactional id {tid!r} is {state} at the coordinator without this partition",
    "transaction_state_not_read": "no __transaction_state partition was read to say whether its coordinator ends it",
}


def _hanging_finding(h: HangingTransaction, max_timeout_ms: int) -> Finding:
    why = _REASONS[h.reason].format(tid=h.transactional_id, state=h.state)
    groups = (f"; groups {', '.join(f'{g!r} (committed {o})' for g, o in h.groups)} are held there"
              if h.groups else "")
    if h.pending_commits:
        groups += ("; the offset commits it holds stay pending: " +
                   ", ".join(f"group {g!r} {t}-{p} at {o}" for g, t, p, o in h.pending_commits))
    return finding("txn-possibly-hanging" if h.possibly else "txn-hanging", h.path, None,
                   f"producer {h.producer_id} (epoch {h.producer_epoch}): transaction open since offset "
                   f"{h.first_offset}, last written {iso_time(h.last_timestamp)}, {h.open_ms / 60_000:.1f} min ago "
                   f"(more than the maximum transaction timeout of {max_timeout_ms // 60_000} min), and {why}: "
                   f"read_committed consumers stop at the last stable offset {h.last_stable_offset}{groups} "
                   "(kafka-transactions.sh abort ends it)")


def hanging_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`hanging_paths` tells its ``progress`` in all (a progress bar's total): each partition's segments
    twice (the replay's load and pass), and those of ``__transaction_state`` and ``__consumer_offsets`` once more
    (the coordinators' records decoded)."""
    return (sum(2 * segment_bytes(pd.files) for pd in partition_dirs(paths)) + transaction_states_bytes(paths)
            + consumer_offsets_bytes(paths, with_lag=False))


__all__ = ["MAX_TRANSACTION_TIMEOUT_MS", "CommittedView", "HangingTransaction", "checkpointed_offset", "committed_view",
           "find_hanging", "hanging_bytes", "hanging_candidates", "hanging_paths", "high_watermark", "served_aborts",
           "txns_bytes", "txns_paths"]
