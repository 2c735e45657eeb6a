//! `logistics_track`: the parcel's whole logistics timeline.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::backend::SupportBackend;
use super::order::{anomaly, event_json, load_order, with_fields, OrderArgs};
use crate::tool::{ToolContext, ToolError, TypedTool};

/// Tracks the parcel of an order.
pub struct LogisticsTrack(pub Arc<dyn SupportBackend>);

#[async_trait]
impl TypedTool for LogisticsTrack {
    type Args = OrderArgs;
    const NAME: &'static str = "logistics_track";
    const DESCRIPTION: &'static str =
        "Track the parcel of an order (e.g. ORD-123): carrier, tracking number \
         and every logistics event, oldest first, with any anomaly.";

    async fn run(&self, ctx: &ToolContext, args: OrderArgs) -> Result<Value, ToolError> {
        let d = load_order(self.0.as_ref(), ctx, &args.order_id).await?;
        let nested = [
            (
                "events",
                Value::Array(d.events.iter().map(event_json).collect()),
            ),
            ("latest_event", d.events.last().map(event_json).into()),
            ("anomaly", anomaly(&d).into()),
        ];
        let summary = json!({
            "order_id": d.order.id,
            "status": d.order.status,
            "carrier": d.order.carrier,
            "tracking_number": d.order.tracking_number,
            "promised_by": d.order.promised_by,
        });
        Ok(with_fields(summary, nested))
    }
}
