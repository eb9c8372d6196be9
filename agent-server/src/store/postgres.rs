//! The run store in PostgreSQL, for many instances on one database (next to the
//! checkpoints, through the checkpointer's pool).
//!
//! - A claim takes the oldest pending run of a thread with nothing running, `FOR UPDATE
//!   SKIP LOCKED`, so instances claiming at once never take the same run nor two runs of
//!   one thread.
//! - The claiming instance holds a lease (`owner`, `lease_until`) and renews it while the
//!   run goes on; a run whose lease ran out (its instance died) is queued again with
//!   `attempt + 1`, and resumes from its last checkpoint where it is claimed next.
//! - `NOTIFY agentgraph_api` carries wake-ups, cancels for the owner of a run, and "new
//!   events" for instances whose clients follow a run executing elsewhere; the events and
//!   the result are stored (`api_run_events`, `api_run_results`) for them to read.
//! - Crons (`api_crons`) are claimed by their next time, `FOR UPDATE SKIP LOCKED`, and moved
//!   on in the same transaction: each tick fires on exactly one instance.

use std::time::Duration;

use agent_core::{PgListener, PostgresSaver};
use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde_json::Value;
use tokio::sync::mpsc;

use super::postgres_search::{self, Mode};
use super::query::Table;
use super::{
    Claim, CronAdvance, Enqueued, Kind, Notice, PING, Query, Queueing, RUN_COUNTS, RunStore,
    StoreError, StoreResult, StoredEvent, ThreadEnd, Token,
};

const CHANNEL: &str = "agentgraph_api";
/// Advisory lock key for the schema ("agentapi" in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_656e_7461_7069;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS api_assistants (assistant_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq BIGSERIAL);
CREATE TABLE IF NOT EXISTS api_assistant_versions (assistant_id TEXT NOT NULL, version BIGINT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
CREATE TABLE IF NOT EXISTS api_threads (thread_id TEXT PRIMARY KEY, doc TEXT NOT NULL, seq BIGSERIAL);
CREATE TABLE IF NOT EXISTS api_runs (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, doc TEXT NOT NULL, seq BIGSERIAL,
    owner TEXT, lease_until TIMESTAMPTZ, cancel TEXT);
CREATE INDEX IF NOT EXISTS api_runs_by_thread ON api_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS api_runs_by_status ON api_runs (status, seq);
CREATE TABLE IF NOT EXISTS api_run_events (run_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS api_run_results (run_id TEXT PRIMARY KEY, body TEXT NOT NULL, finished_at TIMESTAMPTZ NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS api_run_results_by_age ON api_run_results (finished_at);
CREATE TABLE IF NOT EXISTS api_crons (cron_id TEXT PRIMARY KEY, thread_id TEXT, next_run_ms BIGINT, doc TEXT NOT NULL, seq BIGSERIAL);
CREATE INDEX IF NOT EXISTS api_crons_due ON api_crons (next_run_ms);
CREATE INDEX IF NOT EXISTS api_crons_by_thread ON api_crons (thread_id);
CREATE INDEX IF NOT EXISTS api_threads_busy ON api_threads (thread_id)
    WHERE (doc::jsonb ->> 'status') = 'busy';
CREATE INDEX IF NOT EXISTS api_threads_expiry ON api_threads (((doc::jsonb #>> '{ttl,expires_at_ms}')::bigint))
    WHERE (doc::jsonb #>> '{ttl,expires_at_ms}') IS NOT NULL;
";

/// Advisory lock key of the thread sweeper ("sweepttl" in ASCII): one instance sweeps at a
/// time.
const SWEEP_LOCK: i64 = 0x7377_6565_7074_746c;

/// The run store in PostgreSQL.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    url: String,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

fn failed(op: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| {
        // No answer from the server (a closed connection, a refused one, a reset), or one
        // that says it is going away or not ready (shutting down, starting up, out of
        // connections): it is down or restarting, and the request may pass later.
        let going_away = e.code().is_some_and(|c| {
            let code = c.code();
            code.starts_with("08") || code.starts_with("53") || code.starts_with("57P")
        });
        if e.is_closed() || e.as_db_error().is_none() || going_away {
            StoreError::unavailable(op, format!("the database is unreachable ({e})"))
        } else {
            // `db error` alone says little: the server's own message and code say what.
            let detail = e
                .as_db_error()
                .map(|d| format!("{} ({})", d.message(), d.code().code()))
                .unwrap_or_else(|| e.to_string());
            StoreError::failed(op, detail)
        }
    }
}

/// The condition of a run still held by a claim (`$2` owner, `$3` attempt, on the row of
/// `$1`): running, leased to it, in its attempt.
const HELD: &str = "run_id = $1 AND status = 'running' AND owner = $2
    AND COALESCE((doc::jsonb ->> 'attempt')::bigint, 1) = $3";

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A failed migration, and whether trying again may pass (it lost a deadlock or a lock wait
/// to writers).
struct Migration {
    error: StoreError,
    retryable: bool,
}

impl From<tokio_postgres::Error> for Migration {
    fn from(e: tokio_postgres::Error) -> Self {
        let retryable = e
            .code()
            .is_some_and(|c| matches!(c.code(), "40P01" | "40001" | "55P03"));
        Migration {
            error: failed("migrate")(e),
            retryable,
        }
    }
}

impl From<StoreError> for Migration {
    fn from(error: StoreError) -> Self {
        Migration {
            error,
            retryable: false,
        }
    }
}

impl PostgresStore {
    /// The store in the database of `saver` (its pool), listening through `url`.
    pub async fn open(saver: &PostgresSaver, url: &str) -> StoreResult<Self> {
        let store = PostgresStore {
            pool: saver.pool().clone(),
            url: url.to_owned(),
        };
        // A migration that does run (a new version starting next to old ones still writing)
        // may lose a deadlock to their writes: PostgreSQL rolls it back whole, and it is
        // tried again.
        let mut tries = 0;
        loop {
            match store.migrate().await {
                Err(e) if e.retryable && tries < 5 => {
                    tries += 1;
                    tracing::warn!(error = %e.error, "the schema migration is tried again");
                    tokio::time::sleep(Duration::from_millis(100 * tries)).await;
                }
                Err(e) => return Err(e.error),
                Ok(()) => return Ok(store),
            }
        }
    }

    /// Brings the schema to this version's, in one transaction under the migration lock.
    /// A database already at it (its script recorded in `api_schema` is this version's) is
    /// left alone: a start takes no lock on the tables writers are using.
    async fn migrate(&self) -> Result<(), Migration> {
        let mut client = self.client("migrate").await?;
        let tx = client.transaction().await.map_err(Migration::from)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS api_schema (key TEXT PRIMARY KEY, script TEXT NOT NULL)",
        )
        .await?;
        let current = format!(
            "{SCHEMA}{}",
            postgres_search::migration(false, &postgres_search::with_head_all())
        );
        let recorded: Option<String> = tx
            .query_opt("SELECT script FROM api_schema WHERE key = 'api'", &[])
            .await?
            .map(|row| row.get(0));
        if recorded.as_deref() == Some(current.as_str()) {
            return Ok(tx.commit().await?);
        }
        tx.batch_execute(SCHEMA).await?;
        let side_table_is_new: bool = tx
            .query_one("SELECT to_regclass('api_meta') IS NULL", &[])
            .await?
            .get(0);
        let with_head: Vec<String> = tx
            .query(
                "SELECT table_name::text FROM information_schema.columns
                 WHERE table_schema = current_schema() AND column_name = 'head'",
                &[],
            )
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        tx.batch_execute(&postgres_search::migration(side_table_is_new, &with_head))
            .await?;
        tx.execute(
            "INSERT INTO api_schema (key, script) VALUES ('api', $1)
             ON CONFLICT (key) DO UPDATE SET script = EXCLUDED.script",
            &[&current],
        )
        .await?;
        Ok(tx.commit().await?)
    }

    /// The documents of `table` that `query` asks for.
    async fn search_in(&self, table: Table, query: &Query) -> StoreResult<Vec<Value>> {
        let stmt = postgres_search::statement(table, query, Mode::Rows)
            .map_err(|e| StoreError::failed("search", e))?;
        let Some(stmt) = stmt else {
            return Ok(Vec::new());
        };
        let c = self.client("search").await?;
        let rows = c
            .query_typed(&stmt.sql, &stmt.params())
            .await
            .map_err(failed("search"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    /// How many documents of `table` match `query`.
    async fn count_in(&self, table: Table, query: &Query) -> StoreResult<u64> {
        if let (true, Some(kind)) = (query.everything(), table.indexed()) {
            return self
                .kept_count(
                    (postgres_search::COUNTED, &[&kind]),
                    (postgres_search::FOLD, &[&kind]),
                    "api_count_changes",
                )
                .await;
        }
        if let (Some(pair), Some(kind)) = (query.counted_pair(table), table.indexed()) {
            return self
                .kept_count(
                    (
                        postgres_search::ENTRY_COUNTED,
                        &[&kind, &pair.key, &pair.json],
                    ),
                    (postgres_search::ENTRY_FOLD, &[]),
                    "api_meta_count_changes",
                )
                .await;
        }
        let stmt = postgres_search::statement(table, query, Mode::Count)
            .map_err(|e| StoreError::failed("count", e))?;
        let Some(stmt) = stmt else {
            return Ok(0);
        };
        let c = self.client("count").await?;
        let row = c
            .query_typed_one(&stmt.sql, &stmt.params())
            .await
            .map_err(failed("count"))?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    /// A count kept by the triggers: `counted` reads the sum and the changes since (and how
    /// many there are); past [`postgres_search::FOLD_AFTER`] changes, `fold` folds them into
    /// the sum, and past [`postgres_search::VACUUM_AFTER`] their `log` is vacuumed.
    async fn kept_count(
        &self,
        counted: (&str, &[&(dyn tokio_postgres::types::ToSql + Sync)]),
        fold: (&str, &[&(dyn tokio_postgres::types::ToSql + Sync)]),
        log: &'static str,
    ) -> StoreResult<u64> {
        let c = self.client("count").await?;
        let statement = c.prepare_cached(counted.0).await.map_err(failed("count"))?;
        let row = c
            .query_one(&statement, counted.1)
            .await
            .map_err(failed("count"))?;
        let changes = row.get::<_, i64>(1);
        if changes > postgres_search::FOLD_AFTER {
            match c.execute(fold.0, fold.1).await {
                Err(e) => tracing::warn!(error = %e, "could not fold the changes of a count"),
                // Thousands of deleted changes are dead rows every later count reads until a
                // vacuum: the next count would pay for them, not the folded sum.
                Ok(folded) if changes.max(folded as i64) > postgres_search::VACUUM_AFTER => {
                    self.vacuum_changes(log)
                }
                Ok(_) => {}
            }
        }
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    /// Vacuums a counts' change log (`table`) off the request's path (autovacuum would, a
    /// minute or more later).
    fn vacuum_changes(&self, table: &'static str) {
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let vacuumed = match pool.get().await {
                Ok(c) => c
                    .batch_execute(&format!("VACUUM {table}"))
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = vacuumed {
                tracing::warn!(error = %e, "could not vacuum the counts' change log");
            }
        });
    }

    async fn client(&self, op: &'static str) -> StoreResult<deadpool_postgres::Object> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::unavailable(op, format!("connecting: {e}")))
    }
}

const UPSERT_THREAD: &str = "INSERT INTO api_threads (thread_id, doc) VALUES ($1, $2)
     ON CONFLICT (thread_id) DO UPDATE SET doc = EXCLUDED.doc";
/// `(id, thread, status, text)` of a run document.
fn run_row(doc: &Value) -> (String, &str, &str, String) {
    (
        Kind::Run.id_of(doc),
        doc["thread_id"].as_str().unwrap_or_default(),
        doc["status"].as_str().unwrap_or("pending"),
        doc.to_string(),
    )
}

fn interval(d: Duration) -> String {
    format!("{} milliseconds", d.as_millis())
}

/// `doc` (a thread's) with its status `busy` while a run of it is pending or running,
/// decided inside the caller's transaction once it holds the thread's row (a run queued on it
/// takes that row first, so it is seen).
async fn with_busy(
    tx: &tokio_postgres::Transaction<'_>,
    doc: &Value,
) -> Result<Value, tokio_postgres::Error> {
    let id = Kind::Thread.id_of(doc);
    tx.execute(
        "SELECT 1 FROM api_threads WHERE thread_id = $1 FOR UPDATE",
        &[&id],
    )
    .await?;
    let active: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM api_runs WHERE thread_id = $1 AND status IN ('pending', 'running')",
            &[&id],
        )
        .await?
        .get(0);
    let mut doc = doc.clone();
    if active > 0 {
        doc["status"] = "busy".into();
    }
    Ok(doc)
}

/// A thread's document as stored now (its row locked to the commit) with `fresh`'s state
/// fields and its busy status; `None` when the thread is gone.
async fn with_state(
    tx: &tokio_postgres::Transaction<'_>,
    fresh: &Value,
) -> Result<Option<Value>, tokio_postgres::Error> {
    let id = Kind::Thread.id_of(fresh);
    let Some(row) = tx
        .query_opt(
            "SELECT doc FROM api_threads WHERE thread_id = $1 FOR UPDATE",
            &[&id],
        )
        .await?
    else {
        return Ok(None);
    };
    let current: Value = serde_json::from_str(row.get::<_, &str>(0)).unwrap_or(Value::Null);
    with_busy(tx, &super::with_state_of(current, fresh))
        .await
        .map(Some)
}

/// Claims, inside the caller's transaction, the oldest pending run whose thread runs nothing
/// else and whose time has come (one another transaction holds is skipped), for `owner` with
/// a lease of `lease`; the run as claimed.
async fn claim_next(
    tx: &tokio_postgres::Transaction<'_>,
    owner: &str,
    lease: Duration,
) -> Result<Option<Value>, tokio_postgres::Error> {
    let row = tx
        .query_opt(
            "SELECT run_id, doc FROM api_runs r WHERE status = 'pending'
               AND COALESCE((r.doc::jsonb #>> '{kwargs,not_before_ms}')::bigint, 0) <= $1
               AND NOT EXISTS (SELECT 1 FROM api_runs o WHERE o.thread_id = r.thread_id AND o.status = 'running')
               AND NOT EXISTS (SELECT 1 FROM api_runs e WHERE e.thread_id = r.thread_id AND e.status = 'pending' AND e.seq < r.seq)
             ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED",
            &[&crate::time::now_ms()],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let id: String = row.get(0);
    let mut doc = parse(row.get::<_, &str>(1));
    doc["status"] = "running".into();
    doc["updated_at"] = crate::time::now_iso().into();
    tx.execute(
        "UPDATE api_runs SET status = 'running', doc = $2, owner = $3,
           lease_until = now() + $4::text::interval WHERE run_id = $1",
        &[&id, &doc.to_string(), &owner, &interval(lease)],
    )
    .await?;
    Ok(Some(doc))
}

impl PostgresStore {
    /// The fence of a run's checkpoint writes (see `agent_core::PostgresSaver::fenced`):
    /// each holds the run's row for its transaction and is refused once the run is not
    /// `token`'s (taken over, ended, deleted) or its cancel was asked for.
    pub(crate) fn fence(run_id: &str, token: &Token) -> agent_core::checkpoint::Fence {
        Self::fence_if(run_id, token, "AND cancel IS NULL")
    }

    /// The fence of a rolled back run's deletion of its checkpoints: the run still held by
    /// `token` (its cancel asked for, as a rollback's is).
    pub(crate) fn held(run_id: &str, token: &Token) -> agent_core::checkpoint::Fence {
        Self::fence_if(run_id, token, "")
    }

    /// The fence of a pending run's rollback deleting its checkpoints (a run queued again
    /// after its instance stopped): the run still pending, its row held (a claim skips it)
    /// until the delete commits. A run claimed meanwhile is stopped as a running one.
    pub(crate) fn still_pending(run_id: &str) -> agent_core::checkpoint::Fence {
        agent_core::checkpoint::Fence {
            sql: "SELECT 1 FROM api_runs WHERE run_id = $1 AND status = 'pending' FOR UPDATE"
                .to_owned(),
            params: vec![run_id.to_owned()],
        }
    }

    fn fence_if(run_id: &str, token: &Token, more: &str) -> agent_core::checkpoint::Fence {
        agent_core::checkpoint::Fence {
            sql: format!(
                "SELECT 1 FROM api_runs WHERE run_id = $1 AND status = 'running' AND owner = $2
                   AND COALESCE((doc::jsonb ->> 'attempt')::bigint, 1) = $3::bigint {more} FOR SHARE"
            ),
            params: vec![
                run_id.to_owned(),
                token.owner.clone(),
                token.attempt.to_string(),
            ],
        }
    }
}

impl PostgresStore {
    /// Deletes one (a thread with its runs, their events and results, and its crons):
    /// whether it existed, and a thread's runs that were claimed as they went.
    async fn remove(&self, kind: Kind, id: &str) -> StoreResult<(bool, Vec<String>)> {
        let mut c = self.client("delete").await?;
        let tx = c.transaction().await.map_err(failed("delete"))?;
        if kind == Kind::Thread {
            // Its runs' rows first, as a run's end takes them (its run's row, then the
            // thread's): the same order, so the two never wait on each other.
            tx.execute(
                "SELECT 1 FROM api_runs WHERE thread_id = $1 ORDER BY run_id FOR UPDATE",
                &[&id],
            )
            .await
            .map_err(failed("delete"))?;
        }
        let n = tx
            .execute(
                &format!("DELETE FROM {} WHERE {} = $1", kind.table(), kind.key()),
                &[&id],
            )
            .await
            .map_err(failed("delete"))?;
        let mut claimed = Vec::new();
        match kind {
            Kind::Assistant => {
                tx.execute(
                    "DELETE FROM api_assistant_versions WHERE assistant_id = $1",
                    &[&id],
                )
                .await
                .map_err(failed("delete"))?;
            }
            Kind::Thread => {
                // Its runs with their stored events and results: nothing of it is left. The
                // runs go first: their delete waits for a run's writer holding its row (one
                // queued meanwhile is not among those locked above), so the events it
                // committed are seen by the deletes after, and no writer passes its fence
                // again.
                let rows = tx
                    .query(
                        "DELETE FROM api_runs WHERE thread_id = $1 RETURNING run_id, status",
                        &[&id],
                    )
                    .await
                    .map_err(failed("delete"))?;
                let runs: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
                claimed = rows
                    .iter()
                    .filter(|r| r.get::<_, &str>(1) == "running")
                    .map(|r| r.get(0))
                    .collect();
                for table in ["api_run_events", "api_run_results"] {
                    tx.execute(
                        &format!("DELETE FROM {table} WHERE run_id = ANY($1)"),
                        &[&runs],
                    )
                    .await
                    .map_err(failed("delete"))?;
                }
                tx.execute("DELETE FROM api_crons WHERE thread_id = $1", &[&id])
                    .await
                    .map_err(failed("delete"))?;
            }
            Kind::Run => {
                for table in ["api_run_events", "api_run_results"] {
                    tx.execute(&format!("DELETE FROM {table} WHERE run_id = $1"), &[&id])
                        .await
                        .map_err(failed("delete"))?;
                }
            }
        }
        tx.commit().await.map_err(failed("delete"))?;
        Ok((n > 0, claimed))
    }
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn put(&self, kind: Kind, doc: &Value) -> StoreResult<()> {
        let c = self.client("put").await?;
        let id = kind.id_of(doc);
        let text = doc.to_string();
        match kind {
            Kind::Run => {
                let thread = doc["thread_id"].as_str().unwrap_or_default();
                let status = doc["status"].as_str().unwrap_or("pending");
                c.execute(
                    "INSERT INTO api_runs (run_id, thread_id, status, doc) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, doc = EXCLUDED.doc,
                       owner = CASE WHEN EXCLUDED.status IN ('pending', 'running') THEN api_runs.owner END",
                    &[&id, &thread, &status, &text],
                )
                .await
                .map_err(failed("put run"))?;
            }
            _ => {
                c.execute(
                    &format!(
                        "INSERT INTO {t} ({k}, doc) VALUES ($1, $2) ON CONFLICT ({k}) DO UPDATE SET doc = EXCLUDED.doc",
                        t = kind.table(),
                        k = kind.key()
                    ),
                    &[&id, &text],
                )
                .await
                .map_err(failed("put"))?;
            }
        }
        Ok(())
    }

    async fn update(&self, kind: Kind, doc: &Value) -> StoreResult<bool> {
        let mut c = self.client("update").await?;
        let tx = c.transaction().await.map_err(failed("update"))?;
        let doc = match kind {
            Kind::Thread => with_busy(&tx, doc).await.map_err(failed("update"))?,
            _ => doc.clone(),
        };
        let n = tx
            .execute(
                &format!(
                    "UPDATE {} SET doc = $2 WHERE {} = $1",
                    kind.table(),
                    kind.key()
                ),
                &[&kind.id_of(&doc), &doc.to_string()],
            )
            .await
            .map_err(failed("update"))?;
        tx.commit().await.map_err(failed("update"))?;
        Ok(n > 0)
    }

    async fn refresh_thread(&self, fresh: &Value) -> StoreResult<bool> {
        let mut c = self.client("refresh thread").await?;
        let tx = c.transaction().await.map_err(failed("refresh thread"))?;
        let Some(doc) = with_state(&tx, fresh)
            .await
            .map_err(failed("refresh thread"))?
        else {
            return Ok(false);
        };
        tx.execute(
            "UPDATE api_threads SET doc = $2 WHERE thread_id = $1",
            &[&Kind::Thread.id_of(&doc), &doc.to_string()],
        )
        .await
        .map_err(failed("refresh thread"))?;
        tx.commit().await.map_err(failed("refresh thread"))?;
        Ok(true)
    }

    async fn insert(&self, kind: Kind, doc: &Value) -> StoreResult<bool> {
        let c = self.client("insert").await?;
        let id = kind.id_of(doc);
        let text = doc.to_string();
        let n = match kind {
            Kind::Run => {
                let thread = doc["thread_id"].as_str().unwrap_or_default();
                let status = doc["status"].as_str().unwrap_or("pending");
                c.execute(
                    "INSERT INTO api_runs (run_id, thread_id, status, doc) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    &[&id, &thread, &status, &text],
                )
                .await
            }
            _ => {
                c.execute(
                    &format!(
                        "INSERT INTO {} ({}, doc) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        kind.table(),
                        kind.key()
                    ),
                    &[&id, &text],
                )
                .await
            }
        }
        .map_err(failed("insert"))?;
        Ok(n > 0)
    }

    async fn get(&self, kind: Kind, id: &str) -> StoreResult<Option<Value>> {
        let c = self.client("get").await?;
        let row = c
            .query_opt(
                &format!("SELECT doc FROM {} WHERE {} = $1", kind.table(), kind.key()),
                &[&id],
            )
            .await
            .map_err(failed("get"))?;
        Ok(row.map(|r| parse(r.get::<_, &str>(0))))
    }

    async fn all(&self, kind: Kind) -> StoreResult<Vec<Value>> {
        let c = self.client("list").await?;
        let rows = c
            .query(
                &format!("SELECT doc FROM {} ORDER BY seq", kind.table()),
                &[],
            )
            .await
            .map_err(failed("list"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    async fn search(&self, kind: Kind, query: &Query) -> StoreResult<Vec<Value>> {
        self.search_in(Table::from(kind), query).await
    }

    async fn count(&self, kind: Kind, query: &Query) -> StoreResult<u64> {
        self.count_in(Table::from(kind), query).await
    }

    async fn run_counts(&self) -> StoreResult<Vec<(String, u64)>> {
        let c = self.client("count runs").await?;
        let rows = c
            .query(RUN_COUNTS, &[])
            .await
            .map_err(failed("count runs"))?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).max(0) as u64))
            .collect())
    }

    async fn ping(&self) -> StoreResult<()> {
        let c = self.client("health check").await?;
        c.query_opt(PING, &[])
            .await
            .map(drop)
            .map_err(failed("health check"))
    }

    async fn delete(&self, kind: Kind, id: &str) -> StoreResult<bool> {
        Ok(self.remove(kind, id).await?.0)
    }

    async fn delete_thread(&self, id: &str) -> StoreResult<Vec<String>> {
        Ok(self.remove(Kind::Thread, id).await?.1)
    }

    async fn runs_of(&self, thread_id: &str) -> StoreResult<Vec<Value>> {
        let c = self.client("runs of thread").await?;
        let rows = c
            .query(
                "SELECT doc FROM api_runs WHERE thread_id = $1 ORDER BY seq",
                &[&thread_id],
            )
            .await
            .map_err(failed("runs of thread"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    async fn put_version(&self, assistant_id: &str, version: i64, doc: &Value) -> StoreResult<()> {
        let c = self.client("put version").await?;
        c.execute(
            "INSERT INTO api_assistant_versions (assistant_id, version, doc) VALUES ($1, $2, $3)
             ON CONFLICT (assistant_id, version) DO UPDATE SET doc = EXCLUDED.doc",
            &[&assistant_id, &version, &doc.to_string()],
        )
        .await
        .map_err(failed("put version"))?;
        Ok(())
    }

    async fn versions(&self, assistant_id: &str) -> StoreResult<Vec<Value>> {
        let c = self.client("versions").await?;
        let rows = c
            .query(
                "SELECT doc FROM api_assistant_versions WHERE assistant_id = $1 ORDER BY version DESC",
                &[&assistant_id],
            )
            .await
            .map_err(failed("versions"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    async fn claim(&self, owner: &str, lease: Duration) -> StoreResult<Option<Value>> {
        let mut c = self.client("claim").await?;
        let tx = c.transaction().await.map_err(failed("claim"))?;
        let claimed = claim_next(&tx, owner, lease)
            .await
            .map_err(failed("claim"))?;
        tx.commit().await.map_err(failed("claim"))?;
        Ok(claimed)
    }

    async fn enqueue(
        &self,
        thread: &Value,
        run: &Value,
        claim: Option<Claim<'_>>,
        how: Queueing,
    ) -> StoreResult<Enqueued> {
        let mut c = self.client("enqueue").await?;
        let tx = c.transaction().await.map_err(failed("enqueue"))?;
        let thread_id = Kind::Thread.id_of(thread);
        // The write holds the thread's row until commit: two runs queued on one thread at
        // once see each other below (the second waits for the first's commit). A thread
        // deleted since it was read is not made again.
        let written = if how.new_thread {
            tx.execute(UPSERT_THREAD, &[&thread_id, &thread.to_string()])
                .await
        } else {
            tx.execute(
                "UPDATE api_threads SET doc = $2 WHERE thread_id = $1",
                &[&thread_id, &thread.to_string()],
            )
            .await
        }
        .map_err(failed("enqueue"))?;
        if written == 0 {
            tx.rollback().await.map_err(failed("enqueue"))?;
            return Ok(Enqueued::ThreadGone);
        }
        let (run_id, run_thread, status, text) = run_row(run);
        let others: i64 = tx
            .query_one(
                "SELECT COUNT(*) FROM api_runs WHERE thread_id = $1 AND run_id <> $2
                   AND status IN ('pending', 'running')",
                &[&thread_id, &run_id],
            )
            .await
            .map_err(failed("enqueue"))?
            .get(0);
        if how.reject_busy && others > 0 {
            // Nothing written: the thread's document stays as the running run left it.
            tx.rollback().await.map_err(failed("enqueue"))?;
            return Ok(Enqueued::Busy);
        }
        tx.execute(
            "INSERT INTO api_runs (run_id, thread_id, status, doc) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[&run_id, &run_thread, &status, &text],
        )
        .await
        .map_err(failed("enqueue"))?;
        let due = run["kwargs"]["not_before_ms"]
            .as_i64()
            .is_none_or(|t| t <= crate::time::now_ms());
        let mut claimed = None;
        if let Some(claim) = claim.filter(|_| due && others == 0) {
            {
                let mut doc = run.clone();
                doc["status"] = "running".into();
                doc["updated_at"] = crate::time::now_iso().into();
                tx.execute(
                    "UPDATE api_runs SET status = 'running', doc = $2, owner = $3,
                       lease_until = now() + $4::text::interval WHERE run_id = $1",
                    &[
                        &run_id,
                        &doc.to_string(),
                        &claim.owner,
                        &interval(claim.lease),
                    ],
                )
                .await
                .map_err(failed("enqueue"))?;
                claimed = Some(doc);
            }
        }
        tx.commit().await.map_err(failed("enqueue"))?;
        Ok(claimed.map_or(Enqueued::Queued, Enqueued::Claimed))
    }

    async fn finish(
        &self,
        run: &Value,
        thread: ThreadEnd,
        token: &Token,
        result: &Value,
        next: Option<Claim<'_>>,
    ) -> StoreResult<Option<Value>> {
        let mut c = self.client("finish run").await?;
        let tx = c.transaction().await.map_err(failed("finish run"))?;
        let (run_id, _, status, text) = run_row(run);
        // The fence: the run's row changes only while it is this claim's (not taken over,
        // not deleted with its thread), and a stop asked for it meanwhile is the run's end
        // (its client was told so), not the graph's (`interrupted` is a stop's end); the
        // row stays locked to the commit.
        let held = tx
            .execute(
                &format!(
                    "UPDATE api_runs SET status = $4, doc = $5, owner = NULL, lease_until = NULL,
                       cancel = NULL WHERE {HELD} AND (cancel IS NULL OR ($4 = 'interrupted' AND cancel <> 'rollback'))"
                ),
                &[&run_id, &token.owner, &token.attempt, &status, &text],
            )
            .await
            .map_err(failed("finish run"))?;
        if held == 0 {
            let asked: Option<String> = tx
                .query_opt(
                    &format!("SELECT cancel FROM api_runs WHERE {HELD}"),
                    &[&run_id, &token.owner, &token.attempt],
                )
                .await
                .map_err(failed("finish run"))?
                .and_then(|row| row.get(0));
            tx.rollback().await.map_err(failed("finish run"))?;
            return Err(match asked {
                Some(action) => StoreError::stop_asked("finish run", action),
                None => StoreError::fenced("finish run"),
            });
        }
        match &thread {
            ThreadEnd::Delete(id) => {
                tx.execute("DELETE FROM api_threads WHERE thread_id = $1", &[id])
                    .await
                    .map_err(failed("finish run"))?;
                tx.execute("DELETE FROM api_runs WHERE thread_id = $1", &[id])
                    .await
                    .map_err(failed("finish run"))?;
            }
            ThreadEnd::Put(doc) => {
                if let Some(doc) = with_state(&tx, doc).await.map_err(failed("finish run"))? {
                    tx.execute(
                        "UPDATE api_threads SET doc = $2 WHERE thread_id = $1",
                        &[&Kind::Thread.id_of(&doc), &doc.to_string()],
                    )
                    .await
                    .map_err(failed("finish run"))?;
                }
            }
            ThreadEnd::Gone => {}
        }
        // The `/wait` body for instances that follow the run, after its last event.
        tx.execute(
            "INSERT INTO api_run_results (run_id, body) VALUES ($1, $2)
             ON CONFLICT (run_id) DO UPDATE SET body = EXCLUDED.body, finished_at = now()",
            &[&run_id, &result.to_string()],
        )
        .await
        .map_err(failed("finish run"))?;
        let claimed = match next {
            Some(claim) => claim_next(&tx, claim.owner, claim.lease)
                .await
                .map_err(failed("finish run"))?,
            None => None,
        };
        tx.commit().await.map_err(failed("finish run"))?;
        Ok(claimed)
    }

    async fn delete_claimed(&self, run_id: &str, token: &Token) -> StoreResult<()> {
        let mut c = self.client("delete run").await?;
        let tx = c.transaction().await.map_err(failed("delete run"))?;
        let n = tx
            .execute(
                &format!("DELETE FROM api_runs WHERE {HELD}"),
                &[&run_id, &token.owner, &token.attempt],
            )
            .await
            .map_err(failed("delete run"))?;
        if n == 0 {
            tx.rollback().await.map_err(failed("delete run"))?;
            return Err(StoreError::fenced("delete run"));
        }
        // Its stored events and result go with it: nothing of a rolled back run is left.
        for table in ["api_run_events", "api_run_results"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE run_id = $1"),
                &[&run_id],
            )
            .await
            .map_err(failed("delete run"))?;
        }
        tx.commit().await.map_err(failed("delete run"))?;
        Ok(())
    }

    async fn renew(
        &self,
        run_id: &str,
        token: &Token,
        lease: Duration,
    ) -> StoreResult<Option<Option<String>>> {
        let c = self.client("renew").await?;
        let row = c
            .query_opt(
                &format!(
                    "UPDATE api_runs SET lease_until = now() + $4::text::interval
                     WHERE {HELD} RETURNING cancel"
                ),
                &[&run_id, &token.owner, &token.attempt, &interval(lease)],
            )
            .await
            .map_err(failed("renew"))?;
        Ok(row.map(|r| r.get::<_, Option<String>>(0)))
    }

    async fn sweep_finished(&self, age: Duration) -> StoreResult<u64> {
        let mut c = self.client("sweep").await?;
        let tx = c.transaction().await.map_err(failed("sweep"))?;
        let old =
            "SELECT run_id FROM api_run_results WHERE finished_at < now() - $1::text::interval";
        tx.execute(
            &format!("DELETE FROM api_run_events WHERE run_id IN ({old})"),
            &[&interval(age)],
        )
        .await
        .map_err(failed("sweep"))?;
        let n = tx
            .execute(
                "DELETE FROM api_run_results WHERE finished_at < now() - $1::text::interval",
                &[&interval(age)],
            )
            .await
            .map_err(failed("sweep"))?;
        tx.commit().await.map_err(failed("sweep"))?;
        Ok(n)
    }

    async fn requeue_expired(&self, max_attempts: i64) -> StoreResult<usize> {
        let mut c = self.client("requeue").await?;
        let tx = c.transaction().await.map_err(failed("requeue"))?;
        let rows = tx
            .query(
                "SELECT run_id, doc, cancel IS NOT NULL FROM api_runs
                 WHERE status = 'running' AND lease_until < now()
                 FOR UPDATE SKIP LOCKED",
                &[],
            )
            .await
            .map_err(failed("requeue"))?;
        let mut requeued = 0;
        for row in &rows {
            let id: String = row.get(0);
            let mut doc = parse(row.get::<_, &str>(1));
            let attempt = doc["attempt"].as_i64().unwrap_or(1) + 1;
            doc["attempt"] = attempt.into();
            doc["updated_at"] = crate::time::now_iso().into();
            // A run whose stop was asked for is queued again whatever its attempts: the
            // next claim applies the stop before its graph runs (a rollback's deletes
            // included), as the client who was told it is stopped expects.
            let stopping: bool = row.get(2);
            let status = if attempt > max_attempts && !stopping {
                "error"
            } else {
                "pending"
            };
            doc["status"] = status.into();
            tx.execute(
                "UPDATE api_runs SET status = $2, doc = $3, owner = NULL, lease_until = NULL WHERE run_id = $1",
                &[&id, &status, &doc.to_string()],
            )
            .await
            .map_err(failed("requeue"))?;
            if status == "error" {
                let error = super::abandoned(attempt - 1);
                let body = serde_json::json!({ "__error__": error });
                tx.execute(
                    "INSERT INTO api_run_results (run_id, body) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    &[&id, &body.to_string()],
                )
                .await
                .map_err(failed("requeue"))?;
                // Its thread is no longer busy (unless another run of it waits): it shows
                // the error.
                let thread = doc["thread_id"].as_str().unwrap_or_default();
                tx.execute(
                    "UPDATE api_threads SET doc = jsonb_set(jsonb_set(doc::jsonb, '{status}', '\"error\"'),
                       '{error}', $2::text::jsonb)::text
                     WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM api_runs
                       WHERE thread_id = $1 AND status IN ('pending', 'running'))",
                    &[&thread, &error.to_string()],
                )
                .await
                .map_err(failed("requeue"))?;
            } else {
                requeued += 1;
            }
        }
        tx.commit().await.map_err(failed("requeue"))?;
        Ok(requeued)
    }

    async fn cancel_pending(&self, doc: &Value) -> StoreResult<bool> {
        let c = self.client("cancel").await?;
        let n = c
            .execute(
                "UPDATE api_runs SET status = 'interrupted', doc = $2 WHERE run_id = $1 AND status = 'pending'",
                &[&Kind::Run.id_of(doc), &doc.to_string()],
            )
            .await
            .map_err(failed("cancel"))?;
        Ok(n > 0)
    }

    async fn request_cancel(&self, run_id: &str, action: &str) -> StoreResult<bool> {
        let c = self.client("cancel").await?;
        let n = c
            .execute(
                "UPDATE api_runs SET cancel = CASE WHEN cancel IS NOT NULL
                     AND (CASE cancel WHEN 'rollback' THEN 4 WHEN 'delete' THEN 3
                          WHEN 'interrupt' THEN 2 WHEN 'timeout' THEN 1 ELSE 0 END)
                      >= (CASE $2 WHEN 'rollback' THEN 4 WHEN 'delete' THEN 3
                          WHEN 'interrupt' THEN 2 WHEN 'timeout' THEN 1 ELSE 0 END)
                     THEN cancel ELSE $2 END
                  WHERE run_id = $1 AND status = 'running'",
                &[&run_id, &action],
            )
            .await
            .map_err(failed("cancel"))?;
        Ok(n > 0)
    }

    fn shared(&self) -> bool {
        true
    }

    async fn append_events(
        &self,
        run_id: &str,
        token: &Token,
        events: &[StoredEvent],
    ) -> StoreResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut c = self.client("append events").await?;
        let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        let tx = c.transaction().await.map_err(failed("append events"))?;
        // The fence, holding the run's row to the commit: a run taken over, deleted or
        // cancelled (its cancel asked for) writes no more events.
        let held = tx
            .query_opt(
                &format!("SELECT 1 FROM api_runs WHERE {HELD} AND cancel IS NULL FOR SHARE"),
                &[&run_id, &token.owner, &token.attempt],
            )
            .await
            .map_err(failed("append events"))?;
        if held.is_none() {
            tx.rollback().await.map_err(failed("append events"))?;
            return Err(StoreError::fenced("append events"));
        }
        tx.execute(
            "INSERT INTO api_run_events (run_id, seq, id, name, data)
             SELECT $1, * FROM UNNEST($2::bigint[], $3::text[], $4::text[], $5::text[])
             ON CONFLICT DO NOTHING",
            &[&run_id, &seqs, &ids, &names, &data],
        )
        .await
        .map_err(failed("append events"))?;
        tx.commit().await.map_err(failed("append events"))?;
        Ok(())
    }

    async fn events_after(&self, run_id: &str, seq: i64) -> StoreResult<Vec<StoredEvent>> {
        let c = self.client("read events").await?;
        let rows = c
            .query(
                "SELECT seq, id, name, data FROM api_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq",
                &[&run_id, &seq],
            )
            .await
            .map_err(failed("read events"))?;
        Ok(rows
            .iter()
            .map(|r| StoredEvent {
                seq: r.get(0),
                id: r.get(1),
                name: r.get(2),
                data: r.get(3),
            })
            .collect())
    }

    async fn put_result(&self, run_id: &str, body: &Value) -> StoreResult<()> {
        let mut c = self.client("put result").await?;
        let tx = c.transaction().await.map_err(failed("put result"))?;
        // Only for a run still there, held to the commit: a run deleted meanwhile (its
        // thread's delete) leaves no result behind.
        let there = tx
            .query_opt(
                "SELECT 1 FROM api_runs WHERE run_id = $1 FOR SHARE",
                &[&run_id],
            )
            .await
            .map_err(failed("put result"))?;
        if there.is_some() {
            tx.execute(
                "INSERT INTO api_run_results (run_id, body) VALUES ($1, $2)
                 ON CONFLICT (run_id) DO UPDATE SET body = EXCLUDED.body, finished_at = now()",
                &[&run_id, &body.to_string()],
            )
            .await
            .map_err(failed("put result"))?;
        }
        tx.commit().await.map_err(failed("put result"))?;
        Ok(())
    }

    async fn result(&self, run_id: &str) -> StoreResult<Option<Value>> {
        let c = self.client("read result").await?;
        let row = c
            .query_opt(
                "SELECT body FROM api_run_results WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(failed("read result"))?;
        Ok(row.map(|r| parse(r.get::<_, &str>(0))))
    }

    async fn notify(&self, notice: &Notice) -> StoreResult<()> {
        let c = self.client("notify").await?;
        c.execute(
            "SELECT pg_notify($1, $2)",
            &[&CHANNEL, &notice.to_payload()],
        )
        .await
        .map_err(failed("notify"))?;
        Ok(())
    }

    async fn listen(&self) -> StoreResult<Option<mpsc::UnboundedReceiver<Notice>>> {
        let mut listener = PgListener::connect(&self.url, &[CHANNEL])
            .await
            .map_err(|e| StoreError::unavailable("listen", e.to_string()))?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(n) = listener.recv().await {
                if let Some(notice) = Notice::from_payload(&n.payload)
                    && tx.send(notice).is_err()
                {
                    return;
                }
            }
        });
        Ok(Some(rx))
    }

    async fn put_cron(&self, doc: &Value, next_run_ms: Option<i64>) -> StoreResult<()> {
        let c = self.client("put cron").await?;
        let id = doc["cron_id"].as_str().unwrap_or_default();
        let thread = doc["thread_id"].as_str();
        c.execute(
            "INSERT INTO api_crons (cron_id, thread_id, next_run_ms, doc) VALUES ($1, $2, $3, $4)
             ON CONFLICT (cron_id) DO UPDATE SET thread_id = EXCLUDED.thread_id,
               next_run_ms = EXCLUDED.next_run_ms, doc = EXCLUDED.doc",
            &[&id, &thread, &next_run_ms, &doc.to_string()],
        )
        .await
        .map_err(failed("put cron"))?;
        Ok(())
    }

    async fn get_cron(&self, cron_id: &str) -> StoreResult<Option<Value>> {
        let c = self.client("get cron").await?;
        let row = c
            .query_opt("SELECT doc FROM api_crons WHERE cron_id = $1", &[&cron_id])
            .await
            .map_err(failed("get cron"))?;
        Ok(row.map(|r| parse(r.get::<_, &str>(0))))
    }

    async fn crons(&self) -> StoreResult<Vec<Value>> {
        let c = self.client("list crons").await?;
        let rows = c
            .query("SELECT doc FROM api_crons ORDER BY seq", &[])
            .await
            .map_err(failed("list crons"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    async fn search_crons(&self, query: &Query) -> StoreResult<Vec<Value>> {
        self.search_in(Table::Crons, query).await
    }

    async fn count_crons(&self, query: &Query) -> StoreResult<u64> {
        self.count_in(Table::Crons, query).await
    }

    async fn delete_cron(&self, cron_id: &str) -> StoreResult<bool> {
        let c = self.client("delete cron").await?;
        let n = c
            .execute("DELETE FROM api_crons WHERE cron_id = $1", &[&cron_id])
            .await
            .map_err(failed("delete cron"))?;
        Ok(n > 0)
    }

    async fn claim_expired_threads(
        &self,
        now_ms: i64,
        limit: usize,
        hold_ms: i64,
    ) -> StoreResult<Vec<Value>> {
        let mut c = self.client("claim expired threads").await?;
        let tx = c
            .transaction()
            .await
            .map_err(failed("claim expired threads"))?;
        let ours: bool = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&SWEEP_LOCK])
            .await
            .map_err(failed("claim expired threads"))?
            .get(0);
        if !ours {
            return Ok(Vec::new());
        }
        let rows = tx
            .query(
                "WITH due AS (
                   SELECT thread_id FROM api_threads
                   WHERE (doc::jsonb #>> '{ttl,expires_at_ms}') IS NOT NULL
                     AND (doc::jsonb #>> '{ttl,expires_at_ms}')::bigint <= $1
                   ORDER BY (doc::jsonb #>> '{ttl,expires_at_ms}')::bigint
                   LIMIT $2 FOR UPDATE SKIP LOCKED)
                 UPDATE api_threads t
                 SET doc = jsonb_set(t.doc::jsonb, '{ttl,expires_at_ms}', to_jsonb($3::bigint))::text
                 FROM due WHERE t.thread_id = due.thread_id
                 RETURNING t.doc",
                &[&now_ms, &(limit as i64), &(now_ms + hold_ms)],
            )
            .await
            .map_err(failed("claim expired threads"))?;
        tx.commit().await.map_err(failed("claim expired threads"))?;
        Ok(rows.iter().map(|r| parse(r.get::<_, &str>(0))).collect())
    }

    async fn stale_busy_threads(&self, limit: usize) -> StoreResult<Vec<String>> {
        let c = self.client("stale busy threads").await?;
        let rows = c
            .query(
                "SELECT t.thread_id FROM api_threads t WHERE (t.doc::jsonb ->> 'status') = 'busy'
                   AND NOT EXISTS (SELECT 1 FROM api_runs r WHERE r.thread_id = t.thread_id
                                   AND r.status IN ('pending', 'running'))
                 LIMIT $1",
                &[&(limit as i64)],
            )
            .await
            .map_err(failed("stale busy threads"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn claim_crons(&self, now_ms: i64, advance: CronAdvance) -> StoreResult<Vec<Value>> {
        let mut c = self.client("claim crons").await?;
        let tx = c.transaction().await.map_err(failed("claim crons"))?;
        // Rows another instance is claiming are skipped; once it commits, their next time
        // is in the future and the row no longer matches.
        let due = tx
            .query(
                "SELECT cron_id, doc FROM api_crons WHERE next_run_ms <= $1
                 ORDER BY next_run_ms LIMIT 100 FOR UPDATE SKIP LOCKED",
                &[&now_ms],
            )
            .await
            .map_err(failed("claim crons"))?;
        let mut claimed = Vec::with_capacity(due.len());
        for row in due {
            let id: &str = row.get(0);
            let doc = parse(row.get::<_, &str>(1));
            let (moved, next) = advance(&doc, now_ms);
            tx.execute(
                "UPDATE api_crons SET next_run_ms = $2, doc = $3 WHERE cron_id = $1",
                &[&id, &next, &moved.to_string()],
            )
            .await
            .map_err(failed("claim crons"))?;
            claimed.push(doc);
        }
        tx.commit().await.map_err(failed("claim crons"))?;
        Ok(claimed)
    }
}
