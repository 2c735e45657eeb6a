//! What the support graph's nodes report while they run: streamed text and
//! tool calls starting and ending, through [`aics_graph::NodeContext::progress`].

use aics_types::{PendingToolCall, ToolCallRecord};

/// One piece of progress of a running turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A piece of the reply.
    Token(String),
    /// A piece of the model's reasoning (or of a JSON plan).
    Reasoning(String),
    /// A tool call began; the record's status is `running`.
    ToolStarted(ToolCallRecord),
    /// A tool call ended; the record holds its result.
    ToolFinished(ToolCallRecord),
    /// A sensitive call waits for a supervisor.
    ApprovalRequired {
        session_id: String,
        call: PendingToolCall,
    },
    /// The model call failed; the turn ends with stop reason `error`.
    ModelFailed(String),
}
