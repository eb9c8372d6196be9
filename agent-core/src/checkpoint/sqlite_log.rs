//! The write-ahead log's checkpoints, off the runs' path. SQLite copies its log back into the
//! database file (a *checkpoint*) in the commit that grows the log past 1,000 pages: that
//! commit then writes a couple of MiB and syncs both files (~8 ms on the machine of the
//! README's tables, against ~20 µs for a commit), and the run that made it waits. With a
//! fan-out of subgraphs that was every third run and a third of a process's time.
//!
//! A saver with a file instead has a thread of its own with its own connection run SQLite's
//! checkpoint when a commit reports the log past [`SOFT_PAGES`] (`PASSIVE`, which blocks no
//! one, then `RESTART` for the few pages committed meanwhile, so the log starts over):
//! SQLite's documented way for an application to checkpoint (`sqlite3_wal_hook`,
//! `sqlite3_wal_checkpoint_v2`). The log stays bounded whatever that thread does: a commit that finds the log past [`HARD_PAGES`] (the thread is late or
//! failing), or finds the thread gone, checkpoints itself, as SQLite's automatic checkpoint
//! would. Failures are logged (`tracing`); the data never depends on this thread: a log that
//! is not checkpointed is still the database.

use std::ffi::c_int;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, TrySendError};
use std::time::Duration;

use rusqlite::hooks::Wal;
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};

/// A commit that leaves the log at this many pages or more wakes the checkpointing thread
/// (SQLite's own automatic checkpoint runs at 1,000).
const SOFT_PAGES: c_int = 1_000;

/// A commit that leaves the log at this many pages or more checkpoints it itself.
const HARD_PAGES: c_int = 3_000;

/// How long the thread waits for the write lock, and then for readers to leave the log.
const RESTART_WAIT: Duration = Duration::from_millis(10);

/// What a commit that left `pages` in the log does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterCommit {
    Nothing,
    /// Wake the thread.
    Wake,
    /// Checkpoint on the committing connection.
    Checkpoint,
}

/// The choice, given whether the thread is there to be woken.
fn after_commit(pages: c_int, thread_alive: bool) -> AfterCommit {
    match pages {
        p if p >= HARD_PAGES => AfterCommit::Checkpoint,
        p if p >= SOFT_PAGES && thread_alive => AfterCommit::Wake,
        p if p >= SOFT_PAGES => AfterCommit::Checkpoint,
        _ => AfterCommit::Nothing,
    }
}

/// Starts the checkpointing thread for the file at `path` (opened through `vfs`, as the
/// writer's connection is) and hooks `conn`'s commits to it. Replaces SQLite's automatic
/// checkpoint on `conn`. When the thread cannot start, `conn` keeps checkpointing itself.
pub(super) fn checkpoint_off_path(
    conn: &mut Connection,
    path: &Path,
    vfs: &'static std::ffi::CStr,
) -> rusqlite::Result<()> {
    let (wake, woken) = mpsc::sync_channel::<()>(1);
    let checkpointer = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs)?;
    // `RESTART` holds the write lock while it waits for readers to leave the log: the
    // runs' commits wait at most this long for it. Past it the log starts over later.
    checkpointer.busy_timeout(RESTART_WAIT)?;
    let spawned = std::thread::Builder::new()
        .name("agentgraph-sqlite-log".to_owned())
        .spawn(move || run(checkpointer, woken));
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not start the SQLite log's checkpointing thread; commits checkpoint it themselves");
        return Ok(());
    }
    conn.wal_hook(Some(move |wal: &mut Wal, pages: c_int| {
        if pages < SOFT_PAGES {
            return Ok(());
        }
        // A wake-up already queued serves this commit too.
        let alive = !matches!(wake.try_send(()), Err(TrySendError::Disconnected(())));
        if after_commit(pages, alive) == AfterCommit::Checkpoint
            && let Err(e) = wal.checkpoint()
        {
            // The commit is done: an error here must not make it look failed (SQLite's
            // own automatic checkpoint ignores it too). Busy: the thread is at it.
            tracing::debug!(error = %e, "checkpointing the SQLite log after a commit");
        }
        Ok(())
    }))
}

/// The thread: a checkpoint each time it is woken, until the saver's connection (the only
/// sender) is gone.
fn run(conn: Connection, woken: Receiver<()>) {
    let mut read = false;
    while woken.recv().is_ok() {
        // A connection knows the file is in WAL mode once it has read it (until then a
        // checkpoint answers -1 and does nothing).
        if !read {
            match conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)) {
                Ok(_) => read = true,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the SQLite file to checkpoint its log");
                    continue;
                }
            }
        }
        // The bulk without blocking anyone (`PASSIVE`), then what the runs committed
        // meanwhile with the write lock held until no reader is left in the log (`RESTART`,
        // a short wait for the next commit): the next commit then starts the log over.
        // `PASSIVE` alone chases a writer that never pauses: its next transaction has
        // always begun before the checkpoint ended, so the log never starts over (SQLite's
        // automatic checkpoint runs on the writer's own connection and does not race it).
        let tried = conn
            .wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE)
            .and_then(|_| conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::RESTART));
        match tried {
            Ok(_) => {}
            // Another connection is checkpointing the same log, or readers stayed in it past
            // the wait: the log starts over after a later wake-up.
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy => {}
            Err(e) => {
                tracing::warn!(error = %e, "checkpointing the SQLite log failed; commits checkpoint it themselves past its bound");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_wakes_the_thread_past_the_soft_mark_and_checkpoints_past_the_hard_one() {
        assert_eq!(after_commit(10, true), AfterCommit::Nothing);
        assert_eq!(after_commit(SOFT_PAGES - 1, true), AfterCommit::Nothing);
        assert_eq!(after_commit(SOFT_PAGES, true), AfterCommit::Wake);
        assert_eq!(after_commit(HARD_PAGES - 1, true), AfterCommit::Wake);
        assert_eq!(after_commit(HARD_PAGES, true), AfterCommit::Checkpoint);
    }

    #[test]
    fn without_the_thread_a_commit_checkpoints_as_sqlite_would() {
        assert_eq!(after_commit(SOFT_PAGES - 1, false), AfterCommit::Nothing);
        assert_eq!(after_commit(SOFT_PAGES, false), AfterCommit::Checkpoint);
    }
}
