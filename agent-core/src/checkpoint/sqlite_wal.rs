//! Moves a SQLite database's write-ahead log into the database file on a thread of its own.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the log past 1,000 pages:
//! that commit copies every page written since the last checkpoint into the database file and
//! waits for the file to reach the disk (`fsync`), milliseconds and, after a large checkpoint,
//! tens of them, on whatever run's step made the commit. The saver turns it off and this
//! thread, with a connection of its own, does the same work off the runs' path: a `PASSIVE`
//! checkpoint (which never blocks a writer or a reader) whenever 1,000 committed pages are
//! not in the file yet.
//!
//! The log starts over (its next frame written at its start, over pages the kernel still
//! caches) only when a write transaction begins with every frame in the file. A writer that
//! never pauses begins each transaction while the thread's checkpoint runs, so the log only
//! grew (to 125 MB in a test, and the file stays that long). So the writer finishes the job
//! ([`Log::start_over`]): before a write transaction on a log past 4,000 pages, its own
//! connection moves what the thread has not yet (the frames committed since the thread's
//! last checkpoint, a few hundred at most), and the transaction starts the log over. It does
//! so when the thread is not checkpointing (the two would take turns); should it never find
//! the thread idle, past 16,000 pages the thread runs a `RESTART` checkpoint, which waits for
//! the writer once and lets its next commit start over.
//!
//! The thread ends when the saver's last clone is dropped (the commit hook holds the only
//! sender of its wake-ups).

use std::ffi::CStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use crate::error::GraphError;

/// Pages of the log not in the file yet that wake the checkpointer (SQLite's own default).
const PAGES_PER_CHECKPOINT: i64 = 1_000;

/// A log this long starts over at the next write transaction.
const START_OVER_PAST: i64 = 4_000;

/// A log this long after a passive checkpoint gets a restarting one from the thread (which
/// waits for the writer once): the writer found the thread checkpointing every time it looked.
const RESTART_PAST: i64 = 16_000;

/// The log as the saver's commits leave it, and the checkpointer thread (joined when dropped).
pub(super) struct Log {
    /// Frames in the log after the last commit.
    frames: Arc<AtomicI64>,
    /// The log's length when the writer last tried to start it over.
    tried: AtomicI64,
    /// Set while the thread checkpoints.
    running: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Log {
    /// Whether the log is long enough to start over before the next write transaction (a
    /// copy and two syncs: the caller runs it off the async workers), and the thread is not
    /// checkpointing (it would keep the writer's checkpoint from running). When a checkpoint
    /// ran and the log did not start over (another process reads an old snapshot), the log
    /// is tried again after another 1,000 frames.
    pub(super) fn due(&self) -> bool {
        let frames = self.frames.load(Ordering::Relaxed);
        let tried = self.tried.load(Ordering::Relaxed);
        frames > START_OVER_PAST
            && (frames < tried || frames - tried >= PAGES_PER_CHECKPOINT)
            && !self.running.load(Ordering::Acquire)
    }

    /// Called by the saver's connection before a write transaction: when [`due`](Self::due),
    /// moves what is not in the file yet (what the thread's last checkpoint left: the
    /// frames committed while it ran), so that the transaction starts the log over.
    pub(super) fn start_over(&self, conn: &Connection) {
        if !self.due() {
            return;
        }
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            row.get::<_, i64>(0)
        }) {
            // The thread began one meanwhile: the next transaction tries again.
            Ok(1) => {}
            Ok(_) => self
                .tried
                .store(self.frames.load(Ordering::Relaxed), Ordering::Relaxed),
            Err(e) => tracing::warn!(error = %e, "a SQLite WAL checkpoint failed"),
        }
    }
}

/// Waits for the thread (it ends once the saver's connection, holding its wake-ups, is
/// closed: the saver drops its connection first).
impl Drop for Log {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the SQLite log thread panicked");
        }
    }
}

/// Starts the checkpointer for the database at `path`, and has `conn` (the saver's
/// connection, in WAL mode) wake it from its commits instead of checkpointing itself.
/// `vfs`: the VFS the saver's connection opened the file with (the thread's must lock the
/// same way). The thread ends once `conn`'s hook is dropped and a running checkpoint is done.
pub(super) fn start(
    conn: &mut Connection,
    path: &Path,
    vfs: &CStr,
    busy_timeout: std::time::Duration,
) -> Result<Log, GraphError> {
    let err = |e: &dyn std::fmt::Display| GraphError::Storage {
        backend: "sqlite",
        detail: format!("starting the WAL checkpointer: {e}"),
    };
    let own = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs)
        .map_err(|e| err(&e))?;
    own.busy_timeout(busy_timeout).map_err(|e| err(&e))?;
    let (wake, woken) = std::sync::mpsc::sync_channel(1);
    let backfilled = Arc::new(AtomicI64::new(0));
    let frames = Arc::new(AtomicI64::new(0));
    let running = Arc::new(AtomicBool::new(false));
    let pages = Pages {
        backfilled: backfilled.clone(),
        frames: frames.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("agentgraph-sqlite-wal".to_owned())
        .spawn({
            let running = running.clone();
            move || run(&own, &woken, &backfilled, &running)
        })
        .map_err(|e| err(&e))?;
    // Replaces SQLite's automatic checkpoint (the same hook).
    conn.wal_hook(Some(hook(pages, wake)))
        .map_err(|e| err(&e))?;
    Ok(Log {
        frames,
        tried: AtomicI64::new(0),
        running,
        thread: Some(thread),
    })
}

/// The commit hook.
fn hook(
    pages: Pages,
    wake: SyncSender<()>,
) -> impl FnMut(&mut rusqlite::hooks::Wal, std::ffi::c_int) -> rusqlite::Result<()> + Send + 'static
{
    move |_, now| {
        pages.frames.store(i64::from(now), Ordering::Relaxed);
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
    /// The log's length after the last commit (read by [`Log::start_over`]).
    frames: Arc<AtomicI64>,
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

fn run(conn: &Connection, woken: &Receiver<()>, backfilled: &AtomicI64, running: &AtomicBool) {
    while woken.recv().is_ok() {
        running.store(true, Ordering::Release);
        let moved = checkpoint(conn);
        running.store(false, Ordering::Release);
        match moved {
            Ok(moved) => backfilled.store(moved, Ordering::Release),
            Err(e) => {
                tracing::warn!(error = %e, "a SQLite WAL checkpoint failed; the next commit retries");
            }
        }
    }
}

/// One passive checkpoint, and a restarting one when the log is still very long (the writer
/// never found the thread idle); the log's pages in the file after it.
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
            frames: Arc::default(),
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
