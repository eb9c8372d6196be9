//! Who sent a request, and what they may touch: LangGraph server's custom auth
//! (`@auth.authenticate` returning a user, `@auth.on` handlers that allow, deny or scope an
//! action) as one Rust trait, [`Auth`].
//!
//! A server without an [`Auth`] serves one trusted person (loopback only, see `api::guard`).
//! With one, every request but `/ok`, preflights and the web page's files is
//! authenticated into a [`User`]; then each action on a resource (threads and their runs,
//! assistants, crons, the store) is authorized with [`Auth::authorize`], whose default is
//! ownership: what a user creates records them as its `owner` (in its metadata, as the
//! LangGraph docs' own example does), reads, searches and counts see only their own, and
//! store namespaces start with their identity. The operator (the single `--api-key`) sees
//! everything. Built in: [`ApiKeys`] (the operator key and a keys file) and [`Jwt`]
//! (bearer tokens), combined by [`Builtin`].

mod jwt;
mod keys;
mod watched;

use std::sync::Arc;

use async_trait::async_trait;
use axum::http::{HeaderMap, Method};
use serde_json::{Map, Value, json};

pub use jwt::{Jwt, JwtError, JwtKeys};
pub use keys::{ApiKeys, KeyEntry, KeysError};

/// An authenticated caller, as langgraph-api's `BaseUser`: the identity that owns what it
/// creates, and the permissions its credential carries.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// Who: the owner recorded on what they create (a JWT's `sub`, a key's identity).
    pub identity: String,
    /// A name to show, when the credential carries one.
    pub display_name: Option<String>,
    /// `threads:read`, `store:write`...: enforced where they use that vocabulary (see
    /// [`User::permits`]); other entries (OAuth scopes such as `openid`) are kept for the
    /// graph to read.
    pub permissions: Vec<String>,
    /// All access: sees and changes every user's resources (the operator's key).
    pub operator: bool,
    /// The credential's other claims, for graphs and custom [`Auth`]s.
    pub claims: Map<String, Value>,
}

impl User {
    /// A user with `identity`, no permissions list (no restriction beyond ownership).
    pub fn new(identity: impl Into<String>) -> Self {
        User {
            identity: identity.into(),
            display_name: None,
            permissions: Vec::new(),
            operator: false,
            claims: Map::new(),
        }
    }

    /// The operator: all access.
    pub fn operator(identity: impl Into<String>) -> Self {
        User {
            operator: true,
            ..User::new(identity)
        }
    }

    /// This user with `permissions`.
    pub fn with_permissions<P: Into<String>>(mut self, p: impl IntoIterator<Item = P>) -> Self {
        self.permissions = p.into_iter().map(Into::into).collect();
        self
    }

    /// As graphs read it (`config.configurable.langgraph_auth_user`, and the run's context
    /// under the same key): langgraph-api's user dict.
    pub fn to_json(&self) -> Value {
        let mut out = self.claims.clone();
        out.insert("identity".into(), self.identity.clone().into());
        out.insert(
            "display_name".into(),
            self.display_name
                .clone()
                .unwrap_or_else(|| self.identity.clone())
                .into(),
        );
        out.insert("permissions".into(), json!(self.permissions));
        out.insert("is_authenticated".into(), true.into());
        if self.operator {
            out.insert("operator".into(), true.into());
        }
        Value::Object(out)
    }

    /// The user a run's stored `langgraph_auth_user` describes (a run queued earlier,
    /// maybe by another instance, or a cron's owner).
    pub fn from_json(v: &Value) -> Option<User> {
        let identity = v.get("identity")?.as_str()?;
        let mut claims = v.as_object().cloned().unwrap_or_default();
        for k in [
            "identity",
            "display_name",
            "permissions",
            "is_authenticated",
            "operator",
        ] {
            claims.remove(k);
        }
        Some(User {
            identity: identity.to_owned(),
            // `to_json` shows the identity when there is no name of its own.
            display_name: v
                .get("display_name")
                .and_then(Value::as_str)
                .filter(|d| *d != identity)
                .map(str::to_owned),
            permissions: v
                .get("permissions")
                .and_then(Value::as_array)
                .map(|p| {
                    p.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            operator: v.get("operator") == Some(&Value::Bool(true)),
            claims,
        })
    }

    /// Whether the user's permissions allow `verb` on `resource`. A permissions list that
    /// names none of the server's (`<resource>:read`, `<resource>:write`, `<resource>:*`,
    /// `*`, with `threads`, `assistants`, `crons`, `store`) restricts nothing; one that does
    /// allows only what it names. Runs count as their thread's.
    pub fn permits(&self, resource: Resource, verb: Verb) -> bool {
        if self.operator {
            return true;
        }
        let ours = |p: &str| {
            p == "*"
                || p.split_once(':').is_some_and(|(r, k)| {
                    Resource::ALL.iter().any(|x| x.name() == r)
                        && matches!(k, "read" | "write" | "*")
                })
        };
        if !self.permissions.iter().any(|p| ours(p)) {
            return true;
        }
        let want = format!("{}:{}", resource.name(), verb.kind());
        let any = format!("{}:*", resource.name());
        self.permissions
            .iter()
            .any(|p| p == "*" || *p == want || *p == any)
    }
}

/// What [`Auth::authenticate`] sees of a request.
#[derive(Debug, Clone, Copy)]
pub struct AuthRequest<'a> {
    /// The method.
    pub method: &'a Method,
    /// The path.
    pub path: &'a str,
    /// The headers (`x-api-key`, `authorization`...).
    pub headers: &'a HeaderMap,
}

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// 401: no credential, or one that does not hold.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: a valid credential that may not do this.
    #[error("{0}")]
    Forbidden(String),
}

/// The resources actions are authorized on (langgraph-api's `@auth.on.<resource>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// Threads, and the runs on them.
    Threads,
    /// Assistants.
    Assistants,
    /// Crons.
    Crons,
    /// The long-term memory store.
    Store,
}

impl Resource {
    /// Every resource.
    pub const ALL: [Resource; 4] = [
        Resource::Threads,
        Resource::Assistants,
        Resource::Crons,
        Resource::Store,
    ];

    /// `threads`, `assistants`, `crons`, `store`.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Threads => "threads",
            Resource::Assistants => "assistants",
            Resource::Crons => "crons",
            Resource::Store => "store",
        }
    }
}

/// What is done (langgraph-api's actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Make one.
    Create,
    /// Read one (and what hangs off it: a thread's state, history and runs).
    Read,
    /// Change one.
    Update,
    /// Delete one.
    Delete,
    /// Search or count.
    Search,
    /// Start a run on a thread (threads only), or cancel one.
    CreateRun,
    /// Store: put an item.
    Put,
    /// Store: get an item.
    Get,
    /// Store: list namespaces.
    ListNamespaces,
}

impl Verb {
    /// `read` or `write`: the permission it needs.
    pub fn kind(self) -> &'static str {
        match self {
            Verb::Read | Verb::Search | Verb::Get | Verb::ListNamespaces => "read",
            Verb::Create | Verb::Update | Verb::Delete | Verb::CreateRun | Verb::Put => "write",
        }
    }
}

/// One action to authorize: its resource, verb and the request's value (the body, or the
/// id at hand), as langgraph-api hands `@auth.on` handlers their `value`.
#[derive(Debug, Clone, Copy)]
pub struct Action<'a> {
    /// On what.
    pub resource: Resource,
    /// What.
    pub verb: Verb,
    /// The request's value.
    pub value: &'a Value,
}

/// An authorization's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Go ahead, unscoped.
    Allow,
    /// 403.
    Deny,
    /// Go ahead within a scope (langgraph-api's filter dict).
    Scope(Scope),
}

/// What a scoped user sees and makes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scope {
    /// Stamped into the metadata of what is created; what is read, changed, deleted,
    /// searched or counted must contain it (or it does not exist for this caller: a 404).
    pub metadata: Map<String, Value>,
    /// Store namespaces must start with these labels (a 403 otherwise); a search or listing
    /// under a shorter prefix is narrowed to them.
    pub namespace: Vec<String>,
}

impl Scope {
    /// Ownership by `identity`: `{"owner": identity}` in metadata, namespaces under
    /// `[identity]`.
    pub fn owner(identity: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert("owner".into(), identity.into());
        Scope {
            metadata,
            namespace: vec![identity.to_owned()],
        }
    }
}

/// The default authorization: the operator may do anything; anyone else only what their
/// permissions allow, scoped to what they own.
pub fn ownership(user: &User, action: &Action<'_>) -> Decision {
    if user.operator {
        Decision::Allow
    } else if !user.permits(action.resource, action.verb) {
        Decision::Deny
    } else {
        Decision::Scope(Scope::owner(&user.identity))
    }
}

/// Authentication and authorization for the API, as langgraph-api's custom auth.
#[async_trait]
pub trait Auth: Send + Sync + 'static {
    /// Who sent `request`, or why it is refused.
    async fn authenticate(&self, request: &AuthRequest<'_>) -> Result<User, AuthError>;

    /// Whether `user` may do `action` (default: [`ownership`]).
    async fn authorize(&self, user: &User, action: &Action<'_>) -> Decision {
        ownership(user, action)
    }
}

/// The built-in authentication of `agent serve`: API keys in `x-api-key` (the operator's
/// and a keys file's), and JWT bearer tokens in `Authorization: Bearer`. A request carries
/// one of them; which part checks it depends on the header it came in.
#[derive(Default)]
pub struct Builtin {
    keys: Option<ApiKeys>,
    jwt: Option<Jwt>,
}

impl Builtin {
    /// No credentials accepted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts these keys in `x-api-key`.
    pub fn keys(mut self, keys: ApiKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Accepts these bearer tokens.
    pub fn jwt(mut self, jwt: Jwt) -> Self {
        self.jwt = Some(jwt);
        self
    }

    /// Whether any credential is accepted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_none() && self.jwt.is_none()
    }

    fn expected(&self) -> &'static str {
        match (&self.keys, &self.jwt) {
            (Some(_), Some(_)) => {
                "send an API key in the x-api-key header or a token in `Authorization: Bearer <token>`"
            }
            (None, Some(_)) => "send a token in `Authorization: Bearer <token>`",
            _ => "send it in the x-api-key header",
        }
    }
}

#[async_trait]
impl Auth for Builtin {
    async fn authenticate(&self, request: &AuthRequest<'_>) -> Result<User, AuthError> {
        if let Some(key) = request.headers.get("x-api-key")
            && let Some(keys) = &self.keys
        {
            return keys.check(key.as_bytes()).await.ok_or_else(|| {
                AuthError::Unauthorized(format!("Wrong API key: {}", self.expected()))
            });
        }
        let bearer = request
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        if let Some(token) = bearer
            && let Some(jwt) = &self.jwt
        {
            return jwt
                .verify(token)
                .await
                .map_err(|e| AuthError::Unauthorized(format!("Invalid token: {e}")));
        }
        Err(AuthError::Unauthorized(format!(
            "Missing credentials: {}",
            self.expected()
        )))
    }
}

/// The [`Auth`] of a server, shared by its requests.
pub type SharedAuth = Arc<dyn Auth>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_restrict_only_in_the_servers_vocabulary() {
        let oidc = User::new("ada").with_permissions(["openid", "profile"]);
        assert!(oidc.permits(Resource::Threads, Verb::Create));
        assert!(oidc.permits(Resource::Store, Verb::Put));
        let reader = User::new("ada").with_permissions(["threads:read", "store:*"]);
        assert!(reader.permits(Resource::Threads, Verb::Read));
        assert!(reader.permits(Resource::Threads, Verb::Search));
        assert!(!reader.permits(Resource::Threads, Verb::Create));
        assert!(!reader.permits(Resource::Threads, Verb::CreateRun));
        assert!(reader.permits(Resource::Store, Verb::Put));
        assert!(!reader.permits(Resource::Crons, Verb::Read));
        assert!(
            User::new("x")
                .with_permissions(["*"])
                .permits(Resource::Crons, Verb::Delete)
        );
    }

    #[test]
    fn ownership_scopes_users_and_lets_the_operator_through() {
        let value = Value::Null;
        let action = Action {
            resource: Resource::Threads,
            verb: Verb::Search,
            value: &value,
        };
        assert_eq!(ownership(&User::operator("op"), &action), Decision::Allow);
        assert_eq!(
            ownership(&User::new("ada"), &action),
            Decision::Scope(Scope::owner("ada"))
        );
        let writer = User::new("ada").with_permissions(["threads:write"]);
        assert_eq!(ownership(&writer, &action), Decision::Deny);
    }

    #[test]
    fn a_user_travels_as_json_and_back() {
        let mut user = User::new("ada").with_permissions(["threads:read"]);
        user.display_name = Some("Ada".into());
        user.claims.insert("org".into(), "acme".into());
        let back = User::from_json(&user.to_json()).unwrap();
        assert_eq!(back, user);
        let op = User::operator("operator");
        assert_eq!(User::from_json(&op.to_json()).unwrap(), op);
    }
}
