//! How a provider is configured: the endpoint, the model, timeouts, retries,
//! the tool protocol and prices, and the named providers a server picks from.
//!
//! Everything here deserializes from TOML (serde); every field but `kind`
//! has a default, so a provider can be as short as
//!
//! ```toml
//! [providers.local]
//! kind = "openai"
//! base_url = "http://127.0.0.1:8000/v1"
//! model = "smollm2-135m"
//! ```
//!
//! Durations are written in seconds (`connect_secs = 2.5`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use aics_agent::PlanProtocol;
use aics_types::TokenUsage;
use serde::{Deserialize, Serialize};

/// The `max_tokens` sent when a provider's config does not say.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// One OpenAI-compatible endpoint and the model to call there.
///
/// `Debug` prints neither the API key nor the values of the extra headers
/// (nor the base URL's userinfo and query), and `Serialize` skips the key
/// and the headers, so a config can be logged or shown safely.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenAiConfig {
    /// The API root, up to and including the version: `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1` (Ollama), `http://127.0.0.1:8000/v1` (vLLM,
    /// llama.cpp). `/chat/completions` is appended.
    pub base_url: String,
    /// The bearer token. Prefer `api_key_env` so the key stays out of files.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// The environment variable the key is read from when `api_key` is unset
    /// (read once, when the provider is built).
    pub api_key_env: Option<String>,
    /// The model name as the server knows it (`gpt-4o-mini`, `deepseek-chat`).
    pub model: String,
    pub temperature: Option<f32>,
    /// The most tokens one call may generate: 1024 by default, so a small
    /// local model cannot generate until the idle timeout; 0 sends none
    /// (the server's own limit applies).
    pub max_tokens: Option<u32>,
    pub timeouts: Timeouts,
    pub retries: RetryPolicy,
    /// Extra request headers (an organisation id, a gateway's key). Their
    /// values may be secrets too, hence never printed.
    #[serde(skip_serializing)]
    pub headers: BTreeMap<String, String>,
    /// How the engine asks this model for tools.
    pub protocol: PlanProtocol,
    /// The price of the model, for the cost of a turn; none means unknown.
    pub price: Option<Price>,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            api_key: None,
            api_key_env: None,
            model: "gpt-4o-mini".into(),
            temperature: None,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            timeouts: Timeouts::default(),
            retries: RetryPolicy::default(),
            headers: BTreeMap::new(),
            protocol: PlanProtocol::default(),
            price: None,
        }
    }
}

impl OpenAiConfig {
    /// A config for `model` at `base_url`, everything else by default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            ..Self::default()
        }
    }

    /// The key to send: `api_key`, else the variable named by `api_key_env`.
    /// An empty key counts as none (local servers need none).
    pub fn resolved_api_key(&self) -> Option<String> {
        let key = match &self.api_key {
            Some(key) => Some(key.clone()),
            None => self
                .api_key_env
                .as_deref()
                .and_then(|name| std::env::var(name).ok()),
        };
        key.filter(|k| !k.trim().is_empty())
    }

    /// What a call cost in US dollars, when the price is known.
    pub fn cost_usd(&self, usage: &TokenUsage) -> Option<f64> {
        self.price.map(|price| price.cost_usd(usage))
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Hand-written so that the key and header values can never reach a log.
        f.debug_struct("OpenAiConfig")
            // A key may ride in the URL's query or userinfo.
            .field("base_url", &crate::redact::redact_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("api_key_env", &self.api_key_env)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("timeouts", &self.timeouts)
            .field("retries", &self.retries)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("protocol", &self.protocol)
            .field("price", &self.price)
            .finish()
    }
}

/// How long a call may take, step by step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timeouts {
    /// Opening the TCP (and TLS) connection.
    #[serde(rename = "connect_secs", with = "secs")]
    pub connect: Duration,
    /// From sending the request to the first streamed chunk: a local model
    /// on a CPU may think for a while before it says anything.
    #[serde(rename = "first_token_secs", with = "secs")]
    pub first_token: Duration,
    /// Between two chunks once streaming has begun.
    #[serde(rename = "idle_secs", with = "secs")]
    pub idle: Duration,
    /// The whole call, retries and backoff included.
    #[serde(rename = "total_secs", with = "secs")]
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(60),
            idle: Duration::from_secs(30),
            total: Duration::from_secs(300),
        }
    }
}

/// Retries of a call that failed before anything was streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// The first backoff; it doubles per retry, with jitter.
    #[serde(rename = "base_backoff_secs", with = "secs")]
    pub base_backoff: Duration,
    /// The longest backoff, also the cap on a server's `Retry-After`.
    #[serde(rename = "max_backoff_secs", with = "secs")]
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

/// A model's price in US dollars per 1,000 tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub prompt_per_1k: f64,
    pub completion_per_1k: f64,
}

impl Price {
    /// What `usage` cost at this price.
    pub fn cost_usd(&self, usage: &TokenUsage) -> f64 {
        // Token counts stay far below 2^53, so the f64 conversion is exact.
        (usage.prompt_tokens as f64 * self.prompt_per_1k
            + usage.completion_tokens as f64 * self.completion_per_1k)
            / 1000.0
    }
}

/// One provider, as a server's config names it: `kind = "demo"` or
/// `kind = "openai"` with the fields of [`OpenAiConfig`] beside it.
// Read once at startup: the size of a variant does not matter, and a Box
// would only make matching on it clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderConfig {
    /// The built-in deterministic model (aics-agent's demo).
    Demo,
    /// An OpenAI-compatible endpoint.
    Openai(OpenAiConfig),
}

impl ProviderConfig {
    /// The name a trace and the UI show: `demo` or `openai:<model>`, the same
    /// as the built model's `ChatModel::name`.
    pub fn model_name(&self) -> String {
        match self {
            Self::Demo => "demo".into(),
            Self::Openai(config) => format!("openai:{}", config.model),
        }
    }

    /// The tool protocol the engine should use with this provider.
    pub fn protocol(&self) -> PlanProtocol {
        match self {
            Self::Demo => PlanProtocol::Native,
            Self::Openai(config) => config.protocol,
        }
    }

    /// The cost of `usage`, when the provider has a price (the demo model
    /// is free: zero).
    pub fn cost_usd(&self, usage: &TokenUsage) -> Option<f64> {
        match self {
            Self::Demo => Some(0.0),
            Self::Openai(config) => config.cost_usd(usage),
        }
    }
}

/// Several named providers and the one in use.
///
/// ```toml
/// active = "local"
///
/// [providers.demo]
/// kind = "demo"
///
/// [providers.local]
/// kind = "openai"
/// base_url = "http://127.0.0.1:8000/v1"
/// model = "qwen2.5-coder-1.5b"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProvidersConfig {
    /// The name of the provider in use.
    pub active: String,
    pub providers: BTreeMap<String, ProviderConfig>,
}

impl Default for ProvidersConfig {
    /// Only the demo model, active: aics runs offline out of the box.
    fn default() -> Self {
        Self {
            active: "demo".into(),
            providers: BTreeMap::from([("demo".to_string(), ProviderConfig::Demo)]),
        }
    }
}

impl ProvidersConfig {
    /// The active provider; `None` when `active` names none of them.
    pub fn active(&self) -> Option<&ProviderConfig> {
        self.providers.get(&self.active)
    }
}

/// Serde for a [`Duration`] written as (fractional) seconds.
mod secs {
    use std::time::Duration;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs).map_err(D::Error::custom)
    }
}
