use super::*;
use crate::model::{collect_response, Message, ToolCall, ToolSpec};
use crate::support::prompt::{plan_instruction, PLAN_MARKER};
use crate::tool::{ToolContext, ToolError};

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    }
}

fn all_tools() -> Vec<ToolSpec> {
    [
        "order_query",
        "logistics_track",
        "ticket_create",
        "knowledge_search",
        "escalate_to_human",
    ]
    .into_iter()
    .map(spec)
    .collect()
}

fn native(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        tools: all_tools().into(),
        ..ModelRequest::new(messages)
    }
}

async fn respond(model: &DemoModel, request: ModelRequest) -> crate::model::ModelResponse {
    collect_response(model.stream(request).await.unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_order_question_becomes_order_query() {
    let r = respond(
        &DemoModel::instant(),
        native(vec![Message::user("订单123到哪了")]),
    )
    .await;
    assert_eq!(r.tool_calls[0].name, "order_query");
    assert_eq!(r.tool_calls[0].arguments, json!({"order_id": "ORD-123"}));
    assert!(r.usage.is_some());
}

#[tokio::test]
async fn a_delayed_order_with_a_complaint_gets_a_complaint_ticket() {
    let order = json!({"order_id": "ORD-123", "status": "delayed"}).to_string();
    let r = respond(
        &DemoModel::instant(),
        native(vec![
            Message::user("Order ORD-123 is a week late, I want to complain"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![],
            },
            Message::Tool {
                tool_call_id: "1".into(),
                name: "order_query".into(),
                content: order,
            },
        ]),
    )
    .await;
    assert_eq!(r.tool_calls[0].name, "ticket_create");
    assert_eq!(r.tool_calls[0].arguments["category"], "complaint");
    assert_eq!(r.tool_calls[0].arguments["order_id"], "ORD-123");
}

#[tokio::test]
async fn answers_state_the_tool_results_in_the_customers_language() {
    let ticket =
        json!({"ticket_id": "TCK-0042", "status": "open", "category": "complaint"}).to_string();
    let order = json!({"order_id": "ORD-9", "status": "lost"}).to_string();
    let msgs = |user: &str| {
        vec![
            Message::user(user),
            Message::Tool {
                tool_call_id: "1".into(),
                name: "order_query".into(),
                content: order.clone(),
            },
            Message::Tool {
                tool_call_id: "2".into(),
                name: "ticket_create".into(),
                content: ticket.clone(),
            },
        ]
    };
    let en = respond(
        &DemoModel::instant(),
        ModelRequest::new(msgs("ORD-9 lost, complain")),
    )
    .await;
    assert!(
        en.content.contains("ORD-9 is reported lost") && en.content.contains("TCK-0042"),
        "{}",
        en.content
    );
    let zh = respond(
        &DemoModel::instant(),
        ModelRequest::new(msgs("订单9丢了，我要投诉")),
    )
    .await;
    assert!(
        zh.content.contains("丢失") && zh.content.contains("TCK-0042"),
        "{}",
        zh.content
    );
}

#[tokio::test]
async fn in_plan_mode_it_writes_a_json_plan() {
    let system = format!("persona{}", plan_instruction(&all_tools(), ""));
    assert!(system.contains(PLAN_MARKER));
    let r = respond(
        &DemoModel::instant(),
        ModelRequest::new(vec![
            Message::system(system),
            Message::user("where is ORD-5"),
        ]),
    )
    .await;
    let plan: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(plan["action"], "call_tool");
    assert_eq!(plan["toolName"], "order_query");
    assert_eq!(plan["toolInput"]["order_id"], "ORD-5");
}

#[tokio::test]
async fn a_logistics_anomaly_counts_as_trouble_and_is_reported() {
    let order = json!({"order_id": "ORD-7", "status": "in_transit",
        "latest_event": {"description": "Arrived at Wuhan hub", "location": "Wuhan"},
        "anomaly": {"description": "the parcel has not moved for more than two days"}})
    .to_string();
    let msgs = vec![
        Message::user("ORD-7 still not here, I want to complain"),
        Message::Tool {
            tool_call_id: "1".into(),
            name: "order_query".into(),
            content: order,
        },
    ];
    let plan = respond(&DemoModel::instant(), native(msgs.clone())).await;
    assert_eq!(plan.tool_calls[0].name, "ticket_create");
    let answer = respond(&DemoModel::instant(), ModelRequest::new(msgs)).await;
    assert!(
        answer.content.contains("Arrived at Wuhan hub"),
        "{}",
        answer.content
    );
    assert!(
        answer.content.contains("not moved for more than two days"),
        "{}",
        answer.content
    );
}

#[tokio::test]
async fn a_greeting_is_answered_directly() {
    let r = respond(
        &DemoModel::instant(),
        native(vec![Message::user("hi there")]),
    )
    .await;
    assert!(r.tool_calls.is_empty());
    assert!(r.content.contains("Northwind Gadgets"));
}

#[tokio::test]
async fn the_error_fault_fails_mid_stream() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        faults: DemoFaults {
            error: true,
            ..Default::default()
        },
        ..Default::default()
    });
    let err = collect_response(
        model
            .stream(native(vec![Message::user("hi")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(matches!(err, Err(ModelError::Injected(_))));
}

#[tokio::test]
async fn markers_only_count_when_message_faults_are_on() {
    let off = respond(
        &DemoModel::instant(),
        native(vec![Message::user("ORD-1 [fault:unknown_tool]")]),
    )
    .await;
    assert_eq!(off.tool_calls[0].name, "order_query");
    let on = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        message_faults: true,
        ..Default::default()
    });
    let r = respond(
        &on,
        native(vec![Message::user("ORD-1 [fault:unknown_tool]")]),
    )
    .await;
    assert_eq!(r.tool_calls[0].name, "refund_everything");
    assert!(DemoFaults::from_message("[fault:repeat]").repeat_call);
}

#[tokio::test(start_paused = true)]
async fn tokens_are_paced_by_the_configured_delay() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::from_millis(20),
        ..Default::default()
    });
    let started = tokio::time::Instant::now();
    let r = respond(&model, ModelRequest::new(vec![Message::user("hi there")])).await;
    let n = tokenize(&r.content).len() as u32;
    assert!(started.elapsed() >= Duration::from_millis(20) * n);
}

/// Latin-script words of a Chinese reply outside quotations (“…”, 「…」),
/// order and ticket ids, and tracking numbers: what must be empty for a
/// reply that stays in Chinese.
pub(crate) fn latin_outside_quotes(text: &str) -> Vec<String> {
    let mut outside = String::new();
    let mut depth = 0_u32;
    for c in text.chars() {
        match c {
            '“' | '「' => depth += 1,
            '”' | '」' => depth = depth.saturating_sub(1),
            _ if depth == 0 => outside.push(c),
            _ => outside.push(' '),
        }
    }
    let is_id = |w: &str| {
        w.starts_with("ORD-")
            || w.starts_with("TCK-")
            || w == "DHL"
            || (w.len() >= 8
                && w[..2].chars().all(|c| c.is_ascii_uppercase())
                && w[2..].chars().all(|c| c.is_ascii_digit()))
    };
    outside
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.chars().any(|c| c.is_ascii_alphabetic()) && !is_id(w))
        .map(str::to_owned)
        .collect()
}

/// One customer turn as the support graph runs it (native protocol, every
/// call executed against the fake tools, approvals granted): the reply and
/// the calls made. The history grows by the message and the reply, as the
/// service stores them.
async fn converse(history: &mut Vec<Message>, message: &str) -> (String, Vec<ToolCall>) {
    let model = DemoModel::instant();
    let tools = crate::testing::fake_tools();
    history.push(Message::user(message));
    let mut turn = history.clone();
    let mut made = Vec::new();
    for _ in 0..6 {
        let r = respond(
            &model,
            ModelRequest {
                tools: tools.specs(),
                ..ModelRequest::new(turn.clone())
            },
        )
        .await;
        if r.tool_calls.is_empty() {
            history.push(Message::assistant(r.content.clone()));
            return (r.content, made);
        }
        let mut calls = r.tool_calls;
        // Ours, as the engine gives them.
        for c in &mut calls {
            c.id = crate::support::nodes::new_call_id();
        }
        turn.push(Message::Assistant {
            content: r.content,
            tool_calls: calls.clone(),
        });
        for c in calls {
            let ctx = ToolContext {
                session_id: "demo-conversation".into(),
                tool_call_id: c.id.clone(),
                ..Default::default()
            };
            let result = match tools.get(&c.name) {
                Some(t) => t.call(&ctx, c.arguments.clone()).await,
                None => Err(ToolError::UnknownTool(c.name.clone())),
            };
            let content = match result {
                Ok(Value::String(s)) => s,
                Ok(v) => v.to_string(),
                Err(e) => json!({"error": e.to_string()}).to_string(),
            };
            turn.push(Message::Tool {
                tool_call_id: c.id.clone(),
                name: c.name.clone(),
                content,
            });
            made.push(c);
        }
    }
    panic!("the demo model did not answer: {turn:?}")
}

fn called(calls: &[ToolCall]) -> Vec<(&str, String)> {
    calls
        .iter()
        .map(|c| {
            let arg = c.arguments["order_id"]
                .as_str()
                .or(c.arguments["category"].as_str())
                .unwrap_or_default();
            (c.name.as_str(), arg.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn english_follow_ups_mean_the_order_named_earlier() {
    let mut chat = Vec::new();
    let (reply, calls) = converse(&mut chat, "Where is order 111?").await;
    assert_eq!(
        called(&calls),
        [
            ("order_query", "ORD-111".into()),
            ("logistics_track", "ORD-111".into())
        ]
    );
    assert!(
        reply.starts_with("Your order ORD-111 is being prepared"),
        "{reply}"
    );

    let (reply, calls) = converse(&mut chat, "Has it shipped yet?").await;
    assert_eq!(called(&calls), [("order_query", "ORD-111".into())]);
    assert!(
        reply.starts_with("Not yet — your order ORD-111 is still being prepared for shipment."),
        "{reply}"
    );

    let (reply, _) = converse(&mut chat, "And order 456, has it arrived?").await;
    assert!(
        reply.starts_with("Yes — your order ORD-456 was delivered"),
        "{reply}"
    );

    // "it" is now the order of the last answer.
    let (_, calls) = converse(&mut chat, "Where is it exactly?").await;
    assert_eq!(called(&calls)[0], ("order_query", "ORD-456".into()));
}

#[tokio::test]
async fn chinese_follow_ups_carry_the_order_into_a_complaint_and_its_ticket() {
    let mut chat = Vec::new();
    let (reply, _) = converse(&mut chat, "订单123到哪了").await;
    assert!(
        reply.contains("ORD-123") && reply.contains("运输延误"),
        "{reply}"
    );
    assert!(reply.contains("需要我为您提交投诉"), "an offer: {reply}");
    assert_eq!(
        latin_outside_quotes(&reply),
        Vec::<String>::new(),
        "{reply}"
    );

    let (reply, calls) = converse(&mut chat, "它到了吗").await;
    assert_eq!(called(&calls), [("order_query", "ORD-123".into())]);
    assert!(reply.starts_with("还没有，您的订单 ORD-123"), "{reply}");

    let (reply, calls) = converse(&mut chat, "好的").await;
    assert_eq!(
        called(&calls),
        [
            ("order_query", "ORD-123".into()),
            ("ticket_create", "ORD-123".into())
        ]
    );
    assert_eq!(calls[1].arguments["category"], "complaint");
    assert!(reply.contains("投诉工单 TCK-0001"), "{reply}");

    let (reply, calls) = converse(&mut chat, "那个工单怎么样了？").await;
    assert_eq!(called(&calls), [("knowledge_search", String::new())]);
    assert!(reply.starts_with("您之前的工单 TCK-0001"), "{reply}");

    let (reply, calls) = converse(&mut chat, "那个订单我还要投诉").await;
    assert_eq!(called(&calls), [("order_query", "ORD-123".into())]);
    assert!(
        reply.contains("工单 TCK-0001 已在处理中"),
        "no second ticket: {reply}"
    );

    for m in chat.iter().skip(1).step_by(2) {
        let Message::Assistant { content, .. } = m else {
            panic!("{m:?}")
        };
        assert_eq!(
            latin_outside_quotes(content),
            Vec::<String>::new(),
            "{content}"
        );
    }
}

#[tokio::test]
async fn an_unknown_order_gets_one_clarifying_question_then_the_answer_continues() {
    let mut chat = Vec::new();
    let (reply, calls) = converse(&mut chat, "Where is ORD-999? Please track it").await;
    assert_eq!(calls.len(), 2);
    assert_eq!(
        reply,
        "I couldn't find an order ORD-999 — could you double-check the order number (for example ORD-123)?"
    );

    let mut chat = Vec::new();
    let (reply, calls) = converse(&mut chat, "订单999一直没到，我要投诉").await;
    assert_eq!(called(&calls), [("order_query", "ORD-999".into())]);
    assert_eq!(
        reply,
        "没有找到订单 ORD-999，请您核对一下订单号（例如 ORD-123）好吗？"
    );
    // The corrected number alone: the complaint it belongs to goes on.
    let (reply, calls) = converse(&mut chat, "ORD-789").await;
    assert_eq!(
        called(&calls),
        [
            ("order_query", "ORD-789".into()),
            ("ticket_create", "ORD-789".into())
        ]
    );
    assert!(
        reply.starts_with("您的订单 ORD-789 当前状态：在运输途中丢失。"),
        "{reply}"
    );
}

#[tokio::test]
async fn chinese_replies_stay_chinese_whatever_the_tools_return() {
    for message in [
        "订单123到哪了，查一下物流",
        "订单789丢了，我要投诉",
        "订单321的快递到哪了",
        "订单456到了吗",
        "订单654怎么样了",
        "订单111发货了吗",
        "订单999在哪",
        "退货政策是什么",
        "转人工",
        "你好",
    ] {
        let (reply, _) = converse(&mut Vec::new(), message).await;
        assert_eq!(
            latin_outside_quotes(&reply),
            Vec::<String>::new(),
            "{message} → {reply}"
        );
    }
}

#[tokio::test]
async fn in_plan_mode_an_unknown_order_is_one_question_too() {
    let results = "[1] order_query\n{\"error\":\"not found: order ORD-999\"}";
    let system = format!(
        "persona{}",
        crate::support::prompt::results_section(results)
    );
    let r = respond(
        &DemoModel::instant(),
        ModelRequest::new(vec![
            Message::system(system),
            Message::user("where is ORD-999"),
        ]),
    )
    .await;
    assert_eq!(
        r.content,
        "I couldn't find an order ORD-999 — could you double-check the order number (for example ORD-123)?"
    );
}
