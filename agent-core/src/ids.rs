//! Ids for checkpoints, messages and runs: UUID v7 strings made without a system call.
//!
//! Why: `uuid::Uuid::now_v7` asks the OS for random bytes on every call (`getrandom`, a system
//! call), and a run makes ids all the time — a checkpoint per step, a message per model reply,
//! a run id per tool call when events are streamed. Here the OS is asked once per process (the
//! seed of std's `RandomState`); within a millisecond the ids count up from a random point,
//! so they sort in the order they were made and do not collide with other processes'.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of the process's last id position that count ids within its millisecond; the
/// millisecond takes the 44 above them (until the year 2527).
const SEQ_BITS: u32 = 20;

/// The last id's position: its millisecond and its count within it, in one word that every
/// thread moves forward with one compare-and-swap. (A mutex around the two took two locked
/// instructions on a line shared by every core at every checkpoint.)
static LAST: AtomicU64 = AtomicU64::new(0);

/// The next id's millisecond (`now`, or the last id's when that is not earlier) and its
/// count within it; a millisecond whose 2^20 counts are used up borrows the next one.
fn next_position(now: u64) -> (u64, u64) {
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = advance(last, now);
        match LAST.compare_exchange_weak(
            last,
            (next.0 << SEQ_BITS) | next.1,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => return next,
            Err(moved) => last = moved,
        }
    }
}

/// The position after `last` (packed as in [`LAST`]) at Unix millisecond `now`.
fn advance(last: u64, now: u64) -> (u64, u64) {
    let (last_ms, last_seq) = (last >> SEQ_BITS, last & ((1 << SEQ_BITS) - 1));
    if now > last_ms {
        (now, 0)
    } else if last_seq + 1 < 1 << SEQ_BITS {
        (last_ms, last_seq + 1)
    } else {
        (last_ms + 1, 0)
    }
}

/// Where a millisecond's counts start: 73 bits of a per-process random hash of it (room to
/// count up within the 74-bit field), remembered by the thread for its last millisecond.
fn random_start(ms: u64) -> u128 {
    use std::hash::{BuildHasher, Hasher};
    static SEED: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    thread_local! {
        static START: std::cell::Cell<(u64, u128)> = const { std::cell::Cell::new((u64::MAX, 0)) };
    }
    let hashed = || {
        let mut hasher = SEED.get_or_init(std::hash::RandomState::new).build_hasher();
        hasher.write_u64(ms);
        u128::from(hasher.finish()) << 9
    };
    START
        .try_with(|start| match start.get() {
            (at, value) if at == ms => value,
            _ => {
                let value = hashed();
                start.set((ms, value));
                value
            }
        })
        .unwrap_or_else(|_| hashed())
}

/// A new id: a UUID v7 (Unix milliseconds, then a 74-bit counter that starts at a
/// per-process random point each millisecond and counts up within it), so ids sort in the
/// order they were made in this process and do not collide with other processes'. Unlike
/// `Uuid::now_v7`, it asks the OS for no random bytes (a syscall per id).
pub fn new_id() -> String {
    id_str(&new_id_text().0).to_owned()
}

/// A new id as a shared string (a checkpoint's id is also its blobs' version and the next
/// checkpoint's parent: one allocation for all three), and the Unix milliseconds it carries
/// (a checkpoint's creation time without a second read of the clock).
pub(crate) fn new_shared_id_at() -> (std::sync::Arc<str>, i64) {
    let (text, ms) = new_id_text();
    (std::sync::Arc::from(id_str(&text)), ms)
}

/// An id's text, as [`new_id_text`] writes it (ASCII hex digits and hyphens).
fn id_str(text: &[u8; uuid::fmt::Hyphenated::LENGTH]) -> &str {
    std::str::from_utf8(text).unwrap_or_default()
}

/// A new id's text on the stack, and the Unix milliseconds it carries.
fn new_id_text() -> ([u8; uuid::fmt::Hyphenated::LENGTH], i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (ms, seq) = next_position(now);
    let counter = random_start(ms) + u128::from(seq);
    let value = (u128::from(ms & ((1 << 48) - 1)) << 80)
        | (0x7 << 76)
        | ((counter >> 62) << 64)
        | (0b10 << 62)
        | (counter & ((1 << 62) - 1));
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    uuid::Uuid::from_u128(value)
        .hyphenated()
        .encode_lower(&mut text);
    (text, ms as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_within_a_millisecond_and_borrow_the_next_when_full() {
        let at = |ms: u64, seq: u64| (ms << SEQ_BITS) | seq;
        assert_eq!(
            advance(at(5, 3), 9),
            (9, 0),
            "a later millisecond starts over"
        );
        assert_eq!(advance(at(5, 3), 5), (5, 4));
        assert_eq!(
            advance(at(5, 3), 4),
            (5, 4),
            "a clock that went back keeps counting"
        );
        let full = (1 << SEQ_BITS) - 1;
        assert_eq!(advance(at(5, full), 5), (6, 0));
    }

    #[test]
    fn ids_made_on_many_threads_are_unique_and_each_thread_sees_them_rise() {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| (0..5_000).map(|_| new_id()).collect::<Vec<_>>()))
            .collect();
        let mut all = std::collections::HashSet::new();
        for thread in threads {
            let ids = thread.join().unwrap();
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "not rising on a thread"
            );
            for id in ids {
                let parsed = uuid::Uuid::parse_str(&id).unwrap();
                assert_eq!(parsed.get_version_num(), 7);
                assert!(all.insert(id), "a repeated id");
            }
        }
    }
}
