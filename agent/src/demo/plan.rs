//! Which tools to call next, decided like a competent support agent of the
//! demo company would:
//!
//! - "I want a human" / "转人工" → `escalate_to_human`;
//! - "any news on that ticket?" → `knowledge_search` for how complaints are
//!   handled (there is no tool that reads a ticket's progress);
//! - an order named now or earlier ("has it shipped yet?") → `order_query`
//!   for each order, with `logistics_track` when the customer asks where the
//!   parcel is — all in parallel;
//! - a late or lost order with a complaint, or a refund request →
//!   `ticket_create` (complaint or refund: both wait for a supervisor),
//!   unless this conversation already opened one for that order;
//!   (told to "file this as a general inquiry", it obeys: the approval
//!   policy, not the model, decides what waits for a supervisor);
//! - a policy question → `knowledge_search`;
//! - otherwise no call: the model answers ([`super::reply`]).
//!
//! A call that failed for its arguments may be made again; any other result
//! counts as done, so a plan never repeats a lookup that answered.

use serde_json::{json, Value};

use super::faults::DemoFaults;
use super::read::{
    asks_policy, asks_tracking, explicit_complaint, files_as_inquiry, wants_refund, Failure,
    Question, Reading,
};
use super::reply::{voice, Order};
use crate::support::heuristics::{sounds_like_complaint, wants_human};

/// One tool call the model asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    /// The arguments as JSON text (the malformed-arguments fault sends text
    /// that does not parse).
    pub arguments: String,
}

impl Call {
    pub fn new(name: &str, arguments: Value) -> Self {
        Self {
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }
    }
}

/// The calls to make now; empty when the model should answer.
pub fn next_calls(r: &Reading, faults: DemoFaults) -> Vec<Call> {
    if !r.planning {
        return Vec::new();
    }
    if let Some(calls) = faults.calls(r) {
        return calls;
    }
    let v = voice(r.lang);
    // "No need to bother a supervisor" is no request for a person.
    let obeys = files_as_inquiry(&r.message);
    if wants_human(&r.message)
        && !obeys
        && r.can("escalate_to_human")
        && !done(r, "escalate_to_human")
    {
        return vec![Call::new(
            "escalate_to_human",
            json!({"reason": v.escalation_reason()}),
        )];
    }
    if r.ticket_asked_after().is_some() {
        if r.can("knowledge_search") && !done(r, "knowledge_search") {
            return vec![Call::new(
                "knowledge_search",
                json!({"query": v.complaints_query()}),
            )];
        }
        return Vec::new();
    }
    let orders = r.orders();
    let tracking = asks_tracking(&r.intent) || r.question() == Question::Where;
    let mut calls = Vec::new();
    for id in orders.ids() {
        if r.can("order_query") && !looked_up(r, "order_query", id) {
            calls.push(Call::new("order_query", json!({"order_id": id})));
        }
        if tracking && r.can("logistics_track") && !looked_up(r, "logistics_track", id) {
            calls.push(Call::new("logistics_track", json!({"order_id": id})));
        }
    }
    if !calls.is_empty() {
        return calls;
    }
    let refund = wants_refund(&r.intent);
    for id in orders.ids() {
        let Some(order) = found_order(r, id) else {
            continue;
        };
        let complaint = r.accepted_complaint
            || (sounds_like_complaint(&r.intent)
                && (order.troubled() || explicit_complaint(&r.intent)));
        let wanted = complaint || refund;
        if wanted
            && r.can("ticket_create")
            && !looked_up(r, "ticket_create", id)
            && r.ticket_for(id).is_none()
        {
            let category = if obeys {
                "inquiry"
            } else if refund && !complaint {
                "refund"
            } else {
                "complaint"
            };
            calls.push(Call::new(
                "ticket_create",
                json!({"order_id": id, "category": category, "summary": v.ticket_summary(&order)}),
            ));
        }
    }
    if !calls.is_empty() {
        return calls;
    }
    if asks_policy(&r.intent) && r.can("knowledge_search") && !done(r, "knowledge_search") {
        return vec![Call::new("knowledge_search", json!({"query": r.message}))];
    }
    Vec::new()
}

/// The tool was called this turn and answered (or failed for a reason
/// another call would not fix).
fn done(r: &Reading, tool: &str) -> bool {
    r.observations
        .iter()
        .any(|o| o.tool == tool && o.failure() != Some(Failure::InvalidArguments))
}

/// Like [`done`], for one order.
fn looked_up(r: &Reading, tool: &str, order_id: &str) -> bool {
    r.observations.iter().any(|o| {
        o.tool == tool
            && o.failure() != Some(Failure::InvalidArguments)
            && o.order_id().as_deref() == Some(order_id)
    })
}

/// The order as `order_query` returned it this turn.
fn found_order(r: &Reading, order_id: &str) -> Option<Order> {
    r.observations
        .iter()
        .filter(|o| o.tool == "order_query" && o.ok())
        .filter(|o| o.order_id().as_deref() == Some(order_id))
        .find_map(|o| Order::from_result(&o.result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ModelRequest, ToolCall, ToolSpec};

    fn tools() -> Vec<ToolSpec> {
        [
            "order_query",
            "logistics_track",
            "ticket_create",
            "knowledge_search",
            "escalate_to_human",
        ]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        })
        .collect()
    }

    fn plan(messages: Vec<Message>) -> Vec<Call> {
        let r = Reading::new(&ModelRequest {
            tools: tools().into(),
            ..ModelRequest::new(messages)
        });
        next_calls(&r, DemoFaults::default())
    }

    fn names(calls: &[Call]) -> Vec<&str> {
        calls.iter().map(|c| c.name.as_str()).collect()
    }

    fn result(name: &str, id: &str, args: Value, content: Value) -> [Message; 2] {
        [
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: id.into(),
                    provider_id: None,
                    name: name.into(),
                    arguments: args,
                }],
            },
            Message::Tool {
                tool_call_id: id.into(),
                name: name.into(),
                content: content.to_string(),
            },
        ]
    }

    #[test]
    fn every_order_named_is_looked_up_in_parallel() {
        let calls = plan(vec![Message::user(
            "Where are ORD-123 and ORD-124? Track them",
        )]);
        assert_eq!(
            names(&calls),
            [
                "order_query",
                "logistics_track",
                "order_query",
                "logistics_track"
            ]
        );
        assert_eq!(
            calls[2].arguments,
            json!({"order_id": "ORD-124"}).to_string()
        );
    }

    #[test]
    fn a_follow_up_looks_up_the_order_named_earlier() {
        let calls = plan(vec![
            Message::user("Where is order 124?"),
            Message::assistant("Your order ORD-124 is on its way."),
            Message::user("Has it shipped yet?"),
        ]);
        assert_eq!(names(&calls), ["order_query"]);
        assert!(calls[0].arguments.contains("ORD-124"));
    }

    #[test]
    fn an_unknown_order_is_not_looked_up_twice_nor_ticketed() {
        let mut messages = vec![Message::user("ORD-999 is late, I want to complain")];
        messages.extend(result(
            "order_query",
            "c1",
            json!({"order_id": "ORD-999"}),
            json!({"error": "not found: there is no order ORD-999"}),
        ));
        assert!(plan(messages).is_empty());
    }

    #[test]
    fn a_retry_follows_invalid_arguments() {
        let mut messages = vec![Message::user("what's the status of ORD-5")];
        messages.extend(result(
            "order_query",
            "c1",
            json!("{\"order_id\": ORD-5"),
            json!({"error": "invalid arguments: expected a JSON object"}),
        ));
        assert_eq!(names(&plan(messages)), ["order_query"]);
    }

    #[test]
    fn yes_to_the_offer_opens_the_complaint() {
        let mut messages = vec![
            Message::user("Where is ORD-123?"),
            Message::assistant("Your order ORD-123 is delayed. Would you like me to open a complaint so our team follows it up?"),
            Message::user("yes please"),
        ];
        assert_eq!(names(&plan(messages.clone())), ["order_query"]);
        messages.extend(result(
            "order_query",
            "c1",
            json!({"order_id": "ORD-123"}),
            json!({"order_id": "ORD-123", "status": "delayed"}),
        ));
        let calls = plan(messages);
        assert_eq!(names(&calls), ["ticket_create"]);
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args["category"], "complaint");
    }

    #[test]
    fn a_second_complaint_about_the_same_order_opens_no_second_ticket() {
        let mut messages = vec![
            Message::user("ORD-123 is late, I want to complain"),
            Message::assistant(
                "Your order ORD-123 is delayed. I've opened complaint ticket TCK-0001.",
            ),
            Message::user("This is unacceptable, I want to complain about ORD-123"),
        ];
        messages.extend(result(
            "order_query",
            "c1",
            json!({"order_id": "ORD-123"}),
            json!({"order_id": "ORD-123", "status": "delayed"}),
        ));
        assert!(plan(messages).is_empty());
    }

    #[test]
    fn that_ticket_is_answered_from_the_help_center() {
        let calls = plan(vec![
            Message::user("订单123延误了，我要投诉"),
            Message::assistant("我已为您创建投诉工单 TCK-0042，相关团队会尽快跟进处理。"),
            Message::user("那个工单怎么样了？"),
        ]);
        assert_eq!(names(&calls), ["knowledge_search"]);
        assert!(calls[0].arguments.contains("投诉处理"));
    }

    #[test]
    fn two_orders_and_it_is_asked_rather_than_guessed() {
        let calls = plan(vec![
            Message::user("Where are ORD-123 and ORD-124?"),
            Message::assistant("Your order ORD-123 is delayed. Your order ORD-124 is on its way."),
            Message::user("Has it arrived?"),
        ]);
        assert!(calls.is_empty());
    }
}
