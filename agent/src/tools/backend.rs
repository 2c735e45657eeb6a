//! What the support tools need from the shop's data: one trait, one method
//! per thing a tool reads or writes.

use aics_types::{ArticleHit, OrderDetail, Ticket};
use async_trait::async_trait;

use crate::tool::ToolError;

/// A ticket to open. `idempotency_key` is the tool-call id: a step that runs
/// again after a restart or an approval must find the first ticket, not make
/// a second one.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTicket {
    pub idempotency_key: String,
    pub order_id: Option<String>,
    pub customer_id: Option<String>,
    pub session_id: Option<String>,
    pub category: String,
    pub priority: String,
    pub summary: String,
}

/// What can go wrong in a backend; the tools turn it into the error result
/// the model sees.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The thing asked for does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The input breaks a rule of the store.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The store failed or is unreachable.
    #[error("the data store failed: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl BackendError {
    /// A store failure caused by `source`.
    pub fn unavailable(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Unavailable(Box::new(source))
    }
}

impl From<BackendError> for ToolError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::NotFound(m) => ToolError::NotFound(m),
            BackendError::Invalid(m) => ToolError::InvalidArguments(m),
            BackendError::Unavailable(source) => {
                // The detail is for the log; the model gets a plain sentence.
                tracing::warn!(error = %source, "a support tool's data store failed");
                ToolError::Failed("the data store is unavailable".into())
            }
        }
    }
}

/// The shop's data, as the support tools read and write it.
#[async_trait]
pub trait SupportBackend: Send + Sync {
    /// An order (normalised id, e.g. `ORD-123`) with its customer, items and
    /// logistics events; `None` when there is no such order.
    async fn order(&self, order_id: &str) -> Result<Option<OrderDetail>, BackendError>;

    /// Opens a ticket once per idempotency key: a second call with the same
    /// key returns the first ticket.
    async fn create_ticket(&self, ticket: &NewTicket) -> Result<Ticket, BackendError>;

    /// Knowledge articles matching `query`, best first, at most `limit`.
    async fn search_knowledge(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ArticleHit>, BackendError>;

    /// Hands the conversation `session_id` to a person (its handling state
    /// becomes "waiting for human"); doing it twice is harmless.
    async fn escalate(
        &self,
        session_id: &str,
        customer_id: Option<&str>,
        reason: &str,
    ) -> Result<(), BackendError>;
}
