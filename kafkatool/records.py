"""Reading record files (``.log`` segments, KRaft ``.checkpoint`` snapshots): the hot path.

The byte layouts are declared in :mod:`kafkatool.formats.record_batch` and
:mod:`kafkatool.formats.legacy`; this module reads the same layouts with ``struct`` and hand-inlined
varints because it runs per batch and per record over terabytes. ``tests/test_records_formats.py``
proves both agree on every batch and record of the corpus.

Framing follows ``FileLogInputStream.nextBatch``: 12 bytes of offset + size; fewer than 12 bytes
left, or fewer than ``size`` after them, is a partial entry at the end (``Trailing``); a size below
the v0 message overhead (14) is corruption that ends the scan (the framing is lost); otherwise the
magic byte at position 16 says v0/v1 message or v2 batch (any magic from 2 to 127, a positive Java byte,
is read as a v2 batch, as Kafka reads it; :mod:`kafkatool.segment_check` flags a magic other than 2).

Reading is windowed (``readinto`` into one reused buffer): memory stays bounded by the window and
the largest batch, whatever the file size, and any binary file object works (local files, remote
filesystems' streams).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any, BinaryIO, NamedTuple

from . import native
from .errors import DecompressionError, DecompressionLimitExceeded
from .filetypes import is_all_zero
from .findings import finding
from .formats.constants import (  # the layouts' numbers, without importing Construct
    ATTRIBUTES_OFFSET,
    CONTROL_TYPES,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)
from .model import NO_MARKERS, Batch, Finding, Marker, Record, Stretch, Trailing, column_batch, column_batches


class RecordRun(NamedTuple):
    """Whole v2 batches in a row with their records decoded natively into columns (no Python object per
    batch or record): what ``scan(decoded=True)`` yields for them with the native core.

    ``columns`` is a ``kafkatool._native.WindowColumns`` (a piece of a reader window; see ``native/src/columns.rs``
    for its layout and Rust API), ``lo:hi`` the batches of this run in it. Every batch of a run was decoded
    without a finding; compressed and control batches, and any the native decoder declines, come as
    :class:`RawBatch` instead (Python decodes them, with its findings).

    Or one chunk of the records of a batch that declares more than a window decodes (``records.record_chunks`` with
    ``lines``, for ``dump``): ``columns`` a ``kafkatool._native.RecordChunk``, ``lo:hi`` its records. The batch comes
    before its first chunk as a :class:`Batch` (its line written once), so such a run has records and no batch.
    """

    columns: Any
    lo: int
    hi: int

    def batches(self) -> Iterator[Batch]:
        """The run's batches as :class:`Batch` tuples, exactly as ``scan()`` makes them (a chunk: none)."""
        if self.columns.__class__.__name__ == "RecordChunk":
            return iter(())
        return column_batches(self.columns, self.lo, self.hi)

    def items(self) -> Iterator[Batch | Record]:
        """Each batch followed by its records, as the per-record path (``decode_records``) gives them (a chunk: its
        records, as ``record_chunks`` gives them without ``lines``)."""
        if self.columns.__class__.__name__ == "RecordChunk":
            yield from columns_to_records(self.columns.columns())[self.lo:self.hi]
            return
        raw = self.columns.raw
        for i, batch in enumerate(self.batches(), self.lo):
            yield batch
            yield from decode_records(batch, raw(i), "")[0]

    def render(self, fmt: str, values: str, fallback: tuple, write: Callable[[bytes], object],
               context: str = "") -> None:
        """The lines ``dump`` prints for the run (``fmt`` text or jsonl), given to ``write`` as UTF-8 bytes in pieces
        of whole lines; see the native core's ``render`` (of a ``RecordChunk``: a chunk's record lines alone).
        ``context``: what each JSON line ends with before its ``}`` (the file's topic, partition and path)."""
        native.available().render(self.columns, self.lo, self.hi, fmt, values, fallback, write, context=context)


def crc32c(data: bytes | memoryview, value: int = 0) -> int:
    """CRC32C (continuing ``value``): the native core's, else the ``crc32c`` package's, imported at first use (its
    import reads the package's metadata, ~35 ms: more than checking a small partition). Chosen at the first call,
    then called directly; both give the same CRC (``tests/test_native.py``)."""
    core = native.CORE
    if core is not None:
        compute = core.crc32c
    else:
        from crc32c import crc32c as compute

    globals()["crc32c"] = compute  # later calls go straight to the chosen C function
    return compute(data, value)


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_MAX_DECOMPRESSED = 128 * 1024 * 1024
DEFAULT_WINDOW = 4 * 1024 * 1024
DEFAULT_MAX_BATCH = 256 * 1024 * 1024  # far above any broker's message.max.bytes in practice

_LOG_HEADER = struct.Struct(">qi")
_V2_HEADER = struct.Struct(">qiiBIhiqqqhii")  # == formats.record_batch.RecordBatchHeader
_V2_FRAME = struct.Struct(">8xi4xBI")          # its batch_length, magic and crc only (the columnar loop)
_LEGACY_HEADER = struct.Struct(">qiIbb")        # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")

# The scan loop spells these as literals (a global lookup per batch is measurable); tie them to the
# layout's numbers here, and tests/test_records_formats.py ties the structs and field decoding to Construct.
assert (LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, ATTRIBUTES_OFFSET) == (12, 61, 21)

class ScanOptions(NamedTuple):
    """Knobs of a scan. ``max_decompressed`` caps one batch's decompressed size (bomb guard)."""

    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    window: int = DEFAULT_WINDOW
    max_batch: int = DEFAULT_MAX_BATCH  # an entry declaring more is corruption, never allocated


_DEFAULT_OPTIONS = ScanOptions()


class RawBatch(NamedTuple):
    """A batch together with its bytes on disk (whole entry incl. the 12-byte framing)."""

    batch: Batch
    raw: bytes


_tuple_new = tuple.__new__  # builds NamedTuples without the Python-level ``_make`` call


class HeaderRun(NamedTuple):
    """Whole v2 batches in a row, columnar: what ``scan(columnar=True)`` yields instead of :class:`Batch`es.

    ``headers`` holds each batch's first 61 bytes as they are on disk (the layout of
    ``formats.record_batch.RecordBatchHeader``), back to back; a columnar consumer decodes all of them
    at once (``numpy`` with a dtype derived from that Construct, in :mod:`kafkatool.spark.read`).
    """

    positions: array      # array('q'): file position of each batch
    headers: bytes        # len(positions) * 61 bytes
    crc_valid: bytes      # one byte per batch: 1 if its CRC32C matches
    controls: dict[int, bytes]  # index in the run -> whole bytes of each control batch (rare; their type is
    #                             in their one record, and reading it again could cost a request per batch)

    def batches(self) -> Iterator[Batch]:
        """The same batches as :class:`Batch` tuples, exactly as ``scan()`` makes them."""
        for position, fields, ok in zip(self.positions, _V2_HEADER.iter_unpack(self.headers), self.crc_valid,
                                        strict=True):
            yield _v2_batch(position, fields, ok == 1)

    def batch(self, i: int) -> Batch:
        """The ``i``-th batch of the run as a :class:`Batch`."""
        return _v2_batch(self.positions[i], _V2_HEADER.unpack_from(self.headers, i * 61), self.crc_valid[i] == 1)

    @staticmethod
    def join(runs: Sequence[HeaderRun]) -> HeaderRun:
        """One run of several consecutive ones (for consumers that decode in bigger blocks)."""
        if len(runs) == 1:
            return runs[0]
        positions = array("q")
        controls = {}
        for run in runs:
            controls.update((len(positions) + i, raw) for i, raw in run.controls.items())
            positions.extend(run.positions)
        return HeaderRun(positions, b"".join(r.headers for r in runs), b"".join(r.crc_valid for r in runs),
                         controls)


def _v2_batch(position: int, fields: tuple, crc_ok: bool) -> Batch:
    (base_offset, size, epoch, magic, crc, attrs, last_delta, first_ts, max_ts, pid, pepoch, bseq, count) = fields
    return _tuple_new(Batch, (
        position, base_offset, base_offset + last_delta, size + 12, magic, crc, crc_ok, attrs,
        CODEC_BY_ID[attrs & 7], "log_append" if attrs & 0x08 else "create",
        first_ts, max_ts, count, epoch, pid, pepoch, bseq,
        attrs & 0x10 != 0, attrs & 0x20 != 0, first_ts if attrs & 0x40 else None,
    ))


def _take_run(positions: array, headers: bytearray, valid: bytearray, controls: dict[int, bytes]) -> HeaderRun:
    """The run gathered so far, as an immutable HeaderRun; the buffers are emptied in place for the next."""
    run = _tuple_new(HeaderRun, (positions[:], bytes(headers), bytes(valid), dict(controls)))
    del positions[:], headers[:], valid[:]
    controls.clear()
    return run


CODEC_BY_ID = (*CODECS, "unknown(5)", "unknown(6)", "unknown(7)")  # every value of 3 attribute bits


def scan(
    fh: BinaryIO,
    path: str,
    *,
    start: int = 0,
    end: int | None = None,
    with_raw: bool = False,
    columnar: bool = False,
    decoded: bool = False,
    stretches: bool = False,
    resynchronise: bool = False,
    options: ScanOptions = _DEFAULT_OPTIONS,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Batch | RawBatch | HeaderRun | RecordRun | Stretch | Finding | Trailing]:
    """Yield every batch (header fields, CRC checked) of a record file, in file order.

    ``start``/``end`` select the entries that *begin* in ``[start, end)`` (``start`` must be an entry
    boundary), so byte-range splits of one file never share or lose a batch. With ``with_raw`` each
    batch comes as :class:`RawBatch` carrying its bytes, for record decoding. With ``columnar``, runs of
    whole v2 batches come as :class:`HeaderRun`s (their raw headers, positions and CRC verdicts) instead
    of one :class:`Batch` each: same framing, same checks, same findings in the same order, without a
    Python object per batch (bulk consumers decode the headers column-wise). Legacy messages still come
    as :class:`Batch`. With ``decoded`` (and the native core), runs of whole v2 batches whose records the
    native core decodes come as :class:`RecordRun`s, every other batch as :class:`RawBatch` (without the
    native core: every batch as :class:`RawBatch`, as ``with_raw``). With ``stretches`` (and the native core),
    the batches that follow the one before them come as :class:`Stretch` es (the first of a window, and each
    that does not follow, as :class:`Batch`); without the native core, every batch as :class:`Batch`.
    With ``resynchronise``, where the framing is lost (a size below the minimum, above ``max_batch``, a magic
    byte above 127, a size running past the end of the file) the scan goes on at the next whole v2 batch with a
    valid CRC (:func:`resync`), after a ``resynchronised`` finding at that position: what ``LogSegment.recover``
    would drop there is shown, not hidden (a size running past the end with batches after it is then a
    ``corrupt-length``, not a ``torn-tail``). Without it the scan ends there, as the broker's reading does.
    ``progress`` is called with the number of bytes consumed since its last call.
    """
    if (columnar or stretches) and (with_raw or decoded) or (columnar and stretches):
        raise ValueError("scan: columnar and stretches exclude each other, with_raw and decoded")
    with_raw = with_raw or decoded
    file_size = fh.seek(0, 2)  # the new position: no tell
    limit = file_size if end is None else min(end, file_size)
    fh.seek(start)
    # Reused for the whole file (no fresh pages per refill), and never larger than what there is to read: a scan
    # of one small batch (the log writer's append) must not allocate and zero a whole window.
    buf = bytearray(max(LOG_OVERHEAD, min(options.window, file_size - start)))
    wmv = memoryview(buf)
    window = wmv[:0]  # the valid part of buf
    base = start      # file position of buf[0]
    p = 0             # parse position in window
    eof = False
    unpack_log = _LOG_HEADER.unpack_from
    max_batch = options.max_batch
    reported = start
    # The columnar run being gathered; emptied (yielded) before anything else is yielded, and at each
    # refill, so it never holds more than a window's worth of headers.
    run_positions = array("q")
    run_headers = bytearray()
    run_valid = bytearray()
    run_controls: dict[int, bytes] = {}
    core = native.CORE

    while True:
        if len(window) - p >= 61:  # RECORD_BATCH_OVERHEAD: whole v2 batches, walked natively or here
            if core is not None:
                if decoded:
                    p, stop = yield from _native_records(core, window, p, base, limit, max_batch, path,
                                                         options.max_decompressed)
                elif stretches:
                    p, stop = yield from _native_stretches(core, window, p, base, limit, max_batch, path)
                else:
                    p, stop = yield from _native_walk(core, window, p, base, limit, max_batch, with_raw, columnar,
                                                      path, run_positions, run_headers, run_valid, run_controls)
                if stop == 1:
                    break
                if stop == 2:
                    continue
            p, stop = yield from _walk(window, p, base, limit, max_batch, with_raw, columnar, path,
                                       run_positions, run_headers, run_valid, run_controls)
            if stop == 1:
                break
        # General path: legacy messages, damaged framing, a window running dry, the end of the file.
        if run_positions:
            yield _take_run(run_positions, run_headers, run_valid, run_controls)
        avail = len(window) - p
        size = unpack_log(window, p)[1] if avail >= LOG_OVERHEAD else None
        position = base + p
        if position >= limit:
            break
        step, lost, again = yield from _entry(fh, window, p, position, size, eof, file_size, limit, max_batch,
                                              with_raw, options, path, resynchronise)
        if lost is not None:
            yield lost
            if again is None and resynchronise:
                again = _found_again(fh, position, limit)
            if again is None:
                break
            yield finding("resynchronised", path, again,
                          f"whole batches again from byte {again}, {again - position} bytes after the damage at "
                          f"byte {position}; LogSegment.recover truncates the segment at byte {position} and "
                          "drops them")
            del window  # go on from there, as from a start (the window refills)
            base, p, eof, window = again, 0, False, wmv[:0]
            fh.seek(again)
            continue
        if step > 0:
            p += step
            continue
        if step == _END:
            break
        # Refill: move the unparsed tail to the front, read more (grow the buffer for a big batch).
        # Never more than the rest of the file (+1, so that the read finds its end): a torn last entry
        # declaring 2 GiB must not allocate them.
        need = min(LOG_OVERHEAD if size is None else size + LOG_OVERHEAD, file_size - position + 1)
        del window
        if need > len(buf):
            del wmv
            buf.extend(bytes(need - len(buf)))
            wmv = memoryview(buf)
        if p:
            buf[:avail] = buf[p:p + avail]
            base += p
            p = 0
        filled = avail
        while filled < len(buf):
            n = fh.readinto(wmv[filled:])
            if not n:
                eof = True
                break
            filled += n
        window = wmv[:filled]
        if progress is not None and base > reported:
            progress(base - reported)
            reported = base
    if run_positions:
        yield _take_run(run_positions, run_headers, run_valid, run_controls)
    if progress is not None and limit > reported:
        progress(limit - reported)


def _walk(window, p, base, limit, max_batch, with_raw, columnar, path, run_positions, run_headers, run_valid,
          run_controls):
    """The pure twin of :func:`_native_walk`: the whole v2 batches at ``p`` (``FileLogInputStream.nextBatch`` framing
    them, ``DefaultRecordBatch.ensureValid``'s CRC32C checked), yielded as ``scan`` yields them; returns ``(p, stop)``:
    where the next entry begins, and 1 when it begins past ``limit`` (else 0: the general path takes it)."""
    n = len(window)
    unpack = _V2_FRAME.unpack_from if columnar else _V2_HEADER.unpack_from  # columnar: three fields, no Batch built
    while n - p >= 61:
        if columnar:
            size, magic, crc = unpack(window, p)
        else:
            (base_offset, size, epoch, magic, crc, attrs, last_delta, first_ts, max_ts,
             pid, pepoch, bseq, count) = unpack(window, p)
        total = size + 12
        if magic != 2 or not 61 <= total <= n - p or total > max_batch:
            break
        position = base + p
        if position >= limit:
            return p, 1
        crc_ok = crc32c(window[p + 21:p + total]) == crc  # ATTRIBUTES_OFFSET .. end
        if columnar:
            if window[p + 22] & 0x20:  # a control batch (attributes' low byte): keep its bytes for its type
                run_controls[len(run_valid)] = bytes(window[p:p + total])
            run_positions.append(position)
            run_headers += window[p:p + 61]
            run_valid.append(crc_ok)
        else:
            # _v2_batch() spelled inline (a call per batch is measurable); tests hold the two equal.
            batch = _tuple_new(Batch, (
                position, base_offset, base_offset + last_delta, total, 2, crc, crc_ok, attrs,
                CODEC_BY_ID[attrs & 7], "log_append" if attrs & 0x08 else "create",
                first_ts, max_ts, count, epoch, pid, pepoch, bseq,
                attrs & 0x10 != 0, attrs & 0x20 != 0, first_ts if attrs & 0x40 else None,
            ))
            yield _tuple_new(RawBatch, (batch, bytes(window[p:p + total]))) if with_raw else batch
        p += total
        if not crc_ok:
            if columnar:
                yield _take_run(run_positions, run_headers, run_valid, run_controls)
            yield finding("crc-mismatch", path, position, f"stored CRC32C {crc} does not match the batch contents")
    return p, 0


_END = -1  # _entry's step where the scan ends (0: read more first, above 0: the entry's size, to go on after it)


def _entry(fh, window, p, position, size, eof, file_size, limit, max_batch, with_raw, options, path, resynchronise):
    """``FileLogInputStream.nextBatch`` on an entry the v2 walk did not take (a legacy message, a damaged one, one
    running past the window or the end of the file): yields what ``scan`` yields for it and returns ``(step, lost,
    again)``: ``step`` the entry's size to go on after it, 0 to read more first, ``_END`` where the scan ends; or
    ``lost``, the finding where the framing is lost, and ``again``, where whole batches begin after it when that was
    searched for already (``size`` is None when fewer than 12 bytes are in the window)."""
    avail = len(window) - p
    if size is not None and size < RECORD_OVERHEAD_V0:
        rest = file_size - position
        if is_all_zero(fh, position, rest):
            yield finding("zero-filled-tail", path, position,
                          f"{rest} zero bytes from here to the end of the file (preallocated or crash-left tail)")
            return _END, None, None
        return 0, finding("size-below-minimum", path, position,
                          f"entry size {size} is smaller than the minimum record overhead ({RECORD_OVERHEAD_V0}); "
                          "the framing is lost from here"), None
    if size is not None and size + LOG_OVERHEAD > max_batch and size + LOG_OVERHEAD <= file_size - position:
        return 0, finding("batch-too-large", path, position,
                          f"entry declares {size + LOG_OVERHEAD} bytes, above the {max_batch}-byte limit"
                          " (--max-batch-bytes); treated as a corrupt length, the framing is lost from here"), None
    if size is not None and avail >= size + LOG_OVERHEAD:
        total = size + LOG_OVERHEAD
        magic = window[p + MAGIC_OFFSET]
        if magic == 0 or magic == 1:
            raw = bytes(window[p:p + total])
            legacy_batch, chunks, findings = _legacy_entry(raw, position, path, options)
            del chunks  # not read here: a wrapper's decompressed message set let go before the reader's own
            if legacy_batch is not None:
                yield _tuple_new(RawBatch, (legacy_batch, raw)) if with_raw else legacy_batch
            yield from findings
        elif magic > 127:  # a negative Java byte: FileLogInputStream would take it for a legacy message
            return 0, finding("unknown-magic", path, position,
                              f"magic byte {magic} is not 0, 1 or 2; the framing cannot be trusted from here"), None
        elif total < RECORD_BATCH_OVERHEAD:  # whole, but shorter than a v2 header (ensureValid rejects it)
            yield finding("batch-too-small", path, position,
                          f"v2 batch of {total} bytes is smaller than its {RECORD_BATCH_OVERHEAD}-byte header")
        else:
            # Magic 3..127 (2 takes the fast path): FileLogInputStream.nextBatch reads any magic >= 2 as a v2
            # batch, and DefaultRecordBatch.ensureValid checks only its size and its CRC, which begins after the
            # magic byte; so it comes out as a v2 batch carrying its magic (checks flag it: clients misread it).
            fields = _V2_HEADER.unpack_from(window, p)
            crc = fields[4]
            batch = _v2_batch(position, fields, crc32c(window[p + 21:p + total]) == crc)
            yield _tuple_new(RawBatch, (batch, bytes(window[p:p + total]))) if with_raw else batch
            if not batch.crc_valid:
                yield finding("crc-mismatch", path, position, f"stored CRC32C {crc} does not match the batch contents")
        return total, None, None
    if not eof:
        return 0, None, None
    # FileLogInputStream.nextBatch ends the stream at an entry running past the end of the file; with whole batches
    # after it, that was a corrupt length in the middle, not a write torn by a crash
    again = _found_again(fh, position, limit) if resynchronise else None
    if again is None:
        yield Trailing(position, avail)
        declared = f" (the entry declares {size + LOG_OVERHEAD} bytes)" if size is not None else ""
        yield finding("torn-tail", path, position,
                      f"the last {avail} bytes of the file do not form a whole batch{declared}")
        return _END, None, None
    return 0, finding("corrupt-length", path, position,
                      f"entry declares {size + LOG_OVERHEAD} bytes, past the end of the file "
                      f"({file_size - position} left), yet whole batches follow from byte {again}: a corrupt "
                      "length, not a torn tail; the framing is lost from here"), again


def _native_walk(core, window, p, base, limit, max_batch, with_raw, columnar, path,
                 run_positions, run_headers, run_valid, run_controls):
    """Yield what ``scan`` yields for the whole v2 batches the native core finds at ``p``; return
    ``(p, stop)``: where to go on, and why it stopped (0: the general path's entry, 1: past ``limit``,
    2: the last batch had a bad CRC, reported here). The same batches, runs and findings as the Python loop."""
    if columnar:
        p, stop, positions, headers, valid, controls = core.scan_headers(window, (p, base, limit, max_batch))
        if valid:
            run_controls.update((len(run_valid) + i, raw) for i, raw in controls)
            run_positions.frombytes(positions)
            run_headers += headers
            run_valid += valid
        if stop == 2:
            position, crc = run_positions[-1], _V2_HEADER.unpack_from(run_headers, len(run_headers) - 61)[4]
            yield _take_run(run_positions, run_headers, run_valid, run_controls)
    else:
        p, stop, columns, raws = core.scan_batches(window, (p, base, limit, max_batch), with_raw)
        if columns[0]:
            batches = map(_tuple_new, repeat(Batch), zip(*columns, strict=True))
            yield from map(_tuple_new, repeat(RawBatch), zip(batches, raws, strict=True)) if with_raw else batches
        if stop == 2:
            position, crc = columns[0][-1], columns[5][-1]
    if stop == 2:
        yield finding("crc-mismatch", path, position, f"stored CRC32C {crc} does not match the batch contents")
    return p, stop


def _native_stretches(core, window, p, base, limit, max_batch, path):
    """``_native_walk`` for ``scan(stretches=True)``: the batches at ``p`` as :class:`Batch` es and
    :class:`Stretch` es (:func:`stretch_bounds`; the end-transaction markers of :func:`stretch_markers` among them),
    in file order; the same stops and findings."""
    p, stop, columns = core.decode_window_columns(window, (p, base, limit, max_batch), False)
    markers = stretch_markers(columns, 0, len(columns))
    for i, k in stretch_bounds(columns, 0, len(columns), False, markers):
        yield column_batch(columns, i)
        if k > i + 1:
            yield _tuple_new(Stretch, (columns, i + 1, k, markers))
    if stop == 2:
        last = column_batch(columns, len(columns) - 1)
        yield finding("crc-mismatch", path, last.position,
                      f"stored CRC32C {last.crc} does not match the batch contents")
    return p, stop


def stretch_bounds(columns, lo: int, hi: int, deep: bool, markers: Mapping[int, Marker] = NO_MARKERS
                   ) -> Iterator[tuple[int, int]]:
    """Batches ``lo:hi`` of a window's columns as ``(i, k)`` pairs, in order: batch ``i`` on its own, then
    ``i + 1:k`` a :class:`Stretch` (none when ``k == i + 1``) which may hold the control batches in ``markers``."""
    flags = columns.follows(lo, hi, deep, list(markers))
    i = lo
    while i < hi:
        k = flags.find(0, i + 1 - lo)
        k = hi if k < 0 else k + lo
        yield i, k
        i = k


_TXN_MARKERS = ("ABORT", "COMMIT")


def stretch_markers(columns, lo: int, hi: int) -> dict[int, Marker]:
    """The end-transaction markers among batches ``lo:hi`` of a window's columns that a reader may take like any other
    batch, inside a :class:`Stretch`, by index in the window: control batches whose one record the native core read
    (``columns.control_records``: uncompressed, declaring one record, decoded whole, a key of 4 bytes or more) and that
    :func:`decode_records` reads without a finding as an ABORT or a COMMIT (a key version of 0 or more, a value of 6
    bytes or more), in a transactional batch with a producer id (``verify`` reports a marker in any other). Every
    other control batch (damaged, compressed, emptied by the cleaner, KRaft's, of a type Kafka does not define) is
    left for a reader to take on its own and decode here, with its findings."""
    out = {}
    for i, pid, attrs, key_version, key_type, value_version, coordinator_epoch, ts in columns.control_records(lo, hi):
        name = CONTROL_TYPES.get(key_type)
        if name in _TXN_MARKERS and key_version >= 0 and value_version is not None and pid >= 0 and attrs & 0x10:
            out[i] = _tuple_new(Marker, (name, coordinator_epoch, ts))
    return out


def read_marker(batch: Batch, raw: bytes, path: str) -> tuple[Marker | None, Sequence[Finding]]:
    """The end-transaction marker a control batch holds, decoded here (:func:`decode_records`): its first record when
    that is an ABORT or a COMMIT, else None; and the findings of decoding it. The one reading of a marker from its
    bytes for the producer replays (the loader's and the audit's); :func:`stretch_markers` reads alike."""
    r, findings = None, []  # its records a chunk at a time: a batch declaring millions is not held whole
    for chunk in record_chunks(batch, raw, path):
        if chunk.__class__ is Finding:
            findings.append(chunk)
        elif r is None and chunk:
            r = chunk[0]
    if r is None or r.control_type not in _TXN_MARKERS:
        return None, findings
    return _tuple_new(Marker, (r.control_type, r.coordinator_epoch, r.timestamp)), findings


# Bytes of batches the native core decodes into one set of columns (one call, a RecordRun's columns): small enough
# that the columns stay in the caches and their memory is reused from call to call. A whole window's columns (three
# times its bytes for small batches) were fresh pages every time, and faulting them in cost more than the decoding.
DECODE_PIECE = 64 * 1024


def _native_records(core, window, p, base, limit, max_batch, path, max_decompressed):
    """``_native_walk`` for ``scan(decoded=True)``: the batches at ``p`` as :class:`RecordRun`s (one or more per
    ``DECODE_PIECE`` bytes; compressed ones decompressed natively, each bounded by ``max_decompressed``), each batch
    the native core did not decode as a :class:`RawBatch`, in file order; the same stops and findings."""
    stop = 3  # decode_window_columns's stop at the end of a piece: the next piece begins there
    while stop == 3:
        p, stop, columns = core.decode_window_columns(window, (p, base, limit, max_batch), True, max_decompressed,
                                                      DECODE_PIECE)
        n = len(columns)
        lo = 0
        for i in columns.pending():
            if i > lo:
                yield _tuple_new(RecordRun, (columns, lo, i))
            yield _tuple_new(RawBatch, (column_batch(columns, i), columns.raw(i)))
            lo = i + 1
        if lo < n:
            yield _tuple_new(RecordRun, (columns, lo, n))
    if stop == 2:
        last = column_batch(columns, n - 1)
        yield finding("crc-mismatch", path, last.position,
                      f"stored CRC32C {last.crc} does not match the batch contents")
    return p, stop


def _found_again(fh: BinaryIO, position: int, limit: int) -> int | None:
    """Where the first whole v2 batch with a valid CRC begins after the damage at ``position`` (before ``limit``):
    :func:`resync`, the one search for it."""
    found = next(resync(fh, position + 1, limit), None)
    return None if found is None else found[0]


# --------------------------------------------------------------------------------------------
# Resynchronising: whole v2 batches found after damage, and at a given position


def resync(fh: BinaryIO, start: int, end: int | None = None, *, window: int = DEFAULT_WINDOW
           ) -> Iterator[tuple[int, int]]:
    """``(position, size)`` of every whole v2 batch with a valid CRC that begins in ``[start, end)``, in file order,
    found by resynchronising: the search goes on byte by byte where the framing is lost, and after each batch found.

    ``scan`` follows the framing as ``FileLogInputStream.nextBatch`` does and stops where it is lost, as
    ``LogSegment.recover`` truncates there; this is how ``repair --salvage`` finds what lies after such a cut, and
    how the Spark source checks a cut point (``end = start + 1``: a batch exactly there). A candidate passes
    ``DefaultRecordBatch``'s own checks: magic 2, a size of at least ``RECORD_BATCH_OVERHEAD`` that fits in the
    file, and its CRC32C (``ensureValid``). Read a window at a time (a batch running past its window is checked in
    1 MiB pieces), so memory stays bounded whatever the file or a declared size; the native core searches a window
    when it is there (``frame::resync``), :func:`_resync_window` otherwise: the same positions.
    """
    file_size = fh.seek(0, 2)
    stop = file_size if end is None else min(end, file_size)
    core = native.CORE
    find = _resync_window if core is None else core.resync
    pos = start
    while pos < stop and pos + RECORD_BATCH_OVERHEAD <= file_size:
        fh.seek(pos)  # the candidates in [pos, stop) and their headers, at most a window
        buf = fh.read(min(max(window, RECORD_BATCH_OVERHEAD), file_size - pos, stop - pos + RECORD_BATCH_OVERHEAD - 1))
        if len(buf) < RECORD_BATCH_OVERHEAD:  # the file shrank under us
            return
        room = file_size - pos - len(buf)
        c = 0
        while (hit := find(buf, c, stop - pos, room)) is not None:
            c, total, whole = hit
            if whole or _crc_matches(fh, pos + c, total):
                yield pos + c, total
                c += total
            else:
                c += 1
        pos += max(c, len(buf) - RECORD_BATCH_OVERHEAD + 1)  # the next window's first candidate


def _resync_window(buf: bytes, start: int, until: int, room: int) -> tuple[int, int, bool] | None:
    """The pure twin of the native ``resync`` (``native/src/frame.rs``): the first offset ``c`` in ``[start, until)``
    of ``buf`` (with a whole header in it) where a v2 batch's header checks pass, ``(c, size, whole)``; its CRC
    checked when the batch lies whole in ``buf`` (``whole``), else left to the caller (``room``: the file's bytes
    after ``buf``, where it may end)."""
    n = len(buf)
    end = min(until, n - RECORD_BATCH_OVERHEAD + 1)
    c = start
    while c < end:
        magic_at = buf.find(b"\x02", c + MAGIC_OFFSET, end + MAGIC_OFFSET)
        if magic_at < 0:
            return None
        c = magic_at - MAGIC_OFFSET
        size, _magic, crc = _V2_FRAME.unpack_from(buf, c)
        total = size + LOG_OVERHEAD
        if RECORD_BATCH_OVERHEAD <= total <= n - c + room:
            if c + total > n:
                return c, total, False
            if crc32c(memoryview(buf)[c + ATTRIBUTES_OFFSET:c + total]) == crc:
                return c, total, True
        c += 1
    return None


def _crc_matches(fh: BinaryIO, position: int, total: int) -> bool:
    """Whether the stored CRC32C of the ``total``-byte v2 batch at ``position`` matches, read in 1 MiB pieces."""
    fh.seek(position + MAGIC_OFFSET + 1)
    stored = fh.read(4)
    crc, left = 0, total - ATTRIBUTES_OFFSET
    while left > 0:
        piece = fh.read(min(left, 1 << 20))
        if not piece:
            return False
        crc = crc32c(piece, crc)
        left -= len(piece)
    return len(stored) == 4 and crc == int.from_bytes(stored, "big")


# --------------------------------------------------------------------------------------------
# v2 records


def _varint_slow(data: bytes, pos: int, max_shift: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > max_shift:
            raise ValueError("varint is too long")


def decompress_records(batch: Batch, raw: bytes, options: ScanOptions = _DEFAULT_OPTIONS) -> bytes:
    """The records section of a v2 batch, decompressed. Raises DecompressionError."""
    codec = batch.attributes & 7
    if codec == 0:
        return raw[RECORD_BATCH_OVERHEAD:]
    return decompress_payload(codec, raw, RECORD_BATCH_OVERHEAD, options.max_decompressed)


def decompress_payload(codec: int, buf: bytes | memoryview, start: int, limit: int, *,
                       legacy_lz4: bool = False, native_first: bool = True) -> bytes:
    """``buf[start:]`` decompressed with ``codec`` (1..4) within ``limit`` bytes (:func:`codecs.decompress`).

    The native core decompresses in one bounded pass when it can; whatever it refuses (damage, a bomb,
    shapes Kafka never writes) the pure reader decides, so errors and their wording are always its.
    ``native_first=False``: the native core already refused this payload.
    """
    if codec >= len(CODECS):
        raise DecompressionError(f"unknown compression codec id {codec}")
    core = native.CORE
    if core is not None and native_first:
        out = core.decompress(codec, buf, start, limit, legacy_lz4)
        if out is not None:
            return out
    # Here, not at the top: codecs brings zstandard, lz4 and cramjam, for compressed batches read in Python only.
    from .codecs import decompress

    return decompress(codec, memoryview(buf)[start:], limit=limit, legacy_lz4_checksum=legacy_lz4)


_NO_FINDINGS: tuple[Finding, ...] = ()
_ZIGZAG1 = tuple((b >> 1) ^ -(b & 1) for b in range(128))  # value of every one-byte zig-zag varint


def decode_records(
    batch: Batch, raw: bytes, path: str, options: ScanOptions = _DEFAULT_OPTIONS, columns: bool = False
) -> tuple[list[Record] | tuple, Sequence[Finding]]:
    """Every record of a batch (decompressed), with absolute offsets, or findings where it fails. With ``columns``,
    the records the native core decodes come as its columns ``(offsets, timestamps, keys, values, headers)`` (a
    tuple, no ``Record`` per record: for readers that take a batch's records in bulk), the others as a list.

    One function on purpose: for 1-record batches the per-call overhead is most of the cost.
    """
    if batch[4] == 2 and not batch[7] & 7:  # v2 and uncompressed (magic, attributes): decode in place
        data = raw
        pos = RECORD_BATCH_OVERHEAD
    elif batch[4] < 2:
        _batch, chunks, findings = _legacy_entry(raw, batch.position, path, options)
        legacy_records = next(chunks)
        for chunk in chunks:  # a wrapper of more than RECORD_CHUNK inner messages (record_chunks takes them so)
            legacy_records += chunk
        return legacy_records, findings
    else:
        core = native.CORE
        data = None
        if core is not None and not batch[18]:  # native: decompress and decode in one call, no copy between
            data = core.decode_v2_compressed(raw, batch[7] & 7, options.max_decompressed, batch[12], batch[1],
                                             batch[10], batch[11] if batch[7] & 0x08 else None)
            if data.__class__ is tuple:
                return data if columns else columns_to_records(data), _NO_FINDINGS
        try:
            if data is None:  # the pure reader decides what the native core refused
                data = decompress_payload(batch[7] & 7, raw, RECORD_BATCH_OVERHEAD, options.max_decompressed,
                                          native_first=core is None or bool(batch[18]))
        except DecompressionLimitExceeded as exc:
            return [], [finding("decompression-limit", path, batch.position, str(exc))]
        except DecompressionError as exc:
            return [], [finding("decompression-failed", path, batch.position,
                                f"{batch.compression} payload cannot be decompressed: {exc}")]
        pos = 0
    core = native.CORE
    if core is not None and not batch[18] and pos and data.__class__ is bytes:  # native: all records or None
        # (pos 0: decompressed records the native core already handed over, or that it refused)
        chunk = core.decode_v2_chunk(data, pos, batch[12], batch[1], batch[10], batch[11] if batch[7] & 0x08 else None,
                                     True)
        if chunk is not None:
            return chunk[0] if columns else columns_to_records(chunk[0]), _NO_FINDINGS
    records, pos, bad = _v2_records(batch, data, pos, batch[12], 0, path)
    if bad is not None:
        return records, [bad]
    if pos != len(data):
        return records, [_trailing_bytes(batch, path, len(data) - pos)]
    return records, _NO_FINDINGS


# Records decoded at a time from a batch that declares more (lists of :class:`Record`, or columns): what a reader
# holds of a batch's records stays bounded whatever a few bytes expand to (native: ``columns.rs``, PIECE_RECORDS).
RECORD_CHUNK = 1 << 16


def record_chunks(batch: Batch, raw: bytes, path: str, options: ScanOptions = _DEFAULT_OPTIONS, *, times: bool = False,
                  lines: bool = False) -> Iterator[list[Record] | tuple[list[int], list[int]] | Any | Finding]:
    """:func:`decode_records` a chunk at a time: the batch's records in lists of at most :data:`RECORD_CHUNK`, in
    order (with ``times``, each list as its ``(offsets, timestamps)``; with ``lines``, each chunk of a big batch the
    native core decodes as a ``_native.RecordChunk``, which renders dump's lines), then its findings; the same
    records and findings. The decompressed records section is held once (bounded by ``max_decompressed``), never all the
    records it holds: an 11 KB batch declaring 18 M minimal records costs the bytes it expands to, not 18 M objects.
    """
    count = batch[12]
    if batch[4] < 2:  # v0/v1: a compressed wrapper's inner messages, a chunk at a time
        _batch, chunks, legacy_findings = _legacy_entry(raw, batch.position, path, options)
        for records in chunks:
            yield _times(records) if times else records
        yield from legacy_findings
        return
    if count <= RECORD_CHUNK or batch[4] != 2:
        records, findings = decode_records(batch, raw, path, options)
        yield _times(records) if times else records
        yield from findings
        return
    core = native.CORE
    if batch[7] & 7:
        data = None
        if core is not None:  # native: decompressed into a buffer of its own, not copied into bytes
            data = core.decompress_buffer(batch[7] & 7, raw, RECORD_BATCH_OVERHEAD, options.max_decompressed)
        try:
            if data is None:  # the pure reader decides what the native core refused
                data = decompress_payload(batch[7] & 7, raw, RECORD_BATCH_OVERHEAD, options.max_decompressed,
                                          native_first=False)
        except DecompressionLimitExceeded as exc:
            yield finding("decompression-limit", path, batch.position, str(exc))
            return
        except DecompressionError as exc:
            yield finding("decompression-failed", path, batch.position,
                          f"{batch.compression} payload cannot be decompressed: {exc}")
            return
        pos = 0
    else:
        data, pos = raw, RECORD_BATCH_OVERHEAD
    if batch[18]:  # control records: the pure reader's (it reads their keys)
        core = None
    log_append_time = batch[11] if batch[7] & 0x08 else None
    pure = None  # data as bytes for the pure reader, made when it is first needed
    done = 0
    while done < count:
        k = min(RECORD_CHUNK, count - done)
        chunk = None
        if core is not None:
            chunk = core.decode_v2_chunk(data, pos, k, batch[1], batch[10], log_append_time, done + k == count, times,
                                         lines)
        if chunk is not None:
            columns, pos = chunk
            yield columns if times or lines else columns_to_records(columns)
        else:  # the pure reader decides (and words) what the native core gave up on
            if pure is None:
                if data.__class__ is bytes:
                    pure = data
                else:  # decompressed again by the pure reader, the native buffer let go first: held once, not twice
                    data = None
                    try:
                        pure = decompress_payload(batch[7] & 7, raw, RECORD_BATCH_OVERHEAD, options.max_decompressed,
                                                  native_first=False)
                    except DecompressionError as exc:  # the native core's codecs read only what the pure ones read
                        yield finding("decompression-failed", path, batch.position,
                                      f"{batch.compression} payload cannot be decompressed: {exc}")
                        return
                    data = pure
            pos = yield from v2_record_chunks(batch, pure, pos, done, path, upto=done + k, times=times)
            if pos is None:
                return
        done += k
    if pos != len(data):
        yield _trailing_bytes(batch, path, len(data) - pos)


def v2_record_chunks(batch: Batch, data: bytes, pos: int, done: int, path: str, *, upto: int | None = None,
                     times: bool = False) -> Generator[list[Record] | tuple[list[int], list[int]] | Finding, None,
                                                       int | None]:
    """The pure reader of a v2 batch's records from its ``done``-th to its ``upto``-th (None: its last), at
    ``data[pos:]`` (its records section, decompressed), in lists of at most :data:`RECORD_CHUNK` (with ``times``, as
    their ``(offsets, timestamps)``); then the finding where one is invalid (the records before it kept), and having
    read the last, where bytes remain after it. Returns where the records end (None after a finding). The Python
    reader taking over where the native core gives up, here (:func:`record_chunks`) and in the Spark source's
    Arrow builder."""
    last = batch[12] if upto is None else upto
    while done < last:
        k = min(RECORD_CHUNK, last - done)
        records, pos, bad = _v2_records(batch, data, pos, k, done, path)
        yield _times(records) if times else records
        if bad is not None:
            yield bad
            return None
        done += k
    if upto is None and pos != len(data):
        yield _trailing_bytes(batch, path, len(data) - pos)
    return pos


def _times(records: list[Record]) -> tuple[list[int], list[int]]:
    return [r[0] for r in records], [r[1] for r in records]


def _trailing_bytes(batch: Batch, path: str, left: int) -> Finding:
    return finding("records-trailing-bytes", path, batch.position,
                   f"{left} bytes remain after the declared {batch.record_count} records")


def _v2_records(batch: Batch, data, pos: int, count: int, done: int, path: str
                ) -> tuple[list[Record], int, Finding | None]:
    """The pure reader of v2 records: the next ``count`` records of a batch from ``data[pos:]`` (``done`` of them
    read before), where they end, and the finding where one of them is invalid (the records before it kept)."""
    records: list[Record] = []
    append = records.append
    new = _tuple_new
    record_type = Record
    zz = _ZIGZAG1
    (_position, base_offset, _last, _size, _magic, _crc, _ok, attributes, _codec, _ts_type, base_ts, max_ts,
     _count, _epoch, _pid, _pepoch, _seq, _txn, control, _horizon) = batch  # one unpack: cheaper than 6 lookups
    log_append_ts = max_ts if attributes & 0x08 else None
    n = len(data)
    # Each varint's one- and two-byte cases are written inline (``_varint_slow`` for the rest), not called: this loop
    # is the pure reader's hot path, and the same loop calling a helper that holds the fast cases measured 30-45%
    # slower per record, and again 8-30% (1-record, 100 x 100 B and 16 x 1 KiB batches, best of 15 runs, 2 cores).
    try:
        for _ in range(count):
            # length
            b = data[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif data[pos + 1] < 0x80:  # two bytes: common for lengths and time deltas
                v = (b & 0x7F) | (data[pos + 1] << 7)
                length = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                length, pos = _varint_slow(data, pos, 28)
            end = pos + length
            if length < 0 or end > n:
                raise ValueError(f"record length {length} runs past the end of the records section")
            pos += 1  # attributes (unused)
            b = data[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            elif data[pos + 1] < 0x80:  # two bytes: common for lengths and time deltas
                v = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                ts_delta, pos = _varint_slow(data, pos, 63)
            b = data[pos]
            if b < 0x80:
                off_delta = zz[b]
                pos += 1
            else:
                off_delta, pos = _varint_slow(data, pos, 28)
            b = data[pos]
            if b < 0x80:
                klen = zz[b]
                pos += 1
            else:
                klen, pos = _varint_slow(data, pos, 28)
            if klen >= 0:
                key = data[pos:pos + klen]
                pos += klen
            else:
                key = None
            b = data[pos]
            if b < 0x80:
                vlen = zz[b]
                pos += 1
            elif data[pos + 1] < 0x80:  # two bytes: common for lengths and time deltas
                v = (b & 0x7F) | (data[pos + 1] << 7)
                vlen = (v >> 1) ^ -(v & 1)
                pos += 2
            else:
                vlen, pos = _varint_slow(data, pos, 28)
            if vlen >= 0:
                value = data[pos:pos + vlen]
                pos += vlen
            else:
                value = None
            b = data[pos]
            if b < 0x80:
                hcount = zz[b]
                pos += 1
            else:
                hcount, pos = _varint_slow(data, pos, 28)
            if hcount:
                if hcount < 0:
                    raise ValueError(f"invalid negative header count {hcount}")
                headers = []
                for _h in range(hcount):
                    hklen, pos = _varint_slow(data, pos, 28)
                    if hklen < 0:
                        raise ValueError("invalid negative header key size")
                    hkey = data[pos:pos + hklen].decode("utf-8", "replace")
                    pos += hklen
                    hvlen, pos = _varint_slow(data, pos, 28)
                    if hvlen >= 0:
                        hval = data[pos:pos + hvlen]
                        pos += hvlen
                    else:
                        hval = None
                    headers.append((hkey, hval))
                headers = tuple(headers)
            else:
                headers = ()
            if pos != end:  # also catches a key/value/header running past ``end`` (pos moved beyond it)
                raise ValueError(f"record declares {length} bytes but its fields take {pos - end + length}")
            offset = base_offset + off_delta
            ts = log_append_ts if log_append_ts is not None else base_ts + ts_delta
            if control:
                append(control_record(offset, ts, key, value, headers))
            else:
                append(new(record_type, (offset, ts, key, value, headers, None, None)))
    except (IndexError, ValueError) as exc:
        reason = "record runs past the end of the records section" if isinstance(exc, IndexError) else str(exc)
        return records, pos, finding("record-invalid", path, batch.position,
                                     f"record {done + len(records)} of batch at offset {base_offset}: {reason}")
    return records, pos, None


def columns_to_records(columns: tuple) -> list[Record]:
    """The ``Record`` tuples of the native core's columns ``(offsets, timestamps, keys, values, headers)``."""
    offsets, timestamps, keys, values, headers = columns
    return list(map(_tuple_new, repeat(Record), zip(offsets, timestamps, keys, values, headers,
                                                     repeat(None), repeat(None))))


def control_record(offset: int, ts: int, key, value, headers) -> Record:
    if key is None or len(key) < 4:
        raise ValueError(f"control record key has {0 if key is None else len(key)} bytes, needs at least 4")
    version, ctype = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ValueError(f"invalid control record key version {version}")
    name = CONTROL_TYPES.get(ctype, "UNKNOWN")
    coordinator_epoch = None
    if name in ("ABORT", "COMMIT"):
        if value is None or len(value) < 6:
            raise ValueError("end-transaction marker value is shorter than 6 bytes")
        _v, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    return Record(offset, ts, key, value, headers, name, coordinator_epoch)


# --------------------------------------------------------------------------------------------
# v0 / v1 messages


def _parse_legacy_message(raw: bytes | memoryview, pos: int, size: int) -> tuple:
    """(crc, magic, attributes, timestamp, key, value, crc_valid) of the message at ``pos``."""
    end = pos + size
    crc, magic, attrs = struct.unpack_from(">Ibb", raw, pos)
    q = pos + 6
    if magic == 1:
        if size < RECORD_OVERHEAD_V1:
            raise ValueError(f"v1 message size {size} is below the minimum {RECORD_OVERHEAD_V1}")
        (timestamp,) = _INT64.unpack_from(raw, q)
        q += 8
    elif magic == 0:
        timestamp = -1
    else:
        raise ValueError(f"unknown magic {magic} in a legacy message set")
    (klen,) = _INT32.unpack_from(raw, q)
    q += 4
    key = None
    if klen >= 0:
        if q + klen > end:
            raise ValueError(f"key length {klen} runs past the message")
        key = bytes(raw[q:q + klen])
        q += klen
    elif klen != -1:
        raise ValueError(f"invalid key length {klen}")
    if q + 4 > end:
        raise ValueError("message ends before its value length")
    (vlen,) = _INT32.unpack_from(raw, q)
    q += 4
    value = None
    if vlen >= 0:
        if q + vlen > end:
            raise ValueError(f"value length {vlen} runs past the message")
        value = bytes(raw[q:q + vlen])
        q += vlen
    elif vlen != -1:
        raise ValueError(f"invalid value length {vlen}")
    if q != end:
        raise ValueError(f"message declares {size} bytes but its fields take {q - pos}")
    crc_valid = (zlib.crc32(raw[pos + 4:end]) & 0xFFFFFFFF) == crc
    return crc, magic, attrs, timestamp, key, value, crc_valid


def _legacy_entry(
    raw: bytes, position: int, path: str, options: ScanOptions
) -> tuple[Batch | None, Iterator[list[Record]], list[Finding]]:
    """Decode one top-level v0/v1 log entry (a message or a compressed wrapper): its batch, its records in lists of
    at most :data:`RECORD_CHUNK` (made as they are taken: ``scan`` takes none) and its findings."""
    findings: list[Finding] = []
    offset, size = _LOG_HEADER.unpack_from(raw, 0)
    try:
        crc, magic, attrs, timestamp, key, value, crc_valid = _parse_legacy_message(raw, 12, size)
    except (ValueError, struct.error) as exc:
        return None, iter(([],)), [finding("message-invalid", path, position, f"v0/v1 message: {exc}")]
    if not crc_valid:
        findings.append(finding("crc-mismatch", path, position,
                                f"stored CRC32 {crc} does not match the message contents"))
    codec = attrs & 7
    ts_type = "none" if magic == 0 else ("log_append" if attrs & 0x08 else "create")
    if codec == 0:
        count, base_offset, first_ts = 1, offset, timestamp
        chunks: Iterator[list[Record]] = iter(([Record(offset, timestamp, key, value, ())],))
    else:
        count, base_offset, first_ts, chunks = _legacy_inner(offset, magic, ts_type, timestamp, codec, value,
                                                             position, path, options, findings)
        if not count:
            base_offset, first_ts = offset, timestamp
    batch = Batch(position, base_offset, offset, len(raw), magic, crc, crc_valid, attrs,
                  CODEC_BY_ID[codec], ts_type, first_ts, timestamp, count)
    return batch, chunks, findings


def _legacy_inner(
    wrapper_offset: int, wrapper_magic: int, ts_type: str, wrapper_ts: int, codec: int,
    value: bytes | None, position: int, path: str, options: ScanOptions, findings: list[Finding],
) -> tuple[int, int, int, Iterator[list[Record]]]:
    """(count, first offset, first timestamp, records a chunk at a time) of a compressed wrapper's inner messages,
    its findings added to ``findings``. One inner message that cannot be read loses them all (none is returned).

    Read twice when there are more than :data:`RECORD_CHUNK`: once whole to check every message and find the last
    inner offset (v1 inner offsets are relative to it: ``AbstractLegacyRecordBatch.DeepRecordsIterator``), keeping
    only the first chunk; then the rest a chunk at a time as they are taken. The decompressed message set is
    bounded by ``max_decompressed``; the millions of tiny messages it may hold are never all held as objects."""
    if value is None:
        findings.append(finding("message-invalid", path, position, "compressed wrapper has a null value"))
        return 0, 0, 0, iter(([],))
    if codec >= len(CODECS):
        findings.append(finding("unknown-compression", path, position, f"unknown codec id {codec}"))
        return 0, 0, 0, iter(([],))
    data = None
    core = native.CORE
    if core is not None and wrapper_magic:  # native: into a buffer of its own, not copied into bytes (v0's lz4
        buf = core.decompress_buffer(codec, value, 0, options.max_decompressed)  # framing is decompress's only)
        if buf is not None:
            data = memoryview(buf)
    try:
        if data is None:  # the pure reader decides what the native core refused
            data = decompress_payload(codec, value, 0, options.max_decompressed, legacy_lz4=wrapper_magic == 0,
                                      native_first=core is None or not wrapper_magic)
    except DecompressionLimitExceeded as exc:
        findings.append(finding("decompression-limit", path, position, str(exc)))
        return 0, 0, 0, iter(([],))
    except DecompressionError as exc:
        findings.append(finding("decompression-failed", path, position,
                                f"{CODECS[codec]} wrapper cannot be decompressed: {exc}"))
        return 0, 0, 0, iter(([],))
    head: list[tuple] = []  # the first RECORD_CHUNK inner messages; the rest counted only
    count = 0
    rest = 0  # where the messages after the head start
    last_inner = 0
    q = 0
    n = len(data)
    while q + LOG_OVERHEAD <= n:
        inner_offset, inner_size = _LOG_HEADER.unpack_from(data, q)
        if inner_size < RECORD_OVERHEAD_V0 or q + LOG_OVERHEAD + inner_size > n:
            break
        try:
            _crc, magic, attrs, ts, key, val, ok = _parse_legacy_message(data, q + LOG_OVERHEAD, inner_size)
        except (ValueError, struct.error) as exc:
            findings.append(finding("message-invalid", path, position,
                                    f"inner message at {q} of the wrapper: {exc}"))
            return 0, 0, 0, iter(([],))
        if attrs & 7:
            findings.append(finding("nested-compression", path, position,
                                    "a compressed wrapper holds another compressed message"))
            return 0, 0, 0, iter(([],))
        if not ok:
            findings.append(finding("crc-mismatch", path, position,
                                    f"inner message at {q} of the wrapper has a bad CRC32"))
        if count < RECORD_CHUNK:
            head.append((inner_offset, magic, ts, key, val))
        count += 1
        last_inner = inner_offset
        q += LOG_OVERHEAD + inner_size
        if count == RECORD_CHUNK:
            rest = q
    if q != n:
        findings.append(finding("wrapper-trailing-bytes", path, position,
                                f"{n - q} bytes after the last whole inner message of the wrapper"))
    if not count:
        return 0, 0, 0, iter(([],))
    delta = wrapper_offset - last_inner if wrapper_magic >= 1 else 0  # v0: inner offsets are absolute
    append_ts = wrapper_ts if ts_type == "log_append" else None  # v1 inner messages take the wrapper's time
    first = _legacy_records(head, delta, append_ts)
    chunks = iter((first,)) if count <= RECORD_CHUNK else _legacy_chunks(first, data, rest, q, delta, append_ts)
    return count, first[0].offset, first[0].timestamp, chunks


def _legacy_records(inner: list[tuple], delta: int, append_ts: int | None) -> list[Record]:
    records = []
    for inner_offset, magic, ts, key, val in inner:
        records.append(Record(inner_offset + delta, append_ts if magic >= 1 and append_ts is not None else ts,
                              key, val, ()))
    return records


def _legacy_chunks(first: list[Record], data: bytes | memoryview, q: int, end: int, delta: int, append_ts: int | None
                   ) -> Iterator[list[Record]]:
    """The first chunk, then the inner messages from ``q`` to ``end`` (all read once already) a chunk at a time."""
    yield first
    del first
    inner: list[tuple] = []
    while q < end:
        inner_offset, inner_size = _LOG_HEADER.unpack_from(data, q)
        _crc, magic, _attrs, ts, key, val, _ok = _parse_legacy_message(data, q + LOG_OVERHEAD, inner_size)
        inner.append((inner_offset, magic, ts, key, val))
        q += LOG_OVERHEAD + inner_size
        if len(inner) == RECORD_CHUNK:
            yield _legacy_records(inner, delta, append_ts)
            inner = []
    if inner:
        yield _legacy_records(inner, delta, append_ts)
