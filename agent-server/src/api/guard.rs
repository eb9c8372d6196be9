//! What browsers and hosts may do, checked before anything else: a request from a web page
//! whose origin is not allowed is refused (403) — not only denied the response, as CORS
//! alone would, since a "simple" cross-origin POST (`text/plain`, no preflight) still
//! reaches the server and acts — and, on a server without auth, a request whose `Host` is
//! not a loopback name is refused too: a page on a rebinding domain (`evil.example`
//! resolving to 127.0.0.1) is same-origin with itself, so only the Host header tells.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The web origins whose pages may call the API (CORS), beside the server's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origins {
    any: bool,
    loopback: bool,
    list: Vec<String>,
}

/// LangGraph Studio, served from LangSmith.
pub const STUDIO_ORIGIN: &str = "https://smith.langchain.com";

impl Default for Origins {
    /// Studio and pages served from loopback (a local chat UI, a dev server).
    fn default() -> Self {
        Origins {
            any: false,
            loopback: true,
            list: vec![STUDIO_ORIGIN.to_owned()],
        }
    }
}

impl Origins {
    /// Exactly `origins` (`scheme://host[:port]`; `*`: any origin). A malformed one is an
    /// error naming it.
    pub fn list<I, S>(origins: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Origins {
            any: false,
            loopback: false,
            list: Vec::new(),
        };
        for o in origins {
            let o = o.as_ref().trim();
            if o == "*" {
                out.any = true;
                continue;
            }
            let normal = o.trim_end_matches('/').to_ascii_lowercase();
            let valid = normal.split_once("://").is_some_and(|(scheme, rest)| {
                matches!(scheme, "http" | "https")
                    && !rest.is_empty()
                    && !rest.contains(['/', '?', '#', ' ', '@'])
            });
            if !valid {
                return Err(format!(
                    "`{o}` is not an origin: write scheme://host[:port], such as https://app.example.com, or * for any"
                ));
            }
            out.list.push(normal);
        }
        Ok(out)
    }

    /// Whether a page from `origin` may call a server reached as `host`.
    pub fn allows(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.any
            || self.list.contains(&origin)
            || (self.loopback && origin_host(&origin).is_some_and(is_loopback_host))
            || host.is_some_and(|h| same_origin(&origin, h))
    }
}

/// The host part of `scheme://host[:port]`.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    matches!(scheme, "http" | "https").then(|| host_name(rest))
}

/// `name` of `name[:port]` or `[v6]:port`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    authority.split(':').next().unwrap_or_default()
}

/// Whether the page's origin is the server itself (the web page it serves).
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

/// `localhost`, `*.localhost`, `127.0.0.0/8`, `::1`.
pub(crate) fn is_loopback_host(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Which `Host` names the server answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hosts {
    /// Any (a server with auth: a rebinding page holds no credential).
    Any,
    /// Loopback names, and these.
    Loopback(Vec<String>),
}

/// The checks of every request.
pub(crate) struct Guard {
    pub(crate) origins: Origins,
    pub(crate) hosts: Hosts,
}

/// Refuses what [`Guard`] does not allow.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    if let Hosts::Loopback(extra) = &guard.hosts {
        let allowed = host.as_deref().map(host_name).is_some_and(|name| {
            is_loopback_host(name) || extra.iter().any(|e| e.eq_ignore_ascii_case(name))
        });
        if !allowed {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "Host not allowed: a server without auth answers only to loopback names (localhost, 127.0.0.1, [::1]); give it an API key or token auth to serve other hosts",
            )
            .into_response();
        }
    }
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|o| guard.origins.allows(o, host.as_deref()))
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "Origin not allowed: pages from this origin may not call the API; the operator allows origins with --cors-allow-origin",
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether CORS answers `origin` (the same rule as the guard).
pub(crate) fn cors_allows(
    guard: &Guard,
    origin: &HeaderValue,
    parts: &axum::http::request::Parts,
) -> bool {
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok());
    origin.to_str().is_ok_and(|o| guard.origins.allows(o, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_allow_studio_loopback_and_the_server_itself_by_default() {
        let o = Origins::default();
        assert!(o.allows("https://smith.langchain.com", None));
        assert!(o.allows("http://localhost:5173", None));
        assert!(o.allows("http://127.0.0.1:3000", None));
        assert!(o.allows("http://[::1]:8080", None));
        assert!(o.allows("http://app.localhost", None));
        assert!(!o.allows("https://evil.example", None));
        assert!(!o.allows("null", None));
        assert!(!o.allows("http://localhost.evil.example", None));
        assert!(o.allows("http://myhost:2024", Some("myhost:2024")));
        assert!(!o.allows("http://myhost:2024", Some("myhost:2025")));
    }

    #[test]
    fn an_explicit_list_replaces_the_default_and_star_is_explicit() {
        let o = Origins::list(["https://app.example.com/"]).unwrap();
        assert!(o.allows("https://APP.example.com", None));
        assert!(!o.allows("https://smith.langchain.com", None));
        assert!(!o.allows("http://localhost:5173", None));
        assert!(
            Origins::list(["*"])
                .unwrap()
                .allows("https://evil.example", None)
        );
        assert!(Origins::list(["app.example.com"]).is_err());
        assert!(Origins::list(["https://app.example.com/path"]).is_err());
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST.",
            "a.localhost",
            "127.0.0.1",
            "127.1.2.3",
            "::1",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1",
            "0.0.0.0",
            "",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
        assert_eq!(host_name("[::1]:2024"), "::1");
        assert_eq!(host_name("localhost:2024"), "localhost");
    }
}
