//! `agent serve`: flows behind the LangGraph server API — every flow under its own name, or
//! the assistants of the config file — with the operator's settings (the file, `--set`,
//! `--model`) checked at start, the models runs may pick (`--models`) built once, and who may
//! call (an operator key, a keys file, JWT bearer tokens), from where (CORS, host names) and
//! how much (limits).

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use agent_flows::serve_config::ServeConfig;
use agent_flows::{FLOWS, Flow, FlowEnv, Models, ServeFlow};
use agent_server::auth::{ApiKeys, Builtin, Jwt, JwtKeys};

use crate::Failure;
use crate::cli::ServeArgs;

/// The variable the HS256 secret of bearer tokens is read from, unless the config file
/// names another.
const JWT_SECRET_ENV: &str = "AGENTGRAPH_JWT_SECRET";

pub async fn run(
    args: &ServeArgs,
    recorder: Option<agent_server::SpanRecorder>,
) -> Result<(), Failure> {
    let config = match &args.config {
        Some(path) => ServeConfig::load(path).map_err(Failure::runtime)?,
        None => ServeConfig::default(),
    };
    let server = &config.server;
    let host_text = args
        .host
        .clone()
        .or_else(|| server.host.clone())
        .unwrap_or_else(|| "127.0.0.1".to_owned());
    let host: IpAddr = host_text
        .parse()
        .map_err(|_| Failure::usage(format!("--host must be an IP address, not `{host_text}`")))?;
    let port = args.port.or(server.port).unwrap_or(2024);
    let (auth, described) = auth(args, &config).await?;
    if !host.is_loopback() && auth.is_none() {
        return Err(Failure::usage(format!(
            "refusing to serve on {host} without auth: anyone who reaches the port could run the flows. Pass --api-key (or AGENTGRAPH_API_KEY), --api-keys FILE or JWT settings, or keep the default --host 127.0.0.1"
        )));
    }

    // The models runs may pick, built once: --models (or the file's; offline unless given),
    // and the default model.
    let default_model = args
        .model
        .clone()
        .or_else(|| server.model.clone())
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| agent_flows::serve::OFFLINE.to_owned());
    let mut specs: Vec<String> = if args.models.is_empty() {
        server.models.clone().unwrap_or_default()
    } else {
        args.models.clone()
    };
    specs.retain(|s| !s.trim().is_empty());
    if specs.is_empty() {
        specs.push(agent_flows::serve::OFFLINE.to_owned());
    }
    specs.push(default_model.trim().to_owned());
    let models =
        Arc::new(Models::build(&specs).map_err(|e| Failure::usage(format!("--models: {e}")))?);
    let mut defaults = FlowEnv::offline();
    if let Some(Some(model)) = models.get(default_model.trim()) {
        defaults = defaults.with_model(model);
    }

    // Settings for every served flow that takes them: the file's, then --set.
    let mut shared: Vec<(String, String)> = config
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), v.text()))
        .collect();
    shared.extend(args.set.iter().cloned());
    for (key, _) in &shared {
        if !FLOWS
            .iter()
            .any(|f| f.info().options.iter().any(|o| o.key == key))
        {
            return Err(Failure::usage(format!(
                "setting {key}: no flow takes the option `{key}` (`agent list` shows each flow's)"
            )));
        }
    }

    let db = match args.db.clone().or_else(|| server.db.clone()) {
        Some(db) if !db.trim().is_empty() => db.trim().to_owned(),
        _ => crate::setup::default_db()?.display().to_string(),
    };
    let postgres = db.starts_with("postgres://") || db.starts_with("postgresql://");
    let mut builder = agent_server::Server::builder()
        .workers(args.workers.or(server.workers).unwrap_or(10))
        .allow_private_webhooks(
            args.allow_private_webhooks || server.allow_private_webhooks == Some(true),
        )
        .limits(config.limits.clone());
    if let Some(recorder) = recorder {
        builder = builder.span_recorder(recorder);
    }
    let shown = if postgres {
        builder = builder.postgres(db.clone());
        "PostgreSQL".to_owned()
    } else {
        let path = PathBuf::from(&db);
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Failure::message(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        builder = builder.sqlite(&path);
        path.display().to_string()
    };
    if let Some(auth) = auth {
        builder = builder.auth(auth);
    }
    let origins = if args.cors_allow_origin.is_empty() {
        server.cors_allow_origins.clone()
    } else {
        Some(args.cors_allow_origin.clone())
    };
    if let Some(origins) = origins {
        builder = builder.cors_allow_origins(origins);
    }
    let hosts = if args.allowed_host.is_empty() {
        server.allowed_hosts.clone()
    } else {
        Some(args.allowed_host.clone())
    };
    if let Some(hosts) = hosts {
        builder = builder.allowed_hosts(hosts);
    }
    let seconds = |what: &str, s: f64| {
        if s.is_finite() && s > 0.0 {
            Ok(std::time::Duration::from_secs_f64(s))
        } else {
            Err(Failure::usage(format!(
                "{what} must be a positive number of seconds"
            )))
        }
    };
    if let Some(s) = args.run_timeout.or(server.run_timeout_seconds) {
        builder = builder.run_timeout(seconds("--run-timeout", s)?);
    }
    if let Some(minutes) = args.thread_ttl.or(server.thread_ttl_minutes) {
        let strategy = args
            .thread_ttl_strategy
            .clone()
            .or_else(|| server.thread_ttl_strategy.clone())
            .unwrap_or_else(|| "delete".to_owned());
        let ttl = agent_server::ThreadTtl::new(minutes, &strategy)
            .map_err(|e| Failure::usage(format!("--thread-ttl: {e}")))?;
        builder = builder.thread_ttl(ttl);
    }
    let index = match args
        .store_index
        .as_deref()
        .or(config.store.index.as_deref())
    {
        Some(spec) if !spec.trim().is_empty() => {
            builder = builder.store_index(store_index(spec.trim(), &config.store).await?);
            format!("; store index: {}", spec.trim())
        }
        _ => String::new(),
    };
    let mut count = 0;

    for one in assistants(&config)? {
        let info = one.flow.info();
        let mut env = defaults.clone();
        for (key, value) in &shared {
            if info.options.iter().any(|o| o.key == key) {
                env = env.with_option(key.clone(), value.clone());
            }
        }
        for (key, value) in &one.settings {
            env = env.with_option(key.clone(), value.clone());
        }
        let mut served = ServeFlow::new(info.name)
            .with_id(one.id)
            .with_defaults(env)
            .with_models(models.clone());
        if let Some(d) = one.description {
            served = served.with_description(d);
        }
        builder = one.flow.serve(builder, &served).map_err(Failure::runtime)?;
        if let Some(s) = one.timeout {
            builder = builder.graph_timeout(seconds("run_timeout_seconds", s)?);
        }
        count += 1;
    }
    let server = builder
        .build()
        .await
        .map_err(|e| Failure::message(format!("cannot start the server: {e}")))?;
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| {
            Failure::message(format!(
                "cannot listen on {host}:{port}: {e}; pick another --port"
            ))
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::message(e.to_string()))?;
    // A closed stderr (a supervisor that stopped reading) must not stop the server.
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "agent serve: {} assistants on http://{address} (data in {}; {}{})",
        count, shown, described, index
    );
    let _ = writeln!(
        err,
        "  Python: from langgraph_sdk import get_client; client = get_client(url=\"http://{address}\")"
    );
    drop(err);
    server
        .serve(listener)
        .await
        .map_err(|e| Failure::message(e.to_string()))
}

/// The store's index: the embeddings `spec` names (`--store-index`, else the config file's
/// `[store] index`; keys and base URLs from the environment, as for models), embedding the
/// section's `fields`. Their length is the embeddings' own, the section's `dims`, or asked of
/// the model once now.
async fn store_index(
    spec: &str,
    section: &agent_flows::serve_config::StoreSection,
) -> Result<agent_core::store::IndexConfig, Failure> {
    let embeddings = agent_llm::embeddings::init_embeddings(spec)
        .map_err(|e| Failure::usage(format!("--store-index: {e}")))?;
    let fields = section
        .fields
        .clone()
        .unwrap_or_else(|| vec!["$".to_owned()]);
    match (embeddings.dims(), section.dims) {
        (Some(made), Some(said)) if made != said => Err(Failure::usage(format!(
            "--store-index {spec}: its vectors have {made} dimensions, not the {said} of [store] dims; drop dims (or use offline:{said})"
        ))),
        (None, Some(dims)) => Ok(agent_core::store::IndexConfig::new(
            dims,
            agent_llm::embeddings::to_embed(embeddings),
        )
        .fields(fields)),
        _ => agent_llm::embeddings::index_config(embeddings, fields)
            .await
            // The provider's error may name its base URL: only what to check is told.
            .map_err(|_| {
                Failure::message(format!(
                    "--store-index {spec}: the embeddings did not answer when asked their length; check that the model runs and its base URL (OPENAI_BASE_URL, OLLAMA_HOST), or set dims in the config file's [store]"
                ))
            }),
    }
}

/// One assistant to serve: a flow under an id, with its own operator settings.
struct Assistant {
    id: String,
    flow: &'static dyn Flow,
    description: Option<String>,
    settings: Vec<(String, String)>,
    timeout: Option<f64>,
}

/// The config file's assistants, or every flow under its own name.
fn assistants(config: &ServeConfig) -> Result<Vec<Assistant>, Failure> {
    if config.assistants.is_empty() {
        return Ok(FLOWS
            .iter()
            .map(|&flow| Assistant {
                id: flow.info().name.to_owned(),
                flow,
                description: None,
                settings: Vec::new(),
                timeout: None,
            })
            .collect());
    }
    config
        .assistants
        .iter()
        .map(|a| {
            Ok(Assistant {
                id: a.id.clone(),
                flow: agent_flows::find(&a.flow).map_err(Failure::runtime)?,
                description: a.description.clone(),
                settings: a
                    .settings
                    .iter()
                    .map(|(k, v)| (k.clone(), v.text()))
                    .collect(),
                timeout: a.run_timeout_seconds,
            })
        })
        .collect()
}

/// The server's auth from the flags and the file (`None`: none, loopback only), and a line
/// saying what it takes.
async fn auth(
    args: &ServeArgs,
    config: &ServeConfig,
) -> Result<(Option<Builtin>, String), Failure> {
    let section = &config.auth;
    let from_env = |name: &str| -> Result<Option<String>, Failure> {
        match std::env::var(name) {
            Ok(v) if v.trim().is_empty() => Err(Failure::usage(format!(
                "{name} is set but empty: an empty secret would let anyone in; unset it or give it a value"
            ))),
            Ok(v) => Ok(Some(v)),
            Err(_) => Ok(None),
        }
    };
    // clap reads AGENTGRAPH_API_KEY for --api-key; an empty one is refused, not ignored.
    let operator = match &args.api_key {
        Some(key) => Some(key.clone()),
        None => match &section.api_key_env {
            Some(name) => from_env(name)?,
            None => from_env("AGENTGRAPH_API_KEY")?,
        },
    };
    let mut parts = Vec::new();
    let keys_file = args.api_keys.clone().or_else(|| section.api_keys.clone());
    let keys = match (keys_file, operator) {
        (None, None) => None,
        (file, operator) => {
            let mut keys = match &file {
                Some(path) => ApiKeys::file(path)
                    .await
                    .map_err(|e| Failure::usage(e.to_string()))?,
                None => ApiKeys::default(),
            };
            if file.is_some() {
                parts.push("keys file");
            }
            if let Some(key) = operator {
                keys = keys
                    .with_operator(&key)
                    .map_err(|e| Failure::usage(format!("--api-key: {e}")))?;
                parts.push("x-api-key");
            }
            Some(keys)
        }
    };
    let secret_env = section.jwt_secret_env.as_deref().unwrap_or(JWT_SECRET_ENV);
    let secret = from_env(secret_env)?;
    let jwks = args.jwks.clone().or_else(|| section.jwks.clone());
    let jwt = match (secret, jwks) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(format!(
                "both {secret_env} (HS256) and a JWKS file are set: tokens are verified one way; pick one"
            )));
        }
        (Some(secret), None) => {
            parts.push("JWT (HS256)");
            Some(JwtKeys::Secret(secret.into_bytes()))
        }
        (None, Some(path)) => {
            parts.push("JWT (JWKS)");
            Some(JwtKeys::Jwks(path))
        }
        (None, None) => None,
    };
    let jwt = match jwt {
        Some(keys) => {
            let mut jwt = Jwt::new(keys)
                .await
                .map_err(|e| Failure::usage(e.to_string()))?;
            if let Some(iss) = args
                .jwt_issuer
                .clone()
                .or_else(|| section.jwt_issuer.clone())
            {
                jwt = jwt.issuer(iss);
            }
            if let Some(aud) = args
                .jwt_audience
                .clone()
                .or_else(|| section.jwt_audience.clone())
            {
                jwt = jwt.audience(aud);
            }
            Some(jwt)
        }
        None => None,
    };
    let mut auth = Builtin::new();
    if let Some(keys) = keys {
        auth = auth.keys(keys);
    }
    if let Some(jwt) = jwt {
        auth = auth.jwt(jwt);
    }
    if auth.is_empty() {
        return Ok((None, "no auth: loopback only".to_owned()));
    }
    Ok((Some(auth), format!("auth: {}", parts.join(", "))))
}
