"""Transaction index (``.txnindex``): the aborted transactions whose ABORT marker is in the segment.

Follows Kafka's ``storage/src/main/java/org/apache/kafka/storage/internals/log/TransactionIndex.java``
and ``AbortedTxn.java``. The file is a flat array of 34-byte big-endian entries, appended one per
aborted transaction (never preallocated)::

    version int16 | producer_id int64 | first_offset int64 | last_offset int64 | last_stable_offset int64

Offsets here are absolute. Kafka reads only whole entries (a partial tail is ignored), and reads the
version with a one-byte ``get`` of the first byte of the int16: it rejects an entry whose first
byte, as a signed byte, is greater than ``CURRENT_VERSION`` (0).
"""

from __future__ import annotations

from construct import Int16sb, Int64sb, Struct

from . import constants
from .index import whole_entries

CURRENT_VERSION = constants.TXN_INDEX_VERSION
kafka_version = constants.txn_kafka_version  # the first byte only, signed (AbortedTxn.version())

AbortedTxnEntry = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,        # first offset of the transaction
    "last_offset" / Int64sb,         # offset of the ABORT marker
    "last_stable_offset" / Int64sb,  # LSO when the transaction was aborted
)

ABORTED_TXN_SIZE = AbortedTxnEntry.sizeof()  # 34

TransactionIndex = whole_entries(AbortedTxnEntry)


