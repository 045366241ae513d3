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


_ENTRIES: tuple[Entry, ...] = (
    # --- record files (.log): framing, batches, records ----------------------------------------------------
    Entry("crc-mismatch", "error", "a batch's stored CRC does not match its bytes: corrupt; recovery cuts the "
          "segment there", "DefaultRecordBatch.ensureValid"),
    Entry("torn-tail", "error", "the file ends inside a batch (a crash during a write); recovery cuts it",
          "LogSegment.recover"),
    Entry("zero-filled-tail", "warning", "zero bytes from here to the end of the file: a preallocated segment "
          "(log.preallocate) or a crash after extending it; recovery ends the log here, no record is lost",
          "LogSegment.recover"),
    Entry("size-below-minimum", "error", "an entry's size field is below the smallest record: the framing is "
          "lost from here", "FileLogInputStream.nextBatch"),
    Entry("batch-too-large", "error", "an entry's size field is above --max-batch-bytes: taken as a corrupt "
          "length, the framing is lost from here", "FileLogInputStream.nextBatch"),
    Entry("batch-too-small", "error", "a v2 batch is shorter than its own header", "DefaultRecordBatch.ensureValid"),
    Entry("unknown-magic", "error", "a magic byte that is not 0, 1 or 2: the framing cannot be trusted from here",
          "FileLogInputStream.nextBatch"),
    Entry("magic-above-v2", "error", "a magic byte above 2: the broker reads it as a v2 batch and its recovery "
          "keeps it", "FileLogInputStream.nextBatch"),
    Entry("record-invalid", "error", "a record of the batch does not parse: its records are lost",
          "DefaultRecord.readFrom"),
    Entry("records-trailing-bytes", "error", "bytes remain after a v2 batch's declared records",
          "DefaultRecordBatch.RecordIterator"),
    Entry("wrapper-trailing-bytes", "warning", "bytes after the last whole inner message of a v0/v1 compressed "
          "wrapper: Kafka's deep iterator stops there and ignores them",
          "AbstractLegacyRecordBatch.DeepRecordsIterator"),
    Entry("message-invalid", "error", "a v0/v1 message (or a compressed wrapper's inner message) does not parse",
          "LegacyRecord.ensureValid"),
    Entry("unknown-compression", "error", "a compression codec id Kafka does not define", "CompressionType.forId"),
    Entry("decompression-failed", "error", "a compressed batch cannot be decompressed: its records are lost",
          "CompressionType.wrapForInput"),
    Entry("decompression-limit", "error", "a batch decompresses to more than --max-decompressed: not decoded",
          KAFKATOOL),
    Entry("nested-compression", "error", "a compressed wrapper holds another compressed message",
          "AbstractLegacyRecordBatch.DeepRecordsIterator"),
    Entry("unknown-file-type", "warning", "not a Kafka log-dir file name: not read", "LogLoader.loadSegmentFiles"),
    Entry("base-offset-unknown", "warning", "no segment base offset in the file name: offsets shown relative to 0",
          "LogFileUtils.offsetFromFileName"),
    Entry("base-offset-overflow", "error", "a file named with an offset above 2^63-1: the broker cannot parse "
          "the name and fails to load the partition", "LogFileUtils.offsetFromFileName"),
    Entry("io-error", "error", "a file or dir that cannot be read (FIFO, device, socket, link to nothing or in a "
          "loop, unlistable dir): not read, exit 3", KAFKATOOL),
    # --- segments (verify) ---------------------------------------------------------------------------------
    Entry("offset-not-increasing", "error", "a batch's offsets do not follow the previous batch's",
          "LogSegment.recover"),
    Entry("offset-below-segment-base", "error", "a batch's offset is below its segment's base offset (file name)",
          "LogSegment.ensureOffsetInRange"),
    Entry("offset-beyond-segment-range", "error", "a batch's last offset does not fit its segment (base offset "
          "+ 2^31-1): recovery cuts the segment there", "LogSegment.ensureOffsetInRange"),
    Entry("record-count-mismatch", "error", "the records decoded differ in number from the batch header's count",
          "DefaultRecordBatch.RecordIterator"),
    Entry("record-offset-invalid", "error", "record offsets do not increase within their batch",
          "LogValidator.validateMessagesAndAssignOffsetsCompressed"),
    Entry("max-timestamp-mismatch", "warning", "the batch header's max timestamp is not its records' largest",
          "LogValidator.validateMessagesAndAssignOffsets"),
    Entry("timestamp-invalid", "warning", "a negative timestamp other than -1 (none)",
          "LogValidator.validateTimestamp"),
    Entry("timestamp-in-future", "warning", "a max timestamp more than a day ahead: retention and rolling will "
          "not treat the segment as old", "UnifiedLog.deleteRetentionMsBreachedSegments"),
    Entry("timestamp-order", "warning", "a CREATE_TIME batch's max timestamp is below its first timestamp",
          "DefaultRecordBatch"),
    Entry("control-batch-invalid", "error", "a control batch that does not parse as a control record",
          "ControlRecordType.parse"),
    Entry("control-type-unknown", "error", "a control record type Kafka does not define", "ControlRecordType"),
    Entry("segment-empty", "info", "a segment holding no batch", "LogSegment"),
    Entry("segment-overlap", "error", "a segment's base offset is not above the previous segment's last offset",
          "LogLoader.loadSegmentFiles"),
    Entry("segment-name-invalid", "error", "a segment file not named by a 20-digit base offset: the broker "
          "ignores it", "LogFileUtils.offsetFromFileName"),
    Entry("offset-gap", "warning", "offsets missing between two segments of a topic that is not compacted (a "
          "segment removed by hand?)", "UnifiedLog.append"),
    Entry("offset-gap-compacted", "info", "offsets missing between two segments of a compacted topic: the "
          "cleaner's work", "LogCleaner"),
    Entry("offset-gaps", "warning", "holes between the batches of a segment of a topic that is not compacted, "
          "counted", "UnifiedLog.append"),
    Entry("offset-gaps-compacted", "info", "holes between the batches of a segment of a compacted topic (the "
          "cleaner's work), counted", "LogCleaner"),
    Entry("recovery-truncates-log", "warning", "the broker's recovery cuts a segment at an invalid batch: the "
          "log end offset after loading is below the batches on disk", "LogSegment.recover"),
    Entry("log-end-below-log-start", "warning", "the log end offset is below the log start checkpoint: the "
          "broker deletes every segment", "UnifiedLog.maybeIncrementLogStartOffset"),
    # --- indexes -------------------------------------------------------------------------------------------
    Entry("index-missing", "info", "a segment of at most one index interval (index.interval.bytes) has no .index: "
          "the broker rebuilds it at start-up, empty anyway", "LogSegment.sanityCheck"),
    Entry("index-missing-large", "warning", "a segment of more than one index interval has no .index: the broker "
          "recovers the segment at start-up (slow); lookups scan the whole segment", "LogSegment.sanityCheck"),
    Entry("index-too-large", "error", "an index larger than any the broker writes: not read", "AbstractIndex"),
    Entry("index-size-not-multiple", "error", "an index whose size is not a whole number of entries",
          "OffsetIndex.sanityCheck"),
    Entry("index-last-offset-below-base", "error", "an index's last entry is below the segment's base offset",
          "OffsetIndex.sanityCheck"),
    Entry("index-preallocated", "info", "the active segment's index has preallocated slots: the broker was "
          "running or not shut down cleanly; it rebuilds it when it recovers the segment", "AbstractIndex.resize"),
    Entry("index-preallocated-rolled", "warning", "a rolled segment's index still has its preallocated slots: "
          "never trimmed; the broker reads the zero slots as entries unless it recovers the segment",
          "AbstractIndex.trimToValidSize"),
    Entry("index-entry-invalid", "error", "an index entry with a negative offset or position: garbage",
          "OffsetIndex.parseEntry"),
    Entry("index-not-increasing", "error", "index entries whose offsets or positions do not increase",
          "OffsetIndex.sanityCheck"),
    Entry("index-entries-after-empty-slot", "error", "an index entry after a never-written slot: scrambled",
          "AbstractIndex"),
    Entry("index-entry-not-batch-start", "error", "an index entry pointing inside a batch, not at its start",
          "OffsetIndex.lookup"),
    Entry("index-entry-points-too-far", "error", "an index entry pointing past the batch holding its offset: a "
          "lookup would miss it", "OffsetIndex.lookup"),
    Entry("index-entry-beyond-log", "error", "an index entry pointing past the last whole batch",
          "OffsetIndex.lookup"),
    Entry("index-sparse", "info", "a usable index, sparser or coarser than the broker writes",
          "LogSegment.append"),
    Entry("index-rebuild-impossible", "error", "the index of a recovered segment cannot be rebuilt from its batches",
          "LogSegment.recover"),
    Entry("timeindex-missing", "info", "a segment of at most one index interval has no .timeindex: the broker "
          "rebuilds it at start-up", "LogSegment.sanityCheck"),
    Entry("timeindex-missing-large", "warning", "a segment of more than one index interval has no .timeindex: the "
          "broker recovers the segment at start-up; until then retention misjudges it", "LogSegment.sanityCheck"),
    Entry("timeindex-size-not-multiple", "error", "a time index whose size is not a whole number of entries",
          "TimeIndex.sanityCheck"),
    Entry("timeindex-last-offset-below-base", "error", "a time index's last entry is below the segment's base "
          "offset", "TimeIndex.sanityCheck"),
    Entry("timeindex-last-timestamp-below-first", "error", "a time index's last timestamp is below its first",
          "TimeIndex.sanityCheck"),
    Entry("timeindex-entry-invalid", "error", "a time index entry with a negative offset or timestamp: garbage",
          "TimeIndex.parseEntry"),
    Entry("timeindex-not-increasing", "error", "time index entries whose timestamps or offsets go back",
          "TimeIndex.maybeAppend"),
    Entry("timeindex-entries-after-empty-slot", "error", "a time index entry after a never-written slot: scrambled",
          "AbstractIndex"),
    Entry("timeindex-entry-beyond-log", "error", "a time index entry beyond the segment's last offset",
          "TimeIndex.lookup"),
    Entry("timeindex-entry-wrong", "error", "a time index entry a search for an earlier batch's time would skip "
          "past", "TimeIndex.lookup"),
    Entry("timeindex-max-missing", "warning", "the time index lacks the segment's max timestamp: retention may "
          "delete the segment too early", "LogSegment.largestTimestamp"),
    Entry("timeindex-inexact", "info", "time index entries that name a batch whose max timestamp differs; "
          "lookups stay correct", "LogSegment.append"),
    Entry("txnindex-missing", "error", "aborted transactions in the log but no .txnindex: read_committed "
          "consumers would receive aborted records", "TransactionIndex"),
    Entry("txnindex-missing-abort", "error", "an aborted transaction missing from the .txnindex: read_committed "
          "consumers would receive its records", "TransactionIndex"),
    Entry("txnindex-extra-entry", "error", "a .txnindex entry without an ABORT marker in the log: read_committed "
          "consumers would drop committed records", "TransactionIndex"),
    Entry("txnindex-wrong-entry", "error", "a .txnindex entry whose first offset differs from the log's",
          "TransactionIndex"),
    Entry("txnindex-wrong-lso", "warning", "a .txnindex entry whose last stable offset differs from the log's",
          "TransactionIndex"),
    Entry("txnindex-bad-version", "error", "a .txnindex entry of a version Kafka does not support",
          "AbortedTxn"),
    Entry("txnindex-odd-version", "warning", "a .txnindex entry whose version Kafka reads only in part, and accepts",
          "AbortedTxn"),
    Entry("txnindex-partial-entry", "warning", "trailing bytes of a .txnindex that are not a whole entry; Kafka "
          "ignores them", "TransactionIndex"),
    Entry("txnindex-last-offset-below-base", "error", "an aborted transaction ending before the segment's base "
          "offset", "TransactionIndex.sanityCheck"),
    Entry("orphan-index", "warning", "an index file without its .log: the broker deletes it at start-up",
          "LogLoader.loadSegmentFiles"),
    # --- partition and log dir files -----------------------------------------------------------------------
    Entry("leftover-deleted", "info", "a segment file scheduled for deletion; the broker deletes it at start-up",
          "LogLoader.removeTempFilesAndCollectSwapFiles"),
    Entry("leftover-cleaned", "warning", "output of an interrupted cleaner pass; the broker deletes it and cleans "
          "again", "LogLoader.removeTempFilesAndCollectSwapFiles"),
    Entry("leftover-swap", "warning", "an interrupted segment replacement; the broker completes it at start-up, "
          "so its contents become the log", "LogLoader.removeTempFilesAndCollectSwapFiles"),
    Entry("leftover-tmp", "info", "a temporary file of an interrupted write; the broker ignores or deletes it",
          "LogLoader.removeTempFilesAndCollectSwapFiles"),
    Entry("apply-interrupted", "warning", "left by an interrupted kafkatool --apply: run the same command with "
          "--apply again", KAFKATOOL),
    Entry("partition-pending-delete", "info", "a partition dir renamed for deletion; the broker deletes it",
          "LogManager.asyncDelete"),
    Entry("partition-future", "info", "a replica being moved between log dirs; the broker resumes the copy",
          "LogManager.maybeUpdatePreferredLogDir"),
    Entry("partition-stray", "info", "a stray replica the controller no longer assigns here; the broker deletes it",
          "LogManager.findStrayReplicas"),
    Entry("unknown-dir", "info", "a directory that is not a partition dir, or one inside a partition dir: the "
          "broker ignores it", "LogLoader.loadSegmentFiles"),
    Entry("unknown-dir-segment-name", "warning", "a directory named like a segment file inside a partition dir: "
          "the broker ignores it", "LogLoader.loadSegmentFiles"),
    Entry("unknown-file", "info", "a file kafkatool does not know: not checked", KAFKATOOL),
    Entry("backup-dir-skipped", "info", "a kafkatool backup dir, not broker data: not read", KAFKATOOL),
    Entry("epoch-goes-back", "error", "a batch's leader epoch is below an earlier batch's: a divergent log",
          "LeaderEpochFileCache.assign"),
    Entry("epoch-checkpoint-missing", "warning", "no leader-epoch-checkpoint although the batches carry epochs",
          "LeaderEpochFileCache"),
    Entry("epoch-checkpoint-not-increasing", "error", "leader-epoch-checkpoint entries whose epochs or start "
          "offsets do not increase", "LeaderEpochFileCache"),
    Entry("epoch-start-beyond-log-end", "warning", "a leader epoch starting beyond the log end: the broker drops "
          "it on load", "LeaderEpochFileCache.truncateFromEnd"),
    Entry("epoch-start-below-log-start", "info", "a leader epoch starting below the log start offset",
          "LeaderEpochFileCache.truncateFromStart"),
    Entry("epoch-missing-from-checkpoint", "warning", "batches carry a leader epoch the checkpoint lacks",
          "LeaderEpochFileCache.assign"),
    Entry("epoch-start-mismatch", "warning", "the checkpoint's start offset of an epoch differs from its first "
          "batch's", "LeaderEpochFileCache.assign"),
    Entry("snapshot-beyond-log-end", "warning", "a producer snapshot beyond the log end: the broker deletes it on "
          "load", "ProducerStateManager.truncateAndReload"),
    Entry("snapshot-truncated", "error", "a producer snapshot shorter than its header",
          "ProducerStateManager.readSnapshot"),
    Entry("snapshot-bad-count", "error", "a producer snapshot with a negative entry count",
          "ProducerStateManager.readSnapshot"),
    Entry("snapshot-bad-version", "error", "a producer snapshot of an unknown version",
          "ProducerStateManager.readSnapshot"),
    Entry("snapshot-crc-mismatch", "error", "a producer snapshot whose CRC does not match: the broker discards it",
          "ProducerStateManager.readSnapshot"),
    Entry("snapshot-trailing-bytes", "warning", "bytes after a producer snapshot's last entry; Kafka ignores them",
          "ProducerStateManager.readSnapshot"),
    Entry("checkpoint-bad-version", "error", "a checkpoint file of an unknown version",
          "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("checkpoint-bad-count", "error", "a checkpoint file with a negative entry count",
          "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("checkpoint-malformed", "error", "a checkpoint line that does not parse",
          "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("checkpoint-count-mismatch", "error", "a checkpoint file whose entries differ from its declared count",
          "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("checkpoint-no-count", "warning", "a checkpoint file ending after its version line: Kafka reads it as "
          "empty", "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("text-bad-encoding", "error", "a text file (checkpoint, metadata) that is not valid in its encoding",
          "CheckpointFile.CheckpointReadBuffer.read"),
    Entry("partition-metadata-malformed", "error", "a partition.metadata that does not parse",
          "PartitionMetadataFile.read"),
    Entry("partition-metadata-bad-version", "error", "a partition.metadata of an unknown version",
          "PartitionMetadataFile.read"),
    Entry("partition-metadata-bad-topic-id", "error", "a partition.metadata whose topic id is not a valid UUID",
          "PartitionMetadataFile.read"),
    Entry("partition-metadata-missing", "info", "no partition.metadata (topic id); the broker writes it when it "
          "next leads or follows", "PartitionMetadataFile"),
    Entry("properties-malformed", "error", "a properties file with a malformed \\uxxxx escape",
          "java.util.Properties.load"),
    Entry("meta-properties-bad-version", "error", "a meta.properties of an unknown version",
          "MetaProperties"),
    Entry("meta-properties-missing-key", "error", "a meta.properties lacking a key the broker requires",
          "MetaProperties"),
    Entry("meta-properties-bad-value", "error", "a meta.properties with a value the broker cannot parse",
          "MetaProperties"),
    Entry("meta-properties-missing", "info", "no meta.properties: not a formatted broker log dir",
          "MetaPropertiesEnsemble.load"),
    Entry("quorum-state-malformed", "error", "a KRaft quorum-state file that does not parse",
          "FileQuorumStateStore.readElectionState"),
    Entry("clean-shutdown-unreadable", "warning", "a clean-shutdown marker that does not parse: Kafka still "
          "treats the shutdown as clean, only the broker epoch is lost", "CleanShutdownFileHandler.read"),
    Entry("high-watermark-beyond-log-end", "warning", "a high watermark beyond the log end: acknowledged data is "
          "missing from this replica", "UnifiedLog.updateHighWatermark"),
    Entry("recovery-point-beyond-log-end", "warning", "a recovery point beyond the log end: the broker resets "
          "it and recovers every segment", "LogLoader.load"),
    Entry("log-start-beyond-log-end", "warning", "a log start offset beyond the log end: the broker deletes the "
          "segments", "UnifiedLog.maybeIncrementLogStartOffset"),
    Entry("cleaner-offset-beyond-log-end", "warning", "a cleaner checkpoint beyond the log end: the cleaner "
          "cleans everything again", "LogCleanerManager.cleanableOffsets"),
    Entry("high-watermark-below-log-start", "info", "a high watermark below the log start; the broker moves it up",
          "UnifiedLog.updateHighWatermark"),
    Entry("log-start-below-log-start", "info", "a log start checkpoint below the first segment's offset; the "
          "broker moves it up", "LogLoader.load"),
    Entry("cleaner-offset-below-log-start", "info", "a cleaner checkpoint below the log start; the cleaner moves "
          "it up", "LogCleanerManager.cleanableOffsets"),
    Entry("recovery-point-missing", "info", "a partition without a recovery point: after an unclean shutdown "
          "the broker recovers all its segments", "LogManager.loadLogs"),
    Entry("checkpoint-unknown-partition", "info", "a checkpoint entry for a partition with no dir here",
          "LogManager.loadLogs"),
    # --- producers and transactions ------------------------------------------------------------------------
    Entry("producer-fenced", "error", "a batch with a producer epoch older than one already in the log",
          "ProducerAppendInfo.checkProducerEpoch"),
    Entry("txn-invalid-state", "error", "a non-transactional batch inside the producer's open transaction",
          "ProducerAppendInfo.appendDataBatch"),
    Entry("producer-epoch-bump", "info", "a producer's epoch goes up", "ProducerAppendInfo.checkProducerEpoch"),
    Entry("sequence-out-of-order", "error", "a producer's sequence out of order (OutOfOrderSequence)",
          "ProducerAppendInfo.checkSequence"),
    Entry("sequence-gap", "error", "sequences of a producer missing (OutOfOrderSequence)",
          "ProducerAppendInfo.checkSequence"),
    Entry("duplicate-batch", "error", "a batch repeating a producer's sequences: its records were written twice",
          "ProducerStateEntry.findDuplicateBatch"),
    Entry("producer-not-in-snapshot", "info", "a producer in the log but not in the snapshot (expired, or "
          "newer than the snapshot)", "ProducerStateManager.removeExpiredProducers"),
    Entry("producer-only-in-snapshot", "warning", "a producer in the snapshot with no batch in the log",
          "ProducerStateManager.loadFromSnapshot"),
    Entry("producer-state-mismatch", "warning", "the snapshot's state of a producer differs from the log's",
          "ProducerStateManager.loadFromSnapshot"),
    Entry("txn-open", "warning", "an open transaction holding the last stable offset back",
          "ProducerStateManager.firstUnstableOffset"),
    # --- internal topics -----------------------------------------------------------------------------------
    Entry("trailing-bytes", "warning", "bytes at the end of an internal topic's segment that are not a whole batch",
          "LogSegment.recover"),
    Entry("offsets-null-key", "warning", "a __consumer_offsets record without a key", "GroupMetadataManager"),
    Entry("offsets-unknown-key", "info", "a __consumer_offsets key of a newer version: not decoded",
          "GroupCoordinatorRecordSerde"),
    Entry("offsets-undecodable", "error", "a __consumer_offsets record that does not decode",
          "GroupCoordinatorRecordSerde"),
    Entry("offsets-none", "warning", "no __consumer_offsets partition dirs found", KAFKATOOL),
    Entry("offsets-empty", "warning", "no committed offset and no group in the __consumer_offsets read",
          KAFKATOOL),
    Entry("commit-beyond-leo", "error", "a committed offset beyond its partition's log end: the log lost data",
          "GroupMetadataManager"),
    Entry("commit-below-log-start", "warning", "a committed offset below its partition's log start: the "
          "consumer will reset", "SubscriptionState.requestOffsetReset"),
    Entry("txn-state-undecodable", "error", "a __transaction_state record that does not decode",
          "TransactionLog.readTxnRecordValue"),
    Entry("txn-state-none", "warning", "no __transaction_state partition dirs found", KAFKATOOL),
    Entry("metadata-undecodable", "error", "a __cluster_metadata record that does not decode",
          "MetadataRecordSerde"),
    Entry("metadata-none", "warning", "no __cluster_metadata segments or snapshots found", KAFKATOOL),
    # --- replicas, truncation, repair, delivery ------------------------------------------------------------
    Entry("replicas-diverge", "warning", "two replicas hold different batches from an offset on",
          "AbstractFetcherThread.truncateToEpochEndOffsets"),
    Entry("truncation-not-applied", "error", "a truncation refused: nothing was changed", KAFKATOOL),
    Entry("truncation-not-idempotent", "error", "after applying, the truncation rule still truncates: please "
          "report this", KAFKATOOL),
    Entry("apply-resumed", "info", "an interrupted truncation apply completed from its journal", KAFKATOOL),
    Entry("repair-impossible", "error", "a repair cannot be planned for this partition", KAFKATOOL),
    Entry("repair-resumed", "info", "an interrupted repair completed from its journal", KAFKATOOL),
    Entry("repair-not-idempotent", "error", "after applying, the cut segment still has an invalid batch: please "
          "report this", KAFKATOOL),
    Entry("restore", "info", "what a repair --restore put back", KAFKATOOL),
    Entry("sink-row-invalid", "error", "a sink row breaking the sink's row rules", KAFKATOOL),
    Entry("sink-header-invalid", "error", "a sink without (or with twice) a topic, partition or offset column, "
          "or a Parquet column of a type no valid value has", KAFKATOOL),
    Entry("sink-unreadable", "error", "a damaged Parquet sink file", KAFKATOOL),
    Entry("delivery-partition-missing", "error", "sink rows of a partition not under the paths given", KAFKATOOL),
    Entry("delivery-partition-twice", "warning", "a topic-partition found twice under the paths: the first is used",
          KAFKATOOL),
)

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
