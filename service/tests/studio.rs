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
        ready(Database::Sqlite(pool)).await,
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
