//! The relay of live events between instances on PostgreSQL: `NOTIFY` on a
//! channel, a listener that receives what other instances sent, and the
//! spool for payloads too large for one notification. SQLite has one
//! instance, so nothing is relayed there.

use std::time::Duration;

use aics_types::Timestamp;
use sqlx::postgres::PgListener;

use crate::{now, Database, DbError};

/// A connection that receives the notifications of one channel.
pub struct EventListener {
    listener: PgListener,
}

impl std::fmt::Debug for EventListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventListener")
    }
}

impl EventListener {
    /// The next payload. After a lost connection it reconnects (and listens
    /// again) by itself; an error means this attempt failed, not the listener.
    pub async fn recv(&mut self) -> Result<String, DbError> {
        let notification = self.listener.recv().await?;
        Ok(notification.payload().to_owned())
    }
}

impl Database {
    /// Whether events must be relayed between instances (PostgreSQL).
    pub fn relays_events(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Listens on `channel`; `None` on SQLite, where nothing is relayed.
    pub async fn listen(&self, channel: &str) -> Result<Option<EventListener>, DbError> {
        let Self::Postgres(pool) = self else {
            return Ok(None);
        };
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen(channel).await?;
        Ok(Some(EventListener { listener }))
    }

    /// Sends `payload` to every listener of `channel` (nothing on SQLite).
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), DbError> {
        if let Self::Postgres(pool) = self {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(pool)
                .await?;
        }
        Ok(())
    }

    /// Parks a large payload for other instances to read by its id.
    pub async fn spool_event(&self, id: &str, payload: &str) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO event_spool (id, payload, created_at) VALUES ($1, $2, $3)",
        )
        .bind(id)
        .bind(payload)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Reads a spooled payload.
    pub async fn spooled_event(&self, id: &str) -> Result<Option<String>, DbError> {
        let row: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT payload FROM event_spool WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map(|(p,)| p))
    }

    /// Deletes spooled payloads older than `before` (every listener had time
    /// to read them).
    pub async fn prune_spool(&self, before: Timestamp) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query("DELETE FROM event_spool WHERE created_at < $1")
            .bind(before)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(())
    }

    /// How long a spooled payload is kept.
    pub const SPOOL_RETENTION: Duration = Duration::from_secs(300);
}
