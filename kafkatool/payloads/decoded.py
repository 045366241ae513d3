"""What a decoder gives for one payload, and where the schema decoders find the writers' schemas."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Decoded:
    """One payload read by a decoder: a JSON-able ``value``, the Confluent schema id it was written with (None when
    not framed), or why it does not decode (``error``; ``value`` is None then)."""

    value: Any = None
    schema_id: int | None = None
    error: str | None = None


# Called as ``decode(data, subject=None)``: ``subject`` the Schema Registry subject the payload's topic has under the
# default TopicNameStrategy (``<topic>-key``/``<topic>-value``), which ``auto`` uses to tell a payload that should be
# framed from one that is not; the other decoders ignore it.
PayloadDecoder = Callable[..., Decoded]


@dataclass(frozen=True)
class SchemaSources:
    """Where the schema decoders find writer schemas: a ``_schemas`` partition among the command's ``paths`` (or in
    ``schema_log_dir``, ``--schema-log-dir``), and ``<id>.avsc``/``<id>.proto``/``<id>.json`` files in ``schemas_dir``
    (``--schemas``); with ``validate`` (``--validate``) a JSON Schema body is checked against its schema."""

    paths: tuple[Path, ...] = ()
    schema_log_dir: Path | None = None
    schemas_dir: Path | None = None
    validate: bool = False
