//! Fault tests with real processes: the `aics` binary is started on a real
//! database and killed with SIGKILL mid-turn — while a tool call runs and
//! while an approved call resumes (each in the three durability modes,
//! `AICS_DURABILITY`), with ten turns in flight, and with two instances on
//! one PostgreSQL where the survivor takes over; and a second server on a
//! SQLite file another one holds, which stops at start. After every
//! restart each conversation has a finished or failed turn with its note,
//! none answers 409 for ever, no ticket exists twice and no approval is lost.
//! The recovery times are printed (`--nocapture`), never asserted.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use aics_db::{Database, SqliteAccess};
use common::{Server, Workdir};
use serde_json::{json, Value};

const CHAIN: &str = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";

/// Waits until conversation `sid` has a stored turn `pred` accepts; returns it.
async fn wait_for_turn(server: &Server, sid: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, detail) = server.get(&format!("/api/conversations/{sid}")).await;
        if status == 200 {
            if let Some(turn) = detail["turns"]
                .as_array()
                .and_then(|t| t.iter().rev().find(|t| pred(t)))
            {
                return turn.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "conversation {sid} never got the turn; it is {detail}\nlog:\n{}",
            std::fs::read_to_string(&server.log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The test's own connection to a server's file: shared, so that it reads
/// beside a server started with `AICS_SQLITE_SHARED`, and leaves no lock
/// behind for the next server once closed. (A server holds its file alone
/// by default; the tests read it once that server is killed.)
async fn open(url: &str) -> Database {
    Database::connect_with(url, SqliteAccess::Shared)
        .await
        .unwrap()
}

fn ended(turn: &Value) -> bool {
    matches!(
        turn["stopReason"].as_str(),
        Some("final_answer" | "error" | "tool_loop_limit" | "loop_detected")
    )
}

/// The conversation takes a new message again (no 409 left behind).
async fn takes_messages(server: &Server, sid: &str) {
    let (status, body) = server
        .post(
            &format!("/api/conversations/{sid}/messages"),
            json!({"message": "thanks, one more question"}),
        )
        .await;
    assert_eq!(status, 202, "{sid}: {body}");
}

/// Replies of the assistant stored for a run.
fn replies_of(detail: &Value, gid: &str) -> usize {
    detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant" && m["graphExecutionId"] == gid)
        .count()
}

/// (a) SQLite, in durability mode `mode`: killed while a tool call runs.
/// `sync` and `async` wrote the checkpoints before the tool step (the slow
/// tool gives an `async` write all the time it needs), so the restarted
/// server resumes the turn there and answers; `exit` had written nothing
/// of the turn, so it fails with its note, the customer's message kept
/// (docs/ARCHITECTURE.md, "Durability").
async fn killed_during_a_tool_call(mode: &str) {
    let dir = Workdir::new("faults", &format!("tool-{mode}"));
    let db_url = format!("sqlite://{}/aics.db", dir.display());
    let log = dir.join("server.log");
    let durability = ("AICS_DURABILITY", mode);
    let mut env = vec![("AICS_DEMO_TOOL_DELAY_MS", "60000"), durability];
    if mode == "async" {
        // Shared: the test reads the file beside it, during the tool call.
        env.push(("AICS_SQLITE_SHARED", "true"));
    }
    let first = Server::start(&db_url, &log, &env).await;
    let sid = format!("kill-during-tool-{mode}");
    let mut events = first.events(&sid, None).await;
    let (status, accepted) = first
        .post(
            &format!("/api/conversations/{sid}/messages"),
            json!({"message": "Where is my order ORD-123?"}),
        )
        .await;
    assert_eq!(status, 202);
    let gid = accepted["graphExecutionId"].as_str().unwrap().to_owned();
    events.until(|e| e.event == "tool_start").await;
    if mode == "async" {
        // `async` writes the checkpoints while the tool call waits, not
        // before it starts: `tool_start` may reach us first (it did once
        // the runtime ran tasks in the order they were woken). The kill
        // comes during the call, once they had the time they need.
        let db = open(&db_url).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        while db.list_checkpoints(&gid).await.unwrap().len() < 4 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        db.close().await;
    }
    first.kill();
    let db = open(&db_url).await;
    let left = db.list_checkpoints(&gid).await.unwrap().len();
    db.close().await;

    let restarted = Instant::now();
    let second = Server::start(&db_url, &log, &[durability]).await;
    let turn = wait_for_turn(&second, &sid, ended).await;
    println!(
        "{mode}: a turn killed mid-tool ({left} checkpoints left) ended in {:?} after the restart",
        restarted.elapsed()
    );
    assert_eq!(turn["graphExecutionId"], gid.as_str());
    let (_, detail) = second.get(&format!("/api/conversations/{sid}")).await;
    let customer = detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "customer")
        .count();
    assert_eq!(customer, 1, "the customer's message is kept: {detail}");
    if mode == "exit" {
        assert_eq!(left, 0, "exit writes nothing before the turn ends");
        assert_eq!(turn["stopReason"], "error", "{turn}");
        assert_eq!(replies_of(&detail, &gid), 0, "{detail}");
        let noted = detail["messages"].as_array().unwrap().iter().any(|m| {
            m["role"] == "system"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("interrupted by a restart"))
        });
        assert!(noted, "the note says what happened: {detail}");
    } else {
        // The input, init_state, memory_trigger, route and agent; in
        // `async` the agent step's write runs beside the tool call and may
        // not have landed (then recovery runs the agent step again).
        let expected: &[usize] = if mode == "async" { &[4, 5] } else { &[5] };
        assert!(
            expected.contains(&left),
            "{mode}: {left} checkpoints before the tool call"
        );
        assert_eq!(turn["stopReason"], "final_answer", "{turn}");
        assert_eq!(turn["toolCalls"][0]["status"], "ok");
        assert_eq!(replies_of(&detail, &gid), 1, "{detail}");
    }
    assert!(detail["activeRun"].is_null());
    takes_messages(&second, &sid).await;
    second.kill();
    let db = open(&db_url).await;
    assert_eq!(db.run(&gid).await.unwrap().unwrap().attempts, 2);
}

#[tokio::test]
async fn killed_during_a_tool_call_sync_resumes_after_a_restart() {
    killed_during_a_tool_call("sync").await;
}

#[tokio::test]
async fn killed_during_a_tool_call_async_resumes_after_a_restart() {
    killed_during_a_tool_call("async").await;
}

#[tokio::test]
async fn killed_during_a_tool_call_exit_fails_with_its_note() {
    killed_during_a_tool_call("exit").await;
}

/// (b) SQLite, in durability mode `mode`: a supervisor approved; killed
/// while the approved ticket is being created; after the restart the
/// ticket exists exactly once and the turn ends with its reply. In `exit`
/// the resumed invocation had written nothing, so the turn goes back to its
/// pause and runs again with the same decision; the call's idempotency key
/// makes the second run create nothing new.
async fn killed_after_the_decision(mode: &str) {
    let dir = Workdir::new("faults", &format!("decision-{mode}"));
    let db_url = format!("sqlite://{}/aics.db", dir.display());
    let log = dir.join("server.log");
    let durability = ("AICS_DURABILITY", mode);
    // Shared: the test reads the file beside it, at the pause.
    let first = Server::start(
        &db_url,
        &log,
        &[
            ("AICS_DEMO_TOOL_DELAY_MS", "3000"),
            ("AICS_SQLITE_SHARED", "true"),
            durability,
        ],
    )
    .await;
    let sid = format!("kill-after-decision-{mode}");
    let (status, paused) = first
        .post("/api/chat", json!({"sessionId": sid, "message": CHAIN}))
        .await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["pendingApproval"], true);
    let gid = paused["graphExecutionId"].as_str().unwrap().to_owned();
    let call = paused["pendingToolCalls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The pause was durable before it was reported, in every mode.
    let db = open(&db_url).await;
    let at_pause = db.list_checkpoints(&gid).await.unwrap();
    assert!(
        at_pause
            .last()
            .is_some_and(|c| !c.pending_interrupts.is_empty()),
        "{mode}: the pause is checkpointed"
    );
    db.close().await;
    let mut events = first.events(&sid, None).await;
    let (status, decided) = first
        .post(
            &format!("/api/approvals/{call}/decision"),
            json!({"approve": true}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    events
        .until(|e| e.event == "tool_start" && e.data["tool"] == "ticket_create")
        .await;
    first.kill();
    let db = open(&db_url).await;
    let left = db.list_checkpoints(&gid).await.unwrap().len();
    if mode == "exit" {
        assert_eq!(left, at_pause.len(), "exit: nothing after the pause");
    }
    db.close().await;

    let restarted = Instant::now();
    let second = Server::start(&db_url, &log, &[durability]).await;
    let turn = wait_for_turn(&second, &sid, ended).await;
    println!(
        "{mode}: an approved turn killed mid-call ({left} checkpoints left) ended in {:?}",
        restarted.elapsed()
    );
    assert_eq!(turn["stopReason"], "final_answer", "{turn}");
    assert!(turn["reply"].as_str().unwrap().contains("TCK-"), "{turn}");
    let (_, detail) = second.get(&format!("/api/conversations/{sid}")).await;
    assert_eq!(replies_of(&detail, &gid), 1);
    takes_messages(&second, &sid).await;
    second.kill();
    let db = open(&db_url).await;
    let tickets = db.list_tickets(Some("ORD-123")).await.unwrap();
    assert_eq!(
        tickets.iter().filter(|t| t.idempotency_key == call).count(),
        1,
        "one ticket for the approved call: {tickets:?}"
    );
    let approval = db.approval(&call).await.unwrap().unwrap();
    assert_eq!(approval.status, aics_types::ApprovalStatus::Approved);
}

#[tokio::test]
async fn killed_after_the_decision_sync_the_approved_call_runs_once() {
    killed_after_the_decision("sync").await;
}

#[tokio::test]
async fn killed_after_the_decision_async_the_approved_call_runs_once() {
    killed_after_the_decision("async").await;
}

#[tokio::test]
async fn killed_after_the_decision_exit_goes_back_to_the_pause_and_runs_once() {
    killed_after_the_decision("exit").await;
}

/// (b′) SQLite: the server died after the decision was written and before
/// any resume began (here: the decision is written while it is down); the
/// next start resumes the turn.
#[tokio::test]
async fn a_decision_taken_while_the_server_was_down_is_resumed_at_start() {
    let dir = Workdir::new("faults", "down");
    let db_url = format!("sqlite://{}/aics.db", dir.display());
    let log = dir.join("server.log");
    let first = Server::start(&db_url, &log, &[]).await;
    let sid = "decided-while-down";
    let (_, paused) = first
        .post("/api/chat", json!({"sessionId": sid, "message": CHAIN}))
        .await;
    let call = paused["pendingToolCalls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.kill();
    {
        let db = open(&db_url).await;
        let decision = aics_types::ApprovalDecision {
            approve: true,
            reason: None,
            args: None,
            token: None,
        };
        db.decide_approval(&call, &decision, "supervisor")
            .await
            .unwrap();
        db.close().await;
    }
    let second = Server::start(&db_url, &log, &[]).await;
    let turn = wait_for_turn(&second, sid, ended).await;
    assert!(turn["reply"].as_str().unwrap().contains("TCK-"), "{turn}");
    takes_messages(&second, sid).await;
}

/// Starts `n` turns that each sit in a slow tool call; returns their ids.
async fn ten_in_flight(server: &Server, prefix: &str, n: usize) -> Vec<(String, String)> {
    let mut started = Vec::new();
    let mut streams = Vec::new();
    for i in 0..n {
        let sid = format!("{prefix}-{i}");
        streams.push(server.events(&sid, None).await);
        let (status, accepted) = server
            .post(
                &format!("/api/conversations/{sid}/messages"),
                json!({"message": format!("Where is my order ORD-{}?", 123 + i)}),
            )
            .await;
        assert_eq!(status, 202, "{accepted}");
        started.push((
            sid,
            accepted["graphExecutionId"].as_str().unwrap().to_owned(),
        ));
    }
    for stream in &mut streams {
        stream.until(|e| e.event == "tool_start").await;
    }
    started
}

/// Waits until every conversation has an ended turn; returns how long it took.
async fn all_recovered(server: &Server, turns: &[(String, String)]) -> Duration {
    let from = Instant::now();
    for (sid, gid) in turns {
        let turn = wait_for_turn(server, sid, ended).await;
        assert_eq!(turn["graphExecutionId"], gid.as_str());
    }
    from.elapsed()
}

/// (c) SQLite: ten turns in flight when the process dies; after the
/// restart every one ends, with one reply each, and every conversation
/// takes messages again.
#[tokio::test]
async fn ten_turns_in_flight_all_end_after_a_restart() {
    let dir = Workdir::new("faults", "ten");
    let db_url = format!("sqlite://{}/aics.db", dir.display());
    let log = dir.join("server.log");
    let first = Server::start(&db_url, &log, &[("AICS_DEMO_TOOL_DELAY_MS", "60000")]).await;
    let turns = ten_in_flight(&first, "ten", 10).await;
    first.kill();
    let restart = Instant::now();
    let second = Server::start(&db_url, &log, &[]).await;
    let started_in = restart.elapsed();
    let took = all_recovered(&second, &turns).await;
    println!(
        "SQLite: 10 turns in flight at SIGKILL; restart {started_in:?}, then all 10 ended in {took:?} \
         (total {:?})",
        restart.elapsed()
    );
    for (sid, gid) in &turns {
        let (_, detail) = second.get(&format!("/api/conversations/{sid}")).await;
        assert_eq!(replies_of(&detail, gid), 1, "{sid}");
        takes_messages(&second, sid).await;
    }
}

/// A fresh PostgreSQL database for real processes (dropped at the end).
struct PgDatabase {
    admin: String,
    name: String,
    pub url: String,
}

impl PgDatabase {
    async fn create() -> Self {
        let admin = std::env::var("DATABASE_URL").expect(
            "DATABASE_URL must point at PostgreSQL (export DATABASE_URL=$(scripts/postgres.sh | tail -n 1))",
        );
        let name = format!("aics_fault_{}", uuid::Uuid::new_v4().simple());
        let pool = sqlx::PgPool::connect(&admin).await.unwrap();
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        let url = format!("{base}/{name}");
        Self { admin, name, url }
    }

    async fn drop_it(self) {
        if let Ok(pool) = sqlx::PgPool::connect(&self.admin).await {
            let _ = sqlx::query(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .execute(&pool)
            .await;
        }
    }
}

/// (d) PostgreSQL, two instances: one is killed with ten turns in flight;
/// the other takes them over once their leases run out and ends them all.
/// The streams on the survivor saw the turns start (the relay), and see
/// them end.
#[tokio::test]
async fn two_instances_on_postgres_the_survivor_takes_over() {
    let database = PgDatabase::create().await;
    let dir = Workdir::new("faults", "pg");
    let doomed = Server::start(
        &database.url,
        &dir.join("doomed.log"),
        &[("AICS_DEMO_TOOL_DELAY_MS", "60000")],
    )
    .await;
    let survivor = Server::start(&database.url, &dir.join("survivor.log"), &[]).await;
    let turns = ten_in_flight(&doomed, "pg", 10).await;
    // The survivor's stream of one of them (relayed from the doomed one).
    let mut watching = survivor.events(&turns[0].0, None).await;
    // While the doomed instance lives, its turns are its own.
    let (status, _) = survivor
        .post(
            &format!("/api/conversations/{}/messages", turns[0].0),
            json!({"message": "hello?"}),
        )
        .await;
    assert_eq!(status, 409);
    doomed.kill();
    let killed = Instant::now();
    let took = all_recovered(&survivor, &turns).await;
    println!(
        "PostgreSQL: 10 turns in flight on the killed instance; the survivor ended them all {:?} \
         after the kill (lease 2 s, sweep every 0.5 s; last one {took:?} after the first check)",
        killed.elapsed()
    );
    let seen = watching.until_final().await;
    assert!(seen
        .iter()
        .any(|e| e.event == "turn_start" && e.data["resumed"] == true));
    for (sid, gid) in &turns {
        let (_, detail) = survivor.get(&format!("/api/conversations/{sid}")).await;
        assert_eq!(replies_of(&detail, gid), 1, "{sid}");
        takes_messages(&survivor, sid).await;
    }
    drop(survivor);
    database.drop_it().await;
}

/// A second server on a SQLite file that a first one holds stops at start
/// with an error that says so, and changes nothing; the first one goes on.
/// Once the first is gone, a server starts on the file again.
#[tokio::test]
async fn a_second_server_on_the_same_sqlite_file_is_refused() {
    let dir = Workdir::new("faults", "second-server");
    let db_url = format!("sqlite://{}/aics.db", dir.display());
    let first = Server::start(&db_url, &dir.join("first.log"), &[]).await;
    let second_log = dir.join("second.log");
    assert!(
        !Server::stops_by_itself(&db_url, &second_log, &[]).await,
        "the second server failed"
    );
    let said = std::fs::read_to_string(&second_log).unwrap();
    assert!(said.contains("is open in another process"), "{said}");
    let sid = "first-goes-on";
    let (status, turn) = first
        .post("/api/chat", json!({"sessionId": sid, "message": "你好"}))
        .await;
    assert_eq!(status, 200, "{turn}");
    first.kill();
    let again = Server::start(&db_url, &dir.join("again.log"), &[]).await;
    let (_, detail) = again.get(&format!("/api/conversations/{sid}")).await;
    assert!(
        detail["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{detail}"
    );
}
