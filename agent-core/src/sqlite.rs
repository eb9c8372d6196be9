//! SQLite connection helpers shared by agentgraph's SQLite users: the checkpointer and store
//! here, the server's run store (which keeps its rows in the same file).
//!
//! Why shared: connections on one file wait for each other's write lock, and how they wait
//! decides throughput; and rusqlite's `Transaction` parses `BEGIN` and `COMMIT` on every use,
//! a tenth of a small checkpoint's cost. Both fixes belong in one place.

use std::time::Duration;

use rusqlite::Connection;

/// How long a write waits for another connection's write lock before failing with
/// "database is locked".
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Makes `conn` wait for another connection's lock: retries after 20 µs, doubling up to
/// 2 ms, for [`BUSY_TIMEOUT`] in all. SQLite's own busy timeout sleeps 1 ms at first and
/// longer after (1, 2, 5, 10 ms...), far longer than the transactions it waits for (tens of
/// microseconds): two connections on one file (a server's runs and its checkpoints) spent
/// most of their time asleep.
pub fn wait_when_busy(conn: &mut Connection) -> rusqlite::Result<()> {
    fn retry(attempt: i32) -> bool {
        let wait = Duration::from_micros(20 << attempt.clamp(0, 7)).min(Duration::from_millis(2));
        // 2.5 ms for the first 8 retries, then 2 ms each.
        if attempt >= 8 + (BUSY_TIMEOUT.as_millis() / 2) as i32 {
            return false;
        }
        std::thread::sleep(wait);
        true
    }
    conn.busy_handler(Some(retry))
}

/// A transaction begun and ended with cached statements. Rolls back when dropped with the
/// transaction still open (not committed, or its commit failed).
#[derive(Debug)]
pub struct Tx<'c> {
    conn: &'c Connection,
}

impl<'c> Tx<'c> {
    /// A write transaction: takes the write lock now (`BEGIN IMMEDIATE`), so a busy database
    /// waits or fails here, before any work. A deferred transaction that reads and then
    /// writes fails at once, without waiting, when another connection committed in between.
    pub fn write(conn: &'c Connection) -> rusqlite::Result<Self> {
        Self::begin(conn, "BEGIN IMMEDIATE")
    }

    /// A read transaction: one snapshot for several queries.
    pub fn read(conn: &'c Connection) -> rusqlite::Result<Self> {
        Self::begin(conn, "BEGIN DEFERRED")
    }

    fn begin(conn: &'c Connection, sql: &str) -> rusqlite::Result<Self> {
        conn.prepare_cached(sql)?.execute([])?;
        Ok(Tx { conn })
    }

    /// Commits; on failure the drop rolls back.
    pub fn commit(self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([]).map(drop)
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit()
            && let Err(e) = self
                .conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut rollback| rollback.execute([]))
        {
            tracing::warn!(error = %e, "could not roll back a SQLite transaction");
        }
    }
}
