"""Building record-file bytes from values, through the Construct declarations.

Used by the fixture generator, the benchmarks and (later) repair; never on a read path.
Batches come out as Kafka's producer and ``LogValidator`` write them: minimal varints, deltas
relative to the first record, CRC32C over attributes..end, compression of the records section.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .codecs import compress
from .formats import legacy as legacy_fmt
from .formats import record_batch as fmt
from .formats.control import ControlRecordKey, EndTransactionMarker

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CONTROL_TYPE_IDS = {"ABORT": 0, "COMMIT": 1}


class RecordSpec(NamedTuple):
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _compress(codec: str, data: bytes, *, legacy_lz4_checksum: bool = False) -> bytes:
    if codec == "none":
        return data
    return compress(CODEC_IDS[codec], data, legacy_lz4_checksum=legacy_lz4_checksum)


def record_batch(
    base_offset: int,
    records: Sequence[RecordSpec],
    *,
    compression: str = "none",
    partition_leader_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    log_append_time: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """One v2 batch holding ``records`` at consecutive offsets from ``base_offset``."""
    if not records:
        raise ValueError("a batch holds at least one record")
    first_ts = records[0].timestamp
    section = fmt.records_section(len(records)).build({"records": [
        {
            "attributes": 0,
            "timestamp_delta": r.timestamp - first_ts,
            "offset_delta": i,
            "key": r.key,
            "value": r.value,
            "headers": [{"key": k.encode("utf-8"), "value": v} for k, v in r.headers],
        }
        for i, r in enumerate(records)
    ]})
    max_ts = log_append_time if log_append_time is not None else max(r.timestamp for r in records)
    body = {
        "attributes": {
            "unused": 0,
            "has_delete_horizon_ms": delete_horizon_ms is not None,
            "is_control": control,
            "is_transactional": transactional,
            "timestamp_type": "log_append" if log_append_time is not None else "create",
            "compression": compression,
        },
        "last_offset_delta": len(records) - 1,
        "base_timestamp": delete_horizon_ms if delete_horizon_ms is not None else first_ts,
        "max_timestamp": max_ts,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_sequence,
        "records_count": len(records),
        "records": _compress(compression, section),
    }
    return fmt.RecordBatch.build(
        {"base_offset": base_offset, "batch": {"partition_leader_epoch": partition_leader_epoch, "body": body}}
    )


def end_transaction_marker(
    offset: int,
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int = 0,
) -> bytes:
    """A control batch with one COMMIT or ABORT record (what the coordinator's WriteTxnMarkers writes)."""
    key = ControlRecordKey.build({"version": 0, "type": CONTROL_TYPE_IDS["COMMIT" if commit else "ABORT"]})
    value = EndTransactionMarker.build({"version": 0, "coordinator_epoch": coordinator_epoch})
    return record_batch(
        offset, [RecordSpec(key, value, timestamp)], partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id, producer_epoch=producer_epoch, transactional=True, control=True,
    )


def legacy_entry(
    offset: int,
    records: Sequence[RecordSpec],
    *,
    magic: int,
    compression: str = "none",
) -> bytes:
    """A v0/v1 log entry: one plain message, or a compressed wrapper of several (v1: relative offsets)."""

    def message(off: int, r: RecordSpec, codec: str, value: bytes | None, ts: int) -> bytes:
        return legacy_fmt.LogEntry.build({"offset": off, "message": {"body": {
            "magic": magic,
            "attributes": {"unused": 0, "timestamp_type": "create", "compression": codec},
            "timestamp": ts if magic >= 1 else None,
            "key": r.key,
            "value": value,
        }}})

    if compression == "none":
        if len(records) != 1:
            raise ValueError("an uncompressed legacy entry holds exactly one message")
        return message(offset, records[0], "none", records[0].value, records[0].timestamp)
    n = len(records)
    inner = b"".join(
        message(i if magic >= 1 else offset - n + 1 + i, r, "none", r.value, r.timestamp)
        for i, r in enumerate(records)
    )
    wrapper_value = _compress(compression, inner, legacy_lz4_checksum=magic == 0)
    return message(offset, RecordSpec(None, None, 0), compression, wrapper_value,
                   max(r.timestamp for r in records))
