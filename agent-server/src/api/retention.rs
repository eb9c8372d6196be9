//! Nothing kept for ever: threads with a time to live, and a sweeper that acts on them.
//!
//! A thread's `ttl` (langgraph-api's body: `{"strategy": "delete" | "keep_latest", "ttl":
//! minutes}`, or a bare number of minutes) counts from its last activity — its creation, a
//! change, a run's end. When it runs out, `delete` deletes the thread with its runs and
//! checkpoints; `keep_latest` deletes its older checkpoints and keeps the thread and its
//! latest state (and counts again). A server default (`--thread-ttl`) applies to threads
//! created without one. `POST /threads/prune` does either now for the threads it names.
//!
//! The same sweeper sets right threads a stopped server left `busy` with no run.
//!
//! The sweeper looks every `every` and takes at most [`PASS`] expired threads a pass, each
//! claimed by moving its expiry on (on PostgreSQL in one transaction, `FOR UPDATE SKIP
//! LOCKED`, one instance at a time), so it never holds the database for long and no two
//! instances sweep one thread. A thread with a run pending or running waits for the next
//! pass.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::App;
use super::models::threads::{TtlBody, TtlStrategyName};
use crate::error::ApiError;
use crate::time::{iso_ms, now_ms};

/// Expired threads a sweep takes at most.
pub(crate) const PASS: usize = 100;

/// How long a claimed thread is held before another sweep may take it again (its sweep
/// failed or was cut short).
const HOLD_MS: i64 = 10 * 60 * 1000;

/// A thread's time to live.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadTtl {
    /// What happens when it runs out.
    pub strategy: TtlStrategy,
    /// Minutes from its last activity.
    pub minutes: f64,
}

/// What an expired thread's sweep does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtlStrategy {
    /// Delete the thread, its runs and checkpoints.
    Delete,
    /// Keep the thread and its latest checkpoint; delete the older ones.
    KeepLatest,
}

impl TtlStrategy {
    fn name(self) -> &'static str {
        match self {
            TtlStrategy::Delete => "delete",
            TtlStrategy::KeepLatest => "keep_latest",
        }
    }

    /// `delete` or `keep_latest`.
    pub(crate) fn parse(s: &str) -> Result<TtlStrategy, ApiError> {
        match s {
            "delete" => Ok(TtlStrategy::Delete),
            "keep_latest" => Ok(TtlStrategy::KeepLatest),
            other => Err(ApiError::invalid(format!(
                "Invalid strategy: {other}. Expected 'delete' or 'keep_latest'."
            ))),
        }
    }
}

impl ThreadTtl {
    /// A ttl of `minutes` with the strategy named `strategy` (`delete`, `keep_latest`), as
    /// an operator writes it; an error says what is wrong.
    pub fn new(minutes: f64, strategy: &str) -> Result<ThreadTtl, String> {
        let body = json!({"ttl": minutes, "strategy": strategy});
        match ThreadTtl::from_body(&body) {
            Ok(Some(ttl)) => Ok(ttl),
            Ok(None) => Err("no ttl".to_owned()),
            Err(e) => Err(e.detail),
        }
    }

    /// The `ttl` of a create or patch body.
    pub(crate) fn from_typed(ttl: &TtlBody) -> Result<ThreadTtl, ApiError> {
        let (minutes, strategy) = match ttl {
            TtlBody::Minutes(m) => (*m, None),
            TtlBody::Config { ttl, strategy } => (*ttl, *strategy),
        };
        let strategy = match strategy {
            None | Some(TtlStrategyName::Delete) => TtlStrategy::Delete,
            Some(TtlStrategyName::KeepLatest) => TtlStrategy::KeepLatest,
        };
        if minutes.is_finite() && minutes > 0.0 && minutes <= 525_600.0 * 100.0 {
            Ok(ThreadTtl { strategy, minutes })
        } else {
            Err(ApiError::invalid(
                "ttl: must be a positive number of minutes (at most 100 years)",
            ))
        }
    }

    /// The `ttl` of a create or update body: minutes, or `{"ttl": minutes, "strategy"}`.
    pub(crate) fn from_body(v: &Value) -> Result<Option<ThreadTtl>, ApiError> {
        let (minutes, strategy) = match v {
            Value::Null => return Ok(None),
            Value::Number(n) => (n.as_f64(), TtlStrategy::Delete),
            Value::Object(o) => (
                o.get("ttl").and_then(Value::as_f64),
                match o.get("strategy") {
                    None | Some(Value::Null) => TtlStrategy::Delete,
                    Some(Value::String(s)) => TtlStrategy::parse(s)?,
                    Some(_) => {
                        return Err(ApiError::invalid(
                            "'ttl.strategy' must be delete or keep_latest",
                        ));
                    }
                },
            ),
            _ => {
                return Err(ApiError::invalid(
                    "'ttl' must be minutes or {\"ttl\": minutes, \"strategy\": \"delete\" | \"keep_latest\"}",
                ));
            }
        };
        match minutes {
            Some(m) if m.is_finite() && m > 0.0 && m <= 525_600.0 * 100.0 => Ok(Some(ThreadTtl {
                strategy,
                minutes: m,
            })),
            _ => Err(ApiError::invalid(
                "'ttl' must be a positive number of minutes",
            )),
        }
    }

    fn millis(&self) -> i64 {
        (self.minutes * 60_000.0) as i64
    }

    /// Sets `doc`'s ttl, counting from now.
    pub(crate) fn apply(&self, doc: &mut Value) {
        let expires = now_ms().saturating_add(self.millis());
        doc["ttl"] = json!({
            "strategy": self.strategy.name(),
            "ttl_minutes": self.minutes,
            "expires_at": iso_ms(expires),
            "expires_at_ms": expires,
        });
    }

    fn of(doc: &Value) -> Option<ThreadTtl> {
        let ttl = doc.get("ttl")?;
        Some(ThreadTtl {
            strategy: TtlStrategy::parse(ttl["strategy"].as_str()?).ok()?,
            minutes: ttl["ttl_minutes"].as_f64()?,
        })
    }
}

/// Counts a thread's ttl again from now (its activity: a change, a run's end).
pub(crate) fn touch(doc: &mut Value) {
    if let Some(ttl) = ThreadTtl::of(doc) {
        ttl.apply(doc);
    }
}

/// A thread as clients see it: its ttl only when asked for (`?include=ttl`), as
/// langgraph-api shows it (`strategy`, `ttl_minutes`, `expires_at`).
pub(crate) fn public(mut doc: Value, include_ttl: bool) -> Value {
    if let Some(o) = doc.as_object_mut() {
        match o.remove("ttl") {
            Some(mut ttl) if include_ttl => {
                if let Some(t) = ttl.as_object_mut() {
                    t.remove("expires_at_ms");
                }
                o.insert("ttl".into(), ttl);
            }
            _ => {}
        }
    }
    doc
}

/// Deletes a thread (its runs stopped first, then its runs, document and checkpoints) or
/// keeps only its latest checkpoint. Whether it was pruned.
pub(crate) async fn prune(
    app: &App,
    thread: &Value,
    strategy: TtlStrategy,
) -> Result<bool, ApiError> {
    let id = thread["thread_id"].as_str().unwrap_or_default();
    let graph = super::threads::graph_of(app, thread);
    match strategy {
        TtlStrategy::Delete => {
            super::threads::delete_thread(app, id).await?;
        }
        TtlStrategy::KeepLatest => {
            if !app.runs.active_on(id).await?.is_empty() {
                return Ok(false);
            }
            if let Some(graph) = graph {
                graph.keep_latest(id).await?;
            }
        }
    }
    Ok(true)
}

/// One sweep: the expired threads it could take, each pruned by its strategy. How many.
pub(crate) async fn sweep(app: &App) -> Result<usize, ApiError> {
    let due = app
        .store
        .claim_expired_threads(now_ms(), PASS, HOLD_MS)
        .await?;
    let mut pruned = 0;
    for thread in due {
        let Some(ttl) = ThreadTtl::of(&thread) else {
            continue;
        };
        let id = thread["thread_id"].as_str().unwrap_or_default().to_owned();
        if !app.runs.active_on(&id).await?.is_empty() {
            // Busy: its run's end counts its ttl again.
            continue;
        }
        if prune(app, &thread, ttl.strategy).await? {
            pruned += 1;
        }
        if ttl.strategy == TtlStrategy::KeepLatest
            && let Some(mut doc) = app.store.get(crate::store::Kind::Thread, &id).await?
        {
            ttl.apply(&mut doc);
            app.store.update(crate::store::Kind::Thread, &doc).await?;
        }
    }
    Ok(pruned)
}

/// Starts this instance's sweeper: expired threads, and threads left `busy`.
pub(crate) fn spawn_sweeper(app: Arc<App>, every: Duration) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match sweep(&app).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(threads = n, "pruned threads whose ttl ran out"),
                Err(e) => tracing::warn!(error = %e.detail, "sweeping expired threads failed"),
            }
            match app.runs.repair_busy().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(threads = n, "threads left busy with no run set right"),
                Err(e) => tracing::warn!(error = %e.detail, "looking for threads left busy failed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_bodies_as_the_sdks_send_them() {
        assert_eq!(ThreadTtl::from_body(&Value::Null).unwrap(), None);
        let t = ThreadTtl::from_body(&json!(30)).unwrap().unwrap();
        assert_eq!((t.strategy, t.minutes), (TtlStrategy::Delete, 30.0));
        let t = ThreadTtl::from_body(&json!({"ttl": 1.5, "strategy": "keep_latest"}))
            .unwrap()
            .unwrap();
        assert_eq!((t.strategy, t.minutes), (TtlStrategy::KeepLatest, 1.5));
        for bad in [
            json!(0),
            json!(-1),
            json!("x"),
            json!({"ttl": 5, "strategy": "archive"}),
            json!({}),
        ] {
            assert!(ThreadTtl::from_body(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_thread_shows_its_ttl_when_asked() {
        let mut doc = json!({"thread_id": "t"});
        ThreadTtl {
            strategy: TtlStrategy::Delete,
            minutes: 10.0,
        }
        .apply(&mut doc);
        assert!(public(doc.clone(), false).get("ttl").is_none());
        let shown = public(doc, true);
        assert_eq!(shown["ttl"]["strategy"], "delete");
        assert_eq!(shown["ttl"]["ttl_minutes"], 10.0);
        assert!(shown["ttl"]["expires_at"].is_string());
        assert!(shown["ttl"].get("expires_at_ms").is_none());
    }
}
