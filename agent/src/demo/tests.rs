use super::*;
use crate::model::{collect_response, ToolSpec};
use crate::support::prompt::{plan_instruction, PLAN_MARKER};

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
        messages,
        tools: all_tools(),
        ..Default::default()
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
        ModelRequest {
            messages: msgs("ORD-9 lost, complain"),
            ..Default::default()
        },
    )
    .await;
    assert!(
        en.content.contains("ORD-9 is reported lost") && en.content.contains("TCK-0042"),
        "{}",
        en.content
    );
    let zh = respond(
        &DemoModel::instant(),
        ModelRequest {
            messages: msgs("订单9丢了，我要投诉"),
            ..Default::default()
        },
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
        ModelRequest {
            messages: vec![Message::system(system), Message::user("where is ORD-5")],
            ..Default::default()
        },
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
    let answer = respond(
        &DemoModel::instant(),
        ModelRequest {
            messages: msgs,
            ..Default::default()
        },
    )
    .await;
    assert!(
        answer.content.contains("Arrived at Wuhan hub (Wuhan)"),
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
    let r = respond(
        &model,
        ModelRequest {
            messages: vec![Message::user("hi there")],
            ..Default::default()
        },
    )
    .await;
    let n = tokenize(&r.content).len() as u32;
    assert!(started.elapsed() >= Duration::from_millis(20) * n);
}

#[test]
fn tokenize_splits_words_and_character_pairs() {
    assert_eq!(tokenize("Hello big world"), ["Hello ", "big ", "world"]);
    assert_eq!(
        tokenize("您的订单 ORD-1 已签收。"),
        ["您的", "订单 ", "ORD-1 ", "已签", "收。"]
    );
    assert_eq!(tokenize("").len(), 0);
}
