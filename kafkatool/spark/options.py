"""The ``kafka-log`` data source's options (Spark's ``DataSource.options``), checked and parsed.

Options:

- ``level``: ``batches`` (default; one row per batch, damaged ones included with ``crc_valid = false``),
  ``records`` (one row per record, decompressed; ``crc_valid`` of its batch, and a row with ``error`` set
  where records cannot be decoded), ``findings`` (one row per finding: verify's per-segment
  check, :func:`kafkatool.segment_check.check_segment`, with the segment's indexes).
- ``values``: ``binary`` (default), ``base64`` (a string column) or ``none`` (no ``value`` column): records level.
- ``decode``: ``consumer-offsets``, ``transaction-state``, ``share-group-state``, ``cluster-metadata`` or
  ``remote-log-metadata`` (records level, the default level then): each record of that internal topic decoded on
  its own, by the CLI's decoders, into a ``decoded`` struct column (:data:`kafkatool.spark.schema.DECODED`), with
  ``decode_error`` saying why a record does not decode (the row stays). Records of other topics, and
  control records, have both null. A flat layout (no topic in the path) is decoded as if it were that topic.
- ``keyDecoder``, ``valueDecoder`` (also spelled ``key-decoder``, ``value-decoder``): records level (the default
  level then): each key / value decoded as ``dump --key-decoder/--value-decoder NAME`` decodes it
  (:data:`kafkatool.payloads.DECODERS`) into ``key_decoded``/``value_decoded`` (compact JSON text) and
  ``key_schema_id``/``value_schema_id`` (Confluent's schema id, null when not framed); a payload that does not
  decode keeps its raw column and has null ones, and so do control records and error rows. ``schemaLogDir``
  (``schema-log-dir``), ``schemas`` and ``validate``: the schema decoders' sources, as the CLI's
  ``--schema-log-dir``, ``--schemas``, ``--validate`` (the ``_schemas`` topic is otherwise looked for under the
  local paths loaded).
- ``splitBytes``: split segments larger than this many bytes into several input partitions, at batch
  starts taken from the segment's ``.index`` (each checked: a v2 batch with a valid CRC starts there); 0
  (default) or no usable index: one partition per segment. Not for the findings level (whole segments).
- ``packBytes``: pack consecutive planned partitions (after ``splitBytes``) into one input partition, one
  Spark task, while their summed size stays within this many bytes, each file counted
  :data:`~kafkatool.spark.plan.PACK_OPEN_COST` (4 MiB, like Spark's ``spark.sql.files.openCostInBytes``)
  more than its size; a piece bigger than that is a task of its own, and so is every URL (not statted).
  Rows keep their own topic, partition, segment and file. 0 (default): one partition per segment (or
  piece). All levels.
- ``minPartitions``: with ``packBytes``, shrink the budget so the packs number at least this many where the
  data allows (Spark's own file sources: ``min(maxPartitionBytes, max(openCostInBytes, total / cores))``);
  pass ``spark.sparkContext.defaultParallelism`` to keep every core busy (``kafkatool spark scan`` does).
- ``deep``: findings level: also decompress and decode every record (``verify --deep``).
- ``includeLeftovers``: also read ``.log.swap``/``.cleaned``/``.deleted`` files found in directories.
- ``includeSnapshots``: also read KRaft snapshots (``__cluster_metadata-0/<end offset>-<epoch>.checkpoint``,
  ``bootstrap.checkpoint``) found in directories; named explicitly they are always read. Their rows have a
  null ``segment`` (the name holds the snapshot's end offset, not a base offset), and their records repeat
  what the metadata log held, so a directory scan leaves them out by default.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from kafkatool.payloads import DECODERS, SchemaSources

from .schema import DECODED

LEVELS = ("batches", "records", "findings")

VALUE_MODES = ("binary", "base64", "none")


def flag(value: str | None, default: bool = False) -> bool:
    """A boolean option: ``1``, ``true``, ``yes`` or ``on`` (any case) is true; ``default`` when not given."""
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def whole(options: dict, name: str) -> int:
    """A whole-number option (0 when not given), under its name as written or lowercased (Spark passes both)."""
    raw = options.get(name, options.get(name.lower(), 0))
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"kafka-log: option {name} must be a whole number >= 0, not {raw!r}")
    return value


def paths_of(options: dict) -> list[str]:
    """The paths ``load()`` was given: one (``path``) or many (``paths``, JSON as PySpark passes them)."""
    if "paths" in options and options["paths"]:
        paths = json.loads(options["paths"])
    elif options.get("path"):
        paths = [options["path"]]
    else:
        raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(path)")
    return [str(p) for p in paths]


def values_of(options: dict) -> str:
    """Option ``values``: ``binary`` (default), ``base64`` or ``none``."""
    values = options.get("values", "binary").lower()
    if values not in VALUE_MODES:
        raise ValueError(f"kafka-log: option values must be one of {', '.join(VALUE_MODES)}, not {values!r}")
    return values


def decode_of(options: dict) -> str | None:
    """Option ``decode``: a :data:`~kafkatool.spark.schema.DECODED` name, or None."""
    decode = options.get("decode")
    if decode is None or decode == "":
        return None
    decode = decode.lower()
    if decode not in DECODED:
        raise ValueError(f"kafka-log: option decode must be one of {', '.join(DECODED)}, not {decode!r}")
    return decode


class Payloads(NamedTuple):
    """Options ``keyDecoder``/``valueDecoder`` (a :data:`~kafkatool.payloads.DECODERS` name or None) and where the
    schema decoders find their schemas."""

    key: str | None
    value: str | None
    sources: SchemaSources

    @property
    def sides(self) -> tuple[str, ...]:
        return tuple(side for side, name in (("key", self.key), ("value", self.value)) if name is not None)


def _named(options: dict, name: str, dashed: str) -> str | None:
    """An option under its camelCase name, as Spark lowercases it, or dashed as the CLI spells it."""
    for spelling in (name, name.lower(), dashed):
        if options.get(spelling) not in (None, ""):
            return str(options[spelling])
    return None


def payloads_of(options: dict) -> Payloads | None:
    """Options ``keyDecoder``, ``valueDecoder``, ``schemaLogDir``, ``schemas``, ``validate``; None without a
    decoder."""
    names = []
    for side in ("key", "value"):
        name = _named(options, f"{side}Decoder", f"{side}-decoder")
        if name is not None and name.lower() not in DECODERS:
            raise ValueError(f"kafka-log: option {side}Decoder must be one of {', '.join(DECODERS)}, not {name!r}")
        names.append(None if name is None else name.lower())
    if names == [None, None]:
        return None
    log_dir, schemas = _named(options, "schemaLogDir", "schema-log-dir"), _named(options, "schemas", "schemas")
    try:
        given = paths_of(options)
    except ValueError:  # said by load() itself
        given = []
    local = tuple(Path(p) for p in given if "://" not in p)  # a URL's _schemas is not looked for
    return Payloads(names[0], names[1], SchemaSources(local, None if log_dir is None else Path(log_dir),
                                                      None if schemas is None else Path(schemas),
                                                      flag(options.get("validate"))))


def level_of(options: dict) -> str:
    """Option ``level``; ``records`` by default with ``decode`` or a decoder, else ``batches``."""
    level = options.get("level")
    if level is None:
        return "records" if decode_of(options) or payloads_of(options) else "batches"
    level = level.lower()
    if level not in LEVELS:
        raise ValueError(f"kafka-log: option level must be one of {', '.join(LEVELS)}, not {level!r}")
    if level != "records" and decode_of(options):
        raise ValueError(f"kafka-log: option decode decodes records; it needs level records, not {level!r}")
    if level != "records" and payloads_of(options):
        raise ValueError(f"kafka-log: options keyDecoder/valueDecoder decode records; they need level records, "
                         f"not {level!r}")
    return level


__all__ = ["LEVELS", "VALUE_MODES", "Payloads", "decode_of", "flag", "level_of", "paths_of", "payloads_of", "values_of",
           "whole"]
