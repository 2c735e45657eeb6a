//! Sign-in sessions: one row per signed-in browser, keyed by the SHA-256 of
//! the cookie's token (a leaked database does not hand out sessions). A
//! session ends at its absolute expiry or after it has been idle too long;
//! the service purges ended ones periodically.

use aics_types::Timestamp;

use crate::{now, Database, DbError};

/// A live session: whose it is, and when it was last used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    pub username: String,
    pub last_seen_at: Timestamp,
}

#[derive(sqlx::FromRow)]
struct SessionRow {
    username: String,
    last_seen_at: Option<Timestamp>,
    created_at: Timestamp,
}

impl Database {
    /// Stores a session; `token_hash` is the SHA-256 of the cookie's token.
    /// Keeps at most `cap` sessions per user: the oldest others end.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn insert_session(
        &self,
        token_hash: &str,
        username: &str,
        expires_at: Timestamp,
        cap: u32,
    ) -> Result<(), DbError> {
        let at = now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO sessions (token_hash, username, created_at, expires_at, last_seen_at) \
                 VALUES ($1, $2, $3, $4, $3)",
            )
            .bind(token_hash)
            .bind(username)
            .bind(at)
            .bind(expires_at)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "DELETE FROM sessions WHERE username = $1 AND token_hash NOT IN \
                 (SELECT token_hash FROM sessions WHERE username = $1 \
                  ORDER BY created_at DESC, token_hash LIMIT $2)",
            )
            .bind(username)
            .bind(i64::from(cap.max(1)))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// The session, if it is neither expired nor idle since `idle_since`.
    #[tracing::instrument(skip_all)]
    pub async fn live_session(
        &self,
        token_hash: &str,
        idle_since: Timestamp,
    ) -> Result<Option<LiveSession>, DbError> {
        let row = with_pool!(self, pool => sqlx::query_as::<_, SessionRow>(
            "SELECT username, last_seen_at, created_at FROM sessions \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now())
        .fetch_optional(pool)
        .await?);
        Ok(row.and_then(|r| {
            let last_seen_at = r.last_seen_at.unwrap_or(r.created_at);
            (last_seen_at > idle_since).then_some(LiveSession {
                username: r.username,
                last_seen_at,
            })
        }))
    }

    /// Whether the session is still live for `username`: not expired, used
    /// since `idle_since`, its account not disabled. One indexed read, for
    /// the periodic check of the event streams opened with it.
    #[tracing::instrument(skip_all)]
    pub async fn session_is_live(
        &self,
        token_hash: &str,
        username: &str,
        idle_since: Timestamp,
    ) -> Result<bool, DbError> {
        let (n,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "SELECT COUNT(*) FROM sessions s JOIN users u ON u.username = s.username \
             WHERE s.token_hash = $1 AND s.username = $2 AND s.expires_at > $3 \
             AND COALESCE(s.last_seen_at, s.created_at) > $4 AND u.disabled_at IS NULL",
        )
        .bind(token_hash)
        .bind(username)
        .bind(now())
        .bind(idle_since)
        .fetch_one(pool)
        .await?);
        Ok(n > 0)
    }

    /// The user name of a live session (no idle limit; kept for callers
    /// that only need the owner).
    pub async fn session_user(&self, token_hash: &str) -> Result<Option<String>, DbError> {
        Ok(self
            .live_session(token_hash, Timestamp::MIN_UTC)
            .await?
            .map(|s| s.username))
    }

    /// Marks the session used now. Callers do it at most once a minute per
    /// session, so reading pages does not turn into a write per request.
    pub async fn touch_session(&self, token_hash: &str) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "UPDATE sessions SET last_seen_at = $2 WHERE token_hash = $1",
        )
        .bind(token_hash)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Ends a session.
    #[tracing::instrument(skip_all)]
    pub async fn delete_session(&self, token_hash: &str) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(())
    }

    /// Ends every session of a user ("sign out everywhere"); returns how many.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn delete_user_sessions(&self, username: &str) -> Result<u64, DbError> {
        Ok(
            with_pool!(self, pool => sqlx::query("DELETE FROM sessions WHERE username = $1")
                .bind(username)
                .execute(pool)
                .await?
                .rows_affected()),
        )
    }

    /// Deletes sessions that expired or have been idle since `idle_since`;
    /// returns how many.
    #[tracing::instrument(skip_all)]
    pub async fn purge_sessions(&self, idle_since: Timestamp) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "DELETE FROM sessions WHERE expires_at <= $1 \
             OR COALESCE(last_seen_at, created_at) <= $2",
        )
        .bind(now())
        .bind(idle_since)
        .execute(pool)
        .await?
        .rows_affected()))
    }

    /// How many sessions a user has that have not expired.
    pub async fn session_count(&self, username: &str) -> Result<i64, DbError> {
        let (n,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "SELECT COUNT(*) FROM sessions WHERE username = $1 AND expires_at > $2",
        )
        .bind(username)
        .bind(now())
        .fetch_one(pool)
        .await?);
        Ok(n)
    }
}
