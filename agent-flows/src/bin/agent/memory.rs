//! `agent memory list|get|search|delete`: the long-term memory the flows keep across
//! threads (the orchestrator's user profiles and conversation summaries), inspected from
//! the shell. Namespaces are written with dots (`users.ada`), as the server's `GET
//! /store/items` takes them.

use agent_core::store::{ListNamespacesOp, SearchOp};
use serde_json::{Value, json};

use crate::cli::MemoryAction;
use crate::{Failure, setup};

fn namespace(dotted: &str) -> Vec<String> {
    if dotted.is_empty() {
        Vec::new()
    } else {
        dotted.split('.').map(str::to_owned).collect()
    }
}

fn failed(e: agent_core::store::StoreError) -> Failure {
    Failure::message(e.to_string())
}

pub async fn run(
    action: MemoryAction,
    store: Option<String>,
    db: Option<String>,
) -> Result<(), Failure> {
    let store = setup::store(store.as_deref(), db.as_deref()).await?;
    match action {
        MemoryAction::List { prefix, max_depth } => {
            let mut op = ListNamespacesOp::new().limit(usize::MAX);
            if let Some(prefix) = prefix.filter(|p| !p.is_empty()) {
                op = op.prefix(namespace(&prefix));
            }
            if let Some(depth) = max_depth {
                op = op.max_depth(depth);
            }
            for ns in store.list_namespaces(op).await.map_err(failed)? {
                println!("{}", ns.join("."));
            }
        }
        MemoryAction::Get { namespace: ns, key } => {
            match store.get(&namespace(&ns), &key).await.map_err(failed)? {
                Some(item) => println!("{}", Value::Object(item.value)),
                None => return Err(Failure::message(format!("no item `{key}` in `{ns}`"))),
            }
        }
        MemoryAction::Search {
            prefix,
            query,
            filter,
            limit,
        } => {
            let mut op = SearchOp::new(namespace(&prefix)).limit(limit);
            if let Some(filter) = filter {
                let filter: Value = serde_json::from_str(&filter)
                    .map_err(|e| Failure::usage(format!("--filter is not JSON: {e}")))?;
                op = op.filter(filter);
            }
            if let Some(query) = query {
                op = op.query(query);
            }
            for item in store.search(op).await.map_err(failed)? {
                let line = json!({
                    "namespace": item.namespace.join("."),
                    "key": item.key,
                    "value": item.value,
                    "updated_at_ms": item.updated_at_ms,
                    "score": item.score,
                });
                println!("{line}");
            }
        }
        MemoryAction::Delete { namespace: ns, key } => {
            store.delete(&namespace(&ns), &key).await.map_err(failed)?;
        }
    }
    Ok(())
}
