"""Java's hashes and orders that Kafka's files and rules inherit: ``String.hashCode``, ``HashMap`` and
``Properties`` iteration orders, ``Date.toString``.

Kafka takes these from the JDK, not from a format: a snapshot lists producers in ``HashMap<Long, _>`` order,
``meta.properties`` keys come in ``Properties`` (``ConcurrentHashMap``) order, ``partitionFor`` hashes a group or
transactional id with ``String.hashCode``. Reproduced here once, for the writer and the readers alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime


def java_string_hash(s: str) -> int:
    """``String.hashCode``: over UTF-16 code units, 32-bit wrapping, as the signed int Java shows."""
    utf16 = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(utf16), 2):
        h = (31 * h + int.from_bytes(utf16[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_hashmap_order(keys: list[int]) -> list[int]:
    """Iteration order of a ``java.util.HashMap<Long, _>`` that had ``keys`` put in this order, no removals.

    ``Long.hashCode`` folds the two halves, ``HashMap.hash`` XORs in the high 16 bits; iteration goes bucket by
    bucket (``hash & (table size - 1)``), each bucket in insertion order. The table starts at 16 and doubles when
    the size passes 3/4 of it, or when a bucket passes 8 nodes while the table is under 64 (``treeifyBin``).
    Not modelled: the order inside tree bins (more than 8 colliding keys in a table of 64 or more).
    """
    def spread(key: int) -> int:
        key &= (1 << 64) - 1
        h = (key ^ (key >> 32)) & 0xFFFFFFFF
        return h ^ (h >> 16)

    table, bucket_sizes = 16, Counter[int]()
    for n, key in enumerate(keys, 1):
        bucket_sizes[spread(key) & (table - 1)] += 1
        grown = table * 2 if bucket_sizes[spread(key) & (table - 1)] > 8 and table < 64 else table
        if n > grown * 3 // 4:
            grown *= 2
        if grown != table:
            table, bucket_sizes = grown, Counter(spread(k) & (grown - 1) for k in keys[:n])
    return [k for _, k in sorted(((spread(k) & (table - 1), i), k) for i, k in enumerate(keys))]


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Order ``Properties.store`` writes up to 12 keys on JDK 9-17: its ``ConcurrentHashMap`` (16 bins)."""
    keys = list(keys)
    if len(keys) > 12:
        raise ValueError("more keys than a 16-bin ConcurrentHashMap holds before resizing")

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF  # ConcurrentHashMap.spread: (h ^ (h >>> 16)) & HASH_BITS
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & 15

    return [k for _, k in sorted(((bucket(k), i), k) for i, k in enumerate(keys))]


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_date(ms: int) -> str:
    """``java.util.Date.toString()`` in UTC, e.g. ``Tue Nov 14 22:13:20 UTC 2023``."""
    d = datetime.fromtimestamp(ms / 1000, UTC)
    return f"{_DAYS[d.weekday()]} {_MONTHS[d.month - 1]} {d:%d %H:%M:%S} UTC {d.year}"
