"""``dump --format dump-log``: the text kafka-dump-log.sh prints (``DumpLogSegments``), so runbooks and greps written
for it carry over.

Every Kafka-written segment of ``kafka/logdir`` is dumped in that format, parsed back, and compared field by field
with the golden JSONL Kafka's own classes made of the same file. Then the whole text of every corpus file
DumpLogSegments reads (segments, KRaft snapshots, offset, time and transaction indexes, producer snapshots) that has
a golden is compared line for line with DumpLogSegments' text rebuilt from the golden's values, in each of its
record forms; KRaft control records no corpus file holds are built here.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.cli.output.terminal import printable

from .conftest import corpus_root, golden_files

LOGDIR = corpus_root() / "kafka" / "logdir"
SEGMENTS = sorted(LOGDIR.glob("*/*.log"))
TS = {"create": "CreateTime", "log_append": "LogAppendTime"}
PAIR = re.compile(r"(\w+): (\S+)")


def fields(line: str) -> dict[str, str]:
    meta = re.split(r" (?:key|payload): ", line)[0]
    return dict(PAIR.findall(meta))


def golden(segment: Path) -> list[dict]:
    path = corpus_root() / "expected" / segment.relative_to(corpus_root()).with_suffix(".log.jsonl")
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("segment", SEGMENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_dump_log_lines_carry_the_goldens_fields(segment: Path, run_cli) -> None:
    p = run_cli("dump", "-f", "dump-log", "--records", segment)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == f"Dumping {segment}" and lines[1] == f"Log starting offset: {int(segment.stem)}"
    batches = [fields(x) for x in lines if x.startswith("baseOffset: ")]
    records = [x for x in lines if x.startswith("| offset: ")]
    want_batches = [g for g in golden(segment) if g["type"] == "batch"]
    want_records = [g for g in golden(segment) if g["type"] == "record"]
    assert len(batches) == len(want_batches) and len(records) == len(want_records)
    for got, g in zip(batches, want_batches, strict=True):
        last_seq = -1 if g["base_sequence"] < 0 else g["base_sequence"] + g["last_offset"] - g["base_offset"]
        assert got == {
            "baseOffset": str(g["base_offset"]), "lastOffset": str(g["last_offset"]), "count": str(g["record_count"]),
            "baseSequence": str(g["base_sequence"]), "lastSequence": str(last_seq),
            "producerId": str(g["producer_id"]), "producerEpoch": str(g["producer_epoch"]),
            "partitionLeaderEpoch": str(g["partition_leader_epoch"]),
            "isTransactional": str(g["transactional"]).lower(), "isControl": str(g["control"]).lower(),
            "deleteHorizonMs": "OptionalLong.empty" if g.get("delete_horizon_ms") is None
            else f"OptionalLong[{g['delete_horizon_ms']}]",
            "position": str(g["position"]), TS[g["timestamp_type"]]: str(g["max_timestamp"]), "size": str(g["size"]),
            "magic": str(g["magic"]), "compresscodec": g["compression"], "crc": str(g["crc"]),
            "isvalid": str(g["crc_valid"]).lower()}
    for line, g in zip(records, want_records, strict=True):
        got = fields(line)
        assert got["offset"] == str(g["offset"])
        assert got.get("CreateTime", got.get("LogAppendTime")) == str(g["timestamp"])
        assert got["keySize"] == str(-1 if g["key"] is None else len(base64.b64decode(g["key"])))
        assert got["valueSize"] == str(-1 if g["value"] is None else len(base64.b64decode(g["value"])))
        assert got["headerKeys"] == "[" + ",".join(k for k, _v in g["headers"]) + "]"
        if "control_type" in g:
            assert f"endTxnMarker: {g['control_type']}" in line or f"controlType: {g['control_type']}" in line
        elif g["value"] is not None:
            # kafka-dump-log prints a control character as it is (headers-0's \x00\x01\x02 at offsets 4 and 9); we
            # show it escaped
            assert line.endswith(" payload: " + printable(base64.b64decode(g["value"]).decode("utf-8", "replace")))


def test_damage_goes_to_stderr_and_the_trailing_bytes_line_is_kafkas(tmp_path: Path, run_cli) -> None:
    torn = corpus_root() / "kafka/recovery/torn-tail/before/rtopic-0/00000000000000000259.log"
    p = run_cli("dump", "-f", "dump-log", torn)
    assert p.returncode == 1
    assert p.stdout.splitlines()[-1] == f"Found 39 invalid bytes at the end of {torn.name}"
    assert "ERROR torn-tail @ 846" in p.stderr and "ERROR" not in p.stdout


# -- kafka-dump-log's text rebuilt from the goldens' values ------------------------------------------------------
# Each rebuilder below follows DumpLogSegments (Kafka 4.2, tools/src/main/java/org/apache/kafka/tools/
# DumpLogSegments.java at apache/kafka 04b05179) line for line, from the values Kafka's own classes read into the
# goldens, never through kafkatool's renderer. Where DumpLogSegments throws (a framing error, an index slot past its
# segment), its stdout stops there: kafkatool goes on (with a finding on stderr), so its text must begin with
# Kafka's. kafka-dump-log writes a key's, payload's or name's control characters raw; kafkatool escapes every
# character a terminal could act on by its one rule (docs/output.md#terminals): Kafka's text is compared through it.

INT32_MAX = 2**31 - 1
TS_NAMES = {"create": "CreateTime", "log_append": "LogAppendTime", "none": "NoTimestampType"}
CONTROL_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}  # ControlRecordType.fromTypeId; any other id: UNKNOWN
FORMS = {"print-data-log": ("--records",), "deep-iteration": ("--deep-iteration",),
         "skip-record-metadata": ("--records", "--skip-record-metadata"), "shallow": ()}


class KafkaThrows(Exception):
    """DumpLogSegments would die here: its stdout ends with the lines before."""


# What DumpLogSegments prints of a v0/v1 message inside a compressed wrapper: its own validity and CRC, which no
# golden holds (nor kafkatool's records): the texts are compared without it.
INNER_CRC = " isValid: <inner message> crc: <inner message>"


def jbool(v: bool) -> str:
    return "true" if v else "false"


def increment_sequence(seq: int, inc: int) -> int:  # DefaultRecordBatch.incrementSequence
    return inc - (INT32_MAX - seq) - 1 if seq > INT32_MAX - inc else seq + inc


def decrement_sequence(seq: int, dec: int) -> int:  # DefaultRecordBatch.decrementSequence
    return INT32_MAX - (dec - seq) + 1 if seq < dec else seq - dec


def optional_long(v: int | None) -> str:
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


class Reader:
    """Kafka's ``Readable`` over a control record's value (ByteBufferAccessor: big-endian, unsigned varints)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def tagged(self) -> None:  # unknown tagged fields: skipped (kept in _unknownTaggedFields, never in the JSON)
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()

    def array(self, element) -> list:
        return [element() for _ in range(self.uvarint() - 1)]

    def string(self) -> str:
        n = self.uvarint() - 1
        self.pos += n
        return self.data[self.pos - n:self.pos].decode("utf-8", "replace")


def control_json(type_id: int, value: bytes) -> str:
    """``printControlRecord``'s text of a KRaft control record: ``ControlRecordUtils.deserialize*`` reads the value at
    version 0, the generated ``*JsonConverter.write`` writes it at the version its Version field holds."""
    r = Reader(value)
    out: dict = {"version": r.take(">h")}
    if type_id == 2:  # LeaderChangeMessage (versions 0-1; 1 adds VoterDirectoryId, its default at read version 0)
        def voter() -> dict:
            v = {"voterId": r.take(">i")}
            r.tagged()
            return {**v, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"} if out["version"] >= 1 else v
        out["leaderId"] = r.take(">i")
        out["voters"] = r.array(voter)
        out["grantingVoters"] = r.array(voter)
        return "LeaderChange: " + json.dumps(out, separators=(",", ":"))
    if type_id == 3:
        out["lastContainedLogTimestamp"] = r.take(">q")
        return "SnapshotHeader " + json.dumps(out, separators=(",", ":"))
    if type_id == 4:
        return "SnapshotFooter " + json.dumps(out, separators=(",", ":"))
    if type_id == 5:
        out["kRaftVersion"] = r.take(">h")
        return "KRaftVersion " + json.dumps(out, separators=(",", ":"))
    assert type_id == 6

    def voter_with_endpoints() -> dict:
        v: dict = {"voterId": r.take(">i")}
        v["voterDirectoryId"] = base64.urlsafe_b64encode(r.data[r.pos:r.pos + 16]).decode().rstrip("=")
        r.pos += 16

        def endpoint() -> dict:
            e = {"name": r.string(), "host": r.string(), "port": r.take(">H")}
            r.tagged()
            return e
        v["endpoints"] = r.array(endpoint)
        v["kRaftVersionFeature"] = {"minSupportedVersion": r.take(">h"), "maxSupportedVersion": r.take(">h")}
        r.tagged()
        r.tagged()
        return v
    out["voters"] = r.array(voter_with_endpoints)
    return "KRaftVoters " + json.dumps(out, separators=(",", ":"), ensure_ascii=False)


def kafka_dump_log(path: Path, golden: list[dict], form: str) -> Iterator[str]:
    """``dumpLog`` of a segment or KRaft snapshot, in one of kafka-dump-log's forms (``FORMS``)."""
    deep, data = form != "shallow", form in ("print-data-log", "skip-record-metadata")
    skip = form == "skip-record-metadata"
    name = path.name
    yield f"Dumping {path}"
    if name.endswith(".log"):
        yield (f"Log starting offset: {int(name.split('.')[0])}")
    elif name == "bootstrap.checkpoint":
        yield ("KRaft bootstrap snapshot")
    else:  # Snapshots.parse: a 20-digit end offset, a 10-digit epoch
        yield (f"Snapshot end offset: {int(name[:20])}, epoch: {int(name[21:31])}")
    valid_bytes, batch = 0, None
    for g in golden:
        if g["type"] == "batch":
            batch = g
            if g["magic"] >= 2:
                base_seq = g["base_sequence"]
                head = (f"baseOffset: {g['base_offset']} lastOffset: {g['last_offset']} count: {g['record_count']} "
                        f"baseSequence: {base_seq} lastSequence: "
                        f"{-1 if base_seq == -1 else increment_sequence(base_seq, g['last_offset'] - g['base_offset'])}"
                        f" producerId: {g['producer_id']} producerEpoch: {g['producer_epoch']} "
                        f"partitionLeaderEpoch: {g['partition_leader_epoch']} "
                        f"isTransactional: {jbool(g['transactional'])} isControl: {jbool(g['control'])} "
                        f"deleteHorizonMs: {optional_long(g.get('delete_horizon_ms'))}")
            else:
                head = f"offset: {g['last_offset']}"
            yield (f"{head} position: {valid_bytes} {TS_NAMES[g['timestamp_type']]}: {g['max_timestamp']} "
                         f"size: {g['size']} magic: {g['magic']} compresscodec: {g['compression']} crc: {g['crc']} "
                         f"isvalid: {jbool(g['crc_valid'])}")
            valid_bytes += g["size"]
        elif g["type"] == "record" and deep:
            assert batch is not None
            key = None if g["key"] is None else base64.b64decode(g["key"])
            value = None if g["value"] is None else base64.b64decode(g["value"])
            line = ""
            if not skip:  # printRecordMetadata
                line = (f"| offset: {g['offset']} {TS_NAMES[batch['timestamp_type']]}: {g['timestamp']} "
                        f"keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)}")
                if batch["magic"] >= 2:
                    seq = -1 if batch["base_sequence"] == -1 else \
                        increment_sequence(batch["base_sequence"], g["offset"] - batch["base_offset"])
                    line += f" sequence: {seq} headerKeys: [{','.join(k for k, _v in g['headers'])}]"
                elif batch["compression"] == "none":  # the message is its own batch: its CRC is the batch's
                    line += f" isValid: {jbool(batch['crc_valid'])} crc: {batch['crc']}"
                else:
                    line += INNER_CRC
                if batch["magic"] >= 2 and batch["control"]:  # printControlRecord
                    version, type_id = struct.unpack_from(">hh", key)
                    if type_id in (0, 1):  # EndTransactionMarker: int16 version, int32 coordinator epoch
                        line += f" endTxnMarker: {CONTROL_NAMES[type_id]} coordinatorEpoch: " \
                                f"{struct.unpack_from('>i', value, 2)[0]}"
                    elif type_id in CONTROL_NAMES:
                        line += " " + control_json(type_id, value)
                    else:
                        line += f" controlType: UNKNOWN({type_id})"
            if data and not (batch["magic"] >= 2 and batch["control"]):  # printRecordContents, StringDecoder
                prefix = "| " if skip else " "
                if key is not None:
                    line += f"{prefix}key: {key.decode('utf-8', 'replace')}"
                    prefix = " "
                if value is not None:
                    line += f"{prefix}payload: {value.decode('utf-8', 'replace')}"
            yield (line)
        elif g["type"] == "trailing":
            yield (f"Found {g['bytes']} invalid bytes at the end of {name}")
        elif g["type"] == "error" and (deep or "InvalidRecordException" not in g["message"]):
            # a framing error stops the batch iteration; a record's, only a deep one
            raise KafkaThrows(g["message"])


MISSING_SEGMENT = "FileRecords.open of a segment the corpus does not hold"


def next_batch_reads(log: Path, position: int, limit: int) -> None:
    """``FileRecords.slice(position, limit).batches().iterator().next()`` (FileLogInputStream.nextBatch) throws or
    finds no batch: DumpLogSegments dies."""
    size = log.stat().st_size
    if position < 0 or position > size:
        raise KafkaThrows(f"slice at {position} of a {size}-byte segment")
    end = min(position + limit, size)
    if position >= end - 17:
        raise KafkaThrows(f"no batch at {position}")
    with log.open("rb") as f:
        f.seek(position)
        _offset, batch_size = struct.unpack(">qi", f.read(12))
    if batch_size < 14 or position > end - 12 - batch_size:
        raise KafkaThrows(f"no whole batch at {position}")


def kafka_dump_index(path: Path, golden: list[dict], segment: bool = True) -> Iterator[str]:
    """``dumpIndex``: every slot up to the first zero one after the first (the golden's entries; an index whose every
    slot is zero: its first), each after its segment's batch at that position was read (5 MiB, its
    max-message-size). Without ``segment``, what it prints beside a segment the corpus does not hold."""
    yield f"Dumping {path}"
    base = int(path.name.split(".")[0])
    log = path.with_name(path.name.split(".")[0] + ".log")
    if segment and not log.exists():
        raise KafkaThrows(MISSING_SEGMENT)
    if path.stat().st_size // 8 == 0:
        yield f"{path} is empty."
        return
    entries = [(g["offset"], g["position"]) for g in golden if g["type"] == "index_entry"] or [(base, 0)]
    for offset, position in entries:
        if segment:
            next_batch_reads(log, position, 5 * 1024 * 1024)
        yield (f"offset: {offset} position: {position}")


def kafka_dump_time_index(path: Path, golden: list[dict], segment: bool = True) -> Iterator[str]:
    """``dumpTimeIndex``: every slot up to the first zero one after the first (an index whose every slot is zero:
    its first); its checks against the segment go to stderr. Without ``segment``, as ``kafka_dump_index``."""
    yield f"Dumping {path}"
    base = int(path.name.split(".")[0])
    if segment and not path.with_name(path.name.split(".")[0] + ".log").exists():
        raise KafkaThrows(MISSING_SEGMENT)
    entries = [(g["timestamp"], g["offset"]) for g in golden if g["type"] == "time_index_entry"]
    if not entries and path.stat().st_size // 12:
        entries = [(0, base)]
    yield from (f"timestamp: {ts} offset: {offset}" for ts, offset in entries)


def kafka_dump_txn_index(path: Path, golden: list[dict]) -> Iterator[str]:
    """``dumpTxnIndex``: each ``AbortedTxn``."""
    yield f"Dumping {path}"
    for g in golden:
        if g["type"] == "error":
            raise KafkaThrows(g["message"])
        yield (f"version: {g['version']} producerId: {g['producer_id']} firstOffset: {g['first_offset']} "
                     f"lastOffset: {g['last_offset']} lastStableOffset: {g['last_stable_offset']}")


def kafka_dump_producer_snapshot(path: Path, golden: list[dict]) -> Iterator[str]:
    """``dumpProducerIdSnapshot``: each ``ProducerStateEntry`` ``readSnapshot`` makes; nothing of a snapshot it
    refuses (CorruptSnapshotException: an unknown version, a CRC that does not match), whose message goes to
    stderr."""
    yield f"Dumping {path}"
    header = next((g for g in golden if g["type"] == "producer_snapshot"), None)
    if header is None or not header["crc_valid"] or header["version"] != 1:
        return
    for g in golden:
        if g["type"] != "producer":
            continue
        txn = g["current_txn_first_offset"]
        line = (f"producerId: {g['producer_id']} producerEpoch: {g['producer_epoch']} "
                f"coordinatorEpoch: {g['coordinator_epoch']} currentTxnFirstOffset: "
                f"{optional_long(txn if txn >= 0 else None)} lastTimestamp: {g['timestamp']}")
        if g["last_offset"] >= 0:  # its BatchMetadata
            line += (f" firstSequence: {decrement_sequence(g['last_sequence'], g['offset_delta'])} "
                     f"lastSequence: {g['last_sequence']} lastOffset: {g['last_offset']} "
                     f"offsetDelta: {g['offset_delta']} timestamp: {g['timestamp']}")
        yield (line)


KINDS = {".log": kafka_dump_log, ".checkpoint": kafka_dump_log, ".index": kafka_dump_index,
         ".timeindex": kafka_dump_time_index, ".txnindex": kafka_dump_txn_index,
         ".snapshot": kafka_dump_producer_snapshot}
CASES = [(".log", form) for form in FORMS] + [(".checkpoint", form) for form in FORMS] + \
    [(kind, "") for kind in (".index", ".timeindex", ".txnindex", ".snapshot")]


def kafka_files(suffix: str) -> list[tuple[Path, list[dict]]]:
    """Every corpus file DumpLogSegments reads by this suffix (KRaft snapshots: not the text checkpoints, whose
    names have no dot) that has a golden."""
    out = []
    for src, golden in golden_files((suffix,)):
        if src.suffix == suffix and src.exists():
            out.append((src, [json.loads(x) for x in golden.read_text().splitlines() if x.strip()]))
    return out


def split_by_file(stdout: str, paths: list[Path]) -> dict[Path, list[str]]:
    """One run's stdout, by the ``Dumping <file>`` line that starts each file's text."""
    heads = {f"Dumping {p}": p for p in paths}
    texts: dict[Path, list[str]] = {}
    current: list[str] = []
    for line in stdout.split("\n")[:-1]:
        if line in heads:
            current = texts.setdefault(heads[line], [])
        current.append(line)
    return texts


@pytest.mark.parametrize(("suffix", "form"), CASES, ids=[f"{s[1:]}{'-' + f if f else ''}" for s, f in CASES])
def test_dump_log_is_kafkas_text_rebuilt_from_the_goldens(suffix: str, form: str, run_cli) -> None:
    files = kafka_files(suffix)
    assert files
    p = run_cli("dump", "-f", "dump-log", *FORMS.get(form, ()), *(f for f, _g in files))
    assert p.returncode in (0, 1), p.stderr
    got = split_by_file(p.stdout, [f for f, _g in files])
    equal, cut, missing, inner, differ = [], [], [], [], []
    for path, golden in files:
        want: list[str] = []
        try:
            want.extend(KINDS[suffix](path, golden, *([form] if form else [])))
            bucket = equal
        except KafkaThrows as e:  # Kafka's text up to where it throws, then kafkatool's goes on
            bucket = cut
            if str(e) == MISSING_SEGMENT:  # and the rest as Kafka prints it beside its segment
                want, bucket = list(KINDS[suffix](path, golden, False)), missing
        if any(INNER_CRC in x for x in want):
            want, bucket = [x.replace(INNER_CRC, "") for x in want], inner
        want = [printable(x) for x in want]
        mine = got.get(path, [])
        if mine == want or (bucket is cut and mine[:len(want)] == want):
            bucket.append(path)
        else:
            differ.append((path, next(((i, w, m) for i, (w, m) in enumerate(zip(want, mine, strict=False))
                                       if w != m), (len(want), len(mine)))))
    print(f"{suffix} {form}: {len(files)} files, {len(equal)} equal, {len(cut)} equal up to where Kafka throws, "
          f"{len(missing)} equal to Kafka's beside a segment the corpus lacks, {len(inner)} equal but for a "
          f"compressed v0/v1 message's CRC, {len(differ)} different")
    assert not differ, differ[:3]
    assert len(equal) + len(cut) + len(missing) + len(inner) == len(files)



def test_kraft_control_records_print_as_their_json_converters_write_them(tmp_path: Path, run_cli) -> None:
    """KRaftVersion and KRaftVoters records (KIP-853), which no corpus file holds, a LeaderChange written at version
    1 and a control type Kafka does not define, built here: ``printControlRecord``'s text for each, the JSON as
    Jackson writes it (a control character of a host as ``\\u001B``, upper-case hex)."""
    def control(offset: int, type_id: int, value: bytes) -> bytes:
        return record_batch(offset, [RecordSpec(struct.pack(">hh", 0, type_id), value, 1_700_000_000_000 + offset)],
                            control=True)

    directory_id = bytes(range(16))
    voters = (struct.pack(">h", 0) + b"\x02" + struct.pack(">i", 3) + directory_id + b"\x02"  # one voter, one endpoint
              + b"\x0bCONTROLLER" + b"\x07ctl\x1b-3" + struct.pack(">H", 9093) + b"\x00"
              + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00" + b"\x00")
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(control(0, 5, struct.pack(">hh", 0, 1) + b"\x00") + control(1, 6, voters)
                        + control(2, 2, struct.pack(">hi", 1, 3) + b"\x02" + struct.pack(">i", 3) + b"\x00"
                                  + b"\x01" + b"\x00")
                        + control(3, 9, b""))
    p = run_cli("dump", "-f", "dump-log", "--deep-iteration", segment)
    assert p.returncode in (0, 1), p.stderr
    records = [x.split(" headerKeys: [] ", 1)[1] for x in p.stdout.splitlines() if x.startswith("| offset: ")]
    assert records == [
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":3,"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw",'
        '"endpoints":[{"name":"CONTROLLER","host":"ctl\\u001B-3","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
        'LeaderChange: {"version":1,"leaderId":3,"voters":[{"voterId":3,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"}],'
        '"grantingVoters":[]}',
        "controlType: UNKNOWN(9)",
    ]
    assert records[:3] == [control_json(t, v).replace("\\u001b", "\\u001B") for t, v in (
        (5, struct.pack(">hh", 0, 1) + b"\x00"), (6, voters),
        (2, struct.pack(">hi", 1, 3) + b"\x02" + struct.pack(">i", 3) + b"\x00" + b"\x01" + b"\x00"))]


def test_record_forms_without_payload_or_metadata(run_cli) -> None:
    """``--deep-iteration`` alone: the metadata of each record and no key or payload; ``--skip-record-metadata``: the
    key and payload after ``| ``, a control record's line empty; both only for ``--format dump-log``."""
    segment = LOGDIR / "txn-0" / "00000000000000000000.log"
    deep = run_cli("dump", "-f", "dump-log", "--deep-iteration", segment).stdout.splitlines()
    full = run_cli("dump", "-f", "dump-log", "--records", segment).stdout.splitlines()
    skip = run_cli("dump", "-f", "dump-log", "--records", "--skip-record-metadata", segment).stdout.splitlines()
    assert len(deep) == len(full) == len(skip)
    for d, f, s in zip(deep, full, skip, strict=True):
        if not f.startswith("| offset: "):
            assert d == f == s
        elif "endTxnMarker: " in f:
            assert d == f and s == ""
        else:
            assert f.startswith(d + " key: ") and f == d + " " + s[2:] and s.startswith("| key: ")
    p = run_cli("dump", "--deep-iteration", segment)
    assert p.returncode == 2 and "--deep-iteration is for --format dump-log" in p.stderr
