"""Internal topics: ``partition-for``, ``offsets`` (__consumer_offsets), ``metadata`` (__cluster_metadata).

Hand-built values are packed here with ``struct`` straight from the Kafka message JSON schemas (independent of
the Construct declarations under test); the corpus goldens give every real record's key/value bytes.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, end_transaction_marker, record_batch
from kafkatool.internal import common, metadata, transactions
from kafkatool.internal import offsets as internal_offsets
from kafkatool.javacompat import java_string_hash
from kafkatool.model import Finding

from .conftest import PROJECT_ROOT, corpus_root

# --- partition-for --------------------------------------------------------------------------------


def _kafka_partition(s: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(n)``: ``(n == Integer.MIN_VALUE) ? 0 : Math.abs(n)``."""
    h = _java_hash(s)
    return (0 if h == -2**31 else abs(h)) % partitions


def _java_hash(s: str) -> int:
    """An independent String.hashCode: code points split into UTF-16 surrogates by hand."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    h = 0
    for u in units:
        h = (h * 31 + u) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


@pytest.mark.parametrize("key", ["", "a", "hello", "authService", "console-consumer-12753", "order-service-0",
                                 "grüße", "日本語グループ", "emoji-\U0001F600-group", "x" * 300])
@pytest.mark.parametrize("partitions", [1, 3, 50, 64])
def test_partition_for_matches_java(key: str, partitions: int) -> None:
    assert java_string_hash(key) == _java_hash(key)
    assert common.partition_for(key, partitions) == _kafka_partition(key, partitions)


def test_partition_for_known_values() -> None:
    assert java_string_hash("hello") == 99162322           # documented Java value
    assert java_string_hash("polygenelubricants") == -2**31  # Integer.MIN_VALUE: abs() would stay negative
    assert common.partition_for("polygenelubricants", 7) == 0    # Utils.abs(MIN_VALUE) is 0
    # a negative hash: Math.abs, not n & 0x7fffffff (which would give 35); a real broker put it in -13
    assert java_string_hash("my-first-app") == -1618955613
    assert common.partition_for("my-first-app", 50) == 13
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # two UTF-16 units, not one code point


def test_partition_for_agrees_with_the_corpus() -> None:
    """Groups found in a real broker's __consumer_offsets-N must hash to N."""
    root = corpus_root() / "real"
    seen: set[str] = set()
    for part in (root / "MashaKosher_Internship/4ec23dc0/data", root / "hiage_kafka-raft/c5f680e5/kafka1",
                 root / "tuyen-nnt_kafka_2.13-3.0.0/data/kafka", root / "iechenyb_data/kafka-logs"):
        for item in internal_offsets.consumer_offsets([part], with_lag=False):
            if isinstance(item, internal_offsets.CommittedOffset | internal_offsets.GroupState):
                n = int(item.coordinator_partition.rsplit("-", 1)[1])
                assert common.partition_for(item.group, 50) == n, item.group
                seen.add(item.group)
    assert len(seen) >= 6, seen


# --- __consumer_offsets values, every version -----------------------------------------------------


def _s16(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else struct.pack(">h", len(s.encode())) + s.encode()


def _uv(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _cs(s: str | None) -> bytes:
    return b"\x00" if s is None else _uv(len(s.encode()) + 1) + s.encode()


def _offset_value(version: int) -> bytes:
    flexible = version >= 4
    out = struct.pack(">hq", version, 1234)
    if version >= 3:
        out += struct.pack(">i", 7)
    out += (_cs if flexible else _s16)("meta")
    out += struct.pack(">q", 1700000000000)
    if version == 1:
        out += struct.pack(">q", 1700000099000)
    if flexible:
        out += b"\x00"  # no tagged fields
    return out


@pytest.mark.parametrize("version", range(5))
def test_offset_commit_value_versions(version: int) -> None:
    v = internal_offsets.decode_offset_commit_value(_offset_value(version))
    assert (v["offset"], v["metadata"], v["commit_timestamp"], v["version"]) == (1234, "meta", 1700000000000, version)
    assert v["leader_epoch"] == (7 if version >= 3 else None)
    assert v["expire_timestamp"] == (1700000099000 if version == 1 else None)


def _group_value(version: int) -> bytes:
    flexible = version >= 4
    s = _cs if flexible else _s16

    def b(data: bytes) -> bytes:
        return _uv(len(data) + 1) + data if flexible else struct.pack(">i", len(data)) + data

    member = s("m-1") + (s(None) if version >= 3 else b"") + s("client") + s("/10.0.0.1")
    member += struct.pack(">i", 300000) if version >= 1 else b""
    member += struct.pack(">i", 45000) + b(b"\x00\x01sub") + b(b"assign")
    member += b"\x00" if flexible else b""
    out = struct.pack(">h", version) + s("consumer") + struct.pack(">i", 5) + s("range") + s("m-1")
    out += struct.pack(">q", 1700000000001) if version >= 2 else b""
    out += (_uv(2) if flexible else struct.pack(">i", 1)) + member
    return out + (b"\x00" if flexible else b"")


@pytest.mark.parametrize("version", range(5))
def test_group_metadata_value_versions(version: int) -> None:
    g = internal_offsets.decode_group_metadata_value(_group_value(version))
    assert (g["protocol_type"], g["generation"], g["protocol"], g["leader"]) == ("consumer", 5, "range", "m-1")
    assert g["current_state_timestamp"] == (1700000000001 if version >= 2 else None)
    (m,) = g["members"]
    assert (m.member_id, m.client_id, m.client_host, m.session_timeout) == ("m-1", "client", "/10.0.0.1", 45000)
    assert m.rebalance_timeout == (300000 if version >= 1 else None)
    assert (m.subscription_bytes, m.assignment_bytes) == (5, 6)


def test_bad_values_are_errors_not_crashes() -> None:
    good = _offset_value(3)
    for bad, why in ((good + b"\x00", "left over"), (good[:-1], "StreamError"), (b"\x00\x09" + good[2:], "version 9"),
                     (b"\x00", "version")):
        with pytest.raises(common.Undecodable, match=why):
            internal_offsets.decode_offset_commit_value(bad)
    with pytest.raises(common.Undecodable):  # a string length beyond the value: bounded, not read on
        internal_offsets.decode_offsets_key(struct.pack(">hh", 1, 500) + b"g")
    assert internal_offsets.decode_offsets_key(struct.pack(">h", 3) + b"\x01\x02") == internal_offsets.OtherKey(3)


def _golden_records(dir_part: str) -> list[dict]:
    records = []
    for golden in sorted((corpus_root() / "expected").rglob("*.jsonl")):
        if dir_part in str(golden) and golden.name.endswith((".log.jsonl", ".checkpoint.jsonl")):
            for line in golden.read_text().splitlines():
                d = json.loads(line)
                if d["type"] == "record" and "control_type" not in d:
                    records.append(d)
    return records


def test_every_consumer_offsets_record_of_the_corpus_decodes() -> None:
    kinds: dict[str, int] = {}
    for d in _golden_records("__consumer_offsets-"):
        key = internal_offsets.decode_offsets_key(base64.b64decode(d["key"]))
        value = None if d["value"] is None else base64.b64decode(d["value"])
        if isinstance(key, internal_offsets.OffsetKey) and value is not None:
            internal_offsets.decode_offset_commit_value(value)
        elif isinstance(key, internal_offsets.GroupKey) and value is not None:
            internal_offsets.decode_group_metadata_value(value)
        kinds[type(key).__name__] = kinds.get(type(key).__name__, 0) + 1
    assert kinds.get("OffsetKey", 0) > 5000 and kinds.get("GroupKey", 0) > 700
    assert "OtherKey" not in kinds


def test_every_cluster_metadata_record_of_the_corpus_decodes() -> None:
    decoded: dict[str, int] = {}
    for d in _golden_records("__cluster_metadata-"):
        _type, _version, name, fields = metadata.decode_metadata_record(base64.b64decode(d["value"]))
        if fields is not None:
            decoded[name] = decoded.get(name, 0) + 1
    for name in ("TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RegisterBrokerRecord",
                 "FeatureLevelRecord"):
        assert decoded.get(name, 0) > 0, name


# --- replay semantics on a built partition --------------------------------------------------------


def _commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _s16(group) + _s16(topic) + struct.pack(">i", partition)


def _commit(offset: int) -> bytes:
    return struct.pack(">hqi", 3, offset, -1) + _s16("") + struct.pack(">q", 1700000000000 + offset)


def _write(path: Path, *batches: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(batches))


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """__consumer_offsets-0 with plain, overwritten, deleted, transactional (committed / aborted) commits,
    a group, and the data partition t-0 (LEO 10, HW 8 in replication-offset-checkpoint)."""
    seg = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    k = _commit_key
    _write(seg,
           record_batch(0, [RecordSpec(k("g", "t", 0), _commit(3), 1)]),
           record_batch(1, [RecordSpec(k("g", "t", 0), _commit(5), 2),           # later wins
                            RecordSpec(k("g", "gone", 0), _commit(1), 2)]),
           record_batch(3, [RecordSpec(k("g", "gone", 0), None, 3)]),            # tombstone
           record_batch(4, [RecordSpec(k("tx", "t", 0), _commit(6), 4)], producer_id=9, producer_epoch=0,
                        transactional=True),
           end_transaction_marker(5, True, producer_id=9, producer_epoch=0, coordinator_epoch=1, timestamp=5),
           record_batch(6, [RecordSpec(k("tx", "t", 0), _commit(99), 6)], producer_id=9, producer_epoch=0,
                        transactional=True),
           end_transaction_marker(7, False, producer_id=9, producer_epoch=0, coordinator_epoch=1, timestamp=7),
           record_batch(8, [RecordSpec(k("ahead", "t", 0), _commit(12), 8)]),    # beyond the LEO
           record_batch(9, [RecordSpec(struct.pack(">h", 2) + _s16("g"), _group_value(3), 9)]),
           record_batch(10, [RecordSpec(k("broken", "t", 0), b"\x00\x03\x00", 10)]))
    _write(tmp_path / "t-0" / "00000000000000000000.log",
           record_batch(0, [RecordSpec(None, b"x", 1)] * 10))
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 8\n")
    return tmp_path


def test_offsets_replay(logdir: Path) -> None:
    items = list(internal_offsets.consumer_offsets([logdir]))
    commits = {(c.group, c.topic, c.partition): c for c in items if isinstance(c, internal_offsets.CommittedOffset)}
    assert {k: c.offset for k, c in commits.items()} == {("g", "t", 0): 5, ("tx", "t", 0): 6, ("ahead", "t", 0): 12}
    g = commits[("g", "t", 0)]
    assert (g.log_end_offset, g.high_watermark, g.lag, g.lag_leo, g.commit_timestamp) == (10, 8, 3, 5, 1700000000005)
    (group,) = [i for i in items if isinstance(i, internal_offsets.GroupState)]
    assert (group.group, group.generation, len(group.members)) == ("g", 5, 1)
    codes = sorted(f.code for f in items if isinstance(f, Finding))
    assert codes == ["commit-beyond-leo", "offsets-undecodable"]


def _commit_v(version: int, offset: int, metadata: bytes | None) -> bytes:
    """An ``OffsetCommitValue`` v1 or v3 with ``metadata`` as raw bytes (None: a null string, length -1)."""
    meta = struct.pack(">h", -1) if metadata is None else struct.pack(">h", len(metadata)) + metadata
    ts = 1700000000000 + offset
    if version == 1:
        return struct.pack(">hq", 1, offset) + meta + struct.pack(">qq", ts, ts + 86400000)
    return struct.pack(">hqi", 3, offset, 7) + meta + struct.pack(">q", ts)


def test_offsets_bulk_batches_equal_record_by_record(tmp_path: Path, run_cli) -> None:
    """Batches of many plain commits, which the replay takes in bulk from the native core's columns (each value
    read only if it survives, where ``kafka_schema.read_all`` tells that all of them read), mixed with what must be
    read record by record: a value whose metadata is not UTF-8 but as long as its batch's others (later
    overwritten: still a finding), a null metadata of the same length, two value versions in a batch, a tombstone,
    a group record, a key that does not decode. The same output, findings in the same order, with and without the
    native core (``KAFKATOOL_PURE_PYTHON=1``: record by record)."""
    k = _commit_key
    n = 0

    def batch(specs: list[tuple[bytes | None, bytes | None]]) -> bytes:
        nonlocal n
        out = record_batch(n, [RecordSpec(key, value, n + i) for i, (key, value) in enumerate(specs)])
        n += len(specs)
        return out

    _write(tmp_path / "__consumer_offsets-3" / "00000000000000000000.log",
           batch([(k("g", "t", p), _commit_v(3, p, b"ok")) for p in range(8)]),
           batch([(k("g", "t", p), _commit_v(3, 10 + p, b"\xff\xfe" if p == 2 else b"ok")) for p in range(8)]),
           batch([(k("g", "t", p), _commit_v(3, 20 + p, None if p == 5 else b"")) for p in range(8)]),
           batch([(k("g", "u", p), _commit_v(1 if p % 2 else 3, 30 + p, b"m")) for p in range(4)]),
           batch([(k("g", "v", p), _commit_v(1, 40 + p, "é".encode())) for p in range(4)]),
           batch([(k("g", "t", 0), None), (k("g", "t", 1), _commit_v(3, 51, b"ok"))]),
           batch([(k("g", "t", 2), _commit_v(3, 62, b"ok")), (struct.pack(">h", 2) + _s16("g"), _group_value(3))]),
           batch([(k("g", "t", 3), _commit_v(3, 73, b"ok")), (b"\x00\x01\x00", _commit_v(3, 74, b"ok"))]),
           batch([(k("g", "t", p), _commit_v(3, 80 + p, b"ok")) for p in range(6, 8)]))
    native = run_cli("offsets", "-f", "jsonl", "--no-lag", str(tmp_path))
    pure = run_cli("offsets", "-f", "jsonl", "--no-lag", str(tmp_path), env={"KAFKATOOL_PURE_PYTHON": "1"})
    assert (native.returncode, native.stdout, native.stderr) == (pure.returncode, pure.stdout, pure.stderr)
    lines = [json.loads(x) for x in native.stdout.splitlines()]
    commits = {(x["topic"], x["partition"]): (x["offset"], x["metadata"], x["value_version"]) for x in lines
               if x["type"] == "committed_offset"}
    assert ("t", 0) not in commits and commits[("t", 1)] == (51, "ok", 3) and commits[("t", 5)] == (25, None, 3)
    assert commits[("t", 7)] == (87, "ok", 3) and commits[("u", 1)] == (31, "m", 1)
    assert commits[("v", 3)] == (43, "é", 1)
    undecodable = [x["message"] for x in lines if x["type"] == "finding" and x["code"] == "offsets-undecodable"]
    assert len(undecodable) == 2 and "offset 10:" in undecodable[0]  # the bad UTF-8 at log offset 10, overwritten


def test_cli_offsets_jsonl(logdir: Path, run_cli) -> None:
    p = run_cli("offsets", "-f", "jsonl", str(logdir))
    assert p.returncode == 1, p.stderr  # findings: a commit beyond the LEO, an undecodable value
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    commit = next(x for x in lines if x["type"] == "committed_offset" and x["group"] == "g")
    assert (commit["topic"], commit["partition"], commit["offset"], commit["lag"]) == ("t", 0, 5, 3)
    assert any(x["type"] == "finding" and x["code"] == "offsets-undecodable" and x["position"] is not None
               for x in lines)
    assert "Traceback" not in p.stderr


def test_cli_offsets_real_broker(run_cli) -> None:
    data = corpus_root() / "real/MashaKosher_Internship/c335121f/data"
    p = run_cli("offsets", "-f", "jsonl", "--group", "authService", str(data))
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    got = {(x["topic"], x["partition"]): x["offset"] for x in lines if x["type"] == "committed_offset"}
    assert got[("jwtCheckRequest", 0)] == 255 and got[("seasons", 0)] == 58
    assert {x["group"] for x in lines if x["type"] != "finding"} == {"authService"}
    text = run_cli("offsets", str(data))
    assert text.returncode == 0 and "authService" in text.stdout and "jwtCheckRequest" in text.stdout


def test_cli_partition_for(run_cli) -> None:
    p = run_cli("partition-for", "-f", "jsonl", "--group", "authService", "--transactional-id", "tx-1",
                "--partitions", "50")
    assert p.returncode == 0, p.stderr
    a, t = (json.loads(x) for x in p.stdout.splitlines())
    assert (a["partition"], a["topic_partition"]) == (15, "__consumer_offsets-15")
    assert t["partition"] == _kafka_partition("tx-1", 50) and t["kind"] == "transactional_id"
    assert run_cli("partition-for").returncode == 2
    assert run_cli("partition-for", "-g", "x", "--partitions", "0").returncode == 2


def test_cli_metadata_timeline(run_cli) -> None:
    kafka1 = corpus_root() / "real/hiage_kafka-raft/c5f680e5/kafka1"
    p = run_cli("metadata", "-f", "jsonl", "--topic", "test1", str(kafka1))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    states = [r for r in rows if r["type"] == "partition_state"]
    assert {r["partition"] for r in states} == {0, 1, 2, 3, 4}
    assert all(r["topic"] == "test1" and len(r["replicas"]) == 3 and r["leader"] in r["replicas"] for r in states)
    every = run_cli("metadata", "--all", str(kafka1))
    assert every.returncode == 0 and "RegisterBrokerRecord" in every.stdout and "test1" in every.stdout


def test_cli_metadata_snapshot_then_log(run_cli) -> None:
    """A dir with snapshots: the latest snapshot, then only the log records after its end offset (this one's log
    starts 1,130 offsets after that snapshot's end: a kraft-snapshot-gap, exit 1, and the replay goes on)."""
    data = corpus_root() / "real/MashaKosher_Internship/c335121f/data/__cluster_metadata-0"
    p = run_cli("metadata", "-f", "jsonl", str(data))
    assert p.returncode == 1 and '"kraft-snapshot-gap"' in p.stdout, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines() if '"partition_state"' in x]
    snap = [r for r in rows if r["source"].endswith(".checkpoint")]
    log = [r for r in rows if r["source"].endswith(".log")]
    assert snap and log
    end = int(Path(snap[0]["source"]).name.split("-")[0])
    assert all(r["offset"] >= end for r in log)
    assert any(r["topic"] == "seasons" for r in rows)


def test_metadata_damage_is_a_finding(tmp_path: Path, run_cli) -> None:
    seg = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    topic = bytes([1, 2, 0]) + _cs("t") + bytes(16) + b"\x00"
    _write(seg, record_batch(0, [RecordSpec(None, topic, 1), RecordSpec(None, topic[:-3], 1),
                                 RecordSpec(None, bytes([1, 99, 0, 5]), 1)]))
    items = list(metadata.metadata_timeline([tmp_path]))
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["MetadataEvent", "Finding", "Finding", "MetadataEvent"]
    assert [items[1].code, items[2].code] == ["metadata-undecodable", "metadata-record-unknown"]
    assert "record type 99 version 0" in items[2].message  # newer than the schemas: named, never decoded
    assert items[3].name == "type 99" and not items[3].decoded
    p = run_cli("metadata", str(tmp_path))
    assert p.returncode == 1 and "metadata-undecodable" in p.stdout and "Traceback" not in p.stderr


# --- __transaction_state --------------------------------------------------------------------------


def _txn_value(version: int, state: int = 1, tags: bytes = b"\x00") -> bytes:
    """TransactionLogValue packed from TransactionLogValue.json (v1 flexible: compact forms, tagged fields)."""
    flexible = version >= 1
    out = struct.pack(">hqhib", version, 4000, 2, 60000, state)
    if flexible:
        out += _uv(2) + _cs("orders") + _uv(3) + struct.pack(">ii", 0, 3) + b"\x00"
    else:
        out += struct.pack(">i", 1) + _s16("orders") + struct.pack(">iii", 2, 0, 3)
    out += struct.pack(">qq", 1700000001000, 1700000000000)
    return out + (tags if flexible else b"")


@pytest.mark.parametrize("version", range(2))
def test_transaction_log_value_versions(version: int) -> None:
    v = transactions.decode_transaction_value(_txn_value(version))
    assert (v["producer_id"], v["producer_epoch"], v["timeout_ms"], v["state"]) == (4000, 2, 60000, "Ongoing")
    assert v["partitions"] == (("orders", (0, 3)),)
    assert (v["last_update_timestamp"], v["start_timestamp"]) == (1700000001000, 1700000000000)
    assert transactions.decode_transaction_key(struct.pack(">h", 0) + _s16("tx-a")) == "tx-a"


def test_transaction_log_value_tags() -> None:
    tags = _uv(3) + b"\x00\x08" + struct.pack(">q", 3999) + b"\x01\x08" + struct.pack(">q", 4001)
    tags += b"\x02\x02" + struct.pack(">h", 2)
    v = transactions.decode_transaction_value(_txn_value(1, tags=tags))
    assert (v["previous_producer_id"], v["next_producer_id"], v["client_transaction_version"]) == (3999, 4001, 2)
    with pytest.raises(common.Undecodable, match="left over"):
        transactions.decode_transaction_value(_txn_value(0) + b"\x00")
    with pytest.raises(common.Undecodable, match="version 2"):
        transactions.decode_transaction_value(b"\x00\x02" + _txn_value(0)[2:])


def test_cli_txn_state(tmp_path: Path, run_cli) -> None:
    key = struct.pack(">h", 0)
    seg = tmp_path / "__transaction_state-20" / "00000000000000000000.log"
    _write(seg,
           record_batch(0, [RecordSpec(key + _s16("tx-a"), _txn_value(0, state=1), 1),
                            RecordSpec(key + _s16("tx-b"), _txn_value(1, state=1), 1)]),
           record_batch(2, [RecordSpec(key + _s16("tx-a"), _txn_value(1, state=4), 2),    # later wins
                            RecordSpec(key + _s16("tx-b"), None, 2),                     # expired: deleted
                            RecordSpec(key + _s16("tx-c"), b"\x00\x00\x01", 2)]))        # truncated
    p = run_cli("txn-state", "-f", "jsonl", str(tmp_path))
    assert p.returncode == 1, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    states = [r for r in rows if r["type"] == "transaction_state"]
    assert [(r["transactional_id"], r["state"], r["partitions"]) for r in states] == [
        ("tx-a", "CompleteCommit", ["orders-0", "orders-3"])]
    assert [r["code"] for r in rows if r["type"] == "finding"] == ["txn-state-undecodable"]
    text = run_cli("txn-state", str(tmp_path))
    assert "tx-a" in text.stdout and "CompleteCommit" in text.stdout and "Traceback" not in text.stderr


# --- progress ------------------------------------------------------------------------------------------------


def log_bytes(*dirs: Path) -> int:
    return sum(p.stat().st_size for d in dirs for p in d.glob("*.log"))


def test_offsets_progress_counts_every_segment_byte_it_reads() -> None:
    """What a progress bar is told (``consumer_offsets(progress=...)``): the ``__consumer_offsets`` segments, and
    with lag the loads of the data partitions of their log dir; a data partition no commit names is counted once
    the commits are known, as skipped, so that the bar reaches the total it was given (``consumer_offsets_bytes``)."""
    data = corpus_root() / "real/MashaKosher_Internship/c335121f/data"
    offsets = sorted(data.glob("__consumer_offsets-*"))
    others = [d for d in data.iterdir() if d.is_dir() and not d.name.startswith("__consumer_offsets-")]
    assert len(offsets) == 50 and others
    seen: list[int] = []
    list(internal_offsets.consumer_offsets([data], with_lag=False, progress=seen.append))
    assert seen and sum(seen) == log_bytes(*offsets) == internal_offsets.consumer_offsets_bytes([data], with_lag=False)
    seen = []
    items = list(internal_offsets.consumer_offsets([data], progress=seen.append))
    assert sum(seen) == log_bytes(*offsets, *others) == internal_offsets.consumer_offsets_bytes([data])
    assert any(isinstance(i, internal_offsets.CommittedOffset) and i.log_end_offset is not None for i in items)


def test_txn_state_and_metadata_progress_count_every_byte_they_read() -> None:
    """``transaction_states``: the ``__transaction_state`` segments. ``metadata_timeline``: what the controller
    would replay, the latest snapshot and the log (not the older snapshots, not the other partitions of a log dir
    named), so that the bar reaches its total (``transaction_states_bytes``, ``metadata_bytes``)."""
    incident = PROJECT_ROOT / "fixtures" / "incident"
    seen: list[int] = []
    list(transactions.transaction_states([incident], progress=seen.append))
    assert seen and sum(seen) == log_bytes(incident / "__transaction_state-0") == \
        transactions.transaction_states_bytes([incident])
    seen = []
    list(metadata.metadata_timeline([incident], progress=seen.append))
    assert seen and sum(seen) == log_bytes(incident / "__cluster_metadata-0") == metadata.metadata_bytes([incident])
    meta = corpus_root() / "real/MashaKosher_Internship/c335121f/data/__cluster_metadata-0"
    snapshots = sorted(meta.glob("*.checkpoint"))
    assert len(snapshots) > 1
    seen = []
    list(metadata.metadata_timeline([meta], progress=seen.append))
    assert sum(seen) == snapshots[-1].stat().st_size + log_bytes(meta) == metadata.metadata_bytes([meta])


def test_progress_reaches_the_bars_total_on_every_corpus_dir() -> None:
    """offsets (with and without lag), txn-state and metadata tell ``progress`` what their ``*_bytes`` functions
    say, on every dir of the corpus and the fixtures (most hold none of these topics: 0 bytes, no bar)."""
    roots = [p for top in ("kafka", "real") for p in sorted((corpus_root() / top).iterdir()) if p.is_dir()]
    roots += [PROJECT_ROOT / "fixtures" / "incident", PROJECT_ROOT / "fixtures" / "logdir"]
    runs = [(lambda p, pr: internal_offsets.consumer_offsets(p, progress=pr), internal_offsets.consumer_offsets_bytes),
            (lambda p, pr: internal_offsets.consumer_offsets(p, with_lag=False, progress=pr),
             lambda p: internal_offsets.consumer_offsets_bytes(p, with_lag=False)),
            (lambda p, pr: transactions.transaction_states(p, progress=pr), transactions.transaction_states_bytes),
            (lambda p, pr: metadata.metadata_timeline(p, progress=pr), metadata.metadata_bytes)]
    counted = 0
    for root in roots:
        for k, (run, total) in enumerate(runs):
            seen: list[int] = []
            list(run([root], seen.append))
            assert sum(seen) == total([root]), (k, root)
            counted += sum(seen) > 0
    assert counted >= 10


def test_lag_without_a_high_watermark_checkpoint_is_counted_to_the_log_end(tmp_path: Path, corpus: Path,
                                                                           run_cli) -> None:
    """No replication-offset-checkpoint beside the data partition: the HW is unknown (not 0), and the lag is
    counted to the log end Kafka's recovery gives (case.json's next_offset), labelled so, never 0 (issue 26)."""
    case = corpus / "kafka" / "recovery" / "missing-indexes"
    leo = json.loads((case / "case.json").read_text())["kafka_result"]["next_offset"]
    shutil.copytree(case / "before" / "rtopic-0", tmp_path / "rtopic-0")
    _write(tmp_path / "__consumer_offsets-0" / "00000000000000000000.log",
           record_batch(0, [RecordSpec(_commit_key("g", "rtopic", 0), _commit(100), 1700000000000)]))
    proc = run_cli("offsets", "-f", "jsonl", tmp_path)
    (commit,) = [x for x in proc.jsonl() if x["type"] == "committed_offset"]
    assert (commit["log_end_offset"], commit["high_watermark"]) == (leo, None)
    assert (commit["lag"], commit["lag_from"]) == (leo - 100, "log_end_offset")
    text = run_cli("offsets", tmp_path).stdout
    assert f"{leo - 100} to LEO" in text, text
