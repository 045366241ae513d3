"""The one output layer every command uses.

- ``jsonl``: one plain ``json.dumps`` object per line on stdout (never through rich, which wraps).
- ``text``: a readable line per batch / record / entry, small files as tables, findings coloured.
Warnings, errors and progress go to stderr. Presentation only: nothing here parses files.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

FORMATS = ("text", "jsonl")
VALUE_MODES = ("base64", "text", "hex", "none")
_TABLE_TYPES = {"producer", "offset", "epoch", "aborted_txn"}
_SEVERITY_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}


def render_bytes(data: bytes | None, mode: str) -> str | None:
    if data is None:
        return None
    if mode == "base64":
        return base64.b64encode(data).decode("ascii")
    if mode == "hex":
        return data.hex()
    return data.decode("utf-8", "backslashreplace")


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

    def __init__(self, fmt: str = "text", values: str | None = None) -> None:
        self.fmt = fmt
        self.values = values or ("base64" if fmt == "jsonl" else "text")
        self.findings: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()
        self._out = sys.stdout
        # Piped text must never be cut to 80 columns: tables take the width they need.
        width = None if sys.stdout.isatty() else 1000
        self._console = (
            Console(file=sys.stdout, highlight=False, soft_wrap=True, width=width) if fmt == "text" else None
        )
        self.err = Console(file=sys.stderr, highlight=False, soft_wrap=True)
        self._table_rows: list[dict[str, Any]] = []
        self._summaries: list[dict[str, Any]] = []  # text: shown as one table after everything else
        self.current_file: str | None = None  # the file whose header was shown last (text)

    # -- results -------------------------------------------------------------------------------
    def emit(self, item: Any) -> None:
        d = item if isinstance(item, dict) else item.as_dict()
        if d.get("type") == "finding":
            self.findings[d["severity"]] += 1
            self.codes[d["code"]] += 1
        if d.get("type") == "record" and self.values != "base64" and not (self.fmt == "text" and self.values == "text"):
            d = self._revalue(d)
        if self.fmt == "jsonl":
            self._out.write(json.dumps(d) + "\n")
        else:
            self._text(d)

    def emit_all(self, items: Iterable[Any]) -> None:
        for item in items:
            self.emit(item)
        self.close()

    def close(self) -> None:
        self._flush_table()
        if self._summaries:
            self._summary_table()
        self._out.flush()

    def exit_code(self, fail_on: str = "warning") -> int:
        """3 when a file could not be read, 1 when a finding at or above ``fail_on`` was emitted, else 0."""
        if self.codes["io-error"]:
            return 3
        order = ["info", "warning", "error"]
        worst = [s for s in order[order.index(fail_on):] if self.findings[s]]
        return 1 if worst else 0

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
        assert self._console is not None
        self._console.print(line)

    def _text(self, d: dict[str, Any]) -> None:
        t = d.get("type")
        if t == "summary":
            self._summaries.append(d)
            return
        if t in _TABLE_TYPES:
            if self._table_rows and self._table_rows[0]["type"] != t:
                self._flush_table()
            self._table_rows.append(d)
            return
        self._flush_table()
        render = _TEXT.get(t)
        if render is None:
            self._print(escape(json.dumps(d)))
        else:
            self._print(render(self, d))

    def _flush_table(self) -> None:
        if not self._table_rows:
            return
        rows, self._table_rows = self._table_rows, []
        cols = [k for k in rows[0] if k != "type"]
        table = Table(*cols, box=None, pad_edge=False, header_style="bold")
        for r in rows:
            table.add_row(*(escape(str(r.get(c))) for c in cols))
        assert self._console is not None
        self._console.print(table)

    def _summary_table(self) -> None:
        rows, self._summaries = self._summaries, []
        parts = [r for r in rows if r.get("scope") == "partition"]
        assert self._console is not None
        if parts:
            table = Table(*_SUMMARY_COLUMNS.values(), box=None, pad_edge=False, header_style="bold")
            for r in parts:
                style = "bold red" if r["errors"] else "yellow" if r["warnings"] else None
                table.add_row(*(escape(_cell(k, r.get(k))) for k in _SUMMARY_COLUMNS), style=style)
            self._console.print()
            self._console.print(table)
        for r in rows:
            if r.get("scope") == "total":
                verdict = ("[bold red]errors[/]" if r["errors"] else "[yellow]warnings[/]" if r["warnings"]
                           else "[green]clean[/]")
                self._console.print(
                    f"\n{verdict}: {r['partitions']} partitions, {r['files']} files, {r['bytes']:,} bytes, "
                    f"{r['batches']:,} batches; {r['errors']} errors, {r['warnings']} warnings, {r['infos']} info")

    @contextmanager
    def progress(self, total: Callable[[], int], label: str) -> Any:
        """A byte progress bar on stderr, shown only when stderr is a terminal and stdout is not.

        ``total`` is called only when the bar will be shown (it may walk a whole log dir).
        """
        if not self.err.is_terminal or sys.stdout.isatty():
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
                      TransferSpeedColumn(), TimeRemainingColumn(), console=self.err, transient=True) as bar:
            task = bar.add_task(label, total=size)
            yield lambda n: bar.advance(task, n)


# -- one renderer per value type (text format) --------------------------------------------------

_SUMMARY_COLUMNS = {
    "path": "partition", "segments": "segments", "bytes": "bytes", "batches": "batches",
    "log_start_offset": "log start", "log_end_offset": "LEO", "high_watermark": "HW",
    "open_transactions": "open txns", "index": "index", "errors": "errors", "warnings": "warnings",
    "infos": "info",
}


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:,}" if key in ("bytes", "batches") else str(v)  # offsets stay copyable



def _file(o: Output, d: dict[str, Any]) -> str:
    o.current_file = d["path"]
    return f"\n[bold]── {escape(d['path'])}[/bold]"


def _batch(o: Output, d: dict[str, Any]) -> str:
    crc = "[green]crc ok[/green]" if d["crc_valid"] else "[bold red]CRC MISMATCH[/bold red]"
    offsets = str(d["base_offset"])
    if d["last_offset"] != d["base_offset"]:
        offsets += f"..{d['last_offset']}"
    parts = [
        f"[bold]offset {offsets}[/bold]",
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
        parts.append("[magenta]" + " ".join(flags) + "[/magenta]")
    if "delete_horizon_ms" in d:
        parts.append(f"delete-horizon {_iso(d['delete_horizon_ms'])}")
    parts.append(crc)
    return "  ".join(parts)


def _val(o: Output, v: str | None) -> str:
    if v is None:
        return "null"
    if o.values == "text":  # still base64 here: decode for people
        return escape(_text_bytes(base64.b64decode(v)))
    return escape(v)


def _record(o: Output, d: dict[str, Any]) -> str:
    line = f"    [dim]|[/dim] {d['offset']}  {_iso(d['timestamp'])}"
    if "control_type" in d:
        line += f"  [magenta]{d['control_type']}[/magenta]"
        if "coordinator_epoch" in d:
            line += f" coordinator epoch {d['coordinator_epoch']}"
        return line
    if "key" in d:
        line += f"  key={_val(o, d['key'])} value={_val(o, d['value'])}"
    if d["headers"]:
        line += "  headers=" + ", ".join(f"{escape(repr(k))}={_val(o, v)}" for k, v in d["headers"])
    return line


def _finding(o: Output, d: dict[str, Any]) -> str:
    style = _SEVERITY_STYLE.get(d["severity"], "")
    pos = "" if d["position"] is None else f" @ {d['position']}"
    where = "" if d["path"] == o.current_file else f" {escape(d['path'])}{pos}"
    if not where and pos:
        where = pos
    return f"[{style}]{d['severity'].upper()}[/{style}] {escape(d['code'])}{where}: {escape(d['message'])}"


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


def _generic(label: str, *keys: str) -> Callable[[Output, dict[str, Any]], str]:
    def render(o: Output, d: dict[str, Any]) -> str:
        return f"{label} " + "  ".join(f"{k} {escape(str(d.get(k)))}" for k in keys)

    return render


_TEXT: dict[str, Callable[[Output, dict[str, Any]], str]] = {
    "file": _file,
    "batch": _batch,
    "record": _record,
    "finding": _finding,
    "trailing": _trailing,
    "location": _location,
    "locate_step": _locate_step,
    "index_entry": _generic("index", "offset", "position"),
    "time_index_entry": _generic("time index", "timestamp", "offset"),
    "checkpoint": _generic("checkpoint", "version", "count"),
    "producer_snapshot": _generic("producer snapshot", "version", "crc", "crc_valid", "count"),
    "partition_metadata": _generic("partition metadata", "version", "topic_id"),
}
