//! Moves a SQLite database's write-ahead log into the database file on a thread of its own.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the log past 1,000 pages:
//! that commit copies every page written since the last checkpoint into the database file and
//! waits for the file to reach the disk (`fsync`), milliseconds and, after a large checkpoint,
//! tens of them, on whatever run's step made the commit. The saver turns it off and this
//! thread, with a connection of its own, does the same work off the runs' path: a `PASSIVE`
//! checkpoint (which never blocks a writer or a reader) whenever 1,000 committed pages are
//! not in the file yet. Writers that never pause can keep a passive checkpoint from ever
//! catching up, and the log only starts over once one has; past 16,000 pages the thread runs
//! a `RESTART` checkpoint instead, which waits for the writer once and lets the next commit
//! start the log over.
//!
//! The thread ends when the saver's last clone is dropped (the commit hook holds the only
//! sender of its wake-ups).

use std::ffi::CStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use crate::error::GraphError;

/// Pages of the log not in the file yet that wake the checkpointer (SQLite's own default).
const PAGES_PER_CHECKPOINT: i64 = 1_000;

/// A log this long after a passive checkpoint gets a restarting one.
const RESTART_PAST: i64 = 16_000;

/// Starts the checkpointer for the database at `path`, and has `conn` (the saver's
/// connection, in WAL mode) wake it from its commits instead of checkpointing itself.
/// `vfs`: the VFS the saver's connection opened the file with (the thread's must lock the
/// same way). The handle ends once `conn`'s hook is dropped and a running checkpoint is done.
pub(super) fn start(
    conn: &mut Connection,
    path: &Path,
    vfs: &CStr,
    busy_timeout: std::time::Duration,
) -> Result<JoinHandle<()>, GraphError> {
    let err = |e: &dyn std::fmt::Display| GraphError::Storage {
        backend: "sqlite",
        detail: format!("starting the WAL checkpointer: {e}"),
    };
    let own = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs)
        .map_err(|e| err(&e))?;
    own.busy_timeout(busy_timeout).map_err(|e| err(&e))?;
    let (wake, woken) = std::sync::mpsc::sync_channel(1);
    let backfilled = Arc::new(AtomicI64::new(0));
    let pages = Pages {
        backfilled: backfilled.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("agentgraph-sqlite-wal".to_owned())
        .spawn(move || run(&own, &woken, &backfilled))
        .map_err(|e| err(&e))?;
    // Replaces SQLite's automatic checkpoint (the same hook).
    conn.wal_hook(Some(hook(pages, wake)))
        .map_err(|e| err(&e))?;
    Ok(thread)
}

/// The commit hook.
fn hook(
    pages: Pages,
    wake: SyncSender<()>,
) -> impl FnMut(&mut rusqlite::hooks::Wal, std::ffi::c_int) -> rusqlite::Result<()> + Send + 'static
{
    move |_, now| {
        if pages.behind(i64::from(now)) {
            match wake.try_send(()) {
                // Full: a wake-up is already pending.
                Ok(()) | Err(TrySendError::Full(())) => {}
                Err(TrySendError::Disconnected(())) => {
                    tracing::warn!("the SQLite WAL checkpointer has stopped");
                }
            }
        }
        Ok(())
    }
}

/// What the checkpointer has moved into the file, as its commits' hook sees it.
struct Pages {
    /// The log's pages in the file after the last checkpoint.
    backfilled: Arc<AtomicI64>,
}

impl Pages {
    /// Whether a commit that left `now` pages in the log leaves enough of them out of the
    /// file to checkpoint.
    fn behind(&self, now: i64) -> bool {
        let backfilled = self.backfilled.load(Ordering::Acquire);
        // A log shorter than what was moved has started over.
        let pending = if now >= backfilled {
            now - backfilled
        } else {
            now
        };
        pending >= PAGES_PER_CHECKPOINT
    }
}

fn run(conn: &Connection, woken: &Receiver<()>, backfilled: &AtomicI64) {
    while woken.recv().is_ok() {
        match checkpoint(conn) {
            Ok(moved) => backfilled.store(moved, Ordering::Release),
            Err(e) => {
                tracing::warn!(error = %e, "a SQLite WAL checkpoint failed; the next commit retries");
            }
        }
    }
}

/// One passive checkpoint, and a restarting one when the log is still long; the log's pages
/// in the file after it.
fn checkpoint(conn: &Connection) -> rusqlite::Result<i64> {
    let pragma = |mode: &str| {
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
            Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
        })
    };
    let (log, moved) = pragma("PASSIVE")?;
    if log > RESTART_PAST {
        return pragma("RESTART").map(|(_, moved)| moved);
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    use super::Pages;

    #[test]
    fn the_checkpointer_wakes_while_a_thousand_committed_pages_are_not_in_the_file() {
        let backfilled = Arc::new(AtomicI64::new(0));
        let pages = Pages {
            backfilled: backfilled.clone(),
        };
        assert!(!pages.behind(999));
        assert!(pages.behind(1_000));
        // Until the checkpointer has moved them, every commit wakes it.
        assert!(pages.behind(1_040));
        backfilled.store(1_040, Ordering::Release);
        assert!(!pages.behind(1_900));
        assert!(pages.behind(2_040));
        // A passive checkpoint that moved little leaves it behind.
        backfilled.store(1_200, Ordering::Release);
        assert!(pages.behind(2_300));
        // The log started over: its length is what is pending.
        assert!(!pages.behind(600));
        assert!(pages.behind(1_100));
    }
}
