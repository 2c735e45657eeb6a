//! The aics console service: the one place where the engine, the database
//! and the live event hubs meet, and the owner of every turn.
//!
//! Both the JSON/SSE routes of the server and the Leptos server functions of
//! the UI are thin: they authenticate, then make one call on [`Console`].
//! Dependencies point one way: `types, graph ← agent ← db ← service ←
//! app(ssr) ← server`; this crate calls db's stores and never writes SQL.
//! docs/ARCHITECTURE.md walks through the life of a turn.
//!
//! # Layout
//! - `lib.rs` (this file): [`Console`], how it is built, readiness,
//!   shutdown, id checks.
//! - [`config`]: [`ConsoleConfig`], what a console is built with.
//! - [`error`]: [`ServiceError`] and its one HTTP mapping.
//! - [`auth`]: sign-in (throttled per username and client address),
//!   server-side sessions behind the session cookie (idle timeout, cap per
//!   user, sign out everywhere), the scripts' bearer token.
//! - `accounts`: named accounts managed by supervisors, changing one's own
//!   password.
//! - [`audit`]: the audit log ([`Console::record_audit`] for every
//!   component), its listing and CSV export.
//! - [`streams`]: open event streams per user (and per customer address):
//!   the caps, and their end when the user's sessions, or the session a
//!   stream was opened with, end.
//! - `conversations`: listing, creating and reading conversations; their
//!   live events with replay.
//! - `turns`: the turn lifecycle — starting a turn (one run per
//!   conversation, across instances), the run's task with its lease, storing
//!   and announcing its outcome, cancelling, recovering runs whose owner died.
//! - `takeover`: human takeover — handling changes over the one table of
//!   transitions, agents' replies, internal notes, the waiting count.
//! - `channel`: the customer channel — link tokens, the start page's
//!   customer, the customer's view, messages and filtered live events.
//! - `approvals`: listing and deciding approvals; the last decision of a
//!   paused run resumes it, exactly once.
//! - `webhook`: the JSON post for each new approval, retried in the
//!   background, never delaying a turn.
//! - `deadlines`: approvals whose deadline passed end as expired (exactly
//!   once across instances) and their turns resume through the same path.
//! - `hub`: each conversation's live events, sequenced, with a replay
//!   buffer; the approvals stream; the relay between instances.
//! - [`metrics`]: the Prometheus series the service records.
//! - `providers`: the provider registry — every configured provider built
//!   at start-up, the default for live turns, the background reachability
//!   probe.
//! - [`observe`]: the [`TurnObserver`] hook told about each stored run
//!   segment of a turn (aics-otel's OpenTelemetry export).
//! - `studio`: forks of a stored turn from one of its checkpoints, run
//!   apart from the conversation with simulated side effects.
//! - `replays`: replay sets of stored turns and their replay runs, one
//!   fork per turn, queued behind the studio's cap; the summary of what
//!   changed.
//! - `housekeeping`: the periodic purge of ended sessions and quiet
//!   sign-in counts.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod audit;
pub mod auth;
pub mod config;
pub mod error;
pub mod metrics;
pub mod observe;
pub mod streams;

mod accounts;
mod approvals;
mod channel;
mod conversations;
mod deadlines;
mod housekeeping;
mod hub;
mod overview;
mod providers;
mod replays;
mod studio;
mod takeover;
mod turns;
mod webhook;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aics_agent::model::ChatModel;
use aics_agent::policy::ApprovalPolicy;
use aics_agent::tool::{Tool, ToolContext, ToolError, ToolRegistry};
use aics_agent::{SupportAgent, SupportConfig};
use aics_db::{Database, SqlCheckpointer, SqlMemoryStore};
use aics_openai::ProviderConfig;
use aics_types::ModelInfo;
use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

pub use aics_db::AuditQuery;
pub use auth::{
    bearer_token, ClientAddr, Credential, SignedIn, API_USER, SECURE_SESSION_COOKIE, SESSION_COOKIE,
};
pub use channel::CustomerStream;
pub use config::{ConsoleConfig, ThrottlePolicy};
pub use conversations::{EventStream, LiveEvent};
pub use error::ServiceError;
pub use hub::EventId;
pub use metrics::OpenStreamGuard;
pub use observe::{SegmentFailure, SegmentKind, TurnObserver, TurnSegment};
pub use overview::{DEFAULT_OVERVIEW_DAYS, MAX_OVERVIEW_DAYS};
pub use streams::StreamPermit;
pub use turns::TurnOutcome;

use hub::EventHub;

/// The console: engine, database, hubs and configuration. Cheap to clone
/// (one `Arc` inside); provided to Leptos as context and to Axum as state.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    agent: SupportAgent,
    /// The approval policy the agent judges calls with; its deadlines.
    policy: Arc<ApprovalPolicy>,
    /// Where new approvals are posted, when configured.
    webhook: Option<webhook::Webhook>,
    /// The model the agent answers with, for drafts outside a turn.
    model: Arc<dyn ChatModel>,
    hub: EventHub,
    config: ConsoleConfig,
    model_info: ModelInfo,
    /// Names this process as the owner of the runs it leases, and in
    /// relayed events.
    instance_id: String,
    api_token_hash: Option<String>,
    /// The tasks of the runs this process runs, by graph execution id, so a
    /// cancellation stops its own at once.
    tasks: Mutex<HashMap<String, AbortHandle>>,
    /// Turns running in background tasks, for a graceful shutdown.
    in_flight: AtomicUsize,
    idle: Notify,
    /// Open event streams per user.
    streams: Arc<streams::StreamLimiter>,
    /// The customer channel's message and start rates.
    chat_limits: channel::ChatLimits,
    /// The agents the trace studio's forks run on, one per provider.
    studio: studio::Studio,
    /// Every configured provider; the default answers live turns.
    providers: providers::Providers,
    /// Told about each stored run segment (the OpenTelemetry export).
    observer: Option<Arc<dyn TurnObserver>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("instance_id", &self.inner.instance_id)
            .field("model", &self.inner.model_info)
            .field("backend", &self.inner.db.backend())
            .finish()
    }
}

impl Console {
    /// Builds the console over a migrated database: the configured model,
    /// the support agent over the SQL checkpointer, memory store and tools,
    /// the event hub (with its relay on PostgreSQL), and the recovery sweep
    /// that picks up the runs a dead process left.
    pub async fn new(db: Database, config: ConsoleConfig) -> Result<Self, ServiceError> {
        Self::build(db, config, None).await
    }

    /// [`Console::new`], with `observer` told about each run segment of a
    /// turn once its outcome is stored (`observe`).
    pub async fn with_observer(
        db: Database,
        config: ConsoleConfig,
        observer: Arc<dyn TurnObserver>,
    ) -> Result<Self, ServiceError> {
        Self::build(db, config, Some(observer)).await
    }

    #[tracing::instrument(skip_all, fields(backend = db.backend(), provider = %config.provider_name))]
    async fn build(
        db: Database,
        config: ConsoleConfig,
        observer: Option<Arc<dyn TurnObserver>>,
    ) -> Result<Self, ServiceError> {
        let providers = providers::Providers::build(&config)?;
        let model = providers.default_provider().model.clone();
        let protocol = config.provider.protocol();
        let policy = Arc::new(
            config
                .approvals
                .compile()
                .map_err(|e| ServiceError::Invalid(format!("invalid configuration: {e}")))?,
        );
        let support = SupportConfig {
            engine: config.engine,
            max_tool_loops: config.max_tool_loops,
            protocol,
            tool_timeout: config.tool_timeout,
            durability: config.durability,
            approvals: policy.clone(),
            ..SupportConfig::default()
        };
        let tools = delayed(aics_db::support_tools(&db), config.tool_delay);
        if let Some(unknown) = policy.tools().find(|t| tools.get(t).is_none()) {
            return Err(ServiceError::Invalid(format!(
                "invalid configuration: approvals: there is no tool named {unknown:?}"
            )));
        }
        let studio = studio::Studio::new(&providers, &tools, &db, &support);
        let agent = SupportAgent::new(
            model.clone(),
            tools,
            Arc::new(SqlCheckpointer::new(db.clone())),
            Arc::new(SqlMemoryStore::new(db.clone())),
            support,
        );
        let model_info = ModelInfo {
            provider: match config.provider {
                ProviderConfig::Demo => "demo".into(),
                ProviderConfig::Openai(_) => "openai".into(),
            },
            model: config.provider.model_name(),
            engine: config.engine.as_str().to_owned(),
            max_tool_loops: config.max_tool_loops,
        };
        db.check_schema().await?;
        let instance_id = uuid::Uuid::new_v4().simple().to_string();
        let hub = EventHub::start(&db, &instance_id).await?;
        if let Database::Sqlite(_) = db {
            // One process owns a SQLite file: a run still marked running is
            // a leftover of a crash, and recovery may take it at once.
            let expired = db.expire_all_leases().await?;
            if expired > 0 {
                tracing::warn!(runs = expired, "recovering runs left by an earlier process");
            }
        }
        let webhook = webhook::Webhook::new(
            config.approvals.webhook_url.as_deref(),
            config.approvals.public_url.as_deref(),
        );
        let api_token_hash = config
            .api_token
            .as_ref()
            .filter(|t| !secrecy::ExposeSecret::expose_secret(*t).is_empty())
            .map(Console::api_token_digest);
        let console = Self {
            inner: Arc::new(Inner {
                db,
                agent,
                policy,
                webhook,
                model,
                hub,
                config,
                model_info,
                instance_id,
                api_token_hash,
                tasks: Mutex::default(),
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
                streams: Arc::default(),
                chat_limits: channel::ChatLimits::default(),
                studio,
                providers,
                observer,
            }),
        };
        console.inner.providers.start_probes();
        console.start_recovery().await;
        housekeeping::start(&console);
        Ok(console)
    }

    /// The database (for the server's readiness check and tests).
    pub fn db(&self) -> &Database {
        &self.inner.db
    }

    /// The configuration the console was built with.
    pub fn config(&self) -> &ConsoleConfig {
        &self.inner.config
    }

    /// The model and engine answering, as the console shows them.
    pub fn model_info(&self) -> ModelInfo {
        self.inner.model_info.clone()
    }

    /// Every configured provider (name, kind, model, default, price) and
    /// whether its server answered the start-up probe; staff read it.
    pub fn providers(&self) -> Vec<aics_types::ProviderInfo> {
        self.inner.providers.infos()
    }

    /// This process's name as the owner of runs (tests and logs).
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// Whether the database answers.
    pub async fn ready(&self) -> Result<(), ServiceError> {
        self.inner.db.ping().await.map_err(ServiceError::from)
    }

    /// Waits up to `grace` for turns running in the background to end, then
    /// gives up the leases of those still running, so another instance (or
    /// this one, restarted) resumes them from their last checkpoint at once.
    pub async fn shutdown(&self, grace: Duration) {
        let wait = async {
            loop {
                let idle = self.inner.idle.notified();
                if self.inner.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(grace, wait).await.is_err() {
            let running = self.inner.in_flight.load(Ordering::SeqCst);
            match self.inner.db.release_leases(&self.inner.instance_id).await {
                Ok(n) => tracing::warn!(
                    running,
                    released = n,
                    "shutting down with turns still running; they resume from their checkpoints"
                ),
                Err(e) => {
                    tracing::error!(error = %e, "could not give up the leases of running turns")
                }
            }
        }
    }

    /// Counts a background task until the guard drops.
    fn track(&self) -> InFlight {
        self.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.inner.clone())
    }

    async fn refresh_pending_gauge(&self) {
        match self.inner.db.pending_approval_count().await {
            Ok(n) => metrics::set_pending_approvals(n),
            Err(e) => tracing::warn!(error = %e, "could not count pending approvals"),
        }
    }
}

struct InFlight(Arc<Inner>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The tools, each waiting `delay` before it runs (a fault-test hook; the
/// registry as it is when `delay` is zero).
fn delayed(tools: ToolRegistry, delay: Duration) -> ToolRegistry {
    if delay.is_zero() {
        return tools;
    }
    let mut slowed = ToolRegistry::new();
    for name in tools.names() {
        if let Some(tool) = tools.get(name) {
            slowed.register(Arc::new(Delayed {
                tool: tool.clone(),
                delay,
            }));
        }
    }
    slowed
}

struct Delayed {
    tool: Arc<dyn Tool>,
    delay: Duration,
}

#[async_trait]
impl Tool for Delayed {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn description(&self) -> &str {
        self.tool.description()
    }
    fn parameters(&self) -> serde_json::Value {
        self.tool.parameters()
    }
    async fn call(
        &self,
        ctx: &ToolContext,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, ToolError> {
        tokio::time::sleep(self.delay).await;
        self.tool.call(ctx, args).await
    }
}

/// 400 unless `id` is a well-formed session id.
pub(crate) fn check_session_id(id: &str) -> Result<(), ServiceError> {
    aics_types::validate_session_id(id).map_err(ServiceError::Invalid)
}

/// 400 unless `id` looks like an id we hand out (graph execution and
/// tool-call ids): 1–128 characters of `[A-Za-z0-9_.:-]`.
pub(crate) fn check_id(what: &str, id: &str) -> Result<(), ServiceError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(ServiceError::Invalid(format!("{what} is malformed")))
    }
}
