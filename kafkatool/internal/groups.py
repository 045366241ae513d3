"""The groups of ``__consumer_offsets`` as the group coordinator rebuilds them when it loads a partition
(``GroupCoordinatorShard.replay``: ``GroupMetadataManager.replay`` for each group record type,
``OffsetMetadataManager.replay`` for the commits, which :mod:`.offsets` replays): classic, consumer (KIP-848),
share (KIP-932) and streams (KIP-1071) groups, their members, assignments and committed offsets."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from construct import ConstructError

from ..findings import finding
from ..formats import kafka_schema as ks
from ..model import Batch, CappedFindings, Finding, Record
from ..walk import partition_dirs
from .common import Undecodable
from .metadata import metadata_bytes
from .offsets import (
    OFFSETS_TOPIC,
    CommittedOffset,
    GroupKey,
    GroupState,
    OffsetKey,
    consumer_offsets,
    consumer_offsets_bytes,
    decode_offsets_key,
)
from .share_state import topic_names

# ``ConsumerGroupMember.LEAVE_GROUP_MEMBER_EPOCH``: the epoch a member's current-assignment tombstone leaves it at.
LEAVE_GROUP_MEMBER_EPOCH = -1
# ``MemberState`` (``modern/MemberState.java``) by its byte.
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
GROUP_TYPES = ("classic", "consumer", "share", "streams")
# Record name -> (group type, what the record is of the group), for the KIP-848 / KIP-932 / KIP-1071 records.
_MODERN = {f"{prefix}{part}": (kind, part) for kind, prefix in (("consumer", "ConsumerGroup"), ("share", "ShareGroup"),
                                                                 ("streams", "StreamsGroup"))
           for part in ("Metadata", "MemberMetadata", "TargetAssignmentMember", "TargetAssignmentMetadata",
                        "CurrentMemberAssignment", "PartitionMetadata", "RegularExpression", "Topology",
                        "StatePartitionMetadata", "TargetAssignmentResolvedTopicIds")}


class _Inconsistent(Exception):
    """A record the coordinator refuses with an ``IllegalStateException`` (its load of the partition fails)."""


@dataclass
class _Group:
    """One group as ``GroupMetadataManager`` holds it: ``ClassicGroup``, ``ConsumerGroup``, ``ShareGroup`` or
    ``StreamsGroup`` (their persisted state only: timers and in-flight requests are not in the log)."""

    group_id: str
    group_type: str
    coordinator_partition: str
    epoch: int = 0
    assignment_epoch: int = -1
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: dict[str, dict[str, Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    simple: bool = False   # a classic group created by an offset commit alone (no GroupMetadata record)
    log_offset: int = -1   # of the last record that changed it
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class GroupView:
    """A group's state at the end of its ``__consumer_offsets`` partition, with its committed offsets."""

    group: _Group
    committed: tuple[CommittedOffset, ...]
    names: dict[str, str]     # topic id -> name, from __cluster_metadata (empty without it)
    deleted: bool = False

    def as_dict(self) -> dict[str, Any]:
        g = self.group
        out: dict[str, Any] = {
            "type": "group_state", "group_id": g.group_id, "group_type": g.group_type, "epoch": g.epoch,
            "state": _state(g, self.deleted),
            "members": [_member(g, m, self.names) for _id, m in sorted(g.members.items())],
            "committed_offsets": {f"{c.topic}-{c.partition}": c.offset for c in self.committed},
            "lag": {f"{c.topic}-{c.partition}": c.lag for c in self.committed if c.lag is not None},
        }
        if g.group_type != "classic":
            out["assignment_epoch"] = g.assignment_epoch
        out.update(g.extra)
        if self.names and g.group_type in ("consumer", "share"):
            ids = {t for m in out["members"] for key in ("assigned_partitions", "partitions_pending_revocation",
                                                         "target_assignment") for t in m.get(key) or {}}
            out["topic_names"] = {t: self.names[t] for t in sorted(ids) if t in self.names}
        out.update(coordinator_partition=g.coordinator_partition, log_offset=g.log_offset, timestamp=g.timestamp,
                   simple=g.simple, deleted=self.deleted)
        return out


def _state(g: _Group, deleted: bool) -> str:
    """The group's state as its class computes it after a replay: ``ConsumerGroup.maybeUpdateGroupState`` (Empty;
    Assigning while the group epoch is ahead of the target assignment's; Reconciling until every member is STABLE at
    that epoch; Stable), ``StreamsGroup`` (NotReady without a topology), ``ShareGroup`` (Empty or Stable),
    ``ClassicGroup`` (loaded Empty without members, else Stable)."""
    if deleted:
        return "Dead"
    if not g.members:
        return "Empty"
    if g.group_type == "classic" or g.group_type == "share":
        return "Stable"
    if g.group_type == "streams" and "topology" not in g.extra:
        return "NotReady"
    if g.epoch > g.assignment_epoch:
        return "Assigning"
    if any(m.get("state") != "STABLE" or m.get("member_epoch") != g.assignment_epoch for m in g.members.values()):
        return "Reconciling"
    return "Stable"


def _member(g: _Group, m: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    out = {"member_id": m["member_id"], "member_epoch": m.get("member_epoch", 0), "client_id": m.get("client_id"),
           "subscribed_topic_names": m.get("subscribed_topic_names"), "assigned_partitions": m.get("assigned", {})}
    out.update((k, v) for k, v in m.items() if k not in out and k != "assigned")
    target = g.target.get(m["member_id"])
    if target is not None:
        out["target_assignment"] = target["assigned"]
        out.update((k, v) for k, v in target.items() if k != "assigned")
    if names and g.group_type in ("consumer", "share"):
        out["assigned_topic_partitions"] = {names.get(t, t): ps for t, ps in sorted(out["assigned_partitions"].items())}
    return out


def _by_id(entries: list[dict[str, Any]] | None, key: str = "topic_id") -> dict[str, list[int]]:
    """A record's ``[{topic_id|subtopology_id, partitions}]`` as ``{id: sorted partitions}``
    (``Assignment.fromRecord``, ``TasksTuple.fromTargetAssignmentRecord``)."""
    return {e[key]: sorted(e["partitions"]) for e in sorted(entries or (), key=lambda e: e[key])}


# --- the consumer protocol of classic groups -----------------------------------------------------------------


def consumer_protocol(name: str, data: str | None) -> dict[str, Any] | None:
    """A classic member's subscription or assignment bytes (base64, as the schemas give them) read as
    ``ConsumerProtocol.deserializeSubscription`` / ``deserializeAssignment`` read them: an int16 version, then
    ``ConsumerProtocol{name}`` at that version, a version newer than the schema's read as its newest
    (``checkSubscriptionVersion``), bytes after it ignored. None where empty or unreadable."""
    raw = base64.b64decode(data) if data else b""
    if len(raw) < 2:
        return None
    version = int.from_bytes(raw[:2], "big", signed=True)
    versions = ks.valid_versions(f"ConsumerProtocol{name}")
    if version < versions.start:
        return None
    try:
        value = ks.message(f"ConsumerProtocol{name}", min(version, versions.stop - 1)).parse(raw[2:])
    except ConstructError:
        return None
    return {k: v for k, v in value.items() if not k.startswith("_")}


def _classic_member(protocol_type: str | None, m: dict[str, Any], generation: int) -> dict[str, Any]:
    """A ``GroupMetadataValue`` member as ``ClassicGroupMember``; for protocol type ``consumer`` its subscribed
    topics and assigned partitions (by topic name: the consumer protocol carries names) decoded."""
    out: dict[str, Any] = {"member_id": m["member_id"], "member_epoch": generation, "client_id": m["client_id"],
                           "client_host": m["client_host"], "group_instance_id": m.get("group_instance_id"),
                           "session_timeout_ms": m["session_timeout"],
                           # GroupMetadataManager.replay: a rebalance timeout of -1 (v0 values) is the session's
                           "rebalance_timeout_ms": m["session_timeout"] if m.get("rebalance_timeout", -1) == -1
                           else m["rebalance_timeout"],
                           "subscribed_topic_names": None, "assigned": {}}
    if protocol_type == "consumer":
        sub = consumer_protocol("Subscription", m.get("subscription"))
        asg = consumer_protocol("Assignment", m.get("assignment"))
        if sub is not None:
            out["subscribed_topic_names"] = sorted(sub["topics"])
            if sub.get("rack_id") is not None:
                out["rack_id"] = sub["rack_id"]
            if sub.get("owned_partitions"):
                out["owned_partitions"] = _by_id(sub["owned_partitions"], "topic")
        if asg is not None:
            out["assigned"] = _by_id(asg["assigned_partitions"], "topic")
    return out


# --- the replay ------------------------------------------------------------------------------------------------


class GroupsReplay:
    """The groups of one ``__consumer_offsets`` partition, replayed record by record (told by the offsets engine's
    pass over it: :func:`kafkatool.internal.offsets.consumer_offsets_partition`'s ``replay``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.groups: dict[str, _Group] = {}
        self.deleted: dict[str, _Group] = {}   # removed by tombstones (removeGroup), as they were last
        self.findings = CappedFindings()  # a fault repeated per record kept 100 times, counted

    def __call__(self, display: str, batch: Batch, rec: Record, key: Any) -> None:
        self.record(display, batch.position, rec.offset, rec.timestamp, rec.key, rec.value, key)

    def record(self, display: str, position: int | None, offset: int, timestamp: int, key_bytes: bytes | None,
               value: bytes | None, key: Any = None) -> None:
        """One record of the partition, in offset order (not a control record); ``key``: ``key_bytes`` decoded by
        :func:`~kafkatool.internal.offsets.decode_offsets_key` (decoded here when not given)."""
        if key_bytes is None:
            return
        if key is None:
            try:
                key = decode_offsets_key(key_bytes)
            except Undecodable:
                return
        at = (offset, timestamp)
        if isinstance(key, OffsetKey):
            # OffsetMetadataManager.replay: a commit to a group that does not exist creates a simple classic group
            if value is not None and key.group not in self.groups:
                self._create(key.group, "classic", at).simple = True
            return
        try:
            r = ks.coordinator_record(ks.GROUP_COORDINATOR, key_bytes, value)
        except ConstructError:
            return  # the offsets engine reports it (coordinator-record-newer, offsets-undecodable)
        try:
            if isinstance(key, GroupKey):
                self._classic(key.group, r["value"], at)
            elif r["record"] in _MODERN:
                kind, part = _MODERN[r["record"]]
                self._modern(kind, part, r["key"], r["value"], at)
        except _Inconsistent as exc:
            self.findings.append(finding("group-replay-inconsistent", display, position,
                                         f"record at offset {offset} ({r['record']}): {exc}"))

    def _create(self, group_id: str, kind: str, at: tuple[int, int]) -> _Group:
        g = self.groups[group_id] = _Group(group_id, kind, self.name)
        self.deleted.pop(group_id, None)
        self._touch(g, at)
        return g

    @staticmethod
    def _touch(g: _Group, at: tuple[int, int]) -> None:
        g.log_offset, g.timestamp = at

    def _remove(self, group_id: str, at: tuple[int, int]) -> None:
        """``GroupMetadataManager.removeGroup``: the group is gone (its offsets are deleted by their own tombstones)."""
        g = self.groups.pop(group_id, None)
        if g is not None and not g.simple:
            self._touch(g, at)
            self.deleted[group_id] = g

    def _classic(self, group_id: str, value: dict[str, Any] | None, at: tuple[int, int]) -> None:
        """``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``: a tombstone removes the group
        (whatever its type), a value replaces it with a ``ClassicGroup`` of the value's generation and members."""
        if value is None:
            self._remove(group_id, at)
            return
        g = self._create(group_id, "classic", at)
        g.epoch = value["generation"]
        ptype = value["protocol_type"] or None
        g.extra = {"protocol_type": ptype, "protocol": value["protocol"], "leader": value["leader"]}
        if value.get("current_state_timestamp", -1) != -1:
            g.extra["current_state_timestamp"] = value["current_state_timestamp"]
        for m in value["members"]:
            g.members[m["member_id"]] = _classic_member(ptype, m, g.epoch)

    def _group(self, group_id: str, kind: str, create: bool, at: tuple[int, int]) -> _Group | None:
        """``getOrMaybeCreatePersisted{Consumer,Share,Streams}Group``: None for a tombstone of a group that does
        not exist (ignored); a simple classic group is replaced; a group of another type is an
        ``IllegalStateException``."""
        g = self.groups.get(group_id)
        if g is None:
            return self._create(group_id, kind, at) if create else None
        if g.group_type == kind:
            self._touch(g, at)
            return g
        if g.group_type == "classic" and g.simple:
            return self._create(group_id, kind, at)
        raise _Inconsistent(f"group {group_id!r} is a {g.group_type} group, not a {kind} group")

    def _modern(self, kind: str, part: str, key: dict[str, Any], value: dict[str, Any] | None,
                at: tuple[int, int]) -> None:
        """``GroupMetadataManager.replay`` of the consumer, share and streams group records: each the same rule
        for the three types (``ModernGroup``), as in apache/kafka trunk at 0013464cf112 (2026; the share group's
        replays create the group on a value and ignore a tombstone of a group or member that does not exist, as the
        consumer group's)."""
        group_id = key["group_id"]
        g = self._group(group_id, kind, value is not None, at)
        if g is None:
            return
        member_id = key.get("member_id")
        if part == "Metadata":
            if value is not None:
                g.epoch = value["epoch"]
                g.extra.update((k, value[k]) for k in ("metadata_hash", "creation_time_ms", "validated_topology_epoch")
                               if k in value)
                return
            if g.members:
                raise _Inconsistent(f"a tombstone to delete group {group_id!r}, which still has {len(g.members)} "
                                   "members")
            if g.target and kind != "streams":  # (the streams group's replay does not check its target)
                raise _Inconsistent(f"a tombstone to delete group {group_id!r}, whose target assignment still has "
                                   f"{len(g.target)} members")
            if g.assignment_epoch != -1:
                raise _Inconsistent(f"a tombstone to delete group {group_id!r} before its target assignment "
                                   "metadata's tombstone")
            self._remove(group_id, at)
        elif part == "MemberMetadata":
            if value is not None:
                m = g.members.setdefault(member_id, {"member_id": member_id, "member_epoch": 0,
                                                     "previous_member_epoch": 0, "assigned": {}})
                m.update((k, v) for k, v in value.items() if not k.startswith("_") and k != "classic_member_metadata")
                return
            m = g.members.get(member_id)
            if m is None:
                return
            if m.get("member_epoch") != LEAVE_GROUP_MEMBER_EPOCH:
                raise _Inconsistent(f"a tombstone to delete member {member_id!r} before its current assignment's "
                                   "tombstone")
            if member_id in g.target:
                raise _Inconsistent(f"a tombstone to delete member {member_id!r}, still in the target assignment")
            del g.members[member_id]
        elif part == "CurrentMemberAssignment":
            m = g.members.get(member_id)
            if value is None:
                if m is not None:  # ConsumerGroupMember.Builder: LEAVE_GROUP_MEMBER_EPOCH, nothing assigned
                    m.update(member_epoch=LEAVE_GROUP_MEMBER_EPOCH, previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                             assigned={})
                    for k in [k for k in m if k.endswith("pending_revocation")]:
                        m[k] = {}
                return
            if m is None:
                m = g.members[member_id] = {"member_id": member_id}
            m.update(member_epoch=value["member_epoch"], previous_member_epoch=value["previous_member_epoch"],
                     state=MEMBER_STATES.get(value["state"], f"UNKNOWN({value['state']})"))
            if kind == "streams":
                m["assigned"] = _by_id(value["active_tasks"], "subtopology_id")
                for k in ("standby_tasks", "warmup_tasks", "active_tasks_pending_revocation",
                          "standby_tasks_pending_revocation", "warmup_tasks_pending_revocation"):
                    m[k] = _by_id(value[k], "subtopology_id")
            else:
                m["assigned"] = _by_id(value["assigned_partitions"])
                if kind == "consumer":
                    m["partitions_pending_revocation"] = _by_id(value["partitions_pending_revocation"])
        elif part == "TargetAssignmentMember":
            if value is None:
                g.target.pop(member_id, None)
            elif kind == "streams":
                g.target[member_id] = {"assigned": _by_id(value["active_tasks"], "subtopology_id"),
                                       "target_standby_tasks": _by_id(value["standby_tasks"], "subtopology_id"),
                                       "target_warmup_tasks": _by_id(value["warmup_tasks"], "subtopology_id")}
            else:
                g.target[member_id] = {"assigned": _by_id(value["topic_partitions"])}
        elif part == "TargetAssignmentMetadata":
            if value is not None:
                g.assignment_epoch = value["assignment_epoch"]
            elif g.target:
                raise _Inconsistent(f"a tombstone to delete the target assignment of {group_id!r}, which still has "
                                   f"{len(g.target)} members")
            else:
                g.assignment_epoch = -1
        elif part == "RegularExpression":  # ConsumerGroup.updateResolvedRegularExpression
            regexes = g.extra.setdefault("resolved_regular_expressions", {})
            if value is None:
                regexes.pop(key["regular_expression"], None)
            else:
                regexes[key["regular_expression"]] = sorted(value["topics"])
        elif part == "Topology":  # StreamsGroup.setTopology (StreamsTopology.fromRecord)
            if value is None:
                g.extra.pop("topology", None)
            else:
                g.extra["topology"] = {"epoch": value["epoch"], "subtopologies": [
                    {k: v for k, v in s.items() if not k.startswith("_")} for s in value["subtopologies"]]}
        elif part in ("PartitionMetadata", "StatePartitionMetadata", "TargetAssignmentResolvedTopicIds"):
            name = ks.snake_case(part)
            if value is None:
                g.extra.pop(name, None)
            else:
                g.extra[name] = {k: v for k, v in value.items() if not k.startswith("_")}


def group_states(paths: Iterable[str | Path], *, with_lag: bool = True, deleted: bool = False,
                 progress: Callable[[int], None] | None = None, read: list[tuple[str, bool]] | None = None,
                 ) -> Iterator[GroupView | Finding]:
    """Every group the ``__consumer_offsets-*`` partitions under ``paths`` hold, as the coordinator loads them: the
    group records replayed by :class:`GroupsReplay` in the offsets engine's pass (:func:`consumer_offsets`, whose
    commits and lag each group gets), groups removed by tombstones only ``deleted``. Topic ids are named from the
    data partitions' ``partition.metadata`` and the ``__cluster_metadata`` in ``paths``
    (:func:`~kafkatool.internal.share_state.topic_names`). ``read``, when given, gets every group read (shown or not):
    its id and whether tombstones deleted it. Then the findings of both."""
    paths = list(paths)
    replays: list[GroupsReplay] = []

    def replay(home: Path, name: str) -> GroupsReplay:
        replays.append(GroupsReplay(name))
        return replays[-1]

    committed: dict[tuple[str, str], list[CommittedOffset]] = {}
    findings: list[Finding] = []
    for item in consumer_offsets(paths, with_lag=with_lag, progress=progress, replay=replay):
        if isinstance(item, CommittedOffset):
            committed.setdefault((item.coordinator_partition, item.group), []).append(item)
        elif isinstance(item, Finding):
            findings.append(item)
        elif isinstance(item, GroupState):
            pass  # the classic groups are replayed by GroupsReplay with their consumer protocol decoded
    if any(r.groups or r.deleted for r in replays):  # offsets-empty counts commits and classic groups only
        findings = [f for f in findings if f.code != "offsets-empty"]
    names = topic_names(list(partition_dirs(paths)), paths, progress)
    views = []
    for r in replays:
        for g in r.groups.values():
            views.append(GroupView(g, tuple(committed.get((r.name, g.group_id), ())), names))
        if deleted:
            views.extend(GroupView(g, tuple(committed.get((r.name, g.group_id), ())), names, deleted=True)
                         for g in r.deleted.values())
        if read is not None:
            read.extend([*((g, False) for g in r.groups), *((g, True) for g in r.deleted)])
        findings.extend([*r.findings, *r.findings.summary()])
    yield from sorted(views, key=lambda v: (v.group.group_id, v.group.coordinator_partition, v.deleted))
    yield from findings


def group_states_bytes(paths: Iterable[str | Path], *, with_lag: bool = True) -> int:
    """What :func:`group_states` tells its ``progress`` in all: :func:`consumer_offsets_bytes`, then the
    ``__cluster_metadata`` read for topic names."""
    paths = list(paths)
    return consumer_offsets_bytes(paths, with_lag=with_lag) + metadata_bytes(paths)


__all__ = ["GROUP_TYPES", "OFFSETS_TOPIC", "GroupView", "GroupsReplay", "group_states", "group_states_bytes"]
