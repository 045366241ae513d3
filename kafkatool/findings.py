"""The finding catalogue: every code kafkatool reports, its one severity, what it means and the Kafka rule it follows.

Kafka has no class for this; it is kafkatool's own vocabulary for what Kafka's readers (``LogSegment.recover``,
``LogLoader``, ``DefaultRecordBatch.ensureValid``, the checkpoint and index classes) do with a file. Every
:class:`~kafkatool.model.Finding` is built by :func:`finding`, which takes its severity from here, so one code has
one severity wherever it is found. ``docs/findings.md`` is generated from it (``python -m kafkatool.findings
--markdown``).
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from .model import Finding, Severity

KAFKATOOL = "kafkatool"  # the reference of the tool's own checks (no Kafka rule behind them)


class Entry(NamedTuple):
    """One finding code: how bad it is, what an SRE should understand by it, and whose rule it follows."""

    code: str
    severity: Severity
    meaning: str
    reference: str  # the Kafka class/method whose rule the check follows, or "kafkatool"


# One row per code: (code, severity, meaning, reference), read into Entry below.
_ENTRIES: tuple[Entry, ...] = tuple(Entry(*row) for row in (
    # --- record files (.log): framing, batches, records ----------------------------------------------------
    ("crc-mismatch", "error", "a batch's stored CRC does not match its bytes: corrupt; recovery cuts the "
     "segment there", "DefaultRecordBatch.ensureValid"),
    ("torn-tail", "error", "the file ends inside a batch (a crash during a write); recovery cuts it",
     "LogSegment.recover"),
    ("zero-filled-tail", "warning", "zero bytes from here to the end of the file: a preallocated segment "
     "(log.preallocate) or a crash after extending it; recovery ends the log here, no record is lost",
     "LogSegment.recover"),
    ("size-below-minimum", "error", "an entry's size field is below the smallest record: the framing is "
     "lost from here", "FileLogInputStream.nextBatch"),
    ("batch-too-large", "error", "an entry's size field is above --max-batch-bytes: taken as a corrupt "
     "length, the framing is lost from here", "FileLogInputStream.nextBatch"),
    ("corrupt-length", "error", "an entry's size runs past the end of the file, yet whole batches follow it: a "
     "corrupt length in the middle, not a torn tail; recovery truncates the segment there and drops what follows",
     "LogSegment.recover"),
    ("resynchronised", "warning", "whole batches with valid CRCs found again after the framing was lost: "
     "recovery truncates the segment at the damage and drops them; repair --salvage keeps a copy",
     "LogSegment.recover"),
    ("batch-too-small", "error", "a v2 batch is shorter than its own header", "DefaultRecordBatch.ensureValid"),
    ("unknown-magic", "error", "a magic byte that is not 0, 1 or 2: the framing cannot be trusted from here",
     "FileLogInputStream.nextBatch"),
    ("magic-above-v2", "error", "a magic byte above 2: the broker reads it as a v2 batch and its recovery "
     "keeps it", "FileLogInputStream.nextBatch"),
    ("record-invalid", "error", "a record of the batch does not parse: its records are lost",
     "DefaultRecord.readFrom"),
    ("records-trailing-bytes", "error", "bytes remain after a v2 batch's declared records",
     "DefaultRecordBatch.RecordIterator"),
    ("wrapper-trailing-bytes", "warning", "bytes after the last whole inner message of a v0/v1 compressed "
     "wrapper: Kafka's deep iterator stops there and ignores them",
     "AbstractLegacyRecordBatch.DeepRecordsIterator"),
    ("message-invalid", "error", "a v0/v1 message (or a compressed wrapper's inner message) does not parse",
     "LegacyRecord.ensureValid"),
    ("unknown-compression", "error", "a compression codec id Kafka does not define", "CompressionType.forId"),
    ("decompression-failed", "error", "a compressed batch cannot be decompressed: its records are lost",
     "CompressionType.wrapForInput"),
    ("decompression-limit", "error", "a batch decompresses to more than --max-decompressed: not decoded",
     KAFKATOOL),
    ("nested-compression", "error", "a compressed wrapper holds another compressed message",
     "AbstractLegacyRecordBatch.DeepRecordsIterator"),
    ("unknown-file-type", "warning", "not a Kafka log-dir file name: not read", "LogLoader.loadSegmentFiles"),
    ("base-offset-unknown", "warning", "no segment base offset in the file name: offsets shown relative to 0",
     "LogFileUtils.offsetFromFileName"),
    ("base-offset-overflow", "error", "a file named with an offset above 2^63-1: the broker cannot parse "
     "the name and fails to load the partition", "LogFileUtils.offsetFromFileName"),
    ("io-error", "error", "a file or dir that cannot be read (FIFO, device, socket, link to nothing or in a "
     "loop, unlistable dir): not read, exit 3", KAFKATOOL),
    ("file-too-large", "error", "a producer snapshot, checkpoint, partition.metadata, meta.properties or "
     "quorum-state larger than any the broker writes (64 MiB; a sparse hole, a hostile disk): not read", KAFKATOOL),
    # --- segments (verify) ---------------------------------------------------------------------------------
    ("offset-not-increasing", "error", "a batch's offsets do not follow the previous batch's",
     "LogSegment.recover"),
    ("offset-below-segment-base", "error", "a batch's offset is below its segment's base offset (file name)",
     "LogSegment.ensureOffsetInRange"),
    ("offset-beyond-segment-range", "error", "a batch's last offset does not fit its segment (base offset "
     "+ 2^31-1): recovery cuts the segment there", "LogSegment.ensureOffsetInRange"),
    ("record-count-mismatch", "error", "the records decoded differ in number from the batch header's count",
     "DefaultRecordBatch.RecordIterator"),
    ("record-offset-invalid", "error", "record offsets do not increase within their batch",
     "LogValidator.validateMessagesAndAssignOffsetsCompressed"),
    ("max-timestamp-mismatch", "warning", "the batch header's max timestamp is not its records' largest",
     "LogValidator.validateMessagesAndAssignOffsets"),
    ("timestamp-invalid", "warning", "a negative timestamp other than -1 (none)",
     "LogValidator.validateTimestamp"),
    ("timestamp-in-future", "warning", "a max timestamp more than a day ahead: retention and rolling will "
     "not treat the segment as old", "UnifiedLog.deleteRetentionMsBreachedSegments"),
    ("timestamp-order", "warning", "a CREATE_TIME batch's max timestamp is below its first timestamp",
     "DefaultRecordBatch"),
    ("control-batch-invalid", "error", "a control batch that does not parse as a control record",
     "ControlRecordType.parse"),
    ("control-type-unknown", "error", "a control record type Kafka does not define", "ControlRecordType"),
    ("segment-empty", "info", "a segment holding no batch", "LogSegment"),
    ("segment-overlap", "error", "a segment's base offset is not above the previous segment's last offset",
     "LogLoader.loadSegmentFiles"),
    ("segment-name-invalid", "error", "a segment file not named by a 20-digit base offset: the broker "
     "ignores it", "LogFileUtils.offsetFromFileName"),
    ("offset-gap", "warning", "offsets missing between two segments of a topic that is not compacted (a "
     "segment removed by hand?)", "UnifiedLog.append"),
    ("offset-gap-compacted", "info", "offsets missing between two segments of a compacted topic: the "
     "cleaner's work", "LogCleaner"),
    ("offset-gaps", "warning", "holes between the batches of a segment of a topic that is not compacted, "
     "counted", "UnifiedLog.append"),
    ("offset-gaps-compacted", "info", "holes between the batches of a segment of a compacted topic (the "
     "cleaner's work), counted", "LogCleaner"),
    ("recovery-truncates-log", "warning", "the broker's recovery cuts a segment at an invalid batch: the "
     "log end offset after loading is below the batches on disk", "LogSegment.recover"),
    ("log-end-below-log-start", "warning", "the log end offset is below the log start checkpoint: the "
     "broker deletes every segment", "UnifiedLog.maybeIncrementLogStartOffset"),
    # --- indexes -------------------------------------------------------------------------------------------
    ("index-missing", "info", "a segment of at most one index interval (index.interval.bytes) has no .index: "
     "the broker rebuilds it at start-up, empty anyway", "LogSegment.sanityCheck"),
    ("index-missing-large", "warning", "a segment of more than one index interval has no .index: the broker "
     "recovers the segment at start-up (slow); lookups scan the whole segment", "LogSegment.sanityCheck"),
    ("index-too-large", "error", "an index larger than any the broker writes: not read", "AbstractIndex"),
    ("index-size-not-multiple", "error", "an index whose size is not a whole number of entries",
     "OffsetIndex.sanityCheck"),
    ("index-last-offset-below-base", "error", "an index's last entry is below the segment's base offset",
     "OffsetIndex.sanityCheck"),
    ("index-preallocated", "info", "the active segment's index has preallocated slots: the broker was "
     "running or not shut down cleanly; it rebuilds it when it recovers the segment", "AbstractIndex.resize"),
    ("index-preallocated-rolled", "warning", "a rolled segment's index still has its preallocated slots: "
     "never trimmed; the broker reads the zero slots as entries unless it recovers the segment",
     "AbstractIndex.trimToValidSize"),
    ("index-entry-invalid", "error", "an index entry with a negative offset or position: garbage",
     "OffsetIndex.parseEntry"),
    ("index-not-increasing", "error", "index entries whose offsets or positions do not increase",
     "OffsetIndex.sanityCheck"),
    ("index-entries-after-empty-slot", "error", "an index entry after a never-written slot: scrambled",
     "AbstractIndex"),
    ("index-entry-not-batch-start", "error", "an index entry pointing inside a batch, not at its start",
     "OffsetIndex.lookup"),
    ("index-entry-points-too-far", "error", "an index entry pointing past the batch holding its offset: a "
     "lookup would miss it", "OffsetIndex.lookup"),
    ("index-entry-beyond-log", "error", "an index entry pointing past the last whole batch",
     "OffsetIndex.lookup"),
    ("index-sparse", "info", "a usable index, sparser or coarser than the broker writes",
     "LogSegment.append"),
    ("index-rebuild-impossible", "error", "the index of a recovered segment cannot be rebuilt from its batches",
     "LogSegment.recover"),
    ("timeindex-missing", "info", "a segment of at most one index interval has no .timeindex: the broker "
     "rebuilds it at start-up", "LogSegment.sanityCheck"),
    ("timeindex-missing-large", "warning", "a segment of more than one index interval has no .timeindex: the "
     "broker recovers the segment at start-up; until then retention misjudges it", "LogSegment.sanityCheck"),
    ("timeindex-size-not-multiple", "error", "a time index whose size is not a whole number of entries",
     "TimeIndex.sanityCheck"),
    ("timeindex-last-offset-below-base", "error", "a time index's last entry is below the segment's base "
     "offset", "TimeIndex.sanityCheck"),
    ("timeindex-last-timestamp-below-first", "error", "a time index's last timestamp is below its first",
     "TimeIndex.sanityCheck"),
    ("timeindex-entry-invalid", "error", "a time index entry with a negative offset or timestamp: garbage",
     "TimeIndex.parseEntry"),
    ("timeindex-not-increasing", "error", "time index entries whose timestamps or offsets go back",
     "TimeIndex.maybeAppend"),
    ("timeindex-entries-after-empty-slot", "error", "a time index entry after a never-written slot: scrambled",
     "AbstractIndex"),
    ("timeindex-entry-beyond-log", "error", "a time index entry beyond the segment's last offset",
     "TimeIndex.lookup"),
    ("timeindex-entry-wrong", "error", "a time index entry a search for an earlier batch's time would skip "
     "past", "TimeIndex.lookup"),
    ("timeindex-max-missing", "warning", "the time index lacks the segment's max timestamp: retention may "
     "delete the segment too early", "LogSegment.largestTimestamp"),
    ("timeindex-inexact", "info", "time index entries that name a batch whose max timestamp differs; "
     "lookups stay correct", "LogSegment.append"),
    ("txnindex-missing", "error", "aborted transactions in the log but no .txnindex: read_committed "
     "consumers would receive aborted records", "TransactionIndex"),
    ("txnindex-missing-rebuilt", "info", "aborted transactions in the log and no .txnindex, in a segment the "
     "broker recovers at start-up: it rebuilds the index from the log", "LogSegment.recover"),
    ("txnindex-missing-abort", "error", "an aborted transaction missing from the .txnindex: read_committed "
     "consumers would receive its records", "TransactionIndex"),
    ("txnindex-extra-entry", "error", "a .txnindex entry without an ABORT marker in the log: read_committed "
     "consumers would drop committed records", "TransactionIndex"),
    ("txnindex-wrong-entry", "error", "a .txnindex entry whose first offset differs from the log's",
     "TransactionIndex"),
    ("txnindex-wrong-lso", "warning", "a .txnindex entry whose last stable offset differs from the log's",
     "TransactionIndex"),
    ("read-committed-view-differs", "error", "dump --isolation read_committed shows what the broker serves: the "
     "aborted transactions of the segments' .txnindex files, which differ from the log's ABORT markers (aborted "
     "records delivered, or committed ones dropped)", "LogSegment.collectAbortedTxns"),
    ("txnindex-bad-version", "error", "a .txnindex entry of a version Kafka does not support",
     "AbortedTxn"),
    ("txnindex-odd-version", "warning", "a .txnindex entry whose version Kafka reads only in part, and accepts",
     "AbortedTxn"),
    ("txnindex-partial-entry", "warning", "trailing bytes of a .txnindex that are not a whole entry; Kafka "
     "ignores them", "TransactionIndex"),
    ("txnindex-last-offset-below-base", "error", "an aborted transaction ending before the segment's base "
     "offset", "TransactionIndex.sanityCheck"),
    ("orphan-index", "warning", "an index file without its .log: the broker deletes it at start-up",
     "LogLoader.loadSegmentFiles"),
    # --- partition and log dir files -----------------------------------------------------------------------
    ("leftover-deleted", "info", "a segment file scheduled for deletion; the broker deletes it at start-up",
     "LogLoader.removeTempFilesAndCollectSwapFiles"),
    ("leftover-cleaned", "warning", "output of an interrupted cleaner pass; the broker deletes it and cleans "
     "again", "LogLoader.removeTempFilesAndCollectSwapFiles"),
    ("leftover-swap", "warning", "an interrupted segment replacement; the broker completes it at start-up, "
     "so its contents become the log", "LogLoader.removeTempFilesAndCollectSwapFiles"),
    ("leftover-tmp", "info", "a temporary file of an interrupted write; the broker ignores or deletes it",
     "LogLoader.removeTempFilesAndCollectSwapFiles"),
    ("apply-interrupted", "warning", "left by an interrupted kafkatool --apply: run the same command with "
     "--apply again", KAFKATOOL),
    ("partition-pending-delete", "info", "a partition dir renamed for deletion; the broker deletes it",
     "LogManager.asyncDelete"),
    ("partition-future", "info", "a replica being moved between log dirs; the broker resumes the copy",
     "LogManager.maybeUpdatePreferredLogDir"),
    ("partition-stray", "info", "a stray replica the controller no longer assigns here; the broker deletes it",
     "LogManager.findStrayReplicas"),
    ("unknown-dir", "info", "a directory that is not a partition dir, or one inside a partition dir: the "
     "broker ignores it", "LogLoader.loadSegmentFiles"),
    ("unknown-dir-segment-name", "warning", "a directory named like a segment file inside a partition dir: "
     "the broker ignores it", "LogLoader.loadSegmentFiles"),
    ("unknown-file", "info", "a file kafkatool does not know: not checked", KAFKATOOL),
    ("backup-dir-skipped", "info", "a kafkatool backup dir, not broker data: not read", KAFKATOOL),
    ("epoch-goes-back", "error", "a batch's leader epoch is below an earlier batch's: a divergent log",
     "LeaderEpochFileCache.assign"),
    ("epoch-checkpoint-missing", "warning", "no leader-epoch-checkpoint although the batches carry epochs",
     "LeaderEpochFileCache"),
    ("epoch-checkpoint-not-increasing", "error", "leader-epoch-checkpoint entries whose epochs or start "
     "offsets do not increase", "LeaderEpochFileCache"),
    ("epoch-start-beyond-log-end", "warning", "a leader epoch starting beyond the log end: the broker drops "
     "it on load", "LeaderEpochFileCache.truncateFromEnd"),
    ("epoch-start-below-log-start", "info", "a leader epoch starting below the log start offset",
     "LeaderEpochFileCache.truncateFromStart"),
    ("epoch-missing-from-checkpoint", "warning", "batches carry a leader epoch the checkpoint lacks",
     "LeaderEpochFileCache.assign"),
    ("epoch-start-mismatch", "warning", "the checkpoint's start offset of an epoch differs from its first "
     "batch's", "LeaderEpochFileCache.assign"),
    ("snapshot-beyond-log-end", "warning", "a producer snapshot beyond the log end: the broker deletes it on "
     "load", "ProducerStateManager.truncateAndReload"),
    ("snapshot-truncated", "error", "a producer snapshot shorter than its header",
     "ProducerStateManager.readSnapshot"),
    ("snapshot-bad-count", "error", "a producer snapshot with a negative entry count",
     "ProducerStateManager.readSnapshot"),
    ("snapshot-bad-version", "error", "a producer snapshot of an unknown version",
     "ProducerStateManager.readSnapshot"),
    ("snapshot-crc-mismatch", "error", "a producer snapshot whose CRC does not match: the broker discards it",
     "ProducerStateManager.readSnapshot"),
    ("snapshot-trailing-bytes", "warning", "bytes after a producer snapshot's last entry; Kafka ignores them",
     "ProducerStateManager.readSnapshot"),
    ("checkpoint-bad-version", "error", "a checkpoint file of an unknown version",
     "CheckpointFile.CheckpointReadBuffer.read"),
    ("checkpoint-bad-count", "error", "a checkpoint file with a negative entry count",
     "CheckpointFile.CheckpointReadBuffer.read"),
    ("checkpoint-malformed", "error", "a checkpoint line that does not parse",
     "CheckpointFile.CheckpointReadBuffer.read"),
    ("checkpoint-count-mismatch", "error", "a checkpoint file whose entries differ from its declared count",
     "CheckpointFile.CheckpointReadBuffer.read"),
    ("checkpoint-no-count", "warning", "a checkpoint file ending after its version line: Kafka reads it as "
     "empty", "CheckpointFile.CheckpointReadBuffer.read"),
    ("text-bad-encoding", "error", "a text file (checkpoint, metadata) that is not valid in its encoding",
     "CheckpointFile.CheckpointReadBuffer.read"),
    ("partition-metadata-malformed", "error", "a partition.metadata that does not parse",
     "PartitionMetadataFile.read"),
    ("partition-metadata-bad-version", "error", "a partition.metadata of an unknown version",
     "PartitionMetadataFile.read"),
    ("partition-metadata-bad-topic-id", "error", "a partition.metadata whose topic id is not a valid UUID",
     "PartitionMetadataFile.read"),
    ("partition-metadata-missing", "info", "no partition.metadata (topic id); the broker writes it when it "
     "next leads or follows", "PartitionMetadataFile"),
    ("properties-malformed", "error", "a properties file with a malformed \\uxxxx escape",
     "java.util.Properties.load"),
    ("meta-properties-bad-version", "error", "a meta.properties of an unknown version",
     "MetaProperties"),
    ("meta-properties-missing-key", "error", "a meta.properties lacking a key the broker requires",
     "MetaProperties"),
    ("meta-properties-bad-value", "error", "a meta.properties with a value the broker cannot parse",
     "MetaProperties"),
    ("meta-properties-missing", "info", "no meta.properties: not a formatted broker log dir",
     "MetaPropertiesEnsemble.load"),
    ("quorum-state-malformed", "error", "a KRaft quorum-state file that does not parse",
     "FileQuorumStateStore.readElectionState"),
    ("clean-shutdown-unreadable", "warning", "a clean-shutdown marker that does not parse: Kafka still "
     "treats the shutdown as clean, only the broker epoch is lost", "CleanShutdownFileHandler.read"),
    ("high-watermark-beyond-log-end", "warning", "a high watermark beyond the log end: acknowledged data is "
     "missing from this replica", "UnifiedLog.updateHighWatermark"),
    ("recovery-point-beyond-log-end", "warning", "a recovery point beyond the log end: the broker resets "
     "it and recovers every segment", "LogLoader.load"),
    ("log-start-beyond-log-end", "warning", "a log start offset beyond the log end: the broker deletes the "
     "segments", "UnifiedLog.maybeIncrementLogStartOffset"),
    ("cleaner-offset-beyond-log-end", "warning", "a cleaner checkpoint beyond the log end: the cleaner "
     "cleans everything again", "LogCleanerManager.cleanableOffsets"),
    ("high-watermark-below-log-start", "info", "a high watermark below the log start; the broker moves it up",
     "UnifiedLog.updateHighWatermark"),
    ("log-start-below-log-start", "info", "a log start checkpoint below the first segment's offset; the "
     "broker moves it up", "LogLoader.load"),
    ("cleaner-offset-below-log-start", "info", "a cleaner checkpoint below the log start; the cleaner moves "
     "it up", "LogCleanerManager.cleanableOffsets"),
    ("recovery-point-missing", "info", "a partition without a recovery point: after an unclean shutdown "
     "the broker recovers all its segments", "LogManager.loadLogs"),
    ("checkpoint-unknown-partition", "info", "a checkpoint entry for a partition with no dir here",
     "LogManager.loadLogs"),
    # --- producers and transactions ------------------------------------------------------------------------
    ("producer-fenced", "error", "a batch with a producer epoch older than one already in the log",
     "ProducerAppendInfo.checkProducerEpoch"),
    ("txn-invalid-state", "error", "a non-transactional batch inside the producer's open transaction",
     "ProducerAppendInfo.appendDataBatch"),
    ("producer-epoch-bump", "info", "a producer's epoch goes up", "ProducerAppendInfo.checkProducerEpoch"),
    ("sequence-out-of-order", "error", "a producer's sequence out of order (OutOfOrderSequence)",
     "ProducerAppendInfo.checkSequence"),
    ("sequence-gap", "error", "sequences of a producer missing (OutOfOrderSequence)",
     "ProducerAppendInfo.checkSequence"),
    ("duplicate-sequence-number", "error", "a batch repeating the sequences of one of its producer's last 5 "
     "batches: the leader recognises such a retry (DUPLICATE_SEQUENCE_NUMBER) and writes nothing, yet its records "
     "are in the log twice", "ProducerStateEntry.findDuplicateBatch"),
    ("duplicate-out-of-order-sequence", "error", "a batch repeating the sequences of an older batch of its "
     "producer, past the 5 the leader keeps: the leader refuses it (OUT_OF_ORDER_SEQUENCE_NUMBER), yet its records "
     "are in the log twice", "ProducerAppendInfo.checkSequence"),
    ("producer-not-in-snapshot", "info", "a producer in the log but not in the snapshot (expired, or "
     "newer than the snapshot)", "ProducerStateManager.removeExpiredProducers"),
    ("producer-only-in-snapshot", "warning", "a producer in the snapshot with no batch in the log",
     "ProducerStateManager.loadFromSnapshot"),
    ("producer-state-mismatch", "warning", "the snapshot's state of a producer differs from the log's",
     "ProducerStateManager.loadFromSnapshot"),
    ("txn-open", "warning", "an open transaction holding the last stable offset back",
     "ProducerStateManager.firstUnstableOffset"),
    ("txn-hanging", "error", "an open transaction no coordinator will end (KIP-664): open longer than the maximum "
     "transaction timeout, its producer id has no live transactional id in __transaction_state, or that id's "
     "transaction is completed or lacks the partition; read_committed consumers stop at its first offset until it is "
     "aborted (kafka-transactions.sh abort)", "TransactionsCommand.FindHangingTransactionsCommand"),
    ("txn-possibly-hanging", "warning", "an open transaction open longer than the maximum transaction timeout, with "
     "no __transaction_state read to say whether its coordinator ends it", "TransactionsCommand."
     "FindHangingTransactionsCommand"),
    # --- payloads (--key-decoder / --value-decoder) ----------------------------------------------------------
    ("payload-undecodable", "warning", "a key or value that does not decode with the decoder asked for (wrong size, "
     "not JSON, unknown schema id, wrong magic byte, truncated body): shown raw, the scan goes on",
     "Deserializer.deserialize"),
    ("schema-record-invalid", "warning", "a _schemas record whose key or value is not what Schema Registry writes "
     "(not JSON, an unknown key type, a field of the wrong type): Schema Registry's reader skips it, and so does "
     "this one; the schemas after it still load", "KafkaStoreReaderThread.doWork"),
    ("schema-reference-invalid", "warning", "a schema in _schemas whose references do not resolve (a subject "
     "version not there) or form a cycle: payloads written with it do not decode",
     "AbstractSchemaProvider.resolveReferences"),
    ("schema-file-invalid", "warning", "a --schemas file named <id>.avsc/.proto/.json that cannot be read (not a "
     "regular file, not UTF-8, too large): its schema id is not known from it", KAFKATOOL),
    ("schemas-none", "warning", "no _schemas partition dirs found", KAFKATOOL),
    # --- internal topics -----------------------------------------------------------------------------------
    ("trailing-bytes", "warning", "bytes at the end of an internal topic's segment that are not a whole batch",
     "LogSegment.recover"),
    ("offsets-null-key", "warning", "a __consumer_offsets record without a key", "GroupMetadataManager"),
    ("coordinator-record-newer", "info", "a __consumer_offsets, __share_group_state or __transaction_state record "
     "of a record type or value version newer than the schemas kafkatool holds (formats/schemas): not decoded",
     "CoordinatorRecordSerde"),
    ("offsets-undecodable", "error", "a __consumer_offsets record that does not decode",
     "GroupCoordinatorRecordSerde"),
    ("group-replay-inconsistent", "error", "a __consumer_offsets group record the group coordinator refuses at "
     "load (IllegalStateException: a group or member deleted while it still has members or assignments, records of "
     "another group type): the coordinator fails to load the partition; kafkatool skips the record",
     "GroupMetadataManager.replay"),
    ("offsets-none", "warning", "no __consumer_offsets partition dirs found", KAFKATOOL),
    ("offsets-empty", "warning", "no committed offset and no group in the __consumer_offsets read",
     KAFKATOOL),
    ("commit-beyond-leo", "error", "a committed offset beyond its partition's log end: the log lost data",
     "GroupMetadataManager"),
    ("commit-below-log-start", "warning", "a committed offset below its partition's log start: the "
     "consumer will reset", "SubscriptionState.requestOffsetReset"),
    ("share-state-undecodable", "error", "a __share_group_state record that does not decode, or that the share "
     "coordinator cannot replay (a ShareUpdate tombstone): skipped", "ShareCoordinatorShard.replay"),
    ("share-state-none", "warning", "no __share_group_state partition dirs found", KAFKATOOL),
    ("share-start-beyond-leo", "error", "a share partition's start offset beyond its data partition's log end: the "
     "log lost data, or it is not the replica the share group consumed from", "ShareCoordinatorShard.replay"),
    ("share-start-below-log-start", "warning", "a share partition's start offset below its data partition's log "
     "start: the records between were deleted before the share group delivered them (the leader moves the start to "
     "the log start)",
     "SharePartition.updateCacheAndOffsets"),
    ("txn-state-undecodable", "error", "a __transaction_state record that does not decode",
     "TransactionLog.readTxnRecordValue"),
    ("txn-state-none", "warning", "no __transaction_state partition dirs found", KAFKATOOL),
    ("txn-timed-out", "warning", "an Ongoing transaction past its timeout (started + timeout < now: --now, else "
     "the newest record time): the coordinator aborts it; until its markers are written its partitions' LSO "
     "stays at its first offset", "TransactionStateManager.timedOutTransactions"),
    ("txn-completion-pending", "warning", "a PrepareCommit/PrepareAbort past its timeout since its last update: "
     "its markers are not all written; the coordinator completes it",
     "TransactionStateManager.loadTransactionsForTxnTopicPartition"),
    ("unclean-leader-election", "warning", "a partition leader elected from outside the ISR (or marked "
     "RECOVERING): writes acknowledged by the old ISR may be lost", "PartitionChangeBuilder.electLeader"),
    ("metadata-undecodable", "error", "a __cluster_metadata record that does not decode",
     "MetadataRecordSerde"),
    ("metadata-none", "warning", "no __cluster_metadata segments or snapshots found", KAFKATOOL),
    ("metadata-record-unknown", "warning", "a __cluster_metadata record of a type or version newer than the "
     "schemas kafkatool holds (formats/schemas): shown undecoded, and its change left out of the timeline",
     "MetadataRecordSerde"),
    ("remote-log-metadata-unknown", "warning", "a __remote_log_metadata record (tiered storage, KIP-405) of a type "
     "or version newer than the schemas kafkatool holds: shown undecoded", "RemoteLogMetadataSerde"),
    ("tiered-none", "warning", "no __remote_log_metadata partition dirs found", KAFKATOOL),
    ("tiered-record-undecodable", "error", "a __remote_log_metadata record that does not decode, or that the "
     "consumer does not take (a snapshot record): skipped",
     "RemotePartitionMetadataEventHandler.handleRemoteLogMetadata"),
    ("remote-segment-invalid-transition", "error", "a remote log segment event whose state does not follow from the "
     "segment's (or names a segment with no metadata): Kafka drops it, the segment keeps its state",
     "RemoteLogSegmentState.isValidTransition"),
    ("remote-segment-stuck", "warning", "a remote log segment left in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED "
     "at --now (else the newest time read): the copy or delete never finished", "RemoteLogMetadataCache"),
    ("tiered-offset-gap", "error", "the copied remote segments end below the local log start: the offsets between "
     "are on no tier", "UnifiedLog.deleteOldSegments"),
    ("remote-segment-epochs-mismatch", "warning", "a copied remote segment's leader epochs are not within the local "
     "leader-epoch-checkpoint's lineage", "RemoteLogManager.isRemoteSegmentWithinLeaderEpochs"),
    ("kraft-snapshot-gap", "error", "the KRaft metadata log starts above 0 with no snapshot at or after its "
     "start: the metadata between the newest snapshot and the log start is in no file, and the node does not start "
     "(Inconsistent snapshot state)", "KafkaMetadataLog.recoverSnapshots"),
    ("kraft-log-starts-at-snapshot", "info", "the latest KRaft snapshot is ahead of the metadata log (a newer "
     "epoch, or past its end): the node drops the log and starts it at the snapshot",
     "KafkaMetadataLog.truncateToLatestSnapshot"),
    ("kraft-snapshot-deleted", "info", "a KRaft snapshot the node deletes when it loads the metadata log: below "
     "the log start, older than the snapshot the log starts at, or partial (.checkpoint.part)",
     "KafkaMetadataLog.recoverSnapshots"),
    # --- replicas, truncation, repair, delivery ------------------------------------------------------------
    ("replicas-diverge", "warning", "two replicas hold different batches from an offset on",
     "AbstractFetcherThread.truncateToEpochEndOffsets"),
    ("acknowledged-offsets-exposed", "warning", "offsets below the partition's high watermark (acknowledged: "
     "consumers may have read them) that a replica holds above its own high-watermark checkpoint: a follower "
     "truncating to its high watermark (the rule before KIP-101) discards them, leaving them on the leader "
     "alone until fetched again (lost if it fails first); the leader-epoch rule keeps them",
     "AbstractFetcherThread.truncateToHighWatermark"),
    ("truncation-not-applied", "error", "a truncation refused: nothing was changed", KAFKATOOL),
    ("truncation-not-idempotent", "error", "after applying, the truncation rule still truncates: please "
     "report this", KAFKATOOL),
    ("apply-resumed", "info", "an interrupted truncation apply completed from its journal", KAFKATOOL),
    ("repair-impossible", "error", "a repair cannot be planned for this partition", KAFKATOOL),
    ("clean-shutdown-skips-recovery", "warning", "the log dir's .kafka_cleanshutdown makes the broker trust "
     "its segments as they are: it keeps and serves the invalid batches an unclean start's recovery would cut "
     "(repair --recovery-point plans that recovery)", "LogLoader.recoverLog"),
    ("repair-resumed", "info", "an interrupted repair completed from its journal", KAFKATOOL),
    ("repair-not-idempotent", "error", "after applying, the cut segment still has an invalid batch: please "
     "report this", KAFKATOOL),
    ("restore", "info", "what a repair --restore put back", KAFKATOOL),
    ("sink-row-invalid", "error", "a sink row breaking the sink's row rules", KAFKATOOL),
    ("sink-header-invalid", "error", "a sink without (or with twice) a topic, partition or offset column, "
     "or a Parquet column of a type no valid value has", KAFKATOOL),
    ("sink-unreadable", "error", "a damaged Parquet sink file", KAFKATOOL),
    ("delivery-partition-missing", "error", "sink rows of a partition not under the paths given", KAFKATOOL),
    ("records-below-fetch-position", "error", "records at offsets below a consumer's position (the log's offsets "
     "go back): a consumer skips them, so no one receives them", "CompletedFetch.nextFetchedRecord"),
    ("delivery-partition-twice", "warning", "a topic-partition found twice under the paths: the first is used",
     KAFKATOOL),
))

CATALOGUE: dict[str, Entry] = {e.code: e for e in _ENTRIES}
_SEVERITY: dict[str, Severity] = {e.code: e.severity for e in _ENTRIES}


def finding(code: str, path: str, position: int | None, message: str) -> Finding:
    """The :class:`Finding` of ``code``, with the catalogue's severity (a code not catalogued is a bug: KeyError)."""
    return Finding(_SEVERITY[code], code, path, position, message)


def markdown() -> str:
    """``docs/findings.md``: the catalogue as a table."""
    rows = "".join(f"| `{e.code}` | {e.severity} | {e.meaning} | {_ref(e.reference)} |\n" for e in _ENTRIES)
    return ("# Finding codes\n\n"
            "Every finding kafkatool reports (text, JSONL, Spark) carries one of these codes, always with the "
            "severity given here. The reference names the Kafka class or method whose rule the check follows "
            "(\"kafkatool\": the tool's own check). Generated from `kafkatool/findings.py` by "
            "`python -m kafkatool.findings --markdown`; do not edit by hand.\n\n"
            "| Code | Severity | Meaning | Kafka reference |\n|---|---|---|---|\n" + rows)


def _ref(reference: str) -> str:
    return reference if reference == KAFKATOOL else f"`{reference}`"


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m kafkatool.findings --markdown")
    sys.stdout.write(markdown())
