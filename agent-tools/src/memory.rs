//! Long-term memory tools for agents (langmem's `create_manage_memory_tool` /
//! `create_search_memory_tool`): [`ManageMemory`] (`manage_memory`: create, update or delete
//! a memory) and [`SearchMemory`] (`search_memory`: find memories by query), over a
//! [`Store`] under a namespace template such as `["memories", "{user_id}"]`.
//!
//! A `{name}` label is filled, at each call, from the run's metadata
//! (`RunConfig::metadata("user_id", "ada")`), so one registry serves every user. The store is
//! the tool's own ([`with_store`](ManageMemory::with_store)) or, inside a
//! [`ToolNode`](crate::ToolNode), the run's (`ctx.store()`: `CompiledGraph::with_store` or
//! `RunConfig::store`). Memories are stored as `{"content": "..."}`, keyed by id.
//!
//! `search_memory` ranks by similarity when the store has an index; without one it keeps the
//! memories sharing a word with the query, most recent first.

use std::sync::Arc;

use agent_core::store::{SearchOp, Store, StoreError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tool::Tool;
use crate::tool_context::current_context;

/// Where the memory tools keep memories: a namespace template and, optionally, a store.
#[derive(Debug, Clone)]
struct Memories {
    namespace: Vec<String>,
    store: Option<Arc<dyn Store>>,
}

impl Memories {
    fn new<I: IntoIterator<Item = S>, S: Into<String>>(namespace: I) -> Self {
        Memories {
            namespace: namespace.into_iter().map(Into::into).collect(),
            store: None,
        }
    }

    /// The store and the filled namespace for the current call.
    fn resolve(&self) -> Result<(Arc<dyn Store>, Vec<String>), String> {
        let ctx = current_context();
        let store = self
            .store
            .clone()
            .or_else(|| ctx.as_ref().and_then(|c| c.store()))
            .ok_or(
                "no store: give the graph one with `CompiledGraph::with_store` (or the run with \
                 `RunConfig::store`), or the tool with `with_store`",
            )?;
        let metadata = ctx
            .as_ref()
            .map(|c| c.config().metadata.clone())
            .unwrap_or_default();
        let namespace = fill(&self.namespace, &metadata)?;
        Ok((store, namespace))
    }
}

/// The template's labels with `{name}` replaced by the metadata's `name`.
fn fill(template: &[String], metadata: &Map<String, Value>) -> Result<Vec<String>, String> {
    template
        .iter()
        .map(
            |label| match label.strip_prefix('{').and_then(|l| l.strip_suffix('}')) {
                Some(name) => match metadata.get(name) {
                    Some(Value::String(s)) => Ok(s.clone()),
                    Some(v @ Value::Number(_)) => Ok(v.to_string()),
                    _ => Err(format!(
                        "the memory namespace {template:?} needs `{name}`: run the graph with \
                     `RunConfig::metadata(\"{name}\", ..)`"
                    )),
                },
                None => Ok(label.clone()),
            },
        )
        .collect()
}

fn store_error(e: StoreError) -> String {
    e.to_string()
}

/// What `manage_memory` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryAction {
    /// Store a new memory.
    #[default]
    Create,
    /// Replace an existing memory's content.
    Update,
    /// Forget a memory.
    Delete,
}

/// The arguments of `manage_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ManageMemoryArgs {
    /// The memory's text: a fact, preference or note worth keeping (for create and update).
    #[serde(default)]
    pub content: Option<String>,
    /// create (the default), update or delete.
    #[serde(default)]
    pub action: MemoryAction,
    /// The id of the memory to update or delete (as `search_memory` shows it).
    #[serde(default)]
    pub id: Option<String>,
}

/// `manage_memory`: creates, updates or deletes a memory.
#[derive(Debug, Clone)]
pub struct ManageMemory {
    memories: Memories,
    name: String,
}

impl ManageMemory {
    /// The tool over memories under `namespace` (labels, `{name}` filled from the run's
    /// metadata).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(namespace: I) -> Self {
        ManageMemory {
            memories: Memories::new(namespace),
            name: "manage_memory".into(),
        }
    }

    /// Uses `store` instead of the run's.
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.memories.store = Some(store);
        self
    }

    /// Another name for the tool.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Tool for ManageMemory {
    type Args = ManageMemoryArgs;
    type Output = Value;
    type Error = String;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Create, update or delete a long-term memory: facts about the user, their preferences, \
         what they asked you to remember. Memories persist across conversations. To update or \
         delete one, give its id (search first to find it)."
    }

    async fn call(&self, args: ManageMemoryArgs) -> Result<Value, String> {
        let (store, namespace) = self.memories.resolve()?;
        let content = || {
            args.content
                .clone()
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| format!("`{:?}` needs `content`", args.action).to_lowercase())
        };
        let id = || {
            args.id
                .clone()
                .ok_or("update and delete need the memory's `id`")
        };
        match args.action {
            MemoryAction::Create => {
                let id = agent_core::new_id();
                store
                    .put(&namespace, &id, json!({"content": content()?}))
                    .await
                    .map_err(store_error)?;
                Ok(json!({"created": id}))
            }
            MemoryAction::Update => {
                let id = id()?;
                if store
                    .get(&namespace, &id)
                    .await
                    .map_err(store_error)?
                    .is_none()
                {
                    return Err(format!("no memory with id `{id}`; create it instead"));
                }
                store
                    .put(&namespace, &id, json!({"content": content()?}))
                    .await
                    .map_err(store_error)?;
                Ok(json!({"updated": id}))
            }
            MemoryAction::Delete => {
                let id = id()?;
                store.delete(&namespace, &id).await.map_err(store_error)?;
                Ok(json!({"deleted": id}))
            }
        }
    }
}

/// The arguments of `search_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SearchMemoryArgs {
    /// What to look for.
    pub query: String,
    /// At most this many memories (10 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many first (for the next page).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Conditions on the memories' fields (`{"field": value}` or `{"field": {"$gt": 1}}`).
    #[serde(default)]
    pub filter: Option<Map<String, Value>>,
}

/// `search_memory`: finds memories by query.
#[derive(Debug, Clone)]
pub struct SearchMemory {
    memories: Memories,
    name: String,
}

impl SearchMemory {
    /// The tool over memories under `namespace` (labels, `{name}` filled from the run's
    /// metadata).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(namespace: I) -> Self {
        SearchMemory {
            memories: Memories::new(namespace),
            name: "search_memory".into(),
        }
    }

    /// Uses `store` instead of the run's.
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.memories.store = Some(store);
        self
    }

    /// Another name for the tool.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_owned)
        .collect()
}

impl Tool for SearchMemory {
    type Args = SearchMemoryArgs;
    type Output = Value;
    type Error = String;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Search your long-term memories (facts, preferences, notes from earlier conversations) \
         for ones related to the query; returns each with its id and content."
    }

    async fn call(&self, args: SearchMemoryArgs) -> Result<Value, String> {
        let (store, namespace) = self.memories.resolve()?;
        let limit = args.limit.unwrap_or(10);
        let offset = args.offset.unwrap_or(0);
        let mut op = SearchOp::new(namespace).limit(limit).offset(offset);
        if let Some(filter) = args.filter.clone() {
            op = op.filter(Value::Object(filter));
        }
        let found = match store.search(op.clone().query(args.query.clone())).await {
            Err(StoreError::NoIndex { .. }) => {
                // No index: memories sharing a word with the query, most recent first.
                let wanted = words(&args.query);
                let all = store
                    .search(op.limit(usize::MAX).offset(0))
                    .await
                    .map_err(store_error)?;
                all.into_iter()
                    .filter(|i| {
                        let text = Value::Object(i.value.clone()).to_string().to_lowercase();
                        wanted.iter().any(|w| text.contains(w.as_str()))
                    })
                    .skip(offset)
                    .take(limit)
                    .collect()
            }
            other => other.map_err(store_error)?,
        };
        Ok(Value::Array(
            found
                .into_iter()
                .map(|i| {
                    let mut entry = json!({"id": i.key, "updated_at_ms": i.updated_at_ms});
                    match i.value.get("content") {
                        Some(content) if i.value.len() == 1 => entry["content"] = content.clone(),
                        _ => entry["value"] = Value::Object(i.value.clone()),
                    }
                    if let Some(score) = i.score {
                        entry["score"] = json!(score);
                    }
                    entry
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_from_metadata() {
        let mut metadata = Map::new();
        metadata.insert("user_id".into(), json!("ada"));
        metadata.insert("n".into(), json!(7));
        let template = [
            "memories".to_owned(),
            "{user_id}".to_owned(),
            "{n}".to_owned(),
        ];
        assert_eq!(
            fill(&template, &metadata),
            Ok(vec!["memories".into(), "ada".into(), "7".into()])
        );
        let missing = fill(&["{org}".to_owned()], &metadata).expect_err("missing");
        assert!(missing.contains("RunConfig::metadata(\"org\""), "{missing}");
    }
}
