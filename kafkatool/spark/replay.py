"""Coordinator state from the ``kafka-log`` data source's decoded rows (option ``decode``): the CLI's replay engines
applied to the rows of one coordinator partition, collected in offset order."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..formats import internal_topics as it
from ..internal.common import Undecodable
from ..internal.remote_log_metadata import RemoteLogMetadataState, RemoteSegment, unknown_record
from ..internal.share_state import SharePartitionState, StateBatch, replay_share_record

_STATE_IDS = {name: state for state, name in it.DELIVERY_STATES.items()}
_UNKNOWN_STATE = re.compile(r"unknown\((-?\d+)\)")


def _as_dict(row: Any) -> dict[str, Any]:
    """A Spark ``Row`` (or a dict) as a dict of its fields (``in`` on a Row looks at its values, not its names)."""
    return row.asDict() if hasattr(row, "asDict") else dict(row)


def delivery_state_id(name: str) -> int:
    """A delivery state as the decoder names it (``Acked``, ``unknown(3)``) back to its ``RecordState`` id."""
    if name in _STATE_IDS:
        return _STATE_IDS[name]
    m = _UNKNOWN_STATE.fullmatch(name)
    if m is None:
        raise ValueError(f"not a delivery state: {name!r}")
    return int(m.group(1))


def share_states_of_rows(rows: Iterable[Any], coordinator_partition: str
                         ) -> tuple[list[SharePartitionState], list[str]]:
    """The share partitions' state (:func:`kafkatool.internal.share_state.replay_share_record`, as
    ``ShareCoordinatorShard.replay`` loads it) from the rows of one ``__share_group_state`` partition read with
    ``decode`` ``share-group-state`` (``offset``, ``decoded``; in any order: replayed by offset), and why the rows
    not replayed were not (a ``decode_error``, a ShareUpdate tombstone). The rows of one partition fit the driver
    (``collect`` them); ``coordinator_partition`` names it in the states."""
    state: dict[tuple[str, str, int], SharePartitionState] = {}
    skipped: list[str] = []
    for row in sorted((_as_dict(r) for r in rows), key=lambda r: r["offset"]):
        if row["decoded"] is None:
            if row.get("decode_error") is not None:
                skipped.append(f"offset {row['offset']}: {row['decode_error']}")
            continue  # a control record
        d = _as_dict(row["decoded"])
        key = (d["group"] or "", d["topic_id"], d["partition"])
        batches = [StateBatch(b["first_offset"], b["last_offset"], b["delivery_count"],
                              delivery_state_id(b["delivery_state"])) for b in d["state_batches"] or ()]
        try:
            replay_share_record(state, key, d["record_type"], None if d["tombstone"] else d, batches,
                                coordinator_partition, row["offset"])
        except Undecodable as exc:
            skipped.append(f"offset {row['offset']}: {exc}")
    return sorted(state.values(), key=lambda s: (s.group_id, s.topic_id, s.partition)), skipped


def remote_segments_of_rows(rows: Iterable[Any]) -> tuple[list[RemoteSegment], list[str]]:
    """Every partition's remote segments (:class:`kafkatool.internal.remote_log_metadata.RemoteLogMetadataState`, as
    ``TopicBasedRemoteLogMetadataManager``'s consumer replays them) from the rows of the ``__remote_log_metadata``
    partitions read with ``decode`` ``remote-log-metadata`` (``partition``, ``offset``, ``decoded``; in any order:
    replayed by partition and offset), by topic, partition and start offset; and why the rows not replayed were not
    (a ``decode_error``, a type or version newer than the schemas, an event Kafka drops). The metadata rows fit the
    driver (``collect`` them)."""
    state = RemoteLogMetadataState()
    skipped: list[str] = []
    for row in sorted((_as_dict(r) for r in rows), key=lambda r: (r["partition"], r["offset"])):
        where = f"__remote_log_metadata-{row['partition']}"
        if row["decoded"] is None:
            if row.get("decode_error") is not None:
                skipped.append(f"{where} offset {row['offset']}: {row['decode_error']}")
            continue  # a control record
        d = _as_dict(row["decoded"])
        unknown = unknown_record(d)
        if unknown is not None:
            skipped.append(f"{where} offset {row['offset']}: {unknown}")
            continue
        made = state.replay({**d, "data": json.loads(d["data"])}, where, row["offset"], where, None)
        if made is not None:
            skipped.append(f"{where} offset {row['offset']}: {made.message}")
    segments = [s for by_id in state.partitions.values() for s in by_id.values()]
    return sorted(segments, key=lambda s: (s.topic or s.topic_id, s.partition, s.start_offset)), skipped


__all__ = ["delivery_state_id", "remote_segments_of_rows", "share_states_of_rows"]
