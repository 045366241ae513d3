//! v2 records (Kafka's `DefaultRecord`) decoded into columns over one buffer.
//!
//! ```text
//! length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
//! keyLength varint | key | valueLength varint | value | headerCount varint
//! [headerKeyLength varint | headerKey | headerValueLength varint | headerValue]...
//! ```
//!
//! Varints are zig-zag; like the Python reader (`records._varint_slow`), a varint may take 5 bytes
//! (varlong: 10) and a longer one is an error. Keys, values and headers are `(start, len)` slices
//! of the buffer, `None` for a negative length (null).
//!
//! [`decode_v2`] either decodes *every* record of the section exactly as `records.decode_records`
//! does, or returns `Err` and decides nothing: the Python reader then decodes that batch itself and
//! reports the finding (record-invalid, records-trailing-bytes) with its own wording. Values the
//! Python reader would carry as integers beyond 64 bits (a 10-byte timestamp varint's top bits,
//! offsets past `i64::MAX`) are also an `Err` here, so the two never differ.

use crate::frame::{be_i16, be_i32};

/// A slice of the records buffer.
pub type Slice = (usize, usize);

/// The records of one batch, column by column (absolute offsets and timestamps).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RecordColumns {
    pub offsets: Vec<i64>,
    pub timestamps: Vec<i64>,
    pub keys: Vec<Option<Slice>>,
    pub values: Vec<Option<Slice>>,
    /// Headers of record `i` are `headers[header_starts[i]..header_starts[i + 1]]`.
    pub header_starts: Vec<usize>,
    pub header_keys: Vec<Slice>,
    pub header_values: Vec<Option<Slice>>,
}

impl RecordColumns {
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }
}

/// Why [`decode_v2`] gave up (the Python reader words the finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// A field runs past the end of the buffer.
    PastEnd,
    /// A varint longer than 5 bytes (varlong: 10).
    VarintTooLong,
    /// A record length, header count or header key length that is invalid.
    BadLength,
    /// A record's fields do not take exactly its declared length.
    LengthMismatch,
    /// Bytes remain after the declared records.
    TrailingBytes,
    /// A value the Python reader would hold as an integer beyond 64 bits.
    Beyond64Bits,
}

/// The batch-level facts record decoding needs (from the v2 header).
#[derive(Debug, Clone, Copy)]
pub struct BatchContext {
    pub base_offset: i64,
    pub base_timestamp: i64,
    /// `Some(maxTimestamp)` for LOG_APPEND_TIME batches: every record takes it.
    pub log_append_time: Option<i64>,
    /// `recordsCount` from the header (a negative count decodes no record).
    pub count: i64,
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    /// A zig-zag varint of at most `max_shift / 7 + 1` bytes, as a value of up to 70 bits.
    fn varint(&mut self, max_shift: u32) -> Result<i128, Fail> {
        let mut value: u128 = 0;
        let mut shift: u32 = 0;
        loop {
            let b = *self.data.get(self.pos).ok_or(Fail::PastEnd)?;
            self.pos += 1;
            value |= u128::from(b & 0x7F) << shift;
            if b < 0x80 {
                let half = (value >> 1) as i128;
                return Ok(if value & 1 == 1 { -half - 1 } else { half });
            }
            shift += 7;
            if shift > max_shift {
                return Err(Fail::VarintTooLong);
            }
        }
    }

    fn varint32(&mut self) -> Result<i64, Fail> {
        // at most 35 bits of payload: always fits
        i64::try_from(self.varint(28)?).map_err(|_| Fail::Beyond64Bits)
    }

    /// A slice of `len` bytes (`None` if negative) at the current position; the position moves past
    /// it even when it runs past the end (the caller's final length check catches that, as in Python).
    fn slice(&mut self, len: i64) -> Option<Slice> {
        let len = usize::try_from(len).ok()?;
        let start = self.pos;
        self.pos = self.pos.saturating_add(len);
        Some((start, len))
    }
}

/// Decode the `ctx.count` records of `data[start..]`, which must end exactly at the end of `data`.
pub fn decode_v2(data: &[u8], start: usize, ctx: &BatchContext) -> Result<RecordColumns, Fail> {
    decode_v2_part(data, start, ctx, true).map(|(cols, _)| cols)
}

/// The next `ctx.count` records of a section from `data[start..]` on, and where they end: one chunk of a batch
/// whose records are decoded a bounded number at a time (the records of a record-count bomb are never all held at
/// once). With `last`, the section must end after them ([`Fail::TrailingBytes`]), as in [`decode_v2`].
pub fn decode_v2_part(data: &[u8], start: usize, ctx: &BatchContext, last: bool) -> Result<(RecordColumns, usize), Fail> {
    let mut cols = RecordColumns::default();
    cols.header_starts.push(0);
    let end = decode_records(data, start, ctx, &mut cols)?;
    if last && end != data.len() {
        return Err(Fail::TrailingBytes);
    }
    Ok((cols, end))
}

/// [`decode_v2`] appending to `cols` (whose `header_starts` must already end with the index of the next
/// header): the multi-batch columns of `columns.rs` gather many batches' records this way. On `Err`
/// `cols` is left exactly as it was.
pub fn decode_v2_into(data: &[u8], start: usize, ctx: &BatchContext, cols: &mut RecordColumns) -> Result<(), Fail> {
    let before = (cols.offsets.len(), cols.header_keys.len());
    let result = decode_records(data, start, ctx, cols)
        .and_then(|end| if end == data.len() { Ok(()) } else { Err(Fail::TrailingBytes) });
    if result.is_err() {
        let (records, headers) = before;
        cols.offsets.truncate(records);
        cols.timestamps.truncate(records);
        cols.keys.truncate(records);
        cols.values.truncate(records);
        cols.header_starts.truncate(records + 1);
        cols.header_keys.truncate(headers);
        cols.header_values.truncate(headers);
    }
    result
}

/// The `ctx.count` records from `data[start..]` on, appended to `cols`; returns where they end.
fn decode_records(data: &[u8], start: usize, ctx: &BatchContext, cols: &mut RecordColumns) -> Result<usize, Fail> {
    let n = data.len();
    let mut r = Reader { data, pos: start };
    let count = usize::try_from(ctx.count.max(0)).unwrap_or(usize::MAX);
    // A record takes at least 7 bytes: never reserve more than the bytes could hold.
    let reserve = count.min(n.saturating_sub(start) / 7 + 1);
    cols.offsets.reserve(reserve);
    cols.timestamps.reserve(reserve);
    cols.keys.reserve(reserve);
    cols.values.reserve(reserve);
    cols.header_starts.reserve(reserve);
    for _ in 0..count {
        let length = r.varint32()?;
        let end = i128::from(length) + r.pos as i128;
        if length < 0 || end > n as i128 {
            return Err(Fail::BadLength);
        }
        r.pos += 1; // attributes (unused)
        let ts_delta = r.varint(63)?;
        let off_delta = r.varint32()?;
        let klen = r.varint32()?;
        cols.keys.push(r.slice(klen));
        let vlen = r.varint32()?;
        cols.values.push(r.slice(vlen));
        let hcount = r.varint32()?;
        if hcount < 0 {
            return Err(Fail::BadLength);
        }
        for _ in 0..hcount {
            let hklen = r.varint32()?;
            let key = r.slice(hklen).ok_or(Fail::BadLength)?;
            let hvlen = r.varint32()?;
            cols.header_keys.push(key);
            cols.header_values.push(r.slice(hvlen));
        }
        cols.header_starts.push(cols.header_keys.len());
        if r.pos as i128 != end {
            return Err(Fail::LengthMismatch);
        }
        cols.offsets.push(
            ctx.base_offset
                .checked_add(off_delta)
                .ok_or(Fail::Beyond64Bits)?,
        );
        let ts = match ctx.log_append_time {
            Some(ts) => ts,
            None => i64::try_from(i128::from(ctx.base_timestamp) + ts_delta)
                .map_err(|_| Fail::Beyond64Bits)?,
        };
        cols.timestamps.push(ts);
    }
    Ok(r.pos)
}

/// What the one record of a control batch holds, as bytes: the key as Kafka's `ControlRecordType` reads it
/// (int16 version, int16 type), the value's first 6 bytes as `EndTransactionMarker` reads them (int16 version,
/// int32 coordinator epoch), and the record's timestamp (`formats/control.py` declares both). What they mean (which
/// types exist, which need that value, whether a version is valid) is for the Python reader
/// (`kafkatool.records.stretch_markers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlRecord {
    pub key_version: i16,
    pub key_type: i16,
    /// `(version, coordinator epoch)`; `None` when the value is null or shorter than 6 bytes.
    pub value: Option<(i16, i32)>,
    pub timestamp: i64,
}

/// The record of a control batch's uncompressed records section `data[start..]` declared to hold one
/// (`ctx.count == 1`): `Some` when [`decode_v2`] decodes it (so the section is exactly that record) and its key
/// has at least the 4 bytes of a version and a type (more are ignored, as Kafka and the Python reader ignore them);
/// `None` for anything else, which the Python reader decodes and words.
pub fn control_record(data: &[u8], start: usize, ctx: &BatchContext) -> Option<ControlRecord> {
    if ctx.count != 1 {
        return None;
    }
    let cols = decode_v2(data, start, ctx).ok()?;
    let bytes = |s: Option<Slice>| s.and_then(|(at, len)| data.get(at..at.checked_add(len)?));
    let key = bytes(*cols.keys.first()?)?;
    let value = bytes(*cols.values.first()?).and_then(|v| Some((be_i16(v, 0)?, be_i32(v, 2)?)));
    Some(ControlRecord {
        key_version: be_i16(key, 0)?,
        key_type: be_i16(key, 2)?,
        value,
        timestamp: *cols.timestamps.first()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zz(v: i64, out: &mut Vec<u8>) {
        let mut u = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            if u < 0x80 {
                out.push(u as u8);
                return;
            }
            out.push((u as u8 & 0x7F) | 0x80);
            u >>= 7;
        }
    }

    fn record(
        off: i64,
        ts: i64,
        key: Option<&[u8]>,
        value: &[u8],
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> Vec<u8> {
        let mut body = vec![0u8];
        zz(ts, &mut body);
        zz(off, &mut body);
        match key {
            Some(k) => {
                zz(k.len() as i64, &mut body);
                body.extend_from_slice(k);
            }
            None => zz(-1, &mut body),
        }
        zz(value.len() as i64, &mut body);
        body.extend_from_slice(value);
        zz(headers.len() as i64, &mut body);
        for (k, v) in headers {
            zz(k.len() as i64, &mut body);
            body.extend_from_slice(k);
            match v {
                Some(v) => {
                    zz(v.len() as i64, &mut body);
                    body.extend_from_slice(v);
                }
                None => zz(-1, &mut body),
            }
        }
        let mut out = Vec::new();
        zz(body.len() as i64, &mut out);
        out.extend(body);
        out
    }

    fn ctx(count: i64) -> BatchContext {
        BatchContext {
            base_offset: 100,
            base_timestamp: 5000,
            log_append_time: None,
            count,
        }
    }

    #[test]
    fn decodes_keys_values_headers_into_slices() {
        let mut data = record(
            0,
            3,
            Some(b"k"),
            b"value",
            &[(b"h", Some(b"v")), (b"n", None)],
        );
        data.extend(record(1, -2, None, b"", &[]));
        let cols = decode_v2(&data, 0, &ctx(2)).expect("decodes");
        assert_eq!(cols.offsets, vec![100, 101]);
        assert_eq!(cols.timestamps, vec![5003, 4998]);
        let (ks, kl) = cols.keys[0].expect("key");
        assert_eq!(&data[ks..ks + kl], b"k");
        assert_eq!(cols.keys[1], None);
        assert_eq!(cols.header_starts, vec![0, 2, 2]);
        assert_eq!(cols.header_values[1], None);
        let log_append = BatchContext {
            log_append_time: Some(7),
            ..ctx(2)
        };
        assert_eq!(
            decode_v2(&data, 0, &log_append)
                .expect("decodes")
                .timestamps,
            vec![7, 7]
        );
    }

    #[test]
    fn a_control_record_gives_its_key_and_value_words() {
        let marker = record(0, 3, Some(&[0, 0, 0, 1][..]), &[0, 0, 0, 0, 0, 9], &[]);
        let read = control_record(&marker, 0, &ctx(1));
        assert_eq!(read, Some(ControlRecord { key_version: 0, key_type: 1, value: Some((0, 9)), timestamp: 5003 }));
        // a longer key and value: the words are their first bytes; a short or null value gives none
        let long = record(0, 3, Some(&[0, 1, 0, 5, 7][..]), &[0, 2, 0xFF, 0xFF, 0xFF, 0xFE, 1, 2], &[]);
        let read = control_record(&long, 0, &ctx(1)).expect("reads");
        assert_eq!((read.key_version, read.key_type, read.value), (1, 5, Some((2, -2))));
        let short = record(0, 3, Some(&[0xFF, 0xFF, 0, 0][..]), &[0, 0, 0], &[]);
        assert_eq!(control_record(&short, 0, &ctx(1)).map(|r| (r.key_version, r.value)), Some((-1, None)));
        let log_append = BatchContext { log_append_time: Some(7), ..ctx(1) };
        assert_eq!(control_record(&marker, 0, &log_append).map(|r| r.timestamp), Some(7));
        // not for the Python reader to word: a key under 4 bytes or null, another count, damage
        assert_eq!(control_record(&record(0, 3, Some(&[0, 0, 0][..]), &[0; 6], &[]), 0, &ctx(1)), None);
        assert_eq!(control_record(&record(0, 3, None, &[0; 6], &[]), 0, &ctx(1)), None);
        let two = [marker.clone(), marker.clone()].concat();
        assert_eq!((control_record(&two, 0, &ctx(2)), control_record(&two, 0, &ctx(1))), (None, None));
        assert_eq!(control_record(&marker, 0, &ctx(0)), None);
        for cut in 0..marker.len() {
            assert_eq!(control_record(&marker[..cut], 0, &ctx(1)), None);
        }
        for i in 0..marker.len() {
            for bit in 0..8 {
                let mut bad = marker.clone();
                bad[i] ^= 1 << bit;
                let _ = control_record(&bad, 0, &ctx(1));
            }
        }
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let good = record(0, 3, Some(b"key"), b"value", &[(b"h", Some(b"v"))]);
        assert_eq!(decode_v2(&good, 0, &ctx(2)), Err(Fail::PastEnd));
        assert_eq!(decode_v2(&good, 0, &ctx(0)), Err(Fail::TrailingBytes));
        for cut in 0..good.len() {
            assert!(decode_v2(&good[..cut], 0, &ctx(1)).is_err());
        }
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                let _ = decode_v2(&bad, 0, &ctx(1));
                let _ = decode_v2(&bad, i, &ctx(i64::MAX));
            }
        }
        assert_eq!(decode_v2(&[0xFF; 12], 0, &ctx(1)), Err(Fail::VarintTooLong));
        // in parts: the first record, then the second from where the first ended; only the last part must end it
        let two = [good.clone(), record(1, 4, None, b"", &[])].concat();
        let (first, at) = decode_v2_part(&two, 0, &ctx(1), false).expect("decodes");
        assert_eq!((first.offsets, at), (vec![100], good.len()));
        assert_eq!(decode_v2_part(&two, 0, &ctx(1), true), Err(Fail::TrailingBytes));
        let (second, end) = decode_v2_part(&two, at, &ctx(1), true).expect("decodes");
        assert_eq!((second.offsets, second.timestamps, end), (vec![101], vec![5004], two.len()));
        let _ = decode_v2(&good, good.len() + 5, &ctx(1));
    }
}
