//! [`Tx`]: a transaction on a direct connection, begun and ended with
//! statements the connection prepared once.
//!
//! rusqlite's `Transaction` runs `BEGIN`, `COMMIT`, `SAVEPOINT` and
//! `RELEASE` with `execute_batch`, which parses and prepares each statement
//! every time, and a `sync` turn commits once per checkpoint. Here they
//! come from the connection's statement cache instead; what a transaction
//! does and when it ends is rusqlite's: dropped while open, it rolls back.

use std::ops::Deref;

use rusqlite::Connection;

/// How a transaction begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Begin {
    /// Takes the write lock at once (`BEGIN IMMEDIATE`): the writes.
    Immediate,
    /// Takes a snapshot at its first read (`BEGIN DEFERRED`): the reads.
    Deferred,
}

/// An open transaction on a connection, which it borrows alone. Its
/// statements are the connection's ([`Deref`]).
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
}

impl<'c> Tx<'c> {
    /// Begins a transaction on `conn`.
    pub(crate) fn begin(conn: &'c mut Connection, how: Begin) -> rusqlite::Result<Self> {
        let conn: &'c Connection = conn;
        run(
            conn,
            match how {
                Begin::Immediate => "BEGIN IMMEDIATE",
                Begin::Deferred => "BEGIN DEFERRED",
            },
        )?;
        Ok(Self { conn })
    }

    /// Commits. On an error the transaction is still open, and rolled back
    /// as this is dropped (as rusqlite's `Transaction::commit` does).
    pub(crate) fn commit(self) -> rusqlite::Result<()> {
        run(self.conn, "COMMIT")
    }

    /// Opens the savepoint `job` inside this transaction.
    pub(crate) fn savepoint(&self) -> rusqlite::Result<()> {
        run(self.conn, "SAVEPOINT job")
    }

    /// Keeps what was written since [`Tx::savepoint`].
    pub(crate) fn release(&self) -> rusqlite::Result<()> {
        run(self.conn, "RELEASE job")
    }

    /// Undoes what was written since [`Tx::savepoint`] and closes it.
    pub(crate) fn roll_back_savepoint(&self) -> rusqlite::Result<()> {
        run(self.conn, "ROLLBACK TO job")?;
        run(self.conn, "RELEASE job")
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        // Ended already when SQLite is back in autocommit: committed, or
        // rolled back whole by SQLite after some errors.
        if !self.conn.is_autocommit() {
            // A failed rollback leaves nothing to do: SQLite ends the
            // transaction when the connection closes.
            let _ = run(self.conn, "ROLLBACK");
        }
    }
}

/// Runs one of the statements above, prepared once per connection.
fn run(conn: &Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch("CREATE TABLE t (n INTEGER)")
            .expect("table");
        conn
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("count")
    }

    #[test]
    fn committed_writes_stay_and_dropped_ones_go() {
        let mut conn = table();
        for _ in 0..3 {
            let tx = Tx::begin(&mut conn, Begin::Immediate).expect("begin");
            tx.execute("INSERT INTO t VALUES (1)", []).expect("insert");
            tx.commit().expect("commit");
        }
        assert_eq!(count(&conn), 3);
        {
            let tx = Tx::begin(&mut conn, Begin::Immediate).expect("begin");
            tx.execute("INSERT INTO t VALUES (2)", []).expect("insert");
        }
        assert!(conn.is_autocommit(), "the dropped transaction ended");
        assert_eq!(count(&conn), 3);
        let tx = Tx::begin(&mut conn, Begin::Deferred).expect("a read");
        assert_eq!(count(&tx), 3);
    }

    #[test]
    fn a_savepoint_undoes_only_its_own_writes() {
        let mut conn = table();
        let tx = Tx::begin(&mut conn, Begin::Immediate).expect("begin");
        for (n, keep) in [(1, true), (2, false), (3, true)] {
            tx.savepoint().expect("savepoint");
            tx.execute("INSERT INTO t VALUES (?1)", [n])
                .expect("insert");
            if keep {
                tx.release().expect("release");
            } else {
                tx.roll_back_savepoint().expect("roll back");
            }
        }
        tx.commit().expect("commit");
        let kept: Vec<i64> = conn
            .prepare("SELECT n FROM t ORDER BY n")
            .expect("select")
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(kept, [1, 3]);
    }

    /// A commit that fails leaves the transaction to its drop, which rolls
    /// it back, and the connection takes the next one.
    #[test]
    fn a_failed_commit_rolls_back_on_drop() {
        let mut conn = table();
        conn.execute_batch(
            "CREATE TABLE p (id INTEGER PRIMARY KEY); \
             CREATE TABLE c (p INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED); \
             PRAGMA foreign_keys = ON;",
        )
        .expect("tables");
        {
            let tx = Tx::begin(&mut conn, Begin::Immediate).expect("begin");
            tx.execute("INSERT INTO t VALUES (1)", []).expect("insert");
            tx.execute("INSERT INTO c VALUES (7)", []).expect("insert");
            assert!(tx.commit().is_err(), "a deferred key with no parent");
        }
        assert!(conn.is_autocommit());
        assert_eq!(count(&conn), 0);
        let tx = Tx::begin(&mut conn, Begin::Immediate).expect("begin again");
        tx.execute("INSERT INTO t VALUES (1)", []).expect("insert");
        tx.commit().expect("commit");
        assert_eq!(count(&conn), 1);
    }
}
