"""Filter pushdown: filters on the columns constant over a segment prune whole segments, rows unchanged.

The evaluation of each pushed filter on a segment's constants is checked without Spark against SQL's
three-valued logic (NULL included); then, on a real ``local[2]`` session with
``spark.sql.python.filterPushdown.enabled`` on, each WHERE clause must give the rows Spark itself gives
from every row of the same files, from fewer input partitions when a filter rules segments out, at
every level; with the conf off (its default) reads still work, unpruned.
"""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatool.spark import SESSION_CONF
from kafkatool.spark.plan import PackedPartition, SegmentPartition, plan
from kafkatool.spark.pushdown import evaluate, may_match, pushable
from kafkatool.spark.schema import BATCHES, FINDINGS, records_schema
from kafkatool.spark.source import KafkaLogDataSource, KafkaLogPushdownReader, KafkaLogReader

from .conftest import corpus_root

ds = pytest.importorskip("pyspark.sql.datasource")
if not hasattr(ds, "EqualTo"):  # PySpark 4.0: no filter pushdown to Python data sources
    pytest.skip("filter pushdown needs PySpark >= 4.1", allow_module_level=True)

from pyspark.sql.datasource import (  # noqa: E402
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

# Spark tests run in one process after the rest (make test: -m spark), so one JVM serves them all.
pytestmark = pytest.mark.spark

CONF = "spark.sql.python.filterPushdown.enabled"
MIB = 1024 * 1024

ORDERS = SegmentPartition("/data/orders-3/00000000000000000086.log", "orders", 3, 86)
FLAT = SegmentPartition("/data/flat/copy.log", None, -1, None)  # outside a partition dir, not a Kafka name

T, P, S, F = ("topic",), ("partition",), ("segment",), ("file",)


# ---------------------------------------------------------------------------------------------
# Evaluation on a segment's constants, without Spark


@pytest.mark.parametrize(("f", "want"), [
    (EqualTo(T, "orders"), True),
    (EqualTo(T, "order"), False),
    (EqualTo(T, "Orders"), False),  # binary comparison: case counts
    (EqualTo(P, 3), True),
    (EqualTo(P, 4), False),
    (EqualTo(S, 86), True),
    (EqualTo(F, "/data/orders-3/00000000000000000086.log"), True),
    (EqualTo(F, "00000000000000000086.log"), False),
    (EqualTo(T, None), None),  # = NULL is NULL
    (EqualNullSafe(T, "orders"), True),
    (EqualNullSafe(T, "x"), False),
    (EqualNullSafe(S, None), False),
    (GreaterThan(P, 2), True),
    (GreaterThan(P, 3), False),
    (GreaterThan(T, "order"), True),
    (GreaterThan(T, "orders"), False),
    (GreaterThan(T, "Zebra"), True),  # by code point, as Spark compares UTF-8 bytes
    (GreaterThanOrEqual(P, 3), True),
    (GreaterThanOrEqual(P, 4), False),
    (GreaterThanOrEqual(S, 86), True),
    (LessThan(S, 87), True),
    (LessThan(S, 86), False),
    (LessThan(T, "p"), True),
    (LessThanOrEqual(S, 86), True),
    (LessThanOrEqual(S, 85), False),
    (LessThanOrEqual(P, None), None),
    (In(P, (0, 3)), True),
    (In(P, [0, 3]), True),  # PySpark hands In's values over as a list
    (In(P, (0, 1)), False),
    (In(P, (0, None)), None),  # 3 IN (0, NULL) is NULL
    (In(P, (3, None)), True),
    (In(T, ("orders", "txn")), True),
    (IsNull(T), False),
    (IsNotNull(T), True),
    (IsNull(S), False),
    (IsNotNull(S), True),
    (StringStartsWith(T, "ord"), True),
    (StringStartsWith(T, "rd"), False),
    (StringStartsWith(T, ""), True),
    (StringEndsWith(F, ".log"), True),
    (StringEndsWith(F, ".index"), False),
    (StringContains(F, "/orders-3/"), True),
    (StringContains(F, "/orders-4/"), False),
    (StringContains(T, "RDER"), False),
    (Not(EqualTo(T, "orders")), False),
    (Not(EqualTo(T, "txn")), True),
    (Not(In(P, (0, 1))), True),
    (Not(In(P, (0, None))), None),  # 3 NOT IN (0, NULL) is NULL: the row is not kept
    (Not(In(P, (3, None))), False),
    (Not(IsNull(T)), True),
    (Not(StringStartsWith(T, "ord")), False),
    (Not(GreaterThan(S, 100)), True),
    (Not(EqualTo(T, None)), None),
    (Not(Not(EqualTo(P, 3))), True),
])
def test_each_filter_on_a_segment(f, want):
    assert pushable(f)
    assert evaluate(f, ORDERS) is want
    assert may_match([f], ORDERS) is (want is True)


@pytest.mark.parametrize(("f", "want"), [
    # topic and segment are NULL here: comparisons are NULL (not true), IS NULL is true
    (EqualTo(T, "orders"), None),
    (Not(EqualTo(T, "orders")), None),
    (GreaterThan(S, 0), None),
    (LessThanOrEqual(S, 0), None),
    (Not(LessThanOrEqual(S, 0)), None),
    (In(T, ("orders",)), None),
    (Not(In(T, ("orders",))), None),
    (StringStartsWith(T, ""), None),
    (Not(StringContains(T, "x")), None),
    (IsNull(T), True),
    (IsNotNull(T), False),
    (Not(IsNull(T)), False),
    (Not(IsNotNull(S)), True),
    (EqualNullSafe(T, None), True),
    (EqualNullSafe(T, "orders"), False),
    (Not(EqualNullSafe(T, "orders")), True),
    (Not(EqualNullSafe(S, None)), False),
    (EqualTo(P, -1), True),  # partition is -1 outside a partition dir, never NULL
    (GreaterThanOrEqual(P, 0), False),
    (EqualTo(F, "/data/flat/copy.log"), True),
])
def test_null_constants_follow_sql(f, want):
    assert pushable(f)
    assert evaluate(f, FLAT) is want
    assert may_match([f], FLAT) is (want is True)


def test_all_filters_must_hold():
    assert may_match([], ORDERS)
    assert may_match([EqualTo(T, "orders"), In(P, (0, 3)), IsNotNull(S)], ORDERS)
    assert not may_match([EqualTo(T, "orders"), In(P, (0, 1))], ORDERS)
    assert not may_match([IsNull(T), EqualTo(T, "x")], FLAT)


@dataclass(frozen=True)
class _Unknown(Filter):  # a filter class of a later PySpark, say
    attribute: tuple


@pytest.mark.parametrize("f", [
    EqualTo(("base_offset",), 10),  # not constant over a segment
    GreaterThan(("offset",), 10),
    EqualTo(("topic", "x"), "orders"),  # a nested path
    EqualTo(("Topic",), "orders"),  # Spark hands over the schema's own name
    EqualTo(P, "3"),  # literals of another type than the column's
    EqualTo(P, True),
    EqualTo(P, 3.0),
    EqualTo(T, 3),
    GreaterThan(S, 1.5),
    In(P, ()),
    In(P, (0, "3")),
    StringStartsWith(P, "1"),
    StringContains(S, "8"),
    Not(EqualTo(("offset",), 1)),
    _Unknown(T),
    Not(_Unknown(T)),
])
def test_other_filters_are_not_kept(f):
    assert not pushable(f)
    assert not pushable(f, "records")


def test_file_is_not_constant_at_the_findings_level():
    """A finding's ``file`` is the file it is about (a segment's ``.index`` too), so no pruning on it."""
    for f in (EqualTo(F, ORDERS.name), StringEndsWith(F, ".index"), Not(StringContains(F, "x")), IsNull(F)):
        assert pushable(f, "batches") and pushable(f, "records")
        assert not pushable(f, "findings")
    assert pushable(EqualTo(T, "orders"), "findings") and pushable(In(S, (0, 86)), "findings")


@pytest.fixture(scope="module")
def kafka_corpus() -> Path:
    return corpus_root() / "kafka"


def _flat(planned: list) -> list[SegmentPartition]:
    return [q for p in planned for q in (p.parts if isinstance(p, PackedPartition) else (p,))]


def test_push_filters_keeps_the_decidable_ones_and_returns_every_filter(kafka_corpus):
    path = str(kafka_corpus)
    reader = KafkaLogPushdownReader({"path": path}, "batches", "binary", BATCHES)
    filters = [IsNotNull(T), EqualTo(T, "codecs"), GreaterThan(("base_offset",), 10), In(P, [0, 3]),
               Not(EqualTo(F, "x"))]
    back = list(reader.pushFilters(filters))
    assert len(back) == len(filters) and all(b is f for b, f in zip(back, filters, strict=True))  # by reference
    assert reader.filters == (filters[0], filters[1], filters[3], filters[4])
    want = [p for p in plan([path]) if p.topic == "codecs" and p.partition in (0, 3)]
    assert len(want) == 4
    assert reader.partitions() == want
    clone = pickle.loads(pickle.dumps(reader))  # Spark ships the reader to the executors pickled
    assert clone.filters == reader.filters and clone.partitions() == want

    findings = KafkaLogPushdownReader({"path": path}, "findings", "binary", FINDINGS)
    filters = [StringEndsWith(F, ".index"), EqualTo(T, "rtopic")]
    assert list(findings.pushFilters(filters)) == filters
    assert findings.filters == (filters[1],)
    assert findings.partitions() == [p for p in plan([path]) if p.topic == "rtopic"] != []


def test_pruning_comes_before_splitting_and_packing(kafka_corpus, monkeypatch):
    import kafkatool.spark.plan as planning

    path = str(kafka_corpus)
    options = {"path": path, "splitBytes": "2048", "packBytes": str(16 * MIB)}
    reader = KafkaLogPushdownReader(options, "records", "binary", records_schema())
    reader.pushFilters([StringStartsWith(T, "codec"), Not(EqualTo(P, 4))])
    split, opened = planning._split, []
    monkeypatch.setattr(planning, "_split", lambda p, n: opened.append(p.topic) or split(p, n))
    parts = reader.partitions()
    assert set(opened) == {"codecs"}  # no index of a dropped segment is read to split it
    monkeypatch.undo()
    want = [q for q in plan([path], split_bytes=2048) if q.topic.startswith("codec") and q.partition != 4]
    assert _flat(parts) == want
    assert any(q.end is not None for q in _flat(parts))
    assert any(isinstance(p, PackedPartition) for p in parts)
    assert len(parts) < len(plan([path], split_bytes=2048, pack_bytes=16 * MIB))
    # nothing passes: still the one empty partition Spark needs
    reader.pushFilters([EqualTo(T, "no-such-topic")])
    assert reader.partitions() == [SegmentPartition("", None, -1, None, 0, 0)]
    # no filters: plan as it was
    assert KafkaLogReader(options, "records", "binary", records_schema()).partitions() == plan(
        [path], split_bytes=2048, pack_bytes=16 * MIB)
    assert plan([path], keep=lambda p: True) == plan([path])


def test_only_the_pushdown_planner_gets_push_filters(kafka_corpus):
    """PySpark >= 4.1 fails any read whose reader overrides pushFilters while the conf is off: the
    reader made outside its filter-pushdown planner must not override it."""
    from pyspark.sql.datasource import DataSourceReader

    reader = KafkaLogDataSource({"path": str(kafka_corpus)}).reader(BATCHES)
    assert type(reader) is KafkaLogReader
    assert reader.pushFilters.__func__ is DataSourceReader.pushFilters
    assert KafkaLogPushdownReader.pushFilters is not DataSourceReader.pushFilters
    assert SESSION_CONF[CONF] == "true"


# ---------------------------------------------------------------------------------------------
# Through Spark: the rows of every row filtered by Spark itself, from fewer input partitions


@pytest.fixture
def pushdown(spark):
    """Set the conf (a runtime SQL conf) on for the test; put back what it was after."""
    before = spark.conf.get(CONF)

    def turn(on: bool) -> None:
        spark.conf.set(CONF, "true" if on else "false")

    turn(True)
    yield turn
    spark.conf.set(CONF, before)


@pytest.fixture(scope="module")
def every_row(spark):
    """``(level, paths) -> DataFrame`` of every row of those files, as local rows: a WHERE on it is
    Spark's own evaluation over all rows, with no data source (and no pruning) involved."""
    cache: dict = {}

    def get(level: str, paths: list[str]):
        key = (level, tuple(paths))
        if key not in cache:  # packed: fewer tasks, the same rows (test_spark_pack)
            df = spark.read.format("kafka-log").option("level", level).option("packBytes", 64 * MIB).load(paths)
            cache[key] = spark.createDataFrame(df.collect(), df.schema)
        return cache[key]

    return get


def _read(spark, level: str, paths: list[str], clause: str) -> tuple[list, int]:
    df = spark.read.format("kafka-log").option("level", level).load(paths).where(clause)
    return sorted(df.collect(), key=repr), df.rdd.getNumPartitions()


def _check(spark, every_row, level: str, paths: list[str], clause: str,
           keep: Callable[[SegmentPartition], bool]) -> list:
    """The rows of ``clause`` equal Spark's over every row; the input partitions are the segments ``keep``
    (the clause worked out by hand on each segment) is true of; returns the rows."""
    got, n = _read(spark, level, paths, clause)
    want = sorted(every_row(level, paths).where(clause).collect(), key=repr)
    assert got == want, clause
    planned = plan(paths)
    kept = [p for p in planned if keep(p)]
    assert n == max(1, len(kept)), clause
    if len(kept) < len(planned):
        assert n < len(planned)
    if level != "findings":
        assert {(r.topic, r.partition, r.segment, r.file) for r in got} <= {
            (p.topic, p.partition, p.segment, p.name) for p in kept}
    return got


def _everything(p: SegmentPartition) -> bool:
    return True


BATCH_CLAUSES = [
    ("topic = 'codecs'", lambda p: p.topic == "codecs", 50),
    ("topic in ('txn', 'headers')", lambda p: p.topic in ("txn", "headers"), 100),
    ("partition > 0", lambda p: p.partition > 0, 20),
    ("topic like 'codec%'", lambda p: p.topic.startswith("codec"), 50),
    ("segment = 86", lambda p: p.segment == 86, 100),
    ("file like '%/txn-0/%'", lambda p: "/txn-0/" in p.name, 100),
    ("not topic like 'r%' and topic <> 'orders'", lambda p: p.topic[0] != "r" and p.topic != "orders", 300),
    ("segment between 90 and 200 and partition = 0", lambda p: 90 <= p.segment <= 200 and p.partition == 0, 100),
    ("base_offset > 10 and topic = 'codecs'", lambda p: p.topic == "codecs", 20),  # base_offset: on rows only
    ("(topic = 'txn' or partition = 3) and topic like 'codec%'", lambda p: p.topic == "codecs", 5),  # OR: not pushed
    ("segment <=> 0 and topic not in ('rtopic', 'orders')", lambda p: p.segment == 0 and p.topic not in (
        "rtopic", "orders"), 200),
    ("topic = 'no-such-topic'", lambda p: False, 0),
]


def test_batches_pruned_rows_unchanged(spark, pushdown, every_row, kafka_corpus):
    paths = [str(kafka_corpus)]
    assert len(plan(paths)) > 80
    for clause, keep, rows in BATCH_CLAUSES:
        got = _check(spark, every_row, "batches", paths, clause, keep)
        assert len(got) >= rows, clause
        assert (len(got) > 0) is (rows > 0), clause


def test_conf_off_reads_everything_the_same(spark, pushdown, kafka_corpus):
    paths = [str(kafka_corpus / "logdir")]
    total = len(plan(paths))
    for clause, pruned in [("topic = 'codecs' and partition in (0, 3)", True), ("file like '%/txn-0/%'", True),
                           ("base_offset > 10", False),
                           ("topic = 'txn' or partition = 3", False)]:  # an OR is not pushed
        pushdown(True)
        on, n_on = _read(spark, "batches", paths, clause)
        pushdown(False)
        off, n_off = _read(spark, "batches", paths, clause)
        assert on == off != []
        assert n_off == total
        assert n_on < total if pruned else n_on == total


def test_records_level_prunes(spark, pushdown, every_row, kafka_corpus):
    paths = [str(kafka_corpus / "logdir"), str(kafka_corpus / "legacy")]
    got = _check(spark, every_row, "records", paths, "topic in ('txn', 'headers') and offset >= 5",
                 lambda p: p.topic in ("txn", "headers"))
    assert len(got) > 100 and {r.topic for r in got} == {"txn", "headers"}
    got = _check(spark, every_row, "records", paths, "topic like 'magic1%' and not (topic like '%-lz4')",
                 lambda p: p.topic.startswith("magic1") and not p.topic.endswith("-lz4"))
    assert len({r.topic for r in got}) == 3


def test_findings_level_prunes_on_topic_partition_segment_not_file(spark, pushdown, every_row, kafka_corpus):
    paths = [str(kafka_corpus / "recovery"), str(kafka_corpus / "legacy")]
    got = _check(spark, every_row, "findings", paths, "topic = 'rtopic' and segment = 259",
                 lambda p: p.topic == "rtopic" and p.segment == 259)
    assert len(got) > 10
    got = _check(spark, every_row, "findings", paths, "topic like 'magic1%' and partition = 0",
                 lambda p: p.topic.startswith("magic1"))
    assert {r.topic for r in got} == {f"magic1-{c}" for c in ("gzip", "lz4", "none", "snappy")}
    # a finding's file may be the segment's .index: a filter on it prunes nothing, and loses nothing
    got = _check(spark, every_row, "findings", paths, "file like '%.index' and topic = 'rtopic'",
                 lambda p: p.topic == "rtopic")
    assert got and all(r.file.endswith(".index") for r in got)


def test_null_topic_and_segment(spark, pushdown, every_row, kafka_corpus, tmp_path):
    """Segments outside a partition dir (topic NULL, partition -1) and not named by offset (segment NULL)."""
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copyfile(kafka_corpus / "logdir" / "txn-0" / "00000000000000000000.log", flat / "00000000000000000000.log")
    shutil.copyfile(kafka_corpus / "logdir" / "headers-0" / "00000000000000000000.log", flat / "copy.log")
    paths = [str(flat), str(flat / "copy.log"), str(kafka_corpus / "logdir" / "txn-0")]  # copy.log: named only
    planned = plan(paths)
    assert [(p.topic, p.partition, p.segment) for p in planned] == [
        (None, -1, 0), (None, -1, None), ("txn", 0, 0), ("txn", 0, 174)]
    for clause, keep in [
        ("topic is null", lambda p: p.topic is None),
        ("topic is not null", lambda p: p.topic is not None),
        ("topic <> 'txn'", lambda p: False),  # NULL <> 'txn' is NULL
        ("not (topic = 'txn')", lambda p: False),
        ("segment is null", lambda p: p.segment is None),
        ("not (segment = 0)", lambda p: p.segment == 174),
        ("segment not in (0)", lambda p: p.segment == 174),
        ("topic <=> null", lambda p: p.topic is None),
        ("not (topic <=> 'txn')", lambda p: p.topic is None),
        ("partition = -1 and segment >= 0", lambda p: p.partition == -1 and p.segment == 0),
        ("coalesce(topic, 'none') = 'none'", _everything),  # a function of a column: not pushed
    ]:
        _check(spark, every_row, "batches", paths, clause, keep)
