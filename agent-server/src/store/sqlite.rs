//! The run store in a SQLite file: one process holds it (wake-ups, cancels and streams
//! stay in that process). A run left `running` by a process that stopped is queued again
//! when the file is opened: its checkpoints let it resume.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{Kind, RunStore, StoreError, StoreResult};

fn failed(op: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |e| StoreError {
        op,
        message: e.to_string(),
    }
}

/// The run store in a SQLite file (or in memory), for one process.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS api_assistants (assistant_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_assistant_versions (assistant_id TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
CREATE TABLE IF NOT EXISTS api_threads (thread_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_thread ON api_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS runs_by_status ON api_runs (status, seq);
CREATE TABLE IF NOT EXISTS api_seq (n INTEGER NOT NULL);
";

impl SqliteStore {
    /// Opens (creating) the store in the SQLite file at `path`. Runs left `running` by a
    /// process that stopped are queued again: their checkpoints let them resume.
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let conn = Connection::open(path).map_err(failed("open"))?;
        Self::init(conn)
    }

    /// A store that lives in memory (tests, stateless use).
    pub fn in_memory() -> StoreResult<Self> {
        Self::init(Connection::open_in_memory().map_err(failed("open"))?)
    }

    fn init(conn: Connection) -> StoreResult<Self> {
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(failed("busy_timeout"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(failed("journal_mode"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(failed("synchronous"))?;
        conn.execute_batch(SCHEMA).map_err(failed("schema"))?;
        let requeued: Vec<(String, String)> = {
            let mut stmt = conn
                .prepare("SELECT run_id, doc FROM api_runs WHERE status = 'running'")
                .map_err(failed("requeue"))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(failed("requeue"))?
                .collect::<Result<_, _>>()
                .map_err(failed("requeue"))?
        };
        for (id, doc) in requeued {
            let mut doc: Value = serde_json::from_str(&doc).unwrap_or(Value::Null);
            doc["status"] = "pending".into();
            let attempt = doc["attempt"].as_i64().unwrap_or(1);
            doc["attempt"] = (attempt + 1).into();
            conn.execute(
                "UPDATE api_runs SET status = 'pending', doc = ?2 WHERE run_id = ?1",
                params![id, doc.to_string()],
            )
            .map_err(failed("requeue"))?;
        }
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    async fn with<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|_| StoreError {
                op,
                message: "a previous operation panicked".to_owned(),
            })?;
            f(&mut guard).map_err(failed(op))
        })
        .await
        .map_err(|e| StoreError {
            op,
            message: e.to_string(),
        })?
    }
}

fn parse(rows: Vec<String>) -> Vec<Value> {
    rows.iter()
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn next_seq(conn: &Connection) -> rusqlite::Result<i64> {
    let n: Option<i64> = conn
        .query_row("SELECT n FROM api_seq", [], |r| r.get(0))
        .optional()?;
    let next = n.unwrap_or(0) + 1;
    if n.is_some() {
        conn.execute("UPDATE api_seq SET n = ?1", [next])?;
    } else {
        conn.execute("INSERT INTO api_seq (n) VALUES (?1)", [next])?;
    }
    Ok(next)
}

fn write(conn: &Connection, kind: Kind, doc: &Value, replace: bool) -> rusqlite::Result<bool> {
    let id = kind.id_of(doc);
    let exists: Option<i64> = conn
        .query_row(
            &format!("SELECT seq FROM {} WHERE {} = ?1", kind.table(), kind.key()),
            [&id],
            |r| r.get(0),
        )
        .optional()?;
    if exists.is_some() && !replace {
        return Ok(false);
    }
    let seq = match exists {
        Some(seq) => seq,
        None => next_seq(conn)?,
    };
    let text = doc.to_string();
    match kind {
        Kind::Run => {
            let thread = doc["thread_id"].as_str().unwrap_or_default();
            let status = doc["status"].as_str().unwrap_or("pending");
            conn.execute(
                "INSERT OR REPLACE INTO api_runs (run_id, thread_id, status, doc, seq) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, thread, status, text, seq],
            )?;
        }
        _ => {
            conn.execute(
                &format!(
                    "INSERT OR REPLACE INTO {} ({}, doc, seq) VALUES (?1, ?2, ?3)",
                    kind.table(),
                    kind.key()
                ),
                params![id, text, seq],
            )?;
        }
    }
    Ok(true)
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn put(&self, kind: Kind, doc: &Value) -> StoreResult<()> {
        let doc = doc.clone();
        self.with("put", move |c| write(c, kind, &doc, true).map(|_| ()))
            .await
    }

    async fn insert(&self, kind: Kind, doc: &Value) -> StoreResult<bool> {
        let doc = doc.clone();
        self.with("insert", move |c| {
            // IMMEDIATE: a transaction that reads and then writes takes the write lock first;
            // a deferred one fails at once ("database is locked", no busy wait) when the
            // checkpointer's connection committed in between.
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let inserted = write(&tx, kind, &doc, false)?;
            tx.commit()?;
            Ok(inserted)
        })
        .await
    }

    async fn get(&self, kind: Kind, id: &str) -> StoreResult<Option<Value>> {
        let id = id.to_owned();
        let doc: Option<String> = self
            .with("get", move |c| {
                c.query_row(
                    &format!("SELECT doc FROM {} WHERE {} = ?1", kind.table(), kind.key()),
                    [id],
                    |r| r.get(0),
                )
                .optional()
            })
            .await?;
        Ok(doc.and_then(|d| serde_json::from_str(&d).ok()))
    }

    async fn all(&self, kind: Kind) -> StoreResult<Vec<Value>> {
        let rows = self
            .with("list", move |c| {
                let mut stmt =
                    c.prepare(&format!("SELECT doc FROM {} ORDER BY seq", kind.table()))?;
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn delete(&self, kind: Kind, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.with("delete", move |c| {
            let n = c.execute(
                &format!("DELETE FROM {} WHERE {} = ?1", kind.table(), kind.key()),
                [&id],
            )?;
            if kind == Kind::Assistant {
                c.execute(
                    "DELETE FROM api_assistant_versions WHERE assistant_id = ?1",
                    [&id],
                )?;
            }
            if kind == Kind::Thread {
                c.execute("DELETE FROM api_runs WHERE thread_id = ?1", [&id])?;
            }
            Ok(n > 0)
        })
        .await
    }

    async fn runs_of(&self, thread_id: &str) -> StoreResult<Vec<Value>> {
        let id = thread_id.to_owned();
        let rows = self
            .with("runs of thread", move |c| {
                let mut stmt =
                    c.prepare("SELECT doc FROM api_runs WHERE thread_id = ?1 ORDER BY seq")?;
                stmt.query_map([id], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn put_version(&self, assistant_id: &str, version: i64, doc: &Value) -> StoreResult<()> {
        let (id, text) = (assistant_id.to_owned(), doc.to_string());
        self.with("put version", move |c| {
            c.execute(
                "INSERT OR REPLACE INTO api_assistant_versions (assistant_id, version, doc) VALUES (?1, ?2, ?3)",
                params![id, version, text],
            )
            .map(|_| ())
        })
        .await
    }

    async fn versions(&self, assistant_id: &str) -> StoreResult<Vec<Value>> {
        let id = assistant_id.to_owned();
        let rows = self
            .with("versions", move |c| {
                let mut stmt = c.prepare(
                    "SELECT doc FROM api_assistant_versions WHERE assistant_id = ?1 ORDER BY version DESC",
                )?;
                stmt.query_map([id], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn claim(&self, _owner: &str, _lease: Duration) -> StoreResult<Option<Value>> {
        // One process holds the file: a run is this process's until it ends.
        self.with("claim", |c| {
            // IMMEDIATE: a transaction that reads and then writes takes the write lock first;
            // a deferred one fails at once ("database is locked", no busy wait) when the
            // checkpointer's connection committed in between.
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let row: Option<(String, String)> = tx
                .query_row(
                    "SELECT run_id, doc FROM api_runs r WHERE status = 'pending'
                       AND COALESCE(json_extract(doc, '$.kwargs.not_before_ms'), 0) <= ?1
                       AND NOT EXISTS (SELECT 1 FROM api_runs o WHERE o.thread_id = r.thread_id AND o.status = 'running')
                       AND NOT EXISTS (SELECT 1 FROM api_runs e WHERE e.thread_id = r.thread_id AND e.status = 'pending' AND e.seq < r.seq)
                     ORDER BY seq LIMIT 1",
                    [crate::time::now_ms()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((id, doc)) = row else {
                return Ok(None);
            };
            let mut doc: Value = serde_json::from_str(&doc).unwrap_or(Value::Null);
            doc["status"] = "running".into();
            doc["updated_at"] = crate::time::now_iso().into();
            tx.execute(
                "UPDATE api_runs SET status = 'running', doc = ?2 WHERE run_id = ?1",
                params![id, doc.to_string()],
            )?;
            tx.commit()?;
            Ok(Some(doc))
        })
        .await
    }

    async fn renew(
        &self,
        run_id: &str,
        _owner: &str,
        _lease: Duration,
    ) -> StoreResult<Option<Option<String>>> {
        let id = run_id.to_owned();
        let status: Option<String> = self
            .with("renew", move |c| {
                c.query_row("SELECT status FROM api_runs WHERE run_id = ?1", [id], |r| {
                    r.get(0)
                })
                .optional()
            })
            .await?;
        Ok((status.as_deref() == Some("running")).then_some(None))
    }

    async fn requeue_expired(&self, _max_attempts: i64) -> StoreResult<usize> {
        // Leases are for many processes; one process requeues at open.
        Ok(0)
    }

    async fn cancel_pending(&self, doc: &Value) -> StoreResult<bool> {
        let id = Kind::Run.id_of(doc);
        let text = doc.to_string();
        self.with("cancel pending", move |c| {
            c.execute(
                "UPDATE api_runs SET status = 'interrupted', doc = ?2 WHERE run_id = ?1 AND status = 'pending'",
                params![id, text],
            )
            .map(|n| n > 0)
        })
        .await
    }

    async fn request_cancel(&self, _run_id: &str, _action: &str) -> StoreResult<()> {
        // The run executes in this process: its channel carries the cancel.
        Ok(())
    }
}
