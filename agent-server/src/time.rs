//! Timestamps as langgraph-api writes them (ISO-8601 UTC with microseconds and `+00:00`),
//! and the clock the cron scheduler reads: the system's, or one a test sets.

use std::sync::atomic::{AtomicI64, Ordering};

/// What the cron scheduler asks the time of: [`SystemClock`] in production, a
/// [`ManualClock`] in tests that move time by hand.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that stands still until told: for tests of schedules (one can be shared by
/// several servers).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `ms` since the Unix epoch.
    pub fn new(ms: i64) -> Self {
        ManualClock(AtomicI64::new(ms))
    }

    /// Sets the time.
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `d`.
    pub fn advance(&self, d: std::time::Duration) {
        self.0.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// `ms` since the Unix epoch as `2026-11-26T19:42:05.710000+00:00`.
pub fn iso_ms(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => format!("{}+00:00", t.strftime("%Y-%m-%dT%H:%M:%S%.6f")),
        Err(_) => String::new(),
    }
}

/// Now, in the same format.
pub fn now_iso() -> String {
    iso_ms(now_ms())
}

/// Milliseconds since the Unix epoch of an ISO-8601 time (`2026-11-27T05:00:00+00:00`,
/// `...Z`; one without an offset, as Python's naive `isoformat()` writes, is UTC); `None`
/// for text that is no time.
pub fn parse_ms(text: &str) -> Option<i64> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Some(t.as_millisecond());
    }
    let civil = text.parse::<jiff::civil::DateTime>().ok()?;
    civil
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp().as_millisecond())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_like_langgraph_api() {
        assert_eq!(
            super::iso_ms(1_795_722_265_656),
            "2026-11-26T19:44:25.656000+00:00"
        );
    }
}
