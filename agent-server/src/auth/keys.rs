//! API keys in `x-api-key`: the operator's single key (all access, as `--api-key` always
//! was), and a keys file that maps keys to identities and permissions, read again when it
//! changes (checked at most once a second, on use), so keys are added and revoked without
//! a restart.
//!
//! Every key is kept as its SHA-256 and compared in constant time; a file may hold the
//! hashes only (`sha256 = "..."`), so it never needs the keys themselves:
//!
//! ```toml
//! [[key]]
//! key = "ada-key-5f1c..."        # or: sha256 = "<hex of the key's SHA-256>"
//! identity = "ada"
//! permissions = ["threads:read", "threads:write", "store:*"]   # optional
//!
//! [[key]]
//! sha256 = "9f86d081884c7d65..."
//! identity = "ops"
//! operator = true               # sees every user's threads, runs, crons and store
//! ```

use std::path::PathBuf;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::User;
use super::watched::{Watched, at_line};

/// A key that does not make a keys file or an operator key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    /// The operator key is empty.
    #[error(
        "the API key is empty: an empty key would let anyone in; pass a real key or none (loopback only)"
    )]
    Empty,
    /// The keys file cannot be used (the message says where, never the keys).
    #[error("keys file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// One key, as the server keeps it: its SHA-256 and its user.
#[derive(Debug, Clone)]
pub struct KeyEntry {
    hash: [u8; 32],
    user: User,
}

impl KeyEntry {
    /// The key `key` for `user`.
    pub fn new(key: &str, user: User) -> Result<Self, KeysError> {
        if key.trim().is_empty() {
            return Err(KeysError::Empty);
        }
        Ok(KeyEntry {
            hash: sha256(key.as_bytes()),
            user,
        })
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The keys the server takes in `x-api-key`.
#[derive(Default)]
pub struct ApiKeys {
    operator: Option<KeyEntry>,
    file: Option<Watched<Vec<KeyEntry>>>,
}

impl ApiKeys {
    /// The operator's key: whoever sends it may do anything (identity `operator`).
    pub fn operator(key: &str) -> Result<Self, KeysError> {
        ApiKeys::default().with_operator(key)
    }

    /// The keys of the file at `path` (read now: a file that cannot be used is an error).
    pub async fn file(path: impl Into<PathBuf>) -> Result<Self, KeysError> {
        let path = path.into();
        let file = Watched::open(path.clone(), parse_file)
            .await
            .map_err(|message| KeysError::File {
                path: path.display().to_string(),
                message,
            })?;
        Ok(ApiKeys {
            operator: None,
            file: Some(file),
        })
    }

    /// These keys and the operator's `key`.
    pub fn with_operator(mut self, key: &str) -> Result<Self, KeysError> {
        self.operator = Some(KeyEntry::new(key, User::operator("operator"))?);
        Ok(self)
    }

    /// The user whose key `sent` is; every key's hash is compared, in constant time.
    pub async fn check(&self, sent: &[u8]) -> Option<User> {
        let hash = sha256(sent);
        let find = |entries: &mut dyn Iterator<Item = &KeyEntry>| {
            let mut found = None;
            for entry in entries {
                if bool::from(entry.hash.ct_eq(&hash)) && found.is_none() {
                    found = Some(entry.user.clone());
                }
            }
            found
        };
        let operator = find(&mut self.operator.iter());
        let listed = match &self.file {
            Some(file) => file.with(|entries| find(&mut entries.iter())).await,
            None => None,
        };
        operator.or(listed)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    key: Vec<RawKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    key: Option<String>,
    sha256: Option<String>,
    identity: String,
    display_name: Option<String>,
    #[serde(default)]
    permissions: Vec<String>,
    #[serde(default)]
    operator: bool,
}

fn parse_file(text: &str) -> Result<Vec<KeyEntry>, String> {
    // toml's messages quote the offending line, which may hold a key: say only where.
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        format!(
            "not a keys file{}: it holds [[key]] tables with `key` or `sha256`, `identity`, and optionally `permissions`, `display_name`, `operator`",
            at_line(text, e.span().map(|s| s.start))
        )
    })?;
    let mut entries = Vec::with_capacity(raw.key.len());
    for (i, k) in raw.key.into_iter().enumerate() {
        let n = i + 1;
        if k.identity.trim().is_empty() {
            return Err(format!("key {n} has an empty identity"));
        }
        let mut user = if k.operator {
            User::operator(k.identity)
        } else {
            User::new(k.identity)
        };
        user.permissions = k.permissions;
        user.display_name = k.display_name;
        let entry = match (k.key, k.sha256) {
            (Some(key), None) => KeyEntry::new(&key, user)
                .map_err(|_| format!("key {n} is empty: an empty key would let anyone in"))?,
            (None, Some(hex)) => KeyEntry {
                hash: parse_hex(&hex)
                    .ok_or_else(|| format!("key {n}: sha256 must be 64 hexadecimal digits"))?,
                user,
            },
            _ => return Err(format!("key {n} needs exactly one of `key` and `sha256`")),
        };
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[tokio::test]
    async fn the_operator_key_is_all_access_and_never_empty() {
        assert_eq!(ApiKeys::operator("  ").err(), Some(KeysError::Empty));
        let keys = ApiKeys::operator("s3cret").unwrap();
        assert!(keys.check(b"s3cret").await.unwrap().operator);
        assert!(keys.check(b"s3cret ").await.is_none());
        assert!(keys.check(b"").await.is_none());
    }

    #[tokio::test]
    async fn a_keys_file_maps_keys_and_hashes_to_users_and_is_read_again_when_it_changes() {
        let dir = std::env::temp_dir().join(format!("agentgraph-keys-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.toml");
        let bob_hash = hex(&sha256(b"bob-key"));
        std::fs::write(
            &path,
            format!(
                "[[key]]\nkey = \"ada-key\"\nidentity = \"ada\"\npermissions = [\"threads:read\"]\n\n[[key]]\nsha256 = \"{bob_hash}\"\nidentity = \"bob\"\noperator = true\n"
            ),
        )
        .unwrap();
        let keys = ApiKeys::file(&path).await.unwrap();
        let ada = keys.check(b"ada-key").await.unwrap();
        assert_eq!(ada.identity, "ada");
        assert_eq!(ada.permissions, vec!["threads:read".to_owned()]);
        assert!(!ada.operator);
        assert!(keys.check(b"bob-key").await.unwrap().operator);
        assert!(keys.check(b"eve").await.is_none());

        // Revoke ada, add carol; a broken file later keeps what was read.
        std::fs::write(
            &path,
            "[[key]]\nkey = \"carol-key\"\nidentity = \"carol\"\n",
        )
        .unwrap();
        keys.file.as_ref().unwrap().expire().await;
        assert!(keys.check(b"ada-key").await.is_none());
        assert_eq!(keys.check(b"carol-key").await.unwrap().identity, "carol");
        std::fs::write(
            &path,
            "[[key]]\nkey = \"secret-in-a-broken-file\"\nidentity = ",
        )
        .unwrap();
        keys.file.as_ref().unwrap().expire().await;
        assert_eq!(keys.check(b"carol-key").await.unwrap().identity, "carol");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_bad_keys_file_says_where_and_quotes_no_key() {
        let dir = std::env::temp_dir().join(format!("agentgraph-keys-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.toml");
        std::fs::write(
            &path,
            "[[key]]\nkey = \"hunter2-very-secret\"\nidentity = 7\n",
        )
        .unwrap();
        let e = ApiKeys::file(&path).await.err().unwrap().to_string();
        assert!(e.contains("line 3"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        std::fs::write(&path, "[[key]]\nkey = \"\"\nidentity = \"x\"\n").unwrap();
        let e = ApiKeys::file(&path).await.err().unwrap().to_string();
        assert!(e.contains("empty"), "{e}");
        std::fs::write(&path, "[[key]]\nidentity = \"x\"\n").unwrap();
        assert!(ApiKeys::file(&path).await.is_err());
        assert!(ApiKeys::file(dir.join("missing.toml")).await.is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
