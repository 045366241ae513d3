"""Control records: the key and value of records in a control batch.

Key (``ControlRecordType.java``): int16 version (0), int16 type.
Values, by type:
- ABORT / COMMIT: ``EndTransactionMarker.java``: int16 version, int32 coordinator epoch
  (newer versions may append fields; readers ignore what follows).
- LEADER_CHANGE: ``LeaderChangeMessage.json`` (flexible v0+): leader id, voters, granting voters.
- SNAPSHOT_HEADER / SNAPSHOT_FOOTER: ``SnapshotHeaderRecord.json`` / ``SnapshotFooterRecord.json``.
- KRAFT_VERSION: ``KRaftVersionRecord.json``; KRAFT_VOTERS: ``VotersRecord.json`` (KIP-853).

All values start with an int16 version; the KRaft ones are generated flexible-version messages
(compact arrays, tagged fields) whose layouts are declared here for version 0.
"""

from __future__ import annotations

from construct import Array, Int16sb, Int16ub, Int32sb, Int64sb, Struct, this

from .constants import CONTROL_TYPES
from .primitives import compact_array, compact_string, tagged_fields, uuid

ControlRecordKey = Struct("version" / Int16sb, "type" / Int16sb)

EndTransactionMarker = Struct("version" / Int16sb, "coordinator_epoch" / Int32sb)

_Voter = Struct("voter_id" / Int32sb, "tagged_fields" / tagged_fields)

LeaderChangeMessage = Struct(
    "version" / Int16sb,
    "leader_id" / Int32sb,
    "voters" / compact_array(_Voter),
    "granting_voters" / compact_array(_Voter),
    "tagged_fields" / tagged_fields,
)

SnapshotHeaderRecord = Struct(
    "version" / Int16sb,
    "last_contained_log_timestamp" / Int64sb,
    "tagged_fields" / tagged_fields,
)

SnapshotFooterRecord = Struct("version" / Int16sb, "tagged_fields" / tagged_fields)

KRaftVersionRecord = Struct(
    "version" / Int16sb,
    "kraft_version" / Int16sb,
    "tagged_fields" / tagged_fields,
)

_Endpoint = Struct(
    "name" / compact_string,
    "host" / compact_string,
    "port" / Int16ub,
    "tagged_fields" / tagged_fields,
)
_KRaftVersionFeature = Struct(
    "min_supported_version" / Int16sb,
    "max_supported_version" / Int16sb,
    "tagged_fields" / tagged_fields,
)
_VoterWithEndpoints = Struct(
    "voter_id" / Int32sb,
    "voter_directory_id" / uuid,
    "endpoints" / compact_array(_Endpoint),
    "kraft_version_feature" / _KRaftVersionFeature,
    "tagged_fields" / tagged_fields,
)
VotersRecord = Struct(
    "version" / Int16sb,
    "voters" / compact_array(_VoterWithEndpoints),
    "tagged_fields" / tagged_fields,
)

CONTROL_VALUES = {
    "ABORT": EndTransactionMarker,
    "COMMIT": EndTransactionMarker,
    "LEADER_CHANGE": LeaderChangeMessage,
    "SNAPSHOT_HEADER": SnapshotHeaderRecord,
    "SNAPSHOT_FOOTER": SnapshotFooterRecord,
    "KRAFT_VERSION": KRaftVersionRecord,
    "KRAFT_VOTERS": VotersRecord,
}

__all__ = ["Array", "CONTROL_TYPES", "CONTROL_VALUES", "ControlRecordKey", "this"]
