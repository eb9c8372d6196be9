//! The chaos run's judge: it reads the database itself (not through the server) and the
//! clients' observations, and names every broken invariant:
//!
//! 1. every accepted run reached a terminal status, and only one: a run seen ended is never
//!    seen otherwise later (watched while the schedule runs), none is left pending or
//!    running, and a run that is gone was rolled back or had its thread deleted;
//! 2. no checkpoint or event of a run was committed after its cancel was acknowledged
//!    (PostgreSQL's commit timestamps; SQLite's checkpoint times), and a rolled back run
//!    left no checkpoint;
//! 3. nothing is left in the database of a deleted thread (its document, runs, checkpoints,
//!    blobs, writes, its runs' events and results);
//! 4. each input was applied at most once (the graph appends each run's tag to `inputs`),
//!    and a rolled back run's not at all;
//! 5. no thread is left `busy`;
//! 6. every request got an answer below 500, or a 503 while the database was down, and
//!    none hung.
//!
//! A request whose answer was lost (its instance stopped, or the database went away as it
//! committed) proves nothing either way: a thread whose delete, or a run whose rollback, got
//! no answer is required neither kept nor gone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Observations;

/// How the checker reads the database: PostgreSQL through a connection made again after
/// an outage, or the SQLite file.
pub enum Db {
    Postgres {
        url: String,
        client: tokio::sync::Mutex<Option<tokio_postgres::Client>>,
    },
    Sqlite(String),
}

/// Each run's terminal status the first time it was seen ended, and what went wrong since.
#[derive(Default)]
struct Seen {
    ended: BTreeMap<String, String>,
    wrong: Vec<String>,
}

/// Reads the database; watches run statuses while the schedule runs.
pub struct Checker {
    db: Db,
    seen: Arc<Mutex<Seen>>,
}

const ACTIVE: [&str; 2] = ["pending", "running"];

impl Checker {
    pub async fn open(url: &str, postgres: bool) -> Result<Checker, String> {
        let db = if postgres {
            Db::Postgres {
                url: url.to_owned(),
                client: tokio::sync::Mutex::new(None),
            }
        } else {
            Db::Sqlite(url.to_owned())
        };
        Ok(Checker {
            db,
            seen: Arc::default(),
        })
    }

    async fn rows(&self, pg: &str, lite: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        match &self.db {
            Db::Postgres { url, client } => {
                let mut client = client.lock().await;
                if client.as_ref().is_none_or(|c| c.is_closed()) {
                    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                        .await
                        .map_err(|e| format!("checker: {e}"))?;
                    tokio::spawn(conn);
                    *client = Some(c);
                }
                let c = client.as_ref().ok_or("checker: no connection")?;
                let rows = c.query(pg, &[]).await.map_err(|e| format!("{pg}: {e}"))?;
                Ok(rows
                    .iter()
                    .map(|r| {
                        (0..r.len())
                            .map(|i| r.get::<_, Option<String>>(i))
                            .collect()
                    })
                    .collect())
            }
            Db::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
                let mut stmt = conn.prepare(lite).map_err(|e| format!("{lite}: {e}"))?;
                let n = stmt.column_count();
                let rows = stmt
                    .query_map([], |r| {
                        (0..n)
                            .map(|i| r.get::<_, Option<String>>(i))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .map_err(|e| e.to_string())?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())?;
                Ok(rows)
            }
        }
    }

    /// Every run's status now.
    async fn statuses(&self) -> Result<BTreeMap<String, String>, String> {
        let q = "SELECT run_id, status FROM api_runs";
        Ok(self
            .rows(q, q)
            .await?
            .into_iter()
            .filter_map(|r| Some((r[0].clone()?, r[1].clone()?)))
            .collect())
    }

    /// Records each run's first terminal status, and any later one that differs.
    pub async fn look(&self) -> Result<(), String> {
        let now = self.statuses().await?;
        let mut seen = self.seen.lock().map_err(|e| e.to_string())?;
        let Seen { ended, wrong } = &mut *seen;
        for (run, status) in now {
            match ended.get(&run) {
                Some(first) if *first != status => wrong.push(format!(
                    "run {run} ended `{first}` and was later seen `{status}`"
                )),
                Some(_) => {}
                None if !ACTIVE.contains(&status.as_str()) => {
                    ended.insert(run, status);
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Waits until no run is pending or running.
    pub async fn settle(&self, within: Duration) -> Result<(), String> {
        let start = Instant::now();
        loop {
            // The database may still be coming back from the last outage.
            if let Ok(statuses) = self.statuses().await {
                let _ = self.look().await;
                let active: Vec<String> = statuses
                    .iter()
                    .filter(|(_, s)| ACTIVE.contains(&s.as_str()))
                    .map(|(r, s)| format!("{r} ({s})"))
                    .collect();
                if active.is_empty() {
                    return Ok(());
                }
                if start.elapsed() > within {
                    return Err(format!(
                        "1. runs never ended ({} left active after {within:?}): {}",
                        active.len(),
                        active.join(", ")
                    ));
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    pub async fn check(
        &self,
        obs: &Observations,
        http: &reqwest::Client,
        url: &str,
    ) -> Result<String, String> {
        let mut wrong: Vec<String> = self
            .seen
            .lock()
            .map(|s| s.wrong.clone())
            .map_err(|e| e.to_string())?;
        let statuses = self.statuses().await?;
        let deleted: BTreeSet<&str> = obs.deleted.iter().map(|(t, _)| t.as_str()).collect();
        // Deleted or not (the delete's answer was lost): neither kept nor gone is wrong.
        let unsure: BTreeSet<&str> = obs.maybe_deleted.iter().map(String::as_str).collect();
        let rolled_back: BTreeSet<&str> = obs
            .cancels
            .iter()
            .filter(|(_, a, _)| a == "rollback")
            .map(|(r, _, _)| r.as_str())
            .collect();
        // When a run asking for `rollback` (it rolls back what runs on its thread) was last
        // accepted on each thread.
        let mut rollback_until: BTreeMap<&str, i64> = BTreeMap::new();
        for a in &obs.accepted {
            if a.strategy == "rollback" {
                let t = rollback_until.entry(a.thread_id.as_str()).or_default();
                *t = (*t).max(a.accepted_ms);
            }
        }

        // 1. Terminal, once; gone only when rolled back or its thread deleted.
        let mut gone = BTreeSet::new();
        for a in &obs.accepted {
            match statuses.get(&a.run_id) {
                Some(s) if ACTIVE.contains(&s.as_str()) => {
                    wrong.push(format!("1. run {} is still {s}", a.run_id))
                }
                Some(_) => {}
                None => {
                    let explained = rolled_back.contains(a.run_id.as_str())
                        || obs.maybe_rolled_back.contains(&a.run_id)
                        || deleted.contains(a.thread_id.as_str())
                        || unsure.contains(a.thread_id.as_str())
                        || rollback_until
                            .get(a.thread_id.as_str())
                            .is_some_and(|&at| at > a.sent_ms);
                    if explained {
                        gone.insert(a.run_id.clone());
                    } else {
                        wrong.push(format!(
                            "1. run {} (accepted on thread {}) vanished: neither rolled back nor its thread deleted",
                            a.run_id, a.thread_id
                        ));
                    }
                }
            }
        }

        // 2. Nothing written after a cancel was acknowledged.
        let commit = match self.db {
            Db::Postgres { .. } => {
                "(extract(epoch from pg_xact_commit_timestamp(xmin)) * 1000)::bigint::text"
            }
            Db::Sqlite(_) => "",
        };
        let checkpoints = self
            .rows(
                &format!("SELECT thread_id, metadata->>'run_id', {commit} FROM agentgraph_checkpoints"),
                "SELECT thread_id, json_extract(metadata, '$.run_id'), CAST(created_at_ms AS TEXT) FROM checkpoints",
            )
            .await?;
        let events = match self.db {
            Db::Postgres { .. } => {
                self.rows(&format!("SELECT run_id, {commit} FROM api_run_events"), "")
                    .await?
            }
            Db::Sqlite(_) => Vec::new(),
        };
        let mut last_write: BTreeMap<String, (i64, &str)> = BTreeMap::new();
        for (row, what) in checkpoints
            .iter()
            .map(|r| (r[1].clone(), r[2].clone(), "checkpoint"))
            .chain(events.iter().map(|r| (r[0].clone(), r[1].clone(), "event")))
            .map(|(run, at, what)| ((run, at), what))
        {
            if let (Some(run), Some(at)) = row
                && let Ok(at) = at.parse::<i64>()
            {
                let e = last_write.entry(run).or_insert((at, what));
                if at > e.0 {
                    *e = (at, what);
                }
            }
        }
        for (run, action, acked) in &obs.cancels {
            if let Some((at, what)) = last_write.get(run)
                && *at > *acked + 5
            {
                wrong.push(format!(
                    "2. run {run}: a {what} committed {} ms after its {action} cancel was acknowledged",
                    at - acked
                ));
            }
            if action == "rollback" && last_write.get(run).is_some_and(|(_, w)| *w == "checkpoint")
            {
                let status = statuses.get(run).map_or("gone", String::as_str);
                let at = last_write.get(run).map_or(0, |(at, _)| at - acked);
                wrong.push(format!(
                    "2. run {run} was rolled back but left checkpoints (it is {status}; its last one committed {at} ms after the cancel was acknowledged)"
                ));
            }
        }

        // 3. Nothing of a deleted thread.
        let runs_of_deleted: BTreeSet<&str> = obs
            .accepted
            .iter()
            .filter(|a| deleted.contains(a.thread_id.as_str()))
            .map(|a| a.run_id.as_str())
            .collect();
        let tables: [(&str, &str); 5] = [
            (
                "SELECT thread_id FROM api_threads",
                "SELECT thread_id FROM api_threads",
            ),
            (
                "SELECT thread_id FROM api_runs",
                "SELECT thread_id FROM api_runs",
            ),
            (
                "SELECT thread_id FROM agentgraph_checkpoints",
                "SELECT thread_id FROM checkpoints",
            ),
            (
                "SELECT thread_id FROM agentgraph_blobs",
                "SELECT thread_id FROM blobs",
            ),
            (
                "SELECT thread_id FROM agentgraph_writes",
                "SELECT thread_id FROM writes",
            ),
        ];
        for (pg, lite) in tables {
            for row in self.rows(pg, lite).await? {
                if let Some(t) = &row[0]
                    && deleted.contains(t.as_str())
                {
                    wrong.push(format!("3. deleted thread {t} still has rows ({pg})"));
                }
            }
        }
        if let Db::Postgres { .. } = self.db {
            for q in [
                "SELECT run_id FROM api_run_events",
                "SELECT run_id FROM api_run_results",
            ] {
                for row in self.rows(q, q).await? {
                    if let Some(r) = &row[0]
                        && runs_of_deleted.contains(r.as_str())
                    {
                        wrong.push(format!("3. a deleted thread's run {r} is still in ({q})"));
                    }
                }
            }
        }

        // 4. Each input at most once; a rolled back run's not at all.
        let rolled_tags: BTreeSet<&str> = obs
            .accepted
            .iter()
            .filter(|a| {
                gone.contains(&a.run_id)
                    && !deleted.contains(a.thread_id.as_str())
                    && !unsure.contains(a.thread_id.as_str())
            })
            .map(|a| a.tag.as_str())
            .collect();
        let live: BTreeSet<&str> = obs
            .accepted
            .iter()
            .map(|a| a.thread_id.as_str())
            .filter(|t| !deleted.contains(t) && !unsure.contains(t))
            .collect();
        let mut applied = 0;
        for t in &live {
            let history = http
                .post(format!("{url}/threads/{t}/history"))
                .json(&serde_json::json!({"limit": 1000}))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if history.status() != 200 {
                wrong.push(format!(
                    "4. thread {t}'s history does not load: {}",
                    history.text().await.unwrap_or_default()
                ));
            }
        }
        for t in live {
            let state: Value = http
                .get(format!("{url}/threads/{t}/state"))
                .send()
                .await
                .map_err(|e| e.to_string())?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            let mut count: BTreeMap<&str, usize> = BTreeMap::new();
            for tag in state["values"]["inputs"].as_array().into_iter().flatten() {
                if let Some(tag) = tag.as_str() {
                    *count.entry(tag).or_default() += 1;
                }
            }
            applied += count.len();
            for (tag, n) in count {
                if n > 1 {
                    wrong.push(format!(
                        "4. input {tag} was applied {n} times on thread {t}"
                    ));
                }
                if rolled_tags.contains(tag) {
                    wrong.push(format!(
                        "4. input {tag} of a rolled back run is in thread {t}"
                    ));
                }
            }
        }

        // 5. No thread left busy.
        let q = "SELECT thread_id, doc FROM api_threads";
        for row in self.rows(q, q).await? {
            let doc: Value =
                serde_json::from_str(row[1].as_deref().unwrap_or("null")).unwrap_or(Value::Null);
            if doc["status"] == "busy" {
                wrong.push(format!(
                    "5. thread {} is busy with no run left",
                    row[0].clone().unwrap_or_default()
                ));
            }
        }

        // 6. No 5xx but a 503 while the database was down; no request hung.
        for (at, path, status) in &obs.answers {
            if *status < 500 {
                continue;
            }
            let in_outage = obs
                .outages
                .iter()
                .any(|(from, to)| *at >= *from && *at <= *to + 15_000);
            if !(*status == 503 && in_outage) {
                wrong.push(format!("6. {path} answered {status}"));
            }
        }
        for path in &obs.hung {
            wrong.push(format!("6. {path} got no answer within 20 s"));
        }

        if wrong.is_empty() {
            Ok(format!(
                "{} answers, {} runs accepted ({} rolled back or deleted), {} cancels, {} threads deleted, {} inputs applied once each, {} outages",
                obs.answers.len(),
                obs.accepted.len(),
                gone.len(),
                obs.cancels.len(),
                obs.deleted.len(),
                applied,
                obs.outages.len()
            ))
        } else {
            wrong.sort();
            wrong.dedup();
            Err(wrong.join("\n"))
        }
    }
}
