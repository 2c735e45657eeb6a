//! What the console shows besides traces: conversations, messages,
//! approvals, checkpoints, users and API errors.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChatTurnTraceResult, Timestamp, ToolCallRecord};

/// Who is handling a conversation right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlingState {
    /// The AI agent answers.
    Ai,
    /// A sensitive tool call waits for a supervisor.
    WaitingApproval,
    /// The customer asked for a person (`escalate_to_human`).
    WaitingHuman,
    /// A staff member holds it (its assignee): the AI does not answer.
    Human,
    /// Resolved. Should the customer write again, the AI answers (only a
    /// person holding a conversation stops the AI).
    Closed,
}

impl HandlingState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ai => "ai",
            Self::WaitingApproval => "waiting_approval",
            Self::WaitingHuman => "waiting_human",
            Self::Human => "human",
            Self::Closed => "closed",
        }
    }

    /// Parses the stored name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "ai" => Self::Ai,
            "waiting_approval" => Self::WaitingApproval,
            "waiting_human" => Self::WaitingHuman,
            "human" => Self::Human,
            "closed" => Self::Closed,
            _ => return None,
        })
    }

    /// The label the console shows.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ai => "AI",
            Self::WaitingApproval => "Waiting for approval",
            Self::WaitingHuman => "Waiting for human",
            Self::Human => "Human",
            Self::Closed => "Closed",
        }
    }
}

/// A conversation as the console's list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationSummary {
    pub session_id: String,
    pub title: String,
    pub handling: HandlingState,
    /// The start of its last message, on one line: the first 140
    /// characters, then "…" when it has more (the inbox shows a line of
    /// it; the conversation has all of it).
    #[serde(default)]
    pub last_message: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub updated_at: Timestamp,
    /// The staff member holding it (handling `human`).
    #[serde(default)]
    pub assignee: Option<String>,
    /// The customer it is with, when known.
    #[serde(default)]
    pub customer_id: Option<String>,
    /// The customer wrote last: their message has no reply yet (the
    /// inbox's unread marker).
    #[serde(default)]
    pub awaiting_reply: bool,
}

/// Who wrote a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The customer (typed in by the support agent).
    Customer,
    /// The AI agent's reply.
    Assistant,
    /// A note from the system, e.g. that a turn failed, or a handling
    /// change (with its author).
    System,
    /// A staff member's reply to the customer (with its author).
    Agent,
    /// An internal note between staff: never shown to the customer nor
    /// given to the model.
    Note,
}

impl MessageRole {
    /// Whether the customer's page shows messages of this role.
    pub fn customer_visible(self) -> bool {
        matches!(self, Self::Customer | Self::Assistant | Self::Agent)
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    pub id: i64,
    pub role: MessageRole,
    pub content: String,
    /// The turn that produced this reply, for assistant messages.
    #[serde(default)]
    pub graph_execution_id: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    /// Who wrote it, for agents' replies, notes and handling changes.
    #[serde(default)]
    pub author: Option<String>,
}

/// The sanitised HTML of one stored reply's Markdown (an AI's or an agent's
/// message, by its id), rendered by the server (app `components::markdown`)
/// so the browser carries no Markdown parser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageHtml {
    pub id: i64,
    pub html: String,
}

/// What a page's server function loads (a conversation, the customer's
/// chat) with the rendered HTML of its replies beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WithHtml<T> {
    pub data: T,
    pub html: Vec<MessageHtml>,
}

/// A conversation with its messages and the traces of its turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationDetail {
    pub summary: ConversationSummary,
    pub messages: Vec<ChatMessage>,
    pub turns: Vec<ChatTurnTraceResult>,
    /// The run that holds the conversation now (running, paused for
    /// approval, or resuming), if any.
    #[serde(default)]
    pub active_run: Option<RunInfo>,
}

/// Where a graph run stands. A conversation has at most one run that is
/// running, paused or resuming: that run holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Its owner runs it and renews its lease.
    Running,
    /// It waits for supervisors' decisions; nobody runs it.
    Paused,
    /// Every pending call was decided; its owner runs the rest.
    Resuming,
    /// It ended with a reply (or an explanation).
    Finished,
    /// It could not go on; its note says why. The customer's message is kept.
    Failed,
    /// A supervisor cancelled it.
    Cancelled,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Resuming => "resuming",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "running" => Self::Running,
            "paused" => Self::Paused,
            "resuming" => Self::Resuming,
            "finished" => Self::Finished,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Whether the run still holds its conversation.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Paused | Self::Resuming)
    }
}

/// A graph run as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInfo {
    pub graph_execution_id: String,
    pub session_id: String,
    pub state: RunState,
    /// How many times it was started (more than 1 after a recovery).
    pub attempts: u32,
    /// Why it failed or was cancelled.
    #[serde(default)]
    pub note: Option<String>,
    /// Who cancelled it.
    #[serde(default)]
    pub ended_by: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub updated_at: Timestamp,
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    /// Its turn was cancelled before anyone decided.
    Cancelled,
    /// Its deadline passed before anyone decided.
    Expired,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "cancelled" => Self::Cancelled,
            "expired" => Self::Expired,
            _ => return None,
        })
    }
}

/// A sensitive tool call held for a supervisor, with what led to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The tool-call id.
    pub id: String,
    pub session_id: String,
    pub graph_execution_id: String,
    pub tool: String,
    /// The arguments the model proposed.
    pub proposed_args: Value,
    /// The arguments that ran, when a supervisor edited them before approving.
    #[serde(default)]
    pub approved_args: Option<Value>,
    pub status: ApprovalStatus,
    /// Why the policy held the call.
    #[serde(default)]
    pub policy_reason: String,
    /// The last customer messages, for context.
    #[serde(default)]
    pub context: Vec<ChatMessage>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub decided_at: Option<Timestamp>,
    #[serde(default)]
    pub decision_reason: Option<String>,
    /// The name of the approval rule that held the call.
    #[serde(default)]
    pub rule: String,
    /// When a pending approval's deadline passes (then it ends as expired).
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub expires_at: Option<Timestamp>,
    /// What its deadline does: `reject` or `handover`.
    #[serde(default)]
    pub on_expiry: Option<String>,
    /// The evidence: the tool calls of the turn that finished before this
    /// one was held (what the supervisor should see before deciding); filled
    /// for pending approvals.
    #[serde(default)]
    pub evidence: Vec<ToolCallRecord>,
}

/// A supervisor's decision on a pending approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    pub approve: bool,
    /// Required when rejecting; shown to the model as "denied by supervisor: <reason>".
    #[serde(default)]
    pub reason: Option<String>,
    /// Arguments edited by the supervisor before approving.
    #[serde(default)]
    pub args: Option<Value>,
    /// The approval token, when the client has it (scripts); the console
    /// decides through the signed-in supervisor's session instead.
    #[serde(default)]
    pub token: Option<String>,
}

/// One saved step of a graph run: the state after a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointView {
    pub checkpoint_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    pub thread_id: String,
    pub step: u32,
    pub node: String,
    pub state: Value,
    /// Ids of the interrupts pending at this checkpoint.
    #[serde(default)]
    pub pending_interrupts: Vec<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
}

/// A turn with its step history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnDetail {
    pub trace: ChatTurnTraceResult,
    pub checkpoints: Vec<CheckpointView>,
}

/// What a signed-in person may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Agent,
    Supervisor,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Supervisor => "supervisor",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "agent" => Self::Agent,
            "supervisor" => Self::Supervisor,
            _ => return None,
        })
    }
}

/// The signed-in user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    pub username: String,
    pub role: Role,
}

/// The model and engine answering right now, as the console shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// `demo` or `openai`.
    pub provider: String,
    /// The provider's model, e.g. `demo` or `openai:gpt-4o-mini`.
    pub model: String,
    /// `graph` or `linear`.
    pub engine: String,
    pub max_tool_loops: u32,
}

/// The body of every 4xx and 5xx JSON answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// A stable machine-readable code, e.g. `invalid_request`, `not_found`.
    pub error: String,
    /// A sentence for people.
    pub message: String,
}

/// The body of `POST /api/chat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRequest {
    pub session_id: String,
    pub message: String,
}

/// The longest customer message the API accepts, in characters.
pub const MAX_MESSAGE_CHARS: usize = 8_000;

/// The longest session id, in characters; ids are `[A-Za-z0-9_-]`.
pub const MAX_SESSION_ID_CHARS: usize = 64;

/// Checks a session id: 1 to 64 characters of `[A-Za-z0-9_-]`.
pub fn validate_session_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.chars().count() > MAX_SESSION_ID_CHARS {
        return Err(format!(
            "sessionId must be 1 to {MAX_SESSION_ID_CHARS} characters long"
        ));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err("sessionId may contain only letters, digits, '-' and '_'".into());
    }
    Ok(())
}

/// Checks a customer message: not blank, at most [`MAX_MESSAGE_CHARS`], no
/// control characters but tab and line breaks (see
/// [`crate::find_control_char`]).
pub fn validate_message(message: &str) -> Result<(), String> {
    crate::validate_text("message", message)?;
    if message.trim().is_empty() {
        return Err("message must not be empty".into());
    }
    if message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(format!(
            "message must be at most {MAX_MESSAGE_CHARS} characters long"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::*;
    use serde_json::json;

    fn sample_trace() -> ChatTurnTraceResult {
        let at = "2026-11-30T05:00:00Z".parse().expect("timestamp");
        ChatTurnTraceResult {
            graph_execution_id: "g-1".into(),
            session_id: "react-demo".into(),
            reply: "Your ticket TCK-0001 is open.".into(),
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
            executed_nodes: vec!["init_state".into(), "agent".into(), "finalize".into()],
            duration_ms: 12,
            llm_calls: 2,
            steps_taken: 1,
            stop_reason: Some(StopReason::FinalAnswer),
            pending_approval: false,
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

    #[test]
    fn trace_round_trips_with_camel_case_names() {
        let trace = sample_trace();
        let json = serde_json::to_value(&trace).expect("serialise");
        for key in [
            "toolCalls",
            "executedNodes",
            "graphExecutionId",
            "durationMs",
            "pendingApproval",
            "approvalToken",
            "llmCalls",
            "stepsTaken",
            "stopReason",
        ] {
            assert!(json.get(key).is_some(), "missing {key} in {json}");
        }
        assert_eq!(json["toolCalls"][0]["durationMs"], 3);
        assert_eq!(json["stopReason"], "final_answer");
        let back: ChatTurnTraceResult = serde_json::from_value(json).expect("deserialise");
        assert_eq!(back, trace);
    }

    #[test]
    fn events_use_the_spec_tags_and_field_names() {
        let event = AgentEvent::ToolEnd(Box::new(crate::ToolEnd {
            record: sample_trace().tool_calls[0].clone(),
        }));
        let json = serde_json::to_value(&event).expect("serialise");
        assert_eq!(json["type"], "tool_end");
        // The documented fields, read from the record.
        assert_eq!(json["tool"], "order_query");
        assert_eq!(json["id"], sample_trace().tool_calls[0].id);
        assert_eq!(json["result"], json!({"status": "delayed"}));
        assert_eq!(json["status"], "ok");
        assert_eq!(json["duration_ms"], 3);
        assert_eq!(json["record"]["durationMs"], 3);
        let start = AgentEvent::ToolStart(Box::new(crate::ToolStart {
            record: sample_trace().tool_calls[0].clone(),
        }));
        let json = serde_json::to_value(&start).expect("serialise");
        assert_eq!(json["type"], "tool_start");
        assert_eq!(json["tool"], "order_query");
        assert_eq!(json["args"], sample_trace().tool_calls[0].input);
        assert_eq!(json["id"], sample_trace().tool_calls[0].id);
        assert_eq!(json["record"]["name"], "order_query");
        assert_eq!(event.kind(), "tool_end");
        let token: AgentEvent =
            serde_json::from_str(r#"{"type":"llm_token","token":"Hi"}"#).expect("parse");
        assert_eq!(
            token,
            AgentEvent::LlmToken {
                token: "Hi".into(),
                reasoning_token: None
            }
        );
        let fin = AgentEvent::Final {
            trace: std::sync::Arc::new(sample_trace()),
        };
        let text = serde_json::to_string(&fin).expect("serialise");
        assert_eq!(
            serde_json::from_str::<AgentEvent>(&text).expect("parse"),
            fin
        );
    }

    #[test]
    fn validation_rejects_bad_ids_and_messages() {
        assert!(validate_session_id("react-demo").is_ok());
        assert!(validate_session_id("").is_err());
        assert!(validate_session_id("a b").is_err());
        assert!(validate_session_id(&"x".repeat(65)).is_err());
        assert!(validate_message("hello").is_ok());
        assert!(validate_message("   ").is_err());
        assert!(validate_message(&"x".repeat(MAX_MESSAGE_CHARS + 1)).is_err());
        assert!(validate_message("where is\0 my order").is_err());
        assert!(validate_message("two\nlines\tand a tab").is_ok());
    }

    #[test]
    fn names_parse_back() {
        for s in [
            HandlingState::Ai,
            HandlingState::WaitingApproval,
            HandlingState::WaitingHuman,
            HandlingState::Closed,
        ] {
            assert_eq!(HandlingState::parse(s.as_str()), Some(s));
        }
        assert_eq!(Role::parse("supervisor"), Some(Role::Supervisor));
        assert_eq!(ApprovalStatus::parse("nope"), None);
    }
}
