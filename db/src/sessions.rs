//! Sign-in sessions: one row per signed-in browser, keyed by the SHA-256 of
//! the cookie's token (a leaked database does not hand out sessions).

use aics_types::Timestamp;

use crate::{now, Database, DbError};

impl Database {
    /// Stores a session; `token_hash` is the SHA-256 of the cookie's token.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn insert_session(
        &self,
        token_hash: &str,
        username: &str,
        expires_at: Timestamp,
    ) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO sessions (token_hash, username, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(username)
        .bind(now())
        .bind(expires_at)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// The user name of a live (unexpired) session.
    #[tracing::instrument(skip_all)]
    pub async fn session_user(&self, token_hash: &str) -> Result<Option<String>, DbError> {
        let row: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT username FROM sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now())
        .fetch_optional(pool)
        .await?);
        Ok(row.map(|(u,)| u))
    }

    /// Ends a session, and clears expired ones while at it.
    #[tracing::instrument(skip_all)]
    pub async fn delete_session(&self, token_hash: &str) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "DELETE FROM sessions WHERE token_hash = $1 OR expires_at <= $2",
        )
        .bind(token_hash)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }
}
