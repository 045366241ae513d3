"""``dump --records --format csv|parquet``: records as rows, without Spark.

The columns are those of the Spark data source's records level (:func:`kafkatool.spark.schema.records_schema`):
``topic, partition, segment, file, offset, timestamp, key, value, headers, batch_base_offset, control_type,
crc_valid, error``. A batch whose records cannot all be decoded gives, as there, one row with null key and value
at the first offset not decoded, its ``error`` saying ``<code>: <reason>``.

The rows come from ``dump``'s own stream (:func:`kafkatool.dump.dump_paths`), so every dump option applies:
offset and time ranges, the search options, ``--isolation``. CSV needs nothing more (keys and values as
``--values`` says, base64 by default, an empty one and a null one both an empty cell; headers as a JSON list of
``[key, value]``, where null and empty differ); Parquet needs pyarrow
(``pip install 'kafkatool[spark]'``) and keeps keys and values binary, headers a list of structs.

With ``--key-decoder``/``--value-decoder`` (:mod:`kafkatool.payloads`), each decoded side adds two columns after
these: ``<side>_decoded``, the decoded value as compact JSON text (null for a null payload and for one that does not
decode: its row keeps the raw bytes, its finding goes to stderr), and ``<side>_schema_id``, the Confluent schema id
it was written with (null when not framed).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import UsageError
from .filetypes import classify
from .model import Batch, FileStart, Finding, Record, render_bytes
from .payloads import Decoded
from .payloads.decoded import PayloadRecord, compact
from .walk import partition_of

COLUMNS = ("topic", "partition", "segment", "file", "offset", "timestamp", "key", "value", "headers",
           "batch_base_offset", "control_type", "crc_valid", "error")
# What ``records.decode_records`` reports when a batch's records cannot all be read (the rest are framing and
# CRC findings of the scan, which lose no record: the Spark records level leaves those out too).
RECORDS_LOST = frozenset({"record-invalid", "records-trailing-bytes", "decompression-failed", "decompression-limit",
                          "unknown-compression", "message-invalid", "nested-compression"})
ROWS_PER_CHUNK = 65536


def decoded_columns(sides: tuple[str, ...]) -> tuple[str, ...]:
    """The columns after :data:`COLUMNS` for the decoded ``sides`` (``key``, ``value``)."""
    return tuple(f"{side}_{what}" for side in sides for what in ("decoded", "schema_id"))


def _decoded_cells(item: object, sides: tuple[str, ...]) -> tuple:
    cells: list = []
    for side in sides:
        got: Decoded | None = getattr(item, side) if isinstance(item, PayloadRecord) else None
        if got is None or got.error is not None or getattr(item.record, side) is None:  # type: ignore[attr-defined]
            cells += [None, None if got is None else got.schema_id]
        else:
            cells += [compact(got.value), got.schema_id]
    return tuple(cells)


def record_rows(items: Iterable[object], decoded: tuple[str, ...] = ()) -> Iterator[tuple | Finding]:
    """Rows (in :data:`COLUMNS` order, then :func:`decoded_columns` of ``decoded``) of dump's stream, and its
    findings as they come."""
    topic, partition, segment, file = None, -1, None, ""
    batch: Batch | None = None
    last_offset: int | None = None
    for item in items:
        if isinstance(item, FileStart):
            path = Path(item.path)
            part = partition_of(path.parent.name)
            topic, partition = part if part else (None, -1)
            segment, file, batch = classify(path).base_offset, item.path, None
        elif isinstance(item, Batch):
            batch, last_offset = item, None
        elif batch is not None and (isinstance(item, Record) or hasattr(item, "record")):
            r: Record = getattr(item, "record", item)
            last_offset = r.offset
            row = (topic, partition, segment, file, r.offset, r.timestamp, r.key, r.value, r.headers,
                   batch.base_offset, r.control_type, batch.crc_valid, None)
            yield row + _decoded_cells(item, decoded) if decoded else row
        elif isinstance(item, Finding):
            if (batch is not None and item.severity == "error" and item.code in RECORDS_LOST
                    and item.position == batch.position):
                offset = batch.base_offset if last_offset is None else last_offset + 1
                yield (topic, partition, segment, file, offset, batch.first_timestamp, None, None, (),
                       batch.base_offset, None, batch.crc_valid, f"{item.code}: {item.message}",
                       *(None,) * (2 * len(decoded)))
            yield item


def write_csv(rows: Iterable[tuple | Finding], out: IO[str], values: str = "base64",
              decoded: tuple[str, ...] = ()) -> Iterator[Finding]:
    """Rows as CSV with a header line; keys and values rendered as ``values`` says. Yields the findings."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS + decoded_columns(decoded))
    for row in rows:
        if isinstance(row, Finding):
            yield row
            continue
        topic, partition, segment, file, offset, ts, key, value, headers, base, ctype, ok, error = row[:13]
        writer.writerow([topic or "", partition, "" if segment is None else segment, file, offset, ts,
                         _cell(render_bytes(key, values)), _cell(render_bytes(value, values)),
                         json.dumps([[k, render_bytes(v, values)] for k, v in headers]), base,
                         ctype or "", "true" if ok else "false", error or "",
                         *("" if c is None else c for c in row[13:])])


def _cell(v: str | None) -> str:
    return "" if v is None else v


def write_parquet(rows: Iterable[tuple | Finding], out: IO[bytes], decoded: tuple[str, ...] = ()) -> Iterator[Finding]:
    """Rows as a Parquet file written to ``out`` (sequentially: a FIFO or a device will do), in the Spark records
    level's types. Yields the findings."""
    try:
        import pyarrow as pa  # noqa: TID251 - optional: the [spark] extra brings pyarrow
        import pyarrow.parquet as pq  # noqa: TID251
    except ImportError as exc:
        raise UsageError("--format parquet needs pyarrow (pip install 'kafkatool[spark]')") from exc
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    schema = pa.schema([
        ("topic", pa.string()), pa.field("partition", pa.int32(), False), ("segment", pa.int64()),
        pa.field("file", pa.string(), False), pa.field("offset", pa.int64(), False),
        pa.field("timestamp", pa.int64(), False), ("key", pa.binary()), ("value", pa.binary()),
        pa.field("headers", pa.list_(pa.field("element", header, False)), False),
        pa.field("batch_base_offset", pa.int64(), False), ("control_type", pa.string()),
        pa.field("crc_valid", pa.bool_(), False), ("error", pa.string()),
        *((name, pa.string() if name.endswith("_decoded") else pa.int32()) for name in decoded_columns(decoded)),
    ])
    chunk: list[tuple] = []

    def flush(writer: Any) -> None:
        cols = list(zip(*chunk, strict=True))
        cols[8] = [[{"key": k, "value": v} for k, v in h] for h in cols[8]]
        writer.write_batch(pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema,
                                                                                           strict=True)],
                                                      schema=schema))
        chunk.clear()

    with pq.ParquetWriter(out, schema) as writer:
        for row in rows:
            if isinstance(row, Finding):
                yield row
                continue
            chunk.append(row)
            if len(chunk) >= ROWS_PER_CHUNK:
                flush(writer)
        if chunk:
            flush(writer)


def export(items: Iterable[object], fmt: str, out: IO[bytes] | None, values: str = "base64",
           decoded: tuple[str, ...] = ()) -> Iterator[Finding]:
    """Write dump's records as ``fmt`` to ``out`` (csv: stdout when None; parquet needs ``out``); yields the findings.
    ``out`` comes from :func:`kafkatool.safewrite.outpath.output_file`, which decides how ``--out`` is written.
    ``decoded``: the sides (``key``, ``value``) whose decoded columns follow (:func:`decoded_columns`)."""
    rows = record_rows(items, decoded)
    if fmt == "parquet":
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        yield from write_parquet(rows, out, decoded)
    elif out is None:
        yield from write_csv(rows, sys.stdout, values, decoded)
    else:
        text = io.TextIOWrapper(out, encoding="utf-8", newline="")
        yield from write_csv(rows, text, values, decoded)
        text.flush()
        text.detach()  # ``out`` is its opener's to close


__all__ = ["COLUMNS", "decoded_columns", "export", "record_rows", "write_csv", "write_parquet"]
