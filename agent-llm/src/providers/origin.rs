//! Where an API key may go: only to the origin it was configured for, and not in clear text
//! over the network.
//!
//! Keys travel in headers (`Authorization`, `x-api-key`, `x-goog-api-key`). reqwest drops only
//! `Authorization` and cookies when a redirect leaves the host, so the other two would follow
//! a redirect anywhere: [`redirect_policy`] follows a redirect only within the origin (scheme,
//! host and port) the request went to, and a redirect elsewhere comes back as the 3xx it is.
//! [`check_key_transport`] refuses, before anything is sent, a key over plain `http://` to a
//! host that is not this machine, unless the user opted in.

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};

use crate::error::LlmError;

/// The builder setting that allows a key over plain HTTP.
pub(crate) const INSECURE_SETTING: &str = "allow_insecure_http";

/// The environment variable that allows a key over plain HTTP for models built from the
/// environment.
pub(crate) const INSECURE_ENV: &str = "AGENT_LLM_ALLOW_INSECURE_HTTP";

/// How many same-origin redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// Follows redirects within the first request's origin only.
pub(crate) fn redirect_policy() -> Policy {
    Policy::custom(|attempt: Attempt<'_>| {
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// Fails when `base_url` is plain `http://` to a host other than this machine and a key
/// would be sent, unless `allowed`.
pub(crate) fn check_key_transport(
    provider: &'static str,
    base_url: &str,
    has_key: bool,
    allowed: bool,
) -> Result<(), LlmError> {
    if !has_key || allowed {
        return Ok(());
    }
    let url = Url::parse(base_url).map_err(|e| LlmError::Config {
        provider,
        message: format!("base URL `{base_url}` does not parse: {e}"),
    })?;
    let host = url.host_str().unwrap_or_default();
    if url.scheme() != "http" || is_this_machine(host) {
        return Ok(());
    }
    Err(LlmError::Config {
        provider,
        message: format!(
            "refusing to send the API key in clear text over http:// to `{host}`; use https://, \
             or opt in with `.{INSECURE_SETTING}(true)` on the builder ({INSECURE_ENV}=1 for \
             models built from the environment) if the network to that host is trusted"
        ),
    })
}

/// Loopback addresses, `localhost` names and the unspecified address (which reaches this
/// machine). `host` is as [`Url::host_str`] gives it: IPv6 in brackets.
fn is_this_machine(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => {
            let name = bare.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_off_plain_http_to_other_hosts() {
        let check = |url: &str| check_key_transport("test", url, true, false);
        for local in [
            "http://127.0.0.1:8080/v1",
            "http://127.9.9.9",
            "http://localhost:11434",
            "http://LOCALHOST.",
            "http://api.localhost",
            "http://[::1]:1234",
            "http://[::ffff:127.0.0.1]",
            "http://0.0.0.0:11434",
            "https://api.openai.com/v1",
        ] {
            assert!(check(local).is_ok(), "{local}");
        }
        for remote in [
            "http://api.openai.com/v1",
            "http://10.0.0.5:11434",
            "http://localhost.evil.com",
            "http://[2001:db8::1]",
        ] {
            let err = check(remote).unwrap_err();
            assert!(err.to_string().contains("allow_insecure_http"), "{err}");
        }
        assert!(check_key_transport("t", "http://10.0.0.5", true, true).is_ok());
        assert!(check_key_transport("t", "http://10.0.0.5", false, false).is_ok());
    }
}
