"""Notes on stderr for a run that showed nothing: a forensic tool never answers "nothing" where it means "nothing
matched what you asked" or "I read nothing" without saying which. Stdout stays as it is (pure JSON lines with
``--format jsonl``), and so does the exit code: a filter that matched nothing is an answer (0), not an error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ...model import FileStart, Finding
from .terminal import printable


def note(text: str) -> None:
    """One line on stderr, ``kafkatool: note: ...``: what a person reading an empty result must know."""
    sys.stderr.write(f"kafkatool: note: {printable(text)}\n")


def nothing_shown(out: Any, what: str, read: Callable[[], str], filters: Mapping[str, Any] | None = None) -> None:
    """When ``out`` (an :class:`~kafkatool.cli.output.Output`) showed no value, findings and file names aside: a note
    that no ``what`` (``record``, ``partition``...) matched the ``filters`` given (option: value; None, False and
    empty ones are not given), or was found when none was given, and what was read (``read()``: called only then,
    it may walk the paths again)."""
    if out.shown:
        return
    given = [(option, value) for option, value in (filters or {}).items() if value not in (None, False, (), [])]
    words = " ".join(option if value is True else f"{option} {_value(value)}" for option, value in given)
    note(f"no {what} {f'matched {words}' if given else 'found'} in {read()}")


def tallied(out: Any, items: Iterable[Any]) -> Iterator[Any]:
    """``items`` passed on as they are, each value (findings and file names aside) counted in ``out.shown``: for
    values written elsewhere than through ``out`` (dump's csv or parquet rows)."""
    for item in items:
        if not isinstance(item, Finding | FileStart):
            out.shown += 1
        yield item


def names(label: str, seen: Iterable[str], limit: int = 5) -> str:
    """``3 groups: a, b, c``, the first ``limit`` of the names in order, for a note on what a filter could match."""
    every = sorted(set(seen))
    if not every:
        return f"no {label}"
    shown = ", ".join(every[:limit]) + (", ..." if len(every) > limit else "")
    return f"{len(every):,} {label}{'' if len(every) == 1 else 's'}: {shown}"


def _value(value: Any) -> str:
    if isinstance(value, list | tuple | set):
        return ",".join(str(v) for v in value)
    return str(value)
