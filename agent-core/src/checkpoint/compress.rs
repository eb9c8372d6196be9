//! Large blobs compressed (LZ4), when that pays.
//!
//! Why: a conversation's big pieces are text — tool answers, retrieved documents, long
//! replies — and text compresses. Every byte of a blob costs in every saver: pages written
//! and synced for SQLite, rows for PostgreSQL, fresh memory for the in-memory saver. LZ4
//! compresses at gigabytes a second, but that is still about what fresh memory costs a byte,
//! so a blob of 8 KiB or more is stored compressed only when that at least halves it (a large
//! one whose first 4 KiB do not halve is not tried further): repetitive text (tool answers,
//! pages with boilerplate) is, a list of random tokens is not.
//!
//! A field whose large blob did not compress is not tried again for its next
//! [`SKIP_AFTER_MISS`] large blobs ([`Hint`], kept per compiled graph across runs): a field
//! keeps its kind of content (a list of random tokens stays one), and the probe costs ~6 µs a
//! blob here, paid on the step's path.
//!
//! A compressed blob's data is a frame: `0xc1` (a byte that never starts MessagePack, an
//! element delta or a splice), the codec (`1`: LZ4 block), the length as a little-endian
//! `u32`, then the block. Anything else is stored as it is.
//!
//! The stated length is untrusted on read (`lz4_flex` allocates it before decoding): a frame
//! may claim at most [`MAX_RATIO`] times its block's length (LZ4's own limit, so no genuine
//! frame is refused) and at most [`MAX_EXPANDED`] bytes, which is also the largest blob the
//! writer compresses: a six-byte blob cannot reserve 2 GiB.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU8, Ordering};

/// The first byte of a frame: MessagePack's one unused marker.
const MARKER: u8 = 0xc1;
/// The LZ4 block format.
const LZ4: u8 = 1;
/// Blobs shorter than this are stored as they are: below two pages, the CPU of compressing
/// (a few microseconds for 5 KB) costs more than the bytes it saves.
const FROM: usize = 8192;
/// How much of a large blob is tried first.
const PROBE: usize = 4096;
/// The most a frame expands to, and the largest blob compressed: 256 MiB, far above a field's
/// value in any state a run keeps in memory, and small enough that a hostile frame's claim
/// cannot exhaust a server (larger blobs are stored as they are and read without a frame).
pub(crate) const MAX_EXPANDED: usize = 256 << 20;
/// LZ4's largest expansion: a block byte stands for at most 255 output bytes (a run-length
/// byte of 255), so a frame claiming more than this many times its block is corrupt.
pub(crate) const MAX_RATIO: usize = 255;

/// `data`, compressed when it is large and compresses to half or less.
pub(crate) fn compress(data: Vec<u8>) -> Vec<u8> {
    if data.len() < FROM || data.len() > MAX_EXPANDED {
        return data;
    }
    // A probe of the first part first: what does not compress costs that much, not the whole.
    if data.len() >= 4 * PROBE && lz4_flex::block::compress(&data[..PROBE]).len() > PROBE / 2 {
        return data;
    }
    let block = lz4_flex::block::compress(&data);
    if block.len() + 6 > data.len() / 2 {
        return data;
    }
    let mut framed = Vec::with_capacity(block.len() + 6);
    framed.push(MARKER);
    framed.push(LZ4);
    framed.extend_from_slice(&(data.len() as u32).to_le_bytes());
    framed.extend_from_slice(&block);
    framed
}

/// Large blobs of a field that did not compress are followed by this many that are not tried.
const SKIP_AFTER_MISS: u8 = 15;

/// What compressing one field's large blobs found lately: how many of its next large blobs
/// to store without trying (0: try).
#[derive(Debug, Default)]
pub(crate) struct Hint(AtomicU8);

/// [`compress`], skipping the try while `hint` says the field's blobs lately did not compress.
pub(crate) fn compress_hinted(data: Vec<u8>, hint: &Hint) -> Vec<u8> {
    if data.len() < FROM || data.len() > MAX_EXPANDED {
        return data;
    }
    // Relaxed: concurrent runs of the graph may both try, or both skip; either is fine.
    let skip = hint.0.load(Ordering::Relaxed);
    if skip > 0 {
        hint.0.store(skip - 1, Ordering::Relaxed);
        return data;
    }
    let out = compress(data);
    let missed = out.first() != Some(&MARKER);
    hint.0
        .store(if missed { SKIP_AFTER_MISS } else { 0 }, Ordering::Relaxed);
    out
}

/// The bytes `data` stands for: itself, or what its frame holds.
pub(crate) fn expand(data: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    if data.first() != Some(&MARKER) {
        return Ok(Cow::Borrowed(data));
    }
    let bad = |what: &str| format!("malformed compressed blob: {what}");
    if data.get(1) != Some(&LZ4) {
        return Err(bad("unknown codec"));
    }
    let len = data
        .get(2..6)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| bad("truncated header"))?;
    let block = &data[6..];
    if len > MAX_EXPANDED || len > block.len().saturating_mul(MAX_RATIO) {
        return Err(bad(&format!(
            "a {}-byte block claims {len} bytes (at most {MAX_RATIO} times its length, {MAX_EXPANDED} in all)",
            block.len()
        )));
    }
    let bytes = lz4_flex::block::decompress(block, len).map_err(|e| bad(&e.to_string()))?;
    if bytes.len() != len {
        return Err(bad("shorter than its stated length"));
    }
    Ok(Cow::Owned(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_compresses_and_round_trips_and_noise_stays_as_it_is() {
        let text = "result for query: 0199d1a2-3b4c-7d5e-8f90-123456789abc ".repeat(200);
        let framed = compress(text.as_bytes().to_vec());
        assert!(framed.len() < text.len() / 4, "{} bytes", framed.len());
        assert_eq!(expand(&framed).unwrap(), text.as_bytes());
        let mut rng = fastrand::Rng::with_seed(1);
        let noise: Vec<u8> = (0..10_000).map(|_| rng.u8(..)).collect();
        assert_eq!(compress(noise.clone()), noise);
        let small = b"small".to_vec();
        assert_eq!(compress(small.clone()), small);
        assert_eq!(expand(&small).unwrap(), &small[..]);
    }

    #[test]
    fn a_field_that_did_not_compress_is_not_tried_for_its_next_blobs_then_tried_again() {
        let hint = Hint::default();
        let text = || "result for query: 0199d1a2-3b4c ".repeat(400).into_bytes();
        let mut rng = fastrand::Rng::with_seed(1);
        let noise: Vec<u8> = (0..10_000).map(|_| rng.u8(..)).collect();
        assert_eq!(compress_hinted(text(), &hint)[0], MARKER);
        assert_eq!(compress_hinted(noise.clone(), &hint), noise);
        // Skipped: even text is stored as it is, SKIP_AFTER_MISS times.
        for _ in 0..SKIP_AFTER_MISS {
            assert_eq!(compress_hinted(text(), &hint), text());
        }
        // Small blobs neither use up nor reset the skips.
        assert_eq!(compress_hinted(b"small".to_vec(), &hint), b"small");
        assert_eq!(compress_hinted(text(), &hint)[0], MARKER);
        assert_eq!(compress_hinted(text(), &hint)[0], MARKER);
    }

    #[test]
    fn corrupt_frames_are_errors() {
        let framed = compress("abc".repeat(5000).into_bytes());
        assert_eq!(framed[0], MARKER);
        for cut in 1..framed.len().min(64) {
            assert!(expand(&framed[..cut]).is_err(), "cut at {cut}");
        }
        let mut codec = framed.clone();
        codec[1] = 9;
        assert!(expand(&codec).is_err());
        let mut long = framed.clone();
        long[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(expand(&long).is_err());
    }

    #[test]
    fn a_claim_past_lz4s_ratio_or_the_ceiling_is_refused_before_any_allocation() {
        // Six bytes claiming 2 GiB: refused from the header alone.
        let mut tiny = vec![MARKER, LZ4];
        tiny.extend_from_slice(&(1u32 << 31).to_le_bytes());
        let error = expand(&tiny).unwrap_err();
        assert!(error.contains("claims"), "{error}");
        // The densest genuine frames (one repeated byte) stay within the ratio and decode.
        for n in [FROM, 1 << 20, 16 << 20] {
            let framed = compress(vec![7u8; n]);
            assert_eq!(framed[0], MARKER, "{n} bytes compress");
            assert!(
                framed.len() - 6 >= n / MAX_RATIO,
                "{n}: {} bytes",
                framed.len()
            );
            assert_eq!(expand(&framed).unwrap().len(), n);
        }
    }
}
