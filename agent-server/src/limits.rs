//! The server's limits: how much one request, one user or one run may ask of it. Each is
//! a clear 4xx when crossed (422 for a request that asks too much at once, 429 for a user
//! or thread that holds too much), each configurable (the config file's `[limits]`, or
//! [`ServerBuilder::limits`](crate::ServerBuilder::limits)).

use serde::Deserialize;

use crate::error::ApiError;

/// What one request, user, thread or run may ask of the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The largest `limit` of a search or listing.
    pub page_size: usize,
    /// Runs in one `/runs/batch`.
    pub batch_runs: usize,
    /// The highest `config.recursion_limit` a run may ask for.
    pub recursion_limit: usize,
    /// Runs waiting on one thread (pending; the running one not counted).
    pub queued_runs_per_thread: usize,
    /// SSE streams one user holds open at once (anonymous callers share one count).
    pub streams_per_user: usize,
    /// Crons one user owns.
    pub crons_per_user: usize,
    /// Webhook deliveries under way at once; a run asking for one beyond it is refused.
    pub webhooks_in_flight: usize,
    /// The JSON size of a thread's, run's, assistant's or cron's `metadata` (a run's is
    /// repeated in every `messages` event: this bounds each token's).
    pub metadata_bytes: usize,
    /// The bytes of a resumable run's events kept in memory for replays.
    pub event_log_bytes: usize,
    /// The bytes of events a non-resumable run keeps for readers that lag behind: a reader
    /// further behind is told so and its stream ends.
    pub event_window_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            page_size: 1000,
            batch_runs: 100,
            recursion_limit: 1000,
            queued_runs_per_thread: 100,
            streams_per_user: 100,
            crons_per_user: 100,
            webhooks_in_flight: 256,
            metadata_bytes: 16 * 1024,
            event_log_bytes: 32 * 1024 * 1024,
            event_window_bytes: 1024 * 1024,
        }
    }
}

impl Limits {
    /// A search's `limit` and `offset`, checked: at most `page_size`, and a sum that fits.
    pub(crate) fn page(&self, limit: usize, offset: usize) -> Result<(usize, usize), ApiError> {
        if limit == 0 {
            return Err(ApiError::invalid("limit: must be at least 1"));
        }
        if limit > self.page_size {
            return Err(ApiError::invalid(format!(
                "'limit' is {limit}; a page holds at most {}",
                self.page_size
            )));
        }
        if offset
            .checked_add(limit)
            .is_none_or(|end| end > i64::MAX as usize)
        {
            return Err(ApiError::invalid("'offset' is too large"));
        }
        Ok((limit, offset))
    }

    /// `metadata` (of `what`) within `metadata_bytes`.
    pub(crate) fn metadata(
        &self,
        what: &str,
        metadata: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), ApiError> {
        let size = serde_json::to_string(metadata)
            .map(|s| s.len())
            .unwrap_or(0);
        if size > self.metadata_bytes {
            return Err(ApiError::invalid(format!(
                "the {what}'s metadata is {size} bytes of JSON; this server takes at most {}",
                self.metadata_bytes
            )));
        }
        Ok(())
    }

    /// A run's `recursion_limit` within the ceiling.
    pub(crate) fn recursion(&self, asked: u64) -> Result<(), ApiError> {
        if asked == 0 || asked > self.recursion_limit as u64 {
            return Err(ApiError::invalid(format!(
                "'config.recursion_limit' is {asked}; this server takes 1 to {}",
                self.recursion_limit
            )));
        }
        Ok(())
    }
}

/// A 429 for a count that reached its limit.
pub(crate) fn too_many(message: impl Into<String>) -> ApiError {
    ApiError::new(axum::http::StatusCode::TOO_MANY_REQUESTS, message)
}
