"""``kafkatool producers`` and ``kafkatool txns``: delivery semantics, rebuilt from the log."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import FailOn, Format

PRODUCERS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool producers /var/lib/kafka/data/payments-0

  kafkatool producers --format jsonl /var/lib/kafka/data | jq 'select(.type=="finding")'

  kafkatool producers --format jsonl /var/lib/kafka/data/payments-0 | jq 'select(.type=="producer")'
"""

TXNS_EXAMPLES = """
[bold]Examples[/bold]

  kafkatool txns /var/lib/kafka/data/payments-0

  kafkatool txns --format jsonl /var/lib/kafka/data | jq 'select(.type=="transaction" and .outcome=="OPEN")'

  kafkatool dump --isolation read_committed --records /var/lib/kafka/data/payments-0
"""

Paths = Annotated[list[Path], typer.Argument(help="Partition dirs or log dirs.", show_default=False)]


def producers(paths: Paths, fmt: Format = "text", fail_on: FailOn = "warning") -> int:
    """Rebuild each producer's state from the log and audit idempotence.

    Per producer id: epoch, first and last sequence, last offset, open transaction; compared with the
    newest producer .snapshot. Findings: duplicate batches, sequence gaps and out-of-order sequences
    (what the broker rejects with OutOfOrderSequence), writes of fenced epochs, epoch bumps (info).
    Exit 0 when clean (info only), 1 on warnings or errors (--fail-on), 2 usage error, 3 I/O error.
    """
    from ..producers import producers_bytes, producers_paths

    return _run(fmt, fail_on, "producers", lambda: producers_bytes(paths),
                lambda advance: producers_paths(paths, progress=advance),
                lambda: f"{_partitions(paths)} (a producer without idempotence writes no producer id)",
                "producer id")


def txns(paths: Paths, fmt: Format = "text", fail_on: FailOn = "warning") -> int:
    """List every transaction of each partition and check the .txnindex files.

    Per transaction: producer id and epoch, first and last offset (the marker's), records, outcome
    (COMMIT, ABORT, or OPEN: hanging), coordinator epoch, duration. Open transactions are findings
    saying how far they hold back the last stable offset; the .txnindex checks are verify's.
    Exit 0 when clean, 1 on warnings or errors (--fail-on), 2 usage error, 3 I/O error.
    """
    from ..txns import txns_bytes, txns_paths

    return _run(fmt, fail_on, "txns", lambda: txns_bytes(paths), lambda advance: txns_paths(paths, progress=advance),
                lambda: _partitions(paths), "transaction")


def _run(fmt: str, fail_on: str, label: str, total, items, read, what: str) -> int:
    """``items(progress)`` emitted, with a progress bar of ``total()`` bytes on a terminal; when none was a
    ``what``, a note on stderr saying so and what was read (``read()``)."""
    from .exits import check_fail_on
    from .output import Output, check_format
    from .output.notes import nothing_shown

    check_format(fmt)
    check_fail_on(fail_on)
    out = Output(fmt)
    with out.progress(total, label) as advance:
        out.emit_all(items(advance))
    nothing_shown(out, what, read)
    return out.exit_code(fail_on)


def _partitions(paths: list[Path]) -> str:
    """How many partition dirs are under ``paths``."""
    from ..walk import partition_dirs

    count = sum(1 for _ in partition_dirs(paths))
    return f"{count:,} partition{'' if count == 1 else 's'}"
