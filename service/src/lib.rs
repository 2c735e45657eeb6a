//! The aics console service: the one place where the engine, the database
//! and the live event hubs meet.
//!
//! Both the JSON/SSE routes of the server and the Leptos server functions of
//! the UI are thin: they authenticate, then make one call on [`Console`].
//! Dependencies point one way: `types ← agent ← db ← service ← app(ssr) ← server`.
//!
//! # Layout
//! - `lib.rs` (this file): [`Console`], how it is built, conversations,
//!   model info, readiness and shutdown.
//! - [`config`]: [`ConsoleConfig`], what a console is built with.
//! - [`error`]: [`ServiceError`] and its one HTTP mapping.
//! - [`auth`]: sign-in, server-side sessions behind the `aics_session`
//!   cookie, the scripts' bearer token.
//! - `turns`: starting a turn (serialized per conversation, across
//!   instances), forwarding its events, storing its trace, resuming.
//! - `approvals`: listing and deciding approvals; the last decision of a
//!   paused turn resumes it, exactly once.
//! - `hub`: per-conversation and approvals broadcast channels, relayed
//!   between instances with PostgreSQL `LISTEN/NOTIFY`.
//! - [`metrics`]: the Prometheus series the service records.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod auth;
pub mod config;
pub mod error;
pub mod metrics;

mod approvals;
mod hub;
mod turns;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aics_agent::demo::{DemoConfig, DemoModel};
use aics_agent::model::ChatModel;
use aics_agent::{PlanProtocol, SupportAgent, SupportConfig};
use aics_db::{Database, SqlCheckpointer, SqlMemoryStore};
use aics_openai::{OpenAiCompatible, ProviderConfig};
use aics_types::{AgentEvent, ConversationDetail, ConversationSummary, ModelInfo};
use tokio::sync::{broadcast, Notify};

pub use auth::{credential, Credential, SESSION_COOKIE};
pub use config::ConsoleConfig;
pub use error::ServiceError;
pub use metrics::OpenStreamGuard;

use hub::EventHub;

/// How many conversations the list shows.
const CONVERSATION_LIST_LIMIT: u32 = 200;

/// The console: engine, database, hubs and configuration. Cheap to clone
/// (one `Arc` inside); provided to Leptos as context and to Axum as state.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    db: Database,
    agent: SupportAgent,
    hub: EventHub,
    config: ConsoleConfig,
    model_info: ModelInfo,
    /// Names this process in turn locks and relayed events.
    instance_id: String,
    api_token_hash: Option<String>,
    /// Turns running in background tasks, for a graceful shutdown.
    in_flight: AtomicUsize,
    idle: Notify,
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
    /// and the event hub (with its relay on PostgreSQL).
    #[tracing::instrument(skip_all, fields(backend = db.backend(), provider = %config.provider_name))]
    pub async fn new(db: Database, config: ConsoleConfig) -> Result<Self, ServiceError> {
        let (model, protocol): (Arc<dyn ChatModel>, PlanProtocol) = match &config.provider {
            ProviderConfig::Demo => (
                Arc::new(DemoModel::new(DemoConfig {
                    token_delay: config.demo_token_delay,
                    message_faults: config.demo_faults,
                    ..DemoConfig::default()
                })),
                PlanProtocol::Native,
            ),
            ProviderConfig::Openai(openai) => {
                let model = OpenAiCompatible::new(openai.clone()).map_err(|e| {
                    ServiceError::Invalid(format!("the OpenAI-compatible provider: {e}"))
                })?;
                (Arc::new(model), openai.protocol)
            }
        };
        let support = SupportConfig {
            engine: config.engine,
            max_tool_loops: config.max_tool_loops,
            protocol,
            tool_timeout: config.tool_timeout,
            ..SupportConfig::default()
        };
        let agent = SupportAgent::new(
            model,
            aics_db::support_tools(&db),
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
            // One process owns a SQLite file: a running lock is a leftover
            // of a crash. Paused turns keep theirs and stay resumable.
            let cleared = db.clear_running_locks().await?;
            if cleared > 0 {
                tracing::warn!(cleared, "released turn locks left by an earlier run");
            }
        }
        let api_token_hash = config
            .api_token
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(Console::api_token_digest);
        let console = Self {
            inner: Arc::new(Inner {
                db,
                agent,
                hub,
                config,
                model_info,
                instance_id,
                api_token_hash,
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
            }),
        };
        console.refresh_pending_gauge().await;
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

    /// Whether the database answers.
    pub async fn ready(&self) -> Result<(), ServiceError> {
        self.inner.db.ping().await.map_err(ServiceError::from)
    }

    /// Conversations, most recently active first.
    pub async fn list_conversations(&self) -> Result<Vec<ConversationSummary>, ServiceError> {
        Ok(self
            .inner
            .db
            .list_conversations(CONVERSATION_LIST_LIMIT)
            .await?)
    }

    /// A new, empty conversation with a server-made id.
    #[tracing::instrument(skip_all)]
    pub async fn create_conversation(&self) -> Result<ConversationSummary, ServiceError> {
        let session_id = format!("c-{}", uuid::Uuid::new_v4().simple());
        Ok(self
            .inner
            .db
            // Untitled until its first message names it.
            .ensure_conversation(&session_id, None, "")
            .await?)
    }

    /// A conversation with its messages and turn traces, oldest first.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn conversation(&self, session_id: &str) -> Result<ConversationDetail, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        check_session_id(session_id)?;
        self.inner
            .db
            .conversation_detail(session_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!("conversation {session_id} does not exist"))
            })
    }

    /// Subscribes to a conversation's live events (on every instance).
    pub fn subscribe(&self, session_id: &str) -> broadcast::Receiver<AgentEvent> {
        self.inner.hub.subscribe(session_id)
    }

    /// Subscribes to `approval_required` and `approval_decided` of every conversation.
    pub fn subscribe_approvals(&self) -> broadcast::Receiver<AgentEvent> {
        self.inner.hub.subscribe_approvals()
    }

    /// Waits up to `grace` for turns running in the background to end.
    /// Each finished node is checkpointed, so a turn cut off here can be
    /// inspected; its conversation lock expires after `stale_lock_after`.
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
            tracing::warn!(
                running = self.inner.in_flight.load(Ordering::SeqCst),
                "shutting down with turns still running; they are checkpointed"
            );
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
