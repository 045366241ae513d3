"""Producer state and transactions rebuilt from a partition's log, and an idempotence audit.

The partition is read as the broker loads it (:func:`kafkatool.loader.load_partition`: leftovers resolved,
recovery's cuts made), and one pass over its batches in offset order replays each as the broker's producer state
does (``ProducerAppendInfo``, ``ProducerStateEntry``, ``ProducerStateManager``; the state machine is the loader's
:class:`kafkatool.producer_state.ProducerReplay`): per producer id the epoch, the last batch's sequence and offset, the
coordinator epoch and the open transaction. A batch whose CRC does not match changes nothing, and neither does a
fenced one (an epoch older than the producer's current epoch: the leader refuses such a write). The pass also
judges each batch as the leader would have on a client's append (``ProducerAppendInfo.checkSequence``/
``checkProducerEpoch``), finding what a healthy broker never writes:

- ``duplicate-sequence-number`` / ``duplicate-out-of-order-sequence``: same producer id, epoch and sequence range as
  an earlier batch (written twice), within the producer's last 5 batches or past them
  (:func:`kafkatool.producer_state.retained`);
- ``sequence-gap`` / ``sequence-out-of-order``: a batch not continuing the producer's last sequence (the broker
  would have answered OutOfOrderSequence), or a new epoch not starting at sequence 0;
- ``producer-fenced``: a batch (or marker) with an epoch older than one already written (ProducerFenced);
- ``producer-epoch-bump`` (info): a new epoch (a restarted or fenced-off producer, or a KIP-360 bump);
- ``txn-invalid-state``: a non-transactional batch inside the producer's open transaction.

A producer's first batch in the log is not judged: what came before it may have been deleted by retention or
compaction. Duplicates are detected within one epoch over the whole log, and told apart by what the leader would
have answered: it remembers only the last 5 batches per producer, so a retry older than that is not recognised as
one but refused as out of order.

Batches that follow each other (:class:`kafkatool.model.Stretch`, with the native core) are taken a producer at a
time where nothing can happen past a producer's first batch of the stretch (``_Replay.stretch``): its later batches
each continue the one before (``WindowColumns.producer_sequences``: same epoch and transactional bit, sequences
that follow without wrapping), so only that first batch is judged, and the rest are counted in one step and
remembered as a :class:`_Chain` of sequence ranges for the duplicate lookup. Everything else goes batch by batch;
``tests/test_native.py`` holds the two replays identical.

What the load met (:func:`kafkatool.loader.load_findings`: where recovery cuts the log, the snapshots it deletes...)
is kept as ``verify`` reports it (:attr:`PartitionHistory.load_findings`, less what the replay's own pass met), for
every command that replays the partition to say once.

The rebuilt state is compared with the newest ``.snapshot`` the broker keeps (state at the snapshot's offset): one
beyond the log end offset (``ProducerStateManager.truncateAndReload``) or that it cannot read (``loadFromSnapshot``)
is deleted at load and never compared. Expected
differences: the broker drops a producer from the snapshot it loads when its last write is older than
``producer.id.expiration.ms`` (``producer-not-in-snapshot``, info); a snapshot may know producers whose batches
were all deleted before the log start (``producer-only-in-snapshot``, warning).
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .filetypes import FileKind, classify
from .findings import finding
from .loader import (
    LoadedPartition,
    LogDirs,
    checkpoint_trouble,
    latest_snapshot,
    load_findings,
    load_partition,
    segment_bytes,
    segment_items,
)
from .logdir import LogDir
from .model import NO_MARKERS, Batch, Finding, Marker, Stretch
from .producer_state import ProducerReplay, ProducerState, fenced, invalid_txn_state, last_sequence, retained
from .progress import Tally
from .records import ScanOptions, read_marker
from .smallfiles import ProducerEntry, read_producer_entries
from .walk import PartitionDir, partition_dirs, partition_dirs_and_findings

_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Transaction:
    """One transaction of one producer in one partition, as the log shows it."""

    partition: str
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int            # the marker's offset; for an open transaction its last data offset
    outcome: str                # COMMIT | ABORT | OPEN
    records: int
    batches: int
    coordinator_epoch: int | None
    first_timestamp: int
    end_timestamp: int | None   # the marker's timestamp
    lso_held_back: int | None = None  # open: log end offset - first offset

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "transaction", "partition": self.partition, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "first_offset": self.first_offset,
            "last_offset": self.last_offset, "outcome": self.outcome, "records": self.records,
            "batches": self.batches, "coordinator_epoch": self.coordinator_epoch,
            "first_timestamp": self.first_timestamp, "end_timestamp": self.end_timestamp,
            "duration_ms": None if self.end_timestamp is None else self.end_timestamp - self.first_timestamp,
            "lso_held_back": self.lso_held_back,
        }


@dataclass(frozen=True, slots=True)
class ProducerInfo:
    """A producer's state at the end of the log (the fields of a snapshot entry, plus the audit's counts)."""

    partition: str
    entry: ProducerEntry
    first_sequence: int   # base sequence of its first batch in the current epoch
    batches: int          # data batches of this producer in the log

    def as_dict(self) -> dict[str, Any]:
        d = self.entry.as_dict()
        d["partition"] = self.partition
        d["first_sequence"] = self.first_sequence
        d["batches"] = self.batches
        d["ongoing_transaction"] = self.entry.current_txn_first_offset >= 0
        return d


@dataclass
class _Open:
    epoch: int
    first_offset: int
    first_timestamp: int
    last_offset: int
    records: int = 0
    batches: int = 0


class _Chain(NamedTuple):
    """Batches of one producer and epoch taken in one step from a stretch (``_Replay.stretch``): each continues the
    one before it, so their sequences run from ``first`` to ``last`` without a gap or a wrap, batch ``j`` beginning
    at sequence ``sequences[j]`` and base offset ``offsets[j]`` (``memoryview`` s of native-endian i32 and i64), and
    being its producer's batch number ``ordinal + j`` (counted from 1, as ``PartitionHistory.batches``)."""

    first: int
    last: int
    sequences: memoryview
    offsets: memoryview
    ordinal: int


@dataclass
class PartitionHistory:
    """What one replay of a partition found."""

    display: str
    producers: dict[int, ProducerState] = dataclasses.field(default_factory=dict)
    first_sequence: dict[int, int] = dataclasses.field(default_factory=dict)
    batches: dict[int, int] = dataclasses.field(default_factory=dict)
    transactions: list[Transaction] = dataclasses.field(default_factory=list)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    # what loading the partition met that the replay's own pass did not (loader.load_findings: recovery's cuts...)
    load_findings: list[Finding] = dataclasses.field(default_factory=list)
    log_start: int | None = None
    leo: int | None = None
    snapshot: Path | None = None  # the newest the broker keeps (readable, at or below the log end offset)
    states: dict[int, list[ProducerEntry]] = dataclasses.field(default_factory=dict)  # at each snapshot's offset
    loaded: LoadedPartition | None = None  # the partition as the broker loads it

    @property
    def lso(self) -> int | None:
        """The first unstable offset as the broker has it after loading (:mod:`kafkatool.loader`), else the log end
        offset: where a ``read_committed`` fetch stops, the high watermark aside."""
        if self.loaded is None:  # replayed from batches alone (replay_batches): its open transactions' first
            fuo = min((t.first_offset for t in self.transactions if t.outcome == "OPEN"), default=None)
        else:
            fuo = self.loaded.first_unstable_offset
        return fuo if fuo is not None else self.leo

    def aborted(self) -> list[tuple[int, int, int]]:
        """(producer id, first offset, marker offset) of every aborted transaction, in marker order."""
        return [(t.producer_id, t.first_offset, t.last_offset) for t in self.transactions if t.outcome == "ABORT"]

    def entries(self) -> list[ProducerEntry]:
        return [self.producers[pid].entry() for pid in sorted(self.producers)]


def segment_logs(dir: Path) -> list[tuple[int, Path]]:
    """``(base offset, path)`` of the partition dir's ``.log`` segments, in offset order."""
    return _named(dir, FileKind.LOG, ".log")


def _named(dir: Path, kind: FileKind, suffix: str) -> list[tuple[int, Path]]:
    """Files of ``kind`` named exactly ``<offset><suffix>`` (not ``.swap``/``.deleted`` leftovers), by offset."""
    found = []
    for p in dir.iterdir():
        info = classify(p)
        if info.kind is kind and p.suffix == suffix and info.base_offset is not None and p.is_file():
            found.append((info.base_offset, p))
    return sorted(found)


def replay_partition(dir: Path, display: str | None = None, files: Iterable[tuple[Path, str]] | None = None,
                     loaded: LoadedPartition | None = None, logdir: LogDir | None = None,
                     progress: Callable[[int], None] | None = None) -> PartitionHistory:
    """Replay a partition dir's log as the broker loads it (:func:`kafkatool.loader.load_partition`: leftovers
    resolved, recovery's cuts made): producer state, transactions and the idempotence audit's findings.

    The audit replays the whole loaded log (every transaction in it), not only from the snapshot the broker's own
    rebuild starts at: when earlier segments were deleted it starts from the snapshot at the log start if the broker
    can read it (:func:`kafkatool.loader.latest_snapshot` bounded there, ``ProducerStateManager.truncateAndReload``).

    ``progress`` is told the bytes of the two passes over the segments: the load's (unless ``loaded`` is given)
    and the replay's, each segment whole (what the replay skips, past a cut or deleted, as it skips it).
    """
    display = display if display is not None else str(dir)
    if loaded is None:
        loaded = load_partition(dir, display, files=files, logdir=logdir, progress=progress)
    h = _Replay(PartitionHistory(display, loaded=loaded))
    live = [s for s in loaded.segments if not s.deleted]
    snaps: dict[int | None, Path] = dict(loaded.snapshot_files)
    if live and live[0].base_offset > 0:  # deleted segments: start from the snapshot at the log start, as the broker
        base = live[0].base_offset
        _start, entries, _bad = latest_snapshot(snaps, base, base)
        h.load(entries)
    kept: dict[int | None, Path] = dict(loaded.kept_snapshots())
    newest, _entries, bad = latest_snapshot(kept, None, 0)  # loadFromSnapshot deletes each it cannot read
    if newest in kept and newest not in bad:
        h.history.snapshot = kept[newest]
    h.history.log_start, h.history.leo = loaded.log_start_offset, loaded.log_end_offset
    pending = sorted(loaded.snapshot_files)

    def reach(b: Batch) -> None:
        """The state at each snapshot's offset, taken when the replay reaches it (before batch ``b``)."""
        while pending and b.base_offset >= pending[0]:
            h.history.states[pending.pop(0)] = h.history.entries()

    for seg in live:
        end = seg.valid_bytes if seg.recovered is not None else None
        tally = Tally(progress)
        for item in segment_items(seg.path, seg.display, ScanOptions(), end=end, progress=tally, stretches=True):
            if item.__class__ is Stretch:
                for piece in _between_markers(item):  # type: ignore[arg-type]
                    if piece.__class__ is not Stretch:  # a marker the scan read: (its batch, the marker)
                        b, marker = piece  # type: ignore[misc]
                        reach(b)
                        h.batch(b, None, seg.display, marker)
                        continue
                    # whole unless a snapshot's offset falls in it (its state is taken between two of its batches)
                    if (pending and pending[0] <= piece.columns.advance(piece.lo, piece.hi)[1]  # type: ignore
                            or not h.stretch(piece, seg.display)):  # type: ignore[arg-type]
                        for b in piece.batches():  # type: ignore[union-attr]
                            reach(b)
                            h.batch(b, None, seg.display)
                continue
            if isinstance(item, Finding):
                h.history.findings.append(item)
                continue
            b, control_raw = item  # type: ignore[misc]
            reach(b)
            h.batch(b, control_raw, seg.display)
        tally.settle(seg.size)  # the tail past a cut
    if progress is not None:
        progress(sum(s.size for s in loaded.segments if s.deleted))
    for off in pending:  # at or past the log end (the snapshot of a clean shutdown)
        h.history.states[off] = h.history.entries()
    h.finish()
    met = {(f.code, f.path, f.position) for f in h.history.findings}
    h.history.load_findings = [f for f in load_findings(loaded) if (f.code, f.path, f.position) not in met]
    return h.history


def replay_batches(display: str, batches: Iterable[tuple[Batch, Marker | None]], log_start: int | None,
                   leo: int | None) -> PartitionHistory:
    """:func:`replay_partition`'s replay of batches given rather than read (the Spark data source's batch rows, in
    offset order, each control batch with its end-transaction marker: :mod:`kafkatool.spark.state`), on a log
    starting at ``log_start`` and ending at ``leo``. No load: no leftovers resolved, no recovery cut, no producer
    snapshot; the LSO is the first open transaction's first offset (``ProducerStateManager.firstUnstableOffset``)."""
    h = _Replay(PartitionHistory(display))
    h.history.log_start, h.history.leo = log_start, leo
    for b, marker in batches:
        h.batch(b, None, display, marker)
    h.finish()
    return h.history


def _between_markers(s: Stretch) -> Iterator[Stretch | tuple[Batch, Marker]]:
    """A stretch's batches as the stretches between its end-transaction markers (holding none), and each marker as
    (its batch, the marker the scan read): the audit takes a run of data batches whole and a marker on its own."""
    lo = s.lo
    for i in sorted(i for i in s.markers if s.lo <= i < s.hi):
        if i > lo:
            yield Stretch(s.columns, lo, i, NO_MARKERS)
        yield s.batch(i), s.markers[i]
        lo = i + 1
    if lo < s.hi:
        yield Stretch(s.columns, lo, s.hi, NO_MARKERS)


class _Replay:
    """The audit's per-batch rules; the producer state itself is :class:`kafkatool.producer_state.ProducerReplay`'s (the
    loader's), kept in :class:`PartitionHistory`."""

    def __init__(self, history: PartitionHistory) -> None:
        self.history = history
        self.state = ProducerReplay()
        history.producers = self.state.producers
        self.open: dict[int, _Open] = {}
        # pid -> (epoch, first, last seq) -> (the first such batch's offset, the producer's batch number of the last)
        self.seen: dict[int, dict[tuple[int, int, int], tuple[int, int]]] = {}
        # and the batches taken a chain at a time: (pid, epoch) -> (each chain's first sequence, the chains), in
        # sequence order (a chain is only made above every sequence remembered for its producer and epoch)
        self.chains: dict[tuple[int, int], tuple[list[int], list[_Chain]]] = {}
        self.top: dict[tuple[int, int], int] = {}  # (pid, epoch) -> the highest sequence remembered
        # producers seen ending a transaction as transactions v2 does (KIP-890: each marker's epoch one above the
        # transaction's, ProducerAppendInfo.appendEndTxnMarker with transactionVersion 2): a COMMIT so bumped, which
        # v1 never writes (its coordinator bumps the epoch only to fence or time out a transaction, and aborts it)
        self.v2: set[int] = set()
        self.v1: set[int] = set()  # and those seen ending one with its own epoch, which v2 never does

    def find(self, code: str, path: str, batch: Batch, message: str) -> None:
        self.history.findings.append(finding(code, path, batch.position, message))

    def load(self, entries: list[ProducerEntry]) -> None:
        self.state = ProducerReplay(entries)
        self.history.producers = self.state.producers
        for e in entries:
            if e.current_txn_first_offset >= 0:
                self.open[e.producer_id] = _Open(e.producer_epoch, e.current_txn_first_offset, e.timestamp,
                                                 e.current_txn_first_offset)

    def batch(self, b: Batch, control_raw: bytes | None, path: str, read: Marker | None = None) -> None:
        """One batch of the loaded log. A batch whose CRC does not match changes nothing (the scan reports it).
        A control batch comes with its bytes (``control_raw``), or as the end-transaction marker the scan read of
        it (``read``, one ``decode_records`` reads alike and without a finding)."""
        if b.magic < 2 or b.producer_id is None or b.producer_id < 0 or not b.crc_valid:
            return
        pid = b.producer_id
        p = self.history.producers.get(pid)
        if b.control:
            self.marker(b, control_raw, path, p, read)
            return
        if fenced(p, b.producer_epoch):
            self.find("producer-fenced", path, b,
                      f"producer {pid}: batch at offsets {b.base_offset}..{b.last_offset} has epoch {b.producer_epoch}"
                      f", older than its epoch {p.epoch} already in the log: the broker fences such a write "
                      "(ProducerFenced); it does not change the producer's state")
            self.state.batch(b, control_raw, path)  # counted as fenced there
            return
        if p is not None:
            self.check_sequence(p, b, path)
            if invalid_txn_state(p, b.transactional):
                self.find("txn-invalid-state", path, b,
                          f"producer {pid}: non-transactional batch at offset {b.base_offset} inside its transaction "
                          f"open since {p.txn_first_offset} (the broker refuses it: InvalidTxnState)")
        if p is None or b.producer_epoch != p.epoch or p.last_batch is None:
            self.history.first_sequence[pid] = b.base_sequence
        self.state.batch(b, control_raw, path)
        self.history.batches[pid] = self.history.batches.get(pid, 0) + 1
        if b.base_sequence >= 0:
            self.remember(pid, b.producer_epoch, b.base_sequence, last_sequence(b), b.base_offset)
        if b.transactional:
            txn = self.open.get(pid)
            if txn is None:
                txn = self.open[pid] = _Open(b.producer_epoch, b.base_offset, b.first_timestamp, b.last_offset)
            txn.records += b.record_count
            txn.batches += 1
            txn.last_offset = b.last_offset

    def stretch(self, s: Stretch, path: str) -> bool:
        """Batches that follow each other (:class:`kafkatool.model.Stretch`: no marker, CRCs valid), a producer at a
        time: its first batch in the stretch replayed on its own (:meth:`batch`), the rest in one step, or, returning
        False having changed nothing, none when some batch must be replayed on its own.

        The rest are taken in one step when each continues the one before it (``producer_sequences``: same epoch and
        transactional bit, base sequence = the previous last sequence + 1, no wrap) and the first is not fenced.
        Then none of them is fenced or an epoch bump, none starts a producer's first sequence, each follows its
        producer's last sequence (no gap, not out of order), and none is a non-transactional batch inside a
        transaction when they are transactional (the first opens one if none is open) or none was open before. Nor
        can one repeat a batch seen before when they begin above every sequence remembered for the producer and
        epoch. So they find nothing; they leave the state their producer's last batch does (no marker ends a
        transaction in a stretch, and the first opened any), and only add to counts. A producer's batches touch
        only its own state, and only first batches find anything, so the findings come in batch order as the
        producers come in the order they first appear."""
        spans = s.columns.producer_sequences(s.lo, s.hi)
        producers = self.history.producers
        firsts: list[Batch] = []
        for pid, first, _last, sequential, _records, sequences, _offsets in spans:
            if pid < 0:
                continue
            if not sequential:
                return False
            b = s.batch(first)
            firsts.append(b)
            if not sequences:  # its only batch in the stretch
                continue
            p = producers.get(pid)
            if fenced(p, b.producer_epoch):  # each of them
                return False
            if invalid_txn_state(p, b.transactional):  # each of them
                return False
            if self.top.get((pid, b.producer_epoch), -1) >= memoryview(sequences).cast("i")[0]:  # maybe repeated
                return False
        k = 0
        for pid, _first, last, _sequential, records, sequences, offsets in spans:
            if pid < 0:
                continue
            b = firsts[k]
            k += 1
            self.batch(b, None, path)
            if not sequences:
                continue
            lb = s.batch(last)
            self.state.batch(lb, None, path)
            n = len(sequences) // 4
            self.history.batches[pid] += n
            seqs = memoryview(sequences).cast("i")
            chain = _Chain(seqs[0], last_sequence(lb), seqs, memoryview(offsets).cast("q"),
                           self.history.batches[pid] - n + 1)
            key = (pid, lb.producer_epoch)
            starts, chains = self.chains.setdefault(key, ([], []))
            starts.append(chain.first)
            chains.append(chain)
            self.top[key] = chain.last
            if lb.transactional:
                txn = self.open[pid]
                txn.records += records
                txn.batches += n
                txn.last_offset = lb.last_offset
        return True

    def earlier(self, pid: int, epoch: int, seq: int, last: int) -> tuple[int, int] | None:
        """The base offset of the first batch remembered with this producer id, epoch and sequence range, and the
        producer's batch number of the last one, if any."""
        found = self.seen.get(pid, {}).get((epoch, seq, last))
        if found is not None:
            return found
        at = self.chains.get((pid, epoch))
        if at is None:
            return None
        starts, chains = at
        i = bisect_right(starts, seq) - 1
        if i < 0 or seq > chains[i].last:
            return None
        chain = chains[i]
        seqs = chain.sequences
        j = bisect_left(seqs, seq)
        if j == len(seqs) or seqs[j] != seq:
            return None
        end = seqs[j + 1] - 1 if j + 1 < len(seqs) else chain.last
        return (chain.offsets[j], chain.ordinal + j) if end == last else None

    def remember(self, pid: int, epoch: int, seq: int, last: int, offset: int) -> None:
        """Remember a batch for the duplicate lookup (the producer's last batch counted): the first with its sequence
        range by offset, the last by batch number (the broker's replay appends a repeated batch's metadata too)."""
        ordinal = self.history.batches[pid]
        found = self.earlier(pid, epoch, seq, last)
        if found is not None:
            self.seen.setdefault(pid, {})[(epoch, seq, last)] = (found[0], ordinal)
            return
        self.seen.setdefault(pid, {})[(epoch, seq, last)] = (offset, ordinal)
        top = seq if seq > last else last
        if top > self.top.get((pid, epoch), -1):
            self.top[(pid, epoch)] = top

    def check_sequence(self, p: ProducerState, b: Batch, path: str) -> None:
        """``checkSequence`` for a known producer, on what a client's append would have been judged.

        Whatever it finds, the batch is in the log and the state moves on with it, as the broker's own replay
        (origin REPLICATION, which does not check sequences) does.
        """
        pid, seq, last = p.producer_id, b.base_sequence, last_sequence(b)
        where = f"producer {pid} epoch {b.producer_epoch}: batch at offsets {b.base_offset}..{b.last_offset}"
        if b.producer_epoch != p.epoch:
            self.find("producer-epoch-bump", path, b,
                      f"producer {pid}: epoch {p.epoch} → {b.producer_epoch} at offset {b.base_offset}")
            if seq > 0 and p.epoch >= 0:
                self.find("sequence-out-of-order", path, b,
                          f"{where} starts the new epoch at sequence {seq}, not 0 (OutOfOrderSequence)")
            return
        if seq < 0:
            return
        earlier = self.earlier(pid, b.producer_epoch, seq, last)
        if earlier is not None:
            since = self.history.batches[pid] - earlier[1] + 1
            repeats = f"{where} repeats sequences {seq}..{last} of the batch at offset {earlier[0]}"
            if retained(since):
                self.find("duplicate-sequence-number", path, b,
                          f"{repeats} (one of the producer's last 5 batches: the leader would have answered "
                          "DUPLICATE_SEQUENCE_NUMBER and written nothing): its records were written twice")
            else:
                self.find("duplicate-out-of-order-sequence", path, b,
                          f"{repeats} ({since} of the producer's batches ago, past the last 5 the leader keeps: it "
                          "would have refused the retry with OUT_OF_ORDER_SEQUENCE_NUMBER): its records were written "
                          "twice")
            return
        expected = -1 if p.last_batch is None else p.last_batch[0]
        if expected < 0:
            return
        nxt = 0 if expected == _INT32_MAX else expected + 1
        if seq > nxt:
            self.find("sequence-gap", path, b,
                      f"{where} has sequence {seq}, expected {nxt}: sequences {nxt}..{seq - 1} are missing "
                      "(OutOfOrderSequence)")
        elif seq < nxt:
            self.find("sequence-out-of-order", path, b,
                      f"{where} has sequence {seq}..{last}, not after the last sequence {expected} "
                      "(OutOfOrderSequence)")

    def marker(self, b: Batch, raw: bytes | None, path: str, p: ProducerState | None,
               read: Marker | None = None) -> None:
        """``appendEndTxnMarker``: close the open transaction (an empty control batch changes nothing)."""
        marker = read
        if marker is None:
            if raw is None:
                return
            marker, findings = read_marker(b, raw, path)
            self.history.findings.extend(findings)
            if marker is None:
                return
        pid = b.producer_id
        if fenced(p, b.producer_epoch):
            self.find("producer-fenced", path, b,
                      f"producer {pid}: {marker.control_type} marker at offset {b.base_offset} has epoch "
                      f"{b.producer_epoch}, older than its epoch {p.epoch} (the coordinator fences it); it does not "
                      "end the producer's transaction")
            self.state.batch(b, raw, path, marker)  # counted as fenced there
            return
        if p is not None and p.epoch >= 0 and b.producer_epoch > p.epoch:
            if b.producer_epoch == p.epoch + 1 and (marker.control_type == "COMMIT" or pid in self.v2):
                self.v2.add(pid)  # transactions v2's end of every transaction (KIP-890): no bump worth a word
            else:
                v2 = (", or a transactions v2 (KIP-890) abort"
                      if b.producer_epoch == p.epoch + 1 and pid not in self.v1 else "")
                self.find("producer-epoch-bump", path, b,
                          f"producer {pid}: epoch {p.epoch} → {b.producer_epoch} by the {marker.control_type} marker "
                          f"at offset {b.base_offset} (the coordinator bumped it: a fenced or timed-out transaction"
                          f"{v2})")
        txn = self.open.pop(pid, None)  # type: ignore[arg-type]
        if txn is not None and p is not None and b.producer_epoch == p.epoch:
            self.v1.add(pid)
        if txn is not None:
            self.history.transactions.append(Transaction(
                self.history.display, pid, b.producer_epoch, txn.first_offset, b.base_offset,  # type: ignore[arg-type]
                marker.control_type, txn.records, txn.batches, marker.coordinator_epoch, txn.first_timestamp,
                marker.timestamp))
        self.state.batch(b, raw, path, marker)

    def finish(self) -> None:
        leo = self.history.leo or 0
        for pid, txn in self.open.items():
            self.history.transactions.append(Transaction(
                self.history.display, pid, txn.epoch, txn.first_offset, txn.last_offset, "OPEN", txn.records,
                txn.batches, None, txn.first_timestamp, None, leo - txn.first_offset))
        self.history.transactions.sort(key=lambda t: (t.first_offset, t.last_offset))


def compare_snapshot(history: PartitionHistory) -> Iterator[Finding]:
    """The rebuilt producer state against the newest ``.snapshot`` the broker keeps (by producer id; see the module
    doc); none when every snapshot is beyond the log end offset or unreadable (what verify says of them says so)."""
    if history.snapshot is None:
        return
    path = f"{history.display}/{history.snapshot.name}"
    have = {e.producer_id: e for e in read_producer_entries(history.snapshot)}
    rebuilt = {e.producer_id: e for e in history.states[classify(history.snapshot).base_offset or 0]}
    for pid in sorted(rebuilt.keys() | have.keys()):
        mine, theirs = rebuilt.get(pid), have.get(pid)
        if theirs is None:
            yield finding("producer-not-in-snapshot", path, None,
                          f"producer {pid} is in the log but not in the snapshot (expected when the broker found "
                          "it expired, idle longer than producer.id.expiration.ms, when it loaded the state)")
        elif mine is None:
            yield finding("producer-only-in-snapshot", path, None,
                          f"producer {pid} is in the snapshot but has no batch in the log (its batches were "
                          "deleted before the log start?)")
        elif mine != theirs:
            diffs = [f"{name} {getattr(theirs, name)} (log: {getattr(mine, name)})"
                     for name in ProducerEntry._fields if getattr(mine, name) != getattr(theirs, name)]
            yield finding("producer-state-mismatch", path, None,
                          f"producer {pid}: the snapshot says " + ", ".join(diffs))


def replayed_partitions(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None
                        ) -> Iterator[tuple[PartitionDir, PartitionHistory] | Finding]:
    """Per partition dir under ``paths``, as the producer and transaction audits read them: what discovery met
    outside a partition (a dir it cannot list, a loop) where it met it, what reading its log dir's checkpoints met
    the first time that log dir is met and its loads do not carry (:func:`kafkatool.loader.checkpoint_trouble`: the
    log start and high watermark come from them), the dir's own findings, then the dir with its
    :func:`replay_partition` (``progress`` told the bytes of its segments as they are read)."""
    logdirs = LogDirs()
    for pd in partition_dirs_and_findings(paths):
        if isinstance(pd, Finding):
            yield pd
            continue
        pd, met = logdirs.place(pd)
        yield from checkpoint_trouble(pd, met)  # an unreadable one: in each load's findings (load_findings)
        yield from pd.findings
        yield pd, replay_partition(pd.path, pd.display, pd.files, logdir=pd.logdir, progress=progress)


def producers_paths(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None
                    ) -> Iterator[ProducerInfo | Finding]:
    """Per partition under ``paths``: what its load met (:attr:`PartitionHistory.load_findings`), the audit's
    findings, the snapshot comparison, then one value per producer.
    ``progress`` is told the bytes of the segments as they are read, :func:`producers_bytes` in all."""
    for item in replayed_partitions(paths, progress):
        if isinstance(item, Finding):
            yield item
            continue
        pd, history = item
        yield from history.load_findings
        yield from history.findings
        yield from compare_snapshot(history)
        for e in history.entries():
            yield ProducerInfo(pd.display, e, history.first_sequence.get(e.producer_id, -1),
                               history.batches.get(e.producer_id, 0))


def producers_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`producers_paths` tells its ``progress`` in all (a progress bar's total): the segments of each
    partition under ``paths`` twice, read by the load and by the replay (:func:`replay_partition`)."""
    return sum(2 * segment_bytes(pd.files) for pd in partition_dirs(paths))


__all__ = ["PartitionHistory", "ProducerInfo", "Transaction", "compare_snapshot", "producers_bytes",
           "producers_paths", "replay_partition", "replayed_partitions", "segment_logs"]
