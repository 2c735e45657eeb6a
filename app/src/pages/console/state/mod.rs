//! One conversation as the console shows it, as a plain value: what the
//! server stored, plus the turn that runs right now, updated by each
//! [`AgentEvent`] of the conversation's stream.
//!
//! There are no signals here. The page keeps one [`ConversationState`] in a
//! signal, feeds it the events ([`ConversationState::apply`]) and what the
//! user does (send, select a turn, decide), and renders what it says. The
//! engine owns the tool-call records: `tool_start` and `tool_end` carry them,
//! and the state upserts them by id.
//!
//! # Layout
//! - this file: the state, what the user does, and [`ConversationState::apply`].
//! - `view`: what the page reads from it (waiting calls, title, timeline).
//! - `tests`: one test per event and per user action.

use aics_types::{
    validate_message, AgentEvent, ChatMessage, ChatTurnTraceResult, ConversationDetail,
    HandlingState, MessageAccepted, MessageHtml, MessageRole, PendingToolCall, SharedValue,
    StopReason, Timestamp, ToolCallRecord, ToolCallStatus,
};

mod view;
pub use view::{TimelineMode, TimelineView};

#[cfg(test)]
mod tests;

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
    /// The stream skipped events (the server said `resync`): reload the
    /// conversation and [`ConversationState::resync`] with it.
    pub reload: bool,
}

impl Effects {
    fn refresh() -> Self {
        Self {
            refresh_list: true,
            ..Self::default()
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
    /// The run that held the conversation when it was loaded (it may run on
    /// the server with no live event seen here yet, e.g. after a recovery).
    loaded_run: Option<String>,
    /// Who handles the conversation (as stored: the paused run's
    /// "waiting for approval" is read from the live state).
    pub handling: HandlingState,
    /// The staff member holding it.
    pub assignee: Option<String>,
    /// The stored replies' HTML, as the server rendered it when it sent
    /// them; a reply without one shows as text until the next reload.
    html: Vec<MessageHtml>,
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
            loaded_run: detail.active_run.map(|r| r.graph_execution_id),
            handling: detail.summary.handling,
            assignee: detail.summary.assignee,
            html: Vec::new(),
        }
    }

    /// The replies' HTML the server sent with the stored messages.
    pub fn set_html(&mut self, html: Vec<MessageHtml>) {
        self.html = html;
    }

    /// The HTML of reply `id`, when the server sent one.
    pub fn html_of(&self, id: i64) -> Option<String> {
        crate::components::markdown::html_of(&self.html, id)
    }

    /// Whether a person holds the conversation (the AI does not answer).
    pub fn held(&self) -> bool {
        self.handling == HandlingState::Human
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

    /// The server accepted the message and named its turn; or — a person
    /// holds the conversation — stored it with no turn.
    pub fn send_accepted(&mut self, accepted: MessageAccepted) -> Effects {
        match accepted.graph_execution_id {
            Some(graph_execution_id) => {
                if let Some(live) = self.live.as_mut() {
                    live.graph_execution_id.get_or_insert(graph_execution_id);
                }
                Effects::default()
            }
            None => {
                self.live = None;
                self.sent = None;
                if let Some(message) = accepted.message {
                    self.add_message(message);
                }
                if self.handling != HandlingState::Human {
                    self.handling = HandlingState::Human;
                    self.assignee = accepted.held_by;
                }
                Effects::refresh()
            }
        }
    }

    /// A message stored outside a turn (a reply, a note, a handling line,
    /// a customer's message while held): shown once, in place of the line
    /// this page added for it before the server stored it.
    pub fn add_message(&mut self, message: ChatMessage) {
        if self.messages.iter().any(|m| m.id == message.id) {
            return;
        }
        if let Some(local) = self
            .messages
            .iter_mut()
            .find(|m| m.id < 0 && m.role == message.role && m.content == message.content)
        {
            *local = message;
            return;
        }
        self.messages.push(message);
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
            AgentEvent::ToolStart(start) => {
                self.live_mut().upsert(start.record);
                Effects::default()
            }
            AgentEvent::ToolEnd(end) => {
                self.live_mut().upsert(end.record);
                Effects::default()
            }
            AgentEvent::ApprovalRequired(required) => {
                let aics_types::ApprovalRequired {
                    tool,
                    args,
                    id,
                    session_id,
                    reason,
                    rule,
                    expires_at,
                    ..
                } = *required;
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
                        input: args.clone().into(),
                        output: SharedValue::default(),
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
                        rule,
                        expires_at,
                    });
                }
                Effects::refresh()
            }
            AgentEvent::ApprovalDecided(decided) => {
                let id = decided.id;
                self.mark_decided(&id);
                if !decided.approved {
                    let stored = self.turns.iter_mut().flat_map(|t| t.tool_calls.iter_mut());
                    let live = self.live.iter_mut().flat_map(|l| l.calls.iter_mut());
                    for call in stored.chain(live).filter(|c| c.id == id) {
                        call.status = ToolCallStatus::Denied;
                    }
                }
                Effects::refresh()
            }
            AgentEvent::Message { message } => {
                // A reply comes as text: reload for its HTML.
                let reload = crate::components::markdown::is_markdown(message.role)
                    && self.html_of(message.id).is_none();
                self.add_message(*message);
                Effects {
                    reload,
                    ..Effects::refresh()
                }
            }
            AgentEvent::Handling { handling, assignee } => {
                self.handling = handling;
                self.assignee = assignee;
                Effects::refresh()
            }
            AgentEvent::Final { trace } => {
                // Decoded here, so this page holds the only reference.
                self.finish(std::sync::Arc::unwrap_or_clone(trace), now)
            }
            AgentEvent::Error { message } => self.fail(message),
            // The server could not replay what this stream missed: the
            // page reloads the conversation and resyncs with it.
            AgentEvent::Resync { .. } => Effects {
                reload: true,
                ..Effects::default()
            },
        }
    }

    /// Takes the stored conversation after the stream skipped events (the
    /// server said `resync`): what was sent meanwhile is in the stored
    /// messages and traces.
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
        self.loaded_run = detail.active_run.map(|r| r.graph_execution_id);
        self.handling = detail.summary.handling;
        self.assignee = detail.summary.assignee;
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
            author: None,
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
        // A cancelled turn's note (who, why) is stored with it: reload it.
        let cancelled = trace.stop_reason == Some(StopReason::Cancelled);
        if !paused && self.loaded_run.as_deref() == Some(gid.as_str()) {
            self.loaded_run = None;
        }
        self.keep_reasoning(&gid);
        // The reply is stored with the turn; a failed turn's apology as a
        // system note. Show it as a reload would.
        let shown = self
            .messages
            .iter()
            .any(|m| m.graph_execution_id.as_deref() == Some(gid.as_str()));
        // A reply shown here is text until a reload brings its HTML.
        let mut new_reply = false;
        if !paused && !trace.reply.is_empty() && !shown {
            let role = if trace.stop_reason == Some(StopReason::Error) {
                MessageRole::System
            } else {
                new_reply = true;
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
            Effects {
                reload: cancelled || new_reply,
                ..Effects::refresh()
            }
        }
    }

    /// A turn failed: say why, end it, and give the typed message back.
    fn fail(&mut self, message: String) -> Effects {
        self.error = Some(message);
        self.live = None;
        Effects {
            refresh_list: true,
            restore_draft: self.sent.take(),
            reload: false,
        }
    }
}

fn is_failure(trace: &ChatTurnTraceResult) -> bool {
    trace.stop_reason == Some(StopReason::Error) || trace.error.is_some()
}
