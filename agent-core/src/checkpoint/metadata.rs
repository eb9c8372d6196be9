//! [`CheckpointMetadata`]: a checkpoint's metadata, typed.
//!
//! Checkpoints store their metadata as one JSON object (LangGraph's shape: `source`, `step`,
//! `run_id`, `writes`, `parents`, plus the run's own `RunConfig::metadata` entries), so savers
//! can filter on it and other tools can read it. The executor writes one for every
//! checkpoint, so it is typed rather than a JSON map: building it costs no strings (the run id
//! is shared), and it serializes straight into that object. Entries other than the
//! executor's stay in `extra`; [`CheckpointMetadata::to_json`] gives the stored shape back, so
//! nothing is lost either way.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Source;

/// A checkpoint's metadata with the executor's entries typed
/// ([`CheckpointRecord::metadata`](super::CheckpointRecord::metadata), and
/// [`StateSnapshot::meta`](crate::StateSnapshot::meta) for a snapshot's).
///
/// ```
/// use agent_core::checkpoint::{CheckpointMetadata, Source};
///
/// let stored = serde_json::json!({"source": "loop", "step": 2, "run_id": "r1", "user": "ada"});
/// let meta = CheckpointMetadata::from_json(&stored);
/// assert_eq!(meta.source, Some(Source::Loop));
/// assert_eq!(meta.step, Some(2));
/// assert_eq!(meta.run_id.as_deref(), Some("r1"));
/// assert_eq!(meta.extra["user"], "ada");
/// assert_eq!(meta.to_json(), stored);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CheckpointMetadata {
    /// Why the checkpoint was written (`source`).
    pub source: Option<Source>,
    /// The super-step it was written after (`step`; -1 for a thread's first input).
    pub step: Option<i64>,
    /// The run that wrote it (`run_id`).
    pub run_id: Option<Arc<str>>,
    /// The checkpoint of each enclosing graph, by namespace (`parents`, LangGraph's; empty
    /// when not recorded).
    pub parents: BTreeMap<String, String>,
    /// Each node's update of the step, when the run asked for it (`writes`, see
    /// `RunConfig::writes_metadata`).
    pub writes: Option<Value>,
    /// Every other entry: the run's own `RunConfig::metadata`, and entries this version does
    /// not know (an unreadable known entry stays here too, as stored).
    pub extra: Map<String, Value>,
}

impl CheckpointMetadata {
    /// Reads stored metadata; never fails (a non-object reads as empty, an entry of an
    /// unexpected shape stays in `extra`).
    pub fn from_json(value: &Value) -> Self {
        let mut extra = value.as_object().cloned().unwrap_or_default();
        CheckpointMetadata {
            source: take(&mut extra, "source"),
            step: take(&mut extra, "step"),
            run_id: take::<String>(&mut extra, "run_id").map(Arc::from),
            parents: take(&mut extra, "parents").unwrap_or_default(),
            writes: extra.remove("writes"),
            extra,
        }
    }

    /// The stored shape: one JSON object with the entries set (and `parents` only when it
    /// has any), plus `extra`.
    pub fn to_json(&self) -> Value {
        let mut map = self.extra.clone();
        if let Some(source) = self.source {
            map.insert("source".to_owned(), source.as_str().into());
        }
        if let Some(step) = self.step {
            map.insert("step".to_owned(), step.into());
        }
        if let Some(run_id) = &self.run_id {
            map.insert("run_id".to_owned(), Value::from(&**run_id));
        }
        if !self.parents.is_empty() {
            let parents = self
                .parents
                .iter()
                .map(|(ns, id)| (ns.clone(), Value::from(id.clone())))
                .collect();
            map.insert("parents".to_owned(), Value::Object(parents));
        }
        if let Some(writes) = &self.writes {
            map.insert("writes".to_owned(), writes.clone());
        }
        Value::Object(map)
    }
}

impl CheckpointMetadata {
    /// Whether an entry of `extra` is shadowed by a typed entry that is set.
    fn shadows(&self, key: &str) -> bool {
        match key {
            "source" => self.source.is_some(),
            "step" => self.step.is_some(),
            "run_id" => self.run_id.is_some(),
            "parents" => !self.parents.is_empty(),
            "writes" => self.writes.is_some(),
            _ => false,
        }
    }
}

/// The stored JSON object ([`to_json`](CheckpointMetadata::to_json)'s entries), written
/// without building it.
impl serde::Serialize for CheckpointMetadata {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let extra = || self.extra.iter().filter(|(k, _)| !self.shadows(k));
        let typed = [
            self.source.is_some(),
            self.step.is_some(),
            self.run_id.is_some(),
            !self.parents.is_empty(),
            self.writes.is_some(),
        ];
        let len = extra().count() + typed.iter().filter(|set| **set).count();
        let mut map = s.serialize_map(Some(len))?;
        for (k, v) in extra() {
            map.serialize_entry(k, v)?;
        }
        if let Some(source) = self.source {
            map.serialize_entry("source", source.as_str())?;
        }
        if let Some(step) = self.step {
            map.serialize_entry("step", &step)?;
        }
        if let Some(run_id) = &self.run_id {
            map.serialize_entry("run_id", &**run_id)?;
        }
        if !self.parents.is_empty() {
            map.serialize_entry("parents", &self.parents)?;
        }
        if let Some(writes) = &self.writes {
            map.serialize_entry("writes", writes)?;
        }
        map.end()
    }
}

/// Reads the stored JSON object ([`from_json`](CheckpointMetadata::from_json)).
impl<'de> serde::Deserialize<'de> for CheckpointMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|value| CheckpointMetadata::from_json(&value))
    }
}

/// Takes `key` out of `map` when it reads as a `T`; leaves it in place otherwise.
fn take<T: DeserializeOwned>(map: &mut Map<String, Value>, key: &str) -> Option<T> {
    let value = serde_json::from_value(map.get(key)?.clone()).ok()?;
    map.remove(key);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_and_unreadable_entries_stay_in_extra() {
        let stored = json!({
            "source": "rewind",
            "step": 3,
            "parents": {"": "cp-1"},
            "writes": {"a": {"x": 1}},
            "tag": [1, 2],
        });
        let meta = CheckpointMetadata::from_json(&stored);
        assert_eq!(meta.source, None);
        assert_eq!(meta.extra["source"], "rewind");
        assert_eq!(meta.step, Some(3));
        assert_eq!(meta.parents[""], "cp-1");
        assert_eq!(meta.writes, Some(json!({"a": {"x": 1}})));
        assert_eq!(meta.extra["tag"], json!([1, 2]));
        assert_eq!(meta.to_json(), stored);
        assert_eq!(serde_json::to_value(&meta).unwrap(), stored);
        let packed = rmp_serde::to_vec_named(&meta).unwrap();
        assert_eq!(
            rmp_serde::from_slice::<CheckpointMetadata>(&packed).unwrap(),
            meta
        );
        assert_eq!(
            CheckpointMetadata::from_json(&json!(null)),
            CheckpointMetadata::default()
        );
    }
}
