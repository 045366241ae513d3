"""The log dir's ``.lock``, held as a Kafka broker holds it (``LogManager.lockLogDirs``, ``FileLock``).

Every command that writes into a log dir holds it for the whole change (:func:`log_dir_lock`), so a running
broker refuses the change and a broker starting meanwhile fails to lock the dir instead of loading it
half-changed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ApplyRefused, LogDirLocked, UsageError
from ..filetypes import NotRegularFile, type_name

LOCK_NAME = ".lock"

_held_locks: set[tuple[int, int]] = set()  # (st_dev, st_ino) of the lock files this process holds


def lock_file_for(log_dir: Path) -> Path:
    """The ``.lock`` that guards ``log_dir``: its own; else, when its parent has one (a partition dir was given),
    the parent's (the broker's lock covers its partitions); else its own, to be created as the broker does."""
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        raise UsageError(f"{log_dir}: not a directory")
    own = log_dir / LOCK_NAME
    if own.exists():
        return own
    parent = log_dir.resolve().parent / LOCK_NAME
    return parent if parent.is_file() else own


def _posix_lock_holder(fd: int) -> int | None:
    """The pid holding a POSIX record lock that conflicts with ours (``F_GETLK``; Linux layout), else None."""
    if sys.platform != "linux":
        return None
    layout = "@hhqqi4x"  # struct flock: l_type, l_whence, l_start, l_len, l_pid (64-bit off_t)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(layout, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        l_type, _whence, _start, _len, pid = struct.unpack(layout, answer)
    except (OSError, struct.error):
        return None
    return pid if l_type != fcntl.F_UNLCK and pid > 0 else None


@contextmanager
def log_dir_lock(log_dir: Path) -> Iterator[Path]:
    """Hold ``log_dir``'s ``.lock`` as a Kafka broker does, for the whole ``with`` block; yields the lock file.

    The broker (``LogManager.lockLogDirs``, ``FileLock``) creates ``<log dir>/.lock`` and takes
    ``FileChannel.tryLock()``: on Linux a POSIX record lock (``fcntl F_SETLK``). The same lock is taken here
    (``fcntl.lockf``), and also ``flock`` (an independent lock family on Linux), so tools that use flock are
    respected too. Either held by another process raises :class:`LogDirLocked`; so does a second hold from this
    process (POSIX locks are per process, so the check is ours). The lock file is never deleted or broken. For
    the file chosen, see :func:`lock_file_for`: a missing ``.lock`` is created, as the broker does at start-up
    (a broker starting meanwhile then fails to lock it instead of loading a half-repaired dir).

    Caveat of POSIX locks: closing *any* descriptor of the lock file in this process releases the record lock
    (the flock stays), so nothing else in the process may open ``.lock`` while it is held.
    """
    lock = lock_file_for(Path(log_dir))
    try:
        st = lock.stat()
        if (st.st_dev, st.st_ino) in _held_locks:
            raise LogDirLocked(f"{lock}: already held by this process", str(lock))
        if not stat.S_ISREG(st.st_mode):  # a FIFO, a device: not even opened (a device's open can act)
            raise NotRegularFile(lock, type_name(st.st_mode))
    except FileNotFoundError:
        pass
    try:  # never through a link (O_CREAT would create its target, outside the log dir), never blocking on a FIFO
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise ApplyRefused(f"{lock}: a symbolic link, not the broker's lock file; nothing was changed") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # put there since the look above
            raise NotRegularFile(lock, type_name(st.st_mode))
        key = (st.st_dev, st.st_ino)
        if key in _held_locks:  # created or replaced between the two looks: never close a held lock's file
            raise LogDirLocked(f"{lock}: already held by this process", str(lock))
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            pid = _posix_lock_holder(fd)
            who = f"process {pid}" if pid else "another process"
            raise LogDirLocked(f"{lock} is locked by {who} (a running Kafka broker?): stop it first; "
                               "nothing was changed", str(lock)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LogDirLocked(f"{lock} is locked (flock) by another process: stop it first; nothing was changed",
                               str(lock)) from None
        _held_locks.add(key)
        try:
            yield lock
        finally:
            _held_locks.discard(key)
    finally:
        os.close(fd)  # releases both locks; the file stays
