"""Reading on the executors (Spark's ``DataSourceReader.read``): one input partition's Kafka batches, records
or findings as ``pyarrow.RecordBatch``es. Heavy imports stay inside the functions.

Rows leave ``read()`` as ``pyarrow.RecordBatch``es of about ``ROWS_PER_BATCH`` rows, columns built
whole: the batches level runs the scan in its columnar mode (``records.scan(columnar=True)``) and decodes
each block of v2 headers with numpy, so no Python object is made per batch. A block holds at most the
headers of one scan window (4 MiB), so memory stays bounded.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from pyspark.sql.types import StructType

from .fs import display, open_input
from .options import Payloads
from .plan import PackedPartition, SegmentPartition
from .schema import BATCHES, FINDINGS, records_schema

ROWS_PER_BATCH = 8192


def _arrow_schema(schema: StructType):
    """The Arrow schema Spark checks ``read()``'s batches against (its own conversion, so they match)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def read_partition(part: SegmentPartition | PackedPartition, level: str, values: str = "binary", deep: bool = False,
                   schema: StructType | None = None, decode: str | None = None,
                   payloads: Payloads | None = None) -> Iterator:
    """``pyarrow.RecordBatch``es of one input partition at ``level`` (also usable without Spark).

    A :class:`PackedPartition` gives those of each of its parts in turn (each opened only when reached).
    ``decode``: a :data:`DECODED` name, records level. ``payloads``: options keyDecoder/valueDecoder, records level.
    """
    if isinstance(part, PackedPartition):
        return (rb for p in part.parts for rb in read_partition(p, level, values, deep, schema, decode, payloads))
    if schema is None:
        schema = {"batches": BATCHES, "findings": FINDINGS}.get(level) or records_schema(
            values, decode, () if payloads is None else payloads.sides)
    arrow = _arrow_schema(schema)
    if level == "batches":
        return _read_batches(part, arrow)
    if level == "records":
        return _read_records(part, arrow, values, decode, payloads, schema)
    return _read_findings(part, arrow, deep)


def _constants(part: SegmentPartition, n: int, file: str | None = None) -> list:
    import pyarrow as pa

    return [pa.repeat(pa.scalar(part.topic, pa.string()), n), pa.repeat(pa.scalar(part.partition, pa.int32()), n),
            pa.repeat(pa.scalar(part.segment, pa.int64()), n), pa.repeat(pa.scalar(file or part.name, pa.string()), n)]


def _control_type(batch, raw: bytes, name: str) -> str | None:
    """ABORT / COMMIT / ...: the type in a control batch's one record (its bytes kept by the columnar scan)."""
    from kafkatool.records import decode_records

    records, _findings = decode_records(batch, raw, name)
    return records[0].control_type if records else None


@functools.cache
def _header_dtype():
    """The numpy dtype of a v2 batch header, derived from ``formats.record_batch.RecordBatchHeader``.

    The Construct declaration stays the one source of the layout: field names, order, sizes and
    signedness come from it (a field without a struct format, the attributes bit struct, is taken as a
    signed integer of its size). Its 61 bytes are packed, big-endian.
    """
    import numpy as np

    from kafkatool.formats.record_batch import RecordBatchHeader

    fields = []
    for sub in RecordBatchHeader.subcons:
        fmt = getattr(sub.subcon, "fmtstr", None)
        kind = "u" if fmt and fmt[-1].isupper() else "i"
        fields.append((sub.name, np.dtype(f">{kind}{sub.sizeof()}")))
    dtype = np.dtype(fields)
    assert dtype.itemsize == RecordBatchHeader.sizeof()
    return dtype


def _run_columns(run, pa, np) -> tuple[dict, list[int]]:
    """The batches level's columns of a :class:`~kafkatool.records.HeaderRun`, column-wise (no per-row
    Python), and the rows that are control batches (their ``control_type`` needs their record)."""
    from kafkatool.records import CODECS

    h = np.frombuffer(run.headers, dtype=_header_dtype())
    attrs = h["attributes"].astype(np.int32)
    base = h["base_offset"].astype(np.int64)
    first_ts = h["base_timestamp"].astype(np.int64)
    codec_names = pa.array([*CODECS, "unknown(5)", "unknown(6)", "unknown(7)"], pa.string())
    control = (attrs & 0x20) != 0
    return {
        "position": pa.array(np.frombuffer(run.positions, dtype=np.int64)),
        "base_offset": pa.array(base),
        "last_offset": pa.array(base + h["last_offset_delta"].astype(np.int64)),
        "partition_leader_epoch": pa.array(h["partition_leader_epoch"].astype(np.int32)),
        "magic": pa.array(h["magic"].astype(np.int32)),
        "compression": codec_names.take(pa.array(attrs & 7)),
        "timestamp_type": pa.array(["create", "log_append"], pa.string()).take(pa.array((attrs >> 3) & 1)),
        "first_timestamp": pa.array(first_ts),
        "max_timestamp": pa.array(h["max_timestamp"].astype(np.int64)),
        "producer_id": pa.array(h["producer_id"].astype(np.int64)),
        "producer_epoch": pa.array(h["producer_epoch"].astype(np.int32)),
        "base_sequence": pa.array(h["base_sequence"].astype(np.int32)),
        "transactional": pa.array((attrs & 0x10) != 0),
        "control": pa.array(control),
        "crc": pa.array(h["crc"].astype(np.int64)),
        "crc_valid": pa.array(np.frombuffer(run.crc_valid, dtype=np.uint8) != 0),
        "size": pa.array(h["batch_length"].astype(np.int32) + 12),
        "record_count": pa.array(h["records_count"].astype(np.int32)),
        "delete_horizon_ms": pa.array(first_ts, mask=(attrs & 0x40) == 0),
    }, np.flatnonzero(control).tolist()


def _read_batches(part: SegmentPartition, arrow) -> Iterator:
    """The scan in columnar mode: runs of v2 headers decoded a block at a time; legacy messages as tuples."""
    import numpy as np
    import pyarrow as pa

    from kafkatool.model import Batch
    from kafkatool.records import HeaderRun, scan

    types = {f.name: f.type for f in arrow}
    as_struct = pa.struct([(name, types.get(name, pa.int32())) for name in Batch._fields])

    def record_batch(fields: dict, ctypes) -> pa.RecordBatch:
        columns = [*_constants(part, len(ctypes)), *(fields[name] for name in arrow.names[4:-1]), ctypes]
        return pa.RecordBatch.from_arrays(columns, schema=arrow)

    def from_runs(runs: list) -> pa.RecordBatch:
        run = HeaderRun.join(runs)
        fields, control_rows = _run_columns(run, pa, np)
        n = len(run.positions)
        if control_rows:  # rare: decode each control batch's record for its type
            ctypes = [None] * n
            for i in control_rows:
                ctypes[i] = _control_type(run.batch(i), run.controls[i], part.name)
            ctypes = pa.array(ctypes, pa.string())
        else:
            ctypes = pa.nulls(n, pa.string())
        return record_batch(fields, ctypes)

    def from_tuples(rows: list) -> pa.RecordBatch:  # legacy v0/v1 messages
        fields = dict(zip(Batch._fields, pa.array(rows, as_struct).flatten(), strict=True))
        return record_batch(fields, pa.nulls(len(rows), pa.string()))  # v0/v1 have no control batches

    runs: list = []
    legacy: list = []
    pending = 0
    with open_input(part.path) as fh:
        for item in scan(fh, part.name, start=part.start, end=part.end, columnar=True):
            kind = item.__class__
            if kind is HeaderRun:
                if legacy:
                    yield from_tuples(legacy)
                    legacy = []
                runs.append(item)
                pending += len(item.positions)
            elif kind is Batch:
                if runs:
                    yield from_runs(runs)
                    runs, pending = [], 0
                legacy.append(item)
                pending += 1
            else:  # findings and trailing bytes: the findings level's business
                continue
            if pending >= ROWS_PER_BATCH:
                yield from_runs(runs) if runs else from_tuples(legacy)
                runs, legacy, pending = [], [], 0
    if runs:
        yield from_runs(runs)
    if legacy:
        yield from_tuples(legacy)


@functools.cache
def _payload_decoders(payloads: Payloads) -> tuple:
    """The key and value decoders of options keyDecoder/valueDecoder, built once per worker process (their schemas
    loaded once); what loading them met is not a row of the records level."""
    from kafkatool.payloads import payload_decoder

    return tuple(None if name is None else payload_decoder(name, payloads.sources)[0]
                 for name in (payloads.key, payloads.value))


def _payload_columns(payloads: Payloads, key: list, value: list, ctypes: list, errors: list, arrow,
                     structs: dict, topic: str | None) -> list:
    """``<side>_decoded`` (compact JSON text) and ``<side>_schema_id`` of each decoded side: null for a null
    payload, one that does not decode (its raw column stays), a control record and an error row; and its
    ``<side>_struct`` where the schema has one (``structs``: side to Spark type), the same values."""
    import pyarrow as pa

    from kafkatool.payloads.decoded import compact

    from .structs import fill

    columns = []
    for side, decoder, raws in zip(("key", "value"), _payload_decoders(payloads), (key, value), strict=True):
        if decoder is None:
            continue
        texts, ids, values = [], [], []
        for raw, ctype, error in zip(raws, ctypes, errors, strict=True):
            got = None if raw is None or ctype is not None or error is not None else decoder(
                raw, None if topic is None else f"{topic}-{side}")
            ok = got is not None and got.error is None
            texts.append(compact(got.value) if ok else None)
            ids.append(None if got is None else got.schema_id)
            values.append(got.value if ok else None)
        columns += [pa.array(texts, pa.string()), pa.array(ids, pa.int32())]
        if side in structs:
            columns.append(pa.array([fill(structs[side], v) for v in values], arrow.field(f"{side}_struct").type))
    return columns


def _read_records(part: SegmentPartition, arrow, values: str, decode: str | None = None,
                  payloads: Payloads | None = None, spark_schema: StructType | None = None) -> Iterator:
    """One row per record, columns built by :mod:`kafkatool.spark.arrow` (in the native core where it is in
    use); a batch the builder does not take whole is added in pieces (``add_pieces``), and each error the
    Python reader reports is a row of its own where the records it lost would have been. An Arrow batch holds
    at most ``ROWS_PER_BATCH`` rows (one more where an error row ends it), whatever one Kafka batch declares,
    and its keys and values pass ``MAX_DATA_BYTES`` by one piece's at most."""
    import pyarrow as pa

    from kafkatool.internal.decode import RECORD_DECODERS, decode_columns
    from kafkatool.records import RawBatch, scan

    from .arrow import MAX_DATA_BYTES, base64_strings, records_builder

    name = part.name  # a property that parses the URL: once, not once per batch
    # decoded only where the partition is that internal topic's (or the layout names no topic)
    decoding = decode is not None and part.topic in (None, RECORD_DECODERS[decode][0])
    # the decoders need the values themselves: built as binary, the value column made after decoding
    binary = decoding or payloads is not None
    structs = {f.name[:-len("_struct")]: f.dataType for f in (spark_schema.fields if spark_schema else ())
               if f.name in ("key_struct", "value_struct")}
    builder = records_builder("binary", _arrow_schema(records_schema())) if binary else records_builder(values, arrow)

    def flush() -> pa.RecordBatch:
        columns = builder.finish()
        n = len(columns[0])
        if binary:
            key, value, _headers, _base, ctype, _ok, error = (c.to_pylist() for c in columns[2:])
        extra = []
        if decode is not None:
            if decoding:
                results = [(None, None) if e is not None else decode_columns(decode, k, v, c)
                           for k, v, c, e in zip(key, value, ctype, error, strict=True)]
                extra += [pa.array([d for d, _ in results], arrow.field("decoded").type),
                          pa.array([e for _, e in results], pa.string())]
            else:
                extra += [pa.nulls(n, arrow.field("decoded").type), pa.nulls(n, pa.string())]
        if payloads is not None:
            extra += _payload_columns(payloads, key, value, ctype, error, arrow, structs, part.topic)
        if binary:
            if values == "base64":
                columns[3] = base64_strings(value)
            elif values == "none":
                del columns[3]
        return pa.RecordBatch.from_arrays([*_constants(part, n), *columns, *extra], schema=arrow)

    def room() -> int:  # rows the Arrow batch has room for (one at least: an error row may pass the mark)
        return max(ROWS_PER_BATCH - len(builder), 1)

    add_batch, add_pieces, data_bytes = builder.add_batch, builder.add_pieces, builder.data_bytes
    with open_input(part.path) as fh:
        for item in scan(fh, name, start=part.start, end=part.end, with_raw=True):
            if item.__class__ is not RawBatch:
                continue
            batch, raw = item
            if add_batch(batch, raw, ROWS_PER_BATCH - len(builder)):  # the common case: a whole batch that fits
                if len(builder) >= ROWS_PER_BATCH or data_bytes() >= MAX_DATA_BYTES:
                    yield flush()
                continue
            for _ in add_pieces(batch, raw, name, room):  # never more than room() rows at a time, flushed between
                if len(builder) >= ROWS_PER_BATCH or data_bytes() >= MAX_DATA_BYTES:
                    yield flush()
        if len(builder):
            yield flush()


def framed_schema_ids(paths: list[str], sides: tuple[str, ...]) -> dict[str, dict[int, set[tuple[int, ...]]]]:
    """The Confluent schema ids the framed keys and values (``sides``) under ``paths`` name, each with the message-index
    arrays after it: the records read once more, for :func:`kafkatool.spark.structs.struct_columns`."""
    from .plan import plan
    from .structs import framed_ids

    ids: dict[str, dict[int, set[tuple[int, ...]]]] = {s: {} for s in sides}
    if not sides:
        return ids
    for piece in plan(paths):
        for rb in read_partition(piece, "records"):
            for side in sides:
                framed_ids(rb.column(side).to_pylist(), ids[side])
    return ids


def _read_findings(part: SegmentPartition, arrow, deep: bool) -> Iterator:
    """verify's per-segment check (:func:`~kafkatool.segment_check.check_segment`) with the segment's
    indexes, on local files or, through :mod:`pyarrow.fs`, URLs alike."""
    import pyarrow as pa

    from kafkatool.log_check import CheckOptions, SegmentTask
    from kafkatool.segment_check import check_segment

    # The check sees each file by the name rows show (a URL without credentials or options, so a missing
    # index's name is derived from the .log's); the opener maps a name back to the URL to open.
    urls = {display(u): u for u in (part.path, part.index, part.timeindex, part.txnindex) if u is not None}
    names = [None if u is None else display(u) for u in (part.index, part.timeindex, part.txnindex)]
    standalone = part.segment is None or not part.name.endswith(".log")  # a lone file, or a leftover
    task = SegmentTask(part.segment or 0, part.name, *names, active=part.active, standalone=standalone)
    findings = check_segment(task, CheckOptions(deep=deep),
                             open_file=lambda name: open_input(urls.get(name, name))).findings
    for i in range(0, len(findings), ROWS_PER_BATCH):
        chunk = findings[i:i + ROWS_PER_BATCH]
        n = len(chunk)
        columns = [*_constants(part, n)[:3], [f.path for f in chunk], [f.severity for f in chunk],
                   [f.code for f in chunk], [f.position for f in chunk], [f.message for f in chunk]]
        yield pa.RecordBatch.from_arrays(
            [c if isinstance(c, pa.Array) else pa.array(c, f.type) for c, f in zip(columns, arrow, strict=True)],
            schema=arrow)


__all__ = ["ROWS_PER_BATCH", "framed_schema_ids", "read_partition"]
