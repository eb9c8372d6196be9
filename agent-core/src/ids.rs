//! Ids for checkpoints, messages and runs: UUID v7 strings made without a system call.
//!
//! Why: `uuid::Uuid::now_v7` asks the OS for random bytes on every call (`getrandom`, a system
//! call), and a run makes ids all the time — a checkpoint per step, a message per model reply,
//! a run id per tool call when events are streamed. Here the OS is asked once per process (the
//! seed of std's `RandomState`); within a millisecond the ids count up from a random point,
//! so they sort in the order they were made and do not collide with other processes'.

use std::sync::Mutex;

/// A new id: a UUID v7 (Unix milliseconds, then a 74-bit counter that starts at a
/// per-process random point each millisecond and counts up within it), so ids sort in the
/// order they were made in this process and do not collide with other processes'. Unlike
/// `Uuid::now_v7`, it asks the OS for no random bytes (a syscall per id).
pub fn new_id() -> String {
    new_id_at().0
}

/// A new id, and the Unix milliseconds it carries (a checkpoint's creation time without a
/// second read of the clock).
pub(crate) fn new_id_at() -> (String, i64) {
    let (text, ms) = new_id_text();
    (id_str(&text).to_owned(), ms)
}

/// [`new_id_at`] as a shared string (a checkpoint's id is also its blobs' version and the
/// next checkpoint's parent: one allocation for all three).
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
    use std::hash::{BuildHasher, Hasher};
    static STATE: Mutex<(u64, u128)> = Mutex::new((0, 0));
    static SEED: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (ms, counter) = {
        let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        let (last_ms, last) = *state;
        *state = if now > last_ms {
            let mut hasher = SEED.get_or_init(std::hash::RandomState::new).build_hasher();
            hasher.write_u64(now);
            // 73 random bits: room to count up within the millisecond.
            (now, u128::from(hasher.finish()) << 9)
        } else if last + 1 < 1 << 74 {
            (last_ms, last + 1)
        } else {
            // The counter ran out within one millisecond: borrow the next one.
            (last_ms + 1, 0)
        };
        *state
    };
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
