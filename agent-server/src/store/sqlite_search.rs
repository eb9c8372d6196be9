//! Searches and counts in the SQLite file (see [`super::query`]): the side table of
//! metadata entries with its triggers, the indexes the orders read, the migration of a file
//! made before them, and the statements.
//!
//! SQLite plans each statement once (the store asks for a fixed plan), without statistics,
//! so the store picks the plan itself: a page in the default order reads the side table's
//! entries of one metadata entry in that order (the least common one, counted up to a bound
//! when there are several); another order reads its index and probes the side table, unless
//! an entry is rare enough that sorting its rows is cheaper.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde_json::Value;

use super::query::{
    Column, Entries, KEY_BYTES, Pair, Query, STORED_VALUE_BYTES, Table, contains_lowercase,
    has_entries,
};

/// The side table, the orders' indexes, and the functions the statements call.
const SCHEMA: &str = "
CREATE INDEX IF NOT EXISTS threads_by_created ON api_threads (json_extract(doc, '$.created_at'), seq);
CREATE INDEX IF NOT EXISTS threads_by_updated ON api_threads (json_extract(doc, '$.updated_at'), seq);
CREATE INDEX IF NOT EXISTS threads_by_state_updated ON api_threads (json_extract(doc, '$.state_updated_at'), seq);
CREATE INDEX IF NOT EXISTS threads_by_status ON api_threads (json_extract(doc, '$.status'), json_extract(doc, '$.created_at'), seq);
CREATE INDEX IF NOT EXISTS assistants_by_created ON api_assistants (json_extract(doc, '$.created_at'), seq);
CREATE INDEX IF NOT EXISTS assistants_by_updated ON api_assistants (json_extract(doc, '$.updated_at'), seq);
CREATE INDEX IF NOT EXISTS crons_by_created ON api_crons (json_extract(doc, '$.created_at'), seq);
CREATE TABLE IF NOT EXISTS api_counts (kind TEXT PRIMARY KEY, n INTEGER NOT NULL);
";

/// The number of documents with each kept metadata entry, kept by triggers on the side table.
const ENTRY_COUNTS: &str = "
CREATE TABLE api_meta_counts (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    n INTEGER NOT NULL, PRIMARY KEY (kind, key, value)) WITHOUT ROWID;
INSERT INTO api_meta_counts (kind, key, value, n)
    SELECT kind, key, value, count(*) FROM api_meta GROUP BY kind, key, value;
";

const ENTRY_TRIGGERS: &str = "
DROP TRIGGER IF EXISTS api_meta_counted;
DROP TRIGGER IF EXISTS api_meta_uncounted;
CREATE TRIGGER api_meta_counted AFTER INSERT ON api_meta BEGIN
    INSERT INTO api_meta_counts (kind, key, value, n) VALUES (NEW.kind, NEW.key, NEW.value, 1)
        ON CONFLICT (kind, key, value) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER api_meta_uncounted AFTER DELETE ON api_meta BEGIN
    UPDATE api_meta_counts SET n = n - 1
        WHERE kind = OLD.kind AND key = OLD.key AND value = OLD.value;
    DELETE FROM api_meta_counts
        WHERE kind = OLD.kind AND key = OLD.key AND value = OLD.value AND n <= 0;
END;
";

const SIDE_TABLE: &str = "
CREATE TABLE api_meta (kind TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT, seq INTEGER NOT NULL, PRIMARY KEY (kind, id, key)) WITHOUT ROWID;
CREATE INDEX api_meta_by_value ON api_meta (kind, key, value, created_at, seq);
";

/// A JSON scalar as the side table keeps it, from its type and SQL value (`json_each`'s
/// columns, or `json_type` and `json_extract` of a bound value): its JSON text, booleans
/// apart from numbers.
fn canonical(ty: &str, value: &str) -> String {
    format!(
        "CASE {ty} WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE json_quote({value}) END"
    )
}

/// The side table's rows of the document `row` (of `table`; every row of it when `row` is
/// `t`): its top-level metadata entries with short scalar values.
fn entries_of(table: Table, kind: &str, row: &str) -> String {
    let id = table.id();
    let value = canonical("j.type", "j.value");
    let every = match row {
        "t" => format!("{} t, ", table.name()),
        _ => String::new(),
    };
    format!(
        "SELECT '{kind}', {row}.{id}, j.key, {value}, json_extract({row}.doc, '$.created_at'), {row}.seq
         FROM {every}json_each({row}.doc, '$.metadata') j
         WHERE json_type({row}.doc, '$.metadata') = 'object' AND j.type NOT IN ('object', 'array')
           AND length(CAST(j.key AS BLOB)) <= {KEY_BYTES}
           AND length(CAST({value} AS BLOB)) <= {STORED_VALUE_BYTES}"
    )
}

/// The triggers that keep the side table and the number of documents as the documents of
/// `table` are written (a replace is a delete and an insert: the store's connection runs
/// triggers of the rows a replace deletes): made again at every open, so they are always
/// this version's.
fn triggers(table: Table, kind: &str) -> String {
    let (t, id) = (table.name(), table.id());
    let rows = entries_of(table, kind, "NEW");
    format!(
        "DROP TRIGGER IF EXISTS {t}_meta_insert;
         DROP TRIGGER IF EXISTS {t}_meta_update;
         DROP TRIGGER IF EXISTS {t}_meta_delete;
         CREATE TRIGGER {t}_meta_insert AFTER INSERT ON {t} BEGIN
           DELETE FROM api_meta WHERE kind = '{kind}' AND id = NEW.{id};
           INSERT OR REPLACE INTO api_meta (kind, id, key, value, created_at, seq) {rows};
           INSERT INTO api_counts (kind, n) VALUES ('{kind}', 1)
             ON CONFLICT (kind) DO UPDATE SET n = n + 1;
         END;
         CREATE TRIGGER {t}_meta_update AFTER UPDATE OF doc, seq ON {t}
         WHEN json_extract(OLD.doc, '$.metadata') IS NOT json_extract(NEW.doc, '$.metadata')
           OR json_extract(OLD.doc, '$.created_at') IS NOT json_extract(NEW.doc, '$.created_at')
           OR OLD.seq IS NOT NEW.seq
         BEGIN
           DELETE FROM api_meta WHERE kind = '{kind}' AND id = OLD.{id};
           INSERT OR REPLACE INTO api_meta (kind, id, key, value, created_at, seq) {rows};
         END;
         CREATE TRIGGER {t}_meta_delete AFTER DELETE ON {t} BEGIN
           DELETE FROM api_meta WHERE kind = '{kind}' AND id = OLD.{id};
           UPDATE api_counts SET n = n - 1 WHERE kind = '{kind}';
         END;"
    )
}

/// Brings a file to this version's search schema (in one transaction): the orders' indexes
/// (built from the rows there), the side table (filled from the documents there when it is
/// new), the numbers of documents (counted again at every open: a process of an older
/// version may have written since) and the triggers. A file written before them keeps its
/// data and is searched the same way from then on.
pub(super) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "recursive_triggers", true)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA)?;
    let had_side_table: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'api_meta'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if had_side_table.is_none() {
        tx.execute_batch(SIDE_TABLE)?;
    }
    for table in [Table::Assistants, Table::Threads] {
        let Some(kind) = table.indexed() else {
            continue;
        };
        if had_side_table.is_none() {
            backfill(&tx, table, kind)?;
        }
        tx.execute(
            &format!(
                "INSERT OR REPLACE INTO api_counts (kind, n) SELECT '{kind}', count(*) FROM {}",
                table.name()
            ),
            [],
        )?;
        tx.execute_batch(&triggers(table, kind))?;
    }
    let had_entry_counts: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'api_meta_counts'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if had_entry_counts.is_none() {
        tx.execute_batch(ENTRY_COUNTS)?;
    }
    tx.execute_batch(ENTRY_TRIGGERS)?;
    tx.commit()
}

/// Fills the side table from the documents of `table` already there.
fn backfill(conn: &Connection, table: Table, kind: &str) -> rusqlite::Result<usize> {
    conn.execute(
        &format!(
            "INSERT OR REPLACE INTO api_meta (kind, id, key, value, created_at, seq) {}",
            entries_of(table, kind, "t")
        ),
        [],
    )
}

/// Registers the functions the statements call on rows: JSON equality of entries
/// (`agentgraph_has(container, filter)`) and a case-insensitive part of a text
/// (`agentgraph_icontains(text, part)`), as the server compared them in memory.
pub(super) fn functions(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("agentgraph_has", 2, flags, |ctx| {
        let container = ctx.get_raw(0).as_str_or_null().ok().flatten();
        let filter = ctx.get_raw(1).as_str().unwrap_or("{}");
        Ok(has_entries(container, filter))
    })?;
    conn.create_scalar_function("agentgraph_icontains", 2, flags, |ctx| {
        let text = ctx.get_raw(0).as_str_or_null().ok().flatten();
        let part = ctx.get_raw(1).as_str().unwrap_or_default();
        Ok(contains_lowercase(text, part))
    })
}

/// Rows or their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Rows,
    Count,
}

/// A statement and its values.
#[derive(Default)]
struct Statement {
    sql: String,
    params: Vec<Sql>,
}

impl Statement {
    /// A placeholder for `value`.
    fn bind(&mut self, value: impl Into<Sql>) -> String {
        self.params.push(value.into());
        format!("?{}", self.params.len())
    }

    /// The side table's text of the JSON value `json` (bound once).
    fn canonical(&mut self, json: &str) -> String {
        let p = self.bind(json.to_owned());
        canonical(
            &format!("json_type({p})"),
            &format!("json_extract({p}, '$')"),
        )
    }
}

/// Entries up to which a rare metadata entry's rows are sorted rather than an order's index
/// read (and the bound of the counts that tell).
const RARE: i64 = 1000;

/// The rows of `table` that `query` asks for, or their number.
pub(super) fn search(
    conn: &Connection,
    table: Table,
    query: &Query,
) -> rusqlite::Result<Vec<Value>> {
    let Some(stmt) = statement(conn, table, query, Mode::Rows)? else {
        return Ok(Vec::new());
    };
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let rows = prepared
        .query_map(params_from_iter(stmt.params.iter()), |r| {
            r.get::<_, String>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows
        .iter()
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect())
}

/// How many rows of `table` match `query`.
pub(super) fn count(conn: &Connection, table: Table, query: &Query) -> rusqlite::Result<u64> {
    if let (true, Some(kind)) = (query.everything(), table.indexed()) {
        let n: Option<i64> = conn
            .prepare_cached("SELECT n FROM api_counts WHERE kind = ?1")?
            .query_row([kind], |r| r.get(0))
            .optional()?;
        return Ok(n.unwrap_or(0).max(0) as u64);
    }
    if let (Some(pair), Some(kind)) = (query.counted_pair(table), table.indexed()) {
        let mut s = Statement::default();
        let key = s.bind(pair.key);
        let value = s.canonical(&pair.json);
        s.sql = format!(
            "SELECT n FROM api_meta_counts WHERE kind = '{kind}' AND key = {key} AND value = {value}"
        );
        let n: Option<i64> = conn
            .prepare_cached(&s.sql)?
            .query_row(params_from_iter(s.params.iter()), |r| r.get(0))
            .optional()?;
        return Ok(n.unwrap_or(0).max(0) as u64);
    }
    let Some(stmt) = statement(conn, table, query, Mode::Count)? else {
        return Ok(0);
    };
    let n: i64 = conn
        .prepare_cached(&stmt.sql)?
        .query_row(params_from_iter(stmt.params.iter()), |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// How many side table entries `pair` has, counted up to [`RARE`] + 1.
fn entries(conn: &Connection, kind: &str, pair: &Pair) -> rusqlite::Result<i64> {
    let mut s = Statement::default();
    let key = s.bind(pair.key.clone());
    let value = s.canonical(&pair.json);
    s.sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM api_meta WHERE kind = '{kind}' AND key = {key}
           AND value = {value} LIMIT {})",
        RARE + 1
    );
    conn.prepare_cached(&s.sql)?
        .query_row(params_from_iter(s.params.iter()), |r| r.get(0))
}

/// Which required entry the statement starts from, if any (see the module's doc).
fn driver(
    conn: &Connection,
    kind: &str,
    pairs: &[Pair],
    in_created_order: bool,
    mode: Mode,
) -> rusqlite::Result<Option<usize>> {
    if pairs.is_empty() {
        return Ok(None);
    }
    if pairs.len() == 1 && (in_created_order || mode == Mode::Count) {
        return Ok(Some(0));
    }
    let mut rarest = (0, i64::MAX);
    for (i, pair) in pairs.iter().enumerate() {
        let n = entries(conn, kind, pair)?;
        if n < rarest.1 {
            rarest = (i, n);
        }
    }
    let sorted_cheaply = rarest.1 <= RARE;
    Ok((in_created_order || mode == Mode::Count || sorted_cheaply).then_some(rarest.0))
}

/// An expression of a field of the row `t`.
fn column(column: Column) -> String {
    match column {
        Column::Own(c) => format!("t.{c}"),
        Column::Doc(f) => format!("json_extract(t.doc, '$.{f}')"),
    }
}

fn unknown(what: &str, field: &str, table: Table) -> rusqlite::Error {
    rusqlite::Error::InvalidParameterName(format!("cannot {what} {} by '{field}'", table.name()))
}

/// The conditions that the row `t` matches `entries` (the side table's lookups by `id`,
/// the others checked on the row).
fn matches(s: &mut Statement, kind: Option<&str>, id: &str, entries: &Entries) -> Vec<String> {
    let mut conds = Vec::new();
    for pair in &entries.pairs {
        let key = s.bind(pair.key.clone());
        let value = s.canonical(&pair.json);
        conds.push(format!(
            "EXISTS (SELECT 1 FROM api_meta m WHERE m.kind = '{}' AND m.id = {id} AND m.key = {key} AND m.value = {value})",
            kind.unwrap_or_default()
        ));
    }
    if !entries.checked.is_empty() {
        let filter = s.bind(Value::Object(entries.checked.clone()).to_string());
        conds.push(format!(
            "agentgraph_has(json_extract(t.doc, '$.metadata'), {filter})"
        ));
    }
    conds
}

/// The statement of `query` on `table`; `None` when nothing can match.
fn statement(
    conn: &Connection,
    table: Table,
    query: &Query,
    mode: Mode,
) -> rusqlite::Result<Option<Statement>> {
    let required = query.required(table);
    if required.impossible {
        return Ok(None);
    }
    let (name, id) = (table.name(), table.id());
    let kind = table.indexed();
    let sort = match &query.sort_by {
        Some(field) => Some((
            field.as_str(),
            table
                .column(field)
                .ok_or_else(|| unknown("sort", field, table))?,
        )),
        None => None,
    };
    let in_created_order = mode == Mode::Count || sort.is_some_and(|(f, _)| f == "created_at");
    let start = match kind {
        Some(kind) => driver(conn, kind, &required.pairs, in_created_order, mode)?,
        None => None,
    };
    let mut s = Statement::default();
    let mut conds = Vec::new();
    let mut rest = required.clone();
    let from = match (start, kind) {
        (Some(i), Some(kind)) => {
            let pair = rest.pairs.remove(i);
            let key = s.bind(pair.key);
            let value = s.canonical(&pair.json);
            conds.push(format!(
                "d.kind = '{kind}' AND d.key = {key} AND d.value = {value}"
            ));
            true
        }
        _ => false,
    };
    // A count of side table entries alone reads no document.
    let only_entries = from
        && mode == Mode::Count
        && rest.checked.is_empty()
        && query.scope_or_system(table).is_none()
        && query.values.is_empty()
        && query.status.is_none()
        && query.ids.is_none()
        && query.fields.is_empty()
        && query.name.is_none();
    let row_id = if only_entries {
        "d.id".to_owned()
    } else {
        format!("t.{id}")
    };
    if from && !only_entries {
        conds.push(format!("t.{id} = d.id"));
    }
    conds.extend(matches(&mut s, kind, &row_id, &rest));
    if let Some(scope) = query.scope_or_system(table) {
        let theirs = matches(&mut s, kind, &row_id, &scope);
        if !theirs.is_empty() {
            conds.push(format!(
                "(json_extract(t.doc, '$.metadata.created_by') = 'system' OR ({}))",
                theirs.join(" AND ")
            ));
        }
    }
    if !query.values.is_empty() {
        let filter = s.bind(Value::Object(query.values.clone()).to_string());
        conds.push(format!(
            "agentgraph_has(json_extract(t.doc, '$.values'), {filter})"
        ));
    }
    if let Some(status) = &query.status {
        let c = table
            .column("status")
            .ok_or_else(|| unknown("filter", "status", table))?;
        let p = s.bind(status.clone());
        conds.push(format!("{} = {p}", column(c)));
    }
    if let Some(ids) = &query.ids {
        let p = s.bind(serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned()));
        conds.push(format!("t.{id} IN (SELECT value FROM json_each({p}))"));
    }
    for (field, value) in &query.fields {
        let c = table
            .column(field)
            .ok_or_else(|| unknown("filter", field, table))?;
        conds.push(equal(&mut s, c, value));
    }
    if let Some(part) = &query.name {
        let p = s.bind(part.clone());
        conds.push(format!(
            "agentgraph_icontains(json_extract(t.doc, '$.name'), {p})"
        ));
    }
    let source = match (from, only_entries) {
        (true, true) => "api_meta d".to_owned(),
        // The side table first, in its order: SQLite keeps the tables' order of a CROSS JOIN.
        (true, false) => format!("api_meta d CROSS JOIN {name} t"),
        (false, _) => format!("{name} t"),
    };
    let what = match mode {
        Mode::Rows => "t.doc",
        Mode::Count => "count(*)",
    };
    let mut sql = format!("SELECT {what} FROM {source}");
    if !conds.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conds.join(" AND "));
    }
    if mode == Mode::Rows {
        let dir = if query.descending { "DESC" } else { "ASC" };
        let order = match sort {
            None => format!("t.seq {dir}"),
            Some(("created_at", _)) if from => format!("d.created_at {dir}, d.seq {dir}"),
            Some((_, Column::Own(c))) if c == id => format!("t.{id} {dir}"),
            Some((field, c)) => {
                // JSON `null` sorted after strings, as the server compared their texts.
                let nulls = match (table.nullable(field), query.descending) {
                    (false, _) => "",
                    (true, false) => " NULLS LAST",
                    (true, true) => " NULLS FIRST",
                };
                format!("{} {dir}{nulls}, t.seq {dir}", column(c))
            }
        };
        let limit = s.bind(query.limit.map_or(-1, |l| l.min(i64::MAX as usize) as i64));
        let offset = s.bind(query.offset.min(i64::MAX as usize) as i64);
        sql.push_str(&format!(" ORDER BY {order} LIMIT {limit} OFFSET {offset}"));
    }
    s.sql = sql;
    Ok(Some(s))
}

/// The condition that the field `c` of the row equals `value` (as JSON values are equal).
fn equal(s: &mut Statement, c: Column, value: &Value) -> String {
    match (c, value) {
        (_, Value::String(v)) => {
            let p = s.bind(v.clone());
            format!("{} = {p}", column(c))
        }
        (Column::Own(c), Value::Null) => format!("t.{c} IS NULL"),
        (Column::Doc(f), Value::Null) => {
            format!("COALESCE(json_type(t.doc, '$.{f}'), 'null') = 'null'")
        }
        (Column::Doc(f), Value::Bool(b)) => format!("json_type(t.doc, '$.{f}') = '{b}'"),
        (_, Value::Number(n)) => {
            let p = match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => s.bind(i),
                (None, Some(f)) => s.bind(f),
                (None, None) => s.bind(n.to_string()),
            };
            format!("{} = {p}", column(c))
        }
        (_, other) => {
            let field = match c {
                Column::Own(c) | Column::Doc(c) => c,
            };
            let mut filter = serde_json::Map::new();
            filter.insert(field.to_owned(), other.clone());
            let p = s.bind(Value::Object(filter).to_string());
            format!("agentgraph_has(t.doc, {p})")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A file of `n` threads (`user` u0..u99, every tenth `busy`) in the store's schema.
    fn threads(n: usize) -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::sqlite::SCHEMA).unwrap();
        functions(&conn).unwrap();
        migrate(&mut conn).unwrap();
        let tx = conn.transaction().unwrap();
        for i in 0..n {
            let doc = json!({"thread_id": format!("t{i:06}"), "created_at": format!("2025-01-01T00:{:02}:{:02}.{i:06}", i / 3600 % 60, i / 60 % 60),
                "updated_at": format!("u{i:06}"), "status": if i % 10 == 0 { "busy" } else { "idle" },
                "metadata": {"user": format!("u{}", i % 100), "n": i % 7, "tags": ["a"]}, "values": {"k": i % 3}});
            tx.execute(
                "INSERT INTO api_threads (thread_id, doc, seq) VALUES (?1, ?2, ?3)",
                rusqlite::params![doc["thread_id"].as_str(), doc.to_string(), i as i64],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        conn
    }

    fn plan(conn: &Connection, query: &Query, mode: Mode) -> String {
        let s = statement(conn, Table::Threads, query, mode)
            .unwrap()
            .unwrap();
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", s.sql))
            .unwrap();
        let rows: Vec<String> = stmt
            .query_map(params_from_iter(s.params.iter()), |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.join("\n")
    }

    fn user(u: &str) -> serde_json::Map<String, Value> {
        json!({"user": u}).as_object().cloned().unwrap()
    }

    #[test]
    fn plans_read_indexes_not_every_row() {
        let conn = threads(2000);
        let page = Query {
            metadata: user("u5"),
            sort_by: Some("created_at".into()),
            descending: true,
            limit: Some(10),
            ..Query::default()
        };
        let p = plan(&conn, &page, Mode::Rows);
        eprintln!("page by metadata:\n{p}\n");
        assert!(
            p.contains("api_meta_by_value") && !p.contains("TEMP B-TREE"),
            "{p}"
        );
        let p = plan(&conn, &page, Mode::Count);
        eprintln!("count:\n{p}\n");
        assert!(
            p.contains("COVERING INDEX api_meta_by_value") && !p.contains("api_threads"),
            "{p}"
        );
        let all = Query {
            sort_by: Some("created_at".into()),
            descending: true,
            limit: Some(10),
            ..Query::default()
        };
        let p = plan(&conn, &all, Mode::Rows);
        eprintln!("page:\n{p}\n");
        assert!(
            p.contains("threads_by_created") && !p.contains("TEMP B-TREE"),
            "{p}"
        );
        let by_update = Query {
            metadata: user("u5"),
            sort_by: Some("updated_at".into()),
            ..all.clone()
        };
        eprintln!("by update:\n{}\n", plan(&conn, &by_update, Mode::Rows));
        let status = Query {
            status: Some("busy".into()),
            ..all.clone()
        };
        let p = plan(&conn, &status, Mode::Rows);
        eprintln!("status:\n{p}\n");
        assert!(
            p.contains("threads_by_status") && !p.contains("TEMP B-TREE"),
            "{p}"
        );
    }

    #[test]
    fn searches_filter_sort_and_page_as_the_server_did_in_memory() {
        let conn = threads(300);
        let mut q = Query {
            metadata: json!({"user": "u5", "tags": ["a"]})
                .as_object()
                .cloned()
                .unwrap(),
            sort_by: Some("created_at".into()),
            descending: true,
            limit: Some(2),
            offset: 1,
            ..Query::default()
        };
        // u5: threads 5, 105, 205, newest first.
        assert_eq!(count(&conn, Table::Threads, &q).unwrap(), 3);
        let page = search(&conn, Table::Threads, &q).unwrap();
        let ids: Vec<&str> = page
            .iter()
            .filter_map(|d| d["thread_id"].as_str())
            .collect();
        assert_eq!(ids, ["t000105", "t000005"]);
        // Of those, `values.k == 2`: 5 alone.
        q.values = json!({"k": 2}).as_object().cloned().unwrap();
        q.offset = 0;
        assert_eq!(count(&conn, Table::Threads, &q).unwrap(), 1);
        let page = search(&conn, Table::Threads, &q).unwrap();
        assert_eq!(page[0]["thread_id"], "t000005");
        // An array is equal, not contained.
        q.metadata = json!({"tags": []}).as_object().cloned().unwrap();
        assert_eq!(count(&conn, Table::Threads, &q).unwrap(), 0);
        let q = Query {
            metadata: user("u5"),
            owner: Some(json!({"n": 5}).as_object().cloned().unwrap()),
            ..Query::default()
        };
        // u5 and n == 5: 5 (5 % 7 == 5), 105 (0), 205 (2).
        assert_eq!(count(&conn, Table::Threads, &q).unwrap(), 1);
        let q = Query {
            metadata: json!({"n": "5"}).as_object().cloned().unwrap(),
            ..Query::default()
        };
        assert_eq!(
            count(&conn, Table::Threads, &q).unwrap(),
            0,
            "a string is not a number"
        );
    }
}
