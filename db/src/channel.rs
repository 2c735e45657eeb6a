//! The customer channel's store: each conversation's link token (only its
//! SHA-256 is kept, like approval tokens), finding a conversation by a
//! token, and the customer a start page names (found by email, or created).

use aics_types::Customer;

use crate::tokens::hash_token;
use crate::{now, Database, DbError};

impl Database {
    /// Gives conversation `session_id` a new customer link token (any
    /// earlier link stops working); `NotFound` when there is none.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn set_chat_token(&self, session_id: &str, token: &str) -> Result<(), DbError> {
        tracing::Span::current().record("session_id", session_id);
        if token.len() < 32 {
            return Err(DbError::InvalidInput(
                "a customer link token must be at least 32 characters".into(),
            ));
        }
        let done = with_pool!(self, pool => sqlx::query(
            "UPDATE conversations SET chat_token_hash = $2 WHERE session_id = $1",
        )
        .bind(session_id)
        .bind(hash_token(token))
        .execute(pool)
        .await?
        .rows_affected());
        if done == 0 {
            return Err(DbError::NotFound(format!("conversation {session_id}")));
        }
        Ok(())
    }

    /// The conversation a customer link token opens, if any.
    pub async fn conversation_by_chat_token(&self, token: &str) -> Result<Option<String>, DbError> {
        let row: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT session_id FROM conversations WHERE chat_token_hash = $1",
        )
        .bind(hash_token(token))
        .fetch_optional(pool)
        .await?);
        Ok(row.map(|(s,)| s))
    }

    /// The customer with `email` (compared case-insensitively), created
    /// with `name` and `lang` when there is none. Two start pages racing
    /// on one new email get the same customer (the unique email decides).
    #[tracing::instrument(skip_all)]
    pub async fn find_or_create_customer(
        &self,
        name: &str,
        email: &str,
        lang: &str,
    ) -> Result<Customer, DbError> {
        let email = email.trim().to_lowercase();
        if let Some(c) = self.customer_by_email(&email).await? {
            return Ok(c);
        }
        let id = format!(
            "CUST-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10].to_uppercase()
        );
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO customers (id, name, email, lang, tier, created_at) \
             VALUES ($1, $2, $3, $4, 'standard', $5) ON CONFLICT (email) DO NOTHING",
        )
        .bind(&id)
        .bind(name.trim())
        .bind(&email)
        .bind(lang)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        self.customer_by_email(&email)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("customer {email}")))
    }

    /// The customer with `email`, compared case-insensitively.
    pub async fn customer_by_email(&self, email: &str) -> Result<Option<Customer>, DbError> {
        let row: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT id FROM customers WHERE LOWER(email) = LOWER($1)",
        )
        .bind(email.trim())
        .fetch_optional(pool)
        .await?);
        match row {
            Some((id,)) => self.customer(&id).await,
            None => Ok(None),
        }
    }
}
