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
//!
//! This file: the sets and the filter; `runs`: the replay runs and items.

mod runs;

use aics_types::{ReplayFilter, ReplayRunInfo, ReplaySet, ReplaySetSummary, Timestamp};
use sqlx::types::Json;

use crate::customers::contains_pattern;
use crate::overview::dialect_of;
use crate::{now, Database, DbError};

pub use runs::{NewReplayRun, ReplayRunItem};
use runs::{RunRow, RUN_COLUMNS};

/// The most replay sets listed (newest first).
pub const MAX_REPLAY_SETS_LISTED: i64 = 200;

/// The most replay runs listed with a set (newest first).
pub const MAX_REPLAY_RUNS_LISTED: i64 = 50;

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
}
