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
import gc
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import typer
from typer.main import get_command_from_info, get_group
from typer.models import CommandInfo

from ..errors import KafkaToolError
from .commands import Command, LazyCommand, LazyGroup, first_sentence

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3
EXIT_INTERNAL = 70  # a bug in kafkatool (EX_SOFTWARE); never caused by bad input
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE): quiet, and not "findings"


def command(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body: its int result is the exit code; known errors become one line on stderr."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        debug = os.environ.get("KAFKATOOL_DEBUG", "") not in ("", "0")
        from .output import printable  # a message may quote a hostile file name: no raw control character

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
            _traceback(debug)
            sys.stderr.write(f"kafkatool: error: {printable(str(exc))}\n")
            code = exc.exit_code
        except OSError as exc:
            _traceback(debug)
            where = f" {printable(str(exc.filename))}:" if exc.filename else ""
            sys.stderr.write(f"kafkatool: I/O error:{where} {printable(str(exc.strerror or exc))}\n")
            code = EXIT_IO
        except Exception as exc:  # a bug: one line, not a traceback, unless debugging
            _traceback(debug)
            sys.stderr.write(f"kafkatool: internal error: {type(exc).__name__}: {printable(str(exc))}"
                             " (set KAFKATOOL_DEBUG=1 for the traceback; please report it)\n")
            code = EXIT_INTERNAL
        raise typer.Exit(code or EXIT_OK)

    run.__doc__ = reflow(fn.__doc__ or "")
    return run


def _traceback(debug: bool) -> None:
    """With ``KAFKATOOL_DEBUG``, the traceback of the exception being handled, on stderr. Printed here rather than
    re-raised: an exception leaving the interpreter exits 1, the findings code, whatever the error was."""
    if debug:
        import traceback  # only when asked: start-up stays without it

        traceback.print_exc(file=sys.stderr)


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


def _lazy(module: str, function: str, examples: str) -> LazyCommand:
    """The command ``function`` of ``kafkatool.cli.<module>``, with its ``examples`` under its help."""

    def load() -> tuple[Callable[..., int], str]:
        commands = importlib.import_module(f"{__package__}.{module}")
        return getattr(commands, function), getattr(commands, examples)

    def build() -> typer.core.TyperCommand:
        fn, text = load()
        # named after its function, as typer's @app.command() names it: partition_for is partition-for
        info = CommandInfo(cls=Command, callback=command(fn), epilog=paste_ready(text))
        return get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)

    return LazyCommand(lambda: first_sentence(reflow(load()[0].__doc__ or "")), build)


class _Spark(LazyGroup):
    lazy = {"scan": _lazy("spark_cmd", "scan", "SCAN_EXAMPLES")}


spark = typer.Typer(
    name="spark",
    help="Scan log dirs with Apache Spark (needs the spark extra: pip install 'kafkatool[spark]').",
    cls=_Spark,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


@spark.callback()
def _spark() -> None:
    """Scan log dirs with Apache Spark: the kafka-log data source (see docs/spark.md)."""


class _Kafkatool(LazyGroup):
    """The ``kafkatool`` command: its commands in the order ``--help`` lists them."""

    lazy = {
        "dump": _lazy("dump_cmd", "dump", "EXAMPLES"),
        "verify": _lazy("verify_cmd", "verify", "EXAMPLES"),
        "overview": _lazy("overview_cmd", "overview", "EXAMPLES"),
        "locate": _lazy("locate_cmd", "locate", "EXAMPLES"),
        "replicas": _lazy("replicas_cmd", "replicas", "REPLICAS_EXAMPLES"),
        "truncation": _lazy("replicas_cmd", "truncation", "TRUNCATION_EXAMPLES"),
        "epochs": _lazy("replicas_cmd", "epochs", "EPOCHS_EXAMPLES"),
        "repair": _lazy("repair_cmd", "repair", "EXAMPLES"),
        "offsets": _lazy("internal_cmd", "offsets", "OFFSETS_EXAMPLES"),
        "partition-for": _lazy("internal_cmd", "partition_for", "PARTITION_FOR_EXAMPLES"),
        "txn-state": _lazy("internal_cmd", "txn_state", "TXN_STATE_EXAMPLES"),
        "metadata": _lazy("internal_cmd", "metadata", "METADATA_EXAMPLES"),
        "delivery": _lazy("delivery_cmd", "delivery", "EXAMPLES"),
        "producers": _lazy("producers_cmd", "producers", "PRODUCERS_EXAMPLES"),
        "txns": _lazy("producers_cmd", "txns", "TXNS_EXAMPLES"),
        "spark": LazyCommand(lambda: first_sentence(spark.info.help), lambda: get_group(spark)),
    }


app = typer.Typer(
    name="kafkatool",
    help=(
        "Inspect and repair Apache Kafka log directories offline, straight from broker disks: "
        "no broker, no JVM.\n\n"
        "Exit codes: 0 clean, 1 findings, 2 usage error or nothing Kafka under a path, 3 I/O error; "
        "70 internal error (a bug in kafkatool), 130 interrupted (Ctrl-C), 141 output pipe closed."
    ),
    cls=_Kafkatool,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show kafkatool's version and exit."),
) -> None:
    """Inspect and repair Apache Kafka log directories offline: no broker, no JVM."""


def main() -> None:
    # gc.freeze(): the objects alive now (the modules imported) are never traversed by the cyclic collector again,
    # in this run's collections nor in the one the interpreter makes at exit (~15 ms with typer loaded), which
    # also skips what the command leaves: the process exits next and the OS takes the memory back.
    gc.freeze()
    gc.enable()  # kafkatool.cli.main() turned it off while this module was imported
    try:
        app(prog_name="kafkatool")
    finally:
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    main()
