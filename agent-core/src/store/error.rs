//! `StoreError`: what a store refused or failed at, with what to do about it.

use crate::error::BoxError;

/// Everything a [`Store`](super::Store) call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A namespace the store cannot hold: empty, a label empty or containing `.`, or a first
    /// label of `langgraph` (reserved).
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The namespace as given.
        namespace: Vec<String>,
        /// What is wrong with it.
        reason: String,
    },
    /// A search filter the store cannot apply (an unknown `$` operator, a comparison with a
    /// value that has no order).
    #[error("invalid filter on `{field}`: {reason}")]
    InvalidFilter {
        /// The filtered field (a dotted path).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value the store cannot hold (not a JSON object, an index path that does not parse).
    #[error("invalid value for key `{key}`: {reason}")]
    InvalidValue {
        /// The item's key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A semantic search or an index choice on a store configured without an index.
    #[error(
        "`{what}` needs an index: open the store with an `IndexConfig` (dims, embed, fields) to embed and rank items"
    )]
    NoIndex {
        /// The op that needed one.
        what: &'static str,
    },
    /// The embedding function failed or answered with the wrong shape.
    #[error("embedding {count} text(s) failed: {source}")]
    Embed {
        /// How many texts were sent.
        count: usize,
        /// The embedder's error.
        #[source]
        source: BoxError,
    },
    /// The backend (SQLite, PostgreSQL, ...) failed.
    #[error("{backend} store: {detail}")]
    Storage {
        /// Which backend.
        backend: &'static str,
        /// What it said.
        detail: String,
    },
}

impl StoreError {
    pub(crate) fn namespace(namespace: &[String], reason: impl Into<String>) -> Self {
        StoreError::InvalidNamespace {
            namespace: namespace.to_vec(),
            reason: reason.into(),
        }
    }

    pub(crate) fn filter(field: &str, reason: impl Into<String>) -> Self {
        StoreError::InvalidFilter {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }
}

impl From<StoreError> for crate::GraphError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Storage { backend, detail } => {
                crate::GraphError::Storage { backend, detail }
            }
            other => crate::GraphError::Storage {
                backend: "store",
                detail: other.to_string(),
            },
        }
    }
}
