//! The last line of defence for error text: no message a client reads (a 4xx/5xx `detail`,
//! a run's error, an SSE `error` event, a webhook's payload, an MCP error) carries a value
//! of the server's environment — a provider key, a database URL with its password — even
//! when some layer below (a provider's connection error quoting its base URL, a driver's
//! message) put one there. Requests cannot name files or settings that would quote them
//! (see `auth` and the flows' operator settings); this catches what slips through.
//!
//! The environment is read once, at first use; values shorter than [`MIN_LEN`] are left
//! alone (`1`, `true`, `C.UTF-8` are not secrets, and would blot out ordinary words).

use std::borrow::Cow;
use std::sync::OnceLock;

/// The shortest environment value that is redacted.
pub(crate) const MIN_LEN: usize = 8;

/// What replaces a redacted value.
pub(crate) const REDACTED: &str = "[redacted]";

fn values() -> &'static [String] {
    static VALUES: OnceLock<Vec<String>> = OnceLock::new();
    VALUES.get_or_init(|| {
        let mut values: Vec<String> = std::env::vars_os()
            .filter_map(|(_, v)| v.into_string().ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| v.len() >= MIN_LEN)
            .collect();
        // Longest first: a value that holds another is replaced whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values
    })
}

/// `text` with every environment value in it replaced by [`REDACTED`].
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    let found: Vec<&String> = values()
        .iter()
        .filter(|v| text.contains(v.as_str()))
        .collect();
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for v in found {
        out = out.replace(v.as_str(), REDACTED);
    }
    Cow::Owned(out)
}

/// Scrubs every string inside `value` (an error event's data, a webhook's error).
pub(crate) fn scrub_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            if let Cow::Owned(clean) = scrub(s) {
                *s = clean;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(scrub_json),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_leave_error_text() {
        // PATH is set in any test process and longer than MIN_LEN.
        let path = std::env::var("PATH").unwrap();
        assert!(path.len() >= MIN_LEN);
        let text = format!("cannot connect to {path} (refused)");
        assert_eq!(
            scrub(&text),
            format!("cannot connect to {REDACTED} (refused)")
        );
        assert!(matches!(scrub("nothing secret here"), Cow::Borrowed(_)));
        let mut v = serde_json::json!({"error": "X", "message": [format!("at {path}")]});
        scrub_json(&mut v);
        assert_eq!(v["message"][0], format!("at {REDACTED}"));
    }
}
