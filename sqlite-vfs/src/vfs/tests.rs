//! The VFS under SQLite: what a second connection reads, what one commit
//! costs in writes, what a writer killed mid-commit leaves (`crash`), and
//! who may open a file a process holds alone (`process`).

use std::cell::Cell;
use std::path::PathBuf;

use rusqlite::{Connection, OpenFlags};

use super::*;

mod crash;
mod process;

thread_local! {
    /// The platform writes this thread's logs made ([`write_inner`]).
    pub(super) static LOG_WRITES: Cell<u64> = const { Cell::new(0) };
}

/// A fresh folder of its own for `name`'s database file (the `Path` the
/// [`Scratch`] derefs to).
fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("aics-vfs-{name}-{}", std::process::id()));
    drop(std::fs::remove_dir_all(&dir));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir.join("t.db"))
}

/// A test's database file, whose folder goes when the test ends well (a
/// failed test keeps it, named on stderr, as `server/tests`' `Workdir`
/// does). Declared before the connections to it, it is dropped after them.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(dir) = self.0.parent() else { return };
        if std::thread::panicking() {
            eprintln!("the test's files are kept in {}", dir.display());
        } else {
            drop(std::fs::remove_dir_all(dir));
        }
    }
}

/// A connection in WAL mode at `synchronous = NORMAL`, as the server's,
/// through `vfs` (the platform's when `None`).
fn open(file: &std::path::Path, vfs: Option<&str>) -> Connection {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = match vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(file, flags, vfs),
        None => Connection::open_with_flags(file, flags),
    }
    .expect("open");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "NORMAL")
        .expect("normal");
    conn
}

#[test]
fn the_name_is_the_c_name() {
    assert_eq!(C_NAME.to_str(), Ok(NAME));
    assert_eq!(register(Access::Shared).expect("registered"), NAME);
    assert_eq!(register(Access::Shared).expect("registered twice"), NAME);
}

#[test]
fn a_commit_of_several_pages_is_one_write_to_the_log() {
    let file = scratch("one-write");
    let conn = open(&file, Some(register(Access::Shared).expect("vfs")));
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB);
         INSERT INTO t (k, v) VALUES ('warm', zeroblob(10));",
    )
    .expect("schema");
    for round in 0..50 {
        let before = LOG_WRITES.with(Cell::get);
        // A row over two pages, its index entry, the table's root: several
        // frames in one commit.
        conn.execute(
            "INSERT INTO t (k, v) VALUES (?1, randomblob(6000))",
            [format!("row-{round}")],
        )
        .expect("insert");
        let writes = LOG_WRITES.with(Cell::get) - before;
        assert_eq!(
            writes, 1,
            "round {round}: one write for the commit's frames"
        );
    }
    let frames: i64 = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
        .expect("checkpoint");
    assert!(
        frames > 150,
        "each commit wrote several frames ({frames} in all)"
    );
}

#[test]
fn another_connection_reads_every_commit_and_the_file_stays_whole() {
    let file = scratch("readers");
    let writer = open(&file, Some(register(Access::Shared).expect("vfs")));
    // A tiny page cache: large transactions spill frames to the log before
    // their commit and write some of those pages again (SQLite then rewrites
    // their checksums), the paths a batch must not hold.
    writer.pragma_update(None, "cache_size", 4).expect("cache");
    writer
        .execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB); CREATE INDEX t_k ON t (k);",
        )
        .expect("schema");
    let reader = open(&file, None);
    let mut rows = 0_i64;
    let mut bytes = 0_i64;
    for round in 0..400_i64 {
        // Mostly small commits; every tenth a large one with updates of rows
        // it wrote earlier in the same transaction.
        let (n, size) = if round % 10 == 0 {
            (40, 3000)
        } else {
            (1 + round % 3, 200)
        };
        writer.execute_batch("BEGIN IMMEDIATE").expect("begin");
        for i in 0..n {
            writer
                .execute(
                    "INSERT INTO t (k, v) VALUES (?1, randomblob(?2))",
                    rusqlite::params![format!("{round}-{i}"), size],
                )
                .expect("insert");
        }
        if round % 10 == 0 {
            writer
                .execute(
                    "UPDATE t SET v = randomblob(?2) WHERE k LIKE ?1",
                    rusqlite::params![format!("{round}-%"), size + 1],
                )
                .expect("update");
            bytes += n * (size + 1);
        } else {
            bytes += n * size;
        }
        writer.execute_batch("COMMIT").expect("commit");
        rows += n;
        let (seen, seen_bytes): (i64, i64) = reader
            .query_row("SELECT count(*), sum(length(v)) FROM t", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .expect("read");
        assert_eq!((seen, seen_bytes), (rows, bytes), "after round {round}");
        if round % 100 == 99 {
            // The log rewound: the next commit writes it from its start.
            let busy: i64 = reader
                .query_row("PRAGMA wal_checkpoint(RESTART)", [], |row| row.get(0))
                .expect("restart");
            assert_eq!(busy, 0);
        }
    }
    for conn in [&writer, &reader] {
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("check");
        assert_eq!(check, "ok");
    }
    drop(reader);
    drop(writer);
    // Opened again with the platform's VFS alone (the log's recovery runs
    // when the last connection closed it without a checkpoint, or not).
    let again = open(&file, None);
    let seen: i64 = again
        .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
        .expect("read");
    assert_eq!(seen, rows);
}
