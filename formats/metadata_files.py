"""Metadata text files: partition.metadata, meta.properties, quorum-state, .kafka_cleanshutdown.

Each is parsed the way the Kafka class that reads it does, and built byte-for-byte as Kafka writes it.

``partition.metadata`` (per partition dir; ``storage/.../internals/log/PartitionMetadataFile.java``,
``PartitionMetadataReadBuffer.java``, ``PartitionMetadataFileFormatter.java``)::

    version: 0
    topic_id: <Uuid.toString(): 22 chars of URL-safe base64, no padding>      (no final newline)

The reader splits each of the first two lines on ``:`` followed by whitespace and wants exactly two
fields; it does not look at the key names. The topic id must decode to 16 bytes and not be all zero.

``meta.properties`` (per log dir; ``metadata/src/main/java/org/apache/kafka/metadata/properties/
MetaProperties.java``, ``PropertiesUtils.java``): ``java.util.Properties`` text in ISO-8859-1, written by
``Properties.store`` (a ``#`` line, a ``#<date>`` line, then ``key=value`` lines). Version 0 carries
``broker.id`` (ZooKeeper mode), version 1 ``node.id`` (KRaft); both may carry ``cluster.id`` and
``directory.id`` (a Uuid).

``quorum-state`` (KRaft metadata partition dir; ``raft/.../FileQuorumStateStore.java`` with
``raft/src/main/resources/common/message/QuorumStateData.json``): one line of compact JSON, the
``QuorumStateData`` fields in camelCase plus ``"data_version"``, no final newline.

``.kafka_cleanshutdown`` (per log dir; ``storage/.../internals/log/CleanShutdownFileHandler.java``):
empty before Kafka 3.7 (its presence is the message); since KIP-966 compact JSON
``{"version":0,"brokerEpoch":N}``. An unreadable body is not fatal to Kafka: the file still marks a
clean shutdown, only the broker epoch is lost.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .checkpoints import TextFileError, java_int, java_lines, java_split

# json is imported by the two JSON files' functions alone (quorum-state, .kafka_cleanshutdown): a partition's
# partition.metadata is read on every verify and dump of a partition, and json's import (~3 ms) is most of what
# reading it costs (tests/test_startup.py).

# --- Uuid (org.apache.kafka.common.Uuid) -------------------------------------------------------

_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_FROM_URL_SAFE = str.maketrans("-_", "+/")


def uuid_from_string(text: str) -> bytes:
    """``Uuid.fromString``: URL-safe base64 (padding optional), at most 24 chars, exactly 16 bytes."""
    if len(text) > 24 or not _URL_BASE64.fullmatch(text) or len(text.rstrip("=")) % 4 == 1:
        raise ValueError(f"{text!r} is not a base64 UUID")
    stripped = text.rstrip("=")
    try:  # base64.urlsafe_b64decode on the checked text, without its conversions
        raw = binascii.a2b_base64((stripped + "=" * (-len(stripped) % 4)).translate(_FROM_URL_SAFE))
    except binascii.Error as e:
        raise ValueError(f"{text!r} is not a base64 UUID: {e}") from None
    if len(raw) != 16:
        raise ValueError(f"{text!r} decodes to {len(raw)} bytes, not 16")
    return raw


def uuid_to_string(raw: bytes) -> str:
    """``Uuid.toString``: URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


# --- partition.metadata -------------------------------------------------------------------------

PARTITION_METADATA_VERSION = 0
_ZERO_UUID = bytes(16)  # Uuid.ZERO_UUID
_COLON_WHITESPACE = re.compile(r":[ \t\n\x0b\f\r]+")


def parse_partition_metadata(data: bytes) -> tuple[int, bytes]:
    """``(version, topic id bytes)`` as ``PartitionMetadataReadBuffer.read`` reads them, line by line, or
    TextFileError."""
    lines = java_lines(data)
    version_line = next(lines, None)
    if version_line is None:
        raise TextFileError("partition-metadata-malformed", "empty file", 0)
    position, line = version_line
    fields = java_split(_COLON_WHITESPACE, line)
    version = java_int(fields[1]) if len(fields) == 2 else None
    if version is None:
        raise TextFileError("partition-metadata-malformed", f"malformed version line {line!r}", position)
    if version != PARTITION_METADATA_VERSION:
        raise TextFileError("partition-metadata-bad-version", f"unknown version {version}", position)
    topic_line = next(lines, None)
    if topic_line is None:
        raise TextFileError("partition-metadata-malformed", "no topic_id line", len(data))
    position, line = topic_line
    fields = java_split(_COLON_WHITESPACE, line)
    if len(fields) != 2:
        raise TextFileError("partition-metadata-malformed", f"malformed topic_id line {line!r}", position)
    try:
        topic_id = uuid_from_string(fields[1])
    except ValueError as e:
        raise TextFileError("partition-metadata-bad-topic-id", str(e), position) from None
    if topic_id == _ZERO_UUID:
        raise TextFileError("partition-metadata-bad-topic-id", "topic id is the zero UUID", position)
    return version, topic_id


def build_partition_metadata(topic_id: bytes, version: int = PARTITION_METADATA_VERSION) -> bytes:
    """``partition.metadata`` exactly as ``PartitionMetadataFileFormatter.toFile`` writes it."""
    return f"version: {version}\ntopic_id: {uuid_to_string(topic_id)}".encode()


# --- java.util.Properties (meta.properties) -------------------------------------------------------

_PROPS_BLANK = " \t\f"
_PROPS_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(data: bytes) -> tuple[list[str], dict[str, str]]:
    """``(comments without their #/!, properties in file order)`` as ``Properties.load(InputStream)`` reads.

    Handles comments, blank lines, ``=``/``:``/whitespace separators, backslash line continuation and
    escapes (``\\uXXXX``; a malformed one raises ``TextFileError``). A repeated key keeps the last value.
    """
    comments: list[str] = []
    props: dict[str, str] = {}
    logical = ""
    for _, natural in java_lines(data, "latin-1"):
        line = natural.lstrip(_PROPS_BLANK)
        if not logical and (not line or line[0] in "#!"):
            if line:
                comments.append(line[1:])
            continue
        if (len(line) - len(line.rstrip("\\"))) % 2:  # odd number of backslashes: continued
            logical += line[:-1]
            continue
        _put_property(props, logical + line)
        logical = ""
    if logical:
        _put_property(props, logical)
    return comments, props


def _put_property(props: dict[str, str], line: str) -> None:
    """Split a logical line into key and value the way ``Properties.load0`` does."""
    n, key_len, value_start, has_sep, backslash = len(line), 0, len(line), False, False
    while key_len < n:
        c = line[key_len]
        if c in "=:" + _PROPS_BLANK and not backslash:
            value_start, has_sep = key_len + 1, c in "=:"
            break
        backslash = c == "\\" and not backslash
        key_len += 1
    while value_start < n:
        c = line[value_start]
        if c not in _PROPS_BLANK:
            if has_sep or c not in "=:":
                break
            has_sep = True
        value_start += 1
    key = _unescape(line[:key_len])
    props.pop(key, None)
    props[key] = _unescape(line[value_start:])


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
        elif text[i + 1 : i + 2] == "u":
            digits = text[i + 2 : i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise TextFileError("properties-malformed", "malformed \\uxxxx encoding")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            nxt = text[i + 1 : i + 2]
            out.append(_PROPS_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def build_properties(props: Mapping[str, str], comments: Sequence[str] = ()) -> bytes:
    """Properties text as ``Properties.store(OutputStream, ...)`` writes it (entries in the given order)."""
    lines = [f"#{c}" for c in comments]
    lines += [f"{_escape(k, key=True)}={_escape(v, key=False)}" for k, v in props.items()]
    return "".join(f"{line}\n" for line in lines).encode("latin-1")


def _escape(text: str, key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == " ":
            out.append("\\ " if key or i == 0 else " ")
        elif ch in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(ch)])
        elif ch in "\\=:#!":
            out.append("\\" + ch)
        elif not " " <= ch <= "~":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


META_PROPERTIES_VERSIONS = {0: "broker.id", 1: "node.id"}  # version -> property holding the node id


def meta_properties_node_id(props: Mapping[str, str]) -> tuple[int, int | None]:
    """``(version, node id)`` as ``MetaProperties.Builder(Properties)`` derives them; else TextFileError.

    Version 0 (default when absent) may lack ``broker.id``; version 1 needs ``node.id`` and ``cluster.id``.
    """
    version = java_int(props.get("version", "0"))
    if version not in META_PROPERTIES_VERSIONS:
        raise TextFileError("meta-properties-bad-version", f"unknown version {props.get('version')!r}")
    id_key = META_PROPERTIES_VERSIONS[version]
    if id_key not in props:
        if version == 0:
            return version, None
        raise TextFileError("meta-properties-missing-key", f"{id_key} was not found")
    node_id = java_int(props[id_key])
    if node_id is None:
        raise TextFileError("meta-properties-bad-value", f"{id_key} {props[id_key]!r} is not an int")
    if version == 1 and "cluster.id" not in props:
        raise TextFileError("meta-properties-missing-key", "cluster.id was not found")
    if "directory.id" in props:
        try:
            uuid_from_string(props["directory.id"])
        except ValueError as e:
            raise TextFileError("meta-properties-bad-value", f"directory.id: {e}") from None
    return version, node_id


# --- quorum-state ---------------------------------------------------------------------------------


def parse_quorum_state(data: bytes) -> dict[str, Any]:
    """The JSON object of the first line, which must hold an integer ``data_version``; else TextFileError."""
    import json

    first = next(java_lines(data), None)
    if first is None:
        raise TextFileError("quorum-state-malformed", "empty file", 0)
    try:
        state = json.loads(first[1])
    except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than the interpreter's stack
        raise TextFileError("quorum-state-malformed", f"not JSON: {e}", 0) from None
    if not isinstance(state, dict):
        raise TextFileError("quorum-state-malformed", "not a JSON object", 0)
    if not isinstance(state.get("data_version"), int) or isinstance(state["data_version"], bool):
        raise TextFileError("quorum-state-malformed", "no integer data_version field", 0)
    return state


def build_quorum_state(state: Mapping[str, Any]) -> bytes:
    """``quorum-state`` as Jackson's ``ObjectNode.toString`` writes it (compact, key order kept)."""
    import json

    return json.dumps(dict(state), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# --- .kafka_cleanshutdown -----------------------------------------------------------------------


def parse_clean_shutdown(data: bytes) -> tuple[int | None, int | None]:
    """``(version, broker epoch)``; ``(None, None)`` for the empty pre-3.7 file; TextFileError if unreadable.

    Accepts the written key ``brokerEpoch`` and the ``broker_epoch`` string form of early 3.7 builds.
    """
    import json

    if not data:
        return None, None
    try:
        content = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than the interpreter's stack
        raise TextFileError("clean-shutdown-unreadable", f"not JSON: {e}", 0) from None
    if not isinstance(content, dict):
        raise TextFileError("clean-shutdown-unreadable", "not a JSON object", 0)
    version, epoch = content.get("version"), content.get("brokerEpoch", content.get("broker_epoch"))
    version, epoch = (_json_long(v) for v in (version, epoch))
    if epoch is None:
        raise TextFileError("clean-shutdown-unreadable", "no readable broker epoch", 0)
    return version, epoch


def _json_long(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return java_int(value, 64) if isinstance(value, str) else None


def build_clean_shutdown(broker_epoch: int | None, version: int = 0) -> bytes:
    """The file as Kafka writes it: ``{"version":V,"brokerEpoch":N}``, or empty (``broker_epoch=None``,
    as before Kafka 3.7)."""
    import json

    if broker_epoch is None:
        return b""
    content = {"version": version, "brokerEpoch": broker_epoch}
    return json.dumps(content, separators=(",", ":")).encode("ascii")
