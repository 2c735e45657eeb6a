//! The configured model providers as the console lists them
//! (`GET /api/providers`): name, kind, model, whether it answers live
//! turns, and whether its server was reachable when aics started.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// Whether a provider's server answered the start-up probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reachability {
    /// The built-in demo model: nothing to reach.
    Demo,
    /// Not probed yet (the probe runs in the background after start-up).
    Unknown,
    /// `GET {base}/models` answered 2xx.
    Reachable,
    /// The probe failed; `reason` says how.
    Unreachable,
}

impl Reachability {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Demo => "demo",
            Self::Unknown => "unknown",
            Self::Reachable => "reachable",
            Self::Unreachable => "unreachable",
        }
    }
}

/// A model's price in US dollars per 1,000 tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPrice {
    pub prompt_per_1k: f64,
    pub completion_per_1k: f64,
}

/// One configured provider. Carries no secret: the base URL is shown
/// without user info or query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    /// The key in `[llm.providers]` (`demo` is always there).
    pub name: String,
    /// `demo` or `openai`.
    pub kind: String,
    /// The model as traces record it: `demo` or `openai:<model>`.
    pub model: String,
    /// The provider of live turns (`llm.provider`).
    pub is_default: bool,
    /// `native` or `json_plan`: how the engine asks this model for tools.
    pub protocol: String,
    #[serde(default)]
    pub base_url: Option<String>,
    /// The price forks and turns on this provider are costed with; none
    /// means unknown (the demo model is free: zero).
    #[serde(default)]
    pub price: Option<ModelPrice>,
    pub reachability: Reachability,
    /// Why the probe failed (`unreachable` only).
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether the server's model list names the configured model
    /// (`reachable` only; none when the list could not be read).
    #[serde(default)]
    pub model_listed: Option<bool>,
    /// When the probe ended.
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub checked_at: Option<Timestamp>,
}

impl ProviderInfo {
    /// A short line for people: "reachable, model listed",
    /// "unreachable: connection refused", "not checked yet".
    pub fn status_text(&self) -> String {
        match self.reachability {
            Reachability::Demo => "built in".into(),
            Reachability::Unknown => "not checked yet".into(),
            Reachability::Reachable => match self.model_listed {
                Some(true) => "reachable, model listed".into(),
                Some(false) => "reachable, model not listed".into(),
                None => "reachable".into(),
            },
            Reachability::Unreachable => match &self.reason {
                Some(reason) => format!("unreachable: {reason}"),
                None => "unreachable".into(),
            },
        }
    }
}
