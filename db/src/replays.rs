//! Replay sets (`replay_sets`, `replay_set_turns`) and their replay runs
//! (`replay_runs`, `replay_run_items`): a supervisor's saved list of turns,
//! chosen by id or by a filter over the stored turns ([`ReplayFilter`]:
//! text of the customer's message, date range, a tool called, the outcome),
//! and each replay of it, one fork (`studio_runs`) per turn.
//!
//! A replay run is leased to the process whose task runs it. Every change
//! of an item or a run is a conditional UPDATE (an item takes one fork or
//! one error, never both; a run ends once), so the task and the
//! housekeeping sweep of runs whose lease ran out
//! ([`Database::interrupt_stale_replay_runs`]) cannot both win.

use std::time::Duration;

use aics_types::{
    ReplayFilter, ReplayRunInfo, ReplayRunState, ReplaySet, ReplaySetSummary, Timestamp,
};
use sqlx::types::Json;

use crate::customers::contains_pattern;
use crate::overview::dialect_of;
use crate::{now, parse_stored, Database, DbError};

/// The most replay sets listed (newest first).
pub const MAX_REPLAY_SETS_LISTED: i64 = 200;

/// The most replay runs listed with a set (newest first).
pub const MAX_REPLAY_RUNS_LISTED: i64 = 50;

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
struct SetRow {
    id: String,
    name: String,
    created_by: String,
    created_at: Timestamp,
    filter: Option<Json<ReplayFilter>>,
}

#[derive(sqlx::FromRow)]
struct SetSummaryRow {
    id: String,
    name: String,
    created_by: String,
    created_at: Timestamp,
    turns: i64,
}

#[derive(sqlx::FromRow)]
struct RunRow {
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

const RUN_COLUMNS: &str =
    "id, set_id, created_by, created_at, state, provider, engine, protocol, finished_at";

/// The conditions of a filter over `turns t`, with `$1`…`$5` bound by
/// [`bind_filter!`]: started from, started before, stop reason, a tool
/// called (read from the trace as the overview reads it), text in the
/// turn's customer message (the last one stored before it started; the
/// conversation search's substring match).
fn filter_where(db: &Database) -> String {
    let d = dialect_of(db);
    format!(
        "($1 IS NULL OR t.started_at >= $1) AND ($2 IS NULL OR t.started_at < $2) \
         AND ($3 IS NULL OR t.stop_reason = $3) \
         AND ($4 IS NULL OR EXISTS (SELECT 1 FROM {calls} AS c WHERE {name} = $4)) \
         AND ($5 IS NULL OR LOWER((SELECT m.content FROM messages m \
              WHERE m.session_id = t.session_id AND m.role = 'customer' \
              AND m.created_at <= t.started_at ORDER BY m.id DESC LIMIT 1)) LIKE $5 ESCAPE '\\')",
        calls = d.turn_tool_calls,
        name = d.tool_name,
    )
}

macro_rules! bind_filter {
    ($query:expr, $filter:expr, $pattern:expr) => {
        $query
            .bind($filter.from)
            .bind($filter.to)
            .bind($filter.outcome.map(|o| o.as_str()))
            .bind($filter.tool.as_deref())
            .bind($pattern)
    };
}

fn text_pattern(filter: &ReplayFilter) -> Option<String> {
    filter
        .q
        .as_deref()
        .filter(|q| !q.trim().is_empty())
        .map(contains_pattern)
}

impl Database {
    /// How many stored turns `filter` matches.
    #[tracing::instrument(skip_all)]
    pub async fn count_filtered_turns(&self, filter: &ReplayFilter) -> Result<u64, DbError> {
        let sql = format!("SELECT COUNT(*) FROM turns t WHERE {}", filter_where(self));
        let pattern = text_pattern(filter);
        let n: i64 = with_pool!(self, pool => bind_filter!(
            sqlx::query_scalar(&sql), filter, pattern.as_deref()
        )
        .fetch_one(pool)
        .await?);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The graph execution ids of at most `limit` turns `filter` matches,
    /// newest first.
    #[tracing::instrument(skip_all)]
    pub async fn filtered_turns(
        &self,
        filter: &ReplayFilter,
        limit: u32,
    ) -> Result<Vec<String>, DbError> {
        let sql = format!(
            "SELECT t.graph_execution_id FROM turns t WHERE {} \
             ORDER BY t.started_at DESC, t.graph_execution_id DESC LIMIT $6",
            filter_where(self)
        );
        let pattern = text_pattern(filter);
        Ok(with_pool!(self, pool => bind_filter!(
            sqlx::query_scalar(&sql), filter, pattern.as_deref()
        )
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?))
    }

    /// Which of `ids` are stored turns.
    #[tracing::instrument(skip_all, fields(n = ids.len()))]
    pub async fn stored_turn_ids(&self, ids: &[String]) -> Result<Vec<String>, DbError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT graph_execution_id FROM turns WHERE graph_execution_id IN ({})",
            marks.join(", ")
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_scalar(&sql);
            for id in ids {
                query = query.bind(id);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// Stores a replay set of `turn_ids` (in that order), in one
    /// transaction.
    #[tracing::instrument(skip_all, fields(id, n = turn_ids.len()))]
    pub async fn insert_replay_set(
        &self,
        id: &str,
        name: &str,
        created_by: &str,
        filter: Option<&ReplayFilter>,
        turn_ids: &[String],
    ) -> Result<ReplaySet, DbError> {
        tracing::Span::current().record("id", id);
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO replay_sets (id, name, created_by, created_at, filter) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(id)
            .bind(name)
            .bind(created_by)
            .bind(at)
            .bind(filter.map(Json))
            .execute(&mut *tx)
            .await?;
            for (position, gid) in turn_ids.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO replay_set_turns (set_id, position, graph_execution_id) \
                     VALUES ($1, $2, $3)",
                )
                .bind(id)
                .bind(i64::try_from(position).unwrap_or(i64::MAX))
                .bind(gid)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        });
        Ok(ReplaySet {
            id: id.to_owned(),
            name: name.to_owned(),
            created_by: created_by.to_owned(),
            created_at: at,
            filter: filter.cloned(),
            turn_ids: turn_ids.to_vec(),
            runs: Vec::new(),
        })
    }

    /// The replay sets, newest first, with their sizes.
    #[tracing::instrument(skip_all)]
    pub async fn replay_sets(&self) -> Result<Vec<ReplaySetSummary>, DbError> {
        let rows = with_pool!(self, pool => sqlx::query_as::<_, SetSummaryRow>(
            "SELECT s.id, s.name, s.created_by, s.created_at, \
               (SELECT COUNT(*) FROM replay_set_turns t WHERE t.set_id = s.id) AS turns \
             FROM replay_sets s ORDER BY s.created_at DESC, s.id DESC LIMIT $1",
        )
        .bind(MAX_REPLAY_SETS_LISTED)
        .fetch_all(pool)
        .await?);
        Ok(rows
            .into_iter()
            .map(|r| ReplaySetSummary {
                id: r.id,
                name: r.name,
                created_by: r.created_by,
                created_at: r.created_at,
                turns: u64::try_from(r.turns).unwrap_or(0),
            })
            .collect())
    }

    /// One replay set with its turns and its runs (newest first).
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn replay_set(&self, id: &str) -> Result<Option<ReplaySet>, DbError> {
        tracing::Span::current().record("id", id);
        let row = with_pool!(self, pool => sqlx::query_as::<_, SetRow>(
            "SELECT id, name, created_by, created_at, filter FROM replay_sets WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?);
        let Some(row) = row else { return Ok(None) };
        let turn_ids: Vec<String> = with_pool!(self, pool => sqlx::query_scalar(
            "SELECT graph_execution_id FROM replay_set_turns WHERE set_id = $1 ORDER BY position",
        )
        .bind(id)
        .fetch_all(pool)
        .await?);
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM replay_runs WHERE set_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        let runs = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(id)
            .bind(MAX_REPLAY_RUNS_LISTED)
            .fetch_all(pool)
            .await?);
        Ok(Some(ReplaySet {
            id: row.id,
            name: row.name,
            created_by: row.created_by,
            created_at: row.created_at,
            filter: row.filter.map(|f| f.0),
            turn_ids,
            runs: runs
                .into_iter()
                .map(ReplayRunInfo::try_from)
                .collect::<Result<_, _>>()?,
        }))
    }

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
