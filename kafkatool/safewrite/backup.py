"""The backup dir: what an apply keeps of every file it changes, and its ``MANIFEST.json``.

Every file an op changes, deletes, renames or renames over is backed up, as it is before the apply, to
``backup_dir/<path relative to root>``. A file the ops only cut short, or rewrite keeping its first bytes where
all that follows them is zero (a preallocated index trimmed or rebuilt), is backed up as the bytes after the
kept prefix, to ``<path>.removed`` (nothing when they are all zero): cutting 500 bytes off a 512 MiB segment
copies 500 bytes. A copy only ever appears complete (temp + fsync + rename) and is never overwritten or
deleted: when the backup dir already holds a copy of that path (an earlier apply into the same dir, or one
killed before its commit), an identical copy is reused and a different one kept, the current file going to
``<path>.~2~`` (``.~3~``...). ``backup_dir/MANIFEST.json`` (version 3) has one entry per file and apply
(applies numbered from 1 per backup dir): root, path, the kind of backup (``whole``, ``tail``, ``zeros``, or
none for a file the apply creates), the copy with its size and sha256, where the kept prefix ends and its
sha256, and the file's state before and after the apply (:func:`file_state`).

Version 3 changed two things, both for a crashed broker's thousand partitions, each its own apply:

- It is JSON lines: a header line, then one line per entry, each apply appending its own (:func:`append_manifest`,
  fsynced): rewriting the whole document for every apply was quadratic in the partitions (a 1.4 MB manifest
  written and fsynced 1,000 times for 1,000 partitions). ``jq -c . MANIFEST.json`` reads it.
- Zeros cut are never hashed: a crashed broker's preallocated index is 10 MiB of zeros, sha256 reads ~190 MB/s
  on the machine measured, and hashing them twice an index was ~70% of ``repair --apply``'s CPU on such a broker.
  A ``zeros`` entry records their length, and the state before it the hash of the kept prefix with ``zeros_from``.

Versions 1 and 2 (one JSON document) are still read; the first apply into such a backup dir rewrites it.
:mod:`.restore` reads it back; :mod:`kafkatool.walk` never takes a backup dir for a log dir
(:func:`kafkatool.logdir.is_backup_dir`, which also holds the names of backup dirs and of the manifest).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ApplyRefused
from ..filetypes import FileTooLarge, is_all_zero, open_regular, read_small
from ..logdir import MANIFEST_NAME
from .durable import (
    CHUNK,
    atomic_write,
    copy_to_temp,
    create_temp,
    fsync,
    is_zero,
    makedirs,
    replace,
    take_step,
    tmp_of,
    unlink,
)

REMOVED_SUFFIX = ".removed"

_MANIFEST_FORMAT = "kafkatool-backup-manifest"
_MANIFEST_VERSION = 3   # 2: entries per apply, with the state before and after and tail copies; 3: zeros_from


@dataclass(frozen=True)
class BackedUp:
    """One original file and its copy in the backup dir: the whole file, or (a file only cut short) the bytes cut."""

    path: Path          # the original (under root)
    copy: Path | None   # backup_dir / path relative to root (``.~2~``... when an earlier version is there); for a
    #                     cut, ``<path>.removed``; None when the bytes cut are all zero (nothing to copy)
    size: int           # bytes in the copy
    sha256: str | None  # of the copy (None: the bytes cut are all zero, and not hashed)
    kind: str = "whole"          # "whole" | "tail" (the bytes from ``offset`` to the end) | "zeros" (as tail, all 0)
    offset: int | None = None    # tail, zeros: where the cut is (the length kept)



def hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open_regular(path) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def hash_prefix(path: Path, length: int) -> str:
    h = hashlib.sha256()
    with open_regular(path) as f:
        while length > 0 and (chunk := f.read(min(CHUNK, length))):
            h.update(chunk)
            length -= len(chunk)
    return h.hexdigest()


def file_state(size: int, sha256: str, zeros_from: int | None = None) -> dict[str, Any]:
    """A file's state as the manifest records it (before and after an apply): its size and the sha256 of its bytes;
    with ``zeros_from``, the sha256 of its first ``zeros_from`` bytes, all the others being zero (a preallocated
    index's zeros are not hashed: :func:`backup_tail`)."""
    return {"size": size, "sha256": sha256} if zeros_from is None else {
        "size": size, "sha256": sha256, "zeros_from": zeros_from}


_HEADER = (json.dumps({"format": _MANIFEST_FORMAT, "version": _MANIFEST_VERSION}) + "\n").encode()


def load_manifest(backup_dir: Path) -> list[dict[str, Any]]:
    """The backup dir's manifest entries (one per file and apply). A last line without its newline is an append a
    kill cut short (:func:`append_manifest`): its apply had changed nothing yet (the journal is written after it),
    and it is left out."""
    path = backup_dir / MANIFEST_NAME
    try:
        data = read_small(path)  # a manifest is data from the disk too: bounded
        first, _, rest = data.partition(b"\n")
        try:
            head = json.loads(first)
        except ValueError:  # versions 1 and 2: one JSON document (written indented)
            head = None
        if isinstance(head, dict) and head.get("version") == _MANIFEST_VERSION and "files" not in head:
            if head.get("format") != _MANIFEST_FORMAT:
                raise ValueError(f"not a {_MANIFEST_FORMAT}")
            entries = [json.loads(line) for line in rest.split(b"\n")[:-1]]  # the last: b"" or torn
        else:
            doc = json.loads(data)
            if doc.get("format") != _MANIFEST_FORMAT or doc.get("version") not in (1, 2, _MANIFEST_VERSION):
                raise ValueError(f"not a {_MANIFEST_FORMAT} of a known version")
            entries = doc["files"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "path" in e and "root" in e
                                                    for e in entries):
            raise ValueError("an entry without root or path")
        return entries
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, FileTooLarge) as exc:
        raise ApplyRefused(f"{path}: unreadable ({exc}); use a new backup dir") from None


def _highest_apply(entries: list[dict[str, Any]]) -> int:
    return max((a for e in entries if isinstance(a := e.get("apply"), int) and not isinstance(a, bool)), default=0)


# Each manifest this process last wrote: its (device, inode, size, mtime) then, and the highest apply in it. An apply
# into the same backup dir as the one before (a log dir's partitions, one apply each) reads nothing of it again.
_WRITTEN: dict[Path, tuple[tuple[int, int, int, int], int]] = {}


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _as_written(path: Path) -> int | None:
    """The highest apply in the manifest at ``path`` when it is as this process last wrote it, else None."""
    known = _WRITTEN.get(path)
    try:
        return known[1] if known is not None and _stamp(os.lstat(path)) == known[0] else None
    except FileNotFoundError:
        return None


def next_apply(backup_dir: Path) -> int:
    """The number of the next apply into ``backup_dir``: one more than the highest its manifest records (read, and
    checked as :func:`load_manifest` does, unless this process wrote it last and it is still so)."""
    known = _as_written(backup_dir / MANIFEST_NAME)
    return 1 + (known if known is not None else _highest_apply(load_manifest(backup_dir)))


def _lines(entries: list[dict[str, Any]]) -> bytes:
    """Manifest entries as version 3 writes them: compact JSON, one a line."""
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in entries)


def append_manifest(backup_dir: Path, entries: list[dict[str, Any]]) -> None:
    """Add an apply's ``entries`` to ``backup_dir``'s manifest, durably (fsynced) before the apply changes anything.
    Appended as lines to a manifest this process wrote last and that is still so (a kill between the two halves
    leaves a torn last line, which :func:`load_manifest` leaves out); otherwise (none yet, an older version, one
    another run wrote, a torn last line) written whole with the entries already in it, once (temp + fsync +
    rename)."""
    path = backup_dir / MANIFEST_NAME
    lines = _lines(entries)
    highest = _as_written(path)
    if highest is not None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            view = memoryview(lines)
            for half in (view[:len(view) // 2], view[len(view) // 2:]):
                while half:
                    half = half[os.write(fd, half):]
                take_step()
            fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
    else:
        old = load_manifest(backup_dir)
        highest = _highest_apply(old)
        atomic_write(path, _HEADER + _lines(old) + lines)
        st = os.lstat(path)
    _WRITTEN[path] = (_stamp(st), max(highest, _highest_apply(entries)))


def copy_for(backup_dir: Path, rel: str, src: Path) -> tuple[Path, tuple[int, str] | None]:
    """Where the original of ``rel`` goes: a complete copy already there with the same bytes (reused: its size
    and sha256 come along), else the first free name of ``<rel>``, ``<rel>.~2~``, ``<rel>.~3~``... An existing
    copy is never overwritten: a different one is an earlier version (an earlier apply into the same dir)."""
    size = src.stat().st_size
    digest = None
    n = 1
    while True:
        copy = backup_dir / (rel if n == 1 else f"{rel}.~{n}~")
        if not copy.exists():
            return copy, None
        if copy.stat().st_size == size:
            digest = digest or hash_file(src)
            if hash_file(copy) == digest:
                return copy, digest
        n += 1


def backup_copy(src: Path, dst: Path) -> tuple[int, str]:
    """Copy ``src`` to ``dst`` (temp + fsync + rename), hashing as it goes; the directory is fsynced later."""
    tmp = tmp_of(dst)
    h = hashlib.sha256()
    with open_regular(src, buffering=0) as fin:
        size = copy_to_temp(fin, tmp, 0o600, h=h)
    replace(tmp, dst)
    return size, h.hexdigest()


@dataclass(frozen=True)
class Tail:
    """The backup of a file an apply only cuts short: the bytes removed, and the hashes to put them back."""

    copy: Path | None     # None: the bytes removed are all zero (a preallocated index, a zero-filled tail)
    size: int             # bytes removed
    sha256: str | None    # of the bytes removed (None when they are all zero: not hashed)
    reused: bool          # an identical copy was already in the backup dir
    before: tuple[int, str, int | None]   # the whole original: size, sha256, zeros_from (:func:`file_state`)
    kept: str             # sha256 of the first ``before[0] - size`` bytes: the file as the apply leaves it


def backup_tail(src: Path, backup_dir: Path, rel: str, keep: int) -> Tail:
    """Copy the bytes of ``src`` from ``keep`` to its end into ``<rel>.removed`` in the backup dir (temp + fsync +
    rename; an identical copy there is reused, a different one kept and the next free ``.~N~`` name taken),
    hashing the kept prefix and the whole original on the way (one read of the file). When the bytes removed are
    all zero (a preallocated index trimmed) nothing is written, and they are neither hashed nor, where they are a
    hole, read (:func:`kafkatool.filetypes.is_all_zero`): the state before is the kept prefix's hash with
    ``zeros_from``. Otherwise the runs of zeros are holes in the copy."""
    with open_regular(src, buffering=0) as fin:
        total = os.fstat(fin.fileno()).st_size
        if keep < total and is_all_zero(fin, keep, total - keep):
            kept = hash_prefix(src, keep)
            return Tail(None, total - keep, None, False, (total, kept, keep), kept)
    h_all, h_tail = hashlib.sha256(), hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    first = backup_dir / f"{rel}{REMOVED_SUFFIX}"
    tmp = tmp_of(first)
    size, fd = 0, None  # the copy is created at the first byte that is not zero
    with open_regular(src, buffering=0) as fin:
        left = keep
        while left:
            n = fin.readinto(view[:min(CHUNK, left)])
            if not n:
                raise ApplyRefused(f"{src}: shorter than {keep} bytes while being backed up (changed meanwhile?)")
            h_all.update(view[:n])
            left -= n
        kept = h_all.copy().hexdigest()
        try:
            while n := fin.readinto(buf):
                chunk = view[:n]
                h_all.update(chunk)
                h_tail.update(chunk)
                if not is_zero(buf, n):
                    if fd is None:
                        makedirs(tmp.parent, sync=False)
                        fd = create_temp(tmp, 0o600)
                    os.lseek(fd, size, os.SEEK_SET)  # the zeros before it: a hole
                    while chunk:
                        chunk = chunk[os.write(fd, chunk):]
                size += n
            if fd is not None:
                os.ftruncate(fd, size)
                fsync(fd)
        finally:
            if fd is not None:
                os.close(fd)
    before, tail_sha = (keep + size, h_all.hexdigest(), None), h_tail.hexdigest()
    if fd is None:  # all zero after all (a file written meanwhile, or one whose holes the system cannot show)
        return Tail(None, size, None, False, (keep + size, kept, keep if size else None), kept)
    n = 1
    while True:
        copy = first if n == 1 else first.with_name(f"{first.name}.~{n}~")
        if not copy.exists():
            replace(tmp, copy)
            return Tail(copy, size, tail_sha, False, before, kept)
        if copy.stat().st_size == size and hash_file(copy) == (size, tail_sha):
            unlink(tmp)
            return Tail(copy, size, tail_sha, True, before, kept)
        n += 1
