//! A SQLite VFS that hands each commit's log frames to the kernel in one
//! write.
//!
//! In WAL mode with `synchronous = NORMAL` a commit does not wait for the
//! disk: it appends its pages to the log file and publishes the new end in
//! the shared wal-index. SQLite appends each page as two `pwrite`s (the
//! frame's 24-byte header, then the page), so a checkpoint of four pages is
//! eight system calls, and on a small server those calls, not the bytes,
//! are most of a commit's cost (BENCHMARKS.md, round 24). This VFS is the
//! platform's own with one change on the log file: the frames of a
//! transaction are held in memory until its commit frame is complete and
//! then written with one call, before SQLite goes on to publish the commit.
//! Everything else — the database file, the wal-index and its locks, the
//! journal files — is the platform's, untouched. It comes in two flavours
//! ([`Access`]): over "unix", for files that other processes open too, and
//! over "unix-excl", for a file this process holds alone, whose wal-index
//! SQLite keeps in memory and locks without a system call (BENCHMARKS.md,
//! round 26).
//!
//! What a crash can lose is what it lost before: a commit whose write had
//! not returned. A commit is never published before its frames are in the
//! file ([`batch`] says why), so readers in this process or another, the
//! checkpointer and the recovery after a crash see the same log as without
//! this VFS.
//!
//! - `batch.rs`: which writes are held and when they go (safe, tested alone);
//! - `vfs.rs`: the VFS and its file, the C callbacks around it.
//!
//! Open a connection with [`register`]'s name for an [`Access`] (rusqlite's
//! `open_with_flags_and_vfs`, sqlx's `SqliteConnectOptions::vfs`).

mod batch;
mod vfs;

pub use vfs::{register, Access, NAME, NAME_PROCESS};
