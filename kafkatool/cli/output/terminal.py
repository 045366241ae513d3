"""What a person's terminal gets: no raw control character from a file (:func:`printable`), rich's markup as SGR
codes or nothing (:func:`_markup`), rich's Console only when a stream may be a terminal (:func:`console`), and the
progress bars on stderr (:class:`Bars`)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

_STYLE_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36",
              "bold red": "1;31"}
_TAG = re.compile(r"(\\*)\[([a-z#/@][^\[]*?)\]")  # rich's markup tags (rich.markup.RE_TAGS)
_ESCAPE = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?\])")  # the same, whole


def console(stream: Any, width: int | None = None) -> Any:
    """rich's Console for a stream that may be a terminal (rich decides: ``isatty``, ``FORCE_COLOR``,
    ``TTY_COMPATIBLE``), else a :class:`PlainConsole`."""
    if not _may_be_terminal(stream):
        return PlainConsole(stream)
    from ..console import QuietConsole

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

def table_width(stream: Any) -> int | None:
    """The columns a table may take on ``stream``: ``COLUMNS`` when it is set (as ``shutil.get_terminal_size`` reads
    it: the width asked for, piped or not), else a terminal's width; None when piped (a table takes the width it
    needs, never cut for a file or a pipe)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError):
        pass
    return None

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

_PLAIN = frozenset({int, float, bool, type(None)})  # nothing a terminal could act on


def _printable(v: Any) -> Any:
    """``v`` (a value's dict) with every string in it, dict keys too, made :func:`printable`."""
    if isinstance(v, str):
        return v if v.isprintable() else printable(v)
    if isinstance(v, dict):  # a plain key or value kept without a call (a summary row is mostly numbers)
        return {(k if k.__class__ is str and k.isprintable() else _printable(k)):
                (x if x.__class__ in _PLAIN or x.__class__ is str and x.isprintable() else _printable(x))
                for k, x in v.items()}
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


class Bars:
    """Progress on stderr, for :class:`kafkatool.cli.output.Output` (``err``: stderr's console; ``_out``, ``_console``:
    stdout's stream and console)."""

    err: Any
    _out: Any
    _console: Any

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
