//! What the support graph's nodes report while they run: streamed text and
//! tool calls starting and ending, through [`aics_graph::NodeContext::progress`].
//! Nothing else: what a turn decides (a pause for approval, a failure, its
//! end) is in its outcome, which the service stores before it tells anyone.

use aics_types::ToolCallRecord;

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
}
