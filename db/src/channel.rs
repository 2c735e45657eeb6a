//! The customer channel's store: each conversation's link token (only its
//! SHA-256 is kept, like approval tokens), finding a conversation by a
//! token, and the unverified contact a start page's visitor gives.

use aics_types::{Contact, Customer};

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

    /// A new conversation for a visitor of the start page, with what they
    /// typed kept as its unverified contact and no customer: an email is
    /// not an identity, so it never attaches the conversation to the
    /// customer who has it (staff may link one after checking).
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn start_visitor_conversation(
        &self,
        session_id: &str,
        contact: &Contact,
    ) -> Result<(), DbError> {
        tracing::Span::current().record("session_id", session_id);
        let at = now();
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO conversations (session_id, customer_id, title, handling, created_at, \
             updated_at, contact_name, contact_email, contact_lang) \
             VALUES ($1, NULL, '', 'ai', $2, $2, $3, $4, $5)",
        )
        .bind(session_id)
        .bind(at)
        .bind(contact.name.trim())
        .bind(contact.email.trim().to_lowercase())
        .bind(&contact.lang)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// The unverified contact of a conversation started from the customer
    /// page, if it is one.
    pub async fn conversation_contact(&self, session_id: &str) -> Result<Option<Contact>, DbError> {
        let row: Option<(Option<String>, Option<String>, Option<String>)> = with_pool!(self, pool => sqlx::query_as(
                "SELECT contact_name, contact_email, contact_lang FROM conversations \
                 WHERE session_id = $1",
            )
            .bind(session_id)
            .fetch_optional(pool)
            .await?);
        Ok(match row {
            Some((Some(name), Some(email), lang)) => Some(Contact {
                name,
                email,
                lang: lang.unwrap_or_else(|| "en".to_owned()),
            }),
            _ => None,
        })
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
