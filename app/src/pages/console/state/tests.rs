//! One test per event of the stream, and per thing the user does.

use super::*;
use aics_types::{ConversationSummary, HandlingState, Intent, TokenUsage};
use serde_json::json;

const SID: &str = "c-1";

fn at(seconds: i64) -> Timestamp {
    chrono::DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap_or_default()
}

fn detail(messages: Vec<ChatMessage>, turns: Vec<ChatTurnTraceResult>) -> ConversationDetail {
    ConversationDetail {
        summary: ConversationSummary {
            session_id: SID.into(),
            title: String::new(),
            handling: HandlingState::Ai,
            last_message: None,
            updated_at: at(0),
            assignee: None,
            customer_id: None,
            awaiting_reply: false,
        },
        messages,
        turns,
        active_run: None,
    }
}

fn empty() -> ConversationState {
    ConversationState::new(detail(Vec::new(), Vec::new()))
}

fn stored(id: i64, role: MessageRole, content: &str, gid: Option<&str>) -> ChatMessage {
    ChatMessage {
        id,
        role,
        content: content.into(),
        graph_execution_id: gid.map(Into::into),
        created_at: at(0),
        author: None,
    }
}

fn accepted(gid: &str) -> aics_types::MessageAccepted {
    aics_types::MessageAccepted {
        graph_execution_id: Some(gid.into()),
        held_by: None,
        message: None,
    }
}

fn record(id: &str, name: &str, status: ToolCallStatus) -> ToolCallRecord {
    ToolCallRecord {
        id: id.into(),
        name: name.into(),
        input: json!({"order_id": "ORD-123"}).into(),
        output: if status == ToolCallStatus::Ok {
            json!({"status": "shipped"})
        } else {
            serde_json::Value::Null
        }
        .into(),
        status,
        timestamp: at(1),
        duration_ms: (status == ToolCallStatus::Ok).then_some(12),
    }
}

fn trace(gid: &str, reply: &str) -> ChatTurnTraceResult {
    ChatTurnTraceResult {
        graph_execution_id: gid.into(),
        session_id: SID.into(),
        reply: reply.into(),
        intent: Intent::Order,
        tool_calls: vec![record("call_1", "order_query", ToolCallStatus::Ok)],
        executed_nodes: vec!["init_state".into(), "agent".into(), "finalize".into()],
        duration_ms: 40,
        llm_calls: 2,
        steps_taken: 1,
        stop_reason: Some(StopReason::FinalAnswer),
        pending_approval: false,
        approval_token: None,
        pending_tool_calls: Vec::new(),
        usage: TokenUsage::default(),
        tools_used: vec!["order_query".into()],
        tool_result: None,
        engine: "graph".into(),
        model: "demo".into(),
        cost_usd: None,
        error: None,
        started_at: at(0),
        llm_call_records: Vec::new(),
    }
}

fn paused(gid: &str) -> ChatTurnTraceResult {
    let mut t = trace(gid, "");
    t.stop_reason = Some(StopReason::AwaitingApproval);
    t.pending_approval = true;
    t.tool_calls
        .push(record("call_2", "ticket_create", ToolCallStatus::Pending));
    t.pending_tool_calls = vec![pending("call_2")];
    t
}

fn pending(id: &str) -> PendingToolCall {
    PendingToolCall {
        id: id.into(),
        tool: "ticket_create".into(),
        args: json!({"order_id": "ORD-123"}),
        reason: "creates a ticket".into(),
        rule: "sensitive-ticket".into(),
        expires_at: None,
    }
}

fn turn_start(gid: &str, resumed: bool) -> AgentEvent {
    AgentEvent::TurnStart {
        session_id: SID.into(),
        graph_execution_id: gid.into(),
        resumed,
    }
}

fn token(text: &str) -> AgentEvent {
    AgentEvent::LlmToken {
        token: text.into(),
        reasoning_token: None,
    }
}

fn tool_start(record: ToolCallRecord) -> AgentEvent {
    AgentEvent::ToolStart(Box::new(aics_types::ToolStart { record }))
}

fn tool_end(record: ToolCallRecord) -> AgentEvent {
    AgentEvent::ToolEnd(Box::new(aics_types::ToolEnd { record }))
}

fn approval_required(id: &str) -> AgentEvent {
    let p = pending(id);
    AgentEvent::ApprovalRequired(Box::new(aics_types::ApprovalRequired {
        tool: p.tool,
        args: p.args,
        id: p.id,
        session_id: SID.into(),
        graph_execution_id: "g-1".into(),
        reason: p.reason,
        rule: p.rule,
        expires_at: p.expires_at,
    }))
}

fn decided(id: &str, approved: bool) -> AgentEvent {
    AgentEvent::ApprovalDecided(Box::new(aics_types::ApprovalDecided {
        id: id.into(),
        approved,
        reason: (!approved).then(|| "already open".into()),
        decided_by: Some("supervisor".into()),
    }))
}

fn final_event(trace: ChatTurnTraceResult) -> AgentEvent {
    AgentEvent::Final {
        trace: std::sync::Arc::new(trace),
    }
}

/// A conversation where "Where is ORD-123?" was just sent.
fn sending() -> ConversationState {
    let mut s = empty();
    assert_eq!(s.start_send("Where is ORD-123?", at(1)), Ok(()));
    s
}

fn calls(s: &ConversationState) -> Vec<(String, ToolCallStatus)> {
    s.live
        .as_ref()
        .map(|l| l.calls.iter().map(|c| (c.id.clone(), c.status)).collect())
        .unwrap_or_default()
}

#[test]
fn sending_shows_the_message_and_waits_for_the_turn() {
    let s = sending();
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].role, MessageRole::Customer);
    assert!(s.messages[0].id < 0, "not stored yet");
    assert!(s.running() && s.blocked() && s.streaming());
    assert_eq!(s.activity().as_deref(), Some("Thinking…"));
    assert_eq!(s.title(), "Where is ORD-123?");
    assert_eq!(s.timeline().mode, TimelineMode::Planning);
}

#[test]
fn a_message_is_refused_while_busy_or_when_empty() {
    let mut s = sending();
    assert_eq!(s.start_send("again", at(2)), Err(SendRefused::Busy));
    assert_eq!(s.messages.len(), 1);
    let mut s = empty();
    assert!(matches!(
        s.start_send("   ", at(1)),
        Err(SendRefused::Invalid(_))
    ));
    assert!(s.messages.is_empty() && !s.running());
}

#[test]
fn a_refused_send_takes_the_line_back_and_returns_the_text() {
    let mut s = sending();
    let fx = s.send_failed("a turn is already running".into());
    assert!(s.messages.is_empty());
    assert!(!s.running());
    assert_eq!(s.error.as_deref(), Some("a turn is already running"));
    assert_eq!(fx.restore_draft.as_deref(), Some("Where is ORD-123?"));
}

#[test]
fn turn_start_names_the_sent_turn_and_drops_the_readers_pick() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![trace("g-0", "earlier")]));
    s.select_turn(Some("g-0".into()));
    s.start_send("Where is ORD-123?", at(1)).unwrap();
    s.select_turn(Some("g-0".into()));
    let _ = s.apply(token("Let"), at(2));
    let fx = s.apply(turn_start("g-1", false), at(2));
    assert!(fx.refresh_list);
    let live = s.live.as_ref().unwrap();
    assert_eq!(live.graph_execution_id.as_deref(), Some("g-1"));
    assert_eq!(live.reply, "Let", "the sent turn's state is kept");
    assert_eq!(s.selected, None);
    assert!(s.timeline().live);
}

#[test]
fn turn_start_of_another_conversation_is_ignored() {
    let mut s = empty();
    let fx = s.apply(
        AgentEvent::TurnStart {
            session_id: "c-other".into(),
            graph_execution_id: "g-9".into(),
            resumed: false,
        },
        at(1),
    );
    assert_eq!(fx, Effects::default());
    assert!(!s.running());
}

#[test]
fn a_turn_started_elsewhere_shows_live_here() {
    let mut s = empty();
    let _ = s.apply(turn_start("g-1", false), at(1));
    assert!(s.running());
    assert!(s.messages.is_empty());
}

#[test]
fn a_resumed_turn_starts_from_the_paused_turns_calls() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    assert_eq!(s.waiting(), vec![pending("call_2")]);
    let _ = s.apply(decided("call_2", true), at(2));
    assert!(s.resuming() && s.blocked());
    let _ = s.apply(turn_start("g-1", true), at(3));
    assert!(s.running() && !s.resuming());
    assert_eq!(
        calls(&s),
        [
            ("call_1".to_string(), ToolCallStatus::Ok),
            ("call_2".to_string(), ToolCallStatus::Pending)
        ]
    );
    assert!(s.waiting().is_empty());
}

#[test]
fn node_start_records_the_path_and_node_end_changes_nothing() {
    let mut s = sending();
    let _ = s.apply(turn_start("g-1", false), at(1));
    let _ = s.apply(
        AgentEvent::NodeStart {
            node: "agent".into(),
        },
        at(1),
    );
    let _ = s.apply(
        AgentEvent::NodeStart {
            node: "tools".into(),
        },
        at(1),
    );
    let before = s.clone();
    let fx = s.apply(
        AgentEvent::NodeEnd {
            node: "tools".into(),
        },
        at(2),
    );
    assert_eq!(fx, Effects::default());
    assert_eq!(s, before);
    assert_eq!(s.live.as_ref().unwrap().nodes, ["agent", "tools"]);
    assert_eq!(s.activity().as_deref(), Some("Running tools…"));
    assert_eq!(s.timeline().nodes, ["agent", "tools"]);
}

#[test]
fn tokens_build_the_reply_and_reasoning_tokens_the_reasoning() {
    let mut s = sending();
    let _ = s.apply(token("Your order "), at(1));
    let _ = s.apply(
        AgentEvent::LlmToken {
            token: String::new(),
            reasoning_token: Some("Look up ".into()),
        },
        at(1),
    );
    let _ = s.apply(
        AgentEvent::LlmToken {
            token: "shipped.".into(),
            reasoning_token: Some("ORD-123.".into()),
        },
        at(1),
    );
    let live = s.live.as_ref().unwrap();
    assert_eq!(live.reply, "Your order shipped.");
    assert_eq!(live.reasoning, "Look up ORD-123.");
}

#[test]
fn tool_start_and_tool_end_upsert_the_engines_record_by_id() {
    let mut s = sending();
    let _ = s.apply(
        tool_start(record("call_1", "order_query", ToolCallStatus::Running)),
        at(1),
    );
    let _ = s.apply(
        tool_start(record("call_2", "logistics_track", ToolCallStatus::Running)),
        at(1),
    );
    assert_eq!(s.activity().as_deref(), Some("Calling logistics_track…"));
    assert_eq!(s.timeline().mode, TimelineMode::Calls);
    let done = record("call_1", "order_query", ToolCallStatus::Ok);
    let _ = s.apply(tool_end(done.clone()), at(2));
    let live = s.live.as_ref().unwrap();
    assert_eq!(live.calls.len(), 2, "updated in place, not appended");
    assert_eq!(live.calls[0], done, "the engine's record, as sent");
    assert_eq!(live.calls[1].status, ToolCallStatus::Running);
    // A tool_end whose start was missed still lands.
    let mut s = sending();
    let _ = s.apply(tool_end(done.clone()), at(2));
    assert_eq!(s.live.as_ref().unwrap().calls, [done]);
}

#[test]
fn approval_required_pauses_the_turn_for_a_supervisor() {
    let mut s = sending();
    let _ = s.apply(turn_start("g-1", false), at(1));
    let fx = s.apply(approval_required("call_2"), at(2));
    assert!(fx.refresh_list);
    assert_eq!(s.waiting(), vec![pending("call_2")]);
    assert!(!s.streaming(), "the reply bubble gives way to the approval");
    assert_eq!(calls(&s), [("call_2".to_string(), ToolCallStatus::Pending)]);
    assert_eq!(s.live.as_ref().unwrap().calls[0].timestamp, at(2));
    // Repeated: still one pending call.
    let _ = s.apply(approval_required("call_2"), at(3));
    assert_eq!(s.waiting().len(), 1);
}

#[test]
fn final_paused_keeps_the_calls_waiting_from_the_stored_trace() {
    let mut s = sending();
    let _ = s.apply(turn_start("g-1", false), at(1));
    let _ = s.apply(approval_required("call_2"), at(2));
    let fx = s.apply(final_event(paused("g-1")), at(4));
    assert_eq!(fx.restore_draft, None, "a pause is no failure");
    assert!(!s.running());
    assert_eq!(s.waiting(), vec![pending("call_2")]);
    assert!(s.blocked() && !s.resuming());
    assert_eq!(s.messages.len(), 1, "a paused turn has no reply yet");
    assert_eq!(s.error, None);
    let timeline = s.timeline();
    assert_eq!(timeline.calls[1].status, ToolCallStatus::Pending);
    assert_eq!(
        timeline.trace.and_then(|t| t.stop_reason),
        Some(StopReason::AwaitingApproval)
    );
}

#[test]
fn approval_decided_approve_waits_for_the_resume() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    let fx = s.apply(decided("call_2", true), at(1));
    assert!(fx.refresh_list);
    assert!(s.waiting().is_empty());
    assert!(s.resuming() && s.blocked());
    let ticket = &s.turns[0].tool_calls[1];
    assert_eq!(ticket.status, ToolCallStatus::Pending, "runs on resume");
}

#[test]
fn approval_decided_reject_marks_the_call_denied() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    let _ = s.apply(decided("call_2", false), at(1));
    assert!(s.waiting().is_empty() && s.resuming());
    assert_eq!(s.turns[0].tool_calls[1].status, ToolCallStatus::Denied);
    let _ = s.apply(turn_start("g-1", true), at(2));
    assert_eq!(calls(&s)[1], ("call_2".to_string(), ToolCallStatus::Denied));
}

#[test]
fn a_local_decision_hides_the_call_until_it_is_refused() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    s.decide_locally("call_2");
    assert!(s.waiting().is_empty());
    s.decision_failed();
    assert_eq!(s.waiting(), vec![pending("call_2")]);
}

#[test]
fn final_ok_stores_the_reply_and_the_trace() {
    let mut s = sending();
    let _ = s.apply(turn_start("g-1", false), at(1));
    let _ = s.apply(
        AgentEvent::LlmToken {
            token: "Shipped.".into(),
            reasoning_token: Some("check the order".into()),
        },
        at(1),
    );
    s.select_turn(Some("g-1".into()));
    let fx = s.apply(final_event(trace("g-1", "Shipped.")), at(5));
    // The reply shows as text; the reload brings its stored HTML.
    assert_eq!(
        fx,
        Effects {
            refresh_list: true,
            restore_draft: None,
            reload: true,
        }
    );
    assert!(!s.running() && !s.blocked());
    let reply = s.messages.last().unwrap();
    assert_eq!(reply.role, MessageRole::Assistant);
    assert_eq!(reply.content, "Shipped.");
    assert_eq!(reply.graph_execution_id.as_deref(), Some("g-1"));
    assert_eq!(reply.created_at, at(5));
    assert_eq!(s.turns.len(), 1);
    assert_eq!(s.reasoning_for("g-1").as_deref(), Some("check the order"));
    let timeline = s.timeline();
    assert!(!timeline.live && !timeline.picked);
    assert_eq!(timeline.calls.len(), 1);
    assert_eq!(
        timeline.trace.map(|t| t.graph_execution_id).as_deref(),
        Some("g-1")
    );
    // A repeated final adds no second reply.
    let _ = s.apply(final_event(trace("g-1", "Shipped.")), at(6));
    assert_eq!(s.messages.len(), 2);
    assert_eq!(s.turns.len(), 1);
}

#[test]
fn final_of_a_resumed_turn_clears_the_earlier_pause() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    let _ = s.apply(decided("call_2", true), at(1));
    let _ = s.apply(turn_start("g-1", true), at(2));
    let _ = s.apply(final_event(trace("g-1", "Ticket TCK-1 is open.")), at(3));
    assert!(!s.blocked());
    assert!(s.turns.iter().all(|t| !t.pending_approval));
    assert_eq!(s.messages.last().unwrap().content, "Ticket TCK-1 is open.");
}

#[test]
fn final_failed_shows_the_error_the_apology_and_gives_the_text_back() {
    let mut s = sending();
    let _ = s.apply(turn_start("g-1", false), at(1));
    let mut failed = trace("g-1", "Sorry, something went wrong.");
    failed.stop_reason = Some(StopReason::Error);
    failed.error = Some("the model failed: boom".into());
    let fx = s.apply(final_event(failed), at(2));
    assert_eq!(fx.restore_draft.as_deref(), Some("Where is ORD-123?"));
    assert!(fx.refresh_list);
    assert_eq!(s.error.as_deref(), Some("the model failed: boom"));
    assert!(!s.running() && !s.blocked());
    // Stored as a system note, so shown as one.
    assert_eq!(s.messages.last().unwrap().role, MessageRole::System);
    // The next send clears the error.
    s.start_send("again", at(3)).unwrap();
    assert_eq!(s.error, None);
}

#[test]
fn error_ends_the_turn_and_gives_the_text_back_once() {
    let mut s = sending();
    let _ = s.apply(token("Your"), at(1));
    let fx = s.apply(
        AgentEvent::Error {
            message: "the model failed: boom".into(),
        },
        at(2),
    );
    assert_eq!(fx.restore_draft.as_deref(), Some("Where is ORD-123?"));
    assert!(!s.running());
    assert_eq!(s.error.as_deref(), Some("the model failed: boom"));
    assert_eq!(s.messages.len(), 1, "the customer's message stays");
    // The failed final that follows does not give it back twice.
    let mut failed = trace("g-1", "");
    failed.stop_reason = Some(StopReason::Error);
    let fx = s.apply(final_event(failed), at(3));
    assert_eq!(fx.restore_draft, None);
    assert_eq!(s.error.as_deref(), Some("The turn failed."));
}

#[test]
fn a_final_of_another_conversation_is_ignored() {
    let mut s = sending();
    let mut other = trace("g-9", "elsewhere");
    other.session_id = "c-other".into();
    assert_eq!(s.apply(final_event(other), at(2)), Effects::default());
    assert!(s.running());
    assert_eq!(s.messages.len(), 1);
}

#[test]
fn the_active_run_is_the_live_one_the_paused_one_or_the_one_loaded() {
    let mut s = empty();
    assert_eq!(s.active_run(), None);
    let _ = s.apply(
        AgentEvent::TurnStart {
            session_id: SID.into(),
            graph_execution_id: "g-9".into(),
            resumed: false,
        },
        at(1),
    );
    assert_eq!(s.active_run().as_deref(), Some("g-9"));
    let mut cancelled = trace("g-9", "");
    cancelled.stop_reason = Some(StopReason::Cancelled);
    let fx = s.apply(final_event(cancelled), at(2));
    assert!(fx.reload, "the cancellation note is reloaded");
    assert_eq!(s.active_run(), None);

    let mut loaded = detail(Vec::new(), Vec::new());
    loaded.active_run = Some(aics_types::RunInfo {
        graph_execution_id: "g-10".into(),
        session_id: SID.into(),
        state: aics_types::RunState::Running,
        attempts: 2,
        note: None,
        ended_by: None,
        created_at: at(0),
        updated_at: at(0),
    });
    let s = ConversationState::new(loaded);
    assert_eq!(s.active_run().as_deref(), Some("g-10"));
}

#[test]
fn resync_from_the_server_asks_for_a_reload() {
    let mut s = empty();
    let fx = s.apply(
        AgentEvent::Resync {
            reason: "this stream fell behind".into(),
        },
        at(1),
    );
    assert!(fx.reload, "{fx:?}");
    assert!(!fx.refresh_list);
}

#[test]
fn a_reconnect_resync_takes_what_was_stored_meanwhile() {
    let mut s = sending();
    let _ = s.send_accepted(accepted("g-1"));
    let _ = s.apply(token("Your or"), at(1));
    // While the stream was down, the turn ended and was stored.
    let fx = s.resync(detail(
        vec![
            stored(1, MessageRole::Customer, "Where is ORD-123?", None),
            stored(
                2,
                MessageRole::Assistant,
                "Your order shipped.",
                Some("g-1"),
            ),
        ],
        vec![trace("g-1", "Your order shipped.")],
    ));
    assert!(fx.refresh_list);
    assert_eq!(fx.restore_draft, None);
    assert!(!s.running() && !s.blocked());
    assert_eq!(s.messages.len(), 2);
    assert!(s.messages.iter().all(|m| m.id > 0));
    // The final sent before the stream came back adds nothing twice.
    let _ = s.apply(final_event(trace("g-1", "Your order shipped.")), at(3));
    assert_eq!(s.messages.len(), 2);
}

#[test]
fn a_resync_while_the_turn_still_runs_keeps_it_live() {
    let mut s = sending();
    let _ = s.send_accepted(accepted("g-1"));
    let _ = s.apply(token("Your or"), at(1));
    let _ = s.resync(detail(
        vec![stored(1, MessageRole::Customer, "Where is ORD-123?", None)],
        Vec::new(),
    ));
    assert!(s.running());
    assert_eq!(s.live.as_ref().unwrap().reply, "Your or");
    assert_eq!(
        s.messages[0].id, 1,
        "the stored line replaces the local one"
    );
}

#[test]
fn a_resync_after_a_failed_turn_reports_it() {
    let mut s = sending();
    let _ = s.send_accepted(accepted("g-1"));
    let mut failed = trace("g-1", "");
    failed.stop_reason = Some(StopReason::Error);
    failed.error = Some("the model failed".into());
    let fx = s.resync(detail(Vec::new(), vec![failed]));
    assert_eq!(fx.restore_draft.as_deref(), Some("Where is ORD-123?"));
    assert_eq!(s.error.as_deref(), Some("the model failed"));
    assert!(!s.running());
}

#[test]
fn a_resync_forgets_local_decisions() {
    let mut s = ConversationState::new(detail(Vec::new(), vec![paused("g-1")]));
    s.decide_locally("call_2");
    let _ = s.resync(detail(Vec::new(), vec![paused("g-1")]));
    assert_eq!(s.waiting(), vec![pending("call_2")]);
}

#[test]
fn the_title_is_stored_or_taken_from_the_first_message() {
    assert_eq!(empty().title(), UNTITLED);
    let long = "x".repeat(70);
    let s = ConversationState::new(detail(
        vec![stored(1, MessageRole::Customer, &long, None)],
        Vec::new(),
    ));
    assert_eq!(s.title().chars().count(), TITLE_CHARS + 1);
    assert!(s.title().ends_with('…'));
    let mut named = detail(Vec::new(), Vec::new());
    named.summary.title = " Refund ".into();
    assert_eq!(ConversationState::new(named).title(), "Refund");
}

#[test]
fn the_reader_can_pick_an_earlier_turn_while_one_runs() {
    let mut s = ConversationState::new(detail(
        Vec::new(),
        vec![trace("g-0", "a"), {
            let mut t = trace("g-1", "b");
            t.tool_calls.clear();
            t.tool_result = Some("plain result".into());
            t
        }],
    ));
    assert_eq!(s.timeline().fallback.as_deref(), Some("plain result"));
    s.start_send("next", at(1)).unwrap();
    assert!(s.timeline().live);
    s.select_turn(Some("g-0".into()));
    let picked = s.timeline();
    assert!(!picked.live && picked.picked);
    assert_eq!(
        picked.trace.map(|t| t.graph_execution_id).as_deref(),
        Some("g-0")
    );
    assert_eq!(empty().timeline().mode, TimelineMode::Nothing);
}

#[test]
fn a_message_while_a_person_holds_the_conversation_starts_no_turn() {
    let mut s = empty();
    let _ = s.apply(
        AgentEvent::Handling {
            handling: HandlingState::Human,
            assignee: Some("alice".into()),
        },
        at(0),
    );
    assert!(s.held());
    s.start_send("Hello?", at(1)).unwrap();
    // The stream's copy arrives first, then the answer: one line.
    let _ = s.apply(
        AgentEvent::Message {
            message: Box::new(stored(7, MessageRole::Customer, "Hello?", None)),
        },
        at(1),
    );
    let fx = s.send_accepted(aics_types::MessageAccepted {
        graph_execution_id: None,
        held_by: Some("alice".into()),
        message: Some(stored(7, MessageRole::Customer, "Hello?", None)),
    });
    assert!(fx.refresh_list);
    assert!(!s.running());
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.messages[0].id, 7);
    // An agent's reply shows once, even if repeated.
    let reply = stored(8, MessageRole::Agent, "Alice here", None);
    let _ = s.apply(
        AgentEvent::Message {
            message: Box::new(reply.clone()),
        },
        at(2),
    );
    let _ = s.apply(
        AgentEvent::Message {
            message: Box::new(reply),
        },
        at(2),
    );
    assert_eq!(s.messages.len(), 2);
}

#[test]
fn a_reply_without_html_asks_for_a_reload_and_one_with_html_does_not() {
    let mut s = ConversationState::new(detail(Vec::new(), Vec::new()));
    let agent = |id| AgentEvent::Message {
        message: Box::new(stored(id, MessageRole::Agent, "**Alice** here", None)),
    };
    assert!(s.apply(agent(7), at(1)).reload, "no HTML yet: reload");
    assert_eq!(s.html_of(7), None);
    s.set_html(vec![MessageHtml {
        id: 8,
        html: "<p><strong>Bob</strong></p>".into(),
    }]);
    assert!(!s.apply(agent(8), at(2)).reload, "HTML known: no reload");
    assert_eq!(s.html_of(8).as_deref(), Some("<p><strong>Bob</strong></p>"));
    let note = AgentEvent::Message {
        message: Box::new(stored(9, MessageRole::Note, "**text**", None)),
    };
    assert!(!s.apply(note, at(3)).reload, "notes are text");
}
