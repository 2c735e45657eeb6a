//! The operator's configuration: a TOML file named by `AICS_CONFIG`, then
//! `AICS_*` environment variables on top (figment). Every setting has a
//! default, so the server runs with no file at all; an invalid setting stops
//! start-up with an error that names its key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use aics_agent::support::{DEFAULT_MAX_TOOL_LOOPS, DEFAULT_TOOL_TIMEOUT};
use aics_agent::{Durability, EngineKind};
use aics_openai::{OpenAiConfig, ProviderConfig};
use aics_service::ConsoleConfig;
use aics_types::Role;
use figment::providers::{Format, Serialized, Toml};
use figment::value::Value;
use figment::Figment;
use serde::{Deserialize, Deserializer};

/// The default database: a SQLite file in `./data/`.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/aics.db";

/// A setting that could not be used; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file or an environment variable does not parse (figment names the key).
    #[error("invalid configuration: {0}")]
    Figment(#[from] Box<figment::Error>),
    /// A value parses but makes no sense.
    #[error("invalid configuration: {key}: {message}")]
    Invalid { key: &'static str, message: String },
}

fn invalid(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        message: message.into(),
    }
}

/// Everything the server reads at start-up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    /// Listen address (`AICS_ADDR`); default: Leptos's site address, 127.0.0.1:3000.
    #[serde(default)]
    pub addr: Option<String>,
    /// `sqlite://…` or `postgres://…` (`AICS_DATABASE_URL`).
    #[serde(default = "default_database_url")]
    pub database_url: String,
    /// The tracing filter (`AICS_LOG`), e.g. `info` or `aics=debug,info`.
    #[serde(default = "default_log")]
    pub log: String,
    /// `text` or `json` (`AICS_LOG_FORMAT`).
    #[serde(default = "default_log_format")]
    pub log_format: String,
    #[serde(default)]
    pub llm: LlmSettings,
    #[serde(default)]
    pub orchestration: Orchestration,
    #[serde(default)]
    pub auth: AuthSettings,
    #[serde(default)]
    pub demo: DemoSettings,
    #[serde(default)]
    pub http: HttpSettings,
}

/// `[llm]`: the named providers and the one in use.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LlmSettings {
    /// The active provider's name (`AICS_LLM_PROVIDER`): `demo`, `openai`
    /// or a name of `[llm.providers]`. Default `demo`.
    #[serde(default)]
    pub provider: Option<String>,
    /// Overrides for the active OpenAI-compatible provider
    /// (`AICS_LLM_BASE_URL`, `AICS_LLM_API_KEY`, `AICS_LLM_MODEL`).
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Named providers (`kind = "demo"` or `kind = "openai"`, see aics-openai).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// `[orchestration]`: the engine and its limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Orchestration {
    /// `graph` or `linear` (`AICS_ENGINE`).
    #[serde(default)]
    pub engine: Option<String>,
    /// `false` runs the linear engine (one routed tool call, then respond).
    #[serde(default)]
    pub react_enabled: Option<bool>,
    /// Tool steps per turn (`AICS_MAX_TOOL_LOOPS`), default 5.
    #[serde(default)]
    pub max_tool_loops: Option<u32>,
    /// How long one tool call may take, in seconds (default 15).
    #[serde(default)]
    pub tool_timeout_secs: Option<f64>,
    /// How long a running turn's lease lasts, in seconds (`AICS_LEASE_SECS`,
    /// default 30): its instance renews it every third of that; when the
    /// instance dies, another one (or the restarted one) takes the turn over
    /// once the lease ran out.
    #[serde(default)]
    pub lease_secs: Option<f64>,
    /// How often every instance looks for turns to recover, in seconds
    /// (`AICS_RECOVERY_SWEEP_SECS`, default 10).
    #[serde(default)]
    pub recovery_sweep_secs: Option<f64>,
    /// When a turn's checkpoints are written (`AICS_DURABILITY`): `sync`
    /// (default: before each next node), `async` (beside the next node) or
    /// `exit` (once, when the turn ends or pauses). docs/ARCHITECTURE.md,
    /// "Durability", says what a crash can lose in each.
    #[serde(default)]
    pub durability: Option<String>,
    /// The two keys may also be nested under `graph` (the spelling of the
    /// original design); both work.
    #[serde(default)]
    pub graph: GraphKeys,
}

/// `[orchestration.graph]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GraphKeys {
    #[serde(default)]
    pub react_enabled: Option<bool>,
    #[serde(default)]
    pub max_tool_loops: Option<u32>,
}

/// `[auth]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AuthSettings {
    /// First-start password of `supervisor` (`AICS_SUPERVISOR_PASSWORD`); generated and printed when unset.
    #[serde(default)]
    pub supervisor_password: Option<String>,
    /// First-start password of `agent` (`AICS_AGENT_PASSWORD`).
    #[serde(default)]
    pub agent_password: Option<String>,
    /// Bearer token for scripts (`AICS_API_TOKEN`).
    #[serde(default)]
    pub api_token: Option<String>,
    /// `agent` (default) or `supervisor` (`AICS_API_TOKEN_ROLE`).
    #[serde(default = "default_api_role")]
    pub api_token_role: String,
    /// How long a sign-in lasts, in hours.
    #[serde(default = "default_session_hours")]
    pub session_hours: u32,
    /// Mark the cookie `Secure` (behind HTTPS).
    #[serde(default)]
    pub cookie_secure: bool,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            supervisor_password: None,
            agent_password: None,
            api_token: None,
            api_token_role: default_api_role(),
            session_hours: default_session_hours(),
            cookie_secure: false,
        }
    }
}

/// `[demo]`: the built-in model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DemoSettings {
    /// Pause between streamed tokens (`AICS_DEMO_TOKEN_DELAY_MS`), default 20.
    #[serde(default = "default_token_delay")]
    pub token_delay_ms: u64,
    /// `[fault:error]`-style markers in a message inject faults (`AICS_DEMO_FAULTS`).
    #[serde(default, deserialize_with = "lenient_bool")]
    pub faults: bool,
    /// A pause before every support tool call, for fault tests that must
    /// kill the server while a tool runs (`AICS_DEMO_TOOL_DELAY_MS`, default 0).
    #[serde(default)]
    pub tool_delay_ms: u64,
}

impl Default for DemoSettings {
    fn default() -> Self {
        Self {
            token_delay_ms: default_token_delay(),
            faults: false,
            tool_delay_ms: 0,
        }
    }
}

/// `[http]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HttpSettings {
    /// The largest request body, in bytes (`AICS_BODY_LIMIT`), default 64 KiB.
    #[serde(default = "default_body_limit")]
    pub body_limit: usize,
    /// How long a shutdown waits for running turns, in seconds.
    #[serde(default = "default_grace")]
    pub shutdown_grace_secs: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            body_limit: default_body_limit(),
            shutdown_grace_secs: default_grace(),
        }
    }
}

fn default_database_url() -> String {
    DEFAULT_DATABASE_URL.into()
}
fn default_log() -> String {
    "info".into()
}
fn default_log_format() -> String {
    "text".into()
}
fn default_api_role() -> String {
    "agent".into()
}
fn default_session_hours() -> u32 {
    12
}
fn default_token_delay() -> u64 {
    20
}
fn default_body_limit() -> usize {
    64 * 1024
}
fn default_grace() -> u64 {
    30
}

/// `1`, `true`, `yes`, `on` (any case) and their opposites, as text,
/// number or boolean: environment variables are text.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Int(i64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Bool(b) => Ok(b),
        Raw::Int(i) => Ok(i != 0),
        Raw::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" | "" => Ok(false),
            other => Err(serde::de::Error::custom(format!(
                "expected true or false, found {other:?}"
            ))),
        },
    }
}

/// The environment variables, the keys they set, and whether their value
/// is text taken as written (passwords like `0012` or `[x` must not be
/// parsed as numbers or arrays) or parsed like TOML (numbers, booleans).
const ENV_KEYS: &[(&str, &str, bool)] = &[
    ("ADDR", "addr", true),
    ("DATABASE_URL", "database-url", true),
    ("LOG", "log", true),
    ("LOG_FORMAT", "log-format", true),
    ("LLM_PROVIDER", "llm.provider", true),
    ("LLM_BASE_URL", "llm.base-url", true),
    ("LLM_API_KEY", "llm.api-key", true),
    ("LLM_MODEL", "llm.model", true),
    ("ENGINE", "orchestration.engine", true),
    ("REACT_ENABLED", "orchestration.react-enabled", false),
    ("MAX_TOOL_LOOPS", "orchestration.max-tool-loops", false),
    ("SUPERVISOR_PASSWORD", "auth.supervisor-password", true),
    ("AGENT_PASSWORD", "auth.agent-password", true),
    ("API_TOKEN", "auth.api-token", true),
    ("API_TOKEN_ROLE", "auth.api-token-role", true),
    ("COOKIE_SECURE", "auth.cookie-secure", false),
    ("DEMO_TOKEN_DELAY_MS", "demo.token-delay-ms", false),
    ("DEMO_FAULTS", "demo.faults", false),
    ("DEMO_TOOL_DELAY_MS", "demo.tool-delay-ms", false),
    ("LEASE_SECS", "orchestration.lease-secs", false),
    ("DURABILITY", "orchestration.durability", true),
    (
        "RECOVERY_SWEEP_SECS",
        "orchestration.recovery-sweep-secs",
        false,
    ),
    ("BODY_LIMIT", "http.body-limit", false),
];

impl Settings {
    /// Reads the file named by `AICS_CONFIG` (if any) and the environment.
    pub fn load() -> Result<Self, ConfigError> {
        let mut figment = Figment::new();
        if let Ok(path) = std::env::var("AICS_CONFIG") {
            if !std::path::Path::new(&path).is_file() {
                return Err(invalid(
                    "AICS_CONFIG",
                    format!("the config file {path:?} does not exist"),
                ));
            }
            figment = figment.merge(Toml::file(path));
        }
        Self::from_figment(merge_env(figment, |k| std::env::var(k).ok()))
    }

    /// Extracts and checks the settings of `figment` (tests build their own).
    pub fn from_figment(figment: Figment) -> Result<Self, ConfigError> {
        let settings: Settings = figment.extract().map_err(Box::new)?;
        settings.console_config()?;
        settings.listen_addr()?;
        if !matches!(settings.log_format.as_str(), "text" | "json") {
            return Err(invalid(
                "log-format (AICS_LOG_FORMAT)",
                format!("expected text or json, found {:?}", settings.log_format),
            ));
        }
        let url = &settings.database_url;
        if !(url.starts_with("sqlite:")
            || url.starts_with("postgres:")
            || url.starts_with("postgresql:"))
        {
            return Err(invalid(
                "database-url (AICS_DATABASE_URL)",
                "expected sqlite://… or postgres://…",
            ));
        }
        if settings.http.body_limit < 1024 {
            return Err(invalid(
                "http.body-limit (AICS_BODY_LIMIT)",
                "at least 1024 bytes",
            ));
        }
        Ok(settings)
    }

    /// The listen address, if configured.
    pub fn listen_addr(&self) -> Result<Option<SocketAddr>, ConfigError> {
        self.addr
            .as_deref()
            .map(|a| {
                a.parse().map_err(|_| {
                    invalid(
                        "addr (AICS_ADDR)",
                        format!("{a:?} is not a socket address like 127.0.0.1:3000"),
                    )
                })
            })
            .transpose()
    }

    /// What the console is built with.
    pub fn console_config(&self) -> Result<ConsoleConfig, ConfigError> {
        let o = &self.orchestration;
        let react = o.graph.react_enabled.or(o.react_enabled);
        let engine = match o.engine.as_deref() {
            None => EngineKind::Graph,
            Some(name) => EngineKind::parse(name).ok_or_else(|| {
                invalid(
                    "orchestration.engine (AICS_ENGINE)",
                    format!("expected graph or linear, found {name:?}"),
                )
            })?,
        };
        // Without the ReAct loop the graph does one routed call.
        let engine = if react == Some(false) {
            EngineKind::Linear
        } else {
            engine
        };
        let max_tool_loops = o
            .graph
            .max_tool_loops
            .or(o.max_tool_loops)
            .unwrap_or(DEFAULT_MAX_TOOL_LOOPS);
        if !(1..=50).contains(&max_tool_loops) {
            return Err(invalid(
                "orchestration.max-tool-loops (AICS_MAX_TOOL_LOOPS)",
                format!("expected 1 to 50, found {max_tool_loops}"),
            ));
        }
        let tool_timeout = match o.tool_timeout_secs {
            None => DEFAULT_TOOL_TIMEOUT,
            Some(s) => Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    invalid(
                        "orchestration.tool-timeout-secs",
                        "expected a positive number of seconds",
                    )
                })?,
        };
        let seconds = |key: &'static str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(s) => Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| invalid(key, "expected a positive number of seconds")),
        };
        let defaults = ConsoleConfig::default();
        let lease = seconds(
            "orchestration.lease-secs (AICS_LEASE_SECS)",
            o.lease_secs,
            defaults.lease,
        )?;
        let sweep_interval = seconds(
            "orchestration.recovery-sweep-secs (AICS_RECOVERY_SWEEP_SECS)",
            o.recovery_sweep_secs,
            defaults.sweep_interval,
        )?;
        let durability = match o.durability.as_deref() {
            None => Durability::default(),
            Some(name) => Durability::parse(name).ok_or_else(|| {
                invalid(
                    "orchestration.durability (AICS_DURABILITY)",
                    format!("expected sync, async or exit, found {name:?}"),
                )
            })?,
        };
        let api_token_role = Role::parse(&self.auth.api_token_role).ok_or_else(|| {
            invalid(
                "auth.api-token-role (AICS_API_TOKEN_ROLE)",
                format!(
                    "expected agent or supervisor, found {:?}",
                    self.auth.api_token_role
                ),
            )
        })?;
        if let Some(token) = &self.auth.api_token {
            if token.len() < 16 {
                return Err(invalid(
                    "auth.api-token (AICS_API_TOKEN)",
                    "use at least 16 characters",
                ));
            }
        }
        let (provider_name, provider) = self.provider()?;
        Ok(ConsoleConfig {
            provider_name,
            provider,
            engine,
            max_tool_loops,
            tool_timeout,
            demo_token_delay: Duration::from_millis(self.demo.token_delay_ms),
            demo_faults: self.demo.faults,
            api_token: self.auth.api_token.clone().filter(|t| !t.is_empty()),
            api_token_role,
            session_ttl: Duration::from_secs(u64::from(self.auth.session_hours.max(1)) * 3600),
            cookie_secure: self.auth.cookie_secure,
            lease,
            sweep_interval,
            durability,
            tool_delay: Duration::from_millis(self.demo.tool_delay_ms),
            ..defaults
        })
    }

    /// The active provider: a name of `[llm.providers]`, or `demo`, or
    /// `openai` built from `llm.base-url`/`llm.model`/`llm.api-key`.
    fn provider(&self) -> Result<(String, ProviderConfig), ConfigError> {
        const KEY: &str = "llm.provider (AICS_LLM_PROVIDER)";
        let llm = &self.llm;
        let name = llm.provider.clone().unwrap_or_else(|| "demo".into());
        let mut provider = match (llm.providers.get(&name), name.as_str()) {
            (Some(p), _) => p.clone(),
            (None, "demo") => ProviderConfig::Demo,
            (None, "openai") => ProviderConfig::Openai(OpenAiConfig::default()),
            (None, other) => {
                let known: Vec<&str> = llm.providers.keys().map(String::as_str).collect();
                return Err(invalid(
                    KEY,
                    format!(
                        "no provider named {other:?} (configured: demo, openai{}{})",
                        if known.is_empty() { "" } else { ", " },
                        known.join(", ")
                    ),
                ));
            }
        };
        if let ProviderConfig::Openai(cfg) = &mut provider {
            if let Some(url) = &llm.base_url {
                cfg.base_url = url.clone();
            }
            if let Some(key) = &llm.api_key {
                cfg.api_key = Some(key.clone());
            }
            if let Some(model) = &llm.model {
                cfg.model = model.clone();
            }
            if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
                return Err(invalid(
                    "llm.base-url (AICS_LLM_BASE_URL)",
                    format!("expected an http(s) URL, found {:?}", cfg.base_url),
                ));
            }
            if cfg.model.trim().is_empty() {
                return Err(invalid(
                    "llm.model (AICS_LLM_MODEL)",
                    "name the model to call",
                ));
            }
        }
        Ok((name, provider))
    }
}

/// Puts the `AICS_*` variables of [`ENV_KEYS`] over `figment`; other
/// `AICS_*` variables (such as `AICS_CONFIG`) are not settings.
pub fn merge_env(mut figment: Figment, var: impl Fn(&str) -> Option<String>) -> Figment {
    for (name, path, text) in ENV_KEYS {
        let Some(raw) = var(&format!("AICS_{name}")) else {
            continue;
        };
        let value = if *text {
            Value::from(raw)
        } else {
            match raw.parse::<Value>() {
                Ok(v) => v,
                Err(never) => match never {},
            }
        };
        figment = figment.merge(Serialized::default(path, value));
    }
    figment
}
