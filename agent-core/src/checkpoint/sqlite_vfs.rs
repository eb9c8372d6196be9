//! Writes each SQLite commit to the write-ahead log in one system call.
//!
//! SQLite appends a commit to the log frame by frame, and each frame in two writes: its
//! 24-byte header, then the page. A page written after its header straddles two of the
//! kernel's 4 KiB pages, so a commit of two frames costs four `pwrite` calls touching six
//! page-cache pages; one `pwrite` of the same bytes measured 1.6 µs against 4.6-6 µs on the
//! machine the benchmarks run on, a fifth of a small checkpoint's commit.
//!
//! This is a VFS shim over SQLite's own `unix` VFS: every file is SQLite's own except the
//! log, whose writes are gathered in a buffer while they are contiguous and written at once
//! when the commit frame's page arrives (a frame header with a non-zero database size marks
//! the commit). The commit's `xWrite` is the call that writes, so a failed write fails the
//! commit exactly as before. Any other use of the log (a read, sync, truncate, size, file
//! control, close) or a write that does not continue the buffer writes what is buffered
//! first. Frames of a transaction that has not committed are not visible to any reader (the
//! shared index SQLite publishes at commit names only committed frames), so holding them
//! back until the commit changes nothing another connection can see; a crash before the
//! commit loses them as it would lose the transaction.

#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The shim over SQLite's `unix` VFS (files shared with other processes) and over its
/// `unix-excl` VFS (the process holds the file: one lock at the first open, the log's index
/// and its locks in the process's memory, shared by the process's connections).
const SHIMS: [(&CStr, &CStr); 2] = [
    (c"unix", c"agentgraph-wal"),
    (c"unix-excl", c"agentgraph-wal-excl"),
];

/// Buffered bytes past which the buffer is written before taking more.
const BUFFER_LIMIT: usize = 1 << 20;

/// The most one write hands SQLite's own file.
const WRITE_LIMIT: usize = 1 << 16;

/// The name of the shim over `unix` (or, `exclusive`, over `unix-excl`), registered on first
/// use; `None` when SQLite has no such VFS to wrap.
pub(super) fn name(exclusive: bool) -> Option<&'static CStr> {
    static REGISTERED: [OnceLock<bool>; 2] = [OnceLock::new(), OnceLock::new()];
    let (inner, name) = SHIMS[usize::from(exclusive)];
    REGISTERED[usize::from(exclusive)]
        .get_or_init(|| register(inner, name))
        .then_some(name)
}

fn register(inner_name: &CStr, name: &'static CStr) -> bool {
    // SAFETY: `sqlite3_vfs_find` only reads SQLite's VFS list; a VFS it returns lives as long
    // as the process.
    let inner = unsafe { ffi::sqlite3_vfs_find(inner_name.as_ptr()) };
    if inner.is_null() {
        return false;
    }
    // SAFETY: `inner` is a registered VFS (checked above).
    let mut vfs = unsafe { *inner };
    vfs.iVersion = vfs.iVersion.min(3);
    vfs.szOsFile = c_int::try_from(inner_offset())
        .unwrap_or(c_int::MAX)
        .saturating_add(vfs.szOsFile);
    vfs.pNext = std::ptr::null_mut();
    vfs.zName = name.as_ptr();
    vfs.pAppData = inner.cast();
    vfs.xOpen = Some(open);
    // The `unix` VFSes' other methods ignore the VFS they are given (checked in SQLite's
    // source), so they are shared as they are; `open` hands SQLite the inner VFS, whose name
    // decides the locking (`unix-excl`).
    let vfs: &'static mut ffi::sqlite3_vfs = Box::leak(Box::new(vfs));
    // SAFETY: `vfs` is valid for the rest of the process and fully initialised.
    unsafe { ffi::sqlite3_vfs_register(vfs, 0) == ffi::SQLITE_OK }
}

/// A log file: SQLite's own file follows this struct in the same allocation.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    /// Bytes not written yet, starting at file offset `start`.
    buf: Vec<u8>,
    start: i64,
    /// A commit frame's header is buffered: its page is the last write of the commit.
    commit: bool,
}

/// Where SQLite's own file starts in the allocation (8-byte aligned, as SQLite's are).
const fn inner_offset() -> usize {
    std::mem::size_of::<WalFile>().next_multiple_of(8)
}

fn inner_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: only called with the shim's VFS, whose `pAppData` is the `unix` VFS.
    unsafe { (*vfs).pAppData.cast() }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let inner = inner_vfs(vfs);
    // SAFETY: `inner` is the `unix` VFS; `file` has `szOsFile` bytes, at least the inner's.
    let Some(inner_open) = (unsafe { (*inner).xOpen }) else {
        return ffi::SQLITE_ERROR;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Every other file is SQLite's own, in place.
        // SAFETY: as above; SQLite's file starts at `file`.
        return unsafe { inner_open(inner, name, file, flags, out_flags) };
    }
    // SAFETY: the allocation holds a `WalFile` and then SQLite's file (`szOsFile`).
    unsafe {
        let real = file
            .cast::<u8>()
            .add(inner_offset())
            .cast::<ffi::sqlite3_file>();
        let rc = inner_open(inner, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            (*file).pMethods = std::ptr::null();
            return rc;
        }
        file.cast::<WalFile>().write(WalFile {
            base: ffi::sqlite3_file {
                pMethods: &WAL_METHODS,
            },
            inner: real,
            buf: Vec::new(),
            start: 0,
            commit: false,
        });
        ffi::SQLITE_OK
    }
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The shim's state behind a log file SQLite hands back.
///
/// # Safety
/// `file` was opened by [`open`] for a log and not closed yet.
unsafe fn wal<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    // SAFETY: per the contract, `file` starts with an initialised `WalFile`; SQLite uses a
    // file from one thread at a time.
    unsafe { &mut *file.cast::<WalFile>() }
}

/// SQLite's own methods for the log.
fn methods(w: &WalFile) -> &'static ffi::sqlite3_io_methods {
    // SAFETY: the inner file was opened successfully, so its methods are set and static.
    unsafe { &*(*w.inner).pMethods }
}

impl WalFile {
    /// Writes what is buffered.
    fn flush(&mut self) -> c_int {
        if self.buf.is_empty() {
            return ffi::SQLITE_OK;
        }
        let Some(write) = methods(self).xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let mut rc = ffi::SQLITE_OK;
        let mut at = self.start;
        // SQLite's `unix` write takes at most 128 KiB a call.
        for chunk in self.buf.chunks(WRITE_LIMIT) {
            // SAFETY: the inner file is open; `chunk` holds its length (≤ `WRITE_LIMIT`).
            rc = unsafe { write(self.inner, chunk.as_ptr().cast(), chunk.len() as c_int, at) };
            if rc != ffi::SQLITE_OK {
                break;
            }
            at += chunk.len() as i64;
        }
        // Written or failed, the bytes are the caller's to write again (SQLite rewrites a
        // failed commit's frames when it next commits).
        self.buf.clear();
        self.commit = false;
        rc
    }

    fn end(&self) -> i64 {
        self.start + self.buf.len() as i64
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls with a log file opened by `open` and `amount` readable bytes.
    let (w, bytes) = unsafe {
        (
            wal(file),
            std::slice::from_raw_parts(data.cast::<u8>(), usize::try_from(amount).unwrap_or(0)),
        )
    };
    // Bytes that do not continue the buffer (a frame rewritten in place, the log's header
    // after it starts over) or would take it past its bound write it out first, so the
    // file sees every write in SQLite's order.
    if !w.buf.is_empty() && (offset != w.end() || w.buf.len() + bytes.len() > BUFFER_LIMIT) {
        let rc = w.flush();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if w.buf.is_empty() {
        w.start = offset;
    }
    w.buf.extend_from_slice(bytes);
    // A frame header (24 bytes) whose second word, the database size after the commit, is
    // not zero: the next write is the commit's last page.
    if bytes.len() == 24 {
        w.commit = bytes[4..8] != [0; 4];
        return ffi::SQLITE_OK;
    }
    if w.commit {
        return w.flush();
    }
    ffi::SQLITE_OK
}

/// Calls SQLite's own method of the log with the caller's arguments (`None`: the method is
/// missing); `flush` writes what is buffered first.
macro_rules! forward {
    (flush $file:expr, $method:ident($($arg:expr),*)) => {{
        // SAFETY: SQLite calls with a log file opened by `open`.
        let w = unsafe { wal($file) };
        let rc = w.flush();
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        forward!(w, $method($($arg),*)).unwrap_or(ffi::SQLITE_ERROR)
    }};
    ($w:ident, $method:ident($($arg:expr),*)) => {
        // SAFETY: the inner file is open and takes the caller's arguments as they are.
        methods($w).$method.map(|f| unsafe { f($w.inner $(, $arg)*) })
    };
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    data: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    forward!(flush file, xRead(data, amount, offset))
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    forward!(flush file, xTruncate(size))
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    forward!(flush file, xSync(flags))
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    forward!(flush file, xFileSize(size))
}

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    forward!(flush file, xFileControl(op, arg))
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(flush file, xLock(level))
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(flush file, xUnlock(level))
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(flush file, xCheckReservedLock(out))
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls with a log file opened by `open`.
    let w = unsafe { wal(file) };
    forward!(w, xSectorSize()).unwrap_or(4096)
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls with a log file opened by `open`.
    let w = unsafe { wal(file) };
    forward!(w, xDeviceCharacteristics()).unwrap_or(0)
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls with a log file opened by `open`, once, last.
    let w = unsafe { wal(file) };
    let flushed = w.flush();
    let closed = forward!(w, xClose()).unwrap_or(ffi::SQLITE_OK);
    // SAFETY: the `WalFile` was written by `open` and is not used after this.
    unsafe { std::ptr::drop_in_place(file.cast::<WalFile>()) };
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, OpenFlags, params};

    use super::name;

    /// A fresh directory for one test's files.
    fn dir(test: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("agentgraph-vfs-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn shimmed(path: &std::path::Path) -> Connection {
        let shim = name(false).unwrap();
        let conn = Connection::open_with_flags_and_vfs(path, OpenFlags::default(), shim).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        conn
    }

    fn sums(conn: &Connection) -> (i64, i64) {
        conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(v)), 0) FROM t",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    }

    /// A commit is in the log file when `COMMIT` returns: a copy of the files taken then
    /// (what a crash right after it leaves) recovers it, and so does a connection that does
    /// not use the shim.
    #[test]
    fn a_commit_is_in_the_file_when_it_returns() {
        let dir = dir("commit");
        let path = dir.join("a.sqlite");
        let conn = shimmed(&path);
        conn.execute_batch(
            "PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);",
        )
        .unwrap();
        for i in 0..50_i64 {
            conn.execute(
                "INSERT INTO t VALUES (?1, ?2)",
                params![i, vec![i as u8; 300 * i as usize]],
            )
            .unwrap();
        }
        let plain = Connection::open(&path).unwrap();
        assert_eq!(sums(&plain), (50, 300 * 49 * 50 / 2));
        let copy = dir.join("copy.sqlite");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(dir.join("a.sqlite-wal"), dir.join("copy.sqlite-wal")).unwrap();
        let recovered = Connection::open(&copy).unwrap();
        assert_eq!(sums(&recovered), (50, 300 * 49 * 50 / 2));
        assert_eq!(
            recovered
                .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
                .unwrap(),
            "ok"
        );
        drop((conn, plain, recovered));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Transactions larger than the page cache write frames before their commit (and rewrite
    /// them when a spilled page changes again); one rolled back, one committed past the
    /// buffer's bound, the log reads back whole from another connection and after reopening.
    #[test]
    fn spilled_rewritten_and_rolled_back_frames_leave_a_sound_log() {
        let dir = dir("spill");
        let path = dir.join("b.sqlite");
        let conn = shimmed(&path);
        conn.execute_batch(
            "PRAGMA cache_size=8; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB);",
        )
        .unwrap();
        let fill = |conn: &Connection, from: i64, to: i64, byte: u8| {
            for i in from..to {
                conn.execute(
                    "INSERT OR REPLACE INTO t VALUES (?1, ?2)",
                    params![i, vec![byte; 3_000]],
                )
                .unwrap();
            }
        };
        conn.execute_batch("BEGIN").unwrap();
        fill(&conn, 0, 600, 1);
        fill(&conn, 0, 600, 2);
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(sums(&conn), (0, 0));
        conn.execute_batch("BEGIN").unwrap();
        fill(&conn, 0, 500, 3);
        fill(&conn, 100, 400, 4);
        conn.execute_batch("COMMIT").unwrap();
        // Smaller than the buffer: the spilled frames rewritten are still buffered.
        conn.execute_batch("BEGIN").unwrap();
        fill(&conn, 500, 600, 5);
        fill(&conn, 500, 600, 6);
        conn.execute_batch("COMMIT").unwrap();
        let expect = (600, 600 * 3_000);
        assert_eq!(sums(&conn), expect);
        let with = |byte: u8| -> i64 {
            conn.query_row(
                "SELECT COUNT(*) FROM t WHERE v = ?1",
                params![vec![byte; 3_000]],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!((with(3), with(4), with(5), with(6)), (200, 300, 0, 100));
        assert_eq!(sums(&Connection::open(&path).unwrap()), expect);
        drop(conn);
        let reopened = shimmed(&path);
        assert_eq!(sums(&reopened), expect);
        assert_eq!(
            reopened
                .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
                .unwrap(),
            "ok"
        );
        drop(reopened);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
