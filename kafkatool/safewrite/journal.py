"""The apply journal: a plan of file ops carried out so that nothing is ever lost and a kill at any point is
harmless, and the resume that completes a half-done apply.

Every writing command (``repair --apply``, ``truncation --apply``) plans a list of :class:`FileOp` and runs it
through :func:`apply_ops` while holding :func:`~kafkatool.safewrite.lock.log_dir_lock`::

    with log_dir_lock(log_dir):
        resume(log_dir)                  # finish an interrupted apply first: a plan made from a
        ops = plan(...)                  # half-applied state could differ
        if ops and not dry_run:          # the dry run is the caller's
            apply_ops(log_dir, ops, backup_dir)

What :func:`apply_ops` does, in this order (the order is what makes a kill harmless):

1. **Check**, writing nothing: every path lies under ``root``, ``backup_dir`` does not, no interrupted apply
   is pending (its journal exists: :func:`resume` it first), and the ops make sense in sequence (a truncate
   never extends, a rename stays in its directory and has a source or, already done, a destination, ``.lock``
   is never touched). Otherwise :class:`~kafkatool.errors.ApplyRefused`. Re-applying ops already applied
   changes nothing.
2. **Stage** the new contents of "write" ops in ``backup_dir/staged/<id>/<op number>`` (``<id>`` is derived
   from the journal path, so only that journal can refer to it).
3. **Back up** every file an op changes, deletes, renames or renames over, as it is before the apply (whole,
   or the bytes a cut removes), and append this apply's entries to ``backup_dir/MANIFEST.json`` (fsynced): see
   :mod:`.backup`.
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
phase relies on it: :mod:`.durable`), as long as the disk honours fsync.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ApplyRefused, JournalError
from ..filetypes import FileTooLarge, open_regular, read_regular, read_small, type_name
from ..logdir import JOURNAL_NAME, MANIFEST_NAME
from .backup import (
    BackedUp,
    append_manifest,
    backup_copy,
    backup_tail,
    copy_for,
    file_state,
    hash_prefix,
    next_apply,
)
from .durable import (
    CHUNK,
    abs_path,
    atomic_write,
    fsync,
    fsync_dir,
    inside,
    makedirs,
    replace,
    rmdir,
    take_step,
    tmp_of,
    unlink,
    write_temp,
)
from .lock import LOCK_NAME

STAGED_DIR = "staged"
KINDS = ("write", "truncate", "delete", "rename")

_JOURNAL_FORMAT = "kafkatool-apply-journal"
_VERSION = 1


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
class ApplyReport:
    """What an apply (or the resume of one) did. When a report is returned, every op of the apply is done."""

    ops: tuple[FileOp, ...]          # every op of the apply, in order (after a resume: write ops carry data=None)
    ops_run: int                     # executed by this call (a resume skips the ops the journal records as done)
    backups: tuple[BackedUp, ...]    # every original this apply backed up (including copies kept from a re-run)
    bytes_backed_up: int             # bytes copied by this call (0 for a resume: its backups were made before)
    backup_dir: Path
    resumed: bool





def _rel(root: Path, path: Path, what: str) -> str:
    try:
        return abs_path(path).relative_to(root).as_posix()
    except ValueError:
        raise ApplyRefused(f"{what} {path}: not under {root}") from None


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


def _staged_dir(backup_dir: Path, journal: Path) -> Path:
    return backup_dir / STAGED_DIR / hashlib.sha256(str(journal).encode()).hexdigest()[:16]


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
        while chunk := fh.read(CHUNK):
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


def _after(root: Path, content: _Content, befores: dict[str, tuple[int, str, int | None]],
           kept_sha: dict[tuple[str, int], str]) -> dict[str, Any] | None:
    """Size and sha256 of what a path holds once the apply is done (None: absent)."""
    if content is None:
        return None
    if content[0] == "data":
        return file_state(len(content[1]), hashlib.sha256(content[1]).hexdigest())
    rel = content[1]
    if content[0] == "orig":
        return file_state(*befores[rel])
    n = content[2]
    if n == befores[rel][0]:
        return file_state(*befores[rel])
    return file_state(n, kept_sha.get((rel, n)) or hash_prefix(root / rel, n))


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
    backup_dir = abs_path(Path(backup_dir))
    journal = root / JOURNAL_NAME if journal is None else abs_path(Path(journal))
    if inside(backup_dir, root):
        raise ApplyRefused(f"backup dir {backup_dir} is inside {root}: it must be outside the tree it backs up")
    if journal.exists():
        raise ApplyRefused(f"{journal}: an interrupted apply is pending; resume it before planning anew")
    if not ops:
        return ApplyReport((), 0, (), 0, backup_dir, False)
    to_back_up, final = _check_ops(root, ops, journal)
    apply_no = next_apply(backup_dir)
    keep = {rel: _kept_length(root, rel, final[rel], (root / rel).stat().st_size) for rel in to_back_up}
    copies = {rel: copy_for(backup_dir, rel, root / rel) for rel in to_back_up if keep[rel] is None}

    # Stage the new contents.
    staged_dir = _staged_dir(backup_dir, journal)
    records: list[dict[str, Any]] = []
    writes = [i for i, op in enumerate(ops) if op.kind == "write"]
    if writes:
        makedirs(staged_dir, sync=False)
        for leftover in sorted(staged_dir.iterdir()):  # from this journal's apply killed before its commit
            unlink(leftover)
    for i, op in enumerate(ops):
        record: dict[str, Any] = {"kind": op.kind, "path": _rel(root, op.path, op.kind), "reason": op.reason}
        if op.kind == "write":
            assert op.data is not None
            data = bytes(op.data)
            name = f"{i:06d}"
            write_temp(tmp_of(staged_dir / name), data, None, False)
            replace(tmp_of(staged_dir / name), staged_dir / name)
            record.update(staged=name, length=len(data), sha256=hashlib.sha256(data).hexdigest())
        elif op.kind == "truncate":
            record["size"] = op.size
        elif op.kind == "rename":
            assert op.dest is not None
            record["dest"] = _rel(root, op.dest, "rename to")
        records.append(record)

    # Back up the originals: whole, or (a file only cut short) the bytes removed.
    backups: list[BackedUp] = []
    befores: dict[str, tuple[int, str, int | None]] = {}
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
                makedirs(copy.parent, sync=False)
                size, digest = backup_copy(root / rel, copy)
                copied += size
                dirs.add(copy.parent)
            else:
                size, digest = reused
            backups.append(BackedUp(root / rel, copy, size, digest))
            befores[rel] = (size, digest, None)
            entry.update(backup="whole", copy=copy.relative_to(backup_dir).as_posix(), size=size, sha256=digest)
        else:
            tail = backup_tail(root / rel, backup_dir, rel, k)
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
        entry["before"] = file_state(*befores[rel]) if rel in befores else None
        entry["after"] = _after(root, final[rel], befores, kept_sha)
    # Every directory the resume relies on, up to the backup dir's parent (even those a killed run created).
    for d in list(dirs):
        dirs.update(a for a in d.parents if inside(a, backup_dir.parent))
    for d in sorted(dirs, key=lambda d: (-len(d.parts), d)):
        if d.is_dir():
            fsync_dir(d)
    append_manifest(backup_dir, entries)

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
    journal = root / JOURNAL_NAME if journal is None else abs_path(Path(journal))
    tmp = tmp_of(journal)
    if tmp.exists():  # killed while writing the journal: the apply never started changing root
        unlink(tmp)
        fsync_dir(tmp.parent)
    try:
        if not stat.S_ISREG(os.lstat(journal).st_mode):  # a FIFO would block the read, a link lead anywhere
            raise JournalError(f"{journal}: not a regular file; a kafkatool journal never is anything else")
        text = read_small(journal)  # bounded: it is read from the disk it is about
    except FileNotFoundError:
        return None
    except FileTooLarge as exc:
        raise JournalError(f"{journal}: {exc.size:,} bytes, larger than any journal kafkatool writes; the originals "
                           "are in the apply's backup dir") from None
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
        try:  # never more than the journal says it holds: a longer one is damaged, and not read whole
            data = read_regular(staged, max(record["length"], 0))
        except FileTooLarge:
            raise JournalError(f"{journal}: the new content of {record['path']} ({staged}) is damaged") from None
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
                and isinstance(b["size"], int)
                and (isinstance(b["sha256"], str) or (b["sha256"] is None and b.get("kind") == "zeros"))):
            raise ValueError(f"backup {b!r}: not as an apply records it")


def _run(root: Path, journal: Path, header: dict[str, Any], start: int, data_of: dict[int, bytes], *,
         clean_staged: bool = True) -> None:
    """Execute the journal's ops from ``start`` (marking each done), then clean up: staged contents, journal."""
    for i in range(start, len(header["ops"])):
        _execute(root, journal, header["ops"][i], data_of.get(i))
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.write(fd, b'{"done":%d}\n' % i)
            fsync(fd)
        finally:
            os.close(fd)
    staged_dir = Path(header["staged_dir"])
    if clean_staged and staged_dir.is_dir():
        for leftover in sorted(staged_dir.iterdir()):
            unlink(leftover)
        rmdir(staged_dir)
        fsync_dir(staged_dir.parent)
    staged_root = staged_dir.parent
    if clean_staged and staged_root.is_dir() and not any(staged_root.iterdir()):  # no other journal's staged contents
        rmdir(staged_root)
        fsync_dir(staged_root.parent)
    unlink(journal)
    fsync_dir(journal.parent)


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
                take_step()
                os.ftruncate(fd, record["size"])
            fsync(fd)
        finally:
            os.close(fd)
    elif kind == "delete":
        if os.path.lexists(path):
            unlink(path)
        fsync_dir(path.parent)
    elif kind == "rename":
        dest = root / record["dest"]
        if os.path.lexists(path):
            replace(path, dest)
        elif not os.path.lexists(dest):
            raise JournalError(f"{journal}: rename {path} to {dest.name}: neither exists (changed by something "
                               "else?)")
        fsync_dir(path.parent)
    else:
        raise JournalError(f"{journal}: unknown op kind {kind!r}")
