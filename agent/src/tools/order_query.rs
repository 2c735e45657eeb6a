//! `order_query`: an order's status, customer, items, total, promised date,
//! latest logistics event and any anomaly.

use std::sync::Arc;

use aics_types::money;
use async_trait::async_trait;
use serde_json::{json, Value};

use super::backend::SupportBackend;
use super::order::{anomaly, event_json, load_order, with_fields, OrderArgs};
use crate::support::Channel;
use crate::tool::{ToolContext, ToolError, TypedTool};

/// Looks up an order.
pub struct OrderQuery(pub Arc<dyn SupportBackend>);

#[async_trait]
impl TypedTool for OrderQuery {
    type Args = OrderArgs;
    const NAME: &'static str = "order_query";
    const DESCRIPTION: &'static str =
        "Look up an order by its id (e.g. ORD-123): status, customer, items, \
         total, promised delivery date, latest logistics event and any logistics anomaly.";

    async fn run(&self, ctx: &ToolContext, args: OrderArgs) -> Result<Value, ToolError> {
        let d = load_order(self.0.as_ref(), ctx, &args.order_id).await?;
        let items = d
            .items
            .iter()
            .map(|i| {
                json!({
                    "sku": i.sku,
                    "name": i.name,
                    "quantity": i.quantity,
                    "unit_price": money(i.unit_price_cents),
                })
            })
            .collect();
        let nested = [
            ("items", Value::Array(items)),
            ("latest_event", d.events.last().map(event_json).into()),
            ("anomaly", anomaly(&d).into()),
        ];
        let summary = json!({
            "order_id": d.order.id,
            "status": d.order.status,
            "total": money(d.order.total_cents),
            "currency": d.order.currency,
            "placed_at": d.order.placed_at,
            "promised_by": d.order.promised_by,
            "delivered_at": d.order.delivered_at,
            "carrier": d.order.carrier,
            "tracking_number": d.order.tracking_number,
        });
        let summary = with_fields(summary, nested);
        // On the customer channel the reader is whoever holds the link: the
        // owner's name and email stay out of what the model can repeat.
        Ok(match ctx.channel {
            Channel::Console => with_fields(
                summary,
                [(
                    "customer",
                    json!({ "id": d.customer.id, "name": d.customer.name, "email": d.customer.email }),
                )],
            ),
            Channel::Customer => summary,
        })
    }
}
