//! Searches and counts in PostgreSQL (see [`super::query`]): each searched table keeps a
//! `head` (its document as `jsonb`, without the large parts: values, config, payload),
//! generated as the row is written, which the orders' btree indexes and the GIN index of
//! its metadata (`jsonb_path_ops`, for `@>`) read; the side table of metadata entries is
//! kept by triggers. Statements are sent unprepared (one round trip each), so the planner
//! plans every one with its values: a rare metadata value and a common one get the plans
//! that suit them.

use tokio_postgres::types::{ToSql, Type};

use super::query::{Column, Entries, KEY_BYTES, Query, STORED_VALUE_BYTES, Table};

/// What each searched table keeps in its `head`: the document without these.
fn dropped(table: Table) -> Option<&'static str> {
    match table {
        Table::Threads => Some("{values,interrupts,config,error}"),
        Table::Assistants => Some("{config,context}"),
        Table::Crons => Some("{payload,auth_user}"),
        // Runs are read by their thread and status (columns), a few at a time.
        Table::Runs => None,
    }
}

/// The searched tables that have a `head`, as [`migration`] leaves them.
pub(super) fn with_head_all() -> Vec<String> {
    [Table::Threads, Table::Assistants, Table::Crons, Table::Runs]
        .into_iter()
        .filter(|t| dropped(*t).is_some())
        .map(|t| t.name().to_owned())
        .collect()
}

/// The side table, and per searched table: its `head`, the indexes of its orders and
/// metadata, and the triggers that keep the side table. Run under the migration lock when
/// the database's recorded script is not this version's: columns and indexes are added once
/// (a table made before them is rewritten with its `head`, the side table filled from its
/// documents), triggers made again so they are this version's. `with_head`: the tables that
/// have their `head` already (not altered again).
pub(super) fn migration(side_table_is_new: bool, with_head: &[String]) -> String {
    let mut sql = String::from(
        "CREATE TABLE IF NOT EXISTS api_meta (kind TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL,
             value TEXT NOT NULL, created_at TEXT COLLATE \"C\", seq BIGINT NOT NULL,
             PRIMARY KEY (kind, id, key));
         CREATE INDEX IF NOT EXISTS api_meta_by_value ON api_meta (kind, key, value, created_at, seq) INCLUDE (id);
         CREATE TABLE IF NOT EXISTS api_counts (kind TEXT PRIMARY KEY, n BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS api_count_changes (kind TEXT NOT NULL, delta INT NOT NULL);\n",
    );

    for table in [Table::Threads, Table::Assistants, Table::Crons, Table::Runs] {
        let Some(dropped) = dropped(table) else {
            continue;
        };
        let t = table.name();
        if !with_head.iter().any(|h| h == t) {
            sql.push_str(&format!(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS head jsonb
                     GENERATED ALWAYS AS (doc::jsonb - '{dropped}'::text[]) STORED;\n"
            ));
        }
        sql.push_str(&format!(
            "CREATE INDEX IF NOT EXISTS {t}_by_created ON {t} (((head ->> 'created_at') COLLATE \"C\"), seq);
             CREATE INDEX IF NOT EXISTS {t}_by_updated ON {t} (((head ->> 'updated_at') COLLATE \"C\"), seq);\n"
        ));
        let Some(kind) = table.indexed() else {
            continue;
        };
        let id = table.id();
        let rows = |row: &str| {
            format!(
                "SELECT '{kind}', {row}.{id}, e.key, e.value::text, {row}.head ->> 'created_at', {row}.seq
                 FROM jsonb_each(CASE WHEN jsonb_typeof({row}.head -> 'metadata') = 'object'
                                      THEN {row}.head -> 'metadata' ELSE '{{}}'::jsonb END) e
                 WHERE jsonb_typeof(e.value) NOT IN ('object', 'array')
                   AND octet_length(e.key) <= {KEY_BYTES}
                   AND octet_length(e.value::text) <= {STORED_VALUE_BYTES}"
            )
        };
        sql.push_str(&format!(
            "CREATE INDEX IF NOT EXISTS {t}_metadata ON {t} USING gin ((head -> 'metadata') jsonb_path_ops);
             CREATE OR REPLACE FUNCTION {t}_meta() RETURNS trigger LANGUAGE plpgsql AS $f$
             BEGIN
               IF TG_OP <> 'INSERT' THEN
                 DELETE FROM api_meta WHERE kind = '{kind}' AND id = OLD.{id};
               END IF;
               IF TG_OP = 'INSERT' THEN
                 INSERT INTO api_count_changes (kind, delta) VALUES ('{kind}', 1);
               ELSIF TG_OP = 'DELETE' THEN
                 INSERT INTO api_count_changes (kind, delta) VALUES ('{kind}', -1);
               END IF;
               IF TG_OP <> 'DELETE' THEN
                 INSERT INTO api_meta (kind, id, key, value, created_at, seq) {new}
                 ON CONFLICT (kind, id, key) DO UPDATE SET value = EXCLUDED.value,
                   created_at = EXCLUDED.created_at, seq = EXCLUDED.seq;
               END IF;
               RETURN NULL;
             END $f$;
             DROP TRIGGER IF EXISTS {t}_meta_write ON {t};
             DROP TRIGGER IF EXISTS {t}_meta_change ON {t};
             CREATE TRIGGER {t}_meta_write AFTER INSERT OR DELETE ON {t}
               FOR EACH ROW EXECUTE FUNCTION {t}_meta();
             CREATE TRIGGER {t}_meta_change AFTER UPDATE ON {t} FOR EACH ROW
               WHEN (OLD.head -> 'metadata' IS DISTINCT FROM NEW.head -> 'metadata'
                     OR OLD.head ->> 'created_at' IS DISTINCT FROM NEW.head ->> 'created_at'
                     OR OLD.seq IS DISTINCT FROM NEW.seq OR OLD.{id} IS DISTINCT FROM NEW.{id})
               EXECUTE FUNCTION {t}_meta();\n",
            new = rows("NEW"),
        ));
        if side_table_is_new {
            // The triggers above hold the table against writes until the commit: no row
            // is missed between these and them.
            sql.push_str(&format!(
                "INSERT INTO api_meta (kind, id, key, value, created_at, seq)
                 {} ON CONFLICT DO NOTHING;
                 INSERT INTO api_counts (kind, n) SELECT '{kind}', count(*) FROM {t}
                 ON CONFLICT (kind) DO UPDATE SET n = EXCLUDED.n;
                 DELETE FROM api_count_changes WHERE kind = '{kind}';\n",
                rows("t").replacen("FROM jsonb_each", &format!("FROM {t} t, jsonb_each"), 1)
            ));
        }
    }
    sql.push_str(
        "CREATE INDEX IF NOT EXISTS api_threads_by_state_updated ON api_threads (((head ->> 'state_updated_at') COLLATE \"C\"), seq);
         CREATE INDEX IF NOT EXISTS api_threads_by_status ON api_threads ((head ->> 'status'), ((head ->> 'created_at') COLLATE \"C\"), seq);\n",
    );
    // Last, and its triggers made only with its tables: a start takes no lock on the side
    // table, which writers reach through the documents' triggers (a lock taken on it before
    // theirs would deadlock with them).
    sql.push_str(ENTRY_COUNTS);
    sql
}

/// The number of documents of a kind: the last sum and the changes since (inserted by the
/// triggers, so writers never wait on one counter row), and how many changes there are.
pub(super) const COUNTED: &str = "SELECT COALESCE((SELECT n FROM api_counts WHERE kind = $1), 0)
       + COALESCE((SELECT sum(delta) FROM api_count_changes WHERE kind = $1), 0),
     (SELECT count(*) FROM api_count_changes WHERE kind = $1)";

/// Folds the changes into the sum (in one statement: changes written meanwhile stay for the
/// next fold).
pub(super) const FOLD: &str =
    "WITH folded AS (DELETE FROM api_count_changes WHERE kind = $1 RETURNING delta)
     UPDATE api_counts SET n = n + COALESCE((SELECT sum(delta) FROM folded), 0) WHERE kind = $1";

/// The number of documents with each entry of the side table (one user's threads), kept as
/// the kinds' are: a sum per entry and a log of changes the side table's trigger appends (so
/// writers never wait on a counter row), folded into the sums by a count that finds many.
/// Made, and filled from the side table, when it does not exist yet (under the migration
/// lock, which holds writers off).
const ENTRY_COUNTS: &str = "
CREATE OR REPLACE FUNCTION api_meta_counted() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO api_meta_count_changes VALUES (OLD.kind, OLD.key, OLD.value, -1);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO api_meta_count_changes VALUES (NEW.kind, NEW.key, NEW.value, 1);
  END IF;
  RETURN NULL;
END $f$;
DO $m$ BEGIN
  IF to_regclass('api_meta_counts') IS NULL THEN
    CREATE TABLE api_meta_counts (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
        n BIGINT NOT NULL, PRIMARY KEY (kind, key, value));
    CREATE TABLE api_meta_count_changes (kind TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, delta INT NOT NULL);
    CREATE INDEX api_meta_count_changes_by_entry ON api_meta_count_changes (kind, key, value);
    INSERT INTO api_meta_counts (kind, key, value, n)
        SELECT kind, key, value, count(*) FROM api_meta GROUP BY kind, key, value;
    CREATE TRIGGER api_meta_counted AFTER INSERT OR DELETE ON api_meta
      FOR EACH ROW EXECUTE FUNCTION api_meta_counted();
    CREATE TRIGGER api_meta_recounted AFTER UPDATE ON api_meta FOR EACH ROW
      WHEN (OLD.kind IS DISTINCT FROM NEW.kind OR OLD.key IS DISTINCT FROM NEW.key
            OR OLD.value IS DISTINCT FROM NEW.value)
      EXECUTE FUNCTION api_meta_counted();
  END IF;
END $m$;
";

/// The number of documents of a kind with one metadata entry (`$1` kind, `$2` key, `$3`
/// the value as JSON): the sum and the changes since, and how many changes there are.
pub(super) const ENTRY_COUNTED: &str = "SELECT
       COALESCE((SELECT n FROM api_meta_counts
                 WHERE kind = $1 AND key = $2 AND value = ($3::text)::jsonb::text), 0)
     + COALESCE((SELECT sum(delta) FROM api_meta_count_changes
                 WHERE kind = $1 AND key = $2 AND value = ($3::text)::jsonb::text), 0),
     (SELECT count(*) FROM api_meta_count_changes
      WHERE kind = $1 AND key = $2 AND value = ($3::text)::jsonb::text)";

/// Folds every entry's changes into the sums (changes written meanwhile stay for the next
/// fold; two folds at once each take the rows the other did not).
pub(super) const ENTRY_FOLD: &str = "WITH folded AS (DELETE FROM api_meta_count_changes
         RETURNING kind, key, value, delta),
     summed AS (SELECT kind, key, value, sum(delta) AS n FROM folded GROUP BY kind, key, value)
     INSERT INTO api_meta_counts (kind, key, value, n) SELECT kind, key, value, n FROM summed
     ON CONFLICT (kind, key, value) DO UPDATE SET n = api_meta_counts.n + EXCLUDED.n";

/// Changes past which a count folds them.
pub(super) const FOLD_AFTER: i64 = 200;

/// Changes folded at once past which the change log is vacuumed (its dead rows would
/// otherwise be read by every count until autovacuum comes: 18 ms a count after 200,000).
pub(super) const VACUUM_AFTER: i64 = 5_000;

/// A statement and its values (text, text arrays and bigints, typed for an unprepared
/// query).
#[derive(Default)]
pub(super) struct Statement {
    pub(super) sql: String,
    params: Vec<(Box<dyn ToSql + Sync + Send>, Type)>,
}

impl Statement {
    fn bind_text(&mut self, value: String) -> String {
        self.params.push((Box::new(value), Type::TEXT));
        format!("${}", self.params.len())
    }

    fn bind_texts(&mut self, value: Vec<String>) -> String {
        self.params.push((Box::new(value), Type::TEXT_ARRAY));
        format!("${}", self.params.len())
    }

    fn bind_int(&mut self, value: i64) -> String {
        self.params.push((Box::new(value), Type::INT8));
        format!("${}", self.params.len())
    }

    /// A JSON value, bound as its text and read as `jsonb`.
    fn bind_json(&mut self, value: String) -> String {
        format!("{}::jsonb", self.bind_text(value))
    }

    /// The values, as `query_typed` takes them.
    pub(super) fn params(&self) -> Vec<(&(dyn ToSql + Sync), Type)> {
        self.params
            .iter()
            .map(|(v, t)| (v.as_ref() as &(dyn ToSql + Sync), t.clone()))
            .collect()
    }
}

/// Rows or their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Rows,
    Count,
}

/// What a failed build says (an order or field the kind does not have).
pub(super) type BuildError = String;

/// The document's `head` (or, for a table without one, the document) as `jsonb`.
fn head(table: Table) -> &'static str {
    match dropped(table) {
        Some(_) => "t.head",
        None => "(t.doc::jsonb)",
    }
}

fn column(table: Table, c: Column) -> String {
    match c {
        Column::Own(c) => format!("t.{c}"),
        Column::Doc(f) => format!("({} ->> '{f}')", head(table)),
    }
}

/// The conditions that the row matches `entries`: the side table's lookups by `id`, and
/// the others by `@>` on the metadata (the GIN index) with each value's JSON equality.
fn matches(s: &mut Statement, table: Table, id: &str, entries: &Entries) -> Vec<String> {
    let mut conds = Vec::new();
    let kind = table.indexed().unwrap_or_default();
    for pair in &entries.pairs {
        let key = s.bind_text(pair.key.clone());
        let value = s.bind_json(pair.json.clone());
        conds.push(format!(
            "EXISTS (SELECT 1 FROM api_meta m WHERE m.kind = '{kind}' AND m.id = {id} AND m.key = {key} AND m.value = {value}::text)"
        ));
    }
    if !entries.checked.is_empty() {
        let metadata = format!("({} -> 'metadata')", head(table));
        let all = s.bind_json(serde_json::Value::Object(entries.checked.clone()).to_string());
        conds.push(format!("{metadata} @> {all}"));
        for (key, value) in &entries.checked {
            let k = s.bind_text(key.clone());
            let v = s.bind_json(value.to_string());
            conds.push(format!("({metadata} -> {k}) = {v}"));
        }
    }
    conds
}

/// The statement of `query` on `table`; `None` when nothing can match.
pub(super) fn statement(
    table: Table,
    query: &Query,
    mode: Mode,
) -> Result<Option<Statement>, BuildError> {
    let required = query.required(table);
    if required.impossible {
        return Ok(None);
    }
    let (name, id) = (table.name(), table.id());
    let unknown = |what: &str, field: &str| format!("cannot {what} {name} by '{field}'");
    let sort = match &query.sort_by {
        Some(field) => Some((
            field.as_str(),
            table.column(field).ok_or_else(|| unknown("sort", field))?,
        )),
        None => None,
    };
    let mut s = Statement::default();
    let mut conds = Vec::new();
    let mut rest = required.clone();
    // The first required entry the side table holds starts the join (the planner may
    // start elsewhere); the rest are lookups.
    let start = match table.indexed() {
        Some(kind) if !rest.pairs.is_empty() => {
            let pair = rest.pairs.remove(0);
            let key = s.bind_text(pair.key);
            let value = s.bind_json(pair.json);
            conds.push(format!(
                "d.kind = '{kind}' AND d.key = {key} AND d.value = {value}::text"
            ));
            true
        }
        _ => false,
    };
    let only_entries = start
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
    conds.extend(matches(&mut s, table, &row_id, &rest));
    if let Some(scope) = query.scope_or_system(table) {
        let theirs = matches(&mut s, table, &row_id, &scope);
        if !theirs.is_empty() {
            conds.push(format!(
                "(({} -> 'metadata' -> 'created_by') = '\"system\"'::jsonb OR ({}))",
                head(table),
                theirs.join(" AND ")
            ));
        }
    }
    if !query.values.is_empty() {
        let values = "(t.doc::jsonb -> 'values')";
        let all = s.bind_json(serde_json::Value::Object(query.values.clone()).to_string());
        conds.push(format!("{values} @> {all}"));
        for (key, value) in &query.values {
            let k = s.bind_text(key.clone());
            let v = s.bind_json(value.to_string());
            conds.push(format!("({values} -> {k}) = {v}"));
        }
    }
    if let Some(status) = &query.status {
        let c = table
            .column("status")
            .ok_or_else(|| unknown("filter", "status"))?;
        let p = s.bind_text(status.clone());
        conds.push(format!("{} = {p}", column(table, c)));
    }
    if let Some(ids) = &query.ids {
        let p = s.bind_texts(ids.clone());
        conds.push(format!("t.{id} = ANY({p})"));
    }
    for (field, value) in &query.fields {
        let c = table
            .column(field)
            .ok_or_else(|| unknown("filter", field))?;
        conds.push(match (c, value) {
            (Column::Own(c), serde_json::Value::String(v)) => {
                format!("t.{c} = {}", s.bind_text(v.clone()))
            }
            (Column::Own(c), serde_json::Value::Null) => format!("t.{c} IS NULL"),
            (Column::Own(c), other) => {
                format!("to_jsonb(t.{c}) = {}", s.bind_json(other.to_string()))
            }
            (Column::Doc(f), other) => format!(
                "COALESCE({} -> '{f}', 'null'::jsonb) = {}",
                head(table),
                s.bind_json(other.to_string())
            ),
        });
    }
    if let Some(part) = &query.name {
        let p = s.bind_text(part.clone());
        conds.push(format!(
            "strpos(lower({} ->> 'name'), lower({p})) > 0",
            head(table)
        ));
    }
    let source = match (start, only_entries) {
        (true, true) => "api_meta d".to_owned(),
        (true, false) => format!("api_meta d JOIN {name} t ON t.{id} = d.id"),
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
        // PostgreSQL puts nulls last going up and first going down: as JSON `null` sorted
        // after strings.
        let dir = if query.descending { "DESC" } else { "ASC" };
        let order = match sort {
            None => format!("t.seq {dir}"),
            Some(("created_at", _)) if start => format!("d.created_at {dir}, d.seq {dir}"),
            Some((_, Column::Own(c))) if c == id => format!("t.{id} {dir}"),
            Some((_, c)) => format!("{} COLLATE \"C\" {dir}, t.seq {dir}", column(table, c)),
        };
        sql.push_str(&format!(" ORDER BY {order}"));
        if let Some(limit) = query.limit {
            let p = s.bind_int(limit.min(i64::MAX as usize) as i64);
            sql.push_str(&format!(" LIMIT {p}"));
        }
        if query.offset > 0 {
            let p = s.bind_int(query.offset.min(i64::MAX as usize) as i64);
            sql.push_str(&format!(" OFFSET {p}"));
        }
    }
    s.sql = sql;
    Ok(Some(s))
}
