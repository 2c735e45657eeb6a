//! The support tools' backend on this database: [`aics_agent::tools`]
//! defines the five tools once; this module gives them the shop's data.

use std::sync::Arc;

use aics_agent::tool::ToolRegistry;
use aics_agent::tools::{BackendError, NewTicket, SupportBackend};
use aics_types::{ArticleHit, HandlingAction, OrderDetail, Ticket};
use async_trait::async_trait;

use crate::conversations::title_from;
use crate::{Database, DbError};

/// Who the timeline names for an escalation.
const ESCALATED_BY: &str = "The AI";

/// The support tools on `db`: order_query, logistics_track, ticket_create,
/// knowledge_search and escalate_to_human.
pub fn support_tools(db: &Database) -> ToolRegistry {
    aics_agent::tools::support_tools(Arc::new(db.clone()))
}

fn backend_error(e: DbError) -> BackendError {
    match e {
        DbError::NotFound(m) => BackendError::NotFound(m),
        DbError::InvalidInput(m) => BackendError::Invalid(m),
        other => BackendError::unavailable(other),
    }
}

#[async_trait]
impl SupportBackend for Database {
    async fn order(&self, order_id: &str) -> Result<Option<OrderDetail>, BackendError> {
        self.order_detail(order_id).await.map_err(backend_error)
    }

    async fn create_ticket(&self, ticket: &NewTicket) -> Result<Ticket, BackendError> {
        Database::create_ticket(self, ticket)
            .await
            .map_err(backend_error)
    }

    async fn search_knowledge(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ArticleHit>, BackendError> {
        Database::search_knowledge(self, query, limit)
            .await
            .map_err(backend_error)
    }

    async fn escalate(
        &self,
        session_id: &str,
        customer_id: Option<&str>,
        reason: &str,
    ) -> Result<(), BackendError> {
        // The server normally creates the conversation first; make sure it
        // exists so that an escalation is never lost.
        self.ensure_conversation(session_id, customer_id, &title_from(reason))
            .await
            .map_err(backend_error)?;
        // Through the one table of transitions; a conversation already
        // waiting (a step run again) or held by a person stays as it is.
        match self
            .change_handling(session_id, HandlingAction::Escalate, ESCALATED_BY)
            .await
        {
            Ok(_) | Err(DbError::Conflict(_)) => Ok(()),
            Err(e) => Err(backend_error(e)),
        }
    }
}
