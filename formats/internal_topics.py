"""Keys and values of Kafka's internal topics: ``__consumer_offsets``, ``__transaction_state``,
``__share_group_state`` and ``__cluster_metadata``.

Declarations only (the byte layouts); ``kafkatool/internal.py`` turns parsed values into dataclasses.

``__consumer_offsets`` (``group-coordinator/src/main/resources/common/message/``; before 3.5 in
``core/src/main/resources/common/message/``): every record key starts with an int16 *key version*
that says which record it is (``GroupCoordinatorRecordSerde``):

- 0 and 1: ``OffsetCommitKey`` (group, topic, partition);
- 2: ``GroupMetadataKey`` (group);
- 3 and up (Kafka 4.x ``CoordinatorRecordType``, the key schema's apiKey): the KIP-848 consumer, share and streams
  group records, declared by Kafka's JSON schemas only (``formats/schemas/``, compiled by ``kafka_schema.py``),
  which also read every record declared here; ``tests/test_kafka_schema.py`` holds the two equal on the corpus.

Every value starts with an int16 *value version*, then that version's fields:

- ``OffsetCommitValue.json`` v0..4 (v4 flexible): offset, leaderEpoch (v3+), metadata, commitTimestamp,
  expireTimestamp (v1 only).
- ``GroupMetadataValue.json`` v0..4 (v4 flexible): protocolType, generation, protocol (nullable), leader
  (nullable), currentStateTimestamp (v2+), members; a member: memberId, groupInstanceId (v3+, nullable),
  clientId, clientHost, rebalanceTimeout (v1+), sessionTimeout, subscription, assignment.

A null value is a tombstone (the group or the committed offset was deleted).

``__cluster_metadata`` (KRaft; ``metadata/src/main/resources/common/metadata/*.json``, framed by
``AbstractApiMessageSerde``): uvarint frame version (1, the only one), uvarint record type (the ``apiKey``), uvarint
record version, then the record body. Metadata records are flexible from version 0: compact strings and
arrays, and tagged fields at the end of every struct.

Non-flexible versions use int16-length strings (-1 = null) and int32-length bytes and arrays; flexible
versions their compact forms (uvarint ``length + 1``, 0 = null). Every length bounds what it covers.
"""

from __future__ import annotations

from collections.abc import Callable

from construct import (
    Array,
    Construct,
    Flag,
    If,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    Struct,
    Switch,
    this,
)
from construct.core import Bytes, StringEncoded

from .primitives import compact_length, tagged_fields, uuid, uvarint

# --- strings, bytes and arrays in both encodings --------------------------------------------------


def _nullable(length_field: Construct, body) -> Struct:
    return Struct("length" / length_field, "value" / If(this.length >= 0, body))


string16 = _nullable(Int16sb, StringEncoded(Bytes(this.length), "utf8"))          # ``string`` (v < flexible)
compact_nullable_string = _nullable(compact_length, StringEncoded(Bytes(this.length), "utf8"))
bytes32 = _nullable(Int32sb, Bytes(this.length))                                 # ``bytes`` (v < flexible)
compact_bytes = _nullable(compact_length, Bytes(this.length))


def array32(element: Construct) -> Struct:
    """Non-flexible array: int32 count (-1 = null), then ``count`` elements."""
    return Struct("count" / Int32sb, "entries" / If(this.count >= 0, Array(this.count, element)))


def compact_array(element: Construct) -> Struct:
    """Flexible array: uvarint ``count + 1`` (0 = null), then ``count`` elements."""
    return Struct("count" / compact_length, "entries" / If(this.count >= 0, Array(this.count, element)))


def _str(flexible: bool) -> Struct:
    return compact_nullable_string if flexible else string16


def _array(flexible: bool) -> Callable[[Construct], Struct]:
    return compact_array if flexible else array32


def _versioned(body: Callable[[int], Struct], versions: range) -> Struct:
    """A coordinator record's value: its int16 version, then the fields ``body`` declares for that version (one of
    ``versions``; any other parses to no body)."""
    return Struct("version" / Int16sb, "body" / Switch(this.version, {v: body(v) for v in versions}))


def _tags(flexible: bool) -> list:
    return ["tagged_fields" / tagged_fields] if flexible else []


# --- __consumer_offsets ---------------------------------------------------------------------------

KEY_OFFSET_COMMIT = (0, 1)
KEY_GROUP_METADATA = 2

CoordinatorKeyVersion = Struct("version" / Int16sb)

OffsetCommitKey = Struct(
    "version" / Int16sb,
    "group" / string16,
    "topic" / string16,
    "partition" / Int32sb,
)

GroupMetadataKey = Struct("version" / Int16sb, "group" / string16)


def offset_commit_value(version: int) -> Struct:
    """``OffsetCommitValue`` of one version (after its int16 version)."""
    flexible = version >= 4
    return Struct(
        "offset" / Int64sb,
        *(["leader_epoch" / Int32sb] if version >= 3 else []),
        "metadata" / _str(flexible),
        "commit_timestamp" / Int64sb,
        *(["expire_timestamp" / Int64sb] if version == 1 else []),
        *_tags(flexible),
    )


def _member(version: int) -> Struct:
    flexible = version >= 4
    s = _str(flexible)
    b = compact_bytes if flexible else bytes32
    return Struct(
        "member_id" / s,
        *(["group_instance_id" / s] if version >= 3 else []),
        "client_id" / s,
        "client_host" / s,
        *(["rebalance_timeout" / Int32sb] if version >= 1 else []),
        "session_timeout" / Int32sb,
        "subscription" / b,
        "assignment" / b,
        *_tags(flexible),
    )


def group_metadata_value(version: int) -> Struct:
    """``GroupMetadataValue`` of one version (after its int16 version)."""
    flexible = version >= 4
    s = _str(flexible)
    return Struct(
        "protocol_type" / s,
        "generation" / Int32sb,
        "protocol" / s,
        "leader" / s,
        *(["current_state_timestamp" / Int64sb] if version >= 2 else []),
        "members" / _array(flexible)(_member(version)),
        *_tags(flexible),
    )


OFFSET_COMMIT_VALUE_VERSIONS = range(0, 5)
GROUP_METADATA_VALUE_VERSIONS = range(0, 5)

OffsetCommitValue = _versioned(offset_commit_value, OFFSET_COMMIT_VALUE_VERSIONS)
GroupMetadataValue = _versioned(group_metadata_value, GROUP_METADATA_VALUE_VERSIONS)

# --- __transaction_state -------------------------------------------------------------------------
# ``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`` / ``TransactionLogValue.json``
# (before 4.0 under ``core/``): key = int16 version (0) + transactionalId; value v0, or v1 flexible.

TransactionLogKey = Struct("version" / Int16sb, "transactional_id" / string16)


def _txn_partitions(flexible: bool) -> Struct:
    return Struct(
        "topic" / _str(flexible),
        "partition_ids" / _array(flexible)(Int32sb),
        *_tags(flexible),
    )


def transaction_log_value(version: int) -> Struct:
    """``TransactionLogValue`` of one version (after its int16 version). v1 adds, as tags: 0 PreviousProducerId
    (int64), 1 NextProducerId (int64), 2 ClientTransactionVersion (int16): ``TRANSACTION_LOG_VALUE_TAGS``."""
    flexible = version >= 1
    return Struct(
        "producer_id" / Int64sb,
        "producer_epoch" / Int16sb,
        "transaction_timeout_ms" / Int32sb,
        "transaction_status" / Int8sb,
        "transaction_partitions" / _array(flexible)(_txn_partitions(flexible)),
        "transaction_last_update_timestamp_ms" / Int64sb,
        "transaction_start_timestamp_ms" / Int64sb,
        *_tags(flexible),
    )


TRANSACTION_LOG_VALUE_VERSIONS = range(0, 2)
TransactionLogValue = _versioned(transaction_log_value, TRANSACTION_LOG_VALUE_VERSIONS)
TRANSACTION_LOG_VALUE_TAGS = {
    0: ("previous_producer_id", Int64sb),
    1: ("next_producer_id", Int64sb),
    2: ("client_transaction_version", Int16sb),
}
# ``TransactionState`` ids (``TransactionState.java`` / ``TransactionMetadata.scala``).
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

# --- __share_group_state -------------------------------------------------------------------------
# ``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json`` (KIP-932), read
# by ``ShareCoordinatorRecordSerde`` (``CoordinatorRecordSerde``): the key starts with an int16 *record type*
# (``CoordinatorRecordType``: 0 ShareSnapshot, 1 ShareUpdate; before the coordinator-key generator of 4.0 it was
# the key version, with the same numbers), then GroupId (string), TopicId (uuid), Partition (int32), not
# flexible. The value starts with an int16 version (0, the only one), then a flexible body; the record type in
# the key says which value it is (both are version 0).
#
# KIP-932 was early access in Kafka 4.0 ("subject to non-backwards-compatible changes") and the value layout
# changed within version 0, so it is declared per release (``SHARE_STATE_LAYOUTS``, newest first):
# - "4.0": SnapshotEpoch uint16; ShareSnapshotValue: StateEpoch, LeaderEpoch, StartOffset, StateBatches.
# - "4.1+": SnapshotEpoch int32 (apache/kafka#20016); ShareSnapshotValue gains CreateTimestamp and
#   WriteTimestamp (int64, after StartOffset; KAFKA-18170, apache/kafka#19432). Kafka 4.2 adds
#   DeliveryCompleteCount (KIP-1226, apache/kafka#20810) to both values as a tagged field (absent at its
#   default -1): ``SHARE_STATE_VALUE_TAGS``.
# A StateBatch: FirstOffset, LastOffset (int64), DeliveryState (int8: 0 Available, 2 Acked, 4 Archived),
# DeliveryCount (int16), tagged fields.

SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
SHARE_RECORD_NAMES = {SHARE_SNAPSHOT: "ShareSnapshot", SHARE_UPDATE: "ShareUpdate"}

ShareStateKey = Struct(
    "record_type" / Int16sb,
    "group_id" / string16,
    "topic_id" / uuid,
    "partition" / Int32sb,
)

_StateBatch = Struct(
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "delivery_state" / Int8sb,
    "delivery_count" / Int16sb,
    "tagged_fields" / tagged_fields,
)

SHARE_STATE_LAYOUTS = ("4.1+", "4.0")
SHARE_STATE_VALUE_VERSIONS = range(0, 1)


def share_state_value(record_type: int, layout: str = "4.1+") -> Struct:
    """``ShareSnapshotValue`` (record type 0) or ``ShareUpdateValue`` (1), with its int16 version, as the Kafka
    release ``layout`` (a :data:`SHARE_STATE_LAYOUTS` name) wrote it."""
    snapshot = record_type == SHARE_SNAPSHOT
    current = layout != "4.0"
    return Struct(
        "version" / Int16sb,
        "snapshot_epoch" / (Int32sb if current else Int16ub),
        *(["state_epoch" / Int32sb] if snapshot else []),
        "leader_epoch" / Int32sb,
        "start_offset" / Int64sb,
        *(["create_timestamp" / Int64sb, "write_timestamp" / Int64sb] if snapshot and current else []),
        "state_batches" / compact_array(_StateBatch),
        "tagged_fields" / tagged_fields,
    )


SHARE_STATE_VALUE_TAGS = {0: ("delivery_complete_count", Int32sb)}
# ``RecordState`` ids a state batch persists (``server/share/.../RecordState.java``; Acquired is not persisted)
DELIVERY_STATES = {0: "Available", 1: "Acquired", 2: "Acked", 4: "Archived"}

# --- __cluster_metadata ---------------------------------------------------------------------------

METADATA_FRAME_VERSION = 1
MetadataFrame = Struct("frame_version" / uvarint, "record_type" / uvarint, "version" / uvarint)

int32_array = compact_array(Int32sb)
uuid_array = compact_array(uuid)

REGISTER_BROKER, TOPIC, PARTITION, CONFIG, PARTITION_CHANGE, REMOVE_TOPIC, FEATURE_LEVEL = 0, 2, 3, 4, 5, 9, 12
UNREGISTER_BROKER, FENCE_BROKER, UNFENCE_BROKER, PRODUCER_IDS, BROKER_REGISTRATION_CHANGE = 1, 7, 8, 15, 17
NO_OP, ZK_MIGRATION_STATE, REGISTER_CONTROLLER, CLEAR_ELR = 20, 21, 27, 28
BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25

# Every metadata record type Kafka defines (``metadata/src/main/resources/common/metadata/*.json`` apiKey), so a
# type whose layout is not declared here is still named as Kafka names it.
METADATA_RECORD_NAMES = {
    0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord",
    4: "ConfigRecord", 5: "PartitionChangeRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord", 10: "DelegationTokenRecord", 11: "UserScramCredentialRecord", 12: "FeatureLevelRecord",
    14: "ClientQuotaRecord", 15: "ProducerIdsRecord", 17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord", 19: "RemoveAccessControlEntryRecord", 20: "NoOpRecord",
    21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord", 23: "BeginTransactionRecord", 24: "EndTransactionRecord",
    25: "AbortTransactionRecord", 26: "RemoveDelegationTokenRecord", 27: "RegisterControllerRecord",
}

_BrokerEndpoint = Struct(
    "name" / compact_nullable_string,
    "host" / compact_nullable_string,
    "port" / Int16ub,
    "security_protocol" / Int16sb,
    "tagged_fields" / tagged_fields,
)
_BrokerFeature = Struct(
    "name" / compact_nullable_string,
    "min_supported_version" / Int16sb,
    "max_supported_version" / Int16sb,
    "tagged_fields" / tagged_fields,
)


def register_broker_record(version: int) -> Struct:
    """``RegisterBrokerRecord.json`` (api key 0); LogDirs (v3+) is tag 0."""
    return Struct(
        "broker_id" / Int32sb,
        *(["is_migrating_zk_broker" / Flag] if version >= 2 else []),
        "incarnation_id" / uuid,
        "broker_epoch" / Int64sb,
        "endpoints" / compact_array(_BrokerEndpoint),
        "features" / compact_array(_BrokerFeature),
        "rack" / compact_nullable_string,
        "fenced" / Flag,
        *(["in_controlled_shutdown" / Flag] if version >= 1 else []),
        "tagged_fields" / tagged_fields,
    )


TopicRecord = Struct("name" / compact_nullable_string, "topic_id" / uuid, "tagged_fields" / tagged_fields)


def partition_record(version: int, directories_from: int = 1) -> Struct:
    """``PartitionRecord.json`` (api key 3): Directories (KIP-858) is a plain field from v1, the eligible
    leader replicas (KIP-966) tags 1 and 2 from v2. Trunk builds of early 2024 (3.8.0-SNAPSHOT) wrote v1 with
    the ELR tags and no Directories (``directories_from=2``): ``PARTITION_RECORD_V1_PRERELEASE``."""
    return Struct(
        "partition_id" / Int32sb,
        "topic_id" / uuid,
        "replicas" / int32_array,
        "isr" / int32_array,
        "removing_replicas" / int32_array,
        "adding_replicas" / int32_array,
        "leader" / Int32sb,
        "leader_epoch" / Int32sb,
        "partition_epoch" / Int32sb,
        *(["directories" / uuid_array] if version >= directories_from else []),
        "tagged_fields" / tagged_fields,
    )


PARTITION_RECORD_V1_PRERELEASE = partition_record(1, directories_from=2)

# Tagged fields, by tag: (name, layout of the tag's bytes).
PARTITION_RECORD_TAGS = {
    0: ("leader_recovery_state", Int8sb),
    1: ("eligible_leader_replicas", int32_array),
    2: ("last_known_elr", int32_array),
}

PartitionChangeRecord = Struct("partition_id" / Int32sb, "topic_id" / uuid, "tagged_fields" / tagged_fields)

PARTITION_CHANGE_TAGS = {
    0: ("isr", int32_array),
    1: ("leader", Int32sb),          # -1 no leader now, -2 (absent) unchanged
    2: ("replicas", int32_array),
    3: ("removing_replicas", int32_array),
    4: ("adding_replicas", int32_array),
    5: ("leader_recovery_state", Int8sb),
    6: ("eligible_leader_replicas", int32_array),
    7: ("last_known_elr", int32_array),
    8: ("directories", uuid_array),
}

# ``ConfigRecord.json`` (api key 4): a dynamic config set (or, with a null value, deleted) on one resource.
# ``ResourceType`` is ``ConfigResource.Type``'s id; a BROKER resource named "" is the cluster-wide default.
ConfigRecord = Struct(
    "resource_type" / Int8sb,
    "resource_name" / compact_nullable_string,  # non-null strings in the schema: null would be a finding
    "name" / compact_nullable_string,
    "value" / compact_nullable_string,
    "tagged_fields" / tagged_fields,
)
CONFIG_RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}

RemoveTopicRecord = Struct("topic_id" / uuid, "tagged_fields" / tagged_fields)

FeatureLevelRecord = Struct(
    "name" / compact_nullable_string,
    "feature_level" / Int16sb,
    "tagged_fields" / tagged_fields,
)

# ``UnregisterBrokerRecord``, ``FenceBrokerRecord``, ``UnfenceBrokerRecord``: a broker id and epoch.
BrokerIdEpochRecord = Struct("broker_id" / Int32sb, "broker_epoch" / Int64sb, "tagged_fields" / tagged_fields)

ProducerIdsRecord = Struct(
    "broker_id" / Int32sb,
    "broker_epoch" / Int64sb,
    "next_producer_id" / Int64sb,
    "tagged_fields" / tagged_fields,
)

# ``BrokerRegistrationChangeRecord`` v0-2: Fenced (tag 0), InControlledShutdown (tag 1, v1+), LogDirs (tag 2, v2+).
BrokerRegistrationChangeRecord = Struct("broker_id" / Int32sb, "broker_epoch" / Int64sb,
                                        "tagged_fields" / tagged_fields)
BROKER_REGISTRATION_CHANGE_TAGS = {
    0: ("fenced", Int8sb),
    1: ("in_controlled_shutdown", Int8sb),
    2: ("log_dirs", uuid_array),
}

NoOpRecord = Struct("tagged_fields" / tagged_fields)  # the active controller's heartbeat: no fields

# ``ZkMigrationRecord.json`` (named ZkMigrationStateRecord): the KRaft migration state, ``ZkMigrationState`` ids.
ZkMigrationStateRecord = Struct("zk_migration_state" / Int8sb, "tagged_fields" / tagged_fields)
ZK_MIGRATION_STATES = {0: "NONE", 1: "PRE_MIGRATION", 2: "MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}

# Metadata transactions (KIP-868): Begin (Name, tag 0), End, Abort (Reason, tag 0); fields only as tags.
MetadataTransactionRecord = Struct("tagged_fields" / tagged_fields)
METADATA_TRANSACTION_TAGS = {0: ("text", compact_nullable_string)}

_ControllerEndpoint = Struct(
    "name" / compact_nullable_string,
    "host" / compact_nullable_string,
    "port" / Int16ub,
    "security_protocol" / Int16sb,
    "tagged_fields" / tagged_fields,
)
RegisterControllerRecord = Struct(
    "controller_id" / Int32sb,
    "incarnation_id" / uuid,
    "zk_migration_ready" / Flag,
    "endpoints" / compact_array(_ControllerEndpoint),
    "features" / compact_array(_BrokerFeature),
    "tagged_fields" / tagged_fields,
)

# (record type, highest version declared here) -> layout factory. ``FeatureLevelRecord`` v0 once had
# min/max levels; Kafka shipped it with one ``FeatureLevel`` field, which is what brokers wrote.
METADATA_RECORDS: dict[int, tuple[str, range, object]] = {
    REGISTER_BROKER: ("RegisterBrokerRecord", range(0, 4), register_broker_record),
    TOPIC: ("TopicRecord", range(0, 1), lambda v: TopicRecord),
    PARTITION: ("PartitionRecord", range(0, 3), partition_record),
    CONFIG: ("ConfigRecord", range(0, 1), lambda v: ConfigRecord),
    PARTITION_CHANGE: ("PartitionChangeRecord", range(0, 3), lambda v: PartitionChangeRecord),
    REMOVE_TOPIC: ("RemoveTopicRecord", range(0, 1), lambda v: RemoveTopicRecord),
    FEATURE_LEVEL: ("FeatureLevelRecord", range(0, 1), lambda v: FeatureLevelRecord),
    UNREGISTER_BROKER: ("UnregisterBrokerRecord", range(0, 1), lambda v: BrokerIdEpochRecord),
    FENCE_BROKER: ("FenceBrokerRecord", range(0, 1), lambda v: BrokerIdEpochRecord),
    UNFENCE_BROKER: ("UnfenceBrokerRecord", range(0, 1), lambda v: BrokerIdEpochRecord),
    PRODUCER_IDS: ("ProducerIdsRecord", range(0, 1), lambda v: ProducerIdsRecord),
    BROKER_REGISTRATION_CHANGE: ("BrokerRegistrationChangeRecord", range(0, 3),
                                 lambda v: BrokerRegistrationChangeRecord),
    NO_OP: ("NoOpRecord", range(0, 1), lambda v: NoOpRecord),
    REGISTER_CONTROLLER: ("RegisterControllerRecord", range(0, 1), lambda v: RegisterControllerRecord),
    ZK_MIGRATION_STATE: ("ZkMigrationStateRecord", range(0, 1), lambda v: ZkMigrationStateRecord),
    BEGIN_TRANSACTION: ("BeginTransactionRecord", range(0, 1), lambda v: MetadataTransactionRecord),
    END_TRANSACTION: ("EndTransactionRecord", range(0, 1), lambda v: MetadataTransactionRecord),
    ABORT_TRANSACTION: ("AbortTransactionRecord", range(0, 1), lambda v: MetadataTransactionRecord),
}

__all__ = [
    "BROKER_REGISTRATION_CHANGE_TAGS",
    "CONFIG_RESOURCE_TYPES",
    "METADATA_RECORD_NAMES",
    "ConfigRecord",
    "GROUP_METADATA_VALUE_VERSIONS",
    "KEY_GROUP_METADATA",
    "KEY_OFFSET_COMMIT",
    "METADATA_FRAME_VERSION",
    "METADATA_RECORDS",
    "OFFSET_COMMIT_VALUE_VERSIONS",
    "PARTITION_CHANGE_TAGS",
    "PARTITION_RECORD_TAGS",
    "PARTITION_RECORD_V1_PRERELEASE",
    "CoordinatorKeyVersion",
    "DELIVERY_STATES",
    "SHARE_RECORD_NAMES",
    "SHARE_SNAPSHOT",
    "SHARE_STATE_LAYOUTS",
    "SHARE_STATE_VALUE_TAGS",
    "SHARE_STATE_VALUE_VERSIONS",
    "SHARE_UPDATE",
    "ShareStateKey",
    "share_state_value",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MetadataFrame",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "TRANSACTION_LOG_VALUE_TAGS",
    "TRANSACTION_LOG_VALUE_VERSIONS",
    "TRANSACTION_STATES",
    "TransactionLogKey",
    "TransactionLogValue",
]
