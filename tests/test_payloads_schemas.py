"""The schema decoders and the registry on disk (issue 29), on the log dir ``fixtures/generate.py --payloads`` writes
at test time (its docstring draws it): every value the generator encoded with fastavro, protobuf and json decodes
back to what it says it wrote (its ``-expected.json``, not values written here), through ``_schemas`` and through
``--schemas`` files; each bad payload gives its reason; hostile ``_schemas`` records are findings; the ``schemas``
command from the CLI."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.errors import UsageError
from kafkatool.internal.common import partition_records
from kafkatool.logwriter import LogDirWriter
from kafkatool.payloads import SchemaSources, payload_decoder
from kafkatool.payloads.registry import SchemaVersion, SubjectConfig, registry_listing
from kafkatool.walk import partition_dirs

from .conftest import PROJECT_ROOT
from .test_fixtures import GENERATOR, gen, tree  # fixtures/generate.py, loaded once

DECODERS = ("avro", "protobuf", "json-schema", "auto")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("payloads") / "logdir"
    written = gen.payloads(out)
    expected = json.loads(out.with_name("logdir-expected.json").read_text())
    assert expected == json.loads(json.dumps(written))  # the side file is what the generator returned
    return out, expected


def records(logdir: Path, topic: str) -> list:
    """The values of ``topic``-0, read by the project's reader, in offset order."""
    part = next(p for p in partition_dirs([logdir]) if p.topic == topic)
    findings: list = []
    recs = [r for _display, _batch, r in partition_records(part.files, findings)]
    assert not findings
    return recs


def check_topic(logdir: Path, expected: dict, sources: SchemaSources, topic: str) -> int:
    """Each record of ``topic`` by its decoder and by ``auto``: the value the generator encoded, or the error it
    expects; returns how many records were compared."""
    decoders = {name: payload_decoder(name, sources)[0] for name in DECODERS}
    subjects = bool(sources.paths or sources.schema_log_dir)  # a _schemas partition to read the subjects from
    want = expected["topics"][topic]
    recs = records(logdir, topic)
    assert [r.offset for r in recs] == [w["offset"] for w in want]
    for rec, w in zip(recs, want, strict=True):
        for name in (w["decoder"], "auto"):
            got = decoders[name](rec.value, f"{topic}-value")
            where = f"{topic} offset {rec.offset} by {name}"
            if name == "auto" and "unframed" in w and not subjects:  # no subject says it should be framed
                assert (got.value, got.error, got.schema_id) == (w["unframed"], None, None), where
            elif w.get("error") is None:
                assert got.error is None, f"{where}: {got.error}"
                assert got.value == w["expected"], where
                assert got.schema_id == w["schema_id"], where
            else:
                assert got.value is None and got.error and w["error"] in got.error, f"{where}: {got}"
    return len(recs)


@pytest.mark.parametrize("topic", ["orders", "payments", "clicks", "legacy"])
def test_every_value_decodes_to_what_was_encoded_by_the_registry_on_disk(generated, topic: str) -> None:
    logdir, expected = generated
    assert check_topic(logdir, expected, SchemaSources(paths=(logdir,)), topic) >= 2


def test_the_registry_found_by_schema_log_dir_and_in_a_partition_dir(generated) -> None:
    logdir, expected = generated
    assert check_topic(logdir, expected, SchemaSources(paths=(logdir / "orders-0",), schema_log_dir=logdir),
                       "orders")
    assert check_topic(logdir, expected, SchemaSources(paths=(logdir / "_schemas-0",)), "payments")


@pytest.mark.parametrize("topic", ["orders", "payments", "clicks"])
def test_schemas_dir_gives_the_same_values(generated, topic: str) -> None:
    logdir, expected = generated
    sources = SchemaSources(schemas_dir=logdir.with_name("logdir-schemas"))  # no _schemas at all
    assert check_topic(logdir, expected, sources, topic) >= 2


def test_without_schemas_every_framed_payload_names_its_unknown_id(generated) -> None:
    logdir, expected = generated
    decode, findings = payload_decoder("avro", SchemaSources())
    assert [f.code for f in findings] == ["schemas-none"]  # said once, then per record below
    for rec, w in zip(records(logdir, "orders"), expected["topics"]["orders"], strict=True):
        got = decode(rec.value)
        assert got.value is None and got.error, rec.offset
        if w.get("schema_id") is not None:
            assert f"schema id {w['schema_id']} is not in the registry" == got.error


def test_validate_names_the_path_that_fails(generated) -> None:
    logdir, expected = generated
    decode, _ = payload_decoder("json-schema", SchemaSources(paths=(logdir,), validate=True))
    for rec, w in zip(records(logdir, "clicks"), expected["topics"]["clicks"], strict=True):
        got = decode(rec.value)
        if "validate_error" in w:
            assert got.value is None and f"at {w['validate_error']}" in got.error, got
        elif w.get("error") is None:
            assert got.value == w["expected"] and got.error is None
    assert any("validate_error" in w for w in expected["topics"]["clicks"])


def test_a_decoder_asked_for_another_type_says_so(generated) -> None:
    logdir, expected = generated
    decode, _ = payload_decoder("protobuf", SchemaSources(paths=(logdir,)))
    order = records(logdir, "orders")[0]
    assert decode(order.value).error == "schema id 1 is AVRO, not PROTOBUF"
    assert decode(None).value is None and decode(None).error is None


def test_the_registry_is_what_the_generator_wrote(generated) -> None:
    logdir, expected = generated
    items = list(registry_listing([logdir]))
    versions = {f"{v.subject}/{v.version}": {"id": v.id, "schema_type": v.schema_type, "deleted": v.deleted}
                for v in items if isinstance(v, SchemaVersion)}
    settings = {f"{c.kind}/{c.subject or ''}": c.as_dict()["setting"] for c in items if isinstance(c, SubjectConfig)}
    assert versions == expected["registry"]["versions"]
    assert settings == expected["registry"]["settings"]
    assert "gone-value/1" not in versions and "config/gone-value" not in settings  # tombstoned after DELETE_SUBJECT
    assert versions["legacy-value/1"]["deleted"]
    refs = next(v for v in items if isinstance(v, SchemaVersion) and v.subject == "payments-value").references
    assert [(r.name, r.subject, r.version) for r in refs] == [("acme/common.proto", "acme/common.proto", 1)]
    assert [i for i in items if not isinstance(i, SchemaVersion | SubjectConfig)] == []


# --- hostile _schemas records -------------------------------------------------------------------------------------


def _key(**k: object) -> bytes:
    return json.dumps(k).encode()


def _schema(subject: str, version: int, schema_id: int, schema: str, **more: object) -> tuple[bytes, bytes]:
    return (_key(keytype="SCHEMA", subject=subject, version=version, magic=1),
            json.dumps({"subject": subject, "version": version, "id": schema_id, "schema": schema, **more}).encode())


GOOD_AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]})
HOSTILE = [
    (b"\xff\xfe not json", b"{}"),                                          # key not UTF-8 JSON
    (b"[1, 2]", b"{}"),                                                      # key a JSON array
    (_key(keytype="SCHEMA", subject="s", version="1", magic=1), b"{}"),     # version a string
    (_key(keytype="WHAT", magic=0), b"{}"),                                  # unknown key type
    (_key(keytype="SCHEMA", subject="s", version=1, magic=1), b"{" * 100000),  # value nested past any parser
    _schema("s", 2, 2**40, GOOD_AVRO),                                       # id beyond an int
    _schema("s", 3, 3, GOOD_AVRO, references=[{"name": 1}]),                 # a reference without its fields
    _schema("s", 4, 4, GOOD_AVRO, schemaType="XML"),                         # unknown type
    (_key(keytype="DELETE_SUBJECT", subject="ok", magic=0),
     json.dumps({"subject": "ok", "version": 2**62}).encode()),           # a huge count: soft-deletes ok/1 only
    _schema("ok", 1, 10, GOOD_AVRO),                                          # re-registered after: live again
    _schema("a", 1, 20, GOOD_AVRO, references=[{"name": "b", "subject": "b", "version": 1}]),  # a cycle a -> b -> a
    _schema("b", 1, 21, GOOD_AVRO, references=[{"name": "a", "subject": "a", "version": 1}]),
    _schema("p", 1, 30, "syntax = \"proto3\"; message {", schemaType="PROTOBUF"),  # does not compile
    _schema("p", 2, 31, "syntax = \"proto3\"; import \"../../etc/passwd.proto\"; message M {}", schemaType="PROTOBUF",
            references=[{"name": "../../etc/passwd.proto", "subject": "ok", "version": 1}]),  # a name outside
    _schema("j", 1, 40, "{not json", schemaType="JSON"),
    _schema("z", 1, 50, json.dumps({"type": "array", "items": "null"})),  # counts bounded by nothing: refused
    (_key(keytype="CONFIG", magic=0), b"\"FULL\""),                          # a config that is no object
]


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A log dir whose ``_schemas-0`` holds :data:`HOSTILE` after a DELETE_SUBJECT's subject, built by the
    project's writer."""
    logdir = tmp_path / "hostile"
    recs = [_schema("ok", 1, 10, GOOD_AVRO), *HOSTILE,
            # DELETE_SUBJECT soft-deletes up to its version; CLEAR_SUBJECT drops a subject's soft-deleted versions
            _schema("d", 1, 60, GOOD_AVRO), _schema("d", 2, 61, GOOD_AVRO),
            (_key(keytype="DELETE_SUBJECT", subject="d", magic=0), b'{"subject": "d", "version": 1}'),
            _schema("c", 1, 70, GOOD_AVRO, deleted=True), _schema("c", 2, 71, GOOD_AVRO),
            (_key(keytype="CLEAR_SUBJECT", subject="c", magic=0), b'{"subject": "c"}')]
    with LogDirWriter(logdir, cluster_id="q1Sh-9_ISia_zwGINzRvyQ", node_id=1) as w:
        p = w.partition("_schemas", 0, bytes(range(16)))
        for offset, (key, value) in enumerate(recs):
            p.append(record_batch(offset, [RecordSpec(key, value, 1_700_000_000_000 + offset)]))
    return logdir


def test_hostile_registry_records_are_findings_and_the_rest_loads(hostile: Path) -> None:
    items = list(registry_listing([hostile]))
    findings = [i for i in items if not isinstance(i, SchemaVersion | SubjectConfig)]
    invalid = [f for f in findings if f.code == "schema-record-invalid"]
    assert len(invalid) == 9, [f.message for f in invalid]
    assert all(f.path.endswith("_schemas-0/00000000000000000000.log") and f.position is not None for f in invalid)
    reasons = " | ".join(f.message for f in invalid)
    for words in ("key is not UTF-8 JSON", "key is a JSON list", "version is str, not int", "key type 'WHAT'",
                  "value is not UTF-8 JSON", "id 1099511627776 is not a schema id",
                  "reference 0's name is int, not str", "schemaType 'XML'", "CONFIG value is a JSON str"):
        assert words in reasons, words
    cycles = [f.message for f in findings if f.code == "schema-reference-invalid"]
    assert len(cycles) == 2 and all("reference cycle" in m for m in cycles), cycles
    versions = {(v.subject, v.version): v for v in items if isinstance(v, SchemaVersion)}
    assert not versions[("ok", 1)].deleted  # soft-deleted by the DELETE_SUBJECT, then written again
    assert (versions[("d", 1)].deleted, versions[("d", 2)].deleted) == (True, False)
    assert ("c", 1) not in versions and not versions[("c", 2)].deleted


def test_decoding_by_a_hostile_schema_is_an_error_not_an_exception(hostile: Path) -> None:
    decode, findings = payload_decoder("auto", SchemaSources(paths=(hostile,)))
    assert {f.code for f in findings} == {"schema-record-invalid", "schema-reference-invalid"}

    def framed(schema_id: int, body: bytes) -> bytes:
        return b"\x00" + struct.pack(">I", schema_id) + body

    cases = {
        framed(10, b"\x54"): ({"n": 42}, None),
        framed(20, b"\x54"): (None, "reference cycle"),
        framed(30, b"\x00"): (None, "Protobuf schema id 30 does not compile"),
        framed(31, b"\x00"): (None, "is not a relative .proto path"),
        framed(40, b"{}"): (None, "JSON schema id 40 is not JSON"),
        framed(50, b"\xfe\xff\xff\xff\xff\xff\xff\xff\x7f\x00"): (None, "items written in 0 bytes"),  # 2^62 nulls
        framed(10, b""): (None, "body does not decode by schema id 10"),
        framed(10, b"\xff" * 20): (None, "body does not decode by schema id 10"),
        b"\x00\xff\x00": ("AP8A", None),  # shorter than a frame, not UTF-8: raw bytes
    }
    for payload, (value, error) in cases.items():
        got = decode(payload)
        assert got.value == value, (payload, got)
        assert (got.error is None) if error is None else (error in got.error), (payload, got)


def test_message_indexes_are_bounded_by_the_payload(generated) -> None:
    logdir, _expected = generated
    decode, _ = payload_decoder("protobuf", SchemaSources(paths=(logdir,)))
    head = b"\x00\x00\x00\x00\x03"  # schema id 3: payments
    assert "message-index count 1073741823" in decode(head + b"\xfe\xff\xff\xff\x07").error  # 2^30 - 1 indexes
    assert "runs past the payload" in decode(head + b"\x80\x80").error
    assert "message-index count -1" in decode(head + b"\x01").error
    assert "message index -1 is negative" in decode(head + b"\x02\x01").error
    assert decode(head + b"\x02\x02").value == {}  # [1]: an empty Payment
    assert decode(head + b"\x00").value == {}      # [0]: an empty Header


def test_without_the_extra_a_schema_decoder_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fastavro", None)  # as if not installed: find_spec gives None
    with pytest.raises(UsageError, match=r"pip install 'kafkatool\[schemas\]'"):
        payload_decoder("avro")
    with pytest.raises(UsageError, match="fastavro"):
        payload_decoder("auto")
    assert payload_decoder("json")[0](b"[1]").value == [1]  # the simple decoders need nothing


# --- the schemas command ------------------------------------------------------------------------------------------


def test_schemas_command_text_and_jsonl(generated, run_cli) -> None:
    logdir, expected = generated
    p = run_cli("schemas", "-f", "jsonl", logdir)
    assert p.returncode == 0, p.stderr
    lines = p.jsonl()
    versions = {f"{d['subject']}/{d['version']}": {"id": d["id"], "schema_type": d["schema_type"],
                                                   "deleted": d["deleted"]}
                for d in lines if d["type"] == "schema_version"}
    assert versions == expected["registry"]["versions"]
    settings = {f"{d['kind']}/{d['subject'] or ''}": d["setting"] for d in lines if d["type"] == "schema_setting"}
    assert settings == expected["registry"]["settings"]
    assert {d["type"] for d in lines} == {"schema_version", "schema_setting"}
    text = run_cli("schemas", logdir)
    assert text.returncode == 0 and text.stderr == ""
    rows = [line.split() for line in text.stdout.splitlines()]
    assert ["legacy-value", "1", "6", "AVRO", "soft-deleted", "-"] == rows[3][:6]
    assert ["payments-value", "1", "3", "PROTOBUF", "-", "acme/common.proto=acme/common.proto/1"] == rows[6][:6]
    assert ["config", "orders-value", "FULL_TRANSITIVE"] == rows[9][:3]


def test_schemas_command_exit_codes(hostile: Path, generated, run_cli) -> None:
    p = run_cli("schemas", "-f", "jsonl", hostile)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    codes = [d["code"] for d in p.jsonl() if d["type"] == "finding"]
    assert codes.count("schema-record-invalid") == 9
    assert run_cli("schemas", "--fail-on", "error", hostile).returncode == 0
    logdir, _ = generated
    none = run_cli("schemas", logdir / "orders-0")
    assert none.returncode == 1 and "schemas-none" in none.stdout + none.stderr
    assert run_cli("schemas", logdir / "no-such-dir").returncode == 2
    assert run_cli("schemas", "-f", "xml", logdir).returncode == 2


def test_the_generator_is_deterministic(tmp_path: Path) -> None:
    """Every run writes the same bytes (protobuf's map entries included: serialized deterministically)."""
    for run in ("a", "b"):
        subprocess.run([sys.executable, str(GENERATOR), "--payloads", str(tmp_path / run / "logdir")],
                       cwd=PROJECT_ROOT, check=True, env={**os.environ, "PYTHONHASHSEED": str(ord(run))})
    a, b = (tree(tmp_path / run) for run in ("a", "b"))
    assert len(a) > 20 and a == b


def test_hostile_schemas_dir_files_are_findings(generated, tmp_path: Path) -> None:
    """A FIFO, a directory, bytes that are not UTF-8 and an id beyond an int, named as schema files: findings, never
    read (the FIFO would block a reader); the good files beside them still decode."""
    logdir, expected = generated
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "1.avsc").write_text(json.dumps(gen.ORDER_V1))
    os.mkfifo(schemas / "2.avsc")
    (schemas / "3.proto").mkdir()
    (schemas / "4.json").write_bytes(b"\xff\xfe{}")
    (schemas / "4294967296.avsc").write_text("{}")
    (schemas / "notes.txt").write_text("not a schema file name: left alone")
    decode, findings = payload_decoder("avro", SchemaSources(schemas_dir=schemas))
    assert sorted((Path(f.path).name, f.code) for f in findings) == [
        ("2.avsc", "schema-file-invalid"), ("3.proto", "schema-file-invalid"), ("4.json", "schema-file-invalid"),
        ("4294967296.avsc", "schema-file-invalid")]
    first = records(logdir, "orders")[0]
    assert decode(first.value).value == expected["topics"]["orders"][0]["expected"]
