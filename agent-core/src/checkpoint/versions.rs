//! [`Versions`]: which version of each field a checkpoint holds.
//!
//! Every checkpoint carries one, and most checkpoints change one field or none, so it is
//! built for every super-step: versions are shared strings (`Arc<str>`), the state's field
//! names its own `&'static str`s, and the executor writes them in name order from what it
//! already holds, so a checkpoint's versions cost one small vector and a reference count per
//! field, not two strings. (The names were shared `Arc<str>`s of the compiled graph: every
//! checkpoint of every run on every core bumped the same counts, and 75% of the samples of
//! building a `fanout_to_subgraph` child's versions sat on that `lock incq`, the line moving
//! between the cores.)

use std::sync::Arc;

/// A checkpoint's field versions: field name -> version (the id of the checkpoint that wrote
/// the value), sorted by name. Stored as a JSON object (`{"messages": "<id>", ...}`).
///
/// ```
/// use agent_core::checkpoint::Versions;
///
/// let versions: Versions = [("messages", "v2"), ("count", "v1")].into_iter().collect();
/// assert_eq!(versions.get("messages"), Some("v2"));
/// let names: Vec<&str> = versions.iter().map(|(field, _)| field).collect();
/// assert_eq!(names, ["count", "messages"]);
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Versions(Vec<(Name, Arc<str>)>);

/// A field's name in [`Versions`]: one of the state's own (no count to bump) or one read
/// from storage. Compared and hashed as the string it is.
#[derive(Clone)]
pub(crate) enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Shared(name) => name,
        }
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl Versions {
    /// No fields.
    pub fn new() -> Self {
        Versions(Vec::new())
    }

    /// Entries already sorted by name, without duplicates (the executor's field order).
    pub(crate) fn from_sorted(entries: Vec<(Name, Arc<str>)>) -> Self {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        Versions(entries)
    }

    /// The version of `field`, if it has a value.
    pub fn get(&self, field: &str) -> Option<&str> {
        self.position(field).ok().map(|i| &*self.0[i].1)
    }

    /// The version of `field` as the shared string it is kept in.
    pub fn get_shared(&self, field: &str) -> Option<&Arc<str>> {
        self.position(field).ok().map(|i| &self.0[i].1)
    }

    /// Whether `field` has a value.
    pub fn contains(&self, field: &str) -> bool {
        self.position(field).is_ok()
    }

    /// Sets the version of `field`; returns the one it replaces.
    pub fn insert(
        &mut self,
        field: impl Into<Arc<str>>,
        version: impl Into<Arc<str>>,
    ) -> Option<Arc<str>> {
        let field = Name::Shared(field.into());
        let version = version.into();
        match self.position(&field) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, version)),
            Err(i) => {
                self.0.insert(i, (field, version));
                None
            }
        }
    }

    /// (field, version) pairs in field-name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(f, v)| (&**f, &**v))
    }

    /// How many fields have a value.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no field has a value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The (field, version) pairs as they are kept.
    pub(crate) fn entries(&self) -> &[(Name, Arc<str>)] {
        &self.0
    }

    fn position(&self, field: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(f, _)| (**f).cmp(field))
    }
}

/// A state's field names as shared strings, in field order, with the order [`Versions`] keeps
/// them in: built once per compiled graph, so writing a checkpoint's versions allocates no
/// names.
#[derive(Debug)]
pub(crate) struct FieldNames {
    names: Vec<&'static str>,
    /// Field indices sorted by name, with `None` where the table of shared values sorts.
    sorted: Vec<Option<usize>>,
    shared: &'static str,
}

impl FieldNames {
    pub(crate) fn new(fields: &[crate::state::FieldInfo], shared: &'static str) -> Self {
        let names: Vec<&'static str> = fields.iter().map(|f| f.name).collect();
        let mut sorted: Vec<Option<usize>> = (0..names.len()).map(Some).chain([None]).collect();
        sorted.sort_by(|a, b| {
            let name = |i: &Option<usize>| i.map_or(shared, |i| names[i]);
            name(a).cmp(name(b))
        });
        FieldNames {
            names,
            sorted,
            shared,
        }
    }

    /// The versions of a checkpoint: each field's version (by field index) and the shared
    /// table's, in name order.
    pub(crate) fn versions(
        &self,
        versions: &[Option<Arc<str>>],
        shared: Option<&Arc<str>>,
    ) -> Versions {
        let mut entries = Vec::with_capacity(self.names.len() + 1);
        for slot in &self.sorted {
            match slot {
                Some(i) => {
                    if let Some(v) = &versions[*i] {
                        entries.push((Name::Static(self.names[*i]), v.clone()));
                    }
                }
                None => {
                    if let Some(v) = shared {
                        entries.push((Name::Static(self.shared), v.clone()));
                    }
                }
            }
        }
        Versions::from_sorted(entries)
    }
}

impl<K: Into<Arc<str>>, V: Into<Arc<str>>> FromIterator<(K, V)> for Versions {
    /// Collects pairs in any order; a field given twice keeps its last version.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut entries: Vec<(Name, Arc<str>)> = iter
            .into_iter()
            .map(|(k, v)| (Name::Shared(k.into()), v.into()))
            .collect();
        // Stable: of equal names the last stays last, and dedup keeps the first of a run.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.reverse();
        entries.dedup_by(|a, b| a.0 == b.0);
        entries.reverse();
        Versions(entries)
    }
}

impl<'a> IntoIterator for &'a Versions {
    type Item = (&'a str, &'a str);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a str)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl std::fmt::Debug for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Versions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Versions {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Versions;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of field names to versions")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Versions, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(256));
                while let Some((SharedStr(k), SharedStr(v))) = map.next_entry()? {
                    entries.push((k, v));
                }
                Ok(entries.into_iter().collect())
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A string read straight into an `Arc<str>` (borrowed or owned input alike).
struct SharedStr(Arc<str>);

impl<'de> serde::Deserialize<'de> for SharedStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = SharedStr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SharedStr, E> {
                Ok(SharedStr(Arc::from(v)))
            }
        }
        d.deserialize_str(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_sorted_with_the_last_version_of_a_field() {
        let v: Versions = [("b", "1"), ("a", "2"), ("b", "3")].into_iter().collect();
        assert_eq!(v.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "3")]);
        assert_eq!(v.get("b"), Some("3"));
        assert_eq!(v.get("c"), None);
    }

    #[test]
    fn round_trips_as_a_json_object_and_as_messagepack() {
        let mut v = Versions::new();
        assert_eq!(v.insert("messages", "v1"), None);
        assert_eq!(v.insert("count", "v2").as_deref(), None);
        assert_eq!(v.insert("messages", "v3").as_deref(), Some("v1"));
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(json, r#"{"count":"v2","messages":"v3"}"#);
        assert_eq!(serde_json::from_str::<Versions>(&json).unwrap(), v);
        let escaped: Versions = serde_json::from_str(r#"{"a\"b":"v\u0031"}"#).unwrap();
        assert_eq!(escaped.get("a\"b"), Some("v1"));
        let packed = rmp_serde::to_vec(&v).unwrap();
        assert_eq!(rmp_serde::from_slice::<Versions>(&packed).unwrap(), v);
        assert!(serde_json::from_str::<Versions>(r#"{"a": 1}"#).is_err());
    }
}
