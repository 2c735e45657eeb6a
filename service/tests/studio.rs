//! The trace studio's facts on fresh SQLite databases: every LLM call of a
//! turn is stored with its trace, priced at the provider's price (the demo
//! model's is zero), across a pause for approval.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, approve, ready, supervisor, CHAIN};

use std::time::Duration;

use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use sqlx::SqlitePool;

async fn console(pool: SqlitePool) -> Console {
    Console::new(
        ready(Database::from(pool)).await,
        ConsoleConfig::for_tests(),
    )
    .await
    .unwrap()
}

#[sqlx::test(migrations = false)]
async fn llm_call_records_are_stored_with_the_turn_and_priced(pool: SqlitePool) {
    let console = console(pool).await;
    let sid = "studio-1";
    let paused = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(paused.pending_approval);
    assert_eq!(paused.llm_call_records.len() as u32, paused.llm_calls);
    assert!(paused
        .llm_call_records
        .iter()
        .all(|r| r.cost_usd == Some(0.0) && r.model == "demo"));
    // Stored with the paused turn.
    let stored = console.conversation(sid).await.unwrap().turns;
    assert_eq!(stored[0].llm_call_records, paused.llm_call_records);
    assert_eq!(paused.cost_usd, Some(0.0));

    let id = console.list_approvals(true).await.unwrap()[0].id.clone();
    console.decide(&supervisor(), &id, approve()).await.unwrap();
    let done = loop {
        let turns = console.conversation(sid).await.unwrap().turns;
        if let Some(t) = turns
            .into_iter()
            .find(|t| !t.pending_approval && !t.reply.is_empty())
        {
            break t;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The resumed turn keeps the calls made before the pause, then its own.
    assert_eq!(done.llm_call_records.len() as u32, done.llm_calls);
    assert!(done.llm_call_records.len() > paused.llm_call_records.len());
    assert_eq!(
        done.llm_call_records[..paused.llm_call_records.len()],
        paused.llm_call_records[..]
    );
    let last = done.llm_call_records.last().unwrap();
    assert_eq!(last.output, done.reply);
    assert!(last.messages.iter().any(|m| m.role == "tool"));
}

#[sqlx::test(migrations = false)]
async fn a_running_turn_has_a_detail_from_its_latest_checkpoint(pool: SqlitePool) {
    let console = Console::new(
        ready(Database::from(pool)).await,
        ConsoleConfig {
            // The reply streams slowly: the turn is seen mid-run, even on
            // a loaded machine where one poll takes a while.
            demo_token_delay: Duration::from_millis(120),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let gid = console
        .send_message(&agent(), "studio-live", "Where is my order ORD-123?")
        .await
        .unwrap()
        .graph_execution_id
        .expect("the AI answers: a turn began");
    let live = loop {
        match console.turn_detail(&gid).await {
            Ok(detail) if detail.checkpoints.iter().any(|c| c.node == "tools") => break detail,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    assert_eq!(live.trace.graph_execution_id, gid);
    assert_eq!(live.trace.stop_reason, None, "still running");
    assert!(!live.trace.llm_call_records.is_empty());
    // Once it ends, the stored trace is the detail.
    let done = loop {
        let detail = console.turn_detail(&gid).await.unwrap();
        if detail.trace.stop_reason.is_some() {
            break detail;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!done.trace.reply.is_empty());
    assert!(done.checkpoints.len() > live.checkpoints.len());
    // An unknown turn is still a 404.
    assert_eq!(
        console
            .turn_detail("no-such-turn")
            .await
            .unwrap_err()
            .status_code(),
        404
    );
}
