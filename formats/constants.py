"""The numbers and names of the layouts that readers use without the Construct declarations: the hot-path reader
(:mod:`kafkatool.records`) needs them at import, and importing Construct costs more than checking a small segment
with the native core, or a partition's small files. Re-exported by the modules declaring each layout
(``record_batch``, ``legacy``, ``control``, ``index``, ``txnindex``, ``producer_snapshot``), whose declarations are
checked against them (tests/test_records_formats.py, tests/test_formats_small.py).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

# Message format v2 (record_batch.py)
LOG_OVERHEAD = 12            # base_offset + batch_length: the framing shared by every magic
RECORD_BATCH_OVERHEAD = 61   # the v2 header, up to and including records_count
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21       # the CRC covers from here to the end of the batch
MAGIC_OFFSET = 16            # same position for v0/v1 messages (offset 8 + size 4 + crc 4)

# Message formats v0 and v1 (legacy.py)
RECORD_OVERHEAD_V0 = 14  # crc + magic + attributes + key length + value length
RECORD_OVERHEAD_V1 = 22  # ... + timestamp

# Control records' key type (control.py, ControlRecordType.java)
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

# The fixed-size entries of a partition's small binary files, as ``struct`` layouts (big-endian, the fields in their
# declaration's order): the small-file readers and writers (kafkatool.smallfiles, kafkatool.segment_indexes,
# kafkatool.producer_state) use them without Construct, which would cost a partition's verify more than its checks.
OFFSET_INDEX_ENTRY = ">ii"         # index.py OffsetIndexEntry: relative offset, position
TIME_INDEX_ENTRY = ">qi"           # index.py TimeIndexEntry: timestamp, relative offset
ABORTED_TXN_ENTRY = ">hqqqq"       # txnindex.py AbortedTxnEntry
TXN_INDEX_VERSION = 0              # txnindex.py CURRENT_VERSION (AbortedTxn.CURRENT_VERSION)
SNAPSHOT_HEADER = ">hIi"           # producer_snapshot.py SnapshotHeader: version, crc, num_entries
SNAPSHOT_ENTRY = ">qhiqiqiq"       # producer_snapshot.py ProducerEntry
SNAPSHOT_VERSION = 1               # producer_snapshot.py VERSION (ProducerStateManager.PRODUCER_SNAPSHOT_VERSION)
SNAPSHOT_CRC_OFFSET = 2
SNAPSHOT_ENTRIES_OFFSET = 6        # the CRC32C covers the file from here to its end
PRODUCER_ENTRY_SIZE = struct.calcsize(SNAPSHOT_ENTRY)  # 46
SNAPSHOT_HEADER_SIZE = struct.calcsize(SNAPSHOT_HEADER)  # 10


def entries_fit(num_entries: int, available: int) -> bool:
    """Whether ``num_entries`` snapshot entries can be read from ``available`` bytes (checked before allocating)."""
    return 0 <= num_entries and num_entries * PRODUCER_ENTRY_SIZE <= available


def snapshot_crc(data: bytes | bytearray, crc32c: Callable[[bytes], int] | None = None) -> int:
    """The CRC32C Kafka stores for a snapshot file's bytes (computed over ``data[6:]``), by ``crc32c`` (the reader's:
    ``kafkatool.records.crc32c``), else by the ``crc32c`` package, imported here (its import costs ~35 ms)."""
    if crc32c is None:
        from crc32c import crc32c
    return crc32c(memoryview(data)[SNAPSHOT_ENTRIES_OFFSET:])


def txn_kafka_version(version: int) -> int:
    """An aborted transaction's version as Kafka's ``AbortedTxn.version()`` sees it: the first byte only, signed."""
    return version >> 8
