"""The exit policy, one home for every command: what a run's findings and errors make its exit code.

0 clean, 1 findings (at or above ``--fail-on``, or the command's own verdict: data lost, work pending, nothing
found), 2 usage error (a path with no Kafka log dir, partition or segment under it included), 3 I/O error (a file
could not be read: it outranks findings, as nothing can be said of what was not read); 70 an internal error (a bug
in kafkatool); 130 interrupted with Ctrl-C; 141 the reader of stdout went away, as ``| head`` does, the code a
shell gives a process killed by SIGPIPE. Set ``KAFKATOOL_DEBUG=1`` to see tracebacks instead of one-line messages.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import typer

from ..errors import KafkaToolError, UsageError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3
EXIT_INTERNAL = 70  # a bug in kafkatool (EX_SOFTWARE); never caused by bad input
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE): quiet, and not "findings"

SEVERITIES = ("info", "warning", "error")  # kafkatool.model.Finding's, mildest first


def check_fail_on(fail_on: str) -> None:
    """``--fail-on`` is one of the severities (a usage error, exit 2, before anything is read)."""
    if fail_on not in SEVERITIES:
        raise UsageError(f"--fail-on must be one of {', '.join(SEVERITIES)}")


def exit_code(severities: Mapping[str, int], fail_on: str, *, io_errors: int = 0, verdict: bool = False) -> int:
    """A command's exit code from what it reported: ``severities`` (findings per severity), ``io_errors``
    (``io-error`` findings: a file that could not be read) and ``verdict`` (the command's own "not clean":
    records lost, repairs pending, nothing found). 3 when a file could not be read, 1 when a finding is at or above
    ``fail_on`` or the verdict says so, else 0."""
    if io_errors:
        return EXIT_IO
    if verdict or any(severities.get(s) for s in SEVERITIES[SEVERITIES.index(fail_on):]):
        return EXIT_FINDINGS
    return EXIT_OK


def command(fn: Callable[..., int]) -> Callable[..., None]:
    """Run a command body: its int result is the exit code; known errors become one line on stderr."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        debug = os.environ.get("KAFKATOOL_DEBUG", "") not in ("", "0")
        from .output.terminal import printable  # a message may quote a hostile file name: no raw control character

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
            kind = "note" if exc.exit_code == EXIT_OK else "error"  # NothingMatched: an answer, not an error
            sys.stderr.write(f"kafkatool: {kind}: {printable(str(exc))}\n")
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

    return run


def _traceback(debug: bool) -> None:
    """With ``KAFKATOOL_DEBUG``, the traceback of the exception being handled, on stderr. Printed here rather than
    re-raised: an exception leaving the interpreter exits 1, the findings code, whatever the error was."""
    if debug:
        import traceback  # only when asked: start-up stays without it

        traceback.print_exc(file=sys.stderr)
