//! What one SQLite commit costs on this machine, with nothing of aics
//! around it: the floor under a `sync` checkpoint, which commits once per
//! node (BENCHMARKS.md, round 20).
//!
//! On a fresh file with the server's settings (WAL, `synchronous =
//! NORMAL`, no checkpoint inside a commit: the server's run off the
//! commit path, `db/src/wal.rs`), with the server's VFS
//! (`aics-sqlite-vfs`: a commit's log frames in one write; the file this
//! process's alone, its wal-index locked in memory), the same VFS shared
//! with other processes (the wal-index locked with `fcntl`), and the
//! platform's, it times, per commit:
//! - an empty transaction (`BEGIN IMMEDIATE`, `COMMIT`);
//! - one small row into a table with no index;
//! - one small row into a table with a unique index on two text columns,
//!   as `checkpoints` has, its first column random (the workload's thread
//!   ids) or sorting by time (the server's);
//! - the last, with the transaction begun and committed by rusqlite's
//!   `Transaction` (which prepares `BEGIN` and `COMMIT` each time)
//!   instead of cached statements;
//! - nine rows of about a checkpoint's size (three ids and 310 bytes) in
//!   one commit, on one random thread id: the floor under an `exit` turn;
//! - the same with a 64 MB page cache instead of SQLite's 2 MB: slower,
//!   not faster. A leaf split in the middle of an index renumbers its
//!   pages through a spare page number far past the file's end, and the
//!   commit then scans the cache's whole hash table to drop pages past
//!   the end: a cost that grows with the cache (BENCHMARKS.md, round 21).
//!
//! ```text
//! cargo run --release -p aics-db --example commit_floor -- [commits per case, default 10000]
//! ```

use std::time::Instant;

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

type Error = Box<dyn std::error::Error>;

/// Runs `commit` `n` times; the mean microseconds of one.
fn per_commit(n: u32, mut commit: impl FnMut(u32) -> rusqlite::Result<()>) -> Result<f64, Error> {
    let started = Instant::now();
    for i in 0..n {
        commit(i)?;
    }
    Ok(started.elapsed().as_secs_f64() * 1e6 / f64::from(n))
}

fn cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn main() -> Result<(), Error> {
    let n: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 10_000,
    };
    for vfs in [
        aics_sqlite_vfs::register(aics_sqlite_vfs::Access::Process)?,
        aics_sqlite_vfs::register(aics_sqlite_vfs::Access::Shared)?,
        "unix",
    ] {
        measure(n, vfs)?;
    }
    Ok(())
}

/// Times every case on a fresh file opened with `vfs`, and prints them.
fn measure(n: u32, vfs: &str) -> Result<(), Error> {
    let path = std::env::temp_dir().join(format!("aics-commit-floor-{}.db", std::process::id()));
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let mut conn = Connection::open_with_flags_and_vfs(&path, flags, vfs)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.execute_batch(
        "CREATE TABLE bare (id INTEGER PRIMARY KEY, a TEXT NOT NULL);
         CREATE TABLE keyed (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b TEXT NOT NULL, UNIQUE (a, b));
         CREATE TABLE turns (id INTEGER PRIMARY KEY, thread TEXT NOT NULL, checkpoint TEXT NOT NULL,
                             parent TEXT, body BLOB NOT NULL, UNIQUE (thread, checkpoint));
         CREATE TABLE turns_big_cache (id INTEGER PRIMARY KEY, thread TEXT NOT NULL,
                             checkpoint TEXT NOT NULL, parent TEXT, body BLOB NOT NULL,
                             UNIQUE (thread, checkpoint));",
    )?;
    let row = |conn: &Connection, a: &str, b: &str| {
        conn.prepare_cached("INSERT INTO keyed (a, b) VALUES (?1, ?2)")?
            .execute(params![a, b])
            .map(drop)
    };

    let empty = per_commit(n, |_| {
        cached(&conn, "BEGIN IMMEDIATE")?;
        cached(&conn, "COMMIT")
    })?;
    let bare = per_commit(n, |i| {
        cached(&conn, "BEGIN IMMEDIATE")?;
        conn.prepare_cached("INSERT INTO bare (a) VALUES (?1)")?
            .execute(params![format!("row {i}")])?;
        cached(&conn, "COMMIT")
    })?;
    let random = per_commit(n, |i| {
        cached(&conn, "BEGIN IMMEDIATE")?;
        row(&conn, &uuid::Uuid::new_v4().to_string(), &i.to_string())?;
        cached(&conn, "COMMIT")
    })?;
    let time = per_commit(n, |i| {
        cached(&conn, "BEGIN IMMEDIATE")?;
        row(&conn, &uuid::Uuid::now_v7().to_string(), &i.to_string())?;
        cached(&conn, "COMMIT")
    })?;
    let rusqlite_tx = per_commit(n, |i| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        row(&tx, &uuid::Uuid::now_v7().to_string(), &i.to_string())?;
        tx.commit()
    })?;
    // Bytes that do not compress, as a compressed state's do not.
    let body: Vec<u8> = (0..310u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    // An `exit` turn's rows into `table`, each turn one commit.
    let turns = |conn: &Connection, table: &str| {
        let insert = format!(
            "INSERT INTO {table} (thread, checkpoint, parent, body) VALUES (?1, ?2, ?3, ?4)"
        );
        per_commit(n, |_| {
            let thread = uuid::Uuid::new_v4().to_string();
            cached(conn, "BEGIN IMMEDIATE")?;
            let mut parent: Option<String> = None;
            for _ in 0..9 {
                let id = uuid::Uuid::now_v7().to_string();
                conn.prepare_cached(&insert)?
                    .execute(params![thread, id, parent, body])?;
                parent = Some(id);
            }
            cached(conn, "COMMIT")
        })
    };
    let turn = turns(&conn, "turns")?;
    conn.pragma_update(None, "cache_size", -65_536)?;
    let turn_big_cache = turns(&conn, "turns_big_cache")?;
    drop(conn);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    println!(
        "sqlite_commit vfs={vfs} commits={n} empty_us={empty:.2} row_no_index_us={bare:.2} \
         row_indexed_random_us={random:.2} row_indexed_time_us={time:.2} \
         row_indexed_time_rusqlite_tx_us={rusqlite_tx:.2} nine_rows_us={turn:.2} \
         nine_rows_64mb_cache_us={turn_big_cache:.2}"
    );
    Ok(())
}
