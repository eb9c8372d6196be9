//! A small file the operator edits while the server runs (a keys file, a JWKS file): read
//! at start — a file that cannot be used stops the start — and read again on use when its
//! time or size changed, looked at most once a second. A change that no longer parses
//! keeps what was read before and says so in the log, so a half-written file never locks
//! everyone out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::Mutex;

/// How often the file is looked at for changes.
pub(super) const RECHECK: Duration = Duration::from_secs(1);

/// The largest file read: these files list keys, they are not data sets.
const MAX_FILE: u64 = 4 * 1024 * 1024;

/// Parses a file's text; its error says where, never what the file holds (it holds keys).
pub(super) type Parse<T> = fn(&str) -> Result<T, String>;

pub(super) struct Watched<T> {
    path: PathBuf,
    parse: Parse<T>,
    state: Mutex<State<T>>,
}

struct State<T> {
    value: T,
    stamp: Option<(SystemTime, u64)>,
    pub(super) checked: Instant,
}

impl<T> Watched<T> {
    /// Reads `path` now.
    pub(super) async fn open(path: PathBuf, parse: Parse<T>) -> Result<Self, String> {
        let stamp = stamp_of(&path).await;
        let value = read(&path, parse).await?;
        Ok(Watched {
            path,
            parse,
            state: Mutex::new(State {
                value,
                stamp,
                checked: Instant::now(),
            }),
        })
    }

    /// `f` of what the file holds now (read again first if it changed).
    pub(super) async fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        let mut state = self.state.lock().await;
        if state.checked.elapsed() >= RECHECK {
            state.checked = Instant::now();
            let stamp = stamp_of(&self.path).await;
            if stamp != state.stamp {
                state.stamp = stamp;
                match read(&self.path, self.parse).await {
                    Ok(value) => {
                        tracing::info!(path = %self.path.display(), "read again after a change");
                        state.value = value;
                    }
                    Err(e) => tracing::error!(
                        path = %self.path.display(), error = %e,
                        "changed but cannot be used; keeping what was read before"
                    ),
                }
            }
        }
        f(&state.value)
    }

    /// Makes the next use look at the file (tests).
    #[cfg(test)]
    pub(super) async fn expire(&self) {
        let mut state = self.state.lock().await;
        state.checked = Instant::now() - RECHECK;
    }
}

async fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

async fn read<T>(path: &Path, parse: Parse<T>) -> Result<T, String> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return Err(format!("not a regular file of at most {MAX_FILE} bytes"));
    }
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    parse(&text)
}

/// Where in `text` a parser's byte offset falls, as ` at line N` (a message that names the
/// line without quoting it).
pub(super) fn at_line(text: &str, offset: Option<usize>) -> String {
    offset
        .map(|o| {
            let line = text[..o.min(text.len())].matches('\n').count() + 1;
            format!(" at line {line}")
        })
        .unwrap_or_default()
}
