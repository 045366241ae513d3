"""``__share_group_state`` (KIP-932): share-partition state records as ``ShareCoordinatorRecordSerde`` reads
them."""

from __future__ import annotations

from typing import Any

from ..formats import internal_topics as it
from ..formats import kafka_schema as ks
from .common import Undecodable, kafka_uuid, nullable, parse, schema_record, tagged, value_version

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


def _share_state_value(rtype: int, name: str, value: bytes) -> dict[str, Any]:
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
                               "delivery_state": it.DELIVERY_STATES.get(b.delivery_state,
                                                                        f"unknown({b.delivery_state})"),
                               "delivery_count": b.delivery_count} for b in v.state_batches.entries],
        }
    raise Undecodable("; ".join(reasons))
