"""Kafka's internal topics, decoded: committed offsets and groups (``__consumer_offsets``), the KRaft
partition-leadership timeline (``__cluster_metadata``), and which coordinator partition a group or
transactional id lives in.

Layouts are declared in ``formats/internal_topics.py``; this module parses record keys and values with them
and yields plain dataclasses. A record that does not parse is a :class:`Finding` (file, position of its
batch, reason); reading goes on.
"""

from __future__ import annotations

import functools
import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from construct import ConstructError

from .errors import InputIOError, UsageError
from .fastparse import prefix_reader, reader
from .filetypes import FileKind, classify, file_size, open_regular, read_regular
from .findings import finding
from .formats import internal_topics as it
from .javacompat import java_string_hash
from .loader import segment_bytes
from .locate import iso_time
from .model import Batch, CappedFindings, Finding, Record, Trailing
from .records import RECORD_CHUNK, RawBatch, decode_records, record_chunks, scan
from .replicas import open_replica
from .walk import partition_dirs, partition_dirs_and_findings, partition_of

OFFSETS_TOPIC = "__consumer_offsets"
METADATA_TOPIC = "__cluster_metadata"

# --- partitionFor ---------------------------------------------------------------------------------


def partition_for(key: str, partitions: int = 50) -> int:
    """``GroupMetadataManager.partitionFor`` / ``TransactionStateManager.partitionFor``:
    ``Utils.abs(key.hashCode()) % partitions``. Kafka's ``Utils.abs(n)`` (``clients/.../common/utils/Utils.java``)
    is ``Math.abs(n)``, except 0 for ``Integer.MIN_VALUE`` (not ``n & 0x7fffffff``, which differs for every
    negative hash: real brokers' ``__consumer_offsets-N`` confirm it)."""
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# --- parsing with the declarations ----------------------------------------------------------------


class _Undecodable(Exception):
    pass


# Readers derived from the declarations of the records a partition holds by the million (kafkatool.fastparse):
# built on first use, by the id of the declaration (module constants, and the metadata layouts _metadata_layout
# keeps: alive as long as the process).
_FAST_DECLS = (it.CoordinatorKeyVersion, it.OffsetCommitKey, it.GroupMetadataKey, it.OffsetCommitValue,
               it.GroupMetadataValue, it.TransactionLogKey, it.TransactionLogValue)
_fast: dict[int, tuple[Any, Callable[[bytes], Any]]] | None = None  # id -> (the declaration, kept alive; reader)


def _parse(decl: Any, data: bytes, what: str) -> Any:
    """Parse ``data`` whole with ``decl``: a short read or bytes left over is an error. The declarations of
    ``_FAST_DECLS`` and the metadata layouts are read by their derived :func:`kafkatool.fastparse.reader` first
    (the same result), and by Construct where it gives up, to word the error."""
    global _fast
    if _fast is None:
        _fast = {id(d): (d, r) for d in (*_FAST_DECLS, *_metadata_layouts()) if (r := reader(d)) is not None}
    fast = _fast.get(id(decl))
    if fast is not None and data.__class__ is bytes and (value := fast[1](data)) is not None:
        return value
    stream = io.BytesIO(data)
    try:
        value = decl.parse_stream(stream)
    except (ConstructError, UnicodeDecodeError) as exc:
        raise _Undecodable(f"{what}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    if stream.tell() != len(data):
        raise _Undecodable(f"{what}: {len(data) - stream.tell()} bytes left over after the declared fields")
    return value


def _s(field_: Any) -> str | None:
    """A parsed string/bytes field (``{length, value}``) as its value (None when null)."""
    return field_.value


def _arr(field_: Any) -> list | None:
    return None if field_.entries is None else list(field_.entries)


def _records(path: Path, display: str, progress: Callable[[int], None] | None = None
             ) -> Iterator[tuple[Batch, Record] | Finding]:
    """Every record of a record file (segment or KRaft snapshot), with its batch; findings where it fails.
    ``progress`` is told the bytes read."""
    try:
        fh = open_regular(path)
    except OSError as exc:
        yield finding("io-error", display, None, f"cannot read: {exc.strerror or exc}")
        return
    with fh:
        for item in scan(fh, display, with_raw=True, progress=progress):
            if isinstance(item, RawBatch):
                if not item.batch.crc_valid:
                    continue  # its crc-mismatch finding follows
                if item.batch[12] > RECORD_CHUNK:  # more records than any coordinator writes in a batch (a bomb):
                    # a chunk at a time, its findings after them, memory bounded by bytes (records.record_chunks)
                    for chunk in record_chunks(item.batch, item.raw, display):
                        if isinstance(chunk, Finding):
                            yield chunk
                        else:
                            for r in chunk:
                                yield item.batch, r
                    continue
                recs, findings = decode_records(item.batch, item.raw, display)
                yield from findings
                for r in recs:
                    yield item.batch, r
            elif isinstance(item, Finding):
                yield item
            elif isinstance(item, Trailing):
                yield finding("trailing-bytes", display, item.position,
                              f"{item.bytes} bytes at the end do not form a whole batch")


def _segments(files: Iterable[tuple[Path, str]], kind: FileKind = FileKind.LOG) -> list[tuple[int, Path, str]]:
    found = []
    for path, display in files:
        info = classify(path)
        if info.kind is kind and info.leftover is None and info.base_offset is not None:
            found.append((info.base_offset, path, display))
    return sorted(found)


def _partition_records(files: Iterable[tuple[Path, str]], findings: list[Finding],
                       progress: Callable[[int], None] | None = None) -> Iterator[tuple[str, Batch, Record]]:
    """(segment display path, batch, record) of a partition's ``.log`` segments in offset order; findings met
    on the way are appended to ``findings``; ``progress`` is told the bytes read (:func:`_segment_bytes` in all)."""
    for _base, path, display in _segments(files):
        for item in _records(path, display, progress):
            if isinstance(item, Finding):
                findings.append(item)
            else:
                yield display, item[0], item[1]


def _segment_bytes(files: Iterable[tuple[Path, str]]) -> int:
    """Bytes of the ``.log`` segments :func:`_partition_records` reads."""
    return sum(file_size(path) for _base, path, _display in _segments(files))


# --- __consumer_offsets ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """The latest committed offset of one (group, topic, partition), with the data partition's state when known."""

    group: str
    topic: str
    partition: int
    offset: int
    commit_timestamp: int
    metadata: str | None
    leader_epoch: int | None
    expire_timestamp: int | None
    value_version: int
    coordinator_partition: str
    log_offset: int                     # where in __consumer_offsets the commit was written
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None

    @property
    def lag(self) -> int | None:
        """Records between the commit and the high watermark (what a read_uncommitted consumer may read); with no
        high watermark checkpoint, between the commit and the log end (:attr:`lag_from` says which); None when
        neither is known, never a made-up 0."""
        end = self.high_watermark if self.high_watermark is not None else self.log_end_offset
        return None if end is None else max(end - self.offset, 0)

    @property
    def lag_from(self) -> str | None:
        if self.high_watermark is not None:
            return "high_watermark"
        return None if self.log_end_offset is None else "log_end_offset"

    @property
    def lag_leo(self) -> int | None:
        return None if self.log_end_offset is None else max(self.log_end_offset - self.offset, 0)

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "committed_offset", "group": self.group, "topic": self.topic, "partition": self.partition,
            "offset": self.offset, "commit_timestamp": self.commit_timestamp, "metadata": self.metadata,
            "leader_epoch": self.leader_epoch, "expire_timestamp": self.expire_timestamp,
            "value_version": self.value_version, "coordinator_partition": self.coordinator_partition,
            "log_offset": self.log_offset, "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset, "high_watermark": self.high_watermark,
            "lag": self.lag, "lag_leo": self.lag_leo, "lag_from": self.lag_from,
        }


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str | None
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    rebalance_timeout: int | None
    session_timeout: int
    subscription_bytes: int
    assignment_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id, "client_id": self.client_id,
            "client_host": self.client_host, "rebalance_timeout": self.rebalance_timeout,
            "session_timeout": self.session_timeout, "subscription_bytes": self.subscription_bytes,
            "assignment_bytes": self.assignment_bytes,
        }


@dataclass(frozen=True, slots=True)
class GroupState:
    """The latest ``GroupMetadataValue`` of a group: its generation and members."""

    group: str
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: tuple[GroupMember, ...]
    value_version: int
    coordinator_partition: str
    log_offset: int
    timestamp: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "group", "group": self.group, "protocol_type": self.protocol_type,
            "generation": self.generation, "protocol": self.protocol, "leader": self.leader,
            "current_state_timestamp": self.current_state_timestamp, "members": [m.as_dict() for m in self.members],
            "value_version": self.value_version, "coordinator_partition": self.coordinator_partition,
            "log_offset": self.log_offset, "timestamp": self.timestamp,
        }


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OtherKey:
    """A key version this tool does not decode (KIP-848 consumer/share group records, newer)."""

    version: int


# Keys repeat: a group commits the same (group, topic, partition) over and over, and a transactional id's state is
# rewritten at every transition. Decoded keys are immutable, so each distinct key is decoded once (a key that does
# not decode raises again, every time: exceptions are not cached).
_KEYS_CACHED = 1 << 16


@functools.lru_cache(maxsize=_KEYS_CACHED)
def decode_offsets_key(key: bytes) -> OffsetKey | GroupKey | OtherKey:
    version = _parse(it.CoordinatorKeyVersion, key[:2], "key version").version
    if version in it.KEY_OFFSET_COMMIT:
        k = _parse(it.OffsetCommitKey, key, f"OffsetCommitKey v{version}")
        return OffsetKey(_s(k.group) or "", _s(k.topic) or "", k.partition)
    if version == it.KEY_GROUP_METADATA:
        return GroupKey(_s(_parse(it.GroupMetadataKey, key, "GroupMetadataKey").group) or "")
    return OtherKey(version)


def decode_offset_commit_value(value: bytes) -> dict[str, Any]:
    """An ``OffsetCommitValue`` as a dict (offset, leader_epoch, metadata, commit/expire timestamps, version)."""
    version = _value_version(value, it.OFFSET_COMMIT_VALUE_VERSIONS, "OffsetCommitValue")
    v = _parse(it.OffsetCommitValue, value, f"OffsetCommitValue v{version}").body
    return {"offset": v.offset, "leader_epoch": v.get("leader_epoch"), "metadata": _s(v.metadata),
            "commit_timestamp": v.commit_timestamp, "expire_timestamp": v.get("expire_timestamp"),
            "version": version}


def decode_group_metadata_value(value: bytes) -> dict[str, Any]:
    version = _value_version(value, it.GROUP_METADATA_VALUE_VERSIONS, "GroupMetadataValue")
    v = _parse(it.GroupMetadataValue, value, f"GroupMetadataValue v{version}").body
    members = tuple(
        GroupMember(_s(m.member_id), _s(m.get("group_instance_id")) if "group_instance_id" in m else None,
                    _s(m.client_id), _s(m.client_host), m.get("rebalance_timeout"), m.session_timeout,
                    len(_s(m.subscription) or b""), len(_s(m.assignment) or b""))
        for m in _arr(v.members) or ())
    return {"protocol_type": _s(v.protocol_type), "generation": v.generation, "protocol": _s(v.protocol),
            "leader": _s(v.leader), "current_state_timestamp": v.get("current_state_timestamp"),
            "members": members, "version": version}


def _value_version(value: bytes, known: range, name: str) -> int:
    version = _parse(it.CoordinatorKeyVersion, value[:2], f"{name} version").version
    if version not in known:
        raise _Undecodable(f"{name} version {version} is not one this tool knows ({known.start}..{known.stop - 1})")
    return version


@dataclass
class _Pending:
    """Transactional offset commits of one producer, applied at its COMMIT marker, dropped at ABORT."""

    writes: list[tuple[OffsetKey, Any]] = field(default_factory=list)


def consumer_offsets_partition(files: Iterable[tuple[Path, str]], name: str,
                               progress: Callable[[int], None] | None = None,
                               ) -> Iterator[CommittedOffset | GroupState | Finding]:
    """Replay one ``__consumer_offsets-N`` partition (its ``.log`` segments in offset order), as the group
    coordinator loads it: later records win, a null value deletes, transactional commits count only once
    committed. Yields the surviving groups and committed offsets, then findings met on the way. ``progress`` is
    told the bytes of the segments as they are read."""
    offsets: dict[OffsetKey, CommittedOffset] = {}
    groups: dict[str, GroupState] = {}
    pending: dict[int, list[tuple[OffsetKey, CommittedOffset | None]]] = {}
    findings = CappedFindings()  # a fault repeated per record kept 100 times, counted
    for display, batch, rec in _partition_records(files, findings, progress):
        if rec.control_type is not None:
            writes = pending.pop(batch.producer_id, [])
            if rec.control_type == "COMMIT":
                for k, v in writes:
                    _put(offsets, k, v)
            continue
        if rec.key is None:
            findings.append(finding("offsets-null-key", display, batch.position,
                                    f"record at offset {rec.offset} has no key"))
            continue
        try:
            key = decode_offsets_key(rec.key)
            if isinstance(key, OffsetKey):
                value = None
                if rec.value is not None:
                    v = decode_offset_commit_value(rec.value)
                    value = CommittedOffset(
                        key.group, key.topic, key.partition, v["offset"], v["commit_timestamp"], v["metadata"],
                        v["leader_epoch"], v["expire_timestamp"], v["version"], name, rec.offset)
                if batch.transactional:
                    pending.setdefault(batch.producer_id, []).append((key, value))
                else:
                    _put(offsets, key, value)
            elif isinstance(key, GroupKey):
                if rec.value is None:
                    groups.pop(key.group, None)
                else:
                    g = decode_group_metadata_value(rec.value)
                    groups[key.group] = GroupState(
                        key.group, g["protocol_type"], g["generation"], g["protocol"], g["leader"],
                        g["current_state_timestamp"], g["members"], g["version"], name, rec.offset,
                        rec.timestamp)
            else:
                findings.append(finding("offsets-unknown-key", display, batch.position,
                                        f"record at offset {rec.offset}: key version {key.version} (a newer "
                                        "group coordinator record) is not decoded; skipped"))
        except _Undecodable as exc:
            findings.append(finding("offsets-undecodable", display, batch.position,
                                    f"record at offset {rec.offset}: {exc}"))
    for g in sorted(groups.values(), key=lambda g: g.group):
        yield g
    yield from sorted(offsets.values(), key=lambda c: (c.group, c.topic, c.partition))
    yield from findings
    yield from findings.summary()


def _put(offsets: dict[OffsetKey, CommittedOffset], key: OffsetKey, value: CommittedOffset | None) -> None:
    if value is None:
        offsets.pop(key, None)
    else:
        offsets[key] = value


def consumer_offsets(paths: Iterable[str | Path], *, with_lag: bool = True,
                     progress: Callable[[int], None] | None = None,
                     ) -> Iterator[CommittedOffset | GroupState | Finding]:
    """Every group and latest committed offset in the ``__consumer_offsets-*`` partitions under ``paths``.

    With ``with_lag``, each commit of a partition whose data partition dir is in the same log dir as the
    ``__consumer_offsets`` partition holding the commit gets that partition's log start, LEO and high watermark
    (``replication-offset-checkpoint``), and a commit beyond the LEO or below the log start is a finding. Commits
    are never compared with another log dir's partitions: another broker's, or the same broker's on another day.

    ``progress`` is told the bytes of the segments as they are read (the ``__consumer_offsets`` partitions', then
    the loads of the data partitions for lag; a data partition of their log dirs no commit names is counted as
    skipped once the commits are known), :func:`consumer_offsets_bytes` in all.
    """
    parts = []
    for part in partition_dirs_and_findings(paths):
        if isinstance(part, Finding):  # what discovery met outside a partition (a dir it cannot list, a loop)
            yield part
        else:
            parts.append(part)
    data: dict[tuple[Path, str, int], Any] = {}
    results: list[tuple[Path, Any]] = []   # (log dir, value) of every __consumer_offsets partition
    homes: set[Path] = set()               # their log dirs
    seen = False
    for part in parts:
        if part.topic == OFFSETS_TOPIC:
            seen = True
            home = part.logdir_path.resolve()
            homes.add(home)
            results.extend((home, r) for r in (*part.findings, *consumer_offsets_partition(
                part.files, f"{part.topic}-{part.partition}", progress)))
    if not seen:
        yield finding("offsets-none", ", ".join(str(p) for p in paths), None,
                      f"no {OFFSETS_TOPIC}-* partition dirs found")
        return
    if not any(isinstance(r, CommittedOffset | GroupState) for _home, r in results):
        read = sorted({f"{p.topic}-{p.partition}" for p in parts if p.topic == OFFSETS_TOPIC})
        yield finding("offsets-empty", ", ".join(str(p) for p in paths), None,
                      f"no committed offset and no group in {len(read)} {OFFSETS_TOPIC} partition(s) "
                      f"({', '.join(read[:5])}{', ...' if len(read) > 5 else ''}): no group ever committed here, or "
                      "every commit expired (offsets.retention.minutes) or was deleted")
    if with_lag:
        wanted = {(home, r.topic, r.partition) for home, r in results if isinstance(r, CommittedOffset)}
        passed: set[tuple[Path, str, int]] = set()  # of the lag's candidates, those not loaded (progress)
        for part in parts:
            key = (part.logdir_path.resolve(), part.topic, part.partition)
            data_part = part.topic != OFFSETS_TOPIC  # (a commit for __consumer_offsets itself: a load not counted)
            if key in wanted and key not in data:
                data[key] = open_replica(part, part.display,  # loaded: LEO, log start, HW
                                         progress=progress if data_part else None)
            elif progress is not None and data_part and key not in wanted and key[0] in homes and key not in passed:
                passed.add(key)
                progress(segment_bytes(part.files))
    order = {GroupState: 0, CommittedOffset: 1, Finding: 2}
    results.sort(key=lambda hr: (order[type(hr[1])], (hr[1].group, getattr(hr[1], "topic", ""),
                                                      getattr(hr[1], "partition", 0))
                                 if not isinstance(hr[1], Finding) else ("", "", 0)))
    for home, r in results:
        if isinstance(r, CommittedOffset) and (home, r.topic, r.partition) in data:
            rep = data[(home, r.topic, r.partition)]
            r = CommittedOffset(**{**{f: getattr(r, f) for f in r.__dataclass_fields__},
                                   "log_start_offset": rep.log_start_offset, "log_end_offset": rep.leo,
                                   # no replication-offset-checkpoint entry: the HW is unknown, not 0
                                   "high_watermark": rep.high_watermark if rep.hw_checkpoint is not None else None})
            yield r
            where = f"{r.topic}-{r.partition}"
            if r.offset > rep.leo:
                yield finding("commit-beyond-leo", rep.path, None,
                              f"group {r.group!r} committed offset {r.offset} for {where}, beyond its log end "
                              f"offset {rep.leo}: the log lost data (unclean election, deleted segments) or "
                              "this is not the replica the group consumed from")
            elif r.offset < rep.log_start_offset:
                yield finding("commit-below-log-start", rep.path, None,
                              f"group {r.group!r} committed offset {r.offset} for {where}, below its log start "
                              f"offset {rep.log_start_offset}: the consumer will reset (auto.offset.reset)")
        else:
            yield r


def consumer_offsets_bytes(paths: Iterable[str | Path], *, with_lag: bool = True) -> int:
    """What :func:`consumer_offsets` tells its ``progress`` in all (a progress bar's total): the segments of the
    ``__consumer_offsets-*`` partitions under ``paths`` and, ``with_lag``, those of every data partition under
    ``paths`` in their log dirs (each once; the ones no commit names count as skipped)."""
    parts = list(partition_dirs(paths))
    homes = {part.logdir_path.resolve() for part in parts if part.topic == OFFSETS_TOPIC}
    total = sum(_segment_bytes(part.files) for part in parts if part.topic == OFFSETS_TOPIC)
    if with_lag:
        candidates = {}
        for part in parts:
            if part.topic != OFFSETS_TOPIC:
                candidates.setdefault((part.logdir_path.resolve(), part.topic, part.partition), part)
        total += sum(segment_bytes(part.files) for key, part in candidates.items() if key[0] in homes)
    return total


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


@functools.lru_cache(maxsize=_KEYS_CACHED)
def decode_transaction_key(key: bytes) -> str:
    version = _parse(it.CoordinatorKeyVersion, key[:2], "TransactionLogKey version").version
    if version != 0:
        raise _Undecodable(f"TransactionLogKey version {version} is not one this tool knows (0)")
    return _s(_parse(it.TransactionLogKey, key, "TransactionLogKey").transactional_id) or ""


def decode_transaction_value(value: bytes) -> dict[str, Any]:
    """A ``TransactionLogValue`` as a dict (state by name, partitions as (topic, ids), tags when present)."""
    version = _value_version(value, it.TRANSACTION_LOG_VALUE_VERSIONS, "TransactionLogValue")
    v = _parse(it.TransactionLogValue, value, f"TransactionLogValue v{version}").body
    tags = _tags(v.tagged_fields, it.TRANSACTION_LOG_VALUE_TAGS, "TransactionLogValue") if version >= 1 else {}
    status = v.transaction_status
    return {
        "producer_id": v.producer_id, "producer_epoch": v.producer_epoch, "timeout_ms": v.transaction_timeout_ms,
        "state": it.TRANSACTION_STATES.get(status, f"unknown({status})"),
        "partitions": tuple((_s(p.topic) or "", tuple(_arr(p.partition_ids) or ()))
                            for p in _arr(v.transaction_partitions) or ()),
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
                                ) -> Iterator[TransactionLogEntry | Finding]:
    """Replay one ``__transaction_state-N`` partition: the latest value per transactional id (null deletes).
    ``progress`` is told the bytes of the segments as they are read; ``clock`` the newest record time."""
    latest: dict[str, TransactionLogEntry] = {}
    findings = CappedFindings()  # a fault repeated per record kept 100 times, counted
    for display, batch, rec in _partition_records(files, findings, progress):
        if rec.control_type is not None:
            continue
        if clock is not None and rec.timestamp > clock.newest:
            clock.newest = rec.timestamp
        try:
            if rec.key is None:
                raise _Undecodable("no key")
            tid = decode_transaction_key(rec.key)
            if rec.value is None:
                latest.pop(tid, None)
                continue
            v = decode_transaction_value(rec.value)
            latest[tid] = TransactionLogEntry(
                tid, v["producer_id"], v["producer_epoch"], v["timeout_ms"], v["state"], v["partitions"],
                v["last_update_timestamp"], v["start_timestamp"], v["previous_producer_id"],
                v["next_producer_id"], v["client_transaction_version"], v["version"], name, rec.offset)
        except _Undecodable as exc:
            findings.append(finding("txn-state-undecodable", display, batch.position,
                                    f"record at offset {rec.offset}: {exc}"))
    yield from sorted(latest.values(), key=lambda e: e.transactional_id)
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
    return sum(_segment_bytes(part.files) for part in partition_dirs(paths) if part.topic == TRANSACTION_TOPIC)


# --- __cluster_metadata ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One step of a partition's leadership timeline (a PartitionRecord or PartitionChangeRecord applied).

    Leader epoch and partition epoch of a change are not in the record; they follow ``PartitionRegistration.merge``:
    the partition epoch grows by one per change record, the leader epoch by one when the record carries a leader
    (anything but NO_LEADER_CHANGE, -2; the controller sets it also to bump the epoch of an unchanged leader).

    A row replayed from a KRaft snapshot has no log offset (records inside a snapshot are numbered from 0):
    ``offset`` is None and ``snapshot_end_offset`` is the snapshot's end offset (its file name), the first log
    offset *not* in it. ``min_insync_replicas`` is the value in force for the topic after this record, set by
    ``min_isr_source`` (as :class:`UnderMinIsr` says it), and ``min_isr`` where the partition stands against it:
    ``under`` (this record took it under), ``below`` (still under), ``back`` (this record ended an interval under
    it), ``no leader`` (leader -1: every produce request gets NOT_LEADER_OR_FOLLOWER, whatever the ISR), else None.
    ``election`` is ``unclean`` when this record made a leader of a replica outside the ISR (see
    :func:`_unclean`).
    """

    source: str
    offset: int | None
    timestamp: int
    record: str
    topic: str
    topic_id: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    leader_epoch: int | None
    partition_epoch: int | None
    snapshot_end_offset: int | None = None
    min_insync_replicas: int = 1
    min_isr: str | None = None
    min_isr_source: str = "default"
    election: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"type": "partition_state", "source": self.source, "offset": self.offset,
                "snapshot_end_offset": self.snapshot_end_offset,
                "timestamp": self.timestamp, "record": self.record, "topic": self.topic,
                "topic_id": self.topic_id, "partition": self.partition, "leader": self.leader,
                "isr": list(self.isr), "replicas": list(self.replicas), "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch, "min_insync_replicas": self.min_insync_replicas,
                "min_isr_source": self.min_isr_source, "min_isr": self.min_isr, "election": self.election}


@dataclass(frozen=True, slots=True)
class UnderMinIsr:
    """An interval during which a partition's ISR was smaller than its ``min.insync.replicas``.

    While it lasts the leader refuses ``acks=all`` produce requests with NOT_ENOUGH_REPLICAS
    (``Partition.appendRecordsToLeader``: ``inSyncSize < minIsr && requiredAcks == -1``); ``acks=1``
    producers are still acknowledged, by the leader alone. ``isr`` is the ISR during the interval (a change of
    ISR while still under starts a new interval). ``from_offset``/``from_time`` are the metadata record that
    took the partition under (None when it was already under in the snapshot the replay started from:
    ``from_snapshot_end_offset`` names it); ``to_offset``/``to_time`` the record that ended it (None: still open
    at the end of the metadata log). ``min_isr_source`` says where the value came from: ``topic`` (a topic
    config), ``broker N`` (the leader's dynamic broker config), ``cluster`` (the dynamic cluster default) or
    ``default`` (``--min-insync-replicas`` / ``server.properties``).
    """

    source: str
    topic: str
    partition: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    min_insync_replicas: int
    min_isr_source: str
    from_offset: int | None
    from_time: int | None
    from_snapshot_end_offset: int | None
    to_offset: int | None = None
    to_time: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"type": "under_min_isr", "source": self.source, "topic": self.topic, "partition": self.partition,
                "isr": list(self.isr), "replicas": list(self.replicas),
                "min_insync_replicas": self.min_insync_replicas, "min_isr_source": self.min_isr_source,
                "from_offset": self.from_offset, "from_time": self.from_time,
                "from_snapshot_end_offset": self.from_snapshot_end_offset,
                "to_offset": self.to_offset, "to_time": self.to_time}


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """Any other metadata record: its type, version and a few decoded fields (none when not decoded)."""

    source: str
    offset: int | None      # None for a record replayed from a KRaft snapshot
    timestamp: int
    record_type: int
    name: str
    version: int
    fields: dict[str, Any]
    decoded: bool

    def as_dict(self) -> dict[str, Any]:
        return {"type": "metadata_record", "source": self.source, "offset": self.offset,
                "timestamp": self.timestamp, "record_type": self.record_type, "name": self.name,
                "version": self.version, "decoded": self.decoded, "fields": self.fields}


def _uuid(b: bytes) -> str:
    """A Kafka ``Uuid`` as Kafka prints it: URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(b).decode("ascii").rstrip("=")


@functools.cache
def _metadata_layout(record_type: int, version: int) -> Any:
    """The declaration of a version of a metadata record type: one object for each (the factories of
    ``it.METADATA_RECORDS`` build some anew at every call), so that its derived reader is made once."""
    return it.METADATA_RECORDS[record_type][2](version)  # type: ignore[operator]


def _metadata_layouts() -> list[Any]:
    """Every metadata record layout and tag layout declared here (for the derived readers of ``_parse``)."""
    tags = (it.PARTITION_RECORD_TAGS, it.PARTITION_CHANGE_TAGS, it.BROKER_REGISTRATION_CHANGE_TAGS,
            it.METADATA_TRANSACTION_TAGS)
    return [it.MetadataFrame, it.PARTITION_RECORD_V1_PRERELEASE,
            *(_metadata_layout(t, v) for t, (_name, versions, _f) in it.METADATA_RECORDS.items() for v in versions),
            *(decl for table in tags for _name, decl in table.values())]


_METADATA_FRAME: Callable[[bytes], Any] | None = None


def _metadata_frame(value: bytes) -> tuple[Any, int]:
    """A metadata record's frame (frame version, record type, version) and where its body begins."""
    global _METADATA_FRAME
    if _METADATA_FRAME is None:
        _METADATA_FRAME = prefix_reader(it.MetadataFrame)
    got = _METADATA_FRAME(value) if value.__class__ is bytes else None  # type: ignore[misc]
    return got if got is not None else (it.MetadataFrame.parse(value), _frame_len(value))


def decode_metadata_record(value: bytes) -> tuple[int, int, str, dict[str, Any] | None]:
    """(record type, version, name, fields or None when the type/version is not declared here)."""
    frame, body_at = _metadata_frame(value)
    if frame["frame_version"] != it.METADATA_FRAME_VERSION:
        raise _Undecodable(f"metadata frame version {frame['frame_version']} is not {it.METADATA_FRAME_VERSION}")
    record_type, version = frame["record_type"], frame["version"]
    body = value[body_at:]
    known = it.METADATA_RECORDS.get(record_type)
    if known is None or version not in known[1]:
        name = it.METADATA_RECORD_NAMES.get(record_type, f"type {record_type}")
        return record_type, version, name, None
    name = known[0]
    try:
        v = _parse(_metadata_layout(record_type, version), body, f"{name} v{version}")
    except _Undecodable:
        if (record_type, version) != (it.PARTITION, 1):
            raise
        v = _parse(it.PARTITION_RECORD_V1_PRERELEASE, body, f"{name} v1 (pre-release layout)")
    return record_type, version, name, _metadata_fields(record_type, v)


def _frame_len(value: bytes) -> int:
    pos = 0
    for _ in range(3):
        while value[pos] & 0x80:
            pos += 1
        pos += 1
    return pos


def _tags(tagged: Any, declared: dict[int, tuple[str, Any]], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in tagged.fields:
        if f.tag in declared:
            name, decl = declared[f.tag]
            v = _parse(decl, f.data, f"{what} tag {f.tag}")
            out[name] = _arr(v) if hasattr(v, "entries") else v
    return out


def _metadata_fields(record_type: int, v: Any) -> dict[str, Any]:
    if record_type == it.TOPIC:
        return {"name": _s(v.name), "topic_id": _uuid(v.topic_id)}
    if record_type == it.REMOVE_TOPIC:
        return {"topic_id": _uuid(v.topic_id)}
    if record_type == it.FEATURE_LEVEL:
        return {"name": _s(v.name), "feature_level": v.feature_level}
    if record_type == it.REGISTER_BROKER:
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch, "incarnation_id": _uuid(v.incarnation_id),
                "endpoints": [f"{_s(e.name)}://{_s(e.host)}:{e.port}" for e in _arr(v.endpoints) or ()],
                "rack": _s(v.rack), "fenced": bool(v.fenced)}
    if record_type == it.PARTITION:
        d = {"partition_id": v.partition_id, "topic_id": _uuid(v.topic_id), "replicas": _arr(v.replicas),
             "isr": _arr(v.isr), "leader": v.leader, "leader_epoch": v.leader_epoch,
             "partition_epoch": v.partition_epoch}
        d.update(_tags(v.tagged_fields, it.PARTITION_RECORD_TAGS, "PartitionRecord"))
        return d
    if record_type == it.CONFIG:
        return {"resource_type": it.CONFIG_RESOURCE_TYPES.get(v.resource_type, v.resource_type),
                "resource_name": _s(v.resource_name), "name": _s(v.name), "value": _s(v.value)}
    if record_type in (it.UNREGISTER_BROKER, it.FENCE_BROKER, it.UNFENCE_BROKER):
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch}
    if record_type == it.PRODUCER_IDS:
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch, "next_producer_id": v.next_producer_id}
    if record_type == it.BROKER_REGISTRATION_CHANGE:
        d = {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch}
        tags = _tags(v.tagged_fields, it.BROKER_REGISTRATION_CHANGE_TAGS, "BrokerRegistrationChangeRecord")
        if "fenced" in tags:  # BrokerRegistrationFencingChange
            d["fenced"] = {1: "fence", -1: "unfence", 0: "unchanged"}.get(tags["fenced"], tags["fenced"])
        if "in_controlled_shutdown" in tags:  # BrokerRegistrationInControlledShutdownChange
            d["in_controlled_shutdown"] = {1: "yes", 0: "unchanged"}.get(tags["in_controlled_shutdown"],
                                                                         tags["in_controlled_shutdown"])
        if "log_dirs" in tags:
            d["log_dirs"] = [_uuid(u) for u in tags["log_dirs"]]
        return d
    if record_type == it.REGISTER_CONTROLLER:
        return {"controller_id": v.controller_id, "incarnation_id": _uuid(v.incarnation_id),
                "zk_migration_ready": bool(v.zk_migration_ready),
                "endpoints": [f"{_s(e.name)}://{_s(e.host)}:{e.port}" for e in _arr(v.endpoints) or ()],
                "features": {_s(f.name): [f.min_supported_version, f.max_supported_version]
                             for f in _arr(v.features) or ()}}
    if record_type == it.NO_OP:
        return {}
    if record_type == it.ZK_MIGRATION_STATE:
        return {"zk_migration_state": it.ZK_MIGRATION_STATES.get(v.zk_migration_state, v.zk_migration_state)}
    if record_type in (it.BEGIN_TRANSACTION, it.END_TRANSACTION, it.ABORT_TRANSACTION):
        text = _tags(v.tagged_fields, it.METADATA_TRANSACTION_TAGS, it.METADATA_RECORD_NAMES[record_type]).get("text")
        key = {it.BEGIN_TRANSACTION: "name", it.ABORT_TRANSACTION: "reason"}.get(record_type)
        return {key: _s(text) if text is not None else None} if key else {}
    if record_type == it.PARTITION_CHANGE:
        d = {"partition_id": v.partition_id, "topic_id": _uuid(v.topic_id)}
        d.update(_tags(v.tagged_fields, it.PARTITION_CHANGE_TAGS, "PartitionChangeRecord"))
        return d
    return {}


def metadata_file(path: Path, display: str, progress: Callable[[int], None] | None = None
                  ) -> Iterator[tuple[Batch, Record, tuple] | Finding]:
    """Every metadata record of one ``__cluster_metadata`` segment or KRaft snapshot, decoded:
    (batch, record, (type, version, name, fields or None)), or a finding for a record that does not parse.
    Control records (leader change, snapshot header/footer, voters) are skipped. ``progress`` is told the bytes
    read."""
    for item in _records(path, display, progress):
        if isinstance(item, Finding):
            yield item
            continue
        batch, rec = item
        if rec.control_type is not None:
            continue
        if rec.value is None:
            yield finding("metadata-undecodable", display, batch.position,
                          f"record at offset {rec.offset} has a null value")
            continue
        try:
            yield batch, rec, decode_metadata_record(rec.value)
        except (_Undecodable, ConstructError, IndexError) as exc:
            yield finding("metadata-undecodable", display, batch.position,
                          f"record at offset {rec.offset}: {exc}")


def metadata_sources(paths: Iterable[str | Path], met: list[Finding] | None = None
                     ) -> list[list[tuple[Path, str, str]]]:
    """The files to replay, as (path, display, kind), one list per metadata log: a named file as it is (files
    named together from one dir are one log); for a ``__cluster_metadata-0`` dir, its latest KRaft snapshot and
    the log segments, as the controller loads them. Each list is replayed on its own: two dirs are two
    clusters' (or two voters') logs, never one timeline. ``met`` is given what discovery met in those dirs and
    around them (a file it cannot read, a link loop, a dir it cannot list)."""

    named: dict[Path, list[tuple[Path, str, str]]] = {}
    dirs: list[str | Path] = []
    for p in paths:
        if Path(p).exists() and not Path(p).is_dir():  # a FIFO named too: its reading refuses it
            kind = "snapshot" if str(p).endswith(".checkpoint") else "log"
            if kind == "log" and classify(p, by_extension=True).kind is not FileKind.LOG:
                raise UsageError(f"{p}: not a metadata log segment (.log) or snapshot (.checkpoint)")
            named.setdefault(Path(p).resolve().parent, []).append((Path(p), str(p), kind))
        else:
            dirs.append(p)
    groups = list(named.values())
    for part in partition_dirs_and_findings(dirs) if dirs else ():
        if isinstance(part, Finding) or part.topic != METADATA_TOPIC:
            if isinstance(part, Finding) and met is not None:
                met.append(part)
            continue
        if met is not None:
            met.extend(part.findings)
        group: list[tuple[Path, str, str]] = []
        snaps = _segments(part.files, FileKind.KRAFT_SNAPSHOT)
        if snaps:
            _off, path, display = snaps[-1]
            group.append((path, display, "snapshot"))
        group.extend((path, display, "log") for _b, path, display in _segments(part.files))
        if group:
            groups.append(group)
    return groups


class MinIsrPolicy:
    """``min.insync.replicas`` in force for a topic partition, as a KRaft broker resolves it: the topic's config
    (``ConfigRecord`` on the TOPIC resource), else the leader's dynamic broker config, else the dynamic cluster
    default (BROKER resource named ""), else the static default (``server.properties`` / Kafka's 1).
    ``LogConfig`` takes the topic's overrides over the broker's defaults; ``DynamicBrokerConfig`` puts per-broker
    over cluster-wide over static."""

    KEY = "min.insync.replicas"

    def __init__(self, default: int = 1) -> None:
        self.default = default
        self.topics: dict[str, int] = {}
        self.brokers: dict[str, int] = {}
        self.cluster: int | None = None

    def apply(self, fields: dict[str, Any]) -> bool:
        """Take in a decoded ConfigRecord; True when it changed a ``min.insync.replicas``."""
        if fields.get("name") != self.KEY:
            return False
        value = fields.get("value")
        try:
            number = int(value) if value is not None else None
        except ValueError:
            return False  # the controller validates configs; an unparsable one is not in force
        rtype, name = fields.get("resource_type"), fields.get("resource_name") or ""
        if rtype == "topic":
            table: dict[str, int] | None = self.topics
        elif rtype == "broker" and name:
            table = self.brokers
        elif rtype == "broker":
            self.cluster = number
            return True
        else:
            return False
        if number is None:
            table.pop(name, None)
        else:
            table[name] = number
        return True

    def of(self, topic: str, leader: int) -> tuple[int, str]:
        if topic in self.topics:
            return self.topics[topic], "topic"
        if str(leader) in self.brokers:
            return self.brokers[str(leader)], f"broker {leader}"
        if self.cluster is not None:
            return self.cluster, "cluster"
        return self.default, "default"


_PROPERTY = re.compile(r"^\s*(?P<key>[^#!\s=:][^\s=:]*)\s*[=:\s]\s*(?P<value>.*)$")


def read_min_insync_replicas(server_properties: Path) -> int | None:
    """``min.insync.replicas`` of a broker's ``server.properties`` (Java properties: ``key=value`` or
    ``key: value``, ``#``/``!`` comments), or None when it is not set there."""
    try:
        text = read_regular(server_properties).decode("latin-1")
    except OSError as exc:
        raise InputIOError(f"cannot read {server_properties}: {exc.strerror or exc}") from exc
    for line in text.splitlines():
        m = _PROPERTY.match(line)
        if m and m["key"] == MinIsrPolicy.KEY:
            try:
                return int(m["value"].strip())
            except ValueError as exc:
                raise UsageError(f"{server_properties}: min.insync.replicas={m['value'].strip()!r} is not a "
                                 "number") from exc
    return None


def metadata_timeline(paths: Iterable[str | Path], *, min_insync_replicas: int = 1,
                      progress: Callable[[int], None] | None = None, topic: str | None = None,
                      ) -> Iterator[PartitionState | MetadataEvent | UnderMinIsr | Finding]:
    """The partition leadership / ISR timeline and other metadata records, in replay order, one metadata log
    after the other (see :func:`metadata_sources`).

    For a ``__cluster_metadata-0`` dir: its latest snapshot, then the log from the snapshot's end offset.
    Each interval during which a partition's ISR was below its ``min.insync.replicas`` (``min_insync_replicas``
    is the static default) is yielded as :class:`UnderMinIsr` when it ends, and at the end of its log when
    it is still open. ``progress`` is told the bytes of the files as they are read, :func:`metadata_bytes` in all.
    With ``topic``, the findings about a partition (an unclean election) are only that topic's; the rows are all
    yielded (the caller filters them, having seen every topic there was).
    """
    met: list[Finding] = []
    groups = metadata_sources(paths, met)
    yield from met
    if not groups:
        yield finding("metadata-none", ", ".join(str(p) for p in paths), None,
                      f"no {METADATA_TOPIC} segments or snapshots found")
        return
    for group in groups:
        yield from _replay_metadata(group, min_insync_replicas, progress, topic)


def _unclean(before: dict[str, Any] | None, after: dict[str, Any], fields: dict[str, Any]) -> str | None:
    """Why the partition record took ``before`` to ``after`` by an unclean election, or None.

    ``PartitionChangeBuilder.electLeader``: a clean election takes a replica of the ISR, or of the ELR when the ISR
    is empty (``isValidNewLeader``); any other leader is unclean (``unclean.leader.election.enable``, or the last
    known leader), and the controller then sets the ISR to the new leader alone and, from metadata version 3.2,
    the leader recovery state to RECOVERING (``tryElection``). A record carrying RECOVERING says so even where the
    state before it is not known (a snapshot's PartitionRecord)."""
    leader = after["leader"]
    recovering = fields.get("leader_recovery_state") == 1
    if before is not None and leader >= 0 and leader != before["leader"]:
        isr, elr = before["isr"] or [], before.get("elr") or []
        if leader not in isr and not (not isr and leader in elr):
            return (f"leader {leader} was not in the ISR {','.join(map(str, isr)) or '(empty)'}"
                    + (" nor the ELR " + ",".join(map(str, elr)) if not isr and elr else "")
                    + ("; leader recovery state RECOVERING" if recovering else ""))
    if recovering and leader >= 0 and (before is None or before.get("recovery") != 1):
        return f"leader {leader} with leader recovery state RECOVERING (set by an unclean election)"
    return None


def _unclean_finding(row: PartitionState, why: str) -> Finding:
    at = f"offset {row.offset}" if row.offset is not None else f"the snapshot ending at {row.snapshot_end_offset}"
    return finding("unclean-leader-election", row.source, None,
                   f"{row.topic}-{row.partition} at {at} ({iso_time(row.timestamp)}): {why}: an unclean election; "
                   "writes the old ISR acknowledged that the new leader lacks are lost (the other replicas truncate "
                   "their logs to its)")


def metadata_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`metadata_timeline` tells its ``progress`` in all (a progress bar's total): the files it replays
    (:func:`metadata_sources`: of a ``__cluster_metadata-0`` dir, its latest snapshot and its log segments)."""
    return sum(file_size(path) for group in metadata_sources(paths) for path, _display, _kind in group)


def _replay_metadata(sources: list[tuple[Path, str, str]], default_min_isr: int,
                     progress: Callable[[int], None] | None = None, topic: str | None = None,
                     ) -> Iterator[PartitionState | MetadataEvent | UnderMinIsr | Finding]:
    names: dict[str, str] = {}
    state: dict[tuple[str, int], dict[str, Any]] = {}
    under: dict[tuple[str, int], UnderMinIsr] = {}   # open intervals
    policy = MinIsrPolicy(default_min_isr)
    where = os.path.dirname(sources[0][1]) or sources[0][1]
    snapshot_end = -1

    closed: list[UnderMinIsr] = []   # intervals ended by the record being replayed

    def check(key: tuple[str, int], offset: int | None, time: int) -> str | None:
        """Open or close ``key``'s interval after a change at ``offset``; where the partition stands (the
        ``min_isr`` of :class:`PartitionState`). Without a leader no interval is open: the partition refuses every
        produce request with NOT_LEADER_OR_FOLLOWER (``Partition.appendRecordsToLeader``: no leader log), so its
        ISR refuses none."""
        s = state[key]
        topic = names.get(key[0], key[0])
        needed, origin = policy.of(topic, s["leader"])
        isr = tuple(s["isr"] or ())
        leaderless = s["leader"] == -1
        is_under = len(isr) < needed and not leaderless
        current = under.get(key)
        if current is not None and (not is_under or current.isr != isr or current.min_insync_replicas != needed):
            closed.append(replace(under.pop(key), to_offset=offset, to_time=time))
        if is_under and key not in under:
            in_snapshot = offset is None
            under[key] = UnderMinIsr(where, topic, key[1], isr, tuple(s["replicas"] or ()), needed, origin,
                                     offset, None if in_snapshot else time, snapshot_end if in_snapshot else None)
        if leaderless:
            return "no leader"
        if current is None:
            return "under" if is_under else None
        return "below" if is_under else "back"

    for path, display, kind in sources:
        if kind == "snapshot":
            info = classify(path)
            snapshot_end = info.base_offset if info.base_offset is not None else -1
        for item in metadata_file(path, display, progress):
            if isinstance(item, Finding):
                yield item
                continue
            batch, rec, (rtype, version, name, fields) = item
            if kind == "log" and rec.offset < snapshot_end:
                continue  # already in the snapshot
            offset = rec.offset if kind == "log" else None
            if fields is None:
                yield MetadataEvent(display, offset, rec.timestamp, rtype, name, version, {}, False)
                continue
            if rtype == it.TOPIC:
                names[fields["topic_id"]] = fields["name"]
            if rtype in (it.PARTITION, it.PARTITION_CHANGE):
                tid, p = fields["topic_id"], fields["partition_id"]
                key = (tid, p)
                before = dict(state[key]) if key in state else None  # the change applies in place
                if rtype == it.PARTITION:
                    s = state[key] = {k: fields[k] for k in ("leader", "isr", "replicas", "leader_epoch",
                                                              "partition_epoch")}
                    s["elr"] = fields.get("eligible_leader_replicas") or []
                    s["recovery"] = fields.get("leader_recovery_state", 0)
                else:
                    s = state.setdefault(key, {"leader": -1, "isr": [], "replicas": [], "leader_epoch": None,
                                               "partition_epoch": None, "elr": [], "recovery": 0})
                    if s["partition_epoch"] is not None:
                        s["partition_epoch"] += 1
                    if "leader" in fields and fields["leader"] != -2:
                        s["leader"] = fields["leader"]
                        if s["leader_epoch"] is not None:
                            s["leader_epoch"] += 1
                    for k, tag in (("isr", "isr"), ("replicas", "replicas"), ("elr", "eligible_leader_replicas"),
                                   ("recovery", "leader_recovery_state")):
                        if fields.get(tag) is not None:
                            s[k] = fields[tag]
                marker = check(key, offset, rec.timestamp)
                unclean = _unclean(before, s, fields)
                needed, origin = policy.of(names.get(tid, tid), s["leader"])
                row = PartitionState(display, offset, rec.timestamp, name, names.get(tid, tid), tid, p,
                                     s["leader"], tuple(s["isr"] or ()), tuple(s["replicas"] or ()),
                                     s["leader_epoch"], s["partition_epoch"],
                                     None if kind == "log" else snapshot_end, needed, marker, origin,
                                     "unclean" if unclean else None)
                yield row
                if unclean and (topic is None or row.topic == topic):
                    yield _unclean_finding(row, unclean)
            else:
                if rtype == it.CONFIG and policy.apply(fields):
                    for key in list(state):
                        check(key, offset, rec.timestamp)
                elif rtype == it.REMOVE_TOPIC:
                    for key in [k for k in state if k[0] == fields["topic_id"]]:
                        if key in under:
                            closed.append(replace(under.pop(key), to_offset=offset, to_time=rec.timestamp))
                        del state[key]
                yield MetadataEvent(display, offset, rec.timestamp, rtype, name, version, fields, True)
            yield from closed
            closed.clear()
    yield from under.values()


# --- one record at a time (the Spark data source's ``decode`` option) -----------------------------


def offsets_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__consumer_offsets`` record, decoded on its own (no replay): ``kind`` (``offset_commit``,
    ``group_metadata`` or ``unknown`` for a key version not decoded here), the key's fields, the value's
    (none for a tombstone, which deletes the key when the coordinator loads the partition)."""
    if key is None:
        raise _Undecodable("no key")
    k = decode_offsets_key(key)
    out: dict[str, Any] = {"key_version": _parse(it.CoordinatorKeyVersion, key[:2], "key version").version,
                           "tombstone": value is None}
    if isinstance(k, OffsetKey):
        out.update(kind="offset_commit", group=k.group, topic=k.topic, partition=k.partition)
        if value is not None:
            v = decode_offset_commit_value(value)
            out.update(v, value_version=v["version"])
    elif isinstance(k, GroupKey):
        out.update(kind="group_metadata", group=k.group)
        if value is not None:
            g = decode_group_metadata_value(value)
            out.update(g, value_version=g["version"], members=[m.as_dict() for m in g["members"]])
    else:
        out["kind"] = "unknown"
    out.pop("version", None)
    return out


def transaction_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__transaction_state`` record, decoded on its own: the transactional id and, unless a tombstone
    (an expired id), its producer, state and partitions (``[{topic, partition}]``)."""
    if key is None:
        raise _Undecodable("no key")
    out: dict[str, Any] = {"transactional_id": decode_transaction_key(key), "tombstone": value is None}
    if value is not None:
        v = decode_transaction_value(value)
        out.update(v, value_version=v["version"],
                   partitions=[{"topic": t, "partition": p} for t, ps in v["partitions"] for p in ps])
        del out["version"]
    return out


def metadata_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__cluster_metadata`` record (or KRaft snapshot record): type, version, name and, when the type
    and version are declared here, its fields as JSON (``decoded`` false otherwise), as ``metadata --all``
    shows them."""
    import json

    if value is None:
        raise _Undecodable("null value")
    try:
        rtype, version, name, fields = decode_metadata_record(value)
    except (ConstructError, IndexError) as exc:
        raise _Undecodable(f"metadata record: {type(exc).__name__}: {exc}") from exc
    return {"record_type": rtype, "version": version, "name": name, "decoded": fields is not None,
            "fields": None if fields is None else json.dumps(fields)}


SHARE_STATE_TOPIC = "__share_group_state"


def share_state_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__share_group_state`` record (KIP-932), decoded on its own as ``ShareCoordinatorRecordSerde`` reads
    it: ``kind`` (``share_snapshot``: the whole state of one share-partition, ``share_update``: a delta on the
    latest snapshot), the key (group, topic id as Kafka prints a Uuid, partition) and, unless a tombstone (the
    share-partition's state deleted), the value's epochs, start offset and state batches (delivery state by
    name). ``layout`` says which Kafka release's layout of value version 0 the bytes fit (see
    ``formats/internal_topics.py``)."""
    if key is None:
        raise _Undecodable("no key (a share-group state record always has one)")
    rtype = _parse(it.CoordinatorKeyVersion, key[:2], "record type").version
    name = it.SHARE_RECORD_NAMES.get(rtype)
    if name is None:
        raise _Undecodable(f"unknown record type {rtype} (0 ShareSnapshot, 1 ShareUpdate)")
    k = _parse(it.ShareStateKey, key, f"{name}Key")
    out: dict[str, Any] = {"kind": "share_snapshot" if rtype == it.SHARE_SNAPSHOT else "share_update",
                           "record_type": rtype, "group": _s(k.group_id), "topic_id": _uuid(k.topic_id),
                           "partition": k.partition, "tombstone": value is None}
    if value is not None:
        out.update(_share_state_value(rtype, f"{name}Value", value))
    return out


def _share_state_value(rtype: int, name: str, value: bytes) -> dict[str, Any]:
    version = _value_version(value, it.SHARE_STATE_VALUE_VERSIONS, name)
    reasons = []
    for layout in it.SHARE_STATE_LAYOUTS:
        try:
            v = _parse(it.share_state_value(rtype, layout), value, f"{name} v{version} as Kafka {layout} writes it")
        except _Undecodable as exc:
            reasons.append(str(exc))
            continue
        if v.state_batches.entries is None:  # as Kafka's generated reader refuses it
            reasons.append(f"{name} v{version} as Kafka {layout} writes it: the non-nullable StateBatches is null")
            continue
        tags = _tags(v.tagged_fields, it.SHARE_STATE_VALUE_TAGS, name)
        return {
            "value_version": version, "layout": layout, "snapshot_epoch": v.snapshot_epoch,
            **({"state_epoch": v.state_epoch} if "state_epoch" in v else {}),
            "leader_epoch": v.leader_epoch, "start_offset": v.start_offset,
            "delivery_complete_count": tags.get("delivery_complete_count"),
            **({"create_timestamp": v.create_timestamp, "write_timestamp": v.write_timestamp}
               if "create_timestamp" in v else {}),
            "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                               "delivery_state": it.DELIVERY_STATES.get(b.delivery_state,
                                                                        f"unknown({b.delivery_state})"),
                               "delivery_count": b.delivery_count} for b in v.state_batches.entries],
        }
    raise _Undecodable("; ".join(reasons))


# decoder name -> (the internal topic it is for, the per-record decoder)
RECORD_DECODERS = {
    "consumer-offsets": (OFFSETS_TOPIC, offsets_record),
    "transaction-state": (TRANSACTION_TOPIC, transaction_record),
    "cluster-metadata": (METADATA_TOPIC, metadata_record),
    "share-group-state": (SHARE_STATE_TOPIC, share_state_record),
}


def decode_record(decoder: str, key: bytes | None, value: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(fields, None)``, or ``(None, why)`` for a record the ``decoder`` (a :data:`RECORD_DECODERS` name)
    cannot decode: bad bytes are a reason, never an exception."""
    try:
        return RECORD_DECODERS[decoder][1](key, value), None
    except _Undecodable as exc:
        return None, str(exc)


# --- dump --decode ---------------------------------------------------------------------------------------


DECODERS = ("consumer-offsets", "transaction-state", "cluster-metadata", "share-group-state", "auto")


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record of an internal topic with its key and value decoded (``decoded``), or why they are not
    (``decode_error``): kafka-dump-log's ``--offsets-decoder`` / ``--transaction-log-decoder`` /
    ``--cluster-metadata-decoder`` / ``--share-group-state-decoder``."""

    record: Record
    decoded: dict[str, Any] | None
    error: str | None

    def as_dict(self) -> dict[str, Any]:
        d = self.record.as_dict()
        d["decoded"] = self.decoded
        if self.error is not None:
            d["decode_error"] = self.error
        return d


def decoder_for(choice: str | None, path: Path) -> str | None:
    """The decoder a file's records get: the one chosen, or with ``auto`` the one of the internal topic its
    partition dir belongs to (none for other topics)."""
    if choice is None or choice != "auto":
        return choice
    part = partition_of(path.resolve().parent.name)
    topic = part[0] if part else None
    return next((name for name, (internal_topic, _fn) in RECORD_DECODERS.items() if internal_topic == topic), None)


def decode(decoder: str, r: Record) -> Record | DecodedRecord:
    """``r`` decoded by ``decoder``; control records stay as they are (they are the markers, not data)."""
    if r.control_type is not None:
        return r
    import json

    fields, error = decode_record(decoder, r.key, r.value)
    if fields is not None and decoder == "cluster-metadata" and fields.get("fields") is not None:
        fields = {**fields, "fields": json.loads(fields["fields"])}
    return DecodedRecord(r, fields, error)


def file_decoder(choice: str, path: Path) -> Callable[[Record], Record | DecodedRecord] | None:
    """``dump --decode choice``: how the records of file ``path`` are shown (None: as they are), for
    :class:`kafkatool.dump.DumpOptions`'s ``decoder``."""
    name = decoder_for(choice, path)
    return None if name is None else functools.partial(decode, name)
