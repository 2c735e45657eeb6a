//! Customers as the console's panel shows them: who a conversation is with
//! (set by id or email), their tickets and past conversations, their
//! remembered facts (with who and when) and forgetting one, and the
//! customer an order id in a conversation points to.

use aics_types::{ConversationSummary, Customer, MemoryFact, Ticket, Timestamp};

use crate::commerce::{TicketRow, TICKET_COLUMNS};
use crate::conversations::{SummaryRow, SUMMARY_SELECT};
use crate::{Database, DbError};

#[derive(sqlx::FromRow)]
struct MemoryRow {
    id: i64,
    text: String,
    created_at: Timestamp,
    created_by: Option<String>,
    session_id: Option<String>,
}

impl Database {
    /// The customer a reference names: an id (`CUST-001`) or an email.
    pub async fn find_customer(&self, reference: &str) -> Result<Option<Customer>, DbError> {
        let reference = reference.trim();
        if reference.contains('@') {
            return self.customer_by_email(reference).await;
        }
        self.customer(&reference.to_uppercase()).await
    }

    /// Sets (or changes) the customer of a conversation.
    #[tracing::instrument(skip_all, fields(session_id, customer_id))]
    pub async fn set_conversation_customer(
        &self,
        session_id: &str,
        customer_id: &str,
    ) -> Result<(), DbError> {
        let done = with_pool!(self, pool => sqlx::query(
            "UPDATE conversations SET customer_id = $2 WHERE session_id = $1",
        )
        .bind(session_id)
        .bind(customer_id)
        .execute(pool)
        .await?
        .rows_affected());
        if done == 0 {
            return Err(DbError::NotFound(format!("conversation {session_id}")));
        }
        Ok(())
    }

    /// A customer's conversations, most recent first.
    pub async fn conversations_of_customer(
        &self,
        customer_id: &str,
        limit: u32,
    ) -> Result<Vec<ConversationSummary>, DbError> {
        let sql = format!(
            "{SUMMARY_SELECT} WHERE c.customer_id = $1 ORDER BY c.updated_at DESC LIMIT $2"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, SummaryRow>(&sql)
            .bind(customer_id)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter()
            .map(ConversationSummary::try_from)
            .collect()
    }

    /// A customer's tickets (theirs, or on their orders), newest first.
    pub async fn tickets_of_customer(&self, customer_id: &str) -> Result<Vec<Ticket>, DbError> {
        let sql = format!(
            "SELECT {TICKET_COLUMNS} FROM tickets WHERE customer_id = $1 \
             OR order_id IN (SELECT id FROM orders WHERE customer_id = $1) \
             ORDER BY created_at DESC, id"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, TicketRow>(&sql)
            .bind(customer_id)
            .fetch_all(pool)
            .await?);
        Ok(rows.into_iter().map(Into::into).collect())
    }

    /// A customer's remembered facts, oldest first, with who and when.
    pub async fn memory_facts(&self, customer_id: &str) -> Result<Vec<MemoryFact>, DbError> {
        let rows = with_pool!(self, pool => sqlx::query_as::<_, MemoryRow>(
            "SELECT id, text, created_at, created_by, session_id FROM memories \
             WHERE customer_id = $1 ORDER BY id",
        )
        .bind(customer_id)
        .fetch_all(pool)
        .await?);
        Ok(rows
            .into_iter()
            .map(|r| MemoryFact {
                id: r.id,
                text: r.text,
                created_at: r.created_at,
                created_by: r.created_by,
                session_id: r.session_id,
            })
            .collect())
    }

    /// Forgets one remembered fact of `customer_id`; its text when there
    /// was one (`None`: nothing to forget).
    pub async fn forget_fact(&self, customer_id: &str, id: i64) -> Result<Option<String>, DbError> {
        let row: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "DELETE FROM memories WHERE customer_id = $1 AND id = $2 RETURNING text",
        )
        .bind(customer_id)
        .bind(id)
        .fetch_optional(pool)
        .await?);
        Ok(row.map(|(t,)| t))
    }

    /// The customer the first known order id mentioned in a conversation
    /// belongs to.
    pub async fn customer_of_mentioned_order(
        &self,
        session_id: &str,
    ) -> Result<Option<Customer>, DbError> {
        for message in self.list_messages(session_id).await? {
            for word in message
                .content
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.to_ascii_uppercase().contains("ORD"))
            {
                let Ok(id) = aics_agent::tools::normalize_order_id(word) else {
                    continue;
                };
                let owner: Option<(String,)> = with_pool!(self, pool => sqlx::query_as(
                    "SELECT customer_id FROM orders WHERE id = $1",
                )
                .bind(&id)
                .fetch_optional(pool)
                .await?);
                if let Some((customer_id,)) = owner {
                    return self.customer(&customer_id).await;
                }
            }
        }
        Ok(None)
    }
}

/// `text` as a `LIKE` pattern matching it anywhere, `\` escaping the
/// pattern's own `%`, `_` and `\`.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut out = String::from("%");
    for c in text.trim().to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl Database {
    /// The inbox: conversations matching the search text (anywhere in the
    /// title or any message — the customer's, replies, notes — in any
    /// language, as substrings, so a word from the middle of a message and
    /// Chinese without spaces both match) and the filters; most recent
    /// first, `limit` from `offset`.
    #[tracing::instrument(skip_all)]
    pub async fn search_conversations(
        &self,
        query: &aics_types::InboxQuery,
        limit: u32,
    ) -> Result<Vec<ConversationSummary>, DbError> {
        let text = query
            .q
            .as_deref()
            .filter(|q| !q.trim().is_empty())
            .map(contains_pattern);
        let sql = format!(
            "SELECT * FROM ({SUMMARY_SELECT}) s \
             WHERE ($1 IS NULL OR s.handling = $1) \
             AND ($2 IS NULL OR s.assignee = $2) \
             AND ($3 IS NULL OR s.customer_id = $3) \
             AND ($4 IS NULL OR LOWER(s.title) LIKE $4 ESCAPE '\\' \
                  OR EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.session_id \
                             AND LOWER(m.content) LIKE $4 ESCAPE '\\')) \
             ORDER BY s.updated_at DESC, s.session_id LIMIT $5 OFFSET $6"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, SummaryRow>(&sql)
            .bind(query.handling.map(|h| h.as_str()))
            .bind(query.assignee.as_deref())
            .bind(query.customer.as_deref())
            .bind(text.as_deref())
            .bind(i64::from(limit))
            .bind(i64::from(query.offset))
            .fetch_all(pool)
            .await?);
        rows.into_iter()
            .map(ConversationSummary::try_from)
            .collect()
    }
}
