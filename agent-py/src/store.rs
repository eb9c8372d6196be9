//! agent-core's stores (`InMemoryStore`, `SqliteStore`, `PostgresStore`) as the native half
//! of `agentgraph.store.memory.InMemoryStore`, `agentgraph.store.sqlite.SqliteStore` and
//! `agentgraph.store.postgres.PostgresStore` (one class: the backend is picked by the
//! constructor).
//!
//! Ops and results cross as JSON text (`json.dumps` on the Python side, serde here): a
//! store's values are JSON objects in agent-core, so a value goes through JSON once on the
//! way in and once on the way out whatever the interface, and one string each way keeps this
//! side to the ops' shapes. A store's calls block the caller without the GIL (parallel nodes
//! share it), on the tokio runtime the graphs run on (the SQL stores need its blocking pool and
//! its sockets); an index's `embed` is a Python callable, called under the GIL again.

use std::sync::Arc;
use std::time::Duration;

use agent_core::BoxError;
use agent_core::store::{
    Embed, GetOp, InMemoryStore, IndexChoice, IndexConfig, ListNamespacesOp, MatchCondition, Op,
    OpResult, PostgresStore, PutOp, SearchOp, SqliteStore, Store, StoreConfig, StoreError, Ttl,
    TtlConfig,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Map, Value};

/// The Rust store (`agentgraph.store`'s classes wrap this one).
#[pyclass(frozen, name = "NativeStore", module = "agentgraph._native")]
pub struct NativeStore {
    store: Arc<dyn Store>,
}

/// An index's embedding function: a Python callable from a list of texts to their vectors.
struct PyEmbed(Py<PyAny>);

#[async_trait::async_trait]
impl Embed for PyEmbed {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, BoxError> {
        Python::attach(|py| -> PyResult<Vec<Vec<f32>>> {
            self.0.bind(py).call1((texts.to_vec(),))?.extract()
        })
        .map_err(|error| Box::new(error) as BoxError)
    }
}

/// One op as the Python side writes it.
#[derive(serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum JsonOp {
    Get {
        namespace: Vec<String>,
        key: String,
        refresh_ttl: Option<bool>,
    },
    Put {
        namespace: Vec<String>,
        key: String,
        value: Option<Map<String, Value>>,
        /// `null`: the store's fields; `false`: none; a list: these paths.
        index: Value,
        /// `"default"`, `null` (forever) or minutes.
        ttl: Value,
    },
    Search {
        namespace_prefix: Vec<String>,
        filter: Option<Map<String, Value>>,
        query: Option<String>,
        limit: usize,
        offset: usize,
        refresh_ttl: Option<bool>,
    },
    List {
        match_conditions: Vec<MatchCondition>,
        max_depth: Option<usize>,
        limit: usize,
        offset: usize,
    },
}

impl JsonOp {
    fn into_op(self) -> PyResult<Op> {
        Ok(match self {
            JsonOp::Get {
                namespace,
                key,
                refresh_ttl,
            } => {
                let op = GetOp::new(namespace, key);
                match refresh_ttl {
                    Some(refresh) => op.refresh_ttl(refresh),
                    None => op,
                }
                .into()
            }
            JsonOp::Put {
                namespace,
                key,
                value,
                index,
                ttl,
            } => {
                let op = match value {
                    Some(value) => PutOp::new(namespace, key, value),
                    None => PutOp::delete(namespace, key),
                };
                let index = match index {
                    Value::Null => IndexChoice::StoreDefault,
                    Value::Bool(false) => IndexChoice::Off,
                    Value::Array(_) => {
                        IndexChoice::Fields(serde_json::from_value(index).map_err(bad)?)
                    }
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "index must be False or a list of paths, not {other}"
                        )));
                    }
                };
                let ttl = match ttl {
                    Value::Null => Ttl::Never,
                    Value::Number(minutes) => {
                        Ttl::After(minutes_to_duration(minutes.as_f64().unwrap_or(0.0)))
                    }
                    _ => Ttl::StoreDefault,
                };
                op.index(index).ttl(ttl).into()
            }
            JsonOp::Search {
                namespace_prefix,
                filter,
                query,
                limit,
                offset,
                refresh_ttl,
            } => {
                let mut op = SearchOp::new(namespace_prefix).limit(limit).offset(offset);
                if let Some(filter) = filter {
                    op = op.filter(Value::Object(filter));
                }
                if let Some(query) = query {
                    op = op.query(query);
                }
                if let Some(refresh) = refresh_ttl {
                    op = op.refresh_ttl(refresh);
                }
                op.into()
            }
            JsonOp::List {
                match_conditions,
                max_depth,
                limit,
                offset,
            } => {
                let mut op = ListNamespacesOp::new().limit(limit).offset(offset);
                op.match_conditions = match_conditions;
                if let Some(depth) = max_depth {
                    op = op.max_depth(depth);
                }
                op.into()
            }
        })
    }
}

fn bad(error: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(error.to_string())
}

fn result_json(result: OpResult) -> PyResult<Value> {
    match result {
        OpResult::Item(item) => serde_json::to_value(item).map_err(bad),
        OpResult::Items(items) => serde_json::to_value(items).map_err(bad),
        OpResult::Namespaces(namespaces) => serde_json::to_value(namespaces).map_err(bad),
        OpResult::Done => Ok(Value::Null),
    }
}

/// A store's settings from the Python side: an index when `embed` is given (over `fields`,
/// the whole value by default), TTL rules when `ttl` is (`(default minutes, refresh on read)`).
fn store_config(
    dims: Option<usize>,
    embed: Option<Py<PyAny>>,
    fields: Option<Vec<String>>,
    ttl: Option<(Option<f64>, bool)>,
) -> StoreConfig {
    let mut config = StoreConfig::default();
    if let Some(embed) = embed {
        let mut index = IndexConfig::new(dims.unwrap_or(0), Arc::new(PyEmbed(embed)));
        if let Some(fields) = fields {
            index = index.fields(fields);
        }
        config.index = Some(index);
    }
    config.ttl = ttl.map(|(minutes, refresh_on_read)| TtlConfig {
        default_ttl: minutes.map(minutes_to_duration),
        refresh_on_read,
        sweep_interval: None,
    });
    config
}

fn minutes_to_duration(minutes: f64) -> Duration {
    Duration::from_secs_f64((minutes * 60.0).max(0.0))
}

/// A store error as Python's: an `embed` callable's own exception is raised as itself.
fn store_err(error: StoreError) -> PyErr {
    match error {
        StoreError::Embed { source, .. } => match source.downcast::<PyErr>() {
            Ok(error) => *error,
            Err(source) => bad(source),
        },
        other => bad(other),
    }
}

/// Runs a store's future to its end on the graphs' tokio runtime, without the GIL.
fn block<T: Send>(
    py: Python<'_>,
    future: impl std::future::Future<Output = Result<T, StoreError>> + Send,
) -> PyResult<T> {
    py.detach(|| pyo3_async_runtimes::tokio::get_runtime().block_on(future))
        .map_err(store_err)
}

#[pymethods]
impl NativeStore {
    /// An in-memory store.
    #[new]
    #[pyo3(signature = (dims=None, embed=None, fields=None, ttl=None))]
    fn new(
        dims: Option<usize>,
        embed: Option<Py<PyAny>>,
        fields: Option<Vec<String>>,
        ttl: Option<(Option<f64>, bool)>,
    ) -> Self {
        let config = store_config(dims, embed, fields, ttl);
        NativeStore {
            store: Arc::new(InMemoryStore::new().with_config(config)),
        }
    }

    /// A store in the SQLite file at `path` (`None`: a private in-memory database).
    #[staticmethod]
    #[pyo3(signature = (path, dims=None, embed=None, fields=None, ttl=None))]
    fn sqlite(
        py: Python<'_>,
        path: Option<String>,
        dims: Option<usize>,
        embed: Option<Py<PyAny>>,
        fields: Option<Vec<String>>,
        ttl: Option<(Option<f64>, bool)>,
    ) -> PyResult<Self> {
        let config = store_config(dims, embed, fields, ttl);
        let store = py
            .detach(|| match path {
                Some(path) => SqliteStore::open(path),
                None => SqliteStore::in_memory(),
            })
            .map_err(store_err)?;
        Ok(NativeStore {
            store: Arc::new(store.with_config(config)),
        })
    }

    /// A store in the PostgreSQL database at `url` (its tables migrated on connecting).
    #[staticmethod]
    #[pyo3(signature = (url, dims=None, embed=None, fields=None, ttl=None))]
    fn postgres(
        py: Python<'_>,
        url: String,
        dims: Option<usize>,
        embed: Option<Py<PyAny>>,
        fields: Option<Vec<String>>,
        ttl: Option<(Option<f64>, bool)>,
    ) -> PyResult<Self> {
        let config = store_config(dims, embed, fields, ttl);
        let store = block(py, async move { PostgresStore::connect(&url).await })?;
        Ok(NativeStore {
            store: Arc::new(store.with_config(config)),
        })
    }

    /// Applies a JSON list of ops in order; a JSON list of their results.
    fn batch(&self, py: Python<'_>, ops: &str) -> PyResult<String> {
        let ops: Vec<JsonOp> = serde_json::from_str(ops).map_err(bad)?;
        let ops = ops
            .into_iter()
            .map(JsonOp::into_op)
            .collect::<PyResult<Vec<Op>>>()?;
        let store = self.store.clone();
        let results = block(py, async move { store.batch(ops).await })?;
        let results = results
            .into_iter()
            .map(result_json)
            .collect::<PyResult<Vec<Value>>>()?;
        serde_json::to_string(&results).map_err(bad)
    }

    /// Deletes the expired items; how many.
    fn sweep(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.store.clone();
        block(py, async move { store.sweep_expired().await })
    }
}
