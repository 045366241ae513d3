"""What a library function tells a progress bar: bytes, as it reads them (``progress: Callable[[int], None]``).

A command's bar is sized before any work starts (each command's ``*_bytes`` function), so a pass over a log
counts its segments whole: what it reads, and what it plans to read and skips (segments recovery deletes, the
tail past a cut, the rest of a log where the reading stops early), once it knows it skips it (:class:`Tally`).
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int], None]


class Tally:
    """Passes bytes on to ``progress`` (None: nothing to tell) and counts them, so that :meth:`settle` can tell
    what a pass planned and has not counted."""

    __slots__ = ("count", "progress")

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.count = 0

    def __call__(self, n: int) -> None:
        self.count += n
        if self.progress is not None:
            self.progress(n)

    def settle(self, planned: int) -> None:
        """Count the rest of ``planned`` bytes: the pass is over, what it did not read is skipped."""
        if planned > self.count:
            self(planned - self.count)


__all__ = ["Progress", "Tally"]
