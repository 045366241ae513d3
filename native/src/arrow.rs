//! Arrow buffers of the Spark data source's records level, built here and handed to pyarrow without a copy.
//!
//! [`RecordsBuilder`] gathers the rows of one `pyarrow.RecordBatch` column by column, in Arrow's own
//! layout (little-endian values, LSB-first bitmaps, int32 offsets + data for the variable-size
//! columns), so that `kafkatool/spark/arrow.py` only wraps the finished buffers with
//! `pa.py_buffer` / `pa.Array.from_buffers`: each buffer is an [`OwnedBuffer`], bytes this extension
//! owns, exposed through the buffer protocol. No `arrow` crate: the layout is small and fixed.
//!
//! Rows come three ways, mixed freely, in the order the Python reader adds them:
//!
//! - [`RecordsBuilder::add_v2`]: every record of a v2 records section, decoded by
//!   [`records::decode_v2`] (uncompressed batches in place; compressed ones after Python decompressed
//!   them): no Python object per record. When the section is damaged it adds nothing and returns
//!   `False`, and the Python reader decodes that batch itself (`records.decode_records`) and adds
//!   what it found through the two methods below, exactly as the pure builder does;
//!   [`RecordsBuilder::add_v2_part`] the same for the next so many records of a section, so that a batch
//!   declaring more records than an Arrow batch should hold is added a piece at a time, flushed between;
//! - [`RecordsBuilder::add_records`]: `kafkatool.model.Record` tuples (legacy messages, control
//!   batches, the records of a damaged batch decoded before the damage);
//! - [`RecordsBuilder::add_error`]: the row that stands for records that could not be decoded.
//!
//! The columns are those of `kafkatool.spark.source.records_schema` from `offset` to `error` (the
//! constant ones, topic..file, and `decoded` are Python's). `tests/test_spark_arrow.py` holds the
//! batches equal to the pure-Python builder's on every corpus record file and on seeded mutations.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::records;

/// Bytes owned by the extension, read-only through the buffer protocol: `pyarrow.py_buffer(b)`
/// wraps them without a copy, and the view keeps this object (so the bytes) alive.
#[pyclass(frozen, module = "kafkatool._native")]
pub struct OwnedBuffer {
    bytes: Vec<u8>,
}

impl Drop for OwnedBuffer {
    /// Back to the pool: the next batch's columns reuse the memory (see [`POOL`]).
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.bytes));
    }
}

/// Vectors of finished batches, returned when pyarrow lets go of their buffers (once Spark has sent the
/// batch on), for the next batches' columns. Fresh memory costs a page fault per 4 KiB on first touch, as
/// much as decoding the records into it; reused memory is already mapped. At most [`POOL_BYTES`] kept.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const POOL_BYTES: usize = 256 << 20;
/// Smaller vectors are not worth keeping (the allocator reuses them well on its own).
const POOL_MIN: usize = 64 << 10;

fn give_back(mut v: Vec<u8>) {
    if v.capacity() < POOL_MIN {
        return;
    }
    if let Ok(mut pool) = POOL.lock() {
        if pool.iter().map(Vec::capacity).sum::<usize>() + v.capacity() <= POOL_BYTES {
            v.clear();
            pool.push(v);
        }
    }
}

/// An empty vector of at least `capacity` (and [`MIN_CAPACITY`]) bytes, from the pool when it holds one.
fn vec_of(capacity: usize) -> Vec<u8> {
    if capacity >= POOL_MIN {
        if let Ok(mut pool) = POOL.lock() {
            let fit = pool.iter().enumerate().filter(|(_, v)| v.capacity() >= capacity).min_by_key(|(_, v)| v.capacity());
            if let Some((i, _)) = fit {
                return pool.swap_remove(i);
            }
        }
    }
    Vec::with_capacity(capacity.max(MIN_CAPACITY))
}

#[pymethods]
impl OwnedBuffer {
    /// # Safety
    /// Called by CPython with a valid `view`; the bytes never change (the class is frozen) and live
    /// as long as `slf`, which `PyBuffer_FillInfo` stores (with a new reference) in the view.
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let bytes = &slf.get().bytes;
        let len = ffi::Py_ssize_t::try_from(bytes.len()).map_err(|_| PyOverflowError::new_err("buffer too large"))?;
        // SAFETY: see above; readonly = 1, so a writable request fails inside PyBuffer_FillInfo.
        let rc = unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), bytes.as_ptr() as *mut c_void, len, 1, flags) };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.bytes.len()
    }
}

/// Every vector starts with a real allocation, so no buffer handed to pyarrow is a dangling
/// (unaligned) pointer, even when empty; the allocator aligns it for any primitive type.
const MIN_CAPACITY: usize = 64;

fn vec() -> Vec<u8> {
    Vec::with_capacity(MIN_CAPACITY)
}

/// Make room for `additional` more bytes in `v`, with a vector from the pool when it would have to grow.
fn reserve(v: &mut Vec<u8>, additional: usize) {
    let need = v.len().saturating_add(additional);
    if need > v.capacity() {
        let mut bigger = vec_of(need);
        bigger.extend_from_slice(v);
        give_back(std::mem::replace(v, bigger));
    }
}

/// A bitmap, LSB first: a validity bitmap (set = valid) or a boolean column.
struct Bits {
    bytes: Vec<u8>,
    len: usize,
    unset: usize,
}

impl Bits {
    fn new() -> Self {
        Bits { bytes: vec(), len: 0, unset: 0 }
    }

    fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if bit {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 1 << (self.len % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }
}

/// A binary or string column: validity, int32 offsets and the data they cut.
struct VarColumn {
    valid: Bits,
    offsets: Vec<u8>,
    data: Vec<u8>,
}

/// The message when a column would pass Arrow's int32 offsets (the reader flushes long before).
const FULL: &str = "a column of one Arrow batch would exceed 2 GiB";

impl VarColumn {
    fn new() -> Self {
        let mut offsets = vec();
        offsets.extend_from_slice(&0i32.to_le_bytes());
        VarColumn { valid: Bits::new(), offsets, data: vec() }
    }

    /// End the current value (its bytes already in `data`).
    fn seal(&mut self, valid: bool) -> PyResult<()> {
        let end = i32::try_from(self.data.len()).map_err(|_| PyOverflowError::new_err(FULL))?;
        self.offsets.extend_from_slice(&end.to_le_bytes());
        self.valid.push(valid);
        Ok(())
    }

    fn push(&mut self, value: Option<&[u8]>) -> PyResult<()> {
        if let Some(v) = value {
            self.data.extend_from_slice(v);
        }
        self.seal(value.is_some())
    }

    fn push_base64(&mut self, value: Option<&[u8]>) -> PyResult<()> {
        if let Some(v) = value {
            base64(v, &mut self.data);
        }
        self.seal(value.is_some())
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (Python's `base64.b64encode`).
fn base64(data: &[u8], out: &mut Vec<u8>) {
    let symbol = |i: u32| BASE64.get((i & 63) as usize).copied().unwrap_or(b'=');
    out.reserve(data.len().div_ceil(3) * 4);
    let mut chunks = data.chunks_exact(3);
    for c in &mut chunks {
        if let [a, b, d] = *c {
            let n = u32::from(a) << 16 | u32::from(b) << 8 | u32::from(d);
            out.extend_from_slice(&[symbol(n >> 18), symbol(n >> 12), symbol(n >> 6), symbol(n)]);
        }
    }
    match *chunks.remainder() {
        [a] => {
            let n = u32::from(a) << 16;
            out.extend_from_slice(&[symbol(n >> 18), symbol(n >> 12), b'=', b'=']);
        }
        [a, b] => {
            let n = u32::from(a) << 16 | u32::from(b) << 8;
            out.extend_from_slice(&[symbol(n >> 18), symbol(n >> 12), symbol(n >> 6), b'=']);
        }
        _ => {}
    }
}

/// What the `value` column holds (the data source's `values` option).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Values {
    Binary,
    Base64,
    Omitted,
}

/// The columns `offset`..`error` of the records level, for one Arrow batch at a time.
#[pyclass(module = "kafkatool._native")]
pub struct RecordsBuilder {
    values: Values,
    rows: usize,
    offsets: Vec<u8>,
    timestamps: Vec<u8>,
    keys: VarColumn,
    value_col: VarColumn,
    /// int32 offsets into the header entries, one more than rows.
    header_starts: Vec<u8>,
    headers: i32,
    header_keys: VarColumn,
    header_values: VarColumn,
    bases: Vec<u8>,
    control: VarColumn,
    crc_valid: Bits,
    errors: VarColumn,
}

/// A finished variable-size column: `(validity or None, nulls, offsets, data)`.
type VarParts = (Option<OwnedBuffer>, usize, OwnedBuffer, OwnedBuffer);

fn owned(bytes: Vec<u8>) -> OwnedBuffer {
    OwnedBuffer { bytes }
}

fn var_parts(c: VarColumn) -> VarParts {
    let nulls = c.valid.unset;
    let valid = (nulls > 0).then(|| owned(c.valid.bytes));
    (valid, nulls, owned(c.offsets), owned(c.data))
}

/// The bytes of a Python `bytes` (or any contiguous buffer: a record decoded from a bytearray holds
/// bytearray slices), or `None`.
fn with_optional_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(Option<&[u8]>) -> PyResult<R>) -> PyResult<R> {
    if obj.is_none() {
        return f(None);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return f(Some(b.as_bytes()));
    }
    crate::with_bytes(obj, |b| f(Some(b)))
}

/// A header key as Kafka reads it: UTF-8 with malformed bytes replaced, by Python's own decoder
/// (as the pure reader does), so the replacement characters are the same.
fn push_header_key(py: Python<'_>, col: &mut VarColumn, key: &[u8]) -> PyResult<()> {
    if std::str::from_utf8(key).is_ok() {
        return col.push(Some(key));
    }
    let text = PyBytes::new(py, key).call_method1("decode", ("utf-8", "replace"))?;
    let text = text.cast::<PyString>()?;
    col.push(Some(text.to_str()?.as_bytes()))
}

impl RecordsBuilder {
    fn new_with(values: Values) -> Self {
        let mut header_starts = vec();
        header_starts.extend_from_slice(&0i32.to_le_bytes());
        RecordsBuilder {
            values,
            rows: 0,
            offsets: vec(),
            timestamps: vec(),
            keys: VarColumn::new(),
            value_col: VarColumn::new(),
            header_starts,
            headers: 0,
            header_keys: VarColumn::new(),
            header_values: VarColumn::new(),
            bases: vec(),
            control: VarColumn::new(),
            crc_valid: Bits::new(),
            errors: VarColumn::new(),
        }
    }

    /// Reserve what `last` holds: the next batch is likely as big, and then no vector grows (and copies
    /// itself) on the way.
    fn reserve_like(&mut self, last: &Self) {
        for (v, l) in [
            (&mut self.offsets, &last.offsets),
            (&mut self.timestamps, &last.timestamps),
            (&mut self.header_starts, &last.header_starts),
            (&mut self.bases, &last.bases),
            (&mut self.crc_valid.bytes, &last.crc_valid.bytes),
        ] {
            reserve(v, l.len());
        }
        for (c, l) in [
            (&mut self.keys, &last.keys),
            (&mut self.value_col, &last.value_col),
            (&mut self.header_keys, &last.header_keys),
            (&mut self.header_values, &last.header_values),
            (&mut self.control, &last.control),
            (&mut self.errors, &last.errors),
        ] {
            reserve(&mut c.offsets, l.offsets.len());
            reserve(&mut c.data, l.data.len());
            reserve(&mut c.valid.bytes, l.valid.bytes.len());
        }
    }

    fn push_value(&mut self, value: Option<&[u8]>) -> PyResult<()> {
        match self.values {
            Values::Binary => self.value_col.push(value),
            Values::Base64 => self.value_col.push_base64(value),
            Values::Omitted => Ok(()),
        }
    }

    /// The columns every row has besides key, value and headers; ends the row.
    fn end_row(&mut self, offset: i64, timestamp: i64, base: i64, crc_valid: bool, control: Option<&str>,
               error: Option<&str>) -> PyResult<()> {
        self.header_starts.extend_from_slice(&self.headers.to_le_bytes());
        self.offsets.extend_from_slice(&offset.to_le_bytes());
        self.timestamps.extend_from_slice(&timestamp.to_le_bytes());
        self.bases.extend_from_slice(&base.to_le_bytes());
        self.crc_valid.push(crc_valid);
        self.control.push(control.map(str::as_bytes))?;
        self.errors.push(error.map(str::as_bytes))?;
        self.rows += 1;
        Ok(())
    }

    /// The rows of records decoded from `buf`; `false`, and nothing added, should a field not lie inside it.
    fn add_columns(&mut self, py: Python<'_>, buf: &[u8], cols: &records::RecordColumns, base_offset: i64,
                   crc_valid: bool) -> PyResult<bool> {
        let n = buf.len();
        // decode_v2 succeeds only when every field lies inside its record: checked again, so that
        // nothing below can fail half-way through a batch.
        if !(cols.keys.iter().chain(&cols.values).chain(&cols.header_values).all(|s| inside(*s, n))
            && cols.header_keys.iter().all(|s| inside(Some(*s), n)))
        {
            return Ok(false);
        }
        for (i, w) in cols.header_starts.windows(2).enumerate() {
            let (offset, timestamp) = match (cols.offsets.get(i), cols.timestamps.get(i)) {
                (Some(o), Some(t)) => (*o, *t),
                _ => return Ok(false),
            };
            self.keys.push(get(buf, cols.keys.get(i).copied().flatten()))?;
            self.push_value(get(buf, cols.values.get(i).copied().flatten()))?;
            if let [from, to] = *w {
                for h in from..to {
                    let key = get(buf, cols.header_keys.get(h).copied()).unwrap_or_default();
                    push_header_key(py, &mut self.header_keys, key)?;
                    self.header_values.push(get(buf, cols.header_values.get(h).copied().flatten()))?;
                    self.add_header()?;
                }
            }
            self.end_row(offset, timestamp, base_offset, crc_valid, None, None)?;
        }
        Ok(true)
    }

    fn add_header(&mut self) -> PyResult<()> {
        self.headers = self.headers.checked_add(1).ok_or_else(|| PyOverflowError::new_err(FULL))?;
        Ok(())
    }
}

/// A Python integer as a long column holds it: as Kafka's Java reader computes it, in 64-bit arithmetic.
/// Only damaged bytes give the Python reader a value beyond 64 bits (an offset past `Long.MAX_VALUE`,
/// a 10-byte timestamp delta); Java's `long` wraps it, and so does this (the pure builder alike).
fn long(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    match value.extract::<i64>() {
        Ok(v) => Ok(v),
        Err(_) => {
            let low = value.call_method1("__and__", (u64::MAX,))?.extract::<u64>()?;
            Ok(i64::from_ne_bytes(low.to_ne_bytes()))
        }
    }
}

/// Whether `slice` lies inside `len` bytes.
fn inside(slice: Option<records::Slice>, len: usize) -> bool {
    slice.is_none_or(|(at, n)| at.checked_add(n).is_some_and(|end| end <= len))
}

fn get(buf: &[u8], slice: Option<records::Slice>) -> Option<&[u8]> {
    slice.and_then(|(at, n)| buf.get(at..at.checked_add(n)?))
}

#[pymethods]
impl RecordsBuilder {
    /// `values`: `binary`, `base64` (the value column is their base64 text) or `none` (no value column).
    #[new]
    fn new(values: &str) -> PyResult<Self> {
        let values = match values {
            "binary" => Values::Binary,
            "base64" => Values::Base64,
            "none" => Values::Omitted,
            other => return Err(PyValueError::new_err(format!("unknown values mode {other:?}"))),
        };
        Ok(Self::new_with(values))
    }

    /// Rows gathered so far.
    fn __len__(&self) -> usize {
        self.rows
    }

    /// Bytes gathered in the variable-size columns (the reader flushes well below 2 GiB).
    fn data_bytes(&self) -> usize {
        self.keys.data.len() + self.value_col.data.len() + self.header_keys.data.len() + self.header_values.data.len()
    }

    /// Every record of the v2 records section `data[start:]` (see `records.decode_v2`), rows of a batch
    /// at `base_offset` whose CRC verdict is `crc_valid`; `False`, and nothing added, where the section
    /// is for the Python reader (damage, trailing bytes, values beyond 64 bits). Not for control batches.
    #[pyo3(signature = (data, start, count, base_offset, base_timestamp, log_append_time, crc_valid))]
    #[allow(clippy::too_many_arguments)]
    fn add_v2(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>, start: usize, count: i64, base_offset: i64,
              base_timestamp: i64, log_append_time: Option<i64>, crc_valid: bool) -> PyResult<bool> {
        crate::guarded(|| {
            crate::with_bytes(data, |buf| {
                let ctx = records::BatchContext { base_offset, base_timestamp, log_append_time, count };
                match records::decode_v2(buf, start, &ctx) {
                    Ok(cols) => self.add_columns(py, buf, &cols, base_offset, crc_valid),
                    Err(_) => Ok(false),
                }
            })
        })
    }

    /// The next `count` records of a v2 records section from `data[start:]` on (see `records.decode_v2_part`;
    /// with `last`, the section must end after them), as [`add_v2`](Self::add_v2) adds a whole one; where they
    /// end and the offset of the last record added, or `None` and nothing added. A batch declaring more records than one Arrow batch should hold is
    /// added this way a piece at a time, the reader flushing between pieces: a few KB of a record-count bomb
    /// never become one Arrow batch of millions of rows (which Spark's JVM could not even allocate).
    #[pyo3(signature = (data, start, count, base_offset, base_timestamp, log_append_time, crc_valid, last))]
    #[allow(clippy::too_many_arguments)]
    fn add_v2_part(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>, start: usize, count: i64, base_offset: i64,
                   base_timestamp: i64, log_append_time: Option<i64>, crc_valid: bool, last: bool)
                   -> PyResult<Option<(usize, Option<i64>)>> {
        crate::guarded(|| {
            crate::with_bytes(data, |buf| {
                let ctx = records::BatchContext { base_offset, base_timestamp, log_append_time, count };
                match records::decode_v2_part(buf, start, &ctx, last) {
                    Ok((cols, end)) => {
                        let added = self.add_columns(py, buf, &cols, base_offset, crc_valid)?;
                        Ok(added.then(|| (end, cols.offsets.last().copied())))
                    }
                    Err(_) => Ok(None),
                }
            })
        })
    }

    /// `kafkatool.model.Record` tuples (offset, timestamp, key, value, headers, control_type, ...), rows of
    /// a batch at `base_offset` whose CRC verdict is `crc_valid`.
    fn add_records(&mut self, records: &Bound<'_, PyAny>, base_offset: &Bound<'_, PyAny>, crc_valid: bool)
                   -> PyResult<()> {
        let base_offset = long(base_offset)?;
        for record in records.try_iter()? {
            let record = record?;
            let record = record.cast::<PyTuple>()?;
            // everything that can fail before anything is added: the columns stay of one length
            let offset = long(&record.get_item(0)?)?;
            let timestamp = long(&record.get_item(1)?)?;
            let control: Option<String> = record.get_item(5)?.extract()?;
            with_optional_bytes(&record.get_item(2)?, |k| self.keys.push(k))?;
            with_optional_bytes(&record.get_item(3)?, |v| self.push_value(v))?;
            for header in record.get_item(4)?.try_iter()? {
                let header = header?;
                let header = header.cast::<PyTuple>()?;
                let key = header.get_item(0)?;
                let key = key.cast::<PyString>()?.to_str()?;
                self.header_keys.push(Some(key.as_bytes()))?;
                with_optional_bytes(&header.get_item(1)?, |v| self.header_values.push(v))?;
                self.add_header()?;
            }
            self.end_row(offset, timestamp, base_offset, crc_valid, control.as_deref(), None)?;
        }
        Ok(())
    }

    /// The row standing for records that could not be decoded: null key and value, no headers, `error` set.
    fn add_error(&mut self, offset: &Bound<'_, PyAny>, timestamp: &Bound<'_, PyAny>, message: &str,
                 base_offset: &Bound<'_, PyAny>, crc_valid: bool) -> PyResult<()> {
        let (offset, timestamp, base_offset) = (long(offset)?, long(timestamp)?, long(base_offset)?);
        self.keys.push(None)?;
        self.push_value(None)?;
        self.end_row(offset, timestamp, base_offset, crc_valid, None, Some(message))
    }

    /// The buffers gathered, and a fresh start: `(rows, offsets, timestamps, key, value, (list offsets,
    /// header count, header keys, header values), batch_base_offsets, control_type, crc_valid, error)`,
    /// each variable-size column as `(validity or None, null count, offsets, data)`, `value` None when
    /// omitted, `crc_valid` a bitmap.
    #[allow(clippy::type_complexity)]
    fn finish(&mut self) -> (usize, OwnedBuffer, OwnedBuffer, VarParts, Option<VarParts>,
                             (OwnedBuffer, i32, VarParts, VarParts), OwnedBuffer, VarParts, OwnedBuffer, VarParts) {
        let done = std::mem::replace(self, Self::new_with(self.values));
        self.reserve_like(&done);
        let value = (done.values != Values::Omitted).then(|| var_parts(done.value_col));
        (
            done.rows,
            owned(done.offsets),
            owned(done.timestamps),
            var_parts(done.keys),
            value,
            (owned(done.header_starts), done.headers, var_parts(done.header_keys), var_parts(done.header_values)),
            owned(done.bases),
            var_parts(done.control),
            owned(done.crc_valid.bytes),
            var_parts(done.errors),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_are_lsb_first_and_count_unset_bits() {
        let mut b = Bits::new();
        for bit in [true, false, true, true, false, false, false, false, true] {
            b.push(bit);
        }
        assert_eq!(b.bytes, vec![0b0000_1101, 0b1]);
        assert_eq!((b.len, b.unset), (9, 5));
    }

    #[test]
    fn base64_matches_the_standard_alphabet_with_padding() {
        for (plain, encoded) in [(&b""[..], ""), (b"f", "Zg=="), (b"fo", "Zm8="), (b"foo", "Zm9v"),
                                 (b"foob", "Zm9vYg=="), (b"\xff\xfe\xfd\x00", "//79AA==")] {
            let mut out = Vec::new();
            base64(plain, &mut out);
            assert_eq!(out, encoded.as_bytes());
        }
    }

    #[test]
    fn var_columns_cut_their_data_with_int32_offsets() {
        let mut c = VarColumn::new();
        c.push(Some(b"ab")).expect("fits");
        c.push(None).expect("fits");
        c.push(Some(b"")).expect("fits");
        let offsets: Vec<i32> = c.offsets.chunks(4).map(|b| i32::from_le_bytes(b.try_into().expect("4"))).collect();
        assert_eq!(offsets, vec![0, 2, 2, 2]);
        assert_eq!((c.data.as_slice(), c.valid.bytes.as_slice(), c.valid.unset), (&b"ab"[..], &[0b101u8][..], 1));
    }
}
