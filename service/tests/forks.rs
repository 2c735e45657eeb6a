//! Forks in the trace studio, on fresh SQLite databases and on
//! PostgreSQL: a fork runs from a stored checkpoint and stores its trace,
//! but writes no ticket, message or approval and holds no conversation;
//! only supervisors may fork.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, ready, supervisor, CHAIN};

use std::time::Duration;

use aics_agent::policy::ApprovalsConfig;
use aics_db::{AuditQuery, Database};
use aics_service::{Console, ConsoleConfig};
use aics_types::{ForkRequest, StopReason, StudioRun, StudioRunState, ToolCallStatus};
use sqlx::{PgPool, SqlitePool};

async fn count(db: &Database, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    match db {
        Database::Sqlite(sqlite) => sqlx::query_scalar(&sql)
            .fetch_one(sqlite.pool())
            .await
            .unwrap(),
        Database::Postgres(pool) => sqlx::query_scalar(&sql).fetch_one(pool).await.unwrap(),
    }
}

/// Waits until the fork is no longer running.
async fn ended(console: &Console, id: &str) -> StudioRun {
    for _ in 0..500 {
        let run = console.fork(&supervisor(), id).await.unwrap();
        if run.state != StudioRunState::Running {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fork {id} still running");
}

/// No approval rule: the complaint ticket is created at once.
fn no_approvals() -> ConsoleConfig {
    ConsoleConfig {
        approvals: ApprovalsConfig {
            rules: Vec::new(),
            ..ApprovalsConfig::default()
        },
        ..ConsoleConfig::for_tests()
    }
}

async fn fork_of_a_ticket_turn_writes_nothing(db: Database) {
    let db = ready(db).await;
    let console = Console::new(db.clone(), no_approvals()).await.unwrap();
    let sid = "fork-ticket";
    let original = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(original.reply.contains("TCK-"), "{}", original.reply);
    let gid = original.graph_execution_id.clone();
    let tickets = count(&db, "tickets").await;
    let messages = console.conversation(sid).await.unwrap().messages.len();
    let checkpoints = console.turn_detail(&gid).await.unwrap().checkpoints;
    let input = &checkpoints[0];

    let request = ForkRequest {
        checkpoint_id: input.checkpoint_id.clone(),
        message: Some(
            "My order ORD-123 never arrived, please file a complaint as a general inquiry.".into(),
        ),
        ..ForkRequest::default()
    };
    // Agents may not fork.
    let denied = console
        .fork_turn(&agent(), &gid, &request)
        .await
        .unwrap_err();
    assert_eq!(denied.status_code(), 403);
    assert_eq!(
        console
            .list_forks(&agent(), &gid)
            .await
            .unwrap_err()
            .status_code(),
        403
    );

    let started = console
        .fork_turn(&supervisor(), &gid, &request)
        .await
        .unwrap();
    assert_eq!(started.state, StudioRunState::Running);
    assert_eq!(started.source_graph_execution_id, gid);
    assert_eq!(started.source_checkpoint_id, input.checkpoint_id);
    let run = ended(&console, &started.id).await;
    assert_eq!(run.state, StudioRunState::Done, "{:?}", run.error);
    let trace = run.trace.unwrap();
    assert_eq!(trace.graph_execution_id, run.id);
    assert!(!trace.reply.is_empty());
    let ticket = trace
        .tool_calls
        .iter()
        .find(|c| c.name == "ticket_create")
        .expect("the fork opens a (simulated) ticket");
    assert_eq!(ticket.status, ToolCallStatus::Ok);
    assert_eq!(ticket.output["simulated"], true);
    assert_eq!(
        ticket.input["category"], "inquiry",
        "the edited message was read"
    );
    // Read-only tools ran for real.
    let order = trace
        .tool_calls
        .iter()
        .find(|c| c.name == "order_query")
        .unwrap();
    assert!(order.output.get("simulated").is_none());

    // Nothing reached the conversation or the shop.
    assert_eq!(count(&db, "tickets").await, tickets);
    assert_eq!(
        console.conversation(sid).await.unwrap().messages.len(),
        messages
    );
    let turns = console.list_turns(sid).await.unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(count(&db, "runs").await, 1);
    // Its record and lineage.
    let listed = console.list_forks(&supervisor(), &gid).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].message.as_deref(), request.message.as_deref());
    let audit = console
        .list_audit(
            &supervisor(),
            &AuditQuery {
                limit: 10,
                before_id: None,
                actor: None,
                action_prefix: Some("studio.".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].subject, gid);

    // Bad requests change nothing.
    let last = checkpoints.last().unwrap();
    let at_end = ForkRequest {
        checkpoint_id: last.checkpoint_id.clone(),
        ..ForkRequest::default()
    };
    let err = console
        .fork_turn(&supervisor(), &gid, &at_end)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    let unknown = ForkRequest {
        checkpoint_id: "no-such-checkpoint".into(),
        ..ForkRequest::default()
    };
    let err = console
        .fork_turn(&supervisor(), &gid, &unknown)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 404);
    let bad_protocol = ForkRequest {
        protocol: Some("smoke".into()),
        ..request.clone()
    };
    let err = console
        .fork_turn(&supervisor(), &gid, &bad_protocol)
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    assert_eq!(
        console.list_forks(&supervisor(), &gid).await.unwrap().len(),
        1
    );
}

/// The conversation is held by a turn paused for approval: a fork of it
/// still runs (it holds nothing), and meets the same rule without creating
/// an approval.
async fn fork_of_a_busy_conversation_runs(db: Database) {
    let db = ready(db).await;
    let console = Console::new(db.clone(), ConsoleConfig::for_tests())
        .await
        .unwrap();
    let sid = "fork-busy";
    let paused = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert!(paused.pending_approval);
    let gid = paused.graph_execution_id.clone();
    let approvals = count(&db, "approvals").await;
    let input = console.turn_detail(&gid).await.unwrap().checkpoints[0].clone();
    let started = console
        .fork_turn(
            &supervisor(),
            &gid,
            &ForkRequest {
                checkpoint_id: input.checkpoint_id,
                protocol: Some("json_plan".into()),
                ..ForkRequest::default()
            },
        )
        .await
        .unwrap();
    let run = ended(&console, &started.id).await;
    assert_eq!(run.state, StudioRunState::Done, "{:?}", run.error);
    assert_eq!(run.protocol.as_deref(), Some("json_plan"));
    let trace = run.trace.unwrap();
    assert!(trace.pending_approval);
    assert_eq!(trace.stop_reason, Some(StopReason::AwaitingApproval));
    assert_eq!(trace.pending_tool_calls[0].tool, "ticket_create");
    assert!(!trace.pending_tool_calls[0].rule.is_empty());
    assert_eq!(count(&db, "approvals").await, approvals);
    // The original turn still holds its conversation.
    let err = console
        .send_message(&agent(), sid, "hello?")
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 409);
}

/// A fork its process left `running` is ended by the sweep once stale,
/// exactly once: the task's late end then changes nothing.
async fn a_stale_fork_is_swept_once(db: Database) {
    let db = ready(db).await;
    let new = aics_db::NewStudioRun {
        id: "fork-stale",
        source_graph_execution_id: "g",
        source_checkpoint_id: "c",
        created_by: "supervisor",
        message: None,
        engine: None,
        protocol: None,
        provider: None,
    };
    db.insert_studio_run(&new).await.unwrap();
    let an_hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    assert_eq!(
        db.fail_stale_studio_runs(an_hour_ago, "stale")
            .await
            .unwrap(),
        0
    );
    let later = chrono::Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(db.fail_stale_studio_runs(later, "stale").await.unwrap(), 1);
    assert_eq!(db.fail_stale_studio_runs(later, "stale").await.unwrap(), 0);
    let trace = aics_types::ChatTurnTraceResult::default();
    assert!(!db.finish_studio_run("fork-stale", &trace).await.unwrap());
    let run = db.studio_run("fork-stale").await.unwrap().unwrap();
    assert_eq!(run.state, StudioRunState::Failed);
    assert_eq!(run.error.as_deref(), Some("stale"));
    assert!(run.trace.is_none());
}

#[sqlx::test(migrations = false)]
async fn sqlite_a_stale_fork_is_swept_once(pool: SqlitePool) {
    a_stale_fork_is_swept_once(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_a_stale_fork_is_swept_once(pool: PgPool) {
    a_stale_fork_is_swept_once(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_fork_of_a_ticket_turn_writes_nothing(pool: SqlitePool) {
    fork_of_a_ticket_turn_writes_nothing(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_fork_of_a_busy_conversation_runs(pool: SqlitePool) {
    fork_of_a_busy_conversation_runs(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_fork_of_a_ticket_turn_writes_nothing(pool: PgPool) {
    fork_of_a_ticket_turn_writes_nothing(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_fork_of_a_busy_conversation_runs(pool: PgPool) {
    fork_of_a_busy_conversation_runs(Database::Postgres(pool)).await;
}
