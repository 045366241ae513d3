"""formats/kafka_schema.py: Kafka's JSON message schemas compiled to Construct, held to Kafka's generated
``read``/``write`` (``MessageDataGenerator``): every message and version round-trips values from the project's
own generator, some against bytes written by hand from the generated code's rules, and bad bytes are a
``ConstructError``, never another exception nor an allocation of the length they claim."""

from __future__ import annotations

import json
import struct

import pytest
from construct import ConstructError

from kafkatool.formats import kafka_schema as ks

from .test_fastparse import _overlong_varint

ALL = [(name, v) for name in sorted(ks.schemas()) for v in ks.valid_versions(name)]


def test_schemas_found():
    names = set(ks.schemas())
    assert {"OffsetCommitKey", "GroupMetadataValue", "ConsumerGroupMemberMetadataValue", "ShareSnapshotValue",
            "TransactionLogValue", "PartitionChangeRecord", "RemoteLogSegmentMetadataRecord",
            "LeaderChangeMessage", "VotersRecord"} <= names
    assert len(ALL) > len(names)


@pytest.mark.parametrize(("name", "version"), ALL, ids=[f"{n}-v{v}" for n, v in ALL])
def test_round_trip(name, version):
    layout = ks.message(name, version)
    assert layout is ks.message(name, version)  # made once
    for seed in range(6):
        value = ks.example(name, version, seed)
        data = layout.build(value)
        assert ks.decode(name, version, data) == value
        assert layout.build(ks.decode(name, version, data)) == data
    default = ks.default_value(name, version)
    assert ks.decode(name, version, layout.build(default)) == default


def _u32(*xs: int) -> bytes:
    return b"".join(struct.pack(">i", x) for x in xs)


def test_flexible_struct_with_tagged_fields_by_hand():
    """PartitionChangeRecord v2: Leader (tag 1, int32) and Isr (tag 0, compact []int32) written, in tag order,
    each as tag, size, bytes; every other tag at its default, absent."""
    topic = bytes(15) + b"\x01"
    data = _u32(7) + topic + b"\x02" + b"\x00\x09\x03" + _u32(1, 2) + b"\x01\x04" + _u32(3)
    value = ks.decode("PartitionChangeRecord", 2, data)
    assert value["partition_id"] == 7 and value["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert value["isr"] == [1, 2] and value["leader"] == 3
    assert value["replicas"] is None and value["leader_recovery_state"] == -1  # defaults: not on the wire
    assert ks.message("PartitionChangeRecord", 2).build(value) == data


def test_compact_nullable_string_and_non_flexible_version_by_hand():
    """TransactionLogValue v1 (flexible): compact string "t" is 0x02 't'; NextProducerId tag 1 (8 bytes);
    v0 (not flexible): int16-length string, int32 counts, no tagged fields at all."""
    v1 = (struct.pack(">qhib", 1, 2, 3, 4) + b"\x02" + b"\x02t" + b"\x02" + _u32(0) + b"\x00"
          + struct.pack(">qq", 6, 7) + b"\x01\x01\x08" + struct.pack(">q", 5))
    value = ks.decode("TransactionLogValue", 1, v1)
    assert value["transaction_partitions"] == [{"topic": "t", "partition_ids": [0]}]
    assert value["next_producer_id"] == 5 and value["previous_producer_id"] == -1
    assert ks.message("TransactionLogValue", 1).build(value) == v1
    v0 = struct.pack(">qhib", 1, 2, 3, 4) + _u32(1) + b"\x00\x01t" + _u32(1, 0) + struct.pack(">qq", 6, 7)
    value = ks.decode("TransactionLogValue", 0, v0)
    assert value["transaction_partitions"] == [{"topic": "t", "partition_ids": [0]}]
    assert "next_producer_id" not in value
    null_partitions = struct.pack(">qhib", 1, 2, 3, 4) + _u32(-1) + struct.pack(">qq", 6, 7)
    assert ks.decode("TransactionLogValue", 0, null_partitions)["transaction_partitions"] is None


def test_unknown_tags_kept_and_written_back_in_order():
    data = _u32(7) + bytes(16) + b"\x02" + b"\x01\x04" + _u32(3) + b"\x1e\x02ab"
    value = ks.decode("PartitionChangeRecord", 0, data)
    assert value[ks.UNKNOWN_TAGS] == [{"tag": 30, "data": "YWI="}]
    assert ks.message("PartitionChangeRecord", 0).build(value) == data


def test_null_where_not_nullable_is_a_parse_error():
    data = struct.pack(">qhib", 1, 2, 3, 4) + b"\x02" + b"\x00" + b"\x02" + _u32(0) + b"\x00" + bytes(16) + b"\x00"
    with pytest.raises(ConstructError, match="non-nullable field Topic"):
        ks.decode("TransactionLogValue", 1, data)


@pytest.mark.parametrize(("name", "version"), ALL, ids=[f"{n}-v{v}" for n, v in ALL])
def test_truncated_is_a_parse_error(name, version):
    data = ks.message(name, version).build(ks.example(name, version, 5))
    for cut in range(len(data)):
        with pytest.raises(ConstructError):
            ks.decode(name, version, data[:cut])
    with pytest.raises(ConstructError, match="left after"):
        ks.decode(name, version, data + b"\x00")


@pytest.mark.parametrize("count", [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08"])
def test_huge_compact_count_is_a_parse_error_not_an_allocation(count):
    """A compact array count of ~2^32: refused against the bytes that remain (even for an array of an empty
    struct, whose elements take one byte each), as the generated reader refuses it."""
    data = _u32(1) + bytes(16) + count + bytes(8)
    with pytest.raises(ConstructError, match="bytes remain"):
        ks.decode("PartitionRecord", 0, data)


def test_huge_lengths_non_flexible():
    big = b"\x7f\xff"  # a 32767-byte string in 3 bytes
    with pytest.raises(ConstructError, match="bytes remain"):
        ks.decode("OffsetCommitKey", 0, big + b"g")
    with pytest.raises(ConstructError, match="bytes remain"):
        ks.decode("TransactionLogValue", 0, struct.pack(">qhib", 1, 2, 3, 4) + _u32(0x7FFFFFFF) + bytes(16))


def test_snake_case_is_kafkas():
    assert ks.snake_case("MemberEpoch") == "member_epoch"
    assert ks.snake_case("leaderEpoch") == "leader_epoch"
    assert ks.snake_case("LastKnownElr") == "last_known_elr"
    assert ks.snake_case("group") == "group"


# --- the hand-written declarations of formats/internal_topics.py, equal to the compiled ones ------------------


def _plain(v, uuids=("topic_id",), key=None):
    """A Container parsed by a formats/internal_topics.py declaration, as the compiler gives it."""
    import base64

    if isinstance(v, dict):
        keys = [k for k in v if not k.startswith("_")]
        if set(keys) == {"length", "value"}:
            return _plain(v["value"])
        if set(keys) == {"count", "entries"}:
            return _plain(v["entries"])
        return {k: _plain(v[k], uuids, k) for k in keys if k != "tagged_fields"}
    if isinstance(v, list):
        return [_plain(x, uuids, key) for x in v]
    if isinstance(v, bytes):
        if key in uuids:
            return base64.urlsafe_b64encode(v).decode().rstrip("=")
        return base64.b64encode(v).decode()
    return v


def _hand_written(folder, key, value):
    """(key fields, value fields) as formats/internal_topics.py's declarations read them."""
    from kafkatool.formats import internal_topics as it

    kv = it.CoordinatorKeyVersion.parse(key[:2]).version
    if folder == ks.TRANSACTION_COORDINATOR:
        k = {"transactional_id": _plain(it.TransactionLogKey.parse(key).transactional_id)}
        if value is None:
            return k, None
        v = it.TransactionLogValue.parse(value)
        out = _plain(v.body)
        for t in (v.body.get("tagged_fields") or {"fields": []})["fields"]:
            name, layout = it.TRANSACTION_LOG_VALUE_TAGS[t.tag]
            out[name] = layout.parse(t.data)
        return k, out
    if folder == ks.SHARE_COORDINATOR:
        k = _plain(it.ShareStateKey.parse(key))
        k.pop("record_type")
        if value is None:
            return k, None
        v = it.share_state_value(kv).parse(value)
        out = _plain(v)
        out.pop("version")
        for t in v.tagged_fields.fields:
            name, layout = it.SHARE_STATE_VALUE_TAGS[t.tag]
            out[name] = layout.parse(t.data)
        return k, out
    decl = it.OffsetCommitKey if kv in it.KEY_OFFSET_COMMIT else it.GroupMetadataKey
    k = _plain(decl.parse(key))
    k.pop("version")
    if value is None:
        return k, None
    v = (it.OffsetCommitValue if kv in it.KEY_OFFSET_COMMIT else it.GroupMetadataValue).parse(value)
    return k, _plain(v.body)


def _coordinator_corpus():
    from kafkatool.internal import common

    from .conftest import PROJECT_ROOT, corpus_root

    out = []
    roots = [(corpus_root(), "__consumer_offsets", ks.GROUP_COORDINATOR)]
    incident = PROJECT_ROOT / "fixtures" / "incident"
    roots += [(incident, "__consumer_offsets", ks.GROUP_COORDINATOR),
              (incident, "__transaction_state", ks.TRANSACTION_COORDINATOR),
              (incident, "__share_group_state", ks.SHARE_COORDINATOR)]
    for root, topic, folder in roots:
        for d in sorted(root.rglob(f"{topic}-*")):
            for seg in sorted(d.glob("*.log")) if d.is_dir() else []:
                for item in common.file_records(seg, str(seg)):
                    if isinstance(item, tuple) and item[1].control_type is None and item[1].key is not None:
                        out.append((folder, item[1].key, item[1].value))
    return out


def test_hand_written_declarations_equal_the_compiled_ones_on_every_corpus_record():
    records = _coordinator_corpus()
    folders = {f for f, _k, _v in records}
    assert folders == {ks.GROUP_COORDINATOR, ks.TRANSACTION_COORDINATOR, ks.SHARE_COORDINATOR}
    compared = 0
    for folder, key, value in records:
        kv = int.from_bytes(key[:2], "big", signed=True)
        if folder == ks.GROUP_COORDINATOR and kv > 2:
            continue  # not declared by hand
        compiled = ks.coordinator_record(folder, key, value)
        hand_key, hand_value = _hand_written(folder, key, value)
        assert compiled["key"] == hand_key
        if hand_value is not None:
            tagged = {k: v for k, v in compiled["value"].items() if k not in hand_value}
            assert {k: v for k, v in compiled["value"].items() if k in hand_value} == hand_value
            for k, v in tagged.items():  # absent from the hand-written parse: tags at their default
                assert v == ks.default_value(compiled["record"] + "Value", compiled["value_version"])[k], k
        else:
            assert compiled["value"] is None
        compared += 1
    assert compared > 1000


def test_a_record_type_or_version_newer_than_the_schemas_is_unknown_record():
    with pytest.raises(ks.UnknownRecord) as exc:
        ks.coordinator_record(ks.GROUP_COORDINATOR, b"\x00\x63" + b"\x00\x01g", b"\x00\x00")
    assert exc.value.record_type == 99 and exc.value.version == 0
    assert str(exc.value) == "record type 99 (value version 0) is newer than the group-coordinator schemas here " \
        "(types 0..24)"
    key = b"\x00\x01" + b"\x00\x01g\x00\x01t" + _u32(0)
    with pytest.raises(ks.UnknownRecord) as exc:
        ks.coordinator_record(ks.GROUP_COORDINATOR, key, b"\x00\x09" + bytes(20))
    assert exc.value.record_type == 1 and exc.value.version == 9
    assert ks.coordinator_record(ks.GROUP_COORDINATOR, key, None) == {
        "record": "OffsetCommit", "record_type": 1, "key": {"group": "g", "topic": "t", "partition": 0},
        "value_version": None, "value": None}


def test_generated_coordinator_records_of_every_type_and_version_read_back():
    """fixtures/generate.py's ``schema_records``: one record of every record type and value version of each
    coordinator, built from the schemas, read back by :func:`coordinator_record` to the values it was built from."""
    from .test_fixtures import gen

    seen = {}
    for topic, folder in gen.SCHEMA_TOPICS.items():
        for rtype, name, version, key, value, fields in gen.schema_records(folder):
            record = ks.coordinator_record(folder, key, value)
            assert record == {"record": name, "record_type": rtype, "key": fields["key"], "value_version": version,
                              "value": fields["value"]}
            assert ks.coordinator_record(folder, key, None)["value"] is None  # a tombstone
            seen.setdefault(topic, set()).add((rtype, version))
    assert len(seen["__consumer_offsets"]) == sum(len(ks.valid_versions(n + "Value"))
                                                  for n in ks.record_types(ks.GROUP_COORDINATOR).values())
    assert {t for t, _v in seen["__consumer_offsets"]} == set(range(25))  # 24: StreamsGroupTarget...ResolvedTopicIds
    assert seen["__share_group_state"] == {(0, 0), (1, 0)} and seen["__transaction_state"] == {(0, 0), (0, 1)}


# --- from the command line ---------------------------------------------------------------------------------------


def test_dump_decode_auto_names_every_record_with_every_field(tmp_path, run_cli):
    """``fixtures/generate.py --schemas``: every record type and value version of the three coordinator topics;
    ``dump --decode auto`` names each by its schema and gives every key and value field, and ``offsets`` and
    ``txn-state`` read the partitions without a finding (before, the KIP-848 records were ``kind=unknown`` and
    ``offsets-unknown-key`` findings)."""
    from .test_fixtures import gen

    gen.schemas(tmp_path / "logdir")
    for topic, folder in gen.SCHEMA_TOPICS.items():
        p = run_cli("dump", "-f", "jsonl", "--decode", "auto", tmp_path / "logdir" / f"{topic}-0")
        assert p.returncode == 0, p.stderr
        decoded = [r["decoded"] for r in p.jsonl() if r["type"] == "record"]
        expected = gen.schema_records(folder)
        assert len(decoded) == len(expected)
        for d, (rtype, name, version, _k, _v, fields) in zip(decoded, expected, strict=True):
            assert (d["record"], d["key"], d["value"]) == (name, fields["key"], fields["value"])
            assert d.get("value_version") == version
            if folder == ks.GROUP_COORDINATOR and rtype > 2:
                assert d["kind"] == ks.snake_case(name) and d["key_version"] == rtype
    for command in ("offsets", "txn-state"):
        p = run_cli(command, "-f", "jsonl", tmp_path / "logdir")
        assert not [r for r in p.jsonl() if r.get("type") == "finding"], (command, p.stdout[-2000:])


def test_a_record_type_newer_than_the_schemas_is_a_finding(tmp_path, run_cli):
    """Record type 99 and a ConsumerGroupMetadataValue of version 7: ``offsets`` says which (info
    ``coordinator-record-newer``, topic, type and version), ``dump --decode`` says why it is not decoded."""
    from kafkatool.build import RecordSpec, record_batch
    from kafkatool.logwriter import LogDirWriter

    records = [(b"\x00\x63\x00\x01g", b"\x00\x00"), (b"\x00\x03\x00\x01g", b"\x00\x07" + bytes(8))]
    with LogDirWriter(tmp_path / "logdir", cluster_id="q1Sh-9_ISia_zwGINzRvyQ", node_id=1,
                      directory_id=bytes(range(16)), broker_epoch=1, written_at_ms=1_700_000_000_000) as logdir:
        w = logdir.partition("__consumer_offsets", 0, bytes([9]) * 16)
        for offset, (key, value) in enumerate(records):
            w.append(record_batch(offset, [RecordSpec(key, value, 1_700_000_000_000 + offset)]))
    p = run_cli("offsets", "-f", "jsonl", tmp_path / "logdir")
    assert p.returncode == 1, p.stderr  # the warning that no commit nor group was found
    found = [r for r in p.jsonl() if r.get("type") == "finding" and r["code"] != "offsets-empty"]
    assert [(f["code"], f["severity"]) for f in found] == [("coordinator-record-newer", "info")] * 2
    assert "__consumer_offsets record type 99 (value version 0) is newer" in found[0]["message"]
    assert "record type 3 (ConsumerGroupMetadata) value version 7 is newer" in found[1]["message"]
    p = run_cli("dump", "-f", "jsonl", "--decode", "auto", tmp_path / "logdir" / "__consumer_offsets-0")
    errors = [r["decode_error"] for r in p.jsonl() if r["type"] == "record"]
    assert all(e.startswith("coordinator-record-newer: __consumer_offsets record type ") for e in errors), errors


def test_every_schema_file_is_package_data():
    """pyproject's package-data for ``kafkatool.formats`` and its schema packages (installed from ``formats/``)
    covers every file under ``formats/schemas``: a non-editable install carries them all."""
    import tomllib

    from .conftest import PROJECT_ROOT

    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    formats = PROJECT_ROOT / config["package-dir"]["kafkatool.formats"]
    carried = {p for package, patterns in config["package-data"].items() if package.startswith("kafkatool.formats")
               for pattern in patterns
               for p in formats.joinpath(*package.split(".")[2:]).glob(pattern)}
    present = {p for p in (formats / "schemas").rglob("*") if p.is_file()}
    assert present == carried and len(present) == len(ks.schemas()) + 1  # + SOURCES.md
    sources = (formats / "schemas" / "SOURCES.md").read_text()
    assert all(f"| `{spec['_path']}` |" in sources for spec in ks.schemas().values())  # each with its commit


def test_comments_stripped_outside_strings_only():
    text = '{ "about": "see http://x \\"//quoted\\"", // a comment\n  // a line comment\n "b": 1 }'
    assert json.loads(ks.strip_comments(text)) == {"about": 'see http://x "//quoted"', "b": 1}


def test_mutated_bytes_decode_or_are_a_parse_error():
    """Seeded mutations (bytes overwritten, the end cut) of every message and version: each decodes or raises a
    ConstructError, never another exception."""
    import random

    rng = random.Random(27)
    for name, version in ALL:
        data = ks.message(name, version).build(ks.example(name, version, 5))
        for _ in range(60):
            b = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            if rng.random() < 0.3:
                b = b[:rng.randrange(len(b) + 1)]
            try:
                ks.decode(name, version, bytes(b))
            except ConstructError:
                pass


# --- the compiled readers ------------------------------------------------------------------------------------------


def _by_construct(name: str, version: int, data: bytes):
    """The Construct's reading of ``data`` whole, or None where it fails or leaves bytes over."""
    import io

    stream = io.BytesIO(data)
    try:
        value = ks.message(name, version).parse_stream(stream)
    except ConstructError:
        return None
    return value if stream.tell() == len(data) else None


def check_compiled(name: str, version: int, data: bytes) -> bool:
    """The compiled reader of ``name`` v``version`` gives what its Construct gives (same value, same types), or
    None, and None only where the Construct fails (or for a uvarint over 5 bytes); True when it read ``data``."""
    fast = ks.reader(name, version)(data, 0)
    slow = _by_construct(name, version, data)
    if fast is not None:
        assert slow is not None and fast == slow and repr(fast) == repr(slow), (name, version, data.hex())
        assert ks.decode(name, version, data) is not None
        return True
    assert slow is None or _overlong_varint(data), (name, version, data.hex(), slow)
    if slow is None:  # decode words the Construct's error, as before the compiled readers
        with pytest.raises(ConstructError):
            ks.decode(name, version, data)
    return False


def _mutations(rng, data: bytes, n: int):
    """``data``, then ``n`` seeded mutations: bytes overwritten (often with 0, 0x7f, 0x80, 0xff: nulls, big and
    negative lengths, varint continuations), the end cut, a byte added."""
    yield data
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if b:
                b[rng.randrange(len(b))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        r = rng.random()
        if r < 0.3:
            b = b[:rng.randrange(len(b) + 1)]
        elif r < 0.4:
            b.append(rng.randrange(256))
        yield bytes(b)


@pytest.mark.parametrize(("name", "version"), ALL, ids=[f"{n}-v{v}" for n, v in ALL])
def test_compiled_reader_equals_the_construct_on_examples_and_mutations(name, version):
    """Values of every message and version built from the schemas (``kafka_schema.example``, the generator's),
    and seeded mutations of them."""
    import random

    rng = random.Random(f"{name}-{version}")
    read = 0
    for seed in range(10):
        data = ks.message(name, version).build(ks.example(name, version, seed))
        assert check_compiled(name, version, data)
        read += sum(check_compiled(name, version, b) for b in _mutations(rng, data, 30))
    assert read > 10


def _corpus_messages():
    """(schema name, version, body) of every internal record of the corpus and of fixtures/incident: coordinator
    keys and values, metadata and remote log metadata records (their frame off), KRaft control records."""
    from kafkatool.formats import metadata_records as mr
    from kafkatool.internal import common, metadata

    from .conftest import PROJECT_ROOT, corpus_root

    out = []
    for folder, key, value in _coordinator_corpus():
        rtype = int.from_bytes(key[:2], "big", signed=True)
        name = ks.record_types(folder).get(rtype)
        if name is None:
            continue
        key_name = "OffsetCommitKey" if name == "OffsetCommit" else name + "Key"
        out.append((key_name, ks.valid_versions(key_name)[0], key[2:]))
        if value is not None and len(value) >= 2:
            version = int.from_bytes(value[:2], "big", signed=True)
            if version in ks.valid_versions(name + "Value"):
                out.append((name + "Value", version, value[2:]))
    for root in (corpus_root(), PROJECT_ROOT / "fixtures" / "incident"):
        for topic, schemas in (("__cluster_metadata", mr.metadata_schemas()),
                               ("__remote_log_metadata", mr.remote_log_metadata_schemas())):
            for d in sorted(root.rglob(f"{topic}-*")):
                files = sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint")) if d.is_dir() else []
                for seg in files:
                    for item in common.file_records(seg, str(seg)):
                        if not isinstance(item, tuple) or item[1].value is None:
                            continue
                        rec = item[1]
                        if rec.control_type in mr.CONTROL_SCHEMAS:
                            out.append((mr.CONTROL_SCHEMAS[rec.control_type], mr.CONTROL_VERSION, rec.value))
                            continue
                        try:
                            rtype, version, body = metadata.api_message_frame(rec.value)
                        except Exception:  # noqa: BLE001 - a frame that does not parse: no message to compare
                            continue
                        name = schemas.get(rtype)
                        if name is not None and version in ks.valid_versions(name):
                            out.append((name, version, body))
    return out


def test_compiled_reader_equals_the_construct_on_every_corpus_record():
    import random

    messages = _corpus_messages()
    rng = random.Random(30)
    read, names = 0, set()
    for name, version, body in messages:
        read += check_compiled(name, version, body)
        names.add(name)
    for name, version, body in rng.sample(messages, min(len(messages), 3000)):
        for b in _mutations(rng, body, 3):
            check_compiled(name, version, b)
    assert read > 10_000 and {"OffsetCommitValue", "GroupMetadataValue", "TransactionLogValue", "PartitionRecord",
                              "RegisterBrokerRecord", "ShareSnapshotValue"} <= names, (read, sorted(names))


@pytest.mark.parametrize(("name", "version"), ALL, ids=[f"{n}-v{v}" for n, v in ALL])
def test_read_all_only_where_the_compiled_reader_reads_every_value(name, version):
    """``read_all`` (values decided at once, the offsets replay's bulk path) says yes only where the compiled reader
    reads each of them: on examples of every message and version and seeded mutations of them, in pairs."""
    import random

    rng = random.Random(f"all-{name}-{version}")
    read = ks.reader(name, version)
    for seed in range(6):
        data = ks.message(name, version).build(ks.example(name, version, seed))
        for mutated in _mutations(rng, data, 20):
            for values in ([mutated], [data, mutated], [mutated, data]):
                if ks.read_all(name, version, values, 0):
                    assert all(read(v, 0) is not None for v in values), values


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_read_all_decides_offset_commit_values_at_once(version):
    """The values a group coordinator writes for a consumer's commits (one metadata string, the numbers differing)
    are decided at once; a metadata that is not UTF-8, a null one or a length that differs are left to the reader."""
    def value(offset: int, metadata: str | None) -> bytes:
        fields = {**ks.example("OffsetCommitValue", version, 1), "offset": offset, "metadata": metadata}
        return ks.message("OffsetCommitValue", version).build(fields)

    plain = [value(o, "é") for o in (0, 1 << 40, -1)]
    assert ks.read_all("OffsetCommitValue", version, plain, 0)
    bad = plain[1].replace("é".encode(), b"\xff\xfe")
    assert ks.reader("OffsetCommitValue", version)(bad, 0) is None
    assert not ks.read_all("OffsetCommitValue", version, [*plain, bad], 0)
    assert not ks.read_all("OffsetCommitValue", version, [*plain, value(5, "ab")[:-1]], 0)
    empty, one = value(7, ""), value(7, "x")
    at = next(i for i, (a, b) in enumerate(zip(empty, one, strict=False)) if a != b) - 1  # metadata int16 length
    null = empty[:at] + b"\xff\xff" + empty[at + 2:]
    assert ks.read_all("OffsetCommitValue", version, [empty, empty], 0)
    assert not ks.read_all("OffsetCommitValue", version, [empty, null], 0)
