"""``__remote_log_metadata`` (tiered storage, KIP-405): the records ``TopicBasedRemoteLogMetadataManager`` writes,
one at a time, as ``RemoteLogMetadataSerde`` reads them (``storage/.../remote/metadata/storage/serialization/``).

The value is framed by ``BytesApiMessageSerde`` (``AbstractApiMessageSerde``: frame version, record type,
version; :mod:`formats.metadata_records`), then one of the ``storage`` schemas (``formats/schemas/storage/``):
``RemoteLogSegmentMetadataRecord`` (0), ``RemoteLogSegmentMetadataUpdateRecord`` (1),
``RemotePartitionDeleteMetadataRecord`` (2), ``RemoteLogSegmentMetadataSnapshotRecord`` (3). The key is null
(``ProducerManager.publishMessage``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from construct import ConstructError

from ..epochs import EpochCache
from ..findings import finding
from ..formats import kafka_schema as ks
from ..formats import metadata_records as mr
from ..loader import segment_bytes
from ..locate import iso_time
from ..model import CappedFindings, Finding
from ..replicas import open_replica
from ..smallfiles import read_topic_id
from ..walk import PartitionDir, partition_dirs, partition_dirs_and_findings
from . import common
from .common import Undecodable
from .metadata import api_message_frame
from .transactions import TxnClock

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


def remote_log_metadata_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__remote_log_metadata`` record: ``record_type``, ``version``, ``record`` (the schema name) and
    ``data`` (every field, as JSON); ``record`` and ``data`` null for a type or version newer than the schemas
    (``RemoteLogMetadataSerde`` refuses a type it does not know: :func:`unknown_record` words the finding)."""
    decoded = _decoded(value)
    return {**decoded, "data": None if decoded["data"] is None else json.dumps(decoded["data"])}


def _decoded(value: bytes | None) -> dict[str, Any]:
    """:func:`remote_log_metadata_record` with ``data`` as a dict."""
    if value is None:
        raise Undecodable("null value (a remote log metadata record always has one)")
    try:
        record_type, version, body = api_message_frame(value)
    except (ConstructError, IndexError) as exc:
        raise Undecodable(f"remote log metadata record: the frame does not parse ({type(exc).__name__})") from exc
    name = mr.remote_log_metadata_schemas().get(record_type)
    if name is None or version not in ks.valid_versions(name):
        return {"record_type": record_type, "version": version, "record": None, "data": None}
    try:
        data = ks.decode(name, version, body)
    except ConstructError as exc:
        raise Undecodable(f"{name} v{version}: {str(exc).splitlines()[-1]}") from exc
    return {"record_type": record_type, "version": version, "record": name, "data": data}


def unknown_record(decoded: dict[str, Any]) -> str | None:
    """Why a decoded record (:func:`remote_log_metadata_record`) has no fields: its type or version is newer than
    the schemas; None when it has them."""
    if decoded["record"] is not None:
        return None
    name = mr.remote_log_metadata_schemas().get(decoded["record_type"])
    if name is None:
        return (f"record type {decoded['record_type']} version {decoded['version']} is not one of the schemas' "
                f"({', '.join(f'{t} {n}' for t, n in sorted(mr.remote_log_metadata_schemas().items()))})")
    return (f"{name} version {decoded['version']} is newer than the schemas' "
            f"(versions {ks.schema(name)['validVersions']})")


# --- the remote log metadata manager's replay (tiered) ---------------------------------------------------------

# RemoteLogSegmentState by id; RemotePartitionDeleteState's DELETE_PARTITION_FINISHED (MARKED 0 and STARTED 1 keep
# the partition).
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = range(4)
DELETE_PARTITION_FINISHED = 2
# RemoteLogSegmentState.isValidTransition: source (None: no metadata yet) -> the targets it may go to (itself
# always: retries and failover write a state again).
_VALID_TRANSITIONS = {None: {COPY_STARTED}, COPY_STARTED: {COPY_STARTED, COPY_FINISHED, DELETE_STARTED},
                      COPY_FINISHED: {COPY_FINISHED, DELETE_STARTED}, DELETE_STARTED: {DELETE_STARTED, DELETE_FINISHED},
                      DELETE_FINISHED: {DELETE_FINISHED}}


def segment_state_name(state: int) -> str:
    return SEGMENT_STATES.get(state, f"unknown({state})")


@dataclass(frozen=True, slots=True)
class RemoteSegment:
    """A remote log segment as ``RemoteLogMetadataCache`` holds it (``RemoteLogSegmentMetadata``: the one first
    written, ``createWithUpdates`` by each update: state, broker, event time), where it was last written, and the
    user partition's topic name (from the records, else its ``partition.metadata``)."""

    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    state: int
    broker_id: int
    event_timestamp: int
    max_timestamp: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    segment_size: int
    topic: str | None
    metadata_partition: str
    log_offset: int
    source: str = ""  # the segment file it was last written in, for findings

    def as_dict(self) -> dict[str, Any]:
        return {"type": "remote_segment", "topic_id": self.topic_id, "topic": self.topic,
                "partition": self.partition, "segment_id": self.segment_id, "start_offset": self.start_offset,
                "end_offset": self.end_offset, "state": segment_state_name(self.state), "broker_id": self.broker_id,
                "event_timestamp": self.event_timestamp,
                "segment_leader_epochs": {str(e): o for e, o in self.segment_leader_epochs},
                "segment_size": self.segment_size, "max_timestamp": self.max_timestamp,
                "metadata_partition": self.metadata_partition, "log_offset": self.log_offset}


class RemoteLogMetadataState:
    """``RemotePartitionMetadataStore`` as the ``TopicBasedRemoteLogMetadataManager`` consumer builds it
    (``ConsumerTask`` hands each record to ``RemotePartitionMetadataEventHandler.handleRemoteLogMetadata``), for
    every user partition at once (an offline reader is assigned them all): per (topic id, partition), its
    segments by id (``RemoteLogMetadataCache.idToSegmentMetadata``), in the order first written."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], dict[str, RemoteSegment]] = {}
        self.newest = -1

    def replay(self, record: dict[str, Any], name: str, offset: int, where: str, pos: int | None
               ) -> Finding | None:
        """One decoded record (:func:`_decoded`) of ``__remote_log_metadata-N`` (``name``) at ``offset``; a
        finding for an event Kafka drops (``remote-segment-invalid-transition``) or refuses
        (``tiered-record-undecodable``: a snapshot record, which only ``RemoteLogMetadataSnapshotFile`` holds)."""
        rname, data = record["record"], record["data"]
        self.newest = max(self.newest, data.get("event_timestamp_ms", -1))
        if rname == "RemoteLogSegmentMetadataRecord":
            return self._segment(data, name, offset, where, pos)
        if rname == "RemoteLogSegmentMetadataUpdateRecord":
            return self._update(data, name, offset, where, pos)
        if rname == "RemotePartitionDeleteMetadataRecord":
            tip = data["topic_id_partition"]
            key = (tip["id"], tip["partition"])
            if data["remote_partition_delete_state"] == DELETE_PARTITION_FINISHED:
                # handleRemotePartitionDeleteMetadata: the partition's cache is dropped, segments and all.
                self.partitions.pop(key, None)
            return None
        return finding("tiered-record-undecodable", where, pos,
                       f"record at offset {offset}: {rname} in the topic: RemotePartitionMetadataEventHandler."
                       "handleRemoteLogMetadata does not take it (IllegalArgumentException); skipped")

    def _segment(self, data: dict[str, Any], name: str, offset: int, where: str, pos: int | None
                 ) -> Finding | None:
        """``handleRemoteLogSegmentMetadata`` -> ``RemoteLogMetadataCache.addCopyInProgressSegment``: only a
        COPY_SEGMENT_STARTED segment, by a valid transition from what the cache holds of its id."""
        sid = data["remote_log_segment_id"]
        tip = sid["topic_id_partition"]
        key = (tip["id"], tip["partition"])
        segments = self.partitions.setdefault(key, {})
        old = segments.get(sid["id"])
        target = data["remote_log_segment_state"]
        if target != COPY_STARTED or target not in _VALID_TRANSITIONS[None if old is None else old.state]:
            return _invalid(old, target, sid["id"], tip, offset, where, pos, "RemoteLogSegmentMetadataRecord")
        segments[sid["id"]] = RemoteSegment(
            tip["id"], tip["partition"], sid["id"], data["start_offset"], data["end_offset"], target,
            data["broker_id"], data["event_timestamp_ms"], data["max_timestamp_ms"],
            tuple(sorted((e["leader_epoch"], e["offset"]) for e in data["segment_leader_epochs"])),
            data["segment_size_in_bytes"], tip["name"] or None, name, offset, where)
        return None

    def _update(self, data: dict[str, Any], name: str, offset: int, where: str, pos: int | None
                ) -> Finding | None:
        """``RemoteLogMetadataCache.updateRemoteLogSegmentMetadata``: the segment's metadata with the update's
        state, broker and event time; DELETE_SEGMENT_FINISHED removes it. An update of an id the cache does not
        hold (``RemoteResourceNotFoundException``), to COPY_SEGMENT_STARTED, or an invalid transition is
        dropped."""
        sid = data["remote_log_segment_id"]
        tip = sid["topic_id_partition"]
        segments = self.partitions.get((tip["id"], tip["partition"]), {})
        old = segments.get(sid["id"])
        target = data["remote_log_segment_state"]
        if old is None or target == COPY_STARTED or target not in _VALID_TRANSITIONS[old.state]:
            return _invalid(old, target, sid["id"], tip, offset, where, pos, "RemoteLogSegmentMetadataUpdateRecord")
        if target == DELETE_FINISHED:
            del segments[sid["id"]]
        else:
            segments[sid["id"]] = replace(old, state=target, broker_id=data["broker_id"],
                                          event_timestamp=data["event_timestamp_ms"], metadata_partition=name,
                                          log_offset=offset, source=where)
        return None


def _invalid(old: RemoteSegment | None, target: int, segment_id: str, tip: dict[str, Any], offset: int, where: str,
             pos: int | None, record: str) -> Finding:
    source = "no metadata" if old is None else segment_state_name(old.state)
    return finding("remote-segment-invalid-transition", where, pos,
                   f"record at offset {offset}: {record} of segment {segment_id} ({tip['name'] or tip['id']}-"
                   f"{tip['partition']}): {source} -> {segment_state_name(target)} is not a transition "
                   "RemoteLogSegmentState.isValidTransition allows; Kafka drops the event, the segment stays "
                   f"{source}")


def remote_log_metadata_partition(files: Iterable[tuple[Path, str]], name: str, state: RemoteLogMetadataState,
                                  progress: Callable[[int], None] | None = None) -> Iterator[Finding]:
    """Replay one ``__remote_log_metadata-N`` partition into ``state`` in offset order, as ``ConsumerTask``
    consumes it; yields what it cannot (a record that does not decode, of a type or version newer than the
    schemas, an event Kafka drops). ``progress`` is told the bytes read."""
    findings = CappedFindings()
    for display, batch, rec in common.partition_records(files, findings, progress):
        if rec.control_type is not None:
            continue
        state.newest = max(state.newest, rec.timestamp)
        try:
            decoded = _decoded(rec.value)
        except Undecodable as exc:
            findings.append(finding("tiered-record-undecodable", display, batch.position,
                                    f"record at offset {rec.offset}: {exc}; skipped"))
            continue
        unknown = unknown_record(decoded)
        if unknown is not None:
            findings.append(finding("remote-log-metadata-unknown", display, batch.position,
                                    f"record at offset {rec.offset}: {unknown}; not replayed"))
            continue
        made = state.replay(decoded, name, rec.offset, display, batch.position)
        if made is not None:
            findings.append(made)
    yield from findings
    yield from findings.summary()


def _topic_id(part: PartitionDir) -> str | None:
    return next((read_topic_id(path) for path, _display in part.files if path.name == "partition.metadata"), None)


def _leader_epochs_disagree(seg: RemoteSegment, log_end_offset: int, leader_epochs: list[tuple[int, int]]
                            ) -> str | None:
    """``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs``: why the segment is not within the partition's
    leader epoch lineage (``leader_epochs``, the local ``leader-epoch-checkpoint`` as loaded), None when it is.
    The segment's epochs without messages (one starting where the next does) are left out first
    (``buildFilteredLeaderEpochMap``)."""
    pairs = list(seg.segment_leader_epochs)
    seg_epochs = dict(p for i, p in enumerate(pairs) if i + 1 == len(pairs) or pairs[i + 1][1] != p[1])
    lineage = dict(leader_epochs)
    if not seg_epochs or not lineage:
        return None
    keys, seg_keys = sorted(lineage), sorted(seg_epochs)
    last = seg_keys[-1]
    if last < keys[0] or last > keys[-1]:
        return f"its last epoch {last} is outside the checkpoint's epochs {keys[0]}..{keys[-1]}"
    first = next((e for e in seg_keys if e >= keys[0]), None)
    if first is None:
        return "none of its epochs is in the checkpoint's lineage"

    def higher(m: dict[int, int], ks_: list[int], epoch: int) -> tuple[int, int] | None:
        e = next((k for k in ks_ if k > epoch), None)
        return None if e is None else (e, m[e])

    for epoch in seg_keys:
        if epoch < first:
            continue
        offset = seg_epochs[epoch]
        if epoch not in lineage:
            return f"its epoch {epoch} is not in the checkpoint"
        if epoch == first and any(k < epoch for k in keys) and offset < lineage[epoch]:
            return (f"its epoch {epoch} starts at {offset}, before the checkpoint's start of that epoch "
                    f"{lineage[epoch]}")
        if epoch == last:
            nxt = higher(lineage, keys, epoch)
            if nxt is not None and seg.end_offset > nxt[1] - 1:
                return f"its end offset {seg.end_offset} is past epoch {epoch}'s end {nxt[1] - 1} in the checkpoint"
        elif higher(lineage, keys, epoch) != higher(seg_epochs, seg_keys, epoch):
            nxt = higher(seg_epochs, seg_keys, epoch)
            theirs = higher(lineage, keys, epoch)
            return (f"after epoch {epoch} it has epoch {nxt[0]} from {nxt[1]}, the checkpoint "
                    + ("none" if theirs is None else f"epoch {theirs[0]} from {theirs[1]}"))
    if seg.end_offset >= log_end_offset:
        return f"its end offset {seg.end_offset} is at or past the local log end offset {log_end_offset}"
    return None


def _local_checks(segments: list[RemoteSegment], rep: Any) -> Iterator[Finding]:
    """The partition's remote segments against its local replica ``rep``: offsets on neither tier (the copied
    segments end below the local log start: ``RemoteLogManager`` copies segments before local retention deletes
    them, ``UnifiedLog.deleteOldSegments`` waits for ``highestOffsetInRemoteStorage``), and segments whose leader
    epochs disagree with the local checkpoint."""
    copied = [s for s in segments if s.state == COPY_FINISHED]
    local_start = rep.segments[0].base_offset if rep.segments else rep.leo
    what = f"{segments[0].topic or segments[0].topic_id}-{segments[0].partition}"
    if copied:
        end = max(s.end_offset for s in copied)
        if end + 1 < local_start:
            yield finding("tiered-offset-gap", rep.path, None,
                          f"{what}: the remote segments end at {end}, the local log starts at {local_start}: offsets "
                          f"{end + 1}..{local_start - 1} are on no tier (a fetch of them fails with "
                          "OffsetOutOfRange)")
    cache: EpochCache = rep.epoch_cache()
    entries = cache.entries
    for s in copied:
        why = _leader_epochs_disagree(s, rep.leo, entries)
        if why is not None:
            yield finding("remote-segment-epochs-mismatch", rep.path, None,
                          f"{what}: remote segment {s.segment_id} ({s.start_offset}-{s.end_offset}, epochs "
                          f"{dict(s.segment_leader_epochs)}) is not within the local leader-epoch-checkpoint "
                          f"{dict(entries)}: {why} (RemoteLogManager.isRemoteSegmentWithinLeaderEpochs: retention "
                          "skips it, a follower building its state from it diverges)")


def _stuck(s: RemoteSegment, clock: int) -> Finding:
    """A segment left in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED at ``clock``, and for how long."""
    age = clock - s.event_timestamp
    return finding("remote-segment-stuck", s.source, None,
                   f"{s.topic or s.topic_id}-{s.partition}: remote segment {s.segment_id} ({s.start_offset}-"
                   f"{s.end_offset}) in {segment_state_name(s.state)} since {iso_time(s.event_timestamp)} (broker "
                   f"{s.broker_id}), for {age} ms ({age / 60_000:.1f} min) at {iso_time(clock)}: not finished by "
                   "then (a broker that failed or stopped mid-way leaves it so); no fetch reads it")


def remote_segments(paths: Iterable[str | Path], progress: Callable[[int], None] | None = None, *,
                    now: int | None = None, topic: str | None = None, partition: int | None = None,
                    read_partitions: set[str] | None = None) -> Iterator[RemoteSegment | TxnClock | Finding]:
    """Every user partition's remote segments in the ``__remote_log_metadata-*`` partitions under ``paths``, as
    :class:`RemoteLogMetadataState` replays them (DELETE_SEGMENT_FINISHED segments and DELETE_PARTITION_FINISHED
    partitions gone), by topic and partition then start offset; only ``topic`` / ``partition`` when given
    (``read_partitions`` is given every ``topic-partition`` read). First the time judged at (a
    :class:`~kafkatool.internal.transactions.TxnClock`: ``--now``, else the newest record or event time read); a
    segment left in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED is ``remote-segment-stuck``. Where the user
    partition's dir is under ``paths`` (by topic id): :func:`_local_checks`. ``progress`` is told the bytes read,
    :func:`remote_segments_bytes` in all."""
    read_partitions = set() if read_partitions is None else read_partitions
    dirs = list(partition_dirs_and_findings(paths))
    yield from (d for d in dirs if isinstance(d, Finding))  # what discovery met outside the partitions
    parts = [d for d in dirs if not isinstance(d, Finding)]
    metas = [part for part in parts if part.topic == REMOTE_LOG_METADATA_TOPIC]
    if not metas:
        yield finding("tiered-none", ", ".join(str(p) for p in paths), None,
                      f"no {REMOTE_LOG_METADATA_TOPIC}-* partition dirs found")
        return
    state = RemoteLogMetadataState()
    found: list[Finding] = []
    for part in sorted(metas, key=lambda p: p.partition or 0):
        found.extend(part.findings)
        found.extend(remote_log_metadata_partition(part.files, f"{part.topic}-{part.partition}", state, progress))
    clock = TxnClock(now, state.newest)
    yield clock
    locals_: dict[tuple[str | None, int | None], list[PartitionDir]] = {}
    for part in parts:
        if part.topic not in (None, REMOTE_LOG_METADATA_TOPIC) and part.state is None:
            locals_.setdefault((_topic_id(part), part.partition), []).append(part)
    names = {tid: part.topic for (tid, _p), ps in locals_.items() for part in ps}
    rows = []
    for (tid, pno), segments in state.partitions.items():
        if not segments:
            continue
        listed = [replace(s, topic=s.topic or names.get(tid)) for s in segments.values()]
        label = listed[0].topic or tid
        read_partitions.add(f"{label}-{pno}")
        if (topic is not None and topic not in (listed[0].topic, tid)) or (partition is not None and pno != partition):
            continue
        rows.append((label, pno, sorted(listed, key=lambda s: (s.start_offset, s.end_offset, s.segment_id))))
    opened: set[int] = set()
    for _label, pno, listed in sorted(rows, key=lambda r: (r[0], r[1])):
        yield from listed
        found.extend(_stuck(s, clock.at) for s in listed if s.state in (COPY_STARTED, DELETE_STARTED))
        for part in locals_.get((listed[0].topic_id, pno), ()):
            opened.add(id(part))
            found.extend(_local_checks(listed, open_replica(part, part.display, progress=progress)))
    if progress is not None:  # the user partitions not compared, passed
        progress(sum(segment_bytes(part.files) for ps in locals_.values() for part in ps if id(part) not in opened))
    yield from found


def remote_segments_bytes(paths: Iterable[str | Path]) -> int:
    """What :func:`remote_segments` tells its ``progress`` at most: the ``__remote_log_metadata-*`` segments and
    the user partitions' segments."""
    parts = list(partition_dirs(paths))
    if not any(part.topic == REMOTE_LOG_METADATA_TOPIC for part in parts):
        return 0
    return sum(common.log_bytes(part.files) if part.topic == REMOTE_LOG_METADATA_TOPIC else segment_bytes(part.files)
               for part in parts if part.topic is not None and part.state is None)
