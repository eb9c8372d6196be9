//! How deep a decoded value may nest, checked on its bytes before it is decoded.
//!
//! Why: serde decodes a nested value by recursion, so stored bytes that nest deep enough (a
//! hundred thousand one-byte array headers) overflow the stack, and a stack overflow aborts
//! the process. `rmp-serde` counts arrays and maps (up to 1024, more than a 2 MiB stack holds
//! in a debug build) but not enum variants, and every shared value it resolves starts a
//! decoder, and a count, of its own. So before a checkpoint's value is decoded its bytes are
//! scanned (one pass, no allocation past the open containers) and the depth they reach is
//! added to a per-thread count that shared values decoded inside it add to as well: one
//! budget, [`MAX_DEPTH`], for everything a decode recurses through.

use std::cell::Cell;

/// The deepest nesting of arrays and maps a decode accepts, shared values included: twice
/// `serde_json`'s limit for JSON text (so a JSON value a tool returned fits inside a state's
/// own structure), a few hundred kilobytes of stack at most.
pub(crate) const MAX_DEPTH: usize = 256;

thread_local! {
    /// Depth taken by the decodes running on this thread (a value and the shared values it
    /// resolves inside it).
    static TAKEN: Cell<usize> = const { Cell::new(0) };
}

/// The depth a running decode takes; given back when dropped.
pub(crate) struct Nesting(usize);

impl Drop for Nesting {
    fn drop(&mut self) {
        TAKEN.with(|taken| taken.set(taken.get().saturating_sub(self.0)));
    }
}

/// Takes the depth `bytes` nest to (plus one: a shared value resolved inside another is a
/// level too) from this thread's budget, for as long as the result is kept; an error when
/// that exceeds [`MAX_DEPTH`].
pub(crate) fn enter(bytes: &[u8]) -> Result<Nesting, String> {
    TAKEN.with(|taken| {
        let room = MAX_DEPTH.saturating_sub(taken.get());
        let depth = depth(bytes, room).saturating_add(1);
        if depth > room {
            return Err(format!(
                "the value nests deeper than {MAX_DEPTH} levels (shared values included)"
            ));
        }
        taken.set(taken.get() + depth);
        Ok(Nesting(depth))
    })
}

/// How deep the MessagePack values in `bytes` nest (an array or map holding only scalars is
/// 1), counted up to `limit + 1` and no further. Malformed or truncated bytes end the scan:
/// the decoder reports them.
pub(crate) fn depth(bytes: &[u8], limit: usize) -> usize {
    // Items left in each open container, innermost last.
    let mut open: Vec<u64> = Vec::new();
    let mut deepest = 0;
    let mut at = 0;
    while let Some(&marker) = bytes.get(at) {
        at += 1;
        let len = |n: usize| read_be(bytes, at, n);
        let (skip, items) = match marker {
            0x80..=0x8f => (0, Some(2 * u64::from(marker & 0x0f))),
            0x90..=0x9f => (0, Some(u64::from(marker & 0x0f))),
            0xdc => (2, len(2)),
            0xdd => (4, len(4)),
            0xde => (2, len(2).map(|n| 2 * n)),
            0xdf => (4, len(4).map(|n| 2 * n)),
            0xa0..=0xbf => (u64::from(marker & 0x1f), None),
            0xc4 | 0xd9 => (len(1).map_or(u64::MAX, |n| 1 + n), None),
            0xc5 | 0xda => (len(2).map_or(u64::MAX, |n| 2 + n), None),
            0xc6 | 0xdb => (len(4).map_or(u64::MAX, |n| 4 + n), None),
            0xc7 => (len(1).map_or(u64::MAX, |n| 2 + n), None),
            0xc8 => (len(2).map_or(u64::MAX, |n| 3 + n), None),
            0xc9 => (len(4).map_or(u64::MAX, |n| 5 + n), None),
            0xca | 0xce | 0xd2 => (4, None),
            0xcb | 0xcf | 0xd3 => (8, None),
            0xcc | 0xd0 => (1, None),
            0xcd | 0xd1 | 0xd4 => (2, None),
            0xd5 => (3, None),
            0xd6 => (5, None),
            0xd7 => (9, None),
            0xd8 => (17, None),
            0xc1 => return deepest,
            // Fixints, nil, booleans.
            _ => (0, None),
        };
        let Some(next) = usize::try_from(skip).ok().and_then(|s| at.checked_add(s)) else {
            return deepest;
        };
        at = next;
        match items {
            Some(n) => {
                deepest = deepest.max(open.len() + 1);
                if deepest > limit {
                    return deepest;
                }
                if n > 0 {
                    open.push(n);
                    continue;
                }
            }
            // A container header whose length is cut off.
            None if matches!(marker, 0xdc..=0xdf) => return deepest,
            None => {}
        }
        // One item of the innermost open container is done (and maybe the container with it).
        while let Some(left) = open.last_mut() {
            *left -= 1;
            if *left > 0 {
                break;
            }
            open.pop();
        }
    }
    deepest
}

fn read_be(bytes: &[u8], at: usize, n: usize) -> Option<u64> {
    let slice = bytes.get(at..at.checked_add(n)?)?;
    Some(slice.iter().fold(0, |acc, b| (acc << 8) | u64::from(*b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(value: &serde_json::Value) -> Vec<u8> {
        rmp_serde::to_vec(value).unwrap()
    }

    #[test]
    fn depth_counts_arrays_and_maps_and_stops_past_the_limit() {
        use serde_json::json;
        assert_eq!(depth(&encode(&json!(1)), 10), 0);
        assert_eq!(depth(&encode(&json!([])), 10), 1);
        assert_eq!(depth(&encode(&json!([1, "a", [2, {"k": []}], 3])), 10), 4);
        assert_eq!(depth(&encode(&json!([[1], [2], [[3]]])), 10), 3);
        assert_eq!(depth(&encode(&json!({"a": {"b": 1}, "c": [[[]]]})), 10), 4);
        let deep = vec![0x91; 100_000];
        assert_eq!(depth(&deep, 300), 301);
        assert_eq!(depth(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x91, 0x91], 300), 3);
        // Malformed or cut input ends the scan without a panic.
        for bytes in [&[0xdc][..], &[0xc1], &[0xdb, 0xff], &[0x92, 0x91]] {
            depth(bytes, 10);
        }
    }

    #[test]
    fn nested_decodes_share_one_budget() {
        let half = [0x91u8; MAX_DEPTH / 2];
        let outer = enter(&half).unwrap();
        assert!(
            enter(&half).is_err(),
            "the two halves and their levels exceed it"
        );
        let quarter = [0x91u8; MAX_DEPTH / 4];
        let inner = enter(&quarter).unwrap();
        drop(inner);
        drop(outer);
        assert!(enter(&[0x91u8; MAX_DEPTH - 1]).is_ok());
        assert!(enter(&[0x91u8; MAX_DEPTH]).is_err());
    }
}
