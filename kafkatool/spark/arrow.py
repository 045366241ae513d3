"""The records level's Arrow columns, ``offset`` to ``error``: from the native core's buffers, or from Python lists.

:func:`records_builder` gives the reader (``source._read_records``) one of two builders with the same calls:

- ``add_batch(batch, raw, room)``: the records of a v2 batch declaring at most ``room`` of them straight into
  the columns, ``True``; ``False`` (nothing added) for any other batch, which the reader adds with
- ``add_pieces(batch, raw, path, room)``: a generator adding the batch's rows in pieces of at most ``room()``
  rows (``room`` is called before each piece), stopping after each so that the reader can flush: a batch
  declaring millions of records (a few KB of zstd: a record-count bomb) never becomes one Arrow batch of
  millions of rows. What the native core does not decode (legacy messages, control batches, damage) the
  Python reader does (``records.record_chunks``), a bounded number of records at a time, and each error it
  reports is a row (``add_error``) where the records it lost would have been;
- ``add_records(records, base_offset, crc_valid)`` and ``add_error(offset, timestamp, message, base_offset,
  crc_valid)`` (the row standing for records that could not be decoded);
- ``len(builder)``, ``builder.data_bytes()``, and ``builder.finish()``: the columns as ``pyarrow`` arrays,
  and a fresh start.

:class:`NativeRecords` has the Rust extension (``native/src/arrow.rs``) decode each v2 batch's records
into Arrow buffers it owns, which ``pyarrow.py_buffer`` wraps without a copy: no Python object per
record. Compressed batches are decompressed by ``records.decompress_records``, the one home of
decompression (a native codec lands there), and their records section decoded the same way.
:class:`PureRecords` is the reference and the fallback (no extension, or ``KAFKATOOL_PURE_PYTHON=1``):
every batch decoded by ``decode_records``, columns made by ``pyarrow.array`` from lists, as the data
source always did. ``tests/test_spark_arrow.py`` holds the two equal, value for value and type for type.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from kafkatool import native
from kafkatool.errors import DecompressionError
from kafkatool.model import Batch, Finding, Record
from kafkatool.records import decompress_records, record_chunks, v2_record_chunks

# The columns the builders make, in the schema's order (``records_schema``; ``value`` only when there is one).
COLUMNS = ("offset", "timestamp", "key", "value", "headers", "batch_base_offset", "control_type", "crc_valid",
           "error")
# A batch is flushed once its keys and values pass this many bytes, so Arrow's int32 offsets (2 GiB a
# column) stay far away whatever one Kafka batch adds.
MAX_DATA_BYTES = 64 << 20


def records_builder(values: str, arrow: pa.Schema) -> NativeRecords | PureRecords:
    """The native builder when the extension is in use (``native.CORE``), else the pure one."""
    core = native.CORE
    return PureRecords(values, arrow) if core is None else NativeRecords(core, values, arrow)


def _fields(arrow: pa.Schema) -> list[pa.Field]:
    return [arrow.field(name) for name in COLUMNS if name in arrow.names]


class PureRecords:
    """Rows as :class:`~kafkatool.model.Record` tuples, columns by ``pyarrow.array``: the reference."""

    def __init__(self, values: str, arrow: pa.Schema) -> None:
        self.values = values
        self.fields = _fields(arrow)
        self._reset()

    def _reset(self) -> None:
        self.rows: list[Record] = []
        self.counts: list[int] = []  # per batch added: its rows, base offset, CRC verdict
        self.bases: list[int] = []
        self.oks: list[bool] = []
        self.errors: dict[int, str] = {}  # row -> message, for the rows standing for undecodable records
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self.rows)

    def data_bytes(self) -> int:
        return self.nbytes

    def add_batch(self, batch: Batch, raw: bytes, room: int) -> bool:
        return False

    def add_pieces(self, batch: Batch, raw: bytes, path: str, room: Callable[[], int]) -> Iterator[None]:
        return _add_decoded(self, record_chunks(batch, raw, path), batch, room)

    def _batch(self, n: int, base_offset: int, crc_valid: bool) -> None:
        if self.bases and self.bases[-1] == base_offset and self.oks[-1] == crc_valid:
            self.counts[-1] += n
        else:
            self.counts.append(n)
            self.bases.append(base_offset)
            self.oks.append(crc_valid)

    def add_records(self, records: Sequence[Record], base_offset: int, crc_valid: bool) -> None:
        self.rows += records
        self.nbytes += sum(len(r[2] or b"") + len(r[3] or b"") for r in records)
        self._batch(len(records), base_offset, crc_valid)

    def add_error(self, offset: int, timestamp: int, message: str, base_offset: int, crc_valid: bool) -> None:
        self.errors[len(self.rows)] = message
        self.rows.append(Record(offset, timestamp, None, None))
        self._batch(1, base_offset, crc_valid)

    def finish(self) -> list[pa.Array]:
        n = len(self.rows)
        offset, ts, key, value, headers, ctype, _epoch = zip(*self.rows, strict=True) if n else ((),) * 7
        columns: list = [_longs(offset), _longs(ts), key]
        if self.values == "binary":
            columns.append(value)
        elif self.values == "base64":
            columns.append(base64_strings(value))
        errors = self.errors
        error = [errors.get(i) for i in range(n)] if errors else pa.nulls(n, pa.string())
        columns += [headers, pa.array(np.repeat(np.array(_longs(self.bases), np.int64), self.counts)), ctype,
                    pa.array(np.repeat(np.array(self.oks, np.bool_), self.counts)), error]
        self._reset()
        return [c if isinstance(c, pa.Array) else pa.array(c, f.type)
                for c, f in zip(columns, self.fields, strict=True)]


def _add_decoded(builder: PureRecords | NativeRecords, chunks: Iterable[list[Record] | Finding], batch: Batch,
                 room: Callable[[], int], last: int | None = None) -> Iterator[None]:
    """What the Python reader decoded (``record_chunks``: lists of records, then findings) in pieces of at most
    ``room()`` rows, stopping after each; an error finding is a row after the last record (``last``: the offset
    of the last one added before these), where the records it lost would have been."""
    base, ok = batch.base_offset, batch.crc_valid
    for item in chunks:
        if isinstance(item, Finding):
            if item.severity == "error":
                builder.add_error(batch.base_offset if last is None else last + 1, batch.first_timestamp,
                                  f"{item.code}: {item.message}", base, ok)
                yield
            continue
        n = len(item)
        i = 0
        while i < n:
            k = room()
            builder.add_records(item if i == 0 and k >= n else item[i:i + k], base, ok)
            i += k
            yield
        if n:
            last = item[-1].offset


def base64_strings(values: Sequence[bytes | None]) -> pa.Array:
    """The ``value`` column of ``values=base64``: each value's base64 text (null stays null)."""
    return pa.array([None if v is None else base64.b64encode(v).decode("ascii") for v in values], pa.string())


def _longs(values: Sequence[int]) -> Sequence[int]:
    """The values as a long column holds them: as Kafka's Java reader computes them, in 64-bit arithmetic.

    Only damaged bytes give the Python reader a value beyond 64 bits (an offset past ``Long.MAX_VALUE``, a
    10-byte timestamp delta); Java's ``long`` wraps it (``DefaultRecord.readFrom``: ``baseOffset +
    offsetDelta``), and so does this, as the native builder does.
    """
    if all(_MIN_LONG <= v <= _MAX_LONG for v in (min(values, default=0), max(values, default=0))):
        return values
    return [(v - _MIN_LONG) % (1 << 64) + _MIN_LONG for v in values]


_MIN_LONG, _MAX_LONG = -(1 << 63), (1 << 63) - 1


class NativeRecords:
    """The records of v2 batches decoded by the extension into Arrow buffers it owns (no copy into pyarrow)."""

    def __init__(self, core, values: str, arrow: pa.Schema) -> None:
        self._builder = core.RecordsBuilder(values)
        self.fields = {f.name: f for f in _fields(arrow)}
        self.add_records = self._builder.add_records
        self.add_error = self._builder.add_error
        self.data_bytes = self._builder.data_bytes
        self._add_v2 = self._builder.add_v2
        self._add_v2_part = self._builder.add_v2_part

    def __len__(self) -> int:
        return len(self._builder)

    def add_batch(self, batch: Batch, raw: bytes, room: int) -> bool:
        """The records of a v2 batch that is not a control batch and declares at most ``room`` records,
        decompressed first if need be; ``False`` (nothing added) for any other batch, and for any batch whose
        records section is damaged."""
        attributes = batch[7]
        if batch[4] < 2 or attributes & 0x20 or batch[12] > room:  # legacy, control, big: add_pieces
            return False
        section = _section(batch, raw)
        if section is None:
            return False  # decode_records words the finding
        return self._add_v2(*section, batch[12], batch[1], batch[10], batch[11] if attributes & 0x08 else None,
                            batch[6])

    def add_pieces(self, batch: Batch, raw: bytes, path: str, room: Callable[[], int]) -> Iterator[None]:
        """A batch :meth:`add_batch` did not take: a v2 batch declaring more than ``room()`` records decoded here a
        piece at a time (the records section held once, never all its records), the Python reader taking over
        where the native core gives up; any other batch decoded by the Python reader."""
        attributes, count = batch[7], batch[12]
        section = None
        if batch[4] == 2 and not attributes & 0x20 and count > room():
            section = _section(batch, raw)
        if section is None:  # legacy, control, damaged (add_batch gave up on it): the Python reader's
            yield from _add_decoded(self, record_chunks(batch, raw, path), batch, room)
            return
        data, pos = section
        log_append_time = batch[11] if attributes & 0x08 else None
        done, last = 0, None
        while done < count:
            k = min(room(), count - done)
            added = self._add_v2_part(data, pos, k, batch[1], batch[10], log_append_time, batch[6], done + k == count)
            if added is None:
                yield from _add_decoded(self, v2_record_chunks(batch, data, pos, done, path), batch, room, last)
                return
            (pos, last), done = added, done + k
            yield

    def finish(self) -> list[pa.Array]:
        n, offsets, timestamps, key, value, headers, bases, control, crc_valid, error = self._builder.finish()
        f = self.fields
        list_type = f["headers"].type
        header = list_type.value_type
        starts, header_count, header_keys, header_values = headers
        entries = pa.Array.from_buffers(header, header_count, [None], children=[
            _var(header.field("key").type, header_count, header_keys),
            _var(header.field("value").type, header_count, header_values)])
        columns = [
            pa.Array.from_buffers(f["offset"].type, n, [None, pa.py_buffer(offsets)]),
            pa.Array.from_buffers(f["timestamp"].type, n, [None, pa.py_buffer(timestamps)]),
            _var(f["key"].type, n, key),
            *([] if value is None else [_var(f["value"].type, n, value)]),
            pa.Array.from_buffers(list_type, n, [None, pa.py_buffer(starts)], children=[entries]),
            pa.Array.from_buffers(f["batch_base_offset"].type, n, [None, pa.py_buffer(bases)]),
            _var(f["control_type"].type, n, control),
            pa.Array.from_buffers(f["crc_valid"].type, n, [None, pa.py_buffer(crc_valid)]),
            _var(f["error"].type, n, error),
        ]
        return columns


def _section(batch: Batch, raw: bytes) -> tuple[bytes, int] | None:
    """``(data, start)``: a v2 batch's records section is ``data[start:]``, decompressed if need be (None: it
    cannot be; the Python reader words the finding)."""
    if not batch[7] & 7:
        return raw, 61  # RECORD_BATCH_OVERHEAD: decoded in place
    try:
        return decompress_records(batch, raw), 0  # the hook: whatever decompresses for decode_records
    except DecompressionError:
        return None


def _var(arrow_type: pa.DataType, n: int, parts: tuple) -> pa.Array:
    """A binary or string array over the extension's ``(validity or None, nulls, offsets, data)``."""
    valid, nulls, offsets, data = parts
    return pa.Array.from_buffers(arrow_type, n, [None if valid is None else pa.py_buffer(valid),
                                                 pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)
