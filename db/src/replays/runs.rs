//! Replay runs and their items (`replay_runs`, `replay_run_items`): a run
//! leased to the process whose task runs it, one item per turn of its set,
//! each taking one fork or one error by a conditional UPDATE, and the
//! sweep of runs whose lease ran out.

use std::time::Duration;

use aics_types::{ReplayRunInfo, ReplayRunState, Timestamp};

use crate::{now, parse_stored, Database, DbError};

/// A replay run about to start.
#[derive(Debug, Clone)]
pub struct NewReplayRun<'a> {
    pub id: &'a str,
    pub set_id: &'a str,
    pub created_by: &'a str,
    pub provider: Option<&'a str>,
    pub engine: Option<&'a str>,
    pub protocol: Option<&'a str>,
    /// The process that runs it, and for how long before it renews.
    pub owner: &'a str,
    pub lease: Duration,
}

/// One turn of a replay run as stored: its fork once started, or why it
/// could not be forked.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ReplayRunItem {
    pub position: i64,
    pub graph_execution_id: String,
    pub fork_id: Option<String>,
    pub error: Option<String>,
}

#[derive(sqlx::FromRow)]
pub(super) struct RunRow {
    id: String,
    set_id: String,
    created_by: String,
    created_at: Timestamp,
    state: String,
    provider: Option<String>,
    engine: Option<String>,
    protocol: Option<String>,
    finished_at: Option<Timestamp>,
}

impl TryFrom<RunRow> for ReplayRunInfo {
    type Error = DbError;
    fn try_from(r: RunRow) -> Result<Self, DbError> {
        Ok(ReplayRunInfo {
            state: parse_stored("replay run state", &r.state, ReplayRunState::parse)?,
            id: r.id,
            set_id: r.set_id,
            created_by: r.created_by,
            created_at: r.created_at,
            provider: r.provider,
            engine: r.engine,
            protocol: r.protocol,
            finished_at: r.finished_at,
        })
    }
}

pub(super) const RUN_COLUMNS: &str =
    "id, set_id, created_by, created_at, state, provider, engine, protocol, finished_at";

impl Database {
    /// Starts a replay run of its set: the run, `running` and leased to
    /// `run.owner`, and one item per turn of the set, in one transaction.
    /// `NotFound` when the set does not exist.
    #[tracing::instrument(skip_all, fields(id = %run.id, set_id = %run.set_id))]
    pub async fn insert_replay_run(
        &self,
        run: &NewReplayRun<'_>,
    ) -> Result<ReplayRunInfo, DbError> {
        let at = now();
        let until =
            at + chrono::Duration::from_std(run.lease).unwrap_or(chrono::Duration::seconds(30));
        let sql = format!(
            "INSERT INTO replay_runs (id, set_id, created_by, created_at, state, provider, engine, \
             protocol, lease_owner, lease_expires_at) \
             SELECT $1, id, $3, $4, 'running', $5, $6, $7, $8, $9 FROM replay_sets WHERE id = $2 \
             RETURNING {RUN_COLUMNS}"
        );
        let row = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let row = sqlx::query_as::<_, RunRow>(&sql)
                .bind(run.id)
                .bind(run.set_id)
                .bind(run.created_by)
                .bind(at)
                .bind(run.provider)
                .bind(run.engine)
                .bind(run.protocol)
                .bind(run.owner)
                .bind(until)
                .fetch_optional(&mut *tx)
                .await?;
            if row.is_some() {
                sqlx::query(
                    "INSERT INTO replay_run_items (run_id, position, graph_execution_id) \
                     SELECT $1, position, graph_execution_id FROM replay_set_turns WHERE set_id = $2",
                )
                .bind(run.id)
                .bind(run.set_id)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
            }
            row
        });
        row.ok_or_else(|| DbError::NotFound(format!("replay set {}", run.set_id)))?
            .try_into()
    }

    /// One replay run.
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn replay_run(&self, id: &str) -> Result<Option<ReplayRunInfo>, DbError> {
        tracing::Span::current().record("id", id);
        let sql = format!("SELECT {RUN_COLUMNS} FROM replay_runs WHERE id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await?);
        row.map(ReplayRunInfo::try_from).transpose()
    }

    /// A replay run's items, in the set's order.
    #[tracing::instrument(skip_all, fields(run_id))]
    pub async fn replay_run_items(&self, run_id: &str) -> Result<Vec<ReplayRunItem>, DbError> {
        tracing::Span::current().record("run_id", run_id);
        Ok(with_pool!(self, pool => sqlx::query_as::<_, ReplayRunItem>(
            "SELECT position, graph_execution_id, fork_id, error FROM replay_run_items \
             WHERE run_id = $1 ORDER BY position",
        )
        .bind(run_id)
        .fetch_all(pool)
        .await?))
    }

    /// Records the fork of an item that has neither fork nor error yet;
    /// false when it has one (the sweep ended it).
    #[tracing::instrument(skip_all, fields(run_id, position))]
    pub async fn set_replay_item_fork(
        &self,
        run_id: &str,
        position: i64,
        fork_id: &str,
    ) -> Result<bool, DbError> {
        self.end_replay_item(run_id, position, "fork_id", fork_id)
            .await
    }

    /// Records why an item could not be forked, unless it has a fork or an
    /// error already; false then.
    #[tracing::instrument(skip_all, fields(run_id, position))]
    pub async fn fail_replay_item(
        &self,
        run_id: &str,
        position: i64,
        error: &str,
    ) -> Result<bool, DbError> {
        self.end_replay_item(run_id, position, "error", error).await
    }

    async fn end_replay_item(
        &self,
        run_id: &str,
        position: i64,
        column: &'static str,
        value: &str,
    ) -> Result<bool, DbError> {
        let sql = format!(
            "UPDATE replay_run_items SET {column} = $3 \
             WHERE run_id = $1 AND position = $2 AND fork_id IS NULL AND error IS NULL"
        );
        let n = with_pool!(self, pool => sqlx::query(&sql)
            .bind(run_id)
            .bind(position)
            .bind(value)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    /// Renews the lease of a running replay run `owner` runs; false when it
    /// is no longer running or no longer the owner's (the task must stop).
    #[tracing::instrument(skip_all, fields(run_id))]
    pub async fn renew_replay_lease(
        &self,
        run_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, DbError> {
        tracing::Span::current().record("run_id", run_id);
        let until =
            now() + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30));
        let n = with_pool!(self, pool => sqlx::query(
            "UPDATE replay_runs SET lease_expires_at = $3 \
             WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
        )
        .bind(run_id)
        .bind(owner)
        .bind(until)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n == 1)
    }

    /// How many forks of a replay run still run.
    #[tracing::instrument(skip_all, fields(run_id))]
    pub async fn running_replay_forks(&self, run_id: &str) -> Result<u64, DbError> {
        tracing::Span::current().record("run_id", run_id);
        let n: i64 = with_pool!(self, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM replay_run_items i JOIN studio_runs s ON s.id = i.fork_id \
             WHERE i.run_id = $1 AND s.state = 'running'",
        )
        .bind(run_id)
        .fetch_one(pool)
        .await?);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Ends a running replay run `owner` runs as `done`; false when it had
    /// ended already (swept).
    #[tracing::instrument(skip_all, fields(run_id))]
    pub async fn finish_replay_run(&self, run_id: &str, owner: &str) -> Result<bool, DbError> {
        tracing::Span::current().record("run_id", run_id);
        let n = with_pool!(self, pool => sqlx::query(
            "UPDATE replay_runs SET state = 'done', finished_at = $3 \
             WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
        )
        .bind(run_id)
        .bind(owner)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n == 1)
    }

    /// The sweep: replay runs still `running` whose lease ran out before
    /// `expired_before` (their process died) end `interrupted`, and their
    /// items not yet forked end with `error`, in one transaction; how many
    /// runs.
    #[tracing::instrument(skip_all)]
    pub async fn interrupt_stale_replay_runs(
        &self,
        expired_before: Timestamp,
        error: &str,
    ) -> Result<u64, DbError> {
        let n = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "UPDATE replay_run_items SET error = $2 \
                 WHERE fork_id IS NULL AND error IS NULL AND run_id IN \
                   (SELECT id FROM replay_runs WHERE state = 'running' AND lease_expires_at < $1)",
            )
            .bind(expired_before)
            .bind(error)
            .execute(&mut *tx)
            .await?;
            let n = sqlx::query(
                "UPDATE replay_runs SET state = 'interrupted', finished_at = $2 \
                 WHERE state = 'running' AND lease_expires_at < $1",
            )
            .bind(expired_before)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            n
        });
        Ok(n)
    }
}
