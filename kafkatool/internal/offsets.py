"""``__consumer_offsets``, replayed as the group coordinator loads it (``GroupMetadataManager`` /
``GroupCoordinatorShard``): committed offsets and classic groups."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple

from ..findings import finding
from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from ..loader import segment_bytes
from ..model import Batch, CappedFindings, Finding, Record
from ..records import columns_to_records
from ..replicas import open_replica
from ..walk import partition_dirs, partition_dirs_and_findings
from . import common
from .common import (
    KEYS_CACHED,
    Undecodable,
    batched,
    entries,
    log_bytes,
    nullable,
    parse,
    partition_batches,
    value_version,
)

OFFSETS_TOPIC = "__consumer_offsets"

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


class OffsetKey(NamedTuple):
    """The key of an offset commit; a tuple, so that the replay's dict of commits hashes it in C (a frozen
    dataclass's ``__hash__`` is Python, once per record)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OtherKey:
    """A record type past the classic ones (3 and up, ``CoordinatorRecordType``: the KIP-848 consumer, share and
    streams group records): read by the schemas (``offsets_record``), not replayed."""

    version: int


@functools.lru_cache(maxsize=KEYS_CACHED)
def decode_offsets_key(key: bytes) -> OffsetKey | GroupKey | OtherKey:
    version = parse(it.CoordinatorKeyVersion, key[:2], "key version").version
    if version in it.KEY_OFFSET_COMMIT:
        k = parse(it.OffsetCommitKey, key, f"OffsetCommitKey v{version}")
        return OffsetKey(nullable(k.group) or "", nullable(k.topic) or "", k.partition)
    if version == it.KEY_GROUP_METADATA:
        return GroupKey(nullable(parse(it.GroupMetadataKey, key, "GroupMetadataKey").group) or "")
    return OtherKey(version)


def decode_offset_commit_value(value: bytes) -> dict[str, Any]:
    """An ``OffsetCommitValue`` as a dict (offset, leader_epoch, metadata, commit/expire timestamps, version)."""
    version, v = _offset_commit(value)
    return {"offset": v["offset"], "leader_epoch": v.get("leader_epoch"), "metadata": v["metadata"],
            "commit_timestamp": v["commit_timestamp"], "expire_timestamp": v.get("expire_timestamp"),
            "version": version}


@functools.cache
def _commit_readers() -> dict[bytes, tuple[int, Callable[[bytes, int], dict[str, Any] | None]]]:
    """The compiled readers (``kafka_schema.reader``) of the ``OffsetCommitValue`` versions the replay knows, by
    the value's first two bytes (its int16 version), with the version."""
    return {version.to_bytes(2, "big", signed=True): (version, ks.reader("OffsetCommitValue", version))
            for version in it.OFFSET_COMMIT_VALUE_VERSIONS}


def _offset_commit(value: bytes) -> tuple[int, dict[str, Any]]:
    """An ``OffsetCommitValue``: its version and fields (offset, metadata, commit_timestamp, and leader_epoch /
    expire_timestamp in the versions that have them). Read by the schema's compiled reader (``kafka_schema.reader``:
    one value per record of a partition, by the hundred thousand), by the declaration where it misses (a null
    metadata, damage: the declaration words the error, as before the compiled readers)."""
    if value.__class__ is bytes and (got := _commit_readers().get(value[:2])) is not None \
            and (fields := got[1](value, 2)) is not None:
        return got[0], fields
    version = value_version(value, it.OFFSET_COMMIT_VALUE_VERSIONS, "OffsetCommitValue")
    d = parse(it.OffsetCommitValue, value, f"OffsetCommitValue v{version}").body
    return version, {k: nullable(d.metadata) if k == "metadata" else d[k] for k in d if not k.startswith("_")
                     and k != "tagged_fields"}


def decode_group_metadata_value(value: bytes) -> dict[str, Any]:
    version = value_version(value, it.GROUP_METADATA_VALUE_VERSIONS, "GroupMetadataValue")
    v = parse(it.GroupMetadataValue, value, f"GroupMetadataValue v{version}").body
    members = tuple(
        GroupMember(nullable(m.member_id), nullable(m.get("group_instance_id")) if "group_instance_id" in m else None,
                    nullable(m.client_id), nullable(m.client_host), m.get("rebalance_timeout"), m.session_timeout,
                    len(nullable(m.subscription) or b""), len(nullable(m.assignment) or b""))
        for m in entries(v.members) or ())
    return {"protocol_type": nullable(v.protocol_type), "generation": v.generation, "protocol": nullable(v.protocol),
            "leader": nullable(v.leader), "current_state_timestamp": v.get("current_state_timestamp"),
            "members": members, "version": version}




# Told each record of a __consumer_offsets partition whose key decodes: (segment display path, batch, record, key).
Replay = Callable[[str, Batch, Record, "OffsetKey | GroupKey | OtherKey"], None]


@dataclass
class _Pending:
    """Transactional offset commits of one producer, applied at its COMMIT marker, dropped at ABORT."""

    writes: list[tuple[OffsetKey, Any]] = field(default_factory=list)


def consumer_offsets_partition(files: Iterable[tuple[Path, str]], name: str,
                               progress: Callable[[int], None] | None = None,
                               held: dict[int, list[CommittedOffset]] | None = None,
                               replay: Replay | None = None,
                               items: Iterable[tuple[str, Batch, Record]] | None = None,
                               ) -> Iterator[CommittedOffset | GroupState | Finding]:
    """Replay one ``__consumer_offsets-N`` partition (its ``.log`` segments in offset order), as the group
    coordinator loads it: later records win, a null value deletes, transactional commits count only once
    committed. Yields the surviving groups and committed offsets, then findings met on the way. ``progress`` is
    told the bytes of the segments as they are read; ``held``, when given, the transactional commits still pending
    at the log's end by producer id (their transaction not ended: ``OffsetMetadataManager``'s pending transactional
    offsets); ``replay``, when given, every record whose key decodes, in offset order, with its decoded key (the
    group states of :mod:`kafkatool.internal.groups` are replayed from them in the same pass); ``items``, when given,
    the (segment display path, batch, record) replayed instead of ``files``' (the Spark data source's rows, in offset
    order: :mod:`kafkatool.spark.state`)."""
    offsets: dict[OffsetKey, tuple] = {}  # the latest commit of each key, as _committed takes it
    groups: dict[str, GroupState] = {}
    pending: dict[int, list[tuple[OffsetKey, tuple | None]]] = {}
    findings = CappedFindings()  # a fault repeated per record kept 100 times, counted
    readers = _commit_readers()
    bulk = replay is None  # a replay is told every record: no batch taken in bulk
    for display, batch, recs in (partition_batches(files, findings, progress, columns=bulk) if items is None
                                 else batched(items)):
        transactional = batch.transactional
        if recs.__class__ is tuple:  # the native core's columns of a batch
            if not transactional and _bulk_commits(offsets, readers, recs):
                continue
            recs = columns_to_records(recs)
        for rec in recs:
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
                if replay is not None:
                    replay(display, batch, rec, key)
                if key.__class__ is OffsetKey:
                    # (key, value fields, log offset): made a CommittedOffset once it survives, not at every commit
                    if transactional:
                        pending.setdefault(batch.producer_id, []).append(
                            (key, None if rec.value is None else (key, _offset_commit(rec.value), rec.offset)))
                    elif (value := rec.value) is None:
                        offsets.pop(key, None)
                    else:  # _offset_commit, its compiled reader called here: once a record
                        got = readers.get(value[:2]) if value.__class__ is bytes else None
                        fields = None if got is None else got[1](value, 2)
                        offsets[key] = (key, (got[0], fields) if fields is not None else _offset_commit(value),
                                        rec.offset)
                elif key.__class__ is GroupKey:
                    if rec.value is None:
                        groups.pop(key.group, None)
                    else:
                        g = decode_group_metadata_value(rec.value)
                        groups[key.group] = GroupState(
                            key.group, g["protocol_type"], g["generation"], g["protocol"], g["leader"],
                            g["current_state_timestamp"], g["members"], g["version"], name, rec.offset,
                            rec.timestamp)
                else:  # a KIP-848 consumer, share or streams group record: decoded by dump --decode, not replayed here
                    newer = common.newer_record(ks.GROUP_COORDINATOR, OFFSETS_TOPIC, rec.key, rec.value, display,
                                         batch.position, rec.offset)
                    if newer is not None:
                        findings.append(newer)
            except Undecodable as exc:
                findings.append(finding("offsets-undecodable", display, batch.position,
                                        f"record at offset {rec.offset}: {exc}"))
    if held is not None:
        held.update((pid, [_committed(v, name) for _k, v in writes if v is not None])
                    for pid, writes in pending.items())
    for g in sorted(groups.values(), key=lambda g: g.group):
        yield g
    for _key, v in sorted(offsets.items(), key=lambda kv: (kv[0].group, kv[0].topic, kv[0].partition)):
        yield _committed(v, name)
    yield from findings
    yield from findings.summary()


_HEAD = operator.itemgetter(slice(2))  # a value's int16 version, as the key of _commit_readers


def _bulk_commits(offsets: dict[OffsetKey, tuple], readers: dict[bytes, tuple[int, Callable]],
                  columns: tuple) -> bool:
    """A non-transactional batch's records (the native core's columns) replayed at once, where every one of them is
    an offset commit whose key decodes and whose value the compiled reader of one version reads (what a group
    coordinator writes for a consumer's commit: ``GroupMetadataManager.storeOffsets``, one batch per request): the
    same entries in ``offsets`` as record by record, without a Python step per record (where
    ``kafka_schema.read_all`` tells that the compiled reader reads them all, each value is kept as its bytes and
    read only if it survives: only the last commit of a key is shown). False, with ``offsets`` as it
    was, where one of them is anything else (a tombstone, a group record, bytes that do not read): the caller
    replays that batch record by record, with its findings in order."""
    log_offsets, _timestamps, keys, values, _headers = columns
    if None in keys or None in values:
        return False
    try:
        decoded = list(map(decode_offsets_key, keys))
    except Undecodable:
        return False
    heads = set(map(_HEAD, values))
    if len(heads) != 1 or set(map(type, decoded)) != {OffsetKey} or (got := readers.get(heads.pop())) is None:
        return False
    if ks.read_all("OffsetCommitValue", got[0], values, 2):  # each value read once it survives (_committed)
        offsets.update(zip(decoded, zip(decoded, values, log_offsets, strict=True), strict=True))
        return True
    fields = list(map(got[1], values, repeat(2)))
    if None in fields:
        return False
    offsets.update(zip(decoded, zip(decoded, zip(repeat(got[0]), fields), log_offsets, strict=True), strict=True))
    return True


def _committed(value: tuple[OffsetKey, tuple[int, dict[str, Any]] | bytes, int], name: str) -> CommittedOffset:
    key, fields, log_offset = value
    version, v = _offset_commit(fields) if fields.__class__ is bytes else fields  # bytes: _bulk_commits's
    return CommittedOffset(key.group, key.topic, key.partition, v["offset"], v["commit_timestamp"], v["metadata"],
                           v.get("leader_epoch"), v.get("expire_timestamp"), version, name, log_offset)


def _put(offsets: dict[OffsetKey, Any], key: OffsetKey, value: Any) -> None:
    if value is None:
        offsets.pop(key, None)
    else:
        offsets[key] = value


def consumer_offsets(paths: Iterable[str | Path], *, with_lag: bool = True,
                     progress: Callable[[int], None] | None = None,
                     replay: Callable[[Path, str], Replay] | None = None,
                     ) -> Iterator[CommittedOffset | GroupState | Finding]:
    """Every group and latest committed offset in the ``__consumer_offsets-*`` partitions under ``paths``.

    With ``with_lag``, each commit of a partition whose data partition dir is in the same log dir as the
    ``__consumer_offsets`` partition holding the commit gets that partition's log start, LEO and high watermark
    (``replication-offset-checkpoint``), and a commit beyond the LEO or below the log start is a finding. Commits
    are never compared with another log dir's partitions: another broker's, or the same broker's on another day.

    ``progress`` is told the bytes of the segments as they are read (the ``__consumer_offsets`` partitions', then
    the loads of the data partitions for lag; a data partition of their log dirs no commit names is counted as
    skipped once the commits are known), :func:`consumer_offsets_bytes` in all. ``replay(log dir, partition)``,
    when given, gives each ``__consumer_offsets`` partition's ``replay`` (:func:`consumer_offsets_partition`).
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
            name = f"{part.topic}-{part.partition}"
            results.extend((home, r) for r in (*part.findings, *consumer_offsets_partition(
                part.files, name, progress, replay=None if replay is None else replay(home, name))))
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
    total = sum(log_bytes(part.files) for part in parts if part.topic == OFFSETS_TOPIC)
    if with_lag:
        candidates = {}
        for part in parts:
            if part.topic != OFFSETS_TOPIC:
                candidates.setdefault((part.logdir_path.resolve(), part.topic, part.partition), part)
        total += sum(segment_bytes(part.files) for key, part in candidates.items() if key[0] in homes)
    return total




def offsets_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__consumer_offsets`` record, decoded on its own (no replay): ``kind`` (``offset_commit``,
    ``group_metadata``, or the record's name in snake_case for the KIP-848 consumer, share and streams group
    records), the classic records' key and value fields (none for a tombstone, which deletes the key when the
    coordinator loads the partition), then ``record``, ``key`` and ``value``: every field by Kafka's schemas
    (``GroupCoordinatorRecordSerde``; :func:`~kafkatool.internal.common.schema_record`)."""
    if key is None:
        raise Undecodable("no key")
    k = decode_offsets_key(key)
    schema = common.schema_record(ks.GROUP_COORDINATOR, OFFSETS_TOPIC, key, value)
    version = schema.pop("value_version")
    out: dict[str, Any] = {"key_version": parse(it.CoordinatorKeyVersion, key[:2], "key version").version,
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
        out["kind"] = ks.snake_case(schema["record"])
        if value is not None:
            out["value_version"] = version
    out.pop("version", None)
    out.update(schema)
    return out
