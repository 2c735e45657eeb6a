//! SQLite in the caller's thread, for the statements every turn makes.
//!
//! sqlx runs each SQLite connection on a thread of its own and hands it
//! every statement over a channel: a statement costs two thread wake-ups
//! (there and back), a pooled one two more (the pool pings a connection
//! when it comes back), and `BEGIN`/`COMMIT` block that thread until the
//! caller's task is polled again. On a busy two-core server those hops, not
//! SQLite, set the pace of a turn (BENCHMARKS.md, "The chat API, round 3").
//! A turn's own writes — its start, its checkpoints, its end — and the
//! reads every turn makes (its tools' orders, its customer's memories),
//! and the inbox and the conversation every console page shows (the
//! conversation's reads in one snapshot), therefore run here instead, in
//! the caller's thread, a whole transaction at a time: the writes on one
//! connection of ours to the same file, the reads on another beside it (in
//! WAL mode a read never waits for a write, nor a write for a read). With
//! `synchronous = NORMAL` a commit appends to the log without an fsync, so
//! a transaction takes microseconds.
//!
//! Nothing here parks an async worker. Each connection is shared behind an
//! async mutex: a task that finds it in use waits as a task, and its worker
//! runs other tasks meanwhile (a thread lock parked one of the two workers
//! of a small server for every turn that wrote at the same time as
//! another: BENCHMARKS.md, round 12). Nor does the connection wait for
//! SQLite's write lock in the caller's thread: that would park a worker
//! while the holder — a sqlx transaction of another store, driven by a task
//! that needs a worker to make progress — could not move. When the lock is
//! taken, the transaction is given up at once (`BEGIN IMMEDIATE` takes the
//! lock before anything is done) and tried again after an async pause, up
//! to [`BUSY_TIMEOUT`], as long as sqlx's connections would wait.
//!
//! A long read, which would hold the reader (or sqlx's one pooled
//! connection) for a long time, gets a connection of its own instead, on
//! a blocking thread ([`Direct::read_apart`]).
//!
//! Values are written the way sqlx writes them (timestamps as RFC 3339
//! text, JSON as text, booleans as integers), so either driver reads what
//! the other wrote. The functions that use this connection have two
//! bodies, this one for SQLite and sqlx's for PostgreSQL, over the same
//! SQL text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use aics_sqlite_vfs::Access;
use aics_types::Timestamp;
use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use tokio::sync::Mutex;

use crate::DbError;

mod tx;
mod writer;

use tx::Begin;
pub(crate) use tx::Tx;

/// How long a write may wait for another connection's write lock, as long
/// as sqlx's `busy_timeout` (crate docs, "Durability").
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The first pause after finding the lock taken; each next one doubles, up
/// to [`MAX_PAUSE`], which is short: a write held off by a sqlx write or by
/// the checkpointer's rewind goes on within milliseconds of its end.
const FIRST_PAUSE: Duration = Duration::from_micros(250);
const MAX_PAUSE: Duration = Duration::from_millis(4);
/// Prepared statements kept per connection: every statement of the turn's
/// path fits.
const STATEMENT_CACHE: usize = 64;

/// The direct connection of one SQLite file (shared by every clone of the
/// [`crate::Database`] that opened it).
pub(crate) struct Direct {
    /// The write connection and its writes, combined ([`writer`]).
    writer: Arc<writer::Writer>,
    /// The connection of [`Direct::read`] on a file (`None` in memory: the
    /// reads share `conn`). In WAL mode it reads beside the writes, so a
    /// turn's tools never queue behind another turn's commit.
    reader: Option<Reader>,
    /// The log's rewinds so far ([`Direct::rewind_log`]).
    rewinds: AtomicU64,
}

/// The reads' connection to a file, and the file, which long reads open
/// again ([`Direct::read_apart`]).
struct Reader {
    conn: Mutex<Option<Connection>>,
    file: PathBuf,
    /// The access the file was opened with, which every connection of the
    /// process to it shares.
    access: Access,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").finish_non_exhaustive()
    }
}

impl Direct {
    /// Opens the database sqlx's pool opens as `filename` (created and
    /// migrated by sqlx) with the crate's SQLite settings. An in-memory
    /// database (sqlx names it `file:sqlx-in-memory-N` and shares its
    /// cache within the process) is opened as the same shared database.
    /// A file is opened with `access`, the pool's.
    pub(crate) fn open(filename: &Path, access: Access) -> Result<Self, DbError> {
        let name = filename.to_string_lossy();
        if name.starts_with("file:sqlx-in-memory-") {
            // One connection: a second one to a shared-cache database
            // would wait on the first one's table locks, not read beside it.
            return Ok(Self::with(connect(filename, access)?, None));
        }
        Ok(Self::with(
            connect(filename, access)?,
            Some(Reader {
                conn: Mutex::new(Some(connect(filename, access)?)),
                file: filename.to_owned(),
                access,
            }),
        ))
    }

    fn with(conn: Connection, reader: Option<Reader>) -> Self {
        Self {
            writer: writer::Writer::new(conn),
            reader,
            rewinds: AtomicU64::new(0),
        }
    }

    /// Closes the connections once the transactions in progress, if any,
    /// have ended; later calls fail as on a closed pool.
    pub(crate) async fn close(&self) {
        drop(self.writer.conn.lock().await.take());
        if let Some(reader) = &self.reader {
            drop(reader.conn.lock().await.take());
        }
    }

    /// Copies the whole log back into the database file between two of
    /// this connection's transactions and rewinds it (`RESTART`), so that
    /// the next commit writes the log from its beginning (crate::wal). The
    /// turns' writes wait for it as tasks; the copy and its fsync run on a
    /// blocking thread. Answers whether the log was rewound: not when a
    /// sqlx connection was writing or a reader still read the old log (the
    /// checkpointer tries again on its next pass).
    pub(crate) async fn rewind_log(&self) -> Result<bool, DbError> {
        let mut conn = self.writer.conn.clone().lock_owned().await;
        let rewound = tokio::task::spawn_blocking(move || {
            let conn = conn
                .as_mut()
                .ok_or(DbError::Sqlx(sqlx::Error::PoolClosed))?;
            let busy: i64 =
                conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |row| row.get(0))?;
            Ok::<_, DbError>(busy == 0)
        })
        .await
        .map_err(|e| DbError::Corrupt(format!("the log's rewind stopped: {e}")))??;
        if rewound {
            self.rewinds.fetch_add(1, Ordering::Relaxed);
        }
        Ok(rewound)
    }

    /// How many times [`Direct::rewind_log`] rewound the log.
    pub(crate) fn rewinds(&self) -> u64 {
        self.rewinds.load(Ordering::Relaxed)
    }

    /// Runs `f` in a write transaction (`BEGIN IMMEDIATE` … `COMMIT`),
    /// alone or beside other callers' writes ([`writer`]): all of it or
    /// none. Answers once what it wrote committed. `f` may run more than
    /// once (when the write lock was taken before it began, when another
    /// write of its transaction failed or rolled back, or when a shared
    /// transaction failed as a whole);
    /// an error from `f` rolls back what it wrote and is returned.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        self.transact(move |tx| f(tx).map(Keep::Commit)).await
    }

    /// [`Direct::write`] where `f` may also decide to roll back and still
    /// answer ([`Keep::RollBack`]).
    pub(crate) async fn transact<T: Send + 'static>(
        &self,
        f: impl FnMut(&Tx<'_>) -> Result<Keep<T>, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        self.writer.transact(f).await
    }

    /// Runs `f`, which only reads, in one read transaction: its statements
    /// see one snapshot of the file, and in WAL mode no writer waits for
    /// it nor it for a writer. The reads of every turn (the tools' orders,
    /// the customer's memories) come here, which saves each statement its
    /// two hops to sqlx's connection thread.
    pub(crate) async fn read<T>(
        &self,
        mut f: impl FnMut(&Tx<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let conn = self
            .reader
            .as_ref()
            .map_or(&*self.writer.conn, |reader| &reader.conn);
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            // A panic inside a transaction rolled it back (the transaction
            // guard's drop) and released the lock; the connection is as
            // good as before.
            let outcome = {
                let mut conn = conn.lock().await;
                try_read(conn.as_mut(), &mut f)
            };
            match outcome {
                Err(DbError::Sqlite(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_PAUSE);
                }
                outcome => return outcome,
            }
        }
    }

    /// Runs `f`, a long read (the overview's pass over a month of turns),
    /// in one read transaction on a connection opened for it alone, on a
    /// blocking thread: it holds neither sqlx's one pooled connection nor
    /// the turns' reader while it reads, and no async worker waits for it.
    /// At most [`APART_AT_ONCE`] run at a time in the process. An in-memory
    /// database has one connection, so `f` runs on it ([`Direct::read`]).
    pub(crate) async fn read_apart<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&Tx<'_>) -> Result<T, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        static APART: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(APART_AT_ONCE);
        let Some(reader) = &self.reader else {
            return self.read(f).await;
        };
        // The semaphore is never closed.
        let turn = APART
            .acquire()
            .await
            .map_err(|e| DbError::Corrupt(format!("a read stopped: {e}")))?;
        let (file, access) = (reader.file.clone(), reader.access);
        tokio::task::spawn_blocking(move || {
            // Held by the read, even if its caller stops waiting.
            let _turn = turn;
            let mut conn = connect(&file, access)?;
            // It never writes: a lock held by a writer is waited for here,
            // on a thread of its own, as sqlx's connections wait.
            conn.busy_timeout(BUSY_TIMEOUT)?;
            try_read(Some(&mut conn), &mut f)
        })
        .await
        .map_err(|e| DbError::Corrupt(format!("a read stopped: {e}")))?
    }
}

/// Long reads at a time ([`Direct::read_apart`]): each holds a blocking
/// thread and one of the log's few read marks, which keeps the log from
/// being rewound past the snapshot it reads; more wait for their turn.
const APART_AT_ONCE: usize = 2;

/// One connection to `filename` with the crate's SQLite settings, through
/// the VFS of `access` (a file's; an in-memory database has no VFS of
/// ours).
fn connect(filename: &Path, access: Access) -> Result<Connection, DbError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let name = filename.to_string_lossy();
    let conn = if name.starts_with("file:sqlx-in-memory-") {
        Connection::open_with_flags(
            format!("{name}?mode=memory&cache=shared"),
            flags | OpenFlags::SQLITE_OPEN_MEMORY | OpenFlags::SQLITE_OPEN_SHARED_CACHE,
        )?
    } else {
        // The platform's VFS, whose log writes each commit's frames at once
        // (aics-sqlite-vfs): a commit here is mostly system calls.
        Connection::open_with_flags_and_vfs(filename, flags, aics_sqlite_vfs::register(access)?)?
    };
    // WAL is a property of the file (`Database::connect` sets it; a
    // pool made elsewhere, as in tests, gets it here). Without it a
    // commit waits for every reader, and this connection, which never
    // waits for a lock in the caller's thread, could starve.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
        return Err(DbError::Corrupt(format!(
            "the SQLite database stays in journal mode {mode:?}, not WAL (another connection holds it)"
        )));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "wal_autocheckpoint", crate::wal::AUTOCHECKPOINT_PAGES)?;
    // A shared transaction's savepoints, when it needs them ([`writer`]),
    // and SQLite's statement journals keep the pages they would restore
    // in memory, not in a temporary file.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Never wait for the lock here (module docs): fail at once.
    conn.busy_timeout(Duration::ZERO)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// One try of a read transaction on `conn` (`None`: closed).
fn try_read<T>(
    conn: Option<&mut Connection>,
    f: &mut impl FnMut(&Tx<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let conn = conn.ok_or(DbError::Sqlx(sqlx::Error::PoolClosed))?;
    let tx = Tx::begin(conn, Begin::Deferred)?;
    // Dropping the transaction ends it (rolls back: nothing was written).
    f(&tx)
}

/// What a transaction's body decided.
pub(crate) enum Keep<T> {
    /// Commit what it wrote, and answer this.
    Commit(T),
    /// Roll back what it wrote, and answer this.
    RollBack(T),
}

/// Prepares `sql`, written with sqlx's `$N` placeholders, once per
/// connection. SQLite reads `$N` as a *named* parameter, numbered by where
/// it first appears (`SET a = $3 … WHERE id = $1` would bind the first
/// value to `a`); `?N` is the number itself, which is what sqlx means.
///
/// The rewritten text is made once per statement (the statements are
/// constants) and kept for the process's life.
pub(crate) fn prepare<'c>(
    tx: &'c Tx<'_>,
    sql: &'static str,
) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
    static NUMBERED: OnceLock<RwLock<HashMap<usize, &'static str>>> = OnceLock::new();
    let texts = NUMBERED.get_or_init(RwLock::default);
    let key = sql.as_ptr() as usize;
    let known = texts
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .copied();
    let text = match known {
        Some(text) => text,
        None => *texts
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert_with(|| Box::leak(numbered(sql).into_boxed_str())),
    };
    tx.prepare_cached(text)
}

/// Every row `sql` answers with `params`, each read by `read`.
pub(crate) fn all<T>(
    tx: &Tx<'_>,
    sql: &'static str,
    params: impl rusqlite::Params,
    mut read: impl FnMut(&rusqlite::Row<'_>) -> Result<T, DbError>,
) -> Result<Vec<T>, DbError> {
    let mut query = prepare(tx, sql)?;
    let mut rows = query.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(read(row)?);
    }
    Ok(out)
}

/// The first row `sql` answers with `params`, if any, read by `read`.
pub(crate) fn first<T>(
    tx: &Tx<'_>,
    sql: &'static str,
    params: impl rusqlite::Params,
    read: impl FnOnce(&rusqlite::Row<'_>) -> Result<T, DbError>,
) -> Result<Option<T>, DbError> {
    let mut query = prepare(tx, sql)?;
    let mut rows = query.query(params)?;
    rows.next()?.map(read).transpose()
}

/// `sql` with each `$N` placeholder written `?N`.
pub(crate) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether SQLite refused because another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// A timestamp as sqlx writes one to SQLite (RFC 3339, as many fraction
/// digits as needed), so that text comparisons and sqlx's reads agree.
pub(crate) fn ts(t: Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// A timestamp as stored by either driver (or by SQLite's own
/// `CURRENT_TIMESTAMP`).
pub(crate) fn read_ts(text: &str) -> Result<Timestamp, DbError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        .map(|t| t.and_utc())
        .map_err(|e| DbError::Corrupt(format!("timestamp {text:?}: {e}")))
}

/// A value as sqlx's `Json` writes it to SQLite: JSON text.
pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, DbError> {
    serde_json::to_string(value).map_err(|e| DbError::Corrupt(format!("unserialisable value: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh file in a folder of its own, with a table `t` holding 7.
    async fn seven() -> (std::path::PathBuf, Direct) {
        let dir =
            std::env::temp_dir().join(format!("aics-direct-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("test folder");
        let direct = Direct::open(&dir.join("direct.db"), Access::Shared).expect("test database");
        direct
            .write(|tx| {
                tx.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7)")?;
                Ok(())
            })
            .await
            .expect("test database");
        (dir, direct)
    }

    /// The bundled SQLite is built as `.cargo/config.toml` says: without the
    /// global locks of memory statistics and of one shared page cache. A
    /// build that misses that file (cargo run from outside the workspace)
    /// fails here instead of running slower unseen.
    #[test]
    fn sqlite_is_built_without_its_global_locks() {
        let conn = Connection::open_in_memory().expect("in-memory database");
        let mut statement = conn.prepare("PRAGMA compile_options").expect("pragma");
        let options: Vec<String> = statement
            .query_map([], |row| row.get(0))
            .expect("compile options")
            .collect::<Result<_, _>>()
            .expect("compile options");
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "SQLite keeps memory statistics: {options:?}"
        );
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "SQLite shares one page cache between connections: {options:?}"
        );
    }

    #[tokio::test]
    async fn a_read_does_not_wait_for_the_write_connection() {
        let (dir, direct) = seven().await;
        // A write in progress (or queued) holds the write connection.
        let held = direct.writer.conn.lock().await;
        let n: i64 = tokio::time::timeout(
            Duration::from_secs(5),
            direct.read(|tx| Ok(tx.query_row("SELECT n FROM t", [], |row| row.get(0))?)),
        )
        .await
        .expect("the read waited for the write connection")
        .expect("test database");
        assert_eq!(n, 7);
        drop(held);
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Long reads run beside a held write connection, on connections of
    /// their own, and no more than [`APART_AT_ONCE`] at a time.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn long_reads_run_apart_a_few_at_a_time() {
        use std::sync::atomic::AtomicUsize;
        use std::sync::mpsc;

        let (dir, direct) = seven().await;
        let direct = Arc::new(direct);
        let held = direct.writer.conn.lock().await;
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut releases = Vec::new();
        let mut reads = Vec::new();
        for _ in 0..APART_AT_ONCE + 1 {
            let (release, wait) = mpsc::channel::<()>();
            releases.push(release);
            let direct = direct.clone();
            let (inside, most) = (inside.clone(), most.clone());
            reads.push(tokio::spawn(async move {
                direct
                    .read_apart(move |tx| {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        let n: i64 = tx.query_row("SELECT n FROM t", [], |row| row.get(0))?;
                        let _ = wait.recv_timeout(Duration::from_secs(10));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        Ok(n)
                    })
                    .await
            }));
        }
        // The first ones read while the write connection is held.
        while inside.load(Ordering::SeqCst) < APART_AT_ONCE {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(most.load(Ordering::SeqCst), APART_AT_ONCE, "one more waits");
        for release in releases {
            let _ = release.send(());
        }
        for read in reads {
            assert_eq!(read.await.expect("joined").expect("read"), 7);
        }
        assert_eq!(most.load(Ordering::SeqCst), APART_AT_ONCE);
        drop(held);
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn placeholders_keep_their_numbers() {
        assert_eq!(
            numbered("UPDATE t SET a = $3, b = '$' WHERE id = $1 AND o = $12"),
            "UPDATE t SET a = ?3, b = '$' WHERE id = ?1 AND o = ?12"
        );
    }

    #[test]
    fn timestamps_read_back_in_every_stored_form() {
        let t = DateTime::parse_from_rfc3339("2026-12-02T01:02:03.456789+00:00")
            .map(|t| t.with_timezone(&Utc))
            .expect("a timestamp");
        assert_eq!(ts(t), "2026-12-02T01:02:03.456789+00:00");
        assert_eq!(read_ts(&ts(t)).expect("read"), t);
        assert_eq!(
            read_ts("2026-12-02 01:02:03").expect("CURRENT_TIMESTAMP"),
            DateTime::parse_from_rfc3339("2026-12-02T01:02:03Z")
                .map(|t| t.with_timezone(&Utc))
                .expect("a timestamp")
        );
        assert!(read_ts("yesterday").is_err());
    }
}
