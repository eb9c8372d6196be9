//! SQLite connection helpers shared by agentgraph's SQLite users: the checkpointer and store
//! here, the server's run store (which keeps its rows in the same file).
//!
//! Why shared: connections on one file wait for each other's write lock, and how they wait
//! decides throughput; and rusqlite's `Transaction` parses `BEGIN` and `COMMIT` on every use,
//! a tenth of a small checkpoint's cost. Both fixes belong in one place.
//!
//! Writers in one process take turns at a gate per file before they ask SQLite for its
//! lock ([`Tx::write`]): a connection waiting at SQLite's lock can only poll it (see
//! [`wait_when_busy`]), and it sleeps through most of the moments the lock is free, while at
//! the gate the next writer wakes when the last one commits. Other processes still meet at
//! SQLite's lock, which stays the rule.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

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

/// The turn of this process's writers of one file.
#[derive(Debug, Default)]
struct Gate {
    taken: Mutex<bool>,
    freed: Condvar,
}

fn flag(gate: &Gate) -> MutexGuard<'_, bool> {
    gate.taken.lock().unwrap_or_else(|p| p.into_inner())
}

impl Gate {
    /// The gate of `conn`'s file (none for a database in memory).
    fn of(conn: &Connection) -> Option<Arc<Gate>> {
        static GATES: OnceLock<Mutex<HashMap<String, Weak<Gate>>>> = OnceLock::new();
        let path = conn.path().filter(|p| !p.is_empty())?;
        let mut gates = GATES
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(gate) = gates.get(path).and_then(Weak::upgrade) {
            return Some(gate);
        }
        // A gate lives while a writer holds it or waits for it; forget the others.
        if gates.len() >= 64 {
            gates.retain(|_, gate| gate.strong_count() > 0);
        }
        let gate = Arc::new(Gate::default());
        gates.insert(path.to_owned(), Arc::downgrade(&gate));
        Some(gate)
    }

    /// Waits for the turn, at most [`BUSY_TIMEOUT`]; past it the writer goes on to SQLite's
    /// lock, which fails as it always did ("database is locked") if the holder never ends.
    fn enter(&self) -> bool {
        let deadline = Instant::now() + BUSY_TIMEOUT;
        let mut taken = flag(self);
        while *taken {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            taken = match self.freed.wait_timeout(taken, left) {
                Ok((guard, _)) => guard,
                Err(p) => p.into_inner().0,
            };
        }
        *taken = true;
        true
    }

    fn leave(&self) {
        *flag(self) = false;
        self.freed.notify_one();
    }
}

/// A transaction begun and ended with cached statements. Rolls back when dropped with the
/// transaction still open (not committed, or its commit failed).
#[derive(Debug)]
pub struct Tx<'c> {
    conn: &'c Connection,
    /// The file's gate, while this write transaction holds it.
    gate: Option<Arc<Gate>>,
}

impl<'c> Tx<'c> {
    /// A write transaction: takes this process's turn for the file (see the module docs),
    /// then the write lock (`BEGIN IMMEDIATE`), so a busy database waits or fails here,
    /// before any work. A deferred transaction that reads and then writes fails at once,
    /// without waiting, when another connection committed in between.
    pub fn write(conn: &'c Connection) -> rusqlite::Result<Self> {
        let gate = Gate::of(conn).filter(|gate| gate.enter());
        let begun = conn
            .prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut begin| begin.execute([]));
        match begun {
            Ok(_) => Ok(Tx { conn, gate }),
            Err(e) => {
                // No transaction of ours to roll back (one already open is the caller's).
                if let Some(gate) = gate {
                    gate.leave();
                }
                Err(e)
            }
        }
    }

    /// A read transaction: one snapshot for several queries.
    pub fn read(conn: &'c Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("BEGIN DEFERRED")?.execute([])?;
        Ok(Tx { conn, gate: None })
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
        if let Some(gate) = self.gate.take() {
            gate.leave();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn open(path: &std::path::Path) -> Connection {
        let mut conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        wait_when_busy(&mut conn).unwrap();
        conn
    }

    /// A fresh directory for a test's files.
    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "agentgraph-sqlite-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn taken(conn: &Connection) -> bool {
        Gate::of(conn).is_some_and(|gate| *flag(&gate))
    }

    #[test]
    fn writers_of_one_file_take_turns_at_its_gate() {
        let dir = dir("gate");
        let path = dir.join("gate.sqlite");
        let first = open(&path);
        first
            .execute_batch("CREATE TABLE t (writer TEXT NOT NULL)")
            .unwrap();
        let tx = Tx::write(&first).unwrap();
        assert!(taken(&first), "a write transaction holds the file's gate");
        let (entered, waiting) = mpsc::channel();
        let second = std::thread::spawn({
            let path = path.clone();
            move || {
                let conn = open(&path);
                let tx = Tx::write(&conn).unwrap();
                entered.send(()).unwrap();
                tx.execute("INSERT INTO t VALUES ('second')", []).unwrap();
                tx.commit().unwrap();
            }
        });
        // The second writer waits at the gate while the first holds it.
        assert!(waiting.recv_timeout(Duration::from_millis(200)).is_err());
        tx.execute("INSERT INTO t VALUES ('first')", []).unwrap();
        tx.commit().unwrap();
        waiting.recv().unwrap();
        second.join().unwrap();
        let order: Vec<String> = first
            .prepare("SELECT writer FROM t ORDER BY rowid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(order, ["first", "second"]);
        assert!(!taken(&first), "the gate is free after both committed");
        drop(first);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_dropped_or_failed_write_frees_the_gate() {
        let dir = dir("drop");
        let conn = open(&dir.join("drop.sqlite"));
        conn.execute_batch("CREATE TABLE t (v INTEGER)").unwrap();
        let tx = Tx::write(&conn).unwrap();
        tx.execute("INSERT INTO t VALUES (1)", []).unwrap();
        drop(tx);
        assert!(!taken(&conn), "a rolled-back write leaves the gate free");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 0);
        // BEGIN fails inside an open transaction: the gate is given back.
        conn.execute_batch("BEGIN").unwrap();
        assert!(Tx::write(&conn).is_err());
        conn.execute_batch("ROLLBACK").unwrap();
        assert!(!taken(&conn));
        let memory = Connection::open_in_memory().unwrap();
        assert!(
            Gate::of(&memory).is_none(),
            "a database in memory has no gate"
        );
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
