"""``__remote_log_metadata`` (tiered storage, KIP-405): the records ``TopicBasedRemoteLogMetadataManager`` writes,
one at a time, as ``RemoteLogMetadataSerde`` reads them (``storage/.../remote/metadata/storage/serialization/``).

The value is framed by ``BytesApiMessageSerde`` (``AbstractApiMessageSerde``: frame version, record type,
version; :mod:`formats.metadata_records`), then one of the ``storage`` schemas (``formats/schemas/storage/``):
``RemoteLogSegmentMetadataRecord`` (0), ``RemoteLogSegmentMetadataUpdateRecord`` (1),
``RemotePartitionDeleteMetadataRecord`` (2), ``RemoteLogSegmentMetadataSnapshotRecord`` (3). The key is null
(``ProducerManager.publishMessage``).
"""

from __future__ import annotations

import json
from typing import Any

from construct import ConstructError

from ..formats import kafka_schema as ks
from ..formats import metadata_records as mr
from .common import Undecodable
from .metadata import api_message_frame

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


def remote_log_metadata_record(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One ``__remote_log_metadata`` record: ``record_type``, ``version``, ``record`` (the schema name) and
    ``data`` (every field, as JSON); ``record`` and ``data`` null for a type or version newer than the schemas
    (``RemoteLogMetadataSerde`` refuses a type it does not know: :func:`unknown_record` words the finding)."""
    if value is None:
        raise Undecodable("null value (a remote log metadata record always has one)")
    try:
        record_type, version, body = api_message_frame(value)
    except (ConstructError, IndexError) as exc:
        raise Undecodable(f"remote log metadata record: the frame does not parse ({type(exc).__name__})") from exc
    name = mr.remote_log_metadata_schemas().get(record_type)
    if name is None or version not in ks.valid_versions(name):
        return {"record_type": record_type, "version": version, "record": None, "data": None}
    try:
        data = ks.decode(name, version, body)
    except ConstructError as exc:
        raise Undecodable(f"{name} v{version}: {str(exc).splitlines()[-1]}") from exc
    return {"record_type": record_type, "version": version, "record": name, "data": json.dumps(data)}


def unknown_record(decoded: dict[str, Any]) -> str | None:
    """Why a decoded record (:func:`remote_log_metadata_record`) has no fields: its type or version is newer than
    the schemas; None when it has them."""
    if decoded["record"] is not None:
        return None
    name = mr.remote_log_metadata_schemas().get(decoded["record_type"])
    if name is None:
        return (f"record type {decoded['record_type']} version {decoded['version']} is not one of the schemas' "
                f"({', '.join(f'{t} {n}' for t, n in sorted(mr.remote_log_metadata_schemas().items()))})")
    return (f"{name} version {decoded['version']} is newer than the schemas' "
            f"(versions {ks.schema(name)['validVersions']})")
