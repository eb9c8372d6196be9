//! Where `SqliteSaver` finds a checkpoint's blobs: by row number, not by a key index.
//!
//! Why: blobs used to be keyed by `(thread_id, ns, field, version)`, an index of long text
//! keys that every commit with a blob wrote into (its leaf pages, often a rebalance of three
//! of them, and their parents): on `fanout_to_subgraph` that index was an eighth of the pages
//! a run wrote to the log. Now the blobs table is a heap: rows only ever appended under an
//! `id` (SQLite appends to a rowid table's last page without rebalancing, and `VACUUM` keeps
//! an `INTEGER PRIMARY KEY` where it may renumber a hidden rowid), and each checkpoint row
//! says in `blob_rows` which row holds the version of each of its fields (`{"messages": 42}`,
//! plus any blob it stored for a version it does not name, so deleting it deletes that too);
//! a delta blob names its base's row in `base_row`.
//!
//! Writing: a checkpoint's unchanged fields point at rows written before it, found in the
//! parent checkpoint's `blob_rows` (one lookup by key), then in the namespace's other
//! checkpoints, and last by a scan of the blobs' keys. What a transaction finds or writes is
//! remembered until it ends ([`BlobRows`]), for its later checkpoints (a batch's steps, a
//! group's runs), and never longer: a rolled-back transaction or another writer on the file
//! cannot leave a stale row number behind. Reading follows the rows and checks
//! each against what points at it (thread, namespace, field, version); one that does not hold
//! it, or a field listed nowhere, is found by its key: slower, never wrong.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, params};

use super::Versions;
use crate::error::GraphError;

/// The rows of the latest blob versions one transaction found or wrote, per thread and
/// namespace.
#[derive(Default)]
pub(super) struct BlobRows {
    threads: HashMap<String, HashMap<String, Scope>>,
}

/// One namespace's fields: (field, version, row), sorted by field.
#[derive(Default)]
struct Scope(Vec<(String, String, i64)>);

impl BlobRows {
    /// The row of `field` at `version`, if that is the version remembered ([`ABSENT`]: no
    /// blob has it).
    pub(super) fn get(&self, thread: &str, ns: &str, field: &str, version: &str) -> Option<i64> {
        let scope = self.threads.get(thread)?.get(ns)?;
        let i = scope.position(field).ok()?;
        let (_, v, row) = &scope.0[i];
        (v == version).then_some(*row)
    }

    /// Remembers that `field` at `version` is in `row`.
    pub(super) fn set(&mut self, thread: &str, ns: &str, field: &str, version: &str, row: i64) {
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

use super::sqlite::err;

/// Finds the rows of the blob versions a new checkpoint refers to, inside its transaction.
pub(super) struct Locator<'a> {
    conn: &'a Connection,
    rows: &'a mut BlobRows,
    thread: &'a str,
    ns: &'a str,
    parent: Option<&'a str>,
    /// The parent checkpoint's rows were read into `rows` already.
    parent_read: bool,
    /// The namespace's checkpoints were searched already (they are searched once).
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

    /// The row of `field` at `version` if the transaction or the parent checkpoint has one
    /// (a blob given again is not stored twice).
    pub(super) fn existing(
        &mut self,
        field: &str,
        version: &str,
    ) -> Result<Option<i64>, GraphError> {
        if let Some(row) = self.remembered(field, version) {
            return Ok(Some(row));
        }
        if !self.parent_read {
            self.parent_read = true;
            self.read_parent()?;
        }
        Ok(self.remembered(field, version))
    }

    fn remembered(&self, field: &str, version: &str) -> Option<i64> {
        self.rows
            .get(self.thread, self.ns, field, version)
            .filter(|&row| row != ABSENT)
    }

    /// The row of `field` at `version`: remembered, else listed by the parent checkpoint, else
    /// by another checkpoint of the namespace, else found by its key; `None` if no blob has
    /// it (remembered too, so the next checkpoint does not search again).
    pub(super) fn row(&mut self, field: &str, version: &str) -> Result<Option<i64>, GraphError> {
        if let Some(row) = self.rows.get(self.thread, self.ns, field, version) {
            return Ok((row != ABSENT).then_some(row));
        }
        if !self.parent_read {
            self.parent_read = true;
            self.read_parent()?;
            if let Some(row) = self.remembered(field, version) {
                return Ok(Some(row));
            }
        }
        if !self.scanned {
            self.scanned = true;
            self.read_namespace(field, version)?;
            if let Some(row) = self.remembered(field, version) {
                return Ok(Some(row));
            }
        }
        let found = by_key(self.conn, self.thread, self.ns, field, version)?;
        self.rows.set(
            self.thread,
            self.ns,
            field,
            version,
            found.unwrap_or(ABSENT),
        );
        Ok(found)
    }

    /// Remembers the rows the parent checkpoint lists.
    fn read_parent(&mut self) -> Result<(), GraphError> {
        let Some(parent) = self.parent else {
            return Ok(());
        };
        if let Some((versions, rows)) = stored(self.conn, self.thread, self.ns, parent)? {
            for (field, version, row) in wanted(&versions, &rows, false)? {
                if let Some(row) = row {
                    self.rows.set(self.thread, self.ns, &field, &version, row);
                }
            }
        }
        Ok(())
    }

    /// Remembers the row of `field` at `version` from the newest checkpoint of the namespace
    /// that lists it.
    fn read_namespace(&mut self, field: &str, version: &str) -> Result<(), GraphError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT versions, blob_rows FROM checkpoints
                  WHERE thread_id = ?1 AND ns = ?2 ORDER BY id DESC",
            )
            .map_err(err)?;
        let mut stored = stmt.query(params![self.thread, self.ns]).map_err(err)?;
        while let Some(r) = stored.next().map_err(err)? {
            let versions: Versions =
                serde_json::from_str(&r.get::<_, String>(0).map_err(err)?).map_err(err)?;
            if versions.get(field) != Some(version) {
                continue;
            }
            let rows: HashMap<String, i64> =
                serde_json::from_str(&r.get::<_, String>(1).map_err(err)?).map_err(err)?;
            if let Some(&row) = rows.get(field) {
                self.rows.set(self.thread, self.ns, field, version, row);
                break;
            }
        }
        Ok(())
    }
}

/// A remembered "no blob has this version" (row numbers start at 1).
const ABSENT: i64 = 0;

/// `blob_rows` as stored: `{"field": row, ...}` (and [`extra_key`]s).
pub(super) fn rows_json(rows: &[(&str, i64)]) -> Result<String, GraphError> {
    struct Rows<'a>(&'a [(&'a str, i64)]);
    impl serde::Serialize for Rows<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(f, r)| (f, r)))
        }
    }
    serde_json::to_string(&Rows(rows)).map_err(err)
}

/// A blob a stored checkpoint needs: its field and version, and the row its checkpoint lists
/// for it (if any).
pub(super) type Wanted = (String, String, Option<i64>);

/// What a stored checkpoint's fields need, from its `versions` and `blob_rows`; with
/// `extras`, also the blobs it stored that its versions do not name.
pub(super) fn wanted(
    versions: &Versions,
    rows_json: &str,
    extras: bool,
) -> Result<Vec<Wanted>, GraphError> {
    let listed: HashMap<String, i64> = serde_json::from_str(rows_json).map_err(err)?;
    let mut wanted: Vec<Wanted> = versions
        .iter()
        .map(|(field, version)| {
            (
                field.to_owned(),
                version.to_owned(),
                listed.get(field).copied(),
            )
        })
        .collect();
    if extras {
        for (key, row) in &listed {
            if let Some((field, version)) =
                key.strip_prefix('\0').and_then(|key| key.split_once('\0'))
            {
                wanted.push((field.to_owned(), version.to_owned(), Some(*row)));
            }
        }
    }
    Ok(wanted)
}

/// The `blob_rows` key of a blob a checkpoint stored for a version its versions do not name
/// (`\0field\0version`: no field name starts with a NUL).
pub(super) fn extra_key(field: &str, version: &str) -> String {
    format!("\0{field}\0{version}")
}

/// Every blob row one stored checkpoint reaches (its extras included).
pub(super) fn checkpoint_rows(
    conn: &Connection,
    thread: &str,
    ns: &str,
    id: &str,
) -> Result<HashSet<i64>, GraphError> {
    let Some((versions, rows)) = stored(conn, thread, ns, id)? else {
        return Ok(HashSet::new());
    };
    chains(conn, thread, ns, wanted(&versions, &rows, true)?)
}

/// A stored checkpoint's versions and its `blob_rows` (as stored), if it is stored.
fn stored(
    conn: &Connection,
    thread: &str,
    ns: &str,
    id: &str,
) -> Result<Option<(Versions, String)>, GraphError> {
    let row = conn
        .prepare_cached(
            "SELECT versions, blob_rows FROM checkpoints
              WHERE thread_id = ?1 AND ns = ?2 AND id = ?3",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![thread, ns, id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .optional()
        })
        .map_err(err)?;
    row.map(|(versions, rows)| Ok((serde_json::from_str(&versions).map_err(err)?, rows)))
        .transpose()
}

/// The newest blob row with this key (a scan of the table: only for versions no checkpoint
/// lists a row for, or whose listed row does not hold them).
fn by_key(
    conn: &Connection,
    thread: &str,
    ns: &str,
    field: &str,
    version: &str,
) -> Result<Option<i64>, GraphError> {
    conn.prepare_cached(
        "SELECT id FROM blobs
          WHERE thread_id = ?1 AND ns = ?2 AND field = ?3 AND version = ?4
          ORDER BY id DESC LIMIT 1",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![thread, ns, field, version], |r| r.get(0))
            .optional()
    })
    .map_err(err)
}

/// A blob row as a chain sees it.
struct Link {
    owned: bool,
    field: String,
    version: String,
    base_version: Option<String>,
    base_row: Option<i64>,
}

/// The rows that hold `wanted` and their delta bases, transitively. Each row is checked
/// against what points at it (thread, namespace, field and version): a row that does not
/// hold what it should (the file was edited, or another process deleted and reused it) or a
/// version with no row listed is found by its key instead.
pub(super) fn chains(
    conn: &Connection,
    thread: &str,
    ns: &str,
    wanted: Vec<Wanted>,
) -> Result<HashSet<i64>, GraphError> {
    let mut links: HashMap<i64, Link> = HashMap::new();
    fetch(
        conn,
        thread,
        ns,
        wanted.iter().filter_map(|w| w.2),
        &mut links,
    )?;
    let mut found = HashSet::new();
    let mut stack = wanted;
    while let Some((field, version, row)) = stack.pop() {
        let holds = |row: &i64| {
            links
                .get(row)
                .is_some_and(|l| l.owned && l.field == field && l.version == version)
        };
        let row = match row.filter(holds) {
            Some(row) => row,
            None => match by_key(conn, thread, ns, &field, &version)? {
                Some(row) => {
                    if !links.contains_key(&row) {
                        fetch(conn, thread, ns, [row], &mut links)?;
                    }
                    row
                }
                None => continue,
            },
        };
        if !found.insert(row) {
            continue;
        }
        if let Some(link) = links.get(&row)
            && let Some(base) = &link.base_version
        {
            stack.push((link.field.clone(), base.clone(), link.base_row));
        }
    }
    Ok(found)
}

/// Reads `roots` and the rows their `base_row`s lead to, into `links`.
fn fetch(
    conn: &Connection,
    thread: &str,
    ns: &str,
    roots: impl IntoIterator<Item = i64>,
    links: &mut HashMap<i64, Link>,
) -> Result<(), GraphError> {
    let roots: Vec<i64> = roots.into_iter().collect();
    if roots.is_empty() {
        return Ok(());
    }
    let roots = serde_json::to_string(&roots).map_err(err)?;
    let mut stmt = conn
        .prepare_cached(
            "WITH RECURSIVE chain(r) AS (
                 SELECT value FROM json_each(?1)
                 UNION
                 SELECT b.base_row FROM chain c JOIN blobs b ON b.id = c.r
                  WHERE b.base_row IS NOT NULL
             )
             SELECT b.id, b.thread_id = ?2 AND b.ns = ?3, b.field, b.version, b.base_version,
                    b.base_row
               FROM chain c JOIN blobs b ON b.id = c.r",
        )
        .map_err(err)?;
    let mut rows = stmt.query(params![roots, thread, ns]).map_err(err)?;
    while let Some(r) = rows.next().map_err(err)? {
        links.insert(
            r.get(0).map_err(err)?,
            Link {
                owned: r.get(1).map_err(err)?,
                field: r.get(2).map_err(err)?,
                version: r.get(3).map_err(err)?,
                base_version: r.get(4).map_err(err)?,
                base_row: r.get(5).map_err(err)?,
            },
        );
    }
    Ok(())
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
    let mut by_ns: Vec<(String, Vec<Wanted>)> = Vec::new();
    let mut stored = stmt.query(params![thread, ns]).map_err(err)?;
    while let Some(r) = stored.next().map_err(err)? {
        let ns: String = r.get(0).map_err(err)?;
        let versions: Versions =
            serde_json::from_str(&r.get::<_, String>(1).map_err(err)?).map_err(err)?;
        let needs = wanted(&versions, &r.get::<_, String>(2).map_err(err)?, true)?;
        match by_ns.last_mut() {
            Some((last, all)) if *last == ns => all.extend(needs),
            _ => by_ns.push((ns, needs)),
        }
    }
    let mut all = HashSet::new();
    for (ns, needs) in by_ns {
        all.extend(chains(conn, thread, &ns, needs)?);
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
    }
}
