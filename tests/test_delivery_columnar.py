"""``delivery``'s columnar path (pyarrow's CSV and JSON readers, numpy's sorted runs, the log compared by ranges)
against its row path (``KAFKATOOL_PURE_PYTHON=1``: csv.reader or json.loads, one offset at a time): the same
findings and the same lines for every sink, built here from a seed: gaps, duplicates, rows out of order, rows the
rules refuse (in the same block as valid rows), empty lines, a quote or a CR that hands the rest of a file to the
row reader, a BOM, offsets up to 2^63-1, partitions not under the paths, a group's commit, runs spilled to disk,
blocks of a few hundred bytes (:data:`kafkatool.delivery.BLOCK_BYTES`, lowered here) so that a sink spans many.
JSON lines the same, with what only pyarrow's reader takes or reads otherwise: floats, bools, nulls, nested values,
keys in other cases, orders or twice, lines that are not JSON or not objects, Inf and -NaN, integers past int()'s
digit limit, control characters.

The logs: ``fixtures/logdir``'s ``payments-0`` (committed, aborted, open transactions and control batches), a
partition written by :class:`kafkatool.logwriter.PartitionWriter` from 2^63 - 3001 to 2^63 - 2 (its end offset the
largest a long holds; a gap between two batches), and a segment of batches whose offsets go backwards (damaged:
the records below the consumer's position are skipped, as a consumer skips them).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from kafkatool import delivery
from kafkatool.build import RecordSpec, record_batch
from kafkatool.delivery import OFFSET_MAX, PartitionDelivery, SinkChunk, delivery_paths, read_sink
from kafkatool.errors import UsageError
from kafkatool.logwriter import PartitionWriter
from kafkatool.model import Finding
from kafkatool.native import PURE_ENV

from .clirun import cli
from .test_delivery import FIXTURES, offsets_partition

TOP = OFFSET_MAX - 3000  # the high partition's first offset: its last is 2^63-2, its end offset 2^63-1


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("columnar") / "logdir"
    shutil.copytree(FIXTURES, root)
    offsets_partition(root, "billing", 60)
    with PartitionWriter(root / "high-0", topic="high", partition=0, topic_id=bytes(range(16)),
                         start_offset=TOP) as w:
        for base, n in ((TOP, 1000), (TOP + 1000, 500), (TOP + 2000, 1000)):  # [TOP+1500, TOP+2000): no batch
            w.append(record_batch(base, [RecordSpec(b"k", b"v", 1_700_000_000_000 + i) for i in range(n)]))
    back = root / "back-0"
    back.mkdir()
    (back / "00000000000000000000.log").write_bytes(b"".join(
        record_batch(base, [RecordSpec(b"k", b"v", 1_700_000_000_000 + i) for i in range(n)])
        for base, n in ((0, 20), (30, 10), (10, 15), (50, 5))))  # 10..24 after 30..39: backwards
    return root


def rows(seed: int, n: int, bad: bool) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.45:
            out.append(f"k,payments,0,{rnd.choice(range(0, 130))}")
        elif r < 0.75:
            out.append(f"k,high,0,{TOP + rnd.choice(range(-5, 3000))}")
        elif r < 0.85:
            out.append(f"k,back,0,{rnd.choice(range(0, 60))}")
        elif r < 0.9:
            out.append(f"k,absent,{rnd.choice(range(3))},{rnd.choice(range(9))}")
        elif r < 0.93:
            out.append("")
        elif bad:
            out.append(rnd.choice([
                "k,payments,0,-1", "k,payments,0,1.5", "k,payments,0,", "k,pay ments,0,3", "k,payments,2147483648,3",
                f"k,high,0,{OFFSET_MAX + 1}", f"k,high,0,{'0' * 10}{OFFSET_MAX}", "k,payments", "k,payments,0,3,x",
                "k,..,0,3", "k,payments,0,\u0663", "k,payments,0,007", f"k,high,0,{OFFSET_MAX}"]))
        else:
            out.append(f"k,high,0,{OFFSET_MAX}")
    return out


SINKS = {
    "plain": lambda: "key,topic,partition,offset\n" + "\n".join(rows(1, 3000, False)) + "\n",
    "bad rows": lambda: "key,topic,partition,offset\n" + "\n".join(rows(2, 3000, True)),
    "quote late": lambda: "key,topic,partition,offset\n" + "\n".join(
        rows(3, 2000, True) + ['"k\nk",payments,0,5'] + rows(4, 500, True)) + "\n",
    "cr late": lambda: "key,topic,partition,offset\n" + "\n".join(rows(5, 2000, False)) + "\r\n"
                                                      + "\r".join(rows(6, 500, True)),
    "crlf": lambda: "key,topic,partition,offset\r\n" + "\r\n".join(rows(7, 2000, True)),
    "bom, columns moved": lambda: "\ufeffOffset , partition,x,TOPIC\n" + "\n".join(
        ",".join((lambda f: [f[3], f[2], "x", f[1]] if len(f) == 4 else f)(line.split(",")))
        for line in rows(8, 2000, True)),
    "blank first line": lambda: "\n\nkey,topic,partition,offset\n" + "\n".join(rows(9, 500, True)),
    "long line": lambda: "key,topic,partition,offset\n" + "\n".join(rows(10, 300, True)) + "\n" + "x" * 5000
                                                       + ",payments,0,4\n" + "\n".join(rows(11, 300, True)),
    "sparse": lambda: "key,topic,partition,offset\n" + "\n".join(rows(15, 40, False)),
    "lone cr": lambda: "key,topic,partition,offset\n" + "".join(
        line + ("\r" if i % 40 == 39 else "\n") for i, line in enumerate(rows(16, 2000, True))),
    "gap across the commit": lambda: "key,topic,partition,offset\n" + "".join(
        f"k,payments,0,{o}\n" for o in [*range(0, 41), *range(80, 130)]),
    "header only": lambda: "key,topic,partition,offset\n",
    "empty": lambda: "",
    "bad header": lambda: "key,topic,offset\n" + "\n".join(rows(12, 50, False)),
    "not utf-8": lambda: "key,topic,partition,offset\n" + "\n".join(rows(13, 500, True)) + "\nk\udcff,payments,0,3\n"
                                                       + "\n".join(rows(14, 500, True)),
}


def as_json(line: str, rnd: random.Random) -> str:
    """A CSV row of :func:`rows` as a JSON line: offsets and partitions as numbers or digit strings, keys in
    varying order."""
    f = line.split(",")
    if len(f) != 4:
        return line if not line else json.dumps({"key": line})
    key, topic, part, off = f
    pairs = [("key", key), ("topic", topic), ("partition", int(part) if part.isdigit() else part),
             ("offset", int(off) if off.isascii() and off.isdigit() and off[0] != "0" else off)]
    if rnd.random() < 0.05:
        rnd.shuffle(pairs)
    return json.dumps(dict(pairs), separators=(",", ":"))


P = '{"topic":"payments","partition":0,"offset":%s}'
ODD_JSON = [
    P % "1.0", P % "true", P % "null", P % '{"v":3}', P % "[3]", P % f"{OFFSET_MAX + 1}", P % f"{1 << 64}",
    P % '"\\u0663"', P % '"\u0663"', P % '"0000000000000000000003"', P % "-0", P % "-1", P % '"-1"', P % "1e1",
    P % '""', P % "3" + P % "4", P % "3" + " x", " " + P % "3", P % "3" + "\x00", P % "3" + "\x0b", P % "3,",
    '{"topic":"payments","partition":false,"offset":3}', '{"topic":null,"partition":0,"offset":3}',
    '{"topic":["payments"],"partition":0,"offset":3}', '{"Topic":"payments","partition":0,"offset":3}',
    '{"topic":"payments","TOPIC":"payments","partition":0,"offset":3}', '{"topic":"payments","offset":3}',
    '{"topic":"payments","partition":0,"offset":3,"offset":4}', '{"topic":"payments","partition":0,"off\\u0073et":3}',
    '{"topic":"pay\\u006dents","partition":0,"offset":3}', '{"topic":"payments\x01","partition":0,"offset":3}',
    '{"topic":"2024-01-01","partition":0,"offset":3}', '{"topic":"pay\udcffments","partition":0,"offset":3}',
    '{"topic":"payments","partition":0,"offset":3',
    "not json", "[1,2,3]", "17", '"payments"', "   ", "\t", "\x0c",
    *(P % f'3,"v":{v}' for v in ("NaN", "-NaN", "Inf", "-Infinity", "1e400", '"\\ud800"', '"é"', "1", '"1"',
                                   "9" * 4400, "[" * 2000 + "]" * 2000)),
]


def jsonl_rows(seed: int, n: int, bad: bool) -> list[str]:
    rnd = random.Random(seed)
    out = [as_json(line, rnd) for line in rows(seed, n, bad)]
    if bad:
        for i in rnd.sample(range(n), n // 50):
            out[i] = rnd.choice(ODD_JSON)
    return out


JSON_SINKS = {
    "plain": lambda: "\n".join(jsonl_rows(21, 3000, False)) + "\n",
    "bad rows": lambda: "\n".join(jsonl_rows(22, 3000, True)),
    "crlf": lambda: "\r\n".join(jsonl_rows(23, 2000, True)) + "\r\n",
    "lone cr late": lambda: "\n".join(jsonl_rows(24, 1500, False)) + "\r" + "\r".join(jsonl_rows(25, 300, True)),
    "bom, blank first lines": lambda: "\ufeff\n \n" + "\n".join(jsonl_rows(26, 1000, True)),
    "bom": lambda: "\ufeff" + "\n".join(jsonl_rows(27, 1000, True)),
    "long line": lambda: "\n".join(jsonl_rows(28, 300, True)) + "\n" + P % f'4,"v":"{"x" * 5000}"' + "\n"
                         + "\n".join(jsonl_rows(29, 300, True)),
    "not utf-8": lambda: "\n".join(jsonl_rows(30, 500, True)) + '\n{"topic":"payments","v":"\udcff","partition":0,'
                                                            '"offset":3}\n' + "\n".join(jsonl_rows(31, 500, True)),
    "keys in another case": lambda: "\n".join(line.replace('"topic"', '" Topic "').replace('"offset"', '"OFFSET"')
                                              for line in jsonl_rows(32, 1500, True)),
    "sparse": lambda: "\n".join(jsonl_rows(33, 40, False)),
    "odd lines among valid ones": lambda: "\n".join(line for odd in ODD_JSON for line in (
        *(P % o for o in range(0, 130, 29)), odd, *(P % o for o in range(3, 130, 31)))),
    "offsets as strings": lambda: "\n".join(P % f'"{o}"' for o in range(0, 130, 2)),
    "empty": lambda: "",
}


def outcome(sink: Path, logdir: Path, pure: bool, monkeypatch: pytest.MonkeyPatch, block: int = 256,
            **kw: object) -> list:
    with monkeypatch.context() as m:
        if pure:
            m.setenv(PURE_ENV, "1")
        else:
            m.delenv(PURE_ENV, raising=False)
        m.setattr(delivery, "BLOCK_BYTES", block)  # a block of a few lines: the sink spans many
        m.setattr(delivery, "COLUMNS_FROM", 0)  # these sinks are small: columnar all the same
        try:
            return [x.as_dict() if isinstance(x, PartitionDelivery) else x
                    for x in delivery_paths([str(sink)], [logdir], **kw)]
        except UsageError as exc:
            return [f"usage: {exc}"]


@pytest.mark.parametrize("name", SINKS)
@pytest.mark.parametrize("options", [{}, {"run_size": 97}, {"group": "billing", "isolation": "read_uncommitted"},
                                     {"from_offset": 20, "to_offset": TOP + 1700}])
def test_columnar_and_row_paths_agree(tmp_path: Path, logdir: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                      options: dict) -> None:
    sink = tmp_path / "sink.csv"
    sink.write_bytes(SINKS[name]().encode("utf-8", "surrogateescape"))
    rows_path = outcome(sink, logdir, True, monkeypatch, **options)
    cols_path = outcome(sink, logdir, False, monkeypatch, **options)
    assert cols_path == rows_path
    assert rows_path  # something to compare: results, findings or the usage error


@pytest.mark.parametrize("name", JSON_SINKS)
@pytest.mark.parametrize("suffix", [".jsonl", ".txt"])
@pytest.mark.parametrize("options", [{}, {"run_size": 97}, {"group": "billing", "isolation": "read_uncommitted"}])
def test_json_lines_columnar_and_row_paths_agree(tmp_path: Path, logdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                 name: str, suffix: str, options: dict) -> None:
    """JSON lines, told by the suffix or by the first line: the columnar path's results are the row path's."""
    sink = tmp_path / f"sink{suffix}"
    sink.write_bytes(JSON_SINKS[name]().encode("utf-8", "surrogateescape"))
    rows_path = outcome(sink, logdir, True, monkeypatch, **options)
    cols_path = outcome(sink, logdir, False, monkeypatch, **options)
    assert cols_path == rows_path
    assert rows_path


def test_json_lines_longer_than_a_small_block(tmp_path: Path, logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of thousands of bytes inside a block, among valid ones: nesting deeper than json.loads takes, integers
    past int()'s digit limit (pyarrow reads both), a long value that is fine."""
    sink = tmp_path / "sink.jsonl"
    odd = [P % f'3,"v":{"[" * 2000 + "]" * 2000}', P % f'4,"v":{"9" * 4400}', P % f'5,"v":"{"9" * 4400}"',
           P % f'6,"v":[{"[" * 60 + "]" * 60}]']
    sink.write_text("\n".join(line for o in odd for line in (P % 7, o, P % 8)) + "\n")
    for block in (1 << 13, 1 << 16):
        assert outcome(sink, logdir, False, monkeypatch, block) == outcome(sink, logdir, True, monkeypatch, block)


def test_plain_json_blocks_are_read_as_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain JSON lines (keys in any order, other keys nested) come as arrays of offsets per topic-partition; a block
    with a refused row (a float) comes row by row, its finding naming the line, and the blocks after it are columns
    again."""
    monkeypatch.delenv(PURE_ENV, raising=False)
    monkeypatch.setattr(delivery, "BLOCK_BYTES", 256)
    sink = tmp_path / "sink.ndjson"
    lines = [json.dumps({"topic": "b", "partition": 0, "offset": str(o)} if o % 3 else  # digit strings
                        {"offset": str(o), "partition": 1, "topic": "a", "value": {"n": [o]}}) for o in range(60)]
    lines[25] = '{"topic": "b", "partition": 0, "offset": 25.0}'
    sink.write_text("\n".join(lines) + "\n")
    got = list(read_sink(str(sink)))
    chunks = [g for g in got if isinstance(g, SinkChunk)]
    assert chunks and chunks[0].topic == "a" and chunks[1].topic == "b"  # line 1 is offset 0 of a-1
    [bad] = [g for g in got if isinstance(g, Finding)]
    assert bad.code == "sink-row-invalid" and bad.message == "line 26: the offset 25.0 is not an integer"
    seen = sorted((g.topic, g.partition, int(o)) for g in chunks for o in g.offsets)
    assert sorted(seen + [g for g in got if type(g) is tuple]) == sorted(
        ("b", 0, o) if o % 3 else ("a", 1, o) for o in range(60) if o != 25)
    assert isinstance(got[-1], SinkChunk)  # the last block: columns again


def test_plain_blocks_are_read_as_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain CSV comes as arrays of offsets per topic-partition, in the order each first appears; a block with a
    refused row comes row by row, its finding naming the line, and the blocks after it are columns again."""
    monkeypatch.delenv(PURE_ENV, raising=False)
    monkeypatch.setattr(delivery, "BLOCK_BYTES", 64)
    sink = tmp_path / "sink.csv"
    lines = [f"b,0,{o}" if o % 3 else f"a,1,{o}" for o in range(40)]
    lines[25] = "a,1,x"
    sink.write_text("topic,partition,offset\n" + "\n".join(lines) + "\n")
    got = list(read_sink(str(sink)))
    chunks = [g for g in got if isinstance(g, SinkChunk)]
    assert chunks and chunks[0].topic == "a" and chunks[1].topic == "b"  # line 2 is a,1,0
    [bad] = [g for g in got if isinstance(g, Finding)]
    assert bad.code == "sink-row-invalid" and bad.message.startswith("line 27: ")
    seen = sorted((t, p, o) for g in got if isinstance(g, SinkChunk) for t, p, o in
                  ((g.topic, g.partition, int(o)) for o in g.offsets))
    seen += [g for g in got if type(g) is tuple]
    want = [(t, int(p), int(o)) for t, p, o in (line.split(",") for line in lines) if o != "x"]
    assert sorted(seen) == sorted(want)
    assert isinstance(got[-1], SinkChunk)  # the last block: columns again


def test_cli_output_is_the_row_paths(tmp_path: Path, logdir: Path) -> None:
    """The command's bytes and exit code, with and without KAFKATOOL_PURE_PYTHON (blocks of 4 MiB: 200,000 rows)."""
    sink = tmp_path / "sink.csv"
    rnd = random.Random(30)
    body = [f"k,high,0,{TOP + o}" for o in range(3000) if o % 97] * 60 + [f"k,payments,0,{o}" for o in range(130)]
    rnd.shuffle(body)
    sink.write_text("key,topic,partition,offset\n" + "\n".join(body) + "\nk,high,0,-3\n")
    args = ("delivery", "-f", "jsonl", "--group", "billing", "--sink", sink, logdir)
    pure, cols = cli(*args, env={PURE_ENV: "1"}), cli(*args, env={PURE_ENV: None})
    assert (cols.returncode, cols.stdout) == (pure.returncode, pure.stdout)
    [high] = [d for d in pure.jsonl() if d.get("topic") == "high"]
    held = [o for o in range(3000) if o % 97 and not 1500 <= o < 2000]
    assert pure.returncode == 1 and (high["duplicates_count"], high["duplicates_extra"]) == (len(held), 59 * len(held))


def test_parquet_columns_and_rows_agree(tmp_path: Path, logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet: a batch (65,536 rows) whose rows all follow the rules is taken as columns, any other row by row;
    the same results either way, for strings, dictionaries, signed and unsigned integers, nulls, negatives and
    values past 2^63-1."""
    import pyarrow as pa  # noqa: TID251 - writing the Parquet sinks (the [spark] extra)
    import pyarrow.parquet as pq  # noqa: TID251

    rnd = random.Random(31)
    n = 70_000
    topics = [rnd.choice(["payments", "high", "back"]) for _ in range(n)]
    offsets = [rnd.choice(range(130)) if t != "high" else TOP + rnd.choice(range(3000)) for t in topics]
    cases = {
        "strings": (pa.array(topics), pa.array(["0"] * n), pa.array([str(o) for o in offsets])),
        "dictionary, int32, int64": (pa.array(topics).dictionary_encode(), pa.array([0] * n, pa.int32()),
                                     pa.array(offsets, pa.int64())),
        "uint64 past 2^63-1, a null, a negative in the first batch": (
            pa.array(topics), pa.array([0] * 5 + [-1] + [0] * (n - 6), pa.int64()),
            pa.array(offsets[:3] + [1 << 63, None] + offsets[5:], pa.uint64())),
    }
    for name, (t, p, o) in cases.items():
        sink = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"topic": t, "partition": p, "offset": o}), sink)
        for options in ({}, {"run_size": 9973}):
            assert outcome(sink, logdir, False, monkeypatch, **options) == outcome(sink, logdir, True, monkeypatch,
                                                                                   **options), name
    monkeypatch.delenv(PURE_ENV, raising=False)
    got = list(read_sink(str(tmp_path / "strings.parquet")))
    assert got and all(isinstance(g, SinkChunk) for g in got)
