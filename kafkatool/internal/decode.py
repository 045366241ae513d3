"""One record of an internal topic at a time, decoded by the topic's decoder: ``dump --decode`` and the
Spark data source's ``decode`` option (kafka-dump-log's ``--offsets-decoder`` and its siblings)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..findings import finding
from ..formats.metadata_records import CONTROL_SCHEMAS
from ..model import Finding, Record
from ..walk import partition_of
from .common import Undecodable
from .metadata import METADATA_TOPIC, control_record, metadata_record, unknown_metadata_record
from .offsets import OFFSETS_TOPIC, offsets_record
from .remote_log_metadata import REMOTE_LOG_METADATA_TOPIC, remote_log_metadata_record, unknown_record
from .share_state import SHARE_STATE_TOPIC, share_state_record
from .transactions import TRANSACTION_TOPIC, transaction_record

# decoder name -> (the internal topic it is for, the per-record decoder)
RECORD_DECODERS = {
    "consumer-offsets": (OFFSETS_TOPIC, offsets_record),
    "transaction-state": (TRANSACTION_TOPIC, transaction_record),
    "cluster-metadata": (METADATA_TOPIC, metadata_record),
    "share-group-state": (SHARE_STATE_TOPIC, share_state_record),
    "remote-log-metadata": (REMOTE_LOG_METADATA_TOPIC, remote_log_metadata_record),
}
# decoders whose ``fields`` and ``data`` are JSON text (a Spark column of one type for every record type)
_JSON_FIELDS = {"cluster-metadata": ("fields", "data"), "remote-log-metadata": ("data",)}
# decoders whose schema-read ``key`` and ``value`` are objects of a shape per record type: JSON text in Spark
_OBJECT_FIELDS = {"consumer-offsets": ("key", "value"), "transaction-state": ("key", "value"),
                  "share-group-state": ("key", "value")}


def decode_record(decoder: str, key: bytes | None, value: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(fields, None)``, or ``(None, why)`` for a record the ``decoder`` (a :data:`RECORD_DECODERS` name)
    cannot decode: bad bytes are a reason, never an exception."""
    try:
        return RECORD_DECODERS[decoder][1](key, value), None
    except Undecodable as exc:
        return None, str(exc)


def decode_columns(decoder: str, key: bytes | None, value: bytes | None, control_type: str | None = None
                   ) -> tuple[dict[str, Any] | None, str | None]:
    """:func:`decode_record` as the Spark data source's ``decoded`` column holds it: a coordinator record's
    ``key`` and ``value`` (one shape per record type, Kafka's schema's) as JSON text, as the metadata decoders'
    ``fields`` and ``data`` already are; ``json.loads`` gives back what ``dump --decode`` shows. A control record
    (``control_type``) is decoded where :func:`decode` decodes it (a metadata log's KRaft ones), else ``(None,
    None)``."""
    if control_type is not None:
        if decoder != "cluster-metadata" or control_type not in CONTROL_SCHEMAS:
            return None, None
        fields, error = control_record(control_type, value)
        return (None if fields is None else {**fields, "data": json.dumps(fields["data"])}), error
    fields, error = decode_record(decoder, key, value)
    if fields is not None and decoder in _OBJECT_FIELDS:
        fields = {**fields, **{k: json.dumps(fields[k]) for k in _OBJECT_FIELDS[decoder]
                               if fields.get(k) is not None}}
    return fields, error


# --- dump --decode ---------------------------------------------------------------------------------------


DECODERS = ("consumer-offsets", "transaction-state", "cluster-metadata", "share-group-state", "remote-log-metadata",
            "auto")


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record of an internal topic with its key and value decoded (``decoded``), or why they are not
    (``decode_error``): kafka-dump-log's ``--offsets-decoder`` / ``--transaction-log-decoder`` /
    ``--cluster-metadata-decoder`` / ``--share-group-state-decoder`` / ``--remote-log-metadata-decoder``.
    ``finding``: what the record is besides (a type or version newer than the schemas), shown after it."""

    record: Record
    decoded: dict[str, Any] | None
    error: str | None
    finding: Finding | None = None

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


def decode(decoder: str, r: Record, where: str = "") -> Record | DecodedRecord:
    """``r`` (of file ``where``) decoded by ``decoder``. Control records stay as they are (they are the markers,
    not data), but for the KRaft ones of a metadata log (``LeaderChangeMessage``, ``SnapshotHeaderRecord``...,
    :func:`~kafkatool.internal.metadata.control_record`). A record type or version newer than the schemas comes
    with a finding naming both (``DecodedRecord.finding``)."""
    if r.control_type is not None:
        if decoder != "cluster-metadata" or r.control_type not in CONTROL_SCHEMAS:
            return r
        return DecodedRecord(r, *control_record(r.control_type, r.value))
    fields, error = decode_record(decoder, r.key, r.value)
    if fields is not None and decoder in _JSON_FIELDS:
        fields = {**fields, **{k: json.loads(fields[k]) for k in _JSON_FIELDS[decoder] if fields[k] is not None}}
    unknown = None if fields is None else (
        unknown_metadata_record(fields["record_type"], fields["version"])
        if decoder == "cluster-metadata" and not fields["decoded"]
        else unknown_record(fields) if decoder == "remote-log-metadata" else None)
    made = None
    if unknown is not None:
        code = "remote-log-metadata-unknown" if decoder == "remote-log-metadata" else "metadata-record-unknown"
        made = finding(code, where, None, f"record at offset {r.offset}: {unknown}; not decoded")
    return DecodedRecord(r, fields, error, made)


def file_decoder(choice: str, path: Path) -> Callable[[Record], Record | DecodedRecord] | None:
    """``dump --decode choice``: how the records of file ``path`` are shown (None: as they are), for
    :class:`kafkatool.dump.DumpOptions`'s ``decoder``."""
    name = decoder_for(choice, path)
    return None if name is None else functools.partial(decode, name, where=str(path))
