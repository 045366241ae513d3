"""``delivery``: did a consumer lose or duplicate records? Its sink, checked against the log on disk.

A *sink* is what a consumer processed: rows naming ``topic``, ``partition`` and ``offset`` (CSV with a header,
JSON lines, or Parquet). For every topic-partition in the sink, the *expected* records are those a consumer
receives from the log with the chosen isolation level (``Fetcher``/``CompletedFetch``):

- data records only: control batches (COMMIT/ABORT markers) are never handed to the application;
- ``read_committed``: no records of aborted transactions (decided from the markers and producer state in the
  log, :func:`kafkatool.txns.committed_view`, not from ``.txnindex`` alone), and nothing at or past the last
  stable offset (an open transaction) or the high watermark;
- ``read_uncommitted``: everything below the high watermark.

Offsets in the range that the log does not hold as expected records are *unexpected* when a sink claims them
(a compacted-away offset, an offset past the log end); aborted data and control-record offsets a sink claims
are ``aborted_delivered``. The verdict speaks of the expected records only: none missing and none twice is
exactly-once, duplicates only at-least-once, missing only at-most-once.

With a consumer group, its committed offset (``__consumer_offsets``) says what a restart would do: records
processed at or past it are delivered again (``redelivered_on_restart``), expected records below it that the
sink lacks were committed but never processed (``committed_not_processed``).

Memory stays bounded whatever the sink's size or content: a row is read as it streams, checked by one set of
rules (:func:`sink_row`) whatever its format, and refused as a finding when it breaks them; the offsets of the
partitions under the paths wait in sorted runs (at most ``run_size`` in memory, all partitions together),
spilled to temporary files and merged in one streaming pass against the log; what is missing, duplicated or
unexpected is kept as ranges, the first :data:`MAX_RANGES` of each kind listed and all of them counted.
"""

from __future__ import annotations

import csv
import heapq
import io
import json
import os
import re
import reprlib
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from .errors import InputIOError, UsageError
from .filetypes import open_regular
from .findings import finding
from .internal.offsets import OFFSETS_TOPIC, CommittedOffset, consumer_offsets
from .loader import LogDirs, load_partition
from .model import Finding
from .native import PURE_ENV
from .producers import segment_logs
from .records import DEFAULT_MAX_DECOMPRESSED, RECORD_BATCH_OVERHEAD, RawBatch, record_chunks, scan
from .txns import checkpointed_offset, committed_view, high_watermark
from .walk import partition_dirs_and_findings

ISOLATIONS = ("read_committed", "read_uncommitted")
SINK_COLUMNS = ("topic", "partition", "offset")


# --- the sink -----------------------------------------------------------------------------------------------

# The row rules, one set for CSV, JSON lines and Parquet. A column is found by its name ignoring case and blanks
# around it (a header, a JSON object's keys, a Parquet schema); a BOM before a text sink is skipped.
OFFSET_MAX = (1 << 63) - 1      # an offset is a Java long, never negative
PARTITION_MAX = (1 << 31) - 1   # a partition is a Java int
# org.apache.kafka.common.internals.Topic.validate: 1 to 249 of these characters, and neither "." nor ".."
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_TOPICS_SEEN: set[str] = set()  # names that passed _TOPIC: a sink names few topics, each is matched once
# A longer text row (or CSV field) is refused unread: it bounds what one row costs to parse. A sink may carry the
# record's value beside its coordinates: 16 MiB holds a record of Kafka's largest usual sizes, base64-encoded.
MAX_ROW_CHARS = 16 << 20
MAX_ROW_FINDINGS = 100          # per sink file: past these, invalid rows are counted in one last finding
MAX_PARTITIONS_ABSENT = 100     # topic-partitions of the sink not under the paths, named one by one
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 40
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict = 1, 3, 3


def sink_columns(names: Iterable[Any]) -> dict[str, Any] | str:
    """The name that stands for each of topic, partition and offset among a sink's column names (its CSV header,
    a JSON object's keys, its Parquet schema): the one equal to it ignoring case and surrounding blanks. The
    reason, when one is missing or named twice."""
    found: dict[str, list[Any]] = {c: [] for c in SINK_COLUMNS}
    for name in names:
        key = name.strip().lower() if isinstance(name, str) else None
        if key in found:
            found[key].append(name)
    missing = [c for c, n in found.items() if not n]
    twice = [c for c, n in found.items() if len(n) > 1]
    if missing or twice:
        return "; ".join(([f"no {' / '.join(missing)} column"] if missing else [])
                         + ([f"{' / '.join(twice)} named more than once"] if twice else []))
    return {c: n[0] for c, n in found.items()}


def sink_row(topic: Any, partition: Any, offset: Any) -> tuple[str, int, int] | str:
    """(topic, partition, offset) of one row, or why it is not one: the topic a string that is a valid Kafka topic
    name, the partition an integer 0..2^31-1 and the offset an integer 0..2^63-1, each given as an integer or as
    a string of digits, never as a float, a bool or anything else."""
    if type(topic) is not str:
        return f"the topic {_shown(topic)} is not a string"
    if topic not in _TOPICS_SEEN:
        if not (_TOPIC.fullmatch(topic) and topic not in (".", "..")):
            return f"the topic {_shown(topic)} is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)"
        if len(_TOPICS_SEEN) >= 1024:  # small whatever the sink holds
            _TOPICS_SEEN.clear()
        _TOPICS_SEEN.add(topic)
    part = _integer(partition, "partition", PARTITION_MAX)
    if isinstance(part, str):
        return part
    off = _integer(offset, "offset", OFFSET_MAX)
    if isinstance(off, str):
        return off
    return topic, part, off


def _integer(value: Any, name: str, top: int) -> int | str:
    if type(value) is int:  # never a bool (a subclass of int), a float or a Decimal
        n = value
    elif type(value) is str and value.isascii() and value.isdigit():  # ASCII digits only, no sign, no blank
        digits = value if len(value) <= 19 else value.lstrip("0") or "0"  # never int() of a long string
        n = int(digits) if len(digits) <= 19 else top + 1
    else:
        return f"the {name} {_shown(value)} is not an integer"
    return n if 0 <= n <= top else f"the {name} {_shown(value)} is not in 0..{top}"


def _shown(value: Any) -> str:
    """A hostile value in a message: bounded, with its control characters escaped."""
    return "nothing" if value is None else _SHOWN.repr(value)


def _said(text: str, limit: int = 200) -> str:
    """A reader's error message (it may quote the file): bounded, with its control characters escaped."""
    cut = text.strip()[:limit] + ("..." if len(text.strip()) > limit else "")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)


class _RowTooLong(Exception):
    pass


class _JsonNumber(str):
    """A JSON number with a fraction or an exponent, kept as written (``1e400`` is not turned into ``inf``):
    never an integer, whatever its value, and shown as given."""

    def __repr__(self) -> str:
        return str.__str__(self)


class _Lines:
    """The lines of a text sink (universal newlines, as a file opened with ``newline=""``), each bounded by
    :data:`MAX_ROW_CHARS`: a longer one is read through in bounded pieces and raises :class:`_RowTooLong`."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.number, self.back, self.head = fh, 0, None, ""

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if self.back is not None:
            line, self.back = self.back, None
            return line
        line = self.fh.readline(MAX_ROW_CHARS + 1)
        if not line:
            raise StopIteration
        self.number += 1
        if len(line) > MAX_ROW_CHARS and not line.endswith(("\n", "\r")):
            self.head = line[:64]
            while (more := self.fh.readline(1 << 16)) and not more.endswith(("\n", "\r")):
                pass
            raise _RowTooLong(f"longer than {MAX_ROW_CHARS:,} characters")
        return line


def read_sink(source: str, stdin: BinaryIO | None = None, columns: bool = True
              ) -> Iterator[tuple[str, int, int] | Finding]:
    """(topic, partition, offset) of every row of one sink file (``-``: standard input), read as it streams; a
    row that does not follow :func:`sink_row` is a finding naming the file and line (for Parquet: the row
    number), and reading goes on. Past :data:`MAX_ROW_FINDINGS` of them, the rest are counted in one finding.
    ``columns``: a CSV or JSON-lines file read by the columnar reader where it is installed (:func:`columnar`), else
    by rows."""
    where = "<stdin>" if source == "-" else source
    invalid = 0
    for item in _rows(source, stdin, columns):
        if isinstance(item, Finding):
            invalid += 1
            if invalid > MAX_ROW_FINDINGS:
                continue
        yield item
    if invalid > MAX_ROW_FINDINGS:
        yield finding("sink-row-invalid", where, None,
                      f"{invalid - MAX_ROW_FINDINGS:,} more invalid rows (the first {MAX_ROW_FINDINGS} are above)")


def _rows(source: str, stdin: BinaryIO | None, columns: bool) -> Iterator[tuple[str, int, int] | Finding]:
    # utf-8-sig: a BOM is skipped; newline="": CR, LF and CRLF all end a line, and CSV sees them as they are
    text = {"encoding": "utf-8-sig", "errors": "replace", "newline": ""}
    if source == "-":
        fh = io.TextIOWrapper(stdin or sys.stdin.buffer, **text)
        try:
            yield from _text(fh, "<stdin>", "")
        finally:
            fh.detach()  # standard input stays open
        return
    path = Path(source)
    if not path.is_file():  # a FIFO, a device or a socket is never opened: it could block or never end
        raise UsageError(f"sink not found: {_said(source)}" if not path.exists() else
                         f"sink {_said(source)} is not a regular file (for a pipe: --sink -)")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet(path)
        return
    cols = columnar() if columns else None
    try:
        if cols is not None:
            yield from _csv_columnar(path, source, cols, suffix in (".jsonl", ".ndjson", ".json"))
            return
        with open(path, **text) as fh:
            yield from _text(fh, source, suffix)
    except OSError as exc:
        raise InputIOError(f"cannot read sink {source}: {exc.strerror or exc}") from exc


def _text(fh: Any, where: str, suffix: str) -> Iterator[tuple[str, int, int] | Finding]:
    """CSV or JSON lines, told by the suffix or else by the first line that is not blank (``{``: JSON)."""
    lines = _Lines(fh)
    jsonl = suffix in (".jsonl", ".ndjson", ".json")
    while True:
        try:
            first = next(lines, "")
        except _RowTooLong as exc:
            if jsonl or lines.head.lstrip().startswith("{"):
                jsonl = True
                yield _bad(where, f"line {lines.number}", exc)
                continue
            yield finding("sink-header-invalid", where, None, f"line {lines.number}: {exc}")
            return
        if not first or first.strip():
            break
    lines.back = first or None
    if jsonl or first.lstrip().startswith("{"):
        yield from _jsonl(lines, where)
    else:
        yield from _csv(lines, where)


class SinkChunk(NamedTuple):
    """Offsets of consecutive valid rows of one topic-partition (a numpy int64 array), from the columnar reader."""
    topic: str
    partition: int
    offsets: Any


def columnar() -> Any:
    """numpy and pyarrow (the [spark] extra brings both) where installed and ``KAFKATOOL_PURE_PYTHON`` is unset:
    the sink is then read and compared column-wise; else row by row, with the same results."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        import numpy as np  # noqa: TID251 - optional: the [spark] extra brings numpy and pyarrow
        import pyarrow as pa  # noqa: TID251
        import pyarrow.compute as pc  # noqa: TID251
        import pyarrow.csv as pcsv  # noqa: TID251
        import pyarrow.json as pjson  # noqa: TID251
    except ImportError:
        return None
    return np, pa, pc, pcsv, pjson


# Sinks smaller than this are read and compared row by row even where numpy and pyarrow are installed: importing
# them costs ~0.3 s of CPU and ~60 MB, more than the rows of a small sink cost, and that memory would come on top of
# what a log's largest batch takes (a record-count bomb's decompressed bytes). A Parquet sink needs pyarrow anyway.
COLUMNS_FROM = 1 << 20


def _columns_pay(sinks: list[str]) -> bool:
    """Whether the sinks are worth the columnar reader: a Parquet file, or CSV/JSON files of COLUMNS_FROM bytes or
    more (standard input is read by rows in any case)."""
    size = 0
    for sink in sinks:
        if sink.lower().endswith(".parquet"):
            return True
        try:
            size += os.stat(sink).st_size if sink != "-" else 0
        except OSError:
            pass  # read_sink says what is wrong with it
    return size >= COLUMNS_FROM


# Bytes of a CSV or JSON-lines sink the columnar reader takes at a time: with its arrays (offsets, partitions, topic
# codes: 8 to 16 bytes a row), what reading holds is a few times this, whatever the sink's size.
BLOCK_BYTES = 1 << 22


def _csv_columnar(path: Path, where: str, cols: Any, jsonl: bool
                  ) -> Iterator[tuple[str, int, int] | SinkChunk | Finding]:
    """A CSV sink read a block of whole lines at a time by pyarrow's CSV reader, its three columns only, and
    checked column-wise by :func:`sink_row`'s rules. Only *plain* blocks are read so (no quote, no CR: a line is a
    row, so line numbers stay exact); a block with a row the rules refuse is read again row by row (its findings
    are those of the row reader); from a block that is not plain (or a line longer than a block) on, the rest of
    the file goes to the row reader. Everything yielded is what :func:`_text` yields, valid rows grouped. JSON lines
    (``jsonl``: told by the suffix, else by a first line starting with ``{``): :func:`_jsonl_columnar`."""
    np, pa, pc, pcsv, pjson = cols
    with open(path, "rb") as fh:
        data = fh.read(BLOCK_BYTES)
        start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        if jsonl:
            yield from _jsonl_columnar(fh, where, cols, data[start:], start)
            return
        end = data.find(b"\n", start)
        line = data[start:] if end < 0 else data[start:end + 1]
        try:
            text = line.decode()
        except UnicodeDecodeError:
            text = ""
        if text.lstrip().startswith("{"):  # JSON lines, as _text tells them
            yield from _jsonl_columnar(fh, where, cols, data[start:], start)
            return
        if (end < 0 and len(data) >= BLOCK_BYTES) or b'"' in line or b"\r" in line or not text.strip():
            # not a plain CSV header on the first line: the row reader
            fh.seek(0)
            yield from _rest(fh, where, None, 0)
            return
        header = next(csv.reader([text]))
        columns = sink_columns(header)
        if isinstance(columns, str):
            fh.seek(0)
            yield from _rest(fh, where, None, 0)
            return
        names = [f"c{i}" for i in range(len(header))]
        picked = [names[header.index(columns[c])] for c in SINK_COLUMNS]
        read = pcsv.ReadOptions(column_names=names, use_threads=False)
        parse = pcsv.ParseOptions(quote_char=False, newlines_in_values=False)
        convert = pcsv.ConvertOptions(include_columns=picked, column_types=dict.fromkeys(picked, pa.string()),
                                      strings_can_be_null=False, quoted_strings_can_be_null=False)
        number, pos = 1, len(line) + start
        for block in _line_blocks(fh, data[pos:]):
            if not block or b'"' in block or b"\r" in block:  # a line longer than a block, or not plain
                fh.seek(pos)
                yield from _rest(fh, where, header, number)
                return
            chunks = _plain_block(block, read, parse, convert, picked, cols)
            if chunks is None:  # a row the rules refuse in it: the row reader says which
                lines = _Lines(io.StringIO(block.decode(errors="replace"), newline=""))
                lines.number = number
                yield from _csv(lines, where, header)
            else:
                yield from chunks
            number += block.count(b"\n")
            pos += len(block)


def _line_blocks(fh: Any, data: bytes) -> Iterator[bytes]:
    """``data`` and the rest of ``fh`` in blocks of whole lines of about :data:`BLOCK_BYTES` (the last one may end
    without a newline); an empty block: a line longer than a block starts there (the caller hands it over)."""
    while True:
        more = fh.read(BLOCK_BYTES) if len(data) < BLOCK_BYTES else b""
        data += more
        cut = data.rfind(b"\n") + 1 if more or len(data) >= BLOCK_BYTES else len(data)
        if not cut and data:
            yield b""
        if not cut:
            return
        yield data[:cut]
        data = data[cut:]


def _rest(fh: Any, where: str, header: list[str] | None, number: int, jsonl: bool = False
          ) -> Iterator[tuple[str, int, int] | Finding]:
    """The row reader from where the columnar one stopped (a line start, ``number`` lines read)."""
    text = io.TextIOWrapper(fh, encoding="utf-8-sig" if header is None and not jsonl else "utf-8", errors="replace",
                            newline="")
    try:
        lines = _Lines(text)
        lines.number = number
        if jsonl:
            yield from _jsonl(lines, where)
        elif header is None:
            yield from _text(text, where, "")
        else:
            yield from _csv(lines, where, header)
    finally:
        text.detach()


# What pyarrow's JSON reader (RapidJSON, as Arrow runs it) takes that json.loads refuses, or reads otherwise: values
# nested deeper than json's recursion allows, integers longer than int()'s digit limit, Inf/-Inf/-NaN. A block with
# any of them (or with what only looks like them) is read by rows.
_NESTED_MAX = 100
_ODD_CONSTANT = re.compile(rb"[:,\[][ \t]*-?(?:NaN|Inf)")
_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def _jsonl_columnar(fh: Any, where: str, cols: Any, data: bytes, pos: int
                    ) -> Iterator[tuple[str, int, int] | SinkChunk | Finding]:
    """A JSON-lines sink read a block of whole lines at a time by pyarrow's JSON reader and checked column-wise by
    :func:`sink_row`'s rules; a block the reader cannot take with certainty (:func:`_json_block`) is read by
    :func:`_jsonl`, so findings and line numbers are the row reader's; from a line longer than a block on, the rest
    of the file. ``data``: the file's first bytes from ``pos`` (past a BOM) on."""
    number = 0
    for block in _line_blocks(fh, data):
        if not block:  # a line longer than a block
            fh.seek(pos)
            yield from _rest(fh, where, None, number, jsonl=True)
            return
        chunks = _json_block(block, cols)
        if chunks is None:
            lines = _Lines(io.StringIO(block.decode(errors="replace"), newline=""))
            lines.number = number
            yield from _jsonl(lines, where)
            number = lines.number
        else:
            yield from chunks
            number += block.count(b"\n")
        pos += len(block)


def _json_block(block: bytes, cols: Any) -> list[SinkChunk] | None:
    """The valid rows of a block of JSON lines grouped by topic-partition, or None unless the columnar reading is
    certain to be :func:`_jsonl`'s: every line one object starting at its first byte (no blank line, a CR only
    before a LF), UTF-8, one spelling of each of topic, partition and offset among all its keys, with no value
    missing (pyarrow refuses a key twice in an object, a line of two objects gives one row too many), topics
    strings, partitions and offsets all integers or all strings, and nothing of what only pyarrow takes."""
    np, pa, pc, pcsv, pjson = cols
    lines = block.count(b"\n") + (not block.endswith(b"\n"))
    if not block.startswith(b"{") or block.count(b"\n{") != lines - 1 or block.count(b"\r") != block.count(b"\r\n"):
        return None
    if not block.isascii():
        try:
            block.decode()
        except UnicodeDecodeError:
            return None
    try:
        table = pjson.read_json(pa.py_buffer(block),
                                read_options=pjson.ReadOptions(use_threads=False, block_size=len(block) + 1),
                                parse_options=pjson.ParseOptions(newlines_in_values=False))
    except pa.ArrowException:  # not JSON, a key twice, a value of two types, ...
        return None
    columns = sink_columns(table.column_names)
    if table.num_rows != lines or isinstance(columns, str):
        return None
    types, floats, depth = [(f.type, 1) for f in table.schema], False, 1
    while types:  # nesting: as deep as the deepest type (iterative: a type may be deeper than Python's stack)
        t, d = types.pop()
        depth, floats = max(depth, d), floats or pa.types.is_floating(t)
        types += [(t.field(i).type, d + 1) for i in range(t.num_fields)]
    if depth >= _NESTED_MAX:
        return None
    limit = sys.get_int_max_str_digits()
    if floats and (((b"NaN" in block or b"Inf" in block) and _ODD_CONSTANT.search(block))
                   or (limit and b"0" * (limit + 1) in block.translate(_DIGITS))):
        return None  # pyarrow reads an integer past int()'s limit as a float
    topics, parts, offs = (table.column(columns[c]) for c in SINK_COLUMNS)
    if not (pa.types.is_string(topics.type) and all(c.type in (pa.int64(), pa.string()) for c in (parts, offs))):
        return None
    return _valid_chunks(*(c.combine_chunks() for c in (topics, parts, offs)), cols)


def _plain_block(block: bytes, read: Any, parse: Any, convert: Any, picked: list[str],
                 cols: Any) -> list[SinkChunk] | None:
    """The valid rows of a plain block grouped by topic-partition (in the order each first appears), or None when
    any row breaks :func:`sink_row`'s rules or does not have the header's fields."""
    np, pa, pc, pcsv, pjson = cols
    try:
        table = pcsv.read_csv(pa.py_buffer(block), read_options=read, parse_options=parse, convert_options=convert)
    except pa.ArrowException:  # a row of other fields than the header's, bytes not UTF-8
        return None
    if not table.num_rows:
        return []
    return _valid_chunks(*(table.column(c).combine_chunks() for c in picked), cols)


def _valid_chunks(topics: Any, parts: Any, offs: Any, cols: Any) -> list[SinkChunk] | None:
    """Columns of topics, partitions and offsets (strings, or integers for the last two) grouped by topic-partition
    (in the order each first appears), or None when a row breaks :func:`sink_row`'s rules (or a type is one
    pyarrow's compute functions do not take: the row reader takes it)."""
    try:
        return _checked_chunks(topics, parts, offs, cols)
    except cols[1].ArrowException:
        return None


def _checked_chunks(topics: Any, parts: Any, offs: Any, cols: Any) -> list[SinkChunk] | None:
    np, pa, pc, pcsv, pjson = cols
    if pa.types.is_dictionary(topics.type):
        topics = topics.cast(pa.string())
    ints = []
    for col, top in ((parts, PARTITION_MAX), (offs, OFFSET_MAX)):
        if col.null_count or (pa.types.is_integer(col.type) and pc.min(col).as_py() < 0):
            return None
        if not pa.types.is_integer(col.type):
            col = col.cast(pa.string()) if pa.types.is_dictionary(col.type) else col
            if not pc.all(pc.ascii_is_decimal(col)).as_py() or pc.max(pc.utf8_length(col)).as_py() > 19:
                return None
        try:
            values = pc.cast(col, pa.int64()).to_numpy()
        except pa.ArrowException:  # past 2^63-1
            return None
        if values.max() > top:
            return None
        ints.append(values)
    if topics.null_count:
        return None
    coded = topics.dictionary_encode()
    names = coded.dictionary.to_pylist()
    if any(isinstance(sink_row(t, 0, 0), str) for t in names):
        return None
    parts_np, offs_np = ints
    keys = coded.indices.to_numpy().astype(np.int64) << 32 | parts_np
    if keys[0] == keys[-1] and (keys == keys[0]).all():
        return [SinkChunk(names[int(keys[0]) >> 32], int(parts_np[0]), offs_np)]
    uniq, first = np.unique(keys, return_index=True)
    return [SinkChunk(names[int(k) >> 32], int(k) & 0xFFFFFFFF, offs_np[keys == k]) for k in uniq[np.argsort(first)]]


def _bad(where: str, at: str, reason: object) -> Finding:
    return finding("sink-row-invalid", where, None, f"{at}: {reason}")


def _csv(lines: _Lines, where: str, header: list[str] | None = None) -> Iterator[tuple[str, int, int] | Finding]:
    """The rows of a CSV sink; ``header``: already read (the columnar reader hands the rest of a file over)."""
    if csv.field_size_limit() < MAX_ROW_CHARS:  # csv's own 131,072 would refuse a row the row rule takes
        csv.field_size_limit(MAX_ROW_CHARS)
    reader = csv.reader(lines)
    if header is None:
        try:
            header = next(reader, [])
        except (csv.Error, _RowTooLong) as exc:
            yield finding("sink-header-invalid", where, None, f"line {lines.number}: {exc}")
            return
    columns = sink_columns(header)
    if isinstance(columns, str):
        yield finding("sink-header-invalid", where, None,
                      f"line {lines.number}: the CSV header {_shown(header)}: {columns}")
        return
    topic, partition, offset = (header.index(columns[c]) for c in SINK_COLUMNS)
    width = max(topic, partition, offset) + 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except (csv.Error, _RowTooLong) as exc:  # csv.Error: a field over csv.field_size_limit, a stray quote
            yield _bad(where, f"line {lines.number}", exc)
            continue
        if not fields:
            continue
        if len(fields) < width:
            yield _bad(where, f"line {lines.number}", f"{len(fields)} fields, the header has {len(header)}")
            continue
        row = sink_row(fields[topic], fields[partition], fields[offset])
        yield _bad(where, f"line {lines.number}", row) if isinstance(row, str) else row


def _jsonl(lines: _Lines, where: str) -> Iterator[tuple[str, int, int] | Finding]:
    keys: tuple[Any, ...] = ()
    columns: dict[str, Any] | str = ""
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except _RowTooLong as exc:
            yield _bad(where, f"line {lines.number}", exc)
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_float=_JsonNumber, parse_constant=_JsonNumber)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the interpreter's stack
            yield _bad(where, f"line {lines.number}", f"not JSON ({type(exc).__name__}: {_said(str(exc))})")
            continue
        if not isinstance(obj, dict):
            yield _bad(where, f"line {lines.number}", "not a JSON object")
            continue
        if tuple(obj) != keys:  # the rows of a sink mostly have the same keys: match them once
            keys, columns = tuple(obj), sink_columns(obj)
        if isinstance(columns, str):
            yield _bad(where, f"line {lines.number}", columns)
            continue
        row = sink_row(*(obj[columns[c]] for c in SINK_COLUMNS))
        yield _bad(where, f"line {lines.number}", row) if isinstance(row, str) else row


def _parquet(path: Path) -> Iterator[tuple[str, int, int] | SinkChunk | Finding]:
    try:
        import pyarrow as pa  # noqa: TID251 - optional: the [spark] extra brings pyarrow
        import pyarrow.parquet as pq  # noqa: TID251
    except ImportError as exc:
        raise UsageError(f"{path}: reading Parquet needs pyarrow (pip install 'kafkatool[spark]')") from exc

    def text(t: Any) -> bool:
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
                    or (pa.types.is_dictionary(t) and text(t.value_type)))

    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        columns = sink_columns(schema.names)
        if isinstance(columns, str):
            yield finding("sink-header-invalid", str(path), None, f"the Parquet schema: {columns}")
            return
        # a column of a type no valid value has (binary, float, bool, list, ...) refuses every row: said once
        wrong = [f"{c} is {schema.field(columns[c]).type}" for c in SINK_COLUMNS
                 if not (text(t := schema.field(columns[c]).type)
                         or (c != "topic" and pa.types.is_integer(t)))]
        if wrong:
            yield finding("sink-header-invalid", str(path), None,
                          f"the Parquet column {'; '.join(wrong)}: every row refused (topic: a string; partition, "
                          "offset: integers)")
            return
        n = 0
        cols = columnar()
        for batch in pf.iter_batches(columns=[columns[c] for c in SINK_COLUMNS], batch_size=65536):
            chunks = _valid_chunks(*batch.columns, cols) if cols is not None and batch.num_rows else None
            if chunks is not None:  # every row of the batch valid: its columns, not its rows
                n += batch.num_rows
                yield from chunks
                continue
            for topic, partition, offset in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                n += 1
                row = sink_row(topic, partition, offset)
                yield _bad(str(path), f"row {n}", row) if isinstance(row, str) else row
    except Exception as exc:  # pyarrow's ArrowInvalid and friends: a damaged file is a finding
        if isinstance(exc, OSError) and exc.errno is not None:  # the system's (pyarrow's own carry no errno)
            raise InputIOError(f"cannot read sink {path}: {exc.strerror or exc}") from exc
        if isinstance(exc, OSError) or type(exc).__module__.startswith("pyarrow"):
            yield finding("sink-unreadable", str(path), None,
                          f"not a readable Parquet file: {_said(str(exc))}")
        else:
            raise


MAX_RUNS = 64  # run files of one partition: past these they are merged into one, so a merge opens few files


class SortedRuns:
    """The offsets of one partition in sorted runs, spilled to temporary files when the caller says so (all
    partitions' buffers share one budget, :func:`delivery_paths`' ``run_size``). :meth:`merged` streams them back
    in order."""

    def __init__(self, tmpdir: str) -> None:
        self.tmpdir = tmpdir
        self.buffer = array("q")
        self.files: list[str] = []
        self.count = 0
        self.highest = -1

    def add(self, offset: int) -> None:
        self.buffer.append(offset)
        self.count += 1
        if offset > self.highest:
            self.highest = offset

    def extend(self, offsets: Any) -> None:
        """A numpy int64 array of offsets (:class:`SinkChunk`)."""
        self.buffer.frombytes(offsets.tobytes())
        self.count += len(offsets)
        self.highest = max(self.highest, int(offsets.max()))

    def spill(self, np: Any = None) -> None:
        if not self.buffer:
            return
        if np is not None:  # sorted by numpy, written at once: the buffer is within run_size already
            fd, name = tempfile.mkstemp(dir=self.tmpdir, suffix=".run")
            with os.fdopen(fd, "wb") as fh:
                fh.write(np.sort(np.frombuffer(self.buffer, dtype=np.int64)).tobytes())
            self.files.append(name)
        else:
            self.files.append(self._write(sorted(self.buffer)))
        self.buffer = array("q")
        if len(self.files) >= MAX_RUNS:
            merged = self._write(heapq.merge(*(self._read(f) for f in self.files)))
            for name in self.files:
                os.unlink(name)
            self.files = [merged]

    def _write(self, offsets: Iterable[int]) -> str:
        fd, name = tempfile.mkstemp(dir=self.tmpdir, suffix=".run")
        with os.fdopen(fd, "wb") as fh:
            chunk = array("q")
            for offset in offsets:
                chunk.append(offset)
                if len(chunk) >= 1 << 13:
                    chunk.tofile(fh)
                    chunk = array("q")
            chunk.tofile(fh)
        return name

    @classmethod
    def _read(cls, name: str) -> Iterator[int]:
        for chunk in cls._blocks(name):  # one chunk per run in memory at a time
            yield from array("q", chunk)

    def merged(self) -> Iterator[int]:
        return heapq.merge(iter(sorted(self.buffer)), *(self._read(f) for f in self.files))

    def merged_chunks(self, np: Any) -> Iterator[Any]:
        """The offsets in order as numpy arrays: the runs merged a chunk (8,192 offsets) of each at a time (all below
        the least of their chunks' last offsets taken, sorted, yielded), so memory holds the buffer and a chunk per
        run."""
        held = np.sort(np.frombuffer(self.buffer, dtype=np.int64))
        sources = [(held[i:i + (1 << 13)] for i in range(0, len(held), 1 << 13))]  # chunks of a run file's size
        sources += [(np.frombuffer(c, dtype=np.int64) for c in self._blocks(f)) for f in self.files]
        heads = [(a, src) for src in sources if len(a := next(src, np.empty(0, np.int64)))]
        if len(heads) == 1:
            a, src = heads[0]
            yield a
            yield from src
            return
        while heads:
            bound = min(a[-1] for a, _src in heads)
            taken, kept = [], []
            for a, src in heads:
                k = int(np.searchsorted(a, bound, "right"))
                taken.append(a[:k])
                if k < len(a):
                    kept.append((a[k:], src))
                elif len(nxt := next(src, np.empty(0, np.int64))):
                    kept.append((nxt, src))
            heads = kept
            yield np.sort(np.concatenate(taken))

    @staticmethod
    def _blocks(name: str) -> Iterator[bytes]:
        with open(name, "rb") as fh:
            while chunk := fh.read(1 << 16):
                yield chunk


MAX_RANGES = 1000  # ranges a delivery line lists of each kind; all are counted


class _Ranges:
    """Ascending offsets as inclusive ``[lo, hi]`` ranges (``[lo, hi, times]`` for offsets processed ``times``
    times), the first :data:`MAX_RANGES` kept and every one counted: memory and a line stay bounded whatever the
    sink or the log holds."""

    def __init__(self, limit: int = MAX_RANGES) -> None:
        self.items: list[list[int]] = []
        self.limit = limit
        self.offsets = self.ranges = self.extra = 0  # extra: processings past the first, of duplicates
        self.hi = -2
        self.times: int | None = None

    def add(self, offset: int, times: int | None = None) -> None:
        self.offsets += 1
        self.extra += times - 1 if times else 0
        if offset == self.hi + 1 and times == self.times:
            if self.ranges <= self.limit:
                self.items[-1][1] = offset
        else:
            self.ranges += 1
            self.times = times
            if self.ranges <= self.limit:
                self.items.append([offset, offset] if times is None else [offset, offset, times])
        self.hi = offset

    def add_runs(self, starts: Any, ends: Any, times: Any = None) -> None:
        """Ascending maximal runs ``[starts[i], ends[i]]`` (numpy arrays; ``times`` each, or None): as :meth:`add` of
        each offset in turn, in a Python step per run only up to the listing bound, the rest counted at once."""
        n = len(starts)
        if not n:
            return
        lengths = ends - starts + 1
        self.offsets += int(lengths.sum())
        if times is not None:
            self.extra += int(((times - 1) * lengths).sum())
        step = min(n, max(self.limit + 1 - self.ranges, 0) + 1)  # past these, every run is a range not listed
        for i in range(step):
            lo, hi, t = int(starts[i]), int(ends[i]), None if times is None else int(times[i])
            if lo == self.hi + 1 and t == self.times:
                if self.ranges <= self.limit:
                    self.items[-1][1] = hi
            else:
                self.ranges += 1
                self.times = t
                if self.ranges <= self.limit:
                    self.items.append([lo, hi] if t is None else [lo, hi, t])
            self.hi = hi
        if step < n:
            self.ranges += n - step
            self.hi = int(ends[-1])
            self.times = None if times is None else int(times[-1])

    def fields(self, name: str) -> dict[str, Any]:
        """``name`` (the ranges listed), ``name_count`` (offsets) and ``name_ranges`` (ranges, listed or not)."""
        return {name: self.items, f"{name}_count": self.offsets, f"{name}_ranges": self.ranges}


DATA, ABORTED, CONTROL = "data", "aborted", "control"


def log_ranges(part_dir: Path, display: str, lo: int, hi: int, isolation: str,
               findings: list[Finding]) -> Iterator[tuple[int, int, str]]:
    """``(first, last, kind)`` of the records in ``[lo, hi]`` that the log holds, in log order, consecutive offsets of
    one kind as one range, with kind ``data`` (what the consumer receives), ``aborted`` (data of an aborted
    transaction, under read_committed) or ``control``. Records at or past the fetch limit (LSO and high watermark,
    or the high watermark) are not in them. The ranges ascend: a consumer takes a record only at or past its
    position, the offset after the last it took (``CompletedFetch.nextFetchedRecord``: "skip any records out of
    range"), so where a damaged log's offsets go back (a batch below the one before it, records repeating an offset
    within a batch: ``verify`` says ``offset-not-increasing``, ``record-offset-invalid``) those records are never
    delivered, hence not expected; one ``records-below-fetch-position`` finding counts them. (Where a fetch ends on
    such a batch, the consumer's next fetch starts past its last offset, which may repeat records above it: that
    depends on fetch sizes, and is not modelled.)

    Where the broker's recovery cuts the log (``LogLoader``: a damaged batch in a segment it recovers), the cut is
    said as ``verify`` says it (``recovery-truncates-log``, :meth:`kafkatool.loader.LoadedPartition.truncation`) and
    nothing at or past the log end offset after loading is expected, whatever the isolation: the broker bounds the
    high watermark by it (``UnifiedLog.updateHighWatermark``)."""
    if isolation == "read_committed":
        view = committed_view(part_dir)
        limit, delivers = view.limit, view.delivers
    else:
        limit, delivers = high_watermark(part_dir), (lambda b: True)
    loaded = load_partition(part_dir, display)
    cut = loaded.truncation()
    if cut is not None:  # the batches past it are still read, for their findings
        findings.append(cut)
    end = loaded.log_end_offset if cut is not None else OFFSET_MAX + 1
    first = last = -2
    kind = ""
    position = lo  # the consumer's: the offset after the last record it took
    below = _Below()
    for _base, path in segment_logs(part_dir):
        shown = os.path.join(display, path.name)
        try:
            fh = open_regular(path)
        except OSError as exc:
            findings.append(finding("io-error", shown, None, f"cannot read: {exc.strerror or exc}"))
            continue
        with fh:
            for item in scan(fh, shown, with_raw=True):
                if isinstance(item, Finding):
                    findings.append(item)
                    continue
                if not isinstance(item, RawBatch):
                    continue
                b = item.batch
                if b.last_offset < lo:
                    continue
                if b.base_offset > hi or (limit is not None and b.base_offset >= limit):
                    break
                k = CONTROL if b.control else DATA if delivers(b) else ABORTED
                if b.magic >= 2 and b.record_count == b.last_offset - b.base_offset + 1 and _plausible(b):
                    spans: Iterable[tuple[int, int]] = [(max(b.base_offset, lo), min(b.last_offset, hi))]
                else:  # compacted (offsets missing inside the batch), a v0/v1 message set, or a count to check
                    spans = _decoded_spans(b, item.raw, shown, lo, hi, findings, position, below)
                stop = False
                for a, z in spans:
                    if limit is not None and z >= limit:
                        z, stop = limit - 1, True
                    z = min(z, end - 1)
                    if a < position and a <= z:  # below the consumer's position: skipped
                        below.add(min(z, position - 1) - a + 1, shown, b.position, a, position)
                        a = position
                    if a <= z:
                        position = z + 1
                        if a == last + 1 and k == kind:
                            last = z
                        else:
                            if kind:
                                yield first, last, kind
                            first, last, kind = a, z, k
                    if stop:
                        break
                if stop:
                    if hasattr(spans, "close"):
                        spans.close()
                    break
            else:
                continue
            break
    if kind:
        yield first, last, kind
    if below.count:
        findings.append(below.finding())


def log_offsets(ranges: Iterable[tuple[int, int, str]]) -> Iterator[tuple[int, str]]:
    """(offset, kind) of every record of :func:`log_ranges`, one by one."""
    for first, last, kind in ranges:
        for offset in range(first, last + 1):
            yield offset, kind


@dataclass
class _Below:
    """The records a consumer skips because their offsets are below its position: how many, and where the first is."""

    count: int = 0
    where: tuple[str, int, int, int] = ("", 0, 0, 0)  # segment, byte position of the batch, offset, position then

    def add(self, count: int, shown: str, at: int, offset: int, position: int) -> None:
        if not self.count:
            self.where = (shown, at, offset, position)
        self.count += count

    def finding(self) -> Finding:
        shown, at, offset, position = self.where
        return finding("records-below-fetch-position", shown, at,
                       f"{self.count} record{'s' if self.count != 1 else ''} at offsets below the consumer's position, "
                       f"the first at offset {offset} when it stood at {position}: a consumer skips them, so they "
                       "are not expected (the log's offsets go back: verify says where)")


def _decoded_spans(b: Any, raw: bytes, shown: str, lo: int, hi: int, findings: list[Finding], position: int,
                   below: _Below) -> Iterator[tuple[int, int]]:
    """The offsets in ``[lo, hi]`` of the batch's records at or past ``position`` as ascending runs, the consumer's
    position following them; the records below it counted into ``below``. Decoded a chunk at a time
    (:func:`records.record_chunks`): a few KB that declare millions of records cost a chunk, not them all, and a
    chunk wholly below the position costs a ``max``. Every finding of the batch is added to ``findings``, its
    offsets all taken or not (the fetch limit stops at one)."""
    chunks = record_chunks(b, raw, shown, times=True)
    first = last = -2
    try:
        for chunk in chunks:
            if chunk.__class__ is Finding:
                findings.append(chunk)
                continue
            offsets = [o for o in chunk[0] if lo <= o <= hi]
            if not offsets:
                continue
            if max(offsets) < position:
                below.add(len(offsets), shown, b.position, offsets[0], position)
                continue
            for o in offsets:
                if o < position:
                    below.add(1, shown, b.position, o, position)
                    continue
                if o != last + 1:
                    if first >= 0:
                        yield first, last
                    first = o
                last, position = o, o + 1
        if first >= 0:
            yield first, last
    finally:  # closed before the end: the rest decoded for its findings only
        findings.extend(c for c in chunks if c.__class__ is Finding)


def _plausible(b: Any) -> bool:
    """Whether a v2 batch's record count can be taken without decoding it: each record takes at least 7 bytes
    (``DefaultRecord``: length, attributes, timestamp and offset deltas, key and value lengths, header count), in
    the batch or, compressed, within the decompression limit. A count no bytes could hold (a crafted 2^31 in a
    60-byte batch) is decoded instead, where what is really there is found, rather than counted to."""
    room = b.size - RECORD_BATCH_OVERHEAD if b.compression == "none" else DEFAULT_MAX_DECOMPRESSED
    return b.record_count * 7 <= room


def log_start_offset(part_dir: Path) -> int:
    """Where a consumer can start reading: the first segment's base offset, or the log dir's
    ``log-start-offset-checkpoint`` entry when it is above it (records deleted by DeleteRecords or retention
    inside the first segment are gone for consumers)."""
    segments = segment_logs(part_dir)
    first = segments[0][0] if segments else 0
    return max(first, checkpointed_offset(part_dir, "log-start-offset-checkpoint") or 0)


# --- the check ----------------------------------------------------------------------------------------------


@dataclass
class PartitionDelivery:
    topic: str
    partition: int
    path: str | None
    isolation: str
    from_offset: int
    to_offset: int
    expected: int = 0
    delivered: int = 0                      # sink rows of this partition in the range
    missing: _Ranges = field(default_factory=_Ranges)
    duplicates: _Ranges = field(default_factory=_Ranges)       # [lo, hi, times processed]
    aborted_delivered: _Ranges = field(default_factory=_Ranges)
    unexpected: _Ranges = field(default_factory=_Ranges)
    group: str | None = None
    committed_offset: int | None = None
    redelivered_on_restart: _Ranges = field(default_factory=_Ranges)
    committed_not_processed: _Ranges = field(default_factory=_Ranges)
    outside_range: int = 0                  # sink rows below --from-offset or above --to-offset

    @property
    def verdict(self) -> str:
        lost, twice = bool(self.missing.offsets), bool(self.duplicates.offsets)
        return ("loss-and-duplicates" if lost and twice else "at-most-once" if lost
                else "at-least-once" if twice else "exactly-once")

    @property
    def clean(self) -> bool:
        return not (self.missing.offsets or self.duplicates.offsets or self.aborted_delivered.offsets
                    or self.unexpected.offsets)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "delivery", "topic": self.topic, "partition": self.partition, "path": self.path,
            "isolation": self.isolation, "from_offset": self.from_offset, "to_offset": self.to_offset,
            "expected": self.expected, "delivered": self.delivered, **self.missing.fields("missing"),
            **self.duplicates.fields("duplicates"), "duplicates_extra": self.duplicates.extra,
            **self.aborted_delivered.fields("aborted_delivered"), **self.unexpected.fields("unexpected"),
            "verdict": self.verdict,
        }
        if self.group is not None:
            d.update(group=self.group, committed_offset=self.committed_offset,
                     **self.redelivered_on_restart.fields("redelivered_on_restart"),
                     **self.committed_not_processed.fields("committed_not_processed"))
        return d


def compare(expected: Iterator[tuple[int, str]], delivered: Iterator[int], result: PartitionDelivery) -> None:
    """One merge pass of the log's offsets and the sink's (both ascending) into ``result``."""
    commit = result.committed_offset
    nxt = next(delivered, None)
    for offset, kind in expected:
        times = 0
        while nxt is not None and nxt < offset:  # offsets the log does not hold in the range
            result.unexpected.add(nxt)
            nxt = _skip_equal(nxt, delivered, result)
        while nxt is not None and nxt == offset:
            times += 1
            nxt = next(delivered, None)
        if kind == DATA:
            result.expected += 1
            if times == 0:
                result.missing.add(offset)
                if commit is not None and offset < commit:
                    result.committed_not_processed.add(offset)
            elif times > 1:
                result.duplicates.add(offset, times)
        elif times:
            result.aborted_delivered.add(offset)
        if times and commit is not None and offset >= commit:
            result.redelivered_on_restart.add(offset)
    while nxt is not None:
        result.unexpected.add(nxt)
        nxt = _skip_equal(nxt, delivered, result)


def compare_ranges(expected: Iterator[tuple[int, int, str]], delivered: Iterator[Any], result: PartitionDelivery,
                   np: Any) -> None:
    """:func:`compare` by ranges: the log's ranges (:func:`log_ranges`) against the sink's offsets in order as numpy
    arrays (:meth:`SortedRuns.merged_chunks`, already cut to the range by :func:`_counted_chunks`), each array
    cut by binary search at the ranges' ends; what is missing, duplicated or unexpected is found per run of a
    chunk, never per offset. Where the log's ranges go backwards (a damaged log), a range meets only the sink's
    offsets past those already compared, as :func:`compare` meets them: the ones below are missing."""
    commit = result.committed_offset
    sink = _Cursor(_unique_counts(delivered, np))
    for first, last, kind in expected:
        _claimed(sink.upto(first - 1), result.unexpected, commit, result, np)
        pos = first
        for values, times in sink.upto(last):
            if kind == DATA:
                _missing(pos, values[0] - 1, values[1:] if len(values) > 1 else None, values, commit, result, np)
                dup = times > 1
                if dup.any():
                    result.duplicates.add_runs(*_runs(values[dup], times[dup], np))
                if commit is not None:
                    _redelivered(values, commit, result, np)
            else:
                _claimed([(values, times)], result.aborted_delivered, commit, result, np)
            pos = int(values[-1]) + 1
        if kind == DATA:
            result.expected += last - first + 1
            _missing(pos, last, None, None, commit, result, np)
    _claimed(sink.upto(OFFSET_MAX), result.unexpected, commit, result, np)


def _missing(pos: int, upto: int, after: Any, values: Any, commit: int | None, result: PartitionDelivery,
             np: Any) -> None:
    """Missing: ``[pos, upto]``, then (``values``: the sink's offsets in ascending order, ``after``: values[1:])
    the gaps between consecutive ``values``."""
    starts, ends = [pos] if pos <= upto else [], [upto] if pos <= upto else []
    if values is not None and len(values) > 1:
        gap = np.flatnonzero(np.diff(values) > 1)
        starts_a, ends_a = np.concatenate([np.array(starts, np.int64), values[gap] + 1]), \
            np.concatenate([np.array(ends, np.int64), after[gap] - 1])
    else:
        starts_a, ends_a = np.array(starts, np.int64), np.array(ends, np.int64)
    result.missing.add_runs(starts_a, ends_a)
    if commit is not None and len(starts_a) and starts_a[0] < commit:
        below = starts_a < commit
        result.committed_not_processed.add_runs(starts_a[below], np.minimum(ends_a[below], commit - 1))


def _claimed(pieces: Iterable[tuple[Any, Any]], into: _Ranges, commit: int | None, result: PartitionDelivery,
             np: Any) -> None:
    """Sink offsets the log does not hold as expected records: each once into ``into`` (and redelivered past the
    commit)."""
    for values, _times in pieces:
        into.add_runs(*_runs(values, None, np))
        if commit is not None:
            _redelivered(values, commit, result, np)


def _redelivered(values: Any, commit: int, result: PartitionDelivery, np: Any) -> None:
    at = int(np.searchsorted(values, commit, "left"))
    if at < len(values):
        result.redelivered_on_restart.add_runs(*_runs(values[at:], None, np))


def _runs(values: Any, times: Any, np: Any) -> tuple[Any, Any, Any]:
    """Maximal runs of consecutive ``values`` (ascending, distinct) of equal ``times``: starts, ends, times."""
    brk = np.diff(values) != 1
    if times is not None:
        brk |= np.diff(times) != 0
    cut = np.flatnonzero(brk)
    heads = np.concatenate([[0], cut + 1])
    tails = np.concatenate([cut, [len(values) - 1]])
    return values[heads], values[tails], None if times is None else times[heads]


def _unique_counts(chunks: Iterator[Any], np: Any) -> Iterator[tuple[Any, Any]]:
    """Sorted arrays of offsets as (distinct offsets, times each), an offset never split across two."""
    carry_v = carry_c = None
    for a in chunks:
        if not len(a):
            continue
        heads = np.concatenate([[0], np.flatnonzero(np.diff(a)) + 1])
        values, times = a[heads], np.diff(np.concatenate([heads, [len(a)]]))
        if carry_v is not None:
            if values[0] == carry_v[0]:
                times[0] += carry_c[0]
            else:
                yield carry_v, carry_c
        carry_v, carry_c = values[-1:], times[-1:]
        if len(values) > 1:
            yield values[:-1], times[:-1]
    if carry_v is not None:
        yield carry_v, carry_c


class _Cursor:
    """The sink's (offsets, times) pieces, taken up to an offset at a time."""

    def __init__(self, pieces: Iterator[tuple[Any, Any]]) -> None:
        self.pieces, self.head = pieces, next(pieces, None)

    def upto(self, bound: int) -> Iterator[tuple[Any, Any]]:
        """The pieces of offsets at most ``bound``, in order, each taken as it is yielded."""
        while self.head is not None:
            values, times = self.head
            if values[0] > bound:
                return
            k = len(values) if values[-1] <= bound else int(values.searchsorted(bound, "right"))
            if k < len(values):
                self.head = values[k:], times[k:]
                yield values[:k], times[:k]
                return
            self.head = next(self.pieces, None)
            yield values, times


def _skip_equal(value: int, it: Iterator[int], result: PartitionDelivery) -> int | None:
    if result.committed_offset is not None and value >= result.committed_offset:
        result.redelivered_on_restart.add(value)
    nxt = next(it, None)
    while nxt == value:
        nxt = next(it, None)
    return nxt


def delivery_paths(
    sinks: list[str], paths: Iterable[str | Path], *, isolation: str = "read_committed",
    from_offset: int | None = None, to_offset: int | None = None, group: str | None = None,
    run_size: int = 1 << 20, progress: Callable[[int], None] | None = None,
) -> Iterator[PartitionDelivery | Finding]:
    """Per topic-partition of the sinks (in topic, partition order): findings, then its :class:`PartitionDelivery`.
    At most ``run_size`` sink offsets are held in memory, all partitions together; the rest wait in sorted runs
    on disk."""
    if isolation not in ISOLATIONS:
        raise UsageError(f"--isolation must be one of {', '.join(ISOLATIONS)}")
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError(f"--from-offset {from_offset} is after --to-offset {to_offset}")
    paths = list(paths)
    parts: dict[tuple[str, int], Any] = {}
    logdirs = LogDirs()
    for pd in partition_dirs_and_findings(paths):
        if isinstance(pd, Finding):  # what discovery met outside a partition (a FIFO with a checkpoint's name...)
            yield pd
            continue
        pd, met = logdirs.place(pd)  # the log start and high watermark come from its checkpoints: what reading met
        yield from met
        if (pd.topic, pd.partition) in parts:
            yield finding("delivery-partition-twice", pd.display, None,
                          f"{pd.topic}-{pd.partition} is also at {parts[(pd.topic, pd.partition)].display}: "
                          "that one is used")
            continue
        parts[(pd.topic, pd.partition)] = pd
    commits: dict[tuple[str, int], int] = {}
    if group is not None:
        if not any(t == OFFSETS_TOPIC for t, _p in parts):
            raise UsageError(f"--group needs the {OFFSETS_TOPIC} partitions among the paths")
        for item in consumer_offsets(paths, with_lag=False):
            if isinstance(item, CommittedOffset) and item.group == group:
                commits[(item.topic, item.partition)] = item.offset
            elif isinstance(item, Finding) and item.severity != "info":
                yield item
    cols = columnar() if _columns_pay(sinks) else None
    np = cols[0] if cols is not None else None
    with tempfile.TemporaryDirectory(prefix="kafkatool-delivery-") as tmp:
        # only partitions on disk keep their offsets; the others are counted, the first few by name: memory is
        # bounded by run_size offsets and the partitions under the paths, whatever the sink names
        runs: dict[tuple[str, int], SortedRuns] = {}
        absent: dict[tuple[str, int], int] = {}
        absent_other = rows = buffered = 0
        for sink in sinks:
            for row in read_sink(sink, columns=np is not None):
                if isinstance(row, Finding):
                    yield row
                    continue
                chunk = isinstance(row, SinkChunk)
                n = len(row.offsets) if chunk else 1
                if progress is not None and (rows + n) // 4096 > rows // 4096:
                    progress(((rows + n) // 4096 - rows // 4096) * 4096)
                rows += n
                key = (row[0], row[1])
                sink_runs = runs.get(key)
                if sink_runs is None:
                    if key not in parts:
                        if key in absent or len(absent) < MAX_PARTITIONS_ABSENT:
                            absent[key] = absent.get(key, 0) + n
                        else:
                            absent_other += n
                        continue
                    sink_runs = runs[key] = SortedRuns(tmp)
                if chunk:
                    sink_runs.extend(row.offsets)
                else:
                    sink_runs.add(row[2])
                buffered += n
                if buffered >= run_size:  # one budget for all partitions' buffers
                    for r in runs.values():
                        r.spill(np)
                    buffered = 0
        if not runs and not absent and not absent_other:
            raise UsageError(f"no topic/partition/offset row to check in {', '.join(sinks)}")
        for topic, partition in sorted(runs.keys() | absent.keys()):
            sink_runs = runs.get((topic, partition))
            if sink_runs is None:
                count = absent[(topic, partition)]
                yield finding("delivery-partition-missing", f"{topic}-{partition}", None,
                              f"the sink has {count:,} rows of {topic}-{partition} but no partition dir of it "
                              "is under the paths given")
                continue
            pd = parts[(topic, partition)]
            commit = commits.get((topic, partition))
            lo = log_start_offset(pd.path) if from_offset is None else from_offset
            # a commit past the sink's last row claims everything below it was processed: check up to it
            hi = max(sink_runs.highest, -1 if commit is None else commit - 1) if to_offset is None else to_offset
            result = PartitionDelivery(topic, partition, pd.display, isolation, lo, hi, group=group,
                                       committed_offset=commit)
            findings: list[Finding] = []
            expected = log_ranges(pd.path, pd.display, lo, hi, isolation, findings)
            if np is not None:
                compare_ranges(expected, _counted_chunks(sink_runs.merged_chunks(np), lo, hi, result, np), result, np)
            else:
                compare(log_offsets(expected), _counted(sink_runs.merged(), lo, hi, result), result)
            yield from findings
            yield result
        if absent_other:
            yield finding("delivery-partition-missing", ", ".join(sinks), None,
                          f"the sink has {absent_other:,} more rows of topic-partitions not under the paths given, "
                          f"past the {MAX_PARTITIONS_ABSENT} named above")


def _counted_chunks(chunks: Iterator[Any], lo: int, hi: int, result: PartitionDelivery, np: Any) -> Iterator[Any]:
    """:func:`_counted` of sorted numpy arrays: each cut to ``[lo, hi]`` by binary search."""
    for a in chunks:
        i, j = int(np.searchsorted(a, lo, "left")), int(np.searchsorted(a, hi, "right"))
        result.delivered += j - i
        result.outside_range += len(a) - (j - i)
        if j > i:
            yield a[i:j]


def _counted(offsets: Iterator[int], lo: int, hi: int, result: PartitionDelivery) -> Iterator[int]:
    for o in offsets:
        if lo <= o <= hi:
            result.delivered += 1
            yield o
        else:
            result.outside_range += 1


__all__ = ["ISOLATIONS", "MAX_RANGES", "PartitionDelivery", "SinkChunk", "SortedRuns", "columnar", "compare",
           "compare_ranges", "delivery_paths", "log_offsets", "log_ranges", "read_sink", "sink_columns", "sink_row"]
