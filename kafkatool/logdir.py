"""A broker log dir: its partition dirs, and its own files read once.

A log dir (``log.dirs`` entry) holds one dir per partition replica and the broker's own files:
``meta.properties`` (``MetaPropertiesEnsemble``), ``.kafka_cleanshutdown`` (``LogManager``: present when the
broker stopped cleanly, so ``LogLoader`` skips recovery), and the offset checkpoints ``LogManager`` writes
per log dir (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``; ``OffsetCheckpointFile``).

:class:`LogDir` values are made by discovery (:func:`kafkatool.walk.discover`); each broker file is read on
first use and kept, so every command and every partition of the dir share one reading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .filetypes import OFFSET_CHECKPOINT_NAMES, FileKind, FileTooLarge, read_small
from .findings import finding
from .model import Finding

if TYPE_CHECKING:
    from .smallfiles import OffsetCheckpointEntry  # noqa: F401 (annotations)
    from .walk import PartitionDir

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
META_PROPERTIES = "meta.properties"
BROKER_FILES = frozenset({META_PROPERTIES, CLEAN_SHUTDOWN, *OFFSET_CHECKPOINT_NAMES})
"""Names only a log dir holds (never a partition dir): a dir with one of them is a log dir."""

BACKUP_PREFIX = "kafkatool-backup-"
"""kafkatool's own backups (``repair --apply``, ``truncation --apply``) are named so, beside the log dirs."""
MANIFEST_NAME = "MANIFEST.json"
"""What a kafkatool backup dir holds, under any name (:mod:`kafkatool.safewrite.backup`)."""
JOURNAL_NAME = ".kafkatool-apply.journal"
"""The journal an ``--apply`` keeps in the log dir until it is done (:mod:`kafkatool.safewrite.journal`)."""
TMP_SUFFIX = ".kafkatool-tmp"
"""A file kafkatool writes before it renames it into place (:mod:`kafkatool.safewrite.durable`)."""


class Checkpoint(NamedTuple):
    """One offset checkpoint file of the log dir: its entries in file order, the offset per (topic, partition)
    (a later line wins, as ``CheckpointFile`` reading into a map), what was wrong reading it, and its bytes (None
    when it could not be read: ``repair`` rewrites a checkpoint only from the bytes it parsed)."""

    entries: tuple[OffsetCheckpointEntry, ...]
    offsets: dict[tuple[str, int], int]
    findings: tuple[Finding, ...]
    data: bytes | None = None


@dataclass(eq=False)
class LogDir:
    """A log dir under the paths a command was given: its own files, and its partition dirs in broker order."""

    path: Path
    display: str
    files: list[tuple[Path, str]]                                     # (path, display) of its own files
    partitions: list[PartitionDir] = field(default_factory=list)      # by topic, partition; other dirs last
    findings: list[Finding] = field(default_factory=list)             # what discovery met here (skipped, unreadable)
    _read: dict[str, Checkpoint | None] = field(default_factory=dict, init=False, repr=False)

    def file(self, name: str) -> tuple[Path, str] | None:
        """(path, display) of one of its own files, if present."""
        return self._names.get(name)

    @cached_property
    def _names(self) -> dict[str, tuple[Path, str]]:
        return {p.name: (p, d) for p, d in self.files}

    @property
    def clean_shutdown(self) -> bool:
        """``.kafka_cleanshutdown`` is present: the broker stopped cleanly and will not recover its logs."""
        return CLEAN_SHUTDOWN in self._names

    def checkpoint(self, name: str) -> Checkpoint | None:
        """One of the offset checkpoint files (None when absent), read on first use."""
        if name not in OFFSET_CHECKPOINT_NAMES:
            raise ValueError(f"not an offset checkpoint: {name}")
        if name not in self._read:
            self._read[name] = self._read_checkpoint(name)
        return self._read[name]

    @cached_property
    def checkpoints(self) -> dict[str, dict[tuple[str, int], int]]:
        """The offsets of every checkpoint file present, by file name (each file read once, see :meth:`checkpoint`)."""
        out = {}
        for name in sorted(OFFSET_CHECKPOINT_NAMES):
            cp = self.checkpoint(name)
            if cp is not None:
                out[name] = cp.offsets
        return out

    @cached_property
    def checkpoint_findings(self) -> tuple[Finding, ...]:
        """What reading the offset checkpoint files met (malformed, too large, unreadable), by file name: what a
        command that loads partitions says once a log dir, as ``verify`` does."""
        return tuple(f for name in sorted(OFFSET_CHECKPOINT_NAMES) if (cp := self.checkpoint(name)) is not None
                     for f in cp.findings)

    @cached_property
    def unreadable_checkpoints(self) -> tuple[Finding, ...]:
        """The io-error findings of the checkpoint files that could not be read (what a partition's load goes
        without): looked for once a log dir, not once a partition."""
        return tuple(f for f in self.checkpoint_findings if f.code == "io-error")

    def offset(self, name: str, topic: str, partition: int) -> int | None:
        """This partition's entry in checkpoint ``name``, if the file is there and lists it."""
        cp = self.checkpoint(name)
        return None if cp is None else cp.offsets.get((topic, partition))

    def _read_checkpoint(self, name: str) -> Checkpoint | None:
        found = self.file(name)
        if found is None:
            return None
        path, display = found
        return parse_checkpoint(path, display)


def parse_checkpoint(path: Path, display: str) -> Checkpoint:
    """An offset checkpoint file read and parsed (:meth:`LogDir.checkpoint` keeps it; ``repair --apply`` reads the
    recovery-point checkpoint again under the log dir's lock before it writes it)."""
    # Here, not at the top: discovery runs for every command, a log dir's checkpoints are read only by the
    # commands that look at a log dir, and smallfiles' value classes cost more to create than checking a small
    # segment, which never needs them (tests/test_startup.py); smallfiles imports no module of discovery.
    from . import smallfiles

    try:
        data = read_small(path)
    except FileTooLarge as exc:
        return Checkpoint((), {}, (smallfiles.too_large(FileKind.OFFSET_CHECKPOINT, display, exc.size),))
    except OSError as exc:
        return Checkpoint((), {}, (finding("io-error", display, None, str(smallfiles.cannot_read(display, exc))),))
    items = list(smallfiles.parse_small_file(data, FileKind.OFFSET_CHECKPOINT, display, None))
    entries = tuple(i for i in items if isinstance(i, smallfiles.OffsetCheckpointEntry))
    offsets = {(e.topic, e.partition): e.offset for e in entries}
    return Checkpoint(entries, offsets, tuple(i for i in items if isinstance(i, Finding)), data)


def is_backup_dir(name: str, file_names: set[str] | frozenset[str] = frozenset()) -> bool:
    """A dir kafkatool's ``--apply`` wrote its backups into (default name, or holding its manifest)."""
    return name.startswith(BACKUP_PREFIX) or MANIFEST_NAME in file_names


__all__ = ["BACKUP_PREFIX", "BROKER_FILES", "CLEAN_SHUTDOWN", "JOURNAL_NAME", "MANIFEST_NAME", "META_PROPERTIES",
           "TMP_SUFFIX", "Checkpoint", "LogDir", "is_backup_dir", "parse_checkpoint"]
