//! Seeded fuzzing of every entry point that takes untrusted bytes (issue 24): arbitrary bytes, and valid v2
//! batches built here (every codec, keys, values, headers, control and transactional bits) then mutated the
//! way a damaged or hostile disk mutates them (bit flips, header fields set to their edges, offsets near 2^63,
//! varints made long or huge, cuts, zeroed, inserted and removed bytes, with or without the CRC made valid
//! again so the damage reaches the record decoder).
//!
//! Each input goes through the framing walk, the CRC, record decode, bounded decompression, the window columns
//! and their questions, line rendering, and, through the module Python sees (`_native`, in an embedded
//! interpreter), every `#[pyfunction]` and the Arrow `RecordsBuilder`. Asserted: no panic (no `NativePanic`
//! from Python), decompressed output within its limit, and what the types promise (scan positions increasing
//! and inside the buffer, CRC verdicts right, columns of one length, every slice inside its buffer, rendered
//! lines whole and free of raw control characters, Arrow buffers as long as their rows say).
//!
//! Deterministic: proptest's ChaCha generator with a fixed seed, a bounded number of cases per test (a few
//! seconds in all under `cargo test`). Run longer, or elsewhere in the input space, with
//! `KAFKATOOL_FUZZ_CASES=100000 KAFKATOOL_FUZZ_SEED=7 cargo test --release fuzz_`.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyModule, PyTuple};

use crate::codecs::{self, Fail as CodecFail};
use crate::columns::{self, Decode, OffsetIndex, TimeIndex, WindowColumns};
use crate::frame::{self, Stop, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use crate::records::{self, BatchContext, RecordColumns};
use crate::render::{self, Fallback, Shown, Values};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `cases` per test unless `KAFKATOOL_FUZZ_CASES` says otherwise; the seed from `KAFKATOOL_FUZZ_SEED` (24).
fn config(cases: u32) -> Config {
    Config {
        cases: u32::try_from(env_number("KAFKATOOL_FUZZ_CASES", u64::from(cases))).unwrap_or(u32::MAX),
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(env_number("KAFKATOOL_FUZZ_SEED", 24)),
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    }
}

// -- valid batches ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Record {
    timestamp_delta: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

#[derive(Debug, Clone)]
struct BatchSpec {
    base_offset: i64,
    codec: u8,
    /// transactional (0x10), control (0x20), log append time (0x08), delete horizon (0x40)
    flags: i16,
    producer: (i64, i16, i32),
    base_timestamp: i64,
    records: Vec<Record>,
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    // mostly printable, sometimes anything (control characters, invalid UTF-8)
    prop_oneof![
        3 => prop::collection::vec(0x20u8..0x7f, 0..max),
        1 => prop::collection::vec(any::<u8>(), 0..max),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (
        prop_oneof![Just(0i64), 0i64..5000, any::<i64>()],
        prop::option::weighted(0.8, bytes(12)),
        prop::option::weighted(0.9, bytes(48)),
        prop::collection::vec((bytes(8), prop::option::of(bytes(8))), 0..3),
    )
        .prop_map(|(timestamp_delta, key, value, headers)| Record { timestamp_delta, key, value, headers })
}

fn batch_spec() -> impl Strategy<Value = BatchSpec> {
    (
        prop_oneof![0i64..1000, Just(i64::MAX - 2), Just((1i64 << 32) + 90), Just(i64::MAX)],
        prop_oneof![3 => Just(0u8), 1 => 1u8..=4],
        prop::sample::select(vec![0i16, 0, 0, 0x08, 0x10, 0x30, 0x20, 0x40]),
        (prop_oneof![Just(-1i64), 0i64..4], -1i16..3, prop_oneof![Just(-1i32), 0i32..100, Just(i32::MAX)]),
        prop_oneof![Just(-1i64), 0i64..2_000_000_000_000, Just(8_000_000_000_000i64), any::<i64>()],
        prop::collection::vec(record(), 0..5),
    )
        .prop_map(|(base_offset, codec, flags, producer, base_timestamp, records)| BatchSpec {
            base_offset,
            codec,
            flags,
            producer,
            base_timestamp,
            records,
        })
}

fn zigzag(v: i64, out: &mut Vec<u8>) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn length_prefixed(b: &Option<Vec<u8>>, out: &mut Vec<u8>) {
    match b {
        Some(b) => {
            zigzag(b.len() as i64, out);
            out.extend_from_slice(b);
        }
        None => zigzag(-1, out),
    }
}

/// The records section of a batch (Kafka's `DefaultRecord.writeTo` for each record).
fn records_section(spec: &BatchSpec) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, r) in spec.records.iter().enumerate() {
        let mut body = vec![0u8]; // attributes
        zigzag(r.timestamp_delta, &mut body);
        zigzag(i as i64, &mut body);
        length_prefixed(&r.key, &mut body);
        length_prefixed(&r.value, &mut body);
        zigzag(r.headers.len() as i64, &mut body);
        for (k, v) in &r.headers {
            length_prefixed(&Some(k.clone()), &mut body);
            length_prefixed(v, &mut body);
        }
        zigzag(body.len() as i64, &mut out);
        out.extend_from_slice(&body);
    }
    out
}

/// `data` compressed as Kafka's producers write it for `codec` (gzip, snappy raw block, lz4 frame with
/// 64 KiB blocks, zstd).
fn compress(codec: u8, data: &[u8]) -> Vec<u8> {
    match codec {
        codecs::GZIP => {
            let config = zlib_rs::DeflateConfig { window_bits: 31, ..zlib_rs::DeflateConfig::default() };
            let mut out = vec![0u8; zlib_rs::compress_bound(data.len()) + 32];
            let (written, rc) = zlib_rs::compress_slice(&mut out, data, config);
            assert_eq!(rc, zlib_rs::ReturnCode::Ok);
            written.to_vec()
        }
        codecs::SNAPPY => snap::raw::Encoder::new().compress_vec(data).expect("snappy"),
        codecs::LZ4 => {
            let mut out = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
            for block in data.chunks(1 << 16) {
                let mut dst = vec![0u8; block.len() + block.len() / 255 + 16];
                // SAFETY: both buffers are as long as the lengths passed.
                let n = unsafe {
                    lz4_sys::LZ4_compress_default(
                        block.as_ptr().cast(),
                        dst.as_mut_ptr().cast(),
                        block.len() as i32,
                        dst.len() as i32,
                    )
                };
                assert!(n > 0);
                out.extend_from_slice(&(n as u32).to_le_bytes());
                out.extend_from_slice(&dst[..n as usize]);
            }
            out.extend_from_slice(&[0, 0, 0, 0]);
            out
        }
        codecs::ZSTD => {
            let mut out = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
            zstd_safe::compress(&mut out, data, 3).expect("zstd");
            out
        }
        _ => data.to_vec(),
    }
}

/// Batch `spec` (Kafka's `DefaultRecordBatch.writeHeader`), with a valid CRC.
fn build_batch(spec: &BatchSpec) -> Vec<u8> {
    let count = spec.records.len() as i32;
    let section = records_section(spec);
    let payload = compress(spec.codec, &section);
    let max_timestamp = spec
        .records
        .iter()
        .map(|r| spec.base_timestamp.wrapping_add(r.timestamp_delta))
        .max()
        .unwrap_or(spec.base_timestamp);
    let mut b = Vec::with_capacity(RECORD_BATCH_OVERHEAD + payload.len());
    b.extend_from_slice(&spec.base_offset.to_be_bytes());
    b.extend_from_slice(&((RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + payload.len()) as i32).to_be_bytes());
    b.extend_from_slice(&3i32.to_be_bytes()); // leader epoch
    b.push(2);
    b.extend_from_slice(&[0; 4]); // CRC, below
    b.extend_from_slice(&(spec.flags | i16::from(spec.codec)).to_be_bytes());
    b.extend_from_slice(&(count - 1).to_be_bytes());
    b.extend_from_slice(&spec.base_timestamp.to_be_bytes());
    b.extend_from_slice(&max_timestamp.to_be_bytes());
    b.extend_from_slice(&spec.producer.0.to_be_bytes());
    b.extend_from_slice(&spec.producer.1.to_be_bytes());
    b.extend_from_slice(&spec.producer.2.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(&payload);
    fix_crc(&mut b, 0);
    b
}

/// Make the CRC of the entry at `at` match what its length field covers (as much of it as is there).
fn fix_crc(buf: &mut [u8], at: usize) {
    let Some(length) = buf.get(at + 8..at + 12) else { return };
    let total = i32::from_be_bytes(length.try_into().expect("4 bytes")) as i64 + LOG_OVERHEAD as i64;
    let end = (at as i64).saturating_add(total.max(0)).min(buf.len() as i64) as usize;
    if let Some(covered) = buf.get(at + frame::ATTRIBUTES_OFFSET..end) {
        let crc = crc32c::crc32c(covered);
        buf[at + 17..at + 21].copy_from_slice(&crc.to_be_bytes());
    }
}

/// Batches back to back, with where each begins.
fn build_window(specs: &[BatchSpec]) -> (Vec<u8>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut starts = Vec::new();
    for spec in specs {
        starts.push(buf.len());
        buf.extend(build_batch(spec));
    }
    (buf, starts)
}

// -- mutations ----------------------------------------------------------------------------------------------

/// A v2 header field: (offset in the batch, width in bytes).
const FIELDS: [(usize, usize); 12] =
    [(0, 8), (8, 4), (12, 4), (16, 1), (17, 4), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8), (51, 2), (57, 4)];

/// Values at the edges: the limits of each width, around 2^31, 2^32 and 2^63.
fn edge_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        prop::sample::select(vec![
            0i64,
            1,
            -1,
            2,
            0x7f,
            0x80,
            i64::from(i16::MAX),
            i64::from(i16::MIN),
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            1 << 31,
            (1 << 32) + 90,
            i64::MAX,
            i64::MIN,
            i64::MAX - 1,
            i64::MAX - 100,
            1 << 62,
        ]),
        any::<i64>(),
        -100i64..100_000,
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    SetByte(Index, u8),
    /// Header field `field` of batch `batch` set to `value` (its low bytes, big-endian).
    Field(Index, Index, i64),
    /// Bytes of a varint written over the bytes at a position past a header: a huge value, or a run of
    /// continuation bytes.
    Varint(Index, Vec<u8>),
    Truncate(Index),
    Zero(Index, usize),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
}

fn varint_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        edge_value().prop_map(|v| {
            let mut out = Vec::new();
            zigzag(v, &mut out);
            out
        }),
        (1usize..12).prop_map(|n| vec![0xff; n]),
        (1usize..12, any::<u8>()).prop_map(|(n, last)| {
            let mut v = vec![0x80; n];
            v.push(last & 0x7f);
            v
        }),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::SetByte(i, b)),
        4 => (any::<Index>(), any::<Index>(), edge_value()).prop_map(|(b, f, v)| Mutation::Field(b, f, v)),
        3 => (any::<Index>(), varint_bytes()).prop_map(|(i, v)| Mutation::Varint(i, v)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
        1 => (any::<Index>(), 1usize..64).prop_map(|(i, n)| Mutation::Zero(i, n)),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => (any::<Index>(), 1usize..32).prop_map(|(i, n)| Mutation::Remove(i, n)),
    ]
}

fn mutate(buf: &mut Vec<u8>, starts: &[usize], m: &Mutation) {
    let len = buf.len();
    if len == 0 {
        return;
    }
    match m {
        Mutation::FlipBit(i, bit) => buf[i.index(len)] ^= 1 << bit,
        Mutation::SetByte(i, b) => buf[i.index(len)] = *b,
        Mutation::Field(batch, field, value) => {
            if starts.is_empty() {
                return;
            }
            let at = starts[batch.index(starts.len())];
            let (offset, width) = FIELDS[field.index(FIELDS.len())];
            let be = value.to_be_bytes();
            let from = at + offset;
            for (k, b) in be[8 - width..].iter().enumerate() {
                if let Some(slot) = buf.get_mut(from + k) {
                    *slot = *b;
                }
            }
        }
        Mutation::Varint(i, v) => {
            let at = i.index(len);
            for (k, b) in v.iter().enumerate() {
                if let Some(slot) = buf.get_mut(at + k) {
                    *slot = *b;
                }
            }
        }
        Mutation::Truncate(i) => buf.truncate(i.index(len)),
        Mutation::Zero(i, n) => {
            let at = i.index(len);
            let end = (at + n).min(len);
            buf[at..end].fill(0);
        }
        Mutation::Insert(i, v) => {
            let at = i.index(len + 1);
            buf.splice(at..at, v.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let at = i.index(len);
            let end = (at + n).min(len);
            buf.drain(at..end);
        }
    }
}

/// A window of valid batches, mutated; the CRCs made valid again after the damage when `recrc`.
fn mutated_window() -> impl Strategy<Value = (Vec<u8>, Vec<BatchSpec>)> {
    (prop::collection::vec(batch_spec(), 1..5), prop::collection::vec(mutation(), 0..4), any::<bool>()).prop_map(
        |(specs, mutations, recrc)| {
            let (mut buf, starts) = build_window(&specs);
            for m in &mutations {
                mutate(&mut buf, &starts, m);
            }
            if recrc {
                for &at in &starts {
                    fix_crc(&mut buf, at);
                }
            }
            (buf, specs)
        },
    )
}

/// Where a scan begins and what bounds it: a start inside or past the buffer, the file position of the
/// buffer (up to where position + start overflows), a limit and a largest batch.
#[derive(Debug, Clone)]
struct Walk {
    p: Index,
    from_zero: bool,
    base: i64,
    limit: i64,
    max_batch: i64,
    until: Index,
    decompress_limit: usize,
}

fn walk() -> impl Strategy<Value = Walk> {
    (
        any::<Index>(),
        prop::bool::weighted(0.8),
        prop_oneof![4 => Just(0i64), 1 => 0i64..1 << 40, 1 => Just(i64::MAX - 100)],
        prop_oneof![4 => Just(i64::MAX), 1 => any::<i64>()],
        prop_oneof![4 => Just(i64::MAX), 1 => 0i64..4096],
        any::<Index>(),
        prop_oneof![Just(1usize << 20), 0usize..300, Just(0usize)],
    )
        .prop_map(|(p, from_zero, base, limit, max_batch, until, decompress_limit)| Walk {
            p,
            from_zero,
            base,
            limit,
            max_batch,
            until,
            decompress_limit,
        })
}

impl Walk {
    fn start(&self, len: usize) -> usize {
        if self.from_zero {
            0
        } else {
            self.p.index(len + 70) // past the end too
        }
    }
}

// -- what must hold -----------------------------------------------------------------------------------------

/// A test `Fallback`: Python's rendering of the rare cases stands in as fixed escaped text.
struct Escaped;

impl Fallback for Escaped {
    type Error = ();
    fn text_bytes(&mut self, data: &[u8]) -> Result<String, ()> {
        Ok(format!("<{} bytes>", data.len()))
    }
    fn key_repr(&mut self, key: &[u8]) -> Result<String, ()> {
        Ok(format!("<key of {} bytes>", key.len()))
    }
    fn iso(&mut self, ts: i64) -> Result<String, ()> {
        Ok(format!("<ts {ts}>"))
    }
}

fn slice_inside(s: Option<records::Slice>, len: usize) -> bool {
    s.is_none_or(|(at, n)| at.checked_add(n).is_some_and(|end| end <= len))
}

/// The columns of one or many batches' records: of one length, headers cut consistently, slices inside.
fn check_record_columns(r: &RecordColumns, data_len: usize) {
    let n = r.len();
    assert_eq!((r.timestamps.len(), r.keys.len(), r.values.len()), (n, n, n));
    assert_eq!(r.header_starts.len(), n + 1);
    assert!(r.header_starts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(r.header_starts.last().copied(), Some(r.header_keys.len()));
    assert_eq!(r.header_keys.len(), r.header_values.len());
    assert!(r.keys.iter().chain(&r.values).chain(&r.header_values).all(|s| slice_inside(*s, data_len)));
    assert!(r.header_keys.iter().all(|s| slice_inside(Some(*s), data_len)));
}

/// The framing walk: entries in order, inside the buffer, framed as their headers say, CRC verdicts right.
fn check_scan(buf: &[u8], w: &Walk) {
    let p = w.start(buf.len());
    let until = w.until.index(buf.len() + 2);
    for until in [usize::MAX, until] {
        let mut seen: Vec<frame::Entry> = Vec::new();
        let (next, stop) = frame::scan_v2_until(buf, p, until, w.base, w.limit, w.max_batch, |e, bytes| {
            assert_eq!(bytes.len(), e.total);
            assert_eq!(Some(bytes), buf.get(e.start..e.start + e.total));
            seen.push(*e);
        });
        let mut at = p;
        for e in &seen {
            assert_eq!(e.start, at, "entries back to back from p");
            assert!(e.total >= RECORD_BATCH_OVERHEAD && e.total as i64 <= w.max_batch);
            assert!(e.start + e.total <= buf.len());
            assert_eq!(e.position, w.base + e.start as i64);
            assert!(e.position < w.limit);
            assert_eq!(e.header.batch_length as i64 + LOG_OVERHEAD as i64, e.total as i64);
            assert_eq!(frame::parse_header(buf, e.start), Some(e.header));
            assert_eq!(buf[e.start + 16], 2);
            assert_eq!(e.crc_valid, crc32c::crc32c(&buf[e.start + 21..e.start + e.total]) == e.header.crc);
            at += e.total;
        }
        assert_eq!(next, at);
        assert!(seen.iter().rev().skip(1).all(|e| e.crc_valid), "the walk goes on only after a valid CRC");
        assert_eq!(stop == Stop::CrcMismatch, seen.last().is_some_and(|e| !e.crc_valid));
        if stop == Stop::Until {
            assert!(next >= until);
        }
    }
}

/// Bounded decompression of `payload` with every codec: output within `limit` (plus one decoder step on
/// refusal, which the caller drops).
fn check_decompress(payload: &[u8], limit: usize) {
    for codec in 0u8..=7 {
        for legacy in [false, true] {
            let mut out = b"before".to_vec();
            let result = codecs::with_decompressor(|d, _| d.decompress_into(codec, payload, limit, legacy, &mut out));
            assert!(out.starts_with(b"before"));
            match result {
                Ok(()) => assert!(out.len() - 6 <= limit, "codec {codec}: {} > {limit}", out.len() - 6),
                Err(CodecFail::Limit) => assert!(out.len() - 6 <= limit + (4 << 20) + (1 << 20)),
                Err(CodecFail::Refused) => {}
            }
            codecs::with_decompressed(codec, payload, limit, legacy, |out| {
                if let Ok(out) = out {
                    assert!(out.len() <= limit);
                }
            });
        }
    }
}

/// Record decode of a records section, with the context of its header or any other.
fn check_decode(data: &[u8], start: usize, ctx: &BatchContext) {
    if let Ok(cols) = records::decode_v2(data, start, ctx) {
        check_record_columns(&cols, data.len());
        assert_eq!(i64::try_from(cols.len()).ok(), Some(ctx.count.max(0)));
        if ctx.log_append_time.is_none() {
            // offsets are base + delta, without overflow (checked: an Err otherwise)
            assert!(cols.offsets.iter().all(|o| *o >= ctx.base_offset.min(0).saturating_sub(i64::from(i32::MAX))));
        }
    }
    let _ = records::control_record(data, start, ctx);
}

fn check_render(cols: &WindowColumns, lo: usize, hi: usize) {
    for json in [false, true] {
        for values in [Values::Base64, Values::Text, Values::Hex, Values::None] {
            let mut out = String::new();
            let mut lines = 0usize;
            let mut all = String::new();
            let mut write = |s: &str| -> Result<(), ()> {
                assert!(s.ends_with('\n'), "whole lines only");
                all.push_str(s);
                for line in s.lines() {
                    assert!(!line.chars().any(char::is_control), "a raw control character rendered: {line:?}");
                    if json {
                        assert!(line.starts_with('{') && line.ends_with(", \"path\": \"p\"}") && line.is_ascii(), "{line}");
                    }
                    lines += 1;
                }
                Ok(())
            };
            let context = if json { ", \"path\": \"p\"" } else { "" };
            render::render(Shown::Batches { cols, records: true }, lo, hi, json, context, values, &mut Escaped, &mut out, &mut write).expect("renders");
            assert!(out.is_empty());
            let shown: usize = (lo..hi.min(cols.batches.len())).map(|i| 1 + cols.record_range(i).len()).sum();
            assert_eq!(lines, shown, "one line per batch and per record");
            // the records alone (a big batch's chunks): the same record lines, none of the batch lines
            let n = cols.batches.len();
            let from = cols.record_starts.get(lo.min(n)).copied().unwrap_or(0);
            let to = cols.record_starts.get(hi.min(n)).copied().unwrap_or(from).max(from);
            let mut alone = String::new();
            let mut gather = |s: &str| -> Result<(), ()> {
                assert!(s.ends_with('\n'), "whole lines only");
                alone.push_str(s);
                Ok(())
            };
            let recs = render::Records { cols: &cols.records, data: &cols.data };
            render::render(Shown::Records(recs), from, to, json, context, values, &mut Escaped, &mut out, &mut gather).expect("renders");
            let batch_line = if json { "{\"type\": \"batch\"" } else { "offset " };
            let record_lines: Vec<&str> = all.lines().filter(|l| !l.starts_with(batch_line)).collect();
            assert_eq!(alone.lines().collect::<Vec<_>>(), record_lines);
        }
    }
}

/// The window columns under every `Decode`, against the plain walk; then every question they answer.
fn check_window(buf: &[u8], w: &Walk, lo: Index, hi: Index, index_bytes: &[u8]) {
    let p = w.start(buf.len());
    let until = w.until.index(buf.len() + 2);
    let mut entries = Vec::new();
    let walked = frame::scan_v2_until(buf, p, until, w.base, w.limit, w.max_batch, |e, _| entries.push(*e));
    for decode in [Decode::Nothing, Decode::Uncompressed, Decode::Compressed(w.decompress_limit.max(1))] {
        let (next, stop, cols) = columns::decode_window_until(buf, p, until, w.base, w.limit, w.max_batch, decode);
        assert_eq!((next, stop), walked);
        let n = cols.batches.len();
        assert_eq!(n, entries.len());
        assert_eq!((cols.decoded.len(), cols.record_starts.len()), (n, n + 1));
        assert!(cols.record_starts.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(cols.record_starts.last().copied(), Some(cols.records.len()));
        check_record_columns(&cols.records, cols.data.len());
        assert!(cols.controls.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(cols.controls.iter().all(|(i, _)| *i < n));
        for (i, (e, orig)) in cols.batches.iter().zip(&entries).enumerate() {
            assert_eq!((e.position, e.total, e.header, e.crc_valid), (orig.position, orig.total, orig.header, orig.crc_valid));
            if decode != Decode::Nothing {
                assert_eq!(cols.raw(i), &buf[orig.start..orig.start + orig.total]);
            }
            let range = cols.record_range(i);
            if !cols.decoded[i] {
                assert!(range.is_empty());
            } else {
                assert_eq!(range.len() as i64, i64::from(e.header.records_count.max(0)));
            }
            let _ = (cols.follows(i, false, false), cols.follows(i, true, true), cols.deep_suspect(i), cols.control(i));
        }
        if decode == Decode::Nothing {
            assert!(cols.data.is_empty() && cols.records.is_empty());
        }
        let (lo, hi) = (lo.index(n + 2), hi.index(n + 2));
        for s in cols.producer_spans(lo, hi) {
            assert!(s.first <= s.last && s.last < n);
        }
        for s in cols.producer_sequences(lo, hi) {
            assert!(s.first <= s.last && s.last < n);
            assert_eq!(s.sequences.len(), s.offsets.len());
        }
        let events = cols.producer_events(lo, hi, u8::MAX);
        assert!(events.windows(2).all(|w| w[0].0 < w[1].0) && events.iter().all(|(i, _)| *i < n));
        let a = cols.advance(lo, hi);
        assert!(a.end >= lo && a.end <= n.max(lo));
        // the index arrays from arbitrary bytes: entries past their ends are never read
        let half = index_bytes.len() / 2;
        let mut index = OffsetIndex {
            base_offset: w.base,
            relative: &index_bytes[..half],
            positions: &index_bytes[half..],
            next: lo,
        };
        let mut time = TimeIndex { timestamps: &index_bytes[half..], offsets: index_bytes, next: hi, max_before: w.limit };
        let (a, _) = cols.advance_indexed(lo, hi, i128::from(w.limit), i128::from(w.base) << 2, &mut index, &mut time);
        assert!(a.end >= lo);
        check_render(&cols, lo, hi);
        check_render(&cols, 0, n);
    }
}

/// Everything over one buffer: the walk, each batch's records and payload, the window columns.
fn check_all(buf: &[u8], w: &Walk, lo: Index, hi: Index, index_bytes: &[u8]) {
    check_scan(buf, w);
    check_window(buf, w, lo, hi, index_bytes);
    // each whole batch's records section (whatever its CRC), as the reader hands it over
    let mut batches = Vec::new();
    frame::scan_v2(buf, 0, 0, i64::MAX, i64::MAX, |e, bytes| batches.push((e.header, bytes.to_vec())));
    for (h, bytes) in &batches {
        let ctx = BatchContext {
            base_offset: h.base_offset,
            base_timestamp: h.base_timestamp,
            log_append_time: (h.attributes & 0x08 != 0).then_some(h.max_timestamp),
            count: i64::from(h.records_count),
        };
        check_decode(bytes, RECORD_BATCH_OVERHEAD, &ctx);
        let payload = &bytes[RECORD_BATCH_OVERHEAD..];
        check_decompress(payload, w.decompress_limit);
        codecs::with_decompressed((h.attributes & 7) as u8, payload, w.decompress_limit.max(1), false, |out| {
            if let Ok(out) = out {
                check_decode(out, 0, &ctx);
            }
        });
    }
    // the buffer itself as a records section and as a payload
    let ctx = BatchContext { base_offset: w.base, base_timestamp: w.limit, log_append_time: None, count: buf.len() as i64 % 7 };
    check_decode(buf, w.start(buf.len()), &ctx);
    check_decompress(buf, w.decompress_limit);
}

// -- the tests ----------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(256))]

    /// Bytes from nowhere: most stop at the first header, some are taken for a batch.
    #[test]
    fn fuzz_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..400), w in walk(),
                            lo in any::<Index>(), hi in any::<Index>(), index in prop::collection::vec(any::<u8>(), 0..64)) {
        check_all(&buf, &w, lo, hi, &index);
    }

    /// Valid batches with a few mutations each: the damage gets past the framing and (re-CRC'd) to the decoders.
    #[test]
    fn fuzz_mutated_batches((buf, _) in mutated_window(), w in walk(),
                            lo in any::<Index>(), hi in any::<Index>(), index in prop::collection::vec(any::<u8>(), 0..64)) {
        check_all(&buf, &w, lo, hi, &index);
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// Valid batches decode exactly as built (the harness reaches the decoders, not only their refusals).
    #[test]
    fn fuzz_valid_batches_decode_as_built(specs in prop::collection::vec(batch_spec(), 1..5)) {
        let (buf, _) = build_window(&specs);
        let (next, stop, cols) = columns::decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, Decode::Compressed(1 << 20));
        prop_assert_eq!((next, stop), (buf.len(), Stop::General));
        prop_assert_eq!(cols.batches.len(), specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let fits = spec.base_offset.checked_add(spec.records.len() as i64 - 1).is_some();
            let decodable = spec.flags & 0x20 == 0 && fits
                && (spec.flags & 0x08 != 0
                    || spec.records.iter().all(|r| spec.base_timestamp.checked_add(r.timestamp_delta).is_some()));
            prop_assert_eq!(cols.decoded[i], decodable, "batch {}", i);
            if !decodable {
                continue;
            }
            for (j, r) in cols.record_range(i).zip(&spec.records) {
                prop_assert_eq!(cols.records.offsets[j], spec.base_offset + (j - cols.record_starts[i]) as i64);
                prop_assert_eq!(cols.slice(cols.records.keys[j]), r.key.as_deref());
                prop_assert_eq!(cols.slice(cols.records.values[j]), r.value.as_deref());
            }
        }
    }
}

// -- through Python ---------------------------------------------------------------------------------------------

/// The `_native` module as Python sees it, in this process's embedded interpreter.
fn with_module<R>(f: impl FnOnce(&Bound<'_, PyModule>) -> R) -> R {
    Python::initialize();
    Python::attach(|py| {
        let m = PyModule::new(py, "_native").expect("module");
        super::_native(&m).expect("init");
        f(&m)
    })
}

/// A call that may refuse its arguments (a Python exception) but never panics inside.
fn no_panic<'py>(py: Python<'py>, result: PyResult<Bound<'py, PyAny>>) -> Option<Bound<'py, PyAny>> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            assert!(!e.is_instance_of::<super::NativePanic>(py), "{e}");
            None
        }
    }
}

/// Arguments for a call, as a tuple.
fn args<'py>(py: Python<'py>, a: impl IntoPyObject<'py, Target = PyTuple, Output = Bound<'py, PyTuple>>) -> Bound<'py, PyTuple> {
    a.into_pyobject(py).map_err(Into::into).expect("arguments")
}

/// Every `#[pyfunction]` and method over one buffer, and the Arrow builder over each batch's records.
fn check_python<'py>(m: &Bound<'py, PyModule>, buf: &[u8], w: &Walk) {
    let py = m.py();
    let data = PyBytes::new(py, buf);
    let call = |name: &str, a: Bound<'py, PyTuple>| no_panic(py, m.getattr(name).expect(name).call1(a));
    let p = w.start(buf.len());
    let none: Option<i64> = None;
    call("scan_batches", args(py, (&data, (p, w.base, w.limit, w.max_batch), true)));
    call("scan_headers", args(py, (&data, (p, w.base, w.limit, w.max_batch))));
    call("decode_v2_chunk", args(py, (&data, p, 3i64, w.base, w.limit, none, true)));
    for codec in 1u8..=5 {
        call("decompress", args(py, (codec, &data, 0usize, w.decompress_limit)));
        let out = call("decode_v2_compressed", args(py, (&data, codec, w.decompress_limit, 2i64, w.base, 0i64, none)));
        if let Some(b) = out.as_ref().and_then(|o| o.cast::<PyBytes>().ok()) {
            assert!(b.as_bytes().len() <= w.decompress_limit);
        }
    }
    let class = m.getattr("RecordsBuilder").expect("class");
    let builders = [class.call1(("binary",)).expect("builder"), class.call1(("base64",)).expect("builder")];
    let mut batches = Vec::new();
    frame::scan_v2(buf, 0, 0, i64::MAX, i64::MAX, |e, bytes| batches.push((e.header, bytes.to_vec(), e.crc_valid)));
    for (h, bytes, crc_valid) in &batches {
        let lat = (h.attributes & 0x08 != 0).then_some(h.max_timestamp);
        let raw = PyBytes::new(py, bytes);
        let count = i64::from(h.records_count);
        for b in &builders {
            let a = (&raw, RECORD_BATCH_OVERHEAD, count, h.base_offset, h.base_timestamp, lat, *crc_valid);
            no_panic(py, b.call_method1("add_v2", a));
        }
        let codec = (h.attributes & 7) as u8;
        call("decode_v2_compressed", args(py, (&raw, codec, w.decompress_limit, count, h.base_offset, h.base_timestamp, lat)));
    }
    let blen = |o: Bound<'_, PyAny>| -> usize { o.len().expect("buffer") };
    for b in &builders {
        let rows: usize = b.len().expect("len");
        let done = b.call_method0("finish").expect("finish");
        let item = |i: usize| done.get_item(i).expect("item");
        assert_eq!(rows, item(0).extract::<usize>().expect("int"));
        assert_eq!(blen(item(1)), 8 * rows);
        assert_eq!(blen(item(2)), 8 * rows);
        assert_eq!(blen(item(3).get_item(2).expect("key offsets")), 4 * (rows + 1));
        assert_eq!(blen(item(4).get_item(2).expect("value offsets")), 4 * (rows + 1));
        assert_eq!(blen(item(5).get_item(0).expect("header starts")), 4 * (rows + 1));
        assert_eq!(blen(item(6)), 8 * rows);
    }
    let fallback = py.eval(c"(lambda b: '<bytes>', lambda k: '<key>', lambda t: '<ts>')", None, None).expect("fallback");
    let sink = py.eval(c"[].append", None, None).expect("sink");
    for (decode, limit) in [(false, 0usize), (true, 0), (true, w.decompress_limit)] {
        let a = (&data, (p, w.base, w.limit, w.max_batch), decode, limit, Some(w.until.index(buf.len() + 2)));
        let Some(out) = call("decode_window_columns", args(py, a)) else { continue };
        let cols = out.get_item(2).expect("columns");
        let n: usize = cols.len().expect("len");
        let method = |name: &str, a: Bound<'py, PyTuple>| no_panic(py, cols.call_method1(name, a));
        method("pending", args(py, ()));
        method("deep_suspects", args(py, (0usize, n)));
        method("follows", args(py, (0usize, n + 1, true)));
        method("control_records", args(py, (0usize, n)));
        method("producer_events", args(py, (0usize, n)));
        method("advance", args(py, (1usize, n)));
        method("producer_spans", args(py, (0usize, n)));
        method("producer_sequences", args(py, (0usize, n)));
        method("raw", args(py, (n.saturating_sub(1),)));
        method("batch_columns", args(py, (0usize, n)));
        method("batch", args(py, (0usize,)));
        method("record_count", args(py, (0usize, n + 3)));
        method("record_columns", args(py, (0usize, n)));
        method("data", args(py, ()));
        for (fmt, values) in [("text", "text"), ("jsonl", "base64"), ("text", "hex"), ("jsonl", "none")] {
            call("render", args(py, (&cols, 0usize, n, fmt, values, &fallback, &sink, true)));
        }
    }
    // a chunk of records, rendered by the same function
    let a = (&data, p, 3i64, w.base, w.limit, none, false, false, true);
    if let Some(chunk) = call("decode_v2_chunk", args(py, a)).filter(|o| !o.is_none()) {
        let chunk = chunk.get_item(0).expect("chunk");
        let n: usize = chunk.len().expect("len");
        call("render", args(py, (&chunk, 0usize, n, "jsonl", "text", &fallback, &sink)));
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// What Python calls: the same inputs, through the module's functions, classes and methods.
    #[test]
    fn fuzz_python_entry_points((buf, _) in mutated_window(), w in walk()) {
        with_module(|m| check_python(m, &buf, &w));
    }

    #[test]
    fn fuzz_python_arbitrary_bytes(buf in prop::collection::vec(any::<u8>(), 0..300), w in walk()) {
        with_module(|m| check_python(m, &buf, &w));
    }
}
