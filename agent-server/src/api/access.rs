//! Who is asking, and what they may see: the authentication middleware puts the request's
//! [`Caller`] in its extensions; handlers ask [`App::grant`] before each action and apply
//! the [`Grant`] — stamp what is created, hide what is not theirs (a 404, as if it did not
//! exist), keep the store under their namespace.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::App;
use crate::auth::{Action, AuthError, AuthRequest, Decision, Resource, Scope, User, Verb};
use crate::error::ApiError;
use crate::limits::too_many;

/// The key under which graphs find the caller (langgraph-api's name): in a run's
/// `config.configurable` and in the context its graph is built from. Clients cannot set
/// it.
pub(crate) const AUTH_USER: &str = "langgraph_auth_user";

/// Who sent a request: `None` on a server without auth (one trusted person, all access).
#[derive(Clone, Default)]
pub(crate) struct Caller {
    pub(crate) user: Option<Arc<User>>,
}

impl Caller {
    /// A caller for `user` (a cron firing for its owner).
    pub(crate) fn of(user: Option<User>) -> Self {
        Caller {
            user: user.map(Arc::new),
        }
    }

    /// The user as graphs see it, when there is one.
    pub(crate) fn user_json(&self) -> Option<Value> {
        self.user.as_ref().map(|u| u.to_json())
    }

    /// Whose streams and crons count together: the identity, or one anonymous bucket.
    pub(crate) fn bucket(&self) -> String {
        self.user
            .as_ref()
            .map_or_else(String::new, |u| u.identity.clone())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        // Every API route sits behind `authenticate`, which always leaves one; a route that
        // does not is refused rather than served to nobody in particular.
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "This request is not authenticated",
            )
        })
    }
}

/// Authenticates every request but `/ok` and preflights, and leaves its [`Caller`].
pub(crate) async fn authenticate(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(auth) = &app.auth else {
        request.extensions_mut().insert(Caller::default());
        return next.run(request).await;
    };
    if request.method() == Method::OPTIONS || request.uri().path() == "/ok" {
        return next.run(request).await;
    }
    let asked = AuthRequest {
        method: request.method(),
        path: request.uri().path(),
        headers: request.headers(),
    };
    match auth.authenticate(&asked).await {
        Ok(user) => {
            request.extensions_mut().insert(Caller::of(Some(user)));
            next.run(request).await
        }
        Err(AuthError::Unauthorized(m)) => {
            let mut response = ApiError::new(StatusCode::UNAUTHORIZED, m).into_response();
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            response
        }
        Err(AuthError::Forbidden(m)) => ApiError::new(StatusCode::FORBIDDEN, m).into_response(),
    }
}

/// What an authorized caller may do with one action.
#[derive(Debug, Clone)]
pub(crate) enum Grant {
    /// Anything (no auth, the operator, or an `Allow`).
    All,
    /// Within this scope.
    Scoped(Scope),
}

impl Grant {
    /// Whether a resource with `metadata` is the caller's to see.
    pub(crate) fn admits(&self, metadata: &Value) -> bool {
        match self {
            Grant::All => true,
            Grant::Scoped(scope) => scope
                .metadata
                .iter()
                .all(|(k, v)| metadata.get(k) == Some(v)),
        }
    }

    /// The metadata entries what the caller sees must have (`None`: anything), for the
    /// store's searches to filter by.
    pub(crate) fn scope(&self) -> Option<Map<String, Value>> {
        match self {
            Grant::All => None,
            Grant::Scoped(scope) => Some(scope.metadata.clone()),
        }
    }

    /// Stamps the scope into the metadata of what is being created or changed (so a patch
    /// cannot hand a resource to someone else).
    pub(crate) fn stamp(&self, metadata: &mut Map<String, Value>) {
        if let Grant::Scoped(scope) = self {
            for (k, v) in &scope.metadata {
                metadata.insert(k.clone(), v.clone());
            }
        }
    }

    /// A 403 unless `namespace` lies under the caller's.
    pub(crate) fn namespace(&self, namespace: &[String]) -> Result<(), ApiError> {
        match self {
            Grant::Scoped(scope) if !namespace.starts_with(&scope.namespace) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: your store namespaces start with [{}]",
                    quoted(&scope.namespace)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A search or listing prefix within the caller's namespace: a shorter one that leads
    /// there is narrowed to it; one that leads elsewhere is a 403.
    pub(crate) fn prefix(&self, prefix: Vec<String>) -> Result<Vec<String>, ApiError> {
        match self {
            Grant::Scoped(scope) if scope.namespace.starts_with(&prefix) => {
                Ok(scope.namespace.clone())
            }
            _ => self.namespace(&prefix).map(|()| prefix),
        }
    }
}

fn quoted(labels: &[String]) -> String {
    labels
        .iter()
        .map(|l| format!("\"{l}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

impl App {
    /// Asks the server's [`Auth`](crate::auth::Auth) whether `caller` may do `verb` on
    /// `resource` (with the request's `value`): a 403 when denied.
    pub(crate) async fn grant(
        &self,
        caller: &Caller,
        resource: Resource,
        verb: Verb,
        value: &Value,
    ) -> Result<Grant, ApiError> {
        let (Some(auth), Some(user)) = (&self.auth, &caller.user) else {
            return Ok(Grant::All);
        };
        let action = Action {
            resource,
            verb,
            value,
        };
        match auth.authorize(user, &action).await {
            Decision::Allow => Ok(Grant::All),
            Decision::Scope(scope) => Ok(Grant::Scoped(scope)),
            Decision::Deny => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: {} may not {} {} (it needs the {}:{} permission)",
                    user.identity,
                    verb_name(verb),
                    resource.name(),
                    resource.name(),
                    verb.kind()
                ),
            )),
        }
    }
}

fn verb_name(verb: Verb) -> &'static str {
    match verb {
        Verb::Create => "create",
        Verb::Read => "read",
        Verb::Update => "update",
        Verb::Delete => "delete",
        Verb::Search => "search",
        Verb::CreateRun => "run on",
        Verb::Put => "put into",
        Verb::Get => "get from",
        Verb::ListNamespaces => "list the namespaces of",
    }
}

/// A client's context or configurable that tries to set [`AUTH_USER`]: a 422.
pub(crate) fn refuse_auth_user(settings: &Map<String, Value>, what: &str) -> Result<(), ApiError> {
    if settings.contains_key(AUTH_USER) {
        return Err(ApiError::invalid(format!(
            "{what}.{AUTH_USER} is set by the server from the request's credentials, not by a client"
        )));
    }
    Ok(())
}

/// Open SSE streams per user, bounded by `streams_per_user`.
#[derive(Default)]
pub(crate) struct Streams {
    open: Mutex<HashMap<String, usize>>,
}

/// One open stream, counted until dropped (when the response body ends or the client
/// goes away).
pub(crate) struct StreamPermit {
    streams: Arc<Streams>,
    bucket: String,
}

impl Streams {
    /// A permit for one more stream of `caller`, or a 429.
    pub(crate) fn open(
        self: &Arc<Self>,
        caller: &Caller,
        max: usize,
    ) -> Result<StreamPermit, ApiError> {
        let bucket = caller.bucket();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(bucket.clone()).or_default();
        if *n >= max {
            return Err(too_many(format!(
                "{max} streams are open for this user already; close one (or let it end) first"
            )));
        }
        *n += 1;
        Ok(StreamPermit {
            streams: self.clone(),
            bucket,
        })
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.bucket) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.bucket);
            }
        }
    }
}
