//! Per-conversation turn locks: at most one turn per conversation across
//! every instance. A row exists while a turn runs (`running`) or waits for
//! approval (`paused`); taking a paused lock back to `running` is how exactly
//! one instance resumes it.

use aics_types::Timestamp;

use crate::{now, Database, DbError};

impl Database {
    /// Takes a conversation for a new turn. `false` when another turn runs or
    /// waits for approval; a running lock older than `stale_before` is taken
    /// over (its instance died mid-turn).
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn acquire_turn_lock(
        &self,
        session_id: &str,
        graph_execution_id: &str,
        instance_id: &str,
        stale_before: Timestamp,
    ) -> Result<bool, DbError> {
        let now = now();
        let inserted = with_pool!(self, pool => sqlx::query(
            "INSERT INTO turn_locks (session_id, graph_execution_id, state, instance_id, locked_at) \
             VALUES ($1, $2, 'running', $3, $4) ON CONFLICT (session_id) DO NOTHING",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .bind(instance_id)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        if inserted == 1 {
            return Ok(true);
        }
        let taken = with_pool!(self, pool => sqlx::query(
            "UPDATE turn_locks SET graph_execution_id = $2, instance_id = $3, locked_at = $4 \
             WHERE session_id = $1 AND state = 'running' AND locked_at < $5",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .bind(instance_id)
        .bind(now)
        .bind(stale_before)
        .execute(pool)
        .await?
        .rows_affected());
        if taken == 1 {
            tracing::warn!(session_id, "took over a stale turn lock");
        }
        Ok(taken == 1)
    }

    /// Marks a held lock paused, named by the run that waits for approval
    /// (a paused lock never goes stale: approvals may take days).
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn pause_turn_lock(
        &self,
        session_id: &str,
        graph_execution_id: &str,
    ) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "UPDATE turn_locks SET state = 'paused', graph_execution_id = $2, locked_at = $3 \
             WHERE session_id = $1",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Claims a paused run for resuming: exactly one caller, on any instance,
    /// gets `true`. A paused run without a lock row (it paused before this
    /// table existed, or its row was lost) is claimed by inserting one.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn claim_resume(
        &self,
        session_id: &str,
        graph_execution_id: &str,
        instance_id: &str,
    ) -> Result<bool, DbError> {
        let now = now();
        let claimed = with_pool!(self, pool => sqlx::query(
            "UPDATE turn_locks SET state = 'running', instance_id = $3, locked_at = $4 \
             WHERE session_id = $1 AND graph_execution_id = $2 AND state = 'paused'",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .bind(instance_id)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        if claimed == 1 {
            return Ok(true);
        }
        let inserted = with_pool!(self, pool => sqlx::query(
            "INSERT INTO turn_locks (session_id, graph_execution_id, state, instance_id, locked_at) \
             VALUES ($1, $2, 'running', $3, $4) ON CONFLICT (session_id) DO NOTHING",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .bind(instance_id)
        .bind(now)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(inserted == 1)
    }

    /// Frees a conversation after its turn ended (only the lock of that run).
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn release_turn_lock(
        &self,
        session_id: &str,
        graph_execution_id: &str,
    ) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "DELETE FROM turn_locks WHERE session_id = $1 AND graph_execution_id = $2",
        )
        .bind(session_id)
        .bind(graph_execution_id)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Drops running locks left by a crash; only for SQLite, which one
    /// instance owns alone (on PostgreSQL another instance may be mid-turn).
    pub async fn clear_running_locks(&self) -> Result<u64, DbError> {
        Ok(
            with_pool!(self, pool => sqlx::query("DELETE FROM turn_locks WHERE state = 'running'")
            .execute(pool)
            .await?
            .rows_affected()),
        )
    }
}
