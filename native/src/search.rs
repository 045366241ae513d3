//! `dump`'s search (`kafkatool.dump.RecordFilter`) over the records of a window's columns ([`WindowColumns`]):
//! only the records that match become Python objects.
//!
//! The reference is the pure path, `RecordFilter.batch` and `RecordFilter.record`: a key or value pattern is searched
//! (`re.search`) in the bytes decoded as UTF-8 with malformed sequences replaced (`bytes.decode("utf-8",
//! "replace")`), a null key or value never matches; a header matches by its name (the header key decoded the same
//! way) and, with a pattern, one of the values of that name (not null) must match. Here the bytes are decoded the
//! same way ([`String::from_utf8_lossy`]: one U+FFFD per maximal ill-formed subsequence, as CPython's decoder; no copy
//! when they are UTF-8) and searched with the `regex` crate. The patterns are not Python's: `kafkatool.pattern`
//! translates a Python pattern into one that matches exactly the same strings, or declines (then Python searches).
//! Batch conditions (producer id, time, offset range) are the pure path's too, on the decoded columns.
//!
//! A pattern without assertions (`^`, `$`, `\A`, `\z`, `\b`) that matches a record's text also matches the bytes of
//! the whole piece of the window that holds it, at the same place (`regex::bytes` in Unicode mode matches the same
//! UTF-8 there): so where one search over the piece's bytes finds nothing, no record whose field is UTF-8 can match,
//! and only the fields that are not UTF-8 (their text holds U+FFFD, which the bytes do not) are searched one by one.
//! That search runs at `memchr` speed for a pattern with a literal in it: the common search that finds nothing costs
//! about a `grep` of the bytes.

use std::borrow::Cow;

use regex::{Regex, RegexBuilder};

use crate::columns::WindowColumns;
use crate::frame::V2Header;

/// A [`Search`] pattern that is not the `regex` crate's (`kafkatool.pattern` gave it: never the user's input as such).
#[derive(Debug)]
pub struct BadPattern(pub String);

/// A translated pattern: over a field's text, and (without assertions) over a whole piece's bytes.
#[derive(Debug)]
pub struct Pattern {
    text: Regex,
    bytes: Option<regex::bytes::Regex>,
}

/// Compile one translated pattern (Unicode mode; every flag is spelled in the pattern itself).
pub fn compile(pattern: &str) -> Result<Pattern, BadPattern> {
    let bad = |e: &dyn std::fmt::Display| BadPattern(e.to_string());
    let text = RegexBuilder::new(pattern).build().map_err(|e| bad(&e))?;
    let hir = regex_syntax::parse(pattern).map_err(|e| bad(&e))?;
    let bytes = if hir.properties().look_set().is_empty() {
        Some(regex::bytes::RegexBuilder::new(pattern).build().map_err(|e| bad(&e))?)
    } else {
        None
    };
    Ok(Pattern { text, bytes })
}

impl Pattern {
    /// Whether [`Pattern::found`] can skip the UTF-8 fields of `data`: nowhere in its bytes does the pattern match.
    fn absent_from(&self, data: &[u8]) -> bool {
        self.bytes.as_ref().is_some_and(|b| !b.is_match(data))
    }

    /// Whether the pattern matches the text of `field` (a null never does); `absent`: [`Pattern::absent_from`] the
    /// bytes holding it.
    fn found(&self, field: Option<&[u8]>, absent: bool) -> bool {
        match field {
            None => false,
            Some(b) if absent => std::str::from_utf8(b).is_err() && self.text.is_match(&text(b)),
            Some(b) => self.text.is_match(&text(b)),
        }
    }
}

/// Per call of [`Search::hits`]: which patterns are absent from the piece's bytes (key, value, header value).
#[derive(Debug, Default, Clone, Copy)]
struct Absent {
    key: bool,
    value: bool,
    header: bool,
}

/// What `RecordFilter` holds (compiled once per command); the offset range of `dump --from-offset/--to-offset`
/// (`DumpOptions.wants`) comes with each call, as [`Offsets`].
#[derive(Debug, Default)]
pub struct Search {
    pub key: Option<Pattern>,
    pub value: Option<Pattern>,
    /// A header's name and the pattern on its value.
    pub header: Option<(String, Option<Pattern>)>,
    pub producer_id: Option<i64>,
    pub from_time: Option<i128>,
    pub to_time: Option<i128>,
}

/// The offset range of `DumpOptions.wants` (`--from-offset`, `--to-offset`), both ends inclusive.
#[derive(Debug, Default, Clone, Copy)]
pub struct Offsets {
    pub from: Option<i128>,
    pub to: Option<i128>,
}

/// The text `RecordFilter` searches in: the bytes decoded as UTF-8, malformed sequences replaced.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

impl Search {
    /// `RecordFilter.batch` and `DumpOptions.wants` on a batch's header: whether its records may match.
    pub fn batch(&self, h: &V2Header, range: Offsets) -> bool {
        if self.producer_id.is_some_and(|p| p != h.producer_id) {
            return false;
        }
        if self.from_time.is_some_and(|t| i128::from(h.max_timestamp) < t) {
            return false;
        }
        let last = i128::from(h.base_offset) + i128::from(h.last_offset_delta);
        !(range.from.is_some_and(|f| last < f) || range.to.is_some_and(|t| i128::from(h.base_offset) > t))
    }

    /// `RecordFilter.record` (and the offset range) on record `j` of `cols`.
    pub fn record(&self, cols: &WindowColumns, j: usize, range: Offsets) -> bool {
        self.record_in(cols, j, range, Absent::default())
    }

    fn record_in(&self, cols: &WindowColumns, j: usize, range: Offsets, absent: Absent) -> bool {
        let r = &cols.records;
        let (Some(&offset), Some(&ts)) = (r.offsets.get(j), r.timestamps.get(j)) else {
            return false;
        };
        let (offset, ts) = (i128::from(offset), i128::from(ts));
        if range.from.is_some_and(|f| offset < f) || range.to.is_some_and(|t| offset > t) {
            return false;
        }
        if self.from_time.is_some_and(|t| ts < t) || self.to_time.is_some_and(|t| ts > t) {
            return false;
        }
        if let Some(rx) = &self.key {
            if !rx.found(cols.slice(r.keys.get(j).copied().flatten()), absent.key) {
                return false;
            }
        }
        if let Some(rx) = &self.value {
            if !rx.found(cols.slice(r.values.get(j).copied().flatten()), absent.value) {
                return false;
            }
        }
        if let Some((name, rx)) = &self.header {
            let from = r.header_starts.get(j).copied().unwrap_or(0);
            let to = r.header_starts.get(j + 1).copied().unwrap_or(from);
            let mut named = false;
            let mut hit = false;
            for h in from..to {
                let key = cols.slice(r.header_keys.get(h).copied()).unwrap_or_default();
                if text(key) != name.as_str() {
                    continue;
                }
                named = true;
                match rx {
                    None => hit = true,
                    Some(rx) => hit = rx.found(cols.slice(r.header_values.get(h).copied().flatten()), absent.header),
                }
                if hit {
                    break;
                }
            }
            if !(named && hit) {
                return false;
            }
        }
        true
    }

    /// The decoded batches of `lo..hi` with records that match, each with the indices of those records, in order.
    pub fn hits(&self, cols: &WindowColumns, lo: usize, hi: usize, range: Offsets) -> Vec<(usize, Vec<usize>)> {
        let absent_from = |p: Option<&Pattern>| p.is_some_and(|p| p.absent_from(&cols.data));
        let absent = Absent {
            key: absent_from(self.key.as_ref()),
            value: absent_from(self.value.as_ref()),
            header: absent_from(self.header.as_ref().and_then(|(_, p)| p.as_ref())),
        };
        let mut out = Vec::new();
        for i in lo..hi.min(cols.batches.len()) {
            let (Some(e), Some(true)) = (cols.batches.get(i), cols.decoded.get(i).copied()) else {
                continue;
            };
            if !self.batch(&e.header, range) {
                continue;
            }
            let matched: Vec<usize> = cols.record_range(i).filter(|j| self.record_in(cols, *j, range, absent)).collect();
            if !matched.is_empty() {
                out.push((i, matched));
            }
        }
        out
    }
}

pub mod py {
    use pyo3::exceptions::PyValueError;
    use pyo3::prelude::*;

    use super::{compile, Search};

    /// A compiled [`Search`] (`kafkatool.dump.record_filter` makes one per command, from the translated patterns of
    /// `kafkatool.pattern`); `WindowColumns.search` applies it.
    #[pyclass(frozen, name = "RecordSearch", module = "kafkatool._native")]
    pub struct PyRecordSearch {
        pub search: Search,
    }

    #[pymethods]
    impl PyRecordSearch {
        /// `ValueError` when a pattern is not the `regex` crate's (too big, say): the caller searches in Python.
        #[new]
        #[pyo3(signature = (key=None, value=None, header=None, producer_id=None, from_time=None, to_time=None))]
        fn new(
            key: Option<&str>,
            value: Option<&str>,
            header: Option<(String, Option<String>)>,
            producer_id: Option<i64>,
            from_time: Option<i128>,
            to_time: Option<i128>,
        ) -> PyResult<Self> {
            let rx = |p: Option<&str>| p.map(compile).transpose().map_err(|e| PyValueError::new_err(e.0));
            let header = match header {
                None => None,
                Some((name, pattern)) => Some((name, rx(pattern.as_deref())?)),
            };
            let search = Search { key: rx(key)?, value: rx(value)?, header, producer_id, from_time, to_time };
            Ok(PyRecordSearch { search })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::decode_window;
    use crate::frame::RECORD_BATCH_OVERHEAD;

    fn varint(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 0x80 {
            out.push((z as u8) | 0x80);
            z >>= 7;
        }
        out.push(z as u8);
    }

    fn bytes_field(out: &mut Vec<u8>, b: Option<&[u8]>) {
        match b {
            None => varint(out, -1),
            Some(b) => {
                varint(out, b.len() as i64);
                out.extend_from_slice(b);
            }
        }
    }

    type Rec<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, &'a [(&'a [u8], Option<&'a [u8]>)]);

    /// One uncompressed v2 batch of `records` at `base`, producer id `pid`, CRC computed.
    fn batch(base: i64, pid: i64, records: &[Rec<'_>]) -> Vec<u8> {
        let mut section = Vec::new();
        for (delta, (key, value, headers)) in records.iter().enumerate() {
            let mut body = vec![0u8];
            varint(&mut body, 0);
            varint(&mut body, delta as i64);
            bytes_field(&mut body, *key);
            bytes_field(&mut body, *value);
            varint(&mut body, headers.len() as i64);
            for (k, v) in *headers {
                bytes_field(&mut body, Some(k));
                bytes_field(&mut body, *v);
            }
            varint(&mut section, body.len() as i64);
            section.extend_from_slice(&body);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&base.to_be_bytes());
        b.extend_from_slice(&((RECORD_BATCH_OVERHEAD - 12 + section.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(records.len() as i32 - 1).to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&pid.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&(records.len() as i32).to_be_bytes());
        b.extend_from_slice(&section);
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn window() -> WindowColumns {
        let mut buf = batch(0, 7, &[(Some(b"order-1"), Some(b"paid"), &[(b"src", Some(b"web"))]), (None, None, &[])]);
        buf.extend(batch(2, 8, &[(Some(b"\xffkey"), Some(b"caf\xc3\xa9 \xe9"), &[(b"src", None), (b"src", Some(b"app"))])]));
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        assert_eq!(cols.decoded, [true, true]);
        cols
    }

    fn search() -> Search {
        Search::default()
    }

    #[test]
    fn keys_and_values_are_searched_as_text_nulls_never_match() {
        let cols = window();
        let s = Search { key: Some(compile("^order").unwrap()), ..search() };
        assert_eq!(s.hits(&cols, 0, 2, Offsets::default()), [(0, vec![0])]);
        // a malformed byte is one U+FFFD, as Python's decode("utf-8", "replace") gives it
        let s = Search { key: Some(compile("^\u{FFFD}key$").unwrap()), ..search() };
        assert_eq!(s.hits(&cols, 0, 2, Offsets::default()), [(1, vec![2])]);
        let s = Search { value: Some(compile("café \u{FFFD}").unwrap()), ..search() };
        assert_eq!(s.hits(&cols, 0, 2, Offsets::default()), [(1, vec![2])]);
        let s = Search { value: Some(compile("").unwrap()), ..search() };
        assert_eq!(s.hits(&cols, 0, 2, Offsets::default()), [(0, vec![0]), (1, vec![2])]); // the null value of record 1 never matches
    }

    #[test]
    fn a_piece_without_the_pattern_still_searches_its_fields_that_are_not_utf8() {
        let cols = window();
        // "\u{FFFD}key" is not in the bytes (they hold 0xFF there): the piece-level search finds nothing...
        let p = compile("\u{FFFD}k").unwrap();
        assert!(p.absent_from(&cols.data));
        // ...and the key that is not UTF-8 is still searched as its text, as Python's decode("utf-8", "replace")
        let s = Search { key: Some(p), ..search() };
        assert_eq!(s.hits(&cols, 0, 2, Offsets::default()), [(1, vec![2])]);
        // anchored patterns are never skipped that way
        assert!(!compile("^order").unwrap().absent_from(b""));
    }

    #[test]
    fn headers_match_by_name_then_any_value() {
        let cols = window();
        let named = |name: &str, rx: Option<&str>| Search { header: Some((name.into(), rx.map(|p| compile(p).unwrap()))), ..search() };
        assert_eq!(named("src", None).hits(&cols, 0, 2, Offsets::default()), [(0, vec![0]), (1, vec![2])]);
        assert_eq!(named("src", Some("^app$")).hits(&cols, 0, 2, Offsets::default()), [(1, vec![2])]);
        assert_eq!(named("dst", None).hits(&cols, 0, 2, Offsets::default()), []);
    }

    #[test]
    fn batch_conditions_and_ranges() {
        let cols = window();
        assert_eq!(Search { producer_id: Some(8), ..search() }.hits(&cols, 0, 2, Offsets::default()), [(1, vec![2])]);
        assert_eq!(search().hits(&cols, 0, 2, Offsets { from: Some(1), to: Some(1) }), [(0, vec![1])]);
        assert_eq!(search().hits(&cols, 0, 2, Offsets { from: Some(3), to: None }), []);
        assert_eq!(Search { from_time: Some(1001), ..search() }.hits(&cols, 0, 2, Offsets::default()), []);
        assert_eq!(Search { to_time: Some(1000), ..search() }.hits(&cols, 1, 2, Offsets::default()), [(1, vec![2])]);
    }
}
