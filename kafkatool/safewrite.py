"""The one layer through which kafkatool changes a log dir: nothing is ever lost, and a kill at any point is harmless.

Every writing command (``repair``, later ``truncation --apply``) plans a list of :class:`FileOp` and runs it
through :func:`apply_ops` while holding :func:`log_dir_lock`::

    with log_dir_lock(log_dir):
        resume(log_dir)                  # finish an interrupted apply first: a plan made from a
        ops = plan(...)                  # half-applied state could differ
        if ops and not dry_run:          # the dry run is the caller's
            apply_ops(log_dir, ops, backup_dir)

What :func:`apply_ops` does, in this order (the order is what makes a kill harmless):

1. **Check**, writing nothing: every path lies under ``root``, ``backup_dir`` does not, no interrupted apply
   is pending (its journal exists: :func:`resume` it first), and the ops make sense in sequence (a truncate
   never extends, a rename stays in its directory and has a source or, already done, a destination, ``.lock``
   is never touched). Otherwise :class:`ApplyRefused`. Re-applying ops already applied changes nothing.
2. **Stage** the new contents of "write" ops in ``backup_dir/staged/<id>/<op number>`` (``<id>`` is derived
   from the journal path, so only that journal can refer to it).
3. **Back up** every file an op changes, deletes, renames or renames over, as it is before the apply, to
   ``backup_dir/<path relative to root>``. A file the ops only cut short, or rewrite keeping its first bytes
   where all that follows them is zero (a preallocated index trimmed or rebuilt), is backed up as the bytes
   after the kept prefix, to ``<path>.removed`` (nothing when they are all zero): cutting 500 bytes off a
   512 MiB segment copies 500 bytes. A copy only ever appears complete (temp + fsync + rename) and is
   never overwritten or deleted: when the backup dir already holds a copy of that path (an earlier apply into
   the same dir, or this one killed before its commit), an identical copy is reused and a different one kept,
   the current file going to ``<path>.~2~`` (``.~3~``...). ``backup_dir/MANIFEST.json`` (version 2) has one
   entry per file and apply (applies numbered from 1 per backup dir): root, path, the kind of backup
   (``whole``, ``tail``, ``zeros``, or none for a file the apply creates), the copy with its size and sha256,
   where the kept prefix ends and its sha256, and the file's size and sha256 before and after the apply;
   merged with the entries of earlier applies.
4. **Commit**: the journal (default ``root/.kafkatool-apply.journal``) is written atomically. Its first line is
   one JSON object: the ops (paths relative to ``root``, staged name, length and sha256 of new contents), the
   backups, ``backup_dir`` (absolute). Until it exists, ``root`` is untouched; once it exists, everything a
   resume needs is durable.
5. **Execute** the ops in order. Each is idempotent from the state just before it or just after it: write =
   ``<name>.kafkatool-tmp`` (a name the broker ignores), write, fsync, rename over, fsync the dir; truncate =
   ``ftruncate`` unless already that size, fsync; delete = unlink if present, fsync the dir; rename = rename if
   the source exists (else the destination must), fsync the dir. After each op a line ``{"done": i}`` is
   appended to the journal and fsynced.
6. **Clean up**: the staged contents are deleted, then the journal (the dir fsynced after each).

:func:`resume` finishes a pending journal: it re-runs the ops from the first one not recorded as done (the
recorded ones are not re-run: a replay from the start is wrong for sequences such as "rename A to B, then
write A"), after checking every staged content it needs against its sha256, then cleans up. A kill before the
commit leaves ``root`` exactly as it was (a re-run plans and applies again, keeping the complete backup
copies, which are the same originals); a kill after it leaves a journal that :func:`resume` completes; a kill
during the cleanup leaves a journal whose ops are all done. Either way no ``*.kafkatool-tmp`` file survives
the re-run in ``root`` (in the backup dir, a kill before the commit can leave a partial ``*.kafkatool-tmp``
copy, overwritten when the re-run backs up the same file, and staged contents, which the re-run removes).
Power loss is covered too (every rename and unlink is followed by an fsync of its directory before the next
phase relies on it), as long as the disk honours fsync.

:func:`restore` undoes the applies recorded in a backup dir (``kafkatool repair --restore``): each file back
to its state before the first of them, checked against the manifest's hashes before anything changes.

Crash testing: ``KAFKATOOL_CRASH_AT=N`` (read once, at import) makes the process SIGKILL itself right before
its N-th *durable step*, counting from 1 over the whole process: every fsync (of a file or a directory),
rename, unlink, rmdir and truncate this module does, in program order (:func:`steps_taken` gives the count so
far). The count of a given apply is deterministic, so a test can kill a real subprocess at every step in turn.
Unset, it costs one integer comparison per durable step.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import signal
import stat
import struct
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ApplyRefused, JournalError, LogDirLocked, OutputRefused, UsageError
from .filetypes import NotRegularFile, open_regular, read_regular, type_name

TMP_SUFFIX = ".kafkatool-tmp"
JOURNAL_NAME = ".kafkatool-apply.journal"
MANIFEST_NAME = "MANIFEST.json"
STAGED_DIR = "staged"
LOCK_NAME = ".lock"
KINDS = ("write", "truncate", "delete", "rename")

_JOURNAL_FORMAT = "kafkatool-apply-journal"
_MANIFEST_FORMAT = "kafkatool-backup-manifest"
_VERSION = 1
_MANIFEST_VERSION = 2   # 2: entries per apply, with the state before and after and tail copies
_CHUNK = 1 << 20
REMOVED_SUFFIX = ".removed"


@dataclass(frozen=True)
class FileOp:
    """One change to one file under the apply's root."""

    kind: str            # "write" | "truncate" | "delete" | "rename"
    path: Path           # the file acted on (absolute or relative to the cwd)
    data: bytes | None = None   # write: the complete new content (the file may or may not exist)
    size: int | None = None     # truncate: the new length (<= the current length)
    dest: Path | None = None    # rename: the new path, in the same directory
    reason: str = ""            # one line, shown to users

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"FileOp kind {self.kind!r}: not one of {', '.join(KINDS)}")
        if self.kind == "truncate" and (not isinstance(self.size, int) or self.size < 0):
            raise ValueError(f"truncate {self.path}: size must be an int >= 0, not {self.size!r}")
        if self.kind == "rename" and self.dest is None:
            raise ValueError(f"rename {self.path}: no dest")


@dataclass(frozen=True)
class BackedUp:
    """One original file and its copy in the backup dir: the whole file, or (a file only cut short) the bytes cut."""

    path: Path          # the original (under root)
    copy: Path | None   # backup_dir / path relative to root (``.~2~``... when an earlier version is there); for a
    #                     cut, ``<path>.removed``; None when the bytes cut are all zero (nothing to copy)
    size: int           # bytes in the copy
    sha256: str         # of the copy
    kind: str = "whole"          # "whole" | "tail" (the bytes from ``offset`` to the end) | "zeros" (as tail, all 0)
    offset: int | None = None    # tail, zeros: where the cut is (the length kept)


@dataclass(frozen=True)
class ApplyReport:
    """What an apply (or the resume of one) did. When a report is returned, every op of the apply is done."""

    ops: tuple[FileOp, ...]          # every op of the apply, in order (after a resume: write ops carry data=None)
    ops_run: int                     # executed by this call (a resume skips the ops the journal records as done)
    backups: tuple[BackedUp, ...]    # every original this apply backed up (including copies kept from a re-run)
    bytes_backed_up: int             # bytes copied by this call (0 for a resume: its backups were made before)
    backup_dir: Path
    resumed: bool


# --- durable steps (and the crash hook) -----------------------------------------------------------------------


def _crash_at_from_env() -> int | None:
    raw = os.environ.get("KAFKATOOL_CRASH_AT", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


_CRASH_AT = _crash_at_from_env()
_steps_taken = 0


def steps_taken() -> int:
    """Durable steps this process has taken so far (what ``KAFKATOOL_CRASH_AT`` counts)."""
    return _steps_taken


def _step() -> None:
    global _steps_taken
    _steps_taken += 1
    if _steps_taken == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync(fd: int) -> None:
    _step()
    os.fsync(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _fsync(fd)
    finally:
        os.close(fd)


def _replace(src: Path, dst: Path) -> None:
    _step()
    os.replace(src, dst)


def _unlink(path: Path) -> None:
    _step()
    os.unlink(path)


def _rmdir(path: Path) -> None:
    _step()
    os.rmdir(path)


def _tmp_of(path: Path) -> Path:
    return path.with_name(path.name + TMP_SUFFIX)


def _create_temp(tmp: Path, perm: int) -> int:
    """A new, empty ``tmp`` open for writing. Whatever has that name (ours by its suffix) is removed first: a
    partial copy of a killed run, or a symlink or FIFO planted on a hostile disk, which an open would follow
    (truncating a file anywhere) or block on. The create is exclusive and follows no link."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perm)


def _makedirs(path: Path, *, sync: bool = True) -> None:
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
            _fsync_dir(d.parent)


def _take_owner(fd: int, like: os.stat_result | None, mode: bool) -> None:
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


def _write_temp(tmp: Path, data: bytes, like: os.stat_result | None, mode: bool) -> None:
    fd = _create_temp(tmp, 0o666)
    try:
        _take_owner(fd, like, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:_CHUNK]):]
        _fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace (or create) ``path`` with ``data`` so that it is always either the old or the new content, durably:
    ``<name>.kafkatool-tmp`` written and fsynced, renamed over ``path``, the directory fsynced. Missing parent
    directories are created (durably). A replaced file keeps its mode and (when allowed) its owner; a new one
    gets its directory's owner."""
    path = Path(path)
    _makedirs(path.parent)
    try:
        like, mode = path.stat(), True
    except FileNotFoundError:
        like, mode = path.parent.stat(), False
    tmp = _tmp_of(path)
    _write_temp(tmp, data, like, mode)
    _replace(tmp, path)
    _fsync_dir(path.parent)


# --- --out: a file the user names ---------------------------------------------------------------------------


# Names whose open is a duplicate of a descriptor this process already has (the shell's redirect): written in
# place, appended to, never replaced by a rename (which would swap the shell's file for another inode).
_FD_ALIASES = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/", "/dev/tty")


def _out_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def output_target(path: Path) -> tuple[str, Path]:
    """What writing ``--out PATH`` does, decided before anything is read or written: ``("replace", FILE)`` (a
    temp file in FILE's own dir renamed over it: PATH, or the regular file a symlink PATH points to, the link
    kept) or ``("in-place", PATH)`` (a character device such as /dev/null or /dev/full, a FIFO, /dev/stdout).
    Refused (:class:`OutputRefused`): a directory, a block device (a disk is never overwritten by a typo), a
    socket, a dangling symlink (as GNU cp, nothing is created through it) or a symlink loop."""
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
def output_file(path: Path) -> Iterator[Any]:
    """A binary file object for ``--out PATH``, by :func:`output_target`'s rule; the whole output or nothing.

    Replaced: the data goes to ``<name>.<random>.kafkatool-tmp`` beside the file (created exclusively, never
    through a link), fsynced, renamed over the file when the ``with`` block ends without an error, the dir
    fsynced; on any error (ENOSPC, EFBIG, Ctrl-C, SIGTERM) the temp file is removed and the file left as it
    was. A replaced file keeps its mode and (when allowed) its owner. In place: opened for writing without
    truncation at the end (O_APPEND: ``>>`` stays an append); a FIFO with no reader is refused (ENXIO: an I/O
    error) rather than waited for."""
    how, target = output_target(path)
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
            _take_owner(fd, like, True)
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
    _fsync_dir(target.parent)


def _named(exc: OSError, path: Path) -> OSError:
    """A write error said of the name the user gave (``/dev/full: No space left on device``)."""
    return exc if exc.filename is not None else OSError(exc.errno, exc.strerror, str(path))


def output_dir(path: str) -> None:
    """``--out DIR`` (``spark scan``): a directory, a symlink to one, or nothing yet (created). A URL is the file
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


# --- the log dir lock ---------------------------------------------------------------------------------------

_held_locks: set[tuple[int, int]] = set()


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


# --- paths and checks -----------------------------------------------------------------------------------------


def _abs(path: Path) -> Path:
    """Absolute, with the directory's symlinks resolved but not the file's own name."""
    path = Path(path)
    return path.parent.resolve() / path.name


def _rel(root: Path, path: Path, what: str) -> str:
    try:
        return _abs(path).relative_to(root).as_posix()
    except ValueError:
        raise ApplyRefused(f"{what} {path}: not under {root}") from None


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _hash_file(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    size = 0
    with open_regular(path) as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _regular_size(path: Path, what: str) -> int | None:
    """Size of the regular file at ``path``; None if nothing is there; refused if something else is."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise ApplyRefused(f"{what} {path}: not a regular file ({type_name(st.st_mode)}); never replaced, move it "
                           "aside by hand")
    return st.st_size


# What a path holds at some point of the simulated sequence: None (absent), ("orig", rel) (the original of rel),
# ("prefix", rel, n) (its first n bytes), ("data", bytes) (written by an op).
_Content = tuple[Any, ...] | None


def _check_ops(root: Path, ops: Sequence[FileOp], journal: Path) -> tuple[list[str], dict[str, _Content]]:
    """Refuse ops that cannot be applied in sequence; return the root-relative paths to back up (those that exist
    now and that an op changes, deletes, renames or renames over), in first-use order, and what every path an op
    names holds once all ops are done."""
    sizes: dict[str, int | None] = {}  # root-relative path -> size in the simulated sequence (None: absent)
    content: dict[str, _Content] = {}
    touched: list[str] = []

    def current(rel: str, what: str) -> int | None:
        if rel not in sizes:
            sizes[rel] = _regular_size(root / rel, what)
            content[rel] = None if sizes[rel] is None else ("orig", rel)
            if sizes[rel] is not None:
                touched.append(rel)
        return sizes[rel]

    for op in ops:
        what = op.kind
        rel = _rel(root, op.path, what)
        rels = [rel] + ([_rel(root, op.dest, "rename to")] if op.kind == "rename" and op.dest else [])
        for r in rels:
            p = root / r
            if p.name == LOCK_NAME:
                raise ApplyRefused(f"{what} {op.path}: the lock file is never touched")
            if p == journal:
                raise ApplyRefused(f"{what} {op.path}: that is the apply journal")
            if (top := r.split("/", 1)[0]) in (STAGED_DIR, MANIFEST_NAME):
                raise ApplyRefused(f"{what} {op.path}: its backup copy would clash with the backup dir's own {top}")
            if not p.parent.is_dir():
                raise ApplyRefused(f"{what} {op.path}: no such directory {p.parent}")
        size = current(rel, what)
        if op.kind == "write":
            if not isinstance(op.data, bytes | bytearray | memoryview):
                raise ApplyRefused(f"write {op.path}: no data")
            sizes[rel] = len(op.data)
            content[rel] = ("data", bytes(op.data))
        elif op.kind == "truncate":
            assert op.size is not None
            if size is None:
                raise ApplyRefused(f"truncate {op.path}: no such file")
            if op.size > size:
                raise ApplyRefused(f"truncate {op.path} to {op.size} bytes: it has {size}; a truncate never extends")
            sizes[rel] = op.size
            was = content[rel]
            assert was is not None
            content[rel] = ("data", was[1][:op.size]) if was[0] == "data" else ("prefix", was[1], op.size)
        elif op.kind == "delete":
            sizes[rel] = None
            content[rel] = None
        else:
            dest = rels[1]
            if (root / dest).parent != (root / rel).parent or dest == rel:
                raise ApplyRefused(f"rename {op.path} to {op.dest}: must stay in its directory under a new name")
            if size is None:
                # Already done (re-applied): the destination must be there. It is not changed, so not backed up.
                there = sizes[dest] if dest in sizes else _regular_size(root / dest, "rename to")
                if there is None:
                    raise ApplyRefused(f"rename {op.path}: no such file (nor {op.dest})")
                continue
            current(dest, "rename to")
            sizes[dest], sizes[rel] = size, None
            content[dest], content[rel] = content[rel], None
    return touched, content


def _load_manifest(backup_dir: Path) -> list[dict[str, Any]]:
    """The backup dir's manifest entries (one per file and apply)."""
    path = backup_dir / MANIFEST_NAME
    try:
        doc = json.loads(read_regular(path))
        if doc.get("format") != _MANIFEST_FORMAT or doc.get("version") not in (1, _MANIFEST_VERSION):
            raise ValueError(f"not a {_MANIFEST_FORMAT} of a known version")
        entries = doc["files"]
        if not all(isinstance(e, dict) and "path" in e and "root" in e for e in entries):
            raise ValueError("an entry without root or path")
        return entries
    except FileNotFoundError:
        return []
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ApplyRefused(f"{path}: unreadable ({exc}); use a new backup dir") from None


def _copy_for(backup_dir: Path, rel: str, src: Path) -> tuple[Path, tuple[int, str] | None]:
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
            digest = digest or _hash_file(src)
            if _hash_file(copy) == digest:
                return copy, digest
        n += 1


def _staged_dir(backup_dir: Path, journal: Path) -> Path:
    return backup_dir / STAGED_DIR / hashlib.sha256(str(journal).encode()).hexdigest()[:16]


def _backup_copy(src: Path, dst: Path) -> tuple[int, str]:
    """Copy ``src`` to ``dst`` (temp + fsync + rename), hashing as it goes; the directory is fsynced later."""
    tmp = _tmp_of(dst)
    h = hashlib.sha256()
    size = 0
    buf = bytearray(_CHUNK)
    with open_regular(src, buffering=0) as fin:
        fd = _create_temp(tmp, 0o600)
        try:
            while n := fin.readinto(buf):
                chunk = memoryview(buf)[:n]
                h.update(chunk)
                size += n
                while chunk:
                    chunk = chunk[os.write(fd, chunk):]
            _fsync(fd)
        finally:
            os.close(fd)
    _replace(tmp, dst)
    return size, h.hexdigest()


@dataclass(frozen=True)
class _Tail:
    """The backup of a file an apply only cuts short: the bytes removed, and the hashes to put them back."""

    copy: Path | None     # None: the bytes removed are all zero (a preallocated index, a zero-filled tail)
    size: int             # bytes removed
    sha256: str           # of the bytes removed
    reused: bool          # an identical copy was already in the backup dir
    before: tuple[int, str]   # the whole original: size, sha256
    kept: str             # sha256 of the first ``before[0] - size`` bytes: the file as the apply leaves it


def _backup_tail(src: Path, backup_dir: Path, rel: str, keep: int) -> _Tail:
    """Copy the bytes of ``src`` from ``keep`` to its end into ``<rel>.removed`` in the backup dir (temp + fsync +
    rename; an identical copy there is reused, a different one kept and the next free ``.~N~`` name taken),
    hashing the kept prefix and the whole original on the way (one read of the file). Nothing is written when
    the bytes removed are all zero."""
    h_all, h_tail = hashlib.sha256(), hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    first = backup_dir / f"{rel}{REMOVED_SUFFIX}"
    tmp = _tmp_of(first)
    size, zeros = 0, True
    with open_regular(src, buffering=0) as fin:
        left = keep
        while left:
            n = fin.readinto(view[:min(_CHUNK, left)])
            if not n:
                raise ApplyRefused(f"{src}: shorter than {keep} bytes while being backed up (changed meanwhile?)")
            h_all.update(view[:n])
            left -= n
        kept = h_all.copy().hexdigest()
        _makedirs(tmp.parent, sync=False)
        fd = _create_temp(tmp, 0o600)
        try:
            while n := fin.readinto(buf):
                chunk = view[:n]
                h_all.update(chunk)
                h_tail.update(chunk)
                zeros = zeros and buf.count(0, 0, n) == n
                size += n
                while chunk:
                    chunk = chunk[os.write(fd, chunk):]
            if not zeros:
                _fsync(fd)
        finally:
            os.close(fd)
    before, tail_sha = (keep + size, h_all.hexdigest()), h_tail.hexdigest()
    if zeros:
        _unlink(tmp)
        return _Tail(None, size, tail_sha, False, before, kept)
    n = 1
    while True:
        copy = first if n == 1 else first.with_name(f"{first.name}.~{n}~")
        if not copy.exists():
            _replace(tmp, copy)
            return _Tail(copy, size, tail_sha, False, before, kept)
        if copy.stat().st_size == size and _hash_file(copy) == (size, tail_sha):
            _unlink(tmp)
            return _Tail(copy, size, tail_sha, True, before, kept)
        n += 1


def _kept_length(root: Path, rel: str, final: _Content, size: int) -> int | None:
    """When the original of ``rel`` (``size`` bytes now) keeps its first bytes through the apply, and what follows
    them is either gone (a cut) or all zero (a preallocated index trimmed, or rebuilt over its zeros), how many
    bytes are kept: its backup is then the bytes from there on (none when zero). Else None (a whole copy)."""
    if final is None:
        return None
    if final[0] == "prefix" and final[1] == rel and final[2] <= size:
        return final[2]
    if final[0] != "data" or not final[1]:
        return None
    data = final[1]
    with open_regular(root / rel) as fh:
        old = fh.read(len(data))
        kept = _common_prefix(old, data)
        if kept == len(data):
            return kept
        if kept == 0:
            return None
        fh.seek(kept)
        while chunk := fh.read(_CHUNK):
            if chunk.count(0) != len(chunk):
                return None
    return kept


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    step = 4096
    i = 0
    while i < n and a[i:i + step] == b[i:i + step]:
        i += step
    if i >= n:
        return n
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _hash_prefix(path: Path, length: int) -> str:
    h = hashlib.sha256()
    with open_regular(path) as f:
        while length > 0 and (chunk := f.read(min(_CHUNK, length))):
            h.update(chunk)
            length -= len(chunk)
    return h.hexdigest()


def _state(size: int, sha256: str) -> dict[str, Any]:
    return {"size": size, "sha256": sha256}


def _after(root: Path, content: _Content, befores: dict[str, tuple[int, str]],
           kept_sha: dict[tuple[str, int], str]) -> dict[str, Any] | None:
    """Size and sha256 of what a path holds once the apply is done (None: absent)."""
    if content is None:
        return None
    if content[0] == "data":
        return _state(len(content[1]), hashlib.sha256(content[1]).hexdigest())
    rel = content[1]
    if content[0] == "orig":
        return _state(*befores[rel])
    n = content[2]
    if n == befores[rel][0]:
        return _state(*befores[rel])
    return _state(n, kept_sha.get((rel, n)) or _hash_prefix(root / rel, n))


# --- apply and resume ---------------------------------------------------------------------------------------


def check_ops(root: Path, ops: Sequence[FileOp]) -> None:
    """Raise :class:`ApplyRefused` where :func:`apply_ops` would refuse ``ops`` before changing anything (a FIFO or
    a symlink where an op writes, a truncate past a file's end...). Reads only the types and sizes of the files the
    ops name, so a dry run refuses exactly what the apply would."""
    root = Path(root).resolve(strict=True)
    _check_ops(root, ops, root / JOURNAL_NAME)


def apply_ops(root: Path, ops: Sequence[FileOp], backup_dir: Path, *, journal: Path | None = None) -> ApplyReport:
    """Apply ``ops`` in order under ``root``, backing up every original to ``backup_dir`` first; see the module
    docstring for the phases and guarantees. The caller holds :func:`log_dir_lock` and has called :func:`resume`.
    Raises :class:`ApplyRefused` (nothing under ``root`` changed) when the ops cannot be applied safely."""
    root = Path(root).resolve(strict=True)
    backup_dir = _abs(Path(backup_dir))
    journal = root / JOURNAL_NAME if journal is None else _abs(Path(journal))
    if _inside(backup_dir, root):
        raise ApplyRefused(f"backup dir {backup_dir} is inside {root}: it must be outside the tree it backs up")
    if journal.exists():
        raise ApplyRefused(f"{journal}: an interrupted apply is pending; resume it before planning anew")
    if not ops:
        return ApplyReport((), 0, (), 0, backup_dir, False)
    to_back_up, final = _check_ops(root, ops, journal)
    manifest = _load_manifest(backup_dir)
    apply_no = 1 + max((e.get("apply", 0) for e in manifest), default=0)
    keep = {rel: _kept_length(root, rel, final[rel], (root / rel).stat().st_size) for rel in to_back_up}
    copies = {rel: _copy_for(backup_dir, rel, root / rel) for rel in to_back_up if keep[rel] is None}

    # Stage the new contents.
    staged_dir = _staged_dir(backup_dir, journal)
    records: list[dict[str, Any]] = []
    writes = [i for i, op in enumerate(ops) if op.kind == "write"]
    if writes:
        _makedirs(staged_dir, sync=False)
        for leftover in sorted(staged_dir.iterdir()):  # from this journal's apply killed before its commit
            _unlink(leftover)
    for i, op in enumerate(ops):
        record: dict[str, Any] = {"kind": op.kind, "path": _rel(root, op.path, op.kind), "reason": op.reason}
        if op.kind == "write":
            assert op.data is not None
            data = bytes(op.data)
            name = f"{i:06d}"
            _write_temp(_tmp_of(staged_dir / name), data, None, False)
            _replace(_tmp_of(staged_dir / name), staged_dir / name)
            record.update(staged=name, length=len(data), sha256=hashlib.sha256(data).hexdigest())
        elif op.kind == "truncate":
            record["size"] = op.size
        elif op.kind == "rename":
            assert op.dest is not None
            record["dest"] = _rel(root, op.dest, "rename to")
        records.append(record)

    # Back up the originals: whole, or (a file only cut short) the bytes removed.
    backups: list[BackedUp] = []
    befores: dict[str, tuple[int, str]] = {}
    kept_sha: dict[tuple[str, int], str] = {}
    entries: list[dict[str, Any]] = []
    copied = 0
    dirs = {staged_dir} if writes else set()
    for rel in to_back_up:
        entry: dict[str, Any] = {"root": str(root), "path": rel, "apply": apply_no}
        k = keep[rel]
        if k is None:
            copy, reused = copies[rel]
            if reused is None:
                _makedirs(copy.parent, sync=False)
                size, digest = _backup_copy(root / rel, copy)
                copied += size
                dirs.add(copy.parent)
            else:
                size, digest = reused
            backups.append(BackedUp(root / rel, copy, size, digest))
            befores[rel] = (size, digest)
            entry.update(backup="whole", copy=copy.relative_to(backup_dir).as_posix(), size=size, sha256=digest)
        else:
            tail = _backup_tail(root / rel, backup_dir, rel, k)
            copied += 0 if tail.reused or tail.copy is None else tail.size
            dirs.add((backup_dir / rel).parent)
            kind = "tail" if tail.copy is not None else "zeros"
            backups.append(BackedUp(root / rel, tail.copy, tail.size, tail.sha256, kind, k))
            befores[rel], kept_sha[(rel, k)] = tail.before, tail.kept
            entry.update(backup=kind, copy=None if tail.copy is None else tail.copy.relative_to(backup_dir).as_posix(),
                         size=tail.size, sha256=tail.sha256, offset=k, kept_sha256=tail.kept)
        entries.append(entry)
    # What each path holds after the apply (a restore checks it is still so), and the paths the apply creates.
    created = [rel for rel, c in final.items() if rel not in befores and c is not None]
    for rel in created:
        entries.append({"root": str(root), "path": rel, "apply": apply_no, "backup": None, "copy": None})
    for entry in entries:
        rel = entry["path"]
        entry["before"] = _state(*befores[rel]) if rel in befores else None
        entry["after"] = _after(root, final[rel], befores, kept_sha)
    manifest.extend(entries)
    # Every directory the resume relies on, up to the backup dir's parent (even those a killed run created).
    for d in list(dirs):
        dirs.update(a for a in d.parents if _inside(a, backup_dir.parent))
    for d in sorted(dirs, key=lambda d: (-len(d.parts), d)):
        if d.is_dir():
            _fsync_dir(d)
    atomic_write(backup_dir / MANIFEST_NAME, _json({
        "format": _MANIFEST_FORMAT, "version": _MANIFEST_VERSION,
        "files": sorted(manifest, key=lambda e: (e["root"], e["path"], e.get("apply", 0)))}))

    # Commit, execute, clean up.
    header = {"format": _JOURNAL_FORMAT, "version": _VERSION, "root": str(root), "backup_dir": str(backup_dir),
              "staged_dir": str(staged_dir), "ops": records,
              "backups": [{"path": rel, "copy": None if b.copy is None else b.copy.relative_to(backup_dir).as_posix(),
                           "size": b.size, "sha256": b.sha256, "kind": b.kind, "offset": b.offset}
                          for rel, b in zip(to_back_up, backups, strict=True)]}
    atomic_write(journal, json.dumps(header, separators=(",", ":")).encode() + b"\n")
    data_of = {i: bytes(ops[i].data or b"") for i in writes}
    _run(root, journal, header, 0, data_of)
    return ApplyReport(tuple(ops), len(ops), tuple(backups), copied, backup_dir, False)


def resume(root: Path, journal: Path | None = None) -> ApplyReport | None:
    """Complete the apply interrupted under ``root``, if its journal exists, and remove the journal; None when
    there was nothing to resume. Call it (holding :func:`log_dir_lock`) before planning anew.

    Raises :class:`JournalError` when the journal cannot be completed (unreadable, staged contents missing or
    damaged, files in neither the state before nor after an op); nothing is deleted then."""
    root = Path(root).resolve(strict=True)
    journal = root / JOURNAL_NAME if journal is None else _abs(Path(journal))
    tmp = _tmp_of(journal)
    if tmp.exists():  # killed while writing the journal: the apply never started changing root
        _unlink(tmp)
        _fsync_dir(tmp.parent)
    try:
        if not stat.S_ISREG(os.lstat(journal).st_mode):  # a FIFO would block the read, a link lead anywhere
            raise JournalError(f"{journal}: not a regular file; a kafkatool journal never is anything else")
        text = read_regular(journal)
    except FileNotFoundError:
        return None
    lines = text.split(b"\n")
    try:
        header = json.loads(lines[0])
        if header.get("format") != _JOURNAL_FORMAT or header.get("version") != _VERSION:
            raise ValueError("not a kafkatool apply journal of a known version")
        records = header["ops"]
        _check_journal(root, header)
    except (ValueError, KeyError, TypeError, RecursionError, AttributeError) as exc:
        raise JournalError(f"{journal}: unreadable ({exc}); the originals are in the apply's backup dir") from None
    done = 0
    for raw in lines[1:]:
        if not raw:
            continue
        try:
            mark = json.loads(raw)["done"]
        except (ValueError, KeyError, TypeError):
            break  # a record torn by a power loss (the last one): its op runs again
        if mark != done:
            raise JournalError(f"{journal}: progress records out of order ({mark} after {done - 1})")
        done += 1
    staged_dir = Path(header["staged_dir"])
    data_of: dict[int, bytes] = {}
    for i in range(done, len(records)):
        record = records[i]
        if record["kind"] != "write":
            continue
        staged = staged_dir / record["staged"]
        try:
            data = read_regular(staged)
        except OSError as exc:
            raise JournalError(f"{journal}: the new content of {record['path']} ({staged}) cannot be read: "
                               f"{exc.strerror or exc}") from None
        if len(data) != record["length"] or hashlib.sha256(data).hexdigest() != record["sha256"]:
            raise JournalError(f"{journal}: the new content of {record['path']} ({staged}) is damaged")
        data_of[i] = data
    # A journal resumed in a copy of the tree it was written for: the staged contents may still be needed by the
    # original's resume, so they are left in place (as they are when the staged dir is not this journal's own).
    _run(root, journal, header, done, data_of, clean_staged=header.get("root") == str(root)
         and staged_dir == _staged_dir(Path(header["backup_dir"]), journal))
    backup_dir = Path(header["backup_dir"])
    ops = tuple(FileOp(r["kind"], root / r["path"], size=r.get("size"), reason=r.get("reason", ""),
                       dest=root / r["dest"] if "dest" in r else None) for r in records)
    backups = tuple(BackedUp(root / b["path"], None if b["copy"] is None else backup_dir / b["copy"], b["size"],
                             b["sha256"], b.get("kind", "whole"), b.get("offset")) for b in header["backups"])
    return ApplyReport(ops, len(records) - done, backups, 0, backup_dir, True)


def _safe_rel(root: Path, rel: Any) -> bool:
    """``rel`` is a relative path under ``root`` with no ``.``/``..`` and no symlink among its existing dirs."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if not parts or any(p in ("", ".", "..") or "\0" in p for p in parts):
        return False
    here = root
    for part in parts[:-1]:
        here = here / part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except FileNotFoundError:
            return True  # a write makes the rest, as real dirs
    return True


def _check_journal(root: Path, header: dict[str, Any]) -> None:
    """A journal is read from the disk it is about, which may be hostile: every path it names must stay under
    ``root`` (no ``..``, no absolute path, no symlinked dir), its staged contents in ``<backup dir>/staged/<id>``
    under numbered names. Else ValueError (the journal is refused, nothing done)."""
    backup_dir, staged_dir = header["backup_dir"], header["staged_dir"]
    if not (isinstance(backup_dir, str) and os.path.isabs(backup_dir) and os.path.normpath(backup_dir) == backup_dir
            and isinstance(staged_dir, str) and re.fullmatch(re.escape(os.path.join(backup_dir, STAGED_DIR))
                                                             + "/[0-9a-f]{16}", staged_dir)):
        raise ValueError("its backup or staged dir is not <backup dir>/staged/<id>")
    if not isinstance(header["ops"], list) or not isinstance(header["backups"], list):
        raise ValueError("no list of ops or backups")
    for r in header["ops"]:
        if r["kind"] not in KINDS or not _safe_rel(root, r["path"]):
            raise ValueError(f"op {r!r}: not an op on a path under {root}")
        if r["kind"] == "rename" and not _safe_rel(root, r["dest"]):
            raise ValueError(f"rename to {r['dest']!r}: not under {root}")
        if r["kind"] == "write" and not (isinstance(r["staged"], str) and re.fullmatch("[0-9]{6,}", r["staged"])
                                         and isinstance(r["length"], int) and isinstance(r["sha256"], str)):
            raise ValueError(f"write {r['path']!r}: its staged content is not named as an apply names it")
        if r["kind"] == "truncate" and not (isinstance(r["size"], int) and r["size"] >= 0):
            raise ValueError(f"truncate {r['path']!r}: no size")
    for b in header["backups"]:
        if not (isinstance(b["path"], str) and (b["copy"] is None or isinstance(b["copy"], str))
                and isinstance(b["size"], int) and isinstance(b["sha256"], str)):
            raise ValueError(f"backup {b!r}: not as an apply records it")


def _run(root: Path, journal: Path, header: dict[str, Any], start: int, data_of: dict[int, bytes], *,
         clean_staged: bool = True) -> None:
    """Execute the journal's ops from ``start`` (marking each done), then clean up: staged contents, journal."""
    for i in range(start, len(header["ops"])):
        _execute(root, journal, header["ops"][i], data_of.get(i))
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, b'{"done":%d}\n' % i)
            _fsync(fd)
        finally:
            os.close(fd)
    staged_dir = Path(header["staged_dir"])
    if clean_staged and staged_dir.is_dir():
        for leftover in sorted(staged_dir.iterdir()):
            _unlink(leftover)
        _rmdir(staged_dir)
        _fsync_dir(staged_dir.parent)
    staged_root = staged_dir.parent
    if clean_staged and staged_root.is_dir() and not any(staged_root.iterdir()):  # no other journal's staged contents
        _rmdir(staged_root)
        _fsync_dir(staged_root.parent)
    _unlink(journal)
    _fsync_dir(journal.parent)


def _execute(root: Path, journal: Path, record: dict[str, Any], data: bytes | None) -> None:
    """One op, idempotent from the state just before it or just after it."""
    kind, path = record["kind"], root / record["path"]
    if kind == "write":
        assert data is not None
        atomic_write(path, data)
    elif kind == "truncate":
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise JournalError(f"{journal}: truncate {path}: the file is gone (changed by something else?)") from None
        try:
            size = os.fstat(fd).st_size
            if size < record["size"]:
                raise JournalError(f"{journal}: truncate {path} to {record['size']}: it has only {size} bytes "
                                   "(changed by something else?)")
            if size != record["size"]:
                _step()
                os.ftruncate(fd, record["size"])
            _fsync(fd)
        finally:
            os.close(fd)
    elif kind == "delete":
        if os.path.lexists(path):
            _unlink(path)
        _fsync_dir(path.parent)
    elif kind == "rename":
        dest = root / record["dest"]
        if os.path.lexists(path):
            _replace(path, dest)
        elif not os.path.lexists(dest):
            raise JournalError(f"{journal}: rename {path} to {dest.name}: neither exists (changed by something "
                               "else?)")
        _fsync_dir(path.parent)
    else:
        raise JournalError(f"{journal}: unknown op kind {kind!r}")


def _json(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=1) + "\n").encode()


# --- restore ------------------------------------------------------------------------------------------------


class RestoreRefused(ApplyRefused):
    """A backup dir cannot be restored safely (a file changed since the apply, a copy is damaged...); nothing was
    changed."""


@dataclass(frozen=True)
class RestoreStep:
    """Undoing one file's change by one apply: put its original back from the backup dir."""

    root: Path
    path: str                  # relative to root
    apply: int                 # the apply it undoes (the manifest's numbering, 1 = the first into this backup dir)
    kind: str                  # "copy" (whole copy back) | "append" (the bytes cut) | "zeros" | "delete" (created)
    entry: dict[str, Any]      # the manifest entry

    def as_dict(self) -> dict[str, Any]:
        e = self.entry
        if self.kind == "copy":
            what = f"the original ({e['before']['size']:,} bytes) copied back" + (
                "" if e["after"] is not None else " (the apply deleted or moved it)")
        elif self.kind == "append":
            what = f"the original's {e['size']:,} bytes from byte {e['offset']:,} on put back"
        elif self.kind == "zeros":
            what = f"the original's {e['size']:,} zero bytes from byte {e['offset']:,} on put back"
        else:
            what = "created by the apply: deleted"
        action = {"copy": "restore", "append": "extend", "zeros": "extend", "delete": "delete"}[self.kind]
        return {"type": "action", "path": str(self.root / self.path), "action": action,
                "reason": f"{what} (apply {self.apply})", "apply": self.apply}


def restore(backup_dir: Path, *, apply: bool = False, log_dir: Path | None = None) -> list[RestoreStep]:
    """Put back every file as it was before the applies recorded in ``backup_dir``'s manifest (the earliest state
    of each file): a whole copy is copied back, the bytes cut from a file are appended back, files an apply
    created are deleted. Returns the steps; only with ``apply`` are they carried out. A restored file is
    byte-identical to the original: the manifest holds the sha256 of each original and of what each apply left.

    The manifest is not trusted for where to write (:func:`_restore_roots`, :func:`_check_entry`): its log dir
    must be the backup's own, derived from where the backup dir lives (beside it: a sibling, named as in the
    backup dir's default name when it has it) or named by the caller (``log_dir``, for a ``--backup-dir``
    elsewhere); each entry must name a partition's file in an existing partition dir of that log dir (or a
    log-dir checkpoint), with no ``..``, no absolute path and no symlink on the way, and its copy the name the
    apply gives copies of that file. Otherwise :class:`RestoreRefused` before anything is written.

    For each log dir (``root``) in the manifest, with ``apply`` its ``.lock`` is held throughout (a live broker's
    lock refuses it: :class:`LogDirLocked`) and an interrupted apply there is completed first (:func:`resume`).
    Refused (:class:`RestoreRefused`, nothing changed) when a file is neither as the last apply left it nor as it
    was before (the broker ran since, or the file was changed by hand), when a backup copy is missing or
    damaged, or when the manifest was written by an older kafkatool. Safe to re-run, also after a kill: a file
    already back in its original state is left alone, and a file a killed restore was appending to is
    recognised by the bytes it already has. What the applies wrote is not kept (``repair`` makes it again).
    """
    backup_dir = _abs(Path(backup_dir))
    if not (backup_dir / MANIFEST_NAME).is_file():
        raise UsageError(f"{backup_dir}: no {MANIFEST_NAME}: not a kafkatool backup dir")
    by_root: dict[str, list[dict[str, Any]]] = {}
    for entry in _load_manifest(backup_dir):
        if "apply" not in entry or "before" not in entry or "after" not in entry:
            raise RestoreRefused(f"{backup_dir / MANIFEST_NAME}: written by an older kafkatool (no before/after "
                                 "states); copy the originals back by hand from the paths it lists")
        by_root.setdefault(entry["root"] if isinstance(entry["root"], str) else repr(entry["root"]), []).append(entry)
    roots = _restore_roots(backup_dir, list(by_root), log_dir)
    for root_name, entries in by_root.items():
        for entry in entries:
            _check_entry(roots[root_name], entry, backup_dir)
    steps: list[RestoreStep] = []
    for root_name, entries in sorted(by_root.items()):
        root = roots[root_name]
        if not apply:
            steps.extend(_plan_restore(root, entries, backup_dir))
            continue
        with log_dir_lock(root):
            resume(root)
            planned = _plan_restore(root, entries, backup_dir)
            for step in planned:
                _undo(root, step, backup_dir)
            steps.extend(planned)
    return steps


_DEFAULT_BACKUP_NAME = re.compile(r"^kafkatool-backup-(?P<log_dir>.+)-\d{8}T\d{6}Z$")  # repair.default_backup_dir
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _restore_roots(backup_dir: Path, names: list[Any], log_dir: Path | None) -> dict[Any, Path]:
    """The log dir of each root the manifest names, checked against the backup's own log dir, which is derived
    from where the backup dir lives, never taken from the manifest: a dir beside the backup dir (where ``repair
    --apply`` puts it; with the default name ``kafkatool-backup-<log dir>-<time>``, that very ``<log dir>``), or
    ``log_dir`` when the caller names it (a backup made with ``--backup-dir`` elsewhere)."""
    manifest = backup_dir / MANIFEST_NAME
    home = backup_dir.resolve()
    default = _DEFAULT_BACKUP_NAME.match(home.name)
    if log_dir is not None:
        try:
            own: Path | None = Path(log_dir).resolve(strict=True)
        except OSError as exc:
            raise UsageError(f"{log_dir}: {exc.strerror or exc}") from None
        where = f"the log dir named ({own})"
    elif default:
        own = home.parent / default["log_dir"]
        where = f"the dir its name says, beside it ({own})"
    else:
        own, where = None, f"a dir beside it, in {home.parent}"
    roots = {}
    for name in names:
        if not isinstance(name, str) or not os.path.isabs(name) or os.path.normpath(name) != name or "\0" in name:
            raise RestoreRefused(f"{manifest}: the log dir {name!r} is not an absolute, normal path; nothing was "
                                 "restored")
        root = Path(name)
        try:
            real = root.resolve(strict=True)
        except OSError:
            raise RestoreRefused(f"{root}: the log dir the backup was taken from is gone") from None
        if real != root or not stat.S_ISDIR(os.lstat(root).st_mode):
            raise RestoreRefused(f"{manifest}: the log dir {root} is reached through a symlink ({real}) or is no "
                                 "directory; nothing was restored")
        mine = real == own if own is not None else real.parent == home.parent
        if not mine or _inside(home, real) or _inside(real, home):
            hint = "" if log_dir is not None else (
                "; a backup kept away from its log dir restores with the log dir named: kafkatool repair "
                f"--restore {backup_dir} LOG_DIR")
            raise RestoreRefused(f"{manifest}: names the log dir {root}, which is not this backup's own ({where}); "
                                 f"nothing was restored{hint}")
        roots[name] = real
    return roots


_RESTORABLE = ("log", "index", "timeindex", "txnindex", "producer_snapshot", "leader_epoch_checkpoint",
               "partition_metadata", "kraft_snapshot")


def _check_entry(root: Path, e: dict[str, Any], backup_dir: Path) -> None:
    """Refuse (:class:`RestoreRefused`) an entry that could make a restore write anywhere but a partition's file in
    an existing partition dir of ``root`` (or a log-dir offset checkpoint), or read anything but that file's copy
    in the backup dir, or whose fields are not of the shapes an apply writes."""
    from .filetypes import OFFSET_CHECKPOINT_NAMES, classify
    from .walk import partition_of

    manifest = backup_dir / MANIFEST_NAME
    rel = e.get("path")

    def refuse(why: str) -> RestoreRefused:
        return RestoreRefused(f"{manifest}: entry {rel!r}: {why}; nothing was restored")

    parts = rel.split("/") if isinstance(rel, str) else []
    if not parts or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise refuse("not a relative path without '..'")
    if len(parts) == 1:
        if parts[0] not in OFFSET_CHECKPOINT_NAMES:
            raise refuse("in the log dir itself, a restore puts back only its offset checkpoints")
    elif len(parts) != 2 or partition_of(parts[0]) is None:
        raise refuse("not a file of a partition dir (<topic>-<partition>/<file>)")
    elif classify(parts[1], by_extension=True).kind.value not in _RESTORABLE:
        raise refuse("not a partition's file (segment, index, snapshot, checkpoint, partition.metadata)")
    else:
        try:
            st = os.lstat(root / parts[0])
        except FileNotFoundError:
            raise refuse(f"no partition dir {root / parts[0]} (a restore never creates one)") from None
        if not stat.S_ISDIR(st.st_mode):
            raise refuse(f"{root / parts[0]} is not a directory (a symlink is not followed)")

    def is_state(v: Any) -> bool:
        return (isinstance(v, dict) and isinstance(v.get("size"), int) and not isinstance(v["size"], bool)
                and v["size"] >= 0 and isinstance(v.get("sha256"), str) and bool(_SHA256.match(v["sha256"])))

    kind, copy = e.get("backup"), e.get("copy")
    number = e.get("apply")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise refuse("no apply number")
    if kind not in ("whole", "tail", "zeros", None):
        raise refuse(f"unknown backup kind {kind!r}")
    if not all(v is None or is_state(v) for v in (e["before"], e["after"])):
        raise refuse("its states before and after are not a size and a sha256")
    if kind is None:
        if e["before"] is not None or copy is not None:
            raise refuse("a file the apply created has no original")
        return
    if e["before"] is None or not is_state(e):
        raise refuse("no state before the apply, or its copy has no size and sha256")
    if kind != "whole":
        offset = e.get("offset")
        if (not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= e["before"]["size"]
                or e["after"] is None or not isinstance(e.get("kept_sha256"), str)):
            raise refuse("a cut without where it was, or what was kept")
    stem = rel if kind == "whole" else f"{rel}{REMOVED_SUFFIX}"
    if kind == "zeros":
        if copy is not None:
            raise refuse("the zero bytes cut have no copy")
    elif not isinstance(copy, str) or not re.fullmatch(re.escape(stem) + r"(\.~[0-9]{1,9}~)?", copy):
        raise refuse(f"its copy {copy!r} is not the name the apply gives it ({stem})")


def _plan_restore(root: Path, entries: list[dict[str, Any]], backup_dir: Path) -> list[RestoreStep]:
    """The steps that take every file under ``root`` back to its state before the first apply, latest apply first;
    refused before anything changes when a file or a copy is not as recorded."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_path.setdefault(e["path"], []).append(e)
    steps = []
    for rel, es in sorted(by_path.items()):
        path = root / rel
        try:
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                raise RestoreRefused(f"{path}: not a regular file")
            now: dict[str, Any] | None = _state(*_hash_file(path))
        except FileNotFoundError:
            now = None
        for e in sorted(es, key=lambda e: e["apply"], reverse=True):
            before, after = e["before"], e["after"]
            if now == before:  # this change is not there (undone already, or its apply was killed before it)
                continue
            if now == after or (now is not None and _partly_appended(path, now, e, backup_dir)):
                if e["backup"] is not None:
                    _check_copy(e, backup_dir)
                kind = {"whole": "copy", "tail": "append", "zeros": "zeros", None: "delete"}[e["backup"]]
                steps.append(RestoreStep(root, rel, e["apply"], kind, e))
                now = before
            else:
                def show(s: dict[str, Any] | None) -> str:
                    return "absent" if s is None else f"{s['size']:,} bytes, sha256 {s['sha256'][:12]}"
                have = show(now)
                raise RestoreRefused(f"{path}: changed since apply {e['apply']} (it has {have}; that apply left "
                                     f"{show(after)}, before it {show(before)}): was the broker started? "
                                     "Nothing was restored")
    return steps


def _check_copy(entry: dict[str, Any], backup_dir: Path) -> None:
    if entry["backup"] == "zeros":
        return
    copy = backup_dir / entry["copy"]
    try:
        if not (stat.S_ISDIR(os.lstat(copy.parent).st_mode) and stat.S_ISREG(os.lstat(copy).st_mode)):
            raise RestoreRefused(f"{copy}: the backup copy is not a regular file in a directory of the backup dir "
                                 "(a symlink is not followed); nothing was restored")
        ok = _hash_file(copy) == (entry["size"], entry["sha256"])
    except OSError as exc:
        raise RestoreRefused(f"{copy}: the backup copy cannot be read ({exc.strerror or exc}); nothing was "
                             "restored") from None
    if not ok:
        raise RestoreRefused(f"{copy}: the backup copy is damaged (size or sha256 differ from the manifest); "
                             "nothing was restored")


def _partly_appended(path: Path, now: dict[str, Any], entry: dict[str, Any], backup_dir: Path) -> bool:
    """A file a killed restore was appending the cut bytes to: the kept prefix intact, then the first of the cut
    bytes (and nothing else: bytes a broker appended since are not taken for ours)."""
    if entry["backup"] not in ("tail", "zeros") or entry["after"] is None:
        return False
    kept, total = entry["offset"], entry["before"]["size"]
    if not kept <= now["size"] < total or _hash_prefix(path, kept) != entry["kept_sha256"]:
        return False
    n = now["size"] - kept
    with open_regular(path) as fh:
        fh.seek(kept)
        have = fh.read(n)
    if entry["backup"] == "zeros":
        return have.count(0) == n
    with open_regular(backup_dir / entry["copy"]) as fh:
        return fh.read(n) == have


def _undo(root: Path, step: RestoreStep, backup_dir: Path) -> None:
    """One restore step, durably; idempotent (a re-run after a kill plans from what is there)."""
    path, e = root / step.path, step.entry
    if step.kind == "delete":
        if os.path.lexists(path):
            _unlink(path)
        _fsync_dir(path.parent)
    elif step.kind == "copy":
        try:
            like, mode = path.stat(), True
        except FileNotFoundError:
            like, mode = path.parent.stat(), False
        tmp = _tmp_of(path)
        buf = bytearray(_CHUNK)
        with open_regular(backup_dir / e["copy"], buffering=0) as fin:
            fd = _create_temp(tmp, 0o644)
            try:
                _take_owner(fd, like, mode)
                while n := fin.readinto(buf):
                    chunk = memoryview(buf)[:n]
                    while chunk:
                        chunk = chunk[os.write(fd, chunk):]
                _fsync(fd)
            finally:
                os.close(fd)
        _replace(tmp, path)
        _fsync_dir(path.parent)
    else:  # append / zeros: the original bytes after the kept prefix go back
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_size > e["before"]["size"] or e["after"]["size"] != e["offset"]:
                # the apply rewrote bytes after the kept prefix (an index rebuilt over its zeros): cut them first
                _step()
                os.ftruncate(fd, e["offset"])
            if step.kind == "append":
                position = e["offset"]
                buf = bytearray(_CHUNK)
                with open_regular(backup_dir / e["copy"], buffering=0) as fin:
                    while n := fin.readinto(buf):
                        chunk = memoryview(buf)[:n]
                        while chunk:
                            written = os.pwrite(fd, chunk, position)
                            chunk, position = chunk[written:], position + written
            _step()
            os.ftruncate(fd, e["before"]["size"])  # zeros: extends with zero bytes; append: already that size
            _fsync(fd)
        finally:
            os.close(fd)
