"""The one output layer every command uses: :class:`Output`, which writes each value in the chosen format.

- ``jsonl`` (:mod:`.jsonl`): one plain ``json.dumps`` object per line on stdout (never through rich, which wraps).
- ``text`` (:mod:`.text`, :mod:`.reports`, :mod:`.tables`): a readable line per batch / record / entry, small files
  as tables, findings coloured.
- ``dump-log`` (:mod:`.dumplog`): kafka-dump-log's own text.
Warnings, errors and progress go to stderr (:mod:`.terminal`). Presentation only: nothing here parses files.
What a person reads (text, dump-log) never holds a raw control character: every string of a value is made
:func:`~.terminal.printable` as the value comes in (``Output._text``, ``DumpLog._dump_log``), before any renderer sees
it. Lines are plain strings (rich's markup rendered by :func:`~.terminal._markup`); rich itself is imported only when
a stream may be a terminal, for its colours, width and progress bars (:func:`~.terminal.console`).
"""

from __future__ import annotations

import base64
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ...errors import UsageError
from ...model import ControlBatch, FileStart, Stretch, render_bytes
from ...records import RecordRun
from ..exits import exit_code
from .dumplog import DumpLog
from .jsonl import _json
from .reports import _TEXT
from .tables import _TABLE_TYPES, Tables
from .terminal import Bars, _markup, _shown, console, escape
from .text import _RENDER_FALLBACK, _compacted

FORMATS = ("text", "jsonl")
DUMP_FORMATS = (*FORMATS, "dump-log")  # dump only: kafka-dump-log's own text
VALUE_MODES = ("base64", "text", "hex", "none")


def check_format(fmt: str, formats: tuple[str, ...] = FORMATS) -> None:
    """``--format`` is one of ``formats`` (a usage error, exit 2, before anything is read)."""
    if fmt not in formats:
        raise UsageError(f"--format must be one of {', '.join(formats)}")


class Output(Tables, DumpLog, Bars):
    """Writes values (anything with ``as_dict()``, or dicts) in the chosen format."""

    def __init__(self, fmt: str = "text", values: str | None = None, stream: Any = None,
                 tables: bool = True) -> None:
        self.fmt = fmt
        # dump-log renders keys and values itself (UTF-8 strings, as kafka-dump-log's StringDecoder)
        self.values = "base64" if fmt == "dump-log" else values or ("base64" if fmt == "jsonl" else "text")
        self.findings: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()
        self.shown = 0  # values emitted, findings and file names aside: 0 after a run that matched nothing (.notes)
        self._out = stream or sys.stdout   # stderr where stdout carries other data (dump's csv export)
        # Piped text must never be cut to 80 columns: tables take the width they need.
        width = None if self._out.isatty() else 1000
        self._console = console(self._out, width) if fmt == "text" else None
        self.err = console(sys.stderr)
        self._table_rows: list[dict[str, Any]] = []
        self._summaries: list[dict[str, Any]] = []  # text: shown as one table after everything else
        self.current_file: str | None = None  # the file whose header was shown last (text)
        self._batch: dict[str, Any] | None = None  # dump-log: the batch whose records follow
        # jsonl: what each batch and record line of the current file ends with (its topic, partition and path),
        # rendered once a file (FileStart)
        self._context = ""
        self.tables = tables  # False: rows that would be tables are lines (mixed with other lines)
        self._colour = self._console is not None and self._console.is_terminal and \
            self._console.color_system is not None
        # No colour (piped, NO_COLOR, no colour terminal): batch and record lines are written as plain strings,
        # with no markup to strip.
        self.plain = self._console is not None and not self._colour

    # -- results -------------------------------------------------------------------------------
    def emit(self, item: Any) -> None:
        cls = item.__class__
        if cls is RecordRun or cls is Stretch:
            self._run(item)
            return
        if cls is FileStart:
            if self.fmt == "jsonl":
                context = _json({"topic": item.topic, "partition": item.partition, "path": item.path})
                self._context = ", " + context[1:-1]
            if not item.shown:
                return
        d = item if isinstance(item, dict) else item.as_dict()
        t = d.get("type")
        if t == "finding":
            self.findings[d["severity"]] += 1
            self.codes[d["code"]] += 1
        elif t != "file" and t != "txn_clock":  # context (a file's header, the time judged at), not a result
            self.shown += 1
        if t == "record" and self.values != "base64" and not (self.fmt == "text" and self.values == "text"):
            d = self._revalue(d)
        if self.fmt == "jsonl":
            line = _json(d)
            if self._context and (t == "batch" or t == "record"):
                line = line[:-1] + self._context + "}"
            self._out.write(line + "\n")
        elif self.fmt == "dump-log":
            self._dump_log(d)
        else:
            self._text(d)

    def _run(self, run: RecordRun | Stretch) -> None:
        """Batches as native columns (a RecordRun's with their records, a Stretch's without): rendered in one call
        where the lines are plain."""
        self.shown += 1
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
            run.render(self.fmt, self.values, _RENDER_FALLBACK, write, self._context)
        elif run.__class__ is RecordRun:
            for item in run.items():
                self.emit(item)
        else:  # a stretch's markers named on their batch lines, as the native lines name them
            markers = run.markers
            for i, batch in enumerate(run.batches(), run.lo):
                self.emit(ControlBatch(batch, markers[i]) if i in markers else batch)

    def emit_all(self, items: Iterable[Any]) -> None:
        for item in items:
            self.emit(item)
        self.close()

    def close(self) -> None:
        if self.fmt == "dump-log":
            self._dump_log_end()
        self._flush_table()
        if self._summaries:
            self._summary_table()
        self._out.flush()

    def exit_code(self, fail_on: str, verdict: bool = False) -> int:
        """The exit code of what was emitted, by the one exit policy (:func:`kafkatool.cli.exits.exit_code`)."""
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

    # -- text ----------------------------------------------------------------------------------
    def _print(self, line: str) -> None:
        """One text line (rich markup) as a plain string, with colour codes only on a colour terminal: rich's
        Console.print cost a few hundred microseconds a line (seconds for the findings of a big log dir)."""
        assert self._console is not None
        self._out.write(_markup(line, self._colour) + "\n")

    def _text(self, d: dict[str, Any]) -> None:
        t = d.get("type")
        if t == "summary":  # one table after everything else, made printable there cell by cell (_summary_table)
            self._summaries.append(d)
            return
        if t == "record" and ("key_decoded" in d or "value_decoded" in d):
            d = _compacted(d)
        raw, d = d, _shown(d)  # every name, path and message a person reads, escaped here (JSON escapes its own)
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
