//! The store and tool tests, written once against [`Database`] and run on
//! SQLite and on PostgreSQL by `tests/db.rs`.

use aics_agent::memory::MemoryStore;
use aics_agent::tool::{ToolContext, ToolError};
use aics_db::tokens::new_token;
use aics_db::{support_tools, Database, DbError, NewApproval, SqlCheckpointer, SqlMemoryStore};
use aics_graph::{Checkpoint, Checkpointer, Interrupt};
use aics_types::{
    ApprovalDecision, ApprovalStatus, ChatTurnTraceResult, HandlingState, Intent, MessageRole,
    Role, StopReason, TokenUsage, ToolCallRecord, ToolCallStatus,
};
use serde_json::{json, Value};

mod security;
pub use security::*;

mod overview;
pub use overview::overview_counts_turns_tools_approvals_latency_and_cost;
mod takeover;
pub use takeover::*;
mod throttle;
pub use throttle::*;

mod writes;
pub use writes::{
    a_turn_begins_all_at_once_or_not_at_all, an_idle_writer_lets_its_caller_write_directly,
    group_commit_fails_only_the_caller_whose_row_fails, group_commit_keeps_every_callers_write,
};

/// A migrated and seeded database.
pub async fn ready(db: Database) -> Database {
    db.migrate().await.expect("migrate");
    db.seed().await.expect("seed");
    db
}

fn ctx(session: &str, call: &str) -> ToolContext {
    ToolContext {
        session_id: session.into(),
        customer_id: None,
        graph_execution_id: "g-test".into(),
        tool_call_id: call.into(),
        ..ToolContext::default()
    }
}

async fn call(
    db: &Database,
    tool: &str,
    context: &ToolContext,
    args: Value,
) -> Result<Value, ToolError> {
    let tools = support_tools(db);
    tools
        .get(tool)
        .expect("tool registered")
        .call(context, args)
        .await
}

pub async fn migrations_and_seed(db: Database) {
    // Migrating and seeding again changes nothing.
    db.migrate().await.expect("migrate twice");
    let again = db.seed().await.expect("seed twice");
    assert_eq!(again, Default::default(), "a second seed inserts nothing");
    db.ping().await.expect("ping");

    let order = db
        .order_detail("ORD-123")
        .await
        .expect("query")
        .expect("ORD-123 exists");
    assert_eq!(order.order.status, "delayed");
    assert!(order
        .order
        .anomaly
        .as_deref()
        .unwrap_or("")
        .contains("sorting centre"));
    assert_eq!(order.customer.id, "CUST-001");
    assert!(order.events.iter().any(|e| e.is_anomaly));
    assert!(!order.items.is_empty());

    let customers = db.list_customers().await.expect("customers");
    assert_eq!(customers.len(), 10);
    assert_eq!(
        db.customer("CUST-001")
            .await
            .expect("customer")
            .expect("some")
            .email,
        "li.wei@example.com"
    );
    assert_eq!(db.customer("CUST-404").await.expect("customer"), None);
    let mut statuses = std::collections::BTreeSet::new();
    let mut count = 0;
    for c in &customers {
        for o in db.orders_of_customer(&c.id).await.expect("orders") {
            statuses.insert(o.status);
            count += 1;
        }
    }
    assert!(count >= 30, "a few dozen orders, got {count}");
    for s in [
        "delivered",
        "in_transit",
        "delayed",
        "lost",
        "refunded",
        "processing",
    ] {
        assert!(statuses.contains(s), "no {s} order in {statuses:?}");
    }
}

pub async fn conversations_and_messages(db: Database) {
    let first = db
        .ensure_conversation("s-1", Some("CUST-001"), "Order 123")
        .await
        .expect("create");
    assert_eq!(first.handling, HandlingState::Ai);
    assert_eq!(first.title, "Order 123");
    let again = db
        .ensure_conversation("s-1", None, "another title")
        .await
        .expect("get");
    assert_eq!(
        again.title, "Order 123",
        "an existing conversation keeps its title"
    );
    assert_eq!(
        db.conversation_customer("s-1")
            .await
            .expect("customer")
            .as_deref(),
        Some("CUST-001")
    );

    db.append_message("s-1", MessageRole::Customer, "订单123一直没到", None)
        .await
        .expect("append");
    let reply = db
        .append_message(
            "s-1",
            MessageRole::Assistant,
            "Your order is delayed.",
            Some("g-1"),
        )
        .await
        .expect("append");
    assert_eq!(reply.graph_execution_id.as_deref(), Some("g-1"));
    let messages = db.list_messages("s-1").await.expect("list");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].role, MessageRole::Customer);
    assert_eq!(
        db.recent_messages("s-1", 1).await.expect("recent")[0].content,
        "Your order is delayed."
    );

    db.ensure_conversation("s-2", None, "Refund")
        .await
        .expect("create");
    let list = db.list_conversations(10).await.expect("list");
    assert_eq!(list.len(), 2);
    let s1 = list
        .iter()
        .find(|c| c.session_id == "s-1")
        .expect("s-1 listed");
    assert_eq!(s1.last_message.as_deref(), Some("Your order is delayed."));
    assert_eq!(
        list.iter()
            .find(|c| c.session_id == "s-2")
            .expect("s-2")
            .last_message,
        None
    );
    // The list shows the start of a long message; the conversation keeps
    // all of it.
    let long = "The parcel left the Wuhan sorting centre. ".repeat(10);
    db.append_message("s-2", MessageRole::Assistant, &long, None)
        .await
        .expect("append");
    let s2 = db.conversation("s-2").await.expect("get").expect("s-2");
    let shown = s2.last_message.expect("a preview");
    let kept = shown.strip_suffix('…').expect("cut");
    assert_eq!(
        kept.chars().count(),
        aics_db::conversations::PREVIEW_CHARS,
        "{shown}"
    );
    assert!(long.starts_with(kept));
    assert_eq!(
        db.list_messages("s-2").await.expect("list")[0].content,
        long
    );

    let resolved = db
        .change_handling("s-1", aics_types::HandlingAction::Resolve, "alice")
        .await
        .expect("resolve");
    assert_eq!(resolved.summary.handling, HandlingState::Closed);
    assert_eq!(resolved.line.author.as_deref(), Some("alice"));
    assert!(matches!(
        db.change_handling("nope", aics_types::HandlingAction::Resolve, "alice")
            .await,
        Err(DbError::NotFound(_))
    ));
    assert!(matches!(
        db.append_message("nope", MessageRole::Customer, "hi", None)
            .await,
        Err(DbError::NotFound(_))
    ));
    let detail = db
        .conversation_detail("s-1")
        .await
        .expect("detail")
        .expect("some");
    assert_eq!(
        detail.messages.len(),
        3,
        "the resolution is a timeline line"
    );

    let untitled = db
        .ensure_conversation("s-untitled", None, "")
        .await
        .expect("create untitled");
    assert_eq!(untitled.title, "");
    let named = db
        .ensure_conversation("s-untitled", None, "Where is my parcel?")
        .await
        .expect("first message");
    assert_eq!(
        named.title, "Where is my parcel?",
        "an untitled conversation takes the first message's title"
    );
}

/// Ends the run of `trace` as finished, with `reply` as the assistant's
/// message.
pub async fn finish_with_reply(
    db: &Database,
    trace: &ChatTurnTraceResult,
    reply: &str,
) -> aics_db::runs::RunEnded {
    db.end_run(
        "me",
        trace,
        aics_db::runs::Ending {
            state: aics_types::RunState::Finished,
            message: Some((MessageRole::Assistant, reply)),
            note: None,
            json_back: false,
        },
    )
    .await
    .expect("end")
}

fn trace(id: &str, session: &str, pending: bool) -> ChatTurnTraceResult {
    let at = chrono::Utc::now();
    ChatTurnTraceResult {
        graph_execution_id: id.into(),
        session_id: session.into(),
        reply: if pending {
            String::new()
        } else {
            "Ticket TCK-1 is open.".into()
        },
        intent: Intent::Complaint,
        tool_calls: vec![ToolCallRecord {
            id: "call_1".into(),
            name: "order_query".into(),
            input: json!({"order_id": "ORD-123"}).into(),
            output: json!({"status": "delayed"}).into(),
            status: ToolCallStatus::Ok,
            timestamp: at,
            duration_ms: Some(3),
        }],
        executed_nodes: vec!["init_state".into(), "agent".into()],
        duration_ms: 12,
        llm_calls: 2,
        steps_taken: 1,
        stop_reason: Some(if pending {
            StopReason::AwaitingApproval
        } else {
            StopReason::FinalAnswer
        }),
        pending_approval: pending,
        approval_token: None,
        pending_tool_calls: vec![],
        usage: TokenUsage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
        },
        tools_used: vec!["order_query".into()],
        tool_result: None,
        engine: "graph".into(),
        model: "demo".into(),
        cost_usd: None,
        error: None,
        started_at: at,
        llm_call_records: Vec::new(),
    }
}

pub fn checkpoint(
    thread: &str,
    step: u32,
    parent: Option<&str>,
    node: &str,
    next: Option<&str>,
) -> Checkpoint {
    Checkpoint {
        thread_id: thread.into(),
        checkpoint_id: format!("{thread}-cp{step}"),
        parent_id: parent.map(Into::into),
        step,
        node: node.into(),
        next: next.map(Into::into),
        path: vec![node.into()],
        state: (&json!({"current_step": step, "messages": ["订单123", "hello"]})).into(),
        pending_interrupts: Vec::new(),
        created_at: chrono::Utc::now(),
    }
}

pub async fn turns(db: Database) {
    let paused = trace("g-1", "s-1", true);
    db.save_turn(&paused).await.expect("save");
    assert_eq!(db.turn("g-1").await.expect("get"), Some(paused.clone()));
    let done = trace("g-1", "s-1", false);
    db.save_turn(&done).await.expect("update");
    assert_eq!(
        db.turn("g-1").await.expect("get"),
        Some(done.clone()),
        "saving again replaces"
    );
    db.save_turn(&trace("g-2", "s-1", false))
        .await
        .expect("save");
    db.save_turn(&trace("g-3", "s-other", false))
        .await
        .expect("save");
    let list = db.list_turns("s-1").await.expect("list");
    assert_eq!(
        list.iter()
            .map(|t| t.graph_execution_id.as_str())
            .collect::<Vec<_>>(),
        ["g-1", "g-2"]
    );
    assert_eq!(db.turn("missing").await.expect("get"), None);

    db.put_checkpoint(&checkpoint("g-1", 0, None, "init_state", Some("agent")))
        .await
        .expect("put");
    let detail = db.turn_detail("g-1").await.expect("detail").expect("some");
    assert_eq!(detail.trace, done);
    assert_eq!(detail.checkpoints.len(), 1);
    assert_eq!(detail.checkpoints[0].node, "init_state");
}

/// A conversation's page reads it whole: its summary, messages, turns and
/// active run, the same as each read alone.
pub async fn a_conversation_is_read_whole(db: Database) {
    use aics_db::runs::WhenHeld;
    let lease = std::time::Duration::from_secs(30);
    db.begin_turn(
        "g-0",
        "s-w",
        "me",
        lease,
        "订单123在哪？",
        "订单123",
        20,
        WhenHeld::Keep,
    )
    .await
    .expect("begin")
    .started()
    .expect("started");
    let turn = trace("g-0", "s-w", false);
    db.save_turn(&turn).await.expect("save");
    db.append_message(
        "s-w",
        MessageRole::Assistant,
        "Ticket TCK-1 is open.",
        Some("g-0"),
    )
    .await
    .expect("reply");
    let whole = db
        .conversation_detail("s-w")
        .await
        .expect("detail")
        .expect("some");
    assert_eq!(
        Some(whole.summary.clone()),
        db.conversation("s-w").await.expect("summary")
    );
    assert_eq!(
        whole.messages,
        db.list_messages("s-w").await.expect("messages")
    );
    assert_eq!(whole.messages.len(), 2);
    assert_eq!(whole.turns, [turn]);
    assert_eq!(whole.turns, db.list_turns("s-w").await.expect("turns"));
    let run = whole.active_run.expect("the turn is running");
    assert_eq!(run.graph_execution_id, "g-0");
    assert_eq!(Some(run), db.active_run("s-w").await.expect("run"));
    assert_eq!(
        db.conversation_detail("s-missing").await.expect("detail"),
        None
    );
}

pub async fn checkpoints(db: Database) {
    let saver = SqlCheckpointer::new(db.clone());
    let c0 = checkpoint("run-1", 0, None, "init_state", Some("memory_trigger"));
    let c1 = checkpoint(
        "run-1",
        1,
        Some("run-1-cp0"),
        "memory_trigger",
        Some("agent"),
    );
    let mut c2 = checkpoint("run-1", 2, Some("run-1-cp1"), "agent", Some("approval"));
    c2.pending_interrupts = vec![Interrupt {
        id: "call_7".into(),
        node: "approval".into(),
        value: json!({"tool": "ticket_create", "args": {"category": "complaint"}}),
    }];
    for c in [&c0, &c1, &c2] {
        saver.put(c).await.expect("put");
    }
    saver
        .put(&c1)
        .await
        .expect("putting the same checkpoint again is harmless");
    saver
        .put(&checkpoint("run-2", 0, None, "init_state", None))
        .await
        .expect("put");

    let list = saver.list("run-1").await.expect("list");
    assert_eq!(list.len(), 3);
    assert_eq!(list.iter().map(|c| c.step).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(list[1].parent_id.as_deref(), Some("run-1-cp0"));
    assert_eq!(
        saver
            .get("run-1", "run-1-cp1")
            .await
            .expect("get")
            .expect("some")
            .node,
        "memory_trigger"
    );
    assert_eq!(saver.get("run-1", "nope").await.expect("get"), None);
    assert!(saver.list("nobody").await.expect("list").is_empty());
    assert_eq!(saver.latest("nobody").await.expect("latest"), None);

    // Resume: another checkpointer (another instance) reads the paused state.
    let other = SqlCheckpointer::new(db.clone());
    other
        .put(&c0)
        .await
        .expect("a run's first checkpoint again, from a writer that never saw the run");
    assert_eq!(other.list("run-1").await.expect("list").len(), 3);
    let latest = other.latest("run-1").await.expect("latest").expect("some");
    assert_eq!(latest.checkpoint_id, "run-1-cp2");
    assert_eq!(latest.next.as_deref(), Some("approval"));
    assert_eq!(latest.pending_interrupts, c2.pending_interrupts);
    assert_eq!(latest.state, c2.state);
    let views = db.checkpoint_views("run-1").await.expect("views");
    assert_eq!(views[2].pending_interrupts, ["call_7"]);
}

/// A state the size of a support turn's last checkpoint (its messages
/// repeated in the model calls' records, Chinese and escapes included)
/// reads back as written, however the database stores it (PostgreSQL's
/// `jsonb` gives back the same value in its own key order).
pub async fn large_states_read_back_as_written(db: Database) {
    let saver = SqlCheckpointer::new(db.clone());
    let message = json!({
        "role": "tool",
        "content": "{\"order_id\":\"ORD-2024-001\",\"status\":\"已发货\",\"carrier\":\"顺丰\"}",
    });
    let mut cps = Vec::new();
    for step in 0..4u32 {
        let mut cp = checkpoint("big", step, None, "agent", Some("tools"));
        let messages = vec![message.clone(); 10 * (step as usize + 1)];
        cp.state = (&json!({
            "messages": messages,
            "llm_call_records": [{"messages": messages, "latency_ms": 12}],
            "current_step": step,
        }))
            .into();
        cps.push(cp);
    }
    saver.put_batch(cps.clone()).await.expect("put");
    let back = saver.list("big").await.expect("list");
    assert_eq!(back.len(), 4);
    for (a, b) in cps.iter().zip(&back) {
        assert_eq!(a.state.to_value(), b.state.to_value(), "step {}", a.step);
    }
    let latest = saver.latest("big").await.expect("latest").expect("some");
    assert_eq!(latest.state.to_value(), cps[3].state.to_value());
    let views = db.checkpoint_views("big").await.expect("views");
    assert_eq!(views[3].state, cps[3].state.to_value());
}

/// A run's checkpoints as a long run makes them: each state its parent's
/// plus a message, `n` of them from `from`, each naming the one before.
pub fn growing_run(thread: &str, from: u32, n: u32) -> Vec<Checkpoint> {
    (from..from + n)
        .map(|step| {
            let parent = step.checked_sub(1).map(|p| format!("{thread}-cp{p}"));
            let mut cp = checkpoint(thread, step, parent.as_deref(), "agent", Some("tools"));
            let messages: Vec<Value> = (0..=step)
                .map(|i| json!({"role": "tool", "content": format!("订单 ORD-{i:04} 已发货，顺丰 SF{}", 1_000_000 + i * 7919)}))
                .collect();
            cp.state = (&json!({"messages": messages, "current_step": step, "note": "\"quoted\" \\ text"})).into();
            cp
        })
        .collect()
}

/// However a run's checkpoints were written (one at a time, as `sync` and
/// `async` write them; a turn's at once, as `exit` does; by a writer that
/// remembers the run, or by a new one after a restart), and whatever each
/// state was stored on, every checkpoint reads back as written, and so
/// does a fork whose first checkpoint's parent is in another run.
pub async fn every_state_reads_back_however_its_run_was_written(db: Database) {
    let run = growing_run("long", 0, 40);
    let saver = SqlCheckpointer::new(db.clone());
    for cp in &run[..20] {
        saver.put(cp).await.expect("put");
    }
    saver.put_batch(run[20..30].to_vec()).await.expect("batch");
    let restarted = SqlCheckpointer::new(db.clone());
    let mut last = run[39].clone();
    last.next = None;
    for cp in run[30..39].iter().chain([&last]) {
        restarted.put(cp).await.expect("put");
    }
    let mut fork = growing_run("fork", 0, 3);
    fork[0].parent_id = Some("long-cp10".into());
    for cp in &fork {
        restarted.put(cp).await.expect("put");
    }

    let list = saver.list("long").await.expect("list");
    assert_eq!(list.len(), 40);
    for (written, read) in run.iter().zip(&list) {
        assert_eq!(read.state, written.state, "step {}", written.step);
    }
    for step in [0, 1, 15, 16, 17, 29, 31, 38] {
        let id = format!("long-cp{step}");
        let read = saver.get("long", &id).await.expect("get").expect("some");
        assert_eq!(read.state, run[step as usize].state, "{id}");
    }
    let latest = SqlCheckpointer::new(db.clone())
        .latest("long")
        .await
        .expect("latest")
        .expect("some");
    assert_eq!(latest.state, last.state);
    assert_eq!(latest.next, None);
    let forked = saver.list("fork").await.expect("list");
    assert_eq!(forked.len(), 3);
    for (written, read) in fork.iter().zip(&forked) {
        assert_eq!(read.state, written.state, "fork step {}", written.step);
    }
    let views = db.checkpoint_views("long").await.expect("views");
    assert_eq!(views[25].state, run[25].state.to_value());
}

fn new_approval(id: &str, session: &str) -> NewApproval {
    NewApproval {
        id: id.into(),
        session_id: session.into(),
        graph_execution_id: "g-9".into(),
        tool: "ticket_create".into(),
        proposed_args: json!({"order_id": "ORD-123", "category": "complaint", "summary": "late"}),
        policy_reason: "complaint tickets are reviewed by a supervisor".into(),
        ..NewApproval::default()
    }
}

fn decision(approve: bool, reason: Option<&str>, token: Option<&str>) -> ApprovalDecision {
    ApprovalDecision {
        approve,
        reason: reason.map(Into::into),
        args: None,
        token: token.map(Into::into),
    }
}

pub async fn approvals(db: Database) {
    db.ensure_conversation("s-a", None, "Complaint")
        .await
        .expect("conversation");
    db.append_message(
        "s-a",
        MessageRole::Customer,
        "订单123一直没到，我要投诉",
        None,
    )
    .await
    .expect("msg");
    let token = new_token();
    assert_eq!(token.len(), 64);
    let created = db
        .create_approval(&new_approval("call_1", "s-a"), &token)
        .await
        .expect("create");
    assert_eq!(created.status, ApprovalStatus::Pending);
    assert_eq!(created.context.len(), 1, "the conversation is the context");
    // The same tool-call id again is the same approval.
    db.create_approval(&new_approval("call_1", "s-a"), &new_token())
        .await
        .expect("again");
    db.create_approval(&new_approval("call_2", "s-a"), &token)
        .await
        .expect("second call, same step");

    let pending = db.list_pending_approvals().await.expect("pending");
    assert_eq!(
        pending.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        ["call_1", "call_2"]
    );
    assert_eq!(pending[0].context[0].content, "订单123一直没到，我要投诉");
    assert_eq!(
        db.approvals_of_execution("g-9")
            .await
            .expect("of run")
            .len(),
        2
    );

    // A wrong token fails and changes nothing.
    let wrong = db
        .decide_approval(
            "call_1",
            &decision(true, None, Some("not-the-token")),
            "api",
        )
        .await;
    assert!(matches!(wrong, Err(DbError::InvalidToken)), "{wrong:?}");
    assert_eq!(
        db.approval("call_1")
            .await
            .expect("get")
            .expect("some")
            .status,
        ApprovalStatus::Pending
    );
    // A rejection needs a reason.
    let no_reason = db
        .decide_approval("call_1", &decision(false, Some("  "), None), "supervisor")
        .await;
    assert!(
        matches!(no_reason, Err(DbError::InvalidInput(_))),
        "{no_reason:?}"
    );

    let mut approve = decision(true, None, Some(&token));
    approve.args =
        Some(json!({"order_id": "ORD-123", "category": "complaint", "summary": "late, edited"}));
    let approved = db
        .decide_approval("call_1", &approve, "api")
        .await
        .expect("approve");
    assert_eq!(approved.status, ApprovalStatus::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("api"));
    assert!(approved.decided_at.is_some());
    assert_eq!(
        approved.approved_args.as_ref().expect("approved args")["summary"],
        "late, edited"
    );
    assert_eq!(approved.proposed_args["summary"], "late");

    // Exactly once: a second decision fails clearly, with or without the token.
    let twice = db
        .decide_approval("call_1", &decision(false, Some("no"), None), "supervisor")
        .await;
    assert!(
        matches!(twice, Err(DbError::AlreadyDecided { ref status, .. }) if status == "approved"),
        "{twice:?}"
    );
    let reuse = db
        .decide_approval("call_1", &decision(true, None, Some(&token)), "api")
        .await;
    assert!(
        matches!(reuse, Err(DbError::AlreadyDecided { .. })),
        "{reuse:?}"
    );
    assert!(matches!(
        db.decide_approval("missing", &decision(true, None, None), "supervisor")
            .await,
        Err(DbError::NotFound(_))
    ));

    // A supervisor's session decides without the token.
    let rejected = db
        .decide_approval(
            "call_2",
            &decision(false, Some("not a complaint"), None),
            "supervisor",
        )
        .await
        .expect("reject");
    assert_eq!(rejected.status, ApprovalStatus::Rejected);
    assert_eq!(rejected.decision_reason.as_deref(), Some("not a complaint"));
    assert_eq!(rejected.approved_args, None);
    assert!(db
        .list_pending_approvals()
        .await
        .expect("pending")
        .is_empty());
    assert_eq!(db.decided_approvals(10).await.expect("audit").len(), 2);
}

/// Token single use: a token that decided one approval decides nothing else
/// that it was not issued for, and cannot decide the same one again.
pub async fn approval_token_single_use(db: Database) {
    let t1 = new_token();
    let t2 = new_token();
    db.create_approval(&new_approval("call_a", "s-t"), &t1)
        .await
        .expect("create");
    db.create_approval(&new_approval("call_b", "s-t"), &t2)
        .await
        .expect("create");
    let cross = db
        .decide_approval("call_b", &decision(true, None, Some(&t1)), "api")
        .await;
    assert!(matches!(cross, Err(DbError::InvalidToken)), "{cross:?}");
    db.decide_approval("call_a", &decision(true, None, Some(&t1)), "api")
        .await
        .expect("first use");
    let again = db
        .decide_approval("call_a", &decision(true, None, Some(&t1)), "api")
        .await;
    assert!(again.is_err());
    db.decide_approval(
        "call_b",
        &decision(false, Some("duplicate"), Some(&t2)),
        "api",
    )
    .await
    .expect("own token");
    let short = db
        .create_approval(&new_approval("call_c", "s-t"), "short")
        .await;
    assert!(matches!(short, Err(DbError::InvalidInput(_))));
}

/// Two decisions racing for one approval: exactly one wins.
pub async fn racing_decisions(db: Database) {
    let token = new_token();
    db.create_approval(&new_approval("call_race", "s-race"), &token)
        .await
        .expect("create");
    let approve = decision(true, None, Some(&token));
    let reject = decision(false, Some("no"), None);
    let (a, b) = tokio::join!(
        db.decide_approval("call_race", &approve, "api"),
        db.decide_approval("call_race", &reject, "supervisor"),
    );
    assert!(
        a.is_ok() != b.is_ok(),
        "exactly one decision wins: {a:?} / {b:?}"
    );
    let loser = if a.is_ok() { b } else { a };
    assert!(
        matches!(
            loser,
            Err(DbError::AlreadyDecided { .. }) | Err(DbError::InvalidToken)
        ),
        "{loser:?}"
    );
}

/// Two runs of the same tool call at once (a resumed step racing the
/// original) still make one ticket.
pub async fn racing_ticket_calls(db: Database) {
    let args = json!({"order_id": "ORD-123", "category": "refund", "summary": "refund please"});
    let c = ctx("s-r", "call_same");
    let (a, b) = tokio::join!(
        call(&db, "ticket_create", &c, args.clone()),
        call(&db, "ticket_create", &c, args.clone()),
    );
    assert_eq!(
        a.expect("first")["ticket_id"],
        b.expect("second")["ticket_id"]
    );
    assert_eq!(
        db.list_tickets(Some("ORD-123")).await.expect("list").len(),
        1
    );
}

pub async fn memories(db: Database) {
    let store = SqlMemoryStore::new(db.clone());
    store
        .remember("CUST-001", "prefers email over phone")
        .await
        .expect("remember");
    store
        .remember("CUST-001", "记住：下午不方便接电话")
        .await
        .expect("remember");
    store
        .remember("CUST-001", "prefers email over phone")
        .await
        .expect("same text again");
    store
        .remember("CUST-002", "speaks French")
        .await
        .expect("remember");
    assert_eq!(
        store.recall("CUST-001").await.expect("recall"),
        ["prefers email over phone", "记住：下午不方便接电话"]
    );
    assert!(store.recall("CUST-404").await.expect("recall").is_empty());
    assert!(db
        .forget("CUST-002", "speaks French")
        .await
        .expect("forget"));
    assert!(store.recall("CUST-002").await.expect("recall").is_empty());
    assert!(store.remember("CUST-001", "   ").await.is_err());
}

pub async fn users(db: Database) {
    let created = db
        .ensure_default_accounts(Some("super-secret-1"), None)
        .await
        .expect("defaults");
    assert_eq!(created.len(), 2);
    assert_eq!(created[0].username, "supervisor");
    assert_eq!(created[0].generated_password, None);
    let agent_password = created[1].generated_password.clone().expect("generated");
    assert!(agent_password.len() >= 16);
    assert!(db
        .ensure_default_accounts(None, None)
        .await
        .expect("again")
        .is_empty());

    let sup = db
        .verify_password("supervisor", "super-secret-1")
        .await
        .expect("verify")
        .expect("ok");
    assert_eq!(sup.role, Role::Supervisor);
    assert_eq!(
        db.verify_password("agent", &agent_password)
            .await
            .expect("verify")
            .expect("ok")
            .role,
        Role::Agent
    );
    assert_eq!(
        db.verify_password("supervisor", "wrong-password")
            .await
            .expect("verify"),
        None
    );
    assert_eq!(
        db.verify_password("nobody", "whatever-123")
            .await
            .expect("verify"),
        None
    );

    db.create_user("alice", "correct horse", Role::Agent)
        .await
        .expect("create");
    assert!(matches!(
        db.create_user("alice", "another pass", Role::Agent).await,
        Err(DbError::InvalidInput(_))
    ));
    assert!(matches!(
        db.create_user("bob", "short", Role::Agent).await,
        Err(DbError::InvalidInput(_))
    ));
    assert_eq!(
        db.user("alice").await.expect("user").expect("some").role,
        Role::Agent
    );
}

pub async fn tool_registry(db: Database) {
    let tools = support_tools(&db);
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        [
            "escalate_to_human",
            "knowledge_search",
            "logistics_track",
            "order_query",
            "ticket_create"
        ]
    );
    let spec = tools.get("ticket_create").expect("tool").parameters();
    for field in ["order_id", "category", "summary"] {
        assert!(spec["properties"].get(field).is_some(), "{field} in {spec}");
    }
    assert_eq!(
        tools.get("order_query").expect("tool").parameters()["properties"]["order_id"]["type"],
        "string"
    );
    assert_eq!(
        tools.get("knowledge_search").expect("tool").parameters()["required"],
        json!(["query"])
    );
    assert_eq!(
        tools.get("escalate_to_human").expect("tool").parameters()["required"],
        json!(["reason"])
    );
}

pub async fn tool_order_query(db: Database) {
    let c = ctx("s-o", "call_1");
    for raw in ["order 123", "123", "ord-123", "ORD-123", "订单123"] {
        let out = call(&db, "order_query", &c, json!({"order_id": raw}))
            .await
            .expect("order");
        assert_eq!(out["order_id"], "ORD-123", "{raw}");
    }
    let out = call(&db, "order_query", &c, json!({"order_id": "order 123"}))
        .await
        .expect("order");
    assert_eq!(out["status"], "delayed");
    assert_eq!(out["customer"]["email"], "li.wei@example.com");
    assert!(out["customer"]["name"]
        .as_str()
        .expect("name")
        .contains("Li Wei"));
    assert_eq!(out["currency"], "CNY");
    assert!(out["total"].as_str().expect("total").contains('.'));
    assert!(!out["items"].as_array().expect("items").is_empty());
    assert!(out["placed_at"].is_string() && out["promised_by"].is_string());
    assert_eq!(out["latest_event"]["location"], "Wuhan sorting centre");
    assert!(out["anomaly"]["description"]
        .as_str()
        .expect("anomaly")
        .contains("Wuhan"));
    assert!(
        out["anomaly"]["days_without_movement"]
            .as_i64()
            .expect("days")
            >= 4
    );

    let delivered = call(&db, "order_query", &c, json!({"order_id": "ORD-124"}))
        .await
        .expect("order");
    assert_eq!(delivered["status"], "delivered");
    assert!(delivered["anomaly"].is_null());

    let missing = call(&db, "order_query", &c, json!({"order_id": "ORD-999999"})).await;
    assert!(
        matches!(missing, Err(ToolError::NotFound(ref m)) if m.contains("ORD-999999")),
        "{missing:?}"
    );
    for bad in [
        json!({"order_id": "abc"}),
        json!({"order_id": ""}),
        json!({}),
        json!({"order_id": 123}),
        json!({"id": "123"}),
    ] {
        let r = call(&db, "order_query", &c, bad.clone()).await;
        assert!(
            matches!(r, Err(ToolError::InvalidArguments(_))),
            "{bad} gave {r:?}"
        );
    }
}

pub async fn tool_logistics_track(db: Database) {
    let c = ctx("s-l", "call_1");
    let out = call(&db, "logistics_track", &c, json!({"order_id": "123"}))
        .await
        .expect("track");
    let events = out["events"].as_array().expect("events");
    assert!(events.len() >= 4);
    let times: Vec<&str> = events
        .iter()
        .map(|e| e["at"].as_str().expect("at"))
        .collect();
    let parsed: Vec<chrono::DateTime<chrono::Utc>> =
        times.iter().map(|t| t.parse().expect("time")).collect();
    assert!(parsed.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    assert_eq!(events.last().expect("last")["anomaly"], true);
    assert!(out["tracking_number"].is_string());
    assert!(out["anomaly"].is_object());
    let processing = call(&db, "logistics_track", &c, json!({"order_id": "ORD-1006"}))
        .await
        .expect("track");
    assert_eq!(processing["status"], "processing");
    assert!(processing["events"].as_array().expect("events").is_empty());
    assert!(matches!(
        call(&db, "logistics_track", &c, json!({"order_id": "ORD-5"})).await,
        Err(ToolError::NotFound(_))
    ));
    assert!(matches!(
        call(&db, "logistics_track", &c, json!({"order": "1"})).await,
        Err(ToolError::InvalidArguments(_))
    ));
}

pub async fn tool_ticket_create(db: Database) {
    let tools = support_tools(&db);
    let tool = tools.get("ticket_create").expect("tool");
    let complaint = json!({"order_id": "order 123", "category": "complaint", "summary": "Order 123 has not arrived; the customer complains."});
    // Which tickets wait for a supervisor is the approval policy's
    // (aics_agent::policy, tested there), not the tool's.

    let c = ctx("s-t", "call_42");
    let first = tool.call(&c, complaint.clone()).await.expect("create");
    let id = first["ticket_id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("TCK-"), "{id}");
    assert_eq!(first["status"], "open");
    assert_eq!(first["category"], "complaint");
    assert_eq!(first["order_id"], "ORD-123");
    assert_eq!(first["customer_id"], "CUST-001");
    assert_eq!(first["priority"], "high");
    // The same tool-call id (a resumed step) returns the same ticket, one row.
    let second = tool.call(&c, complaint.clone()).await.expect("again");
    assert_eq!(second["ticket_id"], first["ticket_id"]);
    assert_eq!(
        db.list_tickets(Some("ORD-123")).await.expect("list").len(),
        1
    );
    let other = tool
        .call(&ctx("s-t", "call_43"), complaint)
        .await
        .expect("another call");
    assert_ne!(other["ticket_id"], first["ticket_id"]);
    assert_eq!(
        db.list_tickets(Some("ORD-123")).await.expect("list").len(),
        2
    );
    assert_eq!(
        db.ticket(&id)
            .await
            .expect("get")
            .expect("some")
            .idempotency_key,
        "call_42"
    );

    let inquiry = tool
        .call(
            &ctx("s-t", "call_44"),
            json!({"category": "Inquiry", "summary": "Do you ship to Macau?"}),
        )
        .await
        .expect("no order");
    assert_eq!(inquiry["order_id"], Value::Null);
    assert_eq!(inquiry["category"], "inquiry");

    for (bad, want_not_found) in [
        (json!({"category": "praise", "summary": "great"}), false),
        (json!({"category": "complaint", "summary": "   "}), false),
        (json!({"category": "complaint"}), false),
        (
            json!({"order_id": "xyz", "category": "refund", "summary": "refund"}),
            false,
        ),
        (
            json!({"order_id": "ORD-424242", "category": "refund", "summary": "refund"}),
            true,
        ),
    ] {
        let r = tool.call(&ctx("s-t", "call_bad"), bad.clone()).await;
        if want_not_found {
            assert!(matches!(r, Err(ToolError::NotFound(_))), "{bad} gave {r:?}");
        } else {
            assert!(
                matches!(r, Err(ToolError::InvalidArguments(_))),
                "{bad} gave {r:?}"
            );
        }
    }
    assert!(db.ticket("TCK-NOPE").await.expect("get").is_none());
}

async fn search(db: &Database, query: &str) -> Vec<Value> {
    let out = call(
        db,
        "knowledge_search",
        &ctx("s-k", "c"),
        json!({"query": query}),
    )
    .await
    .expect("search");
    out["articles"].as_array().expect("articles").clone()
}

pub async fn tool_knowledge_search(db: Database) {
    let hits = search(&db, "refund policy").await;
    assert_eq!(hits[0]["id"], "refund-policy-en", "{hits:?}");
    assert_eq!(hits[0]["lang"], "en");
    assert!(hits[0]["snippet"]
        .as_str()
        .expect("snippet")
        .to_lowercase()
        .contains("refund"));
    assert!(hits[0]["title"].is_string());

    assert_eq!(
        search(&db, "How do returns work?").await[0]["id"],
        "returns-policy-en"
    );
    assert_eq!(
        search(&db, "my parcel is stuck at the sorting centre").await[0]["id"],
        "delayed-parcel-en"
    );
    assert_eq!(
        search(&db, "talk to a human").await[0]["category"],
        "escalation"
    );

    let zh = search(&db, "退货").await;
    assert_eq!(zh[0]["id"], "returns-policy-zh", "{zh:?}");
    assert_eq!(zh[0]["lang"], "zh");
    assert!(zh[0]["snippet"].as_str().expect("snippet").contains("退货"));
    assert_eq!(
        search(&db, "包裹延误了怎么办").await[0]["id"],
        "delayed-parcel-zh"
    );
    assert_eq!(
        search(&db, "退款多久到账").await[0]["id"],
        "refund-policy-zh"
    );
    assert_eq!(search(&db, "我要投诉").await[0]["category"], "complaints");
    assert_eq!(search(&db, "转人工").await[0]["id"], "escalation-zh");

    assert!(search(&db, "xylophone quantum").await.is_empty());
    // FTS syntax in a query is text, not an operator.
    search(&db, "\"refund\" OR NEAR(a b) * -x").await;
    let empty = call(
        &db,
        "knowledge_search",
        &ctx("s-k", "c"),
        json!({"query": "  "}),
    )
    .await;
    assert!(matches!(empty, Err(ToolError::InvalidArguments(_))));
}

pub async fn tool_escalate_to_human(db: Database) {
    db.ensure_conversation("s-e", None, "Help")
        .await
        .expect("conversation");
    let out = call(
        &db,
        "escalate_to_human",
        &ctx("s-e", "call_1"),
        json!({"reason": "customer asks for a person"}),
    )
    .await
    .expect("escalate");
    assert_eq!(out["status"], "waiting_human");
    assert_eq!(
        db.conversation("s-e")
            .await
            .expect("get")
            .expect("some")
            .handling,
        HandlingState::WaitingHuman
    );
    // A session the server has not stored yet is created, not lost.
    call(
        &db,
        "escalate_to_human",
        &ctx("s-new", "call_1"),
        json!({"reason": "angry"}),
    )
    .await
    .expect("escalate");
    assert_eq!(
        db.conversation("s-new")
            .await
            .expect("get")
            .expect("some")
            .handling,
        HandlingState::WaitingHuman
    );
    assert!(matches!(
        call(
            &db,
            "escalate_to_human",
            &ctx("s-e", "c"),
            json!({"reason": ""})
        )
        .await,
        Err(ToolError::InvalidArguments(_))
    ));
    assert!(matches!(
        call(&db, "escalate_to_human", &ctx("s-e", "c"), json!({})).await,
        Err(ToolError::InvalidArguments(_))
    ));
}

/// Writes what a paused turn leaves behind: a pending approval and its
/// checkpoint. [`after_restart`] reads them back through a new pool.
pub async fn before_restart(db: &Database, token: &str) {
    db.ensure_conversation("s-r", Some("CUST-001"), "Restart")
        .await
        .expect("conversation");
    db.create_approval(&new_approval("call_r", "s-r"), token)
        .await
        .expect("approval");
    let mut cp = checkpoint("g-9", 3, None, "agent", Some("approval"));
    cp.pending_interrupts = vec![Interrupt {
        id: "call_r".into(),
        node: "approval".into(),
        value: json!({}),
    }];
    SqlCheckpointer::new(db.clone())
        .put(&cp)
        .await
        .expect("checkpoint");
}

pub async fn after_restart(db: &Database, token: &str) {
    let pending = db.list_pending_approvals().await.expect("pending");
    assert_eq!(pending.len(), 1, "the approval survived the restart");
    assert_eq!(pending[0].id, "call_r");
    let latest = SqlCheckpointer::new(db.clone())
        .latest("g-9")
        .await
        .expect("latest")
        .expect("some");
    assert_eq!(latest.pending_interrupts[0].id, "call_r");
    let decided = db
        .decide_approval("call_r", &decision(true, None, Some(token)), "api")
        .await
        .expect("approve");
    assert_eq!(decided.status, ApprovalStatus::Approved);
}
