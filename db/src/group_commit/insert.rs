//! How one write of checkpoints is inserted, on each database: on SQLite
//! the states packed (`crate::packed`, on their parents' where
//! `crate::parents` knows them) and each row naming its thread by a
//! number, on the direct connection; on PostgreSQL multi-row statements
//! in a transaction of its own. The writer in `super` decides which rows
//! go together.

use aics_graph::Checkpoint;
use rusqlite::OptionalExtension;
use sqlx::types::Json;

use crate::direct::{json, prepare, ts, Tx};
use crate::packed::Packed;
use crate::parents::{Parents, Stored, Written};
use crate::{Database, DbError};

/// Rows per INSERT statement on PostgreSQL: 10 parameters each, far below
/// its limit of 65 535.
const ROWS_PER_STATEMENT: usize = 64;

/// One row on PostgreSQL, which keeps the thread's id on every row: the
/// statement's text around its `VALUES`.
const INSERT: &str = "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, node, \
     next_node, path, state, pending_interrupts, created_at) ";
const ON_CONFLICT: &str = " ON CONFLICT (thread_id, checkpoint_id) DO NOTHING";
/// The `seq` the next row of `checkpoints` takes: a new thread's number
/// (the migration `20261208000001_checkpoint_threads` says why rows name
/// their thread by a number). Both statements below read it, in one
/// transaction, before the thread's first row is written.
macro_rules! next_seq {
    () => {
        "(SELECT coalesce(max(seq), 0) + 1 FROM checkpoints)"
    };
}
/// One row on SQLite's direct connection ([`crate::direct`]), which
/// prepares it once and runs it per row. Its thread's number is `$1`, or
/// for a new thread's first row none, and the row takes the `seq` it is
/// about to get, the one [`NUMBER_THREAD`] just gave the thread.
const INSERT_ONE: &str = concat!(
    "INSERT INTO checkpoints (thread_n, checkpoint_id, parent_id, step, \
     node, next_node, path, state, pending_interrupts, created_at) \
     VALUES (coalesce($1, ",
    next_seq!(),
    "), $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (thread_n, checkpoint_id) DO NOTHING"
);
/// A thread's number.
const THREAD_N: &str = "SELECT n FROM checkpoint_threads WHERE thread_id = $1";
/// Numbers a new thread: the `seq` its first row, written next in the
/// same transaction, takes. A thread already numbered changes nothing.
const NUMBER_THREAD: &str = concat!(
    "INSERT INTO checkpoint_threads (thread_id, n) VALUES ($1, ",
    next_seq!(),
    ") ON CONFLICT (thread_id) DO NOTHING"
);

/// Inserts `rows` in one transaction; saving a checkpoint id twice
/// changes nothing.
///
/// On SQLite the rows are encoded first (the states compressed,
/// [`crate::packed`], on their parents' where `parents` knows them), then
/// written on the direct connection in the caller's thread, each naming
/// its thread by a number (numbered here the first time); the answer is
/// each row's depth in its chain and its thread's number, for
/// [`Parents::committed`]. On
/// PostgreSQL the transaction commits with `synchronous_commit = off`
/// (crate docs, "Durability"), and the answer is empty.
pub(crate) async fn insert(
    db: &Database,
    rows: &[&Checkpoint],
    parents: Option<&Parents>,
) -> Result<Vec<Written>, DbError> {
    match db {
        Database::Sqlite(sqlite) => {
            let stored = match parents {
                Some(parents) => parents.pack(rows),
                None => rows
                    .iter()
                    .map(|cp| Stored {
                        value: Packed::of(cp.state.get()).into_value(),
                        depth: 0,
                        thread_n: None,
                    })
                    .collect(),
            };
            let depths: Vec<u32> = stored.iter().map(|s| s.depth).collect();
            // Each row's values, owned: the write may run in another
            // caller's transaction (crate::direct's writer).
            let encoded = rows
                .iter()
                .zip(stored)
                .map(|(cp, stored)| {
                    Ok((
                        [
                            cp.thread_id.as_str().to_owned(),
                            cp.checkpoint_id.clone(),
                            cp.node.as_str().to_owned(),
                            json(&cp.path)?,
                            json(&cp.pending_interrupts)?,
                            ts(cp.created_at),
                        ],
                        [cp.parent_id.clone(), cp.next.as_deref().map(str::to_owned)],
                        cp.step,
                        stored,
                    ))
                })
                .collect::<Result<Vec<_>, DbError>>()?;
            let numbers = sqlite
                .direct()?
                .write(move |tx| {
                    let mut insert = prepare(tx, INSERT_ONE)?;
                    let mut numbers: Vec<i64> = Vec::with_capacity(encoded.len());
                    // The number of the thread of the row before: a
                    // batch's rows come run by run.
                    let mut current: Option<(&str, i64)> = None;
                    for ([thread, id, node, path, interrupts, at], [parent, next], step, stored) in
                        &encoded
                    {
                        let n = match (current, stored.thread_n) {
                            (Some((t, n)), _) if t == thread.as_str() => Some(n),
                            (_, Some(n)) => Some(n),
                            _ => thread_number(tx, thread, parent.is_some())?,
                        };
                        let inserted = insert.execute(rusqlite::params![
                            n,
                            id,
                            parent,
                            step,
                            node,
                            next,
                            path,
                            stored.value,
                            interrupts,
                            at,
                        ])?;
                        let n = match n {
                            Some(n) => n,
                            // Nothing has that number yet, so nothing
                            // conflicts; a row not written would leave the
                            // thread numbered after another row.
                            None if inserted == 1 => tx.last_insert_rowid(),
                            None => {
                                return Err(DbError::Corrupt(format!(
                                    "the first checkpoint of thread {thread} was not written"
                                )))
                            }
                        };
                        current = Some((thread.as_str(), n));
                        numbers.push(n);
                    }
                    Ok(numbers)
                })
                .await?;
            Ok(depths
                .into_iter()
                .zip(numbers)
                .map(|(depth, thread_n)| Written { depth, thread_n })
                .collect())
        }
        Database::Postgres(pool) => {
            let mut tx = pool.begin().await?;
            sqlx::query("SET LOCAL synchronous_commit = off")
                .execute(&mut *tx)
                .await?;
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(INSERT);
                query.push_values(chunk.iter(), |mut row, cp| {
                    row.push_bind(cp.thread_id.as_str())
                        .push_bind(&cp.checkpoint_id)
                        .push_bind(&cp.parent_id)
                        .push_bind(i64::from(cp.step))
                        .push_bind(cp.node.as_str())
                        .push_bind(cp.next.as_deref())
                        .push_bind(Json(&cp.path))
                        .push_bind(Json(&cp.state))
                        .push_bind(Json(&cp.pending_interrupts))
                        .push_bind(cp.created_at);
                });
                query.push(ON_CONFLICT);
                query.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(Vec::new())
        }
    }
}

/// The number of a thread the writer does not remember (a run's first
/// write, or one the writer forgot or never saw), or `None` when it is
/// new and numbered here: its first row then takes the number with its
/// `seq`. A row after a parent usually has a numbered thread, a first
/// row a new one, so each is tried first.
fn thread_number(tx: &Tx<'_>, thread: &str, after_parent: bool) -> Result<Option<i64>, DbError> {
    let find = || -> Result<Option<i64>, DbError> {
        Ok(prepare(tx, THREAD_N)?
            .query_row([thread], |r| r.get(0))
            .optional()?)
    };
    if after_parent {
        if let Some(n) = find()? {
            return Ok(Some(n));
        }
    }
    if prepare(tx, NUMBER_THREAD)?.execute([thread])? == 1 {
        return Ok(None);
    }
    // Numbered before (a first row written again): its number is there.
    find()?
        .map(Some)
        .ok_or_else(|| DbError::Corrupt(format!("thread {thread} is numbered and has no number")))
}
