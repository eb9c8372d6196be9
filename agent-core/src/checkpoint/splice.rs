//! Byte splices: a new version of a field stored as the byte ranges it keeps from its stored
//! version plus the bytes it adds.
//!
//! Why: element deltas ([`codec`](super::codec)) cover sequences that grow, but a field that is
//! *replaced* by a value that keeps most of the old one's bytes — a reply streamed into a
//! string, a document edited in place, a one-element list whose element grows — was stored
//! whole at every version: a 5 KB text that gains a word per step cost 5 KB a step, in bytes
//! kept (fresh memory for an in-memory saver, pages for SQLite) and in copies. A splice costs
//! what changed.
//!
//! The diff is a single linear pass, not an edit-distance search: ranges equal at the same
//! offset (an edit in place, a tail appended, a length header rewritten), and the common
//! suffix (a head inserted or removed). Runs shorter than [`MIN_RUN`] are not worth a range.
//! It gives up as soon as less than half of the new bytes could come from the old ones, so a
//! value unrelated to its previous version costs a short scan, not a diff.
//!
//! Layout of a splice's data: the format byte (`1`), `varint(new length)`, then ops until the
//! end, each `varint(len << 1)` `varint(offset)` (copy `len` bytes of the base from `offset`)
//! or `varint(len << 1 | 1)` and `len` bytes (insert them).
//!
//! The diff copies each byte of the base at most once (its copies are disjoint ranges), so on
//! read a splice whose copies add up to more than its base is corrupt: a splice's output is at
//! most its base plus its own bytes, and a chain of them grows with what is stored, not
//! geometrically (a small op copying the whole base twice would double it at every link).

/// Marks a [`FieldBlob::base`](super::FieldBlob::base) count as a splice; the low bits hold the
/// base's encoded length (checked when applied).
pub(crate) const FLAG: u64 = 1 << 63;

/// Equal runs shorter than this are inserted, not copied: a copy op costs a few bytes.
const MIN_RUN: usize = 24;

/// Values shorter than this are stored whole: a splice would save too little to matter.
const MIN_LEN: usize = 128;

/// The first byte of a splice's data (and never a compressed frame's).
const FORMAT: u8 = 1;

/// Whether a delta's base count marks a splice.
pub(crate) fn is_splice(count: u64) -> bool {
    count & FLAG != 0
}

/// The splice that turns `old` into `new`, when it keeps at least half of `new`'s bytes.
pub(crate) fn diff(old: &[u8], new: &[u8]) -> Option<Vec<u8>> {
    if new.len() < MIN_LEN || old.len() < MIN_LEN / 2 {
        return None;
    }
    let wanted = new.len() / 2;
    let suffix = match common_suffix(old, new) {
        s if s >= MIN_RUN => s,
        _ => 0,
    };
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    let limit = old_end.min(new_end);
    let mut ops = Vec::with_capacity(32);
    ops.push(FORMAT);
    put_varint(&mut ops, new.len() as u64);
    let mut kept = 0;
    let mut literal = 0;
    let mut at = 0;
    while at < limit {
        // Not enough left to reach half: give up without scanning the rest.
        if kept + (limit - at) + suffix < wanted {
            return None;
        }
        let run = common_prefix(&old[at..limit], &new[at..limit]);
        if run >= MIN_RUN {
            put_insert(&mut ops, &new[literal..at]);
            put_copy(&mut ops, at, run);
            kept += run;
            at += run;
            literal = at;
        } else {
            at = next_equal_word(old, new, at + run + 1, limit);
        }
    }
    if kept + suffix < wanted {
        return None;
    }
    put_insert(&mut ops, &new[literal..new_end]);
    if suffix > 0 {
        put_copy(&mut ops, old_end, suffix);
    }
    Some(ops)
}

/// Rebuilds the new version from its base's bytes and a splice's data.
pub(crate) fn apply(base: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |what: &str| format!("malformed splice delta: {what}");
    if data.first() != Some(&FORMAT) {
        return Err(bad("unknown format"));
    }
    let mut at = 1;
    let len = get_varint(data, &mut at).ok_or_else(|| bad("no length"))?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= base.len().saturating_add(data.len()))
        .ok_or_else(|| bad("longer than its base and its own bytes"))?;
    let mut out = Vec::with_capacity(len);
    // Bytes copied from the base so far: at most the base's length (see the module docs).
    let mut copied = 0usize;
    while at < data.len() {
        let op = get_varint(data, &mut at).ok_or_else(|| bad("truncated op"))?;
        let n = usize::try_from(op >> 1).map_err(|_| bad("op out of range"))?;
        let bytes = if op & 1 == 1 {
            let end = at
                .checked_add(n)
                .ok_or_else(|| bad("insert out of range"))?;
            let bytes = data.get(at..end).ok_or_else(|| bad("truncated insert"))?;
            at = end;
            bytes
        } else {
            let from = get_varint(data, &mut at).ok_or_else(|| bad("truncated copy"))?;
            let from = usize::try_from(from).map_err(|_| bad("copy out of range"))?;
            let end = from
                .checked_add(n)
                .ok_or_else(|| bad("copy out of range"))?;
            copied = copied.saturating_add(n);
            if copied > base.len() {
                return Err(bad("copies more bytes than its base holds"));
            }
            base.get(from..end)
                .ok_or_else(|| bad("copy past the base's end"))?
        };
        if out.len() + bytes.len() > len {
            return Err(bad("longer than its stated length"));
        }
        out.extend_from_slice(bytes);
    }
    if out.len() != len {
        return Err(bad("shorter than its stated length"));
    }
    Ok(out)
}

fn put_copy(ops: &mut Vec<u8>, from: usize, len: usize) {
    put_varint(ops, (len as u64) << 1);
    put_varint(ops, from as u64);
}

fn put_insert(ops: &mut Vec<u8>, bytes: &[u8]) {
    if !bytes.is_empty() {
        put_varint(ops, (bytes.len() as u64) << 1 | 1);
        ops.extend_from_slice(bytes);
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Bytes compared at once (a vectorized `memcmp`) before narrowing down to words.
const CHUNK: usize = 256;

/// How many leading bytes `a` and `b` share (compared a chunk, then eight bytes, at a time).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i + 8 <= n {
        let x = word(a, i) ^ word(b, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// How many trailing bytes `a` and `b` share.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + CHUNK <= n && a[n - i - CHUNK..n - i] == b[n - i - CHUNK..n - i] {
        i += CHUNK;
    }
    while i + 8 <= n {
        let x = word(a, n - i - 8) ^ word(b, n - i - 8);
        if x != 0 {
            return i + (x.leading_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[n - 1 - i] == b[n - 1 - i] {
        i += 1;
    }
    i
}

/// The first offset at or after `from` where `a` and `b` agree on eight bytes at the same
/// offset (or `limit`): where an equal run may start again.
fn next_equal_word(a: &[u8], b: &[u8], from: usize, limit: usize) -> usize {
    let mut i = from;
    while i + 8 <= limit {
        if word(a, i) == word(b, i) {
            return i;
        }
        i += 8;
    }
    limit
}

/// Eight bytes at `at`, little-endian (the caller keeps `at + 8` in bounds).
#[inline]
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(old: &[u8], new: &[u8]) -> Option<usize> {
        let ops = diff(old, new)?;
        assert_eq!(apply(old, &ops).unwrap(), new);
        Some(ops.len())
    }

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n).map(|_| rng.lowercase() as u8).collect()
    }

    #[test]
    fn a_grown_tail_costs_the_tail() {
        let old = text(5000, 1);
        let mut new = old.clone();
        new.extend_from_slice(b" a");
        assert!(check(&old, &new).unwrap() < 16);
    }

    #[test]
    fn a_rewritten_header_and_a_grown_tail_cost_both() {
        // A MessagePack str16 whose length changed: header bytes differ, the body stays.
        let body = text(5000, 2);
        let mut old = vec![0x91, 0xda, 0x13, 0x88];
        old.extend_from_slice(&body);
        let mut new = vec![0x91, 0xda, 0x13, 0x8a];
        new.extend_from_slice(&body);
        new.extend_from_slice(b" a");
        assert!(check(&old, &new).unwrap() < 24);
    }

    #[test]
    fn edits_in_place_inserted_heads_and_cut_tails_round_trip() {
        let old = text(4000, 3);
        let mut edited = old.clone();
        edited[1000..1010].copy_from_slice(b"0123456789");
        edited[3000] = b'!';
        assert!(check(&old, &edited).unwrap() < 64);
        let mut headed = b"a new head of some length ".to_vec();
        headed.extend_from_slice(&old);
        assert!(check(&old, &headed).unwrap() < 64);
        assert!(check(&old, &old[..3000]).unwrap() < 16);
        assert!(check(&old, &old[500..]).unwrap() < 16);
        assert!(check(&old, &old).unwrap() < 16);
    }

    #[test]
    fn unrelated_or_short_values_are_stored_whole() {
        assert_eq!(check(&text(4000, 4), &text(4000, 5)), None);
        assert_eq!(check(&text(4000, 4), &text(9000, 4)[4000..]), None);
        assert_eq!(check(b"short", b"short but longer"), None);
        // Half kept is the bar.
        let old = text(1000, 6);
        let mut mostly_new = old[..300].to_vec();
        mostly_new.extend_from_slice(&text(700, 7));
        assert_eq!(check(&old, &mostly_new), None);
    }

    #[test]
    fn random_edits_round_trip() {
        let mut rng = fastrand::Rng::with_seed(8);
        for _ in 0..500 {
            let old = text(rng.usize(0..3000), rng.u64(..));
            let mut new = old.clone();
            for _ in 0..rng.usize(0..6) {
                let at = rng.usize(0..=new.len());
                match rng.u8(0..3) {
                    0 => new
                        .splice(at..at, text(rng.usize(0..50), rng.u64(..)))
                        .for_each(drop),
                    1 => {
                        let end = (at + rng.usize(0..50)).min(new.len());
                        new.drain(at..end);
                    }
                    _ => {
                        if at < new.len() {
                            new[at] ^= 0x55;
                        }
                    }
                }
            }
            check(&old, &new);
        }
    }

    #[test]
    fn malformed_splices_are_errors() {
        let old = text(1000, 9);
        let mut new = old.clone();
        new.push(b'x');
        let ops = diff(&old, &new).unwrap();
        for cut in 0..ops.len() {
            assert!(apply(&old, &ops[..cut]).is_err(), "cut at {cut}");
        }
        assert!(apply(&old[..500], &ops).is_err(), "a shorter base");
        assert!(apply(&old, &[0xff; 12]).is_err());
    }

    #[test]
    fn a_splice_that_copies_its_base_twice_or_claims_more_is_refused() {
        let base = text(1000, 10);
        // Two copies of the whole base: 2000 bytes out of a 10-byte splice.
        let mut twice = vec![FORMAT];
        put_varint(&mut twice, 2000);
        put_copy(&mut twice, 0, 1000);
        put_copy(&mut twice, 0, 1000);
        let error = apply(&base, &twice).unwrap_err();
        assert!(error.contains("longer than its base"), "{error}");
        // A stated length within the base and the inserts, but copies past the base's length.
        let mut recopied = vec![FORMAT];
        put_varint(&mut recopied, 1500);
        put_insert(&mut recopied, &[b'x'; 500]);
        put_copy(&mut recopied, 0, 1000);
        put_copy(&mut recopied, 0, 1000);
        let error = apply(&base, &recopied).unwrap_err();
        assert!(error.contains("more bytes than its base"), "{error}");
        // A stated length past the base and the splice's bytes reserves nothing.
        let mut claim = vec![FORMAT];
        put_varint(&mut claim, u64::MAX >> 1);
        assert!(apply(&base, &claim).unwrap_err().contains("longer than"));
        // Overlapping copies within the base's length are still fine.
        let mut overlap = vec![FORMAT];
        put_varint(&mut overlap, 1000);
        put_copy(&mut overlap, 0, 500);
        put_copy(&mut overlap, 0, 500);
        assert_eq!(apply(&base, &overlap).unwrap().len(), 1000);
    }
}
