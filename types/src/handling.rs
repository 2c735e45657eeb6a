//! Who handles a conversation and how that changes: the one table of
//! allowed handling transitions (taking over, handing back, resolving,
//! reopening, the AI's escalation), shared by the database's conditional
//! update and the console's buttons; and what the customer channel shows.

use serde::{Deserialize, Serialize};

use crate::{AgentEvent, ChatMessage, HandlingState, MessageRole, Timestamp};

/// A change of who handles a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlingAction {
    /// A staff member takes the conversation: it is theirs, the AI stops.
    TakeOver,
    /// The holder gives it back to the AI.
    HandBack,
    /// Done (the AI still answers should the customer write again).
    Resolve,
    /// A resolved conversation goes back to the AI.
    Reopen,
    /// The AI (`escalate_to_human`) puts it in the queue for a person.
    Escalate,
}

/// The allowed transitions: an action, the states it may start from, and
/// the state it leads to. Nothing else changes a conversation's handling.
pub const HANDLING_TRANSITIONS: &[(HandlingAction, &[HandlingState], HandlingState)] = &[
    (
        HandlingAction::TakeOver,
        &[
            HandlingState::Ai,
            HandlingState::WaitingHuman,
            HandlingState::Closed,
        ],
        HandlingState::Human,
    ),
    (
        HandlingAction::HandBack,
        &[HandlingState::Human, HandlingState::WaitingHuman],
        HandlingState::Ai,
    ),
    (
        HandlingAction::Resolve,
        &[
            HandlingState::Ai,
            HandlingState::WaitingHuman,
            HandlingState::Human,
        ],
        HandlingState::Closed,
    ),
    (
        HandlingAction::Reopen,
        &[HandlingState::Closed],
        HandlingState::Ai,
    ),
    (
        HandlingAction::Escalate,
        &[HandlingState::Ai, HandlingState::Closed],
        HandlingState::WaitingHuman,
    ),
];

impl HandlingAction {
    /// The actions a staff member may take (the escalation is the AI's).
    pub const STAFF: [HandlingAction; 4] =
        [Self::TakeOver, Self::HandBack, Self::Resolve, Self::Reopen];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::TakeOver => "take_over",
            Self::HandBack => "hand_back",
            Self::Resolve => "resolve",
            Self::Reopen => "reopen",
            Self::Escalate => "escalate",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "take_over" => Self::TakeOver,
            "hand_back" => Self::HandBack,
            "resolve" => Self::Resolve,
            "reopen" => Self::Reopen,
            "escalate" => Self::Escalate,
            _ => return None,
        })
    }

    /// The states this action may start from, and where it leads.
    pub fn transition(self) -> (&'static [HandlingState], HandlingState) {
        HANDLING_TRANSITIONS
            .iter()
            .find(|(a, _, _)| *a == self)
            .map(|(_, from, to)| (*from, *to))
            .unwrap_or((&[], HandlingState::Ai))
    }

    /// Whether the action may start from `state`.
    pub fn allowed_from(self, state: HandlingState) -> bool {
        self.transition().0.contains(&state)
    }

    /// The console's button label.
    pub fn label(self) -> &'static str {
        match self {
            Self::TakeOver => "Take over",
            Self::HandBack => "Hand back to AI",
            Self::Resolve => "Resolve",
            Self::Reopen => "Reopen",
            Self::Escalate => "Escalate",
        }
    }

    /// The timeline line for it, after the actor's name.
    pub fn timeline(self) -> &'static str {
        match self {
            Self::TakeOver => "took over the conversation",
            Self::HandBack => "handed the conversation back to the AI",
            Self::Resolve => "resolved the conversation",
            Self::Reopen => "reopened the conversation",
            Self::Escalate => "asked for a person: the conversation waits for a human",
        }
    }
}

/// `POST /api/conversations/{id}/handling`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandlingRequest {
    pub action: HandlingAction,
}

/// `202` to a new message: the turn that answers it, or — while a person
/// holds the conversation — who will (no turn starts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageAccepted {
    #[serde(default)]
    pub graph_execution_id: Option<String>,
    #[serde(default)]
    pub held_by: Option<String>,
    /// The stored message, when a person holds the conversation.
    #[serde(default)]
    pub message: Option<ChatMessage>,
}

/// What the customer's page shows of a message: only what the customer may
/// see (their messages, the AI's and the agents' replies), never notes,
/// system lines or turn ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerMessage {
    pub id: i64,
    /// `customer`, `assistant` or `agent`.
    pub role: MessageRole,
    pub content: String,
    /// The agent's name, for an agent's reply.
    #[serde(default)]
    pub author: Option<String>,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
}

impl CustomerMessage {
    /// The customer's view of a message; `None` for what they never see.
    pub fn of(m: &ChatMessage) -> Option<Self> {
        m.role.customer_visible().then(|| Self {
            id: m.id,
            role: m.role,
            content: m.content.clone(),
            author: m.author.clone(),
            created_at: m.created_at,
        })
    }
}

/// The customer's page of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerChat {
    pub title: String,
    /// `en` or `zh`: the language the page speaks.
    pub lang: String,
    #[serde(default)]
    pub customer_name: Option<String>,
    /// Whether a person (rather than the AI) answers now.
    pub with_human: bool,
    /// Whether a reply is being written now (a turn runs).
    pub answering: bool,
    pub messages: Vec<CustomerMessage>,
}

/// `POST /chat/start`: a customer opens a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatStart {
    pub name: String,
    pub email: String,
    #[serde(default)]
    pub lang: Option<String>,
}

/// A new customer link: the token is shown once, only its hash is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatLink {
    pub session_id: String,
    pub token: String,
    /// `/chat/{token}`.
    pub path: String,
}

/// One event of the customer's stream: what the customer may see of the
/// conversation's live events, nothing else (no tool calls, nodes, traces,
/// approvals, reasoning, notes or internal error text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CustomerEvent {
    /// A reply is being written.
    Typing,
    /// A piece of the reply being written.
    Token { token: String },
    /// The reply is written (`None` when it waits for a colleague's check).
    Done {
        #[serde(default)]
        reply: Option<String>,
    },
    /// A message written outside a turn (an agent's reply).
    Message { message: CustomerMessage },
    /// A person took the conversation, or gave it back.
    Handling { with_human: bool },
    /// The reply could not be written.
    Failed,
    /// Events were skipped: reload the page's messages.
    Resync,
}

impl CustomerEvent {
    /// Every tag, for clients that subscribe to named SSE events.
    pub const KINDS: [&'static str; 7] = [
        "typing", "token", "done", "message", "handling", "failed", "resync",
    ];

    /// The SSE `event:` name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Typing => "typing",
            Self::Token { .. } => "token",
            Self::Done { .. } => "done",
            Self::Message { .. } => "message",
            Self::Handling { .. } => "handling",
            Self::Failed => "failed",
            Self::Resync => "resync",
        }
    }

    /// The customer's view of a conversation event; `None` for the events
    /// the customer never sees.
    pub fn of(event: &AgentEvent) -> Option<Self> {
        Some(match event {
            AgentEvent::TurnStart { .. } => Self::Typing,
            AgentEvent::LlmToken { token, .. } if !token.is_empty() => Self::Token {
                token: token.clone(),
            },
            AgentEvent::Final { trace } => Self::Done {
                reply: (!trace.pending_approval).then(|| trace.reply.clone()),
            },
            AgentEvent::Message { message } => Self::Message {
                message: CustomerMessage::of(message)?,
            },
            AgentEvent::Handling { handling, .. } => Self::Handling {
                with_human: *handling == HandlingState::Human,
            },
            AgentEvent::Error { .. } => Self::Failed,
            AgentEvent::Resync { .. } => Self::Resync,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_one_row_and_names_round_trip() {
        for action in HandlingAction::STAFF
            .into_iter()
            .chain([HandlingAction::Escalate])
        {
            let rows = HANDLING_TRANSITIONS
                .iter()
                .filter(|(a, _, _)| *a == action)
                .count();
            assert_eq!(rows, 1, "{action:?}");
            assert_eq!(HandlingAction::parse(action.as_str()), Some(action));
        }
    }

    #[test]
    fn a_held_conversation_cannot_be_taken_again() {
        assert!(!HandlingAction::TakeOver.allowed_from(HandlingState::Human));
        assert!(HandlingAction::TakeOver.allowed_from(HandlingState::WaitingHuman));
        assert!(!HandlingAction::Escalate.allowed_from(HandlingState::Human));
        assert!(!HandlingAction::Reopen.allowed_from(HandlingState::Ai));
    }
}
