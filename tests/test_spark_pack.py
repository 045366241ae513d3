"""Option ``packBytes``: small planned partitions packed into fewer Spark tasks, rows unchanged.

Planning is checked without Spark (budget, order, every part once, big pieces alone, 0 = as before);
reading through a real ``local[2]`` session must give the same rows packed or not, at every level.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from kafkatool.spark.plan import PACK_OPEN_COST, PackedPartition, SegmentPartition, pack, plan
from kafkatool.spark.read import read_partition

from .conftest import corpus_root

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

MIB = 1024 * 1024


@pytest.fixture(scope="session")
def kafka_corpus() -> Path:
    return corpus_root() / "kafka"


def _cost(p: SegmentPartition) -> int:
    """What the spec says a planned partition counts: its byte range plus the per-file open cost."""
    end = os.path.getsize(p.path) if p.end is None else p.end
    return end - p.start + PACK_OPEN_COST


def _flat(planned: list) -> list[SegmentPartition]:
    return [q for p in planned for q in (p.parts if isinstance(p, PackedPartition) else (p,))]


def _check_packs(planned: list, budget: int) -> None:
    """Each pack within budget, at least two parts; packs greedy: the next part would not have fitted."""
    for p in planned:
        if isinstance(p, PackedPartition):
            assert len(p.parts) >= 2
            assert all(type(q) is SegmentPartition for q in p.parts)
            assert sum(_cost(q) for q in p.parts) <= budget
        else:
            assert type(p) is SegmentPartition
    for a, b in zip(planned, planned[1:], strict=False):
        first = b.parts[0] if isinstance(b, PackedPartition) else b
        used = sum(_cost(q) for q in (a.parts if isinstance(a, PackedPartition) else (a,)))
        assert used + _cost(first) > budget, (a, b)


@pytest.mark.parametrize("budget", [2 * PACK_OPEN_COST + 40_000, 16 * MIB, 64 * MIB, 128 * MIB])
def test_packs_keep_order_budget_and_every_part_once(budget):
    path = str(corpus_root() / "real")
    whole = plan([path])
    packed = plan([path], pack_bytes=budget)
    assert len(whole) > 400
    assert _flat(packed) == whole  # same parts, same order, each once
    assert len(packed) < len(whole)
    assert any(isinstance(p, PackedPartition) for p in packed)
    _check_packs(packed, budget)
    # the open cost counts: no pack holds more files than the budget has open costs
    assert max(len(p.parts) for p in packed if isinstance(p, PackedPartition)) <= budget // PACK_OPEN_COST


def test_split_pieces_count_their_range(kafka_corpus):
    path = str(kafka_corpus / "logdir")
    split = plan([path], split_bytes=2048)
    assert any(p.end is not None for p in split)
    budget = 3 * PACK_OPEN_COST + 6000
    packed = plan([path], split_bytes=2048, pack_bytes=budget)
    assert _flat(packed) == split
    assert len(packed) < len(split)
    _check_packs(packed, budget)


def test_a_piece_over_the_budget_is_a_task_of_its_own(kafka_corpus, tmp_path):
    """A segment costing more than the budget breaks the run of packs around it and stands alone."""
    budget = 3 * PACK_OPEN_COST
    big = tmp_path / "big-0" / "00000000000000000000.log"
    big.parent.mkdir()
    with open(big, "wb") as fh:  # sparse: only planned (stat), never read here
        fh.truncate(budget - PACK_OPEN_COST + 1)
    paths = [str(kafka_corpus / "logdir"), str(big.parent), str(kafka_corpus / "recovery")]
    whole = plan(paths)
    packed = plan(paths, pack_bytes=budget)
    assert _flat(packed) == whole
    (alone,) = [p for p in packed if isinstance(p, SegmentPartition) and p.path == str(big)]
    i = packed.index(alone)
    assert isinstance(packed[i - 1], PackedPartition) and isinstance(packed[i + 1], PackedPartition)
    assert all(str(big) not in {q.path for q in p.parts} for p in packed if isinstance(p, PackedPartition))
    _check_packs(packed, budget)
    # a budget below every part's cost packs nothing: plain parts, as unpacked
    assert plan(paths, pack_bytes=PACK_OPEN_COST) == whole


def test_pack_bytes_zero_is_one_partition_per_segment(kafka_corpus):
    path = str(kafka_corpus)
    whole = plan([path])
    assert plan([path], pack_bytes=0) == whole
    assert all(type(p) is SegmentPartition for p in whole)
    assert plan([path], split_bytes=2048, pack_bytes=0) == plan([path], split_bytes=2048)
    assert len({(p.path, p.start) for p in whole}) == len(whole) > 50


def test_urls_are_never_packed(kafka_corpus):
    uri = (kafka_corpus / "logdir").as_uri()
    whole = plan([uri])
    assert len(whole) > 5
    assert plan([uri], pack_bytes=128 * MIB) == whole
    # mixed with local paths: the local ones pack, each URL part stays alone
    local = str(kafka_corpus / "recovery")
    packed = plan([local, uri], pack_bytes=128 * MIB)
    assert _flat(packed) == plan([local, uri])
    assert packed[-len(whole):] == whole
    assert all("://" not in q.path for p in packed if isinstance(p, PackedPartition) for q in p.parts)
    assert pack(whole, 128 * MIB) == whole


@pytest.mark.parametrize("level", ["batches", "records", "findings"])
def test_read_partition_of_a_pack_is_its_parts_in_order(kafka_corpus, level):
    packed = [p for p in plan([str(kafka_corpus)], pack_bytes=32 * MIB) if isinstance(p, PackedPartition)]
    assert packed
    p = packed[0]
    assert pickle.loads(pickle.dumps(p)) == p  # Spark ships it to the executors pickled
    got = [row for rb in read_partition(p, level) for row in rb.to_pylist()]
    want = [row for q in p.parts for rb in read_partition(q, level) for row in rb.to_pylist()]
    assert got == want != []
    assert len({row["file"] for row in got}) > 1  # rows keep their own file


def _mixed(kafka_corpus: Path) -> list[str]:
    """40 segments of 20 topic partitions, two of them damaged (so findings have rows): quick unpacked too."""
    return [str(kafka_corpus / d) for d in ("logdir", "legacy", "replicas", "recovery/crc-flip/before",
                                            "recovery/torn-tail/before")]


@pytest.mark.parametrize(("level", "rows"), [("batches", 500), ("records", 2000), ("findings", 15)])
def test_packed_load_gives_the_same_rows_in_fewer_tasks(spark, kafka_corpus, level, rows):
    paths = _mixed(kafka_corpus)
    plain = spark.read.format("kafka-log").option("level", level).load(paths)
    packed = spark.read.format("kafka-log").option("level", level).option("packBytes", 64 * MIB).load(paths)
    n_plain, n_packed = plain.rdd.getNumPartitions(), packed.rdd.getNumPartitions()
    assert n_plain == len(plan(paths)) >= 40
    assert n_packed == len(plan(paths, pack_bytes=64 * MIB)) < n_plain / 5
    want = sorted(plain.collect(), key=repr)
    got = sorted(packed.collect(), key=repr)
    assert len(want) > rows
    assert got == want
    assert len({(r.topic, r.partition, r.segment, r.file) for r in got}) > (3 if level == "findings" else 30)


def test_lowercase_option_name(spark, kafka_corpus):
    path = str(kafka_corpus)
    df = spark.read.format("kafka-log").option("packbytes", str(64 * MIB)).load(path)
    assert df.rdd.getNumPartitions() == len(plan([path], pack_bytes=64 * MIB)) < len(plan([path]))


def test_cli_spark_scan_pack_bytes(spark, kafka_corpus, tmp_path):
    """``--pack-bytes``: the same summary as without, from fewer tasks (fewer Parquet files written)."""
    import json

    from typer.testing import CliRunner

    from kafkatool.cli.main import app

    def kt(*args):
        return CliRunner().invoke(app, [str(a) for a in args])

    paths = [kafka_corpus / "logdir", kafka_corpus / "recovery" / "crc-flip" / "before"]
    plain = kt("spark", "scan", "-f", "jsonl", *paths, "--out", tmp_path / "plain")
    packed = kt("spark", "scan", "-f", "jsonl", "--pack-bytes", 64 * MIB, *paths, "--out", tmp_path / "packed")
    assert plain.exit_code == packed.exit_code == 1, (plain.output[-2000:], packed.output[-2000:])
    assert packed.stdout == plain.stdout
    lines = [json.loads(line) for line in packed.stdout.splitlines()]
    assert lines[-1]["scope"] == "total" and lines[-1]["batches"] > 149 and lines[-1]["crc_failures"] == 1
    assert (json.loads((tmp_path / "packed" / "summary.json").read_text())
            == json.loads((tmp_path / "plain" / "summary.json").read_text()))

    # a task writes a file per topic it read: a pack of several segments of one topic writes fewer
    def files(out, level):
        return len(list((tmp_path / out / level).rglob("*.parquet")))

    assert 0 < files("packed", "batches") < files("plain", "batches")
    bad = kt("spark", "scan", "--pack-bytes", -1, *paths, "--out", tmp_path / "bad")
    assert bad.exit_code == 2


@pytest.mark.parametrize("cores", [1, 2, 8, 64])
def test_min_partitions_shrinks_the_budget_to_keep_cores_busy(cores):
    """Like Spark's FilePartition.maxSplitBytes: min(packBytes, max(open cost, total cost / cores))."""
    path = str(corpus_root() / "real")
    whole = plan([path])
    costs = [_cost(p) for p in whole]
    budget = min(1 << 40, max(PACK_OPEN_COST, sum(costs) // cores))
    packed = plan([path], pack_bytes=1 << 40, min_partitions=cores)
    assert _flat(packed) == whole
    _check_packs(packed, budget)
    assert len(packed) >= cores  # every part costs at most the budget here, so no fewer packs than cores
    if cores == 1:
        assert len(packed) == 1 and packed == plan([path], pack_bytes=1 << 40)
    # packBytes smaller than the spread budget: packBytes rules, as without minPartitions
    assert plan([path], pack_bytes=16 * MIB, min_partitions=cores) == plan([path], pack_bytes=16 * MIB)


def test_min_partitions_never_goes_below_one_open_cost(kafka_corpus):
    path = str(kafka_corpus / "logdir")
    whole = plan([path])
    assert len(whole) > 5
    # more cores than segments: a budget of one open cost packs nothing (every file costs more)
    assert plan([path], pack_bytes=1 << 40, min_partitions=10_000) == whole


def test_min_partitions_option_spreads_a_packed_load(spark, kafka_corpus):
    paths = _mixed(kafka_corpus)
    one = spark.read.format("kafka-log").option("packBytes", 1 << 40).load(paths)
    spread = (spark.read.format("kafka-log").option("packBytes", 1 << 40).option("minPartitions", 4)
              .load(paths))
    assert one.rdd.getNumPartitions() == 1
    assert spread.rdd.getNumPartitions() == len(plan(paths, pack_bytes=1 << 40, min_partitions=4)) >= 4
    assert sorted(spread.collect(), key=repr) == sorted(one.collect(), key=repr)


def test_spark_scan_packs_no_coarser_than_the_cores(spark, kafka_corpus, tmp_path):
    """``kafkatool spark scan --pack-bytes``: however big the budget, a task per core at least."""
    from kafkatool.spark.scan import scan_paths

    paths = [str(kafka_corpus / "logdir"), str(kafka_corpus / "legacy")]
    cores = spark.sparkContext.defaultParallelism
    assert cores >= 2 and len(plan(paths, pack_bytes=1 << 40)) == 1
    seen: dict[str, int] = {}

    def progress(phase, done, total):
        seen[phase] = max(seen.get(phase, 0), total)

    plain = scan_paths(spark, paths, tmp_path / "plain")
    packed = scan_paths(spark, paths, tmp_path / "packed", pack_bytes=1 << 40, progress=progress)
    assert packed.partitions == plain.partitions
    assert seen["batches"] == len(plan(paths, pack_bytes=1 << 40, min_partitions=cores)) >= cores


@pytest.mark.parametrize(("option", "value"), [("packBytes", "128MiB"), ("minPartitions", "-2"), ("splitBytes", "x")])
def test_a_bad_number_option_is_named(spark, kafka_corpus, option, value):
    df = spark.read.format("kafka-log").option(option, value).load(str(kafka_corpus / "logdir"))
    with pytest.raises(Exception, match=f"option {option} must be a whole number >= 0, not '{value}'"):
        df.collect()
