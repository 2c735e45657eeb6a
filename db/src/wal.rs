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
//! works. When the task cannot run (its connection fails), the bound still
//! keeps the log from growing without end.

use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{ConnectOptions, Connection};

/// The connections' own `wal_autocheckpoint`: 160 MB of log at 4 KB pages.
///
/// Under light load the checkpointer's passes catch up with the log's end
/// between commits, and the next commit starts the log again from its
/// beginning. Under sustained writes they never quite do (a `PASSIVE` pass
/// copies what was there when it started; commits append meanwhile), so
/// the log grows to this bound and the commit that crosses it copies back
/// what the passes have not and rewinds it, with two fsyncs, while every
/// other write waits. The larger the bound, the rarer that commit and the
/// more of its copying the checkpointer has done on another thread: a
/// sequential SQLite engine run makes 10 % more turns a second in `sync`
/// and about 20 % more in `exit` than at 40 MB (BENCHMARKS.md, round 10).
/// The file keeps its largest size until the database is closed.
pub(crate) const AUTOCHECKPOINT_PAGES: u32 = 40_000;
/// How often the checkpointer runs.
const EVERY: Duration = Duration::from_millis(500);

/// Starts the checkpointer of the file-backed database `options` opens; it
/// ends when `pool` is closed.
pub(crate) fn start(options: SqliteConnectOptions, pool: SqlitePool) {
    tokio::spawn(async move {
        let mut conn = match options.connect().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "the WAL checkpointer could not connect; commits checkpoint past the bound");
                return;
            }
        };
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !pool.is_closed() {
            tick.tick().await;
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&mut conn)
                .await
            {
                tracing::debug!(error = %e, "a WAL checkpoint failed; the next one tries again");
            }
        }
        let _ = conn.close().await;
    });
}

#[cfg(test)]
mod tests {
    use crate::Database;

    fn size(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    #[tokio::test]
    async fn the_log_is_copied_back_by_the_checkpointer_not_by_a_commit() {
        let dir = std::env::temp_dir().join(format!("aics-wal-{}", uuid::Uuid::new_v4().simple()));
        let file = dir.join("wal.db");
        let db = Database::connect(&format!("sqlite://{}", file.display()))
            .await
            .expect("test database");
        let Database::Sqlite(sqlite) = &db else {
            unreachable!()
        };
        let pool = sqlite.pool();
        sqlx::query("CREATE TABLE blobs (b BLOB)")
            .execute(pool)
            .await
            .expect("test database");
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
        for _ in 0..20 {
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
}
