//! The spans of real turns: the console over a fresh SQLite database with
//! the demo model, its observer writing to the SDK's in-memory exporter.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use aics_db::Database;
use aics_otel::GenAiObserver;
use aics_service::{Console, ConsoleConfig};
use aics_types::{ApprovalDecision, Role, UserInfo};
use opentelemetry::trace::{SpanId, SpanKind, Status, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use sqlx::SqlitePool;

/// The complaint about the late order ORD-123 that pauses for approval.
const CHAIN: &str = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";
/// A question the demo answers with one `order_query`.
const ORDER: &str = "Has my order ORD-124 shipped yet?";

/// Every attribute that carries message content.
const CONTENT_KEYS: &[&str] = &[
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "aics.approval.reason",
    "aics.approval.decision_reason",
];

struct Harness {
    console: Console,
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
}

async fn harness(pool: SqlitePool, capture_content: bool) -> Harness {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let observer = GenAiObserver::new(provider.tracer(aics_otel::SCOPE), capture_content);
    let console = Console::with_observer(db, ConsoleConfig::for_tests(), Arc::new(observer))
        .await
        .unwrap();
    Harness {
        console,
        exporter,
        _provider: provider,
    }
}

fn user(name: &str, role: Role) -> UserInfo {
    UserInfo {
        username: name.into(),
        role,
    }
}

fn spans(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    exporter.get_finished_spans().unwrap()
}

/// The spans once `roots` root spans were exported (the observer runs in
/// the turn's task, after the outcome is stored), or a panic after 20 s.
async fn spans_with_roots(exporter: &InMemorySpanExporter, roots: usize) -> Vec<SpanData> {
    for _ in 0..400 {
        let all = spans(exporter);
        if all.iter().filter(|s| is_root(s)).count() >= roots {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {roots} turn spans: {:#?}", spans(exporter));
}

fn is_root(span: &SpanData) -> bool {
    span.parent_span_id == SpanId::INVALID
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from(key.to_owned()))
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    match attr(span, key) {
        Some(v) => v.as_str().into_owned(),
        None => panic!("{} has no {key}: {:?}", span.name, span.attributes),
    }
}

fn int(span: &SpanData, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::I64(n)) => *n,
        other => panic!("{} has no integer {key}: {other:?}", span.name),
    }
}

fn named<'a>(all: &'a [SpanData], prefix: &str) -> Vec<&'a SpanData> {
    all.iter().filter(|s| s.name.starts_with(prefix)).collect()
}

/// Every attribute value of the spans and their events, as text.
fn all_values(all: &[SpanData]) -> Vec<String> {
    all.iter()
        .flat_map(|s| {
            s.attributes
                .iter()
                .chain(s.events.iter().flat_map(|e| e.attributes.iter()))
                .map(|kv| kv.value.as_str().into_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn assert_no_content(all: &[SpanData], customer_words: &str) {
    for span in all {
        let keys = span
            .attributes
            .iter()
            .chain(span.events.iter().flat_map(|e| e.attributes.iter()))
            .map(|kv| kv.key.as_str().to_owned());
        for key in keys {
            assert!(
                !CONTENT_KEYS.contains(&key.as_str()),
                "{} carries {key} with content capture off",
                span.name
            );
        }
    }
    for value in all_values(all) {
        assert!(
            !value.contains(customer_words),
            "the customer's words leaked: {value}"
        );
    }
}

#[sqlx::test(migrations = false)]
async fn a_tool_turn_is_an_agent_span_over_its_llm_and_tool_calls(pool: SqlitePool) {
    let h = harness(pool, false).await;
    let trace = h
        .console
        .chat(&user("agent", Role::Agent), "otel-1", ORDER)
        .await
        .unwrap();
    assert_eq!(trace.tool_calls.len(), 1, "{trace:?}");
    assert_eq!(trace.tool_calls[0].name, "order_query");
    let all = spans_with_roots(&h.exporter, 1).await;

    let roots: Vec<&SpanData> = all.iter().filter(|s| is_root(s)).collect();
    assert_eq!(roots.len(), 1, "{all:#?}");
    let root = roots[0];
    assert_eq!(root.name, "invoke_agent support");
    assert_eq!(root.span_kind, SpanKind::Internal);
    assert_eq!(text(root, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(root, "gen_ai.agent.name"), "support");
    assert_eq!(text(root, "gen_ai.provider.name"), "aics.demo");
    assert_eq!(text(root, "gen_ai.request.model"), "demo");
    assert_eq!(text(root, "gen_ai.conversation.id"), "otel-1");
    assert_eq!(text(root, "aics.turn.id"), trace.graph_execution_id);
    assert_eq!(text(root, "aics.turn.segment"), "new");
    assert_eq!(text(root, "aics.turn.stop_reason"), "final_answer");
    assert_eq!(
        int(root, "gen_ai.usage.input_tokens") as u64,
        trace.usage.prompt_tokens
    );
    assert_eq!(
        int(root, "gen_ai.usage.output_tokens") as u64,
        trace.usage.completion_tokens
    );
    assert!(attr(root, "error.type").is_none());
    assert_eq!(root.status, Status::Unset);

    // One chat span per LLM call, children of the turn, in its time.
    let chats = named(&all, "chat ");
    assert_eq!(chats.len(), trace.llm_call_records.len());
    assert!(chats.len() >= 2, "a tool call and the answer");
    for (chat, record) in chats.iter().zip(&trace.llm_call_records) {
        assert_eq!(chat.name, "chat demo");
        assert_eq!(chat.span_kind, SpanKind::Client);
        assert_eq!(chat.parent_span_id, root.span_context.span_id());
        assert_eq!(chat.span_context.trace_id(), root.span_context.trace_id());
        assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(text(chat, "gen_ai.provider.name"), "aics.demo");
        assert_eq!(text(chat, "gen_ai.request.model"), "demo");
        assert_eq!(text(chat, "gen_ai.response.model"), "demo");
        assert_eq!(text(chat, "gen_ai.conversation.id"), "otel-1");
        assert_eq!(
            int(chat, "gen_ai.usage.input_tokens") as u64,
            record.usage.prompt_tokens
        );
        assert_eq!(
            int(chat, "gen_ai.usage.output_tokens") as u64,
            record.usage.completion_tokens
        );
        let reason = record.finish_reason.clone().unwrap();
        match attr(chat, "gen_ai.response.finish_reasons") {
            Some(Value::Array(opentelemetry::Array::String(reasons))) => {
                assert_eq!(reasons.len(), 1);
                assert_eq!(reasons[0].as_str(), reason);
            }
            other => panic!("finish reasons: {other:?}"),
        }
        assert!(chat.start_time >= root.start_time && chat.end_time <= root.end_time);
    }
    assert!(chats
        .iter()
        .any(|c| matches!(attr(c, "gen_ai.response.finish_reasons"),
            Some(Value::Array(opentelemetry::Array::String(r))) if r[0].as_str() == "tool_calls")));

    let tools = named(&all, "execute_tool ");
    assert_eq!(tools.len(), 1, "{all:#?}");
    let tool = tools[0];
    assert_eq!(tool.name, "execute_tool order_query");
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(tool.parent_span_id, root.span_context.span_id());
    assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(tool, "gen_ai.tool.name"), "order_query");
    assert_eq!(text(tool, "gen_ai.tool.call.id"), trace.tool_calls[0].id);
    assert_eq!(text(tool, "gen_ai.tool.type"), "function");
    assert!(attr(tool, "error.type").is_none());

    assert_eq!(all.len(), 1 + chats.len() + 1, "nothing else: {all:#?}");
    assert_no_content(&all, "Has my order");
}

#[sqlx::test(migrations = false)]
async fn content_is_recorded_only_when_capture_is_on(pool: SqlitePool) {
    let h = harness(pool, true).await;
    let trace = h
        .console
        .chat(&user("agent", Role::Agent), "otel-2", ORDER)
        .await
        .unwrap();
    let all = spans_with_roots(&h.exporter, 1).await;
    let chats = named(&all, "chat ");
    let first: serde_json::Value =
        serde_json::from_str(&text(chats[0], "gen_ai.input.messages")).unwrap();
    let sent = first.to_string();
    assert!(sent.contains("Has my order ORD-124 shipped yet?"), "{sent}");
    assert!(first[0]["parts"][0]["type"] == "text", "{sent}");
    // The answer's output is the reply the customer got.
    let last = chats.last().unwrap();
    let output: serde_json::Value =
        serde_json::from_str(&text(last, "gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["parts"][0]["content"], trace.reply.as_str());
    // The call that asked for the tool says so in its output.
    let asked: serde_json::Value =
        serde_json::from_str(&text(chats[0], "gen_ai.output.messages")).unwrap();
    assert!(
        asked[0]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["type"] == "tool_call" && p["name"] == "order_query"),
        "{asked}"
    );

    let tool = named(&all, "execute_tool ")[0];
    assert!(text(tool, "gen_ai.tool.call.arguments").contains("ORD-124"));
    let result = text(tool, "gen_ai.tool.call.result");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result).unwrap(),
        trace.tool_calls[0].output
    );
}

#[sqlx::test(migrations = false)]
async fn an_approval_turn_is_two_segments_with_the_approval_events(pool: SqlitePool) {
    let h = harness(pool, false).await;
    let paused = h
        .console
        .chat(&user("agent", Role::Agent), "otel-3", CHAIN)
        .await
        .unwrap();
    assert!(paused.pending_approval, "{paused:?}");
    let held = paused.pending_tool_calls[0].clone();
    assert_eq!(held.tool, "ticket_create");

    let first = spans_with_roots(&h.exporter, 1).await;
    let root = first.iter().find(|s| is_root(s)).unwrap().clone();
    assert_eq!(text(&root, "aics.turn.stop_reason"), "awaiting_approval");
    assert_eq!(text(&root, "aics.turn.segment"), "new");
    let requested: Vec<_> = root
        .events
        .iter()
        .filter(|e| e.name == "aics.approval.requested")
        .collect();
    assert_eq!(requested.len(), 1, "{:?}", root.events);
    let has = |e: &opentelemetry::trace::Event, k: &str, v: &str| {
        e.attributes
            .iter()
            .any(|kv| kv.key.as_str() == k && kv.value.as_str() == v)
    };
    assert!(has(requested[0], "gen_ai.tool.name", "ticket_create"));
    assert!(has(requested[0], "gen_ai.tool.call.id", &held.id));
    assert!(has(requested[0], "aics.approval.rule", &held.rule));
    // The held call did not run: no tool span for it yet.
    assert_eq!(
        named(&first, "execute_tool ")
            .iter()
            .map(|s| s.name.to_string())
            .collect::<Vec<_>>(),
        vec!["execute_tool order_query"]
    );
    let first_chats = named(&first, "chat ").len();
    assert_eq!(first_chats, paused.llm_call_records.len());

    let decided = h
        .console
        .decide(
            &user("supervisor", Role::Supervisor),
            &held.id,
            ApprovalDecision {
                approve: true,
                reason: None,
                args: None,
                token: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(decided.decided_by.as_deref(), Some("supervisor"));
    let all = spans_with_roots(&h.exporter, 2).await;
    let second = all
        .iter()
        .filter(|s| is_root(s))
        .find(|s| s.span_context != root.span_context)
        .unwrap();
    assert_eq!(second.name, "invoke_agent support");
    assert_eq!(text(second, "aics.turn.segment"), "resumed");
    assert_eq!(text(second, "aics.turn.id"), paused.graph_execution_id);
    assert_eq!(text(second, "gen_ai.conversation.id"), "otel-3");
    assert_eq!(text(second, "aics.turn.stop_reason"), "final_answer");
    let approved: Vec<_> = second
        .events
        .iter()
        .filter(|e| e.name == "aics.approval.approved")
        .collect();
    assert_eq!(approved.len(), 1, "{:?}", second.events);
    assert!(has(approved[0], "aics.approval.decided_by", "supervisor"));
    assert!(has(approved[0], "gen_ai.tool.call.id", &held.id));
    // One trace per segment, the resumed one linked to the paused one.
    assert_ne!(second.span_context.trace_id(), root.span_context.trace_id());
    assert_eq!(second.links.links.len(), 1);
    assert_eq!(second.links.links[0].span_context, root.span_context);

    // The resumed segment's own calls only: ticket_create now, the LLM
    // calls after the pause, nothing of the first segment again.
    let in_second: Vec<&SpanData> = all
        .iter()
        .filter(|s| s.parent_span_id == second.span_context.span_id())
        .collect();
    let tools: Vec<String> = in_second
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .map(|s| text(s, "gen_ai.tool.call.id"))
        .collect();
    assert_eq!(tools, vec![held.id.clone()]);
    let total_chats = named(&all, "chat ").len();
    assert!(total_chats > first_chats);
    assert_eq!(
        in_second
            .iter()
            .filter(|s| s.name.starts_with("chat "))
            .count(),
        total_chats - first_chats
    );
    assert_no_content(&all, "帮我查一下");
    let token = paused.approval_token.clone().unwrap();
    assert!(
        all_values(&all).iter().all(|v| !v.contains(&token)),
        "the approval token was exported"
    );
}

#[sqlx::test(migrations = false)]
async fn a_rejection_is_an_event_with_who_and_no_reason_by_default(pool: SqlitePool) {
    rejection(pool, false).await;
}

#[sqlx::test(migrations = false)]
async fn a_rejection_carries_its_reason_when_content_is_on(pool: SqlitePool) {
    rejection(pool, true).await;
}

async fn rejection(pool: SqlitePool, capture: bool) {
    {
        let h = harness(pool, capture).await;
        let sid = if capture { "otel-rej-c" } else { "otel-rej" };
        let paused = h
            .console
            .chat(&user("agent", Role::Agent), sid, CHAIN)
            .await
            .unwrap();
        let held = paused.pending_tool_calls[0].clone();
        h.console
            .decide(
                &user("supervisor", Role::Supervisor),
                &held.id,
                ApprovalDecision {
                    approve: false,
                    reason: Some("no ticket for this one".into()),
                    args: None,
                    token: None,
                },
            )
            .await
            .unwrap();
        let all = spans_with_roots(&h.exporter, 2).await;
        let second = all
            .iter()
            .filter(|s| is_root(s))
            .find(|s| text(s, "aics.turn.segment") == "resumed")
            .unwrap();
        let rejected = second
            .events
            .iter()
            .find(|e| e.name == "aics.approval.rejected")
            .expect("a rejection event");
        let get = |k: &str| {
            rejected
                .attributes
                .iter()
                .find(|kv| kv.key.as_str() == k)
                .map(|kv| kv.value.as_str().into_owned())
        };
        assert_eq!(
            get("aics.approval.decided_by").as_deref(),
            Some("supervisor")
        );
        assert_eq!(
            get("aics.approval.decision_reason").as_deref(),
            capture.then_some("no ticket for this one")
        );
        // The rejected call is a denied tool span of the resumed segment.
        let denied = all
            .iter()
            .find(|s| {
                s.name == "execute_tool ticket_create"
                    && s.parent_span_id == second.span_context.span_id()
            })
            .expect("the denied call");
        assert_eq!(text(denied, "error.type"), "denied");
        assert!(matches!(denied.status, Status::Error { .. }));
    }
}
