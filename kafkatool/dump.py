"""``dump``: every file under the given paths, decoded into the values of :mod:`kafkatool.model`.

The one library function behind ``kafkatool dump``; it yields values and never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InputIOError
from .filetypes import FileKind, classify
from .model import Batch, FileStart, Finding, Record, Trailing
from .records import RawBatch, ScanOptions, decode_records, scan
from .walk import FoundFile, discover, expand, found_files

if TYPE_CHECKING:
    from .txns import CommittedView


@dataclass(frozen=True, slots=True)
class DumpOptions:
    records: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    max_batches: int | None = None   # per record file
    max_bytes: int | None = None     # per record file: entries starting within the first N bytes
    scan: ScanOptions = field(default_factory=ScanOptions)
    isolation: str = "read_uncommitted"  # read_committed: only what such a consumer receives (kafkatool.txns)

    def wants(self, first: int, last: int) -> bool:
        if self.from_offset is not None and last < self.from_offset:
            return False
        return not (self.to_offset is not None and first > self.to_offset)


def dump_paths(
    paths: list[str] | list[Path],
    options: DumpOptions = DumpOptions(),
    progress: Callable[[int], None] | None = None,
) -> Iterator[object]:
    """Values for every file under ``paths``; a FileStart before each file when there are several. What discovery
    met on the way (a symbolic link to nothing, a directory inside a partition dir) comes as a Finding."""
    found = list(found_files(discover(paths)))
    separate = sum(isinstance(f, FoundFile) for f in found) > 1 or any(Path(p).is_dir() for p in paths)
    views: dict[Path, CommittedView] = {}
    for f in found:
        if isinstance(f, Finding):
            yield f
            continue
        if separate:
            yield FileStart(f.display)
        if options.isolation == "read_committed" and f.kind is FileKind.LOG:
            from .txns import committed_view

            parent = f.path.resolve().parent
            if parent not in views:
                views[parent] = committed_view(parent)
            yield from dump_file(f, options, progress, views[parent])
        else:
            yield from dump_file(f, options, progress)


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


def dump_file(
    f: FoundFile, options: DumpOptions = DumpOptions(), progress: Callable[[int], None] | None = None,
    committed: CommittedView | None = None,
) -> Iterator[object]:
    """Values of one file. A file that cannot be read yields an ``io-error`` finding, not an exception.

    ``committed`` (a :class:`kafkatool.txns.CommittedView`): only the batches a read_committed consumer receives.
    """
    try:
        if f.kind.holds_records:
            yield from _dump_records(f, options, progress, committed)
        elif f.kind is FileKind.UNKNOWN:
            yield Finding("warning", "unknown-file-type", f.display, None,
                          "not a Kafka log-dir file name; cannot tell how to read it")
        else:
            from .smallfiles import read_small_file

            yield from read_small_file(f.path, f.kind, f.display, classify(f.path).base_offset)
    except (OSError, InputIOError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        yield Finding("error", IO_ERROR, f.display, None, f"cannot read the file: {reason}")


IO_ERROR = "io-error"  # the finding code the CLI turns into exit code 3


def _dump_records(
    f: FoundFile, options: DumpOptions, progress, committed: CommittedView | None = None
) -> Iterator[object]:
    with open(f.path, "rb") as fh:
        batches = 0
        for item in scan(fh, f.display, end=options.max_bytes, with_raw=options.records,
                         options=options.scan, progress=progress):
            if committed is not None and isinstance(item, (RawBatch, Batch)):
                b = item.batch if isinstance(item, RawBatch) else item
                if committed.limit is not None and b.base_offset >= committed.limit:
                    break  # the last stable offset (or high watermark): a read_committed fetch stops here
                if not committed.delivers(b):
                    continue
            if isinstance(item, RawBatch):
                batch: Batch = item.batch
                if not options.wants(batch.base_offset, batch.last_offset):
                    continue
                yield batch
                records, findings = decode_records(batch, item.raw, f.display, options.scan)
                yield from _in_range(records, options)
                yield from findings
            elif isinstance(item, Batch):
                if not options.wants(item.base_offset, item.last_offset):
                    continue
                yield item
            else:
                yield item
                continue
            batches += 1
            if options.max_batches is not None and batches >= options.max_batches:
                break


def _in_range(records: list[Record], options: DumpOptions) -> Iterator[Record]:
    if options.from_offset is None and options.to_offset is None:
        yield from records
        return
    for r in records:
        if options.wants(r.offset, r.offset):
            yield r


__all__ = ["DumpOptions", "Trailing", "dump_file", "dump_paths", "total_bytes"]
