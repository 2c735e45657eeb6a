//! Runs: every graph run's durable state (running, paused, resuming,
//! finished, failed, cancelled) and the lease its owner renews while it
//! runs. At most one active run per conversation (a partial unique index):
//! that is the conversation's lock, across every instance, with no stale
//! timeout to guess — a lease that is not renewed expires, and recovery takes
//! the run over.
//!
//! Beginning a turn ([`begin`]) is one transaction with the customer's
//! message; ending, pausing and cancelling a run ([`end`]) are one
//! transaction each, together with what they store (the trace, the reply,
//! the approvals), and each is conditional on the caller still owning the
//! run: a run that was cancelled or taken over cannot be ended twice.

use std::time::Duration;

use aics_types::{RunInfo, RunState, Timestamp};

use crate::direct::read_ts;
use crate::{now, parse_stored, Database, DbError};

mod begin;
mod end;

pub use begin::{Begin, BegunTurn, Kept, WhenHeld};
pub use end::{Ending, RunEnded};

#[derive(sqlx::FromRow)]
struct RunRow {
    graph_execution_id: String,
    session_id: String,
    state: String,
    attempts: i64,
    note: Option<String>,
    ended_by: Option<String>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl TryFrom<RunRow> for RunInfo {
    type Error = DbError;
    fn try_from(r: RunRow) -> Result<Self, DbError> {
        Ok(RunInfo {
            state: parse_stored("run state", &r.state, RunState::parse)?,
            attempts: u32::try_from(r.attempts).unwrap_or(u32::MAX),
            graph_execution_id: r.graph_execution_id,
            session_id: r.session_id,
            note: r.note,
            ended_by: r.ended_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

impl RunRow {
    /// A row of [`COLUMNS`] read on SQLite's direct connection.
    fn direct(row: &rusqlite::Row<'_>) -> Result<Self, DbError> {
        Ok(Self {
            graph_execution_id: row.get(0)?,
            session_id: row.get(1)?,
            state: row.get(2)?,
            attempts: row.get(3)?,
            note: row.get(4)?,
            ended_by: row.get(5)?,
            created_at: read_ts(&row.get::<_, String>(6)?)?,
            updated_at: read_ts(&row.get::<_, String>(7)?)?,
        })
    }
}

const COLUMNS: &str =
    "graph_execution_id, session_id, state, attempts, note, ended_by, created_at, updated_at";

/// A run that is not over (running, paused or resuming), written as the
/// active runs' unique index (`runs_one_active`) names it on SQLite: a
/// query finds a conversation's active run through that index only when it
/// names the same condition. Comparisons, not `IN`: SQLite builds a
/// temporary b-tree for an `IN` of three names each time it runs one (the
/// migration `20261209000001` says more).
pub(crate) const ACTIVE: &str = "(state = 'running' OR state = 'paused' OR state = 'resuming')";

/// A conversation's active run: at most one.
static ACTIVE_RUN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {COLUMNS} FROM runs WHERE session_id = $1 AND {ACTIVE}")
});

/// [`Database::active_run`] in a transaction of SQLite's direct connection.
pub(crate) fn active_run_direct(
    tx: &crate::direct::Tx<'_>,
    session_id: &str,
) -> Result<Option<RunInfo>, DbError> {
    crate::direct::first(tx, &ACTIVE_RUN, [session_id], |row| {
        RunInfo::try_from(RunRow::direct(row)?)
    })
}

fn until(lease: Duration) -> Timestamp {
    now() + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30))
}

impl Database {
    /// Renews the lease of a run `owner` runs; `false` when it is no longer
    /// the owner's (cancelled, taken over, ended): the owner must stop.
    pub async fn renew_lease(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, DbError> {
        let renewed = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = $3, updated_at = $4 \
             WHERE graph_execution_id = $1 AND lease_owner = $2 \
             AND state IN ('running', 'resuming')",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(renewed == 1)
    }

    /// Claims a paused run whose calls are all decided, to resume it:
    /// exactly one caller, on any instance, gets `true`.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn claim_paused_run(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<bool, DbError> {
        let claimed = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET state = 'resuming', lease_owner = $2, lease_expires_at = $3, \
             updated_at = $4 WHERE graph_execution_id = $1 AND state = 'paused'",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(claimed == 1)
    }

    /// Active runs whose owner stopped renewing their lease (its process
    /// died): the candidates of a recovery sweep, oldest first.
    pub async fn expired_runs(&self, limit: u32) -> Result<Vec<RunInfo>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE state IN ('running', 'resuming') \
             AND (lease_expires_at IS NULL OR lease_expires_at < $1) \
             ORDER BY updated_at LIMIT $2"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(now())
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(RunInfo::try_from).collect()
    }

    /// Takes over a run whose lease expired, counting the attempt: exactly
    /// one instance gets it back (with its new attempt count).
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn take_over_run(
        &self,
        graph_execution_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<RunInfo>, DbError> {
        let at = now();
        let taken = with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_owner = $2, lease_expires_at = $3, attempts = attempts + 1, \
             updated_at = $4 WHERE graph_execution_id = $1 AND state IN ('running', 'resuming') \
             AND (lease_expires_at IS NULL OR lease_expires_at < $4)",
        )
        .bind(graph_execution_id)
        .bind(owner)
        .bind(until(lease))
        .bind(at)
        .execute(pool)
        .await?
        .rows_affected());
        if taken == 0 {
            return Ok(None);
        }
        self.run(graph_execution_id).await
    }

    /// Paused runs none of whose calls waits any more (a decision landed but
    /// its resume never started): the other candidates of a recovery sweep.
    pub async fn decided_paused_runs(&self, limit: u32) -> Result<Vec<RunInfo>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM runs r WHERE r.state = 'paused' \
             AND EXISTS (SELECT 1 FROM approvals a \
                         WHERE a.graph_execution_id = r.graph_execution_id) \
             AND NOT EXISTS (SELECT 1 FROM approvals a \
                             WHERE a.graph_execution_id = r.graph_execution_id \
                             AND a.status = 'pending') \
             ORDER BY r.updated_at LIMIT $1"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(RunInfo::try_from).collect()
    }

    /// One run.
    pub async fn run(&self, graph_execution_id: &str) -> Result<Option<RunInfo>, DbError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE graph_execution_id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&sql)
            .bind(graph_execution_id)
            .fetch_optional(pool)
            .await?);
        row.map(RunInfo::try_from).transpose()
    }

    /// The run that holds a conversation now, if any.
    pub async fn active_run(&self, session_id: &str) -> Result<Option<RunInfo>, DbError> {
        let row = with_pool!(self, pool => sqlx::query_as::<_, RunRow>(&ACTIVE_RUN)
            .bind(session_id)
            .fetch_optional(pool)
            .await?);
        row.map(RunInfo::try_from).transpose()
    }

    /// The next epoch of a conversation's live events: every publisher of
    /// them (a run starting or resuming, a decision) takes one, so sequence
    /// numbers grow across instances without a write per event. 0 when the
    /// conversation does not exist (yet).
    pub async fn next_event_epoch(&self, session_id: &str) -> Result<u64, DbError> {
        let row: Option<(i64,)> = with_pool!(self, pool => sqlx::query_as(
            "UPDATE conversations SET event_epoch = event_epoch + 1 WHERE session_id = $1 \
             RETURNING event_epoch",
        )
        .bind(session_id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map_or(0, |(e,)| u64::try_from(e).unwrap_or(0)))
    }
}

impl Database {
    /// Marks every running run's lease expired: for SQLite at start-up,
    /// where one process owns the file and a running run is a crash's
    /// leftover. Returns how many there were.
    pub async fn expire_all_leases(&self) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = NULL WHERE state IN ('running', 'resuming')",
        )
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// Gives up the leases `owner` holds (a graceful shutdown with turns
    /// still running), so that recovery resumes them at once.
    pub async fn release_leases(&self, owner: &str) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "UPDATE runs SET lease_expires_at = NULL \
             WHERE lease_owner = $1 AND state IN ('running', 'resuming')",
        )
        .bind(owner)
        .execute(pool)
        .await?
        .rows_affected()))
    }
}
