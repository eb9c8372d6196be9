//! Where `SqliteSaver` finds a checkpoint's blobs: by row number, not by a key index.
//!
//! Why: blobs used to be keyed by `(thread_id, ns, field, version)`, an index of long text
//! keys that every commit with a blob wrote into (its leaf pages, often a rebalance of three
//! of them, and their parents): on `fanout_to_subgraph` that index was an eighth of the pages
//! a run wrote to the log. Now the blobs table is a heap: rows only ever appended (SQLite
//! appends to a rowid table's last page without rebalancing), and each checkpoint row says in
//! `blob_rows` which row holds the version of each of its fields (`{"messages": 42}`); a
//! delta blob names its base's row in `base_row`. Reading a checkpoint follows those numbers.
//!
//! A checkpoint's unchanged fields point at rows written before it, so the saver keeps the
//! rows of the fields it wrote last, per thread and namespace ([`BlobRows`]); a namespace it
//! has not written since it was opened (another process wrote it, or a resumed thread) is
//! looked up in the parent checkpoint's `blob_rows`, then in the namespace's other
//! checkpoints, and last by a scan of the blobs' keys: slower, never wrong. A blob given again
//! for a version the saver remembers is not stored twice. A read follows the rows, and looks
//! a field the checkpoint does not list up by its key.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, params};

use super::Versions;
use crate::error::GraphError;

/// Namespaces remembered at most; past this the memory starts over (each costs a few strings
/// per field, and a forgotten one costs one lookup of its parent checkpoint).
const MAX_SCOPES: usize = 4096;

/// The rows of the latest blob versions this saver wrote, per thread and namespace.
#[derive(Default)]
pub(super) struct BlobRows {
    threads: HashMap<String, HashMap<String, Scope>>,
    scopes: usize,
}

/// One namespace's fields: (field, version, row), sorted by field.
#[derive(Default)]
struct Scope(Vec<(String, String, i64)>);

impl BlobRows {
    /// The row of `field` at `version`, if that is the version remembered.
    pub(super) fn get(&self, thread: &str, ns: &str, field: &str, version: &str) -> Option<i64> {
        let scope = self.threads.get(thread)?.get(ns)?;
        let i = scope.position(field).ok()?;
        let (_, v, row) = &scope.0[i];
        (v == version).then_some(*row)
    }

    /// Remembers that `field` at `version` is in `row`.
    pub(super) fn set(&mut self, thread: &str, ns: &str, field: &str, version: &str, row: i64) {
        if !self.threads.get(thread).is_some_and(|t| t.contains_key(ns)) {
            if self.scopes >= MAX_SCOPES {
                self.clear();
            }
            self.scopes += 1;
        }
        let scope = slot(slot(&mut self.threads, thread), ns);
        match scope.position(field) {
            Ok(i) => {
                let entry = &mut scope.0[i];
                // Versions are ids of one length: the old string's memory is reused.
                entry.1.clear();
                entry.1.push_str(version);
                entry.2 = row;
            }
            Err(i) => scope
                .0
                .insert(i, (field.to_owned(), version.to_owned(), row)),
        }
    }

    /// Forgets a thread (its rows were deleted or may be).
    pub(super) fn forget(&mut self, thread: &str) {
        if let Some(scopes) = self.threads.remove(thread) {
            self.scopes -= scopes.len();
        }
    }

    /// Forgets everything (after a failed transaction, whose rows were rolled back).
    pub(super) fn clear(&mut self) {
        self.threads.clear();
        self.scopes = 0;
    }
}

impl Scope {
    fn position(&self, field: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(f, _, _)| f.as_str().cmp(field))
    }
}

/// The value at `key`, a default one inserted first if there is none (the key is copied only
/// then).
fn slot<'m, V: Default>(map: &'m mut HashMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), V::default());
    }
    map.get_mut(key)
        .unwrap_or_else(|| unreachable!("inserted above"))
}

fn err(e: impl std::fmt::Display) -> GraphError {
    GraphError::Storage {
        backend: "sqlite",
        detail: e.to_string(),
    }
}

/// Finds the rows of the blob versions a new checkpoint refers to, inside its transaction.
pub(super) struct Locator<'a> {
    conn: &'a Connection,
    rows: &'a mut BlobRows,
    thread: &'a str,
    ns: &'a str,
    parent: Option<&'a str>,
    /// The parent checkpoint's rows were read into `rows` already.
    parent_read: bool,
    /// The namespace's checkpoints were searched once (a later miss goes by key at once).
    scanned: bool,
}

impl<'a> Locator<'a> {
    pub(super) fn new(
        conn: &'a Connection,
        rows: &'a mut BlobRows,
        thread: &'a str,
        ns: &'a str,
        parent: Option<&'a str>,
    ) -> Self {
        Locator {
            conn,
            rows,
            thread,
            ns,
            parent,
            parent_read: false,
            scanned: false,
        }
    }

    /// Remembers a blob just inserted.
    pub(super) fn inserted(&mut self, field: &str, version: &str, row: i64) {
        self.rows.set(self.thread, self.ns, field, version, row);
    }

    /// The row of `field` at `version`: remembered, else from the parent checkpoint, else from
    /// the newest checkpoint of the namespace that lists it, else by its key; `None` if no
    /// blob has it.
    pub(super) fn row(&mut self, field: &str, version: &str) -> Result<Option<i64>, GraphError> {
        if let Some(row) = self.rows.get(self.thread, self.ns, field, version) {
            return Ok(Some(row));
        }
        if !self.parent_read {
            self.parent_read = true;
            if let Some(parent) = self.parent {
                let stored = self
                    .conn
                    .prepare_cached(
                        "SELECT versions, blob_rows FROM checkpoints
                          WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
                    )
                    .and_then(|mut stmt| {
                        stmt.query_row(params![self.thread, self.ns, parent], |r| {
                            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                        })
                        .optional()
                    })
                    .map_err(err)?;
                if let Some((versions, rows)) = stored {
                    self.remember(&versions, &rows)?;
                    if let Some(row) = self.rows.get(self.thread, self.ns, field, version) {
                        return Ok(Some(row));
                    }
                }
            }
        }
        if self.scanned {
            return by_key(self.conn, self.thread, self.ns, field, version);
        }
        // Newest first: the first checkpoint that has this version says where it is.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT versions, blob_rows FROM checkpoints
                  WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC",
            )
            .map_err(err)?;
        let mut found = None;
        let mut stored = stmt.query(params![self.thread, self.ns]).map_err(err)?;
        while let Some(r) = stored.next().map_err(err)? {
            let (versions, rows): (String, String) =
                (r.get(0).map_err(err)?, r.get(1).map_err(err)?);
            let versions: Versions = serde_json::from_str(&versions).map_err(err)?;
            if versions.get(field) != Some(version) {
                continue;
            }
            let rows: HashMap<String, i64> = serde_json::from_str(&rows).map_err(err)?;
            if let Some(&row) = rows.get(field) {
                found = Some(row);
                break;
            }
        }
        drop(stored);
        if found.is_none() {
            // A blob no checkpoint lists (stored by some other path): by its key, once; the
            // row is remembered and the new checkpoint lists it.
            self.scanned = true;
            found = by_key(self.conn, self.thread, self.ns, field, version)?;
        }
        if let Some(row) = found {
            self.rows.set(self.thread, self.ns, field, version, row);
        }
        Ok(found)
    }

    /// The row of `field` at `version` if this saver remembers one (a blob given again is
    /// not stored twice).
    pub(super) fn remembered(&self, field: &str, version: &str) -> Option<i64> {
        self.rows.get(self.thread, self.ns, field, version)
    }

    /// Remembers the rows a stored checkpoint lists.
    fn remember(&mut self, versions: &str, rows: &str) -> Result<(), GraphError> {
        let versions: Versions = serde_json::from_str(versions).map_err(err)?;
        let rows: HashMap<String, i64> = serde_json::from_str(rows).map_err(err)?;
        for (field, version) in versions.iter() {
            if let Some(&row) = rows.get(field) {
                self.rows.set(self.thread, self.ns, field, version, row);
            }
        }
        Ok(())
    }
}

/// `blob_rows` as stored: `{"field": row, ...}`.
pub(super) fn rows_json(rows: &[(&str, i64)]) -> Result<String, GraphError> {
    struct Rows<'a>(&'a [(&'a str, i64)]);
    impl serde::Serialize for Rows<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(f, r)| (f, r)))
        }
    }
    serde_json::to_string(&Rows(rows)).map_err(err)
}

/// The rows a stored checkpoint's fields are in: from its `blob_rows`, and for a field it
/// does not list, the newest blob with that field and version (a scan).
pub(super) fn field_rows(
    conn: &Connection,
    thread: &str,
    ns: &str,
    versions: &Versions,
    rows_json: &str,
) -> Result<Vec<i64>, GraphError> {
    let listed: HashMap<String, i64> = serde_json::from_str(rows_json).map_err(err)?;
    let mut rows = Vec::with_capacity(versions.len());
    for (field, version) in versions.iter() {
        match listed.get(field) {
            Some(&row) => rows.push(row),
            None => rows.extend(by_key(conn, thread, ns, field, version)?),
        }
    }
    Ok(rows)
}

/// The newest blob row with this key (a scan of the table: only for versions no checkpoint
/// lists a row for).
fn by_key(
    conn: &Connection,
    thread: &str,
    ns: &str,
    field: &str,
    version: &str,
) -> Result<Option<i64>, GraphError> {
    conn.prepare_cached(
        "SELECT rowid FROM blobs
          WHERE thread_id = ?1 AND ns = ?2 AND field = ?3 AND version = ?4
          ORDER BY rowid DESC LIMIT 1",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![thread, ns, field, version], |r| r.get(0))
            .optional()
    })
    .map_err(err)
}

/// `roots` and the rows of their delta bases, transitively (each once). A delta stored
/// without its base's row is followed by its base's key.
pub(super) fn chains(
    conn: &Connection,
    thread: &str,
    ns: &str,
    roots: impl IntoIterator<Item = i64>,
) -> Result<HashSet<i64>, GraphError> {
    let mut seen = HashSet::new();
    let mut next: Vec<i64> = roots.into_iter().collect();
    let mut stmt = conn
        .prepare_cached(
            "WITH RECURSIVE chain(r) AS (
                 SELECT value FROM json_each(?1)
                 UNION
                 SELECT b.base_row FROM chain c JOIN blobs b ON b.rowid = c.r
                  WHERE b.base_row IS NOT NULL
             )
             SELECT c.r, b.field, b.base_version, b.base_row IS NULL
               FROM chain c JOIN blobs b ON b.rowid = c.r",
        )
        .map_err(err)?;
    while !next.is_empty() {
        let roots = serde_json::to_string(&next).map_err(err)?;
        next.clear();
        let mut found = stmt.query(params![roots]).map_err(err)?;
        let mut unlinked = Vec::new();
        while let Some(r) = found.next().map_err(err)? {
            let row: i64 = r.get(0).map_err(err)?;
            seen.insert(row);
            let base: Option<String> = r.get(2).map_err(err)?;
            if let Some(base) = base
                && r.get::<_, bool>(3).map_err(err)?
            {
                unlinked.push((r.get::<_, String>(1).map_err(err)?, base));
            }
        }
        for (field, base) in unlinked {
            if let Some(row) = by_key(conn, thread, ns, &field, &base)?
                && !seen.contains(&row)
            {
                next.push(row);
            }
        }
    }
    Ok(seen)
}

/// Every blob row the checkpoints of a thread (all namespaces, or one) need.
pub(super) fn thread_rows(
    conn: &Connection,
    thread: &str,
    ns: Option<&str>,
) -> Result<HashSet<i64>, GraphError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT ns, versions, blob_rows FROM checkpoints
              WHERE thread_id = ?1 AND (?2 IS NULL OR ns = ?2) ORDER BY ns",
        )
        .map_err(err)?;
    let mut by_ns: Vec<(String, Vec<i64>)> = Vec::new();
    let mut stored = stmt.query(params![thread, ns]).map_err(err)?;
    while let Some(r) = stored.next().map_err(err)? {
        let ns: String = r.get(0).map_err(err)?;
        let versions: Versions =
            serde_json::from_str(&r.get::<_, String>(1).map_err(err)?).map_err(err)?;
        let rows = field_rows(
            conn,
            thread,
            &ns,
            &versions,
            &r.get::<_, String>(2).map_err(err)?,
        )?;
        match by_ns.last_mut() {
            Some((last, all)) if *last == ns => all.extend(rows),
            _ => by_ns.push((ns, rows)),
        }
    }
    let mut all = HashSet::new();
    for (ns, roots) in by_ns {
        all.extend(chains(conn, thread, &ns, roots)?);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::BlobRows;

    #[test]
    fn remembers_the_latest_row_of_each_field_per_namespace() {
        let mut rows = BlobRows::default();
        rows.set("t", "", "messages", "v1", 1);
        rows.set("t", "", "count", "v1", 2);
        rows.set("t", "sub", "messages", "v1", 3);
        assert_eq!(rows.get("t", "", "messages", "v1"), Some(1));
        assert_eq!(rows.get("t", "sub", "messages", "v1"), Some(3));
        rows.set("t", "", "messages", "v2", 4);
        // Only the version remembered answers: an older one is looked up elsewhere.
        assert_eq!(rows.get("t", "", "messages", "v1"), None);
        assert_eq!(rows.get("t", "", "messages", "v2"), Some(4));
        assert_eq!(rows.get("t", "", "count", "v1"), Some(2));
        rows.forget("t");
        assert_eq!(rows.get("t", "", "count", "v1"), None);
        assert_eq!(rows.scopes, 0);
    }

    #[test]
    fn starts_over_past_its_bound() {
        let mut rows = BlobRows::default();
        for i in 0..super::MAX_SCOPES {
            rows.set(&format!("t{i}"), "", "f", "v", 1);
        }
        assert_eq!(rows.get("t0", "", "f", "v"), Some(1));
        rows.set("one more", "", "f", "v", 2);
        assert_eq!(rows.get("t0", "", "f", "v"), None);
        assert_eq!(rows.get("one more", "", "f", "v"), Some(2));
        assert_eq!(rows.scopes, 1);
    }
}
