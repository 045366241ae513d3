"""Plain, immutable values that readers yield and presenters turn into output.

Every value has ``as_dict()`` returning exactly the JSON-lines shape of the corpus ``SCHEMA.md``
(including its ``"type"`` key). Readers never print; the CLI never parses.
"""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from . import native

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")


def b64(data: bytes | None) -> str | None:
    """Standard base64 with padding, ``None`` stays ``None`` (SCHEMA.md's byte encoding)."""
    return None if data is None else base64.b64encode(data).decode("ascii")


def render_bytes(data: bytes | None, mode: str) -> str | None:
    """Bytes as text for people or CSV: ``base64``, ``hex`` or ``text`` (UTF-8, bad bytes escaped); None stays."""
    if data is None:
        return None
    if mode == "base64":
        return base64.b64encode(data).decode("ascii")
    if mode == "hex":
        return data.hex()
    return data.decode("utf-8", "backslashreplace")


class Finding(NamedTuple):
    """Something wrong (or noteworthy) in a file: where, how bad, and why, in one line."""

    severity: Severity
    code: str
    path: str
    position: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": "finding",
            "severity": self.severity,
            "code": self.code,
            "path": self.path,
            "position": self.position,
            "message": self.message,
        }


class CappedFindings(list[Finding]):
    """Findings met while reading, at most ``cap`` kept per file and code, the rest only counted: a hostile file that
    repeats one fault millions of times (a batch of 18 M keyless records) costs the memory of ``cap`` of them, as
    ``verify --max-findings`` does. :meth:`summary` gives one counting finding per file and code cut."""

    def __init__(self, cap: int = 100) -> None:
        super().__init__()
        self.cap = cap
        self.counts: Counter[tuple[str, str]] = Counter()
        self.first_cut: dict[tuple[str, str], Finding] = {}

    def append(self, f: Finding) -> None:
        key = (f.path, f.code)
        n = self.counts[key] = self.counts[key] + 1
        if n <= self.cap:
            super().append(f)
        elif n == self.cap + 1:
            self.first_cut[key] = f

    def extend(self, items: Iterable[Finding]) -> None:
        for f in items:
            self.append(f)

    def summary(self) -> list[Finding]:
        return [Finding(f.severity, code, path, f.position, f"... and {self.counts[(path, code)] - self.cap} more "
                        f"{code} findings in this file, from here on") for (path, code), f in self.first_cut.items()]


class Trailing(NamedTuple):
    """Bytes at the end of a record file that do not form a whole batch."""

    position: int
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"type": "trailing", "position": self.position, "bytes": self.bytes}


class FileStart(NamedTuple):
    """Separator emitted before each file's lines when several files are dumped in one run; with ``shown`` False, only
    the context of the lines that follow (a single file's: no separator). ``topic`` and ``partition`` are those of
    the partition dir holding the file (None outside one), what every JSON batch and record line of it names."""

    path: str
    topic: str | None = None
    partition: int | None = None
    shown: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {"type": "file", "path": self.path}


class Batch(NamedTuple):
    """A v2 record batch, or a top-level v0/v1 message (possibly a compressed wrapper).

    ``size`` is the bytes the entry occupies on disk (v2: batch_length + 12; v0/v1: the whole
    log entry including the 12-byte offset+size prefix). v2-only fields are ``None`` for legacy.
    A NamedTuple rather than a dataclass: millions are made per second on the scan hot path.
    """

    position: int
    base_offset: int
    last_offset: int
    size: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    compression: str
    timestamp_type: str
    first_timestamp: int
    max_timestamp: int
    record_count: int
    partition_leader_epoch: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    base_sequence: int | None = None
    transactional: bool | None = None
    control: bool | None = None
    delete_horizon_ms: int | None = None

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "batch",
            "position": self.position,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "size": self.size,
            "magic": self.magic,
            "crc": self.crc,
            "crc_valid": self.crc_valid,
        }
        if self.magic >= 2:
            d["partition_leader_epoch"] = self.partition_leader_epoch
        d["compression"] = self.compression
        d["timestamp_type"] = self.timestamp_type
        if self.magic >= 2:
            d["transactional"] = self.transactional
            d["control"] = self.control
        d["first_timestamp"] = self.first_timestamp
        d["max_timestamp"] = self.max_timestamp
        if self.magic >= 2:
            d["producer_id"] = self.producer_id
            d["producer_epoch"] = self.producer_epoch
            d["base_sequence"] = self.base_sequence
        d["record_count"] = self.record_count
        if self.delete_horizon_ms is not None:
            d["delete_horizon_ms"] = self.delete_horizon_ms
        return d


class ControlBatch(Batch):
    """A control batch (a :class:`Batch`, for every reader of batches) with the end-transaction marker it holds
    (Kafka's ``EndTransactionMarker``: ABORT or COMMIT, with the coordinator epoch), named on its line as
    ``kafka.tools.DumpLogSegments`` names it on the marker's (``endTxnMarker: COMMIT coordinatorEpoch: 0``)."""

    marker: Marker

    def __new__(cls, batch: Batch, marker: Marker) -> ControlBatch:
        self = tuple.__new__(cls, batch)
        self.marker = marker
        return self

    def as_dict(self) -> dict[str, Any]:
        d = super().as_dict()
        d["control_type"] = self.marker.control_type
        d["coordinator_epoch"] = self.marker.coordinator_epoch
        return d


class Record(NamedTuple):
    """One record (v2) or inner message (v0/v1), with its absolute offset.

    Header keys are decoded as UTF-8 the way Kafka does (malformed bytes become U+FFFD).
    ``control_type`` / ``coordinator_epoch`` are set only for records of control batches.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    control_type: str | None = None
    coordinator_epoch: int | None = None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "record",
            "offset": self.offset,
            "timestamp": self.timestamp,
            "key": b64(self.key),
            "value": b64(self.value),
            "headers": [[k, b64(v)] for k, v in self.headers],
        }
        if self.control_type is not None:
            d["control_type"] = self.control_type
            if self.coordinator_epoch is not None:
                d["coordinator_epoch"] = self.coordinator_epoch
        return d


class Marker(NamedTuple):
    """An end-transaction marker: the ABORT or COMMIT record of a control batch (Kafka's ``EndTransactionMarker``), what
    ``verify``'s checks and the producer replay take of it."""

    control_type: str        # "ABORT" | "COMMIT"
    coordinator_epoch: int
    timestamp: int           # the record's


class Stretch(NamedTuple):
    """Batches ``lo:hi`` of a window's columns (``kafkatool._native.WindowColumns``) of which each *follows* the
    batch before it, the first one following the batch yielded just before the stretch: its CRC matches, its base
    offset is the previous last offset + 1, its record count is ``lastOffsetDelta + 1``, it has the same leader
    epoch, it carries no delete horizon, it is a data batch (it may be transactional) or one of the end-transaction
    markers in ``markers`` (:func:`kafkatool.records.stretch_markers`: an ABORT or COMMIT read without a finding, of
    a transactional batch with a producer id), and ``-1 <= first timestamp <= max timestamp``
    (``WindowColumns.follows``; for ``verify --deep`` also decoded natively and clean of the deep checks, so never a
    marker).

    Such a batch changes nothing a batch-by-batch reader tracks but counters, the last offset, the largest
    timestamp, where index entries fall, and the producers and their transactions, at the batches
    ``columns.producer_events`` names: where a transaction may begin (a producer's first transactional data batch,
    and its first after each of its markers) or end (a marker), and each producer's first, last data and last batch.
    So a consumer takes the whole stretch at once (``columns.advance``, ``advance_indexed``; :meth:`seek` and
    :meth:`first_reaching` for the batches an index rebuild names) and looks at a batch on its own only where
    something happens there. Only the native core makes stretches (:func:`kafkatool.records.scan` with
    ``stretches``, and ``verify --deep``'s decoded runs); the pure reader is their batch-by-batch reference
    (``tests/test_native.py``).
    """

    columns: Any
    lo: int
    hi: int
    markers: Mapping[int, Marker]  # the window's markers (by index in it) that its stretches may hold

    def batches(self) -> Iterator[Batch]:
        """The stretch's batches as :class:`Batch` tuples, exactly as ``scan()`` makes them."""
        return column_batches(self.columns, self.lo, self.hi)

    def batch(self, i: int) -> Batch:
        """Batch ``i`` of the window (``lo <= i < hi``) as a :class:`Batch`."""
        return column_batch(self.columns, i)

    def render(self, fmt: str, values: str, fallback: tuple, write: Callable[[bytes], object],
               context: str = "") -> None:
        """The batch lines ``dump`` prints for the stretch's batches (``fmt`` text or jsonl; no records; a marker named
        on its line), given to ``write`` as UTF-8 bytes in pieces of whole lines; see the native core's ``render``.
        ``context``: what each JSON line ends with before its ``}`` (the file's topic, partition and path)."""
        native.available().render(self.columns, self.lo, self.hi, fmt, values, fallback, write, False, context)

    def seek(self, position: int, i: int, at: int, end: int) -> tuple[int, int, int | None]:
        """Where byte ``position`` falls among batches ``i:hi`` of the stretch, batch ``i`` beginning at byte ``at`` and
        the stretch ending at byte ``end``: ``(j, p, before)``, batch ``j`` the first of them beginning at or after
        ``position`` (``hi`` when none), ``p`` where it begins (``end`` when none), ``before`` where batch ``j - 1``
        begins (None when ``j == i``).

        The batches of a stretch lie back to back, so batch ``j`` begins where ``columns.advance(a, j)`` ends for any
        ``a < j``. From ``i`` the search steps by the batches the stretch's mean size fits in the bytes to go, doubling
        the step until it passes ``position``, then narrows down between the two positions known either side,
        interpolating (exact when the batches between are of one size) and bisecting when that does not halve the
        range. Each look costs the batches it spans, so a search costs about the batches between ``at`` and
        ``position``, never the whole stretch."""
        advance, hi = self.columns.advance, self.hi
        if at >= position or i >= hi:
            return i, at, None
        target = min(position, end)  # no batch begins at or after ``end``: the search ends with ``j == hi`` then
        a, pa = i, at                # batch a begins before ``target``, batch b at or after it (b == hi: ``end``)
        step = max(1, -(-(target - at) * (hi - i) // (end - at)))
        while True:
            b = min(a + step, hi)
            pb = advance(a, b)[4]
            if pb >= target:
                break
            a, pa, step = b, pb, step * 2
        interpolate = True
        while b - a > 1:
            width = b - a
            m = a + (target - pa) * width // (pb - pa) if interpolate else (a + b) // 2
            m = min(max(m, a + 1), b - 1)
            pm = advance(a, m)[4]
            if pm >= target:
                b, pb = m, pm
            else:
                a, pa = m, pm
            interpolate = not interpolate or (b - a) * 2 <= width
        return b, pb, pa

    def first_reaching(self, timestamp: int, i: int, k: int) -> int:
        """The first of batches ``i:k`` whose max timestamp is ``timestamp`` or more, given that one of them is: where
        a running maximum over them first reaches it. ``columns.advance`` gives the maximum over a range; batch
        ``k - 1`` is tried first (timestamps mostly grow), then the range is bisected."""
        advance = self.columns.advance
        lo, hi = i, k - 1  # the answer is in lo..hi; the batches before lo stay below ``timestamp``
        if advance(lo, hi)[2] < timestamp:
            return hi
        hi -= 1
        while lo < hi:
            m = (lo + hi) // 2
            if advance(lo, m + 1)[2] >= timestamp:
                hi = m
            else:
                lo = m + 1
        return lo


NO_MARKERS: Mapping[int, Marker] = MappingProxyType({})  # the markers of stretches that hold none


def placed(items: Iterable[Any]) -> Iterator[tuple[Any, int, int]]:
    """A segment's scan (:func:`kafkatool.records.scan`, with or without ``stretches``) in file order, each item with
    the bytes ``start:end`` it spans: a :class:`Batch` its own, a :class:`Stretch` from where the item before it
    ended (its first batch follows that one; 0 at the start) to the end of its last batch; anything else (a finding,
    trailing bytes) where the item before it ended, spanning nothing."""
    at = 0
    for item in items:
        if item.__class__ is Stretch:
            end = item.columns.advance(item.lo, item.hi)[4]
            yield item, at, end
            at = end
        elif item.__class__ is Batch:
            start = item.position
            at = start + item.size
            yield item, start, at
        else:
            yield item, at, at

# Why a batch is among ``WindowColumns.producer_events`` (bits; the native core's ``EVENT_*``, held equal by the tests)
EVENT_FIRST = 1            # its producer id's first batch in the range
EVENT_BEGINS = 2           # its producer id's first transactional data batch in the range, or after one of its markers
EVENT_LAST_DATA = 4        # its producer id's last data batch in the range
EVENT_CONTROL = 8          # a control batch (in a stretch: one of its markers)
EVENT_LAST = 16            # its producer id's last batch in the range


def column_batches(columns: Any, lo: int, hi: int) -> Iterator[Batch]:
    """Batches ``lo:hi`` of a window's columns (``kafkatool._native.WindowColumns``) as :class:`Batch` tuples."""
    return map(Batch._make, zip(*columns.batch_columns(lo, hi), strict=True))


def column_batch(columns: Any, i: int) -> Batch:
    """Batch ``i`` of a window's columns (``kafkatool._native.WindowColumns``) as a :class:`Batch`."""
    return tuple.__new__(Batch, columns.batch(i))


def pushback(items: Iterator[Any], back: list[Any]) -> Iterator[Any]:
    """``items``, each followed by whatever the consumer appended to ``back`` while it had that item (last appended
    first): how a consumer of :class:`Stretch` es hands itself the part of a stretch it takes batch by batch. The
    next item is pulled only after them, so what the producer of ``items`` does when pulled (findings of its own)
    keeps its order with the consumer's."""
    for item in items:
        yield item
        while back:
            yield back.pop()
