//! How the support agent behaves: the engine, the planning protocol, the
//! limits and the persona. Every default lives here once; the service and
//! the server's configuration read these constants.

use std::sync::Arc;
use std::time::Duration;

pub use aics_graph::Durability;
use serde::{Deserialize, Serialize};

use crate::policy::ApprovalPolicy;

/// Tool steps per turn before the model must answer without tools.
pub const DEFAULT_MAX_TOOL_LOOPS: u32 = 5;
/// How long one tool call may take before it becomes a timeout error.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the model may stay silent (before its stream, between chunks).
pub const DEFAULT_MODEL_TIMEOUT: Duration = Duration::from_secs(60);
/// Loop detection: arguments and results at least this similar repeat.
pub const DEFAULT_LOOP_SIMILARITY: f64 = 0.9;

/// Which engine runs a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// The ReAct loop: the model plans, tools run, the model plans again,
    /// up to `max_tool_loops` tool steps.
    #[default]
    Graph,
    /// The linear pipeline: one routed tool call, then respond.
    Linear,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Graph => "graph",
            Self::Linear => "linear",
        }
    }

    /// Reads `graph` / `linear` (as in `AICS_ENGINE`).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "graph" => Some(Self::Graph),
            "linear" => Some(Self::Linear),
            _ => None,
        }
    }
}

/// How the model asks for tools: the one protocol setting of the product,
/// read by the agent's nodes and by the OpenAI-compatible provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanProtocol {
    /// Native tool calling (OpenAI `tools`).
    #[default]
    Native,
    /// A JSON plan in the reply text
    /// (`{"action":"call_tool","toolName":…,"toolInput":…}` or
    /// `{"action":"respond"}`); an unparsable plan means respond.
    #[serde(alias = "json", alias = "json-plan")]
    JsonPlan,
}

impl PlanProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::JsonPlan => "json_plan",
        }
    }

    /// Reads `native` / `json_plan` (`tools`, `json` and `json-plan` too).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "native" | "tools" => Some(Self::Native),
            "json_plan" | "json-plan" | "json" => Some(Self::JsonPlan),
            _ => None,
        }
    }
}

/// The persona of the demo company, the default system prompt.
pub const DEFAULT_PERSONA: &str =
    "You are the customer-support agent of Northwind Gadgets (北风数码), an online electronics shop. \
Answer in the customer's language, briefly and precisely. Use the tools to look up orders, \
logistics, tickets and policy articles; never invent order data. Open a ticket for complaints \
about late or lost orders. Hand the conversation to a human when the customer asks for one.";

/// How the support agent behaves.
#[derive(Debug, Clone)]
pub struct SupportConfig {
    pub engine: EngineKind,
    /// Tool steps per turn before the model must answer without tools (`max-tool-loops`).
    pub max_tool_loops: u32,
    pub protocol: PlanProtocol,
    /// How long one tool call may take before it becomes a timeout error.
    pub tool_timeout: Duration,
    /// How long the model may stay silent (before its stream, between chunks).
    pub model_timeout: Duration,
    /// The system prompt's persona; memories are appended to it.
    pub persona: String,
    /// Loop detection: arguments and results at least this similar (0..=1)
    /// count as a repetition.
    pub loop_similarity: f64,
    /// When a turn's checkpoints are written (docs/ARCHITECTURE.md,
    /// "Durability"): `sync` (the default) before each next node.
    pub durability: Durability,
    /// Which calls wait for a supervisor or are refused (`[approvals]`).
    pub approvals: Arc<ApprovalPolicy>,
}

impl Default for SupportConfig {
    fn default() -> Self {
        Self {
            engine: EngineKind::Graph,
            max_tool_loops: DEFAULT_MAX_TOOL_LOOPS,
            protocol: PlanProtocol::Native,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            model_timeout: DEFAULT_MODEL_TIMEOUT,
            persona: DEFAULT_PERSONA.to_owned(),
            loop_similarity: DEFAULT_LOOP_SIMILARITY,
            durability: Durability::default(),
            approvals: Arc::new(ApprovalPolicy::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_every_spelling() {
        assert_eq!(EngineKind::parse(" Linear "), Some(EngineKind::Linear));
        assert_eq!(EngineKind::parse("dag"), None);
        for name in ["json_plan", "json-plan", "JSON"] {
            assert_eq!(PlanProtocol::parse(name), Some(PlanProtocol::JsonPlan));
        }
        assert_eq!(PlanProtocol::parse("tools"), Some(PlanProtocol::Native));
        let from_toml: PlanProtocol = serde_json::from_str("\"json-plan\"").unwrap();
        assert_eq!(from_toml, PlanProtocol::JsonPlan);
    }
}
