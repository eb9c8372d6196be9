//! JWT bearer tokens (`Authorization: Bearer <token>`, the header langgraph-sdk sends with
//! `headers=`): HS256 with a shared secret, or RS256/ES256 (and their larger siblings)
//! verified with public keys from a JWKS file — an identity provider's `jwks.json`, read
//! again when it changes. The `jsonwebtoken` crate does the cryptography; this module
//! only chooses the key and maps claims to a [`User`]: `sub` is the identity, a
//! `permissions` list (or an OAuth `scope` string) the permissions, `name` the display
//! name. `exp` is required; `iss` and `aud` are checked when configured. A token's own
//! `alg` never picks a weaker check: a secret verifies HS256 only, a JWKS key only the
//! asymmetric algorithm it was published for.

use std::path::PathBuf;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::User;
use super::watched::{Watched, at_line};

/// Why a token or a JWT setting is refused. Token errors are shown to the client that
/// sent the token, so they say what failed and nothing of the keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// The HS256 secret is too short to be one.
    #[error(
        "the JWT secret is {0} bytes; HS256 needs at least 32 random bytes (e.g. `openssl rand -hex 32`)"
    )]
    WeakSecret(usize),
    /// The JWKS file cannot be used.
    #[error("JWKS file {path}: {message}")]
    Jwks {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The token does not verify.
    #[error("{0}")]
    Token(String),
}

/// Where the keys that verify tokens come from.
pub enum JwtKeys {
    /// HS256 with this secret.
    Secret(Vec<u8>),
    /// Public keys of a JWKS file, by `kid`.
    Jwks(PathBuf),
}

enum Keys {
    Secret(DecodingKey),
    Jwks(Watched<JwkSet>),
}

/// Verifies bearer tokens into users.
pub struct Jwt {
    keys: Keys,
    issuer: Option<String>,
    audience: Option<String>,
}

/// How far clocks may disagree, in seconds.
const LEEWAY: u64 = 30;

impl Jwt {
    /// Tokens verified with `keys` (a JWKS file is read now).
    pub async fn new(keys: JwtKeys) -> Result<Self, JwtError> {
        let keys = match keys {
            JwtKeys::Secret(secret) => {
                if secret.len() < 32 {
                    return Err(JwtError::WeakSecret(secret.len()));
                }
                Keys::Secret(
                    DecodingKey::from_secret(&secret).map_err(|e| JwtError::Token(describe(&e)))?,
                )
            }
            JwtKeys::Jwks(path) => Keys::Jwks(
                Watched::open(path.clone(), parse_jwks)
                    .await
                    .map_err(|message| JwtError::Jwks {
                        path: path.display().to_string(),
                        message,
                    })?,
            ),
        };
        Ok(Jwt {
            keys,
            issuer: None,
            audience: None,
        })
    }

    /// Requires `iss` to be `issuer`.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Requires `aud` to hold `audience`.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience = Some(audience.into());
        self
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.leeway = LEEWAY;
        v.set_required_spec_claims(&["exp", "sub"]);
        if let Some(iss) = &self.issuer {
            v.set_issuer(&[iss]);
            v.required_spec_claims.insert("iss".to_owned());
        }
        match &self.audience {
            Some(aud) => v.set_audience(&[aud]),
            None => v.validate_aud = false,
        }
        v
    }

    /// The user `token` names, if it verifies.
    pub async fn verify(&self, token: &str) -> Result<User, JwtError> {
        let bad = |e: jsonwebtoken::errors::Error| JwtError::Token(describe(&e));
        let header = jsonwebtoken::decode_header(token).map_err(bad)?;
        let claims: Map<String, Value> = match &self.keys {
            Keys::Secret(key) => {
                if header.alg != Algorithm::HS256 {
                    return Err(JwtError::Token(format!(
                        "tokens here are signed with HS256, not {:?}",
                        header.alg
                    )));
                }
                jsonwebtoken::decode(token, key, &self.validation(Algorithm::HS256))
                    .map_err(bad)?
                    .claims
            }
            Keys::Jwks(file) => {
                let key = file
                    .with(|set| key_for(set, header.kid.as_deref(), header.alg))
                    .await?;
                jsonwebtoken::decode(token, &key, &self.validation(header.alg))
                    .map_err(bad)?
                    .claims
            }
        };
        user_of(claims)
    }
}

/// The decoding key of the JWKS entry the token names (its `kid`, or the only key), for an
/// asymmetric `alg` that entry allows.
fn key_for(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, JwtError> {
    if matches!(alg.family(), AlgorithmFamily::Hmac) {
        return Err(JwtError::Token(format!(
            "tokens here are signed with a published key (RS256, ES256...), not {alg:?}"
        )));
    }
    let jwk = match kid {
        Some(kid) => set
            .find(kid)
            .ok_or_else(|| JwtError::Token(format!("no key with kid `{kid}` is trusted here")))?,
        None => match set.keys.as_slice() {
            [only] => only,
            _ => {
                return Err(JwtError::Token(
                    "the token names no key (`kid`) and several are trusted".to_owned(),
                ));
            }
        },
    };
    if let Some(declared) = jwk.common.key_algorithm
        && Algorithm::try_from(declared).ok() != Some(alg)
    {
        return Err(JwtError::Token(format!(
            "the key is for {declared:?}, the token is signed with {alg:?}"
        )));
    }
    DecodingKey::from_jwk(jwk).map_err(|e| JwtError::Token(describe(&e)))
}

fn parse_jwks(text: &str) -> Result<JwkSet, String> {
    let set: JwkSet = serde_json::from_str(text).map_err(|e| {
        let offset = text
            .lines()
            .take(e.line().saturating_sub(1))
            .map(|l| l.len() + 1)
            .sum::<usize>();
        format!(
            "not a JWKS document{}: it holds {{\"keys\": [...]}} with public keys",
            at_line(text, Some(offset))
        )
    })?;
    if set.keys.is_empty() {
        return Err("it holds no keys".to_owned());
    }
    Ok(set)
}

fn describe(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the token has expired".to_owned(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        K::InvalidSignature => "the signature does not verify".to_owned(),
        K::InvalidIssuer => "the token's issuer (iss) is not the one trusted here".to_owned(),
        K::InvalidAudience => "the token is for another audience (aud)".to_owned(),
        K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        K::InvalidAlgorithm => "the token's algorithm does not match the key".to_owned(),
        K::InvalidToken | K::Base64(_) | K::Json(_) | K::Utf8(_) => {
            "not a JWT (three base64url parts)".to_owned()
        }
        _ => "the token cannot be verified".to_owned(),
    }
}

/// The user of verified `claims`.
fn user_of(mut claims: Map<String, Value>) -> Result<User, JwtError> {
    let identity = match claims.remove("sub") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        _ => {
            return Err(JwtError::Token(
                "the token's `sub` (the user's identity) must be a non-empty string".to_owned(),
            ));
        }
    };
    let permissions = match (claims.remove("permissions"), claims.remove("scope")) {
        (Some(Value::Array(list)), _) => list
            .into_iter()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        (_, Some(Value::String(scope))) => scope.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    let display_name = claims
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut user = User::new(identity).with_permissions(permissions);
    user.display_name = display_name;
    user.claims = claims;
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn now() -> u64 {
        jsonwebtoken::get_current_timestamp()
    }

    fn hs256(claims: Value, secret: &[u8]) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(secret).unwrap(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn hs256_tokens_name_their_user_and_expire() {
        assert_eq!(
            Jwt::new(JwtKeys::Secret(b"short".to_vec())).await.err(),
            Some(JwtError::WeakSecret(5))
        );
        let jwt = Jwt::new(JwtKeys::Secret(SECRET.to_vec())).await.unwrap();
        let token = hs256(
            json!({"sub": "ada", "exp": now() + 60, "scope": "threads:read store:*", "name": "Ada", "org": "acme"}),
            SECRET,
        );
        let user = jwt.verify(&token).await.unwrap();
        assert_eq!(user.identity, "ada");
        assert_eq!(user.permissions, vec!["threads:read", "store:*"]);
        assert_eq!(user.display_name.as_deref(), Some("Ada"));
        assert_eq!(user.claims["org"], "acme");
        assert!(!user.operator);

        let expired = hs256(json!({"sub": "ada", "exp": now() - 120}), SECRET);
        assert!(
            jwt.verify(&expired)
                .await
                .unwrap_err()
                .to_string()
                .contains("expired")
        );
        let forged = hs256(
            json!({"sub": "ada", "exp": now() + 60}),
            b"another-secret-of-32-bytes-long!!",
        );
        assert!(
            jwt.verify(&forged)
                .await
                .unwrap_err()
                .to_string()
                .contains("signature")
        );
        let no_exp = hs256(json!({"sub": "ada"}), SECRET);
        assert!(
            jwt.verify(&no_exp)
                .await
                .unwrap_err()
                .to_string()
                .contains("exp")
        );
        let no_sub = hs256(json!({"exp": now() + 60}), SECRET);
        assert!(jwt.verify(&no_sub).await.is_err());
        assert!(jwt.verify("not.a.token").await.is_err());
        // `alg: none` and other algorithms are refused before any check.
        let none = format!(
            "{}.{}.",
            "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0", "eyJzdWIiOiJhZGEiLCJleHAiOjk5OTk5OTk5OTl9"
        );
        assert!(jwt.verify(&none).await.is_err());
    }

    #[tokio::test]
    async fn issuer_and_audience_are_checked_when_configured() {
        let jwt = Jwt::new(JwtKeys::Secret(SECRET.to_vec()))
            .await
            .unwrap()
            .issuer("https://id.example")
            .audience("agentgraph");
        let good = hs256(
            json!({"sub": "ada", "exp": now() + 60, "iss": "https://id.example", "aud": "agentgraph"}),
            SECRET,
        );
        assert!(jwt.verify(&good).await.is_ok());
        let other_iss = hs256(
            json!({"sub": "ada", "exp": now() + 60, "iss": "https://evil.example", "aud": "agentgraph"}),
            SECRET,
        );
        assert!(
            jwt.verify(&other_iss)
                .await
                .unwrap_err()
                .to_string()
                .contains("issuer")
        );
        let other_aud = hs256(
            json!({"sub": "ada", "exp": now() + 60, "iss": "https://id.example", "aud": "x"}),
            SECRET,
        );
        assert!(
            jwt.verify(&other_aud)
                .await
                .unwrap_err()
                .to_string()
                .contains("audience")
        );
    }

    async fn jwks(dir: &std::path::Path) -> Jwt {
        let path = dir.join("jwks.json");
        std::fs::write(&path, include_str!("../../tests/fixtures/jwt/jwks.json")).unwrap();
        Jwt::new(JwtKeys::Jwks(path)).await.unwrap()
    }

    fn signed(alg: Algorithm, kid: Option<&str>, pem: &str, claims: Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        let key = match alg {
            Algorithm::ES256 => EncodingKey::from_ec_pem(pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .unwrap();
        encode(&header, &claims, &key).unwrap()
    }

    #[tokio::test]
    async fn jwks_keys_verify_es256_and_rs256_by_kid() {
        let dir = std::env::temp_dir().join(format!("agentgraph-jwks-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let jwt = jwks(&dir).await;
        let es = include_str!("../../tests/fixtures/jwt/es256.pem");
        let rs = include_str!("../../tests/fixtures/jwt/rs256.pem");
        let claims = json!({"sub": "ada", "exp": now() + 60});
        let es_token = signed(Algorithm::ES256, Some("test-es256"), es, claims.clone());
        assert_eq!(jwt.verify(&es_token).await.unwrap().identity, "ada");
        let rs_token = signed(Algorithm::RS256, Some("test-rs256"), rs, claims.clone());
        assert_eq!(jwt.verify(&rs_token).await.unwrap().identity, "ada");
        // The wrong key for a kid, an unknown kid, no kid among two keys, and HS256 signed
        // with the public key's bytes (the classic confusion) are all refused.
        let swapped = signed(Algorithm::RS256, Some("test-es256"), rs, claims.clone());
        assert!(jwt.verify(&swapped).await.is_err());
        let unknown = signed(Algorithm::ES256, Some("nope"), es, claims.clone());
        assert!(
            jwt.verify(&unknown)
                .await
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
        let anonymous = signed(Algorithm::ES256, None, es, claims.clone());
        assert!(jwt.verify(&anonymous).await.is_err());
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("test-es256".into());
        let confused = encode(
            &header,
            &claims,
            &EncodingKey::from_secret(es.as_bytes()).unwrap(),
        )
        .unwrap();
        assert!(jwt.verify(&confused).await.is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_bad_jwks_file_stops_the_start() {
        let dir = std::env::temp_dir().join(format!("agentgraph-jwks-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("jwks.json");
        std::fs::write(&path, "{\"keys\": []}").unwrap();
        assert!(Jwt::new(JwtKeys::Jwks(path.clone())).await.is_err());
        std::fs::write(&path, "{\n\"keys\": [\n  oops\n]}").unwrap();
        let e = Jwt::new(JwtKeys::Jwks(path))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
