//! Human takeover through the console service (SQLite and PostgreSQL): a
//! customer message while a person holds the conversation starts no turn;
//! the agent's reply and note reach the live stream; handing back lets the
//! AI answer again; every change is an audit line.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, ready, supervisor};

use std::time::Duration;

use aics_db::{AuditQuery, Database};
use aics_service::{Console, ConsoleConfig, EventStream, ServiceError};
use aics_types::{AgentEvent, HandlingAction, HandlingState, MessageRole, Role, UserInfo};
use futures::StreamExt;

async fn console(db: Database) -> Console {
    Console::new(ready(db).await, ConsoleConfig::for_tests())
        .await
        .unwrap()
}

fn bob() -> UserInfo {
    UserInfo {
        username: "bob".into(),
        role: Role::Agent,
    }
}

async fn next(rx: &mut EventStream) -> AgentEvent {
    tokio::time::timeout(Duration::from_secs(20), rx.next())
        .await
        .expect("an event within 20 s")
        .expect("the stream goes on")
        .event
}

async fn takeover_flow(console: Console) {
    let sid = "take-1";
    // The AI answers first.
    console
        .chat(&agent(), sid, "What is your return policy?")
        .await
        .unwrap();
    let me = agent();
    let taken = console
        .change_handling(&me, sid, HandlingAction::TakeOver)
        .await
        .unwrap();
    assert_eq!(taken.handling, HandlingState::Human);
    assert_eq!(taken.assignee.as_deref(), Some(me.username.as_str()));
    // Someone else cannot take it, nor reply.
    let err = console
        .change_handling(&bob(), sid, HandlingAction::TakeOver)
        .await
        .unwrap_err();
    assert!(matches!(err, ServiceError::Conflict(_)), "{err:?}");
    assert!(matches!(
        console.reply_as_agent(&bob(), sid, "hi").await,
        Err(ServiceError::Conflict(_))
    ));

    // The customer writes: stored and announced, no turn.
    let mut events = console.conversation_events(sid, None).unwrap();
    let accepted = console
        .send_message(&agent(), sid, "Are you a person?")
        .await
        .unwrap();
    assert_eq!(accepted.graph_execution_id, None);
    assert_eq!(accepted.held_by.as_deref(), Some(me.username.as_str()));
    match next(&mut events).await {
        AgentEvent::Message { message } => assert_eq!(message.role, MessageRole::Customer),
        other => panic!("expected the customer's message, got {other:?}"),
    }
    assert!(console.db().active_run(sid).await.unwrap().is_none());
    // The answering calls refuse, storing nothing.
    let before = console.conversation(sid).await.unwrap().messages.len();
    assert!(matches!(
        console.chat(&agent(), sid, "hello?").await,
        Err(ServiceError::Conflict(_))
    ));
    assert_eq!(
        console.conversation(sid).await.unwrap().messages.len(),
        before
    );

    // The agent replies and notes; both reach the live stream.
    let reply = console
        .reply_as_agent(&me, sid, "Yes, I am **here**.")
        .await
        .unwrap();
    assert_eq!(reply.role, MessageRole::Agent);
    match next(&mut events).await {
        AgentEvent::Message { message } => assert_eq!(message.id, reply.id),
        other => panic!("expected the reply, got {other:?}"),
    }
    console.add_note(&bob(), sid, "VIP customer").await.unwrap();
    match next(&mut events).await {
        AgentEvent::Message { message } => assert_eq!(message.role, MessageRole::Note),
        other => panic!("expected the note, got {other:?}"),
    }
    assert!(matches!(
        console.reply_as_agent(&me, sid, "bad\u{7}").await,
        Err(ServiceError::Invalid(_))
    ));

    // The holder may ask for a draft; nobody else.
    let before = console.conversation(sid).await.unwrap().messages.len();
    let draft = console.draft_reply(&me, sid).await.unwrap();
    assert!(!draft.is_empty());
    assert!(matches!(
        console.draft_reply(&bob(), sid).await,
        Err(ServiceError::Conflict(_))
    ));
    assert_eq!(
        console.conversation(sid).await.unwrap().messages.len(),
        before,
        "a draft stores nothing"
    );

    // Handed back: the AI answers the next message.
    let back = console
        .change_handling(&me, sid, HandlingAction::HandBack)
        .await
        .unwrap();
    assert_eq!(back.handling, HandlingState::Ai);
    let trace = console
        .chat(&agent(), sid, "Thanks, and what about refunds?")
        .await
        .unwrap();
    assert!(!trace.reply.is_empty());

    // Resolve and reopen; the escalation is not staff's to make.
    console
        .change_handling(&me, sid, HandlingAction::Resolve)
        .await
        .unwrap();
    console
        .change_handling(&supervisor(), sid, HandlingAction::Reopen)
        .await
        .unwrap();
    assert!(matches!(
        console
            .change_handling(&me, sid, HandlingAction::Escalate)
            .await,
        Err(ServiceError::Invalid(_))
    ));

    let audit = console
        .db()
        .list_audit(&AuditQuery {
            limit: 100,
            before_id: None,
            actor: None,
            action_prefix: Some("conversation.".into()),
        })
        .await
        .unwrap();
    let actions: Vec<&str> = audit.iter().rev().map(|a| a.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "conversation.take_over",
            "conversation.reply",
            "conversation.note",
            "conversation.hand_back",
            "conversation.resolve",
            "conversation.reopen"
        ]
    );
    // The timeline shows each handling change.
    let detail = console.conversation(sid).await.unwrap();
    let lines = detail
        .messages
        .iter()
        .filter(|m| m.role == MessageRole::System && m.author.is_some())
        .count();
    assert_eq!(lines, 4);
}

#[sqlx::test(migrations = false)]
async fn takeover_on_sqlite(pool: sqlx::SqlitePool) {
    takeover_flow(console(Database::from(pool)).await).await;
}

#[sqlx::test(migrations = false)]
async fn takeover_on_postgres(pool: sqlx::PgPool) {
    takeover_flow(console(Database::Postgres(pool)).await).await;
}

/// The AI's escalation puts the conversation in the queue; the count says
/// so until someone takes it.
#[sqlx::test(migrations = false)]
async fn escalation_fills_the_queue_until_taken(pool: sqlx::SqlitePool) {
    let console = console(Database::from(pool)).await;
    console
        .chat(&agent(), "esc", "I want to talk to a human agent please")
        .await
        .unwrap();
    assert_eq!(console.waiting_for_human().await.unwrap(), 1);
    let detail = console.conversation("esc").await.unwrap();
    assert!(detail
        .messages
        .iter()
        .any(|m| m.role == MessageRole::System && m.content.contains("waits for a human")));
    console
        .change_handling(&agent(), "esc", HandlingAction::TakeOver)
        .await
        .unwrap();
    assert_eq!(console.waiting_for_human().await.unwrap(), 0);
}

/// Another agent can neither hand back nor resolve a conversation a person
/// holds (403, nothing changed), so cannot take it over through a hand-back
/// either; the holder and a supervisor can. The database's own change
/// checks the holder too, for a caller that skips the service's look.
async fn only_the_holder_or_a_supervisor(console: Console) {
    let sid = "held-1";
    console
        .chat(&agent(), sid, "What is your return policy?")
        .await
        .unwrap();
    let me = agent();
    console
        .change_handling(&me, sid, HandlingAction::TakeOver)
        .await
        .unwrap();
    for action in [HandlingAction::HandBack, HandlingAction::Resolve] {
        let err = console
            .change_handling(&bob(), sid, action)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ServiceError::Forbidden(_)),
            "{action:?}: {err:?}"
        );
        assert_eq!(err.status_code(), 403);
    }
    assert!(matches!(
        console
            .db()
            .change_handling(sid, HandlingAction::HandBack, "bob")
            .await,
        Err(aics_db::DbError::Conflict(_))
    ));
    // Still mine, and bob's attempts left no timeline line.
    let held = console.conversation(sid).await.unwrap();
    assert_eq!(held.summary.handling, HandlingState::Human);
    assert_eq!(held.summary.assignee.as_deref(), Some(me.username.as_str()));
    assert!(!held
        .messages
        .iter()
        .any(|m| m.author.as_deref() == Some("bob")));

    // A supervisor may hand it back; then anyone may take it.
    let back = console
        .change_handling(&supervisor(), sid, HandlingAction::HandBack)
        .await
        .unwrap();
    assert_eq!(back.handling, HandlingState::Ai);
    let taken = console
        .change_handling(&bob(), sid, HandlingAction::TakeOver)
        .await
        .unwrap();
    assert_eq!(taken.assignee.as_deref(), Some("bob"));
    // The holder resolves their own.
    let resolved = console
        .change_handling(&bob(), sid, HandlingAction::Resolve)
        .await
        .unwrap();
    assert_eq!(resolved.handling, HandlingState::Closed);
}

#[sqlx::test(migrations = false)]
async fn only_the_holder_or_a_supervisor_on_sqlite(pool: sqlx::SqlitePool) {
    only_the_holder_or_a_supervisor(console(Database::from(pool)).await).await;
}

#[sqlx::test(migrations = false)]
async fn only_the_holder_or_a_supervisor_on_postgres(pool: sqlx::PgPool) {
    only_the_holder_or_a_supervisor(console(Database::Postgres(pool)).await).await;
}
