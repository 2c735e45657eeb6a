//! The trace studio's forks (`studio_runs`): one row per fork of a turn,
//! `running` until the fork's task ends it `done` (with its trace) or
//! `failed` (with its error). Every end is a conditional UPDATE on
//! `state = 'running'`, so the task, its timeout and the housekeeping sweep
//! of forks a crash left cannot both win.

use aics_types::{ChatTurnTraceResult, StudioRun, StudioRunState, Timestamp};
use sqlx::types::Json;

use crate::{now, Database, DbError};

/// The most forks listed for one turn (newest first).
pub const MAX_FORKS_LISTED: i64 = 100;

/// A fork about to start.
#[derive(Debug, Clone)]
pub struct NewStudioRun<'a> {
    pub id: &'a str,
    pub source_graph_execution_id: &'a str,
    pub source_checkpoint_id: &'a str,
    pub created_by: &'a str,
    pub message: Option<&'a str>,
    pub engine: Option<&'a str>,
    pub protocol: Option<&'a str>,
    /// The provider the fork runs on.
    pub provider: Option<&'a str>,
}

#[derive(sqlx::FromRow)]
struct StudioRow {
    id: String,
    source_graph_execution_id: String,
    source_checkpoint_id: String,
    created_by: String,
    created_at: Timestamp,
    state: String,
    message: Option<String>,
    engine: Option<String>,
    protocol: Option<String>,
    provider: Option<String>,
    trace: Option<Json<ChatTurnTraceResult>>,
    error: Option<String>,
    finished_at: Option<Timestamp>,
}

impl TryFrom<StudioRow> for StudioRun {
    type Error = DbError;
    fn try_from(r: StudioRow) -> Result<Self, DbError> {
        Ok(StudioRun {
            state: StudioRunState::parse(&r.state)
                .ok_or_else(|| DbError::Corrupt(format!("studio run state {:?}", r.state)))?,
            id: r.id,
            source_graph_execution_id: r.source_graph_execution_id,
            source_checkpoint_id: r.source_checkpoint_id,
            created_by: r.created_by,
            created_at: r.created_at,
            message: r.message,
            engine: r.engine,
            protocol: r.protocol,
            provider: r.provider,
            trace: r.trace.map(|t| t.0),
            error: r.error,
            finished_at: r.finished_at,
        })
    }
}

const COLUMNS: &str = "id, source_graph_execution_id, source_checkpoint_id, created_by, \
     created_at, state, message, engine, protocol, provider, trace, error, finished_at";

impl Database {
    /// Records a fork as `running`.
    #[tracing::instrument(skip_all, fields(id = %run.id))]
    pub async fn insert_studio_run(&self, run: &NewStudioRun<'_>) -> Result<StudioRun, DbError> {
        let sql = format!(
            "INSERT INTO studio_runs (id, source_graph_execution_id, source_checkpoint_id, \
             created_by, created_at, state, message, engine, protocol, provider) \
             VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9) RETURNING {COLUMNS}"
        );
        let row = with_pool!(self, pool => sqlx::query_as::<_, StudioRow>(&sql)
            .bind(run.id)
            .bind(run.source_graph_execution_id)
            .bind(run.source_checkpoint_id)
            .bind(run.created_by)
            .bind(now())
            .bind(run.message)
            .bind(run.engine)
            .bind(run.protocol)
            .bind(run.provider)
            .fetch_one(pool)
            .await?);
        row.try_into()
    }

    /// Ends a running fork with its trace; false when it had already ended
    /// (timed out or swept).
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn finish_studio_run(
        &self,
        id: &str,
        trace: &ChatTurnTraceResult,
    ) -> Result<bool, DbError> {
        tracing::Span::current().record("id", id);
        let n = with_pool!(self, pool => sqlx::query(
            "UPDATE studio_runs SET state = 'done', trace = $2, finished_at = $3 \
             WHERE id = $1 AND state = 'running'",
        )
        .bind(id)
        .bind(Json(trace))
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n == 1)
    }

    /// Ends a running fork as failed; false when it had already ended.
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn fail_studio_run(&self, id: &str, error: &str) -> Result<bool, DbError> {
        tracing::Span::current().record("id", id);
        let n = with_pool!(self, pool => sqlx::query(
            "UPDATE studio_runs SET state = 'failed', error = $2, finished_at = $3 \
             WHERE id = $1 AND state = 'running'",
        )
        .bind(id)
        .bind(error)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n == 1)
    }

    /// Marks forks still `running` that started before `started_before` as
    /// failed (their process died); how many.
    #[tracing::instrument(skip_all)]
    pub async fn fail_stale_studio_runs(
        &self,
        started_before: Timestamp,
        error: &str,
    ) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "UPDATE studio_runs SET state = 'failed', error = $2, finished_at = $3 \
             WHERE state = 'running' AND created_at < $1",
        )
        .bind(started_before)
        .bind(error)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// One fork.
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn studio_run(&self, id: &str) -> Result<Option<StudioRun>, DbError> {
        tracing::Span::current().record("id", id);
        let sql = format!("SELECT {COLUMNS} FROM studio_runs WHERE id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, StudioRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await?);
        row.map(StudioRun::try_from).transpose()
    }

    /// The forks of a turn, newest first (at most [`MAX_FORKS_LISTED`]).
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn studio_runs_of(
        &self,
        graph_execution_id: &str,
    ) -> Result<Vec<StudioRun>, DbError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        let sql = format!(
            "SELECT {COLUMNS} FROM studio_runs WHERE source_graph_execution_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, StudioRow>(&sql)
            .bind(graph_execution_id)
            .bind(MAX_FORKS_LISTED)
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(StudioRun::try_from).collect()
    }
}
