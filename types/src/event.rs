//! What a running turn reports as it goes: the stream events clients read
//! (docs/API.md lists them).
//!
//! `decode` reads an event back from JSON without buffering it first (the
//! browser decodes every event of a conversation's stream).

use std::sync::Arc;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;

mod decode;

use crate::{ChatTurnTraceResult, ToolCallRecord, ToolCallStatus};

/// One event of a running turn, in the order it happened.
///
/// Serialised with a `type` tag and the documented field names
/// (`{"type":"llm_token","token":"Hi","reasoning_token":null}`); the server
/// sends each as one server-sent event whose `event:` is the same tag.
///
/// `Deserialize` is written by hand (`decode.rs`) for the same JSON: serde's
/// derive for a tagged enum buffers every event into its private `Content`
/// and decodes the fields from there, which puts a second decoder of every
/// type an event carries (a whole trace, tool records, messages) into the
/// browser's wasm. Read `type` first (as serialised here), the fields decode
/// straight from the text. The field attributes below are kept for the
/// record and for `Serialize`; `decode.rs` follows them (its tests check it).
///
/// The variants with many fields keep them behind a `Box` (serialised the
/// same, flat): a turn's events wait in channels, rings and replay buffers,
/// and each slot there is as large as the largest variant. A token event
/// takes 56 bytes, not 240. `final`'s trace is behind an `Arc` instead, so
/// the event kept for the streams and the answer to the turn's caller share
/// one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A graph run started (or resumed after an approval).
    TurnStart {
        session_id: String,
        graph_execution_id: String,
        #[serde(default)]
        resumed: bool,
    },
    /// A node began.
    NodeStart { node: String },
    /// A piece of the reply (`token`) or of the model's reasoning.
    LlmToken {
        #[serde(default)]
        token: String,
        #[serde(default)]
        reasoning_token: Option<String>,
    },
    /// A node finished.
    NodeEnd { node: String },
    /// A tool call began ([`ToolStart`]).
    ToolStart(Box<ToolStart>),
    /// A tool call finished ([`ToolEnd`]).
    ToolEnd(Box<ToolEnd>),
    /// A sensitive call paused the turn until a supervisor decides
    /// ([`ApprovalRequired`]).
    ApprovalRequired(Box<ApprovalRequired>),
    /// A supervisor decided a pending call ([`ApprovalDecided`]).
    ApprovalDecided(Box<ApprovalDecided>),
    /// The turn ended (or paused); the trace says which. Shared: the
    /// server keeps the event for reconnecting streams and answers the
    /// turn's caller with the same trace, one copy for both.
    Final {
        #[serde(serialize_with = "shared")]
        trace: Arc<ChatTurnTraceResult>,
    },
    /// The turn failed; nothing the user typed was lost.
    Error { message: String },
    /// A message stored outside a turn: a staff member's reply or note, a
    /// handling change's line, a customer's message while a person holds
    /// the conversation.
    Message { message: Box<crate::ChatMessage> },
    /// Who handles the conversation changed.
    Handling {
        handling: crate::HandlingState,
        #[serde(default)]
        assignee: Option<String>,
    },
    /// This stream skipped events (the client fell behind, or reconnected
    /// after more than the server keeps): reload the conversation from the
    /// API, then go on with the events that follow.
    Resync { reason: String },
}

/// A tool call began: `record` is the call's timeline entry as the engine
/// keeps it (status `running`), which clients upsert by id.
///
/// Serialised with the documented `tool`, `args` and `id` beside it, read
/// from the record: the event holds the call's input once. A turn's events
/// wait in the conversation's replay buffer, and a tool's input and output
/// as `Value` trees are most of what they hold (BENCHMARKS.md, round 14).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStart {
    pub record: ToolCallRecord,
}

impl ToolStart {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.record.name
    }

    /// The call's arguments.
    pub fn args(&self) -> &Value {
        &self.record.input
    }

    /// The tool-call id.
    pub fn id(&self) -> &str {
        &self.record.id
    }
}

impl Serialize for ToolStart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut event = serializer.serialize_struct("ToolStart", 4)?;
        event.serialize_field("tool", self.tool())?;
        event.serialize_field("args", self.args())?;
        event.serialize_field("id", self.id())?;
        event.serialize_field("record", &self.record)?;
        event.end()
    }
}

/// A tool call finished: `record` is the finished timeline entry, which
/// clients upsert by id.
///
/// Serialised with the documented `tool`, `id`, `result` (what the model
/// saw), `status` and `duration_ms` beside it, read from the record, as
/// [`ToolStart`] is.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEnd {
    pub record: ToolCallRecord,
}

impl ToolEnd {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.record.name
    }

    /// The tool-call id.
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// What the model saw.
    pub fn result(&self) -> &Value {
        &self.record.output
    }

    /// How the call ended.
    pub fn status(&self) -> ToolCallStatus {
        self.record.status
    }

    /// How long the call took.
    pub fn duration_ms(&self) -> u64 {
        self.record.duration_ms.unwrap_or_default()
    }
}

impl Serialize for ToolEnd {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut event = serializer.serialize_struct("ToolEnd", 6)?;
        event.serialize_field("tool", self.tool())?;
        event.serialize_field("id", self.id())?;
        event.serialize_field("result", self.result())?;
        event.serialize_field("status", &self.status())?;
        event.serialize_field("duration_ms", &self.duration_ms())?;
        event.serialize_field("record", &self.record)?;
        event.end()
    }
}

/// A sensitive call paused the turn until a supervisor decides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequired {
    pub tool: String,
    pub args: Value,
    pub id: String,
    pub session_id: String,
    pub graph_execution_id: String,
    #[serde(default)]
    pub reason: String,
    /// The approval rule that held the call.
    #[serde(default)]
    pub rule: String,
    /// When its deadline passes, if its rule sets one.
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub expires_at: Option<crate::Timestamp>,
}

/// A supervisor decided a pending call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalDecided {
    pub id: String,
    pub approved: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub decided_by: Option<String>,
}

impl AgentEvent {
    /// Every tag, for clients that subscribe to named SSE events.
    pub const KINDS: [&'static str; 13] = [
        "turn_start",
        "node_start",
        "llm_token",
        "node_end",
        "tool_start",
        "tool_end",
        "approval_required",
        "approval_decided",
        "final",
        "error",
        "message",
        "handling",
        "resync",
    ];

    /// The event's tag, used as the SSE `event:` name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TurnStart { .. } => "turn_start",
            Self::NodeStart { .. } => "node_start",
            Self::LlmToken { .. } => "llm_token",
            Self::NodeEnd { .. } => "node_end",
            Self::ToolStart(_) => "tool_start",
            Self::ToolEnd(_) => "tool_end",
            Self::ApprovalRequired(_) => "approval_required",
            Self::ApprovalDecided(_) => "approval_decided",
            Self::Final { .. } => "final",
            Self::Error { .. } => "error",
            Self::Message { .. } => "message",
            Self::Handling { .. } => "handling",
            Self::Resync { .. } => "resync",
        }
    }
}

/// Serialises what an `Arc` holds, as if it were held directly (serde's
/// `rc` feature would change every crate's build for this one field).
fn shared<T: Serialize, S: Serializer>(value: &Arc<T>, to: S) -> Result<S::Ok, S::Error> {
    T::serialize(value, to)
}

#[cfg(test)]
mod tests {
    use super::AgentEvent;

    #[test]
    fn an_event_takes_the_room_of_a_token_not_of_a_tool_call() {
        // Every slot of a channel, ring and replay buffer is this large.
        let size = std::mem::size_of::<AgentEvent>();
        assert!(
            size <= 56,
            "AgentEvent is {size} bytes: box the new variant's fields"
        );
    }
}
