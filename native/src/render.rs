//! Batch and record lines of `kafkatool dump --records`, rendered from [`WindowColumns`] straight into
//! one output buffer: the text and JSON-lines formats of `kafkatool/cli/output/text.py` (`_batch`, `_record`,
//! `Batch.as_dict`, `Record.as_dict`, `json.dumps` with its default separators and `ensure_ascii`),
//! byte for byte (`tests/test_native.py` holds the two identical).
//!
//! What is rare and tied to Python's own rules goes back to Python through [`Fallback`]: `repr()` of a
//! string that is not printable ASCII (Python's Unicode printability tables), and dates past year 2242
//! or before 1970 (where `datetime.fromtimestamp` of a float may round differently).

use crate::columns::WindowColumns;
use crate::frame::Entry;
use crate::records::{RecordColumns, Slice};

/// How keys, values and header values are shown (`dump --values`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    Base64,
    Text,
    Hex,
    None,
}

impl Values {
    /// The mode `dump --values` names: "base64", "text", "hex" or "none".
    pub fn parse(name: &str) -> Option<Values> {
        match name {
            "base64" => Some(Values::Base64),
            "text" => Some(Values::Text),
            "hex" => Some(Values::Hex),
            "none" => Some(Values::None),
            _ => None,
        }
    }
}

/// Records and the bytes their slices index: a window's ([`WindowColumns`]), or one chunk of the records of a
/// batch that declares more than a window decodes (`columns::py::PyRecordChunk`), whose line is written before.
#[derive(Debug, Clone, Copy)]
pub struct Records<'a> {
    pub cols: &'a RecordColumns,
    pub data: &'a [u8],
}

impl<'a> Records<'a> {
    fn slice(&self, s: Option<Slice>) -> Option<&'a [u8]> {
        s.and_then(|(at, len)| self.data.get(at..at.checked_add(len)?))
    }

    /// Record `j`'s key and value (`None`: null).
    fn key_value(&self, j: usize) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let r = self.cols;
        (self.slice(r.keys.get(j).copied().flatten()), self.slice(r.values.get(j).copied().flatten()))
    }

    /// Record `j`'s headers: each one's key and value (`None`: null).
    fn headers(&self, j: usize) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        let (recs, r) = (*self, self.cols);
        let from = r.header_starts.get(j).copied().unwrap_or(0);
        let to = r.header_starts.get(j + 1).copied().unwrap_or(from);
        (from..to).map(move |k| {
            let key = recs.slice(r.header_keys.get(k).copied()).unwrap_or_default();
            (key, recs.slice(r.header_values.get(k).copied().flatten()))
        })
    }
}

/// Python's rendering of the rare cases (see the module docs).
pub trait Fallback {
    type Error;
    /// `output.text._text_bytes(data)`: a quoted string when UTF-8, else `0x<hex>`.
    fn text_bytes(&mut self, data: &[u8]) -> Result<String, Self::Error>;
    /// `repr(key.decode("utf-8", "replace"))`.
    fn key_repr(&mut self, key: &[u8]) -> Result<String, Self::Error>;
    /// `output.text._iso(ts)`.
    fn iso(&mut self, ts: i64) -> Result<String, Self::Error>;
}

/// How many bytes of lines [`render`] gathers before handing them on: a buffer that stays in the caches
/// and is reused. One buffer for a whole window's lines (tens of MB of JSON for small batches) cost more
/// in page faults and copies than the rendering itself.
pub const CHUNK: usize = 64 * 1024;

/// What [`render`] renders: batches of a window (and, with `records`, each one's records), or records alone, one
/// chunk of a batch's records at a time (`kafkatool.records.record_chunks`), the batch's line written before the
/// first chunk.
#[derive(Debug, Clone, Copy)]
pub enum Shown<'a> {
    Batches { cols: &'a WindowColumns, records: bool },
    Records(Records<'a>),
}

/// The pieces [`render`] writes: each one the batch whose line comes first (if any), then the records shown.
type Pieces<'a> = Box<dyn Iterator<Item = (Option<usize>, std::ops::Range<usize>)> + 'a>;

/// Render batches (or records) `lo..hi` of `shown` as text (`json == false`) or JSON lines, handing them to
/// `write` in pieces of whole lines, each of about [`CHUNK`] bytes (the last one shorter, and none when there is
/// nothing to write): `out`, the buffer the lines gather in (empty on return), is handed on whenever it holds
/// [`CHUNK`] bytes or more before a record or after a batch's records. `context` ends each JSON line, before its
/// `}` (`, "topic": .., "partition": .., "path": ..`: the file's, rendered once a file by Python).
#[allow(clippy::too_many_arguments)]
pub fn render<F: Fallback>(
    shown: Shown<'_>,
    lo: usize,
    hi: usize,
    json: bool,
    context: &str,
    values: Values,
    fb: &mut F,
    out: &mut String,
    write: &mut dyn FnMut(&str) -> Result<(), F::Error>,
) -> Result<(), F::Error> {
    let (recs, pieces): (Records<'_>, Pieces<'_>) = match shown {
        Shown::Batches { cols, records } => (
            Records { cols: &cols.records, data: &cols.data },
            Box::new((lo..hi.min(cols.batches.len())).map(move |i| {
                (Some(i), if records { cols.record_range(i) } else { 0..0 })
            })),
        ),
        Shown::Records(recs) => (recs, Box::new(std::iter::once((None, lo..hi.min(recs.cols.len()))))),
    };
    for (batch, range) in pieces {
        if let (Some(i), Shown::Batches { cols, .. }) = (batch, shown) {
            if json {
                json_batch(cols, i, context, out);
            } else {
                text_batch(cols, i, fb, out)?;
            }
        }
        for j in range {
            if out.len() >= CHUNK {
                write(out)?;
                out.clear();
            }
            if json {
                json_record(recs, j, values, context, out);
            } else {
                text_record(recs, j, values, fb, out)?;
            }
        }
        if out.len() >= CHUNK {
            write(out)?;
            out.clear();
        }
    }
    if !out.is_empty() {
        write(out)?;
        out.clear();
    }
    Ok(())
}

// -- JSON lines ------------------------------------------------------------------------------

/// An integer in decimal (what `str(int)` and `json.dumps` write).
fn int<I: itoa::Integer>(out: &mut String, v: I) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// The codec of a batch's attributes as `kafkatool.model.Batch.compression` names it (decoded batches have one
/// Kafka defines).
fn codec_name(attributes: i16) -> &'static str {
    crate::CODECS.get((attributes & 7) as usize).copied().unwrap_or("none")
}

/// Batch `i` of `cols` and its last offset (`Batch.last_offset`).
fn batch_at(cols: &WindowColumns, i: usize) -> Option<(&Entry, i64)> {
    let e = cols.batches.get(i)?;
    Some((e, e.header.base_offset.saturating_add(i64::from(e.header.last_offset_delta))))
}

/// Record `j`'s offset and timestamp.
fn record_at(recs: Records<'_>, j: usize) -> Option<(i64, i64)> {
    Some((*recs.cols.offsets.get(j)?, *recs.cols.timestamps.get(j)?))
}

/// A value of a JSON object's field, as `json.dumps` writes it.
enum Json {
    Int(i64),
    Size(usize),
    /// Written as it is (a literal).
    Raw(&'static str),
    /// Written quoted (a name with nothing to escape).
    Name(&'static str),
}

fn flag(v: bool) -> Json {
    Json::Raw(if v { "true" } else { "false" })
}

/// `, "<key>": <value>` for each field.
fn json_fields(fields: &[(&str, Json)], out: &mut String) {
    for (key, v) in fields {
        out.push_str(", \"");
        out.push_str(key);
        out.push_str("\": ");
        match v {
            Json::Int(n) => int(out, *n),
            Json::Size(n) => int(out, *n),
            Json::Raw(s) => out.push_str(s),
            Json::Name(s) => json_str(s, out),
        }
    }
}

/// The marker control batch `i` holds, when its one record was read here ([`WindowColumns::control`]) as an
/// end-transaction marker (Kafka's `ControlRecordType` ABORT 0 / COMMIT 1, a value holding the coordinator epoch):
/// its name and coordinator epoch (`kafkatool.records.read_marker`; in a stretch only such markers).
fn marker(cols: &WindowColumns, i: usize) -> Option<(&'static str, i32)> {
    let c = cols.control(i)?;
    let name = match (c.key_version >= 0, c.key_type) {
        (true, 0) => "ABORT",
        (true, 1) => "COMMIT",
        _ => return None,
    };
    Some((name, c.value?.1))
}

fn json_batch(cols: &WindowColumns, i: usize, context: &str, out: &mut String) {
    let Some((e, last)) = batch_at(cols, i) else { return };
    let h = &e.header;
    let a = h.attributes;
    let fields = [
        ("position", Json::Int(e.position)),
        ("base_offset", Json::Int(h.base_offset)),
        ("last_offset", Json::Int(last)),
        ("size", Json::Size(e.total)),
        ("magic", Json::Raw("2")),
        ("crc", Json::Int(i64::from(h.crc))),
        ("crc_valid", flag(e.crc_valid)),
        ("partition_leader_epoch", Json::Int(i64::from(h.partition_leader_epoch))),
        ("compression", Json::Name(codec_name(a))),
        ("timestamp_type", Json::Name(if a & 0x08 != 0 { "log_append" } else { "create" })),
        ("transactional", flag(a & 0x10 != 0)),
        ("control", flag(a & 0x20 != 0)),
        ("first_timestamp", Json::Int(h.base_timestamp)),
        ("max_timestamp", Json::Int(h.max_timestamp)),
        ("producer_id", Json::Int(h.producer_id)),
        ("producer_epoch", Json::Int(i64::from(h.producer_epoch))),
        ("base_sequence", Json::Int(i64::from(h.base_sequence))),
        ("record_count", Json::Int(i64::from(h.records_count))),
    ];
    out.push_str("{\"type\": \"batch\"");
    json_fields(&fields, out);
    if a & 0x40 != 0 {
        json_fields(&[("delete_horizon_ms", Json::Int(h.base_timestamp))], out);
    }
    if let Some((name, epoch)) = marker(cols, i).filter(|_| a & 0x20 != 0) {
        json_fields(&[("control_type", Json::Name(name)), ("coordinator_epoch", Json::Int(i64::from(epoch)))], out);
    }
    out.push_str(context);
    out.push_str("}\n");
}

fn json_record(recs: Records<'_>, j: usize, values: Values, context: &str, out: &mut String) {
    let Some((off, ts)) = record_at(recs, j) else { return };
    out.push_str("{\"type\": \"record\"");
    json_fields(&[("offset", Json::Int(off)), ("timestamp", Json::Int(ts))], out);
    if values != Values::None {
        let (key, value) = recs.key_value(j);
        out.push_str(", \"key\": ");
        json_value(key, values, out);
        out.push_str(", \"value\": ");
        json_value(value, values, out);
    }
    out.push_str(", \"headers\": [");
    for (n, (key, value)) in recs.headers(j).enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        out.push('[');
        json_str(&String::from_utf8_lossy(key), out);
        out.push_str(", ");
        json_value(if values == Values::None { None } else { value }, values, out);
        out.push(']');
    }
    out.push(']');
    out.push_str(context);
    out.push_str("}\n");
}

fn json_value(v: Option<&[u8]>, values: Values, out: &mut String) {
    let Some(v) = v else {
        out.push_str("null");
        return;
    };
    match values {
        Values::Base64 | Values::None => {
            out.push('"');
            base64(v, out);
            out.push('"');
        }
        Values::Hex => {
            out.push('"');
            hex(v, out);
            out.push('"');
        }
        Values::Text => {
            // bytes.decode("utf-8", "backslashreplace"), then json.dumps
            out.push('"');
            let mut rest = v;
            loop {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        json_chars(s, out);
                        break;
                    }
                    Err(err) => {
                        let (good, bad) = rest.split_at(err.valid_up_to());
                        json_chars(std::str::from_utf8(good).unwrap_or_default(), out);
                        let n = err.error_len().unwrap_or(bad.len());
                        for byte in bad.iter().take(n) {
                            out.push_str("\\\\x");
                            push_hex(*byte, out);
                        }
                        rest = bad.get(n..).unwrap_or_default();
                    }
                }
            }
            out.push('"');
        }
    }
}

fn json_str(s: &str, out: &mut String) {
    out.push('"');
    json_chars(s, out);
    out.push('"');
}

/// The characters of a JSON string as `json.dumps` writes them (`ensure_ascii=True`).
fn json_chars(s: &str, out: &mut String) {
    use std::fmt::Write;
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{:04x}", u);
                }
            }
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_byte(v: u32) -> u8 {
    B64.get((v & 63) as usize).copied().unwrap_or(b'=')
}

fn b64_char(v: u32) -> char {
    char::from(b64_byte(v))
}

fn base64(data: &[u8], out: &mut String) {
    // 192 bytes at a time into 256 characters on the stack, pushed as one str (a push per character
    // was most of the JSON of kilobyte values)
    let mut blocks = data.chunks_exact(192);
    for block in &mut blocks {
        let mut text = [0u8; 256];
        for (c, quad) in block.chunks_exact(3).zip(text.chunks_exact_mut(4)) {
            if let ([a, b, d], [w, x, y, z]) = (c, quad) {
                let n = u32::from(*a) << 16 | u32::from(*b) << 8 | u32::from(*d);
                (*w, *x, *y, *z) = (b64_byte(n >> 18), b64_byte(n >> 12), b64_byte(n >> 6), b64_byte(n));
            }
        }
        out.push_str(std::str::from_utf8(&text).unwrap_or_default());
    }
    let rest = blocks.remainder();
    let mut chunks = rest.chunks_exact(3);
    for c in &mut chunks {
        if let [a, b, d] = c {
            let n = u32::from(*a) << 16 | u32::from(*b) << 8 | u32::from(*d);
            for shift in [18, 12, 6, 0] {
                out.push(b64_char(n >> shift));
            }
        }
    }
    match chunks.remainder() {
        [a] => {
            let n = u32::from(*a) << 16;
            out.push(b64_char(n >> 18));
            out.push(b64_char(n >> 12));
            out.push_str("==");
        }
        [a, b] => {
            let n = u32::from(*a) << 16 | u32::from(*b) << 8;
            out.push(b64_char(n >> 18));
            out.push(b64_char(n >> 12));
            out.push(b64_char(n >> 6));
            out.push('=');
        }
        _ => {}
    }
}

fn push_hex(b: u8, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(char::from(HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0')));
    out.push(char::from(HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0')));
}

fn hex(data: &[u8], out: &mut String) {
    for b in data {
        push_hex(*b, out);
    }
}

// -- text --------------------------------------------------------------------------------------

/// `_iso`: an epoch-ms timestamp as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC), a negative one as its number.
fn iso<F: Fallback>(ts: i64, fb: &mut F, out: &mut String) -> Result<(), F::Error> {
    // Below 2^33 s a float timestamp rounds back to the exact millisecond in datetime.fromtimestamp.
    if !(0..8_000_000_000_000).contains(&ts) {
        if ts < 0 {
            int(out, ts);
        } else {
            out.push_str(&fb.iso(ts)?);
        }
        return Ok(());
    }
    let (days, ms) = (ts / 86_400_000, ts % 86_400_000);
    let (y, m, d) = civil_from_days(days);
    let digits = |out: &mut String, v: i64, width: u32| {
        for k in (0..width).rev() {
            out.push(char::from(b'0' + (v / 10i64.pow(k) % 10) as u8));
        }
    };
    digits(out, y, 4);
    out.push('-');
    digits(out, m, 2);
    out.push('-');
    digits(out, d, 2);
    out.push('T');
    digits(out, ms / 3_600_000, 2);
    out.push(':');
    digits(out, ms / 60_000 % 60, 2);
    out.push(':');
    digits(out, ms / 1000 % 60, 2);
    out.push('.');
    digits(out, ms % 1000, 3);
    out.push('Z');
    Ok(())
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn text_batch<F: Fallback>(cols: &WindowColumns, i: usize, fb: &mut F, out: &mut String) -> Result<(), F::Error> {
    let Some((e, last)) = batch_at(cols, i) else { return Ok(()) };
    let h = &e.header;
    let a = h.attributes;
    out.push_str("offset ");
    int(out, h.base_offset);
    if last != h.base_offset {
        out.push_str("..");
        int(out, last);
    }
    out.push_str("  pos ");
    int(out, e.position);
    out.push_str("  ");
    int(out, e.total);
    out.push_str(" B  v2  ");
    out.push_str(codec_name(h.attributes));
    out.push_str("  ");
    int(out, h.records_count);
    out.push_str(" rec  epoch ");
    int(out, h.partition_leader_epoch);
    out.push_str(if a & 0x08 != 0 { "  log_append " } else { "  create " });
    iso(h.base_timestamp, fb, out)?;
    if h.base_timestamp != h.max_timestamp {
        out.push_str("..");
        iso(h.max_timestamp, fb, out)?;
    }
    if h.producer_id >= 0 {
        out.push_str("  producer ");
        int(out, h.producer_id);
        out.push_str(" epoch ");
        int(out, h.producer_epoch);
        out.push_str(" seq ");
        int(out, h.base_sequence);
    }
    if a & 0x10 != 0 {
        out.push_str("  transactional");
    }
    if a & 0x20 != 0 {
        out.push_str(if a & 0x10 != 0 { " " } else { "  " });
        match marker(cols, i) {
            Some((name, epoch)) => {
                out.push_str(name);
                out.push_str(" coordinator epoch ");
                int(out, epoch);
            }
            None => out.push_str("control"),
        }
    }
    if a & 0x40 != 0 {
        out.push_str("  delete-horizon ");
        iso(h.base_timestamp, fb, out)?;
    }
    out.push_str(if e.crc_valid { "  crc ok\n" } else { "  CRC MISMATCH\n" });
    Ok(())
}

/// `repr()` of a str made of printable ASCII (see [`printable_ascii`]), as Python quotes it: the runs
/// between the characters it escapes are copied whole.
fn ascii_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    let mut rest = s;
    while let Some(at) = rest.find(['\\', quote]) {
        out.push_str(rest.get(..at).unwrap_or_default());
        out.push('\\');
        out.push_str(rest.get(at..=at).unwrap_or_default());
        rest = rest.get(at + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out.push(quote);
}

/// `s` as a str when it is all printable ASCII (what [`ascii_repr`] renders as Python would).
fn printable_ascii(s: &[u8]) -> Option<&str> {
    // every byte tested, no early exit: the loop vectorizes (values are often kilobytes)
    if s.iter().fold(true, |all, b| all & (0x20..0x7f).contains(b)) {
        std::str::from_utf8(s).ok()
    } else {
        None
    }
}

fn text_value<F: Fallback>(v: Option<&[u8]>, values: Values, fb: &mut F, out: &mut String) -> Result<(), F::Error> {
    let Some(v) = v else {
        out.push_str("null");
        return Ok(());
    };
    match values {
        Values::Text => match printable_ascii(v) {
            Some(text) => ascii_repr(text, out),
            None => out.push_str(&fb.text_bytes(v)?),
        },
        Values::Hex => hex(v, out),
        Values::Base64 => base64(v, out),
        Values::None => out.push_str("null"),
    }
    Ok(())
}

fn text_record<F: Fallback>(
    recs: Records<'_>,
    j: usize,
    values: Values,
    fb: &mut F,
    out: &mut String,
) -> Result<(), F::Error> {
    let Some((off, ts)) = record_at(recs, j) else { return Ok(()) };
    out.push_str("    | ");
    int(out, off);
    out.push_str("  ");
    iso(ts, fb, out)?;
    if values != Values::None {
        let (key, value) = recs.key_value(j);
        out.push_str("  key=");
        text_value(key, values, fb, out)?;
        out.push_str(" value=");
        text_value(value, values, fb, out)?;
    }
    for (n, (key, value)) in recs.headers(j).enumerate() {
        out.push_str(if n > 0 { ", " } else { "  headers=" });
        match printable_ascii(key) {
            Some(text) => ascii_repr(text, out),
            None => out.push_str(&fb.key_repr(key)?),
        }
        out.push('=');
        text_value(value, values, fb, out)?;
    }
    out.push('\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_hex_and_dates() {
        let mut s = String::new();
        for data in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar"] {
            base64(data, &mut s);
            s.push(' ');
        }
        assert_eq!(s, " Zg== Zm8= Zm9v Zm9vYg== Zm9vYmE= Zm9vYmFy ");
        // across the 192-byte blocks: every length up to three blocks, against the one-by-one encoding
        let data: Vec<u8> = (0..=255u8).cycle().step_by(7).take(600).collect();
        for n in 0..=data.len() {
            let (mut fast, mut slow) = (String::new(), String::new());
            base64(&data[..n], &mut fast);
            for c in data[..n].chunks(3) {
                let k = c.iter().fold(0u32, |k, b| k << 8 | u32::from(*b)) << (8 * (3 - c.len()));
                for i in 0..=c.len() {
                    slow.push(b64_char(k >> (18 - 6 * i)));
                }
                slow.push_str(&"=="[..3 - c.len()]);
            }
            assert_eq!(fast, slow, "{n} bytes");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_675), (2023, 11, 14));
        let mut s = String::new();
        for text in [r#"it's"#, r#"a\'""#, r#""#, r#"\"#, r#"''"#, r#"x\y\\z"#, r#"\'"#] {
            ascii_repr(text, &mut s);
        }
        assert_eq!(s, r#""it's"'a\\\'"''''\\'"''"'x\\y\\\\z'"\\'""#); // Python's repr() of each
        assert_eq!(printable_ascii(b"a b~"), Some("a b~"));
        assert!([&b"tab\t"[..], b"\x7f", "\u{e9}".as_bytes()].iter().all(|s| printable_ascii(s).is_none()));
    }
}
