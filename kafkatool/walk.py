"""Discovery: the log dirs, partition dirs and files under the paths a user names. Every command finds them here.

What a directory is, decided from its listing as the broker would see it:

* a **log dir** holds a broker file (``meta.properties``, ``.kafka_cleanshutdown``, an offset checkpoint; see
  :mod:`kafkatool.logdir`) or a partition dir; its other subdirs are listed as dirs the broker ignores;
* a **partition dir** holds segment files (``.log``, indexes, snapshots, ``leader-epoch-checkpoint``...) or is
  an empty ``topic-N``; a directory inside it is not read (``LogLoader.loadSegmentFiles`` takes only files)
  and is reported;
* anything else is a **container** (``/var/lib/kafka`` holding ``data-1``, ``data-2``): its subdirs are
  looked at in turn, so each log dir keeps its own partitions together.

kafkatool's own backup dirs (``kafkatool-backup-*``, or any dir holding a backup ``MANIFEST.json``) are never
taken for broker data: they are skipped with an info finding. What cannot be read is an ``io-error`` finding
naming it, and the rest is still read: a symbolic link to nothing or in a loop, a dir that cannot be listed, a
dir met again below itself (a link to a dir it is in), a FIFO, socket or device with a Kafka file's name (never
opened here; every reader opens with :func:`kafkatool.filetypes.open_regular`, which refuses one put there
since). A path with nothing Kafka under it, or a file named with no Kafka log-dir file's name (``/etc/passwd``), is
a :class:`~kafkatool.errors.UsageError` (exit 2): an operator who typed the wrong path is told so.

Order is the broker's: log dirs and partition dirs by name, partitions by topic then partition number; in a
partition dir, files by name (20-digit base offsets: segments in offset order). :func:`expand` flattens the
same discovery into files in reading order for ``dump`` and the Spark planner (each ``.log`` before its
indexes, see :func:`kafkatool.filetypes.sort_key`); :func:`url_files` lists what is under a URL for the Spark
planner.
"""

from __future__ import annotations

import errno
import functools
import operator
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from .errors import InputIOError, UsageError
from .filetypes import FileKind, classify, sort_key, type_name
from .findings import finding
from .logdir import BROKER_FILES, LogDir, is_backup_dir
from .model import Finding

# topic-3, or topic-3.<uuid hex>-delete / -future / -stray (a dir being deleted, moved in, or no longer assigned)
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?P<state>delete|future|stray))?$")

# Files that make a dir a partition dir (a log dir never holds them directly).
_PARTITION_KINDS = frozenset({
    FileKind.LOG, FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX, FileKind.PRODUCER_SNAPSHOT,
    FileKind.EPOCH_CHECKPOINT, FileKind.PARTITION_METADATA, FileKind.KRAFT_SNAPSHOT, FileKind.QUORUM_STATE,
})
# A dir named as a segment file would be (compiled by re at the first dir inside a partition dir: a rare thing)
_SEGMENT_LIKE = r"^\d+\.(log|index|timeindex|txnindex|snapshot)$|^\d{20}-\d{10}\.checkpoint$"
NOTHING_FOUND = "no Kafka log dir, partition or segment under {}"
NOT_KAFKA_FILE = "{}: not a Kafka log-dir file (a segment, index, snapshot or checkpoint, by its name)"


def partition_of(dirname: str) -> tuple[str, int] | None:
    """``("topic", 3)`` for a partition dir name ``topic-3`` (also ``topic-3.<uuid>-delete``)."""
    m = PARTITION_DIR.match(dirname)
    return (m["topic"], int(m["partition"])) if m else None


class FoundFile(NamedTuple):
    """A file to read: named on the command line, or found in a log dir or partition dir."""

    path: Path
    display: str          # the path as given or found (joined onto what the user typed)
    kind: FileKind
    explicit: bool        # named on the command line (not found by walking a directory)


class PartitionDir(NamedTuple):
    """A partition dir (or, with ``topic`` None, a dir of a log dir that is no partition: the broker ignores it)."""

    path: Path
    display: str
    topic: str | None
    partition: int | None
    state: str | None                      # delete | future | stray (a suffixed dir), else None
    files: tuple[tuple[Path, str], ...]    # (path, display) of every file in the dir, by name
    logdir: LogDir | None = None           # the log dir it was found in; None when named on its own
    findings: tuple[Finding, ...] = ()     # what discovery met in it: dirs inside it, links to nothing

    @property
    def logdir_path(self) -> Path:
        """Where its log dir's checkpoints are: the log dir it was found in, else its parent."""
        return self.logdir.path if self.logdir is not None else self.path.parent

    @property
    def logdir_display(self) -> str:
        return self.logdir.display if self.logdir is not None else (os.path.dirname(self.display) or ".")


Unit = LogDir | PartitionDir | FoundFile | Finding


# --- listing one directory -----------------------------------------------------------------------------


@dataclass
class _Listing:
    """One directory's entries, by kind, in name order."""

    path: Path
    display: str
    files: list[tuple[Path, str]] = field(default_factory=list)
    dirs: list[tuple[Path, str]] = field(default_factory=list)
    # entries that cannot be read, with why: a symbolic link to nothing or in a loop (or whose stat failed), a
    # FIFO, socket or device with a Kafka file's name
    unreadable: list[tuple[Path, str, str]] = field(default_factory=list)
    file_names: list[str] = field(default_factory=list)  # the names of ``files``, for the tests on them

    @functools.cached_property
    def ident(self) -> tuple[int, int]:
        """(st_dev, st_ino): a directory met again below itself is a loop. Statted when first compared: only a
        container's dirs are (a log dir's 10,000 partition dirs never are)."""
        try:
            st = os.stat(self.path)
        except OSError:  # gone since it was listed: the same as no dir above it
            return (-1, id(self))
        return (st.st_dev, st.st_ino)


def _list(d: Path, display: str) -> _Listing:
    try:
        with os.scandir(d) as it:
            entries = sorted(it, key=_entry_name)
    except OSError as exc:
        raise InputIOError(f"cannot list {display}: {exc.strerror or exc}") from exc
    out = _Listing(d, display)
    files, dirs, names = out.files, out.dirs, out.file_names
    child = _child if _child is not None and isinstance(d, Path) else _parsed
    prefix = display if not display or display.endswith("/") else display + "/"  # os.path.join's, for a name
    for e in entries:
        name = e.name
        item = (child(d, name), prefix + name)
        try:  # is_dir and is_file follow a symbolic link (a loop raises ELOOP); stat only for what is neither
            if e.is_dir():
                dirs.append(item)
                continue
            if e.is_file():
                files.append(item)
                names.append(name)
                continue
            mode = e.stat().st_mode
        except OSError as exc:
            out.unreadable.append((*item, _why_not(Path(e.path), exc)))
            continue
        if classify(name).kind is not FileKind.UNKNOWN:  # a file kafkatool would read; others are not its business
            out.unreadable.append((*item, f"file type not supported: {type_name(mode)}, not read"))
    return out


_entry_name = operator.attrgetter("name")


def _parsed(d: str | Path, name: str) -> Path:
    return Path(os.path.join(d, name))


# A dir's entry as pathlib's own Path.iterdir makes it, without parsing the path again (a listing of 10,000
# partition dirs makes 70,000 of them: parsing was a tenth of verify's time); parsed where pathlib lacks it.
_make_child = getattr(Path, "_make_child_relpath", None)
_child = _make_child


def _why_not(entry: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOENT and entry.is_symlink():
        return f"a symbolic link to {_target(entry)!r}, which does not exist"
    if exc.errno == errno.ELOOP:
        return f"a symbolic link loop ({_target(entry)!r}): not followed"
    return exc.strerror or str(exc)


def list_partition(part: PartitionDir) -> PartitionDir:
    """``part`` with its files, and its log dir's own files, listed again (an ``--apply`` or a resume changed
    them; the log dir's broker files are read afresh on first use)."""
    ld = part.logdir
    if ld is not None:
        ld = LogDir(ld.path, ld.display, _list(ld.path, ld.display).files, ld.partitions, ld.findings)
    return _partition(_list(part.path, part.display), ld, part.topic is not None)


def dir_files(d: Path, display: str) -> list[tuple[Path, str]]:
    """(path, display) of the files of one dir, by name, as discovery lists them (a link loop or a FIFO is never
    one); InputIOError when the dir cannot be listed. For a reader given a dir without discovery (the loader)."""
    return _list(d, display).files


def _unreadable_findings(listing: _Listing) -> list[Finding]:
    return [finding("io-error", display, None, f"cannot read: {why}")
            for _path, display, why in listing.unreadable]


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError as exc:  # gone or replaced since it was listed
        return f"? ({exc.strerror or exc})"


def _is_partition(listing: _Listing) -> bool:
    """Segment files and no broker file or partition subdir; or an empty ``topic-N``."""
    names = listing.file_names
    if not BROKER_FILES.isdisjoint(names):
        return False
    if any(partition_of(p.name) for p, _ in listing.dirs):
        return False
    if any(classify(name).kind in _PARTITION_KINDS for name in names) or any(
            classify(p).kind in _PARTITION_KINDS for p, *_ in listing.unreadable):
        return True
    return bool(partition_of(listing.path.name)) and not listing.files and not listing.dirs


def _partition(listing: _Listing, logdir: LogDir | None, known: bool = True) -> PartitionDir:
    m = PARTITION_DIR.match(listing.path.name) if known else None
    findings = _unreadable_findings(listing)
    for path, display in listing.dirs if known else ():
        segment_like = bool(re.match(_SEGMENT_LIKE, path.name))
        findings.append(finding(
            "unknown-dir-segment-name" if segment_like else "unknown-dir", display, None,
            "a directory, not a file: the broker reads only the files of a partition dir "
            "(LogLoader.loadSegmentFiles) and ignores it" + ("; a segment file's name on a directory" if segment_like
                                                              else "")))
    return PartitionDir(listing.path, listing.display, m["topic"] if m else None,
                        int(m["partition"]) if m else None, m["state"] if m else None, tuple(listing.files), logdir,
                        tuple(findings))


def _skipped_backup(display: str) -> Finding:
    return finding("backup-dir-skipped", display, None,
                   "a kafkatool backup (repair/truncation --apply), not broker data: not read")


def _subdirs(listing: _Listing, findings: list[Finding]) -> list[_Listing]:
    """The listings of ``listing``'s subdirs, kafkatool's backup dirs left out (a finding each). A subdir that
    cannot be listed (no permission, an I/O error) is an ``io-error`` finding: the others are still read."""
    subs = []
    for path, display in listing.dirs:
        if is_backup_dir(path.name):
            findings.append(_skipped_backup(display))
            continue
        try:
            sub = _list(path, display)
        except InputIOError as exc:
            cause = exc.__cause__
            why = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(exc)
            findings.append(finding("io-error", display, None, f"cannot list: {why}"))
            continue
        if is_backup_dir(path.name, frozenset(sub.file_names)):
            findings.append(_skipped_backup(display))
            continue
        subs.append(sub)
    return subs


def _partition_order(p: PartitionDir) -> tuple:
    return (p.topic is None, p.topic or p.path.name, p.partition or 0, p.path.name)


def _container_order(listing: _Listing) -> tuple:
    """Numbered names by number (data-2 before data-10), then the others by name."""
    part = partition_of(listing.path.name)
    return (0, part[0], part[1], listing.path.name) if part else (1, listing.path.name, 0, listing.path.name)


def _discover_dir(listing: _Listing, above: tuple[_Listing, ...] = ()) -> Iterator[LogDir | PartitionDir | Finding]:
    """What ``listing`` is, and (a container) what its subdirs are; ``above``: the containers it was found in."""
    if _is_partition(listing):
        yield _partition(listing, None)
        return
    findings: list[Finding] = []
    subs = _subdirs(listing, findings)
    if any(p.name in BROKER_FILES for p, *_ in (*listing.files, *listing.unreadable)) or any(
            _is_partition(s) for s in subs):
        logdir = LogDir(listing.path, listing.display, listing.files, [], [*_unreadable_findings(listing), *findings])
        logdir.partitions.extend(_partition(s, logdir, known=_is_partition(s)) for s in subs)
        logdir.partitions.sort(key=_partition_order)
        yield logdir
        return
    yield from _unreadable_findings(listing)
    yield from findings
    above = (*above, listing)
    for sub in sorted(subs, key=_container_order):  # a directory above log dirs (/var/lib/kafka: data-1, data-2)
        again = next((a for a in above if a.ident == sub.ident), None)
        if again is not None:  # a link (or a bind mount) back to a dir it is in: followed, it never ends
            yield finding("io-error", sub.display, None,
                          f"cannot read: a loop, the same directory as {again.display}: not followed")
            continue
        yield from _discover_dir(sub, above)


# --- the public entry points ---------------------------------------------------------------------------


def discover(paths: Iterable[str | Path], *, require: bool = True) -> list[Unit]:
    """Log dirs, lone partition dirs, files named on the command line, and discovery's own findings, in order.

    Raises UsageError for a path that does not exist or (with ``require``, every command) has no Kafka log dir,
    partition dir or file under it, or is a file with no Kafka log-dir file's name.
    """
    units: list[Unit] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = list(_discover_dir(_list(p, str(raw))))
            if require and not any(isinstance(u, LogDir | PartitionDir) for u in found):
                raise UsageError(NOTHING_FOUND.format(raw))
            units.extend(found)
        elif p.exists():
            kind = classify(p, by_extension=True).kind
            if require and kind is FileKind.UNKNOWN:  # /etc/passwd: nothing Kafka here either
                raise UsageError(NOT_KAFKA_FILE.format(raw))
            units.append(FoundFile(p, str(raw), kind, True))
        else:
            raise UsageError(f"no such file or directory: {raw}")
    return units


def partition_dirs(paths: Iterable[str | Path]) -> Iterator[PartitionDir]:
    """Every live partition dir under ``paths``, log dir by log dir (skipping ``-delete``/``-future``/``-stray``
    dirs and dirs that are no partition). A plain file is a UsageError, and so is a path with nothing under it."""
    return (p for p in partition_dirs_and_findings(paths) if isinstance(p, PartitionDir))


def partition_dirs_and_findings(paths: Iterable[str | Path]) -> Iterator[PartitionDir | Finding]:
    """:func:`partition_dirs`, with what discovery could not read in the log dirs and the dirs above them (a
    subdir that cannot be listed, a link in a loop or to nothing, a FIFO with a checkpoint's name) where it met
    it, before the log dir's partitions: a command reporting on partitions shows them too (a partition's own are
    in its ``findings``). Info findings (a backup dir skipped) are ``verify``'s and ``dump``'s to show."""
    units = discover(paths)
    for unit in units:
        if isinstance(unit, FoundFile):
            raise UsageError(f"{unit.display}: a file; name partition dirs or log dirs")
    for unit in units:
        if isinstance(unit, Finding):
            if unit.severity != "info":
                yield unit
        elif isinstance(unit, LogDir | PartitionDir):
            if isinstance(unit, LogDir):
                yield from (f for f in unit.findings if f.severity != "info")
            for part in unit.partitions if isinstance(unit, LogDir) else [unit]:
                if part.topic is not None and part.state is None:
                    yield part


def found_files(units: Iterable[Unit]) -> Iterator[FoundFile | Finding]:
    """The files to read of ``units`` in reading order (each log dir's own files, then its partitions'), with
    discovery's findings where they were met. Files kafkatool cannot name a kind for are left out."""
    for unit in units:
        if isinstance(unit, FoundFile | Finding):
            yield unit
            continue
        if isinstance(unit, LogDir):
            yield from unit.findings
            yield from _known(unit.files)
            parts = unit.partitions
        else:
            parts = [unit]
        for part in parts:
            yield from part.findings
            yield from _known(part.files)


def _known(files: Iterable[tuple[Path, str]]) -> Iterator[FoundFile]:
    for path, display in sorted(files, key=lambda f: sort_key(f[0])):
        kind = classify(path).kind
        if kind not in (FileKind.UNKNOWN, FileKind.LOCK):
            yield FoundFile(path, display, kind, False)


def expand(paths: Iterable[str | Path], *, require: bool = True) -> list[FoundFile]:
    """Every file to read under ``paths``; raises UsageError for a path that does not exist or (with
    ``require``) holds nothing Kafka."""
    return [f for f in found_files(discover(paths, require=require)) if isinstance(f, FoundFile)]


def total_bytes(paths: list[str] | list[Path]) -> int:
    """Bytes of record files under ``paths`` (what a progress bar counts); unreadable files count 0."""
    total = 0
    for f in expand(paths):
        if f.kind.holds_records:
            try:
                total += f.path.stat().st_size
            except OSError:
                pass
    return total


# --- a URL: the same listing through a store's client ----------------------------------------------


class UrlStore(Protocol):
    """The store behind one URL (``s3://``, ``hdfs://``, ``file://``...), as :func:`url_files` lists it. The Spark
    planner's is :mod:`pyarrow.fs` (pyarrow stays inside :mod:`kafkatool.spark`)."""

    root: str   # the path the store gives the URL

    def files_under(self, path: str) -> list[str] | None:
        """Every file under ``path`` at any depth, ``[path]`` for a file, None when nothing is there."""
        ...


def url_files(url: str, store: UrlStore) -> tuple[str, list[tuple[str, str]]] | None:
    """What is under ``url``: ``(store.root, [(name, URL) of each file, by name])``, the URL's own file alone when
    it names a file; None when it names nothing. Each file's URL is the given one with its path extended, so what
    the URL carries besides the path (credentials, a namenode's host:port, ``?endpoint_override=`` for an
    S3-compatible store...) reaches whoever opens it. A store lists keys, not dirs: every file under the URL is
    listed, at any depth (a reader sorts them by their dir, :func:`kafkatool.logfiles.sort_files`)."""
    root = store.root
    names = store.files_under(root)
    if names is None:
        return None
    head, _, query = url.partition("?")
    after_scheme = head.index("://") + 3
    head = head[:after_scheme] + head[after_scheme:].rstrip("/")  # file:/// stays file://
    query = f"?{query}" if query else ""
    cut = len(root.rstrip("/"))
    return root, [(name, url if name == root else head + name[cut:] + query) for name in sorted(names)]


__all__ = ["NOTHING_FOUND", "PARTITION_DIR", "FoundFile", "LogDir", "PartitionDir", "Unit", "UrlStore", "dir_files",
           "discover", "expand", "found_files", "list_partition", "partition_dirs", "partition_dirs_and_findings",
           "partition_of", "total_bytes", "url_files"]
