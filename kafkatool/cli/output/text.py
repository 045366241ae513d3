"""The text format's lines for what every reader yields: a file's header, a batch, a record, a finding, an index or
checkpoint entry, and a value as people read it (:func:`_cell`, :func:`_iso`). The batch and record lines have a native
twin (native/src/render.rs) used where the lines are plain; :data:`_RENDER_FALLBACK` is what it asks Python for."""

from __future__ import annotations

import base64
import datetime as _dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .terminal import escape

if TYPE_CHECKING:
    from . import Output

_SEVERITY_STYLE = {"info": "cyan", "warning": "yellow", "error": "bold red"}


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

_TIMES = frozenset({"commit_timestamp", "timestamp", "start_timestamp", "last_update_timestamp", "from_time",
                    "to_time", "first_timestamp", "last_timestamp", "event_timestamp"})  # cells shown as _iso
_GROUPED = frozenset({"bytes", "batches", "size", "offsets"})  # cells with thousands separators (offsets stay copyable)

def _cell(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if key in _TIMES:
        return _iso(v)
    if isinstance(v, list):
        return ",".join(map(str, v))
    return f"{v:,}" if key in _GROUPED else str(v)

_MIN_ISR = {"under": " UNDER min ISR", "below": " under min ISR", "back": " back to min ISR", "no leader": " no leader"}

def _min_isr(d: dict[str, Any]) -> str:
    """A partition step's min ISR: the min.insync.replicas in force, who set it (``default``: no topic or broker
    config, so Kafka's 1 or the static value given), and where the partition stands against it."""
    return f"{d['min_insync_replicas']} ({d['min_isr_source']}){_MIN_ISR.get(d['min_isr'], '')}"

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
    if "control_type" in d:  # an end-transaction marker, as DumpLogSegments names it (endTxnMarker, coordinatorEpoch)
        flags[-1] = f"{d['control_type']} coordinator epoch {d['coordinator_epoch']}"
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
    payload = [side for side in ("key", "value") if f"{side}_decoded" in d]
    if payload:  # dump --key-decoder/--value-decoder: what the application wrote, as one line of JSON
        line += "\n        " + "  ".join(_payload(o, d, side) for side in payload)
    if "decoded" in d:  # dump --decode: the internal topic's key and value, read
        line += ("\n        " + _fields(d["decoded"]) if d["decoded"] is not None
                 else f"\n        [yellow]not decoded: {escape(d.get('decode_error') or '')}[/yellow]")
    return line


def _compacted(d: dict[str, Any]) -> dict[str, Any]:
    """A record's decoded key and value as their compact JSON text, before the line is made printable: one string
    each (a value nested a thousand deep is not walked again, and its escapes are JSON's, not doubled)."""
    # here, as in dumplog: a record with decoded payloads is the only user of kafkatool.payloads in the output layer,
    # which every command imports (tests/test_startup.py)
    from ...payloads.decoded import compact

    d = dict(d)
    for side in ("key", "value"):
        if f"{side}_decoded" in d:
            d[f"{side}_decoded"] = compact(d[f"{side}_decoded"])
    return d

def _payload(o: Output, d: dict[str, Any], side: str) -> str:
    """``value=<compact JSON>`` (``value#<schema id>=`` when it was framed; :func:`_compacted`), or why it did not
    decode."""
    error = d.get(f"{side}_decode_error")
    if error is not None:
        text = f"{side} not decoded: {error}"
        return text if o.plain else f"[yellow]{escape(text)}[/yellow]"
    schema = d.get(f"{side}_schema_id")
    text = f"{side}{'' if schema is None else f'#{schema}'}={d[f'{side}_decoded']}"
    return text if o.plain else escape(text)


# What the native renderer (``_native.render``) asks Python for: the rare cases of _text_bytes, repr() of a
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

def _trailing(o: Output, d: dict[str, Any]) -> str:
    return f"[yellow]trailing {d['bytes']} bytes at {d['position']} (not a whole batch)[/yellow]"

def _generic(label: str, *keys: str) -> Callable[[Output, dict[str, Any]], str]:
    def render(o: Output, d: dict[str, Any]) -> str:
        return f"{label} " + "  ".join(f"{k} {escape(_cell(k, d.get(k)))}" for k in keys)

    return render
