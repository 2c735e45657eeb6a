//! Checkpoints: the graph state after every node of every run, and
//! [`SqlCheckpointer`], the engine's [`Checkpointer`] on this database,
//! writing through the group-commit writer ([`crate::group_commit`]). How
//! a state is stored (compressed on SQLite) is [`crate::packed`]; on
//! SQLite a state may be stored on its parent's (`crate::parents`), and
//! the readers here read such a row with the chain of rows it rests on.

use std::collections::HashMap;

use aics_graph::{Checkpoint, CheckpointError, Checkpointer, Interrupt, Name};
use aics_types::{CheckpointView, Timestamp};
use async_trait::async_trait;
use serde_json::value::RawValue;
use sqlx::types::Json;

use crate::group_commit::{GroupCommit, WriterStats};
use crate::packed::{StateColumn, TAG_ON_PARENT};
use crate::{Database, DbError};

#[derive(sqlx::FromRow)]
struct CheckpointRow {
    thread_id: String,
    checkpoint_id: String,
    parent_id: Option<String>,
    step: i64,
    node: String,
    next_node: Option<String>,
    path: Json<Vec<String>>,
    state: StateColumn,
    pending_interrupts: Json<Vec<Interrupt>>,
    created_at: Timestamp,
}

impl CheckpointRow {
    /// The checkpoint whose state this row's is stored on, if it is.
    fn rests_on(&self) -> Option<&str> {
        match self.state {
            StateColumn::OnParent(_) => self.parent_id.as_deref(),
            StateColumn::Whole(_) => None,
        }
    }

    /// The checkpoint, its state read with `parent` (its parent's state)
    /// when it was stored on it.
    fn into_checkpoint(self, parent: Option<&str>) -> Result<Checkpoint, DbError> {
        let r = self;
        let state: Box<RawValue> = r.state.with_parent(parent).map_err(|e| {
            DbError::Corrupt(format!("the state of checkpoint {}: {e}", r.checkpoint_id))
        })?;
        Ok(Checkpoint {
            step: u32::try_from(r.step)
                .map_err(|_| DbError::Corrupt(format!("checkpoint step {}", r.step)))?,
            thread_id: r.thread_id.into(),
            checkpoint_id: r.checkpoint_id,
            parent_id: r.parent_id,
            node: r.node.into(),
            next: r.next_node.map(Name::from),
            path: r.path.0.into_iter().map(Name::from).collect(),
            state: state.into(),
            pending_interrupts: r.pending_interrupts.0,
            created_at: r.created_at,
        })
    }
}

/// Where the statements below read a run's checkpoints (`c`) from, and the
/// column that names their thread. On SQLite a row names its thread by
/// the number `checkpoint_threads` (`t`) gives it (the migration
/// `20261208000001_checkpoint_threads` says why); PostgreSQL keeps the
/// thread's id on every row.
struct Source {
    from: &'static str,
    thread: &'static str,
}

const SQLITE: Source = Source {
    from: "checkpoint_threads t JOIN checkpoints c ON c.thread_n = t.n",
    thread: "t.thread_id",
};
const POSTGRES: Source = Source {
    from: "checkpoints c",
    thread: "c.thread_id",
};

impl Source {
    fn of(db: &Database) -> &'static Source {
        match db {
            Database::Sqlite(_) => &SQLITE,
            Database::Postgres(_) => &POSTGRES,
        }
    }

    /// `SELECT` of every [`CheckpointRow`] column, then `tail` (the
    /// thread's id is `$1`).
    fn select(&self, tail: &str) -> String {
        let Source { from, thread } = self;
        format!(
            "SELECT {thread} AS thread_id, c.checkpoint_id, c.parent_id, c.step, c.node, \
             c.next_node, c.path, c.state, c.pending_interrupts, c.created_at \
             FROM {from} WHERE {thread} = $1 {tail}"
        )
    }
}

/// The longest chain of rows a read follows (`crate::parents` writes
/// shorter ones); a longer one is damage.
const CHAIN_LIMIT: u32 = 64;

impl Database {
    /// Saves a checkpoint now, on its own; saving the same checkpoint id
    /// again changes nothing. (Runs write through [`SqlCheckpointer`],
    /// which shares commits between concurrent runs.)
    ///
    /// On PostgreSQL the write commits with `synchronous_commit = off`: it is
    /// visible to every instance at once and survives a crash of the
    /// application, and only a crash of the database server or its machine
    /// can lose the last fraction of a second of checkpoints, the same
    /// guarantee SQLite's WAL with `synchronous = NORMAL` gives. Everything
    /// else (approvals, tickets, turns) keeps a full synchronous commit.
    #[tracing::instrument(skip_all, fields(thread_id = %cp.thread_id, step = cp.step, node = %cp.node))]
    pub async fn put_checkpoint(&self, cp: &Checkpoint) -> Result<(), DbError> {
        crate::group_commit::insert(self, &[cp], None)
            .await
            .map(drop)
    }

    /// The newest checkpoint of a run.
    #[tracing::instrument(skip_all, fields(thread_id))]
    pub async fn latest_checkpoint(&self, thread_id: &str) -> Result<Option<Checkpoint>, DbError> {
        tracing::Span::current().record("thread_id", thread_id);
        let sql = Source::of(self).select("ORDER BY c.seq DESC LIMIT 1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, CheckpointRow>(&sql)
            .bind(thread_id)
            .fetch_optional(pool)
            .await?);
        self.read_row(row).await
    }

    /// One checkpoint of a run.
    #[tracing::instrument(skip_all, fields(thread_id, checkpoint_id))]
    pub async fn checkpoint(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Checkpoint>, DbError> {
        let span = tracing::Span::current();
        span.record("thread_id", thread_id);
        span.record("checkpoint_id", checkpoint_id);
        let sql = Source::of(self).select("AND c.checkpoint_id = $2");
        let row = with_pool!(self, pool => sqlx::query_as::<_, CheckpointRow>(&sql)
            .bind(thread_id)
            .bind(checkpoint_id)
            .fetch_optional(pool)
            .await?);
        self.read_row(row).await
    }

    /// A row as a checkpoint, with the states it is stored on when it is.
    async fn read_row(&self, row: Option<CheckpointRow>) -> Result<Option<Checkpoint>, DbError> {
        let Some(row) = row else { return Ok(None) };
        let parent = match row.rests_on() {
            Some(parent_id) => Some(self.state_text(&row.thread_id, parent_id).await?),
            None => None,
        };
        row.into_checkpoint(parent.as_deref()).map(Some)
    }

    /// The state of one checkpoint as JSON text, read through the chain
    /// of rows it is stored on (SQLite: `crate::parents`), in one query.
    async fn state_text(&self, thread_id: &str, checkpoint_id: &str) -> Result<String, DbError> {
        let broken = || {
            DbError::Corrupt(format!(
                "the state of checkpoint {checkpoint_id} rests on a row that is missing"
            ))
        };
        let Database::Sqlite(sqlite) = self else {
            // PostgreSQL stores every state whole.
            let cp = Box::pin(self.checkpoint(thread_id, checkpoint_id)).await?;
            return cp.map(|cp| cp.state.get().to_owned()).ok_or_else(broken);
        };
        // Newest first: the row, its parent while the row rests on it, …
        let sql = format!(
            "WITH RECURSIVE chain(depth, thread_n, parent_id, state) AS ( \
                 SELECT 0, c.thread_n, c.parent_id, c.state FROM {from} \
                 WHERE t.thread_id = $1 AND c.checkpoint_id = $2 \
                 UNION ALL \
                 SELECT chain.depth + 1, c.thread_n, c.parent_id, c.state FROM chain \
                 JOIN checkpoints c \
                 ON c.thread_n = chain.thread_n AND c.checkpoint_id = chain.parent_id \
                 WHERE chain.depth < $3 AND substr(chain.state, 1, 1) = x'{TAG_ON_PARENT:02x}' \
             ) SELECT state FROM chain ORDER BY depth DESC",
            from = SQLITE.from
        );
        let chain: Vec<StateColumn> = sqlx::query_scalar(&sql)
            .bind(thread_id)
            .bind(checkpoint_id)
            .bind(CHAIN_LIMIT)
            .fetch_all(sqlite.pool())
            .await?;
        let mut text: Option<String> = None;
        for state in chain {
            let state = state.with_parent(text.as_deref()).map_err(|e| {
                DbError::Corrupt(format!("the state of checkpoint {checkpoint_id}: {e}"))
            })?;
            text = Some(String::from(Box::<str>::from(state)));
        }
        text.ok_or_else(broken)
    }

    /// Every checkpoint of a run, oldest first.
    #[tracing::instrument(skip_all, fields(thread_id))]
    pub async fn list_checkpoints(&self, thread_id: &str) -> Result<Vec<Checkpoint>, DbError> {
        tracing::Span::current().record("thread_id", thread_id);
        let sql = Source::of(self).select("ORDER BY c.seq");
        let rows = with_pool!(self, pool => sqlx::query_as::<_, CheckpointRow>(&sql)
            .bind(thread_id)
            .fetch_all(pool)
            .await?);
        // A parent comes before the rows stored on it, so each row's is
        // usually at hand.
        let mut read: Vec<Checkpoint> = Vec::with_capacity(rows.len());
        let mut at: HashMap<String, usize> = HashMap::with_capacity(rows.len());
        for row in rows {
            let fetched: String;
            let parent = match row.rests_on() {
                Some(parent_id) => Some(match at.get(parent_id) {
                    Some(&i) => read[i].state.get(),
                    None => {
                        fetched = self.state_text(&row.thread_id, parent_id).await?;
                        fetched.as_str()
                    }
                }),
                None => None,
            };
            let cp = row.into_checkpoint(parent)?;
            at.insert(cp.checkpoint_id.clone(), read.len());
            read.push(cp);
        }
        Ok(read)
    }

    /// A run's checkpoints as the trace view shows them.
    pub async fn checkpoint_views(&self, thread_id: &str) -> Result<Vec<CheckpointView>, DbError> {
        Ok(self
            .list_checkpoints(thread_id)
            .await?
            .into_iter()
            .map(|c| CheckpointView {
                checkpoint_id: c.checkpoint_id,
                parent_id: c.parent_id,
                thread_id: c.thread_id.into(),
                step: c.step,
                node: c.node.into(),
                state: c.state.to_value(),
                pending_interrupts: c.pending_interrupts.into_iter().map(|i| i.id).collect(),
                created_at: c.created_at,
            })
            .collect())
    }
}

/// The engine's [`Checkpointer`] on SQLite or PostgreSQL: a paused run can
/// be resumed by any server that shares the database. Its writes go through
/// one group-commit writer ([`crate::group_commit`]): the checkpoints of
/// all concurrent runs share transactions, and each caller returns once its
/// own rows are committed. Build one per database and share it (clones
/// share the writer).
#[derive(Debug, Clone)]
pub struct SqlCheckpointer {
    db: Database,
    writer: GroupCommit,
}

impl SqlCheckpointer {
    pub fn new(db: Database) -> Self {
        Self {
            writer: GroupCommit::new(db.clone()),
            db,
        }
    }

    /// What the writer has done: callers, transactions, rows.
    pub fn writer_stats(&self) -> WriterStats {
        self.writer.stats()
    }
}

fn store_error(e: DbError) -> CheckpointError {
    match e {
        DbError::Corrupt(m) => CheckpointError::Corrupt(m),
        // A JSON column that no longer parses is corruption, not an outage.
        DbError::Sqlx(sqlx::Error::ColumnDecode { index, source }) => {
            CheckpointError::Corrupt(format!("column {index}: {source}"))
        }
        other => CheckpointError::store(other),
    }
}

#[async_trait]
impl Checkpointer for SqlCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.writer
            .write(vec![checkpoint.clone()])
            .await
            .map_err(store_error)
    }

    async fn put_owned(&self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        self.writer
            .write(vec![checkpoint])
            .await
            .map_err(store_error)
    }

    /// One caller's rows, all or none, in one of the writer's transactions.
    async fn put_batch(&self, checkpoints: Vec<Checkpoint>) -> Result<(), CheckpointError> {
        self.writer.write(checkpoints).await.map_err(store_error)
    }

    async fn latest(&self, thread_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.db
            .latest_checkpoint(thread_id)
            .await
            .map_err(store_error)
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        self.db
            .checkpoint(thread_id, checkpoint_id)
            .await
            .map_err(store_error)
    }

    async fn list(&self, thread_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        self.db
            .list_checkpoints(thread_id)
            .await
            .map_err(store_error)
    }
}
