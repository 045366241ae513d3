"""``kafkatool delivery``: a consumer's sink against the log: lost, duplicated or aborted records."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import FailOn, Format, FromOffset, Isolation, ToOffset

EXAMPLES = """
[bold]Examples[/bold]

  kafkatool delivery --sink processed.csv /var/lib/kafka/data

  kafkatool delivery --sink part-0.parquet --sink part-1.parquet --group billing /var/lib/kafka/data

  psql -Atc "select 'topic,partition,offset'" -c "select topic||','||part||','||off from sink" | \\
    kafkatool delivery --sink - /var/lib/kafka/data/payments-0

  kafkatool delivery -f jsonl --isolation read_uncommitted --sink out.jsonl /var/lib/kafka/data | \\
    jq -c 'select(.type=="delivery" and .verdict!="exactly-once")'
"""


def delivery(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs or partition dirs holding the sink's partitions "
                                                     "(and __consumer_offsets, for --group).",
                                                show_default=False, metavar="PATHS...")],
    sink: Annotated[list[str], typer.Option(
        "--sink", "-s", help="What the consumer processed: CSV with a header naming topic, partition, offset; "
                             "JSON lines with those keys; or .parquet. Repeatable; - reads standard input.",
        show_default=False)],
    isolation: Isolation = "read_committed",
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    group: Annotated[str | None, typer.Option(
        "--group", "-g", help="The consumer group: its committed offset says what a restart re-delivers and what "
                              "was committed but never processed.", show_default=False)] = None,
    fmt: Format = "text",
    fail_on: FailOn = "warning",
) -> int:
    """Did a consumer lose or duplicate records? Compare what it processed with what the log holds.

    For each topic-partition in the sink: the records a consumer with this isolation level receives (data
    records only; under read_committed none of an aborted transaction), from --from-offset to --to-offset;
    which of them the sink lacks (missing) or holds more than once (duplicates), and which aborted or
    control records it claims to have processed. Verdict: exactly-once, at-least-once (duplicates),
    at-most-once (missing) or loss-and-duplicates.

    Exit 0 when exactly once, 1 when anything is missing, duplicated, aborted-delivered or unexpected (or
    a finding reaches --fail-on, default warning), 2 usage error or nothing to read, 3 I/O error.
    """
    from ..delivery import PartitionDelivery, delivery_paths
    from ..internal.offsets import OFFSETS_TOPIC
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import names, note

    check_format(fmt)
    check_fail_on(fail_on)
    out = Output(fmt)
    dirty = False
    checked, uncommitted = 0, []  # partitions compared; those where --group has no committed offset
    with out.counter("reading the sink", "rows") as advance:
        for item in delivery_paths(sink, paths, isolation=isolation, from_offset=from_offset, to_offset=to_offset,
                                   group=group, progress=advance):
            dirty |= not getattr(item, "clean", True)
            if isinstance(item, PartitionDelivery):
                checked += 1
                if group is not None and item.committed_offset is None:
                    uncommitted.append(f"{item.topic}-{item.partition}")
            out.emit(item)
    out.close()
    if uncommitted:
        note((f"group {group!r} not found: no committed offset of it in the {OFFSETS_TOPIC} partitions read"
              if len(uncommitted) == checked else
              f"group {group!r} has no committed offset for {names('partition', uncommitted)}")
             + ": the check covers the sink's rows only there, not what a restart of the group would re-deliver "
               "(below its commit) or skip (committed but never processed)")
    return out.exit_code(fail_on, verdict=dirty)
