//! Versioned schema migrations on PostgreSQL, shared by the checkpointer and the store.
//!
//! Why one helper: both keep a schema version in a small key/value table and apply the
//! migrations above it in one transaction under an advisory lock, so several processes
//! starting at once on one database migrate it exactly once; and both must refuse a database
//! migrated by a newer build instead of writing rows it would misread.

use tokio_postgres::Client;

/// What is migrated: the table holding the version, the lock id, the migrations in order
/// (version `n` is `migrations[n - 1]`) and the name errors use (e.g. "store schema").
pub(crate) struct Schema<'a> {
    pub(crate) meta_table: &'a str,
    pub(crate) lock: i64,
    pub(crate) migrations: &'a [&'a str],
    pub(crate) what: &'a str,
}

/// Brings the database up to `schema`'s last version; errors are messages for the caller's
/// error type.
pub(crate) async fn migrate(client: &mut Client, schema: &Schema<'_>) -> Result<(), String> {
    let latest = i32::try_from(schema.migrations.len())
        .map_err(|_| format!("too many {} migrations", schema.what))?;
    let e = |e: tokio_postgres::Error| format!("migrating the {}: {e}", schema.what);
    let tx = client.transaction().await.map_err(e)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&schema.lock])
        .await
        .map_err(e)?;
    let meta = schema.meta_table;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value INTEGER NOT NULL)"
    ))
    .await
    .map_err(e)?;
    let current: i32 = match tx
        .query_opt(
            &format!("SELECT value FROM {meta} WHERE key = 'schema_version'"),
            &[],
        )
        .await
        .map_err(e)?
    {
        Some(row) => row
            .try_get(0)
            .map_err(|e| format!("reading the {} version: {e}", schema.what))?,
        None => 0,
    };
    if current > latest {
        return Err(format!(
            "the database's {} version {current} is newer than this program's ({latest}); upgrade agent-core",
            schema.what
        ));
    }
    for migration in schema.migrations.iter().skip(current.max(0) as usize) {
        tx.batch_execute(migration).await.map_err(e)?;
    }
    tx.execute(
        &format!(
            "INSERT INTO {meta} (key, value) VALUES ('schema_version', $1)
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        ),
        &[&latest],
    )
    .await
    .map_err(e)?;
    tx.commit().await.map_err(e)
}
