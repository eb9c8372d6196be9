//! Which events a subscription wants: its channels, namespace prefixes and depth, read as
//! langgraph-api reads them (an entry that does not fit is dropped, not refused; only an
//! empty or unknown channel list is an error).

use serde_json::Value;

/// The channels a subscription may name (besides `custom:<name>`).
const CHANNELS: [&str; 9] = [
    "values",
    "updates",
    "messages",
    "tools",
    "custom",
    "lifecycle",
    "input",
    "tasks",
    "checkpoints",
];

/// A subscription's filter.
#[derive(Debug, Clone)]
pub(super) struct Filter {
    channels: Vec<String>,
    namespaces: Vec<Vec<String>>,
    depth: Option<usize>,
}

/// Why a channel list was refused.
pub(super) enum Refused {
    /// Missing or empty.
    Empty,
    /// Names a channel that does not exist (the first few, as JSON).
    Unknown(Vec<String>),
}

impl Filter {
    /// The filter of a body's `channels`, `namespaces`, `depth`.
    pub(super) fn read(body: &Value) -> Result<Filter, Refused> {
        let channels: Vec<&Value> = match body.get("channels") {
            Some(Value::Array(a)) if !a.is_empty() => a.iter().collect(),
            _ => return Err(Refused::Empty),
        };
        let unknown: Vec<String> = channels
            .iter()
            .filter(|c| !c.as_str().is_some_and(valid))
            .take(5)
            .map(|c| c.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(Refused::Unknown(unknown));
        }
        let namespaces = body
            .get("namespaces")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|ns| {
                        ns.as_array()?
                            .iter()
                            .map(|s| s.as_str().map(str::to_owned))
                            .collect::<Option<Vec<String>>>()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let depth = body
            .get("depth")
            .and_then(Value::as_u64)
            .map(|d| d as usize);
        Ok(Filter {
            channels: channels
                .iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect(),
            namespaces,
            depth,
        })
    }

    /// Whether an event of `method` in `namespace` with `data` passes.
    pub(super) fn wants(&self, method: &str, namespace: &[String], data: &Value) -> bool {
        let channel = if method == "input.requested" {
            "input"
        } else {
            method
        };
        let by_channel = self
            .channels
            .iter()
            .any(|c| match c.strip_prefix("custom:") {
                Some(name) => channel == "custom" && data["name"].as_str() == Some(name),
                None => c == channel,
            });
        if !by_channel {
            return false;
        }
        self.namespaces.is_empty()
            || self.namespaces.iter().any(|p| {
                prefix_of(p, namespace) && self.depth.is_none_or(|d| namespace.len() - p.len() <= d)
            })
    }
}

fn valid(channel: &str) -> bool {
    CHANNELS.contains(&channel)
        || channel
            .strip_prefix("custom:")
            .is_some_and(|n| !n.is_empty())
}

/// Whether `prefix` starts `ns`: segment by segment equal, or a segment without `:` naming
/// the node of any task (`sub` matches `sub:<task>`).
fn prefix_of(prefix: &[String], ns: &[String]) -> bool {
    prefix.len() <= ns.len()
        && prefix
            .iter()
            .zip(ns)
            .all(|(p, n)| p == n || (!p.contains(':') && n.split(':').next() == Some(p.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ns(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn namespaces_match_by_prefix_and_depth() {
        let f = Filter::read(&json!({"channels": ["messages"], "namespaces": [[]], "depth": 0}))
            .ok()
            .unwrap();
        assert!(f.wants("messages", &[], &json!({})));
        assert!(!f.wants("messages", &ns(&["sub:1"]), &json!({})));
        assert!(!f.wants("values", &[], &json!({})));
        let f =
            Filter::read(&json!({"channels": ["lifecycle", "input"], "namespaces": [["sub"], 3]}))
                .ok()
                .unwrap();
        assert!(f.wants("lifecycle", &ns(&["sub:1", "x:2"]), &json!({})));
        assert!(f.wants("input.requested", &ns(&["sub:1"]), &json!({})));
        assert!(!f.wants("lifecycle", &[], &json!({})));
        let f = Filter::read(&json!({"channels": ["custom:progress"]}))
            .ok()
            .unwrap();
        assert!(f.wants("custom", &[], &json!({"name": "progress"})));
        assert!(!f.wants("custom", &[], &json!({"payload": 1})));
    }

    #[test]
    fn empty_and_unknown_channels_are_refused() {
        assert!(matches!(Filter::read(&json!({})), Err(Refused::Empty)));
        assert!(matches!(
            Filter::read(&json!({"channels": ["values", "debug", 3]})),
            Err(Refused::Unknown(u)) if u == ["\"debug\"", "3"]
        ));
    }
}
