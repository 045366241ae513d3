"""``__share_group_state`` (KIP-932): share-partition state records as ``ShareCoordinatorRecordSerde`` reads
them."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..filetypes import file_size
from ..findings import finding
from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from ..loader import segment_bytes
from ..model import CappedFindings, Finding
from ..replicas import open_replica
from ..smallfiles import read_topic_id
from ..walk import PartitionDir, partition_dirs, partition_dirs_and_findings
from . import common
from .common import Undecodable, kafka_uuid, nullable, parse, schema_record, tagged, value_version
from .metadata import METADATA_TOPIC, metadata_file, metadata_sources

SHARE_STATE_TOPIC = "__share_group_state"


def share_state_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__share_group_state`` record (KIP-932), decoded on its own as ``ShareCoordinatorRecordSerde`` reads
    it: ``kind`` (``share_snapshot``: the whole state of one share-partition, ``share_update``: a delta on the
    latest snapshot), the key (group, topic id as Kafka prints a Uuid, partition) and, unless a tombstone (the
    share-partition's state deleted), the value's epochs, start offset and state batches (delivery state by
    name). ``layout`` says which Kafka release's layout of value version 0 the bytes fit (see
    ``formats/internal_topics.py``). Then ``record``, ``key`` and ``value``: every field by Kafka's schemas
    (``ShareCoordinatorRecordSerde``; :func:`~kafkatool.internal.common.schema_record`), which are the 4.1+ layout:
    a value Kafka 4.0 wrote is ``value`` None there."""
    if key is None:
        raise Undecodable("no key (a share-group state record always has one)")
    rtype = parse(it.CoordinatorKeyVersion, key[:2], "record type").version
    name = it.SHARE_RECORD_NAMES.get(rtype)
    if name is None:
        schema_record(ks.SHARE_COORDINATOR, SHARE_STATE_TOPIC, key, value)  # a type newer than the schemas?
        raise Undecodable(f"unknown record type {rtype} (0 ShareSnapshot, 1 ShareUpdate)")
    k = parse(it.ShareStateKey, key, f"{name}Key")
    out: dict[str, Any] = {"kind": "share_snapshot" if rtype == it.SHARE_SNAPSHOT else "share_update",
                           "record_type": rtype, "group": nullable(k.group_id), "topic_id": kafka_uuid(k.topic_id),
                           "partition": k.partition, "tombstone": value is None}
    if value is not None:
        out.update(_share_state_value(rtype, f"{name}Value", value))
    schema = schema_record(ks.SHARE_COORDINATOR, SHARE_STATE_TOPIC, key, None if out.get("layout") == "4.0" else value)
    del schema["value_version"]  # the shorthand's
    out.update(schema)
    return out


def _share_state_value(rtype: int, name: str, value: bytes, named: bool = True) -> dict[str, Any]:
    """A value's fields; its batches' delivery states by name, or (``named`` False) as their ids."""
    version = value_version(value, it.SHARE_STATE_VALUE_VERSIONS, name)
    reasons = []
    for layout in it.SHARE_STATE_LAYOUTS:
        try:
            v = parse(it.share_state_value(rtype, layout), value, f"{name} v{version} as Kafka {layout} writes it")
        except Undecodable as exc:
            reasons.append(str(exc))
            continue
        if v.state_batches.entries is None:  # as Kafka's generated reader refuses it
            reasons.append(f"{name} v{version} as Kafka {layout} writes it: the non-nullable StateBatches is null")
            continue
        tags = tagged(v.tagged_fields, it.SHARE_STATE_VALUE_TAGS, name)
        return {
            "value_version": version, "layout": layout, "snapshot_epoch": v.snapshot_epoch,
            **({"state_epoch": v.state_epoch} if "state_epoch" in v else {}),
            "leader_epoch": v.leader_epoch, "start_offset": v.start_offset,
            "delivery_complete_count": tags.get("delivery_complete_count"),
            **({"create_timestamp": v.create_timestamp, "write_timestamp": v.write_timestamp}
               if "create_timestamp" in v else {}),
            "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                               "delivery_state": delivery_state_name(b.delivery_state) if named
                               else b.delivery_state,
                               "delivery_count": b.delivery_count} for b in v.state_batches.entries],
        }
    raise Undecodable("; ".join(reasons))


# --- the share coordinator's replay ----------------------------------------------------------------------------

# A hostile record's batches could only make the merge below spin where Kafka's would too; a bound keeps it finite
# (a legitimate merge takes a few steps per batch).
MERGE_STEPS_PER_BATCH = 64


class StateBatch(NamedTuple):
    """``PersisterStateBatch``, ordered as its ``compareTo`` orders it: first offset, last offset, delivery count,
    delivery state (the TreeSet of ``PersisterStateBatchCombiner``)."""

    first_offset: int
    last_offset: int
    delivery_count: int
    delivery_state: int

    def as_dict(self) -> dict[str, Any]:
        return {"first_offset": self.first_offset, "last_offset": self.last_offset,
                "delivery_state": delivery_state_name(self.delivery_state), "delivery_count": self.delivery_count}


def delivery_state_name(state: int) -> str:
    """A persisted ``RecordState`` id by name, as the decoder names it."""
    return it.DELIVERY_STATES.get(state, f"unknown({state})")


def _priority(b: StateBatch) -> tuple[int, int]:
    """``PersisterStateBatchCombiner.compareBatchDeliveryInfo``: the more deliveries wins, then the higher state
    (Acked and Archived, terminal, over Available)."""
    return b.delivery_count, b.delivery_state


def combine_state_batches(so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
                          ) -> list[StateBatch]:
    """``PersisterStateBatchCombiner.combineStateBatches``: the batches so far and the new ones as one list without
    overlaps. ``pruneBatches``: unless ``start_offset`` is -1, a batch ending below it is dropped and one it cuts
    starts at it. ``mergeBatches``: fewer than two as they are; else, in the order of :class:`StateBatch` (equal
    batches once), the first pair that overlaps, or touches with the same delivery count and state, is resolved
    (same count and state: one batch over both; else the one of higher :func:`_priority` keeps the offsets they
    share and the other what is left of it), until no pair does. Not "the newer wins": an update whose batch has
    fewer deliveries than the state's loses where they overlap, as in Kafka. :class:`Undecodable` (the record cannot
    be applied) past :data:`MERGE_STEPS_PER_BATCH` steps a batch (hostile batches only)."""
    batches = [*so_far, *new]
    if start_offset != -1:
        batches = [b if b.first_offset >= start_offset else b._replace(first_offset=start_offset)
                   for b in batches if b.last_offset >= start_offset]
    if len(batches) < 2:
        return batches
    heap = sorted(set(batches))
    members = set(heap)
    final: list[StateBatch] = []
    steps = MERGE_STEPS_PER_BATCH * len(heap) + MERGE_STEPS_PER_BATCH

    def add(b: StateBatch) -> None:
        if b not in members:  # a TreeSet: an equal batch is already there
            members.add(b)
            heapq.heappush(heap, b)

    # getMergeCandidatePair: the batches before the first mergeable pair are final (none of what a merge adds can
    # start before the pair's first), so the pair is always the two smallest left.
    while len(heap) >= 2:
        steps -= 1
        if steps < 0:
            raise Undecodable(f"state batches that do not merge in {MERGE_STEPS_PER_BATCH} steps a batch")
        prev = heapq.heappop(heap)
        members.discard(prev)
        cand = heap[0]
        if not (cand.first_offset <= prev.last_offset
                or (prev.last_offset + 1 == cand.first_offset and _priority(prev) == _priority(cand))):
            final.append(prev)
            continue
        heapq.heappop(heap)
        members.discard(cand)
        for b in _resolve(prev, cand):
            add(b)
    final.extend(heap)
    return final


def _resolve(prev: StateBatch, cand: StateBatch) -> list[StateBatch]:
    """One step of ``PersisterStateBatchCombiner.mergeBatches`` on a pair (``prev`` first by the order):
    ``handleSameStateMerge``, else ``handleDiffStateOverlap`` and its cases."""
    if _priority(cand) == _priority(prev):
        return [prev._replace(last_offset=max(cand.last_offset, prev.last_offset))]
    cand_wins = _priority(cand) >= _priority(prev)  # compareBatchDeliveryInfo(candidate, prev) >= 0
    if cand.first_offset == prev.first_offset:  # handleDiffStateOverlapFirstOffsetAligned
        if cand.last_offset == prev.last_offset or cand_wins:
            return [cand]
        return [prev, cand._replace(first_offset=prev.last_offset + 1)]
    head = prev._replace(last_offset=cand.first_offset - 1)
    if cand.last_offset < prev.last_offset:  # handleDiffStateOverlapPrevSwallowsCandidate
        return [head, cand, prev._replace(first_offset=cand.last_offset + 1)] if cand_wins else [prev]
    if cand.last_offset == prev.last_offset:  # handleDiffStateOverlapLastOffsetAligned
        return [head, cand] if cand_wins else [prev]
    # handleDiffStateOverlapCandidateOffsetsLarger
    return [head, cand] if cand_wins else [prev, cand._replace(first_offset=prev.last_offset + 1)]


@dataclass(frozen=True, slots=True)
class SharePartitionState:
    """A share-partition's state as the share coordinator holds it once its ``__share_group_state`` partition is
    loaded (``ShareCoordinatorShard.shareStateMap``, a ``ShareGroupOffset``), where it was last written, and the
    data partition's log start and end when that partition is in the share-state partition's log dir."""

    group_id: str
    topic_id: str
    partition: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    snapshot_epoch: int
    delivery_complete_count: int | None
    coordinator_partition: str
    log_offset: int
    topic: str | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "share_partition_state", "group_id": self.group_id, "topic_id": self.topic_id,
            "partition": self.partition, "state_epoch": self.state_epoch, "leader_epoch": self.leader_epoch,
            "start_offset": self.start_offset, "state_batches": [b.as_dict() for b in self.state_batches],
            "topic": self.topic, "snapshot_epoch": self.snapshot_epoch,
            "delivery_complete_count": self.delivery_complete_count,
            "coordinator_partition": self.coordinator_partition, "log_offset": self.log_offset,
            "log_start_offset": self.log_start_offset, "log_end_offset": self.log_end_offset,
        }


def _replay_value(rtype: int, value: bytes) -> tuple[dict[str, Any], list[StateBatch]]:
    v = _share_state_value(rtype, f"{it.SHARE_RECORD_NAMES[rtype]}Value", value, named=False)
    return v, [StateBatch(b["first_offset"], b["last_offset"], b["delivery_count"], b["delivery_state"])
               for b in v["state_batches"]]


def replay_share_record(state: dict[tuple[str, str, int], SharePartitionState], key: tuple[str, str, int],
                        rtype: int, value: dict[str, Any] | None, batches: list[StateBatch], name: str,
                        offset: int) -> None:
    """One record replayed into ``state`` (key: group, topic id, partition) as ``ShareCoordinatorShard.replay``
    does (:func:`share_state_partition` says how); ``value`` the value's fields (None: a tombstone), ``batches``
    its state batches. :class:`Undecodable` for a ShareUpdate tombstone or batches that do not merge."""
    if value is None:
        if rtype == it.SHARE_UPDATE:
            raise Undecodable("a ShareUpdate tombstone: ShareCoordinatorShard.handleShareUpdate cannot replay it "
                              "(the coordinator fails to load the partition)")
        state.pop(key, None)
        return
    old = state.get(key)
    if rtype == it.SHARE_SNAPSHOT or old is None:
        state[key] = SharePartitionState(
            *key, value.get("state_epoch", -1) if rtype == it.SHARE_SNAPSHOT else -1, value["leader_epoch"],
            value["start_offset"], tuple(batches), value["snapshot_epoch"], value["delivery_complete_count"], name,
            offset)
        return
    start = old.start_offset if value["start_offset"] == -1 else value["start_offset"]
    complete = value["delivery_complete_count"]
    state[key] = SharePartitionState(
        *key, old.state_epoch, old.leader_epoch if value["leader_epoch"] == -1 else value["leader_epoch"], start,
        tuple(combine_state_batches(old.state_batches, batches, start)), old.snapshot_epoch,
        old.delivery_complete_count if complete is None else complete, name, offset)


def share_state_partition(files: Iterable[tuple[Path, str]], name: str,
                          progress: Callable[[int], None] | None = None) -> Iterator[SharePartitionState | Finding]:
    """Replay one ``__share_group_state-N`` partition as ``ShareCoordinatorShard.replay`` loads it, per
    (group, topic id, partition) (``SharePartitionKey``):

    - ``handleShareSnapshot``: a ShareSnapshot replaces the state (``ShareGroupOffset.fromRecord``); a tombstone
      deletes it (Kafka 4.1+; one never writes a ShareUpdate tombstone: ``newShareStateTombstoneRecord``).
    - ``handleShareUpdate``: with no state, the update is the state (state epoch -1, its batches as they are);
      else ``merge``: a start offset or leader epoch of -1 keeps the state's, the snapshot and state epochs stay,
      and the batches are :func:`combine_state_batches` (the state's, the update's, the new start offset).

    ``progress`` is told the bytes read."""
    state: dict[tuple[str, str, int], SharePartitionState] = {}
    findings = CappedFindings()
    for display, batch, rec in common.partition_records(files, findings, progress):
        if rec.control_type is not None:
            continue
        try:
            if rec.key is None:
                raise Undecodable("no key (a share-group state record always has one)")
            rtype = parse(it.CoordinatorKeyVersion, rec.key[:2], "record type").version
            if rtype not in it.SHARE_RECORD_NAMES:
                raise Undecodable(f"unknown record type {rtype} (0 ShareSnapshot, 1 ShareUpdate)")
            k = parse(it.ShareStateKey, rec.key, f"{it.SHARE_RECORD_NAMES[rtype]}Key")
            key = (nullable(k.group_id) or "", kafka_uuid(k.topic_id), k.partition)
            if rec.value is None:
                replay_share_record(state, key, rtype, None, [], name, rec.offset)
                continue
            v, batches = _replay_value(rtype, rec.value)
            replay_share_record(state, key, rtype, v, batches, name, rec.offset)
        except Undecodable as exc:
            newer = None if rec.key is None else common.newer_record(
                ks.SHARE_COORDINATOR, SHARE_STATE_TOPIC, rec.key, rec.value, display, batch.position, rec.offset)
            findings.append(newer or finding("share-state-undecodable", display, batch.position,
                                             f"record at offset {rec.offset}: {exc}"))
    yield from sorted(state.values(), key=lambda s: (s.group_id, s.topic_id, s.partition))
    yield from findings
    yield from findings.summary()


def _topic_id(part: PartitionDir) -> str | None:
    """The topic id of a data partition dir (its ``partition.metadata``), None without one."""
    return next((read_topic_id(path) for path, _display in part.files if path.name == "partition.metadata"), None)


def topic_names(parts: Iterable[PartitionDir], paths: Iterable[str | Path],
                progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """Topic id -> name: from the data partitions' ``partition.metadata`` and, where ``__cluster_metadata`` is in
    ``paths``, its ``TopicRecord``s (the latest name of an id wins, as the controller's image holds it)."""
    names = {tid: part.topic for part in parts
             if part.topic not in (None, SHARE_STATE_TOPIC, METADATA_TOPIC) and (tid := _topic_id(part))}
    for group in metadata_sources(paths):
        for path, display, _kind in group:
            for item in metadata_file(path, display, progress):
                if not isinstance(item, Finding) and item[2][0] == it.TOPIC and item[2][3] is not None:
                    names[item[2][3]["topic_id"]] = item[2][3]["name"]
    return names


def share_states(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None, *,
                 groups: Iterable[str] = (), read_groups: set[str] | None = None
                 ) -> Iterator[SharePartitionState | Finding]:
    """Every share-partition's state in the ``__share_group_state-*`` partitions under ``paths``
    (:func:`share_state_partition`; only ``groups`` when given; ``read_groups`` is given every group read), with its
    topic's name (:func:`topic_names`) and, where the data partition (the same topic id and partition) is in the
    log dir of the share-state partition, its log start and end: a start offset beyond the log end is
    ``share-start-beyond-leo``, below the log start ``share-start-below-log-start``
    (``SharePartition.updateCacheAndOffsets`` moves it there). Another log dir's copy is never compared, as
    ``offsets`` does not. ``progress`` is told the bytes read, :func:`share_states_bytes` in all."""
    wanted = set(groups)
    read_groups = set() if read_groups is None else read_groups
    parts: list[PartitionDir] = []
    for part in partition_dirs_and_findings(paths):
        if isinstance(part, Finding):
            yield part
        else:
            parts.append(part)
    states: list[tuple[Path, SharePartitionState]] = []
    found: list[Finding] = []
    homes: set[Path] = set()
    for part in parts:
        if part.topic != SHARE_STATE_TOPIC:
            continue
        home = part.logdir_path.resolve()
        homes.add(home)
        found.extend(part.findings)
        for i in share_state_partition(part.files, f"{part.topic}-{part.partition}", progress):
            if isinstance(i, Finding):
                found.append(i)
            elif not read_groups.add(i.group_id) and (not wanted or i.group_id in wanted):
                states.append((home, i))
    if not homes:
        yield finding("share-state-none", ", ".join(str(p) for p in paths), None,
                      f"no {SHARE_STATE_TOPIC}-* partition dirs found")
        return
    names = topic_names(parts, paths, progress)
    wanted_data = {(home, s.topic_id, s.partition) for home, s in states}
    data: dict[tuple[Path, str | None, int | None], Any] = {}
    passed: set[tuple[Path, str | None, int | None]] = set()  # in their log dirs, not loaded (progress)
    for part in parts:
        if part.topic in (None, SHARE_STATE_TOPIC, METADATA_TOPIC) or part.state is not None:
            continue
        key = (part.logdir_path.resolve(), _topic_id(part), part.partition)
        if key in wanted_data and key not in data:
            data[key] = open_replica(part, part.display, progress=progress)
        elif progress is not None and key[0] in homes and key not in data and key not in passed:
            passed.add(key)
            progress(segment_bytes(part.files))
    for home, s in states:
        rep = data.get((home, s.topic_id, s.partition))
        s = replace(s, topic=names.get(s.topic_id), log_start_offset=None if rep is None else rep.log_start_offset,
                    log_end_offset=None if rep is None else rep.leo)
        yield s
        if rep is None:
            continue
        what = f"share group {s.group_id!r} on {s.topic or s.topic_id}-{s.partition} ({s.coordinator_partition})"
        if s.start_offset > rep.leo:
            found.append(finding("share-start-beyond-leo", rep.path, None,
                          f"{what}: start offset {s.start_offset} beyond the partition's log end offset {rep.leo}: "
                          "the log lost data (unclean election, deleted segments) or this is not the replica the "
                          "group consumed from"))
        elif s.start_offset < rep.log_start_offset:
            found.append(finding("share-start-below-log-start", rep.path, None,
                          f"{what}: start offset {s.start_offset} below the partition's log start offset "
                          f"{rep.log_start_offset}: the records between were deleted before the group delivered "
                          "them (the leader moves its start to the log start: SharePartition.updateCacheAndOffsets)"))
    yield from found


def share_states_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`share_states` tells its ``progress`` in all: the segments of the ``__share_group_state-*``
    partitions under ``paths``, the ``__cluster_metadata`` files it reads for names, and the data partitions in
    their log dirs (each once)."""
    parts = list(partition_dirs(paths))
    homes = {part.logdir_path.resolve() for part in parts if part.topic == SHARE_STATE_TOPIC}
    if not homes:
        return 0
    total = sum(common.log_bytes(part.files) for part in parts if part.topic == SHARE_STATE_TOPIC)
    total += sum(file_size(path) for group in metadata_sources(paths) for path, _display, _kind in group)
    data: dict[tuple[Path, str | None, int | None], PartitionDir] = {}
    for part in parts:
        if part.topic not in (None, SHARE_STATE_TOPIC, METADATA_TOPIC) and part.state is None \
                and part.logdir_path.resolve() in homes:
            data.setdefault((part.logdir_path.resolve(), _topic_id(part), part.partition), part)
    return total + sum(segment_bytes(part.files) for part in data.values())
