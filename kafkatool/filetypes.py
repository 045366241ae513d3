"""What a file in a Kafka log dir is, from its name alone (as the broker decides it too).

Names follow ``LogFileUtils`` / ``UnifiedLog`` / ``Snapshots`` in Kafka's storage module:
20-digit zero-padded base offsets for segment files, ``<offset 20>-<epoch 10>.checkpoint`` for KRaft
snapshots, fixed names for broker-level and partition-level checkpoint files. A trailing ``.swap``,
``.cleaned``, ``.deleted`` or ``.tmp`` marks a file the broker was in the middle of replacing; its
content has the inner type.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO, NamedTuple


class FileKind(StrEnum):
    LOG = "log"                      # record batches (segment)
    KRAFT_SNAPSHOT = "kraft_snapshot"  # record batches (KRaft .checkpoint, bootstrap.checkpoint)
    INDEX = "index"
    TIME_INDEX = "timeindex"
    TXN_INDEX = "txnindex"
    PRODUCER_SNAPSHOT = "producer_snapshot"
    OFFSET_CHECKPOINT = "offset_checkpoint"  # replication / recovery-point / log-start / cleaner
    EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
    PARTITION_METADATA = "partition_metadata"
    META_PROPERTIES = "meta_properties"
    CLEAN_SHUTDOWN = "clean_shutdown"
    QUORUM_STATE = "quorum_state"
    LOCK = "lock"
    UNKNOWN = "unknown"

    @property
    def holds_records(self) -> bool:
        return self in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT)


# The KRaft metadata partition, whose dir alone holds KRAFT_SNAPSHOT and QUORUM_STATE files: named here, where every
# reader of a partition finds it, so that a data partition's load never imports kafkatool.metadata_log.
METADATA_TOPIC = "__cluster_metadata"
LEFTOVER_SUFFIXES = (".swap", ".cleaned", ".deleted", ".tmp")
OFFSET_CHECKPOINT_NAMES = frozenset(
    {
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    }
)
_FIXED = {
    "leader-epoch-checkpoint": FileKind.EPOCH_CHECKPOINT,
    "partition.metadata": FileKind.PARTITION_METADATA,
    "meta.properties": FileKind.META_PROPERTIES,
    ".kafka_cleanshutdown": FileKind.CLEAN_SHUTDOWN,
    "quorum-state": FileKind.QUORUM_STATE,
    ".lock": FileKind.LOCK,
    "bootstrap.checkpoint": FileKind.KRAFT_SNAPSHOT,
}
_EXT_KIND = {  # <20-digit base offset>.<ext>
    "log": FileKind.LOG,
    "index": FileKind.INDEX,
    "timeindex": FileKind.TIME_INDEX,
    "txnindex": FileKind.TXN_INDEX,
    "snapshot": FileKind.PRODUCER_SNAPSHOT,
}
_KRAFT_SNAPSHOT_EXT = "checkpoint"  # <20-digit end offset>-<10-digit epoch>.checkpoint
_EXTS = "|".join(_EXT_KIND)
_SEGMENT_FILE = re.compile(rf"^(?P<base>\d{{20}})\.(?P<ext>{_EXTS})$")
_KRAFT_SNAPSHOT = re.compile(rf"^(?P<offset>\d{{20}})-(?P<epoch>\d{{10}})\.{_KRAFT_SNAPSHOT_EXT}$")
# Order in which a partition dir's files are shown: segment by segment, log first.
_KIND_ORDER = {
    FileKind.LOG: 0,
    FileKind.INDEX: 1,
    FileKind.TIME_INDEX: 2,
    FileKind.TXN_INDEX: 3,
    FileKind.PRODUCER_SNAPSHOT: 4,
    FileKind.KRAFT_SNAPSHOT: 5,
}


class FileInfo(NamedTuple):
    """A classified file name."""

    kind: FileKind
    leftover: str | None = None   # ".swap" / ".cleaned" / ".deleted" / ".tmp" when present
    base_offset: int | None = None  # segment base offset, snapshot offset, KRaft snapshot end offset
    epoch: int | None = None        # KRaft snapshot epoch


_BY_EXTENSION = re.compile(rf"^.+\.(?P<ext>{_EXTS})$")


def classify(path: str | Path, *, by_extension: bool = False) -> FileInfo:
    """Classify a file by its name (never by its content).

    ``by_extension``: also accept names that are not Kafka's (``copy.log``), with no base offset. Only
    for files a user names explicitly: walking a directory stays strict, so ``server.log`` is not a segment.
    """
    if isinstance(path, Path):
        return _classify_name(path.name, by_extension)
    if "/" in path or path in ("", "."):  # a path, not a bare name (a dir's entry): pathlib says which its name is
        return _classify_name(Path(path).name, by_extension)
    return _classify_name(path, by_extension)


@functools.lru_cache(maxsize=4096)
def _classify_name(name: str, by_extension: bool) -> FileInfo:
    """:func:`classify` of a bare name. Cached, bounded: partition dirs repeat the same names (every partition has
    a ``00000000000000000000.log``), and a listing is classified by each reader of it."""
    leftover = None
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            leftover, name = suffix, name[: -len(suffix)]
            break
    if m := _SEGMENT_FILE.match(name):
        return FileInfo(_EXT_KIND[m["ext"]], leftover, int(m["base"]))
    if m := _KRAFT_SNAPSHOT.match(name):
        return FileInfo(FileKind.KRAFT_SNAPSHOT, leftover, int(m["offset"]), int(m["epoch"]))
    if name in OFFSET_CHECKPOINT_NAMES:
        return FileInfo(FileKind.OFFSET_CHECKPOINT, leftover)
    if name in _FIXED:
        return FileInfo(_FIXED[name], leftover)
    if by_extension and (m := _BY_EXTENSION.match(name)):
        return FileInfo(_EXT_KIND[m["ext"]], leftover)
    return FileInfo(FileKind.UNKNOWN, leftover)


# Every name of a file that holds records ends so (``<offset>.log``, ``<offset>-<epoch>.checkpoint``,
# ``bootstrap.checkpoint``, each perhaps with a leftover suffix), from the tables above; a partition's other files
# mostly do not.
_RECORD_ENDINGS = (
    *(f".{ext}" for ext, kind in _EXT_KIND.items() if kind.holds_records),
    f".{_KRAFT_SNAPSHOT_EXT}",
    *(name for name, kind in _FIXED.items() if kind.holds_records and not name.endswith(f".{_KRAFT_SNAPSHOT_EXT}")),
    *LEFTOVER_SUFFIXES,
)


def holds_records(name: str) -> bool:
    """``classify(name).kind.holds_records`` of a bare name: most names (an index, a producer snapshot, a
    partition's checkpoints) are told by their ending alone, without classifying them."""
    return name.endswith(_RECORD_ENDINGS) and _classify_name(name, False).kind.holds_records


def sort_key(path: Path) -> tuple:
    """Offset order within a directory: segments by base offset (log, then its indexes), then the rest."""
    info = classify(path)
    if info.base_offset is not None:
        return (0, info.base_offset, info.epoch or 0, _KIND_ORDER.get(info.kind, 9), path.name)
    return (1, 0, 0, 0, path.name)


def file_size(path: str | os.PathLike[str]) -> int:
    """The file's size in bytes; 0 when it cannot be statted (the reading that follows reports why)."""
    try:
        return os.stat(path).st_size  # not Path.stat: its wrapper costs a third as much again (70,000 a verify)
    except OSError:
        return 0


# --- opening a file to read ----------------------------------------------------------------------------------

_TYPE_NAMES = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def type_name(mode: int) -> str:
    """What a file of ``mode`` is, in words: ``"a FIFO"``, ``"a socket"``..."""
    return next((name for test, name in _TYPE_NAMES if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """A file kafkatool would read is a FIFO, a socket, a device or a directory: refused, never read.

    An :class:`OSError` (``strerror`` says what it is), so every reader that turns a file it cannot read into an
    ``io-error`` finding does the same with this one and goes on with the rest."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        super().__init__(errno.EINVAL, f"file type not supported: {what}, not read", os.fspath(path))


# O_NONBLOCK: opening a FIFO for reading waits for a writer, forever, without it. O_NOCTTY: a terminal device
# opened is never made the controlling terminal. Neither changes how a regular file is read.
_OPEN_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)


def open_regular(path: str | os.PathLike[str], buffering: int = -1) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file (a symbolic link to one is followed), else
    :class:`NotRegularFile`. The rule for every file kafkatool reads from a disk: the type is taken from the open
    descriptor (``fstat``), so a file swapped for a FIFO after it was listed is refused too, where a ``stat``
    before ``open`` alone would race. A device is not even opened (opening some acts: a tape rewinds, a modem
    line rises), so the type is looked at by name first too. A socket cannot be opened at all (ENXIO): refused the
    same way."""
    return open_regular_sized(path, buffering)[0]


def open_regular_sized(path: str | os.PathLike[str], buffering: int = -1) -> tuple[BinaryIO, int]:
    """:func:`open_regular`, and the file's size then, from the ``fstat`` that checked its type: a reader that
    counts the bytes of what it opened takes it rather than a ``stat`` of the file again."""
    fd, size = _open_regular_fd(path)
    try:
        os.set_blocking(fd, True)
        return open(fd, "rb", buffering=buffering), size
    except BaseException:
        os.close(fd)
        raise


def _open_regular_fd(path: str | os.PathLike[str]) -> tuple[int, int]:
    """:func:`open_regular`'s checks and open: the descriptor (still ``O_NONBLOCK``) and the file's size."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, type_name(mode))
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it: say which
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise exc from None
            raise NotRegularFile(path, type_name(mode)) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, type_name(st.st_mode))
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


# The largest file kafkatool reads whole (indexes, producer snapshots, checkpoints, metadata files): 64 MiB, six
# times the 10 MiB index the broker preallocates (segment.index.bytes), far above any snapshot or checkpoint it
# writes. A bigger one (a hole a crash or a hostile disk left: a sparse 4 GiB file costs nothing on disk) is not
# read: read whole it would take that much memory.
MAX_SMALL_FILE_BYTES = 64 * 1024 * 1024


class FileTooLarge(OSError):
    """A file kafkatool would read whole is larger than it may be (:func:`read_regular`'s ``limit``): not read.

    An :class:`OSError` (``EFBIG``), so a reader that turns a file it cannot read into a finding goes on the same
    way; ``size``: the file's size, ``limit``: the most it may hold."""

    def __init__(self, path: str | os.PathLike[str], size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes, more than {limit}: not read", os.fspath(path))
        self.size, self.limit = size, limit


_SEEK_HOLE, _SEEK_DATA = getattr(os, "SEEK_HOLE", None), getattr(os, "SEEK_DATA", None)


def descriptor(fh: BinaryIO) -> int | None:
    """The descriptor of ``fh`` when it is a file on a disk; None for a stream without one (a ``BytesIO``, a file of
    pyarrow's)."""
    try:
        return fh.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both an OSError and a ValueError
        return None


def stream_size(fh: BinaryIO) -> int:
    """The size of an open stream (a file on a disk, pyarrow's, a ``BytesIO``), left at its start."""
    size = fh.seek(0, 2)  # seek returns the new position (io, pyarrow's NativeFile): no tell
    fh.seek(0)
    return size


def data_extents(fh: BinaryIO, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The stretches of ``fh`` between ``start`` and ``end`` that are data, in order, as ``(from, to)``: what lies
    between them (and after the last) is a hole of a sparse file, zeros that need not be read (``SEEK_DATA``,
    ``SEEK_HOLE``). Where the stream or its file system cannot say, the rest is one stretch, to be read: a stream
    without a descriptor (a ``BytesIO``, a file of pyarrow's), a system without ``SEEK_DATA``, an ``lseek`` failing
    other than with ENXIO (no data from there on). Past the file's end is a stretch too: reading it finds nothing.

    The descriptor's position is as it was whenever a stretch is yielded: a buffered reader over it keeps its own
    view of where it is, and the caller may stop at any stretch."""
    if start >= end:
        return
    fd = descriptor(fh) if _SEEK_DATA is not None else None
    try:
        here = os.lseek(fd, 0, os.SEEK_CUR) if fd is not None else -1
    except OSError:  # a descriptor with no position (a pipe)
        here = -1
    if here < 0:
        yield start, end
        return
    pos, hole = start, False  # hole: ``SEEK_HOLE`` found a hole (or the file's end) at ``pos``
    while pos < end:
        at, to, moved = pos, end, False  # a file's data most often starts where it is asked (one lseek, not two)
        try:
            if hole:
                at, moved = os.lseek(fd, pos, _SEEK_DATA), True  # from ``pos`` to here: a hole
            if at < end:
                to, moved = os.lseek(fd, at, _SEEK_HOLE), True
        except OSError as exc:
            # ENXIO: no data from ``pos`` to the file's end (then past its end); else the system cannot say
            at, to = (max(pos, os.fstat(fd).st_size), end) if exc.errno == errno.ENXIO else (pos, end)
        finally:
            if moved:
                os.lseek(fd, here, os.SEEK_SET)
        pos, hole = min(to, end), True
        if at < pos:
            yield at, pos


def data_end(fh: BinaryIO, size: int, unit: int = 1) -> int:
    """Where the bytes of ``fh`` (``size`` long) that are not a trailing hole end, rounded up to a multiple of
    ``unit`` (at most ``size``): a sparse file's unwritten tail reads as zeros and need not be read. Kafka makes a
    segment's indexes so (``AbstractIndex``: ``RandomAccessFile.setLength`` to ``segment.index.bytes``, 10 MiB, the
    entries written through a mapping), and a broker that crashed leaves its active segments' indexes that way:
    reading them whole is 20 MiB a partition of zeros. ``size`` when the file has no hole running to its end, when
    data follows its first hole, or when its stream or system cannot say (:func:`data_extents`: a file of pyarrow's,
    a ``BytesIO``, a file system without ``SEEK_HOLE``). The descriptor's position is put back as it was."""
    end = 0
    for at, to in data_extents(fh, 0, size):
        if at != end:
            return size  # data after the first hole: read whole (Kafka's indexes are written from the start)
        end = to
    return min(size, -(-end // unit) * unit)


_ZEROS = bytes(1 << 20)  # what a zero-filled stretch is compared with, a MiB at a time


def is_all_zero(fh: BinaryIO, start: int, length: int) -> bool:
    """Whether the ``length`` bytes from ``start`` are all zero. Compared a MiB at a time with zeros (``memcmp``:
    ``bytes.count(0)`` took ~1.5 s of CPU a GiB); in a file on a disk, only its data is read (``pread``: the
    position of ``fh`` is its own): the holes of a sparse file are zeros without reading them
    (:func:`data_extents`; reading them cost ~1 s a GiB, each reader again). The record reader asks it of what
    follows a log's last batch, a backup of what an apply cuts from a file (a preallocated index's zeros)."""
    fd = descriptor(fh)
    read_at = ((lambda at, n: fh.read(n) if fh.seek(at) == at else b"") if fd is None
               else (lambda at, n: os.pread(fd, n, at)))
    return all(_zeros_between(read_at, at, to) for at, to in data_extents(fh, start, start + length))


def _zeros_between(read_at: Callable[[int, int], bytes], start: int, end: int) -> bool:
    """Whether the bytes from ``start`` to ``end`` are all zero, ``read_at(position, n)`` reading them."""
    pos = start
    while pos < end:
        chunk = read_at(pos, min(end - pos, len(_ZEROS)))
        if not chunk:
            return False
        if chunk != (_ZEROS if len(chunk) == len(_ZEROS) else bytes(len(chunk))):
            return False
        pos += len(chunk)
    return True


def read_to_hole(path: str | os.PathLike[str], unit: int = 1, limit: int | None = MAX_SMALL_FILE_BYTES, *,
                 open_file: Callable[[str], BinaryIO] | None = None) -> tuple[bytes, int]:
    """The bytes of a regular file (:func:`open_regular`'s rule) up to a trailing hole (:func:`data_end`, rounded up
    to ``unit``: the rest is zeros), and the file's size: an index file as its readers take it.
    :class:`FileTooLarge` for a file larger than ``limit``, hole or not (no broker writes one). ``open_file``: what
    opens it instead (a Spark task's pyarrow file, bytes already read), its size then its stream's."""
    if open_file is None:
        fh, size = open_regular_sized(path, buffering=0)
    else:
        fh, size = open_file(os.fspath(path)), -1
    with fh:
        if size < 0:
            size = stream_size(fh)
        if limit is not None and size > limit:
            raise FileTooLarge(path, size, limit)
        return fh.read(data_end(fh, size, unit)), size


def holds(path: str | os.PathLike[str], data: bytes) -> bool:
    """Whether the regular file at ``path`` holds exactly ``data``: a file of another size is not read, and one of
    the same size only up to a trailing hole (its zeros compared, not read). ``repair`` asks it of what it would
    write, a crashed broker's 10 MiB preallocated indexes among them."""
    fh, size = open_regular_sized(path, buffering=0)
    with fh:
        if size != len(data):
            return False
        got = fh.read(data_end(fh, size))
    return data.startswith(got) and data.count(0, len(got)) == size - len(got)


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (:func:`open_regular`'s rule): ``Path.read_bytes`` for files on a disk;
    :class:`FileTooLarge` rather than more than ``limit`` bytes.

    On the descriptor, without a file object: its size from the ``fstat`` that checks its type, read in one call
    when it has not changed (5 system calls where ``FileIO.readall`` makes 10: a partition's small files are most of
    the system calls ``verify`` makes; ``O_NONBLOCK`` does not change how a regular file is read)."""
    fd, size = _open_regular_fd(path)
    try:
        if limit is not None and size > limit:
            raise FileTooLarge(path, size, limit)
        data = os.read(fd, size + 1)
        if len(data) == size:  # all its fstat said, and not one byte more
            return data
        chunks = [data]  # cut short (2 GiB a read), or changed since its fstat: read to the end
        got = len(data)
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            got += len(chunk)
            if limit is not None and got > limit:  # grown since its fstat
                raise FileTooLarge(path, got, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_small(path: str | os.PathLike[str]) -> bytes:
    """:func:`read_regular` of a file kafkatool reads whole: :class:`FileTooLarge` beyond
    :data:`MAX_SMALL_FILE_BYTES`."""
    return read_regular(path, limit=MAX_SMALL_FILE_BYTES)
