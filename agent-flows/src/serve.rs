//! A flow served to clients ([`Flow::serve`](crate::Flow::serve)): what one served assistant
//! is made of ([`ServeFlow`]: its id, the operator's settings, the models a run may pick), and
//! a run's `context` JSON checked against it. Every request is treated as hostile: a client
//! sets only what each option's [`Access`] lets it, never a path, a URL, a database, an
//! identity or a model the operator did not offer; its errors quote nothing the server read.

use std::sync::Arc;

use agent_llm::ChatModel;
use serde_json::{Value, json};

use crate::env::FlowEnv;
use crate::error::FlowError;
use crate::registry::{Access, FlowOption};

/// The key under which the server hands a flow the authenticated caller (LangGraph's
/// `langgraph_auth_user`: `identity`, `permissions`, `display_name`, `is_authenticated`). The
/// server sets it and refuses it from clients; [`Access::Identity`] options take its
/// `identity`.
pub const AUTH_USER_KEY: &str = "langgraph_auth_user";

/// The spec of the flows' own offline models.
pub const OFFLINE: &str = "offline";

/// The models a run's `context.model` may pick, built once by the operator: each spec (as the
/// operator wrote it, `offline` or `provider:model`) with its model (`None`: the flow's own
/// offline model). Runs share the built models.
#[derive(Clone, Default)]
pub struct Models {
    entries: Vec<(String, Option<Arc<dyn ChatModel>>)>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.specs()).finish()
    }
}

impl Models {
    /// Only the flows' offline models (`offline`).
    pub fn offline() -> Self {
        Models {
            entries: vec![(OFFLINE.to_owned(), None)],
        }
    }

    /// The models `specs` name, built now with [`agent_llm::init_chat_model`]: `offline` or
    /// `provider:model` (`openai:gpt-4o-mini`...), each once, in order. A spec that does not
    /// build (an unknown provider, a missing key) is an error naming it.
    pub fn build<I>(specs: I) -> Result<Self, FlowError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut models = Models::default();
        for spec in specs {
            let spec = spec.as_ref().trim();
            if spec.is_empty() || models.get(spec).is_some() {
                continue;
            }
            let model = if spec == OFFLINE {
                None
            } else {
                Some(agent_llm::init_chat_model(spec)?)
            };
            models.entries.push((spec.to_owned(), model));
        }
        Ok(models)
    }

    /// These models and `model` under `spec` (a model the program built itself); replaces a
    /// model of the same spec.
    pub fn with(mut self, spec: impl Into<String>, model: Arc<dyn ChatModel>) -> Self {
        let spec = spec.into();
        self.entries.retain(|(s, _)| *s != spec);
        self.entries.push((spec, Some(model)));
        self
    }

    /// The specs, in order.
    pub fn specs(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(spec, _)| spec.as_str())
    }

    /// The model `spec` names (exactly, after trimming): `Some(None)` for the offline models,
    /// `None` when it is not one of these.
    pub fn get(&self, spec: &str) -> Option<Option<Arc<dyn ChatModel>>> {
        let spec = spec.trim();
        self.entries
            .iter()
            .find(|(s, _)| s == spec)
            .map(|(_, model)| model.clone())
    }
}

/// One served assistant of a flow: what [`Flow::serve`](crate::Flow::serve) needs. A flow may be
/// served several times under different ids with different operator settings.
#[derive(Clone, Debug)]
pub struct ServeFlow {
    /// The graph id (and system assistant) it is served under; by default the flow's name.
    pub id: String,
    /// What clients see beside the id; by default the flow's summary.
    pub description: Option<String>,
    /// The operator's settings: the flow's options (any of them, files included) and the
    /// model of runs whose context names none.
    pub defaults: FlowEnv,
    /// The models a run's `context.model` may pick.
    pub models: Arc<Models>,
}

impl ServeFlow {
    /// The flow named `flow` under its own name, offline, with no options set.
    pub fn new(flow: impl Into<String>) -> Self {
        ServeFlow {
            id: flow.into(),
            description: None,
            defaults: FlowEnv::offline(),
            models: Arc::new(Models::offline()),
        }
    }

    /// Under another graph id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// With its own description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With the operator's settings.
    pub fn with_defaults(mut self, defaults: FlowEnv) -> Self {
        self.defaults = defaults;
        self
    }

    /// With the models runs may pick.
    pub fn with_models(mut self, models: Arc<Models>) -> Self {
        self.models = models;
        self
    }
}

/// `agent serve`'s command line or config file, as errors name where operators set things.
const OPERATOR: &str = "the server's operator (agent serve's command line or config file)";

/// A whole number from a context value (a number or its text).
fn whole(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The ceiling of a [`Access::Ceiling`] option: the operator's value, else the flow's default.
fn ceiling(defaults: &FlowEnv, key: &str, default: u64) -> u64 {
    defaults
        .option(key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The options a request may set, by name (for error messages).
fn settable(options: &[FlowOption]) -> String {
    let mut keys = vec!["model"];
    keys.extend(
        options
            .iter()
            .filter(|o| o.access.client_may_set())
            .map(|o| o.key),
    );
    keys.join(", ")
}

/// The text of a client option's value, as the CLI's flags give it.
fn text(key: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok((if *b { "1" } else { "0" }).to_owned()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(format!("context.{key} must be a string, number or boolean")),
    }
}

/// A run's `context` JSON over the operator's `defaults`, each key checked against its
/// option's [`Access`]: `model` one of `models`; a client option as given; a limit at most its
/// ceiling; a catalog option one of its names or an inline JSON object; operator and identity
/// options refused. Identity options take the authenticated caller's identity
/// ([`AUTH_USER_KEY`]), else keep the operator's value. Errors quote no value.
pub(crate) fn env_from_context(
    flow: &str,
    options: &[FlowOption],
    defaults: &FlowEnv,
    models: &Models,
    context: &Value,
) -> Result<FlowEnv, String> {
    let mut env = defaults.clone();
    let Some(map) = context.as_object() else {
        return if context.is_null() {
            Ok(env)
        } else {
            Err("the context must be an object of settings".to_owned())
        };
    };
    for (key, value) in map {
        if key == AUTH_USER_KEY || value.is_null() {
            continue;
        }
        if key == "model" {
            let spec = value.as_str().unwrap_or_default().trim();
            let offered: Vec<&str> = models.specs().collect();
            env.model = models.get(spec).ok_or_else(|| {
                format!(
                    "context.model: not a model this server offers; pick one of: {}",
                    offered.join(", ")
                )
            })?;
            continue;
        }
        let Some(option) = options.iter().find(|o| o.key == key) else {
            return Err(format!(
                "context.{key}: not an option of the {flow} flow; a request may set: {}",
                settable(options)
            ));
        };
        let value = match option.access {
            Access::Client => text(key, value)?,
            Access::Operator => {
                return Err(format!(
                    "context.{key}: `{key}` is set by {OPERATOR}, not by a request"
                ));
            }
            Access::Identity => {
                return Err(format!(
                    "context.{key}: `{key}` is who the run is for: the request's authentication says it, else {OPERATOR}; a request cannot set it"
                ));
            }
            Access::Ceiling { default } => {
                let n =
                    whole(value).ok_or_else(|| format!("context.{key} must be a whole number"))?;
                let most = ceiling(defaults, key, default);
                if n > most {
                    return Err(format!(
                        "context.{key}: {n} is more than {most}, the most {OPERATOR} allows; a request may lower `{key}`, not raise it"
                    ));
                }
                n.to_string()
            }
            Access::Catalog(names) => match value {
                Value::String(name) if names.contains(&name.trim()) => name.trim().to_owned(),
                Value::Object(_) => value.to_string(),
                _ => {
                    return Err(format!(
                        "context.{key}: a request may name one of {} or give `{key}` itself as a JSON object; anything else (a file) is set by {OPERATOR}",
                        names.join(", ")
                    ));
                }
            },
        };
        env = env.with_option(key.clone(), value);
    }
    let identities = options.iter().filter(|o| o.access == Access::Identity);
    if let Some(user) = map.get(AUTH_USER_KEY)
        && identities.clone().next().is_some()
    {
        let identity = user
            .get("identity")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                format!("context.{AUTH_USER_KEY}: the authenticated user has no identity")
            })?;
        for option in identities {
            env = env.with_option(option.key, identity);
        }
    }
    Ok(env)
}

/// A client's write to a served flow's state (a run's raw input, a command's `update`,
/// `update_state`'s values) checked as its context is: a state field that is also a limit
/// ([`Access::Ceiling`], react's `max_steps`...) at most the operator's ceiling, so a write
/// cannot lift what the context may not. Errors quote no value the server holds but the
/// ceiling.
pub(crate) fn check_state_write(
    options: &[FlowOption],
    defaults: &FlowEnv,
    values: &Value,
) -> Result<(), String> {
    let Some(map) = values.as_object() else {
        return Ok(());
    };
    for option in options {
        let (Access::Ceiling { default }, Some(value)) = (option.access, map.get(option.key))
        else {
            continue;
        };
        let key = option.key;
        // Not a whole number: the state's own parsing refuses it.
        let Some(n) = whole(value) else { continue };
        let most = ceiling(defaults, key, default);
        if n > most {
            return Err(format!(
                "{key}: {n} is more than {most}, the most {OPERATOR} allows; a request may lower `{key}`, not raise it"
            ));
        }
    }
    Ok(())
}

/// A served run's error as the client sees it: what is wrong with the request (an option's
/// value, the input) is told; what is the server's (its settings, its files, a model that
/// could not be set up) is logged and only named.
pub(crate) fn client_error(flow: &str, error: FlowError) -> String {
    match error {
        FlowError::Option { .. } | FlowError::Input(_) | FlowError::UnknownFlow { .. } => {
            error.to_string()
        }
        other => {
            tracing::error!(flow, error = %other, "a served run could not be set up");
            format!("the {flow} flow could not be set up for this run (the server's log says why)")
        }
    }
}

/// The JSON Schema of what a run's `context` may set: `model` (one of `models`) and the
/// options a request may set (limits with their ceiling as `maximum`, numbers or their text;
/// catalog options a name or an object); operator and identity options are left out. Clients
/// build their settings form from it.
pub(crate) fn context_schema(options: &[FlowOption], defaults: &FlowEnv, models: &Models) -> Value {
    let mut properties = serde_json::Map::new();
    let specs: Vec<&str> = models.specs().collect();
    properties.insert(
        "model".into(),
        json!({
            "type": "string",
            "title": "model",
            "enum": specs,
            "description": "The chat model, one of the server's: `offline` (the built-in, no network), or a provider's `provider:model` such as `openai:gpt-4o-mini`.",
        }),
    );
    for o in options {
        let schema = match o.access {
            Access::Client => json!({"type": "string", "title": o.key, "description": o.help}),
            Access::Ceiling { default } => {
                let most = ceiling(defaults, o.key, default);
                json!({
                    "type": ["integer", "string"],
                    "title": o.key,
                    "description": format!("{}; at most {most} here (a request may lower it)", o.help),
                    "minimum": 0,
                    "maximum": most,
                    "pattern": "^\\s*[0-9]+\\s*$",
                })
            }
            Access::Catalog(names) => json!({
                "title": o.key,
                "description": format!("{}; here {}", o.help, o.access.describe()),
                "anyOf": [
                    {"type": "string", "enum": names},
                    {"type": "object", "description": format!("the {} itself, in the shape of its JSON file", o.key)},
                ],
            }),
            Access::Operator | Access::Identity => continue,
        };
        properties.insert(o.key.into(), schema);
    }
    json!({"type": "object", "title": "Context", "properties": properties, "additionalProperties": false})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FlowSpec;
    use crate::form::Form;
    use crate::orchestrator::Orchestrator;
    use crate::react::React;

    fn orchestrator(defaults: &FlowEnv, context: Value) -> Result<FlowEnv, String> {
        env_from_context(
            Orchestrator::NAME,
            Orchestrator::OPTIONS,
            defaults,
            &Models::offline(),
            &context,
        )
    }

    fn form(context: Value) -> Result<FlowEnv, String> {
        env_from_context(
            Form::NAME,
            Form::OPTIONS,
            &FlowEnv::offline(),
            &Models::offline(),
            &context,
        )
    }

    #[test]
    fn an_operator_option_is_refused_naming_it_and_quoting_nothing() {
        let secret = "/srv/secret-canary-4711.db";
        let error = orchestrator(&FlowEnv::offline(), json!({"profiles": secret})).unwrap_err();
        assert_eq!(
            error,
            "context.profiles: `profiles` is set by the server's operator (agent serve's command line or config file), not by a request"
        );
        // The operator's own value is not told either.
        let defaults = FlowEnv::offline().with_option("profiles", secret);
        let error = orchestrator(&defaults, json!({"profiles": "x"})).unwrap_err();
        assert!(!error.contains("secret-canary"), "{error}");
    }

    #[test]
    fn identity_comes_from_the_authenticated_caller_else_the_operator() {
        let error = orchestrator(&FlowEnv::offline(), json!({"user": "maria"})).unwrap_err();
        assert!(
            error.contains("`user`") && error.contains("operator"),
            "{error}"
        );
        assert!(!error.contains("maria"), "{error}");

        let env = orchestrator(&FlowEnv::offline(), json!({})).unwrap();
        assert_eq!(env.option("user"), None, "the flow's default");
        let operator = FlowEnv::offline().with_option("user", "maria");
        let env = orchestrator(&operator, Value::Null).unwrap();
        assert_eq!(env.option("user"), Some("maria"));

        let auth = json!({"langgraph_auth_user": {
            "identity": "ivan", "permissions": [], "display_name": "Ivan", "is_authenticated": true
        }});
        let env = orchestrator(&operator, auth).unwrap();
        assert_eq!(
            env.option("user"),
            Some("ivan"),
            "the caller over the operator"
        );
        assert!(!env.options.contains_key(AUTH_USER_KEY), "not an option");

        let error = orchestrator(
            &operator,
            json!({"langgraph_auth_user": {"identity": " ", "is_authenticated": true}}),
        )
        .unwrap_err();
        assert!(error.contains("no identity"), "{error}");
        // A flow without identity options runs the same with or without one.
        let env = form(json!({"langgraph_auth_user": {"identity": "ivan"}})).unwrap();
        assert!(env.options.is_empty());
        assert!(form(json!({"langgraph_auth_user": {"is_authenticated": false}})).is_ok());
    }

    #[test]
    fn a_pinned_user_wins_over_the_states() {
        use agent_core::{Input, RunConfig};
        let env = FlowEnv::offline().with_option("user", "ivan");
        let graph = crate::orchestrator::build(Orchestrator::context(&env).unwrap()).unwrap();
        let input = crate::orchestrator::turn_input("Hello!", "maria");
        let output = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(graph.invoke(Input::Update(input), RunConfig::default()))
            .unwrap();
        assert_eq!(output.state.user_id, "ivan");
        assert_eq!(output.state.user_context.user_id, "ivan");
    }

    #[test]
    fn a_limit_may_be_lowered_never_raised() {
        let none = FlowEnv::offline();
        let env = orchestrator(&none, json!({"max_input_chars": 4000})).unwrap();
        assert_eq!(env.option("max_input_chars"), Some("4000"));
        let env = orchestrator(&none, json!({"max_input_chars": " 20 "})).unwrap();
        assert_eq!(env.option("max_input_chars"), Some("20"));
        let error = orchestrator(&none, json!({"max_input_chars": 4001})).unwrap_err();
        assert_eq!(
            error,
            "context.max_input_chars: 4001 is more than 4000, the most the server's operator (agent serve's command line or config file) allows; a request may lower `max_input_chars`, not raise it"
        );
        for bad in [json!(-1), json!(1.5), json!("many"), json!(true)] {
            let error = orchestrator(&none, json!({"max_input_chars": bad})).unwrap_err();
            assert!(error.contains("must be a whole number"), "{bad}: {error}");
        }
        // The operator's value is the ceiling, above or below the flow's default.
        let raised = FlowEnv::offline().with_option("max_retries", "4");
        assert!(orchestrator(&raised, json!({"max_retries": 3})).is_ok());
        let lowered = FlowEnv::offline().with_option("max_input_chars", "100");
        let error = orchestrator(&lowered, json!({"max_input_chars": 200})).unwrap_err();
        assert!(error.contains("more than 100"), "{error}");
        // React's limits, from its constants.
        let react = |context: Value| {
            env_from_context(
                React::NAME,
                React::OPTIONS,
                &FlowEnv::offline(),
                &Models::offline(),
                &context,
            )
        };
        assert!(react(json!({"max_steps": 6, "max_tool_calls": 5, "max_tool_rounds": 1, "max_tokens": 200})).is_ok());
        for key in [
            "max_steps",
            "max_tool_calls",
            "max_tool_rounds",
            "max_tokens",
        ] {
            assert!(react(json!({key: 1000})).is_err(), "{key}");
        }
        assert!(
            react(json!({"mode": "llm", "tool_choice": "required", "llm_fallback": true})).is_ok()
        );
    }

    #[test]
    fn a_state_write_raises_no_limit_past_the_operators() {
        let write = |defaults: &FlowEnv, values: Value| {
            check_state_write(React::OPTIONS, defaults, &values)
        };
        let none = FlowEnv::offline();
        // The flow's default is the ceiling when the operator set none, not its range's top.
        assert!(write(&none, json!({"max_steps": 6, "user_query": "hi"})).is_ok());
        let error = write(&none, json!({"max_steps": 8})).unwrap_err();
        assert!(
            error.contains("more than 6") && error.contains("operator"),
            "{error}"
        );
        let capped = FlowEnv::offline().with_option("max_steps", "3");
        assert!(write(&capped, json!({"max_steps": "2"})).is_ok());
        let error = write(&capped, json!({"max_steps": 4})).unwrap_err();
        assert_eq!(
            error,
            "max_steps: 4 is more than 3, the most the server's operator (agent serve's command line or config file) allows; a request may lower `max_steps`, not raise it"
        );
        assert!(write(&none, json!({"max_tool_calls": 16})).is_err());
        // What is not a limit, or not a number, is the state's parsing to judge.
        assert!(write(&capped, json!({"max_steps": "many", "step": 99})).is_ok());
        assert!(write(&capped, json!(["max_steps", 9])).is_ok());
    }

    #[test]
    fn a_catalog_takes_a_name_or_an_object_never_a_path() {
        let env = form(json!({"form": " contact "})).unwrap();
        assert_eq!(env.option("form"), Some("contact"));
        let env = form(json!({"form": {"fields": [
            {"name": "city", "type": "text", "prompt": {"en": "Which city?"}}
        ]}}))
        .unwrap();
        let context = Form::context(&env).unwrap();
        assert_eq!(context.form.field_names(), ["city"]);
        assert_eq!(context.form.name, crate::form::spec::INLINE_FORM);
        for bad in [
            json!("/etc/passwd"),
            json!("signup.toml"),
            json!(7),
            json!(["signup"]),
        ] {
            let error = form(json!({"form": bad})).unwrap_err();
            assert!(
                error.contains("`form`") && error.contains("operator"),
                "{bad}: {error}"
            );
            assert!(!error.contains("passwd"), "{error}");
        }
        // A bad inline form is the request's error, naming the field.
        let env = form(json!({"form": {"fields": [{"name": "email", "type": "mail"}]}})).unwrap();
        let Err(error) = Form::context(&env) else {
            panic!("a form with a bad field built")
        };
        let error = client_error(Form::NAME, error);
        assert!(
            error.contains("field 1 (`email`): unknown type `mail`"),
            "{error}"
        );
    }

    #[test]
    fn an_unknown_key_lists_what_a_request_may_set() {
        let error = orchestrator(&FlowEnv::offline(), json!({"bogus": 1})).unwrap_err();
        assert_eq!(
            error,
            "context.bogus: not an option of the orchestrator flow; a request may set: model, max_retries, context_tokens, sql_timeout_ms, planner, max_input_chars"
        );
        assert!(orchestrator(&FlowEnv::offline(), json!("profiles")).is_err());
        assert!(orchestrator(&FlowEnv::offline(), json!({"planner": {"a": 1}})).is_err());
    }

    #[test]
    fn a_model_is_one_of_the_operators_built_once() {
        let scripted: Arc<dyn ChatModel> = Arc::new(agent_llm::ScriptedModel::from_fn(|_| {
            agent_llm::Reply::text("hi")
        }));
        let models = Models::build(["offline", " offline "])
            .unwrap()
            .with("scripted:x", scripted.clone());
        assert_eq!(
            models.specs().collect::<Vec<_>>(),
            ["offline", "scripted:x"]
        );
        let model = |spec: &str| {
            env_from_context(
                "tool-router",
                &[],
                &FlowEnv::offline(),
                &models,
                &json!({ "model": spec }),
            )
        };
        assert!(model("offline").unwrap().model.is_none());
        let picked = model(" scripted:x ").unwrap().model.unwrap();
        assert!(Arc::ptr_eq(&picked, &scripted), "the operator's instance");
        for bad in ["openai:gpt-4o-mini", "", "Offline"] {
            let error = model(bad).unwrap_err();
            assert_eq!(
                error,
                "context.model: not a model this server offers; pick one of: offline, scripted:x"
            );
        }
        let error = Models::build(["offline", "nope:x"]).unwrap_err();
        assert!(error.to_string().contains("`nope:x`"), "{error}");
    }

    #[test]
    fn the_schema_lists_what_a_request_may_set() {
        let defaults = FlowEnv::offline().with_option("max_retries", "4");
        let models = Models::offline();
        let schema = context_schema(Orchestrator::OPTIONS, &defaults, &models);
        let properties = schema["properties"].as_object().unwrap();
        let keys: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "context_tokens",
                "max_input_chars",
                "max_retries",
                "model",
                "planner",
                "sql_timeout_ms"
            ]
        );
        assert_eq!(properties["model"]["enum"], json!(["offline"]));
        assert_eq!(properties["max_retries"]["maximum"], 4, "the operator's");
        assert_eq!(properties["max_input_chars"]["maximum"], 4000, "the flow's");
        assert_eq!(properties["sql_timeout_ms"]["maximum"], 2000);
        assert_eq!(properties["context_tokens"]["maximum"], 1500);
        assert_eq!(
            properties["max_retries"]["type"],
            json!(["integer", "string"])
        );
        let schema = context_schema(Form::OPTIONS, &FlowEnv::offline(), &models);
        assert_eq!(
            schema["properties"]["form"]["anyOf"][0]["enum"],
            json!(["signup", "contact"])
        );
        assert_eq!(schema["properties"]["form"]["anyOf"][1]["type"], "object");
    }

    #[test]
    fn the_server_side_errors_are_named_not_told() {
        let error = FlowError::Setup {
            flow: "orchestrator",
            message: "profile store /srv/secret.db: row 3 holds {\"key\": \"sk-123\"}".into(),
        };
        let told = client_error("orchestrator", error);
        assert!(
            !told.contains("secret") && !told.contains("sk-123"),
            "{told}"
        );
        assert!(told.contains("the server's log"), "{told}");
    }

    #[test]
    fn the_operators_settings_fail_the_start_and_files_are_read_once() {
        let serve = |flow: &str, defaults: FlowEnv| {
            crate::find(flow)
                .unwrap()
                .serve(
                    agent_server::Server::builder(),
                    &ServeFlow::new(flow).with_defaults(defaults),
                )
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let bad = |flow: &str, key: &str, value: &str| {
            serve(flow, FlowEnv::offline().with_option(key, value)).unwrap_err()
        };
        let error = bad("form", "form", "/nonexistent/form.toml");
        assert!(
            error.contains("cannot read the form file /nonexistent/form.toml"),
            "{error}"
        );
        let error = bad("orchestrator", "max_input_chars", "many");
        assert!(error.contains("`max_input_chars`"), "{error}");
        let error = bad("orchestrator", "planner", "psychic");
        assert!(error.contains("`planner`"), "{error}");
        let error = bad("react", "max_steps", "99");
        assert!(error.contains("`max_steps`"), "{error}");
        let error = bad("tool-router", "form", "contact");
        assert!(error.contains("this flow takes no options"), "{error}");
        assert!(
            serve(
                "orchestrator",
                FlowEnv::offline().with_option("user", "maria")
            )
            .is_ok()
        );

        let dir = std::env::temp_dir().join(format!("serve-form-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("trip.toml");
        std::fs::write(&file, "[[fields]]\nname = \"city\"\ntype = \"text\"\n").unwrap();
        let path = file.to_str().unwrap();
        let prepared = Form::prepare(FlowEnv::offline().with_option("form", path)).unwrap();
        assert!(serve("form", FlowEnv::offline().with_option("form", path)).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        let context = Form::context(&prepared).unwrap();
        assert_eq!(context.form.name, "trip", "named after the file");
        assert_eq!(context.form.field_names(), ["city"]);
    }
}
