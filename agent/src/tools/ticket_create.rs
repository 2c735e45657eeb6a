//! `ticket_create`: opens a support ticket; the tool-call id is the
//! idempotency key. Which tickets wait for a supervisor is the approval
//! policy's to say (`crate::policy`; by default complaints, refunds and
//! tickets whose category contradicts the customer's words).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::{NewTicket, SupportBackend};
use super::check_text;
use super::order::{anomaly, load_order, normalize_order_id};
use crate::support::Channel;
use crate::tool::{ToolContext, ToolError, TypedTool};

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

/// Opens a support ticket.
pub struct TicketCreate(pub Arc<dyn SupportBackend>);

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

    async fn run(&self, ctx: &ToolContext, args: TicketArgs) -> Result<Value, ToolError> {
        let category = category_of(&args.category)?;
        let mut summary = check_text("summary", &args.summary)?;
        let order = match args
            .order_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(raw) => match load_order(self.0.as_ref(), ctx, raw).await {
                Ok(order) => Some(order),
                // On the customer channel an order that is not the verified
                // customer's is filed as words, unlinked, for a person to
                // check: the complaint is kept, the order stays unread.
                Err(ToolError::NotFound(_)) if ctx.channel == Channel::Customer => {
                    let id = normalize_order_id(raw)?;
                    summary = format!("{summary} (order {id}, not verified as this customer's)");
                    None
                }
                Err(e) => return Err(e),
            },
            None => None,
        };
        // The tool-call id is the idempotency key; a call without one (a
        // script, a test) still gets a ticket of its own rather than sharing "".
        let key = if ctx.tool_call_id.is_empty() {
            format!("anon-{}", uuid::Uuid::new_v4())
        } else {
            ctx.tool_call_id.clone()
        };
        // Complaints and refunds, and anything about an order with a
        // logistics anomaly, go to the front of the queue.
        let urgent = matches!(category.as_str(), "complaint" | "refund")
            || order.as_deref().and_then(anomaly).is_some();
        let priority = if urgent { "high" } else { "normal" };
        let customer_id = order
            .as_ref()
            .map(|o| o.customer.id.clone())
            .or_else(|| ctx.customer_id.clone());
        let ticket = self
            .0
            .create_ticket(&NewTicket {
                idempotency_key: key,
                order_id: order.as_ref().map(|o| o.order.id.clone()),
                customer_id,
                session_id: (!ctx.session_id.is_empty()).then(|| ctx.session_id.clone()),
                category,
                priority: priority.to_owned(),
                summary,
            })
            .await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    #[tokio::test]
    async fn the_same_call_id_opens_one_ticket() {
        let backend = Arc::new(crate::testing::FakeBackend::default());
        let t = TicketCreate(backend.clone());
        let ctx = ToolContext {
            tool_call_id: "call-1".into(),
            ..ToolContext::default()
        };
        let args = json!({"order_id": "123", "category": "complaint", "summary": "late"});
        let a = t.call(&ctx, args.clone()).await.unwrap();
        let b = t.call(&ctx, args).await.unwrap();
        assert_eq!(a["ticket_id"], b["ticket_id"]);
        assert_eq!(a["priority"], "high");
        assert_eq!(backend.tickets_created(), 1);
        let bad = t
            .call(&ctx, json!({"category": "praise", "summary": "s"}))
            .await;
        assert!(matches!(bad, Err(ToolError::InvalidArguments(_))));
    }
}
