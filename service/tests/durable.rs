//! Durable turns at the service level, on real SQLite and PostgreSQL
//! databases: leases that outlive a slow turn, cancellation, the recovery of
//! a decided turn whose resume never started, event replay after a
//! reconnect, a subscriber that never reads, and a provider without tool-call
//! ids (a stub OpenAI-compatible server over real HTTP). The tests that kill
//! real processes are in the server crate (`server/tests/faults.rs`).

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, approve, ready, supervisor, CHAIN};

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use aics_db::Database;
use aics_openai::{OpenAiConfig, ProviderConfig};
use aics_service::{AuditQuery, Console, ConsoleConfig, EventStream, ServiceError};
use aics_types::{AgentEvent, ApprovalStatus, MessageRole, RunState, StopReason, ToolCallStatus};
use futures::StreamExt;
use sqlx::{PgPool, SqlitePool};

async fn next(stream: &mut EventStream) -> aics_service::LiveEvent {
    tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("no event within 30 s")
        .expect("the stream ended")
}

async fn until_final(stream: &mut EventStream) -> Vec<aics_service::LiveEvent> {
    let mut seen = Vec::new();
    loop {
        let e = next(stream).await;
        let last = matches!(e.event, AgentEvent::Final { .. });
        seen.push(e);
        if last {
            return seen;
        }
    }
}

fn final_of(seen: &[aics_service::LiveEvent]) -> aics_types::ChatTurnTraceResult {
    match seen.last().map(|e| &e.event) {
        Some(AgentEvent::Final { trace }) => (**trace).clone(),
        other => panic!("expected final, got {other:?}"),
    }
}

/// A turn far longer than its lease: its heartbeat keeps the run, so no
/// sweep (this instance's or another's) takes it over and a second message
/// is refused all along; it ends once, with its reply.
async fn a_long_turn_keeps_its_run(db: Database, second_instance: bool) {
    let config = ConsoleConfig {
        // The lease is a fraction of the turn; sweeps run all the time.
        lease: Duration::from_millis(400),
        sweep_interval: Duration::from_millis(100),
        demo_token_delay: Duration::from_millis(40),
        ..ConsoleConfig::for_tests()
    };
    let a = Console::new(db.clone(), config.clone()).await.unwrap();
    let b = if second_instance {
        Some(Console::new(db.clone(), config).await.unwrap())
    } else {
        None
    };
    let sid = "long-turn";
    let started = Instant::now();
    let gid = a
        .send_message(
            &agent(),
            sid,
            "What is your refund policy? Please explain it in detail.",
        )
        .await
        .unwrap()
        .graph_execution_id
        .expect("a turn started");
    let mut events = a.conversation_events(sid, None).unwrap();
    // Keep knocking while it runs: always 409, from either instance.
    let mut refused = 0;
    let mut trace = None;
    let mut knock = tokio::time::interval(Duration::from_millis(150));
    knock.tick().await;
    let mut knocking = true;
    while trace.is_none() {
        tokio::select! {
            e = next(&mut events) => {
                if let AgentEvent::Final { trace: t } = e.event {
                    trace = Some(std::sync::Arc::unwrap_or_clone(t));
                }
            }
            _ = knock.tick(), if knocking => {
                let knocker = b.as_ref().unwrap_or(&a);
                match knocker.send_message(&agent(), sid, "hello?").await {
                    Err(ServiceError::Conflict(_)) => refused += 1,
                    // Only once the turn has ended (its `final` may still
                    // be on its way to us).
                    Ok(_) => {
                        let state = db.run(&gid).await.unwrap().unwrap().state;
                        assert_eq!(state, RunState::Finished, "taken while it ran");
                        knocking = false;
                    }
                    Err(e) => panic!("{e:?}"),
                }
            }
        }
    }
    let trace = trace.unwrap();
    let took = started.elapsed();
    assert!(
        took > Duration::from_millis(1200),
        "the turn should outlive its lease several times over (took {took:?})"
    );
    assert!(refused >= 3, "knocked {refused} times");
    assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    let run = db.run(&gid).await.unwrap().unwrap();
    assert_eq!(run.state, RunState::Finished);
    assert_eq!(run.attempts, 1, "never taken over");
    let replies = db
        .list_messages(sid)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| {
            m.role == MessageRole::Assistant && m.graph_execution_id.as_deref() == Some(&gid)
        })
        .count();
    assert_eq!(replies, 1);
}

#[sqlx::test(migrations = false)]
async fn a_long_turn_keeps_its_run_on_sqlite(pool: SqlitePool) {
    a_long_turn_keeps_its_run(ready(Database::from(pool)).await, false).await;
}

#[sqlx::test(migrations = false)]
async fn a_long_turn_keeps_its_run_across_two_instances_on_postgres(pool: PgPool) {
    a_long_turn_keeps_its_run(ready(Database::Postgres(pool)).await, true).await;
}

/// A supervisor cancels a paused turn: its approval is cancelled with it,
/// the conversation says who cancelled it, and takes messages again.
async fn cancel_a_paused_turn(db: Database) {
    let console = Console::new(db.clone(), ConsoleConfig::for_tests())
        .await
        .unwrap();
    let sid = "cancel-paused";
    let paused = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(paused.pending_approval);
    let gid = paused.graph_execution_id.clone();
    let err = console.cancel_turn(&agent(), &gid, None).await.unwrap_err();
    assert_eq!(err.status_code(), 403, "agents may not cancel");

    let mut events = console.conversation_events(sid, None).unwrap();
    let cancelled = console
        .cancel_turn(&supervisor(), &gid, Some("the customer called us instead"))
        .await
        .unwrap();
    assert_eq!(cancelled.stop_reason, Some(StopReason::Cancelled));
    assert!(!cancelled.pending_approval);
    assert!(cancelled
        .tool_calls
        .iter()
        .all(|c| c.status != ToolCallStatus::Pending));
    let seen = until_final(&mut events).await;
    assert!(seen.iter().any(|e| matches!(
        &e.event,
        AgentEvent::ApprovalDecided(decided) if !decided.approved
    )));

    let approval = &db.approvals_of_execution(&gid).await.unwrap()[0];
    assert_eq!(approval.status, ApprovalStatus::Cancelled);
    assert_eq!(approval.decided_by.as_deref(), Some("supervisor"));
    let run = db.run(&gid).await.unwrap().unwrap();
    assert_eq!(run.state, RunState::Cancelled);
    assert_eq!(run.ended_by.as_deref(), Some("supervisor"));
    let audit = console
        .list_audit(
            &supervisor(),
            &AuditQuery {
                limit: 10,
                action_prefix: Some("turn.".into()),
                ..AuditQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(audit.len(), 1, "one audit line per cancellation");
    assert_eq!(
        (
            audit[0].actor.as_str(),
            audit[0].action.as_str(),
            audit[0].subject.as_str()
        ),
        ("supervisor", "turn.cancel", gid.as_str())
    );
    assert_eq!(audit[0].detail, "the customer called us instead");
    let detail = console.conversation(sid).await.unwrap();
    assert!(detail.active_run.is_none());
    let note = detail.messages.last().unwrap();
    assert_eq!(note.role, MessageRole::System);
    assert!(
        note.content.contains("supervisor cancelled this turn"),
        "{}",
        note.content
    );
    assert!(note.content.contains("called us instead"));

    // Decided once more: nothing; cancelled again: 409; a new message: fine.
    let err = console
        .decide(&supervisor(), &approval.id, approve())
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)), "{err:?}");
    let err = console
        .cancel_turn(&supervisor(), &gid, None)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 409);
    let next = console
        .chat(&agent(), sid, "Where is ORD-123 now?")
        .await
        .unwrap();
    assert_eq!(next.stop_reason, Some(StopReason::FinalAnswer));
}

#[sqlx::test(migrations = false)]
async fn cancel_a_paused_turn_on_sqlite(pool: SqlitePool) {
    cancel_a_paused_turn(ready(Database::from(pool)).await).await;
}

#[sqlx::test(migrations = false)]
async fn cancel_a_paused_turn_on_postgres(pool: PgPool) {
    cancel_a_paused_turn(ready(Database::Postgres(pool)).await).await;
}

/// A supervisor cancels a turn while a tool call runs: the task stops at
/// once, nothing of the rest of the turn is stored, the conversation is free.
#[sqlx::test(migrations = false)]
async fn cancel_a_running_turn(pool: SqlitePool) {
    let db = ready(Database::from(pool)).await;
    let console = Console::new(
        db.clone(),
        ConsoleConfig {
            tool_delay: Duration::from_secs(30),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let sid = "cancel-running";
    let mut events = console.conversation_events(sid, None).unwrap();
    let gid = console
        .send_message(&agent(), sid, "Where is my order ORD-123?")
        .await
        .unwrap()
        .graph_execution_id
        .expect("a turn started");
    loop {
        if let AgentEvent::ToolStart { .. } = next(&mut events).await.event {
            break;
        }
    }
    let cancelled = console
        .cancel_turn(&supervisor(), &gid, None)
        .await
        .unwrap();
    assert_eq!(cancelled.stop_reason, Some(StopReason::Cancelled));
    assert!(cancelled
        .tool_calls
        .iter()
        .all(|c| !matches!(c.status, ToolCallStatus::Running | ToolCallStatus::Pending)));
    let last = final_of(&until_final(&mut events).await);
    assert_eq!(last.stop_reason, Some(StopReason::Cancelled));
    // Well past the moment the aborted task would have gone on: no reply.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let messages = db.list_messages(sid).await.unwrap();
    assert!(messages.iter().all(|m| m.role != MessageRole::Assistant));
    assert_eq!(
        db.run(&gid).await.unwrap().unwrap().state,
        RunState::Cancelled
    );
    assert!(console
        .send_message(&agent(), sid, "hello again")
        .await
        .is_ok());
}

/// The decision landed but the process died before the resume began (here:
/// the decision is written straight to the database): the recovery sweep
/// finds the decided paused run and resumes it, exactly once.
async fn a_decided_turn_whose_resume_never_started_is_resumed(db: Database) {
    let console = Console::new(
        db.clone(),
        ConsoleConfig {
            // Only the explicit sweeps below run.
            sweep_interval: Duration::from_secs(3600),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let sid = "decided-not-resumed";
    let paused = console.chat(&agent(), sid, CHAIN).await.unwrap();
    let call = paused.pending_tool_calls[0].id.clone();
    db.decide_approval(&call, &approve(), "supervisor")
        .await
        .unwrap();
    assert_eq!(
        db.run(&paused.graph_execution_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        RunState::Paused,
        "nothing resumed it yet"
    );
    let mut events = console.conversation_events(sid, None).unwrap();
    assert_eq!(console.recover_runs().await, 1);
    let last = final_of(&until_final(&mut events).await);
    assert!(last.reply.contains("TCK-"), "{}", last.reply);
    assert_eq!(console.recover_runs().await, 0, "once");
    let tickets = db.list_tickets(Some("ORD-123")).await.unwrap();
    assert_eq!(
        tickets.iter().filter(|t| t.idempotency_key == call).count(),
        1
    );
    let run = db.run(&paused.graph_execution_id).await.unwrap().unwrap();
    assert_eq!(run.state, RunState::Finished);
}

#[sqlx::test(migrations = false)]
async fn a_decided_turn_whose_resume_never_started_is_resumed_on_sqlite(pool: SqlitePool) {
    a_decided_turn_whose_resume_never_started_is_resumed(ready(Database::from(pool)).await).await;
}

#[sqlx::test(migrations = false)]
async fn a_decided_turn_whose_resume_never_started_is_resumed_on_postgres(pool: PgPool) {
    a_decided_turn_whose_resume_never_started_is_resumed(ready(Database::Postgres(pool)).await)
        .await;
}

/// A run whose owner vanished (its lease expired, nobody renews it) is taken
/// over by another instance and continues from its last checkpoint; one
/// that vanished before its first checkpoint fails with a note, and frees
/// its conversation.
#[sqlx::test(migrations = false)]
async fn runs_of_a_dead_instance_are_taken_over(pool: PgPool) {
    let db = ready(Database::Postgres(pool)).await;
    let config = ConsoleConfig {
        lease: Duration::from_millis(300),
        sweep_interval: Duration::from_secs(3600),
        ..ConsoleConfig::for_tests()
    };
    let survivor = Console::new(db.clone(), config).await.unwrap();

    // A run with no checkpoint at all, held by a process that is gone.
    assert!(db
        .begin_turn(
            "ghost-run",
            "ghost",
            "dead-instance",
            Duration::from_millis(1),
            "hello?",
            "ghost",
            20,
            aics_db::runs::WhenHeld::Keep,
        )
        .await
        .unwrap()
        .started()
        .is_some());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut events = survivor.conversation_events("ghost", None).unwrap();
    assert_eq!(survivor.recover_runs().await, 1);
    let seen = until_final(&mut events).await;
    assert!(seen
        .iter()
        .any(|e| matches!(&e.event, AgentEvent::Error { .. })));
    let last = final_of(&seen);
    assert_eq!(last.stop_reason, Some(StopReason::Error));
    let run = db.run("ghost-run").await.unwrap().unwrap();
    assert_eq!(run.state, RunState::Failed);
    assert_eq!(run.attempts, 2);
    let messages = db.list_messages("ghost").await.unwrap();
    assert_eq!(
        messages[0].content, "hello?",
        "the customer's message is kept"
    );
    let note = messages.last().unwrap();
    assert_eq!(note.role, MessageRole::System);
    assert!(
        note.content.contains("interrupted by a restart"),
        "{}",
        note.content
    );
    assert!(survivor
        .send_message(&agent(), "ghost", "again")
        .await
        .is_ok());
}

/// A client that reconnects with the id of the last event it saw gets every
/// later event exactly once, `final` included; one that names an id the
/// server no longer keeps is told to resync.
#[sqlx::test(migrations = false)]
async fn a_reconnect_gets_every_missed_event_once(pool: SqlitePool) {
    let db = ready(Database::from(pool)).await;
    let console = Console::new(
        db,
        ConsoleConfig {
            demo_token_delay: Duration::from_millis(5),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let sid = "reconnect";
    let mut full = console.conversation_events(sid, None).unwrap();
    let mut flaky = console.conversation_events(sid, None).unwrap();
    console
        .send_message(&agent(), sid, "Where is my order ORD-123?")
        .await
        .unwrap()
        .graph_execution_id
        .expect("a turn started");
    // The flaky client reads a few events, then its connection drops.
    let mut first_part = Vec::new();
    while first_part.len() < 7 {
        first_part.push(next(&mut flaky).await);
    }
    drop(flaky);
    let all = until_final(&mut full).await;
    let last_seen = first_part.last().unwrap().id.unwrap().to_string();
    let mut again = console.conversation_events(sid, Some(&last_seen)).unwrap();
    let rest = until_final(&mut again).await;
    let ids = |events: &[aics_service::LiveEvent]| -> Vec<String> {
        events.iter().map(|e| e.id.unwrap().to_string()).collect()
    };
    let mut stitched = ids(&first_part);
    stitched.extend(ids(&rest));
    assert_eq!(stitched, ids(&all), "every event once, in order");
    let unique: HashSet<&String> = stitched.iter().collect();
    assert_eq!(unique.len(), stitched.len());

    let mut stale = console.conversation_events(sid, Some("1-999999")).unwrap();
    assert!(matches!(
        next(&mut stale).await.event,
        AgentEvent::Resync { .. }
    ));
    let mut garbage = console.conversation_events(sid, Some("yesterday")).unwrap();
    assert!(matches!(
        next(&mut garbage).await.event,
        AgentEvent::Resync { .. }
    ));
}

/// A subscriber that never reads: the turn is not slowed (it completes
/// while the subscriber sits on its events), and when it finally reads it is
/// told to resync instead of silently missing what was dropped.
#[sqlx::test(migrations = false)]
async fn a_subscriber_that_never_reads_does_not_hold_up_the_turn(pool: SqlitePool) {
    let db = ready(Database::from(pool)).await;
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    let sid = "never-reads";
    let mut stuck = console.conversation_events(sid, None).unwrap();
    let mut slow = console.conversation_events(sid, None).unwrap();
    // A few turns: far more events than a stream's ring holds (64), far
    // fewer than the conversation's replay buffer (4,096).
    for i in 0..5 {
        let trace = console
            .chat(&agent(), sid, &format!("What is your refund policy? ({i})"))
            .await
            .unwrap();
        assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    }
    // The slow reader gets every event of the five turns, in order, once.
    let mut finals = 0;
    let mut last: Option<aics_service::EventId> = None;
    while finals < 5 {
        let e = next(&mut slow).await;
        assert!(
            !matches!(e.event, AgentEvent::Resync { .. }),
            "a reader within the replay buffer must not resync"
        );
        let id = e.id.expect("a conversation's events are numbered");
        if let Some(last) = last {
            assert!(id > last, "{id} after {last}");
        }
        last = Some(id);
        finals += usize::from(matches!(e.event, AgentEvent::Final { .. }));
    }
    // Enough turns to overflow the replay buffer too.
    let started = Instant::now();
    for i in 5..150 {
        let trace = tokio::time::timeout(
            Duration::from_secs(30),
            console.chat(&agent(), sid, &format!("What is your refund policy? ({i})")),
        )
        .await
        .expect("a turn was held up")
        .unwrap();
        assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    }
    println!(
        "145 turns beside a stuck subscriber took {:?}",
        started.elapsed()
    );
    let first = next(&mut stuck).await;
    assert!(
        matches!(first.event, AgentEvent::Resync { .. }),
        "{:?}",
        first.event
    );
}

/// A stub OpenAI-compatible server that streams tool calls without ids (or
/// only the legacy `function_call`), the same in every conversation.
mod stub {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::response::IntoResponse;
    use axum::routing::post;
    use axum::{Json, Router};
    use serde_json::{json, Value};

    fn sse(chunks: &[Value]) -> String {
        let mut body = String::new();
        for c in chunks {
            body.push_str(&format!("data: {c}\n\n"));
        }
        body.push_str("data: [DONE]\n\n");
        body
    }

    /// Starts the stub; returns its base URL and its request counter.
    pub async fn start(legacy: bool) -> (String, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let app = Router::new().route(
            "/v1/chat/completions",
            post(move |Json(body): Json<Value>| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let has_result = body["messages"]
                        .as_array()
                        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
                    let args = json!({
                        "order_id": "ORD-123",
                        "category": "complaint",
                        "summary": "The order is a week late."
                    })
                    .to_string();
                    let chunks = if has_result {
                        vec![
                            json!({"choices": [{"delta": {"content": "Your ticket is open."},
                                                 "finish_reason": "stop"}]}),
                        ]
                    } else if legacy {
                        vec![json!({"choices": [{"delta": {"function_call":
                                    {"name": "ticket_create", "arguments": args}},
                                    "finish_reason": "function_call"}]})]
                    } else {
                        // No id, as some servers send them.
                        vec![json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
                                    "type": "function",
                                    "function": {"name": "ticket_create", "arguments": args}}]},
                                    "finish_reason": "tool_calls"}]})]
                    };
                    ([("content-type", "text/event-stream")], sse(&chunks)).into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}/v1"), calls)
    }
}

/// Two conversations each get a sensitive call from a provider that sends
/// no tool-call ids: each gets its own approval (ids of ours), and each
/// approval resumes its own run and opens its own ticket.
async fn calls_without_provider_ids_get_their_own_approvals(db: Database, legacy: bool) {
    let (base_url, requests) = stub::start(legacy).await;
    let console = Console::new(
        db.clone(),
        ConsoleConfig {
            provider_name: "stub".into(),
            provider: ProviderConfig::Openai(OpenAiConfig {
                base_url,
                model: "stub".into(),
                ..OpenAiConfig::default()
            }),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let mut paused = Vec::new();
    for sid in ["no-ids-a", "no-ids-b"] {
        let trace = console
            .chat(&agent(), sid, "My order ORD-123 is late, open a complaint")
            .await
            .unwrap();
        assert!(trace.pending_approval, "{trace:?}");
        paused.push(trace);
    }
    let ids: Vec<String> = paused
        .iter()
        .map(|t| t.pending_tool_calls[0].id.clone())
        .collect();
    assert_ne!(ids[0], ids[1], "one approval per conversation");
    assert!(ids
        .iter()
        .all(|id| id.starts_with("call_") && id.len() > 20));
    assert_eq!(console.list_approvals(true).await.unwrap().len(), 2);
    for (trace, id) in paused.iter().zip(&ids) {
        let approval = console.approval(id).await.unwrap();
        assert_eq!(approval.session_id, trace.session_id);
        assert_eq!(approval.graph_execution_id, trace.graph_execution_id);
    }
    // Each approval resumes its own run.
    for (trace, id) in paused.iter().zip(&ids) {
        let mut events = console
            .conversation_events(&trace.session_id, None)
            .unwrap();
        console.decide(&supervisor(), id, approve()).await.unwrap();
        let done = final_of(&until_final(&mut events).await);
        assert_eq!(done.graph_execution_id, trace.graph_execution_id);
        assert_eq!(done.reply, "Your ticket is open.");
        assert_eq!(done.tool_calls[0].id, *id);
        assert_eq!(done.tool_calls[0].status, ToolCallStatus::Ok);
    }
    let tickets = db.list_tickets(Some("ORD-123")).await.unwrap();
    let keys: HashSet<&str> = tickets.iter().map(|t| t.idempotency_key.as_str()).collect();
    assert!(keys.contains(ids[0].as_str()) && keys.contains(ids[1].as_str()));
    assert_eq!(
        tickets
            .iter()
            .filter(|t| ids.contains(&t.idempotency_key))
            .count(),
        2
    );
    for trace in &paused {
        let run = db.run(&trace.graph_execution_id).await.unwrap().unwrap();
        assert_eq!(run.state, RunState::Finished);
    }
    assert_eq!(
        requests.load(Ordering::SeqCst),
        4,
        "two calls per conversation"
    );
}

#[sqlx::test(migrations = false)]
async fn calls_without_provider_ids_get_their_own_approvals_on_sqlite(pool: SqlitePool) {
    calls_without_provider_ids_get_their_own_approvals(ready(Database::from(pool)).await, false)
        .await;
}

#[sqlx::test(migrations = false)]
async fn legacy_function_calls_get_their_own_approvals_on_sqlite(pool: SqlitePool) {
    calls_without_provider_ids_get_their_own_approvals(ready(Database::from(pool)).await, true)
        .await;
}

#[sqlx::test(migrations = false)]
async fn calls_without_provider_ids_get_their_own_approvals_on_postgres(pool: PgPool) {
    calls_without_provider_ids_get_their_own_approvals(
        ready(Database::Postgres(pool)).await,
        false,
    )
    .await;
}
