//! The API as a typed contract: one module per resource with its request bodies (serde
//! structs and enums, defaults and bounds in the types) and the shapes it answers with, each
//! a [`utoipa::ToSchema`], so `/openapi.json` is generated from the very types the handlers
//! read. Bodies accept what langgraph-api accepts — extra fields are tolerated, as its
//! schemas allow them — and refuse the rest with its 422 shape, `{"detail": "<field>: why"}`.

pub(crate) mod a2a;
pub(crate) mod assistants;
pub(crate) mod crons;
pub(crate) mod protocol;
pub(crate) mod runs;
pub(crate) mod store;
pub(crate) mod system;
pub(crate) mod threads;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::ApiError;

/// A JSON object of the client's (metadata, values, a filter...).
pub(crate) type Object = Map<String, Value>;

/// A typed JSON body: parsed into `T` (an empty body reads as `{}`; `text/plain` is
/// accepted as browsers send it to skip a preflight — the origin guard has let the page in
/// first). A body that does not fit is a 422 naming the field.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse(&body_bytes(req, state).await?).map(Body)
    }
}

/// A body as its bytes, for routes that read their JSON their own way (the streaming
/// protocol's, whose refusals have shapes of their own), with the same 413 as every body.
pub(crate) struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        body_bytes(req, state).await.map(RawBody)
    }
}

/// Typed query parameters: a query that does not fit is a 422 naming the parameter.
pub(crate) struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> axum::extract::FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        if query.to_ascii_lowercase().contains("%00") {
            return Err(ApiError::invalid(NUL));
        }
        serde_html_form::from_str(query)
            .map(Params)
            .map_err(|e| ApiError::invalid(format!("invalid query: {e}")))
    }
}

/// A stored document as the response type `T` (the fields the API promises, in its types;
/// anything else the document holds stays on the server).
pub(crate) fn typed<T: DeserializeOwned>(doc: Value) -> Result<T, ApiError> {
    serde_json::from_value(doc)
        .map_err(|e| ApiError::internal(format!("a stored document does not fit the API: {e}")))
}

/// A request as the JSON an [`Auth`](crate::auth::Auth) handler is shown.
pub(crate) fn as_value<T: Serialize>(request: &T) -> Value {
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// `bytes` (a JSON object) as a `T`, or a 422 saying where and why.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value = json(bytes)?;
    if !value.is_object() {
        return Err(ApiError::invalid(format!(
            "the request body must be a JSON object, not {}",
            kind(&value)
        )));
    }
    from_value(value)
}

/// The body's JSON (an empty body reads as `{}`).
fn json(bytes: &[u8]) -> Result<Value, ApiError> {
    let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    serde_json::from_slice(text).map_err(|_| ApiError::invalid("Invalid JSON in request body"))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A typed JSON body that is a list (`POST /runs/batch`): each item a `T`.
pub(crate) struct ListBody<T>(pub Vec<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ListBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = body_bytes(req, state).await?;
        let value = json(&bytes)?;
        if !value.is_array() {
            return Err(ApiError::invalid(format!(
                "the request body must be a JSON list, not {}",
                kind(&value)
            )));
        }
        if let Some(bad) = value
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| !v.is_object())
        {
            return Err(ApiError::invalid(format!(
                "each item of the list must be a JSON object, not {}",
                kind(bad)
            )));
        }
        from_value(value).map(ListBody)
    }
}

async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
        } else {
            ApiError::bad_request(e.body_text())
        }
    })
}

const NUL: &str =
    "text may not contain NUL (\\u0000): PostgreSQL cannot store it, so no backend takes it";

/// Refuses a NUL character anywhere in `value`'s strings and keys (the same refusal on every
/// backend, before PostgreSQL would fail on it deep in a write).
fn no_nul(value: &Value) -> Result<(), ApiError> {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.contains('\0') => return Err(ApiError::invalid(NUL)),
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => {
                if m.keys().any(|k| k.contains('\0')) {
                    return Err(ApiError::invalid(NUL));
                }
                stack.extend(m.values());
            }
            _ => {}
        }
    }
    Ok(())
}

/// `value` as a `T`, or a 422 saying where and why.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    no_nul(&value)?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let why = e.inner().to_string();
        ApiError::invalid(match path.as_str() {
            "." => format!("invalid request body: {why}"),
            path => format!("{path}: {why}"),
        })
    })
}

/// `asc` or `desc`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Oldest (or smallest) first.
    Asc,
    /// Newest (or largest) first: the default.
    #[default]
    Desc,
}

/// `raise` (a 409) or `do_nothing` (the one kept) when what is created exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IfExists {
    /// A 409.
    #[default]
    Raise,
    /// Answer with the one that exists.
    DoNothing,
}

/// A page of a search: `limit` (1 to the server's page size, 10 by default) and `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
pub struct Page {
    /// How many (at most 1000, or the server's page size).
    #[serde(default = "ten")]
    #[schema(minimum = 1, maximum = 1000, default = 10)]
    pub limit: u64,
    /// How many to skip.
    #[serde(default)]
    #[schema(minimum = 0, default = 0)]
    pub offset: u64,
}

pub(crate) fn ten() -> u64 {
    10
}

impl Default for Page {
    fn default() -> Self {
        Page {
            limit: 10,
            offset: 0,
        }
    }
}

/// One server-sent event of a stream: its name, its JSON data as text, and (on resumable
/// streams) its id.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StreamEvent {
    /// `metadata`, `values`, `updates`, `messages`, `error`...
    pub event: String,
    /// The event's JSON, as text.
    pub data: String,
    /// Its id, for `Last-Event-ID`.
    pub id: Option<String>,
}

/// The `{"detail": ...}` of every refusal.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorResponse {
    /// What was wrong and, where it helps, what to do.
    pub detail: String,
}

/// A field that may be sent as `null` to clear it: absent is `None`, `null` is
/// `Some(None)` (with `#[serde(default, deserialize_with = "present")]`).
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A query flag as the SDKs send it: `true`/`false`, `1`/`0` (the python SDK's cancel
/// `wait`), `True`/`False`, `yes`/`no`.
pub(crate) fn flag<'de, D>(d: D) -> Result<Option<bool>, D::Error>
where
    D: Deserializer<'de>,
{
    let text = Option::<String>::deserialize(d)?;
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some("true" | "True" | "1" | "yes") => Ok(Some(true)),
        Some("false" | "False" | "0" | "no") => Ok(Some(false)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected true or false, not '{other}'"
        ))),
    }
}
