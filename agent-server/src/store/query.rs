//! Searches and counts that the database answers: a [`Query`] says which documents of a kind
//! (filters that must all hold), in which order and which page; each backend turns it into
//! one statement, so listing ten threads reads about ten rows however many there are.
//!
//! Metadata filters keep LangGraph's meaning (a document matches when each filtered
//! top-level key is there with an equal JSON value). Both backends keep the top-level
//! metadata entries of threads and assistants whose values are short scalars in a side
//! table (`api_meta`: kind, id, key, value, and the document's `created_at` and `seq`),
//! kept by triggers on every write of a document, so such an entry is an index lookup:
//! counts read only that index, and a page in the default order (`created_at`) reads its
//! entries in order. Entries that are objects, arrays or long values are checked on the
//! rows the other filters leave (on PostgreSQL with `@>` on the `jsonb` metadata, which a
//! GIN index serves). The same triggers keep the number of threads and of assistants, and of
//! each kept entry's documents, so the count of all of them, or of one entry (one user's
//! threads; a page's total too) reads one row.

use serde_json::{Map, Value};

/// What a search or a count asks of one kind of document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Top-level metadata entries a document must have (LangGraph's containment).
    pub metadata: Map<String, Value>,
    /// The caller's scope: metadata entries a document must also have (`None`: any).
    pub owner: Option<Map<String, Value>>,
    /// Whether a document made by the server (`metadata.created_by == "system"`, the
    /// served graphs' assistants) passes the scope too.
    pub or_system: bool,
    /// Top-level entries of a thread's `values` (threads only).
    pub values: Map<String, Value>,
    /// The document's `status`.
    pub status: Option<String>,
    /// Only these ids.
    pub ids: Option<Vec<String>>,
    /// Top-level fields equal to these values (e.g. `graph_id`, `assistant_id`,
    /// `thread_id`, `enabled`: see the kind's fields).
    pub fields: Map<String, Value>,
    /// A case-insensitive part of the document's `name` (assistants).
    pub name: Option<String>,
    /// The field to sort by (one of the kind's); `None`: the order they were written.
    pub sort_by: Option<String>,
    /// Newest (or largest) first.
    pub descending: bool,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skipping this many.
    pub offset: usize,
}

/// The tables searched: the document kinds and crons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Assistants,
    Threads,
    Runs,
    Crons,
}

/// Where a field of a document is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    /// A column of the table (the id, a run's `thread_id` and `status`).
    Own(&'static str),
    /// A top-level field of the document.
    Doc(&'static str),
}

impl From<super::Kind> for Table {
    fn from(kind: super::Kind) -> Table {
        match kind {
            super::Kind::Assistant => Table::Assistants,
            super::Kind::Thread => Table::Threads,
            super::Kind::Run => Table::Runs,
        }
    }
}

impl Table {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Assistants => "api_assistants",
            Table::Threads => "api_threads",
            Table::Runs => "api_runs",
            Table::Crons => "api_crons",
        }
    }

    pub(crate) fn id(self) -> &'static str {
        match self {
            Table::Assistants => "assistant_id",
            Table::Threads => "thread_id",
            Table::Runs => "run_id",
            Table::Crons => "cron_id",
        }
    }

    /// Its name in the metadata side table, when its metadata is kept there.
    pub(crate) fn indexed(self) -> Option<&'static str> {
        match self {
            Table::Assistants => Some("assistant"),
            Table::Threads => Some("thread"),
            Table::Runs | Table::Crons => None,
        }
    }

    /// The field `name`, if the kind can be filtered or sorted by it.
    pub(crate) fn column(self, name: &str) -> Option<Column> {
        if name == self.id() {
            return Some(Column::Own(self.id()));
        }
        let doc: &[&'static str] = match self {
            Table::Assistants => &["graph_id", "name", "created_at", "updated_at"],
            Table::Threads => &["status", "created_at", "updated_at", "state_updated_at"],
            Table::Runs => &["assistant_id", "created_at", "updated_at"],
            Table::Crons => &[
                "assistant_id",
                "user_id",
                "enabled",
                "next_run_date",
                "end_time",
                "created_at",
                "updated_at",
            ],
        };
        match (self, name) {
            (Table::Runs, "thread_id" | "status") | (Table::Crons, "thread_id") => {
                return Some(if name == "status" {
                    Column::Own("status")
                } else {
                    Column::Own("thread_id")
                });
            }
            _ => {}
        }
        doc.iter().find(|f| **f == name).map(|f| Column::Doc(f))
    }

    /// Whether the field may be null (its order puts nulls last, as JSON `null` sorted
    /// after strings).
    pub(crate) fn nullable(self, name: &str) -> bool {
        matches!(
            (self, name),
            (Table::Crons, "thread_id" | "next_run_date" | "end_time")
        )
    }
}

/// Metadata entries whose key and value are short enough to be kept in the side table (the
/// triggers use the same bounds on the database's own text of the value, which is never
/// longer than this by more than the bound between them).
pub(crate) const KEY_BYTES: usize = 256;
/// See [`KEY_BYTES`]: the JSON text of the value, in bytes.
pub(crate) const VALUE_BYTES: usize = 512;
/// The bound the triggers put on the database's text of a value (bytes).
pub(crate) const STORED_VALUE_BYTES: usize = 1024;

/// A metadata entry read through the side table: its key and its value as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pair {
    pub key: String,
    pub json: String,
}

/// The metadata filter of a query split by how it is answered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Entries {
    /// Through the side table.
    pub pairs: Vec<Pair>,
    /// On the row (objects, arrays, long values, or a kind without the side table).
    pub checked: Map<String, Value>,
    /// Entries that cannot all hold (one key asked with two values): nothing matches.
    pub impossible: bool,
}

impl Entries {
    /// The entries of `metadata` for `table`.
    pub(crate) fn of<'a>(
        table: Table,
        metadata: impl IntoIterator<Item = (&'a String, &'a Value)>,
    ) -> Entries {
        let mut out = Entries::default();
        let mut seen = Map::new();
        for (key, value) in metadata {
            match seen.get(key) {
                Some(v) if v != value => out.impossible = true,
                Some(_) => continue,
                None => {
                    seen.insert(key.clone(), value.clone());
                }
            }
            let json = value.to_string();
            let scalar = !matches!(value, Value::Object(_) | Value::Array(_));
            if table.indexed().is_some()
                && scalar
                && key.len() <= KEY_BYTES
                && json.len() <= VALUE_BYTES
            {
                out.pairs.push(Pair {
                    key: key.clone(),
                    json,
                });
            } else {
                out.checked.insert(key.clone(), value.clone());
            }
        }
        out
    }
}

impl Query {
    /// Whether it filters nothing (then a count of threads or assistants reads a counter
    /// the triggers keep, not every row).
    pub(crate) fn everything(&self) -> bool {
        self.metadata.is_empty()
            && self.owner.is_none()
            && self.values.is_empty()
            && self.status.is_none()
            && self.ids.is_none()
            && self.fields.is_empty()
            && self.name.is_none()
    }

    /// The one metadata entry that is all the query asks (its count is kept).
    pub(crate) fn counted_pair(&self, table: Table) -> Option<Pair> {
        let required = self.required(table);
        let only_metadata = Query {
            metadata: Map::new(),
            owner: None,
            or_system: false,
            ..self.clone()
        }
        .everything();
        match (&required.pairs[..], only_metadata, self.or_system) {
            ([pair], true, false) if required.checked.is_empty() && !required.impossible => {
                Some(pair.clone())
            }
            _ => None,
        }
    }

    /// The metadata entries every match must have: the filter's and the scope's (when the
    /// scope has no exception for the server's own documents).
    pub(crate) fn required(&self, table: Table) -> Entries {
        let owner = match (&self.owner, self.or_system) {
            (Some(owner), false) => Some(owner),
            _ => None,
        };
        Entries::of(
            table,
            self.metadata.iter().chain(owner.into_iter().flatten()),
        )
    }

    /// The scope's entries when documents made by the server pass it too.
    pub(crate) fn scope_or_system(&self, table: Table) -> Option<Entries> {
        match (&self.owner, self.or_system) {
            (Some(owner), true) => Some(Entries::of(table, owner)),
            _ => None,
        }
    }
}

/// Whether `container` (a JSON object's text) has every entry of `filter` (a JSON object's
/// text) with an equal value: the check SQLite asks of rows (registered as a function).
pub(crate) fn has_entries(container: Option<&str>, filter: &str) -> bool {
    let Ok(Value::Object(filter)) = serde_json::from_str::<Value>(filter) else {
        return false;
    };
    if filter.is_empty() {
        return true;
    }
    let Some(Ok(Value::Object(container))) = container.map(serde_json::from_str::<Value>) else {
        return false;
    };
    filter.iter().all(|(k, v)| container.get(k) == Some(v))
}

/// Whether `haystack` holds `needle`, both lowercased (an assistant's name search).
pub(crate) fn contains_lowercase(haystack: Option<&str>, needle: &str) -> bool {
    haystack.is_some_and(|h| h.to_lowercase().contains(&needle.to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_go_through_the_side_table_and_the_rest_is_checked_on_rows() {
        let metadata = json!({"user": "u1", "n": 3, "tags": ["a"], "long": "x".repeat(600)});
        let owner = json!({"owner": "ada"});
        let q = Query {
            metadata: metadata.as_object().cloned().unwrap_or_default(),
            owner: owner.as_object().cloned(),
            ..Query::default()
        };
        let e = q.required(Table::Threads);
        let keys: Vec<&str> = e.pairs.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["n", "user", "owner"]);
        assert!(e.checked.contains_key("tags") && e.checked.contains_key("long"));
        assert!(!e.impossible);
        // Runs keep no side table: everything is checked on rows.
        assert!(q.required(Table::Runs).pairs.is_empty());
        // The scope asking another owner than the filter: nothing matches.
        let q = Query {
            metadata: json!({"owner": "bob"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            owner: owner.as_object().cloned(),
            ..Query::default()
        };
        assert!(q.required(Table::Threads).impossible);
    }

    #[test]
    fn rows_are_checked_with_json_equality() {
        assert!(has_entries(
            Some(r#"{"a":{"x":1,"y":2}}"#),
            r#"{"a":{"y":2,"x":1}}"#
        ));
        assert!(!has_entries(Some(r#"{"a":[1,2]}"#), r#"{"a":[1]}"#));
        assert!(!has_entries(None, r#"{"a":1}"#));
        assert!(has_entries(None, "{}"));
        assert!(contains_lowercase(Some("My Ägent"), "äg"));
    }
}
