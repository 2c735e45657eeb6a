//! The five support tools, defined once: their names, argument types,
//! descriptions, approval policy and the JSON the model sees, over one
//! [`SupportBackend`] that holds the shop's data. aics-db implements the
//! backend on SQL, [`crate::testing`] on a fixed data set, the benchmark on
//! its own; each gets the very same tools from [`support_tools`].
//!
//! Adding a tool is one file here (its arguments, description, policy and
//! result) plus the backend method it needs; docs/ARCHITECTURE.md walks
//! through it.
//!
//! # Layout
//! - [`backend`]: [`SupportBackend`], [`NewTicket`], [`BackendError`].
//! - [`order`]: order ids as people write them, the order's JSON and its
//!   logistics anomaly (shared by `order_query` and `logistics_track`).
//! - one module per tool: [`order_query`], [`logistics_track`],
//!   [`ticket_create`], [`knowledge_search`], [`escalate_to_human`].

pub mod backend;
pub mod escalate_to_human;
pub mod knowledge_search;
pub mod logistics_track;
pub mod order;
pub mod order_query;
pub mod reads;
pub mod ticket_create;

use std::sync::Arc;

pub use backend::{BackendError, NewTicket, SupportBackend};
pub use order::normalize_order_id;
pub use reads::StepReads;
pub use ticket_create::TICKET_CATEGORIES;

use crate::tool::{ToolError, ToolRegistry, TypedTool};

/// The longest free text a tool accepts (a summary, a reason, a query).
pub const MAX_TEXT_CHARS: usize = 2_000;

/// The names of the tools [`support_tools`] registers (metrics fold any
/// other name a model makes up into `other`).
pub const SUPPORT_TOOL_NAMES: [&str; 5] = [
    <order_query::OrderQuery as TypedTool>::NAME,
    <logistics_track::LogisticsTrack as TypedTool>::NAME,
    <ticket_create::TicketCreate as TypedTool>::NAME,
    <knowledge_search::KnowledgeSearch as TypedTool>::NAME,
    <escalate_to_human::EscalateToHuman as TypedTool>::NAME,
];

/// The support tools over `backend`: order_query, logistics_track,
/// ticket_create, knowledge_search and escalate_to_human.
pub fn support_tools(backend: Arc<dyn SupportBackend>) -> ToolRegistry {
    ToolRegistry::new()
        .with(order_query::OrderQuery(backend.clone()))
        .with(logistics_track::LogisticsTrack(backend.clone()))
        .with(ticket_create::TicketCreate(backend.clone()))
        .with(knowledge_search::KnowledgeSearch(backend.clone()))
        .with(escalate_to_human::EscalateToHuman(backend))
}

/// A trimmed, non-empty text of at most [`MAX_TEXT_CHARS`] characters,
/// without control characters (a model can emit a NUL, which PostgreSQL
/// cannot store).
pub(crate) fn check_text(field: &str, text: &str) -> Result<String, ToolError> {
    aics_types::validate_text(field, text).map_err(ToolError::InvalidArguments)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "{field} must not be empty"
        )));
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(ToolError::InvalidArguments(format!(
            "{field} must be at most {MAX_TEXT_CHARS} characters"
        )));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_trimmed_and_bounded() {
        assert_eq!(check_text("q", "  refund ").unwrap(), "refund");
        assert!(check_text("q", "   ").is_err());
        assert!(check_text("q", &"x".repeat(MAX_TEXT_CHARS + 1)).is_err());
        assert!(check_text("q", "late\0 order").is_err());
        assert_eq!(check_text("q", "two\nlines").unwrap(), "two\nlines");
    }

    #[test]
    fn the_registry_has_the_five_tools() {
        let tools = support_tools(Arc::new(crate::testing::FakeBackend::default()));
        let names: Vec<&str> = tools.names().collect();
        assert_eq!(
            names,
            [
                "escalate_to_human",
                "knowledge_search",
                "logistics_track",
                "order_query",
                "ticket_create"
            ]
        );
        let mut known = SUPPORT_TOOL_NAMES.to_vec();
        known.sort_unstable();
        assert_eq!(names, known);
    }
}
