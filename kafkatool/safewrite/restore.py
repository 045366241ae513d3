"""``repair --restore``: undo the applies recorded in a backup dir, each file back to its state before the first.

Every file is checked against the manifest's hashes (:mod:`.backup`) before anything changes, the manifest is
never trusted for where to write, and a restore killed at any point completes when run again.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RestoreRefused, UsageError
from ..filetypes import OFFSET_CHECKPOINT_NAMES, classify, is_all_zero, open_regular
from ..logdir import MANIFEST_NAME
from ..walk import partition_of
from .backup import REMOVED_SUFFIX, file_state, hash_file, hash_prefix, load_manifest
from .durable import (
    CHUNK,
    abs_path,
    copy_to_temp,
    fsync,
    fsync_dir,
    inside,
    replace,
    take_step,
    tmp_of,
    unlink,
)
from .journal import resume
from .lock import log_dir_lock


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
    backup_dir = abs_path(Path(backup_dir))
    if not (backup_dir / MANIFEST_NAME).is_file():
        raise UsageError(f"{backup_dir}: no {MANIFEST_NAME}: not a kafkatool backup dir")
    by_root: dict[str, list[dict[str, Any]]] = {}
    for entry in load_manifest(backup_dir):
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
        if not mine or inside(home, real) or inside(real, home):
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

    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def is_state(v: Any) -> bool:
        return (isinstance(v, dict) and count(v.get("size")) and isinstance(v.get("sha256"), str)
                and bool(_SHA256.match(v["sha256"]))
                and ("zeros_from" not in v or (count(v["zeros_from"]) and v["zeros_from"] <= v["size"])))

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
    if e["before"] is None or not (is_state(e) or (kind == "zeros" and e.get("sha256") is None and count(e["size"]))):
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
            now: _OnDisk | dict[str, Any] | None = _OnDisk(path, st.st_size)
        except FileNotFoundError:
            now = None
        for e in sorted(es, key=lambda e: e["apply"], reverse=True):
            before, after = e["before"], e["after"]
            if _same(now, before):  # this change is not there (undone already, or its apply was killed before it)
                continue
            size = None if now is None else now.size if isinstance(now, _OnDisk) else now["size"]
            if _same(now, after) or (size is not None and _partly_appended(path, size, e, backup_dir)):
                if e["backup"] is not None:
                    _check_copy(e, backup_dir)
                kind = {"whole": "copy", "tail": "append", "zeros": "zeros", None: "delete"}[e["backup"]]
                steps.append(RestoreStep(root, rel, e["apply"], kind, e))
                now = before
            else:
                def show(s: _OnDisk | dict[str, Any] | None) -> str:
                    if s is None:
                        return "absent"
                    if isinstance(s, _OnDisk):
                        s = s.state()
                    zeros = f" of its first {s['zeros_from']:,}, then zeros" if "zeros_from" in s else ""
                    return f"{s['size']:,} bytes, sha256 {s['sha256'][:12]}{zeros}"
                have = show(now)
                raise RestoreRefused(f"{path}: changed since apply {e['apply']} (it has {have}; that apply left "
                                     f"{show(after)}, before it {show(before)}): was the broker started? "
                                     "Nothing was restored")
    return steps


class _OnDisk:
    """A file as a restore finds it: its size, and the hashes a recorded state asks of it, each computed once; a
    state with ``zeros_from`` (:func:`kafkatool.safewrite.backup.file_state`) hashes that prefix and finds the rest
    zero without hashing it (a preallocated index's 10 MiB: not read where they are a hole)."""

    def __init__(self, path: Path, size: int) -> None:
        self.path, self.size, self._sha = path, size, {}

    def _prefix(self, n: int) -> str:
        if n not in self._sha:
            self._sha[n] = hash_prefix(self.path, n)
        return self._sha[n]

    def state(self) -> dict[str, Any]:
        return file_state(self.size, self._prefix(self.size))

    def holds(self, state: dict[str, Any]) -> bool:
        if state["size"] != self.size:
            return False
        zeros_from = state.get("zeros_from", self.size)
        if self._prefix(zeros_from) != state["sha256"]:
            return False
        with open_regular(self.path, buffering=0) as fh:
            return is_all_zero(fh, zeros_from, self.size - zeros_from)


def _same(now: _OnDisk | dict[str, Any] | None, state: dict[str, Any] | None) -> bool:
    """Whether a file as found (or as an undone step leaves it: a recorded state) is in ``state`` (None: absent).
    Two recorded states are the same only when recorded alike."""
    if now is None or state is None:
        return now is None and state is None
    return now.holds(state) if isinstance(now, _OnDisk) else now == state


def _check_copy(entry: dict[str, Any], backup_dir: Path) -> None:
    if entry["backup"] == "zeros":
        return
    copy = backup_dir / entry["copy"]
    try:
        if not (stat.S_ISDIR(os.lstat(copy.parent).st_mode) and stat.S_ISREG(os.lstat(copy).st_mode)):
            raise RestoreRefused(f"{copy}: the backup copy is not a regular file in a directory of the backup dir "
                                 "(a symlink is not followed); nothing was restored")
        ok = hash_file(copy) == (entry["size"], entry["sha256"])
    except OSError as exc:
        raise RestoreRefused(f"{copy}: the backup copy cannot be read ({exc.strerror or exc}); nothing was "
                             "restored") from None
    if not ok:
        raise RestoreRefused(f"{copy}: the backup copy is damaged (size or sha256 differ from the manifest); "
                             "nothing was restored")


def _partly_appended(path: Path, size: int, entry: dict[str, Any], backup_dir: Path) -> bool:
    """A file a killed restore was appending the cut bytes to: the kept prefix intact, then the first of the cut
    bytes (and nothing else: bytes a broker appended since are not taken for ours)."""
    if entry["backup"] not in ("tail", "zeros") or entry["after"] is None:
        return False
    kept, total = entry["offset"], entry["before"]["size"]
    if not kept <= size < total or hash_prefix(path, kept) != entry["kept_sha256"]:
        return False
    n = size - kept
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
            unlink(path)
        fsync_dir(path.parent)
    elif step.kind == "copy":
        try:
            like, mode = path.stat(), True
        except FileNotFoundError:
            like, mode = path.parent.stat(), False
        tmp = tmp_of(path)
        with open_regular(backup_dir / e["copy"], buffering=0) as fin:
            copy_to_temp(fin, tmp, 0o644, like, mode)
        replace(tmp, path)
        fsync_dir(path.parent)
    else:  # append / zeros: the original bytes after the kept prefix go back
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_size > e["before"]["size"] or e["after"]["size"] != e["offset"]:
                # the apply rewrote bytes after the kept prefix (an index rebuilt over its zeros): cut them first
                take_step()
                os.ftruncate(fd, e["offset"])
            if step.kind == "append":
                position = e["offset"]
                buf = bytearray(CHUNK)
                with open_regular(backup_dir / e["copy"], buffering=0) as fin:
                    while n := fin.readinto(buf):
                        chunk = memoryview(buf)[:n]
                        while chunk:
                            written = os.pwrite(fd, chunk, position)
                            chunk, position = chunk[written:], position + written
            take_step()
            os.ftruncate(fd, e["before"]["size"])  # zeros: extends with zero bytes; append: already that size
            fsync(fd)
        finally:
            os.close(fd)
