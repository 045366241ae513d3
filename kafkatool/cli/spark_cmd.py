"""``kafkatool spark`` and its ``scan``: segments to Parquet with Spark, and a summary per topic partition."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from .commands import LazyGroup, group, lazy_command
from .options import Deep, FailOn, Force, Format, Records


class _Spark(LazyGroup):
    lazy = {"scan": lazy_command("spark_cmd", "scan", "SCAN_EXAMPLES")}


app = group("spark", "Scan log dirs with Apache Spark (needs the spark extra: pip install 'kafkatool[spark]').", _Spark,
            add_completion=False)


@app.callback()
def _spark() -> None:
    """Scan log dirs with Apache Spark: the kafka-log data source (see docs/spark.md)."""


SCAN_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool spark scan /var/lib/kafka/data --out /tmp/scan

  kafkatool spark scan --records --master 'local[8]' /mnt/broker-*/data --out /tmp/scan

  kafkatool spark scan --pack-bytes 134217728 /var/lib/kafka/data --out /tmp/scan

  # kafkatool.zip: the wheel under a .zip name (PySpark ships no .whl);
  # scan_entry.py: kafkatool/cli/spark_submit.py from it (see docs/spark.md)
  spark-submit --py-files kafkatool.zip scan_entry.py --master '' s3://bucket/logs/ --out s3://bucket/scan
"""


def _open(p: dict) -> str:
    """Open transactions, and the offset the oldest holds the last stable offset at."""
    return f"{p['open_transactions']} (from {p['first_open_offset']})" if p["open_transactions"] else "0"


def _ms(ts: int | None) -> str:
    if ts is None or ts < 0:
        return "-"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


LOG_EVERY_SECONDS = 30.0


class _ProgressLines:
    """Spark task progress as plain lines, for a stderr that is a log file (spark-submit, a scheduler,
    ``nohup``) rather than a terminal: a line when a phase starts, at most one per ``every`` seconds
    while it runs, and one with its final count when it is over (at the next phase, or :meth:`close`).
    A phase's total may grow as it runs (Spark plans more stages), so only that last line says done."""

    def __init__(self, write: Callable[[str], None], every: float = LOG_EVERY_SECONDS) -> None:
        self.write = write
        self.every = every
        self.phase: str | None = None
        self.start = self.last = 0.0
        self.seen = self.shown = (0, 0)

    def _line(self, now: float, suffix: str = "") -> None:
        done, total = self.shown = self.seen
        self.last = now
        self.write(f"kafkatool spark scan: {self.phase}: {done}/{total} tasks{suffix} ({now - self.start:.0f} s)")

    def __call__(self, phase: str, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if phase != self.phase:
            self.close()
            self.phase, self.start, self.last, self.seen, self.shown = phase, now, now, (done, total), (done, total)
            self.write(f"kafkatool spark scan: {phase}: started")
            return
        self.seen = (done, total)
        if self.seen != self.shown and now - self.last >= self.every:
            self._line(now)

    def close(self, how: str = "done") -> None:
        import time

        if self.phase is not None:
            self._line(time.monotonic(), f" {how}")
            self.phase = None


@contextmanager
def _task_bars(write_line: Callable[[str], None]) -> Iterator[Callable[[str, int, int], None]]:
    """Spark task progress on stderr: a bar per phase of the scan on a terminal, else plain lines, each
    given to ``write_line`` (:func:`kafkatool.spark.scan.stderr_lines`).

    The bar shows even when stdout is a terminal too, unlike the streaming commands (``Output.progress``):
    this command prints nothing until the scan is over, so the bar never tears its output.
    """
    from .console import QuietConsole

    err = QuietConsole(file=sys.stderr, highlight=False, soft_wrap=True)
    if not err.is_terminal:
        lines = _ProgressLines(write_line)
        try:
            yield lines
        except BaseException:
            lines.close("stopped")
            raise
        lines.close()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TextColumn("tasks"), TimeElapsedColumn(), console=err, transient=True) as bar:
        phases: dict[str, TaskID] = {}

        def update(phase: str, done: int, total: int) -> None:
            # A phase's total may grow as Spark plans more stages; rich restarts a task's "finished"
            # when its total changes, and its clock stops at done == total (or here, at the next phase).
            if phase not in phases:
                if phases:
                    bar.stop_task(list(phases.values())[-1])
                phases[phase] = bar.add_task(phase, total=None)
            bar.update(phases[phase], completed=done, total=total or None)

        yield update


def scan(
    paths: Annotated[list[str], typer.Argument(help="Log dirs, partition dirs, .log files, globs or URLs "
                                               "(s3://, hdfs:// through pyarrow.fs).", show_default=False)],
    out: Annotated[str, typer.Option("--out", "-o", help="Output dir (or URL) for the Parquet tables and "
                                     "summary.json.", show_default=False)],
    force: Force = False,
    records: Records = False,
    master: Annotated[str, typer.Option(help="Spark master URL; '' keeps what spark-submit set.")] = "local[*]",
    split_bytes: Annotated[
        int, typer.Option(help="Split segments above N bytes into several tasks at indexed batch starts (0: off).",
                          min=0)
    ] = 0,
    pack_bytes: Annotated[
        int, typer.Option(help="Pack consecutive small segments into one task of up to N bytes, each file counted "
                          "4 MiB more than its size (as Spark's openCostInBytes); fewer tasks for many small "
                          "segments, e.g. 134217728, but never fewer than the cores Spark has where the data "
                          "allows (0: off, one task per segment).", min=0)
    ] = 0,
    deep: Deep = False,
    fmt: Format = "text",
    fail_on: FailOn = "error",
) -> int:
    """Write batches (and records with --records) and findings as Parquet
    partitioned by topic; summarise.

    Per topic partition (summed over its dirs, the replicas or copies found):
    bytes, batches, records, offset and time ranges, codecs, producers, CRC
    failures, findings by severity (verify's checks), transactions committed,
    aborted and open. An open transaction is a producer's transactional data
    after its last marker: the oldest one's first offset is where the last
    stable offset, and read_committed consumers, stop.

    Exit 0 when clean, 1 when a finding reaches --fail-on (default: error), 2 usage error.
    """
    import json

    from ..errors import UsageError
    from .exits import check_fail_on, exit_code
    from .output import check_format

    check_format(fmt)
    check_fail_on(fail_on)
    try:
        from ..spark.scan import scan_paths, session, stderr_lines
    except ImportError as exc:
        raise UsageError(f"spark scan needs pyspark and pyarrow: pip install 'kafkatool[spark]' ({exc})") from exc
    for p in paths:
        if "://" not in p and not any(c in p for c in "*?[") and not Path(p).exists():
            raise UsageError(f"no such file or directory: {p}")
    from ..safewrite.outpath import output_dir

    output_dir(out, force)  # refused before a Spark session starts

    spark, started = session(master)
    try:
        with _task_bars(stderr_lines(spark)) as progress:
            result = scan_paths(spark, paths, out, records=records, split_bytes=split_bytes,
                                pack_bytes=pack_bytes, deep=deep, force=force,
                                progress=progress)
    finally:
        if started:
            spark.stop()

    if fmt == "jsonl":
        for p in result.partitions:
            print(json.dumps({"type": "summary", "scope": "partition", **p}))
        print(json.dumps({"type": "summary", "scope": "total", **result.total}))
    else:
        from rich.table import Table

        from .console import QuietConsole
        from .output.terminal import escape, printable

        table = Table(box=None, pad_edge=False)
        for col in ("partition", "dirs", "bytes", "batches", "records", "offsets", "time", "codecs", "producers",
                    "crc fail", "committed", "aborted", "open", "errors", "warnings", "info"):
            table.add_column(col, justify="right" if col not in ("partition", "offsets", "time", "codecs") else "left")
        for p in result.partitions:
            name = f"{p['topic']}-{p['partition']}" if p["topic"] is not None else f"(flat)-{p['partition']}"
            if "cluster" in p:  # several clusters' dirs: one row per cluster's partition
                name = f"{p['cluster'] or '-'}: {name}"
            name = escape(printable(name))  # a dir name read from disk: no control character, no markup
            offsets = "-" if p.get("first_offset") is None else f"{p['first_offset']}..{p['last_offset']}"
            times = f"{_ms(p.get('first_timestamp'))}..{_ms(p.get('max_timestamp'))}"
            table.add_row(name, str(p["dirs"]), f"{p['bytes']:,}", f"{p['batches']:,}", f"{p['records']:,}", offsets,
                          times, ",".join(p["codecs"]), str(p["producers"]), str(p["crc_failures"]),
                          str(p["committed"]), str(p["aborted"]), _open(p), str(p["errors"]), str(p["warnings"]),
                          str(p["info"]))
        console = QuietConsole(highlight=False, soft_wrap=True,
                               width=None if __import__("sys").stdout.isatty() else 1000)
        console.print(table)
        t = result.total
        tables = "batches, findings" + (", records" if records else "")
        console.print(f"{t['partitions']} partitions, {t['bytes']:,} bytes, {t['batches']:,} batches, "
                      f"{t['records']:,} records; {t['crc_failures']} CRC failures, {t['errors']} errors, "
                      f"{t['warnings']} warnings; Parquet ({tables}) and summary.json in {escape(printable(out))}")
    t = result.total
    return exit_code({"error": t["errors"], "warning": t["warnings"], "info": t["info"]}, fail_on)
