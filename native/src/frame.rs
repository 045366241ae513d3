//! Framing, v2 header decode and CRC32C of whole record batches in a buffer.
//!
//! Layout (Kafka's `DefaultRecordBatch`, declared in `formats/record_batch.py`), big-endian:
//!
//! ```text
//!  0 baseOffset int64        12 partitionLeaderEpoch int32   21 attributes int16
//!  8 batchLength int32       16 magic int8                   23 lastOffsetDelta int32
//!                            17 crc uint32 (CRC32C of 21..)  27 baseTimestamp int64
//! 35 maxTimestamp int64      43 producerId int64             51 producerEpoch int16
//! 53 baseSequence int32      57 recordsCount int32           61 records...
//! ```
//!
//! [`scan_v2`] walks the entries that are *whole v2 batches inside the buffer* and stops at the first
//! entry that is anything else (a legacy message, damaged framing, an entry running past the buffer):
//! those are for the Python reader's general path, which owns every finding. So this module decides
//! nothing a user sees; it only reads what the bytes say, without ever reading outside them.

/// The 12 bytes of offset + size before every entry (`Records.LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// The fixed part of a v2 batch (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Where the CRC-covered part of a v2 batch begins (`DefaultRecordBatch.ATTRIBUTES_OFFSET`).
pub const ATTRIBUTES_OFFSET: usize = 21;

/// The fields of one v2 batch header, as stored (no derived values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Header {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

/// One whole v2 batch found by [`scan_v2`].
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Offset of the entry in the buffer (its first byte, the base offset field).
    pub start: usize,
    /// Bytes the entry occupies, framing included (`batchLength + 12`).
    pub total: usize,
    /// File position of the entry (`base + start`).
    pub position: i64,
    pub header: V2Header,
    /// The stored CRC equals the CRC32C of bytes 21.. of the entry.
    pub crc_valid: bool,
}

/// Why [`scan_v2`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The entry at the stop offset is not a whole v2 batch in the buffer (or fewer than 61 bytes
    /// are left): the caller's general path takes it from there.
    General = 0,
    /// The entry at the stop offset begins at or after `limit`: the scan is over.
    Limit = 1,
    /// The last entry visited has a bad CRC; the caller reports it and may continue at the stop offset.
    CrcMismatch = 2,
    /// ([`scan_v2_until`] only) The entry at the stop offset is a whole v2 batch beginning at or after
    /// `until`: the caller goes on from there with another call.
    Until = 3,
}

/// The `N` bytes at `at`, or `None` if fewer are there: the one bounds check of the big-endian reads below.
fn bytes_at<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

pub(crate) fn be_i16(b: &[u8], at: usize) -> Option<i16> {
    bytes_at(b, at).map(i16::from_be_bytes)
}

pub(crate) fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    bytes_at(b, at).map(i32::from_be_bytes)
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    bytes_at(b, at).map(u32::from_be_bytes)
}

fn be_i64(b: &[u8], at: usize) -> Option<i64> {
    bytes_at(b, at).map(i64::from_be_bytes)
}

/// The 61-byte header at `at`, or `None` if fewer than 61 bytes are there.
pub fn parse_header(b: &[u8], at: usize) -> Option<V2Header> {
    b.get(at..at.checked_add(RECORD_BATCH_OVERHEAD)?)?;
    Some(V2Header {
        base_offset: be_i64(b, at)?,
        batch_length: be_i32(b, at + 8)?,
        partition_leader_epoch: be_i32(b, at + 12)?,
        crc: be_u32(b, at + 17)?,
        attributes: be_i16(b, at + 21)?,
        last_offset_delta: be_i32(b, at + 23)?,
        base_timestamp: be_i64(b, at + 27)?,
        max_timestamp: be_i64(b, at + 35)?,
        producer_id: be_i64(b, at + 43)?,
        producer_epoch: be_i16(b, at + 51)?,
        base_sequence: be_i32(b, at + 53)?,
        records_count: be_i32(b, at + 57)?,
    })
}

/// The whole v2 batch at `at` (framing and CRC), or `None` if the entry there is not one that fits
/// in `buf` (and in `max_batch`).
fn whole_v2(buf: &[u8], at: usize, max_batch: i64) -> Option<(usize, V2Header)> {
    let header = parse_header(buf, at)?;
    if buf.get(at + 16) != Some(&2) {
        return None;
    }
    let total = i64::from(header.batch_length) + LOG_OVERHEAD as i64;
    let avail = buf.len().checked_sub(at)?;
    if total < RECORD_BATCH_OVERHEAD as i64 || total > max_batch {
        return None;
    }
    let total = usize::try_from(total).ok()?;
    if total > avail {
        return None;
    }
    Some((total, header))
}

/// Visit the whole v2 batches of `buf` from offset `p` on, in order, until one of the [`Stop`]
/// reasons; returns it with the offset where the caller goes on.
///
/// `base` is the file position of `buf[0]`; entries beginning at or after `limit` are not visited;
/// entries declaring more than `max_batch` bytes are left to the caller (it reports them).
pub fn scan_v2(
    buf: &[u8],
    p: usize,
    base: i64,
    limit: i64,
    max_batch: i64,
    visit: impl FnMut(&Entry, &[u8]),
) -> (usize, Stop) {
    scan_v2_until(buf, p, usize::MAX, base, limit, max_batch, visit)
}

/// [`scan_v2`] that also stops, with [`Stop::Until`], at a whole v2 batch beginning at or after offset
/// `until` of `buf` (the other stops first: a caller that goes on after `Until` always finds a batch):
/// a caller bounds the work (and the memory) of one call with it.
pub fn scan_v2_until(
    buf: &[u8],
    mut p: usize,
    until: usize,
    base: i64,
    limit: i64,
    max_batch: i64,
    mut visit: impl FnMut(&Entry, &[u8]),
) -> (usize, Stop) {
    loop {
        let Some((total, header)) = whole_v2(buf, p, max_batch) else {
            return (p, Stop::General);
        };
        let Some(position) = i64::try_from(p).ok().and_then(|p| base.checked_add(p)) else {
            return (p, Stop::General);
        };
        if position >= limit {
            return (p, Stop::Limit);
        }
        if p >= until {
            return (p, Stop::Until);
        }
        let Some(bytes) = buf.get(p..p + total) else {
            return (p, Stop::General); // not reached: whole_v2 checked total <= avail
        };
        let covered = bytes.get(ATTRIBUTES_OFFSET..).unwrap_or_default();
        let crc_valid = crc32c::crc32c(covered) == header.crc;
        visit(
            &Entry {
                start: p,
                total,
                position,
                header,
                crc_valid,
            },
            bytes,
        );
        p += total;
        if !crc_valid {
            return (p, Stop::CrcMismatch);
        }
    }
}

/// Resynchronising after damage: the first offset `c` in `from..until` of `buf` where an entry passes a v2
/// batch's header checks (`DefaultRecordBatch`: magic 2 at offset 16, `batchLength + 12` at least
/// `RECORD_BATCH_OVERHEAD`, and within the bytes there are: the rest of `buf` and the `room` bytes of the file
/// after it) and, when it lies whole in `buf`, its CRC (`ensureValid`). Returns `(c, total, whole)`; `whole`
/// false: the entry runs past `buf`, and the caller checks its CRC from the file. Candidates are the offsets
/// whose magic byte is 2, found by a byte search, so long stretches of garbage cost little. Kafka itself never
/// resynchronises (`LogSegment.recover` truncates at the first invalid batch); `repair --salvage` does.
pub fn resync(buf: &[u8], from: usize, until: usize, room: u64) -> Option<(usize, usize, bool)> {
    // the last offset with a whole header in `buf`: one further on is the next window's
    let end = until.min(buf.len().checked_sub(RECORD_BATCH_OVERHEAD)? + 1);
    let mut c = from;
    while c < end {
        let magics = buf.get(c + 16..end + 16)?;
        c += magics.iter().position(|&b| b == 2)?;
        let header = parse_header(buf, c)?;
        let total = i64::from(header.batch_length) + LOG_OVERHEAD as i64;
        let there = u64::try_from(buf.len() - c).ok()?.checked_add(room)?;
        if total >= RECORD_BATCH_OVERHEAD as i64 && u64::try_from(total).ok()? <= there {
            let total = usize::try_from(total).ok()?;
            match buf.get(c..c + total) {
                None => return Some((c, total, false)),
                Some(bytes) => {
                    if crc32c::crc32c(bytes.get(ATTRIBUTES_OFFSET..).unwrap_or_default()) == header.crc {
                        return Some((c, total, true));
                    }
                }
            }
        }
        c += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v2 batch of `records` bytes after the header, with a correct CRC.
    pub(crate) fn batch(base_offset: i64, records: &[u8], count: i32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        let length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + records.len()) as i32;
        b.extend_from_slice(&length.to_be_bytes());
        b.extend_from_slice(&7i32.to_be_bytes()); // leader epoch
        b.push(2);
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(count - 1).to_be_bytes());
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&1001i64.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&count.to_be_bytes());
        b.extend_from_slice(records);
        let crc = crc32c::crc32c(&b[ATTRIBUTES_OFFSET..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn collect(buf: &[u8], limit: i64) -> (Vec<(i64, bool, V2Header)>, usize, Stop) {
        let mut seen = Vec::new();
        let (p, stop) = scan_v2(buf, 0, 100, limit, i64::MAX, |e, _| {
            seen.push((e.position, e.crc_valid, e.header))
        });
        (seen, p, stop)
    }

    #[test]
    fn whole_batches_then_a_torn_one() {
        let mut buf = batch(5, b"", 1);
        let one = buf.len();
        buf.extend(batch(6, b"xyz", 1));
        buf.extend_from_slice(&batch(9, b"", 1)[..40]);
        let (seen, p, stop) = collect(&buf, i64::MAX);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0, 100);
        assert_eq!(seen[1].0, 100 + one as i64);
        assert!(seen.iter().all(|s| s.1));
        assert_eq!(seen[1].2.base_offset, 6);
        assert_eq!(seen[1].2.partition_leader_epoch, 7);
        assert_eq!((p, stop), (buf.len() - 40, Stop::General));
    }

    #[test]
    fn a_bad_crc_stops_after_its_batch() {
        let mut buf = batch(0, b"abc", 1);
        let n = buf.len();
        buf[n - 1] ^= 1;
        buf.extend(batch(1, b"", 1));
        let (seen, p, stop) = collect(&buf, i64::MAX);
        assert_eq!(
            (seen.len(), seen[0].1, p, stop),
            (1, false, n, Stop::CrcMismatch)
        );
    }

    #[test]
    fn until_stops_at_a_whole_batch_after_the_other_stops() {
        let mut buf = batch(0, b"abc", 1);
        let one = buf.len();
        buf.extend(batch(1, b"", 1));
        buf.extend(batch(2, b"", 1));
        let mut seen = 0;
        // `until` inside the second batch: the walk stops at the third, where a next call goes on
        assert_eq!(scan_v2_until(&buf, 0, one + 1, 0, i64::MAX, i64::MAX, |_, _| seen += 1), (2 * one - 3, Stop::Until));
        assert_eq!(seen, 2);
        assert_eq!(scan_v2_until(&buf, 2 * one - 3, 0, 0, i64::MAX, i64::MAX, |_, _| {}), (2 * one - 3, Stop::Until));
        // the end of the buffer, the limit and a bad CRC come first
        assert_eq!(scan_v2_until(&buf, 0, buf.len(), 0, i64::MAX, i64::MAX, |_, _| {}), (buf.len(), Stop::General));
        assert_eq!(scan_v2_until(&buf, 0, one, 0, one as i64, i64::MAX, |_, _| {}), (one, Stop::Limit));
        buf[one - 1] ^= 1;
        assert_eq!(scan_v2_until(&buf, 0, 1, 0, i64::MAX, i64::MAX, |_, _| {}), (one, Stop::CrcMismatch));
    }

    #[test]
    fn limit_and_legacy_and_absurd_lengths_stop() {
        let buf = batch(0, b"", 1);
        assert_eq!(collect(&buf, 100).2, Stop::Limit);
        let mut legacy = buf.clone();
        legacy[16] = 1;
        assert_eq!(collect(&legacy, i64::MAX).2, Stop::General);
        for length in [i32::MIN, -12, 0, 48, i32::MAX] {
            let mut b = buf.clone();
            b[8..12].copy_from_slice(&length.to_be_bytes());
            let (seen, p, stop) = collect(&b, i64::MAX);
            assert!(
                seen.is_empty() && p == 0 && stop == Stop::General,
                "length {length}"
            );
        }
    }

    #[test]
    fn resync_finds_the_next_valid_batch_after_garbage() {
        let one = batch(0, b"abc", 1);
        let mut buf = vec![2u8; 37]; // garbage full of magic bytes
        buf.extend_from_slice(&one);
        let mut bad = batch(1, b"", 1);
        bad[30] ^= 1; // a bad CRC: skipped
        buf.extend_from_slice(&bad);
        buf.extend(batch(2, b"0123456789", 1));
        let after_bad = 37 + one.len() + bad.len();
        assert_eq!(resync(&buf, 0, usize::MAX, 0), Some((37, one.len(), true)));
        assert_eq!(resync(&buf, 38, usize::MAX, 0), Some((after_bad, 71, true)));
        assert_eq!(resync(&buf, 38, after_bad, 0), None); // `until` bounds the candidates
        // a batch running past the buffer: framing checked against the room after it, the CRC left to the caller
        let cut = &buf[..after_bad + 65];
        assert_eq!(resync(cut, 38, usize::MAX, 0), None);
        assert_eq!(resync(cut, 38, usize::MAX, 6), Some((after_bad, 71, false)));
        assert_eq!(resync(cut, 38, usize::MAX, 5), None);
        // a header not whole in the buffer is the next window's candidate
        assert_eq!(resync(&buf[..after_bad + 60], 38, usize::MAX, u64::MAX), None);
        for length in [i32::MIN, -12, 0, 48, i32::MAX] {
            let mut b = one.clone();
            b[8..12].copy_from_slice(&length.to_be_bytes());
            assert_eq!(resync(&b, 0, usize::MAX, u64::MAX), None, "length {length}");
        }
    }

    #[test]
    fn every_truncation_and_offset_is_safe() {
        let mut buf = batch(0, b"0123456789", 1);
        buf.extend(batch(1, b"", 1));
        for cut in 0..=buf.len() {
            for start in 0..=cut + 1 {
                let _ = scan_v2(&buf[..cut], start, i64::MAX - 3, i64::MAX, 64, |_, _| {});
                let _ = scan_v2(&buf[..cut], start, 0, i64::MAX, i64::MAX, |_, _| {});
                for until in [0, start, start + 1, cut, usize::MAX] {
                    let _ = resync(&buf[..cut], start, until, u64::MAX);
                    let _ = resync(&buf[..cut], start, until, 0);
                }
            }
        }
    }
}
