"""``delivery``: did a consumer lose or duplicate records? Its sink, checked against the log on disk.

A *sink* is what a consumer processed: rows naming ``topic``, ``partition`` and ``offset`` (CSV with a header,
JSON lines, or Parquet). For every topic-partition in the sink, the *expected* records are those a consumer
receives from the log with the chosen isolation level (``Fetcher``/``CompletedFetch``):

- data records only: control batches (COMMIT/ABORT markers) are never handed to the application;
- ``read_committed``: no records of aborted transactions (decided from the markers and producer state in the
  log, :func:`kafkatool.txns.committed_view`, not from ``.txnindex`` alone), and nothing at or past the last
  stable offset (an open transaction) or the high watermark;
- ``read_uncommitted``: everything below the high watermark.

Offsets in the range that the log does not hold as expected records are *unexpected* when a sink claims them
(a compacted-away offset, an offset past the log end); aborted data and control-record offsets a sink claims
are ``aborted_delivered``. The verdict speaks of the expected records only: none missing and none twice is
exactly-once, duplicates only at-least-once, missing only at-most-once.

With a consumer group, its committed offset (``__consumer_offsets``) says what a restart would do: records
processed at or past it are delivered again (``redelivered_on_restart``), expected records below it that the
sink lacks were committed but never processed (``committed_not_processed``).

Memory stays bounded whatever the sink's size: each partition's offsets are kept in sorted runs of at most
``run_size`` offsets, spilled to temporary files and merged in one streaming pass against the log.
"""

from __future__ import annotations

import csv
import heapq
import io
import json
import os
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .errors import InputIOError, UsageError
from .filetypes import open_regular
from .model import Finding
from .records import RawBatch, decode_records, scan

ISOLATIONS = ("read_committed", "read_uncommitted")
SINK_COLUMNS = ("topic", "partition", "offset")


# --- the sink -----------------------------------------------------------------------------------------------


def read_sink(source: str, stdin: BinaryIO | None = None) -> Iterator[tuple[str, int, int] | Finding]:
    """(topic, partition, offset) of every row of one sink file (``-``: standard input); a row that does not
    have them is a finding naming the file and line (for Parquet: the row number), and reading goes on."""
    if source == "-":
        data = (stdin or sys.stdin.buffer).read()
        head = data.lstrip()[:1]
        text = io.StringIO(data.decode("utf-8", "replace"))
        yield from (_jsonl(text, "<stdin>") if head == b"{" else _csv(text, "<stdin>"))
        return
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"sink not found: {source}")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet(path)
        return
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.read(1)
            while first and first.isspace():
                first = fh.read(1)
            fh.seek(0)
            jsonl = suffix in (".jsonl", ".ndjson", ".json") or first == "{"
            yield from (_jsonl(fh, source) if jsonl else _csv(fh, source))
    except OSError as exc:
        raise InputIOError(f"cannot read sink {source}: {exc.strerror or exc}") from exc


def _row(get: Callable[[str], Any], where: str, line: int) -> tuple[str, int, int] | Finding:
    try:
        topic, partition, offset = (get(c) for c in SINK_COLUMNS)
        if topic is None or topic == "":
            raise ValueError("no topic")
        part, off = int(partition), int(offset)
        if part < 0 or off < 0:
            raise ValueError("negative partition or offset")
        return str(topic), part, off
    except (KeyError, TypeError, ValueError) as exc:
        return Finding("error", "sink-row-invalid", where, None, f"line {line}: not a topic/partition/offset row "
                                                                  f"({type(exc).__name__}: {exc})")


def _csv(fh: Any, where: str) -> Iterator[tuple[str, int, int] | Finding]:
    reader = csv.DictReader(fh)
    missing = [c for c in SINK_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        yield Finding("error", "sink-header-invalid", where, None,
                      f"the CSV header {reader.fieldnames} does not name {', '.join(missing)}")
        return
    for row in reader:
        yield _row(row.__getitem__, where, reader.line_num)


def _jsonl(fh: Any, where: str) -> Iterator[tuple[str, int, int] | Finding]:
    for n, line in enumerate(fh, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            yield Finding("error", "sink-row-invalid", where, None, f"line {n}: not JSON ({exc})")
            continue
        yield (_row(obj.__getitem__, where, n) if isinstance(obj, dict)
               else Finding("error", "sink-row-invalid", where, None, f"line {n}: not a JSON object"))


def _parquet(path: Path) -> Iterator[tuple[str, int, int] | Finding]:
    try:
        import pyarrow.parquet as pq  # noqa: TID251 - optional: the [spark] extra brings pyarrow
    except ImportError as exc:
        raise UsageError(f"{path}: reading Parquet needs pyarrow (pip install 'kafkatool[spark]')") from exc
    try:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
        missing = [c for c in SINK_COLUMNS if c not in names]
        if missing:
            yield Finding("error", "sink-header-invalid", str(path), None,
                          f"the Parquet schema has no column {', '.join(missing)}")
            return
        n = 0
        for batch in pf.iter_batches(columns=list(SINK_COLUMNS), batch_size=65536):
            cols = [batch.column(c).to_pylist() for c in SINK_COLUMNS]
            for topic, partition, offset in zip(*cols, strict=True):
                n += 1
                row = {"topic": topic, "partition": partition, "offset": offset}
                yield _row(row.__getitem__, str(path), n)
    except OSError as exc:
        raise InputIOError(f"cannot read sink {path}: {exc}") from exc
    except Exception as exc:  # pyarrow's ArrowInvalid and friends: a damaged file is a finding
        if type(exc).__module__.startswith("pyarrow"):
            yield Finding("error", "sink-unreadable", str(path), None, f"not a readable Parquet file: {exc}")
        else:
            raise


class SortedRuns:
    """The offsets of one partition in sorted runs of at most ``run_size``, spilled to temporary files: memory
    stays bounded by one run whatever the number of rows. :meth:`merged` streams them back in order."""

    def __init__(self, tmpdir: str, run_size: int = 1 << 22) -> None:
        self.tmpdir, self.run_size = tmpdir, run_size
        self.buffer = array("q")
        self.files: list[str] = []
        self.count = 0
        self.highest = -1

    def add(self, offset: int) -> None:
        self.buffer.append(offset)
        self.count += 1
        self.highest = max(self.highest, offset)
        if len(self.buffer) >= self.run_size:
            self._spill()

    def _spill(self) -> None:
        run = array("q", sorted(self.buffer))
        fd, name = tempfile.mkstemp(dir=self.tmpdir, suffix=".run")
        with os.fdopen(fd, "wb") as fh:
            run.tofile(fh)
        self.files.append(name)
        self.buffer = array("q")

    def merged(self) -> Iterator[int]:
        def read(name: str) -> Iterator[int]:
            with open(name, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    yield from array("q", chunk)

        in_memory = iter(sorted(self.buffer))
        return heapq.merge(in_memory, *(read(f) for f in self.files))


# --- the log ------------------------------------------------------------------------------------------------


class _Ranges:
    """Ascending offsets as inclusive ``[lo, hi]`` ranges."""

    def __init__(self) -> None:
        self.items: list[list[int]] = []

    def add(self, offset: int) -> None:
        if self.items and self.items[-1][1] + 1 == offset:
            self.items[-1][1] = offset
        else:
            self.items.append([offset, offset])

    def total(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.items)


DATA, ABORTED, CONTROL = "data", "aborted", "control"


def log_offsets(part_dir: Path, display: str, lo: int, hi: int, isolation: str,
                findings: list[Finding]) -> Iterator[tuple[int, str]]:
    """(offset, kind) of every record in ``[lo, hi]`` that the log holds, in order, with kind ``data`` (what the
    consumer receives), ``aborted`` (data of an aborted transaction, under read_committed) or ``control``.
    Records at or past the fetch limit (LSO and high watermark, or the high watermark) are not yielded."""
    from .producers import segment_logs
    from .txns import committed_view, high_watermark

    if isolation == "read_committed":
        view = committed_view(part_dir)
        limit, delivers = view.limit, view.delivers
    else:
        limit, delivers = high_watermark(part_dir), (lambda b: True)
    for _base, path in segment_logs(part_dir):
        shown = os.path.join(display, path.name)
        try:
            fh = open_regular(path)
        except OSError as exc:
            findings.append(Finding("error", "io-error", shown, None, f"cannot read: {exc.strerror or exc}"))
            continue
        with fh:
            for item in scan(fh, shown, with_raw=True):
                if isinstance(item, Finding):
                    findings.append(item)
                    continue
                if not isinstance(item, RawBatch):
                    continue
                b = item.batch
                if b.last_offset < lo:
                    continue
                if b.base_offset > hi or (limit is not None and b.base_offset >= limit):
                    return
                kind = CONTROL if b.control else DATA if delivers(b) else ABORTED
                if b.magic >= 2 and b.record_count == b.last_offset - b.base_offset + 1:
                    offsets: Iterable[int] = range(max(b.base_offset, lo), min(b.last_offset, hi) + 1)
                else:  # compacted (offsets missing inside the batch) or a v0/v1 message set
                    records, problems = decode_records(b, item.raw, shown)
                    findings.extend(problems)
                    offsets = [r.offset for r in records if lo <= r.offset <= hi]
                for offset in offsets:
                    if limit is not None and offset >= limit:
                        return
                    yield offset, kind


def log_start_offset(part_dir: Path) -> int:
    """Where a consumer can start reading: the first segment's base offset, or the log dir's
    ``log-start-offset-checkpoint`` entry when it is above it (records deleted by DeleteRecords or retention
    inside the first segment are gone for consumers)."""
    from .producers import segment_logs
    from .txns import checkpointed_offset

    segments = segment_logs(part_dir)
    first = segments[0][0] if segments else 0
    return max(first, checkpointed_offset(part_dir, "log-start-offset-checkpoint") or 0)


# --- the check ----------------------------------------------------------------------------------------------


@dataclass
class PartitionDelivery:
    topic: str
    partition: int
    path: str | None
    isolation: str
    from_offset: int
    to_offset: int
    expected: int = 0
    delivered: int = 0                      # sink rows of this partition in the range
    missing: _Ranges = field(default_factory=_Ranges)
    duplicates: list[list[int]] = field(default_factory=list)   # [offset, times processed]
    aborted_delivered: _Ranges = field(default_factory=_Ranges)
    unexpected: _Ranges = field(default_factory=_Ranges)
    group: str | None = None
    committed_offset: int | None = None
    redelivered_on_restart: _Ranges = field(default_factory=_Ranges)
    committed_not_processed: _Ranges = field(default_factory=_Ranges)
    outside_range: int = 0                  # sink rows below --from-offset or above --to-offset

    @property
    def verdict(self) -> str:
        lost, twice = bool(self.missing.items), bool(self.duplicates)
        return ("loss-and-duplicates" if lost and twice else "at-most-once" if lost
                else "at-least-once" if twice else "exactly-once")

    @property
    def clean(self) -> bool:
        return not (self.missing.items or self.duplicates or self.aborted_delivered.items or self.unexpected.items)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "type": "delivery", "topic": self.topic, "partition": self.partition, "path": self.path,
            "isolation": self.isolation, "from_offset": self.from_offset, "to_offset": self.to_offset,
            "expected": self.expected, "delivered": self.delivered, "missing": self.missing.items,
            "missing_count": self.missing.total(), "duplicates": self.duplicates,
            "aborted_delivered": self.aborted_delivered.items, "unexpected": self.unexpected.items,
            "verdict": self.verdict,
        }
        if self.group is not None:
            d.update(group=self.group, committed_offset=self.committed_offset,
                     redelivered_on_restart=self.redelivered_on_restart.items,
                     committed_not_processed=self.committed_not_processed.items)
        return d


def compare(expected: Iterator[tuple[int, str]], delivered: Iterator[int], result: PartitionDelivery) -> None:
    """One merge pass of the log's offsets and the sink's (both ascending) into ``result``."""
    commit = result.committed_offset
    nxt = next(delivered, None)
    for offset, kind in expected:
        times = 0
        while nxt is not None and nxt < offset:  # offsets the log does not hold in the range
            result.unexpected.add(nxt)
            nxt = _skip_equal(nxt, delivered, result)
        while nxt is not None and nxt == offset:
            times += 1
            nxt = next(delivered, None)
        if kind == DATA:
            result.expected += 1
            if times == 0:
                result.missing.add(offset)
                if commit is not None and offset < commit:
                    result.committed_not_processed.add(offset)
            elif times > 1:
                result.duplicates.append([offset, times])
        elif times:
            result.aborted_delivered.add(offset)
        if times and commit is not None and offset >= commit:
            result.redelivered_on_restart.add(offset)
    while nxt is not None:
        result.unexpected.add(nxt)
        nxt = _skip_equal(nxt, delivered, result)


def _skip_equal(value: int, it: Iterator[int], result: PartitionDelivery) -> int | None:
    if result.committed_offset is not None and value >= result.committed_offset:
        result.redelivered_on_restart.add(value)
    nxt = next(it, None)
    while nxt == value:
        nxt = next(it, None)
    return nxt


def delivery_paths(
    sinks: list[str], paths: Iterable[str | Path], *, isolation: str = "read_committed",
    from_offset: int | None = None, to_offset: int | None = None, group: str | None = None,
    run_size: int = 1 << 22, progress: Callable[[int], None] | None = None,
) -> Iterator[PartitionDelivery | Finding]:
    """Per topic-partition of the sinks (in topic, partition order): findings, then its :class:`PartitionDelivery`."""
    from .internal import OFFSETS_TOPIC, CommittedOffset, consumer_offsets
    from .walk import partition_dirs

    if isolation not in ISOLATIONS:
        raise UsageError(f"--isolation must be one of {', '.join(ISOLATIONS)}")
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise UsageError(f"--from-offset {from_offset} is after --to-offset {to_offset}")
    paths = list(paths)
    parts: dict[tuple[str, int], Any] = {}
    for pd in partition_dirs(paths):
        if (pd.topic, pd.partition) in parts:
            yield Finding("warning", "delivery-partition-twice", pd.display, None,
                          f"{pd.topic}-{pd.partition} is also at {parts[(pd.topic, pd.partition)].display}: "
                          "that one is used")
            continue
        parts[(pd.topic, pd.partition)] = pd
    commits: dict[tuple[str, int], int] = {}
    if group is not None:
        if not any(t == OFFSETS_TOPIC for t, _p in parts):
            raise UsageError(f"--group needs the {OFFSETS_TOPIC} partitions among the paths")
        for item in consumer_offsets(paths, with_lag=False):
            if isinstance(item, CommittedOffset) and item.group == group:
                commits[(item.topic, item.partition)] = item.offset
            elif isinstance(item, Finding) and item.severity != "info":
                yield item
    with tempfile.TemporaryDirectory(prefix="kafkatool-delivery-") as tmp:
        runs: dict[tuple[str, int], SortedRuns] = {}
        rows = 0
        for sink in sinks:
            for row in read_sink(sink):
                if isinstance(row, Finding):
                    yield row
                    continue
                key = (row[0], row[1])
                if key not in runs:
                    runs[key] = SortedRuns(tmp, run_size)
                runs[key].add(row[2])
                rows += 1
                if progress is not None and rows % 4096 == 0:
                    progress(4096)
        if not runs:
            raise UsageError(f"no topic/partition/offset row to check in {', '.join(sinks)}")
        for (topic, partition), sink_runs in sorted(runs.items()):
            pd = parts.get((topic, partition))
            if pd is None:
                yield Finding("error", "delivery-partition-missing", f"{topic}-{partition}", None,
                              f"the sink has {sink_runs.count} rows of {topic}-{partition} but no partition dir of it "
                              "is under the paths given")
                continue
            commit = commits.get((topic, partition))
            lo = log_start_offset(pd.path) if from_offset is None else from_offset
            # a commit past the sink's last row claims everything below it was processed: check up to it
            hi = max(sink_runs.highest, -1 if commit is None else commit - 1) if to_offset is None else to_offset
            result = PartitionDelivery(topic, partition, pd.display, isolation, lo, hi, group=group,
                                       committed_offset=commit)
            findings: list[Finding] = []
            in_range = _counted(sink_runs.merged(), lo, hi, result)
            compare(log_offsets(pd.path, pd.display, lo, hi, isolation, findings), in_range, result)
            yield from findings
            yield result


def _counted(offsets: Iterator[int], lo: int, hi: int, result: PartitionDelivery) -> Iterator[int]:
    for o in offsets:
        if lo <= o <= hi:
            result.delivered += 1
            yield o
        else:
            result.outside_range += 1


__all__ = ["ISOLATIONS", "PartitionDelivery", "SortedRuns", "compare", "delivery_paths", "log_offsets", "read_sink"]
