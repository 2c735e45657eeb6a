//! Orders as the tools show them: ids as people write them, the argument
//! type of the order tools, the events and the logistics anomaly in JSON.

use std::sync::Arc;

use aics_types::{LogisticsEvent, OrderDetail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::SupportBackend;
use crate::support::Channel;
use crate::tool::{ToolContext, ToolError};

/// The arguments of `order_query` and `logistics_track`: one order.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderArgs {
    /// The order number, e.g. "ORD-123" (a bare "123" works too).
    pub order_id: String,
}

/// Normalises what people and models call an order: "123", "order 123",
/// "#123", "ord-123", "订单123" and "ORD-123" all become `ORD-123`.
pub fn normalize_order_id(raw: &str) -> Result<String, ToolError> {
    // What models send nearly always: the id as the tools write it.
    if let Some(digits) = raw.strip_prefix("ORD-") {
        if is_order_number(digits) {
            return Ok(raw.to_owned());
        }
    }
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
    if is_order_number(digits) {
        Ok(format!("ORD-{digits}"))
    } else {
        Err(ToolError::InvalidArguments(format!(
            "order_id {raw:?} is not an order number; expected e.g. \"ORD-123\" or \"123\""
        )))
    }
}

/// Whether `digits` is the number of an order: 1 to 12 ASCII digits.
pub(crate) fn is_order_number(digits: &str) -> bool {
    !digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|c| c.is_ascii_digit())
}

/// The order `raw` names, as this step read it
/// ([`crate::tools::StepReads`]), when this turn may see it; else the
/// error result the model sees. Staff see every order; on the customer
/// channel only the orders of the conversation's verified customer, and
/// another customer's order gets the same answer as a missing one, so
/// that sequential order numbers cannot be probed.
pub(crate) async fn load_order(
    backend: &dyn SupportBackend,
    ctx: &ToolContext,
    raw: &str,
) -> Result<Arc<OrderDetail>, ToolError> {
    let id = normalize_order_id(raw)?;
    let order = ctx.reads.order(backend, &id).await?;
    match (ctx.channel, order) {
        (Channel::Console, Some(order)) => Ok(order),
        (Channel::Console, None) => Err(ToolError::NotFound(format!("there is no order {id}"))),
        (Channel::Customer, Some(order)) if is_theirs(ctx, &order) => Ok(order),
        (Channel::Customer, _) => Err(not_shown(ctx, &id)),
    }
}

/// Whether `order` belongs to the conversation's (verified) customer.
pub(crate) fn is_theirs(ctx: &ToolContext, order: &OrderDetail) -> bool {
    ctx.customer_id.as_deref() == Some(order.customer.id.as_str())
}

/// What the model reads when the customer channel may not show an order.
fn not_shown(ctx: &ToolContext, id: &str) -> ToolError {
    ToolError::NotFound(match ctx.customer_id {
        Some(_) => format!("there is no order {id} on this customer's account"),
        None => format!(
            "order {id} cannot be shown: this customer's identity is not verified. \
             Do not guess its status; offer to hand the conversation to a colleague \
             who can verify them"
        ),
    })
}

/// `object` (a `json!` object) with `fields` moved in. `json!` writes each
/// field it is given through `to_value(&field)`, a deep copy for a field
/// that is already a [`Value`]; the nested parts of a tool's result are
/// built as values and moved in here instead.
pub(crate) fn with_fields<const N: usize>(mut object: Value, fields: [(&str, Value); N]) -> Value {
    if let Value::Object(map) = &mut object {
        for (key, value) in fields {
            map.insert(key.to_owned(), value);
        }
    }
    object
}

pub(crate) fn event_json(e: &LogisticsEvent) -> Value {
    json!({
        "at": e.at,
        "location": e.location,
        "status": e.status,
        "description": e.description,
        "anomaly": e.is_anomaly,
    })
}

/// The anomaly of an order in words: the stored one, else the last flagged
/// event, else a parcel that has not moved for more than two days while in
/// transit.
pub(crate) fn anomaly(detail: &OrderDetail) -> Option<Value> {
    let now = chrono::Utc::now();
    let last = detail.events.last();
    let idle_days = last.map(|e| (now - e.at).num_days());
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
        .map(|p| (now - p).num_days())
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
        assert_eq!(
            normalize_order_id("ORD-000123").ok().as_deref(),
            Some("ORD-000123")
        );
        for raw in [
            "",
            "abc",
            "ORD-12a",
            "123456789012345",
            "ORD-",
            "ORD-1234567890123",
            "ORD-١٢٣",
        ] {
            assert!(normalize_order_id(raw).is_err(), "{raw}");
        }
    }
}
