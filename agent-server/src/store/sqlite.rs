//! The run store in a SQLite file: one process holds it (wake-ups, cancels and streams
//! stay in that process). A run left `running` by a process that stopped is queued again
//! when the file is opened: its checkpoints let it resume.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use agent_core::sqlite::{Tx, wait_when_busy};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::query::Table;
use super::{
    Claim, CronAdvance, Enqueued, Kind, PING, Query, Queueing, RUN_COUNTS, RunStore, StoreError,
    StoreResult, ThreadEnd, Token, sqlite_search,
};

fn failed(op: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError {
    move |e| match &e {
        // A full disk, or one that fails: the write may pass later.
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::CannotOpen
            ) =>
        {
            StoreError::unavailable(op, format!("the database file cannot be written now ({e})"))
        }
        _ => StoreError::failed(op, e.to_string()),
    }
}

/// Why a claimed run's write was refused, if it was: the run must still be `running` in
/// `token`'s attempt.
fn fence(conn: &Connection, run_id: &str, token: &Token) -> rusqlite::Result<bool> {
    let held: Option<i64> = conn
        .prepare_cached(
            "SELECT COALESCE(json_extract(doc, '$.attempt'), 1) FROM api_runs
             WHERE run_id = ?1 AND status = 'running'",
        )?
        .query_row([run_id], |r| r.get(0))
        .optional()?;
    Ok(held == Some(token.attempt))
}

/// The run store in a SQLite file (or in memory), for one process.
#[derive(Clone)]
pub struct SqliteStore {
    /// Operations take it in turn (asynchronously: a waiting one holds no thread).
    conn: Arc<Mutex<Connection>>,
    seq: Arc<Seq>,
}

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS api_assistants (assistant_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_assistant_versions (assistant_id TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
CREATE TABLE IF NOT EXISTS api_threads (thread_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_thread ON api_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS runs_by_status ON api_runs (status, seq);
CREATE TABLE IF NOT EXISTS api_seq (n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS api_crons (cron_id TEXT PRIMARY KEY, thread_id TEXT, next_run_ms INTEGER, doc TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS crons_due ON api_crons (next_run_ms);
CREATE INDEX IF NOT EXISTS crons_by_thread ON api_crons (thread_id);
CREATE INDEX IF NOT EXISTS threads_busy ON api_threads (thread_id)
    WHERE json_extract(doc, '$.status') = 'busy';
CREATE INDEX IF NOT EXISTS threads_expiry ON api_threads (json_extract(doc, '$.ttl.expires_at_ms'))
    WHERE json_extract(doc, '$.ttl.expires_at_ms') IS NOT NULL;
";

impl SqliteStore {
    /// Opens (creating) the store in the SQLite file at `path`. Runs left `running` by a
    /// process that stopped are queued again: their checkpoints let them resume (3 attempts
    /// at most: see [`open_with`](Self::open_with)).
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path, crate::Leases::default().max_attempts)
    }

    /// [`open`](Self::open), a run left `running` being started at most `max_attempts`
    /// times in all: past that it ends `error` and its thread is released, so a run that
    /// crashes the process does not crash every start after it.
    pub fn open_with(path: impl AsRef<Path>, max_attempts: i64) -> StoreResult<Self> {
        let conn = Connection::open(path).map_err(failed("open"))?;
        Self::init(conn, max_attempts)
    }

    /// A store that lives in memory (tests, stateless use).
    pub fn in_memory() -> StoreResult<Self> {
        Self::init(
            Connection::open_in_memory().map_err(failed("open"))?,
            crate::Leases::default().max_attempts,
        )
    }

    fn init(mut conn: Connection, max_attempts: i64) -> StoreResult<Self> {
        wait_when_busy(&mut conn).map_err(failed("busy handler"))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(failed("journal_mode"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(failed("synchronous"))?;
        // A fixed plan per statement: SQLite (built with STAT4) otherwise re-prepares a cached
        // query whenever a bound value changes (the claim's clock, every call).
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map_err(failed("db config"))?;
        conn.execute_batch(SCHEMA).map_err(failed("schema"))?;
        conn.set_prepared_statement_cache_capacity(64);
        sqlite_search::functions(&conn).map_err(failed("functions"))?;
        sqlite_search::migrate(&mut conn).map_err(failed("migrate"))?;
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
            let attempt = doc["attempt"].as_i64().unwrap_or(1) + 1;
            doc["attempt"] = attempt.into();
            doc["updated_at"] = crate::time::now_iso().into();
            // A run whose stop was acknowledged is queued again whatever its attempts: its
            // next claim applies the stop before it starts.
            let status = if attempt > max_attempts && doc["stop_asked"].is_null() {
                "error"
            } else {
                "pending"
            };
            doc["status"] = status.into();
            conn.execute(
                "UPDATE api_runs SET status = ?3, doc = ?2 WHERE run_id = ?1",
                params![id, doc.to_string(), status],
            )
            .map_err(failed("requeue"))?;
            if status == "error" {
                tracing::error!(run_id = %id, attempts = attempt - 1, "a run was started as often as it may be and never ended; it ends `error`");
                release_thread(
                    &conn,
                    doc["thread_id"].as_str().unwrap_or_default(),
                    attempt - 1,
                )
                .map_err(failed("requeue"))?;
            }
        }
        // Documents written before keep their order: new ones come after the latest.
        let mut latest = 0i64;
        for sql in [
            "SELECT COALESCE(MAX(n), 0) FROM api_seq",
            "SELECT COALESCE(MAX(seq), 0) FROM api_assistants",
            "SELECT COALESCE(MAX(seq), 0) FROM api_threads",
            "SELECT COALESCE(MAX(seq), 0) FROM api_runs",
        ] {
            let n: i64 = conn
                .query_row(sql, [], |r| r.get(0))
                .map_err(failed("order"))?;
            latest = latest.max(n);
        }
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            seq: Arc::new(Seq(AtomicI64::new(latest))),
        })
    }

    /// Runs `f` with the connection on the caller's thread (the hand-off to a blocking
    /// thread and back costs more than a small operation itself), once this process's other
    /// operations on it are done: they are waited for without holding a thread, in the order
    /// the operations asked. Only when SQLite reports the database busy (another connection
    /// holds the write lock: the checkpointer's, another process's) does `f` run again on the
    /// blocking pool, where it waits for that lock up to the busy timeout. `f` must be atomic
    /// (one transaction or one statement): the try that found the database busy rolled back.
    async fn with<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let mut conn = self.conn.clone().lock_owned().await;
        if conn.busy_timeout(Duration::ZERO).is_ok() {
            let tried = f(&mut conn);
            if let Err(e) = wait_when_busy(&mut conn) {
                tracing::warn!(error = %e, "could not restore the SQLite busy timeout");
            }
            match tried {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy => {}
                done => return done.map_err(failed(op)),
            }
        }
        Self::on_blocking_pool(op, conn, f).await
    }

    /// Runs `f` with the connection on the blocking pool (long reads), once this process's
    /// other operations on it are done.
    async fn blocking<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let conn = self.conn.clone().lock_owned().await;
        Self::on_blocking_pool(op, conn, f).await
    }

    /// Runs `f` on the blocking pool with the connection this caller holds (it is released
    /// there, when `f` is done, even if the caller stopped waiting).
    async fn on_blocking_pool<T: Send + 'static>(
        op: &'static str,
        mut conn: OwnedMutexGuard<Connection>,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        tokio::task::spawn_blocking(move || f(&mut conn).map_err(failed(op)))
            .await
            .map_err(|e| StoreError::failed(op, e.to_string()))?
    }
}

fn parse(rows: Vec<String>) -> Vec<Value> {
    rows.iter()
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// The order of documents (`seq`): the next is later than every one before it in this
/// process and, across processes, than every one written a microsecond earlier, without
/// a row every write would have to update.
#[derive(Debug)]
struct Seq(AtomicI64);

impl Seq {
    fn next(&self) -> i64 {
        let now = jiff::Timestamp::now().as_microsecond();
        let prev = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some((last + 1).max(now))
            })
            .unwrap_or(now);
        (prev + 1).max(now)
    }
}

/// Writes `doc` (inserting, or replacing it when `replace`, keeping its place in the
/// order); whether it was written. Call inside a transaction.
fn write(
    conn: &Connection,
    seq: &Seq,
    kind: Kind,
    doc: &Value,
    replace: bool,
) -> rusqlite::Result<bool> {
    let id = kind.id_of(doc);
    let exists: Option<i64> = conn
        .prepare_cached(&format!(
            "SELECT seq FROM {} WHERE {} = ?1",
            kind.table(),
            kind.key()
        ))?
        .query_row([&id], |r| r.get(0))
        .optional()?;
    if exists.is_some() && !replace {
        return Ok(false);
    }
    let seq = match exists {
        Some(seq) => seq,
        None => seq.next(),
    };
    let text = doc.to_string();
    match kind {
        Kind::Run => {
            let thread = doc["thread_id"].as_str().unwrap_or_default();
            let status = doc["status"].as_str().unwrap_or("pending");
            conn.prepare_cached(
                "INSERT OR REPLACE INTO api_runs (run_id, thread_id, status, doc, seq) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![id, thread, status, text, seq])?;
        }
        _ => {
            conn.prepare_cached(&format!(
                "INSERT OR REPLACE INTO {} ({}, doc, seq) VALUES (?1, ?2, ?3)",
                kind.table(),
                kind.key()
            ))?
            .execute(params![id, text, seq])?;
        }
    }
    Ok(true)
}

/// Deletes a document (an assistant with its versions, a thread with its runs); whether it
/// existed. Call inside a transaction.
fn remove(conn: &Connection, kind: Kind, id: &str) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(&format!(
            "DELETE FROM {} WHERE {} = ?1",
            kind.table(),
            kind.key()
        ))?
        .execute([id])?;
    match kind {
        Kind::Assistant => {
            conn.prepare_cached("DELETE FROM api_assistant_versions WHERE assistant_id = ?1")?
                .execute([id])?;
        }
        Kind::Thread => {
            conn.prepare_cached("DELETE FROM api_runs WHERE thread_id = ?1")?
                .execute([id])?;
            conn.prepare_cached("DELETE FROM api_crons WHERE thread_id = ?1")?
                .execute([id])?;
        }
        Kind::Run => {}
    }
    Ok(n > 0)
}

/// A thread's document as stored now with `fresh`'s state fields and its busy status;
/// `None` when the thread is gone. Call inside the transaction that writes it.
fn with_state(conn: &Connection, fresh: &Value) -> rusqlite::Result<Option<Value>> {
    let current: Option<String> = conn
        .prepare_cached("SELECT doc FROM api_threads WHERE thread_id = ?1")?
        .query_row([Kind::Thread.id_of(fresh)], |r| r.get(0))
        .optional()?;
    let Some(current) = current else {
        return Ok(None);
    };
    let current: Value = serde_json::from_str(&current).unwrap_or(Value::Null);
    with_busy(conn, &super::with_state_of(current, fresh)).map(Some)
}

/// `doc` (a thread's) with its status `busy` while a run of it is pending or running. Call
/// inside the transaction that writes it.
fn with_busy(conn: &Connection, doc: &Value) -> rusqlite::Result<Value> {
    let active: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM api_runs WHERE thread_id = ?1 AND status IN ('pending', 'running')",
        )?
        .query_row([Kind::Thread.id_of(doc)], |r| r.get(0))?;
    let mut doc = doc.clone();
    if active > 0 {
        doc["status"] = "busy".into();
    }
    Ok(doc)
}

/// A thread whose run was abandoned (started as often as it may be) is no longer busy: it
/// shows the error, unless another run of it is pending.
fn release_thread(conn: &Connection, thread_id: &str, attempts: i64) -> rusqlite::Result<()> {
    let active: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM api_runs WHERE thread_id = ?1 AND status IN ('pending', 'running')",
        )?
        .query_row([thread_id], |r| r.get(0))?;
    if active > 0 {
        return Ok(());
    }
    let doc: Option<String> = conn
        .prepare_cached("SELECT doc FROM api_threads WHERE thread_id = ?1")?
        .query_row([thread_id], |r| r.get(0))
        .optional()?;
    if let Some(doc) = doc {
        let mut doc: Value = serde_json::from_str(&doc).unwrap_or(Value::Null);
        doc["status"] = "error".into();
        doc["error"] = super::abandoned(attempts);
        doc["updated_at"] = crate::time::now_iso().into();
        conn.prepare_cached("UPDATE api_threads SET doc = ?2 WHERE thread_id = ?1")?
            .execute(params![thread_id, doc.to_string()])?;
    }
    Ok(())
}

/// Marks the pending run `doc` running (now) when its thread runs nothing else and its
/// time has come; the run as claimed. Call inside an IMMEDIATE transaction.
fn claim_one(conn: &Connection, run_id: &str, doc: &str) -> rusqlite::Result<Option<Value>> {
    let mut doc: Value = serde_json::from_str(doc).unwrap_or(Value::Null);
    doc["status"] = "running".into();
    doc["updated_at"] = crate::time::now_iso().into();
    conn.prepare_cached("UPDATE api_runs SET status = 'running', doc = ?2 WHERE run_id = ?1")?
        .execute(params![run_id, doc.to_string()])?;
    Ok(Some(doc))
}

/// The oldest pending run whose thread runs nothing else and whose time has come: its id
/// and document.
fn next_pending(conn: &Connection) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached(
        "SELECT run_id, doc FROM api_runs r WHERE status = 'pending'
           AND COALESCE(json_extract(doc, '$.kwargs.not_before_ms'), 0) <= ?1
           AND NOT EXISTS (SELECT 1 FROM api_runs o WHERE o.thread_id = r.thread_id AND o.status = 'running')
           AND NOT EXISTS (SELECT 1 FROM api_runs e WHERE e.thread_id = r.thread_id AND e.status = 'pending' AND e.seq < r.seq)
         ORDER BY seq LIMIT 1",
    )?
    .query_row([crate::time::now_ms()], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
}

/// Claims the next pending run ([`next_pending`]); the run as claimed. Call inside an
/// IMMEDIATE transaction.
fn claim_next(conn: &Connection) -> rusqlite::Result<Option<Value>> {
    match next_pending(conn)? {
        Some((id, doc)) => claim_one(conn, &id, &doc),
        None => Ok(None),
    }
}

/// A write transaction (it takes the write lock first: see [`Tx::write`]).
fn immediate(conn: &mut Connection) -> rusqlite::Result<Tx<'_>> {
    Tx::write(conn)
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn put(&self, kind: Kind, doc: &Value) -> StoreResult<()> {
        let doc = doc.clone();
        let seq = self.seq.clone();
        self.with("put", move |c| {
            let tx = immediate(c)?;
            write(&tx, &seq, kind, &doc, true)?;
            tx.commit()
        })
        .await
    }

    async fn update(&self, kind: Kind, doc: &Value) -> StoreResult<bool> {
        let doc = doc.clone();
        self.with("update", move |c| {
            let tx = immediate(c)?;
            let doc = match kind {
                Kind::Thread => with_busy(&tx, &doc)?,
                _ => doc.clone(),
            };
            let n = tx
                .prepare_cached(&format!(
                    "UPDATE {} SET doc = ?2 WHERE {} = ?1",
                    kind.table(),
                    kind.key()
                ))?
                .execute(params![kind.id_of(&doc), doc.to_string()])?;
            tx.commit()?;
            Ok(n > 0)
        })
        .await
    }

    async fn refresh_thread(&self, fresh: &Value) -> StoreResult<bool> {
        let fresh = fresh.clone();
        self.with("refresh thread", move |c| {
            let tx = immediate(c)?;
            let Some(doc) = with_state(&tx, &fresh)? else {
                return Ok(false);
            };
            tx.prepare_cached("UPDATE api_threads SET doc = ?2 WHERE thread_id = ?1")?
                .execute(params![Kind::Thread.id_of(&doc), doc.to_string()])?;
            tx.commit()?;
            Ok(true)
        })
        .await
    }

    async fn insert(&self, kind: Kind, doc: &Value) -> StoreResult<bool> {
        let doc = doc.clone();
        let seq = self.seq.clone();
        self.with("insert", move |c| {
            let tx = immediate(c)?;
            let inserted = write(&tx, &seq, kind, &doc, false)?;
            tx.commit()?;
            Ok(inserted)
        })
        .await
    }

    async fn get(&self, kind: Kind, id: &str) -> StoreResult<Option<Value>> {
        let id = id.to_owned();
        let doc: Option<String> = self
            .with("get", move |c| {
                c.prepare_cached(&format!(
                    "SELECT doc FROM {} WHERE {} = ?1",
                    kind.table(),
                    kind.key()
                ))?
                .query_row([&id], |r| r.get(0))
                .optional()
            })
            .await?;
        Ok(doc.and_then(|d| serde_json::from_str(&d).ok()))
    }

    async fn all(&self, kind: Kind) -> StoreResult<Vec<Value>> {
        let rows = self
            .blocking("list", move |c| {
                let mut stmt =
                    c.prepare(&format!("SELECT doc FROM {} ORDER BY seq", kind.table()))?;
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn search(&self, kind: Kind, query: &Query) -> StoreResult<Vec<Value>> {
        let query = query.clone();
        self.with("search", move |c| {
            sqlite_search::search(c, Table::from(kind), &query)
        })
        .await
    }

    async fn count(&self, kind: Kind, query: &Query) -> StoreResult<u64> {
        let query = query.clone();
        self.with("count", move |c| {
            sqlite_search::count(c, Table::from(kind), &query)
        })
        .await
    }

    async fn run_counts(&self) -> StoreResult<Vec<(String, u64)>> {
        self.blocking("count runs", |c| {
            let mut stmt = c.prepare_cached(RUN_COUNTS)?;
            stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
                .map(|row| row.map(|(status, n)| (status, n.max(0) as u64)))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
    }

    async fn ping(&self) -> StoreResult<()> {
        self.with("health check", |c| {
            c.prepare_cached(PING)?
                .query_row([], |_| Ok(()))
                .optional()
                .map(drop)
        })
        .await
    }

    async fn delete(&self, kind: Kind, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.with("delete", move |c| {
            let tx = immediate(c)?;
            let existed = remove(&tx, kind, &id)?;
            tx.commit()?;
            Ok(existed)
        })
        .await
    }

    async fn delete_thread(&self, id: &str) -> StoreResult<Vec<String>> {
        let id = id.to_owned();
        self.with("delete thread", move |c| {
            let tx = immediate(c)?;
            let claimed = tx
                .prepare_cached(
                    "SELECT run_id FROM api_runs WHERE thread_id = ?1 AND status = 'running'",
                )?
                .query_map([&id], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            remove(&tx, Kind::Thread, &id)?;
            tx.commit()?;
            Ok(claimed)
        })
        .await
    }

    async fn runs_of(&self, thread_id: &str) -> StoreResult<Vec<Value>> {
        let id = thread_id.to_owned();
        let rows = self
            .with("runs of thread", move |c| {
                let mut stmt =
                    c.prepare_cached("SELECT doc FROM api_runs WHERE thread_id = ?1 ORDER BY seq")?;
                stmt.query_map([&id], |r| r.get::<_, String>(0))?
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
            .blocking("versions", move |c| {
                let mut stmt = c.prepare(
                    "SELECT doc FROM api_assistant_versions WHERE assistant_id = ?1 ORDER BY version DESC",
                )?;
                stmt.query_map([&id], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn claim(&self, _owner: &str, _lease: Duration) -> StoreResult<Option<Value>> {
        // One process holds the file: a run is this process's until it ends.
        self.with("claim", |c| {
            // Most looks find nothing: they take no write lock.
            if next_pending(c)?.is_none() {
                return Ok(None);
            }
            let tx = immediate(c)?;
            let claimed = claim_next(&tx)?;
            tx.commit()?;
            Ok(claimed)
        })
        .await
    }

    async fn enqueue(
        &self,
        thread: &Value,
        run: &Value,
        claim: Option<Claim<'_>>,
        how: Queueing,
    ) -> StoreResult<Enqueued> {
        let (thread, run, claim) = (thread.clone(), run.clone(), claim.is_some());
        let seq = self.seq.clone();
        self.with("enqueue", move |c| {
            let tx = immediate(c)?;
            let run_id = Kind::Run.id_of(&run);
            let thread_id = Kind::Thread.id_of(&thread);
            if !how.new_thread {
                let there: Option<i64> = tx
                    .prepare_cached("SELECT 1 FROM api_threads WHERE thread_id = ?1")?
                    .query_row([&thread_id], |r| r.get(0))
                    .optional()?;
                if there.is_none() {
                    return Ok(Enqueued::ThreadGone);
                }
            }
            let others: i64 = tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM api_runs WHERE thread_id = ?1 AND run_id <> ?2
                       AND status IN ('pending', 'running')",
                )?
                .query_row(params![thread_id, run_id], |r| r.get(0))?;
            if how.reject_busy && others > 0 {
                return Ok(Enqueued::Busy);
            }
            write(&tx, &seq, Kind::Thread, &thread, true)?;
            write(&tx, &seq, Kind::Run, &run, false)?;
            let due = run["kwargs"]["not_before_ms"]
                .as_i64()
                .is_none_or(|t| t <= crate::time::now_ms());
            let claimed = if claim && due && others == 0 {
                claim_one(&tx, &run_id, &run.to_string())?
            } else {
                None
            };
            tx.commit()?;
            Ok(claimed.map_or(Enqueued::Queued, Enqueued::Claimed))
        })
        .await
    }

    async fn finish(
        &self,
        run: &Value,
        thread: ThreadEnd,
        token: &Token,
        _result: &Value,
        next: Option<Claim<'_>>,
    ) -> StoreResult<Option<Value>> {
        let (run, next, token) = (run.clone(), next.is_some(), token.clone());
        let seq = self.seq.clone();
        let run_id = Kind::Run.id_of(&run);
        let fenced = self
            .with("finish run", move |c| {
                let tx = immediate(c)?;
                if !fence(&tx, &run_id, &token)? {
                    return Ok(None);
                }
                match &thread {
                    ThreadEnd::Delete(id) => {
                        remove(&tx, Kind::Thread, id)?;
                    }
                    ThreadEnd::Put(doc) => {
                        write(&tx, &seq, Kind::Run, &run, true)?;
                        if let Some(doc) = with_state(&tx, doc)? {
                            write(&tx, &seq, Kind::Thread, &doc, true)?;
                        }
                    }
                    ThreadEnd::Gone => {
                        write(&tx, &seq, Kind::Run, &run, true)?;
                    }
                }
                let claimed = if next { claim_next(&tx)? } else { None };
                tx.commit()?;
                Ok(Some(claimed))
            })
            .await?;
        fenced.ok_or_else(|| StoreError::fenced("finish run"))
    }

    async fn delete_claimed(&self, run_id: &str, token: &Token) -> StoreResult<()> {
        let (id, token) = (run_id.to_owned(), token.clone());
        let deleted = self
            .with("delete run", move |c| {
                let tx = immediate(c)?;
                if !fence(&tx, &id, &token)? {
                    return Ok(false);
                }
                remove(&tx, Kind::Run, &id)?;
                tx.commit()?;
                Ok(true)
            })
            .await?;
        if deleted {
            Ok(())
        } else {
            Err(StoreError::fenced("delete run"))
        }
    }

    async fn renew(
        &self,
        run_id: &str,
        token: &Token,
        _lease: Duration,
    ) -> StoreResult<Option<Option<String>>> {
        let (id, token) = (run_id.to_owned(), token.clone());
        let held = self.with("renew", move |c| fence(c, &id, &token)).await?;
        Ok(held.then_some(None))
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

    async fn request_cancel(&self, run_id: &str, action: &str) -> StoreResult<bool> {
        // The run executes in this process and its channel carries the stop; the stop is
        // also kept in its document, so one acknowledged to a client survives the process
        // stopping: the run, queued again at the next start, applies it before it starts.
        // A rollback asked for is not weakened by a later stop.
        let (id, action) = (run_id.to_owned(), action.to_owned());
        self.with("request cancel", move |c| {
            let tx = immediate(c)?;
            let asked: Option<Option<String>> = tx
                .prepare_cached(
                    "SELECT json_extract(doc, '$.stop_asked') FROM api_runs
                      WHERE run_id = ?1 AND status = 'running'",
                )?
                .query_row([&id], |r| r.get(0))
                .optional()?;
            let Some(asked) = asked else {
                return Ok(false);
            };
            if asked.as_deref() != Some("rollback") {
                tx.prepare_cached(
                    "UPDATE api_runs SET doc = json_set(doc, '$.stop_asked', ?2) WHERE run_id = ?1",
                )?
                .execute(params![id, action])?;
            }
            tx.commit()?;
            Ok(true)
        })
        .await
    }

    async fn put_cron(&self, doc: &Value, next_run_ms: Option<i64>) -> StoreResult<()> {
        let doc = doc.clone();
        let seq = self.seq.clone();
        self.with("put cron", move |c| {
            let id = doc["cron_id"].as_str().unwrap_or_default();
            let thread = doc["thread_id"].as_str();
            let kept: Option<i64> = c
                .prepare_cached("SELECT seq FROM api_crons WHERE cron_id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            let order = kept.unwrap_or_else(|| seq.next());
            c.prepare_cached(
                "INSERT OR REPLACE INTO api_crons (cron_id, thread_id, next_run_ms, doc, seq) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![id, thread, next_run_ms, doc.to_string(), order])
            .map(drop)
        })
        .await
    }

    async fn get_cron(&self, cron_id: &str) -> StoreResult<Option<Value>> {
        let id = cron_id.to_owned();
        let doc: Option<String> = self
            .with("get cron", move |c| {
                c.prepare_cached("SELECT doc FROM api_crons WHERE cron_id = ?1")?
                    .query_row([&id], |r| r.get(0))
                    .optional()
            })
            .await?;
        Ok(doc.and_then(|d| serde_json::from_str(&d).ok()))
    }

    async fn crons(&self) -> StoreResult<Vec<Value>> {
        let rows = self
            .blocking("list crons", |c| {
                let mut stmt = c.prepare("SELECT doc FROM api_crons ORDER BY seq")?;
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
        Ok(parse(rows))
    }

    async fn search_crons(&self, query: &Query) -> StoreResult<Vec<Value>> {
        let query = query.clone();
        self.with("search crons", move |c| {
            sqlite_search::search(c, Table::Crons, &query)
        })
        .await
    }

    async fn count_crons(&self, query: &Query) -> StoreResult<u64> {
        let query = query.clone();
        self.with("count crons", move |c| {
            sqlite_search::count(c, Table::Crons, &query)
        })
        .await
    }

    async fn delete_cron(&self, cron_id: &str) -> StoreResult<bool> {
        let id = cron_id.to_owned();
        self.with("delete cron", move |c| {
            c.prepare_cached("DELETE FROM api_crons WHERE cron_id = ?1")?
                .execute([&id])
                .map(|n| n > 0)
        })
        .await
    }

    async fn claim_expired_threads(
        &self,
        now_ms: i64,
        limit: usize,
        hold_ms: i64,
    ) -> StoreResult<Vec<Value>> {
        self.with("claim expired threads", move |c| {
            const DUE: &str = "SELECT thread_id, doc FROM api_threads
                WHERE json_extract(doc, '$.ttl.expires_at_ms') IS NOT NULL
                  AND json_extract(doc, '$.ttl.expires_at_ms') <= ?1
                ORDER BY json_extract(doc, '$.ttl.expires_at_ms') LIMIT ?2";
            // Most looks find nothing due: they take no write lock.
            let any: Option<String> = c
                .prepare_cached(DUE)?
                .query_row(params![now_ms, 1], |r| r.get(0))
                .optional()?;
            if any.is_none() {
                return Ok(Vec::new());
            }
            let tx = immediate(c)?;
            let due: Vec<(String, String)> = tx
                .prepare_cached(DUE)?
                .query_map(params![now_ms, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect::<Result<_, _>>()?;
            let mut claimed = Vec::with_capacity(due.len());
            for (id, text) in due {
                let mut doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                doc["ttl"]["expires_at_ms"] = (now_ms + hold_ms).into();
                tx.prepare_cached("UPDATE api_threads SET doc = ?2 WHERE thread_id = ?1")?
                    .execute(params![id, doc.to_string()])?;
                claimed.push(doc);
            }
            tx.commit()?;
            Ok(claimed)
        })
        .await
    }

    async fn stale_busy_threads(&self, limit: usize) -> StoreResult<Vec<String>> {
        self.with("stale busy threads", move |c| {
            c.prepare_cached(
                "SELECT t.thread_id FROM api_threads t WHERE json_extract(t.doc, '$.status') = 'busy'
                   AND NOT EXISTS (SELECT 1 FROM api_runs r WHERE r.thread_id = t.thread_id
                                   AND r.status IN ('pending', 'running'))
                 LIMIT ?1",
            )?
            .query_map([limit as i64], |r| r.get::<_, String>(0))?
            .collect()
        })
        .await
    }

    async fn claim_crons(&self, now_ms: i64, advance: CronAdvance) -> StoreResult<Vec<Value>> {
        self.with("claim crons", move |c| {
            // Most looks find nothing due: they take no write lock.
            let any: Option<i64> = c
                .prepare_cached("SELECT 1 FROM api_crons WHERE next_run_ms <= ?1 LIMIT 1")?
                .query_row([now_ms], |r| r.get(0))
                .optional()?;
            if any.is_none() {
                return Ok(Vec::new());
            }
            let tx = immediate(c)?;
            let due: Vec<(String, String)> = tx
                .prepare_cached(
                    "SELECT cron_id, doc FROM api_crons WHERE next_run_ms <= ?1 ORDER BY next_run_ms LIMIT 100",
                )?
                .query_map([now_ms], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            let mut claimed = Vec::with_capacity(due.len());
            for (id, text) in due {
                let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                let (moved, next) = advance(&doc, now_ms);
                tx.prepare_cached(
                    "UPDATE api_crons SET next_run_ms = ?2, doc = ?3 WHERE cron_id = ?1",
                )?
                .execute(params![id, next, moved.to_string()])?;
                claimed.push(doc);
            }
            tx.commit()?;
            Ok(claimed)
        })
        .await
    }
}
