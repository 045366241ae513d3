//! The records of many v2 batches (a reader's window, or a piece of one: `scan(decoded=True)` asks for
//! `kafkatool.records.DECODE_PIECE` bytes of batches per call) decoded into one set of columns, with no
//! Python object per batch or per record: the bulk paths (`dump --records`, `verify --deep`, Spark)
//! consume them.
//!
//! # Rust API (for other consumers, e.g. Arrow buffers)
//!
//! [`decode_window`]`(buf, p, base, limit, max_batch)` walks the whole v2 batches of `buf` from `p` on,
//! exactly as [`crate::frame::scan_v2`] does (same stops, same CRC verdicts), and returns
//! `(next_p, stop, WindowColumns)` ([`decode_window_until`] stops as [`crate::frame::scan_v2_until`] does,
//! a piece of the window at a time). In [`WindowColumns`]:
//!
//! - `data` is a copy of `buf[origin..next_p]`, then the records sections of the batches decompressed here;
//!   every slice below is relative to it;
//! - per batch `i`: `batches[i]` (its [`Entry`], `start` relative to `data`), `decoded[i]`, and its
//!   records are `records.*[record_starts[i]..record_starts[i + 1]]`;
//! - per record `j`: `records.offsets[j]`, `records.timestamps[j]` (absolute), `records.keys[j]` /
//!   `records.values[j]` (`Some((start, len))` into `data`, `None` for null), and its headers are
//!   `records.header_keys/header_values[records.header_starts[j]..records.header_starts[j + 1]]`.
//!
//! - `controls` holds `(i, record)` for each control batch `i` whose one record was read here
//!   ([`crate::records::control_record`]; uncompressed, declaring one record), in batch order, whatever `decode`
//!   says: the facts a reader needs of a transaction marker, so that nobody reads its bytes again.
//!
//! A batch is `decoded` when it is not a control batch, its last offset fits 64 bits, it is uncompressed or
//! (with [`Decode::Compressed`]) decompressed here within the limit ([`crate::codecs::with_decompressed`];
//! its records section is then appended to `data`), and [`crate::records::decode_v2`] decodes all of its
//! records; otherwise it holds no records here (`pending`) and the Python reader decodes it
//! (`kafkatool.records.decode_records`: control records, damage, bombs and every finding live there).

use crate::frame::{self, Entry, V2Header, RECORD_BATCH_OVERHEAD};
use crate::records::{self, BatchContext, ControlRecord, RecordColumns};

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
    /// `(i, record)` of the control batches whose one record was read (see the module docs), by `i`.
    pub controls: Vec<(usize, ControlRecord)>,
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

    /// The record of control batch `i`, when it was read here (`controls`).
    pub fn control(&self, i: usize) -> Option<&ControlRecord> {
        let at = self.controls.binary_search_by_key(&i, |(j, _)| *j).ok()?;
        self.controls.get(at).map(|(_, record)| record)
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

/// Why a batch is among [`WindowColumns::producer_events`] (bits of one byte).
pub mod event {
    /// Its producer id's first batch in the range.
    pub const FIRST: u8 = 1;
    /// Its producer id's first transactional data batch in the range, or after one of its control batches.
    pub const BEGINS: u8 = 2;
    /// Its producer id's last data batch in the range.
    pub const LAST_DATA: u8 = 4;
    /// A control batch.
    pub const CONTROL: u8 = 8;
    /// Its producer id's last batch in the range.
    pub const LAST: u8 = 16;
}

/// What [`WindowColumns::advance`] found: batches `lo..end` of the window pass by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advance {
    /// The first batch not passed (`hi` when all of them are).
    pub end: usize,
    /// Last offset of batch `end - 1` (`None`: nothing passed).
    pub last_offset: Option<i64>,
    /// The largest max timestamp of the batches passed (-1 when none).
    pub max_timestamp: i64,
    /// Their declared record counts, summed.
    pub records: i64,
    /// Where batch `end - 1` ends in the file (`None`: nothing passed).
    pub next_position: Option<i64>,
}

/// Each producer id's slot in a list of one entry per producer id, slots given in the order the ids first appear:
/// a hash map, with the last id looked up remembered (a log's batches come in runs of one producer).
#[derive(Debug, Default)]
struct ProducerSlots {
    at: std::collections::HashMap<i64, usize>,
    last: Option<(i64, usize)>,
}

impl ProducerSlots {
    /// The slot of producer id `pid`, and whether it is new (the next one: the entry to push for it).
    fn slot(&mut self, pid: i64) -> (usize, bool) {
        if let Some((p, k)) = self.last {
            if p == pid {
                return (k, false);
            }
        }
        let next = self.at.len();
        let k = *self.at.entry(pid).or_insert(next);
        self.last = Some((pid, k));
        (k, k == next)
    }
}

/// One producer id's batches in a range ([`WindowColumns::producer_spans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSpan {
    /// The producer id (-1 for batches written without one).
    pub producer_id: i64,
    /// Its first and last batch in the range.
    pub first: usize,
    pub last: usize,
    /// The producer epoch of its first batch.
    pub first_epoch: i16,
    /// Whether each of its batches has an epoch at least its previous batch's.
    pub rising: bool,
}

/// One producer id's batches in a range as its sequences see them ([`WindowColumns::producer_sequences`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerSequences {
    /// The producer id (-1 for batches written without one).
    pub producer_id: i64,
    /// Its first and last batch in the range.
    pub first: usize,
    pub last: usize,
    /// Whether each of its batches after the first continues the one before it: the same producer epoch and
    /// transactional bit, base sequence = the previous batch's last sequence + 1, and, for those and the first, at
    /// least one record and every sequence in `0..=i32::MAX` (none wraps).
    pub sequential: bool,
    /// Base sequence and base offset of each batch after the first, in order (empty unless `sequential`).
    pub sequences: Vec<i32>,
    pub offsets: Vec<i64>,
    /// The declared record counts of the batches after the first, summed.
    pub records: i64,
}

impl WindowColumns {
    /// Whether batch `i` follows batch `i - 1` of the window in everything a reader carries from one batch
    /// to the next but the producer and its transaction (`kafkatool.model.Stretch` names the rule for Python): its
    /// CRC matches; its base offset is the previous last offset + 1; its record count is `lastOffsetDelta + 1`; the
    /// same leader epoch; no delete horizon (attributes `0x40`); not a control batch (`0x20`) unless `control` (the
    /// caller takes this one as any other batch: Python decides which, from [`Self::control`]); the transactional
    /// bit may be set; `-1 <= firstTimestamp <= maxTimestamp`. With `deep`, also decoded here without a
    /// [`Self::deep_suspect`] (never a control batch). Facts about the bytes only: what they mean is decided in Python.
    pub fn follows(&self, i: usize, deep: bool, control: bool) -> bool {
        let (Some(prev), Some(e)) = (i.checked_sub(1).and_then(|j| self.batches.get(j)), self.batches.get(i)) else {
            return false;
        };
        let (p, h) = (&prev.header, &e.header);
        let prev_next = p.base_offset.checked_add(i64::from(p.last_offset_delta)).and_then(|l| l.checked_add(1));
        e.crc_valid
            && prev_next == Some(h.base_offset)
            && h.base_offset.checked_add(i64::from(h.last_offset_delta)).is_some()
            && i64::from(h.records_count) == i64::from(h.last_offset_delta) + 1
            && h.partition_leader_epoch == p.partition_leader_epoch
            && h.attributes & 0x40 == 0
            && (control || h.attributes & 0x20 == 0)
            && -1 <= h.base_timestamp
            && h.base_timestamp <= h.max_timestamp
            && (!deep || (self.decoded.get(i) == Some(&true) && !self.deep_suspect(i)))
    }

    /// Each producer id's batches among `lo..hi`, in the order the ids first appear: where its first and last batch
    /// are, the producer epoch of its first one, and whether its epochs never go down from batch to batch. What a
    /// producer-state replay of the batches needs in order to see only each producer's last batch (Python decides
    /// when that is enough: `kafkatool.loader._producer_runs`).
    pub fn producer_spans(&self, lo: usize, hi: usize) -> Vec<ProducerSpan> {
        let batches = self.batches.get(lo..hi.min(self.batches.len())).unwrap_or_default();
        // each span with the epoch of its latest batch so far, and where each producer id's span is
        let mut spans: Vec<(ProducerSpan, i16)> = Vec::new();
        let mut slots = ProducerSlots::default();
        for (j, e) in batches.iter().enumerate() {
            let (i, pid, epoch) = (lo + j, e.header.producer_id, e.header.producer_epoch);
            let (k, new) = slots.slot(pid);
            if new {
                let first = ProducerSpan { producer_id: pid, first: i, last: i, first_epoch: epoch, rising: true };
                spans.push((first, epoch));
            }
            if let Some((span, latest)) = spans.get_mut(k) {
                span.last = i;
                span.rising &= epoch >= *latest;
                *latest = epoch;
            }
        }
        spans.into_iter().map(|(span, _)| span).collect()
    }

    /// Each producer id's batches among `lo..hi`, in the order the ids first appear, as its sequences see them:
    /// whether each batch after its first continues the one before it, and the base sequence and base offset of
    /// each of those. What the idempotence audit (`kafkatool.producers`) needs in order to judge only a producer's
    /// first batch of a stretch and count the rest (Python decides when that is enough).
    pub fn producer_sequences(&self, lo: usize, hi: usize) -> Vec<ProducerSequences> {
        let batches = self.batches.get(lo..hi.min(self.batches.len())).unwrap_or_default();
        // every sequence of the batch in 0..=i32::MAX (none wraps), at least one record
        let fits = |h: &V2Header| {
            h.base_sequence >= 0
                && h.last_offset_delta >= 0
                && i64::from(h.base_sequence) + i64::from(h.last_offset_delta) <= i64::from(i32::MAX)
        };
        let mut spans: Vec<(ProducerSequences, V2Header)> = Vec::new();
        let mut slots = ProducerSlots::default();
        for (j, e) in batches.iter().enumerate() {
            let (i, h) = (lo + j, e.header);
            let (k, new) = slots.slot(h.producer_id);
            if new {
                let first = ProducerSequences {
                    producer_id: h.producer_id,
                    first: i,
                    last: i,
                    sequential: true,
                    sequences: Vec::new(),
                    offsets: Vec::new(),
                    records: 0,
                };
                spans.push((first, h));
                continue;
            }
            if let Some((span, prev)) = spans.get_mut(k) {
                span.last = i;
                span.records += i64::from(h.records_count);
                span.sequential &= fits(prev)
                    && fits(&h)
                    && h.producer_epoch == prev.producer_epoch
                    && h.attributes & 0x10 == prev.attributes & 0x10
                    && i64::from(h.base_sequence) == i64::from(prev.base_sequence) + i64::from(prev.last_offset_delta) + 1;
                if span.sequential {
                    span.sequences.push(h.base_sequence);
                    span.offsets.push(h.base_offset);
                }
                *prev = h;
            }
        }
        spans
            .into_iter()
            .map(|(mut span, _)| {
                if !span.sequential {
                    span.sequences.clear();
                    span.offsets.clear();
                }
                span
            })
            .collect()
    }

    /// The batches of `lo..hi` where a producer-state replay of them may see something happen, in order, each with
    /// why (the [`event`] bits, several at once): its producer id's first batch in the range; the first
    /// transactional data batch (transactional bit `0x10` set, control bit `0x20` clear) of its producer id in the
    /// range, and after each of that producer id's control batches there (where a transaction may begin); a control
    /// batch; its producer id's last data batch, and last batch, in the range. Python decides when these are enough
    /// (`kafkatool.loader._producer_runs`, and `verify`'s transactions). Only the bits of `mask`, and the events with
    /// one of them: without
    /// [`event::FIRST`], [`event::LAST_DATA`] or [`event::LAST`], a batch neither transactional nor a control batch
    /// is not even looked up (many producers' batches taking turns, none of them transactional, cost nothing).
    pub fn producer_events(&self, lo: usize, hi: usize, mask: u8) -> Vec<(usize, u8)> {
        let batches = self.batches.get(lo..hi.min(self.batches.len())).unwrap_or_default();
        let mut kinds = vec![0u8; batches.len()];
        // per producer id: its latest batch and latest data batch so far, and whether its next transactional data
        // batch may begin a transaction
        let mut producers: Vec<(usize, Option<usize>, bool)> = Vec::new();
        let mut slots = ProducerSlots::default();
        let every_batch = mask & (event::FIRST | event::LAST_DATA | event::LAST) != 0;
        for (j, e) in batches.iter().enumerate() {
            let (pid, attributes) = (e.header.producer_id, e.header.attributes);
            if !every_batch && attributes & 0x30 == 0 {
                continue;
            }
            let mut kind = 0;
            let (k, new) = slots.slot(pid);
            if new {
                kind |= event::FIRST;
                producers.push((j, None, true));
            }
            let Some((latest, latest_data, may_begin)) = producers.get_mut(k) else { continue };
            if attributes & 0x20 != 0 {
                kind |= event::CONTROL;
                *may_begin = true;
            } else {
                if attributes & 0x10 != 0 && *may_begin {
                    kind |= event::BEGINS;
                    *may_begin = false;
                }
                *latest_data = Some(j);
            }
            *latest = j;
            if let Some(at) = kinds.get_mut(j) {
                *at |= kind;
            }
        }
        for (latest, latest_data, _) in producers {
            if let Some(at) = latest_data.and_then(|j| kinds.get_mut(j)) {
                *at |= event::LAST_DATA;
            }
            if let Some(at) = kinds.get_mut(latest) {
                *at |= event::LAST;
            }
        }
        kinds.into_iter().enumerate().filter_map(|(j, kind)| (kind & mask != 0).then_some((lo + j, kind & mask))).collect()
    }

    /// Batches `lo..hi` taken together (the loader's view of a stretch).
    pub fn advance(&self, lo: usize, hi: usize) -> Advance {
        let never = i128::from(i64::MAX) + 1;
        let mut index = OffsetIndex { base_offset: 0, relative: &[], positions: &[], next: 0 };
        let mut time = TimeIndex { timestamps: &[], offsets: &[], next: 0, max_before: -1 };
        self.advance_indexed(lo, hi, never, never, &mut index, &mut time).0
    }

    /// From batch `lo` on (up to `hi`), the batches before the first that reaches an offset (its last offset
    /// `>= offset`), has a max timestamp above `max_timestamp`, or is where an index entry falls that does not name
    /// it exactly as the broker writes it: an offset-index entry at the batch's first byte with its last offset; a
    /// time-index entry whose offset the batch reaches, with the batch's max timestamp, above every timestamp before
    /// it. The bounds are where the caller has something to look at batch by batch. Entries from `index.next` and
    /// `time.next` on are looked at. Returns the advance, with `index.next` and `time.next` moved past the entries
    /// passed, and the largest size of a batch an offset-index entry named (0 when none).
    pub fn advance_indexed(
        &self,
        lo: usize,
        hi: usize,
        offset: i128,
        max_timestamp: i128,
        index: &mut OffsetIndex<'_>,
        time: &mut TimeIndex<'_>,
    ) -> (Advance, usize) {
        let mut out = Advance { end: lo, last_offset: None, max_timestamp: -1, records: 0, next_position: None };
        let mut largest = 0;
        'batches: for e in self.batches.get(lo..hi.min(self.batches.len())).unwrap_or_default() {
            let h = &e.header;
            let last = i128::from(h.base_offset) + i128::from(h.last_offset_delta);
            if last >= offset || i128::from(h.max_timestamp) > max_timestamp {
                break;
            }
            let mut names_it = false; // an offset-index entry names this batch
            if let Some((entry_offset, entry_position)) = index.entry(index.next) {
                if i128::from(e.position) >= entry_position {
                    if i128::from(e.position) != entry_position || entry_offset != last {
                        break;
                    }
                    names_it = true;
                }
            }
            let mut next_time = time.next;
            while let Some((entry_timestamp, entry_offset)) = time.entry(next_time) {
                if last < i128::from(entry_offset) {
                    break;
                }
                if time.max_before >= entry_timestamp || h.max_timestamp != entry_timestamp {
                    break 'batches;
                }
                next_time += 1;
            }
            if names_it {
                index.next += 1;
                largest = largest.max(e.total);
            }
            time.next = next_time;
            time.max_before = time.max_before.max(h.max_timestamp);
            out.end += 1;
            out.last_offset = i64::try_from(last).ok();
            out.max_timestamp = out.max_timestamp.max(h.max_timestamp);
            out.records = out.records.saturating_add(i64::from(h.records_count));
            out.next_position = i64::try_from(e.total).ok().and_then(|t| e.position.checked_add(t));
        }
        (out, largest)
    }
}

/// A time index's entries as `verify` holds them: timestamps and absolute offsets as native-endian int64 arrays, the
/// next entry to look at, and the largest max timestamp of the segment's batches before the walk (-1: none).
pub struct TimeIndex<'a> {
    pub timestamps: &'a [u8],
    pub offsets: &'a [u8],
    pub next: usize,
    pub max_before: i64,
}

impl TimeIndex<'_> {
    /// Entry `i` as (timestamp, absolute offset), or `None` past the end.
    fn entry(&self, i: usize) -> Option<(i64, i64)> {
        Some((i64::from_ne_bytes(ne_word(self.timestamps, i)?), i64::from_ne_bytes(ne_word(self.offsets, i)?)))
    }
}

/// An offset index's entries as `verify` holds them (`segment_check.OffsetEntries`): relative offsets and positions
/// as native-endian int32 arrays, and the next entry to look at.
pub struct OffsetIndex<'a> {
    pub base_offset: i64,
    pub relative: &'a [u8],
    pub positions: &'a [u8],
    pub next: usize,
}

impl OffsetIndex<'_> {
    /// Entry `i` as (absolute offset, position), or `None` past the end.
    fn entry(&self, i: usize) -> Option<(i128, i128)> {
        let relative = i32::from_ne_bytes(ne_word(self.relative, i)?);
        Some((i128::from(self.base_offset) + i128::from(relative), i128::from(i32::from_ne_bytes(ne_word(self.positions, i)?))))
    }
}

/// Word `i` (of `N` bytes) of a native-endian array's bytes, or `None` past the end.
fn ne_word<const N: usize>(bytes: &[u8], i: usize) -> Option<[u8; N]> {
    let at = i.checked_mul(N)?;
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Most records one call of [`decode_window_until`] decodes, and most a batch may declare to be decoded there
/// (`kafkatool.records.RECORD_CHUNK`): a batch declaring more is left to the Python reader, which decodes it this
/// many records at a time; whatever a batch of a few bytes expands to, the columns of one call stay bounded.
pub const PIECE_RECORDS: usize = 1 << 16;
/// Most decompressed bytes one call of [`decode_window_until`] gathers (after the batch that passes it, the call
/// ends), besides the one batch bounded by `--max-decompressed` on its own.
pub const PIECE_DECOMPRESSED: usize = 8 << 20;

/// Whether the records of a batch with this header may be decoded natively (before decompressing and decoding
/// them): not a control batch, a codec Kafka defines, a last offset that fits 64 bits.
fn natively_decodable(h: &V2Header) -> bool {
    h.attributes & 0x07 <= 4 && h.attributes & 0x20 == 0 && h.base_offset.checked_add(i64::from(h.last_offset_delta)).is_some()
}

/// See the module docs.
pub fn decode_window(buf: &[u8], p: usize, base: i64, limit: i64, max_batch: i64) -> (usize, frame::Stop, WindowColumns) {
    decode_window_with(buf, p, base, limit, max_batch, Decode::Uncompressed)
}

/// Which batches [`decode_window_with`] decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    /// None: the batches alone, without their bytes (`data` stays empty, `raw` gives nothing): the columnar
    /// header walk of `verify` without `--deep`.
    Nothing,
    /// The uncompressed ones; compressed batches are left to Python.
    Uncompressed,
    /// Compressed ones too, each decompressed in one pass bounded by this many bytes
    /// ([`crate::codecs::with_decompressed`]); a batch that fails (damage, a bomb) is left to Python.
    Compressed(usize),
}

/// [`decode_window`], decoding the batches `decode` says. The records of a compressed batch are decoded from
/// its decompressed bytes, which are appended to `data` after the window's bytes (their slices point there).
pub fn decode_window_with(
    buf: &[u8],
    p: usize,
    base: i64,
    limit: i64,
    max_batch: i64,
    decode: Decode,
) -> (usize, frame::Stop, WindowColumns) {
    decode_window_until(buf, p, usize::MAX, base, limit, max_batch, decode)
}

/// [`decode_window_with`] stopping as [`frame::scan_v2_until`] does at a whole batch beginning at or after
/// offset `until` of `buf`: a caller bounds the columns (and the memory) of one call with it.
pub fn decode_window_until(
    buf: &[u8],
    p: usize,
    until: usize,
    base: i64,
    limit: i64,
    max_batch: i64,
    decode: Decode,
) -> (usize, frame::Stop, WindowColumns) {
    let mut cols = WindowColumns::default();
    // Room for as many batches as the window (up to `until`) can hold, reserved once: growing by doubling copied
    // the entries several times per window; pages never touched cost nothing.
    let most = buf.len().min(until).saturating_sub(p) / RECORD_BATCH_OVERHEAD + 1;
    cols.batches.reserve(most);
    cols.decoded.reserve(most);
    cols.record_starts.reserve(most + 1);
    cols.records.header_starts.push(0);
    cols.record_starts.push(0);
    let origin = p;
    let mut decompressed: Vec<u8> = Vec::new(); // the records sections of compressed batches, back to back
    // the records and headers decoded from there: (first record, first header) and (end record, end header)
    let mut in_decompressed: Vec<((usize, usize), (usize, usize))> = Vec::new();
    // the piece holds its most records or decompressed bytes: it ends after the batch that filled it
    let full = std::cell::Cell::new(false);
    let mut visit = |e: &Entry, bytes: &[u8]| {
        let h = &e.header;
        let codec = h.attributes & 0x07;
        let ok = match decode {
            Decode::Nothing => false,
            _ if !natively_decodable(h) || i64::from(h.records_count) > PIECE_RECORDS as i64 => false,
            Decode::Uncompressed if codec != 0 => false,
            Decode::Compressed(limit) if codec != 0 => {
                let at = (cols.records.offsets.len(), cols.records.header_keys.len());
                let payload = bytes.get(RECORD_BATCH_OVERHEAD..).unwrap_or_default();
                let done = crate::codecs::with_decompressed(codec as u8, payload, limit, false, |out| {
                    let Ok(out) = out else { return false };
                    let done = records::decode_v2_into(out, 0, &context(h), &mut cols.records).is_ok();
                    if done {
                        shift_slices(&mut cols.records, at, decompressed.len());
                        decompressed.extend_from_slice(out);
                    }
                    done
                });
                if done {
                    in_decompressed.push((at, (cols.records.offsets.len(), cols.records.header_keys.len())));
                }
                done
            }
            _ => {
                // slices relative to `data` (which begins at `origin`): decode over the batch, then shift
                let at = (cols.records.offsets.len(), cols.records.header_keys.len());
                let done = records::decode_v2_into(bytes, RECORD_BATCH_OVERHEAD, &context(h), &mut cols.records).is_ok();
                if done {
                    shift_slices(&mut cols.records, at, e.start - origin);
                }
                done
            }
        };
        if h.attributes & 0x27 == 0x20 {
            // an uncompressed control batch: its one record, read here once for every reader
            if let Some(record) = records::control_record(bytes, RECORD_BATCH_OVERHEAD, &context(h)) {
                cols.controls.push((cols.batches.len(), record));
            }
        }
        cols.batches.push(Entry { start: e.start - origin, ..*e });
        cols.decoded.push(ok);
        cols.record_starts.push(cols.records.offsets.len());
        full.set(cols.records.offsets.len() >= PIECE_RECORDS || decompressed.len() >= PIECE_DECOMPRESSED);
    };
    let (next, stop) = if decode == Decode::Nothing {
        frame::scan_v2_until(buf, p, until, base, limit, max_batch, visit)
    } else {
        // a batch at a time, to end the piece where it is full (a walk that stops where the piece is full could
        // not tell a batch to come back for from one taken)
        let mut at = p;
        loop {
            let (next, stop) = frame::scan_v2_until(buf, at, at.saturating_add(1), base, limit, max_batch, &mut visit);
            if stop != frame::Stop::Until || full.get() || next >= until {
                break (next, stop);
            }
            at = next;
        }
    };
    // Nothing decoded: nobody reads the bytes back (`verify` re-reads a control batch by position), so the window
    // is not copied (the copy and its fresh pages were a third of the header walk's time).
    let window = if decode == Decode::Nothing { &[] } else { buf.get(origin..next).unwrap_or_default() };
    // the decompressed sections follow the window's bytes in `data`: their slices move by its length
    for &(at, end) in &in_decompressed {
        shift_slices_until(&mut cols.records, at, (Some(end.0), Some(end.1)), window.len());
    }
    let mut data = Vec::with_capacity(window.len() + decompressed.len());
    data.extend_from_slice(window);
    data.extend_from_slice(&decompressed);
    cols.data = data;
    cols.origin = base.saturating_add(i64::try_from(origin).unwrap_or(i64::MAX));
    (next, stop, cols)
}

fn context(h: &V2Header) -> BatchContext {
    BatchContext {
        base_offset: h.base_offset,
        base_timestamp: h.base_timestamp,
        log_append_time: (h.attributes & 0x08 != 0).then_some(h.max_timestamp),
        count: i64::from(h.records_count),
    }
}

/// Move the slices of the records (and headers) from `at` (record, header index) on by `by` bytes.
fn shift_slices(r: &mut RecordColumns, at: (usize, usize), by: usize) {
    shift_slices_until(r, at, (None, None), by);
}

/// [`shift_slices`] of the records and headers from `at` up to `end` (`None`: to the last).
fn shift_slices_until(r: &mut RecordColumns, at: (usize, usize), end: (Option<usize>, Option<usize>), by: usize) {
    let records = |v: &mut Vec<Option<records::Slice>>| {
        let to = end.0.unwrap_or(v.len()).min(v.len());
        for s in v.get_mut(at.0.min(to)..to).unwrap_or_default().iter_mut().flatten() {
            s.0 += by;
        }
    };
    records(&mut r.keys);
    records(&mut r.values);
    let to = end.1.unwrap_or(r.header_keys.len()).min(r.header_keys.len());
    for s in r.header_keys.get_mut(at.1.min(to)..to).unwrap_or_default() {
        s.0 += by;
    }
    for s in r.header_values.get_mut(at.1.min(to)..to).unwrap_or_default().iter_mut().flatten() {
        s.0 += by;
    }
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
    fn follows_and_advance_say_where_a_batch_needs_a_look() {
        let mut buf = batch(10, RECORD, 1, 0);
        buf.extend(batch(11, RECORD, 1, 0x10)); // transactional: follows
        buf.extend(batch(12, RECORD, 1, 0x30)); // a control batch (a transaction marker): does not
        buf.extend(batch(14, RECORD, 1, 0)); // a gap: does not
        buf.extend(batch(15, RECORD, 1, 4)); // zstd: follows, but not decoded here (deep: does not)
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        let flags: Vec<bool> = (0..5).map(|i| cols.follows(i, false, false)).collect();
        assert_eq!(flags, vec![false, true, false, false, true]);
        let none = ProducerSpan { producer_id: -1, first: 0, last: 4, first_epoch: -1, rising: true };
        assert_eq!(cols.producer_spans(0, 5), vec![none]); // one producer (none) throughout
        assert!(!cols.follows(4, true, false) && cols.follows(1, true, false) && !cols.follows(5, false, false));
        let never = i128::from(i64::MAX) + 1;
        let all = cols.advance(0, 5);
        let end = cols.batches[4].position + cols.batches[4].total as i64;
        assert_eq!(all, Advance { end: 5, last_offset: Some(15), max_timestamp: 1003, records: 5, next_position: Some(end) });
        let (mut index, mut time) = (OffsetIndex { base_offset: 0, relative: &[], positions: &[], next: 0 },
                                     TimeIndex { timestamps: &[], offsets: &[], next: 0, max_before: -1 });
        assert_eq!(cols.advance_indexed(1, 5, 12, never, &mut index, &mut time).0.end, 2); // batch 2 reaches offset 12
        let none = Advance { end: 0, last_offset: None, max_timestamp: -1, records: 0, next_position: None };
        assert_eq!(cols.advance_indexed(0, 5, never, 1002, &mut index, &mut time).0, none);
        assert_eq!(cols.advance(4, 99).end, 5);
        let (_, _, headers_only) = decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, Decode::Nothing);
        assert!(headers_only.decoded.iter().all(|d| !d) && headers_only.records.offsets.is_empty());
        assert!(headers_only.data.is_empty() && headers_only.raw(1).is_empty());
        assert!(headers_only.follows(1, false, false) && !headers_only.follows(1, true, false));
        let mut horizon = batch(10, RECORD, 1, 0);
        horizon.extend(batch(11, RECORD, 1, 0x40)); // a delete horizon: does not
        let (_, _, cols) = decode_window(&horizon, 0, 0, i64::MAX, i64::MAX);
        assert!(!cols.follows(1, false, false));
    }

    /// Batches at offsets 10, 11, ... of these (producer id, producer epoch, attributes).
    fn producer_batches(producers: &[(i64, i16, i16)]) -> Vec<u8> {
        let mut buf = Vec::new();
        for (i, (pid, epoch, attributes)) in producers.iter().enumerate() {
            let mut b = batch(10 + i as i64, RECORD, 1, *attributes);
            b[43..51].copy_from_slice(&pid.to_be_bytes());
            b[51..53].copy_from_slice(&epoch.to_be_bytes());
            let crc = crc32c::crc32c(&b[21..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
            buf.extend(b);
        }
        buf
    }

    #[test]
    fn producer_spans_give_each_producers_last_batch_and_whether_its_epochs_rise() {
        let buf = producer_batches(&[(7, 0, 0), (7, 0, 0x10), (9, 1, 0), (9, 0, 0), (7, 2, 0x10), (7, 2, 0), (-1, -1, 0)]);
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        let span = |producer_id, first, last, first_epoch, rising| ProducerSpan { producer_id, first, last, first_epoch, rising };
        assert_eq!(cols.producer_spans(0, 7), vec![span(7, 0, 5, 0, true), span(9, 2, 3, 1, false), span(-1, 6, 6, -1, true)]);
        assert_eq!(cols.producer_spans(3, 5), vec![span(9, 3, 3, 0, true), span(7, 4, 4, 2, true)]);
        assert_eq!(cols.producer_spans(2, 2), vec![]);
    }

    /// Batches at offsets 10, 11, ... of these (producer id, producer epoch, attributes, base sequence, records).
    fn sequenced_batches(batches: &[(i64, i16, i16, i32, i32)]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut offset = 10;
        for (pid, epoch, attributes, seq, count) in batches {
            let mut b = batch(offset, RECORD, *count, *attributes);
            b[43..51].copy_from_slice(&pid.to_be_bytes());
            b[51..53].copy_from_slice(&epoch.to_be_bytes());
            b[53..57].copy_from_slice(&seq.to_be_bytes());
            let crc = crc32c::crc32c(&b[21..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
            buf.extend(b);
            offset += i64::from(*count);
        }
        buf
    }

    #[test]
    fn producer_sequences_say_whether_each_batch_continues_its_producers_last() {
        let max = i32::MAX;
        let buf = sequenced_batches(&[
            (7, 0, 0, 0, 1), (9, 0, 0x10, 5, 2), (7, 0, 0, 1, 3), (9, 0, 0x10, 7, 1), (7, 0, 0, 4, 1), // sequential
            (4, 0, 0, 0, 1), (4, 0, 0, 2, 1),                                                          // a gap
            (5, 0, 0, 3, 1), (5, 0, 0, 3, 1),                                                          // a duplicate
            (6, 0, 0, 0, 1), (6, 1, 0, 1, 1),                                                          // an epoch bump
            (3, 0, 0x10, 0, 1), (3, 0, 0, 1, 1),                                                       // transactional bit
            (2, 0, 0, max - 1, 1), (2, 0, 0, max, 1), (1, 0, 0, max, 1), (1, 0, 0, 0, 1),               // near the wrap
            (8, 0, 0, -1, 1), (8, 0, 0, 0, 1), (-1, -1, 0, -1, 1),                                      // no sequence
        ]);
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        let got: Vec<_> = cols.producer_sequences(0, 20).into_iter()
            .map(|s| (s.producer_id, s.first, s.last, s.sequential, s.records, s.sequences, s.offsets)).collect();
        assert_eq!(got, vec![
            (7, 0, 4, true, 4, vec![1, 4], vec![13, 17]),
            (9, 1, 3, true, 1, vec![7], vec![16]),
            (4, 5, 6, false, 1, vec![], vec![]),
            (5, 7, 8, false, 1, vec![], vec![]),
            (6, 9, 10, false, 1, vec![], vec![]),
            (3, 11, 12, false, 1, vec![], vec![]),
            (2, 13, 14, true, 1, vec![max], vec![27]),
            (1, 15, 16, false, 1, vec![], vec![]),
            (8, 17, 18, false, 1, vec![], vec![]),
            (-1, 19, 19, true, 0, vec![], vec![]),
        ]);
        assert_eq!(cols.producer_sequences(2, 5).into_iter().map(|s| (s.producer_id, s.sequences)).collect::<Vec<_>>(),
                   vec![(7, vec![4]), (9, vec![])]);
    }
    /// A COMMIT (key version 0, type 1; value version 0, coordinator epoch 5) at timestamp delta 3.
    const COMMIT: &[u8] = &[32, 0, 6, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 5, 0];

    #[test]
    fn control_records_are_read_once_for_every_reader() {
        let mut buf = batch(10, RECORD, 1, 0x10);
        buf.extend(batch(11, COMMIT, 1, 0x30)); // a COMMIT marker
        buf.extend(batch(12, COMMIT, 1, 0x34)); // compressed (zstd, in name): left to Python
        buf.extend(batch(13, RECORD, 1, 0x30)); // a key of one byte: left to Python
        buf.extend(batch(14, &[COMMIT, COMMIT].concat(), 2, 0x30)); // two records: left to Python
        buf.extend(batch(16, COMMIT, 1, 0x38)); // LOG_APPEND_TIME: the batch's max timestamp
        let commit = ControlRecord { key_version: 0, key_type: 1, value: Some((0, 5)), timestamp: 1003 };
        for decode in [Decode::Nothing, Decode::Uncompressed, Decode::Compressed(1 << 20)] {
            let (_, _, cols) = decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, decode);
            assert_eq!(cols.controls, vec![(1, commit), (5, commit)]);
            assert_eq!((cols.control(1), cols.control(2), cols.control(0), cols.control(9)), (Some(&commit), None, None, None));
            // a control batch follows when the caller takes it as any other batch, never for the deep checks
            assert!(!cols.follows(1, false, false) && cols.follows(1, false, true) && !cols.follows(1, true, true));
            assert!(cols.follows(2, false, true) && cols.follows(5, false, true));
        }
    }

    #[test]
    fn producer_events_are_where_a_replay_sees_something_happen() {
        use event::{BEGINS, CONTROL, FIRST, LAST, LAST_DATA};
        // 7: data, txn, txn, marker, txn, data; 9: txn, marker, marker; then a batch without producer id
        let buf = producer_batches(&[(7, 0, 0), (7, 0, 0x10), (9, 0, 0x10), (7, 0, 0x10), (7, 0, 0x30), (9, 0, 0x30),
                                     (7, 0, 0x10), (9, 0, 0x30), (7, 0, 0), (-1, -1, 0)]);
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        let all = cols.producer_events(0, 10, u8::MAX);
        assert_eq!(all, vec![
            (0, FIRST), (1, BEGINS), (2, FIRST | BEGINS | LAST_DATA), (4, CONTROL), (5, CONTROL), (6, BEGINS),
            (7, CONTROL | LAST), (8, LAST_DATA | LAST), (9, FIRST | LAST_DATA | LAST)]);
        assert_eq!(cols.producer_events(4, 7, u8::MAX), vec![(4, FIRST | CONTROL), (5, FIRST | CONTROL | LAST),
                                                              (6, BEGINS | LAST_DATA | LAST)]);
        assert_eq!(cols.producer_events(3, 3, u8::MAX), vec![]);
        assert_eq!(cols.producer_events(9, 99, u8::MAX), vec![(9, FIRST | LAST_DATA | LAST)]);
        // a mask: those bits of the same events (without FIRST, LAST_DATA and LAST, plain data batches are skipped)
        assert_eq!(cols.producer_events(0, 10, BEGINS | CONTROL),
                   vec![(1, BEGINS), (2, BEGINS), (4, CONTROL), (5, CONTROL), (6, BEGINS), (7, CONTROL)]);
        for mask in 1..32 {
            let masked: Vec<(usize, u8)> = all.iter().filter(|(_, k)| k & mask != 0).map(|(i, k)| (*i, k & mask)).collect();
            assert_eq!(cols.producer_events(0, 10, mask), masked, "mask {mask}");
        }
    }

    #[test]
    fn advance_passes_index_entries_that_name_a_batch_exactly() {
        let mut buf = Vec::new();
        for offset in 10..16 {
            buf.extend(batch(offset, RECORD, 1, 0));
        }
        let (_, _, cols) = decode_window(&buf, 0, 0, i64::MAX, i64::MAX);
        let at = |i: usize| cols.batches[i].position as i32;
        let words = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|w| w.to_ne_bytes()).collect() };
        let never = i128::from(i64::MAX) + 1;
        // entries at batches 1 and 3 (exact), then one pointing inside batch 4
        let (relative, positions) = (words(&[1, 3, 4]), words(&[at(1), at(3), at(4) + 1]));
        let mut index = OffsetIndex { base_offset: 10, relative: &relative, positions: &positions, next: 0 };
        let mut no_time = TimeIndex { timestamps: &[], offsets: &[], next: 0, max_before: -1 };
        let (a, largest) = cols.advance_indexed(0, 6, never, never, &mut index, &mut no_time);
        assert_eq!((a.end, index.next, largest), (5, 2, cols.batches[1].total)); // batch 5 is past the bad entry
        // an entry with another offset than the batch's last stops the walk at that batch
        let (relative, positions) = (words(&[2]), words(&[at(1)]));
        let mut index = OffsetIndex { base_offset: 10, relative: &relative, positions: &positions, next: 0 };
        assert_eq!(cols.advance_indexed(0, 6, never, never, &mut index, &mut no_time).0.end, 1);
        assert_eq!(index.next, 0);
        // time-index entries: (1003 at 10) names batch 0 exactly (every batch's max timestamp is 1003); a second
        // entry with the same timestamp, at 13, is one a broker never writes (not above the earlier batches)
        let longs = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|w| w.to_ne_bytes()).collect() };
        let (stamps, offsets) = (longs(&[1003, 1003]), longs(&[10, 13]));
        let mut none = OffsetIndex { base_offset: 10, relative: &[], positions: &[], next: 0 };
        let mut time = TimeIndex { timestamps: &stamps, offsets: &offsets, next: 0, max_before: -1 };
        let (a, _) = cols.advance_indexed(0, 6, never, never, &mut none, &mut time);
        assert_eq!((a.end, time.next, time.max_before), (3, 1, 1003));
        let mut time = TimeIndex { timestamps: &stamps, offsets: &offsets, next: 0, max_before: 1003 };
        assert_eq!(cols.advance_indexed(0, 6, never, never, &mut none, &mut time).0.end, 0);
    }

    #[test]
    fn compressed_batches_decode_into_the_same_columns() {
        let two = [RECORD, &[18, 0, 6, 2, 2, b'j', 4, b'w', b'w', 0][..]].concat();
        let snappy = snap::raw::Encoder::new().compress_vec(&two).unwrap();
        let mut buf = batch(10, &two, 2, 0);
        buf.extend(batch(12, &snappy, 2, 2)); // snappy
        buf.extend(batch(14, &snappy[..snappy.len() - 1], 2, 2)); // damaged: left to Python
        let (_, _, cols) = decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, Decode::Compressed(1 << 20));
        assert_eq!(cols.decoded, vec![true, true, false]);
        assert_eq!(cols.records.offsets, vec![10, 11, 12, 13]);
        let key = |j: usize| cols.slice(cols.records.keys[j]).unwrap().to_vec();
        let value = |j: usize| cols.slice(cols.records.values[j]).unwrap().to_vec();
        assert_eq!((key(2), value(2), key(3), value(3)), (b"k".to_vec(), b"vv".to_vec(), b"j".to_vec(), b"ww".to_vec()));
        assert_eq!(cols.raw(2), &batch(14, &snappy[..snappy.len() - 1], 2, 2)[..]);
        // an uncompressed batch between compressed ones keeps its slices into the window
        let mut mixed = batch(12, &snappy, 2, 2);
        mixed.extend(batch(14, &two, 2, 0));
        mixed.extend(batch(16, &snappy, 2, 2));
        let (_, _, cols) = decode_window_with(&mixed, 0, 0, i64::MAX, i64::MAX, Decode::Compressed(1 << 20));
        let keys: Vec<Vec<u8>> = (0..6).map(|j| cols.slice(cols.records.keys[j]).unwrap().to_vec()).collect();
        assert_eq!(keys, [b"k", b"j", b"k", b"j", b"k", b"j"].map(|k| k.to_vec()));
        let (_, _, small) = decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, Decode::Compressed(4)); // a bomb, for 4
        assert_eq!(small.decoded, vec![true, false, false]);
        let (_, _, plain) = decode_window_with(&buf, 0, 0, i64::MAX, i64::MAX, Decode::Uncompressed);
        assert_eq!(plain.decoded, vec![true, false, false]);
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
        let good = [batch(0, RECORD, 1, 0), batch(1, RECORD, 1, 0), batch(2, COMMIT, 1, 0x30)].concat();
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                for start in [0, i] {
                    let (_, _, cols) = decode_window(&bad, start, 0, i64::MAX, i64::MAX);
                    for b in 0..cols.batches.len() + 1 {
                        let _ = (cols.deep_suspect(b), cols.raw(b), cols.record_range(b), cols.control(b));
                        let _ = (cols.follows(b, false, true), cols.producer_events(b, cols.batches.len() + 1, u8::MAX));
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

    use super::{decode_window_until, Decode, OffsetIndex, ProducerSpan, TimeIndex, WindowColumns};
    use crate::records::RecordColumns;
    use crate::render::{self, Fallback, Records, Shown, Values};

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

    /// `values` of `render` as a [`Values`].
    fn values_of(name: &str) -> PyResult<Values> {
        Values::parse(name).ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("values: {name}")))
    }

    /// One chunk of the records of a batch that declares more than a window decodes (`decode_v2_chunk` with `lines`,
    /// `kafkatool.records.record_chunks`): their columns, over the records section `data` they index (held, not
    /// copied). `kafkatool.records.RecordRun` holds one to render its records as `dump` prints them, without the
    /// batch's line (written once, before the first chunk): no Python object per record.
    #[pyclass(frozen, name = "RecordChunk", module = "kafkatool._native")]
    pub struct PyRecordChunk {
        data: Py<PyAny>,
        records: RecordColumns,
    }

    impl PyRecordChunk {
        pub fn new(data: Py<PyAny>, records: RecordColumns) -> Self {
            PyRecordChunk { data, records }
        }
    }

    #[pymethods]
    impl PyRecordChunk {
        fn __len__(&self) -> usize {
            self.records.len()
        }

        /// The records as the columns of `decode_v2_chunk` (`(offsets, timestamps, keys, values, headers)`).
        fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
            crate::guarded(|| crate::with_bytes(self.data.bind(py), |buf| crate::columns_to_py(py, buf, &self.records)))
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

        /// One byte per batch of `lo..hi`: 1 where it follows the batch before it ([`WindowColumns::follows`]), the
        /// control batches named in `controls` (ascending) taken as any other batch.
        #[pyo3(signature = (lo, hi, deep, controls=Vec::new()))]
        fn follows<'py>(&self, py: Python<'py>, lo: usize, hi: usize, deep: bool, controls: Vec<usize>) -> Bound<'py, PyBytes> {
            let taken = |i: usize| controls.binary_search(&i).is_ok();
            let flags: Vec<u8> =
                (lo..hi.min(self.cols.batches.len())).map(|i| u8::from(self.cols.follows(i, deep, taken(i)))).collect();
            PyBytes::new(py, &flags)
        }

        /// `(i, producer_id, attributes, key_version, key_type, value_version, coordinator_epoch, timestamp)` of each
        /// control batch `i` in `lo..hi` whose one record was read here ([`WindowColumns::control`]; the value's two
        /// words None when it has fewer than 6 bytes).
        #[allow(clippy::type_complexity)]
        fn control_records(&self, lo: usize, hi: usize) -> Vec<(usize, i64, i16, i16, i16, Option<i16>, Option<i32>, i64)> {
            let c = &self.cols;
            let from = c.controls.partition_point(|(i, _)| *i < lo);
            let row = |(i, r): &(usize, crate::records::ControlRecord)| {
                let h = c.batches.get(*i).map(|e| e.header)?;
                let (version, epoch) = r.value.unzip();
                Some((*i, h.producer_id, h.attributes, r.key_version, r.key_type, version, epoch, r.timestamp))
            };
            c.controls.get(from..).unwrap_or_default().iter().take_while(|(i, _)| *i < hi).filter_map(row).collect()
        }

        /// `(i, producer_id, base_offset, kinds)` of each batch `i` of [`WindowColumns::producer_events`] in `lo..hi`
        /// with one of the bits `mask` (`EVENT_FIRST`, `EVENT_BEGINS`, `EVENT_LAST_DATA`, `EVENT_CONTROL`,
        /// `EVENT_LAST` of this module), `kinds` its bits.
        #[pyo3(signature = (lo, hi, mask=u8::MAX))]
        fn producer_events(&self, lo: usize, hi: usize, mask: u8) -> Vec<(usize, i64, i64, u8)> {
            let c = &self.cols;
            let row = |(i, kinds): (usize, u8)| c.batches.get(i).map(|e| (i, e.header.producer_id, e.header.base_offset, kinds));
            c.producer_events(lo, hi, mask).into_iter().filter_map(row).collect()
        }

        /// `(end, last_offset, max_timestamp, records, next_position)` of batches `lo..hi` taken together
        /// ([`WindowColumns::advance`]; `last_offset` and `next_position` None when there are none).
        fn advance(&self, lo: usize, hi: usize) -> (usize, Option<i64>, i64, i64, Option<i64>) {
            let a = self.cols.advance(lo, hi);
            (a.end, a.last_offset, a.max_timestamp, a.records, a.next_position)
        }

        /// `(end, last_offset, max_timestamp, records, next_position, next_entry, largest, next_time_entry)`:
        /// [`WindowColumns::advance`] up to `offset`/`max_timestamp`, passing the entries that name a batch exactly
        /// ([`WindowColumns::advance_indexed`]) of the offset index `(relative, positions)` (int32 buffers,
        /// `array('i')`) from `next_entry` on, and of the time index `(timestamps, time_offsets)` (int64 buffers,
        /// absolute offsets) from `next_time_entry` on, `max_before` the largest timestamp of the batches before.
        #[pyo3(signature = (lo, hi, offset, max_timestamp, base_offset, relative, positions, next_entry, timestamps,
                            time_offsets, next_time_entry, max_before))]
        #[allow(clippy::too_many_arguments, clippy::type_complexity)]
        fn advance_indexed(
            &self,
            lo: usize,
            hi: usize,
            offset: i128,
            max_timestamp: i128,
            base_offset: i64,
            relative: &Bound<'_, PyAny>,
            positions: &Bound<'_, PyAny>,
            next_entry: usize,
            timestamps: &Bound<'_, PyAny>,
            time_offsets: &Bound<'_, PyAny>,
            next_time_entry: usize,
            max_before: i64,
        ) -> PyResult<(usize, Option<i64>, i64, i64, Option<i64>, usize, usize, usize)> {
            crate::guarded(|| {
                crate::with_bytes(relative, |relative| {
                    crate::with_bytes(positions, |positions| {
                        crate::with_bytes(timestamps, |timestamps| {
                            crate::with_bytes(time_offsets, |offsets| {
                                let mut index = OffsetIndex { base_offset, relative, positions, next: next_entry };
                                let mut time = TimeIndex { timestamps, offsets, next: next_time_entry, max_before };
                                let (a, largest) =
                                    self.cols.advance_indexed(lo, hi, offset, max_timestamp, &mut index, &mut time);
                                Ok((a.end, a.last_offset, a.max_timestamp, a.records, a.next_position, index.next,
                                    largest, time.next))
                            })
                        })
                    })
                })
            })
        }

        /// `(producer_id, first, last, first_epoch, rising)` of each producer id's batches in `lo..hi`, in the
        /// order the ids first appear ([`WindowColumns::producer_spans`]).
        fn producer_spans(&self, lo: usize, hi: usize) -> Vec<(i64, usize, usize, i16, bool)> {
            let span = |s: ProducerSpan| (s.producer_id, s.first, s.last, s.first_epoch, s.rising);
            self.cols.producer_spans(lo, hi).into_iter().map(span).collect()
        }

        /// `(producer_id, first, last, sequential, records, sequences, offsets)` of each producer id's batches in
        /// `lo..hi`, in the order the ids first appear ([`WindowColumns::producer_sequences`]); `sequences` and
        /// `offsets` are the base sequences (native-endian i32) and base offsets (native-endian i64) of the batches
        /// after the first.
        #[allow(clippy::type_complexity)]
        fn producer_sequences<'py>(
            &self,
            py: Python<'py>,
            lo: usize,
            hi: usize,
        ) -> Vec<(i64, usize, usize, bool, i64, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
            self.cols
                .producer_sequences(lo, hi)
                .into_iter()
                .map(|s| {
                    let seqs: Vec<u8> = s.sequences.iter().flat_map(|q| q.to_ne_bytes()).collect();
                    let offsets: Vec<u8> = s.offsets.iter().flat_map(|o| o.to_ne_bytes()).collect();
                    (s.producer_id, s.first, s.last, s.sequential, s.records, PyBytes::new(py, &seqs),
                     PyBytes::new(py, &offsets))
                })
                .collect()
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

        /// Batch `i` as the 20 fields of `kafkatool.model.Batch` (a tuple; `IndexError` past the end).
        fn batch<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
            crate::guarded(|| {
                let e = self.cols.batches.get(i).ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(i))?;
                let row = crate::batch_row(py, &crate::RowNames::new(py), (e.position, e.total, &e.header, e.crc_valid))?;
                PyTuple::new(py, row)
            })
        }

        /// Number of records decoded in batches `lo..hi`.
        fn record_count(&self, lo: usize, hi: usize) -> usize {
            let c = &self.cols.record_starts;
            let at = |i: usize| c.get(i.min(self.cols.batches.len())).copied().unwrap_or(0);
            at(hi).saturating_sub(at(lo))
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

        /// `(i, (offsets, timestamps, keys, values, headers))` of each decoded batch `i` of `lo..hi` with records
        /// matching `search` in the offset range `from_offset..=to_offset` ([`crate::search::Search::hits`], the GIL
        /// released while it searches): only those records, as the columns of `decode_v2_chunk`.
        #[pyo3(signature = (lo, hi, search, from_offset=None, to_offset=None))]
        fn search<'py>(
            &self,
            py: Python<'py>,
            lo: usize,
            hi: usize,
            search: &Bound<'py, crate::search::py::PyRecordSearch>,
            from_offset: Option<i128>,
            to_offset: Option<i128>,
        ) -> PyResult<Vec<(usize, Bound<'py, PyTuple>)>> {
            crate::guarded(|| {
                let (cols, search) = (&self.cols, &search.get().search);
                let range = crate::search::Offsets { from: from_offset, to: to_offset };
                let hits = py.detach(|| search.hits(cols, lo, hi, range));
                let r = &cols.records;
                let mut out = Vec::with_capacity(hits.len());
                for (i, matched) in hits {
                    let mut sub = RecordColumns::default();
                    sub.header_starts.push(0);
                    for j in matched {
                        let from = r.header_starts.get(j).copied().unwrap_or(0);
                        let to = r.header_starts.get(j + 1).copied().unwrap_or(from);
                        sub.offsets.extend(r.offsets.get(j));
                        sub.timestamps.extend(r.timestamps.get(j));
                        sub.keys.extend(r.keys.get(j));
                        sub.values.extend(r.values.get(j));
                        sub.header_keys.extend_from_slice(r.header_keys.get(from..to).unwrap_or_default());
                        sub.header_values.extend_from_slice(r.header_values.get(from..to).unwrap_or_default());
                        sub.header_starts.push(sub.header_keys.len());
                    }
                    out.push((i, crate::columns_to_py(py, &cols.data, &sub)?));
                }
                Ok(out)
            })
        }

        /// The window's bytes (what every slice indexes).
        fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
            PyBytes::new(py, &self.cols.data)
        }
    }

    /// Batches `lo..hi` of a [`PyWindowColumns`] and (with `records`) their records, or records `lo..hi` of a
    /// [`PyRecordChunk`] (a batch's records without its line, which is written before the first chunk), rendered as
    /// `dump` prints them, handed to `write` as UTF-8 bytes in pieces of whole lines (about 64 KiB each, see
    /// `render::CHUNK`): `fmt` "text" or "jsonl", `values` "base64" | "text" | "hex" | "none"; `fallback` is
    /// `(text_bytes, key_repr, iso)`, Python's rendering of the rare cases (see `render.rs`); a control batch whose
    /// marker was read is named ABORT or COMMIT with its coordinator epoch; `context` is written at the end of each
    /// JSON line, before its `}` (the file's topic, partition and path).
    #[pyfunction]
    #[pyo3(name = "render", signature = (columns, lo, hi, fmt, values, fallback, write, records = true, context = ""))]
    #[allow(clippy::too_many_arguments)]
    fn render_lines<'py>(
        py: Python<'py>,
        columns: &Bound<'py, PyAny>,
        lo: usize,
        hi: usize,
        fmt: &str,
        values: &str,
        fallback: (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>),
        write: Bound<'py, PyAny>,
        records: bool,
        context: &str,
    ) -> PyResult<()> {
        crate::guarded(|| {
            let values = values_of(values)?;
            let (text_bytes, key_repr, iso) = fallback;
            let mut fb = PyFallback { text_bytes, key_repr, iso };
            let mut out = String::with_capacity(render::CHUNK + 4096);
            let mut sink = |lines: &str| write.call1((PyBytes::new(py, lines.as_bytes()),)).map(drop);
            let mut show =
                |shown: Shown<'_>| render::render(shown, lo, hi, fmt == "jsonl", context, values, &mut fb, &mut out, &mut sink);
            if let Ok(window) = columns.cast::<PyWindowColumns>() {
                return show(Shown::Batches { cols: &window.get().cols, records });
            }
            let chunk = columns.cast::<PyRecordChunk>()?.get();
            crate::with_bytes(chunk.data.bind(py), |data| show(Shown::Records(Records { cols: &chunk.records, data })))
        })
    }

    /// `(p, stop, columns)`: the whole v2 batches of `window` from the walk's `p` on and (with `decode`) their records as
    /// [`PyWindowColumns`]; `p` and `stop` as `scan_batches` returns them, and with a `budget`, stop 3 at a whole
    /// batch beginning `budget` bytes or more after `p` (the caller goes on from there with another call; at
    /// least one batch is taken, whatever the budget).
    #[pyfunction]
    #[pyo3(signature = (window, walk, decode=true, max_decompressed=0, budget=None))]
    fn decode_window_columns<'py>(
        py: Python<'py>,
        window: &Bound<'py, PyAny>,
        walk: crate::BatchWalk,
        decode: bool,
        max_decompressed: usize,
        budget: Option<usize>,
    ) -> PyResult<(usize, u8, Bound<'py, PyWindowColumns>)> {
        let crate::BatchWalk(p, base, limit, max_batch) = walk;
        crate::guarded(|| {
            crate::with_bytes(window, |buf| {
                let decode = match (decode, max_decompressed) {
                    (false, _) => Decode::Nothing,
                    (true, 0) => Decode::Uncompressed,
                    (true, limit) => Decode::Compressed(limit),
                };
                let until = budget.map_or(usize::MAX, |b| p.saturating_add(b.max(1)));
                // The walk, CRCs and decode touch no Python object: other threads run meanwhile (verify -j).
                let (next, stop, cols) = py.detach(|| decode_window_until(buf, p, until, base, limit, max_batch, decode));
                Ok((next, stop as u8, Bound::new(py, PyWindowColumns { cols })?))
            })
        })
    }

    pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add_class::<PyWindowColumns>()?;
        m.add_class::<PyRecordChunk>()?;
        m.add("EVENT_FIRST", super::event::FIRST)?;
        m.add("EVENT_BEGINS", super::event::BEGINS)?;
        m.add("EVENT_LAST_DATA", super::event::LAST_DATA)?;
        m.add("EVENT_CONTROL", super::event::CONTROL)?;
        m.add("EVENT_LAST", super::event::LAST)?;
        m.add_function(wrap_pyfunction!(decode_window_columns, m)?)?;
        m.add_function(wrap_pyfunction!(render_lines, m)?)?;
        Ok(())
    }
}

pub use py::{register, PyRecordChunk};
