"""``--out``: where a file or a directory of tables the user names is written, and how (whole or nothing).

The rules of :func:`output_target` decide, before anything is read or written, whether ``--out PATH`` is
replaced (a temp file beside it, renamed over it: :func:`output_file`) or written in place (a device, a FIFO,
the shell's redirect), and refuse what must never be written over (a directory, a block device, a socket, a
dangling link); :func:`output_dir` does the same for a directory of tables (``spark scan --out``).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import OutputRefused
from ..logdir import TMP_SUFFIX
from .durable import fsync_dir, take_owner

# Names whose open is a duplicate of a descriptor this process already has (the shell's redirect): written in
# place, appended to, never replaced by a rename (which would swap the shell's file for another inode).
_FD_ALIASES = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/", "/dev/tty")


def _out_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def output_target(path: Path, force: bool = False) -> tuple[str, Path]:
    """What writing ``--out PATH`` does, decided before anything is read or written: ``("replace", FILE)`` (a
    temp file in FILE's own dir renamed over it: PATH, or the regular file a symlink PATH points to, the link
    kept) or ``("in-place", PATH)`` (a character device such as /dev/null or /dev/full, a FIFO, /dev/stdout).
    Refused (:class:`OutputRefused`): a regular file that exists, unless ``force`` (``--force``: a typo never
    replaces a file silently), a directory, a block device (a disk is never overwritten by a typo), a socket, a
    dangling symlink (as GNU cp, nothing is created through it) or a symlink loop."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "replace", path
    alias = os.path.abspath(path).startswith(_FD_ALIASES)
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise OutputRefused(f"--out {path}: a symlink to nothing ({os.readlink(path)}); not written through "
                                "it: name its target, or remove the link") from None
        except OSError as exc:
            raise OutputRefused(f"--out {path}: a symlink that cannot be followed ({exc.strerror})") from None
    kind = _out_kind(st.st_mode)
    if stat.S_ISREG(st.st_mode):
        if alias:
            return "in-place", path
        if not force:
            raise OutputRefused(f"--out {path}: the file exists; give --force to replace it")
        return "replace", Path(os.path.realpath(path))  # a link's target, in the target's own dir
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return "in-place", path
    raise OutputRefused(f"--out {path}: {kind}; give a file name")


@contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """While a temp file exists: SIGTERM and SIGHUP raise KeyboardInterrupt (so the temp file is removed, exit
    130), and SIGXFSZ is ignored (a write over ``ulimit -f`` fails with EFBIG, an I/O error, instead of killing
    the process with the temp file left behind). Main thread only (Python's rule for handlers)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    wanted = {signal.SIGTERM: interrupt, signal.SIGHUP: interrupt, signal.SIGXFSZ: signal.SIG_IGN}
    previous = {sig: signal.signal(sig, handler) for sig, handler in wanted.items()}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def output_file(path: Path, force: bool = False) -> Iterator[Any]:
    """A binary file object for ``--out PATH``, by :func:`output_target`'s rule; the whole output or nothing.

    Replaced: the data goes to ``<name>.<random>.kafkatool-tmp`` beside the file (created exclusively, never
    through a link), fsynced, renamed over the file when the ``with`` block ends without an error, the dir
    fsynced; on any error (ENOSPC, EFBIG, Ctrl-C, SIGTERM) the temp file is removed and the file left as it
    was. A replaced file keeps its mode and (when allowed) its owner. In place: opened for writing without
    truncation at the end (O_APPEND: ``>>`` stays an append); a FIFO with no reader is refused (ENXIO: an I/O
    error) rather than waited for. An existing file is replaced only with ``force`` (:func:`output_target`)."""
    how, target = output_target(path, force)
    if how == "in-place":
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise OSError(exc.errno, "a FIFO with no reader: start the reader first", str(path)) from None
            raise
        os.set_blocking(fd, True)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
        except OSError as exc:
            raise _named(exc, path) from None
        return
    like = None
    try:
        like = os.stat(target)
    except FileNotFoundError:
        pass
    with _term_as_interrupt():
        while True:
            tmp = target.with_name(f"{target.name}.{os.urandom(4).hex()}{TMP_SUFFIX}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                continue
            except OSError as exc:  # no such dir, read-only, permission: said of the name the user gave
                raise OSError(exc.errno, exc.strerror, str(path)) from None
        try:
            take_owner(fd, like, True)
            with os.fdopen(fd, "wb") as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            if isinstance(exc, OSError):
                raise _named(exc, path) from None
            raise
    fsync_dir(target.parent)


def _named(exc: OSError, path: Path) -> OSError:
    """A write error said of the name the user gave (``/dev/full: No space left on device``)."""
    return exc if exc.filename is not None else OSError(exc.errno, exc.strerror, str(path))


def output_dir(path: str, force: bool = False) -> None:
    """``--out DIR`` (``spark scan``): an empty directory, a symlink to one, or nothing yet (created); a directory
    holding anything only with ``force`` (its tables are replaced: Spark's overwrite mode). A URL is the file
    system's business. Anything else is refused (:class:`OutputRefused`): the tables are never written over a
    file, a device or a FIFO, and a dangling link is not followed."""
    if "://" in path:
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise OutputRefused(f"--out {path}: a symlink to nothing ({os.readlink(path)}); give a directory") from None
        except OSError as exc:
            raise OutputRefused(f"--out {path}: a symlink that cannot be followed ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"--out {path}: {_out_kind(st.st_mode)}; the output is a directory of tables")
    if not force:
        with os.scandir(path) as entries:
            if next(entries, None) is not None:
                raise OutputRefused(f"--out {path}: the directory is not empty; give --force to replace its "
                                    "tables")
