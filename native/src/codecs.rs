//! Bounded decompression of Kafka's compressed record payloads: gzip, snappy, lz4 and zstd.
//!
//! [`Decompressor::decompress_into`] appends the decompressed bytes of one payload to a caller's buffer in one pass,
//! refusing to hold more than `limit` bytes of output (plus one decoder step: a 1 MiB chunk, one lz4 block
//! of at most 4 MiB or nothing for snappy, whose blocks declare their length first). The decoders are
//! kept per thread ([`with_decompressor`]) and reset between payloads, never built per batch
//! ([`Decompressor`]), and [`with_decompressed`] also reuses one output buffer per thread. A payload refused for its limit is
//! refused again at once, not decompressed a second time, when the same bytes come back.
//!
//! The stream rules are those of the pure reader, `kafkatool/codecs.py` (Kafka's own readers), with
//! the same decoding libraries underneath: zlib's inflate (zlib-rs is a port of it; Python's `zlib`),
//! `snap` (cramjam's snappy), liblz4's frame decoder LZ4F (python-lz4's) and libzstd
//! (python-zstandard). This side *accepts* a stream only where the pure reader accepts it and produces
//! the same bytes; it gives up ([`Fail`]) on anything else, including shapes no Kafka client writes
//! (gzip header fields), and on output past `limit`. It never words
//! a finding: the caller hands a failed payload to the pure reader, which decides (and words)
//! `decompression-failed` or `decompression-limit` exactly as it always did. `tests/test_native.py`
//! holds the two identical over the corpus and seeded mutations (bit flips, cuts, bombs).

use std::cell::RefCell;
use std::collections::HashSet;

/// Why a payload was not decompressed here (the pure reader then decides, and words the finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// The output would pass the limit.
    Limit,
    /// Damaged, cut short, an unknown codec, or a shape left to the pure reader.
    Refused,
}

pub const GZIP: u8 = 1;
pub const SNAPPY: u8 = 2;
pub const LZ4: u8 = 3;
pub const ZSTD: u8 = 4;

/// Most output asked of a streaming decoder per call (the pure reader's `_CHUNK`).
const CHUNK: usize = 1 << 20;
/// Output buffers above this are given back to the allocator after use (a bomb's buffer is not kept).
const KEEP_CAPACITY: usize = 16 << 20;

/// One reusable decoder per codec, and the payloads refused for passing their limit.
pub struct Decompressor {
    inflate: Option<zlib_rs::Inflate>,
    zstd: Option<zstd_safe::DCtx<'static>>,
    snappy: snap::raw::Decoder,
    lz4: Lz4Frame,
    bombs: HashSet<Bomb>,
    bomb_lengths: HashSet<usize>,
}

/// Most payloads [`Decompressor`] remembers as refused (then it forgets them all): more than a 4 MiB window
/// holds of the smallest bombs of the default limit (~4 KiB of zstd for 128 MiB), in ~200 KiB.
const MAX_BOMBS: usize = 4096;

/// A payload refused with [`Fail::Limit`], by what it was asked with and its bytes' CRC32C. A refused batch
/// comes back for the same work (the window decoder leaves it to the per-batch path, which asks again
/// before handing it to the pure reader), and a bomb costs its whole limit in fresh output pages each time
/// (~1 ms a MiB): the same bytes asked the same way are refused at once. A wrong match (equal CRC and
/// length, other bytes) costs nothing but speed: every refusal goes to the pure reader, which decides.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Bomb {
    codec: u8,
    limit: usize,
    legacy_lz4: bool,
    len: usize,
    crc: u32,
}

impl Default for Decompressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Decompressor {
    pub fn new() -> Self {
        Decompressor {
            inflate: None,
            zstd: None,
            snappy: snap::raw::Decoder::new(),
            lz4: Lz4Frame::default(),
            bombs: HashSet::new(),
            bomb_lengths: HashSet::new(),
        }
    }

    /// Append the decompressed `payload` of codec `codec` (1..4) to `out`; on `Err`, `out` holds
    /// partial output the caller must drop. `legacy_lz4`: a message format v0 wrapper, whose lz4
    /// header checksum Kafka wrote wrong and does not check.
    pub fn decompress_into(
        &mut self,
        codec: u8,
        payload: &[u8],
        limit: usize,
        legacy_lz4: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), Fail> {
        if payload.is_empty() {
            return Err(Fail::Refused);
        }
        // the CRC only for a payload as long as one refused: nothing on the path of other input
        let asked = || Bomb { codec, limit, legacy_lz4, len: payload.len(), crc: crc32c::crc32c(payload) };
        if self.bomb_lengths.contains(&payload.len()) && self.bombs.contains(&asked()) {
            return Err(Fail::Limit);
        }
        let total = limit.saturating_add(out.len());
        let result = match codec {
            GZIP => self.gunzip(payload, total, out),
            SNAPPY => self.unsnappy(payload, total, out),
            LZ4 => unlz4(&mut self.lz4, payload, total, legacy_lz4, out),
            ZSTD => self.unzstd(payload, total, out),
            _ => Err(Fail::Refused),
        };
        if result == Err(Fail::Limit) {
            if self.bombs.len() >= MAX_BOMBS {
                self.bombs.clear();
                self.bomb_lengths.clear();
            }
            self.bombs.insert(asked());
            self.bomb_lengths.insert(payload.len());
        }
        result
    }

    /// gzip as `GZIPInputStream` (via `zlib.decompressobj(wbits=31)` in the pure reader): members back
    /// to back while the bytes after one start with the gzip magic and method 8, anything else after a
    /// member ignored. Only the header Kafka's and every common producer write is read here (no FLG
    /// bits: no extra field, name, comment or header CRC); the rest is the pure reader's.
    fn gunzip(&mut self, data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
        let inflate = self
            .inflate
            .get_or_insert_with(|| zlib_rs::Inflate::new(false, 15));
        let mut rest = data;
        loop {
            // ID1 ID2 CM FLG | MTIME (4) | XFL | OS: zlib ignores MTIME, XFL and OS
            match rest {
                [0x1f, 0x8b, 8, 0, _, _, _, _, _, _, ..] => {}
                _ => return Err(Fail::Refused),
            }
            let body = rest.get(10..).ok_or(Fail::Refused)?;
            inflate.reset(false); // raw deflate, window 15
            let start = out.len();
            let mut consumed = 0usize;
            loop {
                let input = body.get(consumed..).ok_or(Fail::Refused)?;
                let room = CHUNK.min(limit.saturating_add(1).saturating_sub(out.len()));
                out.reserve(room);
                let before_in = inflate.total_in();
                let before_out = inflate.total_out();
                let spare = out.spare_capacity_mut();
                let spare_len = spare.len().min(room);
                let status = inflate.decompress_uninit(
                    input,
                    spare.get_mut(..spare_len).ok_or(Fail::Refused)?,
                    zlib_rs::InflateFlush::NoFlush,
                );
                let written =
                    usize::try_from(inflate.total_out() - before_out).map_err(|_| Fail::Refused)?;
                let read =
                    usize::try_from(inflate.total_in() - before_in).map_err(|_| Fail::Refused)?;
                // SAFETY: inflate initialised exactly `written` bytes of the spare capacity.
                unsafe { out.set_len(out.len() + written.min(spare_len)) };
                consumed += read;
                if out.len() > limit {
                    return Err(Fail::Limit);
                }
                match status {
                    Ok(zlib_rs::Status::StreamEnd) => break,
                    Ok(_) if written == 0 && read == 0 => return Err(Fail::Refused), // cut short
                    Ok(_) => {}
                    Err(_) => return Err(Fail::Refused),
                }
            }
            let member = out.get(start..).ok_or(Fail::Refused)?;
            let after = body.get(consumed..).ok_or(Fail::Refused)?;
            match after {
                [c0, c1, c2, c3, s0, s1, s2, s3, ..]
                    if u32::from_le_bytes([*c0, *c1, *c2, *c3])
                        == zlib_rs::crc32::crc32(0, member)
                        && u32::from_le_bytes([*s0, *s1, *s2, *s3]) == member.len() as u32 => {}
                _ => return Err(Fail::Refused), // bad CRC32 or ISIZE, or the trailer cut short
            }
            rest = after.get(8..).ok_or(Fail::Refused)?;
            if !rest.starts_with(&[0x1f, 0x8b, 8]) {
                return Ok(());
            }
        }
    }

    /// snappy as snappy-java's `SnappyInputStream`: xerial-framed, or one raw block when the payload
    /// does not start with the 16-byte xerial header; concatenated streams read; fewer than 4 bytes
    /// left end the stream. A block's declared length is checked against the limit before decoding.
    fn unsnappy(&mut self, data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
        const MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
        const HEADER: usize = 16;
        if data.len() < HEADER || !data.starts_with(MAGIC) {
            return self.snappy_block(data, limit, out);
        }
        let mut pos = HEADER;
        while let Some(&[a, b, c, d]) = data.get(pos..pos + 4) {
            let rest = data.get(pos..).unwrap_or_default();
            if rest.starts_with(&MAGIC[..4]) {
                if rest.len() < HEADER {
                    return Err(Fail::Refused);
                }
                if !rest.starts_with(MAGIC) {
                    return Ok(());
                }
                pos += HEADER;
                continue;
            }
            let len =
                usize::try_from(i32::from_be_bytes([a, b, c, d])).map_err(|_| Fail::Refused)?;
            let block = data.get(pos + 4..pos + 4 + len).ok_or(Fail::Refused)?;
            self.snappy_block(block, limit, out)?;
            pos += 4 + len;
        }
        Ok(())
    }

    fn snappy_block(&mut self, block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
        let len = snap::raw::decompress_len(block).map_err(|_| Fail::Refused)?;
        let start = out.len();
        if len > limit.saturating_sub(start) {
            return Err(Fail::Limit);
        }
        out.resize(start + len, 0);
        let target = out.get_mut(start..).ok_or(Fail::Refused)?;
        let n = self
            .snappy
            .decompress(block, target)
            .map_err(|_| Fail::Refused)?;
        out.truncate(start + n);
        Ok(())
    }

    /// zstd as zstd-jni's `ZstdInputStreamNoFinalizer`: frames back to back, each of which must end.
    fn unzstd(&mut self, data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
        let dctx = match &mut self.zstd {
            Some(dctx) => dctx,
            None => self
                .zstd
                .insert(zstd_safe::DCtx::try_create().ok_or(Fail::Refused)?),
        };
        dctx.reset(zstd_safe::ResetDirective::SessionOnly)
            .map_err(|_| Fail::Refused)?;
        let mut input = zstd_safe::InBuffer::around(data);
        loop {
            out.reserve(CHUNK.min(limit.saturating_add(1).saturating_sub(out.len())));
            let hint = {
                // zstd writes into the spare capacity and sets the length
                let pos = out.len();
                let mut output = zstd_safe::OutBuffer::around_pos(out, pos);
                dctx.decompress_stream(&mut output, &mut input)
                    .map_err(|_| Fail::Refused)?
            };
            if out.len() > limit {
                return Err(Fail::Limit);
            }
            if input.pos == data.len() && out.len() < out.capacity() {
                // all input taken and all output flushed: done if the last frame ended, else cut short
                return if hint == 0 {
                    Ok(())
                } else {
                    Err(Fail::Refused)
                };
            }
        }
    }
}

/// lz4 as Kafka's `KafkaLZ4BlockInputStream`, with the pure reader's split of the work: the frame header
/// checked here as Kafka checks it (`readHeader`, FLG/BD `validate()`: version 1, independent blocks, no
/// dictionary id, no reserved bits, block size code 4..7 = 64 KiB..4 MiB; the header checksum unless
/// `legacy`), then the frame read by liblz4's own frame decoder (LZ4F, the one python-lz4 runs), which
/// reads every shape a Kafka client writes: blocks compressed or stored (the size word's high bit), block
/// checksums and the content checksum (xxh32) verified where the FLG declares them, the declared content
/// size held to the bytes decoded, the end mark; bytes after the frame ignored.
///
/// Kafka's v0 quirk: a magic v0 wrapper's HC was written over the magic bytes as well, and Kafka's reader
/// skips it (`ignoreFlagDescriptorChecksum`); LZ4F checks it, so with `legacy` it is handed a copy of the
/// header with the right HC, as the pure reader does. A declared content size past `limit` is refused
/// before anything is decoded; no size is trusted for an allocation beyond what the payload could hold.
fn unlz4(frame: &mut Lz4Frame, data: &[u8], limit: usize, legacy: bool, out: &mut Vec<u8>) -> Result<(), Fail> {
    let header = lz4_header(data, legacy)?;
    let room_left = |out: &Vec<u8>| limit.saturating_add(1).saturating_sub(out.len());
    if let Some(size) = header.content_size {
        if size > room_left(out).saturating_sub(1) as u64 {
            return Err(Fail::Limit);
        }
        // lz4 expands a byte to at most 255: a lying declaration cannot reserve more than that
        out.reserve((size as usize).min(data.len().saturating_mul(255)));
    }
    let ctx = frame.context()?;
    // SAFETY: `ctx` is a live context owned by `frame` (reset: a previous error leaves it undefined).
    unsafe { lz4_sys::LZ4F_resetDecompressionContext(ctx) };
    let step = CHUNK.max(header.max_block); // LZ4F decodes straight into the output when a block fits
    // the header (HC set right) first, then the payload after it
    let mut pending = [header.bytes.get(..header.len).ok_or(Fail::Refused)?, data.get(header.len..).ok_or(Fail::Refused)?];
    loop {
        let src = if pending[0].is_empty() { &mut pending[1] } else { &mut pending[0] };
        let room = room_left(out);
        out.reserve(step.min(room));
        let spare = out.spare_capacity_mut();
        let mut dst_len = spare.len().min(room);
        let mut src_len = src.len();
        // SAFETY: `src` is `src_len` readable bytes and the spare capacity `dst_len` writable ones;
        // LZ4F_decompress reads and writes only within them and reports how much it did of each.
        let hint = unsafe {
            lz4_sys::LZ4F_decompress(ctx, spare.as_mut_ptr().cast(), &mut dst_len, src.as_ptr(), &mut src_len, std::ptr::null())
        };
        // SAFETY: reads a code
        if unsafe { lz4_sys::LZ4F_isError(hint) } != 0 {
            return Err(Fail::Refused);
        }
        // SAFETY: LZ4F_decompress initialised the first `dst_len` (<= what it was given) spare bytes.
        unsafe { out.set_len(out.len() + dst_len.min(room)) };
        if out.len() > limit {
            return Err(Fail::Limit);
        }
        if hint == 0 {
            return Ok(()); // the frame ended, its checksums checked; what follows is ignored
        }
        if src_len == 0 && dst_len == 0 {
            return Err(Fail::Refused); // cut short: no input left to make progress with
        }
        *src = src.get(src_len..).ok_or(Fail::Refused)?;
    }
}

/// An lz4 frame header as Kafka reads it, with the HC set right (the bytes LZ4F is handed first).
struct Lz4Header {
    bytes: [u8; 15],
    len: usize,
    max_block: usize,
    content_size: Option<u64>,
}

/// Kafka's checks of the frame header (`KafkaLZ4BlockInputStream.readHeader`; the pure reader's
/// `_lz4_header`): anything it refuses, or that the pure reader words, is [`Fail::Refused`].
fn lz4_header(data: &[u8], legacy: bool) -> Result<Lz4Header, Fail> {
    let (flg, bd) = match data {
        [0x04, 0x22, 0x4d, 0x18, flg, bd, ..] => (*flg, *bd),
        _ => return Err(Fail::Refused),
    };
    // version 01, block independence set; reserved FLG bit 1, dictionary id (bit 0), reserved BD bits clear
    if flg & 0xE3 != 0x60 || bd & 0x8F != 0 || bd >> 4 < 4 {
        return Err(Fail::Refused);
    }
    let descriptor_len = if flg & 0x08 != 0 { 10 } else { 2 };
    let len = 4 + descriptor_len + 1;
    let mut bytes = [0u8; 15];
    bytes
        .get_mut(..len)
        .ok_or(Fail::Refused)?
        .copy_from_slice(data.get(..len).ok_or(Fail::Refused)?);
    let descriptor = bytes.get(4..4 + descriptor_len).ok_or(Fail::Refused)?;
    let hc = lz4_header_checksum(descriptor);
    if !legacy && bytes.get(len - 1) != Some(&hc) {
        return Err(Fail::Refused);
    }
    let content_size = match descriptor {
        [_, _, s @ ..] if s.len() == 8 => {
            let mut le = [0u8; 8];
            le.copy_from_slice(s);
            Some(u64::from_le_bytes(le)).filter(|size| *size != 0) // 0: not known (LZ4F)
        }
        _ => None,
    };
    *bytes.get_mut(len - 1).ok_or(Fail::Refused)? = hc;
    Ok(Lz4Header { bytes, len, max_block: 1usize << (2 * usize::from(bd >> 4) + 8), content_size })
}

/// liblz4's frame decoder context, made on first use and reused (reset) for every payload.
#[derive(Default)]
struct Lz4Frame(Option<lz4_sys::LZ4FDecompressionContext>);

impl Lz4Frame {
    fn context(&mut self) -> Result<lz4_sys::LZ4FDecompressionContext, Fail> {
        if let Some(ctx) = self.0 {
            return Ok(ctx);
        }
        let mut ctx = lz4_sys::LZ4FDecompressionContext(std::ptr::null_mut());
        // SAFETY: LZ4F writes a new context to `ctx`, or an error code and no context.
        let code = unsafe { lz4_sys::LZ4F_createDecompressionContext(&mut ctx, lz4_sys::LZ4F_VERSION) };
        // SAFETY: reads a code
        if unsafe { lz4_sys::LZ4F_isError(code) } != 0 || ctx.0.is_null() {
            return Err(Fail::Refused);
        }
        self.0 = Some(ctx);
        Ok(ctx)
    }
}

impl Drop for Lz4Frame {
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            // SAFETY: the context was made by LZ4F_createDecompressionContext and is freed once.
            unsafe { lz4_sys::LZ4F_freeDecompressionContext(ctx) };
        }
    }
}

/// The lz4 frame header checksum: the second byte of xxh32(descriptor, seed 0), for descriptors shorter
/// than 16 bytes (xxHash spec, short-input path: 4-byte lanes, then single bytes).
fn lz4_header_checksum(descriptor: &[u8]) -> u8 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    let mut h = P5.wrapping_add(descriptor.len() as u32);
    let mut lanes = descriptor.chunks_exact(4);
    for lane in &mut lanes {
        let word = match lane {
            &[a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
            _ => 0, // chunks_exact(4): never
        };
        h = h.wrapping_add(word.wrapping_mul(P3)).rotate_left(17).wrapping_mul(P4);
    }
    for &b in lanes.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^= h >> 16;
    (h >> 8) as u8
}

thread_local! {
    static DECOMPRESSOR: RefCell<(Decompressor, Vec<u8>)> = RefCell::new((Decompressor::new(), Vec::new()));
}

/// Call `f` with this thread's decoders and reused output buffer, or with new ones when re-entered.
pub fn with_decompressor<R>(f: impl FnOnce(&mut Decompressor, &mut Vec<u8>) -> R) -> R {
    DECOMPRESSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut state) => {
            let (decompressor, out) = &mut *state;
            f(decompressor, out)
        }
        Err(_) => f(&mut Decompressor::new(), &mut Vec::new()), // re-entered
    })
}

/// Call `f` with the decompressed `payload`, held in this thread's reused output buffer (no copy), or
/// with the reason it was not decompressed.
pub fn with_decompressed<R>(
    codec: u8,
    payload: &[u8],
    limit: usize,
    legacy_lz4: bool,
    f: impl FnOnce(Result<&[u8], Fail>) -> R,
) -> R {
    with_decompressor(|decompressor, out| {
        out.clear();
        let result = decompressor.decompress_into(codec, payload, limit, legacy_lz4, out);
        let value = f(result.map(|()| out.as_slice()));
        out.clear();
        if out.capacity() > KEEP_CAPACITY {
            out.shrink_to(KEEP_CAPACITY);
        }
        value
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(codec: u8, payload: &[u8], limit: usize) -> Result<Vec<u8>, Fail> {
        let mut out = Vec::new();
        with_decompressor(|d, _| d.decompress_into(codec, payload, limit, false, &mut out)).map(|()| out)
    }

    #[test]
    fn lz4_header_checksum_matches_kafka() {
        // Kafka's Lz4BlockOutputStream: FLG 0x60, BD 0x40 (64 KiB blocks): HC 0x82
        assert_eq!(lz4_header_checksum(&[0x60, 0x40]), 0x82);
    }

    #[test]
    fn lz4_stored_block_and_limit() {
        let mut frame = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
        frame.extend_from_slice(&(0x8000_0005u32).to_le_bytes());
        frame.extend_from_slice(b"hello");
        frame.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(run(LZ4, &frame, 5), Ok(b"hello".to_vec()));
        assert_eq!(run(LZ4, &frame, 4), Err(Fail::Limit));
        assert_eq!(run(LZ4, &frame[..frame.len() - 1], 5), Err(Fail::Refused));
        let mut legacy = frame.clone();
        legacy[6] ^= 0xFF;
        assert_eq!(run(LZ4, &legacy, 5), Err(Fail::Refused));
        let mut out = Vec::new();
        assert_eq!(with_decompressor(|d, _| d.decompress_into(LZ4, &legacy, 5, true, &mut out)), Ok(()));
        assert_eq!(out, b"hello");
    }

    /// A stored block "hello" (size word with the high bit) in a frame of FLG 0x7C: content size, block
    /// checksum, content checksum (xxh32 "hello" = 0xFB0077F9), 256 KiB blocks; as python-lz4 writes it.
    const LZ4_ALL_FLAGS: &str = "04224d187c400500000000000000030500008068656c6c6ff97700fb00000000f97700fb";
    /// "hello hello hello hello" compressed (a match), the same flags.
    const LZ4_ALL_FLAGS_MATCH: &str =
        "04224d187c401700000000000000f00f0000006868656c6c6f2006005068656c6c6fa90f8a3700000000f26b940b";

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn lz4_header_checksum_over_lanes() {
        // FLG 0x68 BD 0x40 + content size 5 (10 bytes: two 4-byte lanes, two single bytes): python-lz4's HC
        assert_eq!(lz4_header_checksum(&[0x68, 0x40, 5, 0, 0, 0, 0, 0, 0, 0]), 0x61);
        assert_eq!(lz4_header_checksum(&hex(LZ4_ALL_FLAGS)[4..14]), 0x03);
    }

    #[test]
    fn lz4_client_shapes_with_checksums_and_content_size() {
        let frame = hex(LZ4_ALL_FLAGS);
        assert_eq!(run(LZ4, &frame, 5), Ok(b"hello".to_vec()));
        assert_eq!(run(LZ4, &frame, 4), Err(Fail::Limit)); // the declared size, before decoding
        assert_eq!(run(LZ4, &hex(LZ4_ALL_FLAGS_MATCH), 100), Ok(b"hello hello hello hello".to_vec()));
        let mut junk_after = frame.clone();
        junk_after.extend_from_slice(b"junk");
        assert_eq!(run(LZ4, &junk_after, 5), Ok(b"hello".to_vec()));
        for (at, what) in [(19, "the block"), (24, "the block checksum"), (32, "the content checksum"), (6, "the content size")] {
            let mut bad = frame.clone();
            bad[at] ^= 1;
            assert!(run(LZ4, &bad, 100).is_err(), "{what}");
        }
        for cut in 0..frame.len() {
            assert!(run(LZ4, &frame[..cut], 100).is_err(), "cut at {cut}");
        }
        // legacy (message format v0): the HC is not checked, whatever it is
        let mut legacy = frame.clone();
        legacy[14] ^= 0x5A;
        assert_eq!(run(LZ4, &legacy, 5), Err(Fail::Refused));
        let mut out = Vec::new();
        assert_eq!(with_decompressor(|d, _| d.decompress_into(LZ4, &legacy, 5, true, &mut out)), Ok(()));
        assert_eq!(out, b"hello");
    }

    #[test]
    fn lz4_refused_shapes_and_declared_sizes() {
        let frame = hex(LZ4_ALL_FLAGS);
        let with = |flg: u8, bd: u8| {
            let mut f = frame.clone();
            f[4] = flg;
            f[5] = bd;
            f[14] = lz4_header_checksum(&f[4..14]);
            f
        };
        assert_eq!(run(LZ4, &with(0x7C, 0x40), 5), Ok(b"hello".to_vec()));
        for (flg, bd) in [(0x5C, 0x40), (0x7D, 0x40), (0x7E, 0x40), (0xBC, 0x40), (0x7C, 0x30), (0x7C, 0xC0), (0x7C, 0x41)] {
            assert_eq!(run(LZ4, &with(flg, bd), 5), Err(Fail::Refused), "FLG {flg:#x} BD {bd:#x}");
        }
        for bd in [0x50, 0x60, 0x70] {
            assert_eq!(run(LZ4, &with(0x7C, bd), 5), Ok(b"hello".to_vec()));
        }
        // a declared size past the limit is refused before anything is decoded or reserved; a wrong one
        // within it is refused by the decoder
        let mut huge = frame.clone();
        huge[6..14].copy_from_slice(&u64::MAX.to_le_bytes());
        huge[14] = lz4_header_checksum(&huge[4..14]);
        let mut out = Vec::new();
        assert_eq!(with_decompressor(|d, _| d.decompress_into(LZ4, &huge, 1 << 30, false, &mut out)), Err(Fail::Limit));
        assert_eq!(out.capacity(), 0);
        let mut wrong = frame.clone();
        wrong[6] = 6;
        wrong[14] = lz4_header_checksum(&wrong[4..14]);
        assert_eq!(run(LZ4, &wrong, 100), Err(Fail::Refused));
        let mut lying = frame.clone();
        lying[6..14].copy_from_slice(&(1u64 << 29).to_le_bytes());
        lying[14] = lz4_header_checksum(&lying[4..14]);
        let mut out = Vec::new();
        assert_eq!(with_decompressor(|d, _| d.decompress_into(LZ4, &lying, 1 << 30, false, &mut out)), Err(Fail::Refused));
        assert!(out.capacity() <= CHUNK, "reserved {} for a 36-byte frame", out.capacity()); // one step, not 512 MiB
    }

    #[test]
    fn lz4_every_bit_flipped_never_panics() {
        for text in [LZ4_ALL_FLAGS, LZ4_ALL_FLAGS_MATCH] {
            let frame = hex(text);
            for bit in 0..frame.len() * 8 {
                let mut bad = frame.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                for legacy in [false, true] {
                    let mut out = Vec::new();
                    let r = with_decompressor(|d, _| d.decompress_into(LZ4, &bad, 64, legacy, &mut out));
                    assert!(r.is_err() || out.len() <= 64);
                }
            }
        }
    }

    #[test]
    fn a_refused_payload_is_refused_again_and_only_it() {
        let frame = |text: &[u8; 5]| {
            let mut f = vec![0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];
            f.extend_from_slice(&(0x8000_0005u32).to_le_bytes());
            f.extend_from_slice(text);
            f.extend_from_slice(&[0, 0, 0, 0]);
            f
        };
        let (bomb, other) = (frame(b"hello"), frame(b"world"));
        let mut d = Decompressor::new();
        let mut out = Vec::new();
        for _ in 0..2 {
            assert_eq!(d.decompress_into(LZ4, &bomb, 4, false, &mut out), Err(Fail::Limit));
        }
        // after it, each time: the same length with other bytes, the same bytes with a limit they fit in, and
        // read as legacy lz4 are decompressed as ever
        for (payload, limit, legacy, text) in
            [(&other, 5, false, b"world"), (&bomb, 5, false, b"hello"), (&other, 5, true, b"world")]
        {
            assert_eq!(d.decompress_into(LZ4, &bomb, 4, false, &mut Vec::new()), Err(Fail::Limit));
            out.clear();
            assert_eq!(d.decompress_into(LZ4, payload, limit, legacy, &mut out), Ok(()));
            assert_eq!(&out, text);
        }
        // the limit counts the payload's output only, remembered or not
        out = b"xxxxxxx".to_vec();
        assert_eq!(d.decompress_into(LZ4, &bomb, 4, false, &mut out), Err(Fail::Limit));
        out.truncate(7);
        assert_eq!(d.decompress_into(LZ4, &bomb, 5, false, &mut out), Ok(()));
        assert_eq!(out, b"xxxxxxxhello");
        // many bombs, past what is remembered: each still refused, and what fits still read
        for i in 0..MAX_BOMBS as u32 + 10 {
            let text = [b'a', (i >> 24) as u8, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            assert_eq!(d.decompress_into(LZ4, &frame(&text), 4, false, &mut Vec::new()), Err(Fail::Limit));
        }
        assert!(d.bombs.len() <= MAX_BOMBS);
        assert_eq!(d.decompress_into(LZ4, &other, 4, false, &mut Vec::new()), Err(Fail::Limit));
        out.clear();
        assert_eq!(d.decompress_into(LZ4, &other, 5, false, &mut out), Ok(()));
        assert_eq!(out, b"world");
    }

    #[test]
    fn snappy_raw_block_and_declared_length_bound() {
        // raw snappy: varint length 5, then a literal tag (len-1 << 2) and the bytes
        let block = [5u8, 4 << 2, b'h', b'e', b'l', b'l', b'o'];
        assert_eq!(run(SNAPPY, &block, 5), Ok(b"hello".to_vec()));
        assert_eq!(run(SNAPPY, &block, 4), Err(Fail::Limit));
        let mut framed = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
        framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
        framed.extend_from_slice(&block);
        framed.extend_from_slice(&[0, 0]); // fewer than 4 bytes: the end
        assert_eq!(run(SNAPPY, &framed, 100), Ok(b"hello".to_vec()));
    }

    #[test]
    fn gzip_stored_member() {
        // a stored deflate block: BFINAL=1 BTYPE=00, LEN 5, NLEN !5
        let mut member = vec![
            0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x01, 5, 0, 0xfa, 0xff,
        ];
        member.extend_from_slice(b"hello");
        member.extend_from_slice(&zlib_rs::crc32::crc32(0, b"hello").to_le_bytes());
        member.extend_from_slice(&5u32.to_le_bytes());
        assert_eq!(run(GZIP, &member, 5), Ok(b"hello".to_vec()));
        let mut two = member.clone();
        two.extend_from_slice(&member);
        two.extend_from_slice(b"junk");
        assert_eq!(run(GZIP, &two, 10), Ok(b"hellohello".to_vec()));
        assert_eq!(run(GZIP, &two, 9), Err(Fail::Limit));
        let mut bad = member.clone();
        bad[20] ^= 1; // CRC32
        assert_eq!(run(GZIP, &bad, 5), Err(Fail::Refused));
        for cut in 0..member.len() {
            assert!(run(GZIP, &member[..cut], 5).is_err());
        }
    }

    #[test]
    fn damage_never_panics() {
        let inputs: [&[u8]; 4] = [
            b"\x1f\x8b\x08\x00",
            b"\x82SNAPPY\x00",
            b"\x04\x22\x4d\x18\x60\x40",
            b"\x28\xb5\x2f\xfd",
        ];
        for (codec, data) in (1u8..=4).zip(inputs) {
            for cut in 0..=data.len() {
                assert!(run(codec, &data[..cut], 1000).is_err());
            }
        }
        assert_eq!(run(7, b"x", 10), Err(Fail::Refused));
    }
}

/// The Python side (registered in `lib.rs`).
pub(crate) mod py {
    use std::ffi::{c_int, c_void};

    use pyo3::exceptions::PyOverflowError;
    use pyo3::ffi;
    use pyo3::prelude::*;
    use pyo3::types::PyBytes;

    use crate::records;
    use crate::{columns_to_py, guarded, with_bytes};

    /// `data[start:]` decompressed with codec `codec` (1..4) within `limit` bytes, or `None` where the
    /// pure reader must decide (damage, a bomb, an unknown codec: see the module docs).
    #[pyfunction]
    #[pyo3(signature = (codec, data, start, limit, legacy_lz4=false))]
    pub(crate) fn decompress<'py>(
        py: Python<'py>,
        codec: u8,
        data: &Bound<'py, PyAny>,
        start: usize,
        limit: usize,
        legacy_lz4: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        guarded(|| {
            with_bytes(data, |buf| {
                let payload = buf.get(start..).unwrap_or_default();
                Ok(super::with_decompressed(
                    codec,
                    payload,
                    limit,
                    legacy_lz4,
                    |out| out.ok().map(|out| PyBytes::new(py, out)),
                ))
            })
        })
    }

    /// Decompressed bytes this extension owns, read through the buffer protocol: a big records section handed to
    /// Python without the copy into `bytes` (which held it twice at once), then decoded a chunk at a time.
    #[pyclass(frozen, module = "kafkatool._native")]
    pub struct Decompressed {
        bytes: Vec<u8>,
    }

    #[pymethods]
    impl Decompressed {
        /// # Safety
        /// Called by CPython with a valid `view`; the bytes never change (the class is frozen) and live as long
        /// as `slf`, which `PyBuffer_FillInfo` stores (with a new reference) in the view.
        unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
            let bytes = &slf.get().bytes;
            let len =
                ffi::Py_ssize_t::try_from(bytes.len()).map_err(|_| PyOverflowError::new_err("buffer too large"))?;
            // SAFETY: see above; readonly = 1, so a writable request fails inside PyBuffer_FillInfo.
            let rc =
                unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), bytes.as_ptr() as *mut c_void, len, 1, flags) };
            if rc == -1 {
                return Err(PyErr::fetch(slf.py()));
            }
            Ok(())
        }

        fn __len__(&self) -> usize {
            self.bytes.len()
        }
    }

    /// [`decompress`] into a buffer of its own ([`Decompressed`]) rather than `bytes`: held once, never copied.
    #[pyfunction]
    #[pyo3(signature = (codec, data, start, limit))]
    pub(crate) fn decompress_buffer(
        codec: u8,
        data: &Bound<'_, PyAny>,
        start: usize,
        limit: usize,
    ) -> PyResult<Option<Decompressed>> {
        guarded(|| {
            with_bytes(data, |buf| {
                let mut bytes = Vec::new();
                let payload = buf.get(start..).unwrap_or_default();
                let py = data.py();
                let result =
                    py.detach(|| super::with_decompressor(|d, _| d.decompress_into(codec, payload, limit, false, &mut bytes)));
                Ok(result.ok().map(|()| Decompressed { bytes }))
            })
        })
    }

    /// A compressed v2 batch (`raw`, from its first byte) decompressed and decoded in one call, the
    /// records read from the reused output buffer: the columns of `decode_v2_chunk`; or the decompressed
    /// records section as `bytes` when the records need the pure reader; or `None` when the
    /// decompression does.
    #[pyfunction]
    #[pyo3(signature = (raw, codec, limit, count, base_offset, base_timestamp, log_append_time))]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn decode_v2_compressed<'py>(
        py: Python<'py>,
        raw: &Bound<'py, PyAny>,
        codec: u8,
        limit: usize,
        count: i64,
        base_offset: i64,
        base_timestamp: i64,
        log_append_time: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(|| {
            with_bytes(raw, |buf| {
                let payload = buf
                    .get(crate::frame::RECORD_BATCH_OVERHEAD..)
                    .unwrap_or_default();
                super::with_decompressed(codec, payload, limit, false, |out| {
                    let Ok(data) = out else {
                        return Ok(py.None().into_bound(py));
                    };
                    let ctx = records::BatchContext {
                        base_offset,
                        base_timestamp,
                        log_append_time,
                        count,
                    };
                    match records::decode_v2(data, 0, &ctx) {
                        Ok(cols) => Ok(columns_to_py(py, data, &cols)?.into_any()),
                        Err(_) => Ok(PyBytes::new(py, data).into_any()),
                    }
                })
            })
        })
    }
}
