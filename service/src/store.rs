//! The service's own tables (migration `20261130060000_server`): sign-in
//! sessions, per-conversation turn locks and the spool of large events.
//! Queries are written once with `$n` placeholders, as in aics-db.

use aics_db::Database;
use aics_types::Timestamp;
use chrono::Utc;

use crate::error::ServiceError;

/// Runs `$body` with `$pool` bound to whichever pool the database has.
macro_rules! with_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            Database::Sqlite($pool) => $body,
            Database::Postgres($pool) => $body,
        }
    };
}

/// Stores a session; `token_hash` is the SHA-256 of the cookie's token.
pub(crate) async fn insert_session(
    db: &Database,
    token_hash: &str,
    username: &str,
    expires_at: Timestamp,
) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query(
        "INSERT INTO sessions (token_hash, username, created_at, expires_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(token_hash)
    .bind(username)
    .bind(Utc::now())
    .bind(expires_at)
    .execute(pool)
    .await?
    .rows_affected());
    Ok(())
}

/// The user name of a live session.
pub(crate) async fn session_user(
    db: &Database,
    token_hash: &str,
) -> Result<Option<String>, ServiceError> {
    let row: Option<(String,)> = with_pool!(db, pool => sqlx::query_as(
        "SELECT username FROM sessions WHERE token_hash = $1 AND expires_at > $2",
    )
    .bind(token_hash)
    .bind(Utc::now())
    .fetch_optional(pool)
    .await?);
    Ok(row.map(|(u,)| u))
}

/// Ends a session, and clears expired ones while at it.
pub(crate) async fn delete_session(db: &Database, token_hash: &str) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query("DELETE FROM sessions WHERE token_hash = $1 OR expires_at <= $2")
        .bind(token_hash)
        .bind(Utc::now())
        .execute(pool)
        .await?
        .rows_affected());
    Ok(())
}

/// Takes a conversation for a new turn. `false` when another turn runs or
/// waits for approval; a running lock older than `stale_before` is taken
/// over (its instance died mid-turn).
pub(crate) async fn acquire_turn_lock(
    db: &Database,
    session_id: &str,
    graph_execution_id: &str,
    instance_id: &str,
    stale_before: Timestamp,
) -> Result<bool, ServiceError> {
    let now = Utc::now();
    let inserted = with_pool!(db, pool => sqlx::query(
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
    let taken = with_pool!(db, pool => sqlx::query(
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
pub(crate) async fn pause_turn_lock(
    db: &Database,
    session_id: &str,
    graph_execution_id: &str,
) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query(
        "UPDATE turn_locks SET state = 'paused', graph_execution_id = $2, locked_at = $3 \
         WHERE session_id = $1",
    )
    .bind(session_id)
    .bind(graph_execution_id)
    .bind(Utc::now())
    .execute(pool)
    .await?
    .rows_affected());
    Ok(())
}

/// Claims a paused run for resuming: exactly one caller, on any instance,
/// gets `true`. A paused run without a lock row (it paused before this
/// table existed, or its row was lost) is claimed by inserting one.
pub(crate) async fn claim_resume(
    db: &Database,
    session_id: &str,
    graph_execution_id: &str,
    instance_id: &str,
) -> Result<bool, ServiceError> {
    let now = Utc::now();
    let claimed = with_pool!(db, pool => sqlx::query(
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
    let inserted = with_pool!(db, pool => sqlx::query(
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
pub(crate) async fn release_turn_lock(
    db: &Database,
    session_id: &str,
    graph_execution_id: &str,
) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query(
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
pub(crate) async fn clear_running_locks(db: &Database) -> Result<u64, ServiceError> {
    let n = with_pool!(db, pool => sqlx::query("DELETE FROM turn_locks WHERE state = 'running'")
        .execute(pool)
        .await?
        .rows_affected());
    Ok(n)
}

/// Parks a large event for other instances to read by its id.
pub(crate) async fn spool_event(
    db: &Database,
    id: &str,
    payload: &str,
) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query(
        "INSERT INTO event_spool (id, payload, created_at) VALUES ($1, $2, $3)",
    )
    .bind(id)
    .bind(payload)
    .bind(Utc::now())
    .execute(pool)
    .await?
    .rows_affected());
    Ok(())
}

/// Reads a spooled event.
pub(crate) async fn spooled_event(db: &Database, id: &str) -> Result<Option<String>, ServiceError> {
    let row: Option<(String,)> = with_pool!(db, pool => sqlx::query_as(
        "SELECT payload FROM event_spool WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?);
    Ok(row.map(|(p,)| p))
}

/// Deletes spooled events older than `before` (every listener had time to read them).
pub(crate) async fn prune_spool(db: &Database, before: Timestamp) -> Result<(), ServiceError> {
    with_pool!(db, pool => sqlx::query("DELETE FROM event_spool WHERE created_at < $1")
        .bind(before)
        .execute(pool)
        .await?
        .rows_affected());
    Ok(())
}

/// How many approvals wait, for the gauge.
pub(crate) async fn pending_approval_count(db: &Database) -> Result<i64, ServiceError> {
    let (n,): (i64,) = with_pool!(db, pool => sqlx::query_as(
        "SELECT COUNT(*) FROM approvals WHERE status = 'pending'",
    )
    .fetch_one(pool)
    .await?);
    Ok(n)
}

/// Fails with a clear message when this layer's tables are missing: the
/// migration is embedded in aics-db at compile time, and a build of aics-db
/// older than the migration file does not carry it.
pub(crate) async fn check_schema(db: &Database) -> Result<(), ServiceError> {
    let probe = with_pool!(db, pool => sqlx::query(
        "SELECT (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM turn_locks) \
         + (SELECT COUNT(*) FROM event_spool)",
    )
    .execute(pool)
    .await
    .map(|_| ()));
    probe.map_err(|e| {
        ServiceError::Internal(format!(
            "the database lacks the server tables of migration 20261130060000_server ({e}); \
             aics-db was compiled before that migration file existed: run \
             `touch db/src/lib.rs` (or `cargo clean -p aics-db`) and build again"
        ))
    })
}
