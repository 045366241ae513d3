"""The dump-log format: the text Kafka's ``kafka-dump-log.sh`` prints (kafka.tools.DumpLogSegments: ``dumpLog``,
``printBatchLevel``, ``--deep-iteration --print-data-log``), line for line; findings go to stderr."""

from __future__ import annotations

import base64
import os
from typing import Any

from .jsonl import _json
from .terminal import _printable, printable
from .text import _finding

_TIMESTAMP_TYPES = {"create": "CreateTime", "log_append": "LogAppendTime"}
_INT32_MAX = 2**31 - 1


class DumpLog:
    """Values as kafka-dump-log lines, for :class:`kafkatool.cli.output.Output`."""

    _out: Any
    err: Any
    current_file: str | None
    _batch: dict[str, Any] | None

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
