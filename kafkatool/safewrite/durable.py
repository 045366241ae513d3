"""Durable steps: temp + fsync + rename, and the crash hook that counts them.

Every change kafkatool makes to a disk goes through these primitives (:mod:`.journal`, :mod:`.backup`,
:mod:`.restore`, :mod:`.outpath`): a file is always either its old or its new content, and every rename and
unlink is followed by an fsync of its directory before anything relies on it, so power loss is covered too, as
long as the disk honours fsync.

Crash testing: ``KAFKATOOL_CRASH_AT=N`` (read once, at import) makes the process SIGKILL itself right before
its N-th *durable step*, counting from 1 over the whole process: every fsync (of a file or a directory),
rename, unlink, rmdir and truncate this package does, in program order (:func:`steps_taken` gives the count so
far). The count of a given apply is deterministic, so a test can kill a real subprocess at every step in turn.
Unset, it costs one integer comparison per durable step.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path
from typing import Any, BinaryIO

from ..logdir import TMP_SUFFIX

CHUNK = 1 << 20


def _crash_at_from_env() -> int | None:
    raw = os.environ.get("KAFKATOOL_CRASH_AT", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


_CRASH_AT = _crash_at_from_env()
_steps_taken = 0


def steps_taken() -> int:
    """Durable steps this process has taken so far (what ``KAFKATOOL_CRASH_AT`` counts)."""
    return _steps_taken


def take_step() -> None:
    global _steps_taken
    _steps_taken += 1
    if _steps_taken == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def fsync(fd: int) -> None:
    take_step()
    os.fsync(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def replace(src: Path, dst: Path) -> None:
    take_step()
    os.replace(src, dst)


def unlink(path: Path) -> None:
    take_step()
    os.unlink(path)


def rmdir(path: Path) -> None:
    take_step()
    os.rmdir(path)


def tmp_of(path: Path) -> Path:
    return path.with_name(path.name + TMP_SUFFIX)


def create_temp(tmp: Path, perm: int) -> int:
    """A new, empty ``tmp`` open for writing. Whatever has that name (ours by its suffix) is removed first: a
    partial copy of a killed run, or a symlink or FIFO planted on a hostile disk, which an open would follow
    (truncating a file anywhere) or block on. The create is exclusive and follows no link."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perm)


def makedirs(path: Path, *, sync: bool = True) -> None:
    """``mkdir -p``; with ``sync`` each new directory is made durable (its parent fsynced)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            pass
        if sync:
            fsync_dir(d.parent)


def take_owner(fd: int, like: os.stat_result | None, mode: bool) -> None:
    """Give a new file the mode (``mode``) and owner of ``like``: the file it replaces, or its directory. A
    repair run as root must not leave files the broker's user cannot write. Ownership is best effort."""
    if like is None:
        return
    if mode:
        os.fchmod(fd, stat.S_IMODE(like.st_mode))
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != (like.st_uid, like.st_gid):
        try:
            os.fchown(fd, like.st_uid, like.st_gid)
        except PermissionError:
            pass


def write_temp(tmp: Path, data: bytes, like: os.stat_result | None, mode: bool) -> None:
    fd = create_temp(tmp, 0o666)
    try:
        take_owner(fd, like, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:CHUNK]):]
        fsync(fd)
    finally:
        os.close(fd)


_ZERO_CHUNK = bytes(CHUNK)


def is_zero(buf: bytearray, n: int) -> bool:
    """Whether the first ``n`` bytes of ``buf`` (a :data:`CHUNK` buffer) are all zero (``memcmp``: ``count(0)`` took
    ~3 ms a MiB)."""
    return buf == _ZERO_CHUNK if n == len(buf) == CHUNK else buf[:n] == _ZERO_CHUNK[:n]


def copy_to_temp(fin: BinaryIO, tmp: Path, perm: int, like: os.stat_result | None = None, mode: bool = False,
                 h: Any = None) -> int:
    """The rest of ``fin`` copied into a new ``tmp`` (:func:`create_temp`, owned as :func:`take_owner` says) and
    fsynced, hashed into ``h`` on the way when given; the bytes copied. The caller renames it into place.
    A chunk of zeros is left a hole (``cp --sparse``): a preallocated index's 10 MiB of zeros take no room in a
    backup dir, on the disk of a broker that may be full."""
    buf = bytearray(CHUNK)
    size = 0
    fd = create_temp(tmp, perm)
    try:
        take_owner(fd, like, mode)
        while n := fin.readinto(buf):
            chunk = memoryview(buf)[:n]
            if h is not None:
                h.update(chunk)
            size += n
            if is_zero(buf, n):
                os.lseek(fd, n, os.SEEK_CUR)
                continue
            while chunk:
                chunk = chunk[os.write(fd, chunk):]
        os.ftruncate(fd, size)  # the zeros a hole at the end stands for
        fsync(fd)
    finally:
        os.close(fd)
    return size


def atomic_write(path: Path, data: bytes) -> None:
    """Replace (or create) ``path`` with ``data`` so that it is always either the old or the new content, durably:
    ``<name>.kafkatool-tmp`` written and fsynced, renamed over ``path``, the directory fsynced. Missing parent
    directories are created (durably). A replaced file keeps its mode and (when allowed) its owner; a new one
    gets its directory's owner."""
    path = Path(path)
    makedirs(path.parent)
    try:
        like, mode = path.stat(), True
    except FileNotFoundError:
        like, mode = path.parent.stat(), False
    tmp = tmp_of(path)
    write_temp(tmp, data, like, mode)
    replace(tmp, path)
    fsync_dir(path.parent)


def abs_path(path: Path) -> Path:
    """Absolute, with the directory's symlinks resolved but not the file's own name."""
    path = Path(path)
    return path.parent.resolve() / path.name


def inside(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or lies under it."""
    return path == root or root in path.parents
