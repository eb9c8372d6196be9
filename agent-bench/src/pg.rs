//! Fresh PostgreSQL databases for the bench binaries (`server_bench`, `store_bench`): each
//! measured cell gets a database of its own, made afresh, on the server the bench was given.

/// What these return on failure.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// `url` with its database name replaced by `name`.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// A plain connection to `url` (its connection task spawned).
async fn admin(url: &str) -> Result<tokio_postgres::Client, Error> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Drops and creates the database `name` on the server of `url`.
pub async fn create_database(url: &str, name: &str) -> Result<(), Error> {
    let client = admin(url).await?;
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await?;
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
        .map_err(|e| format!("CREATE DATABASE {name}: {e}"))?;
    Ok(())
}

/// `ANALYZE` of the database at `url`: the planner's statistics of freshly filled tables, as
/// autovacuum would gather them within a minute of the writes.
pub async fn analyze(url: &str) -> Result<(), Error> {
    admin(url).await?.batch_execute("ANALYZE").await?;
    Ok(())
}

/// `VACUUM ANALYZE` of the database at `url`: the visibility map (index-only scans) and the
/// planner's statistics of freshly filled tables, as autovacuum brings them within a minute
/// of the writes.
pub async fn vacuum_analyze(url: &str) -> Result<(), Error> {
    admin(url).await?.batch_execute("VACUUM ANALYZE").await?;
    Ok(())
}

/// Drops the database `name` if it is there (best effort: the bench is over).
pub async fn drop_database(url: &str, name: &str) {
    if let Ok(client) = admin(url).await {
        let _ = client
            .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_is_replaced_and_the_rest_kept() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "b"),
            "postgres://postgres@127.0.0.1:5432/b"
        );
        assert_eq!(
            with_database("postgres://u:p@h:1/db?sslmode=disable", "b"),
            "postgres://u:p@h:1/b?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "b"), "postgres://h/b");
    }
}
