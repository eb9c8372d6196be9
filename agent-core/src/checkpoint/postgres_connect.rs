//! What a PostgreSQL connection URL asks for: TLS (rustls) as its `sslmode` says, and a
//! connect timeout.
//!
//! Why here: `tokio-postgres` parses URLs and key-value strings but knows only `disable`,
//! `prefer` and `require`, and leaves certificates to the TLS connector it is given. This
//! module takes `sslmode` and `sslrootcert` out of the string, lets `tokio-postgres` parse the
//! rest, and builds a rustls connector (ring, no OpenSSL) that checks what the mode asks, as
//! libpq does:
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | no | - |
//! | `prefer` (the default) | when the server offers TLS | no |
//! | `require` | yes, or no connection | no (as `verify-ca` when `sslrootcert` is given) |
//! | `verify-ca` | yes | chain to a trusted root |
//! | `verify-full` | yes | chain to a trusted root, and the host name |
//!
//! Trusted roots are the PEM certificates of `sslrootcert=<file>`, else (or with
//! `sslrootcert=system`) the platform's. Channel binding (`SCRAM-SHA-256-PLUS`) is not offered.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

/// How long one connection attempt may take to open its socket when the URL does not say
/// (`connect_timeout`, in seconds): a host that drops packets fails in seconds, not after the
/// operating system's minutes.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The URL's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A connection URL taken apart: what `tokio-postgres` connects with, and the TLS it uses.
pub(crate) struct Settings {
    pub(crate) config: tokio_postgres::Config,
    pub(crate) mode: SslMode,
    pub(crate) tls: MakeRustls,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config holds the password: never print it.
        f.debug_struct("Settings")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// Parses a URL (`postgres://user@host/db?sslmode=verify-full`) or a key-value string
/// (`host=h user=u sslmode=require`).
pub(crate) fn settings(url: &str) -> Result<Settings, String> {
    let (rest, params) = take_tls_params(url)?;
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|e| format!("invalid connection URL: {e}"))?;
    let mut mode = match params.mode.as_deref() {
        None | Some("prefer") => SslMode::Prefer,
        Some("disable") => SslMode::Disable,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(other) => {
            return Err(format!(
                "invalid connection URL: sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
            ));
        }
    };
    let roots = params.root_cert.filter(|r| r != "system");
    // libpq: a root certificate given makes `require` check the chain.
    if mode == SslMode::Require && roots.is_some() {
        mode = SslMode::VerifyCa;
    }
    config.ssl_mode(match mode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        _ => tokio_postgres::config::SslMode::Require,
    });
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    let tls = match mode {
        SslMode::Disable => MakeRustls(None),
        _ => MakeRustls(Some(Arc::new(client_config(mode, roots.as_deref())?))),
    };
    Ok(Settings { config, mode, tls })
}

/// The TLS parameters taken out of a connection string.
#[derive(Debug, Default, PartialEq)]
struct TlsParams {
    mode: Option<String>,
    root_cert: Option<String>,
}

/// `url` without its `sslmode` and `sslrootcert`, and their values.
fn take_tls_params(url: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams::default();
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            params.mode = Some(value);
            true
        }
        "sslrootcert" => {
            params.root_cert = Some(value);
            true
        }
        _ => false,
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((head, query)) = url.split_once('?') else {
            return Ok((url.to_owned(), params));
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(&percent_decode(key)?, percent_decode(value)?) {
                kept.push(pair);
            }
        }
        match kept.is_empty() {
            true => head.to_owned(),
            false => format!("{head}?{}", kept.join("&")),
        }
    } else {
        let mut rest = String::with_capacity(url.len());
        let mut at = 0;
        while let Some(Pair { span, key, value }) = next_pair(url, at)? {
            if !take(key, value) {
                rest.push_str(&url[span.clone()]);
                rest.push(' ');
            }
            at = span.end;
        }
        rest
    };
    Ok((rest, params))
}

/// One `key = value` of a key-value connection string: where it is, its key, its value
/// (unquoted, unescaped).
struct Pair<'a> {
    span: std::ops::Range<usize>,
    key: &'a str,
    value: String,
}

/// The next pair of a key-value connection string at or after `at`, read as libpq reads it.
fn next_pair(s: &str, at: usize) -> Result<Option<Pair<'_>>, String> {
    let bytes = s.as_bytes();
    let skip_space = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let start = skip_space(at);
    if start == bytes.len() {
        return Ok(None);
    }
    let mut i = start;
    while bytes
        .get(i)
        .is_some_and(|b| *b != b'=' && !b.is_ascii_whitespace())
    {
        i += 1;
    }
    let key = &s[start..i];
    i = skip_space(i);
    if bytes.get(i) != Some(&b'=') {
        return Err(format!(
            "invalid connection string: `{key}` is not followed by `=`"
        ));
    }
    i = skip_space(i + 1);
    let mut value = String::new();
    let quoted = bytes.get(i) == Some(&b'\'');
    if quoted {
        i += 1;
    }
    let mut chars = s[i..].char_indices();
    let end = loop {
        match chars.next() {
            None if quoted => return Err("invalid connection string: an unclosed quote".to_owned()),
            None => break s.len(),
            Some((j, '\'')) if quoted => break i + j + 1,
            Some((j, c)) if !quoted && c.is_whitespace() => break i + j,
            Some((_, '\\')) => value.extend(chars.next().map(|(_, c)| c)),
            Some((_, c)) => value.push(c),
        }
    };
    Ok(Some(Pair {
        span: start..end,
        key,
        value,
    }))
}

/// `%XX` escapes decoded (a URL's query).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("invalid connection URL: a bad escape in `{s}`"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("invalid connection URL: `{s}` is not UTF-8"))
}

/// The rustls configuration for `mode` (not `Disable`), with `roots` (a PEM file) or the
/// platform's roots when a certificate is checked.
fn client_config(mode: SslMode, roots: Option<&str>) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let mut config = match mode {
        SslMode::Disable | SslMode::Prefer | SslMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let roots = Arc::new(root_store(roots)?);
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("TLS setup: {e}"))?;
            if mode == SslMode::VerifyFull {
                builder.with_webpki_verifier(verifier).with_no_client_auth()
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyName(verifier)))
                    .with_no_client_auth()
            }
        }
    };
    // What PostgreSQL 17 expects with direct TLS negotiation; older servers ignore it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

/// Trusted roots: the certificates of the PEM file `path`, else the platform's.
fn root_store(path: Option<&str>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match path {
        Some(path) => {
            for cert in CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("TLS: sslrootcert `{path}`: {e}"))?
            {
                let cert = cert.map_err(|e| format!("sslrootcert `{path}`: {e}"))?;
                store
                    .add(cert)
                    .map_err(|e| format!("sslrootcert `{path}`: {e}"))?;
            }
            if store.is_empty() {
                return Err(format!("sslrootcert `{path}` holds no certificate"));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(format!(
                    "TLS: no trusted root certificates found on this system ({} errors); give sslrootcert=<PEM file>",
                    found.errors.len()
                ));
            }
        }
    }
    Ok(store)
}

/// Accepts any certificate (`prefer`, `require`: encryption against eavesdropping, not
/// against an impostor, as in libpq) but still checks the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Checks the chain but not the host name (`verify-ca`).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain: a name error means the chain was trusted.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `tokio-postgres`' TLS hook over rustls (`None`: TLS off, for `sslmode=disable`).
#[derive(Clone)]
pub(crate) struct MakeRustls(Option<Arc<ClientConfig>>);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = BoxError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, BoxError> {
        // A bad name (a Unix socket's path is given as "") fails the handshake, not the
        // connection: without TLS it is never used.
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|_| format!("`{domain}` is not a host name TLS can check"));
        Ok(RustlsConnect {
            config: self.0.clone(),
            name,
        })
    }
}

/// One connection's TLS handshake.
pub(crate) struct RustlsConnect {
    config: Option<Arc<ClientConfig>>,
    name: Result<ServerName<'static>, String>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<RustlsStream<S>, BoxError>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let config = self.config.ok_or("TLS is disabled (sslmode=disable)")?;
            let name = self.name?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

/// A connection over rustls.
pub(crate) struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(url: &str) -> SslMode {
        settings(url).unwrap().mode
    }

    #[test]
    fn sslmode_is_read_from_urls_and_key_value_strings() {
        assert_eq!(mode("postgres://u@h/db"), SslMode::Prefer);
        assert_eq!(mode("postgres://u@h/db?sslmode=disable"), SslMode::Disable);
        assert_eq!(
            mode("postgresql://u@h/db?sslmode=require"),
            SslMode::Require
        );
        assert_eq!(
            mode("postgres://u@h/db?application_name=x&sslmode=verify-ca&connect_timeout=3"),
            SslMode::VerifyCa
        );
        assert_eq!(
            mode("postgres://u@h/db?sslmode=verify%2Dfull"),
            SslMode::VerifyFull
        );
        assert_eq!(
            mode("host=h user=u sslmode=verify-full"),
            SslMode::VerifyFull
        );
        assert_eq!(mode("host=h sslmode = 'require' user=u"), SslMode::Require);
        assert_eq!(mode("host=h user=u"), SslMode::Prefer);
        for bad in [
            "postgres://u@h/db?sslmode=maybe",
            "host=h sslmode=allow",
            "host=h sslmode='require",
            "postgres://u@h/db?sslmode=%zz",
        ] {
            let error = settings(bad).unwrap_err();
            assert!(error.contains("invalid connection"), "{bad}: {error}");
        }
    }

    #[test]
    fn the_rest_of_the_string_reaches_tokio_postgres_and_a_connect_timeout_is_set() {
        let s = settings("postgres://me@db.example:6543/app?sslmode=require&connect_timeout=3")
            .unwrap();
        assert_eq!(s.config.get_user(), Some("me"));
        assert_eq!(s.config.get_dbname(), Some("app"));
        assert_eq!(s.config.get_ports(), [6543]);
        assert_eq!(
            s.config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        assert_eq!(
            s.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        let s = settings("host=h user='o\\'brien' dbname=x sslmode=verify-full").unwrap();
        assert_eq!(s.config.get_user(), Some("o'brien"));
        assert_eq!(s.config.get_connect_timeout(), Some(&CONNECT_TIMEOUT));
        assert_eq!(
            s.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        let s = settings("postgres://u@h/db?sslmode=disable").unwrap();
        assert_eq!(
            s.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Disable
        );
        // Still refused by tokio-postgres: options it does not know.
        assert!(settings("postgres://u@h/db?sslcert=x").is_err());
    }

    #[test]
    fn a_root_certificate_file_is_read_and_makes_require_check_the_chain() {
        let missing =
            settings("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent.pem")
                .unwrap_err();
        assert!(
            missing.contains("sslrootcert `/nonexistent.pem`"),
            "{missing}"
        );
        let dir = std::env::temp_dir().join(format!("agentgraph-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let url = format!(
            "postgres://u@h/db?sslmode=require&sslrootcert={}",
            empty.display()
        );
        let error = settings(&url).unwrap_err();
        assert!(error.contains("holds no certificate"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
