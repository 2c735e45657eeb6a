//! [`Access::Process`]: another process is refused while a connection of
//! this one has the file open, and let in once the last one closed; the
//! connections of one process read and write beside each other as they
//! would on the platform's VFS.
//!
//! The other process is this test binary again (`AICS_VFS_PROBE` set),
//! which reads the file through the platform's VFS and prints what it got.

use std::process::Command;

use super::{open, scratch};
use crate::{register, Access};

const PROBE: &str = "AICS_VFS_PROBE";

/// The other process: one read, without waiting for a lock.
fn probe(file: &std::path::Path) -> ! {
    let conn = rusqlite::Connection::open(file).expect("open");
    conn.busy_timeout(std::time::Duration::ZERO)
        .expect("no wait");
    match conn.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0)) {
        Ok(n) => println!("probe: read {n}"),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {
            println!("probe: refused");
        }
        Err(e) => println!("probe: failed {e}"),
    }
    std::process::exit(0)
}

/// What another process gets when it reads `file` now.
fn other_process_reads(file: &std::path::Path) -> String {
    let name = concat!(
        module_path!(),
        "::another_process_is_refused_while_the_file_is_open"
    );
    let name = name.split_once("::").map_or(name, |(_, path)| path);
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(PROBE, file)
        .output()
        .expect("probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // libtest prints the test's name on the same line first.
    stdout
        .split_once("probe: ")
        .and_then(|(_, said)| said.lines().next())
        .unwrap_or_else(|| panic!("the probe said nothing: {stdout}"))
        .to_owned()
}

#[test]
fn another_process_is_refused_while_the_file_is_open() {
    if let Some(file) = std::env::var_os(PROBE) {
        probe(std::path::Path::new(&file));
    }
    let file = scratch("process-lock");
    let vfs = register(Access::Process).expect("vfs");
    assert_eq!(vfs, crate::NAME_PROCESS);
    {
        let writer = open(&file, Some(vfs));
        let reader = open(&file, Some(vfs));
        writer
            .execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1);")
            .expect("write");
        let seen: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("read");
        assert_eq!(seen, 1);
        assert_eq!(other_process_reads(&file), "refused");
        drop(writer);
        // Still open here.
        assert_eq!(other_process_reads(&file), "refused");
    }
    // Every connection of this process closed: the lock is gone.
    assert_eq!(other_process_reads(&file), "read 1");
}

/// In WAL mode a reader keeps its snapshot while a writer commits beside
/// it, and sees the commit in its next transaction: the wal-index in this
/// process's memory serves both connections as the shared file would.
#[test]
fn connections_of_one_process_share_the_log() {
    let file = scratch("process-share");
    let vfs = register(Access::Process).expect("vfs");
    let writer = open(&file, Some(vfs));
    let reader = open(&file, Some(vfs));
    writer
        .execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1);")
        .expect("write");
    let count = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("count")
    };
    reader.execute_batch("BEGIN").expect("begin");
    assert_eq!(count(&reader), 1);
    for n in 2..=50 {
        writer
            .execute("INSERT INTO t VALUES (?1)", [n])
            .expect("insert");
    }
    assert_eq!(count(&reader), 1, "the reader's snapshot holds");
    reader.execute_batch("COMMIT").expect("end");
    assert_eq!(count(&reader), 50);
    // The log copied back with both open, then read from the file.
    let (busy, _, _): (i64, i64, i64) = writer
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("checkpoint");
    assert_eq!(busy, 0);
    assert_eq!(count(&reader), 50);
    assert_eq!(
        std::fs::metadata(file.with_extension("db-shm"))
            .ok()
            .map(|m| m.len()),
        None,
        "no shared-memory file"
    );
}
