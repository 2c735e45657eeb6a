//! A writer on the VFS killed with SIGKILL while it commits: every commit
//! it reported is in the file afterwards, and the file is whole, with
//! either [`Access`] (a process lock keeps the wal-index in the writer's
//! memory, so the next process rebuilds it from the log alone).
//!
//! The test runs its own binary again as the writer (`AICS_VFS_WRITER` set),
//! which prints `committed N` after each commit returns.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{open, scratch};
use crate::{register, Access};

const WRITER: &str = "AICS_VFS_WRITER";

/// The writer: commits rows of one to three pages until it is killed.
fn write_until_killed(file: &std::path::Path, access: Access) -> ! {
    let conn = open(file, Some(register(access).expect("vfs")));
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v BLOB)",
    )
    .expect("schema");
    for n in 0_u64.. {
        conn.execute(
            "INSERT INTO t (id, k, v) VALUES (?1, ?2, randomblob(?3))",
            rusqlite::params![n as i64, format!("k{n}"), 500 + (n % 3) * 4000],
        )
        .expect("insert");
        println!("committed {n}");
    }
    unreachable!()
}

#[test]
fn a_killed_writer_loses_no_commit_it_reported() {
    killed_writer(
        Access::Shared,
        concat!(
            module_path!(),
            "::a_killed_writer_loses_no_commit_it_reported"
        ),
    );
}

#[test]
fn a_killed_writer_with_the_process_lock_loses_no_commit_it_reported() {
    killed_writer(
        Access::Process,
        concat!(
            module_path!(),
            "::a_killed_writer_with_the_process_lock_loses_no_commit_it_reported"
        ),
    );
}

/// Kills a writer on `access` three times, each later in its work; `name`
/// is the calling test's path, which runs the writer.
fn killed_writer(access: Access, name: &str) {
    if let Some(file) = std::env::var_os(WRITER) {
        write_until_killed(std::path::Path::new(&file), access);
    }
    let file = scratch(match access {
        Access::Shared => "crash",
        Access::Process => "crash-process",
    });
    // The test's name as the test binary knows it (without the crate's).
    let name = name.split_once("::").map_or(name, |(_, path)| path);
    for attempt in 0..3 {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(WRITER, &file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("writer");
        let stdout = child.stdout.take().expect("stdout");
        let mut last = None;
        let started = Instant::now();
        let kill_after = Duration::from_millis(150 + 200 * attempt);
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("line");
            if let Some(n) = line.strip_prefix("committed ") {
                last = Some(n.parse::<i64>().expect("number"));
            }
            if started.elapsed() > kill_after && last.is_some() {
                child.kill().expect("SIGKILL");
                break;
            }
        }
        child.wait().expect("reaped");
        let last = last.expect("the writer committed");
        let conn = open(&file, None);
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("check");
        assert_eq!(check, "ok", "attempt {attempt}");
        let (count, max): (i64, i64) = conn
            .query_row("SELECT count(*), max(id) FROM t", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .expect("read");
        assert!(
            max >= last,
            "attempt {attempt}: reported {last}, found up to {max}"
        );
        assert_eq!(count, max + 1, "attempt {attempt}: no gap");
        // The next writer goes on from where this one stopped.
        conn.execute("DELETE FROM t", []).expect("reset");
    }
}
