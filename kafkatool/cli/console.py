"""rich's Console, for output on a terminal (colour, its width, progress bars): imported only where a terminal
may be involved (see :func:`kafkatool.cli.output.terminal.console`), as rich costs more to import than a small
``verify`` takes to run."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


class QuietConsole(Console):
    """A rich Console that lets a closed pipe (``kafkatool dump | head``) reach the command runner as
    BrokenPipeError: rich's own handler exits 1, which would read as "findings". With ``NO_COLOR`` set it writes
    no escape codes at all (rich alone drops the colours but keeps bold)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if os.environ.get("NO_COLOR"):
            kwargs["color_system"] = None
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError
