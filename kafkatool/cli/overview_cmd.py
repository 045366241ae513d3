"""``kafkatool overview``: every partition of a log dir in one table, biggest first, with totals per topic."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import FailOn, Format, Topic

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool overview /var/lib/kafka/data

  kafkatool overview --topic orders /mnt/broker-*/data

  kafkatool overview -f jsonl /var/lib/kafka/data | jq -c 'select(.type=="topic_overview")'
"""


def overview(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs (or partition dirs).", show_default=False)],
    topic: Topic = None,
    fmt: Format = "text",
    fail_on: FailOn = "warning",
) -> int:
    """One row per partition, biggest first: segments, bytes, log start, log end and high watermark (as the broker
    loads them), first and last timestamp, open transactions, producers, compacted or not, and how many problems
    loading met; then totals per topic.

    Reads batch headers and the log dir's checkpoints only; `verify` checks everything and explains each problem.
    What reading a log dir's checkpoints met (a malformed or oversized file) is a finding, said once for the log
    dir. Exit 0 when loading met no problem, 1 when it did (or a finding reaches --fail-on, default warning), 2
    usage error or nothing to read, 3 I/O error.
    """
    from ..overview import PartitionOverview, overview_paths
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    out = Output(fmt)
    problems = 0
    for item in overview_paths(paths, topic=topic):
        if isinstance(item, PartitionOverview):
            problems += item.problems
        out.emit(item)
    out.close()
    nothing_shown(out, "partition", lambda: _partitions(paths), {"--topic": topic})
    return out.exit_code(fail_on, verdict=problems > 0)


def _partitions(paths: list[Path]) -> str:
    """What an overview read: the partition dirs under ``paths``, by topic."""
    from ..walk import partition_dirs
    from .output.notes import names

    parts = list(partition_dirs(paths))
    return f"{len(parts):,} partition{'' if len(parts) == 1 else 's'} of {names('topic', (p.topic for p in parts))}"
