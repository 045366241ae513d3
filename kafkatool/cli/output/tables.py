"""The text format's tables: the value types shown as rows (:data:`_TABLE_TYPES`, with their chosen columns), the
per-partition summary, and the plain-string table layout that folds a path on a narrow terminal."""

from __future__ import annotations

import re
from typing import Any

from .terminal import _printable, table_width
from .text import _GROUPED, _TIMES, _cell, _min_isr

_TABLE_TYPES = {"producer", "offset", "epoch", "aborted_txn", "replica", "epoch_compare", "transaction",
                "committed_offset", "partition_state", "partition_for", "transaction_state", "under_min_isr",
                "partition_overview", "topic_overview", "hanging_transaction", "share_partition_state",
                "remote_segment", "schema_version", "schema_setting"}
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
    "hanging_transaction": {"topic": "topic", "partition": "partition", "producer_id": "producer",
                            "producer_epoch": "epoch", "coordinator_epoch": "coord. epoch",
                            "first_offset": "first offset", "last_timestamp": "last write", "open_ms": "open ms",
                            "transactional_id": "transactional id", "reason": "reason", "last_stable_offset": "LSO",
                            "groups": "groups held"},
    "remote_segment": {"topic": "topic", "partition": "partition", "segment_id": "segment", "start_offset": "start",
                       "end_offset": "end", "state": "state", "broker_id": "broker", "event_timestamp": "event time",
                       "segment_leader_epochs": "epochs (epoch@start)", "segment_size": "bytes",
                       "metadata_partition": "in"},
    "share_partition_state": {"group_id": "group", "topic": "topic", "partition": "partition",
                              "state_epoch": "state epoch", "leader_epoch": "leader epoch",
                              "start_offset": "start offset", "log_start_offset": "log start",
                              "log_end_offset": "LEO", "state_batches": "state batches (offsets state×deliveries)",
                              "coordinator_partition": "in"},
    "schema_version": {"subject": "subject", "version": "version", "id": "id", "schema_type": "type",
                       "deleted": "deleted", "references": "references", "offset": "offset", "source": "in"},
    "schema_setting": {"kind": "setting", "subject": "subject", "setting": "value", "offset": "offset"},
}
_SUMMARY_COLUMNS = {
    "path": "partition", "segments": "segments", "bytes": "bytes", "batches": "batches",
    "log_start_offset": "log start", "log_end_offset": "LEO", "high_watermark": "HW",
    "open_transactions": "open txns", "index": "index", "errors": "errors", "warnings": "warnings",
    "infos": "info",
}
_SGR = {"bold": "1", "bold red": "1;31", "yellow": "33"}  # table lines are written as plain text
# What a table never cuts: a number (1,234; a list of them, 1,2,3), a timestamp (or a range of them), nothing ("-").
# A pattern's text, compiled by re (and kept in its cache) at the first table too wide for a terminal: most runs
# never need it, and compiling it is ~0.5 ms of every start.
_WHOLE = r"-?[\d,]+|-|(\d{4}-\d\d-\d\dT[\d:.]+Z|-?\d+)(\.\.(\d{4}-\d\d-\d\dT[\d:.]+Z|-?\d+))?"
_FOLD_MIN = 24  # a column of text cut short keeps at least this many characters
_INDENT = "    "  # the lines a row goes on over, past the first


def _with_elr(cols: dict[str, str]) -> dict[str, str]:
    """The partition_state columns with ``ELR`` and ``last known ELR`` after the ISR."""
    out: dict[str, str] = {}
    for k, v in cols.items():
        out[k] = v
        if k == "isr":
            out.update(elr="ELR", last_known_elr="last known ELR")
    return out


class Tables:
    """Rows gathered and written as tables, for :class:`kafkatool.cli.output.Output`."""

    _out: Any
    _console: Any
    _table_rows: list[dict[str, Any]]
    _summaries: list[dict[str, Any]]

    def _flush_table(self) -> None:
        if not self._table_rows:
            return
        rows, self._table_rows = self._table_rows, []
        if rows[0]["type"] == "partition_state":  # the min ISR column tells the value, its source and the step
            rows = [{**r, "min_isr": _min_isr(r)} for r in rows]
        chosen = _TABLE_COLUMNS.get(rows[0]["type"])
        if chosen and rows[0]["type"] == "partition_state" and any("elr" in r for r in rows):
            chosen = _with_elr(chosen)  # records that carry the eligible leader replicas (KIP-966)
        cols = chosen or {k: k for k in rows[0] if k != "type"}
        if chosen and "cluster" in rows[0]:  # rows of several clusters (metadata): which one each is from
            cols = {"cluster": "cluster", **chosen}
        self._print_table(list(cols.values()), [[_cell(c, r.get(c)) for c in cols] for r in rows])

    def _print_table(self, headers: list[str], rows: list[list[str]], styles: list[str | None] | None = None) -> None:
        """Columns two spaces apart, no trailing spaces. Narrower than the terminal (or ``COLUMNS``:
        :func:`~.terminal.table_width`): :func:`_table_lines`. Plain string work: rich's Table took seconds for the
        2,000 partitions of a big log dir."""
        assert self._console is not None
        lines = _table_lines(headers, rows, table_width(self._out))
        if self._console.color_system is not None and self._console.is_terminal:
            style_of = [_SGR["bold"], *((_SGR.get(x) if x else None) for x in (styles or [None] * len(rows)))]
            out = [f"\x1b[{sgr}m{line}\x1b[0m" if (sgr := style_of[i]) else line for i, line in lines]
        else:
            out = [line for _, line in lines]
        self._out.write("\n".join(out) + "\n")

    def _summary_table(self) -> None:
        """The partitions' rows as one table, then the total's line. The rows come as emitted, not yet made printable
        (:func:`_cells`: a summary is mostly numbers, 10,000 partitions are 10,000 rows)."""
        rows, self._summaries = self._summaries, []
        parts = [r for r in rows if r.get("scope") == "partition"]
        assert self._console is not None
        if parts:
            styles = ["bold red" if r["errors"] else "yellow" if r["warnings"] else None for r in parts]
            self._console.print()
            keys = tuple(_SUMMARY_COLUMNS)
            self._print_table(list(_SUMMARY_COLUMNS.values()), [_cells(keys, r) for r in parts], styles)
        for r in rows:
            if r.get("scope") == "total":
                r = _printable(r)
                verdict = ("[bold red]errors[/]" if r["errors"] else "[yellow]warnings[/]" if r["warnings"]
                           else "[green]clean[/]")
                self._console.print(
                    f"\n{verdict}: {r['partitions']} partitions, {r['files']} files, {r['bytes']:,} bytes, "
                    f"{r['batches']:,} batches; {r['errors']} errors, {r['warnings']} warnings, {r['infos']} info")


def _cells(keys: tuple[str, ...], r: dict[str, Any]) -> list[str]:
    """``[_cell(k, v) for k in keys]`` of a row ``r`` not yet made printable, as it would read once made printable
    (:func:`~.terminal._printable`, then :func:`~.text._cell`): an int, None, or a printable string that is no number's
    cell is written here, without a call; anything else goes that way."""
    cells = []
    for k in keys:
        v = r.get(k)
        c = v.__class__
        if c is int and k not in _TIMES:
            cells.append(f"{v:,}" if k in _GROUPED else str(v))
        elif c is str and k not in _GROUPED and k not in _TIMES and v.isprintable():
            cells.append(v)
        elif v is None:
            cells.append("-")
        else:
            cells.append(_cell(k, _printable(v)))
    return cells


def _table_lines(headers: list[str], rows: list[list[str]], limit: int | None) -> list[tuple[int, str]]:
    """Each line, with the index of the row it shows (0: the header): the cells padded to their column, two spaces
    apart, no trailing spaces. Within ``limit`` (or None), a row is a line. Past ``limit`` columns:
    headers of more than one word take a line a word ("log start": "log", "start"); then, when that makes the table
    fit, the widest columns of text (a partition's path) lose the middle of what they hold to an ellipsis (``…``),
    never below ``_FOLD_MIN`` characters; else each row goes on over more lines, indented, between whole columns (only
    a column wider than a line is cut). A number or a timestamp is never cut."""
    table = [headers, *rows]
    widths = [max(map(len, col)) for col in zip(*table, strict=True)]
    if limit is None or _span(widths) <= limit:  # one format for every line: 10,000 partitions' rows in one pass
        pad = "  ".join(f"{{:<{w}}}" for w in widths).format
        return [(i, pad(*row).rstrip()) for i, row in enumerate(table)]
    widths = [max(max(map(len, h.split(" "))), *(len(r[j]) for r in rows)) for j, h in enumerate(headers)]
    floors = [max(_FOLD_MIN, *map(len, h.split(" "))) for h in headers]
    cut = [j for j in range(len(widths)) if any(not re.fullmatch(_WHOLE, r[j]) for r in rows)]  # may lose their middle
    bands = [range(len(widths))]
    narrow = list(widths)
    over = _span(narrow) - limit
    while over > 0:  # a character at a time off the widest column of text that may still lose one
        j = max((k for k in cut if narrow[k] > floors[k]), key=lambda k: narrow[k], default=None)
        if j is None:
            break
        narrow[j] -= 1
        over -= 1
    if over <= 0:
        widths = narrow
    else:
        widths = [min(w, max(floors[j], limit - len(_INDENT))) if j in cut else w for j, w in enumerate(widths)]
        bands = _bands(widths, limit)
    out: list[tuple[int, str]] = []
    for i, row in enumerate(table):
        parts = [c.split(" ") if i == 0 else [_middle_cut(c, w) if j in cut else c]
                 for j, (c, w) in enumerate(zip(row, widths, strict=True))]
        for b, band in enumerate(bands):
            indent = _INDENT if b else ""
            for n in range(max(len(parts[j]) for j in band)):
                cells = [(parts[j][n] if n < len(parts[j]) else "").ljust(widths[j]) for j in band]
                cells[0] = indent + cells[0]
                out.append((i, "  ".join(cells).rstrip()))
    return out


def _span(widths: list[int]) -> int:
    return sum(widths) + 2 * (len(widths) - 1)


def _bands(widths: list[int], limit: int) -> list[range]:
    """The columns in runs that each fit ``limit`` (the runs after the first indented by ``_INDENT``): where a row
    that is still too wide goes on over more lines, between columns."""
    bands, start, used = [], 0, 0
    for j, w in enumerate(widths):
        need = w if j == start else used + 2 + w
        if j > start and need + (len(_INDENT) if bands else 0) > limit:
            bands.append(range(start, j))
            start, need = j, w
        used = need
    bands.append(range(start, len(widths)))
    return bands


def _middle_cut(cell: str, width: int) -> str:
    """``cell`` in ``width`` characters: its middle given up to an ellipsis, so both ends of a path stay (where it is,
    and the partition: two thirds of what is kept)."""
    if len(cell) <= width:
        return cell
    head = (width - 1) // 3
    return cell[:head] + "…" + cell[len(cell) - (width - 1 - head):]
