"""``__transaction_state``, replayed as the transaction coordinator loads it (``TransactionStateManager``):
each transactional id's latest state, and transactions past their timeout."""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..findings import finding
from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from ..locate import iso_time
from ..model import Batch, CappedFindings, Finding, Record
from ..walk import partition_dirs, partition_dirs_and_findings
from .common import (
    KEYS_CACHED,
    Undecodable,
    batched,
    entries,
    log_bytes,
    newer_record,
    nullable,
    parse,
    partition_batches,
    schema_record,
    tagged,
    value_version,
)

# --- __transaction_state -------------------------------------------------------------------------

TRANSACTION_TOPIC = "__transaction_state"


@dataclass(frozen=True, slots=True)
class TransactionLogEntry:
    """The latest ``TransactionLogValue`` of a transactional id: its producer, state and partitions."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    last_update_timestamp: int
    start_timestamp: int
    previous_producer_id: int | None
    next_producer_id: int | None
    client_transaction_version: int | None
    value_version: int
    coordinator_partition: str
    log_offset: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "transaction_state", "transactional_id": self.transactional_id,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch, "timeout_ms": self.timeout_ms,
            "state": self.state, "partitions": [f"{t}-{p}" for t, ps in self.partitions for p in ps],
            "last_update_timestamp": self.last_update_timestamp, "start_timestamp": self.start_timestamp,
            "previous_producer_id": self.previous_producer_id, "next_producer_id": self.next_producer_id,
            "client_transaction_version": self.client_transaction_version, "value_version": self.value_version,
            "coordinator_partition": self.coordinator_partition, "log_offset": self.log_offset,
        }


@functools.lru_cache(maxsize=KEYS_CACHED)
def decode_transaction_key(key: bytes) -> str:
    version = parse(it.CoordinatorKeyVersion, key[:2], "TransactionLogKey version").version
    if version != 0:
        raise Undecodable(f"TransactionLogKey version {version} is not one this tool knows (0)")
    return nullable(parse(it.TransactionLogKey, key, "TransactionLogKey").transactional_id) or ""


_INT16 = struct.Struct(">h")
# The compiled readers of the TransactionLogValue versions (kafka_schema.reader, tags the bytes lack left out: the
# replay tells a tag written from one not written), by version, made on first use.
_VALUE_READERS: dict[int, Callable[[bytes, int], dict[str, Any] | None]] = {}


def decode_transaction_value(value: bytes) -> dict[str, Any]:
    """A ``TransactionLogValue`` as a dict (state by name, partitions as (topic, ids), tags when present). Read by
    the schema's compiled reader (one per record, by the hundred thousand), by the declaration where it misses
    (a null topic, damage: the declaration words the error, as before the compiled readers)."""
    if len(value) >= 2 and value.__class__ is bytes:
        version = _INT16.unpack_from(value)[0]
        read = _VALUE_READERS.get(version)
        if read is None and version in it.TRANSACTION_LOG_VALUE_VERSIONS:
            read = _VALUE_READERS[version] = ks.reader("TransactionLogValue", version, tags_absent=True)
        if read is not None and (v := read(value, 2)) is not None:
            status = v["transaction_status"]
            return {
                "producer_id": v["producer_id"], "producer_epoch": v["producer_epoch"],
                "timeout_ms": v["transaction_timeout_ms"],
                "state": it.TRANSACTION_STATES.get(status, f"unknown({status})"),
                "partitions": tuple((p["topic"], tuple(p["partition_ids"]))
                                    for p in v["transaction_partitions"] or ()),
                "last_update_timestamp": v["transaction_last_update_timestamp_ms"],
                "start_timestamp": v["transaction_start_timestamp_ms"],
                "previous_producer_id": v.get("previous_producer_id"), "next_producer_id": v.get("next_producer_id"),
                "client_transaction_version": v.get("client_transaction_version"), "version": version,
            }
    version = value_version(value, it.TRANSACTION_LOG_VALUE_VERSIONS, "TransactionLogValue")
    v = parse(it.TransactionLogValue, value, f"TransactionLogValue v{version}").body
    tags = tagged(v.tagged_fields, it.TRANSACTION_LOG_VALUE_TAGS, "TransactionLogValue") if version >= 1 else {}
    status = v.transaction_status
    return {
        "producer_id": v.producer_id, "producer_epoch": v.producer_epoch, "timeout_ms": v.transaction_timeout_ms,
        "state": it.TRANSACTION_STATES.get(status, f"unknown({status})"),
        "partitions": tuple((nullable(p.topic) or "", tuple(entries(p.partition_ids) or ()))
                            for p in entries(v.transaction_partitions) or ()),
        "last_update_timestamp": v.transaction_last_update_timestamp_ms,
        "start_timestamp": v.transaction_start_timestamp_ms,
        "previous_producer_id": tags.get("previous_producer_id"), "next_producer_id": tags.get("next_producer_id"),
        "client_transaction_version": tags.get("client_transaction_version"), "version": version,
    }


@dataclass(slots=True)
class TxnClock:
    """The time ``txn-state`` judges open transactions at: ``--now``, else the newest record time of the
    ``__transaction_state`` partitions read (``newest``; -1 before any). The coordinator stamps each record with its
    clock when it writes it (``TransactionStateManager.appendTransactionToLog``), so that is the last moment the log
    can vouch for; a transaction may have been completed after it."""

    now: int | None = None   # --now
    newest: int = -1

    @property
    def at(self) -> int:
        return self.newest if self.now is None else self.now

    def as_dict(self) -> dict[str, Any]:
        return {"type": "txn_clock", "now": self.at,
                "source": "--now" if self.now is not None else "newest record time"}


def timed_out(entry: TransactionLogEntry, now: int) -> Finding | None:
    """A transaction open past its timeout at ``now``, as the coordinator's periodic check finds it.

    ``TransactionStateManager.timedOutTransactions``: an ``Ongoing`` transaction with ``txnStartTimestamp +
    txnTimeoutMs < now`` is aborted (``TransactionCoordinator.abortTimedOutTransactions``); until its markers are
    written the LSO of its partitions stays at its first offset and read_committed consumers wait. A
    ``PrepareCommit``/``PrepareAbort`` is no longer the client's: the coordinator writes its markers and completes
    it (``loadTransactionsForTxnTopicPartition`` resumes them on load), so one still there past its timeout since
    its last update (``txnLastUpdateTimestamp``) has markers not yet all written."""
    where, at = entry.coordinator_partition, iso_time(now)
    what = (f"transactional id {entry.transactional_id!r} (producer {entry.producer_id} epoch {entry.producer_epoch}, "
            f"{entry.coordinator_partition} offset {entry.log_offset})")
    parts = ", ".join(f"{t}-{p}" for t, ps in entry.partitions for p in ps) or "no partitions"
    if entry.state == "Ongoing" and entry.start_timestamp + entry.timeout_ms < now:
        return finding("txn-timed-out", where, None,
                       f"{what}: Ongoing since {iso_time(entry.start_timestamp)} with a timeout of {entry.timeout_ms}"
                       f" ms, {now - entry.start_timestamp - entry.timeout_ms} ms past it at {at}: the coordinator "
                       f"aborts it (until its markers are written the LSO of {parts} stays at its first offset)")
    if entry.state in ("PrepareCommit", "PrepareAbort") and entry.last_update_timestamp + entry.timeout_ms < now:
        return finding("txn-completion-pending", where, None,
                       f"{what}: {entry.state} since {iso_time(entry.last_update_timestamp)} with a timeout of "
                       f"{entry.timeout_ms} ms, {now - entry.last_update_timestamp - entry.timeout_ms} ms past it at "
                       f"{at}: its markers to {parts} are not all written (the coordinator completes it, and does "
                       "when it loads the partition)")
    return None


def transaction_state_partition(files: Iterable[tuple[Path, str]], name: str,
                                progress: Callable[[int], None] | None = None, clock: TxnClock | None = None,
                                items: Iterable[tuple[str, Batch, Record]] | None = None,
                                ) -> Iterator[TransactionLogEntry | Finding]:
    """Replay one ``__transaction_state-N`` partition: the latest value per transactional id (null deletes).
    ``progress`` is told the bytes of the segments as they are read; ``clock`` the newest record time; ``items``,
    when given, the (segment display path, batch, record) replayed instead of ``files``' (the Spark data source's
    rows, in offset order: :mod:`kafkatool.spark.state`)."""
    latest: dict[str, tuple[dict[str, Any], int]] = {}
    findings = CappedFindings()  # a fault repeated per record kept 100 times, counted
    for display, batch, recs in partition_batches(files, findings, progress) if items is None else batched(items):
        for rec in recs:
            if rec.control_type is not None:
                continue
            if clock is not None and rec.timestamp > clock.newest:
                clock.newest = rec.timestamp
            try:
                if rec.key is None:
                    raise Undecodable("no key")
                tid = decode_transaction_key(rec.key)
                if rec.value is None:
                    latest.pop(tid, None)
                    continue
                # the value's fields and log offset: made a TransactionLogEntry once it survives
                latest[tid] = (decode_transaction_value(rec.value), rec.offset)
            except Undecodable as exc:
                newer = None if rec.key is None else newer_record(ks.TRANSACTION_COORDINATOR, TRANSACTION_TOPIC,
                                                                  rec.key, rec.value, display, batch.position,
                                                                  rec.offset)
                findings.append(newer or finding("txn-state-undecodable", display, batch.position,
                                                 f"record at offset {rec.offset}: {exc}"))
    for tid in sorted(latest):
        v, log_offset = latest[tid]
        yield TransactionLogEntry(
            tid, v["producer_id"], v["producer_epoch"], v["timeout_ms"], v["state"], v["partitions"],
            v["last_update_timestamp"], v["start_timestamp"], v["previous_producer_id"], v["next_producer_id"],
            v["client_transaction_version"], v["version"], name, log_offset)
    yield from findings
    yield from findings.summary()


def transaction_states(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None, *,
                       now: int | None = None, transactional_ids: Iterable[str] = (),
                       read_ids: set[str] | None = None) -> Iterator[TxnClock | TransactionLogEntry | Finding]:
    """Every transactional id's latest state in the ``__transaction_state-*`` partitions under ``paths`` (only
    ``transactional_ids`` when given), after the :class:`TxnClock` they are judged at (when any partition was read),
    then each transaction open past its timeout (:func:`timed_out`). ``progress`` is told the bytes of the segments
    as they are read, :func:`transaction_states_bytes` in all; ``read_ids`` is given every transactional id read,
    matched or not (what a note on a filter that matched nothing names)."""
    wanted = set(transactional_ids)
    read_ids = set() if read_ids is None else read_ids
    clock = TxnClock(now)
    items: list[TransactionLogEntry | Finding] = []  # held until the clock has seen every record
    seen = False
    for part in partition_dirs_and_findings(paths):
        if isinstance(part, Finding):  # what discovery met outside a partition (a dir it cannot list, a loop)
            items.append(part)
        elif part.topic == TRANSACTION_TOPIC:
            seen = True
            items.extend(part.findings)
            items.extend(i for i in transaction_state_partition(part.files, f"{part.topic}-{part.partition}",
                                                                progress, clock)
                         if not isinstance(i, TransactionLogEntry) or read_ids.add(i.transactional_id)
                         or not wanted or i.transactional_id in wanted)
    if seen and clock.at >= 0:
        yield clock
    yield from items
    if not seen:
        yield finding("txn-state-none", ", ".join(str(p) for p in paths), None,
                      f"no {TRANSACTION_TOPIC}-* partition dirs found")
    elif clock.at >= 0:
        yield from (f for i in items if isinstance(i, TransactionLogEntry) and (f := timed_out(i, clock.at)))


def transaction_states_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`transaction_states` tells its ``progress`` in all (a progress bar's total): the segments of the
    ``__transaction_state-*`` partitions under ``paths``."""
    return sum(log_bytes(part.files) for part in partition_dirs(paths) if part.topic == TRANSACTION_TOPIC)




def transaction_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__transaction_state`` record, decoded on its own: the transactional id and, unless a tombstone
    (an expired id), its producer, state and partitions (``[{topic, partition}]``); then ``record``
    (``TransactionLog``), ``key`` and ``value``: every field by Kafka's schemas
    (``TransactionCoordinatorRecordSerde``; :func:`~kafkatool.internal.common.schema_record`)."""
    if key is None:
        raise Undecodable("no key")
    schema = schema_record(ks.TRANSACTION_COORDINATOR, TRANSACTION_TOPIC, key, value)
    del schema["value_version"]  # the shorthand's
    out: dict[str, Any] = {"transactional_id": decode_transaction_key(key), "tombstone": value is None}
    if value is not None:
        v = decode_transaction_value(value)
        out.update(v, value_version=v["version"],
                   partitions=[{"topic": t, "partition": p} for t, ps in v["partitions"] for p in ps])
        del out["version"]
    out.update(schema)
    return out
