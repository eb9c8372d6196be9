//! Timestamps as langgraph-api writes them: ISO-8601 UTC with microseconds and `+00:00`.

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
