"""Records framed by ``AbstractApiMessageSerde`` (``server-common/.../serialization/AbstractApiMessageSerde.java``):
``__cluster_metadata`` (``MetadataRecordSerde``) and ``__remote_log_metadata`` (KIP-405, ``RemoteLogMetadataSerde``
through ``BytesApiMessageSerde``), and the KRaft control records of a metadata log (``ControlRecordUtils``).

A framed record's value: uvarint frame version (1, the only one; 0 was KRaft's 2.8 preview), uvarint record type
(the schema's ``apiKey``), uvarint record version, then the message at that version, to the end (bytes left over
are "garbage", ``AbstractApiMessageSerde.read``). Each type is one of Kafka's JSON schemas under ``schemas/``
(``metadata/`` for the metadata log, ``storage/`` for the remote log metadata topic), compiled by
:mod:`formats.kafka_schema`.

A KRaft control record (``ControlRecordType`` in its key, :mod:`formats.control`) holds its message
(``clients/.../common/message/``: ``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
``KRaftVersionRecord``, ``VotersRecord``), written and read at the schema version ``ControlRecordUtils`` calls
current (:data:`CONTROL_VERSION`); the message's own first field, ``Version`` (int16), is data.
"""

from __future__ import annotations

import functools

from . import kafka_schema as ks
from .internal_topics import METADATA_FRAME_VERSION, MetadataFrame

# ControlRecordUtils.*_CURRENT_VERSION: the schema version every KRaft control record is written and read at
CONTROL_VERSION = 0
# control type (formats.constants.CONTROL_TYPES) -> the schema of its value (ControlRecordUtils)
CONTROL_SCHEMAS = {
    "LEADER_CHANGE": "LeaderChangeMessage",
    "SNAPSHOT_HEADER": "SnapshotHeaderRecord",
    "SNAPSHOT_FOOTER": "SnapshotFooterRecord",
    "KRAFT_VERSION": "KRaftVersionRecord",
    "KRAFT_VOTERS": "VotersRecord",
}


def _by_api_key(folder: str) -> dict[int, str]:
    return {int(spec["apiKey"]): name for name, spec in ks.schemas().items()
            if spec["_path"].startswith(folder + "/") and spec.get("type") == "metadata"}


@functools.cache
def metadata_schemas() -> dict[int, str]:
    """Record type -> schema name of every ``__cluster_metadata`` record (``MetadataRecordType``)."""
    return _by_api_key("metadata")


@functools.cache
def remote_log_metadata_schemas() -> dict[int, str]:
    """Record type -> schema name of every ``__remote_log_metadata`` record (the ``storage`` module's
    ``MetadataRecordType``: 0 RemoteLogSegmentMetadataRecord, 1 ...UpdateRecord, 2 RemotePartitionDeleteMetadataRecord,
    3 RemoteLogSegmentMetadataSnapshotRecord)."""
    return _by_api_key("storage")


def frame(record_type: int, version: int) -> bytes:
    """The frame ``AbstractApiMessageSerde.write`` puts before a message."""
    return MetadataFrame.build({"frame_version": METADATA_FRAME_VERSION, "record_type": record_type,
                                "version": version})


def build_framed(schemas: dict[int, str], name: str, version: int, value: dict) -> bytes:
    """A framed record's value: ``value`` (a dict as :func:`formats.kafka_schema.decode` gives it) as schema
    ``name`` at ``version``, its type looked up in ``schemas`` (:func:`metadata_schemas` or
    :func:`remote_log_metadata_schemas`)."""
    record_type = next(t for t, n in schemas.items() if n == name)
    return frame(record_type, version) + ks.message(name, version).build(value)


def build_control_value(control_type: str, value: dict) -> bytes:
    """A KRaft control record's value: its message at :data:`CONTROL_VERSION` (``MemoryRecordsBuilder``'s
    ``appendLeaderChangeMessage``, ``RecordsSnapshotWriter``)."""
    return ks.message(CONTROL_SCHEMAS[control_type], CONTROL_VERSION).build(value)


__all__ = [
    "CONTROL_SCHEMAS",
    "CONTROL_VERSION",
    "build_control_value",
    "build_framed",
    "frame",
    "metadata_schemas",
    "remote_log_metadata_schemas",
]
