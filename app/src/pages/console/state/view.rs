//! What the page shows of a [`ConversationState`]: read-only questions the
//! components ask (is a turn running, what waits, what the tool column shows).

use aics_types::{
    ChatTurnTraceResult, MessageRole, PendingToolCall, ToolCallRecord, ToolCallStatus,
};

use super::{ConversationState, TITLE_CHARS, UNTITLED};

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

impl ConversationState {
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

    /// The run that holds the conversation (it runs, waits for approval or
    /// resumes), as far as this page knows: what a supervisor can cancel.
    pub fn active_run(&self) -> Option<String> {
        if let Some(gid) = self
            .live
            .as_ref()
            .and_then(|l| l.graph_execution_id.clone())
        {
            return Some(gid);
        }
        if let Some(paused) = self.turns.last().filter(|t| t.pending_approval) {
            return Some(paused.graph_execution_id.clone());
        }
        self.loaded_run.clone()
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
}
