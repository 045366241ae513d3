"""``kafkatool overview``: every partition of a log dir in one table, biggest first, with totals per topic."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool overview /var/lib/kafka/data

  kafkatool overview --topic orders /mnt/broker-*/data

  kafkatool overview -f jsonl /var/lib/kafka/data | jq -c 'select(.type=="topic_overview")'
"""


def overview(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs (or partition dirs).", show_default=False)],
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic's partitions.",
                                              show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="text|jsonl", help="text or jsonl.")] = "text",
) -> int:
    """One row per partition, biggest first: segments, bytes, log start, log end and high watermark (as the broker
    loads them), first and last timestamp, open transactions, producers, compacted or not, and how many problems
    loading met; then totals per topic.

    Reads batch headers and the log dir's checkpoints only; `verify` checks everything and explains each problem.
    Exit 0 when loading met no problem, 1 when it did, 2 usage error or nothing to read, 3 I/O error.
    """
    from ..errors import UsageError
    from ..overview import PartitionOverview, overview_paths
    from .output import FORMATS, Output

    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}")
    out = Output(fmt)
    problems = 0
    for item in overview_paths(paths, topic=topic):
        if isinstance(item, PartitionOverview):
            problems += item.problems
        out.emit(item)
    out.close()
    return out.exit_code("warning") or int(problems > 0)
