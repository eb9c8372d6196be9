//! Namespaces: validation (LangGraph's rules), their stored text form (labels joined by `.`,
//! which no label may contain) and the prefix/suffix conditions of `list_namespaces`.

use super::StoreError;

/// The first label no namespace may have: LangGraph keeps it for itself.
pub const RESERVED_ROOT: &str = "langgraph";

/// A namespace from labels: `ns(["memories", "user-1"])`.
pub fn ns<I, L>(labels: I) -> Vec<String>
where
    I: IntoIterator<Item = L>,
    L: Into<String>,
{
    labels.into_iter().map(Into::into).collect()
}

/// Checks a namespace an item is stored under: not empty, no label empty or containing `.`,
/// and not under the reserved root `langgraph`.
pub fn validate_namespace(namespace: &[String]) -> Result<(), StoreError> {
    if namespace.is_empty() {
        return Err(StoreError::namespace(
            namespace,
            "a namespace cannot be empty",
        ));
    }
    validate_labels(namespace)?;
    if namespace[0] == RESERVED_ROOT {
        return Err(StoreError::namespace(
            namespace,
            "the root label `langgraph` is reserved; use another first label",
        ));
    }
    Ok(())
}

/// Checks the labels of a prefix (search, conditions): each non-empty, without `.`.
pub(crate) fn validate_labels(labels: &[String]) -> Result<(), StoreError> {
    for label in labels {
        if label.is_empty() {
            return Err(StoreError::namespace(
                labels,
                "labels cannot be empty strings",
            ));
        }
        if label.contains('.') {
            return Err(StoreError::namespace(
                labels,
                format!("label `{label}` contains `.`, which separates stored labels"),
            ));
        }
    }
    Ok(())
}

/// The stored form: labels joined by `.`.
pub(crate) fn join(namespace: &[String]) -> String {
    namespace.join(".")
}

/// The labels of a stored namespace.
pub(crate) fn split(joined: &str) -> Vec<String> {
    joined.split('.').map(str::to_owned).collect()
}

/// Whether `namespace` starts with `prefix` (all of it when the prefix is empty).
pub(crate) fn has_prefix(namespace: &[String], prefix: &[String]) -> bool {
    namespace.len() >= prefix.len() && namespace[..prefix.len()] == *prefix
}

/// Which end of a namespace a [`MatchCondition`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchType {
    /// The first labels.
    Prefix,
    /// The last labels.
    Suffix,
}

/// A condition on namespaces (LangGraph's `MatchCondition`): the namespace's first (or last)
/// labels are `path`, where a `*` label matches any one label.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MatchCondition {
    /// Prefix or suffix.
    pub match_type: MatchType,
    /// The labels, `*` for any one.
    pub path: Vec<String>,
}

impl MatchCondition {
    /// Namespaces starting with `path`.
    pub fn prefix(path: Vec<String>) -> Self {
        MatchCondition {
            match_type: MatchType::Prefix,
            path,
        }
    }

    /// Namespaces ending with `path`.
    pub fn suffix(path: Vec<String>) -> Self {
        MatchCondition {
            match_type: MatchType::Suffix,
            path,
        }
    }

    /// Whether `namespace` meets the condition.
    pub fn matches(&self, namespace: &[String]) -> bool {
        if namespace.len() < self.path.len() {
            return false;
        }
        let same = |(label, want): (&String, &String)| want == "*" || label == want;
        match self.match_type {
            MatchType::Prefix => namespace.iter().zip(&self.path).all(same),
            MatchType::Suffix => namespace.iter().rev().zip(self.path.iter().rev()).all(same),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_langgraph() {
        assert!(validate_namespace(&ns(["a", "b"])).is_ok());
        for bad in [
            ns::<[&str; 0], &str>([]),
            ns(["a", ""]),
            ns(["a.b"]),
            ns(["langgraph", "x"]),
        ] {
            assert!(validate_namespace(&bad).is_err(), "{bad:?}");
        }
        // Only the root is reserved.
        assert!(validate_namespace(&ns(["x", "langgraph"])).is_ok());
    }

    #[test]
    fn wildcards_match_one_label() {
        let n = ns(["users", "u1", "facts"]);
        assert!(MatchCondition::prefix(ns(["users", "*"])).matches(&n));
        assert!(MatchCondition::suffix(ns(["*", "facts"])).matches(&n));
        assert!(!MatchCondition::suffix(ns(["u1"])).matches(&n));
        assert!(!MatchCondition::prefix(ns(["users", "*", "facts", "*"])).matches(&n));
    }
}
