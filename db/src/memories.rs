//! Long-term memory: what a customer asked the agent to remember, and
//! [`SqlMemoryStore`], the engine's [`MemoryStore`] on this database.

use aics_agent::memory::{MemoryError, MemoryStore};
use async_trait::async_trait;

use crate::direct::all;
use crate::{now, Database, DbError};

// At most the cap, should older data hold more.
const RECALL: &str = "SELECT text FROM memories WHERE customer_id = $1 ORDER BY id LIMIT 50";

pub use aics_agent::memory::{MAX_MEMORIES, MAX_MEMORY_CHARS};

impl Database {
    /// Stores a memory of a customer; the same text twice is kept once, and
    /// a customer with [`MAX_MEMORIES`] gets no more (older facts stay).
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn remember(&self, customer_id: &str, text: &str) -> Result<(), DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        let text = text.trim();
        if customer_id.is_empty() || text.is_empty() {
            return Err(DbError::InvalidInput(
                "a memory needs a customer and a text".into(),
            ));
        }
        if text.chars().count() > MAX_MEMORY_CHARS {
            return Err(DbError::InvalidInput(format!(
                "a memory has at most {MAX_MEMORY_CHARS} characters"
            )));
        }
        // One statement, so the count and the insert see the same rows.
        let stored = with_pool!(self, pool => sqlx::query(
            "INSERT INTO memories (customer_id, text, created_at, created_by) \
             SELECT $1, $2, $3, 'ai' \
             WHERE (SELECT COUNT(*) FROM memories WHERE customer_id = $1) < $4 \
             ON CONFLICT (customer_id, text) DO NOTHING",
        )
        .bind(customer_id)
        .bind(text)
        .bind(now())
        .bind(MAX_MEMORIES as i64)
        .execute(pool)
        .await?
        .rows_affected());
        if stored == 0 {
            tracing::debug!("memory not stored: known already, or the customer has the most kept");
        }
        Ok(())
    }

    /// A customer's memories, oldest first.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn recall(&self, customer_id: &str) -> Result<Vec<String>, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        match self {
            // Every turn of a known customer reads them (memory_trigger).
            Self::Sqlite(sqlite) => {
                sqlite
                    .direct()?
                    .read(|tx| all(tx, RECALL, [customer_id], |row| Ok(row.get(0)?)))
                    .await
            }
            Self::Postgres(pool) => {
                let rows: Vec<(String,)> = sqlx::query_as(RECALL)
                    .bind(customer_id)
                    .fetch_all(pool)
                    .await?;
                Ok(rows.into_iter().map(|(t,)| t).collect())
            }
        }
    }

    /// Forgets one memory; true if there was one.
    #[tracing::instrument(skip_all, fields(customer_id))]
    pub async fn forget(&self, customer_id: &str, text: &str) -> Result<bool, DbError> {
        tracing::Span::current().record("customer_id", customer_id);
        let n = with_pool!(self, pool => sqlx::query(
            "DELETE FROM memories WHERE customer_id = $1 AND text = $2",
        )
        .bind(customer_id)
        .bind(text.trim())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n > 0)
    }
}

/// The engine's [`MemoryStore`] on SQLite or PostgreSQL.
#[derive(Debug, Clone)]
pub struct SqlMemoryStore {
    db: Database,
}

impl SqlMemoryStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[async_trait]
impl MemoryStore for SqlMemoryStore {
    async fn remember(&self, customer_id: &str, text: &str) -> Result<(), MemoryError> {
        self.db
            .remember(customer_id, text)
            .await
            .map_err(|e| MemoryError::Store(e.to_string()))
    }

    async fn recall(&self, customer_id: &str) -> Result<Vec<String>, MemoryError> {
        self.db
            .recall(customer_id)
            .await
            .map_err(|e| MemoryError::Store(e.to_string()))
    }
}
