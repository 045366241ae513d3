//! The records of many v2 batches (a reader's window) decoded into one set of columns, with no Python
//! object per batch or per record: the bulk paths (`dump --records`, `verify --deep`, Spark) consume them.
//!
//! # Rust API (for other consumers, e.g. Arrow buffers)
//!
//! [`decode_window`]`(buf, p, base, limit, max_batch)` walks the whole v2 batches of `buf` from `p` on,
//! exactly as [`crate::frame::scan_v2`] does (same stops, same CRC verdicts), and returns
//! `(next_p, stop, WindowColumns)`. In [`WindowColumns`]:
//!
//! - `data` is a copy of `buf[origin..next_p]`, every slice below is relative to it;
//! - per batch `i`: `batches[i]` (its [`Entry`], `start` relative to `data`), `decoded[i]`, and its
//!   records are `records.*[record_starts[i]..record_starts[i + 1]]`;
//! - per record `j`: `records.offsets[j]`, `records.timestamps[j]` (absolute), `records.keys[j]` /
//!   `records.values[j]` (`Some((start, len))` into `data`, `None` for null), and its headers are
//!   `records.header_keys/header_values[records.header_starts[j]..records.header_starts[j + 1]]`.
//!
//! A batch is `decoded` when it is uncompressed, not a control batch, its last offset fits 64 bits and
//! [`crate::records::decode_v2`] decodes all of its records; otherwise it holds no records here and the
//! Python reader decodes it (`kafkatool.records.decode_records`: decompression, control records and every
//! finding live there). Hook for compressed batches: a native decompressor can decode the decompressed
//! section with `records::decode_v2_into` into its own buffer; today they go to Python.

use crate::frame::{self, Entry, V2Header, RECORD_BATCH_OVERHEAD};
use crate::records::{self, BatchContext, RecordColumns};

/// The batches of one window and the records of those decoded natively (see the module docs).
#[derive(Debug, Default)]
pub struct WindowColumns {
    pub data: Vec<u8>,
    /// File position of `data[0]`.
    pub origin: i64,
    pub batches: Vec<Entry>,
    pub decoded: Vec<bool>,
    /// `len() == batches.len() + 1`.
    pub record_starts: Vec<usize>,
    pub records: RecordColumns,
}

impl WindowColumns {
    /// The bytes of batch `i` (framing included).
    pub fn raw(&self, i: usize) -> &[u8] {
        self.batches
            .get(i)
            .and_then(|e| self.data.get(e.start..e.start.checked_add(e.total)?))
            .unwrap_or_default()
    }

    /// Records of batch `i` as a range of record indices.
    pub fn record_range(&self, i: usize) -> std::ops::Range<usize> {
        let from = self.record_starts.get(i).copied().unwrap_or(0);
        let to = self.record_starts.get(i + 1).copied().unwrap_or(from);
        from..to
    }

    pub fn slice(&self, s: Option<records::Slice>) -> Option<&[u8]> {
        s.and_then(|(at, len)| self.data.get(at..at.checked_add(len)?))
    }

    /// Whether the deep checks of `verify --deep` (`segment_check._deep_check`) would report anything
    /// on decoded batch `i`: the record count, offsets increasing inside the batch's range, and the
    /// largest timestamp against the header's (CREATE_TIME). `false` for batches not decoded here.
    pub fn deep_suspect(&self, i: usize) -> bool {
        let (Some(e), Some(true)) = (self.batches.get(i), self.decoded.get(i).copied()) else {
            return false;
        };
        let h = &e.header;
        let range = self.record_range(i);
        let n = range.len();
        if i64::try_from(n).ok() != Some(i64::from(h.records_count)) {
            return true;
        }
        let last = h.base_offset + i64::from(h.last_offset_delta); // fits: checked when decoded
        let mut prev = i128::from(h.base_offset) - 1;
        let mut top = -1i64;
        for j in range {
            let (Some(&off), Some(&ts)) = (self.records.offsets.get(j), self.records.timestamps.get(j)) else {
                return true;
            };
            if i128::from(off) <= prev || off > last {
                return true;
            }
            prev = i128::from(off);
            top = top.max(ts);
        }
        let create_time = h.attributes & 0x08 == 0;
        n > 0 && create_time && top != h.max_timestamp
    }
}

/// Whether the records of a batch with this header are decoded natively (before decoding them).
fn natively_decodable(h: &V2Header) -> bool {
    h.attributes & 0x07 == 0 && h.attributes & 0x20 == 0 && h.base_offset.checked_add(i64::from(h.last_offset_delta)).is_some()
}

/// See the module docs.
pub fn decode_window(buf: &[u8], p: usize, base: i64, limit: i64, max_batch: i64) -> (usize, frame::Stop, WindowColumns) {
    let mut cols = WindowColumns::default();
    cols.records.header_starts.push(0);
    cols.record_starts.push(0);
    let origin = p;
    let (next, stop) = frame::scan_v2(buf, p, base, limit, max_batch, |e, bytes| {
        let h = &e.header;
        let ok = natively_decodable(h) && {
            let ctx = BatchContext {
                base_offset: h.base_offset,
                base_timestamp: h.base_timestamp,
                log_append_time: (h.attributes & 0x08 != 0).then_some(h.max_timestamp),
                count: i64::from(h.records_count),
            };
            // slices relative to `data` (which begins at `origin`): decode over the batch, then shift
            let at = cols.records.offsets.len();
            let hat = cols.records.header_keys.len();
            let done = records::decode_v2_into(bytes, RECORD_BATCH_OVERHEAD, &ctx, &mut cols.records).is_ok();
            if done {
                let shift = e.start - origin;
                let r = &mut cols.records;
                for s in r.keys.iter_mut().skip(at).chain(r.values.iter_mut().skip(at)).chain(r.header_values.iter_mut().skip(hat)).flatten() {
                    s.0 += shift;
                }
                for s in r.header_keys.iter_mut().skip(hat) {
                    s.0 += shift;
                }
            }
            done
        };
        cols.batches.push(Entry { start: e.start - origin, ..*e });
        cols.decoded.push(ok);
        cols.record_starts.push(cols.records.offsets.len());
    });
    cols.data = buf.get(origin..next).unwrap_or_default().to_vec();
    cols.origin = base.saturating_add(i64::try_from(origin).unwrap_or(i64::MAX));
    (next, stop, cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base_offset: i64, records: &[u8], count: i32, attributes: i16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        b.extend_from_slice(&((RECORD_BATCH_OVERHEAD - 12 + records.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&attributes.to_be_bytes());
        b.extend_from_slice(&(count - 1).to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&1003i64.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&count.to_be_bytes());
        b.extend_from_slice(records);
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    // one record: offset delta 0, timestamp delta 3, key "k", value "vv", no headers
    const RECORD: &[u8] = &[18, 0, 6, 0, 2, b'k', 4, b'v', b'v', 0];

    #[test]
    fn decodes_many_batches_into_one_set_of_columns() {
        let mut buf = vec![9u8; 5];
        buf.extend(batch(10, RECORD, 1, 0));
        buf.extend(batch(11, RECORD, 1, 4)); // zstd: left to Python
        buf.extend(batch(12, RECORD, 1, 0));
        let (next, stop, cols) = decode_window(&buf, 5, 1000, i64::MAX, i64::MAX);
        assert_eq!((next, stop), (buf.len(), frame::Stop::General));
        assert_eq!(cols.decoded, vec![true, false, true]);
        assert_eq!(cols.record_starts, vec![0, 1, 1, 2]);
        assert_eq!(cols.records.offsets, vec![10, 12]);
        assert_eq!(cols.records.timestamps, vec![1003, 1003]);
        assert_eq!(cols.origin, 1005);
        assert_eq!(cols.batches[1].position, 1005 + cols.batches[1].start as i64);
        assert_eq!(cols.slice(cols.records.keys[1]), Some(&b"k"[..]));
        assert_eq!(cols.slice(cols.records.values[0]), Some(&b"vv"[..]));
        assert_eq!(cols.raw(1), &batch(11, RECORD, 1, 4)[..]);
        assert!(!cols.deep_suspect(0) && !cols.deep_suspect(1));
    }

    #[test]
    fn deep_checks_flag_what_python_would() {
        let two = [RECORD, RECORD].concat(); // two records at the same offset delta 0
        let buf = batch(10, &two, 2, 0);
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        assert!(cols.decoded[0] && cols.deep_suspect(0));
        let buf = batch(10, RECORD, 2, 0); // declares 2, holds 1: not decoded (Python words it)
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        assert!(!cols.decoded[0] && !cols.deep_suspect(0));
    }

    #[test]
    fn damage_never_panics() {
        let good = [batch(0, RECORD, 1, 0), batch(1, RECORD, 1, 0)].concat();
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                for start in [0, i] {
                    let (_, _, cols) = decode_window(&bad, start, 0, i64::MAX, i64::MAX);
                    for b in 0..cols.batches.len() + 1 {
                        let _ = (cols.deep_suspect(b), cols.raw(b), cols.record_range(b));
                    }
                }
            }
        }
    }
}

// -- Python binding ----------------------------------------------------------------------------

mod py {
    use pyo3::prelude::*;
    use pyo3::types::{PyBytes, PyTuple};

    use super::{decode_window, WindowColumns};
    use crate::render::{self, Fallback, Values};

    /// The columns of one window (`kafkatool.records.RecordRun` holds one with a batch range).
    #[pyclass(frozen, name = "WindowColumns", module = "kafkatool._native")]
    pub struct PyWindowColumns {
        cols: WindowColumns,
    }

    struct PyFallback<'py> {
        text_bytes: Bound<'py, PyAny>,
        key_repr: Bound<'py, PyAny>,
        iso: Bound<'py, PyAny>,
    }

    impl Fallback for PyFallback<'_> {
        type Error = PyErr;
        fn text_bytes(&mut self, data: &[u8]) -> PyResult<String> {
            self.text_bytes.call1((PyBytes::new(self.text_bytes.py(), data),))?.extract()
        }
        fn key_repr(&mut self, key: &[u8]) -> PyResult<String> {
            self.key_repr.call1((PyBytes::new(self.key_repr.py(), key),))?.extract()
        }
        fn iso(&mut self, ts: i64) -> PyResult<String> {
            self.iso.call1((ts,))?.extract()
        }
    }

    #[pymethods]
    impl PyWindowColumns {
        fn __len__(&self) -> usize {
            self.cols.batches.len()
        }

        /// Indices of the batches whose records were not decoded here (Python decodes them).
        fn pending(&self) -> Vec<usize> {
            self.cols.decoded.iter().enumerate().filter(|(_, d)| !**d).map(|(i, _)| i).collect()
        }

        /// Indices in `lo..hi` of decoded batches that `verify --deep`'s checks would flag.
        fn deep_suspects(&self, lo: usize, hi: usize) -> Vec<usize> {
            (lo..hi.min(self.cols.batches.len())).filter(|i| self.cols.deep_suspect(*i)).collect()
        }

        /// The bytes of batch `i` (framing included).
        fn raw<'py>(&self, py: Python<'py>, i: usize) -> Bound<'py, PyBytes> {
            PyBytes::new(py, self.cols.raw(i))
        }

        /// Batches `lo..hi` as the 20 columns of `kafkatool.model.Batch` (lists).
        fn batch_columns<'py>(&self, py: Python<'py>, lo: usize, hi: usize) -> PyResult<Bound<'py, PyTuple>> {
            crate::guarded(|| {
                let entries = self
                    .cols
                    .batches
                    .get(lo..hi.min(self.cols.batches.len()))
                    .unwrap_or_default()
                    .iter()
                    .map(|e| (e.position, e.total, e.header, e.crc_valid))
                    .collect();
                PyTuple::new(py, crate::batch_columns(py, entries)?)
            })
        }

        /// Number of records decoded in batches `lo..hi`.
        fn record_count(&self, lo: usize, hi: usize) -> usize {
            let c = &self.cols.record_starts;
            let at = |i: usize| c.get(i.min(self.cols.batches.len())).copied().unwrap_or(0);
            at(hi).saturating_sub(at(lo))
        }

        /// Batches `lo..hi` and their records rendered as `dump` prints them (UTF-8 bytes): `fmt` "text" or "jsonl",
        /// `values` "base64" | "text" | "hex" | "none"; `fallback` is `(text_bytes, key_repr, iso)`,
        /// Python's rendering of the rare cases (see `render.rs`).
        #[pyo3(signature = (lo, hi, fmt, values, fallback))]
        fn render<'py>(
            &self,
            py: Python<'py>,
            lo: usize,
            hi: usize,
            fmt: &str,
            values: &str,
            fallback: (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>),
        ) -> PyResult<Bound<'py, PyBytes>> {
            crate::guarded(|| {
                let values = match values {
                    "base64" => Values::Base64,
                    "text" => Values::Text,
                    "hex" => Values::Hex,
                    "none" => Values::None,
                    other => return Err(pyo3::exceptions::PyValueError::new_err(format!("values: {other}"))),
                };
                let (text_bytes, key_repr, iso) = fallback;
                let mut fb = PyFallback { text_bytes, key_repr, iso };
                let mut out = String::with_capacity(self.cols.data.len() * 2);
                render::render(&self.cols, lo, hi, fmt == "jsonl", values, &mut fb, &mut out)?;
                Ok(PyBytes::new(py, out.as_bytes()))
            })
        }

        /// The record columns of batches `lo..hi` as native-endian int64 buffers (`array('q')` /
        /// numpy `int64`), for Arrow: `(offsets, timestamps, key_starts, key_lengths, value_starts,
        /// value_lengths, header_starts)`, a null key/value as length -1, `header_starts` with one more
        /// entry than records (indices into `header_columns`); slices index `data()`.
        fn record_columns<'py>(&self, py: Python<'py>, lo: usize, hi: usize) -> PyResult<Bound<'py, PyTuple>> {
            let c = &self.cols;
            let r = &c.records;
            let n = c.batches.len();
            let from = c.record_starts.get(lo.min(n)).copied().unwrap_or(0);
            let to = c.record_starts.get(hi.min(n)).copied().unwrap_or(from).max(from);
            let ints = |v: &mut dyn Iterator<Item = i64>| -> Bound<'py, PyBytes> {
                let bytes: Vec<u8> = v.flat_map(i64::to_ne_bytes).collect();
                PyBytes::new(py, &bytes)
            };
            let slices = |s: &[Option<crate::records::Slice>], start: bool| -> Bound<'py, PyBytes> {
                ints(&mut s.get(from..to).unwrap_or_default().iter().map(|x| match x {
                    Some((at, len)) => i64::try_from(if start { *at } else { *len }).unwrap_or(-1),
                    None => if start { 0 } else { -1 },
                }))
            };
            let items = [
                ints(&mut r.offsets.get(from..to).unwrap_or_default().iter().copied()),
                ints(&mut r.timestamps.get(from..to).unwrap_or_default().iter().copied()),
                slices(&r.keys, true),
                slices(&r.keys, false),
                slices(&r.values, true),
                slices(&r.values, false),
                ints(&mut r.header_starts.get(from..=to).unwrap_or_default().iter().map(|h| i64::try_from(*h).unwrap_or(-1))),
            ];
            PyTuple::new(py, items)
        }

        /// The window's bytes (what every slice indexes).
        fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
            PyBytes::new(py, &self.cols.data)
        }
    }

    /// `(p, stop, columns)`: the whole v2 batches of `window` from `p` on and their records as
    /// [`PyWindowColumns`]; `p` and `stop` as `scan_batches` returns them.
    #[pyfunction]
    #[pyo3(signature = (window, p, base, limit, max_batch))]
    fn decode_window_columns<'py>(
        py: Python<'py>,
        window: &Bound<'py, PyAny>,
        p: usize,
        base: i64,
        limit: i64,
        max_batch: i64,
    ) -> PyResult<(usize, u8, Bound<'py, PyWindowColumns>)> {
        crate::guarded(|| {
            crate::with_bytes(window, |buf| {
                let (next, stop, cols) = decode_window(buf, p, base, limit, max_batch);
                Ok((next, stop as u8, Bound::new(py, PyWindowColumns { cols })?))
            })
        })
    }

    pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_class::<PyWindowColumns>()?;
        m.add_function(wrap_pyfunction!(decode_window_columns, m)?)?;
        Ok(())
    }
}

pub use py::register;
