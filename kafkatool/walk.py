"""Finding the files under the paths a user names: a file, a partition dir, a log dir, or many.

Order is the broker's: in a log dir, its own files (checkpoints, ``meta.properties``) first, then
partition dirs by topic and partition number; in a partition dir, segments by base offset with each
``.log`` before its indexes and snapshots, then the partition-level files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import InputIOError, UsageError
from .filetypes import FileKind, classify, sort_key

# topic-3, or topic-3.<uuid hex>-delete / -future / -stray (a dir being deleted, moved in, or no longer assigned)
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?P<state>delete|future|stray))?$")


@dataclass(frozen=True, slots=True)
class FoundFile:
    path: Path
    display: str          # the path as given or found (joined onto what the user typed)
    kind: FileKind
    explicit: bool        # named on the command line (not found by walking a directory)


def partition_of(dirname: str) -> tuple[str, int] | None:
    """``("topic", 3)`` for a partition dir name ``topic-3`` (also ``topic-3.<uuid>-delete``)."""
    m = PARTITION_DIR.match(dirname)
    return (m["topic"], int(m["partition"])) if m else None


def _dir_sort_key(p: Path) -> tuple:
    part = partition_of(p.name)
    return (0, part[0], part[1], p.name) if part else (1, p.name, 0, p.name)


def _walk_dir(root: Path, display: str) -> Iterator[FoundFile]:
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise InputIOError(f"cannot list {display}: {exc.strerror or exc}") from exc
    files = sorted((Path(e.path) for e in entries if e.is_file(follow_symlinks=True)), key=sort_key)
    dirs = sorted((Path(e.path) for e in entries if e.is_dir(follow_symlinks=True)), key=_dir_sort_key)
    for f in files:
        kind = classify(f).kind
        if kind not in (FileKind.UNKNOWN, FileKind.LOCK):
            yield FoundFile(f, os.path.join(display, f.name), kind, False)
    for d in dirs:
        yield from _walk_dir(d, os.path.join(display, d.name))


def expand(paths: Iterable[str | Path]) -> list[FoundFile]:
    """Every file to read under ``paths``; raises UsageError for a path that does not exist."""
    found: list[FoundFile] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(_walk_dir(p, str(raw)))
        elif p.exists():
            found.append(FoundFile(p, str(raw), classify(p, by_extension=True).kind, True))
        else:
            raise UsageError(f"no such file or directory: {raw}")
    return found
