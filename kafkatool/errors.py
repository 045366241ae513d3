"""One error hierarchy for the whole tool.

Library code raises these (never prints); the CLI maps them to one-line messages and exit codes.
Damage found *inside* a file is not an exception: readers yield :class:`kafkatool.model.Finding`
and keep going. Exceptions are for situations where nothing sensible can be produced at all.
"""

from __future__ import annotations


class KafkaToolError(Exception):
    """Root of every error kafkatool raises on purpose."""

    exit_code = 1


class UsageError(KafkaToolError):
    """The command line asked for something that cannot be done (bad path kind, bad option mix)."""

    exit_code = 2


class NothingMatched(KafkaToolError):
    """A filter (``--topic``, ``--partition``) matched nothing in what was read: an answer, not an error (exit 0,
    said as a note on stderr, as every command says a filter that matched nothing)."""

    exit_code = 0


class InputIOError(KafkaToolError):
    """A file or directory could not be read (missing, permission denied, I/O error)."""

    exit_code = 3


class LogDirLocked(KafkaToolError):
    """A log dir's ``.lock`` is held by another live process (a running broker, another kafkatool): refused.

    Nothing was changed and the lock was left alone. Exit code 2, as for a usage error: the command cannot be
    done as asked until the broker is stopped (1 stays "findings").
    """

    exit_code = 2

    def __init__(self, message: str, lock_file: str) -> None:
        super().__init__(message)
        self.lock_file = lock_file


class ApplyRefused(KafkaToolError):
    """The ops cannot be applied safely as asked; nothing was changed (under ``root``)."""

    exit_code = 2


class JournalError(KafkaToolError):
    """An interrupted apply cannot be completed: its journal is unreadable, or the files are in neither the state
    before nor after an op (changed by something else). The journal and the backups are left in place."""


class RestoreRefused(ApplyRefused):
    """A backup dir cannot be restored safely (a file changed since the apply, a copy is damaged...); nothing was
    changed."""


class OutputRefused(UsageError):
    """``--out`` names something that is neither written in place nor replaced safely; nothing was written."""


class FormatError(KafkaToolError):
    """Bytes that do not follow the declared layout.

    Carries the byte position so the boundary that catches it can turn it into a Finding.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


class DecompressionError(FormatError):
    """A compressed payload could not be decoded."""


class DecompressionLimitExceeded(DecompressionError):
    """A compressed payload would expand beyond the configured cap (decompression bomb guard)."""


class AppendError(KafkaToolError):
    """An append Kafka would refuse (bad framing or CRC, offsets going back, invalid transaction state...)."""


class IndexAppendError(KafkaToolError):
    """An entry Kafka's index would refuse (``InvalidOffsetException``, ``IllegalStateException``): offsets or
    timestamps going back. ``position``: the byte of the batch whose entry it is (None: the closing time entry)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class PlanError(KafkaToolError):
    """The partition cannot be planned safely (reported as a finding; nothing is changed)."""
