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
use aics_service::{ConsoleConfig, ThrottlePolicy};
use aics_types::Role;
use figment::providers::{Format, Serialized, Toml};
use figment::value::Value;
use figment::Figment;
use ipnet::IpNet;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

use crate::serve::ServeLimits;
use crate::web::{HostRule, MetricsAccess, WebConfig};

/// The address Leptos's configuration names when `AICS_ADDR` is unset.
const DEFAULT_ADDR: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 3000);

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

/// The embed origins, checked: each `scheme://host[:port]`, nothing more
/// (they go into a CSP `frame-ancestors` list verbatim).
fn embed_origins(list: &[String]) -> Result<Vec<String>, ConfigError> {
    list.iter()
        .map(|origin| {
            let o = origin.trim_end_matches('/').to_ascii_lowercase();
            let ok = o.split_once("://").is_some_and(|(scheme, host)| {
                matches!(scheme, "http" | "https")
                    && !host.is_empty()
                    && host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'))
            });
            if ok {
                Ok(o)
            } else {
                Err(invalid(
                    "http.embed-origins (AICS_EMBED_ORIGINS)",
                    format!("{origin:?} is not an origin like https://shop.example.com"),
                ))
            }
        })
        .collect()
}

fn invalid(key: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        message: message.into(),
    }
}

/// Everything the server reads at start-up. `Debug` shows no secret: the
/// database URL's password and the tokens are redacted.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Settings {
    /// Listen address (`AICS_ADDR`); default: Leptos's site address, 127.0.0.1:3000.
    #[serde(default)]
    pub addr: Option<String>,
    /// `sqlite://…` or `postgres://…` (`AICS_DATABASE_URL`).
    #[serde(default = "default_database_url")]
    pub database_url: String,
    /// Let other programs open the SQLite file while the server runs
    /// (`AICS_SQLITE_SHARED`). Off by default: the file is the server's
    /// alone, which spares each commit its locking system calls and keeps a
    /// second server off the same file (`aics_db::SqliteAccess`).
    #[serde(default, deserialize_with = "lenient_bool")]
    pub sqlite_shared: bool,
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
    /// `[approvals]`: the approval policy, its deadlines, the webhook
    /// (the types live with the policy, `aics_agent::policy`).
    #[serde(default)]
    pub approvals: aics_agent::policy::ApprovalsConfig,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("addr", &self.addr)
            .field("database_url", &redact_url(&self.database_url))
            .field("sqlite_shared", &self.sqlite_shared)
            .field("log", &self.log)
            .field("log_format", &self.log_format)
            .field("llm", &self.llm)
            .field("orchestration", &self.orchestration)
            .field("auth", &self.auth)
            .field("demo", &self.demo)
            .field("http", &self.http)
            .field("approvals", &self.approvals)
            .finish()
    }
}

/// A URL without its password.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}://{user}:[redacted]{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// `[llm]`: the named providers and the one in use. Every named provider
/// is built at start-up (forks may run on any); `provider` answers live
/// turns.
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
    pub api_key: Option<SecretString>,
    #[serde(default)]
    pub model: Option<String>,
    /// The most tokens one call of the active OpenAI-compatible provider may
    /// generate (`AICS_LLM_MAX_TOKENS`; its own `max_tokens`, else 1024;
    /// 0 sends none).
    #[serde(default)]
    pub max_tokens: Option<u32>,
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
    pub supervisor_password: Option<SecretString>,
    /// First-start password of `agent` (`AICS_AGENT_PASSWORD`).
    #[serde(default)]
    pub agent_password: Option<SecretString>,
    /// Bearer token for scripts (`AICS_API_TOKEN`).
    #[serde(default)]
    pub api_token: Option<SecretString>,
    /// `agent` (default) or `supervisor` (`AICS_API_TOKEN_ROLE`).
    #[serde(default = "default_api_role")]
    pub api_token_role: String,
    /// How long a sign-in lasts, in hours.
    #[serde(default = "default_session_hours")]
    pub session_hours: u32,
    /// A session unused this long ends, in minutes (`AICS_SESSION_IDLE_MINUTES`).
    #[serde(default = "default_idle_minutes")]
    pub session_idle_minutes: u32,
    /// Signed-in browsers per user (`AICS_SESSIONS_PER_USER`).
    #[serde(default = "default_sessions_per_user")]
    pub sessions_per_user: u32,
    /// `auto` (default), `true` or `false` (`AICS_COOKIE_SECURE`): whether
    /// the session cookie is `Secure` with the `__Host-` prefix, and HSTS
    /// is sent. `auto` is on except for plain-http loopback (see README).
    #[serde(default)]
    pub cookie_secure: CookieSecure,
    /// Failed sign-ins of one username from one address before the
    /// backoff starts.
    #[serde(default = "default_free_failures")]
    pub sign_in_free_failures: u32,
    /// Failed sign-ins of one username from one address that lock that
    /// address out of it (`AICS_SIGN_IN_LOCK_AFTER`).
    #[serde(default = "default_lock_after")]
    pub sign_in_lock_after: u32,
    /// How long a lock lasts, in minutes (`AICS_SIGN_IN_LOCK_MINUTES`).
    #[serde(default = "default_lock_minutes")]
    pub sign_in_lock_minutes: u32,
    /// The same two counts for one client address (an office shares one).
    #[serde(default = "default_addr_free_failures")]
    pub address_free_failures: u32,
    #[serde(default = "default_addr_lock_after")]
    pub address_lock_after: u32,
    /// Failed sign-ins of one username from addresses it never signed in
    /// from before their waits start; waits, never a lock.
    #[serde(default = "default_name_free_failures")]
    pub name_free_failures: u32,
    /// The longest of those waits, in seconds.
    #[serde(default = "default_name_max_delay_secs")]
    pub name_max_delay_secs: u32,
    /// Sign-ins of one client address at once; more are refused with 429.
    #[serde(default = "default_sign_ins_in_flight")]
    pub sign_ins_in_flight_per_address: u32,
}

/// `auth.cookie-secure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieSecure {
    /// Secure unless the server is plain-http loopback (see README).
    #[default]
    Auto,
    Always,
    Never,
}

impl<'de> Deserialize<'de> for CookieSecure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Int(i64),
            Text(String),
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Bool(true) => Self::Always,
            Raw::Bool(false) => Self::Never,
            Raw::Int(i) => {
                if i != 0 {
                    Self::Always
                } else {
                    Self::Never
                }
            }
            Raw::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
                "auto" | "" => Self::Auto,
                "1" | "true" | "yes" | "on" => Self::Always,
                "0" | "false" | "no" | "off" => Self::Never,
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "expected auto, true or false, found {other:?}"
                    )))
                }
            },
        })
    }
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            supervisor_password: None,
            agent_password: None,
            api_token: None,
            api_token_role: default_api_role(),
            session_hours: default_session_hours(),
            session_idle_minutes: default_idle_minutes(),
            sessions_per_user: default_sessions_per_user(),
            cookie_secure: CookieSecure::Auto,
            sign_in_free_failures: default_free_failures(),
            sign_in_lock_after: default_lock_after(),
            sign_in_lock_minutes: default_lock_minutes(),
            address_free_failures: default_addr_free_failures(),
            address_lock_after: default_addr_lock_after(),
            name_free_failures: default_name_free_failures(),
            name_max_delay_secs: default_name_max_delay_secs(),
            sign_ins_in_flight_per_address: default_sign_ins_in_flight(),
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
    /// Host names the server answers for (`AICS_ALLOWED_HOSTS`, comma
    /// separated); loopback names always. Empty: those of `allowed-origins`,
    /// else loopback only when listening on loopback, else any.
    #[serde(default, deserialize_with = "list")]
    pub allowed_hosts: Vec<String>,
    /// Origins whose pages may send state-changing requests
    /// (`AICS_ALLOWED_ORIGINS`), e.g. `https://console.example.com`. Empty:
    /// the request's own host.
    #[serde(default, deserialize_with = "list")]
    pub allowed_origins: Vec<String>,
    /// Origins whose pages may frame the customer chat (`/chat*`, the
    /// widget) (`AICS_EMBED_ORIGINS`), e.g. `https://shop.example.com`.
    /// Empty: only this server's own pages. Staff pages are never framed.
    #[serde(default, deserialize_with = "list")]
    pub embed_origins: Vec<String>,
    /// Proxies (addresses or CIDR ranges) whose `X-Forwarded-For` is
    /// believed (`AICS_TRUSTED_PROXIES`).
    #[serde(default, deserialize_with = "list")]
    pub trusted_proxies: Vec<String>,
    /// Who may read `/metrics` (`AICS_METRICS_ACCESS`): `loopback`
    /// (default), `token` (with `metrics-token`) or `open`.
    #[serde(default = "default_metrics_access")]
    pub metrics_access: String,
    /// The bearer token of `metrics-access = "token"` (`AICS_METRICS_TOKEN`).
    #[serde(default)]
    pub metrics_token: Option<SecretString>,
    /// Open connections at most (`AICS_MAX_CONNECTIONS`).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Open connections per client address, the trusted proxies exempt
    /// (`AICS_MAX_CONNECTIONS_PER_ADDRESS`).
    #[serde(default = "default_max_connections_per_address")]
    pub max_connections_per_address: usize,
    /// Open event streams per user (`AICS_STREAMS_PER_USER`).
    #[serde(default = "default_streams_per_user")]
    pub streams_per_user: u32,
    /// Open customer event streams per client address
    /// (`AICS_CUSTOMER_STREAMS_PER_ADDRESS`).
    #[serde(default = "default_customer_streams_per_address")]
    pub customer_streams_per_address: u32,
    /// How long a new connection may send nothing, in seconds
    /// (`AICS_FIRST_BYTE_TIMEOUT_SECS`).
    #[serde(default = "default_first_byte_timeout")]
    pub first_byte_timeout_secs: u64,
    /// How long a client may take to send a request's headers, and how
    /// long a kept-alive connection waits for the next request, in seconds.
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout_secs: u64,
    /// How long a request body may take to arrive, in seconds.
    #[serde(default = "default_body_timeout")]
    pub body_timeout_secs: u64,
    /// A connection on which nothing moves this long is closed, in seconds.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_secs: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            body_limit: default_body_limit(),
            shutdown_grace_secs: default_grace(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            embed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            metrics_access: default_metrics_access(),
            metrics_token: None,
            max_connections: default_max_connections(),
            max_connections_per_address: default_max_connections_per_address(),
            streams_per_user: default_streams_per_user(),
            customer_streams_per_address: default_customer_streams_per_address(),
            first_byte_timeout_secs: default_first_byte_timeout(),
            header_read_timeout_secs: default_header_read_timeout(),
            body_timeout_secs: default_body_timeout(),
            idle_timeout_secs: default_idle_timeout(),
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
fn default_idle_minutes() -> u32 {
    30
}
fn default_sessions_per_user() -> u32 {
    10
}
fn default_free_failures() -> u32 {
    5
}
fn default_lock_after() -> u32 {
    10
}
fn default_lock_minutes() -> u32 {
    15
}
fn default_addr_free_failures() -> u32 {
    20
}
fn default_addr_lock_after() -> u32 {
    100
}
fn default_name_free_failures() -> u32 {
    10
}
fn default_name_max_delay_secs() -> u32 {
    300
}
fn default_sign_ins_in_flight() -> u32 {
    4
}
fn default_metrics_access() -> String {
    "loopback".into()
}
fn default_max_connections() -> usize {
    1024
}
fn default_max_connections_per_address() -> usize {
    64
}
fn default_streams_per_user() -> u32 {
    16
}
fn default_customer_streams_per_address() -> u32 {
    32
}
fn default_first_byte_timeout() -> u64 {
    10
}
fn default_header_read_timeout() -> u64 {
    15
}
fn default_body_timeout() -> u64 {
    30
}
fn default_idle_timeout() -> u64 {
    120
}

/// A list as a TOML array or, from the environment, comma-separated text.
fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        List(Vec<String>),
        Text(String),
    }
    let items = match Raw::deserialize(d)? {
        Raw::List(items) => items,
        Raw::Text(text) => text.split(',').map(str::to_owned).collect(),
    };
    Ok(items
        .into_iter()
        .map(|i| i.trim().to_owned())
        .filter(|i| !i.is_empty())
        .collect())
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
    ("SQLITE_SHARED", "sqlite-shared", false),
    ("LOG", "log", true),
    ("LOG_FORMAT", "log-format", true),
    ("LLM_PROVIDER", "llm.provider", true),
    ("LLM_BASE_URL", "llm.base-url", true),
    ("LLM_API_KEY", "llm.api-key", true),
    ("LLM_MODEL", "llm.model", true),
    ("LLM_MAX_TOKENS", "llm.max-tokens", false),
    ("ENGINE", "orchestration.engine", true),
    ("REACT_ENABLED", "orchestration.react-enabled", false),
    ("MAX_TOOL_LOOPS", "orchestration.max-tool-loops", false),
    ("SUPERVISOR_PASSWORD", "auth.supervisor-password", true),
    ("AGENT_PASSWORD", "auth.agent-password", true),
    ("API_TOKEN", "auth.api-token", true),
    ("API_TOKEN_ROLE", "auth.api-token-role", true),
    ("COOKIE_SECURE", "auth.cookie-secure", true),
    ("SESSION_IDLE_MINUTES", "auth.session-idle-minutes", false),
    ("SESSIONS_PER_USER", "auth.sessions-per-user", false),
    ("SIGN_IN_LOCK_AFTER", "auth.sign-in-lock-after", false),
    ("SIGN_IN_LOCK_MINUTES", "auth.sign-in-lock-minutes", false),
    ("ALLOWED_HOSTS", "http.allowed-hosts", true),
    ("ALLOWED_ORIGINS", "http.allowed-origins", true),
    ("EMBED_ORIGINS", "http.embed-origins", true),
    ("TRUSTED_PROXIES", "http.trusted-proxies", true),
    ("METRICS_ACCESS", "http.metrics-access", true),
    ("METRICS_TOKEN", "http.metrics-token", true),
    ("MAX_CONNECTIONS", "http.max-connections", false),
    (
        "MAX_CONNECTIONS_PER_ADDRESS",
        "http.max-connections-per-address",
        false,
    ),
    ("STREAMS_PER_USER", "http.streams-per-user", false),
    (
        "CUSTOMER_STREAMS_PER_ADDRESS",
        "http.customer-streams-per-address",
        false,
    ),
    (
        "FIRST_BYTE_TIMEOUT_SECS",
        "http.first-byte-timeout-secs",
        false,
    ),
    (
        "HEADER_READ_TIMEOUT_SECS",
        "http.header-read-timeout-secs",
        false,
    ),
    ("BODY_TIMEOUT_SECS", "http.body-timeout-secs", false),
    ("IDLE_TIMEOUT_SECS", "http.idle-timeout-secs", false),
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
    ("APPROVALS_WEBHOOK_URL", "approvals.webhook-url", true),
    ("PUBLIC_URL", "approvals.public-url", true),
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
        settings.web_config(DEFAULT_ADDR)?;
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

    /// Who else may open a SQLite database file while the server has it.
    pub fn sqlite_access(&self) -> aics_db::SqliteAccess {
        if self.sqlite_shared {
            aics_db::SqliteAccess::Shared
        } else {
            aics_db::SqliteAccess::Process
        }
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

    /// What the console serving on `addr` is built with (the cookie rule
    /// depends on the address).
    pub fn console_config_at(&self, addr: SocketAddr) -> Result<ConsoleConfig, ConfigError> {
        Ok(ConsoleConfig {
            cookie_secure: self.secure_transport(addr),
            ..self.console_config()?
        })
    }

    /// Whether the deployment is served over HTTPS as far as the cookie
    /// and HSTS go: `auth.cookie-secure`, or with `auto`: when origins are
    /// configured, whether they all are `https://`; otherwise on, unless
    /// the server listens on loopback with no proxy in front (plain-http
    /// `make run`).
    pub fn secure_transport(&self, addr: SocketAddr) -> bool {
        match self.auth.cookie_secure {
            CookieSecure::Always => true,
            CookieSecure::Never => false,
            CookieSecure::Auto => {
                let origins = &self.http.allowed_origins;
                if !origins.is_empty() {
                    origins
                        .iter()
                        .all(|o| o.to_ascii_lowercase().starts_with("https://"))
                } else {
                    !(addr.ip().is_loopback() && self.http.trusted_proxies.is_empty())
                }
            }
        }
    }

    fn throttle(&self) -> Result<ThrottlePolicy, ConfigError> {
        let a = &self.auth;
        if a.sign_in_lock_after <= a.sign_in_free_failures
            || a.address_lock_after <= a.address_free_failures
        {
            return Err(invalid(
                "auth.sign-in-lock-after (AICS_SIGN_IN_LOCK_AFTER)",
                "the lock must come after the free failures",
            ));
        }
        if a.sign_ins_in_flight_per_address == 0 {
            return Err(invalid(
                "auth.sign-ins-in-flight-per-address",
                "at least one sign-in must be let through",
            ));
        }
        Ok(ThrottlePolicy {
            user_free: a.sign_in_free_failures,
            user_lock_after: a.sign_in_lock_after,
            addr_free: a.address_free_failures,
            addr_lock_after: a.address_lock_after,
            lock_for: Duration::from_secs(u64::from(a.sign_in_lock_minutes.max(1)) * 60),
            name_free: a.name_free_failures,
            name_max_delay: Duration::from_secs(u64::from(a.name_max_delay_secs.max(1))),
            addr_in_flight: a.sign_ins_in_flight_per_address,
            ..ThrottlePolicy::default()
        })
    }

    /// The router's wire policy for a server listening on `addr`.
    pub fn web_config(&self, addr: SocketAddr) -> Result<WebConfig, ConfigError> {
        let h = &self.http;
        let mut origins = Vec::new();
        for origin in &h.allowed_origins {
            let o = origin.trim_end_matches('/').to_ascii_lowercase();
            let Some((scheme, host)) = o.split_once("://") else {
                return Err(invalid(
                    "http.allowed-origins (AICS_ALLOWED_ORIGINS)",
                    format!("{origin:?} is not an origin like https://console.example.com"),
                ));
            };
            if !matches!(scheme, "http" | "https") || host.is_empty() || host.contains('/') {
                return Err(invalid(
                    "http.allowed-origins (AICS_ALLOWED_ORIGINS)",
                    format!("{origin:?} is not an origin like https://console.example.com"),
                ));
            }
            origins.push(o);
        }
        let mut hosts: Vec<String> = h
            .allowed_hosts
            .iter()
            .map(|n| crate::web::host_name(n))
            .collect();
        hosts.extend(origins.iter().filter_map(|o| {
            o.split_once("://")
                .map(|(_, host)| crate::web::host_name(host))
        }));
        let host_rule = if !hosts.is_empty() {
            HostRule::List(hosts)
        } else if addr.ip().is_loopback() {
            HostRule::Loopback
        } else {
            HostRule::Any
        };
        let trusted_proxies = h
            .trusted_proxies
            .iter()
            .map(|p| {
                p.parse::<IpNet>()
                    .or_else(|_| p.parse::<std::net::IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        invalid(
                            "http.trusted-proxies (AICS_TRUSTED_PROXIES)",
                            format!("{p:?} is neither an address nor a CIDR range"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let metrics = match h.metrics_access.as_str() {
            "open" => MetricsAccess::Open,
            "loopback" => MetricsAccess::Loopback,
            "token" => match &h.metrics_token {
                Some(t) if t.expose_secret().len() >= 16 => {
                    MetricsAccess::Token(aics_db::tokens::hash_token(t.expose_secret()))
                }
                _ => {
                    return Err(invalid(
                        "http.metrics-token (AICS_METRICS_TOKEN)",
                        "metrics-access = \"token\" needs a token of at least 16 characters",
                    ))
                }
            },
            other => {
                return Err(invalid(
                    "http.metrics-access (AICS_METRICS_ACCESS)",
                    format!("expected loopback, token or open, found {other:?}"),
                ))
            }
        };
        Ok(WebConfig {
            body_limit: h.body_limit,
            body_timeout: Duration::from_secs(h.body_timeout_secs.max(1)),
            hosts: host_rule,
            allowed_origins: origins,
            embed_origins: embed_origins(&h.embed_origins)?,
            trusted_proxies,
            metrics,
            hsts: self.secure_transport(addr),
            reload_port: None,
        })
    }

    /// The connection limits.
    pub fn serve_limits(&self) -> ServeLimits {
        let h = &self.http;
        // Checked when the settings were loaded (`web_config`).
        let unlimited_peers = h
            .trusted_proxies
            .iter()
            .filter_map(|p| {
                p.parse::<IpNet>()
                    .or_else(|_| p.parse::<std::net::IpAddr>().map(IpNet::from))
                    .ok()
            })
            .collect();
        ServeLimits {
            max_connections: h.max_connections.max(1),
            max_connections_per_address: h.max_connections_per_address.max(1),
            unlimited_peers,
            first_byte_timeout: Duration::from_secs(h.first_byte_timeout_secs.max(1)),
            header_read_timeout: Duration::from_secs(h.header_read_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(h.idle_timeout_secs.max(1)),
            shutdown_grace: Duration::from_secs(h.shutdown_grace_secs),
        }
    }

    /// What the console is built with (for a server on 127.0.0.1:3000; see
    /// [`Settings::console_config_at`]).
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
            if token.expose_secret().len() < 16 {
                return Err(invalid(
                    "auth.api-token (AICS_API_TOKEN)",
                    "use at least 16 characters",
                ));
            }
        }
        self.approvals.compile().map_err(|e| ConfigError::Invalid {
            key: "approvals",
            message: e.to_string(),
        })?;
        let (provider_name, provider) = self.provider()?;
        let providers = self.providers()?;
        Ok(ConsoleConfig {
            provider_name,
            provider,
            providers,
            engine,
            max_tool_loops,
            tool_timeout,
            demo_token_delay: Duration::from_millis(self.demo.token_delay_ms),
            demo_faults: self.demo.faults,
            api_token: self
                .auth
                .api_token
                .clone()
                .filter(|t| !t.expose_secret().is_empty()),
            api_token_role,
            session_ttl: Duration::from_secs(u64::from(self.auth.session_hours.max(1)) * 3600),
            session_idle: Duration::from_secs(
                u64::from(self.auth.session_idle_minutes.max(1)) * 60,
            ),
            sessions_per_user: self.auth.sessions_per_user.max(1),
            cookie_secure: self.secure_transport(DEFAULT_ADDR),
            throttle: self.throttle()?,
            streams_per_user: self.http.streams_per_user.max(1),
            customer_streams_per_address: self.http.customer_streams_per_address.max(1),
            api_streams: u32::try_from(self.http.max_connections)
                .unwrap_or(u32::MAX)
                .max(1),
            lease,
            sweep_interval,
            durability,
            tool_delay: Duration::from_millis(self.demo.tool_delay_ms),
            approvals: self.approvals.clone(),
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
                cfg.api_key = Some(key.expose_secret().to_owned());
            }
            if let Some(model) = &llm.model {
                cfg.model = model.clone();
            }
            if let Some(max_tokens) = llm.max_tokens {
                cfg.max_tokens = Some(max_tokens);
            }
            if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
                return Err(invalid(
                    "llm.base-url (AICS_LLM_BASE_URL)",
                    format!(
                        "expected an http(s) URL, found {:?}",
                        aics_openai::redact_url(&cfg.base_url)
                    ),
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

    /// Every provider of `[llm.providers]`, each OpenAI-compatible one
    /// checked (an http(s) base URL, a model). The default's overrides
    /// (`llm.base-url`, …) apply to the default only ([`Self::provider`]);
    /// the console puts it over its entry here.
    fn providers(&self) -> Result<BTreeMap<String, ProviderConfig>, ConfigError> {
        const KEY: &str = "llm.providers";
        for (name, provider) in &self.llm.providers {
            let well_formed = !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if !well_formed {
                return Err(invalid(
                    KEY,
                    format!("{name:?}: a provider's name is 1-64 letters, digits, '-', '_' or '.'"),
                ));
            }
            let ProviderConfig::Openai(cfg) = provider else {
                continue;
            };
            if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
                return Err(invalid(
                    KEY,
                    format!(
                        "{name}: expected an http(s) base_url, found {:?}",
                        aics_openai::redact_url(&cfg.base_url)
                    ),
                ));
            }
            if cfg.model.trim().is_empty() {
                return Err(invalid(KEY, format!("{name}: name the model to call")));
            }
        }
        Ok(self.llm.providers.clone())
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
