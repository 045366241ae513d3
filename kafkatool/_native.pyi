"""Types of ``kafkatool._native``, the Rust core in ``native/`` (``src/lib.rs`` registers every name below).

Every function has a pure-Python twin that decides whatever it returns ``None`` for, and that
``tests/test_native.py`` holds equal to it; :mod:`kafkatool.native` picks one or the other (``CORE``). Offsets and
positions are Python ints; "int64 bytes" are native-endian ``array('q')`` buffers, "int32 bytes" ``array('i')``.
"""

import mmap
from collections.abc import Callable
from typing import TypeAlias

_Bytes = bytes | bytearray | memoryview | mmap.mmap  # what ``with_bytes`` reads: any C-contiguous buffer
_Write = Callable[[bytes], object]

# The 20 columns of ``kafkatool.model.Batch`` (one list per field, one entry per batch), native batches being v2:
# position, base_offset, last_offset, size, magic, crc, crc_valid, attributes, compression, timestamp_type,
# first_timestamp, max_timestamp, record_count, partition_leader_epoch, producer_id, producer_epoch, base_sequence,
# transactional, control, delete_horizon_ms.
BatchColumns = tuple[
    list[int], list[int], list[int], list[int], list[int], list[int], list[bool], list[int], list[str], list[str],
    list[int], list[int], list[int], list[int], list[int], list[int], list[int], list[bool], list[bool],
    list[int | None],
]
# One batch as those 20 fields (what ``kafkatool.model.Batch`` is built from).
BatchFields = tuple[
    int, int, int, int, int, int, bool, int, str, str, int, int, int, int, int, int, int, bool, bool, int | None,
]
# The records of a v2 records section: offsets, timestamps, keys, values, headers ((key, value) pairs per record).
RecordColumns = tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[tuple[str, bytes | None], ...]],
]
# A chunk of records: RecordColumns; with ``times`` only offsets and timestamps; with ``lines`` a RecordChunk.
ChunkColumns: TypeAlias = RecordColumns | tuple[list[int], list[int]] | RecordChunk
# A variable-size Arrow column: (validity bitmap or None, null count, int32 offsets, data).
VarParts = tuple[OwnedBuffer | None, int, OwnedBuffer, OwnedBuffer]

EVENT_FIRST: int       # producer_events: a producer id's first batch in the range
EVENT_BEGINS: int      # a transactional data batch that begins its producer's transaction
EVENT_LAST_DATA: int   # a producer id's last data batch in the range
EVENT_CONTROL: int     # a control batch (an end-transaction marker)
EVENT_LAST: int        # a producer id's last batch in the range


class NativePanic(RuntimeError):
    """A panic inside the native core, raised in Python instead of aborting the process (a bug: exit 70)."""


BatchWalk = tuple[int, int, int, int]
"""``(p, base, limit, max_batch)``: where a walk over a window's v2 batches starts (``p`` in the window, the window at
file position ``base``), the file position no batch may begin at or after, the largest batch size taken; one tuple
for :func:`scan_batches`, :func:`scan_headers` and :func:`decode_window_columns` alike."""


def scan_batches(window: _Bytes, walk: BatchWalk,
                 with_raw: bool) -> tuple[int, int, BatchColumns, list[bytes] | None]:
    """Whole v2 batches of ``window`` from the walk's ``p`` on: ``(p, stop, columns, raws)``, where the caller goes
    on, why the walk stopped (0: the entry at ``p`` is for the general path, 1: it begins at or after ``limit``, 2:
    the last batch returned has a bad CRC), the batches' columns, and with ``with_raw`` each batch's bytes. Pure
    twin: the v2 branch of :func:`kafkatool.records.scan`'s loop (``kafkatool.records._v2_batch``)."""


def scan_headers(window: _Bytes, walk: BatchWalk) -> tuple[int, int, bytes, bytes, bytes, list[tuple[int, bytes]]]:
    """The walk of :func:`scan_batches` for the columnar scan: ``(p, stop, positions, headers, crc_valid,
    controls)``, positions as int64 bytes, each batch's first 61 bytes back to back, one byte (0/1) per batch,
    and ``(index, bytes)`` of the control batches. Pure twin: :func:`kafkatool.records.scan` (``columnar``),
    which packs the same :class:`kafkatool.records.HeaderRun`."""


def resync(window: _Bytes, start: int, until: int, room: int) -> tuple[int, int, bool] | None:
    """``(offset, size, whole)`` of the first offset in ``[start, until)`` of ``window`` where a v2 batch's header
    checks pass (its CRC too when the batch lies whole in ``window``: ``whole``; ``room``: the file's bytes after
    ``window``, where it may end), or None. Pure twin: :func:`kafkatool.records._resync_window` (under
    :func:`kafkatool.records.resync`)."""


def crc32c(data: _Bytes, value: int = 0) -> int:
    """CRC32C of ``data`` continuing ``value``. Pure twin: the ``crc32c`` package's ``crc32c`` (under
    :func:`kafkatool.records.crc32c`)."""


def decode_window_columns(window: _Bytes, walk: BatchWalk, decode: bool = True, max_decompressed: int = 0,
                          budget: int | None = None) -> tuple[int, int, WindowColumns]:
    """``(p, stop, columns)``: the whole v2 batches of ``window`` from the walk's ``p`` on and (with ``decode``) their
    records; ``p`` and ``stop`` as :func:`scan_batches` returns them, and with a ``budget`` stop 3 at a whole batch
    beginning ``budget`` bytes or more after ``p``. Pure twin: :func:`kafkatool.records.scan` with ``stretches``
    (batch by batch) and, for the records, :func:`kafkatool.records.decode_records`."""


def decode_v2_chunk(data: _Bytes, start: int, count: int, base_offset: int, base_timestamp: int,
                    log_append_time: int | None, last: bool, times: bool = False,
                    lines: bool = False) -> tuple[ChunkColumns, int] | None:
    """The next ``count`` records of the v2 records section ``data`` from ``start`` on, as ``(columns, end)``: the
    columns ``(offsets, timestamps, keys, values, headers)``, or with ``times`` only ``(offsets, timestamps)``, or
    with ``lines`` a :class:`RecordChunk`; with ``last`` the section must end after them (with the batch's record
    count: every record of the section); ``None`` where the Python reader must decide (damage, trailing bytes, values
    beyond 64 bits). Pure twin: ``kafkatool.records._v2_records`` (a chunk at a time:
    :func:`kafkatool.records.record_chunks`)."""


def decompress(codec: int, data: _Bytes, start: int, limit: int, legacy_lz4: bool = False) -> bytes | None:
    """``data[start:]`` decompressed with ``codec`` (1..4) within ``limit`` bytes, or ``None`` where the pure reader
    must decide (damage, a bomb, an unknown codec). Pure twin: :func:`kafkatool.codecs.decompress` (through
    :func:`kafkatool.records.decompress_payload`)."""


def decompress_buffer(codec: int, data: _Bytes, start: int, limit: int) -> Decompressed | None:
    """:func:`decompress` into a buffer of its own (:class:`Decompressed`) rather than ``bytes``: held once, never
    copied. Pure twin: :func:`kafkatool.codecs.decompress`."""


def decode_v2_compressed(raw: _Bytes, codec: int, limit: int, count: int, base_offset: int, base_timestamp: int,
                         log_append_time: int | None) -> RecordColumns | bytes | None:
    """A compressed v2 batch (``raw``, from its first byte) decompressed and decoded in one call: the columns of
    :func:`decode_v2_chunk`; or the decompressed records section as ``bytes`` when the records need the pure reader; or
    ``None`` when the decompression does. Pure twin: :func:`kafkatool.records.decompress_records` then
    ``kafkatool.records._v2_records``."""


def _panic_for_test() -> None:
    """Panics on purpose: lets the tests check that a panic reaches Python as :class:`NativePanic`."""


class Decompressed:
    """Decompressed bytes the extension owns, read through the buffer protocol (``memoryview(d)``)."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...


class OwnedBuffer:
    """Bytes the extension owns, read-only through the buffer protocol: ``pyarrow.py_buffer(b)`` wraps them without
    a copy."""

    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...


class RecordChunk:
    """One chunk of the records of a big batch (:func:`decode_v2_chunk` with ``lines``), over the records section
    it indexes; ``kafkatool.records.RecordRun`` holds one to render its records as ``dump`` prints them."""

    def __len__(self) -> int: ...

    def columns(self) -> RecordColumns:
        """The records as the columns of :func:`decode_v2_chunk`. Pure twin: ``kafkatool.records._v2_records``."""


class WindowColumns:
    """The columns of one window's whole v2 batches (:func:`decode_window_columns`); ``kafkatool.model.Stretch`` and
    ``kafkatool.records.RecordRun`` hold one with a batch range ``lo..hi``."""

    def __len__(self) -> int: ...

    def pending(self) -> list[int]:
        """Indices of the batches whose records were not decoded here (Python decodes them:
        :func:`kafkatool.records.decode_records`)."""

    def deep_suspects(self, lo: int, hi: int) -> list[int]:
        """Indices in ``lo..hi`` of decoded batches that ``verify --deep``'s checks would flag. Pure twin: the
        record checks of ``kafkatool.segment_check._deep_check``."""

    def follows(self, lo: int, hi: int, deep: bool, controls: list[int] = ...) -> bytes:
        """One byte per batch of ``lo..hi``: 1 where it follows the batch before it, the control batches in
        ``controls`` taken as any other. Pure twin: :func:`kafkatool.records.stretch_bounds`'s rule, batch by
        batch."""

    def control_records(self, lo: int, hi: int) -> list[tuple[int, int, int, int, int, int | None, int | None, int]]:
        """``(i, producer_id, attributes, key_version, key_type, value_version, coordinator_epoch, timestamp)`` of
        each control batch in ``lo..hi`` whose one record was read here. Pure twin:
        :func:`kafkatool.records.read_marker`."""

    def producer_events(self, lo: int, hi: int, mask: int = ...) -> list[tuple[int, int, int, int]]:
        """``(i, producer_id, base_offset, kinds)`` of each batch in ``lo..hi`` with one of the ``EVENT_*`` bits
        ``mask``. Pure twin: the per-batch transaction steps of ``kafkatool.segment_check._check_log`` and of the
        loader's producer-state replay."""

    def advance(self, lo: int, hi: int) -> tuple[int, int | None, int, int, int | None]:
        """``(end, last_offset, max_timestamp, records, next_position)`` of batches ``lo..hi`` taken together. Pure
        twin: the same sums over :meth:`batch_columns`."""

    def advance_indexed(self, lo: int, hi: int, offset: int, max_timestamp: int, base_offset: int,
                        relative: _Bytes, positions: _Bytes, next_entry: int, timestamps: _Bytes,
                        time_offsets: _Bytes, next_time_entry: int,
                        max_before: int) -> tuple[int, int | None, int, int, int | None, int, int, int]:
        """``(end, last_offset, max_timestamp, records, next_position, next_entry, largest, next_time_entry)``:
        :meth:`advance` up to ``offset``/``max_timestamp``, passing the offset-index entries (int32 bytes) and
        time-index entries (int64 bytes) that name a batch exactly. Pure twin: ``_check_log``'s per-batch index
        merge (``kafkatool.segment_check._offset_entries_at``, ``_time_entries_reached``)."""

    def producer_spans(self, lo: int, hi: int) -> list[tuple[int, int, int, int, bool]]:
        """``(producer_id, first, last, first_epoch, rising)`` of each producer id's batches in ``lo..hi``, in the
        order the ids first appear. Pure twin: a producer-state replay of every batch
        (``kafkatool.loader._producer_runs`` decides when this is enough)."""

    def producer_sequences(self, lo: int, hi: int) -> list[tuple[int, int, int, bool, int, bytes, bytes]]:
        """``(producer_id, first, last, sequential, records, sequences, offsets)`` of each producer id's batches in
        ``lo..hi``: the base sequences (int32 bytes) and base offsets (int64 bytes) of the batches after the first.
        Pure twin: the idempotence audit of every batch (:mod:`kafkatool.producers`)."""

    def raw(self, i: int) -> bytes:
        """The bytes of batch ``i`` (framing included)."""

    def batch_columns(self, lo: int, hi: int) -> BatchColumns:
        """Batches ``lo..hi`` as the 20 columns of ``kafkatool.model.Batch``. Pure twin:
        ``kafkatool.records._v2_batch`` per batch."""

    def batch(self, i: int) -> BatchFields:
        """Batch ``i`` as the 20 fields of ``kafkatool.model.Batch`` (``IndexError`` past the end)."""

    def record_count(self, lo: int, hi: int) -> int:
        """Number of records decoded in batches ``lo..hi``."""

    def record_columns(self, lo: int, hi: int) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]:
        """The record columns of batches ``lo..hi`` as int64 bytes, for Arrow: ``(offsets, timestamps, key_starts,
        key_lengths, value_starts, value_lengths, header_starts)``, a null key or value as length -1; slices index
        :meth:`data`. Pure twin: ``kafkatool.spark.arrow.PureRecords``."""

    def data(self) -> bytes:
        """The window's bytes (what every slice indexes)."""

    def search(self, lo: int, hi: int, search: RecordSearch, from_offset: int | None = None,
               to_offset: int | None = None) -> list[tuple[int, tuple[list[int], list[int], list[bytes | None],
                                                                       list[bytes | None], list[tuple]]]]:
        """``(i, (offsets, timestamps, keys, values, headers))`` of each decoded batch ``i`` of ``lo..hi`` with records
        matching ``search`` in the offset range (both ends inclusive, None: open): only those records, as the columns
        of :func:`decode_v2_chunk`. The GIL is released while it searches. Pure twin: ``RecordFilter.batch`` and
        ``RecordFilter.record`` with ``DumpOptions.wants`` (``kafkatool.dump``)."""


class RecordSearch:
    """``kafkatool.dump.RecordFilter`` compiled once for :meth:`WindowColumns.search`: patterns of the ``regex`` crate
    (``kafkatool.pattern.translate`` of Python's), searched in each field's bytes decoded as UTF-8 with malformed
    sequences replaced, as Python decodes them (a null field never matches); ``header`` is ``(name, pattern or
    None)``. ``ValueError`` for a pattern the crate does not build (too big): the caller searches in Python."""

    def __new__(cls, key: str | None = None, value: str | None = None, header: tuple[str, str | None] | None = None,
                producer_id: int | None = None, from_time: int | None = None, to_time: int | None = None
                ) -> RecordSearch: ...


def render(columns: WindowColumns | RecordChunk, lo: int, hi: int, fmt: str, values: str,
           fallback: tuple[object, object, object], write: _Write, records: bool = True, context: str = "") -> None:
    """Batches ``lo..hi`` of a :class:`WindowColumns` and (with ``records``) their records, or records ``lo..hi`` of
    a :class:`RecordChunk` (without the batch line), rendered as ``dump`` prints them (``fmt`` "text" or "jsonl",
    ``values`` "base64" | "text" | "hex" | "none"; a control batch whose marker was read here named ABORT or COMMIT
    with its coordinator epoch), handed to ``write`` as UTF-8 bytes in pieces of whole lines; ``context`` is written
    at the end of each JSON line, before its ``}`` (the file's topic, partition and path).
    Pure twin: ``kafkatool.cli.output``'s batch and record lines."""


class RecordsBuilder:
    """The columns ``offset``..``error`` of the Spark records level, for one Arrow batch at a time. Pure twin:
    ``kafkatool.spark.arrow.PureRecords``."""

    def __new__(cls, values: str) -> RecordsBuilder:
        """``values``: ``binary``, ``base64`` (the value column is their base64 text) or ``none`` (no value column)."""

    def __len__(self) -> int: ...

    def data_bytes(self) -> int:
        """Bytes gathered in the variable-size columns (the reader flushes well below 2 GiB)."""

    def add_v2(self, data: _Bytes, start: int, count: int, base_offset: int, base_timestamp: int,
               log_append_time: int | None, crc_valid: bool) -> bool:
        """Every record of the v2 records section ``data[start:]`` as rows; ``False``, and nothing added, where the
        section is for the Python reader."""

    def add_v2_part(self, data: _Bytes, start: int, count: int, base_offset: int, base_timestamp: int,
                    log_append_time: int | None, crc_valid: bool, last: bool) -> tuple[int, int | None] | None:
        """The next ``count`` records of a v2 records section from ``data[start:]`` on: where they end and the offset
        of the last record added, or ``None`` and nothing added."""

    def add_records(self, records: list[tuple[int, int, bytes | None, bytes | None,
                                              tuple[tuple[str, bytes | None], ...], str | None]],
                    base_offset: int, crc_valid: bool) -> None:
        """``kafkatool.model.Record`` tuples decoded by Python, as rows of a batch at ``base_offset`` (an int beyond 64
        bits kept as its low 64 bits, as Java's ``long``)."""

    def add_error(self, offset: int, timestamp: int, message: str, base_offset: int, crc_valid: bool) -> None:
        """The row standing for records that could not be decoded: null key and value, no headers, ``error`` set."""

    def finish(self) -> tuple[int, OwnedBuffer, OwnedBuffer, VarParts, VarParts | None,
                              tuple[OwnedBuffer, int, VarParts, VarParts], OwnedBuffer, VarParts, OwnedBuffer,
                              VarParts]:
        """The buffers gathered, and a fresh start: ``(rows, offsets, timestamps, key, value, (list offsets, header
        count, header keys, header values), batch_base_offsets, control_type, crc_valid, error)``, ``value`` None
        when omitted, ``crc_valid`` a bitmap."""
