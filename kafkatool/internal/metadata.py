"""``__cluster_metadata`` (KRaft), replayed as the controller and brokers apply it (``MetadataDelta``,
``PartitionRegistration``): each partition's leadership timeline, min-ISR intervals, unclean elections."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from construct import ConstructError

from ..errors import InputIOError, UsageError
from ..fastparse import prefix_reader
from ..filetypes import FileKind, classify, file_size, read_small
from ..findings import finding
from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from ..formats import metadata_records as mr
from ..loader import load_partition
from ..locate import iso_time
from ..metadata_log import METADATA_TOPIC
from ..model import Batch, Finding, Record
from ..walk import partition_dirs_and_findings
from .common import (
    Undecodable,
    entries,
    file_records,
    kafka_uuid,
    log_segments,
    metadata_layout,
    nullable,
    parse,
    tagged,
)

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
    :func:`_unclean`). ``elr`` and ``last_known_elr`` are the eligible leader replicas (KIP-966) after the record,
    from the first record of the partition that names one on (None before, and on logs whose ELRs are all empty or
    absent, as before metadata version 4.0: their timelines print as they always did); a ``ClearElrRecord``
    empties both (``ReplicationControlManager.removeTopicElrs``: a merge, partition epoch + 1).
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
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        d = {"type": "partition_state", "source": self.source, "offset": self.offset,
             "snapshot_end_offset": self.snapshot_end_offset,
             "timestamp": self.timestamp, "record": self.record, "topic": self.topic,
             "topic_id": self.topic_id, "partition": self.partition, "leader": self.leader,
             "isr": list(self.isr), "replicas": list(self.replicas), "leader_epoch": self.leader_epoch,
             "partition_epoch": self.partition_epoch, "min_insync_replicas": self.min_insync_replicas,
             "min_isr_source": self.min_isr_source, "min_isr": self.min_isr, "election": self.election}
        if self.elr is not None:  # only where the records carry them: logs without ELR print as they always did
            d.update(elr=list(self.elr), last_known_elr=list(self.last_known_elr or ()))
        return d


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








_METADATA_FRAME: Callable[[bytes], Any] | None = None


def _metadata_frame(value: bytes) -> tuple[Any, int]:
    """A metadata record's frame (frame version, record type, version) and where its body begins."""
    global _METADATA_FRAME
    if _METADATA_FRAME is None:
        _METADATA_FRAME = prefix_reader(it.MetadataFrame)
    got = _METADATA_FRAME(value) if value.__class__ is bytes else None  # type: ignore[misc]
    return got if got is not None else (it.MetadataFrame.parse(value), _frame_len(value))


def api_message_frame(value: bytes) -> tuple[int, int, bytes]:
    """``AbstractApiMessageSerde.read``'s frame (``formats/metadata_records.py``): (record type, version, the
    message's bytes). A frame version other than 1 is refused, as Kafka refuses it; a frame that does not parse
    raises ``ConstructError`` or ``IndexError``."""
    frame, body_at = _metadata_frame(value)
    if frame["frame_version"] != it.METADATA_FRAME_VERSION:
        raise Undecodable(f"metadata frame version {frame['frame_version']} is not {it.METADATA_FRAME_VERSION}")
    return frame["record_type"], frame["version"], value[body_at:]


def decode_metadata_record(value: bytes) -> tuple[int, int, str, dict[str, Any] | None]:
    """(record type, version, name, fields or None when the type/version is newer than the schemas). The fields
    are the shorthand of the types ``formats/internal_topics.py`` declares (as ``metadata`` has always shown
    them), else every field of the schema (:func:`metadata_data`)."""
    record_type, version, body = api_message_frame(value)
    known = it.METADATA_RECORDS.get(record_type)
    if known is None or version not in known[1]:
        data = metadata_data(record_type, version, body)
        if data is not None:
            return record_type, version, data[0], data[1]
        name = mr.metadata_schemas().get(record_type) or it.METADATA_RECORD_NAMES.get(record_type,
                                                                                      f"type {record_type}")
        return record_type, version, name, None
    name = known[0]
    try:
        v = parse(metadata_layout(record_type, version), body, f"{name} v{version}")
    except Undecodable:
        if (record_type, version) != (it.PARTITION, 1):
            raise
        v = parse(it.PARTITION_RECORD_V1_PRERELEASE, body, f"{name} v1 (pre-release layout)")
    return record_type, version, name, _metadata_fields(record_type, v)


def metadata_data(record_type: int, version: int, body: bytes) -> tuple[str, dict[str, Any]] | None:
    """(schema name, every field) of a metadata record's message (``MetadataRecordSerde``: the schema of its type
    at its version, ``formats/schemas/metadata/``); None for a type or version newer than the schemas."""
    name = mr.metadata_schemas().get(record_type)
    if name is None or version not in ks.valid_versions(name):
        return None
    try:
        return name, ks.decode(name, version, body)
    except ConstructError as exc:
        raise Undecodable(f"{name} v{version}: {str(exc).splitlines()[-1]}") from exc


def unknown_metadata_record(record_type: int, version: int) -> str:
    """The words of a ``metadata-record-unknown`` finding: type (by name where a schema has it) and version."""
    name = mr.metadata_schemas().get(record_type)
    if name is None:
        return f"record type {record_type} version {version} is newer than the metadata schemas kafkatool holds"
    return (f"{name} version {version} is newer than the schema kafkatool holds "
            f"(versions {ks.schema(name)['validVersions']})")


def control_record(control_type: str, value: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """A KRaft control record of a metadata log, decoded as ``ControlRecordUtils`` reads it (its schema,
    ``formats.metadata_records.CONTROL_SCHEMAS``, at the version it calls current; the message's ``version`` is a
    field): ``({"record", "data"}, None)``, or ``(None, why)`` when it does not decode."""
    name = mr.CONTROL_SCHEMAS[control_type]
    if value is None:
        return None, f"{name}: null value"
    try:
        return {"record": name, "data": ks.decode(name, mr.CONTROL_VERSION, value)}, None
    except ConstructError as exc:
        return None, f"{name} v{mr.CONTROL_VERSION}: {str(exc).splitlines()[-1]}"


def _frame_len(value: bytes) -> int:
    pos = 0
    for _ in range(3):
        while value[pos] & 0x80:
            pos += 1
        pos += 1
    return pos




def _metadata_fields(record_type: int, v: Any) -> dict[str, Any]:
    if record_type == it.TOPIC:
        return {"name": nullable(v.name), "topic_id": kafka_uuid(v.topic_id)}
    if record_type == it.REMOVE_TOPIC:
        return {"topic_id": kafka_uuid(v.topic_id)}
    if record_type == it.FEATURE_LEVEL:
        return {"name": nullable(v.name), "feature_level": v.feature_level}
    if record_type == it.REGISTER_BROKER:
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch,
                "incarnation_id": kafka_uuid(v.incarnation_id),
                "endpoints": [f"{nullable(e.name)}://{nullable(e.host)}:{e.port}" for e in entries(v.endpoints) or ()],
                "rack": nullable(v.rack), "fenced": bool(v.fenced)}
    if record_type == it.PARTITION:
        d = {"partition_id": v.partition_id, "topic_id": kafka_uuid(v.topic_id), "replicas": entries(v.replicas),
             "isr": entries(v.isr), "leader": v.leader, "leader_epoch": v.leader_epoch,
             "partition_epoch": v.partition_epoch}
        d.update(tagged(v.tagged_fields, it.PARTITION_RECORD_TAGS, "PartitionRecord"))
        return d
    if record_type == it.CONFIG:
        return {"resource_type": it.CONFIG_RESOURCE_TYPES.get(v.resource_type, v.resource_type),
                "resource_name": nullable(v.resource_name), "name": nullable(v.name), "value": nullable(v.value)}
    if record_type in (it.UNREGISTER_BROKER, it.FENCE_BROKER, it.UNFENCE_BROKER):
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch}
    if record_type == it.PRODUCER_IDS:
        return {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch, "next_producer_id": v.next_producer_id}
    if record_type == it.BROKER_REGISTRATION_CHANGE:
        d = {"broker_id": v.broker_id, "broker_epoch": v.broker_epoch}
        tags = tagged(v.tagged_fields, it.BROKER_REGISTRATION_CHANGE_TAGS, "BrokerRegistrationChangeRecord")
        if "fenced" in tags:  # BrokerRegistrationFencingChange
            d["fenced"] = {1: "fence", -1: "unfence", 0: "unchanged"}.get(tags["fenced"], tags["fenced"])
        if "in_controlled_shutdown" in tags:  # BrokerRegistrationInControlledShutdownChange
            d["in_controlled_shutdown"] = {1: "yes", 0: "unchanged"}.get(tags["in_controlled_shutdown"],
                                                                         tags["in_controlled_shutdown"])
        if "log_dirs" in tags:
            d["log_dirs"] = tags["log_dirs"]
        return d
    if record_type == it.REGISTER_CONTROLLER:
        return {"controller_id": v.controller_id, "incarnation_id": kafka_uuid(v.incarnation_id),
                "zk_migration_ready": bool(v.zk_migration_ready),
                "endpoints": [f"{nullable(e.name)}://{nullable(e.host)}:{e.port}" for e in entries(v.endpoints) or ()],
                "features": {nullable(f.name): [f.min_supported_version, f.max_supported_version]
                             for f in entries(v.features) or ()}}
    if record_type == it.NO_OP:
        return {}
    if record_type == it.ZK_MIGRATION_STATE:
        return {"zk_migration_state": it.ZK_MIGRATION_STATES.get(v.zk_migration_state, v.zk_migration_state)}
    if record_type in (it.BEGIN_TRANSACTION, it.END_TRANSACTION, it.ABORT_TRANSACTION):
        text = tagged(v.tagged_fields, it.METADATA_TRANSACTION_TAGS, it.METADATA_RECORD_NAMES[record_type]).get("text")
        key = {it.BEGIN_TRANSACTION: "name", it.ABORT_TRANSACTION: "reason"}.get(record_type)
        return {key: nullable(text) if text is not None else None} if key else {}
    if record_type == it.PARTITION_CHANGE:
        d = {"partition_id": v.partition_id, "topic_id": kafka_uuid(v.topic_id)}
        d.update(tagged(v.tagged_fields, it.PARTITION_CHANGE_TAGS, "PartitionChangeRecord"))
        return d
    return {}


def metadata_file(path: Path, display: str, progress: Callable[[int], None] | None = None
                  ) -> Iterator[tuple[Batch, Record, tuple] | Finding]:
    """Every metadata record of one ``__cluster_metadata`` segment or KRaft snapshot, decoded:
    (batch, record, (type, version, name, fields or None)), or a finding for a record that does not parse.
    Control records (leader change, snapshot header/footer, voters) are skipped. ``progress`` is told the bytes
    read."""
    for item in file_records(path, display, progress):
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
            decoded = decode_metadata_record(rec.value)
        except (Undecodable, ConstructError, IndexError) as exc:
            yield finding("metadata-undecodable", display, batch.position,
                          f"record at offset {rec.offset}: {exc}")
            continue
        if decoded[3] is None:
            yield finding("metadata-record-unknown", display, batch.position,
                          f"record at offset {rec.offset}: {unknown_metadata_record(decoded[0], decoded[1])}; "
                          "not decoded, its change not replayed")
        yield batch, rec, decoded


def metadata_sources(paths: Iterable[str | Path], met: list[Finding] | None = None
                     ) -> list[list[tuple[Path, str, str]]]:
    """The files to replay, as (path, display, kind), one list per metadata log: a named file as it is (files
    named together from one dir are one log); for a ``__cluster_metadata-0`` dir, its latest KRaft snapshot and
    the log segments, as the controller loads them (the loader's ``KafkaMetadataLog``,
    :mod:`kafkatool.metadata_log`: a snapshot ahead of the log is where the log starts, no segment replayed). Each
    list is replayed on its own: two dirs are two clusters' (or two voters') logs, never one timeline. ``met`` is
    given what discovery met in those dirs and around them (a file it cannot read, a link loop, a dir it cannot
    list), and what keeps the controller from loading a dir (``kraft-snapshot-gap``: the history between the
    newest snapshot and the log start is in no file; the replay goes on over what there is)."""

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
        kraft = load_partition(part.path, part.display, files=part.files, logdir=part.logdir).metadata_log
        if kraft is None:  # the loader's step 8 is for every dir named __cluster_metadata-N: never here
            continue
        if met is not None:
            met.extend(f for f in kraft.findings if f.severity != "info")  # the deletions are verify's to say
        if kraft.latest is not None:
            group.append((kraft.latest.path, kraft.latest.display, "snapshot"))
        if kraft.truncated_to is None:
            group.extend((path, display, "log") for _b, path, display in log_segments(part.files))
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
        text = read_small(server_properties).decode("latin-1")  # a server.properties is a few KiB
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


_ELR_FIELDS = ("eligible_leader_replicas", "last_known_elr")  # KIP-966 tags of PartitionRecord, PartitionChangeRecord


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

    def step(key: tuple[str, int], s: dict[str, Any], offset: int | None, time: int, record: str,
             marker: str | None, election: str | None) -> PartitionState:
        """The row of partition ``key`` in state ``s`` after ``record``."""
        tid = key[0]
        needed, origin = policy.of(names.get(tid, tid), s["leader"])
        return PartitionState(display, offset, time, record, names.get(tid, tid), tid, key[1],
                              s["leader"], tuple(s["isr"] or ()), tuple(s["replicas"] or ()),
                              s["leader_epoch"], s["partition_epoch"],
                              None if kind == "log" else snapshot_end, needed, marker, origin, election,
                              tuple(s["elr"]) if s["with_elr"] else None,
                              tuple(s["last_known_elr"]) if s["with_elr"] else None)

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
                    s["last_known_elr"] = fields.get("last_known_elr") or []
                    s["with_elr"] = any(fields.get(t) for t in _ELR_FIELDS)
                    s["recovery"] = fields.get("leader_recovery_state", 0)
                else:
                    s = state.setdefault(key, {"leader": -1, "isr": [], "replicas": [], "leader_epoch": None,
                                               "partition_epoch": None, "elr": [], "last_known_elr": [],
                                               "with_elr": False, "recovery": 0})
                    if s["partition_epoch"] is not None:
                        s["partition_epoch"] += 1
                    if "leader" in fields and fields["leader"] != -2:
                        s["leader"] = fields["leader"]
                        if s["leader_epoch"] is not None:
                            s["leader_epoch"] += 1
                    for k, tag in (("isr", "isr"), ("replicas", "replicas"), ("elr", "eligible_leader_replicas"),
                                   ("last_known_elr", "last_known_elr"), ("recovery", "leader_recovery_state")):
                        if fields.get(tag) is not None:
                            s[k] = fields[tag]
                    s["with_elr"] = s["with_elr"] or any(fields.get(t) for t in _ELR_FIELDS)
                marker = check(key, offset, rec.timestamp)
                unclean = _unclean(before, s, fields)
                row = step(key, s, offset, rec.timestamp, name, marker, "unclean" if unclean else None)
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
                if rtype == it.CLEAR_ELR:
                    # TopicsDelta.replay(ClearElrRecord): one topic by name, or (name empty) every topic; each
                    # partition holding an ELR or last known ELR merges a change emptying both
                    wanted = fields.get("topic_name") or None
                    for key, s in state.items():
                        if (wanted is None or names.get(key[0]) == wanted) and (s["elr"] or s["last_known_elr"]):
                            s["elr"], s["last_known_elr"], s["with_elr"] = [], [], True
                            if s["partition_epoch"] is not None:
                                s["partition_epoch"] += 1
                            yield step(key, s, offset, rec.timestamp, name, check(key, offset, rec.timestamp), None)
            yield from closed
            closed.clear()
    yield from under.values()




def metadata_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__cluster_metadata`` record (or KRaft snapshot record): type, version, name and, unless the type
    or version is newer than the schemas (``decoded`` false, ``record`` null), its fields as JSON as ``metadata
    --all`` shows them, its schema name (``record``) and every field of the schema as JSON (``data``)."""
    if value is None:
        raise Undecodable("null value")
    try:
        rtype, version, name, fields = decode_metadata_record(value)
        body = api_message_frame(value)[2]
    except (ConstructError, IndexError) as exc:
        raise Undecodable(f"metadata record: {type(exc).__name__}: {exc}") from exc
    try:
        data = metadata_data(rtype, version, body)
    except Undecodable:
        data = None  # the shorthand read it and the schema does not: PartitionRecord v1 of early 2024 trunk builds
    return {"record_type": rtype, "version": version, "name": name, "decoded": fields is not None,
            "fields": None if fields is None else json.dumps(fields),
            "record": name if fields is not None else None, "data": None if data is None else json.dumps(data[1])}
