"""The ``kafkatool`` command: assembles the command groups and maps errors to exit codes.

Exit codes (every command): 0 clean, 1 findings, 2 usage error (a path with no Kafka log dir, partition or
segment under it included), 3 I/O error
(70: an internal error, i.e. a bug in kafkatool).
Set ``KAFKATOOL_DEBUG=1`` to see tracebacks instead of one-line messages.
Heavy modules are imported inside the commands, so ``kafkatool --help`` starts fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from ..errors import KafkaToolError
from . import dump_cmd, internal_cmd, locate_cmd, producers_cmd, repair_cmd, replicas_cmd, spark_cmd, verify_cmd

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3
EXIT_INTERNAL = 70  # a bug in kafkatool (EX_SOFTWARE); never caused by bad input

app = typer.Typer(
    name="kafkatool",
    help=(
        "Inspect and repair Apache Kafka log directories offline, straight from broker disks: "
        "no broker, no JVM.\n\n"
        "Exit codes: 0 clean, 1 findings, 2 usage error (or nothing Kafka under a path), 3 I/O error."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def command(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body: its int result is the exit code; known errors become one line on stderr."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        debug = os.environ.get("KAFKATOOL_DEBUG", "") not in ("", "0")
        try:
            code = fn(*args, **kwargs)
        except BrokenPipeError:
            # The reader went away (``| head``): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            code = EXIT_OK
        except KafkaToolError as exc:
            if debug:
                raise
            sys.stderr.write(f"kafkatool: error: {exc}\n")
            code = exc.exit_code
        except OSError as exc:
            if debug:
                raise
            where = f" {exc.filename}:" if exc.filename else ""
            sys.stderr.write(f"kafkatool: I/O error:{where} {exc.strerror or exc}\n")
            code = EXIT_IO
        except Exception as exc:  # a bug: one line, not a traceback, unless debugging
            if debug:
                raise
            sys.stderr.write(f"kafkatool: internal error: {type(exc).__name__}: {exc}"
                             " (set KAFKATOOL_DEBUG=1 for the traceback; please report it)\n")
            code = EXIT_INTERNAL
        raise typer.Exit(code or EXIT_OK)

    return run


@app.callback()
def _root() -> None:
    """Inspect and repair Apache Kafka log directories offline: no broker, no JVM."""


app.command("dump", epilog=dump_cmd.EXAMPLES)(command(dump_cmd.dump))
app.command("verify", epilog=verify_cmd.EXAMPLES)(command(verify_cmd.verify))
app.command("locate", epilog=locate_cmd.EXAMPLES)(command(locate_cmd.locate))
app.command("replicas", epilog=replicas_cmd.REPLICAS_EXAMPLES)(command(replicas_cmd.replicas))
app.command("truncation", epilog=replicas_cmd.TRUNCATION_EXAMPLES)(command(replicas_cmd.truncation))
app.command("epochs", epilog=replicas_cmd.EPOCHS_EXAMPLES)(command(replicas_cmd.epochs))
app.command("repair", epilog=repair_cmd.EXAMPLES)(command(repair_cmd.repair))
app.command("offsets", epilog=internal_cmd.OFFSETS_EXAMPLES)(command(internal_cmd.offsets))
app.command("partition-for", epilog=internal_cmd.PARTITION_FOR_EXAMPLES)(command(internal_cmd.partition_for))
app.command("txn-state", epilog=internal_cmd.TXN_STATE_EXAMPLES)(command(internal_cmd.txn_state))
app.command("metadata", epilog=internal_cmd.METADATA_EXAMPLES)(command(internal_cmd.metadata))
app.command("producers", epilog=producers_cmd.PRODUCERS_EXAMPLES)(command(producers_cmd.producers))
app.command("txns", epilog=producers_cmd.TXNS_EXAMPLES)(command(producers_cmd.txns))
spark_cmd.app.command("scan", epilog=spark_cmd.SCAN_EXAMPLES)(command(spark_cmd.scan))
app.add_typer(spark_cmd.app, name="spark")


def main() -> None:
    app(prog_name="kafkatool")


if __name__ == "__main__":  # pragma: no cover
    main()
