"""The ``kafka-log`` data source's rows as Spark schemas, one per level: ``batches`` (the fields of Kafka's
``RecordBatch`` header), ``records`` (a ``Record`` each, with its batch's CRC verdict), ``findings``; and
the ``decoded`` struct per internal topic (option ``decode``).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

_SOURCE = [
    StructField("topic", StringType()),
    StructField("partition", IntegerType(), False),
    StructField("segment", LongType()),       # base offset from the file name (null: not a Kafka name)
    StructField("file", StringType(), False),
]

BATCH_FIELDS = [
    StructField("position", LongType(), False),
    StructField("base_offset", LongType(), False),
    StructField("last_offset", LongType(), False),
    StructField("partition_leader_epoch", IntegerType()),
    StructField("magic", IntegerType(), False),
    StructField("compression", StringType(), False),
    StructField("timestamp_type", StringType(), False),
    StructField("first_timestamp", LongType(), False),
    StructField("max_timestamp", LongType(), False),
    StructField("producer_id", LongType()),
    StructField("producer_epoch", IntegerType()),
    StructField("base_sequence", IntegerType()),
    StructField("transactional", BooleanType()),
    StructField("control", BooleanType()),
    StructField("crc", LongType(), False),
    StructField("crc_valid", BooleanType(), False),
    StructField("size", IntegerType(), False),
    StructField("record_count", IntegerType(), False),
    StructField("delete_horizon_ms", LongType()),  # set by the log cleaner on batches with tombstones
    StructField("control_type", StringType()),  # ABORT / COMMIT / ... for control batches
]
BATCHES = StructType(_SOURCE + BATCH_FIELDS)

HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])


_MEMBER = StructType([
    StructField("member_id", StringType()),
    StructField("group_instance_id", StringType()),
    StructField("client_id", StringType()),
    StructField("client_host", StringType()),
    StructField("rebalance_timeout", IntegerType()),
    StructField("session_timeout", IntegerType()),
    StructField("subscription_bytes", IntegerType()),
    StructField("assignment_bytes", IntegerType()),
])

# The ``decoded`` column per ``decode`` option: the fields of kafkatool.internal's per-record decoders
# (offsets_record, transaction_record, share_state_record, metadata_record, remote_log_metadata_record); a field a
# record does not have is null.
DECODED = {
    "consumer-offsets": StructType([
        StructField("kind", StringType()),  # offset_commit | group_metadata | the KIP-848 record's name, snake_case
        StructField("key_version", IntegerType()),
        StructField("group", StringType()),
        StructField("topic", StringType()),  # offset_commit: the committed topic partition
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("leader_epoch", IntegerType()),
        StructField("metadata", StringType()),
        StructField("commit_timestamp", LongType()),
        StructField("expire_timestamp", LongType()),
        StructField("protocol_type", StringType()),  # group_metadata
        StructField("generation", IntegerType()),
        StructField("protocol", StringType()),
        StructField("leader", StringType()),
        StructField("current_state_timestamp", LongType()),
        StructField("members", ArrayType(_MEMBER, False)),
        StructField("value_version", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the key is deleted
        StructField("record", StringType()),  # Kafka's schema name (OffsetCommit, ConsumerGroupMemberMetadata...)
        StructField("key", StringType()),  # every field of the key, by Kafka's schema, as JSON (as dump --decode)
        StructField("value", StringType()),  # every field of the value as JSON; null for a tombstone
    ]),
    "transaction-state": StructType([
        StructField("transactional_id", StringType()),
        StructField("producer_id", LongType()),
        StructField("producer_epoch", IntegerType()),
        StructField("timeout_ms", IntegerType()),
        StructField("state", StringType()),  # Empty, Ongoing, PrepareCommit, ..., CompleteAbort
        StructField("partitions", ArrayType(StructType([StructField("topic", StringType()),
                                                        StructField("partition", IntegerType())]), False)),
        StructField("last_update_timestamp", LongType()),
        StructField("start_timestamp", LongType()),
        StructField("previous_producer_id", LongType()),
        StructField("next_producer_id", LongType()),
        StructField("client_transaction_version", IntegerType()),
        StructField("value_version", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the transactional id expired
        StructField("record", StringType()),  # Kafka's schema name (OffsetCommit, ConsumerGroupMemberMetadata...)
        StructField("key", StringType()),  # every field of the key, by Kafka's schema, as JSON (as dump --decode)
        StructField("value", StringType()),  # every field of the value as JSON; null for a tombstone
    ]),
    "share-group-state": StructType([
        StructField("kind", StringType()),  # share_snapshot | share_update
        StructField("record_type", IntegerType()),
        StructField("group", StringType()),
        StructField("topic_id", StringType()),  # as Kafka prints a Uuid
        StructField("partition", IntegerType()),
        StructField("tombstone", BooleanType()),  # a null value: the share-partition's state deleted
        StructField("record", StringType()),  # Kafka's schema name (OffsetCommit, ConsumerGroupMemberMetadata...)
        StructField("key", StringType()),  # every field of the key, by Kafka's schema, as JSON (as dump --decode)
        StructField("value", StringType()),  # every field of the value as JSON; null for a tombstone
        StructField("value_version", IntegerType()),
        StructField("layout", StringType()),  # the Kafka release layout of value version 0: 4.1+ or 4.0
        StructField("snapshot_epoch", IntegerType()),
        StructField("state_epoch", IntegerType()),  # share_snapshot only
        StructField("leader_epoch", IntegerType()),
        StructField("start_offset", LongType()),
        StructField("delivery_complete_count", IntegerType()),  # KIP-1226 tag; null when absent
        StructField("create_timestamp", LongType()),  # share_snapshot, 4.1+
        StructField("write_timestamp", LongType()),
        StructField("state_batches", ArrayType(StructType([
            StructField("first_offset", LongType()), StructField("last_offset", LongType()),
            StructField("delivery_state", StringType()),  # Available, Acked, Archived
            StructField("delivery_count", IntegerType())]), False)),
    ]),
    "cluster-metadata": StructType([
        StructField("record_type", IntegerType()),
        StructField("version", IntegerType()),
        StructField("name", StringType()),  # TopicRecord, PartitionRecord, ... or "type N"
        StructField("decoded", BooleanType()),  # whether this type and version's fields are declared here
        StructField("fields", StringType()),  # the fields as JSON, as metadata --all -f jsonl shows them
        StructField("record", StringType()),  # the schema name; null for a type or version newer than the schemas
        StructField("data", StringType()),  # every field as JSON, as dump --decode shows them
    ]),
    "remote-log-metadata": StructType([
        StructField("record_type", IntegerType()),
        StructField("version", IntegerType()),
        StructField("record", StringType()),  # RemoteLogSegmentMetadataRecord, ...; null when newer than the schemas
        StructField("data", StringType()),  # every field as JSON, as dump --decode shows them
    ]),
}


def records_schema(values: str = "binary", decode: str | None = None, decoded: tuple[str, ...] = (),
                   structs: dict[str, DataType] | None = None) -> StructType:
    """The records level's rows; ``decode``: the internal topic's ``decoded`` struct; ``decoded``: the sides (key,
    value) options keyDecoder/valueDecoder decode, each a JSON text and a schema id column; ``structs``: the sides
    with a ``<side>_struct`` column, and its type (:mod:`kafkatool.spark.structs`)."""
    fields = [
        *_SOURCE,
        StructField("offset", LongType(), False),
        StructField("timestamp", LongType(), False),
        StructField("key", BinaryType()),
    ]
    if values == "binary":
        fields.append(StructField("value", BinaryType()))
    elif values == "base64":
        fields.append(StructField("value", StringType()))
    fields += [
        StructField("headers", ArrayType(HEADER, False), False),
        StructField("batch_base_offset", LongType(), False),
        StructField("control_type", StringType()),
        StructField("crc_valid", BooleanType(), False),  # the record's batch's CRC: false, its bytes are damaged
        # Null for a record. A row of its own, with null key and value, for the records of a batch that
        # could not be decoded (decompression failed, a record cut short...): "<code>: <reason>", at the
        # first offset not decoded; the records before it in the batch are rows as usual.
        StructField("error", StringType()),
    ]
    if decode is not None:
        fields += [StructField("decoded", DECODED[decode]), StructField("decode_error", StringType())]
    for side in decoded:
        fields += [StructField(f"{side}_decoded", StringType()), StructField(f"{side}_schema_id", IntegerType())]
        if structs and side in structs:
            fields.append(StructField(f"{side}_struct", structs[side]))
    return StructType(fields)


FINDINGS = StructType([
    *_SOURCE,
    StructField("severity", StringType(), False),
    StructField("code", StringType(), False),
    StructField("position", LongType()),
    StructField("message", StringType(), False),
])


__all__ = ["BATCHES", "BATCH_FIELDS", "DECODED", "FINDINGS", "HEADER", "records_schema"]
