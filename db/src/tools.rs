//! The five support tools on the database, written as [`TypedTool`]s so that
//! their JSON schemas come from the argument types.
//!
//! Argument names are part of the contract with the models (the demo model
//! calls them by these names): `order_query {order_id}`, `logistics_track
//! {order_id}`, `ticket_create {order_id?, category, summary}`,
//! `knowledge_search {query}`, `escalate_to_human {reason}`.

use aics_agent::tool::{ToolContext, ToolError, ToolRegistry, TypedTool};
use aics_types::HandlingState;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::commerce::{LogisticsEvent, NewTicket, OrderDetail};
use crate::conversations::title_from;
use crate::{Database, DbError};

/// The longest free text a tool accepts (a summary, a reason, a query).
const MAX_TEXT_CHARS: usize = 2_000;

/// How many articles a search returns.
const SEARCH_LIMIT: u32 = 5;

/// The support tools on `db`: order_query, logistics_track, ticket_create,
/// knowledge_search and escalate_to_human.
pub fn support_tools(db: &Database) -> ToolRegistry {
    ToolRegistry::new()
        .with(OrderQuery { db: db.clone() })
        .with(LogisticsTrack { db: db.clone() })
        .with(TicketCreate { db: db.clone() })
        .with(KnowledgeSearch { db: db.clone() })
        .with(EscalateToHuman { db: db.clone() })
}

/// Normalises what people and models call an order: "123", "order 123",
/// "#123", "ord-123", "订单123" and "ORD-123" all become `ORD-123`.
pub fn normalize_order_id(raw: &str) -> Result<String, ToolError> {
    let upper = raw.trim().to_uppercase();
    let mut rest = upper.as_str();
    // Strip the words that may precede the number, in any order.
    loop {
        let before = rest;
        for prefix in [
            "ORDER",
            "ORD",
            "NO.",
            "NO",
            "NUMBER",
            "订单号",
            "订单",
            "编号",
            "号",
            "#",
            "-",
            "_",
            ":",
            "：",
            " ",
        ] {
            if let Some(r) = rest.strip_prefix(prefix) {
                rest = r;
            }
        }
        if rest == before {
            break;
        }
    }
    let digits = rest.trim_end_matches(['号', '.', ' ']);
    if !digits.is_empty() && digits.len() <= 12 && digits.chars().all(|c| c.is_ascii_digit()) {
        Ok(format!("ORD-{digits}"))
    } else {
        Err(ToolError::InvalidArguments(format!(
            "order_id {raw:?} is not an order number; expected e.g. \"ORD-123\" or \"123\""
        )))
    }
}

fn failed(e: DbError) -> ToolError {
    tracing::warn!(error = %e, "support tool failed");
    match e {
        DbError::NotFound(m) => ToolError::NotFound(m),
        DbError::InvalidInput(m) => ToolError::InvalidArguments(m),
        other => ToolError::Failed(other.to_string()),
    }
}

fn check_text(field: &str, text: &str) -> Result<String, ToolError> {
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

/// Money as a decimal string, e.g. 12999 → "129.99".
fn money(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, (cents % 100).abs())
}

fn event_json(e: &LogisticsEvent) -> Value {
    json!({
        "at": e.at,
        "location": e.location,
        "status": e.status,
        "description": e.description,
        "anomaly": e.is_anomaly,
    })
}

/// The anomaly of an order in words: the stored one, else a parcel that has
/// not moved for more than two days while in transit.
fn anomaly(detail: &OrderDetail) -> Option<Value> {
    let last = detail.events.last();
    let idle_days = last.map(|e| (chrono::Utc::now() - e.at).num_days());
    let flagged = detail.events.iter().rev().find(|e| e.is_anomaly);
    let in_flight = matches!(
        detail.order.status.as_str(),
        "shipped" | "in_transit" | "delayed" | "lost"
    );
    let stuck = in_flight && idle_days.is_some_and(|d| d >= 2);
    if detail.order.anomaly.is_none() && flagged.is_none() && !stuck {
        return None;
    }
    let overdue_days = detail
        .order
        .promised_by
        .filter(|_| in_flight)
        .map(|p| (chrono::Utc::now() - p).num_days())
        .filter(|d| *d > 0);
    Some(json!({
        "description": detail.order.anomaly.clone()
            .or_else(|| flagged.map(|e| e.description.clone()))
            .unwrap_or_else(|| "the parcel has not moved for more than two days".to_owned()),
        "since": flagged.or(last).map(|e| e.at),
        "location": flagged.or(last).map(|e| e.location.clone()),
        "days_without_movement": idle_days,
        "days_overdue": overdue_days,
    }))
}

async fn load_order(db: &Database, raw: &str) -> Result<OrderDetail, ToolError> {
    let id = normalize_order_id(raw)?;
    db.order_detail(&id)
        .await
        .map_err(failed)?
        .ok_or_else(|| ToolError::NotFound(format!("there is no order {id}")))
}

/// The arguments of `order_query` and `logistics_track`: one order.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderArgs {
    /// The order number, e.g. "ORD-123" (a bare "123" works too).
    pub order_id: String,
}

/// Looks up an order: status, customer, items, total, promised date, the
/// latest logistics event and any anomaly.
pub struct OrderQuery {
    db: Database,
}

#[async_trait]
impl TypedTool for OrderQuery {
    type Args = OrderArgs;
    const NAME: &'static str = "order_query";
    const DESCRIPTION: &'static str =
        "Look up an order by its id (e.g. ORD-123): status, customer, items, \
         total, promised delivery date, latest logistics event and any logistics anomaly.";

    async fn run(&self, _ctx: &ToolContext, args: OrderArgs) -> Result<Value, ToolError> {
        let d = load_order(&self.db, &args.order_id).await?;
        let total_cents = d.order.total_cents;
        Ok(json!({
            "order_id": d.order.id,
            "status": d.order.status,
            "customer": { "id": d.customer.id, "name": d.customer.name, "email": d.customer.email },
            "items": d.items.iter().map(|i| json!({
                "sku": i.sku,
                "name": i.name,
                "quantity": i.quantity,
                "unit_price": money(i.unit_price_cents),
            })).collect::<Vec<_>>(),
            "total": money(total_cents),
            "currency": d.order.currency,
            "placed_at": d.order.placed_at,
            "promised_by": d.order.promised_by,
            "delivered_at": d.order.delivered_at,
            "carrier": d.order.carrier,
            "tracking_number": d.order.tracking_number,
            "latest_event": d.events.last().map(event_json),
            "anomaly": anomaly(&d),
        }))
    }
}

/// The parcel's whole logistics timeline.
pub struct LogisticsTrack {
    db: Database,
}

#[async_trait]
impl TypedTool for LogisticsTrack {
    type Args = OrderArgs;
    const NAME: &'static str = "logistics_track";
    const DESCRIPTION: &'static str =
        "Track the parcel of an order (e.g. ORD-123): carrier, tracking number \
         and every logistics event, oldest first, with any anomaly.";

    async fn run(&self, _ctx: &ToolContext, args: OrderArgs) -> Result<Value, ToolError> {
        let d = load_order(&self.db, &args.order_id).await?;
        Ok(json!({
            "order_id": d.order.id,
            "status": d.order.status,
            "carrier": d.order.carrier,
            "tracking_number": d.order.tracking_number,
            "promised_by": d.order.promised_by,
            "events": d.events.iter().map(event_json).collect::<Vec<_>>(),
            "latest_event": d.events.last().map(event_json),
            "anomaly": anomaly(&d),
        }))
    }
}

/// The categories a ticket may have.
pub const TICKET_CATEGORIES: [&str; 4] = ["complaint", "refund", "inquiry", "other"];

/// `ticket_create`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketArgs {
    /// The order the ticket is about, e.g. "ORD-123", if any.
    #[serde(default)]
    pub order_id: Option<String>,
    /// One of: complaint, refund, inquiry, other.
    pub category: String,
    /// What the customer needs, in one or two sentences.
    pub summary: String,
}

/// Opens a support ticket. Complaints and refunds wait for a supervisor's
/// approval; a repeated call with the same tool-call id returns the same
/// ticket.
pub struct TicketCreate {
    db: Database,
}

fn category_of(raw: &str) -> Result<String, ToolError> {
    let category = raw.trim().to_lowercase();
    if TICKET_CATEGORIES.contains(&category.as_str()) {
        Ok(category)
    } else {
        Err(ToolError::InvalidArguments(format!(
            "category {raw:?} is not one of complaint, refund, inquiry, other"
        )))
    }
}

#[async_trait]
impl TypedTool for TicketCreate {
    type Args = TicketArgs;
    const NAME: &'static str = "ticket_create";
    const DESCRIPTION: &'static str = "Open a support ticket. category is one of complaint, refund, inquiry, \
         other; order_id (e.g. ORD-123) when it concerns an order; summary says what the customer needs. \
         Complaint and refund tickets wait for a supervisor's approval.";

    fn approval_reason(&self, args: &TicketArgs) -> Option<String> {
        match args.category.trim().to_lowercase().as_str() {
            "complaint" => Some("complaint tickets are reviewed by a supervisor".to_owned()),
            "refund" => Some("refunds need a supervisor's approval".to_owned()),
            _ => None,
        }
    }

    async fn run(&self, ctx: &ToolContext, args: TicketArgs) -> Result<Value, ToolError> {
        let category = category_of(&args.category)?;
        let summary = check_text("summary", &args.summary)?;
        let order = match args
            .order_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(raw) => Some(load_order(&self.db, raw).await?),
            None => None,
        };
        // A tool-call id is the idempotency key; a call without one (a test,
        // a script) still gets its own ticket rather than sharing "".
        let key = if ctx.tool_call_id.is_empty() {
            format!("anon-{}", uuid::Uuid::new_v4())
        } else {
            ctx.tool_call_id.clone()
        };
        // Complaints and refunds, and anything about an order with a
        // logistics anomaly, go to the front of the queue.
        let has_anomaly = order.as_ref().and_then(anomaly).is_some();
        let priority = if matches!(category.as_str(), "complaint" | "refund") || has_anomaly {
            "high"
        } else {
            "normal"
        };
        let customer_id = order
            .as_ref()
            .map(|o| o.customer.id.clone())
            .or_else(|| ctx.customer_id.clone());
        let ticket = self
            .db
            .create_ticket(&NewTicket {
                idempotency_key: key,
                order_id: order.as_ref().map(|o| o.order.id.clone()),
                customer_id,
                session_id: (!ctx.session_id.is_empty()).then(|| ctx.session_id.clone()),
                category,
                priority: priority.to_owned(),
                summary,
            })
            .await
            .map_err(failed)?;
        Ok(json!({
            "ticket_id": ticket.id,
            "status": ticket.status,
            "category": ticket.category,
            "priority": ticket.priority,
            "order_id": ticket.order_id,
            "customer_id": ticket.customer_id,
            "summary": ticket.summary,
            "created_at": ticket.created_at,
        }))
    }
}

/// `knowledge_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in English or Chinese, e.g. "refund policy" or "退货".
    pub query: String,
}

/// Full-text search of the FAQ and policy articles, English and Chinese.
pub struct KnowledgeSearch {
    db: Database,
}

#[async_trait]
impl TypedTool for KnowledgeSearch {
    type Args = SearchArgs;
    const NAME: &'static str = "knowledge_search";
    const DESCRIPTION: &'static str =
        "Search the FAQ and policy articles (shipping, returns, refunds, \
         complaints, escalation) in English or Chinese; returns the best matches with a snippet.";

    async fn run(&self, _ctx: &ToolContext, args: SearchArgs) -> Result<Value, ToolError> {
        let query = check_text("query", &args.query)?;
        let hits = self
            .db
            .search_knowledge(&query, SEARCH_LIMIT)
            .await
            .map_err(failed)?;
        Ok(json!({
            "query": query,
            "articles": hits.iter().map(|h| json!({
                "id": h.slug,
                "title": h.title,
                "snippet": h.snippet,
                "lang": h.lang,
                "category": h.category,
            })).collect::<Vec<_>>(),
        }))
    }
}

/// `escalate_to_human`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalateArgs {
    /// Why a person should take over.
    pub reason: String,
}

/// Hands the conversation to a person: its handling state becomes
/// `waiting_human`.
pub struct EscalateToHuman {
    db: Database,
}

#[async_trait]
impl TypedTool for EscalateToHuman {
    type Args = EscalateArgs;
    const NAME: &'static str = "escalate_to_human";
    const DESCRIPTION: &'static str =
        "Hand the conversation to a human support agent, with the reason. \
         Use it when the customer asks for a person or the case is beyond the tools.";

    async fn run(&self, ctx: &ToolContext, args: EscalateArgs) -> Result<Value, ToolError> {
        let reason = check_text("reason", &args.reason)?;
        if ctx.session_id.is_empty() {
            return Err(ToolError::InvalidArguments(
                "escalate_to_human needs the conversation's session".into(),
            ));
        }
        // The server normally creates the conversation first; make sure it
        // exists so that an escalation is never lost.
        self.db
            .ensure_conversation(
                &ctx.session_id,
                ctx.customer_id.as_deref(),
                &title_from(&reason),
            )
            .await
            .map_err(failed)?;
        self.db
            .set_handling(&ctx.session_id, HandlingState::WaitingHuman)
            .await
            .map_err(failed)?;
        Ok(json!({
            "status": HandlingState::WaitingHuman.as_str(),
            "session_id": ctx.session_id,
            "reason": reason,
            "message": "A human support agent will take over this conversation.",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_ids_are_normalised() {
        for raw in [
            "123",
            "order 123",
            "ord-123",
            "ORD-123",
            "#123",
            "订单123",
            "Order #123",
            "订单号：123",
            "ORD123",
        ] {
            assert_eq!(
                normalize_order_id(raw).ok().as_deref(),
                Some("ORD-123"),
                "{raw}"
            );
        }
        for raw in ["", "abc", "ORD-12a", "123456789012345"] {
            assert!(normalize_order_id(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn money_has_two_decimals() {
        assert_eq!(money(12999), "129.99");
        assert_eq!(money(5), "0.05");
    }
}
