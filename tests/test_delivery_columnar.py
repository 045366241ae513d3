"""``delivery``'s columnar path (pyarrow's CSV reader, numpy's sorted runs, the log compared by ranges) against its
row path (``KAFKATOOL_PURE_PYTHON=1``: csv.reader, one offset at a time): the same findings and the same lines
for every sink, built here from a seed: gaps, duplicates, rows out of order, rows the rules refuse (in the same
block as valid rows), empty lines, a quote or a CR that hands the rest of a file to the row reader, a BOM,
offsets up to 2^63-1, partitions not under the paths, a group's commit, runs spilled to disk, blocks of a few
hundred bytes (:data:`kafkatool.delivery.BLOCK_BYTES`, lowered here) so that a sink spans many.

The logs: ``fixtures/logdir``'s ``payments-0`` (committed, aborted, open transactions and control batches), a
partition written by :class:`kafkatool.logwriter.PartitionWriter` from 2^63 - 3001 to 2^63 - 2 (its end offset the
largest a long holds; a gap between two batches), and a segment of batches whose offsets go backwards (damaged:
the records below the consumer's position are skipped, as a consumer skips them).
"""

from __future__ import annotations

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


def outcome(sink: Path, logdir: Path, pure: bool, monkeypatch: pytest.MonkeyPatch, **kw: object) -> list:
    with monkeypatch.context() as m:
        if pure:
            m.setenv(PURE_ENV, "1")
        else:
            m.delenv(PURE_ENV, raising=False)
        m.setattr(delivery, "BLOCK_BYTES", 256)  # a block of a few lines: the sink spans many
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
