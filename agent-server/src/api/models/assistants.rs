//! `/assistants`: what creating, patching, searching and versioning an assistant carry,
//! and the assistant and graph schemas the API answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::runs::ConfigBody;
use super::{IfExists, Object, Page, SortOrder};

/// `POST /assistants`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct AssistantCreate {
    /// Its id (a UUID; default: a new one).
    #[schema(format = Uuid)]
    pub assistant_id: Option<String>,
    /// The graph it runs.
    pub graph_id: Option<String>,
    /// Its config (`configurable`: the context of older graphs).
    pub config: Option<ConfigBody>,
    /// Its context: the graph's settings (the part a client may set).
    #[schema(value_type = Option<Object>)]
    pub context: Option<Object>,
    /// Its metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// What to do when one with this id exists.
    pub if_exists: Option<IfExists>,
    /// Its name (default `Untitled`).
    pub name: Option<String>,
    /// What clients show beside its name.
    pub description: Option<String>,
}

/// `PATCH /assistants/{assistant_id}`: a new version.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct AssistantPatch {
    /// Another graph.
    pub graph_id: Option<String>,
    /// A new config.
    pub config: Option<ConfigBody>,
    /// A new context.
    #[schema(value_type = Option<Object>)]
    pub context: Option<Object>,
    /// Merged into its metadata.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// A new name.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
}

/// What assistant searches sort by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantSortBy {
    /// The id.
    AssistantId,
    /// When it was made (the default).
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// Its name.
    Name,
    /// Its graph.
    GraphId,
}

impl AssistantSortBy {
    /// The field.
    pub fn field(self) -> &'static str {
        match self {
            AssistantSortBy::AssistantId => "assistant_id",
            AssistantSortBy::CreatedAt => "created_at",
            AssistantSortBy::UpdatedAt => "updated_at",
            AssistantSortBy::Name => "name",
            AssistantSortBy::GraphId => "graph_id",
        }
    }
}

/// A field of an assistant a search may `select`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantField {
    /// Its id.
    AssistantId,
    /// Its graph.
    GraphId,
    /// Its name.
    Name,
    /// Its description.
    Description,
    /// Its config.
    Config,
    /// Its context.
    Context,
    /// When it was made.
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// Its metadata.
    Metadata,
    /// Its version.
    Version,
}

/// `POST /assistants/search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct AssistantSearchRequest {
    /// Assistants whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Assistants of this graph.
    pub graph_id: Option<String>,
    /// Assistants whose name contains this (any case).
    pub name: Option<String>,
    /// The page.
    #[serde(flatten)]
    pub page: Page,
    /// The order.
    pub sort_by: Option<AssistantSortBy>,
    /// Ascending or descending.
    pub sort_order: Option<SortOrder>,
    /// Only these fields of each assistant.
    pub select: Option<Vec<AssistantField>>,
}

/// `POST /assistants/count`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct AssistantCountRequest {
    /// Assistants whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// Assistants of this graph.
    pub graph_id: Option<String>,
    /// Assistants whose name contains this.
    pub name: Option<String>,
}

/// `POST /assistants/{assistant_id}/versions`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct AssistantVersionsSearchRequest {
    /// Versions whose metadata contains these entries.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Object>,
    /// The page.
    #[serde(flatten)]
    pub page: Page,
}

/// `POST /assistants/{assistant_id}/latest` (the version in the body or the query).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssistantVersionChange {
    /// The version made the assistant's.
    pub version: Option<u64>,
}

/// `DELETE /assistants/{assistant_id}` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssistantDeleteQuery {
    /// Delete the assistant's threads too.
    #[serde(default, deserialize_with = "super::flag")]
    pub delete_threads: Option<bool>,
}

/// `GET /assistants/{assistant_id}/graph` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssistantGraphQuery {
    /// `true` draws every subgraph level, a number that many levels, `false` none.
    pub xray: Option<String>,
}

/// `GET /assistants/{assistant_id}/subgraphs` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubgraphsQuery {
    /// Subgraphs of subgraphs too.
    #[serde(default, deserialize_with = "super::flag")]
    pub recurse: Option<bool>,
}

/// An assistant.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Assistant {
    /// Its id.
    #[schema(format = Uuid)]
    pub assistant_id: Option<String>,
    /// Its graph.
    pub graph_id: Option<String>,
    /// Its config.
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    /// Its context.
    #[schema(value_type = Option<Object>)]
    pub context: Option<Value>,
    /// When it was made.
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    /// When it last changed.
    #[schema(format = DateTime)]
    pub updated_at: Option<String>,
    /// Its metadata (`created_by: system` for a graph's own).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Its version.
    pub version: Option<i64>,
    /// Its name.
    pub name: Option<String>,
    /// What clients show beside its name.
    #[schema(nullable)]
    pub description: Option<String>,
}

/// A graph's JSON schemas: input, output, state and context.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GraphSchema {
    /// The graph.
    pub graph_id: String,
    /// What a run's input may hold.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// What a run ends with.
    #[schema(value_type = Object)]
    pub output_schema: Value,
    /// The state.
    #[schema(value_type = Object)]
    pub state_schema: Value,
    /// The settings (as `config.configurable`).
    #[schema(value_type = Object)]
    pub config_schema: Value,
    /// The settings a run's `context` may hold.
    #[schema(value_type = Object, nullable)]
    pub context_schema: Value,
}
