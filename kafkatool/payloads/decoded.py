"""What a decoder gives for one payload, where the schema decoders find the writers' schemas, and a record with its
decoded payloads (light: export imports it, and the output layer at the first record with decoded payloads)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ..model import Record


class Decoded(NamedTuple):
    """One payload read by a decoder: a JSON-able ``value``, the Confluent schema id it was written with (None when
    not framed), or why it does not decode (``error``; ``value`` is None then)."""

    value: Any = None
    schema_id: int | None = None
    error: str | None = None


# Called as ``decode(data, subject=None)``: ``subject`` the Schema Registry subject the payload's topic has under the
# default TopicNameStrategy (``<topic>-key``/``<topic>-value``), which ``auto`` uses to tell a payload that should be
# framed from one that is not; the other decoders ignore it.
PayloadDecoder = Callable[..., Decoded]


class SchemaSources(NamedTuple):
    """Where the schema decoders find writer schemas: a ``_schemas`` partition among the command's ``paths`` (or in
    ``schema_log_dir``, ``--schema-log-dir``), and ``<id>.avsc``/``<id>.proto``/``<id>.json`` files in ``schemas_dir``
    (``--schemas``); with ``validate`` (``--validate``) a JSON Schema body is checked against its schema."""

    paths: tuple[Path, ...] = ()
    schema_log_dir: Path | None = None
    schemas_dir: Path | None = None
    validate: bool = False


def compact(value: Any) -> str:
    """A decoded value as one line of JSON (the text columns, the text format, what ``--*-match`` searches)."""
    import json  # here: text output imports this module and, without decoders, never needs json (test_startup)

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class PayloadRecord:
    """A record with its key and value as the decoders read them (``None``: no decoder asked for that side). Its
    line is the record's with ``key_decoded``/``key_schema_id`` (and ``key_decode_error``), the same for the value."""

    __slots__ = ("key", "record", "value")

    def __init__(self, record: Record, key: Decoded | None, value: Decoded | None) -> None:
        self.record, self.key, self.value = record, key, value

    def as_dict(self) -> dict[str, Any]:
        d = self.record.as_dict()
        for side, got in (("key", self.key), ("value", self.value)):
            if got is not None:
                d[f"{side}_decoded"] = got.value
                d[f"{side}_schema_id"] = got.schema_id
                if got.error is not None:
                    d[f"{side}_decode_error"] = got.error
        return d
