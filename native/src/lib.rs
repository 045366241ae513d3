//! `kafkatool._native`: the byte level of kafkatool's record reader, for CPython (PyO3, abi3).
//!
//! Bytes here, meaning in Python. Over a buffer the caller owns (the reader's window, a batch's bytes, a
//! decompressed records section), the module gives Python:
//!
//! - [`scan_batches`]: the whole v2 batches of a window as columns, one per field of
//!   `kafkatool.model.Batch` (CRC32C checked), optionally with each batch's bytes;
//! - [`scan_headers`]: the same walk for the columnar scan (`HeaderRun`): positions, raw 61-byte
//!   headers, CRC verdicts and the bytes of control batches;
//! - [`decode_v2_chunk`]: the records of a v2 records section as columns, or `None`: all of them, or the next so
//!   many (a batch's records a bounded number at a time), as Python columns or as a `RecordChunk` that renders
//!   dump's record lines;
//! - `decompress`, `decode_v2_compressed` ([`codecs`]): bounded one-pass decompression of a payload,
//!   and of a compressed v2 batch straight into those columns;
//! - `decode_window_columns` ([`columns`]): many batches and their records (decompressed here, bounded)
//!   in one set of columns, `WindowColumns`, which also answers the per-batch questions of the checks, the
//!   loader's replay and the producers audit over a run of batches (`follows`, `advance`, `producer_spans`,
//!   `producer_events`, `control_records`, ...) and renders dump's lines ([`render`]);
//! - `RecordsBuilder` ([`arrow`]): the Spark records level's Arrow buffers, handed to pyarrow without a copy;
//! - `RecordSearch` ([`search`]): `dump`'s key/value/header search (the `regex` crate), which
//!   `WindowColumns.search` applies to a window's records: only the matches become Python objects.
//!
//! Each stops where the bytes stop being the common case and hands over to the Python reader, which
//! owns every check and finding (`kafkatool/records.py`); the Python reader is the reference and
//! `tests/test_native.py` holds the two identical. Untrusted bytes never panic here (no unchecked
//! indexing, every length bounded by the bytes present); should a panic happen anyway, it reaches
//! Python as `NativePanic`, a `RuntimeError`, which the CLI turns into its internal-error exit (70).
//!
//! These docs are for the crate's maintainers, private items included: `cargo doc --document-private-items`.

// Untrusted bytes: no indexing that can panic, no unwrap/expect outside the tests.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used, clippy::panic))]
// The docs link the private items they describe (read them with --document-private-items).
#![allow(rustdoc::private_intra_doc_links)]

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

pub mod arrow;
pub mod codecs;
pub mod columns;
pub mod frame;
pub mod records;
pub mod render;
pub mod search;

create_exception!(
    _native,
    NativePanic,
    PyRuntimeError,
    "A panic inside the native core: a bug in kafkatool, never caused by the input."
);

/// Run `f`, turning a panic into `NativePanic` (PyO3's own `PanicException` is a `BaseException`,
/// which would escape the CLI's internal-error handler).
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            Err(NativePanic::new_err(format!("the native core panicked: {what}")))
        }
    }
}

/// Call `f` with the bytes of any C-contiguous buffer (bytes, bytearray, memoryview, mmap).
fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    let buf = PyBuffer::<u8>::get(obj)?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err("the native core needs a contiguous byte buffer"));
    }
    let len = buf.len_bytes();
    if len == 0 {
        return f(&[]);
    }
    // SAFETY: the buffer is C-contiguous, `len` bytes long and exported (so neither freed nor resized)
    // while `buf` lives, which outlasts `f`, also where `f` releases the GIL (`Python::detach`) around pure byte
    // work: the buffers handed here are the calling thread's own (a reader's window, a batch), which no other
    // thread writes, and nothing here writes to them.
    let bytes = unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, len) };
    f(bytes)
}

const CODECS: [&str; 8] = ["none", "gzip", "snappy", "lz4", "zstd", "unknown(5)", "unknown(6)", "unknown(7)"];

/// Where a walk over a window's v2 batches starts and what bounds it, as Python passes it to each walk
/// ([`scan_batches`], [`scan_headers`], `decode_window_columns`) in one tuple `(p, base, limit, max_batch)`: the
/// position in the window, the window's file position, the file position no batch may begin at or after, and the
/// largest batch size taken ([`frame::scan_v2`]'s arguments).
#[derive(FromPyObject, Clone, Copy)]
pub(crate) struct BatchWalk(pub usize, pub i64, pub i64, pub i64);

/// Whole v2 batches of `window` from the walk's `p` on, as 20 columns in the order of `Batch`'s fields.
///
/// Returns `(p, stop, columns, raws)`: where the caller goes on, why the walk stopped (0: the entry at
/// `p` is for the general path, 1: it begins at or after `limit`, 2: the last batch returned has a bad
/// CRC), the columns, and with `with_raw` a list of each batch's bytes (else `None`).
#[pyfunction]
#[pyo3(signature = (window, walk, with_raw))]
fn scan_batches<'py>(
    py: Python<'py>,
    window: &Bound<'py, PyAny>,
    walk: BatchWalk,
    with_raw: bool,
) -> PyResult<(usize, u8, Bound<'py, PyTuple>, Bound<'py, PyAny>)> {
    let BatchWalk(p, base, limit, max_batch) = walk;
    guarded(|| {
        with_bytes(window, |buf| {
            let mut entries = Vec::new();
            let mut raws = Vec::new();
            let (next, stop) = frame::scan_v2(buf, p, base, limit, max_batch, |e, bytes| {
                entries.push((e.position, e.total, e.header, e.crc_valid));
                if with_raw {
                    raws.push(PyBytes::new(py, bytes));
                }
            });
            let lists = batch_columns(py, entries)?;
            let none = py.None().into_bound(py);
            let raws = if with_raw { PyList::new(py, raws)?.into_any() } else { none };
            Ok((next, stop as u8, PyTuple::new(py, lists)?, raws))
        })
    })
}

/// [`frame::resync`]: `(offset, total, whole)` of the first entry in `start..until` of `window` passing a v2
/// batch's header checks (and its CRC when whole in `window`; `room`: the file's bytes after it), or `None`.
#[pyfunction]
#[pyo3(signature = (window, start, until, room))]
fn resync(window: &Bound<'_, PyAny>, start: usize, until: usize, room: u64) -> PyResult<Option<(usize, usize, bool)>> {
    guarded(|| with_bytes(window, |buf| Ok(window.py().detach(|| frame::resync(buf, start, until, room)))))
}

/// The Python strings a batch row shares (interned once per process: a reader asking for one batch at a time,
/// `WindowColumns.batch`, paid a third of its cost interning them again).
pub(crate) struct RowNames<'py> {
    codecs: Vec<Bound<'py, PyString>>,
    log_append: Bound<'py, PyString>,
    create: Bound<'py, PyString>,
    none: Bound<'py, PyAny>,
}

/// [`CODECS`], then "log_append" and "create", interned.
static ROW_NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();

impl<'py> RowNames<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        let names = ROW_NAMES.get_or_init(py, || {
            CODECS.iter().chain(&["log_append", "create"]).map(|c| PyString::intern(py, c).unbind()).collect()
        });
        let name = |i: usize| names.get(i).map_or_else(|| PyString::intern(py, "?"), |n| n.bind(py).clone());
        RowNames {
            codecs: (0..CODECS.len()).map(name).collect(),
            log_append: name(CODECS.len()),
            create: name(CODECS.len() + 1),
            none: py.None().into_bound(py),
        }
    }
}

/// The 20 fields of `kafkatool.model.Batch`, in order, for the whole v2 batch at `position` of `total` bytes.
pub(crate) fn batch_row<'py>(
    py: Python<'py>,
    names: &RowNames<'py>,
    (position, total, h, crc_valid): (i64, usize, &frame::V2Header, bool),
) -> PyResult<[Bound<'py, PyAny>; 20]> {
    let attrs = h.attributes;
    let last = match h.base_offset.checked_add(i64::from(h.last_offset_delta)) {
        Some(v) => v.into_pyobject(py)?.into_any(),
        None => (i128::from(h.base_offset) + i128::from(h.last_offset_delta)).into_pyobject(py)?.into_any(),
    };
    let codec = names.codecs.get((attrs & 7) as usize).map_or_else(|| names.none.clone(), |c| c.clone().into_any());
    Ok([
        position.into_pyobject(py)?.into_any(),
        h.base_offset.into_pyobject(py)?.into_any(),
        last,
        total.into_pyobject(py)?.into_any(),
        2u8.into_pyobject(py)?.into_any(),
        h.crc.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, crc_valid).to_owned().into_any(),
        attrs.into_pyobject(py)?.into_any(),
        codec,
        if attrs & 0x08 != 0 { names.log_append.clone() } else { names.create.clone() }.into_any(),
        h.base_timestamp.into_pyobject(py)?.into_any(),
        h.max_timestamp.into_pyobject(py)?.into_any(),
        h.records_count.into_pyobject(py)?.into_any(),
        h.partition_leader_epoch.into_pyobject(py)?.into_any(),
        h.producer_id.into_pyobject(py)?.into_any(),
        h.producer_epoch.into_pyobject(py)?.into_any(),
        h.base_sequence.into_pyobject(py)?.into_any(),
        pyo3::types::PyBool::new(py, attrs & 0x10 != 0).to_owned().into_any(),
        pyo3::types::PyBool::new(py, attrs & 0x20 != 0).to_owned().into_any(),
        if attrs & 0x40 != 0 { h.base_timestamp.into_pyobject(py)?.into_any() } else { names.none.clone() },
    ])
}

/// The 20 columns of `kafkatool.model.Batch` (as lists) for whole v2 batches given as
/// `(position, total, header, crc_valid)`: what `scan_batches` returns, shared with `columns.rs`.
pub(crate) fn batch_columns<'py>(
    py: Python<'py>,
    entries: Vec<(i64, usize, frame::V2Header, bool)>,
) -> PyResult<Vec<Bound<'py, PyList>>> {
    let names = RowNames::new(py);
    let n = entries.len();
    let mut cols: Vec<Vec<Bound<'py, PyAny>>> = (0..20).map(|_| Vec::with_capacity(n)).collect();
    for (position, total, h, crc_valid) in entries {
        for (col, value) in cols.iter_mut().zip(batch_row(py, &names, (position, total, &h, crc_valid))?) {
            col.push(value);
        }
    }
    cols.into_iter().map(|c| PyList::new(py, c)).collect::<PyResult<Vec<_>>>()
}

/// The walk of [`scan_batches`] for the columnar scan: `(p, stop, positions, headers, crc_valid, controls)`,
/// positions as native-endian int64 bytes (`array('q')`), each batch's first 61 bytes back to back, one
/// byte (0/1) per batch, and `[(index, bytes)]` for the control batches.
#[pyfunction]
#[pyo3(signature = (window, walk))]
#[allow(clippy::type_complexity)]
fn scan_headers<'py>(
    py: Python<'py>,
    window: &Bound<'py, PyAny>,
    walk: BatchWalk,
) -> PyResult<(usize, u8, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyList>)> {
    let BatchWalk(p, base, limit, max_batch) = walk;
    guarded(|| {
        with_bytes(window, |buf| {
            let mut positions = Vec::new();
            let mut headers = Vec::new();
            let mut valid = Vec::new();
            let mut controls = Vec::new();
            let (next, stop) = frame::scan_v2(buf, p, base, limit, max_batch, |e, bytes| {
                if e.header.attributes & 0x20 != 0 {
                    controls.push((valid.len(), PyBytes::new(py, bytes)));
                }
                positions.extend_from_slice(&e.position.to_ne_bytes());
                headers.extend_from_slice(bytes.get(..frame::RECORD_BATCH_OVERHEAD).unwrap_or_default());
                valid.push(u8::from(e.crc_valid));
            });
            Ok((
                next,
                stop as u8,
                PyBytes::new(py, &positions),
                PyBytes::new(py, &headers),
                PyBytes::new(py, &valid),
                PyList::new(py, controls)?,
            ))
        })
    })
}

/// The next `count` records of the v2 records section `data` from `start` on, as `(columns, end)`: the columns
/// `(offsets, timestamps, keys, values, headers)` ([`columns_to_py`]), or with `times` only `(offsets, timestamps)`
/// (what `verify --deep` checks), or with `lines` a `RecordChunk` ([`columns::PyRecordChunk`]: the columns held
/// here, over `data`, for `dump` to render), and where the records end; `last`: the section must end there. With
/// `last` and the batch's record count, every record of the section (`kafkatool.records.decode_records`); with
/// fewer, one chunk of a batch read a bounded number of records at a time (`kafkatool.records.record_chunks`).
/// `None` where the Python reader must decide (damage, trailing bytes, values beyond 64 bits): see
/// [`records::decode_v2_part`].
#[pyfunction]
#[pyo3(signature = (data, start, count, base_offset, base_timestamp, log_append_time, last, times=false, lines=false))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn decode_v2_chunk<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    start: usize,
    count: i64,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    last: bool,
    times: bool,
    lines: bool,
) -> PyResult<Option<(Bound<'py, PyAny>, usize)>> {
    guarded(|| {
        with_bytes(data, |buf| {
            let ctx = records::BatchContext { base_offset, base_timestamp, log_append_time, count };
            let Ok((cols, end)) = py.detach(|| records::decode_v2_part(buf, start, &ctx, last)) else {
                return Ok(None);
            };
            let columns = if times {
                PyTuple::new(py, [PyList::new(py, &cols.offsets)?, PyList::new(py, &cols.timestamps)?])?.into_any()
            } else if lines {
                Bound::new(py, columns::PyRecordChunk::new(data.clone().unbind(), cols))?.into_any()
            } else {
                columns_to_py(py, buf, &cols)?.into_any()
            };
            Ok(Some((columns, end)))
        })
    })
}

/// The columns of [`records::decode_v2`] over `buf`, as [`decode_v2_chunk`] returns them to Python.
pub(crate) fn columns_to_py<'py>(
    py: Python<'py>,
    buf: &[u8],
    cols: &records::RecordColumns,
) -> PyResult<Bound<'py, PyTuple>> {
    let bytes_of = |s: Option<records::Slice>| -> Bound<'py, PyAny> {
        match s.and_then(|(at, len)| buf.get(at..at.checked_add(len)?)) {
            Some(b) => PyBytes::new(py, b).into_any(),
            None => py.None().into_bound(py),
        }
    };
    let keys: Vec<_> = cols.keys.iter().map(|s| bytes_of(*s)).collect();
    let values: Vec<_> = cols.values.iter().map(|s| bytes_of(*s)).collect();
    let mut headers = Vec::with_capacity(cols.len());
    for w in cols.header_starts.windows(2) {
        let (from, to) = match w {
            [from, to] => (*from, *to),
            _ => (0, 0),
        };
        if from == to {
            headers.push(PyTuple::empty(py));
            continue;
        }
        let mut pairs = Vec::with_capacity(to.saturating_sub(from));
        for i in from..to {
            let key = cols.header_keys.get(i).and_then(|(at, len)| buf.get(*at..at.checked_add(*len)?));
            let key = header_key(py, key.unwrap_or_default())?;
            let value = bytes_of(cols.header_values.get(i).copied().flatten());
            pairs.push(PyTuple::new(py, [key, value])?);
        }
        headers.push(PyTuple::new(py, pairs)?);
    }
    PyTuple::new(
        py,
        [
            PyList::new(py, &cols.offsets)?.into_any(),
            PyList::new(py, &cols.timestamps)?.into_any(),
            PyList::new(py, keys)?.into_any(),
            PyList::new(py, values)?.into_any(),
            PyList::new(py, headers)?.into_any(),
        ],
    )
}

/// A header key as Kafka reads it: UTF-8, malformed bytes replaced (Python's own decoder, so the
/// replacement characters are exactly the pure reader's).
fn header_key<'py>(py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match std::str::from_utf8(key) {
        Ok(s) => Ok(PyString::new(py, s).into_any()),
        Err(_) => PyBytes::new(py, key).call_method1("decode", ("utf-8", "replace")),
    }
}

/// CRC32C of `data` continuing `value`, as the `crc32c` package's `crc32c(data, value)` (the pure path's): for the
/// CRCs Python checks itself (a producer snapshot's, a batch the general path reads), without that package's
/// import, which reads its own metadata (~35 ms of every command that reads a partition's snapshot).
#[pyfunction]
#[pyo3(name = "crc32c", signature = (data, value=0))]
fn crc32c_of(data: &Bound<'_, PyAny>, value: u32) -> PyResult<u32> {
    guarded(|| with_bytes(data, |buf| Ok(data.py().detach(|| crc32c::crc32c_append(value, buf)))))
}

/// Panics on purpose: lets the tests check that a panic reaches Python as `NativePanic`.
#[pyfunction]
#[allow(clippy::panic)]
fn _panic_for_test() -> PyResult<()> {
    guarded(|| panic!("panic requested by a test"))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativePanic", m.py().get_type::<NativePanic>())?;
    m.add_function(wrap_pyfunction!(scan_batches, m)?)?;
    m.add_function(wrap_pyfunction!(scan_headers, m)?)?;
    m.add_function(wrap_pyfunction!(resync, m)?)?;
    m.add_function(wrap_pyfunction!(crc32c_of, m)?)?;
    m.add_function(wrap_pyfunction!(decode_v2_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::py::decompress, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::py::decode_v2_compressed, m)?)?;
    m.add_function(wrap_pyfunction!(codecs::py::decompress_buffer, m)?)?;
    m.add_class::<codecs::py::Decompressed>()?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    columns::register(m)?;
    m.add_class::<arrow::RecordsBuilder>()?;
    m.add_class::<arrow::OwnedBuffer>()?;
    m.add_class::<search::py::PyRecordSearch>()?;
    Ok(())
}

#[cfg(test)]
mod fuzz_tests;
