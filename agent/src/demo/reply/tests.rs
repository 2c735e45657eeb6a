use serde_json::{json, Value};

use super::*;
use crate::demo::tests::latin_outside_quotes;
use crate::model::{Message, ModelRequest, ToolCall};

const COMPANY: Company<'static> = Company {
    en: "Northwind Gadgets",
    zh: "北风数码",
};

/// A request whose turn ran these calls: (tool, arguments, result).
fn answered(history: &[&str], message: &str, calls: &[(&str, Value, Value)]) -> String {
    let mut messages: Vec<Message> = history
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i % 2 == 0 {
                Message::user(*t)
            } else {
                Message::assistant(*t)
            }
        })
        .collect();
    messages.push(Message::user(message));
    for (i, (tool, args, result)) in calls.iter().enumerate() {
        let id = format!("c{i}");
        messages.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                provider_id: None,
                name: (*tool).into(),
                arguments: args.clone(),
            }],
        });
        messages.push(Message::Tool {
            tool_call_id: id,
            name: (*tool).into(),
            content: match result {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        });
    }
    let r = Reading::new(&ModelRequest::new(messages));
    compose(&r, COMPANY)
}

/// ORD-123 as the database's order_query returns it (db/src/tools.rs).
fn seed_order_123() -> Value {
    json!({
        "order_id": "ORD-123", "status": "delayed",
        "promised_by": "2026-03-09T08:00:00Z", "delivered_at": null,
        "carrier": "SF Express", "tracking_number": "SF7300000000",
        "latest_event": {"at": "2026-03-07T08:00:00Z", "location": "Wuhan sorting centre",
            "status": "exception", "anomaly": true,
            "description": "Held at the Wuhan sorting centre: sorting backlog, no onward scan since"},
        "anomaly": {"description": "Stuck at the Wuhan sorting centre for 5 days (sorting backlog); the promised delivery date has passed",
            "days_overdue": 3}
    })
}

fn order_args(id: &str) -> Value {
    json!({"order_id": id})
}

fn not_found(id: &str) -> Value {
    json!({"error": format!("not found: there is no order {id}")})
}

#[test]
fn an_unknown_order_gets_one_clarifying_question_and_no_error_text() {
    for message in [
        "Where is ORD-999? Please track it",
        "订单999到哪了，查一下物流",
    ] {
        let reply = answered(
            &[],
            message,
            &[
                ("order_query", order_args("ORD-999"), not_found("ORD-999")),
                (
                    "logistics_track",
                    order_args("ORD-999"),
                    not_found("ORD-999"),
                ),
            ],
        );
        assert_eq!(
            reply.matches(['?', '？']).count(),
            1,
            "one question: {reply}"
        );
        assert!(reply.contains("ORD-999"), "{reply}");
        for leak in ["not found", "there is no order", "error", "{"] {
            assert!(!reply.contains(leak), "{leak:?} in {reply}");
        }
    }
}

#[test]
fn a_failed_system_is_one_sentence_without_its_error() {
    let down = json!({"error": "the tool failed: database is locked"});
    let reply = answered(
        &[],
        "Where is ORD-123? Track it",
        &[
            ("order_query", order_args("ORD-123"), down.clone()),
            ("logistics_track", order_args("ORD-123"), down),
        ],
    );
    assert_eq!(
        reply,
        "I couldn't reach our order system just now, so I can't see that order yet. Please try again in a moment."
    );
}

#[test]
fn a_retried_call_leaves_no_trace_of_the_failed_attempt() {
    let reply = answered(
        &[],
        "where is ORD-123",
        &[
            (
                "refund_everything",
                order_args("ORD-123"),
                json!({"error": "unknown tool: refund_everything"}),
            ),
            (
                "order_query",
                json!("{\"order_id\": ORD-123"),
                json!({"error": "invalid arguments: expected a JSON object, got {\"order_id\": ORD-123"}),
            ),
            ("order_query", order_args("ORD-123"), seed_order_123()),
        ],
    );
    assert!(
        reply.starts_with("Your order ORD-123 is delayed."),
        "{reply}"
    );
    assert!(
        !reply.contains("invalid") && !reply.contains("unknown tool"),
        "{reply}"
    );
}

#[test]
fn the_seed_order_reads_whole_in_chinese() {
    let reply = answered(
        &[],
        "订单123到哪了",
        &[("order_query", order_args("ORD-123"), seed_order_123())],
    );
    assert_eq!(
        reply,
        "您的订单 ORD-123 当前状态：运输延误。最新动态：滞留在武汉分拣中心（分拣积压，此后没有新的扫描记录）。\
         物流异常：在武汉分拣中心滞留 5 天（分拣积压），已超过承诺送达时间。\
         订单 ORD-123 给您带来不便，非常抱歉，需要我为您提交投诉，由团队跟进处理吗？"
    );
    assert_eq!(latin_outside_quotes(&reply), Vec::<String>::new());
}

#[test]
fn tracking_in_chinese_names_the_carrier_in_chinese() {
    let track = json!({"order_id": "ORD-124", "status": "in_transit", "carrier": "SF Express",
        "tracking_number": "SF7300007919",
        "events": [{"description": "Departed the Shenzhen hub", "location": "Shenzhen hub"},
                   {"description": "Arrived at the Nanjing sorting centre", "location": "Nanjing sorting centre"}]});
    let order = json!({"order_id": "ORD-124", "status": "in_transit"});
    let reply = answered(
        &[],
        "ORD-124 的物流到哪了",
        &[
            ("order_query", order_args("ORD-124"), order),
            ("logistics_track", order_args("ORD-124"), track),
        ],
    );
    assert_eq!(
        reply,
        "您的订单 ORD-124 当前状态：运输中。顺丰速运（运单号 SF7300007919）最新物流信息：已到达南京分拣中心。"
    );
}

#[test]
fn carrier_text_without_a_translation_is_quoted_in_a_chinese_reply() {
    let order = json!({"order_id": "ORD-5", "status": "in_transit",
        "latest_event": {"status": "exception", "description": "Van broke down near Atlantis"},
        "anomaly": {"description": "Parcel rerouted via Atlantis"}});
    let reply = answered(
        &[],
        "订单5怎么样了",
        &[("order_query", order_args("ORD-5"), order)],
    );
    assert!(
        reply.contains("物流异常，承运商原文：“Van broke down near Atlantis”"),
        "{reply}"
    );
    assert!(
        reply.contains("承运商原文：“Parcel rerouted via Atlantis”"),
        "{reply}"
    );
    assert_eq!(
        latin_outside_quotes(&reply),
        Vec::<String>::new(),
        "{reply}"
    );
}

#[test]
fn follow_up_questions_get_a_direct_answer() {
    let history = [
        "Where is order 124?",
        "Your order ORD-124 is being prepared for shipment.",
    ];
    let processing = json!({"order_id": "ORD-124", "status": "processing"});
    let reply = answered(
        &history,
        "Has it shipped yet?",
        &[("order_query", order_args("ORD-124"), processing.clone())],
    );
    assert_eq!(
        reply,
        "Not yet — your order ORD-124 is still being prepared for shipment."
    );
    let delivered = json!({"order_id": "ORD-124", "status": "delivered",
        "delivered_at": "2026-03-02T10:00:00Z"});
    let reply = answered(
        &["订单124到哪了", "您的订单 ORD-124 当前状态：运输中。"],
        "它到了吗",
        &[("order_query", order_args("ORD-124"), delivered)],
    );
    assert_eq!(reply, "是的，您的订单 ORD-124 已于2026年3月2日签收。");
    let reply = answered(
        &["订单124到哪了", "……"],
        "那个订单发货了吗",
        &[("order_query", order_args("ORD-124"), processing)],
    );
    assert_eq!(reply, "还没有，您的订单 ORD-124 正在备货，尚未发货。");
}

#[test]
fn it_with_two_orders_in_play_is_a_question_not_a_guess() {
    let reply = answered(
        &[
            "Where are ORD-123 and ORD-124?",
            "Your order ORD-123 is delayed. Your order ORD-124 is on its way.",
        ],
        "Has it arrived?",
        &[],
    );
    assert_eq!(reply, "Which order do you mean: ORD-123 or ORD-124?");
}

#[test]
fn a_ticket_follow_up_names_the_ticket_and_the_help_center() {
    let kb = json!({"articles": [
        {"title": "How complaints are handled", "lang": "en", "category": "complaints", "snippet": "We acknowledge a complaint at once and give a first answer within 24 hours."},
        {"title": "投诉处理流程", "lang": "zh", "category": "complaints", "snippet": "我们会立即确认收到投诉，并在24小时内给出首次答复。"}]});
    let reply = answered(
        &[
            "…",
            "我已为您创建投诉工单 TCK-0042，相关团队会尽快跟进处理。",
        ],
        "那个工单怎么样了？",
        &[("knowledge_search", json!({"query": "投诉处理"}), kb)],
    );
    assert!(reply.starts_with("您之前的工单 TCK-0042"), "{reply}");
    assert!(
        reply.contains("根据帮助中心的「投诉处理流程」：我们会立即确认"),
        "{reply}"
    );
    assert_eq!(latin_outside_quotes(&reply), Vec::<String>::new());
}

#[test]
fn a_declined_ticket_says_so_in_both_languages() {
    let denied = Value::String("denied by supervisor: a ticket is already open".into());
    let args = json!({"order_id": "ORD-123", "category": "complaint", "summary": "late"});
    let en = answered(
        &[],
        "ORD-123 is late, I want to complain",
        &[
            ("order_query", order_args("ORD-123"), seed_order_123()),
            ("ticket_create", args.clone(), denied.clone()),
        ],
    );
    assert!(
        en.contains("declined it (a ticket is already open)"),
        "{en}"
    );
    assert!(
        !en.contains("Would you like"),
        "no offer after a decline: {en}"
    );
    let zh = answered(
        &[],
        "订单123延误了，我要投诉",
        &[
            ("order_query", order_args("ORD-123"), seed_order_123()),
            ("ticket_create", args, denied),
        ],
    );
    assert!(zh.contains("主管说明：“a ticket is already open”"), "{zh}");
    assert_eq!(latin_outside_quotes(&zh), Vec::<String>::new(), "{zh}");
}

#[test]
fn nothing_to_go_on_is_a_greeting_or_a_question_for_the_number() {
    assert!(answered(&[], "hi there", &[]).starts_with("Hello! I'm the Northwind Gadgets"));
    assert!(answered(&[], "你好", &[]).contains("北风数码"));
    assert_eq!(
        answered(&[], "我的包裹还没到", &[]),
        "请提供您的订单号（例如 ORD-123），我马上为您查询。"
    );
}
