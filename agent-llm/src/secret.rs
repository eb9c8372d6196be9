//! [`SecretString`]: an API key that never shows itself in `Debug`, logs or errors.
//!
//! It has no `Display` and no `Serialize`, so it cannot end up in a log line or a checkpoint
//! by accident; the one way to read it is [`SecretString::expose_secret`].

use std::fmt;

/// A secret (API key). `Debug` prints `SecretString([REDACTED])`.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        SecretString(secret.into())
    }

    /// The secret itself; call it only to put the secret where it is used.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Whether the secret is the empty string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString([REDACTED])")
    }
}

impl From<String> for SecretString {
    fn from(s: String) -> Self {
        SecretString(s)
    }
}

impl From<&str> for SecretString {
    fn from(s: &str) -> Self {
        SecretString(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let s = SecretString::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), "SecretString([REDACTED])");
        assert_eq!(s.expose_secret(), "sk-very-secret");
    }
}
