"""One record of an internal topic at a time, decoded by the topic's decoder: ``dump --decode`` and the
Spark data source's ``decode`` option (kafka-dump-log's ``--offsets-decoder`` and its siblings)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import Record
from ..walk import partition_of
from .common import Undecodable
from .metadata import METADATA_TOPIC, metadata_record
from .offsets import OFFSETS_TOPIC, offsets_record
from .share_state import SHARE_STATE_TOPIC, share_state_record
from .transactions import TRANSACTION_TOPIC, transaction_record

# decoder name -> (the internal topic it is for, the per-record decoder)
RECORD_DECODERS = {
    "consumer-offsets": (OFFSETS_TOPIC, offsets_record),
    "transaction-state": (TRANSACTION_TOPIC, transaction_record),
    "cluster-metadata": (METADATA_TOPIC, metadata_record),
    "share-group-state": (SHARE_STATE_TOPIC, share_state_record),
}


def decode_record(decoder: str, key: bytes | None, value: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(fields, None)``, or ``(None, why)`` for a record the ``decoder`` (a :data:`RECORD_DECODERS` name)
    cannot decode: bad bytes are a reason, never an exception."""
    try:
        return RECORD_DECODERS[decoder][1](key, value), None
    except Undecodable as exc:
        return None, str(exc)


# --- dump --decode ---------------------------------------------------------------------------------------


DECODERS = ("consumer-offsets", "transaction-state", "cluster-metadata", "share-group-state", "auto")


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record of an internal topic with its key and value decoded (``decoded``), or why they are not
    (``decode_error``): kafka-dump-log's ``--offsets-decoder`` / ``--transaction-log-decoder`` /
    ``--cluster-metadata-decoder`` / ``--share-group-state-decoder``."""

    record: Record
    decoded: dict[str, Any] | None
    error: str | None

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


def decode(decoder: str, r: Record) -> Record | DecodedRecord:
    """``r`` decoded by ``decoder``; control records stay as they are (they are the markers, not data)."""
    if r.control_type is not None:
        return r
    fields, error = decode_record(decoder, r.key, r.value)
    if fields is not None and decoder == "cluster-metadata" and fields.get("fields") is not None:
        fields = {**fields, "fields": json.loads(fields["fields"])}
    return DecodedRecord(r, fields, error)


def file_decoder(choice: str, path: Path) -> Callable[[Record], Record | DecodedRecord] | None:
    """``dump --decode choice``: how the records of file ``path`` are shown (None: as they are), for
    :class:`kafkatool.dump.DumpOptions`'s ``decoder``."""
    name = decoder_for(choice, path)
    return None if name is None else functools.partial(decode, name)
