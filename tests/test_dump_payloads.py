"""``dump --key-decoder/--value-decoder``: keys and values read by Kafka's simple deserializers, in every format.

A log dir is written at test time by the project's writer (``kafkatool.logwriter``): one topic per decoder, its
values what the test packs (ints, longs, doubles, UUIDs as text and as 16 bytes, JSON, text), bad ones among them
(a 3-byte int, 5 bytes for a long, a UUID that is neither, JSON that does not parse), in two batches (the second
gzip-compressed). Every format must give back what the test wrote, and a ``payload-undecodable`` warning at each
bad one's batch naming its offset; the filters on decoded fields (``--value-field``/``--value-match``,
``--where``) must show exactly the records they select and say so when nothing matched.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import shutil
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # noqa: TID251 - the export's parquet read back
import pytest

from kafkatool.build import RecordSpec, record_batch
from kafkatool.cli.output.terminal import printable
from kafkatool.logwriter import LogDirWriter
from kafkatool.spark.options import payloads_of  # noqa: TID251
from kafkatool.spark.plan import plan  # noqa: TID251
from kafkatool.spark.read import read_partition  # noqa: TID251

T0 = 1_700_000_000_000
BAD = object()  # a payload the decoder must refuse
ORDERS = [{"customer": {"id": 42, "name": "Ann"}, "items": [{"sku": "A-1", "qty": 2}], "paid": True},
          {"customer": {"id": 7, "name": "Bo\u00e9"}, "items": [], "paid": False},
          {"customer": {"id": 42}, "items": [{"sku": "B-9", "qty": 1}, {"sku": "A-1", "qty": 5}], "paid": None},
          [1, 2.5, "x"], "just text", 12345678901234,
          {"customer": {"id": 3, "name": "\x1b[2J\u202eevil\x85"}, "items": [], "paid": False}]  # hostile text
U = [uuid.UUID(int=(i + 1) * 0x1234567890ABCDEF) for i in range(3)]
# topic -> decoder, [(payload, what it decodes to, or BAD)]
TOPICS: dict[str, tuple[str, list[tuple[bytes | None, Any]]]] = {
    "ints": ("int", [(struct.pack(">i", v), v) for v in (0, 42, -7, 2**31 - 1, -2**31)]
             + [(b"\x00\x01\x02", BAD), (None, None), (b"", BAD)]),
    "longs": ("long", [(struct.pack(">q", v), v) for v in (2**63 - 1, -1, 1_700_000_000_000)]
              + [(b"\x01\x02\x03\x04\x05", BAD)]),
    "doubles": ("double", [(struct.pack(">d", v), v) for v in (0.5, -1e300, 3.141592653589793)]
                + [(struct.pack(">d", float("nan")), "NaN"), (struct.pack(">f", 1.0), BAD)]),
    "uuids": ("uuid", [(str(U[0]).encode(), str(U[0])), (U[1].bytes, str(U[1])), (U[2].bytes, str(U[2])),
                       (b"not-a-uuid", BAD)]),
    "orders": ("json", [(json.dumps(v).encode(), v) for v in ORDERS] + [(b'{"customer": ', BAD), (b"\xff\xfe", BAD)]),
    "texts": ("string", [(t.encode(), t) for t in ("hello", "gr\u00fc\u00dfe", "")] + [(None, None)]),
}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("payloads") / "data"
    with LogDirWriter(root, cluster_id="c1", node_id=1) as ld:
        for n, (topic, (_decoder, values)) in enumerate(TOPICS.items()):
            w = ld.partition(topic, 0, bytes(range(n + 1, n + 17)))
            specs = [RecordSpec(f"k{i}".encode(), v, T0 + i) for i, (v, _) in enumerate(values)]
            half = len(specs) // 2
            w.append(record_batch(0, specs[:half]))
            w.append(record_batch(half, specs[half:], compression="gzip"))
    return root


def expected(topic: str) -> dict[int, Any]:
    return {i: want for i, (_v, want) in enumerate(TOPICS[topic][1])}


def bad_offsets(topic: str) -> list[int]:
    return [i for i, want in expected(topic).items() if want is BAD]


@pytest.mark.parametrize("topic", list(TOPICS))
def test_jsonl_gives_each_value_and_a_finding_for_each_bad_one(logdir: Path, run_cli, topic: str) -> None:
    decoder = TOPICS[topic][0]
    p = run_cli("dump", "-f", "jsonl", "--key-decoder", "string", "--value-decoder", decoder, logdir / f"{topic}-0")
    assert p.returncode == 0, p.stderr  # the warnings are below --fail-on error
    lines = p.jsonl()
    batches = {line["base_offset"]: line["position"] for line in lines if line["type"] == "batch"}
    records = {line["offset"]: line for line in lines if line["type"] == "record"}
    assert sorted(records) == sorted(expected(topic))  # every record shown, the bad ones raw
    for offset, want in expected(topic).items():
        r = records[offset]
        assert r["key_decoded"] == f"k{offset}" and r["key_schema_id"] is None and r["value_schema_id"] is None
        if want is BAD:
            assert r["value_decoded"] is None and r["value_decode_error"] and r["value"] is not None
        else:
            assert r["value_decoded"] == want and "value_decode_error" not in r
    findings = [line for line in lines if line["type"] == "finding"]
    assert [f["code"] for f in findings] == ["payload-undecodable"] * len(bad_offsets(topic))
    half = len(expected(topic)) // 2
    for f, offset in zip(findings, bad_offsets(topic), strict=True):
        assert f["severity"] == "warning" and f["message"].startswith(f"offset {offset}: value: ")
        assert f["position"] == batches[0 if offset < half else half] and f["path"].endswith(".log")
    assert run_cli("dump", "-f", "jsonl", "--value-decoder", decoder, "--fail-on", "warning",
                   logdir / f"{topic}-0").returncode == (1 if bad_offsets(topic) else 0)


def test_without_a_decoder_the_lines_are_as_before(logdir: Path, run_cli) -> None:
    p = run_cli("dump", "-r", "-f", "jsonl", logdir / "orders-0")
    records = [line for line in p.jsonl() if line["type"] == "record"]
    assert p.returncode == 0 and len(records) == len(expected("orders"))
    assert not [k for r in records for k in r if "decode" in k or "schema_id" in k]
    assert "payload-undecodable" not in p.stdout + p.stderr


def compact(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def test_text_and_dump_log_show_the_decoded_values(logdir: Path, run_cli) -> None:
    values = TOPICS["orders"][1]
    p = run_cli("dump", "--value-decoder", "json", logdir / "orders-0")
    shown = [line.strip() for line in p.stdout.splitlines() if line.startswith("        value")]
    assert len(shown) == len(values)
    for line, (_raw, want) in zip(shown, values, strict=True):
        if want is BAD:
            assert line.startswith("value not decoded: not UTF-8 JSON")
        else:
            assert line == f"value={printable(compact(want))}"
    assert p.stdout.count("WARNING payload-undecodable") == len(bad_offsets("orders"))
    assert not {"\x1b", "\u202e", "\x85"} & set(p.stdout)  # what a terminal would act on is escaped
    # kafka-dump-log's payload: what the decoder read (a string as it is), the raw text where it did not decode
    p = run_cli("dump", "-f", "dump-log", "--value-decoder", "json", logdir / "orders-0")
    payloads = [line.split(" payload: ", 1)[1] for line in p.stdout.splitlines() if " payload: " in line]
    assert payloads == [printable(raw.decode("utf-8", "replace") if want is BAD else want if isinstance(want, str)
                                  else compact(want)) for raw, want in values]
    assert p.stderr.count("payload-undecodable") == len(bad_offsets("orders"))


def test_csv_parquet_and_the_spark_reader_equal_jsonl(logdir: Path, run_cli, tmp_path: Path) -> None:
    for topic, (decoder, _values) in TOPICS.items():
        part = logdir / f"{topic}-0"
        want = {o: (None if v is BAD or v is None else compact(v)) for o, v in expected(topic).items()}
        p = run_cli("dump", "-f", "csv", "--value-decoder", decoder, part)
        rows = list(csv.DictReader(io.StringIO(p.stdout, newline="")))  # a NEL (\x85) in a cell is no line end
        assert {int(r["offset"]): r["value_decoded"] or None for r in rows} == want, topic
        assert all(r["value_schema_id"] == "" for r in rows) and "key_decoded" not in rows[0]
        assert p.stderr.count("payload-undecodable") == len(bad_offsets(topic))
        out = tmp_path / f"{topic}.parquet"
        assert run_cli("dump", "-f", "parquet", "--out", out, "--value-decoder", decoder, part).returncode == 0
        table = pq.read_table(out)
        assert str(table.schema.field("value_schema_id").type) == "int32"
        assert {r["offset"]: r["value_decoded"] for r in table.to_pylist()} == want, topic
        spark = {}
        options = payloads_of({"path": str(part), "valueDecoder": decoder})
        for piece in plan([str(part)]):
            for rb in read_partition(piece, "records", payloads=options):
                for r in rb.to_pylist():
                    spark[r["offset"]] = r["value_decoded"]
                    assert r["value"] == TOPICS[topic][1][r["offset"]][0]  # the raw value kept, bad ones too
        assert spark == want, topic


def test_value_field_and_where_filter_after_decoding(logdir: Path, run_cli) -> None:
    part = logdir / "orders-0"

    def offsets(*args: str) -> list[int]:
        p = run_cli("dump", "-f", "jsonl", "--value-decoder", "json", *args, part)
        assert p.returncode == 0, p.stderr
        return [line["offset"] for line in p.jsonl() if line["type"] == "record"]

    def chosen(test) -> list[int]:
        return [o for o, v in expected("orders").items() if v is not BAD and test(v)]

    def field(v: Any, *path: Any) -> Any:
        for step in path:
            v = v[step]
        return v

    ids = chosen(lambda v: isinstance(v, dict) and v["customer"]["id"] == 42)
    assert ids and offsets("--value-field", "customer.id", "--value-match", "^42$") == ids
    assert offsets("--where", "value.customer.id == 42") == ids
    assert offsets("--where", "value.customer.id < 42") == chosen(lambda v: isinstance(v, dict)
                                                                  and v["customer"]["id"] < 42)
    skus = chosen(lambda v: isinstance(v, dict) and len(v["items"]) > 1 and field(v, "items", 1, "sku") == "A-1")
    assert skus and offsets("--value-field", "items.1.sku", "--value-match", "A-1") == skus
    assert offsets("--where", 'value.customer.name ~= "^Bo"') == chosen(
        lambda v: isinstance(v, dict) and v["customer"].get("name", "").startswith("Bo"))
    assert offsets("--where", "value.paid == true") == chosen(lambda v: isinstance(v, dict) and v["paid"] is True)
    assert offsets("--where", "value.paid == null") == chosen(lambda v: isinstance(v, dict) and v["paid"] is None)
    assert offsets("--where", "value.1 == 2.5") == chosen(lambda v: isinstance(v, list))
    assert offsets("--where", 'value == "just text"') == chosen(lambda v: v == "just text")
    # both filters must hold; --key (bytes) and --value-field (decoded) together
    assert offsets("--where", "value.customer.id == 42", "--where", "value.paid == true") == ids[:1]
    assert offsets("--key", "^k2$", "--value-field", "customer.id", "--value-match", "42") == [2]


def test_a_filter_that_matches_nothing_says_so(logdir: Path, run_cli) -> None:
    part = logdir / "orders-0"
    p = run_cli("dump", "--value-decoder", "json", "--value-field", "customer.id", "--value-match", "^99$", part)
    assert p.returncode == 0 and "|" not in p.stdout  # no record line
    assert "no record matched --value-field customer.id --value-match ^99$ in 1 record file" in p.stderr
    assert "no decoded payload had this field" not in p.stderr
    # the unreadable records are named all the same: the filter could not look at them
    assert p.stdout.count("payload-undecodable") == len(bad_offsets("orders"))
    p = run_cli("dump", "--value-decoder", "json", "--where", "value.customer.nope == 1", part)
    assert p.returncode == 0 and "--where value.customer.nope == 1: no decoded payload had this field" in p.stderr


@pytest.mark.parametrize("args, says", [
    (["--value-decoder", "json", "--value-field", "customer..id", "--value-match", "1"], "dotted path"),
    (["--value-decoder", "json", "--value-field", "", "--value-match", "1"], "dotted path"),
    (["--value-decoder", "json", "--value-field", "customer.id", "--value-match", "("], "not a regular expression"),
    (["--value-decoder", "json", "--value-field", "customer.id"], "needs --value-match"),
    (["--value-field", "customer.id", "--value-match", "1"], "give --value-decoder"),
    (["--key-decoder", "int", "--where", "value.x == 1"], "give --value-decoder"),
    (["--value-decoder", "json", "--where", "value.x = 1"], "key|value[.PATH] OP LITERAL"),
    (["--value-decoder", "json", "--where", "value.x == nope"], "not a JSON literal"),
    (["--value-decoder", "json", "--where", "value.x < [1]"], "compares with a number or a string"),
    (["--value-decoder", "json", "--where", "value.x ~= \"(\""], "not a regular expression"),
    (["--value-decoder", "int32"], "unknown decoder"),
    (["--value-decoder", "json", "--decode", "auto"], "one or the other"),
    (["--schemas", "."], "are for --key-decoder"),
])
def test_bad_filters_and_decoders_are_usage_errors(logdir: Path, run_cli, args: list[str], says: str) -> None:
    p = run_cli("dump", *args, logdir / "orders-0")
    assert p.returncode == 2 and says in p.stderr and p.stdout == "", p.stderr


def test_a_value_nested_deep_is_shown_or_refused_never_a_crash(tmp_path: Path, run_cli) -> None:
    depths = (500, 900, 5000, 100_000)  # Python's json parses the first two, not the others
    with LogDirWriter(tmp_path / "data", cluster_id="c1", node_id=1) as ld:
        ld.partition("deep", 0, bytes(range(1, 17))).append(record_batch(0, [
            RecordSpec(b"k", b"[" * n + b"]" * n, T0) for n in depths]))
    for fmt in ("text", "jsonl", "dump-log", "csv"):
        p = run_cli("dump", "-f", fmt, "--value-decoder", "json", tmp_path / "data" / "deep-0")
        assert p.returncode == 0 and "internal error" not in p.stderr, (fmt, p.stderr[-300:])
        assert (p.stdout + p.stderr).count("payload-undecodable") == 2, fmt


def test_schema_decoders_through_dump_the_export_and_the_spark_reader(tmp_path: Path, run_cli) -> None:
    """The generator's Confluent-framed topics (``fixtures/generate.py --payloads``: Avro, Protobuf, JSON Schema,
    bad payloads) with ``--value-decoder auto --validate``: each value what the generator says it encoded, each bad
    one a finding naming its offset and the generator's reason, through ``_schemas`` and through ``--schemas``."""
    pytest.importorskip("fastavro")
    from .test_fixtures import gen

    out = tmp_path / "logdir"
    written = json.loads(json.dumps(gen.payloads(out)))
    want: dict[tuple[str, int], tuple[Any, int | None, str | None]] = {}
    for topic, rows in written["topics"].items():
        for r in rows:
            reason = r.get("validate_error") or r.get("error")  # the wrong magic byte too: orders-value is there
            value = r["expected"]
            want[topic, r["offset"]] = (None if reason else value, r.get("schema_id"), reason)
    parts = [out / f"{topic}-0" for topic in written["topics"]]
    for sources in ([out], ["--schemas", out.with_name("logdir-schemas"), *parts]):
        p = run_cli("dump", "-f", "jsonl", "--value-decoder", "auto", "--validate", *sources)
        assert p.returncode == 0, p.stderr
        lines = p.jsonl()
        got = {(r["topic"], r["offset"]): r for r in lines if r["type"] == "record" and r["topic"] in written["topics"]}
        assert sorted(got) == sorted(want)
        findings = {(Path(f["path"]).parent.name.rsplit("-", 1)[0], int(f["message"].split(":")[0].split()[1])):
                    f["message"] for f in lines if f["type"] == "finding" and f["code"] == "payload-undecodable"}
        assert sorted(findings) == sorted(k for k, (_v, _s, reason) in want.items() if reason)
        for k, (value, schema_id, reason) in want.items():
            assert got[k]["value_decoded"] == value, k
            if reason:
                assert reason in findings[k], (k, findings[k])
            else:
                assert got[k]["value_schema_id"] == schema_id, k
    csv_out = tmp_path / "rows.csv"
    assert run_cli("dump", "-f", "csv", "-o", csv_out, "--value-decoder", "auto", "--validate", out).returncode == 0
    with open(csv_out, newline="") as fh:
        rows = {(r["topic"], int(r["offset"])): r for r in csv.DictReader(fh) if r["topic"] in written["topics"]}
    assert {k: None if r["value_decoded"] == "" else json.loads(r["value_decoded"]) for k, r in rows.items()} == {
        k: v for k, (v, _s, _r) in want.items()}
    options = payloads_of({"path": str(out), "valueDecoder": "auto", "validate": "true"})
    spark = {}
    for piece in plan([str(p) for p in parts]):
        for rb in read_partition(piece, "records", payloads=options):
            spark.update({(r["topic"], r["offset"]): None if r["value_decoded"] is None
                          else json.loads(r["value_decoded"]) for r in rb.to_pylist()})
    assert spark == {k: v for k, (v, _s, _r) in want.items()}


def test_a_partition_dir_named_alone_finds_the_schemas_partition_beside_it(tmp_path: Path, run_cli) -> None:
    """``dump --value-decoder auto OUT/orders-0``: the ``_schemas`` partition of the log dir it is in decodes it, as
    ``--schema-log-dir OUT`` does; a copy in a log dir with no ``_schemas`` (or only a link to nothing by its name)
    says ``schemas-none`` once and each framed value's unknown id; a link named ``_schemas-0`` to the real one is
    followed, as discovery follows a linked partition dir."""
    pytest.importorskip("fastavro")
    from .test_fixtures import gen

    out = tmp_path / "logdir"
    written = json.loads(json.dumps(gen.payloads(out)))["topics"]["orders"]
    want = {r["offset"]: None if r.get("error") else r["expected"] for r in written}

    def records(*args: Any) -> tuple[dict[int, Any], list[dict]]:
        p = run_cli("dump", "-r", "-f", "jsonl", "--value-decoder", "auto", *args)
        assert p.returncode == 0, p.stderr
        lines = p.jsonl()
        return ({r["offset"]: (r["value_decoded"], r.get("value_decode_error"))
                 for r in lines if r["type"] == "record"},
                [f for f in lines if f["type"] == "finding"])

    beside, found = records(out / "orders-0")
    assert beside == records("--schema-log-dir", out, out / "orders-0")[0]
    assert {o: v for o, (v, _e) in beside.items()} == want
    assert not [f for f in found if f["code"] == "schemas-none"], found

    alone = tmp_path / "elsewhere" / "orders-0"
    alone.parent.mkdir()
    (tmp_path / "elsewhere" / "_schemas-0").symlink_to(tmp_path / "gone")  # hostile: a link to nothing
    shutil.copytree(out / "orders-0", alone)
    got, found = records(alone)
    assert [f["code"] for f in found].count("schemas-none") == 1
    framed = [o for o, (_v, err) in got.items() if err and "not in the registry" in err]
    assert framed and framed == [r["offset"] for r in written if base64.b64decode(r["payload"])[:1] == b"\0"]
    (tmp_path / "elsewhere" / "_schemas-0").unlink()
    (tmp_path / "elsewhere" / "_schemas-0").symlink_to(out / "_schemas-0")
    got, found = records(alone)
    assert got == beside and not [f for f in found if f["code"] == "schemas-none"]
