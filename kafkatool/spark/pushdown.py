"""Filter pushdown (Spark's ``DataSourceReader.pushFilters``, PySpark >= 4.1 with
``spark.sql.python.filterPushdown.enabled``): whole segments pruned by the columns constant over them.

Filters on the columns constant over a segment (``topic``, ``partition``, ``segment``, and ``file``
except at the findings level, where it is the file a finding is about) prune whole segments before any
is opened (that setting is in :data:`kafkatool.spark.SESSION_CONF`):
``where("topic = 'orders' and partition in (0, 3)")`` reads only those partitions' segments. Spark still
applies every filter to the rows, so the result is the same with or without pruning.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable

from .plan import SegmentPartition

# The columns constant over a planned partition, with the Python type of their non-null values. At the
# findings level ``file`` is the file a finding is about (a segment's ``.index`` too), not a constant.
_CONSTANT_TYPES = {"topic": str, "partition": int, "segment": int, "file": str}


@functools.cache
def _filter_kinds() -> dict:
    """``{Filter class: operator}`` for the filters evaluated here; empty before PySpark 4.1 (no pushdown)."""
    try:
        from pyspark.sql.datasource import (
            EqualNullSafe,
            EqualTo,
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
    except ImportError:
        return {}
    return {EqualTo: "=", EqualNullSafe: "<=>", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
            LessThanOrEqual: "<=", In: "in", IsNull: "null", IsNotNull: "notnull", Not: "not",
            StringStartsWith: "startswith", StringEndsWith: "endswith", StringContains: "contains"}


def _typed(value, typ: type) -> bool:
    """A literal of the column's own type (``type is``: True is no partition number); None is any type's."""
    return value is None or type(value) is typ


def pushable(f, level: str = "batches") -> bool:
    """Whether :func:`evaluate` decides ``f`` exactly from a planned partition's constants at ``level``:
    a supported filter (or ``Not`` of one) on ``topic``, ``partition``, ``segment`` or ``file`` (not at the
    findings level) with literals of that column's type."""
    kind = _filter_kinds().get(type(f))
    if kind is None:
        return False
    if kind == "not":
        return pushable(f.child, level)
    attr = f.attribute
    if not (isinstance(attr, tuple) and len(attr) == 1) or attr[0] not in _CONSTANT_TYPES:
        return False
    if level == "findings" and attr[0] == "file":
        return False
    typ = _CONSTANT_TYPES[attr[0]]
    if kind in ("null", "notnull"):
        return True
    if kind == "in":
        return isinstance(f.value, (tuple, list)) and len(f.value) > 0 and all(_typed(v, typ) for v in f.value)
    if kind in ("startswith", "endswith", "contains"):
        return typ is str and type(f.value) is str
    return _typed(f.value, typ)


def _constants_of(part: SegmentPartition) -> dict:
    return {"topic": part.topic, "partition": part.partition, "segment": part.segment, "file": part.name}


def evaluate(f, part: SegmentPartition) -> bool | None:
    """SQL's value of the :func:`pushable` filter ``f`` on ``part``'s rows: True, False or None (NULL)."""
    kind = _filter_kinds()[type(f)]
    if kind == "not":
        inner = evaluate(f.child, part)
        return None if inner is None else not inner
    x = _constants_of(part)[f.attribute[0]]
    if kind == "null":
        return x is None
    if kind == "notnull":
        return x is not None
    v = f.value
    if kind == "<=>":
        return x == v if x is not None and v is not None else x is None and v is None
    if x is None:
        return None
    if kind == "in":
        return True if x in [w for w in v if w is not None] else None if None in v else False
    if v is None:
        return None
    if kind == "=":
        return x == v
    if kind == ">":
        return x > v
    if kind == ">=":
        return x >= v
    if kind == "<":
        return x < v
    if kind == "<=":
        return x <= v
    if kind == "startswith":
        return x.startswith(v)
    if kind == "endswith":
        return x.endswith(v)
    return v in x  # contains


def may_match(filters: Iterable, part: SegmentPartition) -> bool:
    """False when some row-level condition of ``filters`` (:func:`pushable` ones, ANDed, as Spark pushes
    them) cannot be true for any row of ``part``: a WHERE keeps only rows where all are TRUE."""
    return all(evaluate(f, part) is True for f in filters)


def planning_pushdown() -> bool:
    """Whether PySpark's filter-pushdown planner is asking for the reader (its worker,
    ``pyspark/sql/worker/data_source_pushdown_filters.py``, is on the stack).

    PySpark >= 4.1 fails every read whose reader implements ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is off (DATA_SOURCE_PUSHDOWN_DISABLED, raised by its
    ``plan_data_source_read`` worker), and that conf is off by default; only the planner that pushes
    filters, run when it is on, gets a reader with ``pushFilters``. Should a PySpark version plan some
    other way, this is False: no pruning, the same rows.
    """
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if os.path.basename(frame.f_code.co_filename) == "data_source_pushdown_filters.py":
            return True
        frame = frame.f_back
    return False


__all__ = ["evaluate", "may_match", "planning_pushdown", "pushable"]
