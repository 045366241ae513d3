"""``dump --format dump-log``: the text kafka-dump-log.sh prints (``DumpLogSegments.printBatchLevel`` and its
record lines with ``--deep-iteration --print-data-log``), so runbooks and greps written for it carry over.

Every Kafka-written segment of ``kafka/logdir`` is dumped in that format, parsed back, and compared field by field
with the golden JSONL Kafka's own classes made of the same file.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from kafkatool.cli.output.terminal import printable

from .conftest import corpus_root

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
