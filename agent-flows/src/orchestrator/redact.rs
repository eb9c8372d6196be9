//! Redaction of tool results before anything reaches the state, the event stream or a
//! model: secrets and personal data in text are masked.
//!
//! What is masked, wherever it appears in a string (nested JSON included):
//!
//! - e-mail addresses -> `[REDACTED:email]`;
//! - payment card numbers: 13 to 19 digits, optionally grouped by spaces or dashes, that pass
//!   the Luhn check -> `[REDACTED:card]` (other long numbers, such as GDP figures, stay);
//! - API keys and tokens by their documented shapes: OpenAI (`sk-...`), Stripe (`sk_live_`,
//!   `rk_live_`...), GitHub (`ghp_`, `github_pat_`...), Slack (`xoxb-`...), AWS access key ids
//!   (`AKIA` + 16), Google (`AIza` + 35), GitLab (`glpat-`), Hugging Face (`hf_`), npm
//!   (`npm_`), JSON Web Tokens (`eyJ...` in three dot-separated parts), `Bearer` tokens ->
//!   `[REDACTED:token]`;
//! - values after a secret-looking key in text (`api_key=...`, `password: ...`, same key rule
//!   as agent-tools' [`is_secret_key`]) and PEM private key blocks -> `[REDACTED:secret]`;
//! - in JSON objects, the whole value of a secret-looking key -> `[REDACTED]`
//!   ([`agent_tools::redact_secrets`]'s rule).
//!
//! [`RedactOutput`] applies it to a tool's results as a wrapper (a layer, like agent-tools'
//! `Timeout` and `Retry`), so the executor, the events and the state only ever see the
//! masked value.

use agent_tools::{BoxFuture, DEFAULT_SECRET_KEYS, DynTool, REDACTED, ToolError, is_secret_key};
use serde_json::Value;

/// What replaces an e-mail address.
pub const EMAIL: &str = "[REDACTED:email]";
/// What replaces a card number.
pub const CARD: &str = "[REDACTED:card]";
/// What replaces an API key or token.
pub const TOKEN: &str = "[REDACTED:token]";
/// What replaces a secret value or a private key.
pub const SECRET: &str = "[REDACTED:secret]";

/// Token prefixes and the least number of characters that must follow.
const TOKEN_PREFIXES: &[(&str, usize)] = &[
    ("sk-proj-", 20),
    ("sk-ant-", 20),
    ("sk-", 20),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("rk_test_", 16),
    ("pk_live_", 16),
    ("github_pat_", 20),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghu_", 30),
    ("ghs_", 30),
    ("ghr_", 30),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("glpat-", 20),
    ("hf_", 30),
    ("npm_", 30),
];

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
}

fn is_word_boundary(chars: &[char], at: usize) -> bool {
    at == 0 || !(chars[at - 1].is_ascii_alphanumeric() || matches!(chars[at - 1], '_' | '-'))
}

/// `text` with secrets and personal data masked, and how many were masked.
pub fn redact_text(text: &str) -> (String, usize) {
    let mut count = 0;
    let text = redact_pem(text, &mut count);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if let Some((end, replacement)) = match_at(&chars, i) {
            out.push_str(replacement);
            count += 1;
            i = end;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    let (out, secrets) = redact_key_values(&out);
    (out, count + secrets)
}

/// A match starting at `i`: where it ends and what replaces it.
fn match_at(chars: &[char], i: usize) -> Option<(usize, &'static str)> {
    if !is_word_boundary(chars, i) {
        return None;
    }
    token_at(chars, i)
        .map(|end| (end, TOKEN))
        .or_else(|| email_at(chars, i).map(|end| (end, EMAIL)))
        .or_else(|| card_at(chars, i).map(|end| (end, CARD)))
}

fn starts_with(chars: &[char], at: usize, prefix: &str) -> bool {
    (at..)
        .zip(prefix.chars())
        .all(|(k, p)| chars.get(k) == Some(&p))
}

fn run_end(chars: &[char], from: usize, ok: impl Fn(char) -> bool) -> usize {
    let mut end = from;
    while end < chars.len() && ok(chars[end]) {
        end += 1;
    }
    end
}

fn token_at(chars: &[char], i: usize) -> Option<usize> {
    for (prefix, min) in TOKEN_PREFIXES {
        if starts_with(chars, i, prefix) {
            let start = i + prefix.chars().count();
            let end = run_end(chars, start, token_char);
            if end - start >= *min {
                return Some(end);
            }
        }
    }
    // AWS access key ids: AKIA/ASIA + 16 upper-case letters or digits.
    if starts_with(chars, i, "AKIA") || starts_with(chars, i, "ASIA") {
        let end = run_end(chars, i + 4, |c| {
            c.is_ascii_uppercase() || c.is_ascii_digit()
        });
        if end - (i + 4) == 16 {
            return Some(end);
        }
    }
    // Google API keys: AIza + 35.
    if starts_with(chars, i, "AIza") {
        let end = run_end(chars, i + 4, token_char);
        if end - (i + 4) >= 35 {
            return Some(end);
        }
    }
    // JSON Web Tokens: three base64url parts, the first a JSON header (`eyJ`).
    if starts_with(chars, i, "eyJ") {
        let b64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_');
        let first = run_end(chars, i, b64);
        if chars.get(first) == Some(&'.') {
            let second = run_end(chars, first + 1, b64);
            if second > first + 1 && chars.get(second) == Some(&'.') {
                let third = run_end(chars, second + 1, b64);
                if third > second + 1 {
                    return Some(third);
                }
            }
        }
    }
    None
}

fn email_at(chars: &[char], i: usize) -> Option<usize> {
    let local = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-');
    let at = run_end(chars, i, local);
    if at == i || chars.get(at) != Some(&'@') || chars[i] == '.' {
        return None;
    }
    let domain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-');
    let mut end = run_end(chars, at + 1, domain);
    while end > at + 1 && matches!(chars[end - 1], '.' | '-') {
        end -= 1;
    }
    let host: String = chars[at + 1..end].iter().collect();
    let tld = host.rsplit('.').next().unwrap_or("");
    let valid = host.contains('.')
        && !host.starts_with('.')
        && !host.contains("..")
        && tld.len() >= 2
        && tld.chars().all(|c| c.is_ascii_alphabetic());
    valid.then_some(end)
}

fn card_at(chars: &[char], i: usize) -> Option<usize> {
    if !chars[i].is_ascii_digit() {
        return None;
    }
    let mut digits = Vec::new();
    let mut end = i;
    let mut k = i;
    while k < chars.len() {
        let c = chars[k];
        if c.is_ascii_digit() {
            digits.push(c as u32 - '0' as u32);
            k += 1;
            end = k;
        } else if matches!(c, ' ' | '-')
            && chars.get(k + 1).is_some_and(char::is_ascii_digit)
            && !digits.is_empty()
        {
            k += 1;
        } else {
            break;
        }
        if digits.len() > 19 {
            return None;
        }
    }
    // Not part of a longer number or a decimal.
    if chars.get(end).is_some_and(|c| c.is_ascii_alphanumeric())
        || (chars.get(end) == Some(&'.') && chars.get(end + 1).is_some_and(char::is_ascii_digit))
    {
        return None;
    }
    // Card networks' first digits: 3 (Amex, Diners, JCB), 4 (Visa), 5 and 2221-2720
    // (Mastercard), 6 (Discover); lists of years start with 1 or 20.
    let prefix = digits.iter().take(4).fold(0, |n, d| n * 10 + d);
    let network = matches!(digits.first(), Some(3..=6)) || (2221..=2720).contains(&prefix);
    ((13..=19).contains(&digits.len()) && network && luhn(&digits)).then_some(end)
}

/// The Luhn checksum of card numbers.
pub fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(n, d)| {
            if n % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn redact_pem(text: &str, count: &mut usize) -> String {
    const BEGIN: &str = "-----BEGIN ";
    const END: &str = "-----END ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let block = &rest[start..];
        let header = block.lines().next().unwrap_or("");
        let end = block.find(END).and_then(|e| {
            let name = e + END.len();
            block[name..].find("-----").map(|close| name + close + 5)
        });
        match end {
            Some(end) if header.contains("PRIVATE KEY") => {
                out.push_str(&rest[..start]);
                out.push_str(SECRET);
                *count += 1;
                rest = &block[end..];
            }
            _ => {
                let skip = start + BEGIN.len();
                out.push_str(&rest[..skip]);
                rest = &rest[skip..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Masks the value after a secret-looking key (`api_key=...`, `password: "..."`) and after
/// `Bearer`.
fn redact_key_values(text: &str) -> (String, usize) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut count = 0;
    let mut i = 0;
    while i < chars.len() {
        // A key: a run of word characters at a boundary.
        if is_word_boundary(&chars, i) && (chars[i].is_ascii_alphabetic()) {
            let key_end = run_end(&chars, i, |c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '-')
            });
            let key: String = chars[i..key_end].iter().collect();
            let mut k = key_end;
            // Optional closing quote of a quoted key, spaces, then `=` or `:`.
            if matches!(chars.get(k), Some('"' | '\'')) {
                k += 1;
            }
            let after_key = run_end(&chars, k, |c| c == ' ');
            let bearer = key.eq_ignore_ascii_case("bearer") && after_key > key_end;
            let separator = matches!(chars.get(after_key), Some('=' | ':'));
            if (separator && is_secret_key(&key, DEFAULT_SECRET_KEYS)) || bearer {
                let mut v = if bearer {
                    after_key
                } else {
                    run_end(&chars, after_key + 1, |c| c == ' ')
                };
                let quote = match chars.get(v) {
                    Some(q @ ('"' | '\'')) => {
                        v += 1;
                        Some(*q)
                    }
                    _ => None,
                };
                let value_end = match quote {
                    Some(q) => run_end(&chars, v, |c| c != q),
                    None => run_end(&chars, v, |c| {
                        !c.is_whitespace() && !matches!(c, ',' | ';' | '}' | ')' | '&')
                    }),
                };
                let mut value_end = value_end;
                let mut value: String = chars[v..value_end].iter().collect();
                // `Authorization: Bearer <token>`: the scheme and the token go together.
                if quote.is_none()
                    && ["bearer", "basic", "token"]
                        .iter()
                        .any(|s| value.eq_ignore_ascii_case(s))
                    && chars.get(value_end) == Some(&' ')
                {
                    let token_start = run_end(&chars, value_end, |c| c == ' ');
                    value_end = run_end(&chars, token_start, |c| !c.is_whitespace());
                    value = chars[v..value_end].iter().collect();
                }
                if !value.is_empty() && !value.starts_with("[REDACTED") {
                    out.extend(&chars[i..v]);
                    out.push_str(if bearer { TOKEN } else { SECRET });
                    count += 1;
                    i = value_end;
                    continue;
                }
            }
            out.extend(&chars[i..key_end]);
            i = key_end;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    (out, count)
}

/// `value` with every string redacted ([`redact_text`]) and every secret-looking key's value
/// masked, and how many things were masked.
pub fn redact_value(value: &Value) -> (Value, usize) {
    match value {
        Value::String(text) => {
            let (text, n) = redact_text(text);
            (Value::String(text), n)
        }
        Value::Array(items) => {
            let mut n = 0;
            let items = items
                .iter()
                .map(|item| {
                    let (item, k) = redact_value(item);
                    n += k;
                    item
                })
                .collect();
            (Value::Array(items), n)
        }
        Value::Object(map) => {
            let mut n = 0;
            let map = map
                .iter()
                .map(|(key, value)| {
                    if is_secret_key(key, DEFAULT_SECRET_KEYS) && !value.is_null() {
                        n += 1;
                        (key.clone(), Value::String(REDACTED.to_owned()))
                    } else {
                        let (value, k) = redact_value(value);
                        n += k;
                        (key.clone(), value)
                    }
                })
                .collect();
            (Value::Object(map), n)
        }
        other => (other.clone(), 0),
    }
}

/// A tool whose results are redacted (see the module docs) before anyone sees them.
pub struct RedactOutput<T> {
    inner: T,
}

impl<T> RedactOutput<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        RedactOutput { inner }
    }
}

impl<T: DynTool> DynTool for RedactOutput<T> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    fn call(&self, args: Value) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let output = self.inner.call(args).await?;
            Ok(redact_value(&output).0)
        })
    }

    fn redact_args(&self, args: &Value) -> Value {
        redact_value(&self.inner.redact_args(args)).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::BoxResult;
    use serde_json::json;

    fn r(text: &str) -> String {
        redact_text(text).0
    }

    #[test]
    fn emails() {
        assert_eq!(
            r("write to ana.garcia+news@example.co.uk."),
            "write to [REDACTED:email]."
        );
        assert_eq!(
            r("a@b.io, c_d@e-f.org"),
            "[REDACTED:email], [REDACTED:email]"
        );
        assert_eq!(r("not@an address"), "not@an address");
        assert_eq!(r("user@localhost"), "user@localhost");
    }

    #[test]
    fn card_numbers_pass_luhn() {
        assert_eq!(
            r("card 4111 1111 1111 1111 exp 12/29"),
            "card [REDACTED:card] exp 12/29"
        );
        assert_eq!(r("5500-0000-0000-0004"), "[REDACTED:card]");
        assert_eq!(r("378282246310005"), "[REDACTED:card]");
        // Not Luhn-valid, too short, or a decimal: numbers stay.
        assert_eq!(r("4111 1111 1111 1112"), "4111 1111 1111 1112");
        assert_eq!(r("GDP 13415.266 in 2008"), "GDP 13415.266 in 2008");
        assert_eq!(r("1234567890123.5"), "1234567890123.5");
        assert_eq!(r("rows 1959 2009 203"), "rows 1959 2009 203");
        // Years in a row are not cards, Luhn or not.
        assert_eq!(r("1959 1960 1961 1962"), "1959 1960 1961 1962");
        assert_eq!(r("2000 2001 2002 2003"), "2000 2001 2002 2003");
    }

    #[test]
    fn api_keys_and_tokens() {
        for (text, want) in [
            (
                "key sk-proj-abcdefghijklmnopqrstuvwx123",
                "key [REDACTED:token]",
            ),
            ("sk_live_51HxYzABCDEFGHIJKLMN", "[REDACTED:token]"),
            ("ghp_0123456789abcdefghijABCDEFGHIJ0123", "[REDACTED:token]"),
            ("xoxb-123456789012-abcdefghij", "[REDACTED:token]"),
            ("AKIAIOSFODNN7EXAMPLE", "[REDACTED:token]"),
            (
                "AIzaSyA1234567890abcdefghijklmnopqrstuv",
                "[REDACTED:token]",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.sflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
                "[REDACTED:token]",
            ),
            (
                "Authorization: Bearer abc.def-123",
                "Authorization: [REDACTED:secret]",
            ),
            (
                "header Bearer abc.def-123 sent",
                "header Bearer [REDACTED:token] sent",
            ),
            ("api_key=12345abc&x=1", "api_key=[REDACTED:secret]&x=1"),
            ("password: \"hunter2\"", "password: \"[REDACTED:secret]\""),
            (
                "{\"token\": \"t0k3n\"}",
                "{\"token\": \"[REDACTED:secret]\"}",
            ),
        ] {
            assert_eq!(r(text), want, "{text}");
        }
        // Words that only look like keys stay.
        assert_eq!(
            r("the sk-ills of tokens: max_tokens=400"),
            "the sk-ills of tokens: max_tokens=400"
        );
        assert_eq!(r("task-based"), "task-based");
    }

    #[test]
    fn private_keys() {
        let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(r(pem), "before\n[REDACTED:secret]\nafter");
        let cert = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----";
        assert_eq!(r(cert), cert);
    }

    #[test]
    fn json_values_are_walked_and_counted() {
        let (value, n) = redact_value(&json!({
            "rows": [["ana@example.com", 4111111111111111u64, "4111111111111111"]],
            "api_key": "abc",
            "note": "call 555-0100",
            "count": 3,
        }));
        assert_eq!(
            value,
            json!({
                "rows": [["[REDACTED:email]", 4111111111111111u64, "[REDACTED:card]"]],
                "api_key": "[REDACTED]",
                "note": "call 555-0100",
                "count": 3,
            })
        );
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn the_wrapper_redacts_results_not_arguments() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Who {
            name: String,
        }
        let tool = RedactOutput::new(agent_tools::tool_fn(
            "lookup",
            "Looks a person up.",
            |who: Who| async move {
                BoxResult::Ok(
                    json!({"name": who.name, "email": "ana@example.com", "password": "x"}),
                )
            },
        ));
        let out = tool.call(json!({"name": "Ana"})).await.unwrap();
        assert_eq!(
            out,
            json!({"name": "Ana", "email": "[REDACTED:email]", "password": "[REDACTED]"})
        );
        assert_eq!(tool.name(), "lookup");
    }
}
