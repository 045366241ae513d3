"""``kafkatool locate``: where an offset or a timestamp lives in a partition, step by step."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import FailOn, Format

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool locate /var/lib/kafka/data/orders-0 --offset 123456

  kafkatool locate /var/lib/kafka/data/orders-0 --timestamp 2024-03-01T12:00:00Z

  kafkatool locate /var/lib/kafka/data/orders-0 --timestamp latest

  kafkatool locate -f jsonl orders-0 --offset 123456 | jq '.segment, .position, .record.offset'
"""


def locate(
    path: Annotated[Path, typer.Argument(help="A partition dir (or one .log segment).", show_default=False)],
    offset: Annotated[int | None, typer.Option("--offset", help="The offset to find.", min=0,
                                               max=2**63 - 1)] = None,  # offsets are signed 64-bit
    timestamp: Annotated[
        str | None,
        typer.Option("--timestamp", help="Find the first record at or after this time: milliseconds since the"
                     " epoch, ISO-8601 (no zone: UTC), or earliest | latest | max (as Kafka's ListOffsets)."),
    ] = None,
    fmt: Format = "text",
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Ignore .index/.timeindex files and scan (to cross-check them).")
    ] = False,
    fail_on: FailOn = "warning",
) -> int:
    """Find the segment, index entry, batch and record of an offset or a timestamp, as the broker does.

    Binary search over the segments' base offsets, then over the offset index (the time index
    first for a timestamp), then a scan from the indexed position to the batch; every step is
    shown. Missing or broken indexes are reported and the segment is scanned instead.
    Exit 1 when nothing is found or damage at or above --fail-on (default: warning) was met on the way.
    """
    from ..errors import UsageError
    from ..locate import LocateOptions, parse_timestamp
    from ..locate import locate as locate_in_partition
    from .exits import check_fail_on
    from .output import Output, check_format

    check_format(fmt)
    check_fail_on(fail_on)
    if (offset is None) == (timestamp is None):
        raise UsageError("give exactly one of --offset or --timestamp")
    location = locate_in_partition(
        path, offset=offset, timestamp=None if timestamp is None else parse_timestamp(timestamp),
        options=LocateOptions(use_indexes=not no_index),
    )
    out = Output(fmt)
    out.emit(location)
    for finding in location.findings:
        out.emit(finding)
    out.close()
    return out.exit_code(fail_on, verdict=not location.found)
