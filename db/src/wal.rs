//! SQLite's WAL checkpoints, off the commit path.
//!
//! By default SQLite copies the write-ahead log back into the database file
//! (and fsyncs it) inside whichever commit pushes the log past 1,000 pages:
//! under load that is one turn's commit in every few hundred, on the pool's
//! only connection, with every other statement queued behind it (measured:
//! 5 % of the server's samples under `scripts/bench-http`). Here a commit
//! only checkpoints past [`AUTOCHECKPOINT_PAGES`] (where sustained writes
//! take the log, see there), and a task of its own with its own connection
//! runs a `PASSIVE` checkpoint every [`EVERY`]: it copies what no reader
//! still needs without taking the write lock, so commits go on while it
//! works. A `PASSIVE` pass never rewinds the log, though: under sustained
//! writes commits append while it copies, the log is never wholly copied,
//! and it would grow to the bound, where the commit that crosses it copies
//! the rest and fsyncs with every other write waiting behind it — the chat
//! API's slowest turns (BENCHMARKS.md, round 12). So once a pass leaves
//! more than [`RESTART_PAGES`] in the log, the task syncs the database
//! file (a pass that does not reach the log's end leaves what it copied
//! unsynced, and the rewind's own fsync, with the writes held, would wait
//! for all of it), runs a few more passes, each copying what the commits
//! appended during the last, syncs the file again and runs one last pass,
//! and then has the direct connection
//! ([`crate::direct::Direct::rewind_log`]) copy the little left and rewind
//! the log between two of its transactions: the
//! turns' writes wait for it as they wait for each other, as tasks, and it
//! never loses the race for the lock to a stream of commits as a `RESTART`
//! on another connection would. When the task cannot run (its connection
//! fails), the bound still keeps the log from growing without end.

use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};

use crate::Sqlite;

/// The connections' own `wal_autocheckpoint`: 160 MB of log at 4 KB pages.
///
/// Under light load the checkpointer's passes catch up with the log's end
/// between commits, and the next commit starts the log again from its
/// beginning. Under sustained writes they never quite do (a `PASSIVE` pass
/// copies what was there when it started; commits append meanwhile), and
/// the checkpointer rewinds the log at [`RESTART_PAGES`]; this bound is
/// for when it cannot (its connection failed, a reader holds the old log
/// for long): the commit that crosses it copies back what the passes have
/// not and rewinds the log, with two fsyncs, while every other write
/// waits. Round 10 of BENCHMARKS.md chose it, before the rewinds, as the
/// larger the better for that commit. The file keeps its largest size
/// until the database is closed.
pub(crate) const AUTOCHECKPOINT_PAGES: u32 = 40_000;
/// How often the checkpointer runs.
const EVERY: Duration = Duration::from_millis(100);
/// The log a pass may leave before the checkpointer rewinds it: 64 MB.
const RESTART_PAGES: i64 = 16_384;
/// Passes at most before a rewind, each copying what the commits appended
/// during the one before …
const CATCH_UP_PASSES: usize = 8;
/// … until one finds fewer pages than this appended since (1 MB).
const CAUGHT_UP_PAGES: i64 = 256;

/// Starts the checkpointer of the file-backed database `options` opens; it
/// ends when `sqlite`'s pool is closed.
pub(crate) fn start(options: SqliteConnectOptions, sqlite: Sqlite) {
    let file = options.get_filename().to_owned();
    tokio::spawn(async move {
        let pool = sqlite.pool();
        let mut conn = match options.connect().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "the WAL checkpointer could not connect; commits checkpoint past the bound");
                return;
            }
        };
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The log's length at the last rewind: until a commit starts it
        // over, a pass still reports that length, and there is nothing to
        // rewind.
        let mut rewound_at = None;
        while !pool.is_closed() {
            tick.tick().await;
            let Some(mut log) = pass(&mut conn).await else {
                continue;
            };
            if log <= RESTART_PAGES || rewound_at == Some(log) {
                continue;
            }
            // A pass that does not reach the log's end leaves what it
            // copied in the file without waiting for the disk; the rewind
            // would wait for all of it (an fsync) while it holds the
            // turns' writes. The wait happens here instead.
            sync_data(&file).await;
            // Each further pass copies what the commits appended during the
            // last one, less each time; the rewind, which holds the turns'
            // writes, then has little left to copy.
            for _ in 0..CATCH_UP_PASSES {
                let Some(now) = pass(&mut conn).await else {
                    break;
                };
                let appended = now - log;
                log = now;
                if appended < CAUGHT_UP_PAGES {
                    break;
                }
            }
            // The catch-up passes left what they copied unsynced too (a few
            // MB under load, which the rewind's fsync flushed with the
            // writes held: 5–10 ms). Synced here, then one last pass copies
            // what came meanwhile, and the rewind's own fsync flushes only
            // that.
            sync_data(&file).await;
            if let Some(now) = pass(&mut conn).await {
                log = now;
            }
            let started = std::time::Instant::now();
            // `Some(rewinds so far)` when this rewind took.
            let rewound = match sqlite.direct() {
                Ok(direct) => direct
                    .rewind_log()
                    .await
                    .map(|done| done.then(|| direct.rewinds())),
                Err(e) => Err(e),
            };
            match rewound {
                Ok(Some(rewinds)) => {
                    rewound_at = Some(log);
                    tracing::debug!(
                        ms = started.elapsed().as_secs_f64() * 1000.0,
                        pages = log,
                        rewinds,
                        "the log was rewound"
                    );
                }
                Ok(None) => {
                    tracing::debug!("a sqlx connection held the old WAL; the next pass rewinds it")
                }
                Err(e) => {
                    tracing::debug!(error = %e, "a WAL rewind failed; the next pass tries again");
                }
            }
        }
        let _ = conn.close().await;
    });
}

/// Waits until what was written to `file` is on the disk (a failure is
/// the rewind's to report: it syncs the file again).
async fn sync_data(file: &std::path::Path) {
    let file = file.to_owned();
    let _ = tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .and_then(|f| f.sync_data())
    })
    .await;
}

/// A `PASSIVE` checkpoint: the pages in the log when it began, all of
/// which it copied back unless a reader still needed some.
async fn pass(conn: &mut SqliteConnection) -> Option<i64> {
    // (busy, pages in the log, pages copied back)
    match sqlx::query_as::<_, (i64, i64, i64)>("PRAGMA wal_checkpoint(PASSIVE)")
        .fetch_one(conn)
        .await
    {
        Ok((_, log, _)) => Some(log),
        Err(e) => {
            tracing::debug!(error = %e, "a WAL checkpoint failed; the next one tries again");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::Database;

    fn size(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// A new database file with a table `blobs (b BLOB)`: its folder, its
    /// path, the database.
    async fn blobs() -> (PathBuf, PathBuf, Database) {
        let dir = std::env::temp_dir().join(format!("aics-wal-{}", uuid::Uuid::new_v4().simple()));
        let file = dir.join("wal.db");
        let db = Database::connect(&format!("sqlite://{}", file.display()))
            .await
            .expect("test database");
        let Database::Sqlite(sqlite) = &db else {
            unreachable!()
        };
        sqlx::query("CREATE TABLE blobs (b BLOB)")
            .execute(sqlite.pool())
            .await
            .expect("test database");
        (dir, file, db)
    }

    #[tokio::test]
    async fn the_log_is_copied_back_by_the_checkpointer_not_by_a_commit() {
        let (dir, file, db) = blobs().await;
        let Database::Sqlite(sqlite) = &db else {
            unreachable!()
        };
        let pool = sqlite.pool();
        // Let the checkpointer copy the schema back first.
        tokio::time::sleep(super::EVERY * 3).await;
        let before = size(&file);
        // About 2 MB of log: far past SQLite's default bound of 1,000
        // pages, far below ours.
        let mut tx = pool.begin().await.expect("test database");
        for _ in 0..500 {
            sqlx::query("INSERT INTO blobs VALUES (randomblob(4000))")
                .execute(&mut *tx)
                .await
                .expect("test database");
        }
        tx.commit().await.expect("test database");
        let (bound,): (i64,) = sqlx::query_as("PRAGMA wal_autocheckpoint")
            .fetch_one(pool)
            .await
            .expect("test database");
        assert_eq!(bound, i64::from(super::AUTOCHECKPOINT_PAGES));
        // Within a few ticks the pages are in the database file.
        let mut grown = false;
        for _ in 0..50 {
            tokio::time::sleep(super::EVERY).await;
            if size(&file) > before + 1_000_000 {
                grown = true;
                break;
            }
        }
        assert!(
            grown,
            "the database file stayed at {} bytes (from {before})",
            size(&file)
        );
        db.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sustained_writes_are_rewound_by_the_checkpointer() {
        let (dir, _, db) = blobs().await;
        let Database::Sqlite(sqlite) = &db else {
            unreachable!()
        };
        // About 256 MB of log, 1 MB per commit, back to back on the
        // connection a turn writes with: a commit begins before the last
        // one is copied back, so short of the bound it never rewinds the
        // log itself; the checkpointer does. Each round also counts itself
        // in a row that must survive every rewind.
        sqlx::query("CREATE TABLE rounds (n INTEGER NOT NULL); INSERT INTO rounds VALUES (0)")
            .execute(sqlite.pool())
            .await
            .expect("test database");
        let direct = sqlite.direct().expect("test database");
        for _ in 0..256 {
            direct
                .write(|tx| {
                    tx.execute_batch(
                        "INSERT INTO blobs SELECT randomblob(4000) FROM \
                         (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
                         WHERE i < 250) SELECT i FROM n)",
                    )?;
                    Ok(())
                })
                .await
                .expect("test database");
            direct
                .write(|tx| {
                    tx.execute_batch("DELETE FROM blobs; UPDATE rounds SET n = n + 1")?;
                    Ok(())
                })
                .await
                .expect("test database");
        }
        // The checkpointer rewound the log. How far past its threshold the
        // log went first depends on how fast the disk syncs beside the
        // writes (BENCHMARKS.md measures it under the chat API): 80–95 MB
        // here alone, 150 MB in a busy run of the whole suite, so the
        // file's size is no test. Without the rewinds, only the commit
        // that crosses the bound would.
        assert!(
            direct.rewinds() >= 1,
            "256 MB went through the log and the checkpointer never rewound it"
        );
        let (rounds,): (i64,) = sqlx::query_as("SELECT n FROM rounds")
            .fetch_one(sqlite.pool())
            .await
            .expect("test database");
        assert_eq!(rounds, 256, "a rewind lost committed writes");
        let (check,): (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(sqlite.pool())
            .await
            .expect("test database");
        assert_eq!(check, "ok");
        db.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
