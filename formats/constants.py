"""The numbers and names of the record layouts that readers use without the Construct declarations: the
hot-path reader (:mod:`kafkatool.records`) needs them at import, and importing Construct costs more than
checking a small segment with the native core. Re-exported by the modules declaring each layout
(``record_batch``, ``legacy``, ``control``), whose declarations are checked against them.
"""

from __future__ import annotations

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
