"""``dump --decode share-group-state``: the records of ``__share_group_state`` (KIP-932), read as
``kafka-dump-log.sh --share-group-state-decoder`` reads them (``DumpLogSegments.ShareGroupStateMessageParser`` over
``ShareCoordinatorRecordSerde``).

The corpus holds no ``__share_group_state`` partition, so the records here are encoded per Kafka's schemas
(``share-coordinator/src/main/resources/common/message/ShareSnapshotKey.json``, ``ShareUpdateKey.json``,
``ShareSnapshotValue.json`` and ``ShareUpdateValue.json``, value version 0) and written with the project's writer.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from construct import Int32sb

from kafkatool.build import RecordSpec, record_batch
from kafkatool.formats import internal_topics as it
from kafkatool.internal import decode
from kafkatool.logwriter import LogDirWriter

from .conftest import PROJECT_ROOT

INCIDENT = PROJECT_ROOT / "fixtures" / "incident"
TOPIC_ID = base64.urlsafe_b64decode("Uj5wn_FqTXirEASvVZRY1w==")
NO_TAGS = {"count": 0, "fields": []}


def _s(v: str) -> dict:
    return {"length": len(v.encode()), "value": v}


def _batches(*spans: tuple[int, int, int, int]) -> dict:
    return {"count": len(spans), "entries": [{"first_offset": f, "last_offset": last, "delivery_state": s,
                                              "delivery_count": c, "tagged_fields": NO_TAGS}
                                             for f, last, s, c in spans]}


def _key(rtype: int, group: str = "gs1", partition: int = 0) -> bytes:
    return it.ShareStateKey.build({"record_type": rtype, "group_id": _s(group), "topic_id": TOPIC_ID,
                                   "partition": partition})


# Kafka's own DumpLogSegmentsTest.testShareGroupStateMessageParser case (group gs1, topic Uj5wn_FqTXirEASvVZRY1w,
# partition 0; snapshot epoch, state epoch, leader epoch, start offset 0; one batch 0..4 Acked, delivered once),
# its timestamps fixed at 1 and 2, typed out field by field from ShareSnapshotKey.json v0 / ShareSnapshotValue.json
# v0 as Kafka 4.1 defines them.
SNAPSHOT_KEY = bytes.fromhex(
    "0000"                                # record type 0: ShareSnapshot (CoordinatorRecordType)
    "0003" "677331"                       # GroupId: string (int16 length) "gs1"
    "523e709ff16a4d78ab1004af559458d7"    # TopicId: uuid Uj5wn_FqTXirEASvVZRY1w
    "00000000")                           # Partition: int32 0
SNAPSHOT_VALUE = bytes.fromhex(
    "0000"                                # value version 0
    "00000000"                            # SnapshotEpoch: int32
    "00000000"                            # StateEpoch: int32
    "00000000"                            # LeaderEpoch: int32
    "0000000000000000"                    # StartOffset: int64
    "0000000000000001"                    # CreateTimestamp: int64
    "0000000000000002"                    # WriteTimestamp: int64
    "02"                                  # StateBatches: compact array, uvarint 1 + 1
    "0000000000000000" "0000000000000004"  # FirstOffset 0, LastOffset 4
    "02" "0001"                           # DeliveryState 2 (Acked), DeliveryCount 1
    "00"                                  # the batch's tagged fields: none
    "00")                                 # the value's tagged fields: none


def test_kafkas_own_snapshot_case_byte_for_byte() -> None:
    """``ShareSnapshotKey``/``ShareSnapshotValue`` (share-coordinator/src/main/resources/common/message/, value
    version 0, Kafka 4.1): the bytes typed from the schema decode to the fields Kafka's dump-log test expects, and the
    declarations build the same bytes back."""
    assert _key(it.SHARE_SNAPSHOT) == SNAPSHOT_KEY
    built = it.share_state_value(it.SHARE_SNAPSHOT).build({
        "version": 0, "snapshot_epoch": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
        "create_timestamp": 1, "write_timestamp": 2, "state_batches": _batches((0, 4, 2, 1)),
        "tagged_fields": NO_TAGS})
    assert built == SNAPSHOT_VALUE
    fields, error = decode.decode_record("share-group-state", SNAPSHOT_KEY, SNAPSHOT_VALUE)
    assert error is None
    assert fields == {
        "kind": "share_snapshot", "record_type": 0, "group": "gs1", "topic_id": "Uj5wn_FqTXirEASvVZRY1w",
        "partition": 0, "tombstone": False, "value_version": 0, "layout": "4.1+", "snapshot_epoch": 0,
        "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "delivery_complete_count": None,
        "create_timestamp": 1, "write_timestamp": 2,
        "state_batches": [{"first_offset": 0, "last_offset": 4, "delivery_state": "Acked", "delivery_count": 1}],
        # every field by the schemas (formats/schemas/share-coordinator), under Kafka's names
        "record": "ShareSnapshot", "key": {"group_id": "gs1", "topic_id": "Uj5wn_FqTXirEASvVZRY1w", "partition": 0},
        "value": {"snapshot_epoch": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
                  "delivery_complete_count": -1, "create_timestamp": 1, "write_timestamp": 2,
                  "state_batches": [{"first_offset": 0, "last_offset": 4, "delivery_state": 2, "delivery_count": 1}]}}
    # a null value is a tombstone (kafka-dump-log prints <DELETE>)
    assert decode.decode_record("share-group-state", SNAPSHOT_KEY, None)[0]["tombstone"] is True


def test_update_with_delivery_complete_count_and_the_kafka_4_0_layout() -> None:
    """``ShareUpdateValue`` v0 (ShareUpdateValue.json): SnapshotEpoch, LeaderEpoch, StartOffset (-1: not updated),
    StateBatches; KIP-1226 (Kafka 4.2) adds DeliveryCompleteCount as tag 0. Kafka 4.0 (KIP-932 early access) wrote
    SnapshotEpoch as a uint16 and no timestamps in the snapshot: those bytes still decode, saying so."""
    update = bytes.fromhex(
        "0000" "00000007" "00000003" "ffffffffffffffff"          # v0, SnapshotEpoch 7, LeaderEpoch 3, StartOffset -1
        "02" "000000000000000a" "0000000000000013" "00" "0002" "00"  # one batch 10..19 Available, delivered twice
        "01" "00" "04" "0000002a")                                # one tag: 0 (4 bytes) DeliveryCompleteCount 42
    fields, error = decode.decode_record("share-group-state", _key(it.SHARE_UPDATE), update)
    assert error is None and fields["kind"] == "share_update" and fields["layout"] == "4.1+"
    assert (fields["snapshot_epoch"], fields["leader_epoch"], fields["start_offset"],
            fields["delivery_complete_count"]) == (7, 3, -1, 42)
    assert "state_epoch" not in fields and "create_timestamp" not in fields
    assert fields["state_batches"] == [{"first_offset": 10, "last_offset": 19, "delivery_state": "Available",
                                        "delivery_count": 2}]
    old = bytes.fromhex("0000" "0005" "00000001" "00000002" "0000000000000064" "01" "00")  # 4.0: uint16 epoch
    fields, error = decode.decode_record("share-group-state", _key(it.SHARE_SNAPSHOT), old)
    assert error is None and fields["layout"] == "4.0"
    assert (fields["snapshot_epoch"], fields["state_epoch"], fields["leader_epoch"], fields["start_offset"],
            fields["state_batches"]) == (5, 1, 2, 100, [])


@pytest.mark.parametrize("layout", it.SHARE_STATE_LAYOUTS)
@pytest.mark.parametrize("rtype", [it.SHARE_SNAPSHOT, it.SHARE_UPDATE])
def test_round_trip(rtype: int, layout: str) -> None:
    """Values built with each layout's declaration decode to what was built (``ShareCoordinatorRecordSerde``)."""
    body = {"version": 0, "snapshot_epoch": 65535 if layout == "4.0" else 2**31 - 1, "leader_epoch": 9,
            "start_offset": 1 << 40, "state_batches": _batches((1, 2, 0, 0), (3, 3, 4, 32767), (7, 9, 2, 1)),
            "tagged_fields": NO_TAGS}
    if rtype == it.SHARE_SNAPSHOT:
        body["state_epoch"] = 4
        if layout != "4.0":
            body.update(create_timestamp=1_700_000_000_000, write_timestamp=1_700_000_000_001)
    value = it.share_state_value(rtype, layout).build(body)
    fields, error = decode.decode_record("share-group-state", _key(rtype, "g-ü", 17), value)
    assert error is None and fields["layout"] == layout and fields["group"] == "g-ü" and fields["partition"] == 17
    for name in ("snapshot_epoch", "leader_epoch", "start_offset", "state_epoch", "create_timestamp",
                 "write_timestamp"):
        assert fields.get(name) == body.get(name), name
    assert [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in fields["state_batches"]] == [(1, 2, "Available", 0), (3, 3, "Archived", 32767),
                                                  (7, 9, "Acked", 1)]


def test_undecodable_records_say_why() -> None:
    """As ``ShareGroupStateMessageParser`` reports them (missing key, unknown record type, a value that is not the
    key's type), each a reason, never an exception."""
    cases = {
        "no key": (None, SNAPSHOT_VALUE),
        "coordinator-record-newer: __share_group_state record type 32767 is newer": (bytes.fromhex("7fff"), b""),
        "ShareUpdateValue v0": (_key(it.SHARE_UPDATE), SNAPSHOT_VALUE),   # a snapshot's value under an update key
        "ShareSnapshotValue version 3": (SNAPSHOT_KEY, b"\x00\x03" + SNAPSHOT_VALUE[2:]),
        "ShareSnapshotKey": (SNAPSHOT_KEY[:9], SNAPSHOT_VALUE),
        "left over": (SNAPSHOT_KEY + b"\x00", SNAPSHOT_VALUE),
    }
    for why, (key, value) in cases.items():
        fields, error = decode.decode_record("share-group-state", key, value)
        assert fields is None and error and why in error, (why, error)
    for cut in range(len(SNAPSHOT_VALUE)):
        fields, error = decode.decode_record("share-group-state", SNAPSHOT_KEY, SNAPSHOT_VALUE[:cut])
        assert fields is None and error, cut


def test_cli_decodes_a_written_partition_and_auto_picks_it(tmp_path: Path, run_cli) -> None:
    """``dump --decode auto`` picks the share-group state decoder for ``__share_group_state-N`` (its topic name, as
    ``kafka-dump-log --share-group-state-decoder`` is chosen by hand); JSONL carries ``decoded``, text a readable
    line, a record that does not decode its reason; other topics stay undecoded."""
    complete = {"count": 1, "fields": [{"tag": 0, "data": Int32sb.build(3)}]}
    with LogDirWriter(tmp_path / "logdir", cluster_id="q1Sh-9_ISia_zwGINzRvyQ", node_id=1) as logdir:
        w = logdir.partition("__share_group_state", 7, TOPIC_ID)
        w.append(record_batch(0, [RecordSpec(SNAPSHOT_KEY, SNAPSHOT_VALUE, 1000)]))
        update = it.share_state_value(it.SHARE_UPDATE).build({
            "version": 0, "snapshot_epoch": 0, "leader_epoch": 0, "start_offset": 5,
            "state_batches": _batches((5, 6, 4, 3)), "tagged_fields": complete})
        w.append(record_batch(1, [RecordSpec(_key(it.SHARE_UPDATE), update, 2000),
                                  RecordSpec(bytes.fromhex("0009"), b"\x00\x00", 2000),
                                  RecordSpec(SNAPSHOT_KEY, None, 2001)]))
    part = tmp_path / "logdir" / "__share_group_state-7"
    p = run_cli("dump", "-f", "jsonl", "--decode", "auto", part)
    assert p.returncode == 0, p.stderr
    recs = [json.loads(x) for x in p.stdout.splitlines() if json.loads(x)["type"] == "record"]
    assert [r["offset"] for r in recs] == [0, 1, 2, 3]
    assert [r["decoded"] and r["decoded"]["kind"] for r in recs] == ["share_snapshot", "share_update", None,
                                                                     "share_snapshot"]
    assert recs[1]["decoded"]["delivery_complete_count"] == 3
    assert recs[1]["decoded"]["state_batches"] == [{"first_offset": 5, "last_offset": 6,
                                                    "delivery_state": "Archived", "delivery_count": 3}]
    assert recs[2]["decode_error"] == ("coordinator-record-newer: __share_group_state record type 9 (value version 0) "
                                       "is newer than the share-coordinator schemas here (types 0..1)")
    assert recs[3]["decoded"]["tombstone"] is True
    text = run_cli("dump", "--decode", "share-group-state", part).stdout
    assert "kind=share_snapshot" in text and "delivery_state=Acked" in text
    assert "topic_id=Uj5wn_FqTXirEASvVZRY1w" in text
    assert "not decoded: coordinator-record-newer: __share_group_state record type 9" in text
    assert "None" not in text and "True" not in text and "Traceback" not in text


def test_incident_share_group_state(run_cli) -> None:
    """The incident fixture's share group ``audit`` (fixtures/generate.py ``share_group_state``), through auto."""
    p = run_cli("dump", "-f", "jsonl", "--decode", "auto", INCIDENT / "__share_group_state-0")
    recs = [json.loads(x) for x in p.stdout.splitlines() if '"record"' in x]
    assert p.returncode == 0 and all(r.get("decode_error") is None for r in recs)
    assert [(r["decoded"]["kind"], r["decoded"]["group"], r["decoded"]["start_offset"]) for r in recs] == [
        ("share_snapshot", "audit", 0), ("share_update", "audit", -1), ("share_update", "audit", 22),
        ("share_snapshot", "audit", 24)]
