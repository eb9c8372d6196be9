//! The savers the benches open, by name, and the durabilities by name: one place for
//! `benches/shapes.rs` and `benches/concurrent.rs`.

use std::path::Path;
use std::sync::Arc;

use agent_core::{BoxError, Checkpointer, Durability, InMemorySaver, PostgresSaver, SqliteSaver};

/// Where the PostgreSQL server is (the `postgres` saver runs only when it is set).
pub const POSTGRES_ENV: &str = "AGENTGRAPH_POSTGRES_URL";

/// Set: the SQLite saver is opened shared (`SqliteSaver::open`).
pub const SQLITE_SHARED_ENV: &str = "AGENTGRAPH_BENCH_SQLITE_SHARED";

/// Whether `AGENTGRAPH_POSTGRES_URL` names a server.
fn postgres_configured() -> bool {
    std::env::var(POSTGRES_ENV).is_ok_and(|url| !url.is_empty())
}

/// The savers of `kinds` this machine can run: `postgres` only where
/// `AGENTGRAPH_POSTGRES_URL` names a server.
pub fn available<'a>(kinds: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let postgres = postgres_configured();
    kinds
        .into_iter()
        .filter(|kind| *kind != "postgres" || postgres)
        .collect()
}

/// The SQLite saver as a process that owns its checkpoints opens it (`open_exclusive`), or
/// shared (`open`) with `AGENTGRAPH_BENCH_SQLITE_SHARED` set (to compare the two).
pub fn open_sqlite(path: &Path) -> Result<SqliteSaver, BoxError> {
    Ok(if std::env::var_os(SQLITE_SHARED_ENV).is_some() {
        SqliteSaver::open(path)?
    } else {
        SqliteSaver::open_exclusive(path)?
    })
}

/// The PostgreSQL saver on the server `AGENTGRAPH_POSTGRES_URL` names.
pub async fn connect_postgres() -> Result<PostgresSaver, BoxError> {
    let url = std::env::var(POSTGRES_ENV).map_err(|_| format!("{POSTGRES_ENV} is not set"))?;
    Ok(PostgresSaver::connect(&url).await?)
}

/// A saver of this kind (`none` and `floor`: none); SQLite's file in `dir`.
pub async fn open(kind: &str, dir: &Path) -> Result<Option<Arc<dyn Checkpointer>>, BoxError> {
    Ok(match kind {
        "none" | "floor" => None,
        "memory" => Some(Arc::new(InMemorySaver::new())),
        "sqlite" => {
            std::fs::create_dir_all(dir)?;
            Some(Arc::new(open_sqlite(&dir.join("checkpoints.sqlite"))?))
        }
        "postgres" => Some(Arc::new(connect_postgres().await?)),
        other => return Err(format!("unknown saver `{other}`").into()),
    })
}

/// The durability of this name (one of [`DURABILITIES`](crate::DURABILITIES); `sync` else).
pub fn durability(name: &str) -> Durability {
    match name {
        "exit" => Durability::Exit,
        "async" => Durability::Async,
        _ => Durability::Sync,
    }
}
