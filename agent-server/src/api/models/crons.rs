//! Crons: what creating (on a thread or stateless), patching, searching and counting carry,
//! and the cron the API answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::runs::RunCreate;
use super::{Object, Page, SortOrder};

/// What becomes of a stateless cron's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnRunCompleted {
    /// Deleted with each run's end (the default).
    Delete,
    /// Kept.
    Keep,
}

/// `POST /runs/crons` and `POST /threads/{thread_id}/runs/crons`: a schedule and the run it
/// queues at each tick.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct CronCreate {
    /// A 5-field cron expression (minute hour day-of-month month day-of-week), or `@daily`...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The IANA time zone it ticks in (default UTC).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    #[schema(value_type = Option<String>, nullable)]
    pub timezone: Option<Option<String>>,
    /// It fires no more after this (an ISO-8601 date-time).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::present"
    )]
    #[schema(format = DateTime, value_type = Option<String>, nullable)]
    pub end_time: Option<Option<String>>,
    /// Whether it fires (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A stateless cron's threads after each run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_run_completed: Option<OnRunCompleted>,
    /// The run it queues at each tick.
    #[serde(flatten)]
    pub run: RunCreate,
}

/// A cron's own fields, read apart from its run's so that an error in either names its field
/// (serde's `flatten` loses the path).
#[derive(Deserialize)]
struct CronOwn {
    schedule: Option<String>,
    #[serde(default, deserialize_with = "super::present")]
    timezone: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    end_time: Option<Option<String>>,
    enabled: Option<bool>,
    on_run_completed: Option<OnRunCompleted>,
}

impl<'de> Deserialize<'de> for CronCreate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let body = serde_json::Map::<String, Value>::deserialize(d)?;
        let body = Value::Object(body);
        let own: CronOwn = with_path(&body)?;
        let run: RunCreate = with_path(&body)?;
        Ok(CronCreate {
            schedule: own.schedule,
            timezone: own.timezone,
            end_time: own.end_time,
            enabled: own.enabled,
            on_run_completed: own.on_run_completed,
            run,
        })
    }
}

/// `T` read from `body`, an error naming the field it is about.
fn with_path<T: serde::de::DeserializeOwned, E: serde::de::Error>(body: &Value) -> Result<T, E> {
    serde_path_to_error::deserialize(body).map_err(|e| match e.path().to_string().as_str() {
        "." => E::custom(e.inner()),
        path => E::custom(format!("{path}: {}", e.inner())),
    })
}

/// `PATCH /runs/crons/{cron_id}`: its settings and its runs' fields, merged over what it had.
pub type CronPatch = CronCreate;

/// What cron searches sort by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CronSortBy {
    /// The id.
    CronId,
    /// The assistant.
    AssistantId,
    /// The thread.
    ThreadId,
    /// When it fires next.
    NextRunDate,
    /// When it stops.
    EndTime,
    /// When it was made (the default).
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
}

impl CronSortBy {
    /// The field.
    pub fn field(self) -> &'static str {
        match self {
            CronSortBy::CronId => "cron_id",
            CronSortBy::AssistantId => "assistant_id",
            CronSortBy::ThreadId => "thread_id",
            CronSortBy::NextRunDate => "next_run_date",
            CronSortBy::EndTime => "end_time",
            CronSortBy::CreatedAt => "created_at",
            CronSortBy::UpdatedAt => "updated_at",
        }
    }
}

/// `POST /runs/crons/search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct CronSearch {
    /// Crons of this assistant (or graph).
    pub assistant_id: Option<String>,
    /// Crons on this thread.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) crons.
    pub enabled: Option<bool>,
    /// Crons whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// The page.
    #[serde(flatten)]
    pub page: Page,
    /// The order.
    pub sort_by: Option<CronSortBy>,
    /// Ascending or descending.
    pub sort_order: Option<SortOrder>,
    /// Only these fields of each cron.
    pub select: Option<Vec<String>>,
}

/// `POST /runs/crons/count`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct CronCountRequest {
    /// Crons of this assistant (or graph).
    pub assistant_id: Option<String>,
    /// Crons on this thread.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) crons.
    pub enabled: Option<bool>,
    /// Crons whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
}

/// A cron.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Cron {
    /// Its id.
    #[schema(format = Uuid)]
    pub cron_id: Option<String>,
    /// The assistant its runs use.
    pub assistant_id: Option<String>,
    /// Its thread (`null`: stateless, a new thread each tick).
    #[schema(nullable)]
    pub thread_id: Option<String>,
    /// It fires no more after this.
    #[schema(nullable)]
    pub end_time: Option<String>,
    /// Its schedule.
    pub schedule: Option<String>,
    /// Its time zone.
    #[schema(nullable)]
    pub timezone: Option<String>,
    /// When it was made.
    pub created_at: Option<String>,
    /// When it last changed.
    pub updated_at: Option<String>,
    /// Who made it (on a server with auth).
    #[schema(nullable)]
    pub user_id: Option<String>,
    /// The run it queues.
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
    /// When it fires next.
    #[schema(nullable)]
    pub next_run_date: Option<String>,
    /// Its metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Whether it fires.
    pub enabled: Option<bool>,
    /// A stateless cron's threads after each run.
    #[schema(nullable)]
    pub on_run_completed: Option<String>,
}
