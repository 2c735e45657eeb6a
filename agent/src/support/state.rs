//! The support graph's state: everything one chat turn knows, checkpointed
//! as JSON after every node (so it is `Serialize + Deserialize`, and every
//! field added later must have a default to read old checkpoints), and the
//! supervisor's [`Decision`] a paused turn resumes with.

use std::collections::BTreeMap;

use aics_graph::Encoded;
use aics_types::{
    Intent, LlmCallRecord, SharedValue, StopReason, Timestamp, TokenUsage, ToolCallRecord,
    ToolCallStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{EngineKind, PlanProtocol};
use super::progress::Progress;
use crate::model::{Message, ToolCall};

/// A supervisor's decision on one pending tool call: what a paused turn
/// resumes with, keyed by tool-call id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call, with these arguments instead of the proposed ones when given.
    Approve {
        #[serde(default)]
        args: Option<Value>,
    },
    /// Do not run it; the model sees `denied by supervisor: <reason>`.
    Reject { reason: String },
}

/// One entry of the turn's `tool_call_history` (for loop detection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSig {
    pub id: String,
    pub name: String,
    pub args: SharedValue,
}

/// Who wrote a turn's message, which decides what the turn may reveal.
/// On the customer channel (`/chat`, the widget) the writer is whoever has
/// the link: the order tools answer only for the conversation's verified
/// customer, and without one the turn neither reads nor writes memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// Staff in the console (or the API with its token).
    #[default]
    Console,
    /// A customer on their own page or the widget.
    Customer,
}

/// The state of one support turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SupportState {
    pub session_id: String,
    /// The conversation's customer: on the customer channel, only one a
    /// person on staff named (a visitor's typed email never sets it).
    pub customer_id: Option<String>,
    /// Where this turn's message came from.
    pub channel: Channel,
    pub graph_execution_id: String,
    /// The customer's message of this turn.
    pub user_message: String,
    /// Earlier turns, then this turn's user message, AI messages and tool
    /// results. Each is written to JSON once per run, not at every
    /// checkpoint ([`Encoded`]), as are the records below.
    pub messages: Vec<Encoded<Message>>,
    /// Index in `messages` of this turn's user message.
    pub turn_start: usize,
    pub engine: EngineKind,
    pub protocol: PlanProtocol,
    /// Tool steps taken this turn (each `tools` run counts one).
    pub current_step: u32,
    /// The tool-loop limit (`max-tool-loops`).
    pub max_steps: u32,
    /// The turn's tool calls, in order (the result the model saw for each
    /// is its tool message in `messages`: [`SupportState::tool_result`]).
    pub tool_call_history: Vec<ToolCallSig>,
    pub stop: bool,
    pub stop_reason: Option<StopReason>,
    pub intent: Option<Intent>,
    /// The customer's long-term memories, rendered into the system prompt.
    pub memories: Vec<String>,
    pub memory_triggered: bool,
    pub llm_calls: u32,
    pub usage: TokenUsage,
    /// Every LLM call of the turn, as sent and answered (the trace's
    /// `llmCallRecords`).
    #[serde(default)]
    pub llm_call_records: Vec<Encoded<LlmCallRecord>>,
    /// The timeline of the turn's tool calls, keyed by tool-call id.
    pub tool_records: Vec<Encoded<ToolCallRecord>>,
    /// Supervisor decisions received, by tool-call id.
    pub decisions: BTreeMap<String, Decision>,
    pub final_reply: String,
    pub error: Option<String>,
    pub started_at: Timestamp,
    /// Engine time spent in earlier invocations (before a pause).
    pub elapsed_ms: u64,
    pub model: String,
}

impl Default for SupportState {
    fn default() -> Self {
        Self {
            session_id: String::new(),
            customer_id: None,
            channel: Channel::Console,
            graph_execution_id: String::new(),
            user_message: String::new(),
            messages: Vec::new(),
            turn_start: 0,
            engine: EngineKind::Graph,
            protocol: PlanProtocol::Native,
            current_step: 0,
            max_steps: 5,
            tool_call_history: Vec::new(),
            stop: false,
            stop_reason: None,
            intent: None,
            memories: Vec::new(),
            memory_triggered: false,
            llm_calls: 0,
            usage: TokenUsage::default(),
            llm_call_records: Vec::new(),
            tool_records: Vec::new(),
            decisions: BTreeMap::new(),
            final_reply: String::new(),
            error: None,
            started_at: chrono::Utc::now(),
            elapsed_ms: 0,
            model: String::new(),
        }
    }
}

impl aics_graph::State for SupportState {
    type Resume = Decision;
    type Progress = Progress;
}

impl SupportState {
    /// The result text the model saw for tool call `call_id` (its tool
    /// message; call ids are ours and unique).
    pub fn tool_result(&self, call_id: &str) -> Option<&str> {
        self.messages.iter().rev().find_map(|m| match &**m {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } if tool_call_id == call_id => Some(content.as_str()),
            _ => None,
        })
    }

    /// The messages of this turn (its user message and what followed).
    pub fn turn_messages(&self) -> &[Encoded<Message>] {
        self.messages.get(self.turn_start..).unwrap_or(&[])
    }

    /// The tool calls of the last message, when it is an AI message with calls.
    pub fn pending_calls(&self) -> &[ToolCall] {
        match self.messages.last().map(|m| &**m) {
            Some(Message::Assistant { tool_calls, .. }) => tool_calls,
            _ => &[],
        }
    }

    /// The customer the memories belong to (the session when unknown);
    /// `None` for an unverified visitor on the customer channel, whose
    /// turns neither read nor write memory.
    pub fn memory_owner(&self) -> Option<&str> {
        match (self.channel, self.customer_id.as_deref()) {
            (_, Some(customer)) => Some(customer),
            (Channel::Customer, None) => None,
            (Channel::Console, None) => Some(&self.session_id),
        }
    }

    /// Inserts or replaces the timeline entry of a call.
    pub fn upsert_record(&mut self, record: ToolCallRecord) {
        match self.tool_records.iter_mut().find(|r| r.id == record.id) {
            Some(existing) => *existing = record.into(),
            None => self.tool_records.push(record.into()),
        }
    }

    /// The finished calls of this turn with the result the model saw, in order.
    pub fn finished_records(&self) -> impl Iterator<Item = &ToolCallRecord> {
        self.tool_records
            .iter()
            .map(|r| &**r)
            .filter(|r| !matches!(r.status, ToolCallStatus::Pending | ToolCallStatus::Running))
    }
}
