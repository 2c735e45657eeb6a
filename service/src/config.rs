//! What a [`crate::Console`] is built with. The server fills it from its
//! TOML file and environment; tests build it directly.

use std::time::Duration;

use aics_agent::support::{DEFAULT_MAX_TOOL_LOOPS, DEFAULT_TOOL_TIMEOUT};
use aics_agent::{Durability, EngineKind};
use aics_openai::ProviderConfig;
use aics_types::Role;

/// How the console behaves.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// The name of the active provider (the key in `[llm.providers]`).
    pub provider_name: String,
    /// The active provider: the demo model or an OpenAI-compatible endpoint.
    pub provider: ProviderConfig,
    /// `graph` (the ReAct loop) or `linear` (one routed tool, then respond).
    pub engine: EngineKind,
    /// Tool steps per turn before the model must answer.
    pub max_tool_loops: u32,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// The demo model's pause between tokens (0 in tests).
    pub demo_token_delay: Duration,
    /// Whether `[fault:…]` markers in a message make the demo model fail.
    pub demo_faults: bool,
    /// The bearer token scripts send; none means the API needs a session.
    pub api_token: Option<String>,
    /// The role the API token acts with.
    pub api_token_role: Role,
    /// How long a sign-in lasts.
    pub session_ttl: Duration,
    /// Whether the session cookie is marked `Secure` (behind HTTPS).
    pub cookie_secure: bool,
    /// How many earlier messages a turn sees.
    pub history_messages: u32,
    /// How long a run's lease lasts; its owner renews it every third of
    /// that while the run lives. A run whose lease ran out (its process
    /// died) is taken over by the recovery sweep of any instance.
    pub lease: Duration,
    /// How often every instance sweeps for runs to recover.
    pub sweep_interval: Duration,
    /// How many times a run is started (1 + recoveries) before it is given
    /// up as failed: a turn that crashes its process must not loop for ever.
    pub max_attempts: u32,
    /// When a turn's checkpoints are written: `sync` (before each next
    /// node), `async` (beside it) or `exit` (in one batch when the turn
    /// ends or pauses); docs/ARCHITECTURE.md, "Durability", says what a
    /// crash can lose in each.
    pub durability: Durability,
    /// Test hook: each support tool call waits this long first, so a fault
    /// test can kill the process while a tool call runs (0 in production).
    pub tool_delay: Duration,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            provider_name: "demo".into(),
            provider: ProviderConfig::Demo,
            engine: EngineKind::Graph,
            max_tool_loops: DEFAULT_MAX_TOOL_LOOPS,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            demo_token_delay: Duration::from_millis(20),
            demo_faults: false,
            api_token: None,
            api_token_role: Role::Agent,
            session_ttl: Duration::from_secs(12 * 3600),
            cookie_secure: false,
            history_messages: 20,
            lease: Duration::from_secs(30),
            sweep_interval: Duration::from_secs(10),
            max_attempts: 3,
            durability: Durability::default(),
            tool_delay: Duration::ZERO,
        }
    }
}

impl ConsoleConfig {
    /// The defaults with the demo model answering instantly (tests).
    pub fn for_tests() -> Self {
        Self {
            demo_token_delay: Duration::ZERO,
            demo_faults: true,
            ..Self::default()
        }
    }
}
