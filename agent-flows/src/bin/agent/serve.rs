//! `agent serve`: every flow behind the LangGraph server API, one system assistant per flow,
//! with the operator's settings (`--set`, `--model`) checked at start and the models runs
//! may pick (`--models`) built once.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use agent_flows::{FLOWS, FlowEnv, Models, ServeFlow};

use crate::Failure;
use crate::cli::ServeArgs;

pub async fn run(args: &ServeArgs) -> Result<(), Failure> {
    let host: IpAddr = args.host.parse().map_err(|_| {
        Failure::usage(format!("--host must be an IP address, not `{}`", args.host))
    })?;
    if !host.is_loopback() && args.api_key.is_none() {
        return Err(Failure::usage(format!(
            "refusing to serve on {host} without an API key: anyone who reaches the port could run the flows. Pass --api-key (or AGENTGRAPH_API_KEY), or keep the default --host 127.0.0.1"
        )));
    }
    // The models runs may pick, built once: --models (offline unless given), and --model.
    let default_model = match args.model.trim() {
        "" => agent_flows::serve::OFFLINE,
        spec => spec,
    };
    let mut specs: Vec<&str> = args
        .models
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if specs.is_empty() {
        specs.push(agent_flows::serve::OFFLINE);
    }
    specs.push(default_model);
    let models =
        Arc::new(Models::build(&specs).map_err(|e| Failure::usage(format!("--models: {e}")))?);
    let mut defaults = FlowEnv::offline();
    if let Some(Some(model)) = models.get(default_model) {
        defaults = defaults.with_model(model);
    }
    for (key, _) in &args.set {
        if !FLOWS
            .iter()
            .any(|f| f.info().options.iter().any(|o| o.key == key))
        {
            return Err(Failure::usage(format!(
                "--set {key}: no flow takes the option `{key}` (`agent list` shows each flow's)"
            )));
        }
    }
    let db = match &args.db {
        Some(db) if !db.trim().is_empty() => db.trim().to_owned(),
        _ => crate::setup::default_db()?.display().to_string(),
    };
    let postgres = db.starts_with("postgres://") || db.starts_with("postgresql://");
    let mut builder = agent_server::Server::builder()
        .workers(args.workers)
        .allow_private_webhooks(args.allow_private_webhooks);
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
    if let Some(key) = &args.api_key {
        builder = builder.api_key(key.clone());
    }
    for flow in FLOWS {
        let info = flow.info();
        let mut env = defaults.clone();
        for (key, value) in &args.set {
            if info.options.iter().any(|o| o.key == key) {
                env = env.with_option(key.clone(), value.clone());
            }
        }
        let served = ServeFlow::new(info.name)
            .with_defaults(env)
            .with_models(models.clone());
        builder = flow.serve(builder, &served).map_err(Failure::runtime)?;
    }
    let server = builder
        .build()
        .await
        .map_err(|e| Failure::message(format!("cannot start the server: {e}")))?;
    let listener = tokio::net::TcpListener::bind((host, args.port))
        .await
        .map_err(|e| {
            Failure::message(format!(
                "cannot listen on {host}:{}: {e}; pick another --port",
                args.port
            ))
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| Failure::message(e.to_string()))?;
    // A closed stderr (a supervisor that stopped reading) must not stop the server.
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "agent serve: {} flows on http://{address} (data in {}; {})",
        FLOWS.len(),
        shown,
        if args.api_key.is_some() {
            "x-api-key required"
        } else {
            "no API key: loopback only"
        }
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
