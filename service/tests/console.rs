//! The console service on fresh SQLite databases (`#[sqlx::test]`), with
//! the demo model answering instantly; one PostgreSQL test of two instances.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, approve, ready, supervisor, CHAIN};

use std::time::Duration;

use aics_db::Database;
use aics_service::{Console, ConsoleConfig, EventStream, ServiceError};
use aics_types::{
    AgentEvent, ApprovalDecision, ApprovalStatus, HandlingState, MessageRole, Role, StopReason,
    ToolCallStatus,
};
use futures::StreamExt;
use http::HeaderMap;
use sqlx::SqlitePool;

const API_TOKEN: &str = "test-api-token-0123456789";

fn config() -> ConsoleConfig {
    ConsoleConfig {
        api_token: Some(API_TOKEN.into()),
        ..ConsoleConfig::for_tests()
    }
}

async fn console(pool: SqlitePool) -> Console {
    Console::new(ready(Database::from(pool)).await, config())
        .await
        .unwrap()
}

/// Events until (and including) `final`, or a panic after 20 s.
async fn until_final(rx: &mut EventStream) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), rx.next())
            .await
            .expect("no final event within 20 s")
            .expect("the event stream ended")
            .event;
        let last = matches!(event, AgentEvent::Final { .. });
        seen.push(event);
        if last {
            return seen;
        }
    }
}

fn final_trace(events: &[AgentEvent]) -> aics_types::ChatTurnTraceResult {
    match events.last() {
        Some(AgentEvent::Final { trace }) => (**trace).clone(),
        other => panic!("expected final, got {other:?}"),
    }
}

#[sqlx::test(migrations = false)]
async fn seed_004_chain_pauses_and_resumes_after_approval(pool: SqlitePool) {
    let console = console(pool).await;
    let sid = "react-demo-001";
    let mut live = console.conversation_events(sid, None).unwrap();
    let trace = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(trace.pending_approval, "{trace:?}");
    // The streams' `final` is the same trace without the token, which goes
    // to the caller only.
    let announced = final_trace(&until_final(&mut live).await);
    assert!(announced.approval_token.is_none());
    assert_eq!(
        announced,
        aics_types::ChatTurnTraceResult {
            approval_token: None,
            ..(*trace).clone()
        }
    );
    assert_eq!(trace.stop_reason, Some(StopReason::AwaitingApproval));
    assert_eq!(trace.tool_calls[0].name, "order_query");
    assert_eq!(trace.tool_calls[0].status, ToolCallStatus::Ok);
    assert_eq!(trace.pending_tool_calls.len(), 1);
    assert_eq!(trace.pending_tool_calls[0].tool, "ticket_create");
    assert!(trace
        .approval_token
        .as_deref()
        .is_some_and(|t| t.len() >= 32));

    let detail = console.conversation(sid).await.unwrap();
    assert_eq!(detail.summary.handling, HandlingState::WaitingApproval);
    assert_eq!(detail.messages.len(), 1);
    assert_eq!(detail.messages[0].role, MessageRole::Customer);
    // The stored trace never carries the token.
    assert_eq!(detail.turns.len(), 1);
    assert!(detail.turns[0].approval_token.is_none());

    // A second message while the turn waits: 409, and nothing is stored.
    let err = console
        .send_message(&agent(), sid, "hello?")
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)), "{err:?}");
    assert_eq!(console.conversation(sid).await.unwrap().messages.len(), 1);

    let pending = console.list_approvals(true).await.unwrap();
    assert_eq!(pending.len(), 1);
    let id = pending[0].id.clone();
    assert_eq!(pending[0].tool, "ticket_create");
    assert!(!pending[0].context.is_empty());

    // Agents may not decide.
    let err = console.decide(&agent(), &id, approve()).await.unwrap_err();
    assert_eq!(err.status_code(), 403);

    let mut events = console.conversation_events(sid, None).unwrap();
    let decided = console.decide(&supervisor(), &id, approve()).await.unwrap();
    assert_eq!(decided.status, ApprovalStatus::Approved);
    assert_eq!(decided.decided_by.as_deref(), Some("supervisor"));
    let seen = until_final(&mut events).await;
    let kinds: Vec<&str> = seen.iter().map(AgentEvent::kind).collect();
    assert_eq!(kinds[0], "approval_decided");
    assert!(kinds.contains(&"turn_start"));
    let tool_end = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolEnd(end) if end.tool() == "ticket_create"))
        .expect("ticket_create ran");
    let token = seen.iter().position(|e| e.kind() == "llm_token").unwrap();
    assert!(tool_end < token, "{kinds:?}");
    let last = final_trace(&seen);
    assert!(!last.pending_approval);
    assert!(last.reply.contains("TCK-"), "{}", last.reply);
    assert!(last.approval_token.is_none());

    let detail = console.conversation(sid).await.unwrap();
    assert_eq!(detail.summary.handling, HandlingState::Ai);
    assert_eq!(detail.messages.len(), 2);
    assert_eq!(detail.messages[1].role, MessageRole::Assistant);
    assert!(detail.messages[1].content.contains("TCK-"));
    assert_eq!(detail.turns.len(), 1);
    assert!(!detail.turns[0].pending_approval);
    let turn = console.turn_detail(&last.graph_execution_id).await.unwrap();
    assert!(turn.checkpoints.len() > 5);

    // Decided once; the conversation takes new messages again.
    let err = console
        .decide(&supervisor(), &id, approve())
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)), "{err:?}");
    assert!(console.list_approvals(true).await.unwrap().is_empty());
    assert_eq!(console.list_approvals(false).await.unwrap().len(), 1);
    let next = console
        .chat(&agent(), sid, "Thanks, where is ORD-123 now?")
        .await
        .unwrap();
    assert!(!next.pending_approval);
}

#[sqlx::test(migrations = false)]
async fn a_rejection_needs_a_reason_and_reaches_the_model(pool: SqlitePool) {
    let console = console(pool).await;
    let trace = console.chat(&agent(), "rej", CHAIN).await.unwrap();
    let id = trace.pending_tool_calls[0].id.clone();
    let no_reason = ApprovalDecision {
        approve: false,
        ..approve()
    };
    let err = console
        .decide(&supervisor(), &id, no_reason)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    let wrong_token = ApprovalDecision {
        token: Some("0".repeat(64)),
        ..approve()
    };
    let err = console
        .decide(&supervisor(), &id, wrong_token)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);

    let mut events = console.conversation_events("rej", None).unwrap();
    let rejected = console
        .decide(
            &supervisor(),
            &id,
            ApprovalDecision {
                approve: false,
                reason: Some("duplicate of an open ticket".into()),
                ..approve()
            },
        )
        .await
        .unwrap();
    assert_eq!(rejected.status, ApprovalStatus::Rejected);
    let last = final_trace(&until_final(&mut events).await);
    let call = last.tool_calls.iter().find(|c| c.id == id).unwrap();
    assert_eq!(call.status, ToolCallStatus::Denied);
    assert!(!last.reply.contains("TCK-"));
}

#[sqlx::test(migrations = false)]
async fn the_token_decides_once(pool: SqlitePool) {
    let console = console(pool).await;
    let trace = console.chat(&agent(), "tok", CHAIN).await.unwrap();
    let id = trace.pending_tool_calls[0].id.clone();
    let mut events = console.conversation_events("tok", None).unwrap();
    let with_token = ApprovalDecision {
        token: trace.approval_token.clone(),
        ..approve()
    };
    console
        .decide(&supervisor(), &id, with_token.clone())
        .await
        .unwrap();
    until_final(&mut events).await;
    let err = console
        .decide(&supervisor(), &id, with_token)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 409);
}

#[sqlx::test(migrations = false)]
async fn racing_decisions_resume_exactly_once(pool: SqlitePool) {
    let console = console(pool).await;
    let trace = console.chat(&agent(), "race", CHAIN).await.unwrap();
    let id = trace.pending_tool_calls[0].id.clone();
    let mut events = console.conversation_events("race", None).unwrap();
    let boss = supervisor();
    let (a, b) = tokio::join!(
        console.decide(&boss, &id, approve()),
        console.decide(&boss, &id, approve()),
    );
    assert_eq!(
        [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count(),
        1,
        "{a:?} {b:?}"
    );
    until_final(&mut events).await;
    // Give a second (wrong) resume time to show itself.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let detail = console.conversation("race").await.unwrap();
    let replies = detail
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .count();
    assert_eq!(replies, 1);
    let resumed = detail.turns[0]
        .executed_nodes
        .iter()
        .filter(|n| *n == "finalize")
        .count();
    assert_eq!(resumed, 1);
}

/// `chat` answers with the JSON the turn's end stored (the bytes `POST
/// /api/chat` sends), which is serde_json's text of the trace it returns;
/// a paused turn's caller gets its token, which was not stored, so its
/// JSON is written anew by whoever sends it.
#[sqlx::test(migrations = false)]
async fn chat_answers_with_the_json_it_stored(pool: SqlitePool) {
    let console = console(pool).await;
    let ended = console
        .chat(&agent(), "json-1", "Where is my order ORD-123?")
        .await
        .unwrap();
    assert_eq!(ended.stop_reason, Some(StopReason::FinalAnswer));
    let json = ended.json.as_deref().expect("the stored JSON");
    assert_eq!(json, serde_json::to_string(&*ended.trace).unwrap());
    let stored = console
        .turn_detail(&ended.graph_execution_id)
        .await
        .unwrap();
    assert_eq!(stored.trace, *ended.trace);

    let paused = console.chat(&agent(), "json-2", CHAIN).await.unwrap();
    assert!(paused.pending_approval && paused.approval_token.is_some());
    assert!(
        paused.json.is_none(),
        "a paused turn's answer holds its token"
    );
}

#[sqlx::test(migrations = false)]
async fn a_failed_turn_keeps_the_message_and_stores_the_trace(pool: SqlitePool) {
    let console = console(pool).await;
    let mut events = console.conversation_events("fault", None).unwrap();
    let trace = console
        .chat(&agent(), "fault", "[fault:error] where is ORD-123?")
        .await
        .unwrap();
    assert_eq!(trace.stop_reason, Some(StopReason::Error));
    assert!(trace.error.is_some());
    let seen = until_final(&mut events).await;
    assert!(seen.iter().any(|e| e.kind() == "error"));
    let detail = console.conversation("fault").await.unwrap();
    assert_eq!(detail.messages[0].role, MessageRole::Customer);
    assert_eq!(detail.turns.len(), 1);
    assert_eq!(detail.turns[0].stop_reason, Some(StopReason::Error));
    // The conversation is free again.
    console
        .chat(&agent(), "fault", "where is ORD-123?")
        .await
        .unwrap();
}

#[sqlx::test(migrations = false)]
async fn bad_input_is_refused_and_changes_nothing(pool: SqlitePool) {
    let console = console(pool).await;
    for (sid, message) in [
        ("ok-id", ""),
        ("ok-id", "   "),
        ("ok-id", &"x".repeat(8001)),
        ("bad id", "hello"),
        ("", "hello"),
    ] {
        let err = console
            .send_message(&agent(), sid, message)
            .await
            .unwrap_err();
        assert_eq!(err.status_code(), 400, "{sid:?}");
    }
    assert!(console.list_conversations(200).await.unwrap().is_empty());
    assert_eq!(
        console
            .conversation("nope")
            .await
            .unwrap_err()
            .status_code(),
        404
    );
    assert_eq!(
        console
            .conversation("no pe")
            .await
            .unwrap_err()
            .status_code(),
        400
    );
    assert_eq!(
        console.turn_detail("nope").await.unwrap_err().status_code(),
        404
    );
    assert_eq!(
        console.turn_detail("a/b").await.unwrap_err().status_code(),
        400
    );
    assert_eq!(
        console.approval("nope").await.unwrap_err().status_code(),
        404
    );
    let err = console
        .decide(&supervisor(), "nope", approve())
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 404);
}

/// The list is newest first and as long as asked: a page of the inbox is
/// the start of the next, longer one; 0 still lists one, and past the most
/// it lists the most.
#[sqlx::test(migrations = false)]
async fn the_list_pages_newest_first(pool: SqlitePool) {
    let console = console(pool).await;
    let mut made = Vec::new();
    for _ in 0..5 {
        made.push(console.create_conversation().await.unwrap().session_id);
        // Conversations are ordered by their last activity.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    made.reverse();
    let ids = |list: Vec<aics_types::ConversationSummary>| {
        list.into_iter().map(|c| c.session_id).collect::<Vec<_>>()
    };
    assert_eq!(ids(console.list_conversations(2).await.unwrap()), made[..2]);
    assert_eq!(ids(console.list_conversations(4).await.unwrap()), made[..4]);
    assert_eq!(ids(console.list_conversations(0).await.unwrap()), made[..1]);
    assert_eq!(
        ids(console.list_conversations(u32::MAX).await.unwrap()),
        made
    );
}

#[sqlx::test(migrations = false)]
async fn conversations_are_created_listed_and_sent_to(pool: SqlitePool) {
    let console = console(pool).await;
    let created = console.create_conversation().await.unwrap();
    assert_eq!(created.handling, HandlingState::Ai);
    let mut events = console
        .conversation_events(&created.session_id, None)
        .unwrap();
    let id = console
        .send_message(&agent(), &created.session_id, "What is your return policy?")
        .await
        .unwrap()
        .graph_execution_id
        .expect("a turn started");
    let seen = until_final(&mut events).await;
    assert_eq!(final_trace(&seen).graph_execution_id, id);
    // The customer's message as stored is the run's first event.
    assert!(
        matches!(&seen[0], AgentEvent::Message { message } if message.content == "What is your return policy?" && message.id > 0)
    );
    assert!(
        matches!(&seen[1], AgentEvent::TurnStart { graph_execution_id, .. } if *graph_execution_id == id)
    );
    let list = console.list_conversations(200).await.unwrap();
    assert_eq!(list[0].session_id, created.session_id);
    assert_eq!(
        console.list_turns(&created.session_id).await.unwrap().len(),
        1
    );
    let info = console.model_info();
    assert_eq!(
        (
            info.provider.as_str(),
            info.engine.as_str(),
            info.max_tool_loops
        ),
        ("demo", "graph", 5)
    );
}

#[sqlx::test(migrations = false)]
async fn escalation_hands_the_conversation_to_a_human(pool: SqlitePool) {
    let console = console(pool).await;
    let trace = console
        .chat(&agent(), "esc", "I want to talk to a human agent please")
        .await
        .unwrap();
    assert!(
        trace.tools_used.contains(&"escalate_to_human".to_string()),
        "{trace:?}"
    );
    let detail = console.conversation("esc").await.unwrap();
    assert_eq!(detail.summary.handling, HandlingState::WaitingHuman);
    // An AI reply afterwards does not take the conversation back.
    console
        .chat(&agent(), "esc", "What is your return policy?")
        .await
        .unwrap();
    let detail = console.conversation("esc").await.unwrap();
    assert_eq!(detail.summary.handling, HandlingState::WaitingHuman);
}

#[sqlx::test(migrations = false)]
async fn sign_in_sessions_and_the_api_token(pool: SqlitePool) {
    let console = console(pool).await;
    assert!(matches!(
        console.login("supervisor", "wrong-password").await,
        Err(ServiceError::Unauthorized)
    ));
    assert!(matches!(
        console.login("nobody", "supervisor-pass").await,
        Err(ServiceError::Unauthorized)
    ));
    let (user, cookie) = console
        .login("supervisor", "supervisor-pass")
        .await
        .unwrap();
    assert_eq!(user.role, Role::Supervisor);
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Path=/")
    );
    let token = cookie
        .strip_prefix("aics_session=")
        .and_then(|rest| rest.split(';').next())
        .unwrap();
    let mut headers = HeaderMap::new();
    headers.insert(
        "cookie",
        format!("theme=dark; aics_session={token}").parse().unwrap(),
    );
    assert_eq!(console.authenticate(&headers).await.unwrap(), user);

    let cleared = console.logout(&headers).await.unwrap();
    assert!(cleared.contains("Max-Age=0"));
    assert!(matches!(
        console.authenticate(&headers).await,
        Err(ServiceError::Unauthorized)
    ));

    let mut bearer = HeaderMap::new();
    bearer.insert(
        "authorization",
        format!("Bearer {API_TOKEN}").parse().unwrap(),
    );
    let api = console.authenticate(&bearer).await.unwrap();
    assert_eq!((api.username.as_str(), api.role), ("api", Role::Agent));
    bearer.insert("authorization", "Bearer wrong".parse().unwrap());
    assert!(console.authenticate(&bearer).await.is_err());
    assert!(console.authenticate(&HeaderMap::new()).await.is_err());
}

/// A paused turn survives a restart: a new console on the same SQLite file
/// lists the approval and resumes the turn from its checkpoint.
#[tokio::test]
async fn an_approval_after_a_restart() {
    let dir = std::env::temp_dir().join(format!("aics-service-{}", uuid::Uuid::new_v4()));
    let url = format!("sqlite://{}/aics.db", dir.display());
    let id = {
        let db = ready(Database::connect(&url).await.unwrap()).await;
        let console = Console::new(db.clone(), config()).await.unwrap();
        let trace = console.chat(&agent(), "restart", CHAIN).await.unwrap();
        assert!(trace.pending_approval);
        drop(console);
        db.close().await;
        trace.pending_tool_calls[0].id.clone()
    };
    let db = ready(Database::connect(&url).await.unwrap()).await;
    let console = Console::new(db, config()).await.unwrap();
    let pending = console.list_approvals(true).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    let err = console
        .send_message(&agent(), "restart", "still there?")
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)));
    let mut events = console.conversation_events("restart", None).unwrap();
    console.decide(&supervisor(), &id, approve()).await.unwrap();
    let last = final_trace(&until_final(&mut events).await);
    assert!(last.reply.contains("TCK-"), "{}", last.reply);
    let _ = std::fs::remove_dir_all(dir);
}

/// Two instances on one PostgreSQL: a turn paused on A is approved through
/// B, resumes exactly once, and its events reach streams on both.
#[sqlx::test(migrations = false)]
async fn two_instances_on_one_postgres(pool: sqlx::PgPool) {
    let db = ready(Database::Postgres(pool)).await;
    let a = Console::new(db.clone(), config()).await.unwrap();
    let b = Console::new(db.clone(), config()).await.unwrap();
    let sid = "two-instances";

    // A's turn reaches a stream on B.
    let mut on_b = b.conversation_events(sid, None).unwrap();
    let trace = a.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(trace.pending_approval);
    let seen = until_final(&mut on_b).await;
    assert!(seen
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolEnd(end) if end.tool() == "order_query")));
    assert!(final_trace(&seen).pending_approval);

    // B refuses a second message too (the lock is in the database).
    let err = b.send_message(&agent(), sid, "hello?").await.unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)));

    // Approved through B; a stream on A sees the resumed turn.
    let mut on_a = a.conversation_events(sid, None).unwrap();
    let id = trace.pending_tool_calls[0].id.clone();
    let boss = supervisor();
    let (x, y) = tokio::join!(
        b.decide(&boss, &id, approve()),
        a.decide(&boss, &id, approve()),
    );
    assert_eq!([x.is_ok(), y.is_ok()].iter().filter(|ok| **ok).count(), 1);
    let seen = until_final(&mut on_a).await;
    let last = final_trace(&seen);
    assert!(last.reply.contains("TCK-"), "{}", last.reply);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let detail = a.conversation(sid).await.unwrap();
    let replies = detail
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .count();
    assert_eq!(replies, 1, "resumed exactly once");
    assert_eq!(detail.summary.handling, HandlingState::Ai);
}

/// Says plainly what is missing instead of letting the PostgreSQL test fail
/// with sqlx's terse message.
#[test]
fn postgres_tests_have_a_database_url() {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    assert!(
        url.starts_with("postgres://") || url.starts_with("postgresql://"),
        "DATABASE_URL must point at PostgreSQL for two_instances_on_one_postgres (got {url:?}); \
         run `export DATABASE_URL=$(scripts/postgres.sh | tail -n 1)` first"
    );
}
