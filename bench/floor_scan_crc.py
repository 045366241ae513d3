"""The floor ``verify`` of many partitions is measured against (``python bench/floor_scan_crc.py LOGDIR...``): the
least an honest check of a log dir does, in plain Python. It walks each dir with :func:`os.scandir` (one level of
partition dirs below each log dir), reads each ``.log`` whole and checks each v2 batch's CRC32C with the ``crc32c``
package (``DefaultRecordBatch.ensureValid``: the CRC over the bytes from the attributes field to the batch end),
walking the batches by their length field. Prints ``files batches bad``; nothing else.
"""

from __future__ import annotations

import os
import struct
import sys

import crc32c

_HEAD = struct.Struct(">qiiBI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_CRC_FROM = 21                   # the attributes field: the CRC covers the batch from here to its end


def check_log(path: str) -> tuple[int, int]:
    """Batches of the file and how many fail their CRC (v2 batches; the walk stops at a frame it cannot follow)."""
    with open(path, "rb") as fh:
        data = fh.read()
    view, pos, batches, bad = memoryview(data), 0, 0, 0
    while pos + _CRC_FROM <= len(data):
        _base, length, _epoch, magic, crc = _HEAD.unpack_from(data, pos)
        end = pos + 12 + length
        if length < _CRC_FROM - 12 or end > len(data) or magic != 2:
            break
        batches += 1
        bad += crc32c.crc32c(view[pos + _CRC_FROM:end]) != crc
        pos = end
    return batches, bad


def main() -> None:
    files = batches = bad = 0
    for root in sys.argv[1:]:
        with os.scandir(root) as logdir:
            for part in logdir:
                if not part.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(part.path) as entries:
                    for entry in entries:
                        files += 1
                        if entry.name.endswith(".log") and entry.is_file(follow_symlinks=False):
                            n, b = check_log(entry.path)
                            batches, bad = batches + n, bad + b
    print(files, batches, bad)


if __name__ == "__main__":
    main()
