"""The one output layer every command uses.

- ``jsonl``: one plain ``json.dumps`` object per line on stdout (never through rich, which wraps).
- ``text``: a readable line per batch / record / entry, small files as tables, findings coloured.
Warnings, errors and progress go to stderr. Presentation only: nothing here parses files.
What a person reads (text, dump-log) never holds a raw control character: every string of a value is made
:func:`printable` as the value comes in (``Output._text``, ``Output._dump_log``), before any renderer sees it.
Lines are plain strings (rich's markup rendered by :func:`_markup`); rich itself is imported only when a stream
may be a terminal, for its colours, width and progress bars (:func:`console`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import Any

from ..errors import UsageError
from ..model import RecordRun, Stretch, render_bytes

FORMATS = ("text", "jsonl")
DUMP_FORMATS = (*FORMATS, "dump-log")  # dump only: kafka-dump-log's own text
VALUE_MODES = ("base64", "text", "hex", "none")
_TABLE_TYPES = {"producer", "offset", "epoch", "aborted_txn", "replica", "epoch_compare", "transaction",
                "committed_offset", "partition_state", "partition_for", "transaction_state", "under_min_isr",
                "partition_overview", "topic_overview"}
# Tables showing chosen fields (field -> header) rather than every field of the value:
_TABLE_COLUMNS = {
    "replica": {"path": "replica", "log_start_offset": "log start", "leo": "LEO", "hw_checkpoint": "HW ckpt",
                "recovery_point": "recovery pt", "lso": "LSO", "latest_epoch": "epoch",
                "latest_epoch_start_offset": "epoch start", "lag": "lag", "in_isr": "ISR", "batches": "batches",
                "size": "bytes"},
    "epoch_compare": {"epoch": "epoch", "checkpoint_start": "checkpoint start", "log_start": "log: first offset",
                      "log_end": "last offset", "status": "status"},
    "committed_offset": {"group": "group", "topic": "topic", "partition": "partition", "offset": "committed",
                         "commit_timestamp": "commit time", "log_start_offset": "log start", "log_end_offset": "LEO",
                         "high_watermark": "HW", "lag": "lag", "leader_epoch": "leader epoch",
                         "metadata": "metadata", "coordinator_partition": "in"},
    "partition_state": {"offset": "offset", "snapshot_end_offset": "snapshot", "timestamp": "time",
                        "topic": "topic", "partition": "partition", "leader": "leader", "isr": "ISR",
                        "leader_epoch": "leader epoch", "partition_epoch": "partition epoch", "record": "record",
                        "min_isr": "min ISR"},
    "partition_overview": {"path": "partition", "segments": "segments", "bytes": "bytes",
                           "log_start_offset": "log start", "log_end_offset": "LEO", "high_watermark": "HW",
                           "first_timestamp": "first", "last_timestamp": "last", "open_transactions": "open txns",
                           "producers": "producers", "compacted": "compacted", "problems": "problems"},
    "topic_overview": {"topic": "topic", "partitions": "partitions", "segments": "segments", "bytes": "bytes",
                       "offsets": "offsets", "first_timestamp": "first", "last_timestamp": "last",
                       "open_transactions": "open txns", "problems": "problems"},
    "under_min_isr": {"topic": "topic", "partition": "partition", "isr": "ISR", "replicas": "replicas",
                      "min_insync_replicas": "min ISR", "min_isr_source": "set by", "from_offset": "from offset",
                      "from_snapshot_end_offset": "from snapshot", "from_time": "from", "to_offset": "to offset",
                      "to_time": "to", "source": "metadata log"},
    "partition_for": {"kind": "kind", "id": "id", "hash_code": "hashCode", "partition": "partition",
                      "topic_partition": "topic-partition"},
    "transaction_state": {"transactional_id": "transactional id", "producer_id": "producer",
                          "producer_epoch": "epoch", "state": "state", "timeout_ms": "timeout ms",
                          "start_timestamp": "started", "last_update_timestamp": "updated",
                          "partitions": "partitions", "coordinator_partition": "in"},
    "transaction": {"partition": "partition", "producer_id": "producer", "producer_epoch": "epoch",
                    "first_offset": "first offset", "last_offset": "last offset", "outcome": "outcome",
                    "records": "records", "coordinator_epoch": "coord. epoch", "duration_ms": "duration ms",
                    "lso_held_back": "holds LSO back"},
}
_SEVERITY_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}
_SGR = {"bold": "1", "bold red": "1;31", "yellow": "33"}  # table lines are written as plain text
_STYLE_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36",
              "bold red": "1;31"}
_TAG = re.compile(r"(\\*)\[([a-z#/@][^\[]*?)\]")  # rich's markup tags (rich.markup.RE_TAGS)
_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?\])")  # the same, whole
_NUMBER = re.compile(r"-?[\d,]+|-")
_FOLD_MIN = 16  # a folded column keeps at least this many characters a line


def check_format(fmt: str, formats: tuple[str, ...] = FORMATS) -> None:
    """``--format`` is one of ``formats`` (a usage error, exit 2, before anything is read)."""
    if fmt not in formats:
        raise UsageError(f"--format must be one of {', '.join(formats)}")

def console(stream: Any, width: int | None = None) -> Any:
    """rich's Console for a stream that may be a terminal (rich decides: ``isatty``, ``FORCE_COLOR``,
    ``TTY_COMPATIBLE``), else a :class:`PlainConsole`."""
    if not _may_be_terminal(stream):
        return PlainConsole(stream)
    from .console import QuietConsole

    return QuietConsole(file=stream, highlight=False, soft_wrap=True, width=width)


def _may_be_terminal(stream: Any) -> bool:
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


class PlainConsole:
    """What :class:`Output` asks of a rich Console, for a stream that is no terminal: no colour, lines never cut."""

    is_terminal = False
    color_system = None

    def __init__(self, stream: Any) -> None:
        self.file = stream

    def print(self, text: str = "", highlight: bool = False) -> None:
        self.file.write(_markup(text, False) + "\n")


def printable(text: str) -> str:
    """``text`` with each character a terminal could act on written as ``repr`` writes it inside a string
    (``\\x1b``, ``\\r``, ``\\n``, ``\\x85``, ``\\u202e``): C0 and C1 controls, DEL, bidi overrides and other format
    characters, line and paragraph separators; whatever ``str.isprintable`` rejects. A byte of a file name that is
    not UTF-8 (a surrogate of ``os.fsdecode``) shows as the byte it is (``\\xff``). The text format's keys and values
    are ``repr``'d (:func:`_text_bytes`, native/src/render.rs), so every human-readable output escapes by this one
    rule. Other characters, backslash included, stay as they are: a path reads as typed."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(c: str) -> str:
    return f"\\x{ord(c) - 0xDC00:02x}" if "\udc80" <= c <= "\udcff" else repr(c)[1:-1]


def _printable(v: Any) -> Any:
    """``v`` (a value's dict) with every string in it, dict keys too, made :func:`printable`."""
    if isinstance(v, str):
        return v if v.isprintable() else printable(v)
    if isinstance(v, dict):
        return {_printable(k): _printable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_printable(x) for x in v]
    if isinstance(v, tuple):
        items = [_printable(x) for x in v]
        return v._make(items) if hasattr(v, "_make") else tuple(items)
    return v


def _shown(d: dict[str, Any]) -> dict[str, Any]:
    """What a human-readable format shows of ``d``: every string :func:`printable`, but a record's header keys as
    they are: the text format ``repr``s them, dump-log makes them printable as it writes them (once more here would
    show ``\\x1b`` as ``\\\\x1b``)."""
    shown = _printable(d)
    if d.get("type") == "record" and "headers" in d:
        shown["headers"] = d["headers"]
    return shown


def escape(text: str) -> str:
    """``text`` with anything that reads as a markup tag escaped, to show as written (``rich.markup.escape``)."""
    text = _ESCAPE.sub(r"\1\1\\\2", text)
    return text + "\\" if text.endswith("\\") and not text.endswith("\\\\") else text


def _json(d: dict[str, Any]) -> str:
    """``json.dumps(d)``; json is imported on first use (~1 ms of a run's start), as text output seldom needs it."""
    import json

    return json.dumps(d)


def _text_bytes(data: bytes) -> str:
    """For people: a quoted string when the bytes are UTF-8, else ``0x<hex>``."""
    try:
        return repr(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "0x" + data.hex()


def _iso(ts: int | None) -> str:
    if ts is None or ts < 0:
        return "-" if ts is None else str(ts)
    try:
        return _dt.datetime.fromtimestamp(ts / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ts)


class Output:
    """Writes values (anything with ``as_dict()``, or dicts) in the chosen format."""

    def __init__(self, fmt: str = "text", values: str | None = None, stream: Any = None,
                 tables: bool = True) -> None:
        self.fmt = fmt
        # dump-log renders keys and values itself (UTF-8 strings, as kafka-dump-log's StringDecoder)
        self.values = "base64" if fmt == "dump-log" else values or ("base64" if fmt == "jsonl" else "text")
        self.findings: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()
        self._out = stream or sys.stdout   # stderr where stdout carries other data (dump's csv export)
        # Piped text must never be cut to 80 columns: tables take the width they need.
        width = None if self._out.isatty() else 1000
        self._console = console(self._out, width) if fmt == "text" else None
        self.err = console(sys.stderr)
        self._table_rows: list[dict[str, Any]] = []
        self._summaries: list[dict[str, Any]] = []  # text: shown as one table after everything else
        self.current_file: str | None = None  # the file whose header was shown last (text)
        self._batch: dict[str, Any] | None = None  # dump-log: the batch whose records follow
        self.tables = tables  # False: rows that would be tables are lines (mixed with other lines)
        self._colour = self._console is not None and self._console.is_terminal and \
            self._console.color_system is not None
        # No colour (piped, NO_COLOR, no colour terminal): batch and record lines are written as plain strings,
        # with no markup to strip.
        self.plain = self._console is not None and not self._colour

    # -- results -------------------------------------------------------------------------------
    def emit(self, item: Any) -> None:
        if item.__class__ is RecordRun or item.__class__ is Stretch:
            self._run(item)
            return
        d = item if isinstance(item, dict) else item.as_dict()
        if d.get("type") == "finding":
            self.findings[d["severity"]] += 1
            self.codes[d["code"]] += 1
        if d.get("type") == "record" and self.values != "base64" and not (self.fmt == "text" and self.values == "text"):
            d = self._revalue(d)
        if self.fmt == "jsonl":
            self._out.write(_json(d) + "\n")
        elif self.fmt == "dump-log":
            self._dump_log(d)
        else:
            self._text(d)

    def _run(self, run: RecordRun | Stretch) -> None:
        """Batches as native columns (a RecordRun's with their records, a Stretch's without): rendered in one call
        where the lines are plain."""
        if self.fmt == "jsonl" or (self.fmt == "text" and self.plain):
            if self.fmt == "text":
                self._flush_table()
            binary = getattr(self._out, "buffer", None)
            if binary is None:
                def write(lines: bytes) -> None:
                    self._out.write(lines.decode())
            else:  # the UTF-8 bytes as they are, after whatever the text layer holds
                self._out.flush()
                write = binary.write
            run.render(self.fmt, self.values, _RENDER_FALLBACK, write)
        else:
            for item in run.items() if run.__class__ is RecordRun else run.batches():
                self.emit(item)

    def emit_all(self, items: Iterable[Any]) -> None:
        for item in items:
            self.emit(item)
        self.close()

    def close(self) -> None:
        self._flush_table()
        if self._summaries:
            self._summary_table()
        self._out.flush()

    def exit_code(self, fail_on: str, verdict: bool = False) -> int:
        """The exit code of what was emitted, by the one exit policy (:func:`kafkatool.cli.exits.exit_code`)."""
        from .exits import exit_code

        return exit_code(self.findings, fail_on, io_errors=self.codes["io-error"], verdict=verdict)

    def _revalue(self, d: dict[str, Any]) -> dict[str, Any]:
        def conv(v: str | None) -> str | None:
            return None if v is None else render_bytes(base64.b64decode(v), self.values)

        d = dict(d)
        if self.values == "none":
            d.pop("key", None)
            d.pop("value", None)
            d["headers"] = [[k, None] for k, _ in d["headers"]]
        else:
            d["key"], d["value"] = conv(d["key"]), conv(d["value"])
            d["headers"] = [[k, conv(v)] for k, v in d["headers"]]
        return d

    # -- kafka-dump-log's text (DumpLogSegments.dumpLog / printBatchLevel) ----------------------
    def _dump_log(self, d: dict[str, Any]) -> None:
        t = d.get("type")
        line: str | None
        raw = d
        if t != "record" and t != "batch":  # a batch holds no string; a record's are made printable as written
            d = _printable(d)
        if t == "file":
            name = os.path.basename(d["path"])
            line = f"Dumping {d['path']}"
            if name.endswith(".log") and name.split(".")[0].isdigit():
                line += f"\nLog starting offset: {int(name.split('.')[0])}"
        elif t == "batch":
            self._batch = d
            line = _dump_log_batch(d)
        elif t == "record":
            line = _dump_log_record(d, self._batch)
        elif t == "trailing":
            line = f"Found {d['bytes']} invalid bytes at the end of {os.path.basename(self.current_file or '')}"
        elif t == "index_entry":
            line = f"offset: {d['offset']} position: {d['position']}"
        elif t == "time_index_entry":
            line = f"timestamp: {d['timestamp']} offset: {d['offset']}"
        elif t == "finding":  # damage goes to stderr: stdout stays what kafka-dump-log prints
            self.err.print(_finding(self, d), highlight=False)
            return
        else:
            line = _json(raw)  # JSON escapes its own
        if t == "file":
            self.current_file = d["path"]
        self._out.write(line + "\n")

    # -- text ----------------------------------------------------------------------------------
    def _print(self, line: str) -> None:
        """One text line (rich markup) as a plain string, with colour codes only on a colour terminal: rich's
        Console.print cost a few hundred microseconds a line (seconds for the findings of a big log dir)."""
        assert self._console is not None
        self._out.write(_markup(line, self._colour) + "\n")

    def _text(self, d: dict[str, Any]) -> None:
        t = d.get("type")
        raw, d = d, _shown(d)  # every name, path and message a person reads, escaped here (JSON escapes its own)
        if t == "summary":
            self._summaries.append(d)
            return
        if t in _TABLE_TYPES and (self.tables or t not in _TEXT):
            if self._table_rows and self._table_rows[0]["type"] != t:
                self._flush_table()
            self._table_rows.append(d)
            return
        self._flush_table()
        render = _TEXT.get(t)
        if self.plain and (t == "batch" or (t == "record" and "decoded" not in d)):
            self._out.write(render(self, d) + "\n")  # type: ignore[misc]
        elif render is None:
            self._print(escape(_json(raw)))
        else:
            self._print(render(self, d))

    def _flush_table(self) -> None:
        if not self._table_rows:
            return
        rows, self._table_rows = self._table_rows, []
        chosen = _TABLE_COLUMNS.get(rows[0]["type"])
        cols = chosen or {k: k for k in rows[0] if k != "type"}
        self._print_table(list(cols.values()), [[_cell(c, r.get(c)) for c in cols] for r in rows])

    def _print_table(self, headers: list[str], rows: list[list[str]], styles: list[str | None] | None = None) -> None:
        """Columns two spaces apart, no trailing spaces. On a terminal narrower than the table, the widest column
        of text (a path) is folded onto more lines; a number is never cut. Plain string work: rich's Table took
        seconds for the 2,000 partitions of a big log dir."""
        assert self._console is not None
        limit = self._console.width if self._out.isatty() else None
        colour = self._console.color_system is not None and self._console.is_terminal
        lines = _table_lines(headers, rows, limit)
        style_of = [_SGR["bold"], *((_SGR.get(x) if x else None) for x in (styles or [None] * len(rows)))]
        out = []
        for i, cells in lines:
            line = "  ".join(cells).rstrip()
            sgr = style_of[i] if colour else None
            out.append(f"\x1b[{sgr}m{line}\x1b[0m" if sgr else line)
        self._out.write("\n".join(out) + "\n")

    def _summary_table(self) -> None:
        rows, self._summaries = self._summaries, []
        parts = [r for r in rows if r.get("scope") == "partition"]
        assert self._console is not None
        if parts:
            styles = ["bold red" if r["errors"] else "yellow" if r["warnings"] else None for r in parts]
            self._console.print()
            self._print_table(list(_SUMMARY_COLUMNS.values()),
                              [[_cell(k, r.get(k)) for k in _SUMMARY_COLUMNS] for r in parts], styles)
        for r in rows:
            if r.get("scope") == "total":
                verdict = ("[bold red]errors[/]" if r["errors"] else "[yellow]warnings[/]" if r["warnings"]
                           else "[green]clean[/]")
                self._console.print(
                    f"\n{verdict}: {r['partitions']} partitions, {r['files']} files, {r['bytes']:,} bytes, "
                    f"{r['batches']:,} batches; {r['errors']} errors, {r['warnings']} warnings, {r['infos']} info")

    @contextmanager
    def progress(self, total: Callable[[], int], label: str) -> Any:
        """A byte progress bar on stderr whenever stderr is a terminal (never on stdout; not with ``NO_COLOR``).

        ``total`` is called only when the bar will be shown (it may walk a whole log dir).
        """
        if not self._bars():
            yield None
            return
        size = total()
        if size <= 0:
            yield None
            return
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                      TransferSpeedColumn(), TimeRemainingColumn(), console=self.err, transient=True) as bar, \
                self._above(bar):
            task = bar.add_task(label, total=size)
            yield lambda n: bar.advance(task, n)

    @contextmanager
    def counter(self, label: str, unit: str) -> Any:
        """A running count on stderr for work of unknown size (rows of a sink), whenever stderr is a terminal."""
        if not self._bars():
            yield None
            return
        from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), "[progress.description]{task.description}",
                      "{task.completed:,.0f} " + unit, TimeElapsedColumn(), console=self.err,
                      transient=True) as bar, self._above(bar):
            task = bar.add_task(label, total=None)
            yield lambda n: bar.advance(task, n)

    def _bars(self) -> bool:
        """Progress is drawn when stderr is a terminal, unless ``NO_COLOR`` asks for no escape codes at all."""
        return self.err.is_terminal and not os.environ.get("NO_COLOR")

    @contextmanager
    def _above(self, bar: Any) -> Any:
        """While a bar is live on the terminal that stdout shows too, stdout's lines go through the bar's console,
        which prints them above the bar (written straight, they would be drawn over by it)."""
        if not _same_terminal(self._out, sys.stderr):
            yield
            return
        from rich.file_proxy import FileProxy

        saved = self._out
        self._out = _Stream(FileProxy(bar.console, saved))
        if self._console is not None:
            self._console.file = self._out
        try:
            yield
        finally:
            self._out.flush()
            self._out = saved
            if self._console is not None:
                self._console.file = saved


class _Stream:
    """``stream``'s writes, as a file rich's consoles do not unwrap (a Console writing to a FileProxy writes to the
    file behind it, past the live display)."""

    def __init__(self, stream: Any) -> None:
        self.write, self.flush, self.isatty, self.fileno = stream.write, stream.flush, stream.isatty, stream.fileno


def _same_terminal(a: Any, b: Any) -> bool:
    try:
        return a.isatty() and b.isatty() and os.ttyname(a.fileno()) == os.ttyname(b.fileno())
    except (AttributeError, OSError, ValueError):
        return False


# -- one renderer per value type (text format) --------------------------------------------------

_SUMMARY_COLUMNS = {
    "path": "partition", "segments": "segments", "bytes": "bytes", "batches": "batches",
    "log_start_offset": "log start", "log_end_offset": "LEO", "high_watermark": "HW",
    "open_transactions": "open txns", "index": "index", "errors": "errors", "warnings": "warnings",
    "infos": "info",
}


def _markup(text: str, colour: bool) -> str:
    """``text`` in rich's markup as terminal text: the styles kafkatool uses as SGR codes when ``colour``, else
    dropped; escaped brackets (``rich.markup.escape``) kept as text."""
    out, stack, pos = [], [], 0
    for m in _TAG.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        backslashes, escaped = divmod(len(m.group(1)), 2)
        out.append("\\" * backslashes)
        tag = m.group(2)
        if escaped or not (tag.startswith("/") or tag in _STYLE_SGR):
            out.append(f"[{tag}]")
        elif tag.startswith("/"):
            if stack:
                stack.pop()
            if colour:
                out.append("\x1b[0m" + "".join(f"\x1b[{sgr}m" for sgr in stack))
        else:
            stack.append(_STYLE_SGR[tag])
            if colour:
                out.append(f"\x1b[{_STYLE_SGR[tag]}m")
    out.append(text[pos:])
    if colour and stack:
        out.append("\x1b[0m")
    return "".join(out)


def _table_lines(headers: list[str], rows: list[list[str]], limit: int | None) -> list[tuple[int, list[str]]]:
    """The padded cells of each line, with the index of the row it shows (0: the header). Past ``limit`` columns,
    the widest column holding any text that is not a number is folded to fit."""
    table = [headers, *rows]
    widths = [max(map(len, col)) for col in zip(*table, strict=True)]
    stack = limit is not None and sum(widths) + 2 * (len(widths) - 1) > limit
    if stack:  # headers of more than one word take a line a word ("log start": "log", "start")
        widths = [max(max(map(len, h.split(" "))), *(len(r[j]) for r in rows)) for j, h in enumerate(headers)]
        total = sum(widths) + 2 * (len(widths) - 1)
        text = [j for j in range(len(widths)) if any(not _NUMBER.fullmatch(r[j]) for r in rows)]
        if text and total > limit:
            j = max(text, key=lambda k: widths[k])
            widths[j] = max(_FOLD_MIN, widths[j] - (total - limit))
    out: list[tuple[int, list[str]]] = []
    for i, row in enumerate(table):
        parts = [c.split(" ") if i == 0 and stack else
                 [c[k:k + w] for k in range(0, len(c), w)] if len(c) > w else [c]
                 for c, w in zip(row, widths, strict=True)]
        for n in range(max(map(len, parts))):
            out.append((i, [(p[n] if n < len(p) else "").ljust(w) for p, w in zip(parts, widths, strict=True)]))
    return out


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if key == "min_isr":
        return {"under": "UNDER min ISR", "back": "back to min ISR"}.get(v, v)
    if key in ("commit_timestamp", "timestamp", "start_timestamp", "last_update_timestamp", "from_time", "to_time",
               "first_timestamp", "last_timestamp"):
        return _iso(v)
    if isinstance(v, list):
        return ",".join(map(str, v))
    return f"{v:,}" if key in ("bytes", "batches", "size", "offsets") else str(v)  # offsets stay copyable



_TIMESTAMP_TYPES = {"create": "CreateTime", "log_append": "LogAppendTime"}
_INT32_MAX = 2**31 - 1


def _java_bool(v: Any) -> str:
    return "true" if v else "false"


def _dump_log_batch(d: dict[str, Any]) -> str:
    """``printBatchLevel``: one batch as kafka-dump-log prints it."""
    if d["magic"] >= 2:
        base_seq = d["base_sequence"]
        last_seq = -1 if base_seq < 0 else (base_seq + d["last_offset"] - d["base_offset"]) % (_INT32_MAX + 1)
        horizon = d.get("delete_horizon_ms")
        head = (f"baseOffset: {d['base_offset']} lastOffset: {d['last_offset']} count: {d['record_count']} "
                f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {d['producer_id']} "
                f"producerEpoch: {d['producer_epoch']} partitionLeaderEpoch: {d['partition_leader_epoch']} "
                f"isTransactional: {_java_bool(d['transactional'])} isControl: {_java_bool(d['control'])} "
                f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'}")
    else:
        head = f"offset: {d['last_offset']}"
    ts_type = _TIMESTAMP_TYPES.get(d["timestamp_type"], "NoTimestampType")
    return (f"{head} position: {d['position']} {ts_type}: {d['max_timestamp']} size: {d['size']} "
            f"magic: {d['magic']} compresscodec: {d['compression']} crc: {d['crc']} "
            f"isvalid: {_java_bool(d['crc_valid'])}")


def _dump_log_record(d: dict[str, Any], batch: dict[str, Any] | None) -> str:
    """A record line of kafka-dump-log's ``--deep-iteration --print-data-log``: metadata, then key and payload
    as UTF-8 strings (its StringDecoder), or the control record's marker."""
    def size(v: str | None) -> int:
        return -1 if v is None else len(base64.b64decode(v))

    def utf8(v: str) -> str:  # StringDecoder's text, made printable (Kafka prints an ESC or a CR as it is)
        return printable(base64.b64decode(v).decode("utf-8", "replace"))

    ts_type = _TIMESTAMP_TYPES.get(batch["timestamp_type"], "NoTimestampType") if batch else "CreateTime"
    line = (f"| offset: {d['offset']} {ts_type}: {d['timestamp']} keySize: {size(d.get('key'))} "
            f"valueSize: {size(d.get('value'))}")
    if batch is not None and batch["magic"] >= 2:
        base_seq = batch["base_sequence"]
        seq = -1 if base_seq < 0 else (base_seq + d["offset"] - batch["base_offset"]) % (_INT32_MAX + 1)
        line += f" sequence: {seq} headerKeys: [{','.join(printable(k) for k, _v in d['headers'])}]"
    if "control_type" in d:
        if d["control_type"] in ("COMMIT", "ABORT"):
            line += f" endTxnMarker: {d['control_type']} coordinatorEpoch: {d.get('coordinator_epoch')}"
        else:
            line += f" controlType: {d['control_type']}"
        return line
    if d.get("key") is not None:
        line += f" key: {utf8(d['key'])}"
    if d.get("value") is not None:
        line += f" payload: {utf8(d['value'])}"
    return line


def _file(o: Output, d: dict[str, Any]) -> str:
    o.current_file = d["path"]
    return f"\n[bold]── {escape(d['path'])}[/bold]"


def _batch(o: Output, d: dict[str, Any]) -> str:
    plain = o.plain
    crc = ("crc ok" if plain else "[green]crc ok[/green]") if d["crc_valid"] else (
        "CRC MISMATCH" if plain else "[bold red]CRC MISMATCH[/bold red]")
    offsets = str(d["base_offset"])
    if d["last_offset"] != d["base_offset"]:
        offsets += f"..{d['last_offset']}"
    parts = [
        f"offset {offsets}" if plain else f"[bold]offset {offsets}[/bold]",
        f"pos {d['position']}",
        f"{d['size']} B",
        f"v{d['magic']}",
        d["compression"],
        f"{d['record_count']} rec",
    ]
    if d["magic"] >= 2:
        parts.append(f"epoch {d['partition_leader_epoch']}")
    ts = _iso(d["first_timestamp"]) if d["first_timestamp"] == d["max_timestamp"] else (
        f"{_iso(d['first_timestamp'])}..{_iso(d['max_timestamp'])}")
    parts.append(f"{d['timestamp_type']} {ts}")
    if d["magic"] >= 2 and d["producer_id"] >= 0:
        parts.append(f"producer {d['producer_id']} epoch {d['producer_epoch']} seq {d['base_sequence']}")
    flags = [f for f in ("transactional", "control") if d.get(f)]
    if flags:
        parts.append(" ".join(flags) if plain else "[magenta]" + " ".join(flags) + "[/magenta]")
    if "delete_horizon_ms" in d:
        parts.append(f"delete-horizon {_iso(d['delete_horizon_ms'])}")
    parts.append(crc)
    return "  ".join(parts)


def _val(o: Output, v: str | None) -> str:
    if v is None:
        return "null"
    if o.values == "text":  # still base64 here: decode for people
        v = _text_bytes(base64.b64decode(v))
    return v if o.plain else escape(v)


def _record(o: Output, d: dict[str, Any]) -> str:
    plain = o.plain
    line = f"    {'|' if plain else '[dim]|[/dim]'} {d['offset']}  {_iso(d['timestamp'])}"
    if "control_type" in d:
        line += f"  {d['control_type']}" if plain else f"  [magenta]{d['control_type']}[/magenta]"
        if "coordinator_epoch" in d:
            line += f" coordinator epoch {d['coordinator_epoch']}"
        return line
    if "key" in d:
        line += f"  key={_val(o, d['key'])} value={_val(o, d['value'])}"
    if d["headers"]:
        line += "  headers=" + ", ".join(f"{repr(k) if plain else escape(repr(k))}={_val(o, v)}"
                                         for k, v in d["headers"])
    if "decoded" in d:  # dump --decode: the internal topic's key and value, read
        line += ("\n        " + _fields(d["decoded"]) if d["decoded"] is not None
                 else f"\n        [yellow]not decoded: {escape(d.get('decode_error') or '')}[/yellow]")
    return line


# What the native renderer (WindowColumns.render) asks Python for: the rare cases of _text_bytes, repr() of a
# header key, and _iso (see native/src/render.rs).
_RENDER_FALLBACK = (_text_bytes, lambda key: repr(key.decode("utf-8", "replace")), _iso)


def _fields(d: dict[str, Any]) -> str:
    """Decoded fields as ``name=value``, nested objects in braces, lists in brackets; no Python reprs."""
    def one(v: Any) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{" + _fields(v) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v) + "]"
        return str(v) if v != "" else '""'


    return escape("  ".join(f"{k}={one(v)}" for k, v in d.items()))


def _finding(o: Output, d: dict[str, Any]) -> str:
    style = _SEVERITY_STYLE.get(d["severity"], "")
    pos = "" if d["position"] is None else f" @ {d['position']}"
    where = "" if d["path"] == o.current_file else f" {escape(d['path'])}{pos}"
    if not where and pos:
        where = pos
    return f"[{style}]{d['severity'].upper()}[/{style}] {escape(d['code'])}{where}: {escape(d['message'])}"


def _group(o: Output, d: dict[str, Any]) -> str:
    """``offsets``: a consumer group's latest GroupMetadataValue, one line per member below it."""
    lines = [f"[bold]group {escape(d['group'])}[/bold]  {escape(str(d['protocol_type']))}  generation {d['generation']}"
             f"  protocol {escape(d['protocol'] or '-')}  leader {escape(d['leader'] or '-')}"
             f"  {len(d['members'])} members  (v{d['value_version']}, {escape(d['coordinator_partition'])}"
             f" @ {d['log_offset']}, {_iso(d['timestamp'])})"]
    for m in d["members"]:
        lines.append(f"    member {escape(str(m['member_id']))}  client {escape(str(m['client_id']))}"
                     f"  host {escape(str(m['client_host']))}  session {m['session_timeout']} ms")
    return "\n".join(lines)


def _metadata_record(o: Output, d: dict[str, Any]) -> str:
    """``metadata --all``: a record other than a partition's, with its decoded fields (if any)."""
    fields = _fields(d["fields"]) if d["decoded"] else "[dim](layout not declared here)[/dim]"
    offset = "snapshot" if d["offset"] is None else d["offset"]  # a KRaft snapshot's records have no log offset
    return f"{offset}  {_iso(d['timestamp'])}  {escape(d['name'])} v{d['version']}" + (f"  {fields}" if fields else "")


def _partition_state(o: Output, d: dict[str, Any]) -> str:
    """``metadata --all``: a partition's step as a line among the other records (no table to interleave)."""
    offset = f"snapshot {d['snapshot_end_offset']}" if d["offset"] is None else d["offset"]
    marker = {"under": "  [bold red]UNDER min ISR[/bold red]", "back": "  [green]back to min ISR[/green]"}
    return (f"{offset}  {_iso(d['timestamp'])}  {escape(d['record'])}  {escape(d['topic'])}-{d['partition']}  "
            f"leader {d['leader']}  ISR {','.join(map(str, d['isr']))}  replicas {','.join(map(str, d['replicas']))}"
            f"  leader epoch {_cell('', d['leader_epoch'])}  partition epoch {_cell('', d['partition_epoch'])}"
            f"{marker.get(d['min_isr'], '')}")


def _ranges(items: list[list[int]], limit: int = 8, total: int | None = None) -> str:
    """``lo..hi`` ranges (``lo..hi xN`` with a times), the first ``limit``; ``total``: how many there are in all,
    when the list itself was cut."""
    def one(r: list[int]) -> str:
        return (str(r[0]) if r[0] == r[1] else f"{r[0]}..{r[1]}") + (f" x{r[2]}" if len(r) > 2 else "")

    more = (len(items) if total is None else total) - limit
    return ", ".join(one(r) for r in items[:limit]) + (f", ... ({more:,} more ranges)" if more > 0 else "")


def _delivery(o: Output, d: dict[str, Any]) -> str:
    """``delivery``: one partition's verdict, then what is wrong with it, each kind as at most 8 ranges."""
    def listed(kind: str) -> str:
        return _ranges(d[kind], total=d[f"{kind}_ranges"])

    style = "green" if d["verdict"] == "exactly-once" else "bold red"
    lines = [f"[bold]{escape(d['topic'])}-{d['partition']}[/bold]  offsets {d['from_offset']}..{d['to_offset']}  "
             f"{d['isolation']}  expected {d['expected']:,}  processed {d['delivered']:,}  "
             f"[{style}]{d['verdict']}[/{style}]"]
    if d["missing_count"]:
        lines.append(f"    missing {d['missing_count']:,}: {listed('missing')}")
    if d["duplicates_count"]:
        lines.append(f"    duplicates: {d['duplicates_count']:,} offsets processed more than once "
                     f"({d['duplicates_extra']:,} extra times): {listed('duplicates')}")
    if d["aborted_delivered_count"]:
        lines.append(f"    [bold red]aborted or control records processed[/bold red] "
                     f"{d['aborted_delivered_count']:,}: {listed('aborted_delivered')}")
    if d["unexpected_count"]:
        lines.append(f"    offsets the log does not hold for this consumer {d['unexpected_count']:,}: "
                     f"{listed('unexpected')}")
    if d.get("group") is not None:
        commit = "-" if d["committed_offset"] is None else d["committed_offset"]
        lines.append(f"    group {escape(d['group'])}: committed offset {commit}")
        if d["redelivered_on_restart_count"]:
            lines.append(f"      processed at or past the commit, delivered again on restart "
                         f"{d['redelivered_on_restart_count']:,}: {listed('redelivered_on_restart')}")
        if d["committed_not_processed_count"]:
            lines.append(f"      [bold red]committed but never processed (lost)[/bold red] "
                         f"{d['committed_not_processed_count']:,}: {listed('committed_not_processed')}")
    return "\n".join(lines)


def _offset_ranges(items: list[dict[str, Any]]) -> str:
    def one(r: dict[str, Any]) -> str:
        span = str(r["first_offset"]) if r["first_offset"] == r["last_offset"] else \
            f"{r['first_offset']}..{r['last_offset']}"
        producers = ", ".join(map(str, r["producer_ids"])) or "none"
        return f"{span} ({r['records']:,} records, producers {producers})"

    return "; ".join(one(r) for r in items) or "nothing"


def _unclean_election(o: Output, d: dict[str, Any]) -> str:
    """``replicas``: what electing one replica uncleanly would lose."""
    where = "in the ISR" if d["in_isr"] else "out of the ISR"
    style = "bold red" if d["lost"] else "green"
    kind = "election" if d["in_isr"] else "unclean election"
    lines = [f"{kind} of [bold]{escape(d['candidate'])}[/bold] ({where}, LEO {d['candidate_leo']}, "
             f"high watermark {d['high_watermark']}; new leader epoch {d['new_epoch']} from {d['candidate_leo']}): "
             f"[{style}]acknowledged offsets lost: {_offset_ranges(d['lost'])}[/{style}]"]
    for f in d["followers"]:
        if f["offsets_removed"]:
            lines.append(f"    {escape(f['replica'])} truncates to {f['truncate_to']} "
                         f"({f['offsets_removed']:,} offsets): acknowledged {_offset_ranges(f['acknowledged'])}; "
                         f"not acknowledged {_offset_ranges(f['unacknowledged'])}")
        else:
            lines.append(f"    {escape(f['replica'])} keeps its log (truncates to its LEO {f['leo']})")
    return "\n".join(lines)


def _trailing(o: Output, d: dict[str, Any]) -> str:
    return f"[yellow]trailing {d['bytes']} bytes at {d['position']} (not a whole batch)[/yellow]"


def _locate_step(o: Output, d: dict[str, Any]) -> str:
    if d["step"] == "fallback":
        return f"  [yellow]fallback:[/yellow] {escape(d['message'])}"
    return f"  {escape(d['message'])}"


def _location(o: Output, d: dict[str, Any]) -> str:
    """``locate``: the target, each step of the search, then the batch and the record (or why not found)."""
    t = d["target"]
    if "offset" in t:
        what = f"offset {t['offset']}"
    elif "name" in t:
        what = f"timestamp {t['name']}"
    else:
        what = f"timestamp {t['timestamp']} ({_iso(t['timestamp'])})"
    lines = [f"[bold]locate {what}[/bold] in {escape(d['partition'])}"]
    lines.extend(_locate_step(o, s) for s in d["steps"])
    lines.append(f"  read {d['bytes_read']:,} bytes of .log files")
    if d["batch"] is not None:
        lines.append(_batch(o, d["batch"]))
    if d["record"] is not None:
        lines.append(_record(o, d["record"]))
    if not d["found"]:
        lines.append(f"[bold red]not found:[/bold red] {escape(d['note'] or '')}")
    else:
        if d["note"]:
            lines.append(f"[yellow]note:[/yellow] {escape(d['note'])}")
        if d["batch"] is None:  # latest / earliest of an empty log: an offset without a record
            lines.append(f"[bold]offset {d['offset']}[/bold]")
    return "\n".join(lines)


_ACTION_STYLE = {"delete": "red", "truncate": "bold red", "rename": "yellow"}


def _action(o: Output, d: dict[str, Any]) -> str:
    """``repair``: one planned or applied step."""
    style = _ACTION_STYLE.get(d["action"], "cyan")
    to = f" → {escape(d['to'])}" if d.get("to") else ""
    return f"  [{style}]{d['action']:8}[/{style}] {escape(d['path'])}{to}: {escape(d['reason'])}"


def _repair_partition(o: Output, d: dict[str, Any]) -> str:
    """``repair``: what it comes to for one partition."""
    note = d.get("recovery_point_note")
    rp = f"; recovery point {d['recovery_point']} {escape(note)}" if note else ""
    if d.get("index_interval_note"):
        rp += f"; index interval {d['index_interval_bytes']} bytes {escape(d['index_interval_note'])}"
    if not d["actions"] and d.get("blocked"):
        return f"[red]cannot repair[/red] {escape(d['path'])}: the errors above; nothing is changed there\n"
    if not d["actions"]:
        return f"[green]nothing to repair[/green] in {escape(d['path'])} (log end offset {d['leo_after']}{rp})"
    removed = ""
    if d["bytes_removed"]:
        rng = d["offsets_removed"]
        offsets = f", offsets {rng[0]}..{rng[1]}" if rng else ""
        removed = f"; removes {d['bytes_removed']:,} bytes ({d['batches_removed']} batches{offsets})"
    salvaged = f"; {d['salvaged_batches']} batches after the cut can be salvaged" if d["salvaged_batches"] else ""
    done = (f"[green]applied[/green] (originals in {escape(d['backup_dir'])})" if d["applied"]
            else "[red]blocked[/red]: the errors above refuse --apply here; nothing is changed" if d.get("blocked")
            else "[yellow]dry run[/yellow]: run again with --apply (broker stopped) to do it")
    return (f"[bold]{escape(d['path'])}[/bold]: {d['actions']} actions, log end offset {d['leo_before']} → "
            f"{d['leo_after']}{removed}{salvaged}{rp}; {done}\n")


def _partition(o: Output, d: dict[str, Any]) -> str:
    if "leo_before" in d:
        return _repair_partition(o, d)
    if "isr_hw" in d:
        return _replicas_partition(o, d)
    return escape(_json(d))


def _runs(side: dict[str, Any]) -> str:
    """``replicas``: the runs of batches one replica has and the other has not."""
    parts = []
    for r in side["runs"]:
        what = {"divergent": "", "ahead": ", past the other's end", "below-log-start": ", below the other's log start"}
        parts.append(f"{r['first_offset']}..{r['last_offset']} (epoch {r['partition_leader_epoch']}, {r['batches']} "
                     f"batches{what.get(r['kind'], '')})")
    if side["more_runs"]:
        parts.append(f"and {side['more_runs']} more batches")
    return ", ".join(parts)


def _replicas_partition(o: Output, d: dict[str, Any]) -> str:
    """``replicas``: after the table of replicas, the ISR's high watermark and how each pair compares."""
    lines = [f"[bold]{escape(d['topic'])}-{d['partition']}[/bold]: {len(d['replicas'])} replicas; ISR high watermark "
             f"[bold]{d['isr_hw']}[/bold] (min LEO of {escape(', '.join(d['isr']))}); the longest log ends at "
             f"{d['max_leo']}"]
    for dv in d["divergence"]:
        a, b = escape(dv["a_name"]), escape(dv["b_name"])
        rel, only_a, only_b = dv["relation"], dv["only_in_a"], dv["only_in_b"]
        if rel == "divergent":
            line = (f"  [bold red]{a} and {b} diverge at offset {dv['first_divergent_offset']}[/bold red] "
                    f"({dv['common_batches']} batches in common)")
            if only_a["batches"]:
                line += f"; only {a}: {_runs(only_a)}"
            if only_b["batches"]:
                line += f"; only {b}: {_runs(only_b)}"
        elif rel in ("a-ahead", "b-ahead"):
            ahead, behind, side = (a, b, only_a) if rel == "a-ahead" else (b, a, only_b)
            line = f"  {behind} is a prefix of {ahead}, which also has {_runs(side)}"
        else:
            line = f"  {a} and {b} hold the same {dv['common_batches']} batches"
            extra = [f"only {n}: {_runs(s)}" for n, s in ((a, only_a), (b, only_b)) if s["batches"]]
            if extra:
                line += "; " + "; ".join(extra)
        lines.append(line)
    return "\n".join(lines) + "\n"


_RULES = {"epoch": "leader-epoch rule (KIP-101/279)", "hw": "high-watermark rule (before KIP-101)"}


def _truncation_step(i: int, s: dict[str, Any]) -> str:
    if "requested_epoch" in s and s.get("leader_epoch") is not None:
        follower = ("knows no epoch at or below it" if s.get("follower_epoch") is None
                    else f"its epoch {s['follower_epoch']} ends at {s['follower_end_offset']}")
        line = (f"    round {i}: asks for epoch {s['requested_epoch']}; leader: epoch {s['leader_epoch']} ends at "
                f"{s['leader_end_offset']}; follower: {follower} → truncate to {s['truncate_to']}")
    elif "follower_high_watermark" in s:
        line = f"    truncate to its high watermark {s['follower_high_watermark']} → {s['truncate_to']}"
    else:
        line = f"    → {s['truncate_to']}"
    return line + (f" ({escape(s['note'])})" if s.get("note") else "")


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "es" if word.endswith("ch") else "s")


def _truncation(o: Output, d: dict[str, Any]) -> str:
    """``truncation``: one rule's outcome: the offset, how it was reached, what is discarded, the plan."""
    head = (f"[bold]{_RULES.get(d['rule'], d['rule'])}[/bold]: {escape(d['follower_name'])} "
            f"({escape(d['topic'])}-{d['partition']}, LEO {d['follower_leo']}) following "
            f"{escape(d['leader_name'])} (LEO {d['leader_leo']}) truncates to [bold]{d['truncate_to']}[/bold]")
    discards = (f": discards {_n(d['offsets_removed'], 'offset')}, {_n(d['lost_batches'], 'batch')}, "
                f"{_n(d['lost_records'], 'record')}")
    head += discards if d["lost_batches"] or d["offsets_removed"] else ": nothing discarded"
    lines = [head, *(_truncation_step(i, s) for i, s in enumerate(d["steps"], 1))]
    shown = d["lost"][:20]
    for b in shown:
        offsets = f"{b['base_offset']}..{b['last_offset']}" if b["last_offset"] != b["base_offset"] else str(
            b["base_offset"])
        producer = f"  producer {b['producer_id']}" if b["producer_id"] is not None and b["producer_id"] >= 0 else ""
        where = "on the leader (fetched again)" if b["on_leader"] else "[bold red]not on the leader[/bold red]"
        acked = "  [yellow]acknowledged[/yellow]" if b["acknowledged"] else ""
        lines.append(f"    discard offset {offsets}  epoch {b['partition_leader_epoch']}{producer}  "
                     f"{b['record_count']} rec  {where}{acked}")
    if d["lost_batches"] > len(shown):
        lines.append(f"    ... {d['lost_batches'] - len(shown)} more batches (all of them: --format jsonl)")
    if d["data_loss"]:
        acked = ", ".join(f"{a}..{b}" for a, b in d["acknowledged_lost"])
        lines.append(f"  [bold red]data loss[/bold red]: {_n(d['lost_not_on_leader'], 'discarded batch')} not on the "
                     "leader" + (f"; acknowledged offsets lost: {acked}" if acked else ""))
    if d["acknowledged_at_risk"]:
        risk = ", ".join(f"{a}..{b}" for a, b in d["acknowledged_at_risk"])
        lines.append(f"  [yellow]acknowledged offsets {risk} are then only on the leader[/yellow]: lost if it fails "
                     "before the follower fetches them again")
    if d["keeps_divergence_from"] is not None:
        lines.append(f"  [bold red]stays inconsistent[/bold red]: keeps its own batches from offset "
                     f"{d['keeps_divergence_from']}, which differ from the leader's")
    elif d["lost_batches"] and not d["data_loss"]:
        lines.append("  [green]no data lost[/green]: the leader holds every discarded batch")
    plan = d.get("plan") or {}
    if plan.get("changes"):
        acts = [f"{s['action']} {escape(os.path.basename(s['log']))}" + (
            f" to {s['keep_bytes']:,} of {s['size']:,} bytes" if s["action"] == "truncate" else "")
            for s in plan["segments"]]
        if plan["epoch_checkpoint"] is not None:
            acts.append("leader-epoch-checkpoint → " + (", ".join(f"{e}@{s}" for e, s in plan["epoch_checkpoint"])
                                                       or "empty"))
        acts += [f"delete {escape(os.path.basename(x))}" for x in plan["delete_snapshots"]]
        acts += [f"{escape(os.path.basename(k))} → {v}" for k, v in plan["checkpoints"].items()]
        done = (f"[green]applied[/green] (originals in {escape(d['backup_dir'])})" if d.get("applied")
                else "plan (not applied)")
        lines.append(f"  {done}: " + "; ".join(acts))
    return "\n".join(lines) + "\n"


def _epochs(o: Output, d: dict[str, Any]) -> str:
    """``epochs``: after the table, the checkpoint and the cache the broker would load, side by side."""
    def show(entries: list[list[int]] | None) -> str:
        return "none" if entries is None else (", ".join(f"{e}@{s}" for e, s in entries) or "empty")

    verdict = ("[green]they agree[/green]" if not d["disagreements"]
               else f"[bold red]{d['disagreements']} disagreements[/bold red]")
    return (f"[bold]{escape(d['path'])}[/bold] (log {d['log_start_offset']}..{d['leo']}): leader-epoch-checkpoint "
            f"{show(d['checkpoint'])}; batches {show(d['log'])}; {verdict}; the broker would load {show(d['cache'])}\n")


def _generic(label: str, *keys: str) -> Callable[[Output, dict[str, Any]], str]:
    def render(o: Output, d: dict[str, Any]) -> str:
        return f"{label} " + "  ".join(f"{k} {escape(_cell(k, d.get(k)))}" for k in keys)

    return render


_TEXT: dict[str, Callable[[Output, dict[str, Any]], str]] = {
    "file": _file,
    "batch": _batch,
    "record": _record,
    "finding": _finding,
    "trailing": _trailing,
    "group": _group,
    "metadata_record": _metadata_record,
    "delivery": _delivery,
    "partition_state": _partition_state,
    "unclean_election": _unclean_election,
    "location": _location,
    "action": _action,
    "partition": _partition,
    "truncation": _truncation,
    "epochs": _epochs,
    "locate_step": _locate_step,
    "index_entry": _generic("index", "offset", "position"),
    "time_index_entry": _generic("time index", "timestamp", "offset"),
    "checkpoint": _generic("checkpoint", "version", "count"),
    "producer_snapshot": _generic("producer snapshot", "version", "crc", "crc_valid", "count"),
    "partition_metadata": _generic("partition metadata", "version", "topic_id"),
}
