//! The trace of one chat turn: what ran, in which order, with which results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{SharedValue, Timestamp};

/// How one tool call ended (or that it has not ended yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Started and not finished yet (only seen while a turn runs).
    Running,
    /// The tool returned a result.
    Ok,
    /// The tool failed, timed out, was unknown or got invalid arguments;
    /// the model saw the error as the tool's result.
    Error,
    /// A supervisor rejected the call; the model saw the reason.
    Denied,
    /// The call is sensitive and waits for a supervisor's decision.
    Pending,
}

impl ToolCallStatus {
    /// The lowercase name used in JSON, logs and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Denied => "denied",
            Self::Pending => "pending",
        }
    }
}

/// One tool call of a turn, as the trace and the timeline show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRecord {
    /// The tool-call id the model gave (or the engine made up); approvals are
    /// keyed by it and tool side effects use it as their idempotency key.
    pub id: String,
    /// The tool's name, e.g. `order_query`.
    pub name: String,
    /// The arguments, as JSON (a string when the model sent unparsable text).
    pub input: SharedValue,
    /// The result the model saw: the tool's JSON, or `{"error": "..."}`.
    /// `Null` while the call runs or waits for approval.
    #[serde(default)]
    pub output: SharedValue,
    pub status: ToolCallStatus,
    /// When the call started (or was proposed, for a pending one).
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub timestamp: Timestamp,
    /// Wall-clock duration of the call; `None` while it has not finished.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

/// The heuristic intent label the `route` node gives a customer message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    #[default]
    Consult,
    Order,
    Complaint,
    Escalate,
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Consult => "consult",
            Self::Order => "order",
            Self::Complaint => "complaint",
            Self::Escalate => "escalate",
        }
    }
}

/// Why a turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling a tool.
    FinalAnswer,
    /// The same tool was called twice in a row with similar arguments and
    /// similar results (loop detection).
    LoopDetected,
    /// `max-tool-loops` was reached; the model was asked to answer without tools.
    ToolLoopLimit,
    /// A sensitive tool call waits for a supervisor: the turn is paused.
    AwaitingApproval,
    /// The model or the engine failed, or the turn was cut short by a
    /// restart it could not continue from; the trace says what happened.
    Error,
    /// A supervisor cancelled the turn.
    Cancelled,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FinalAnswer => "final_answer",
            Self::LoopDetected => "loop_detected",
            Self::ToolLoopLimit => "tool_loop_limit",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Tokens spent by the LLM calls of a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl TokenUsage {
    /// Adds another call's usage to this one.
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// A sensitive tool call that waits for a supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolCall {
    /// The tool-call id: the approval is keyed by it.
    pub id: String,
    pub tool: String,
    pub args: Value,
    /// Why the policy holds this call for approval, in words.
    #[serde(default)]
    pub reason: String,
    /// The name of the approval rule that held it.
    #[serde(default)]
    pub rule: String,
    /// When the rule's deadline ends it, if the rule sets one (the service
    /// fills it in when it stores the approval).
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub expires_at: Option<crate::Timestamp>,
}

/// The record of one chat turn: what ran, in which order, with which results.
///
/// It is returned by `POST /api/chat`, sent as the `final` stream event and
/// stored with the turn, so the console can show it again after a reload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatTurnTraceResult {
    /// The id of this graph run; its checkpoints are listed under it.
    pub graph_execution_id: String,
    pub session_id: String,
    /// The reply shown to the customer (empty while the turn is paused).
    pub reply: String,
    pub intent: Intent,
    /// Every tool call of the turn, in the order they were made.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The nodes that ran, in order (`init_state`, `memory_trigger`, `route`,
    /// `agent`, `tools`, `agent`, ..., `finalize`).
    pub executed_nodes: Vec<String>,
    pub duration_ms: u64,
    pub llm_calls: u32,
    /// Tool steps taken (each `tools` node run counts one).
    pub steps_taken: u32,
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Whether the turn is paused until a supervisor decides.
    #[serde(default)]
    pub pending_approval: bool,
    /// The single-use token that approves or rejects the pending calls.
    #[serde(default)]
    pub approval_token: Option<String>,
    /// The calls that wait for a decision, each keyed by its tool-call id.
    #[serde(default)]
    pub pending_tool_calls: Vec<PendingToolCall>,
    #[serde(default)]
    pub usage: TokenUsage,
    /// The names of the tools used, in order of first use.
    #[serde(default)]
    pub tools_used: Vec<String>,
    /// The plain tool result text of a single-tool turn (the fallback
    /// for clients that do not read `toolCalls`).
    #[serde(default)]
    pub tool_result: Option<String>,
    /// `graph` or `linear`.
    #[serde(default)]
    pub engine: String,
    /// The provider and model that answered, e.g. `demo` or `openai:gpt-4o-mini`.
    #[serde(default)]
    pub model: String,
    /// The turn's cost in US dollars, when a price is configured for the model.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The error that ended the turn, if one did.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub started_at: Timestamp,
    /// Every LLM call of the turn, in order, as it was sent and answered.
    ///
    /// The browser skips them when it reads a trace (always empty there):
    /// no page shows a trace's records (the turn page reads each step's
    /// from its checkpoint), and their decoder would sit in the console's
    /// wasm for nothing (BENCHMARKS.md "Client bundle"); the console's
    /// `get_conversation` does not send them either.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip_deserializing))]
    pub llm_call_records: Vec<LlmCallRecord>,
}

/// One message of an LLM call, as it was sent (after prompt rendering).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    pub content: String,
    /// The calls an assistant message asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<LlmToolCall>,
    /// The call a tool message answers (our id), and the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A tool call an LLM asked for (our id, the tool and its arguments).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One LLM call of a turn: what was sent, what came back, how long it took
/// and what it cost. Made by the `agent` node, checkpointed in the turn's
/// state and stored with its trace (customer content: the conversation's
/// retention and access apply).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallRecord {
    /// The checkpoint step of the node that made the call.
    pub step: u32,
    /// The node that made it (`agent`).
    pub node: String,
    /// What the call was for: `answer` (native tool calling or the reply),
    /// `plan` (the JSON-plan protocol's planning call).
    pub purpose: String,
    /// The provider and model, e.g. `demo` or `openai:gpt-4o-mini`.
    pub model: String,
    /// `native` or `json_plan`.
    pub protocol: String,
    pub messages: Vec<LlmMessage>,
    /// The names of the tools offered (empty: none bound).
    #[serde(default)]
    pub tools: Vec<String>,
    /// `auto`, `none`, `required` or the name of a forced tool.
    #[serde(default)]
    pub tool_choice: String,
    /// The raw output text.
    #[serde(default)]
    pub output: String,
    /// The reasoning text the model streamed (empty when none).
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub tool_calls: Vec<LlmToolCall>,
    /// `stop`, `tool_calls`, `length`, ... as the provider said.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The short error sentence when the call failed.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub started_at: Timestamp,
    pub latency_ms: u64,
    /// From the request to the first chunk of any kind.
    #[serde(default)]
    pub ttft_ms: Option<u64>,
    #[serde(default)]
    pub usage: TokenUsage,
    /// At the provider's price; none when it has no price.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}
