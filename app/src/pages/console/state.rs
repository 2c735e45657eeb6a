//! One conversation as the console shows it, as a plain value: what the
//! server stored, plus the turn that runs right now, updated by each
//! [`AgentEvent`] of the conversation's stream.
//!
//! There are no signals here. The page keeps one [`ConversationState`] in a
//! signal, feeds it the events ([`ConversationState::apply`]) and what the
//! user does (send, select a turn, decide), and renders what it says. The
//! engine owns the tool-call records: `tool_start` and `tool_end` carry them,
//! and the state upserts them by id.

use aics_types::{
    validate_message, AgentEvent, ChatMessage, ChatTurnTraceResult, ConversationDetail,
    MessageRole, PendingToolCall, StopReason, Timestamp, ToolCallRecord, ToolCallStatus,
};
use serde_json::Value;

/// A conversation's title when it has none and no message names it yet.
pub const UNTITLED: &str = "New conversation";

/// How many characters of the first message title an untitled conversation.
const TITLE_CHARS: usize = 60;

/// What the page must do after a change that the state cannot do itself.
#[must_use]
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Effects {
    /// The conversation's summary (handling label, last message) may have
    /// changed: reload the conversation list.
    pub refresh_list: bool,
    /// The turn failed: give this text back to the composer (unless the user
    /// typed something new meanwhile).
    pub restore_draft: Option<String>,
}

impl Effects {
    fn refresh() -> Self {
        Self {
            refresh_list: true,
            restore_draft: None,
        }
    }
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendRefused {
    /// Empty or too long; the sentence says which.
    Invalid(String),
    /// A turn runs, or waits for (or resumes after) a supervisor's decision.
    Busy,
}

/// The turn that runs right now, as its events arrive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveTurn {
    /// Unknown until `turn_start` (or the send's answer) names it.
    pub graph_execution_id: Option<String>,
    /// The reply so far, token by token.
    pub reply: String,
    /// The model's reasoning so far, when it streams one.
    pub reasoning: String,
    /// The turn's tool calls, in the order they started.
    pub calls: Vec<ToolCallRecord>,
    /// The nodes that started, in order.
    pub nodes: Vec<String>,
    /// Calls that paused the turn for a supervisor.
    pub pending: Vec<PendingToolCall>,
}

impl LiveTurn {
    /// Replaces the call with the record's id, or appends the record.
    fn upsert(&mut self, record: ToolCallRecord) {
        match self.calls.iter_mut().find(|c| c.id == record.id) {
            Some(call) => *call = record,
            None => self.calls.push(record),
        }
    }
}

/// What the tool-call column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineMode {
    /// No turn yet.
    Nothing,
    /// A turn runs and has not called a tool yet.
    Planning,
    /// The live turn's calls, or the shown turn's.
    Calls,
}

/// The tool-call column: the live turn's calls, or a finished turn's calls
/// with its trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineView {
    /// Whether this is the running turn.
    pub live: bool,
    /// Whether the reader picked an earlier turn (instead of the latest).
    pub picked: bool,
    pub mode: TimelineMode,
    pub calls: Vec<ToolCallRecord>,
    /// The plain tool result of a turn without a tool-call list.
    pub fallback: Option<String>,
    /// The nodes the running turn went through so far.
    pub nodes: Vec<String>,
    /// The shown turn's trace (none while live).
    pub trace: Option<ChatTurnTraceResult>,
}

/// One conversation: stored messages and turns, and the live turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationState {
    session_id: String,
    stored_title: String,
    /// The transcript, oldest first; lines added here before the server
    /// stored them have negative ids.
    pub messages: Vec<ChatMessage>,
    /// The traces of the conversation's turns, oldest first.
    pub turns: Vec<ChatTurnTraceResult>,
    /// The running turn, if one runs.
    pub live: Option<LiveTurn>,
    /// Why the last turn failed, until the next message is sent.
    pub error: Option<String>,
    /// The turn whose tools the reader picked; `None` follows the latest.
    pub selected: Option<String>,
    /// Pending calls already decided (here or by a supervisor elsewhere)
    /// whose turn has not resumed yet.
    decided: Vec<String>,
    /// The reasoning of turns that ended while the page was open, by
    /// graph execution id (reasoning is streamed, not stored).
    reasoning: Vec<(String, String)>,
    /// The text of the message in flight, given back if its turn fails.
    sent: Option<String>,
}

impl ConversationState {
    /// The conversation as the server stored it, with no turn running.
    pub fn new(detail: ConversationDetail) -> Self {
        Self {
            session_id: detail.summary.session_id,
            stored_title: detail.summary.title.trim().to_string(),
            messages: detail.messages,
            turns: detail.turns,
            live: None,
            error: None,
            selected: None,
            decided: Vec::new(),
            reasoning: Vec::new(),
            sent: None,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    // ---- what the user does ----

    /// Puts the customer's message into the transcript and starts waiting
    /// for its turn. The caller then sends it to the server.
    pub fn start_send(&mut self, text: &str, now: Timestamp) -> Result<(), SendRefused> {
        validate_message(text).map_err(SendRefused::Invalid)?;
        if self.blocked() {
            return Err(SendRefused::Busy);
        }
        self.error = None;
        self.sent = Some(text.to_string());
        self.push_message(MessageRole::Customer, text.to_string(), None, now);
        self.live = Some(LiveTurn::default());
        self.selected = None;
        Ok(())
    }

    /// The server accepted the message and named its turn.
    pub fn send_accepted(&mut self, graph_execution_id: String) {
        if let Some(live) = self.live.as_mut() {
            live.graph_execution_id.get_or_insert(graph_execution_id);
        }
    }

    /// The server refused the message, so it is not stored: take the line
    /// back out of the transcript, say why, and give the text back.
    pub fn send_failed(&mut self, message: String) -> Effects {
        if self
            .messages
            .last()
            .is_some_and(|m| m.id < 0 && m.role == MessageRole::Customer)
        {
            self.messages.pop();
        }
        self.fail(message)
    }

    /// The reader picks a turn to show in the timeline (`None`: the latest).
    pub fn select_turn(&mut self, graph_execution_id: Option<String>) {
        self.selected = graph_execution_id;
    }

    /// A decision was sent from this page: stop offering the call.
    pub fn decide_locally(&mut self, call_id: &str) {
        self.mark_decided(call_id);
    }

    /// A decision from this page was refused: offer the calls again.
    pub fn decision_failed(&mut self) {
        self.decided.clear();
    }

    // ---- what the server says ----

    /// Applies one event of the conversation's stream. `now` dates what the
    /// event itself does not (a pending call's record, a reply's line).
    pub fn apply(&mut self, event: AgentEvent, now: Timestamp) -> Effects {
        match event {
            AgentEvent::TurnStart {
                session_id,
                graph_execution_id,
                resumed,
            } => {
                if session_id != self.session_id {
                    return Effects::default();
                }
                // The turn this page started (or a repeated start) goes on;
                // any other start begins afresh.
                let mut live = match self.live.take() {
                    Some(live)
                        if live
                            .graph_execution_id
                            .as_ref()
                            .is_none_or(|g| *g == graph_execution_id) =>
                    {
                        live
                    }
                    _ => LiveTurn::default(),
                };
                if resumed {
                    // The paused turn's calls, as decided, go on live.
                    live.calls = self
                        .turn(&graph_execution_id)
                        .map(|t| t.tool_calls.clone())
                        .unwrap_or_default();
                    live.pending.clear();
                }
                live.graph_execution_id = Some(graph_execution_id);
                self.live = Some(live);
                self.selected = None;
                Effects::refresh()
            }
            AgentEvent::NodeStart { node } => {
                self.live_mut().nodes.push(node);
                Effects::default()
            }
            AgentEvent::NodeEnd { .. } => Effects::default(),
            AgentEvent::LlmToken {
                token,
                reasoning_token,
            } => {
                let live = self.live_mut();
                live.reply.push_str(&token);
                if let Some(r) = reasoning_token {
                    live.reasoning.push_str(&r);
                }
                Effects::default()
            }
            AgentEvent::ToolStart { record, .. } | AgentEvent::ToolEnd { record, .. } => {
                self.live_mut().upsert(record);
                Effects::default()
            }
            AgentEvent::ApprovalRequired {
                tool,
                args,
                id,
                session_id,
                reason,
                ..
            } => {
                if session_id != self.session_id {
                    return Effects::default();
                }
                let live = self.live_mut();
                // The event carries no record: the call waits before it runs,
                // so this is its first entry (the paused `final` brings the
                // engine's own).
                match live.calls.iter_mut().find(|c| c.id == id) {
                    Some(call) => call.status = ToolCallStatus::Pending,
                    None => live.calls.push(ToolCallRecord {
                        id: id.clone(),
                        name: tool.clone(),
                        input: args.clone(),
                        output: Value::Null,
                        status: ToolCallStatus::Pending,
                        timestamp: now,
                        duration_ms: None,
                    }),
                }
                if !live.pending.iter().any(|p| p.id == id) {
                    live.pending.push(PendingToolCall {
                        id,
                        tool,
                        args,
                        reason,
                    });
                }
                Effects::refresh()
            }
            AgentEvent::ApprovalDecided { id, approved, .. } => {
                self.mark_decided(&id);
                if !approved {
                    let stored = self.turns.iter_mut().flat_map(|t| t.tool_calls.iter_mut());
                    let live = self.live.iter_mut().flat_map(|l| l.calls.iter_mut());
                    for call in stored.chain(live).filter(|c| c.id == id) {
                        call.status = ToolCallStatus::Denied;
                    }
                }
                Effects::refresh()
            }
            AgentEvent::Final { trace } => self.finish(*trace, now),
            AgentEvent::Error { message } => self.fail(message),
        }
    }

    /// Takes the stored conversation after the event stream reconnected:
    /// what was sent while it was down is in the stored messages and traces.
    pub fn resync(&mut self, detail: ConversationDetail) -> Effects {
        let ended = self
            .live
            .as_ref()
            .and_then(|l| l.graph_execution_id.as_deref())
            .and_then(|g| detail.turns.iter().find(|t| t.graph_execution_id == g))
            .cloned();
        self.stored_title = detail.summary.title.trim().to_string();
        self.messages = detail.messages;
        self.turns = detail.turns;
        self.decided.clear();
        let mut effects = Effects::refresh();
        // A turn's trace is stored when it ends or pauses.
        if let Some(trace) = ended {
            self.keep_reasoning(&trace.graph_execution_id);
            self.live = None;
            if is_failure(&trace) {
                let message = trace.error.unwrap_or_else(|| "The turn failed.".into());
                effects = self.fail(message);
            } else {
                self.sent = None;
            }
        }
        effects
    }

    // ---- what the page shows ----

    /// Whether a turn runs.
    pub fn running(&self) -> bool {
        self.live.is_some()
    }

    /// The calls that wait for a supervisor, minus those already decided.
    pub fn waiting(&self) -> Vec<PendingToolCall> {
        let pending = match &self.live {
            Some(live) => live.pending.as_slice(),
            None => self
                .turns
                .last()
                .filter(|t| t.pending_approval)
                .map(|t| t.pending_tool_calls.as_slice())
                .unwrap_or_default(),
        };
        pending
            .iter()
            .filter(|p| !self.decided.contains(&p.id))
            .cloned()
            .collect()
    }

    /// Every pending call is decided and the turn has not resumed yet.
    pub fn resuming(&self) -> bool {
        !self.running()
            && self.waiting().is_empty()
            && self.turns.last().is_some_and(|t| t.pending_approval)
    }

    /// Whether the composer must wait: a turn runs, waits or resumes.
    pub fn blocked(&self) -> bool {
        self.running() || !self.waiting().is_empty() || self.resuming()
    }

    /// The stored title, or the first customer message, or [`UNTITLED`].
    pub fn title(&self) -> String {
        if !self.stored_title.is_empty() {
            return self.stored_title.clone();
        }
        self.messages
            .iter()
            .find(|m| m.role == MessageRole::Customer)
            .map(|m| {
                let mut title: String = m.content.chars().take(TITLE_CHARS).collect();
                if m.content.chars().count() > TITLE_CHARS {
                    title.push('…');
                }
                title
            })
            .unwrap_or_else(|| UNTITLED.into())
    }

    /// Whether the streaming reply shows (a turn runs and waits for nobody).
    pub fn streaming(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.pending.is_empty())
    }

    /// What the running turn does while no reply text has arrived.
    pub fn activity(&self) -> Option<String> {
        let live = self.live.as_ref()?;
        if let Some(call) = live
            .calls
            .iter()
            .rev()
            .find(|c| c.status == ToolCallStatus::Running)
        {
            return Some(format!("Calling {}…", call.name));
        }
        Some(match live.nodes.last().map(String::as_str) {
            Some("tools") => "Running tools…".into(),
            _ => "Thinking…".into(),
        })
    }

    /// The reasoning streamed for a turn that ended on this page.
    pub fn reasoning_for(&self, graph_execution_id: &str) -> Option<String> {
        self.reasoning
            .iter()
            .find(|(g, _)| g == graph_execution_id)
            .map(|(_, text)| text.clone())
    }

    /// The tool-call column: the live turn unless the reader picked one,
    /// else the picked or the latest turn.
    pub fn timeline(&self) -> TimelineView {
        let picked = self.selected.is_some();
        if let (Some(live), false) = (&self.live, picked) {
            return TimelineView {
                live: true,
                picked,
                mode: if live.calls.is_empty() {
                    TimelineMode::Planning
                } else {
                    TimelineMode::Calls
                },
                calls: live.calls.clone(),
                fallback: None,
                nodes: live.nodes.clone(),
                trace: None,
            };
        }
        let trace = match &self.selected {
            Some(g) => self.turn(g),
            None => self.turns.last(),
        }
        .cloned();
        TimelineView {
            live: false,
            picked,
            mode: if trace.is_some() {
                TimelineMode::Calls
            } else {
                TimelineMode::Nothing
            },
            calls: trace
                .as_ref()
                .map(|t| t.tool_calls.clone())
                .unwrap_or_default(),
            fallback: trace.as_ref().and_then(|t| t.tool_result.clone()),
            nodes: Vec::new(),
            trace,
        }
    }

    // ---- inside ----

    fn turn(&self, graph_execution_id: &str) -> Option<&ChatTurnTraceResult> {
        self.turns
            .iter()
            .find(|t| t.graph_execution_id == graph_execution_id)
    }

    /// The live turn; events of a turn whose start this page missed (it
    /// opened mid-turn) start one.
    fn live_mut(&mut self) -> &mut LiveTurn {
        self.live.get_or_insert_with(LiveTurn::default)
    }

    fn mark_decided(&mut self, call_id: &str) {
        if !self.decided.iter().any(|d| d == call_id) {
            self.decided.push(call_id.to_string());
        }
    }

    fn push_message(
        &mut self,
        role: MessageRole,
        content: String,
        graph_execution_id: Option<String>,
        now: Timestamp,
    ) {
        let id = -(self.messages.len() as i64) - 1;
        self.messages.push(ChatMessage {
            id,
            role,
            content,
            graph_execution_id,
            created_at: now,
        });
    }

    /// Keeps the live turn's reasoning for its finished reply.
    fn keep_reasoning(&mut self, graph_execution_id: &str) {
        let Some(text) = self.live.as_ref().map(|l| l.reasoning.clone()) else {
            return;
        };
        if !text.is_empty() && self.reasoning_for(graph_execution_id).is_none() {
            self.reasoning.push((graph_execution_id.to_string(), text));
        }
    }

    /// The turn ended or paused.
    fn finish(&mut self, trace: ChatTurnTraceResult, now: Timestamp) -> Effects {
        if trace.session_id != self.session_id {
            return Effects::default();
        }
        let gid = trace.graph_execution_id.clone();
        let paused = trace.pending_approval;
        let failed = is_failure(&trace);
        self.keep_reasoning(&gid);
        // The reply is stored with the turn; a failed turn's apology as a
        // system note. Show it as a reload would.
        let shown = self
            .messages
            .iter()
            .any(|m| m.graph_execution_id.as_deref() == Some(gid.as_str()));
        if !paused && !trace.reply.is_empty() && !shown {
            let role = if trace.stop_reason == Some(StopReason::Error) {
                MessageRole::System
            } else {
                MessageRole::Assistant
            };
            self.push_message(role, trace.reply.clone(), Some(gid.clone()), now);
        }
        let error = trace.error.clone();
        if !paused {
            // The turn went on after its approvals: nothing waits any more.
            for t in &mut self.turns {
                t.pending_approval = false;
            }
            self.decided.clear();
        }
        match self.turns.iter_mut().find(|t| t.graph_execution_id == gid) {
            Some(t) => *t = trace,
            None => self.turns.push(trace),
        }
        self.selected = None;
        if failed {
            self.fail(error.unwrap_or_else(|| "The turn failed.".into()))
        } else {
            self.sent = None;
            self.live = None;
            Effects::refresh()
        }
    }

    /// A turn failed: say why, end it, and give the typed message back.
    fn fail(&mut self, message: String) -> Effects {
        self.error = Some(message);
        self.live = None;
        Effects {
            refresh_list: true,
            restore_draft: self.sent.take(),
        }
    }
}

fn is_failure(trace: &ChatTurnTraceResult) -> bool {
    trace.stop_reason == Some(StopReason::Error) || trace.error.is_some()
}

#[cfg(test)]
mod tests {
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
            },
            messages,
            turns,
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
        }
    }

    fn record(id: &str, name: &str, status: ToolCallStatus) -> ToolCallRecord {
        ToolCallRecord {
            id: id.into(),
            name: name.into(),
            input: json!({"order_id": "ORD-123"}),
            output: if status == ToolCallStatus::Ok {
                json!({"status": "shipped"})
            } else {
                Value::Null
            },
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
        AgentEvent::ToolStart {
            tool: record.name.clone(),
            args: record.input.clone(),
            id: record.id.clone(),
            record,
        }
    }

    fn tool_end(record: ToolCallRecord) -> AgentEvent {
        AgentEvent::ToolEnd {
            tool: record.name.clone(),
            id: record.id.clone(),
            result: record.output.clone(),
            status: record.status,
            duration_ms: record.duration_ms.unwrap_or_default(),
            record,
        }
    }

    fn approval_required(id: &str) -> AgentEvent {
        let p = pending(id);
        AgentEvent::ApprovalRequired {
            tool: p.tool,
            args: p.args,
            id: p.id,
            session_id: SID.into(),
            graph_execution_id: "g-1".into(),
            reason: p.reason,
        }
    }

    fn decided(id: &str, approved: bool) -> AgentEvent {
        AgentEvent::ApprovalDecided {
            id: id.into(),
            approved,
            reason: (!approved).then(|| "already open".into()),
            decided_by: Some("supervisor".into()),
        }
    }

    fn final_event(trace: ChatTurnTraceResult) -> AgentEvent {
        AgentEvent::Final {
            trace: Box::new(trace),
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
        assert_eq!(
            fx,
            Effects {
                refresh_list: true,
                restore_draft: None
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
    fn a_reconnect_resync_takes_what_was_stored_meanwhile() {
        let mut s = sending();
        s.send_accepted("g-1".into());
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
        s.send_accepted("g-1".into());
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
        s.send_accepted("g-1".into());
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
}
