//! `/store/*`: what putting, getting, deleting and searching items and listing namespaces
//! carry, and the items the API answers with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Object;

/// `PUT /store/items`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct StorePutRequest {
    /// The namespace (labels, the first the owner's identity on a server with users).
    pub namespace: Vec<String>,
    /// The key in it.
    pub key: String,
    /// The value: a JSON object.
    #[schema(value_type = Object)]
    pub value: Object,
    /// `false`: not embedded; a list of paths: those embedded; absent: the store's fields.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub index: Option<Value>,
    /// Minutes it lives (default: the store's; at most 100 years).
    #[serde(default)]
    #[schema(exclusive_minimum = 0, maximum = 52_560_000)]
    pub ttl: Option<f64>,
}

/// `DELETE /store/items`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct StoreDeleteRequest {
    /// The namespace.
    pub namespace: Vec<String>,
    /// The key.
    pub key: String,
}

/// `GET /store/items` (query parameters).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StoreGetQuery {
    /// The namespace, its labels joined with dots.
    pub namespace: Option<String>,
    /// The key.
    pub key: String,
    /// Counts the item's ttl again from now (default: the store's setting).
    #[serde(default, deserialize_with = "super::flag")]
    pub refresh_ttl: Option<bool>,
}

/// `POST /store/items/search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct StoreSearchRequest {
    /// Items under these labels (`[]`: all the caller's).
    #[serde(default)]
    pub namespace_prefix: Option<Vec<String>>,
    /// Items whose value matches (`{"field": value}`, `$eq`, `$gt`...).
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub filter: Option<Object>,
    /// How many (default 10).
    #[serde(default)]
    pub limit: Option<u64>,
    /// How many to skip.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Rank by similarity to this text (a store with an index; ignored without).
    #[serde(default)]
    pub query: Option<String>,
    /// Counts the items' ttl again from now.
    #[serde(default)]
    pub refresh_ttl: Option<bool>,
}

/// `POST /store/namespaces`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct StoreListNamespacesRequest {
    /// Namespaces that start with these labels.
    #[serde(default)]
    pub prefix: Option<Vec<String>>,
    /// Namespaces that end with these labels.
    #[serde(default)]
    pub suffix: Option<Vec<String>>,
    /// Namespaces cut to this many labels.
    #[serde(default)]
    pub max_depth: Option<u64>,
    /// How many (default 100).
    #[serde(default)]
    pub limit: Option<u64>,
    /// How many to skip.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// An item of the store.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Item {
    /// Its namespace.
    pub namespace: Vec<String>,
    /// Its key.
    pub key: String,
    /// Its value.
    #[schema(value_type = Object)]
    pub value: Value,
    /// When it was made.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
}

/// An item a search found.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchItem {
    /// The item.
    #[serde(flatten)]
    pub item: Item,
    /// Its similarity to the search's query (`null` without one, or without an index).
    pub score: Option<f64>,
}

/// What a search found.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchItemsResponse {
    /// The items.
    pub items: Vec<SearchItem>,
}

/// The namespaces found.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ListNamespacesResponse {
    /// Each a list of labels.
    pub namespaces: Vec<Vec<String>>,
}
