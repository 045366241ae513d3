"""The ``kafkatool`` command: assembles the command groups and maps errors to exit codes.

Exit codes (every command): 0 clean, 1 findings, 2 usage error (a path with no Kafka log dir, partition or
segment under it included), 3 I/O error (70: an internal error, i.e. a bug in kafkatool; 130: interrupted with
Ctrl-C; 141: the reader of stdout went away, as ``| head`` does, the code a shell gives a process killed by
SIGPIPE).
Set ``KAFKATOOL_DEBUG=1`` to see tracebacks instead of one-line messages.
Heavy modules are imported inside the commands, so ``kafkatool --help`` starts fast.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from ..errors import KafkaToolError
from . import (
    delivery_cmd,
    dump_cmd,
    internal_cmd,
    locate_cmd,
    overview_cmd,
    producers_cmd,
    repair_cmd,
    replicas_cmd,
    spark_cmd,
    verify_cmd,
)
from .commands import Command, Group

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3
EXIT_INTERNAL = 70  # a bug in kafkatool (EX_SOFTWARE); never caused by bad input
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE): quiet, and not "findings"

app = typer.Typer(
    name="kafkatool",
    help=(
        "Inspect and repair Apache Kafka log directories offline, straight from broker disks: "
        "no broker, no JVM.\n\n"
        "Exit codes: 0 clean, 1 findings, 2 usage error or nothing Kafka under a path, 3 I/O error; "
        "70 internal error (a bug in kafkatool), 130 interrupted (Ctrl-C), 141 output pipe closed."
    ),
    cls=Group,
    no_args_is_help=True,
    rich_markup_mode=None,
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
            code = EXIT_PIPE
        except KeyboardInterrupt:
            sys.stderr.write("kafkatool: interrupted\n")
            code = EXIT_INTERRUPTED
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

    run.__doc__ = reflow(fn.__doc__ or "")
    return run


def paste_ready(examples: str, width: int = 76) -> str:
    """Examples whose long commands continue on the next line with a backslash, cut between shell words, so
    the help renderer never wraps one mid-word at 80 columns and each can be pasted as it stands."""
    out: list[str] = []
    for line in examples.splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        if len(line) <= width or line.lstrip().startswith("#"):
            out.append(line)
            continue
        words, current = _shell_words(line.strip()), indent
        for word in words:
            if current.strip() and len(current) + 1 + len(word) > width - 2:
                out.append(current + " \\")
                current = indent + "    "
            current += ("" if not current.strip() else " ") + word
        out.append(current)
    return "\n".join(out)


def _shell_words(text: str) -> list[str]:
    """``text`` split at spaces outside quotes (the quotes kept: the words are pasted back as they were)."""
    words, current, quote = [], "", None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if current:
                words.append(current)
            current = ""
            continue
        current += ch
    if current:
        words.append(current)
    return words


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph one line, for the terminal to wrap at its own width (the help
    renderer keeps hard line breaks, which cut sentences in two at any width but the source's)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("kafkatool")
        except PackageNotFoundError:  # run from a source tree that was never installed
            from .. import __version__ as v
        sys.stdout.write(f"kafkatool {v}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show kafkatool's version and exit."),
) -> None:
    """Inspect and repair Apache Kafka log directories offline: no broker, no JVM."""


def _register(group: typer.Typer, name: str, fn: Callable[..., int], examples: str) -> None:
    group.command(name, cls=Command, epilog=paste_ready(examples))(command(fn))


for _name, _fn, _examples in (
    ("dump", dump_cmd.dump, dump_cmd.EXAMPLES),
    ("verify", verify_cmd.verify, verify_cmd.EXAMPLES),
    ("overview", overview_cmd.overview, overview_cmd.EXAMPLES),
    ("locate", locate_cmd.locate, locate_cmd.EXAMPLES),
    ("replicas", replicas_cmd.replicas, replicas_cmd.REPLICAS_EXAMPLES),
    ("truncation", replicas_cmd.truncation, replicas_cmd.TRUNCATION_EXAMPLES),
    ("epochs", replicas_cmd.epochs, replicas_cmd.EPOCHS_EXAMPLES),
    ("repair", repair_cmd.repair, repair_cmd.EXAMPLES),
    ("offsets", internal_cmd.offsets, internal_cmd.OFFSETS_EXAMPLES),
    ("partition-for", internal_cmd.partition_for, internal_cmd.PARTITION_FOR_EXAMPLES),
    ("txn-state", internal_cmd.txn_state, internal_cmd.TXN_STATE_EXAMPLES),
    ("metadata", internal_cmd.metadata, internal_cmd.METADATA_EXAMPLES),
    ("delivery", delivery_cmd.delivery, delivery_cmd.EXAMPLES),
    ("producers", producers_cmd.producers, producers_cmd.PRODUCERS_EXAMPLES),
    ("txns", producers_cmd.txns, producers_cmd.TXNS_EXAMPLES),
):
    _register(app, _name, _fn, _examples)
_register(spark_cmd.app, "scan", spark_cmd.scan, spark_cmd.SCAN_EXAMPLES)
app.add_typer(spark_cmd.app, name="spark")


def main() -> None:
    app(prog_name="kafkatool")


if __name__ == "__main__":  # pragma: no cover
    main()
