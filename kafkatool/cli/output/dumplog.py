"""The dump-log format: the text Kafka's ``kafka-dump-log.sh`` prints (``org.apache.kafka.tools.DumpLogSegments``,
Kafka 4.2; ``kafka.tools.DumpLogSegments`` before it), line for line, for every file type it prints: segments and
KRaft snapshots (``dumpLog``, ``printBatchLevel``, ``printRecordMetadata``, ``printControlRecord``), offset and time
indexes (``dumpIndex``, ``dumpTimeIndex``), transaction indexes (``dumpTxnIndex``) and producer snapshots
(``dumpProducerIdSnapshot``). Findings go to stderr. Where Kafka writes a raw control character (a key or payload
through its ``StringDecoder``), the line shows it escaped (:func:`~.terminal.printable`)."""

from __future__ import annotations

import base64
import os
import re
from typing import Any

from .jsonl import _json
from .terminal import _printable, printable
from .text import _finding

_TIMESTAMP_TYPES = {"create": "CreateTime", "log_append": "LogAppendTime"}
_INT32_MAX = 2**31 - 1
# Snapshots.parse: 20-digit end offset, 10-digit epoch (compiled at first use: dump-log alone needs it)
_SNAPSHOT = r"(\d{20})-(\d{10})\.checkpoint\Z"
_BOOTSTRAP = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME


class DumpLog:
    """Values as kafka-dump-log lines, for :class:`kafkatool.cli.output.Output`.

    The record lines take DumpLogSegments' options: ``print_data_log`` (its ``--print-data-log``: each record's key
    and payload; without it, ``--deep-iteration`` alone: the metadata only) and ``skip_record_metadata``."""

    _out: Any
    err: Any
    current_file: str | None
    _batch: dict[str, Any] | None
    print_data_log = True
    skip_record_metadata = False
    _index: list[Any] | None = None  # an index file being dumped: [path, kind, entries shown]
    _snapshot_valid = True  # the producer snapshot being dumped passed readSnapshot's checks

    # -- kafka-dump-log's text (DumpLogSegments.dumpLog / printBatchLevel) ----------------------
    def _dump_log(self, d: dict[str, Any]) -> None:
        t = d.get("type")
        line: str | None
        raw = d
        if t != "record" and t != "batch":  # a batch holds no string; a record's are made printable as written
            d = _printable(d)
        if t == "file":
            self._dump_log_end()
            name = os.path.basename(d["path"])
            line = f"Dumping {d['path']}" + _file_header(name)
            if name.endswith((".index", ".timeindex")):
                self._index = [raw["path"], name.rsplit(".", 1)[1], 0]
            self._snapshot_valid = True
        elif t == "batch":
            self._batch = d
            line = _dump_log_batch(d)
        elif t == "record":
            line = _dump_log_record(d, self._batch, self.print_data_log, self.skip_record_metadata)
        elif t == "trailing":
            line = f"Found {d['bytes']} invalid bytes at the end of {os.path.basename(self.current_file or '')}"
        elif t == "index_entry":
            line = self._index_line(f"offset: {d['offset']} position: {d['position']}")
        elif t == "time_index_entry":
            line = self._index_line(f"timestamp: {d['timestamp']} offset: {d['offset']}")
        elif t == "aborted_txn":  # dumpTxnIndex
            line = (f"version: {d['version']} producerId: {d['producer_id']} firstOffset: {d['first_offset']} "
                    f"lastOffset: {d['last_offset']} lastStableOffset: {d['last_stable_offset']}")
        elif t == "producer_snapshot":  # ProducerStateManager.readSnapshot throws on these: no entry is printed
            self._snapshot_valid = d["crc_valid"] and d["version"] == 1
            return
        elif t == "producer":
            if not self._snapshot_valid:
                return
            line = _dump_producer(d)
        elif t == "finding":  # damage goes to stderr: stdout stays what kafka-dump-log prints
            self.err.print(_finding(self, d), highlight=False)
            return
        else:
            line = _json(raw)  # JSON escapes its own
        if t == "file":
            self.current_file = d["path"]
        self._out.write(line + "\n")

    def _index_line(self, line: str) -> str:
        if self._index is not None:
            self._index[2] += 1
        return line

    def _dump_log_end(self) -> None:
        """What ``dumpIndex`` / ``dumpTimeIndex`` print of an index that lists no entry: ``<file> is empty.`` for an
        offset index of no whole entry; otherwise (every slot zero, preallocated) its first slot, which they print
        before they stop at the next zero one (``entry.offset == baseOffset && i > 0``)."""
        if self._index is None:
            return
        path, kind, shown = self._index
        self._index = None
        if shown:
            return
        try:
            slots = os.stat(path).st_size // (8 if kind == "index" else 12)
        except OSError:  # gone since: the dump said so
            return
        base = os.path.basename(path).split(".")[0]
        if not base.isdigit():
            return
        if slots == 0:
            if kind == "index":
                self._out.write(f"{printable(path)} is empty.\n")
        elif kind == "index":
            self._out.write(f"offset: {int(base)} position: 0\n")
        else:
            self._out.write(f"timestamp: 0 offset: {int(base)}\n")


def _file_header(name: str) -> str:
    """The line ``dumpLog`` prints after ``Dumping <file>``: a segment's base offset, a KRaft snapshot's id."""
    if name.endswith(".log"):
        return f"\nLog starting offset: {int(name.split('.')[0])}" if name.split(".")[0].isdigit() else ""
    if name == _BOOTSTRAP:
        return "\nKRaft bootstrap snapshot"
    m = re.match(_SNAPSHOT, name)
    return f"\nSnapshot end offset: {int(m[1])}, epoch: {int(m[2])}" if m else ""


def _java_bool(v: Any) -> str:
    return "true" if v else "false"

def _optional_long(v: int | None) -> str:
    """Java's ``OptionalLong.toString``."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"

def _dump_log_batch(d: dict[str, Any]) -> str:
    """``printBatchLevel``: one batch as kafka-dump-log prints it."""
    if d["magic"] >= 2:
        base_seq = d["base_sequence"]
        last_seq = -1 if base_seq < 0 else (base_seq + d["last_offset"] - d["base_offset"]) % (_INT32_MAX + 1)
        head = (f"baseOffset: {d['base_offset']} lastOffset: {d['last_offset']} count: {d['record_count']} "
                f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {d['producer_id']} "
                f"producerEpoch: {d['producer_epoch']} partitionLeaderEpoch: {d['partition_leader_epoch']} "
                f"isTransactional: {_java_bool(d['transactional'])} isControl: {_java_bool(d['control'])} "
                f"deleteHorizonMs: {_optional_long(d.get('delete_horizon_ms'))}")
    else:
        head = f"offset: {d['last_offset']}"
    ts_type = _TIMESTAMP_TYPES.get(d["timestamp_type"], "NoTimestampType")
    return (f"{head} position: {d['position']} {ts_type}: {d['max_timestamp']} size: {d['size']} "
            f"magic: {d['magic']} compresscodec: {d['compression']} crc: {d['crc']} "
            f"isvalid: {_java_bool(d['crc_valid'])}")

def _dump_log_record(d: dict[str, Any], batch: dict[str, Any] | None, payload: bool, skip_metadata: bool) -> str:
    """A record line of kafka-dump-log's ``--deep-iteration`` (``dumpBatchRecords``): ``printRecordMetadata`` unless
    ``skip_metadata``, then with ``payload`` (``--print-data-log``) key and payload as UTF-8 strings (its
    StringDecoder); a control record's contents are never printed. With ``--key-decoder``/``--value-decoder``, what
    the decoder read, as ``--key-decoder-class``/``--value-decoder-class`` print their ``Decoder.fromBytes`` (a string
    as it is, anything else as compact JSON); a payload that does not decode stays StringDecoder's text."""
    def utf8(v: str) -> str:  # StringDecoder's text, made printable (Kafka prints an ESC or a CR as it is)
        return printable(base64.b64decode(v).decode("utf-8", "replace"))

    def shown(side: str) -> str:
        if f"{side}_decoded" not in d or f"{side}_decode_error" in d:
            return utf8(d[side])
        from ...payloads.decoded import compact  # here: see kafkatool.cli.output.text._compacted

        v = d[f"{side}_decoded"]
        return printable(v if isinstance(v, str) else compact(v))

    line = "" if skip_metadata else _record_metadata(d, batch)
    if payload and "control_type" not in d:
        prefix = "| " if skip_metadata else " "
        if d.get("key") is not None:
            line += f"{prefix}key: {shown('key')}"
            prefix = " "
        if d.get("value") is not None:
            line += f"{prefix}payload: {shown('value')}"
    return line

def _record_metadata(d: dict[str, Any], batch: dict[str, Any] | None) -> str:
    """``printRecordMetadata``: offset, timestamp, sizes; a v2 record's sequence and header keys; a v0/v1 message's
    validity and checksum (known here for an uncompressed one: it is its own batch); a control record's contents."""
    def size(v: str | None) -> int:
        return -1 if v is None else len(base64.b64decode(v))

    ts_type = _TIMESTAMP_TYPES.get(batch["timestamp_type"], "NoTimestampType") if batch else "CreateTime"
    line = (f"| offset: {d['offset']} {ts_type}: {d['timestamp']} keySize: {size(d.get('key'))} "
            f"valueSize: {size(d.get('value'))}")
    if batch is not None and batch["magic"] >= 2:
        base_seq = batch["base_sequence"]
        seq = -1 if base_seq < 0 else (base_seq + d["offset"] - batch["base_offset"]) % (_INT32_MAX + 1)
        line += f" sequence: {seq} headerKeys: [{','.join(printable(k) for k, _v in d['headers'])}]"
    elif batch is not None and batch["compression"] == "none":
        line += f" isValid: {_java_bool(batch['crc_valid'])} crc: {batch['crc']}"
    if "control_type" in d:
        line += control_record(d)
    return line

def control_record(d: dict[str, Any]) -> str:
    """``printControlRecord``: an end-transaction marker's type and coordinator epoch; a KRaft control record as
    its ``*JsonConverter`` writes it, at the version its value declares (``ControlRecordUtils`` reads it at version
    0); any other type, or a value that does not read, as ``controlType: <type>(<id>)``."""
    ctype = d["control_type"]
    if ctype in ("COMMIT", "ABORT"):
        return f" endTxnMarker: {ctype} coordinatorEpoch: {d.get('coordinator_epoch')}"
    value = base64.b64decode(d["value"]) if d.get("value") is not None else None
    json = None
    if value is not None and ctype in _CONTROL_JSON:
        from ...formats.control import CONTROL_VALUES  # here: a segment of data batches never needs Construct

        try:
            json = _CONTROL_JSON[ctype](CONTROL_VALUES[ctype].parse(value))
        except Exception:  # noqa: BLE001 - a value that does not read (Construct's errors vary): Kafka would throw
            json = None
    if json is not None:
        return f" {_CONTROL_NAMES[ctype]}{printable(json)}"
    key = base64.b64decode(d["key"]) if d.get("key") is not None else b""
    type_id = int.from_bytes(key[2:4], "big", signed=True) if len(key) >= 4 else -1
    return f" controlType: {ctype}({type_id})"


# -- the KRaft control records' JSON (the generated *JsonConverter.write, as Jackson's ObjectNode.toString writes it)
_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}

def _jstr(s: str) -> str:
    """A JSON string as Jackson writes it: the short escapes, other C0 controls as ``\\u00XX`` (upper-case hex),
    everything else as it is."""
    return '"' + "".join(_JSON_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c < " " else c) for c in s) + '"'

def _jobj(fields: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'"{k}":{v}' for k, v in fields) + "}"

def _jarr(items: list[str]) -> str:
    return "[" + ",".join(items) + "]"

def _entries(array: Any) -> list[Any]:
    return [] if array.entries is None else list(array.entries)

def _kafka_uuid(raw: bytes) -> str:
    """``Uuid.toString``: URL-safe base64 without padding."""
    return _jstr(base64.urlsafe_b64encode(raw).decode().rstrip("="))

def _supported(version: int, highest: int) -> None:
    if not 0 <= version <= highest:  # the converter's UnsupportedVersionException
        raise ValueError(f"version {version}")

def _leader_change(m: Any) -> str:
    """``LeaderChangeMessageJsonConverter`` (versions 0-1; 1 adds each voter's directory id, read as its default at
    version 0: ``Uuid.ZERO_UUID``)."""
    _supported(m.version, 1)
    def voters(array: Any) -> str:
        return _jarr([_jobj([("voterId", str(v.voter_id))]
                            + ([("voterDirectoryId", _kafka_uuid(bytes(16)))] if m.version >= 1 else []))
                      for v in _entries(array)])
    return _jobj([("version", str(m.version)), ("leaderId", str(m.leader_id)), ("voters", voters(m.voters)),
                  ("grantingVoters", voters(m.granting_voters))])

def _snapshot_header(m: Any) -> str:
    _supported(m.version, 0)
    return _jobj([("version", str(m.version)), ("lastContainedLogTimestamp", str(m.last_contained_log_timestamp))])

def _snapshot_footer(m: Any) -> str:
    _supported(m.version, 0)
    return _jobj([("version", str(m.version))])

def _kraft_version(m: Any) -> str:
    _supported(m.version, 0)
    return _jobj([("version", str(m.version)), ("kRaftVersion", str(m.kraft_version))])

def _voters(m: Any) -> str:
    _supported(m.version, 0)
    return _jobj([("version", str(m.version)), ("voters", _jarr([_jobj([
        ("voterId", str(v.voter_id)), ("voterDirectoryId", _kafka_uuid(v.voter_directory_id)),
        ("endpoints", _jarr([_jobj([("name", _jstr(e.name.value)), ("host", _jstr(e.host.value)),
                                    ("port", str(e.port))]) for e in _entries(v.endpoints)])),
        ("kRaftVersionFeature", _jobj([("minSupportedVersion", str(v.kraft_version_feature.min_supported_version)),
                                       ("maxSupportedVersion", str(v.kraft_version_feature.max_supported_version))])),
    ]) for v in _entries(m.voters)]))])

_CONTROL_JSON = {"LEADER_CHANGE": _leader_change, "SNAPSHOT_HEADER": _snapshot_header,
                 "SNAPSHOT_FOOTER": _snapshot_footer, "KRAFT_VERSION": _kraft_version, "KRAFT_VOTERS": _voters}
_CONTROL_NAMES = {"LEADER_CHANGE": "LeaderChange: ", "SNAPSHOT_HEADER": "SnapshotHeader ",
                  "SNAPSHOT_FOOTER": "SnapshotFooter ", "KRAFT_VERSION": "KRaftVersion ",
                  "KRAFT_VOTERS": "KRaftVoters "}


def _dump_producer(d: dict[str, Any]) -> str:
    """``dumpProducerIdSnapshot``: one ``ProducerStateEntry`` as ``readSnapshot`` makes it (no transaction: an empty
    ``OptionalLong``; no batch metadata when its last offset is negative; the first sequence by
    ``DefaultRecordBatch.decrementSequence``)."""
    txn_first = d["current_txn_first_offset"]
    line = (f"producerId: {d['producer_id']} producerEpoch: {d['producer_epoch']} "
            f"coordinatorEpoch: {d['coordinator_epoch']} "
            f"currentTxnFirstOffset: {_optional_long(txn_first if txn_first >= 0 else None)} "
            f"lastTimestamp: {d['timestamp']}")
    if d["last_offset"] >= 0:
        last_seq, delta = d["last_sequence"], d["offset_delta"]
        first_seq = _INT32_MAX - (delta - last_seq) + 1 if last_seq < delta else last_seq - delta
        line += (f" firstSequence: {first_seq} lastSequence: {last_seq} lastOffset: {d['last_offset']} "
                 f"offsetDelta: {delta} timestamp: {d['timestamp']}")
    return line
