"""``kafkatool producers`` and ``kafkatool txns``: delivery semantics, rebuilt from the log."""

# Annotations are evaluated here, at import: with "from __future__ import annotations" typer would compile
# each one from its string whenever the command is built (see kafkatool/cli/commands.py).

from pathlib import Path
from typing import Annotated

import typer

from .options import FailOn, Format, Now

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

  kafkatool txns --hanging /var/lib/kafka/data

  kafkatool txns --hanging --max-transaction-timeout 60 --now 2024-05-01T03:00:00 /var/lib/kafka/data
"""

Paths = Annotated[list[Path], typer.Argument(help="Partition dirs or log dirs.", show_default=False)]


def producers(paths: Paths, fmt: Format = "text", fail_on: FailOn = "warning") -> int:
    """Rebuild each producer's state from the log and audit idempotence.

    Per producer id: epoch, first and last sequence, last offset, open transaction; compared with the
    newest producer .snapshot the broker keeps (readable, at or below the log end offset). Findings: what loading
    the log met, as verify reports it (recovery's cuts, snapshots beyond the log end); duplicate batches,
    sequence gaps and out-of-order sequences (what the broker rejects with OutOfOrderSequence), writes
    of fenced epochs, epoch bumps (info).
    Exit 0 when clean (info only), 1 on warnings or errors (--fail-on), 2 usage error, 3 I/O error.
    """
    from ..producers import producers_bytes, producers_paths

    return _run(fmt, fail_on, "producers", lambda: producers_bytes(paths),
                lambda advance: producers_paths(paths, progress=advance),
                lambda: f"{_partitions(paths)} (a producer without idempotence writes no producer id)",
                "producer id")


def txns(
    paths: Paths,
    fmt: Format = "text",
    hanging: Annotated[bool, typer.Option(
        "--hanging", help="Only hanging transactions (KIP-664, as kafka-transactions.sh find-hanging): open longer "
                          "than --max-transaction-timeout with no coordinator to end them, judged on the "
                          "__transaction_state partitions given.")] = False,
    max_timeout: Annotated[int, typer.Option(
        "--max-transaction-timeout", metavar="MINUTES", min=0,
        help="With --hanging: the brokers' transaction.max.timeout.ms, in minutes.")] = 15,
    now: Now = None,
    fail_on: FailOn = "warning",
) -> int:
    """List every transaction of each partition and check the .txnindex files.

    Per transaction: producer id and epoch, first and last offset (the marker's), records, outcome
    (COMMIT, ABORT, or OPEN: hanging), coordinator epoch, duration. Open transactions are findings
    saying how far they hold back the last stable offset; the .txnindex checks are verify's, and so is
    what is said of what loading the log met (recovery's cuts, snapshots beyond the log end).
    With --hanging, only the open transactions no coordinator will end (txn-hanging, an error), with
    the LSO they hold and the groups committed there; without __transaction_state in the dirs, those open
    too long are txn-possibly-hanging (a warning).
    Exit 0 when clean, 1 on warnings or errors (--fail-on), 2 usage error, 3 I/O error.
    """
    from ..errors import UsageError
    from ..txns import hanging_bytes, hanging_paths, txns_bytes, txns_paths

    if not hanging:
        if now is not None or max_timeout != 15:
            raise UsageError("--now and --max-transaction-timeout go with --hanging")
        return _run(fmt, fail_on, "txns", lambda: txns_bytes(paths),
                    lambda advance: txns_paths(paths, progress=advance), lambda: _partitions(paths), "transaction")
    from ..locate import parse_timestamp

    try:
        at = None if now is None else parse_timestamp(now)
    except UsageError:
        at = -1
    if at is not None and at < 0:
        raise UsageError(f"--now {now}: not a time (epoch ms, or ISO-8601: UTC without a zone)")
    read: list[str] = []  # the __transaction_state partitions read

    def items(advance):
        for i in hanging_paths(paths, max_timeout_ms=max_timeout * 60_000, now=at, progress=advance,
                               coordinators=read):
            yield _hanging_row(i) if fmt == "text" and getattr(i, "possibly", None) is not None else i
        if not read:
            from .output.notes import note

            note("no __transaction_state partition in the dirs given: transactions open too long are only possibly "
                 "hanging (give the log dirs holding __transaction_state to judge them)")

    return _run(fmt, fail_on, "txns", lambda: hanging_bytes(paths), items,
                lambda: f"{_partitions(paths)} (open longer than {max_timeout} min, with no coordinator to end it)",
                "hanging transaction")


def _hanging_row(h) -> dict:
    """A hanging transaction's text row: what it holds back as columns of its own."""
    d = h.as_dict()
    held = d.pop("holds_back")
    d["last_stable_offset"] = held["last_stable_offset"]
    d["groups"] = ", ".join([*(f"{g['group']} ({g['committed_offset']})" for g in held["groups"]),
                             *(f"{g['group']} (pending {g['topic']}-{g['partition']} {g['offset']})"
                               for g in held["pending_commits"])]) or None
    if h.possibly:
        d["reason"] = f"possibly: {d['reason']}"
    return d


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
