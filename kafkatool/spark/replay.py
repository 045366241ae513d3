"""Coordinator state from the ``kafka-log`` data source's decoded rows (option ``decode``): the CLI's replay engines
applied to the rows of one coordinator partition, collected in offset order."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..formats import internal_topics as it
from ..internal.common import Undecodable
from ..internal.share_state import MergeTooLong, SharePartitionState, StateBatch, replay_share_record

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
        except (Undecodable, MergeTooLong) as exc:
            skipped.append(f"offset {row['offset']}: {exc}")
    return sorted(state.values(), key=lambda s: (s.group_id, s.topic_id, s.partition)), skipped


__all__ = ["delivery_state_id", "share_states_of_rows"]
