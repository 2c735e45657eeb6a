//! The trace studio's forks: a supervisor starts a new run from one
//! checkpoint of a stored turn, optionally with an edited last customer
//! message, engine, protocol or provider, and compares it with the original.
//!
//! A fork never touches the customer's conversation. It runs on a support
//! agent of its own ([`Studio`]: one per configured provider, so a fork may
//! answer with another model than the turn; its trace and LLM-call records
//! name that model and are priced with that provider's price table) over
//! an in-memory checkpointer seeded with a
//! copy of the checkpoint, with no observer (no live events), a memory
//! store that recalls but never remembers, and tools whose side effects are
//! simulated: the read-only tools run for real, `ticket_create` and
//! `escalate_to_human` answer `{"simulated": true, …}` without writing. It
//! has no row in `runs` (it holds nothing, so a busy conversation can be
//! forked) and creates no approval: a call the policy holds ends the fork
//! paused for approval, the call and its rule in the stored trace.
//!
//! The fork's one row in `studio_runs` ([`aics_db::studio`]) is its only
//! record; it ends `done` or `failed` by a conditional update, from the
//! fork's task, its timeout, or the housekeeping sweep ([`sweep`]) of forks
//! whose process died.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use aics_agent::memory::{MemoryError, MemoryStore};
use aics_agent::model::Message;
use aics_agent::tool::{Tool, ToolContext, ToolError, ToolRegistry};
use aics_agent::{AgentError, EngineKind, PlanProtocol, SupportAgent, SupportConfig, SupportState};
use aics_db::{Database, NewStudioRun, SqlMemoryStore};
use aics_graph::{Checkpoint, Checkpointer, MemoryCheckpointer, NoObserver, StateJson};
use aics_types::{ForkRequest, StudioRun, UserInfo, MAX_FORK_MESSAGE_CHARS};
use async_trait::async_trait;
use serde_json::{json, Value};

use crate::providers::{Provider, Providers};
use crate::{check_id, Console, Inner, ServiceError};

/// How long a fork may run before it is ended as failed.
pub const FORK_TIMEOUT: Duration = Duration::from_secs(120);

/// A fork still `running` this long after it started lost its process;
/// the housekeeping sweep ends it as failed.
const STALE_AFTER: Duration = Duration::from_secs(FORK_TIMEOUT.as_secs() + 60);

/// How many forks one process runs at once; more are refused (503).
const MAX_RUNNING_FORKS: usize = 4;

/// The tools whose side effects a fork simulates.
const SIMULATED: [&str; 2] = ["ticket_create", "escalate_to_human"];

/// The support agents forks run on (one per provider, by name), and
/// their shared in-memory checkpoints.
pub(crate) struct Studio {
    agents: BTreeMap<String, SupportAgent>,
    checkpoints: Arc<MemoryCheckpointer>,
    /// One permit per fork running in this process.
    running: Arc<tokio::sync::Semaphore>,
}

impl Studio {
    /// The fork agents: for each provider, its model with the live
    /// agent's configuration (and the provider's protocol), simulated side
    /// effects and memories that are read, never written.
    pub(crate) fn new(
        providers: &Providers,
        tools: &ToolRegistry,
        db: &Database,
        config: &SupportConfig,
    ) -> Self {
        let mut simulated = ToolRegistry::new();
        for name in tools.names() {
            if let Some(tool) = tools.get(name) {
                if SIMULATED.contains(&name) {
                    simulated.register(Arc::new(Simulated(tool.clone())));
                } else {
                    simulated.register(tool.clone());
                }
            }
        }
        let checkpoints = Arc::new(MemoryCheckpointer::new());
        let agents = providers
            .iter()
            .map(|provider| {
                let agent = SupportAgent::new(
                    provider.model.clone(),
                    simulated.clone(),
                    checkpoints.clone(),
                    Arc::new(RecallOnly(SqlMemoryStore::new(db.clone()))),
                    SupportConfig {
                        protocol: provider.config.protocol(),
                        ..config.clone()
                    },
                );
                (provider.name.clone(), agent)
            })
            .collect();
        Self {
            agents,
            checkpoints,
            running: Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING_FORKS)),
        }
    }
}

impl Console {
    /// Supervisors only: starts a fork of turn `graph_execution_id` from
    /// checkpoint `request.checkpoint_id` and returns it `running`; the
    /// fork runs in a task of its own (see the module docs), on
    /// `request.provider` (by default the provider whose model answered
    /// the turn, else the default one). 400 for a malformed request, an
    /// unknown provider or a checkpoint the turn ended at, 404 for an
    /// unknown turn or checkpoint, 503 when this process already runs
    /// `MAX_RUNNING_FORKS` forks.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn fork_turn(
        &self,
        user: &UserInfo,
        graph_execution_id: &str,
        request: &ForkRequest,
    ) -> Result<StudioRun, ServiceError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        self.require_supervisor(user)?;
        check_id("graphExecutionId", graph_execution_id)?;
        check_id("checkpointId", &request.checkpoint_id)?;
        let message = request.message.as_deref().map(check_message).transpose()?;
        let engine = request.engine.as_deref().map(parse_engine).transpose()?;
        let protocol = request
            .protocol
            .as_deref()
            .map(parse_protocol)
            .transpose()?;
        let providers = &self.inner.providers;
        let asked = request
            .provider
            .as_deref()
            .map(|name| providers.named(name))
            .transpose()?;
        let source = self
            .inner
            .db
            .checkpoint(graph_execution_id, &request.checkpoint_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!(
                    "turn {graph_execution_id} has no checkpoint {}",
                    request.checkpoint_id
                ))
            })?;
        if source.next.is_none() {
            return Err(ServiceError::Invalid(
                "the turn ended at this checkpoint: fork from an earlier step".into(),
            ));
        }
        let mut state: SupportState = source
            .state
            .decode()
            .map_err(|e| ServiceError::Internal(format!("checkpoint state: {e}")))?;
        let id = aics_graph::new_id();
        state.graph_execution_id = id.clone();
        if let Some(text) = &message {
            let Some(last) = state
                .messages
                .iter_mut()
                .rev()
                .find_map(|m| match &mut **m {
                    Message::User { content } => Some(content),
                    _ => None,
                })
            else {
                return Err(ServiceError::Invalid(
                    "this checkpoint has no customer message to edit".into(),
                ));
            };
            last.clone_from(text);
            state.user_message.clone_from(text);
        }
        if let Some(engine) = engine {
            state.engine = engine;
        }
        // The provider that answered the turn, and the one the fork runs on.
        let original = providers.answering(&state.model);
        let provider = asked.unwrap_or(original).clone();
        if let Some(protocol) = protocol {
            state.protocol = protocol;
        } else if !Arc::ptr_eq(&provider, original) {
            // Another model is asked the way its provider is configured.
            state.protocol = provider.config.protocol();
        }
        state.model = provider.model.name();
        let (checkpoint_id, created_at) = aics_graph::stamp();
        let seed = Checkpoint {
            thread_id: id.as_str().into(),
            checkpoint_id,
            parent_id: Some(source.checkpoint_id.clone()),
            step: source.step,
            node: source.node.clone(),
            next: source.next.clone(),
            path: source.path.clone(),
            state: StateJson::encode(&state)
                .map_err(|e| ServiceError::Internal(format!("fork state: {e}")))?,
            pending_interrupts: source.pending_interrupts.clone(),
            created_at,
        };
        let permit = self
            .inner
            .studio
            .running
            .clone()
            .try_acquire_owned()
            .map_err(|_| ServiceError::Busy)?;
        let run = self
            .inner
            .db
            .insert_studio_run(&NewStudioRun {
                id: &id,
                source_graph_execution_id: graph_execution_id,
                source_checkpoint_id: &source.checkpoint_id,
                created_by: &user.username,
                message: message.as_deref(),
                engine: engine.map(EngineKind::as_str),
                protocol: protocol.map(PlanProtocol::as_str),
                provider: Some(&provider.name),
            })
            .await?;
        self.audit(
            &user.username,
            "studio.fork",
            graph_execution_id,
            &format!(
                "fork {id} from step {} ({}) on provider {}{}",
                source.step,
                source.node,
                provider.name,
                if message.is_some() {
                    ", customer message edited"
                } else {
                    ""
                }
            ),
        )
        .await;
        self.spawn_fork(seed, provider, permit);
        Ok(run)
    }

    /// Supervisors only: the forks of a turn, newest first.
    pub async fn list_forks(
        &self,
        user: &UserInfo,
        graph_execution_id: &str,
    ) -> Result<Vec<StudioRun>, ServiceError> {
        self.require_supervisor(user)?;
        check_id("graphExecutionId", graph_execution_id)?;
        Ok(self.inner.db.studio_runs_of(graph_execution_id).await?)
    }

    /// Supervisors only: one fork.
    pub async fn fork(&self, user: &UserInfo, id: &str) -> Result<StudioRun, ServiceError> {
        self.require_supervisor(user)?;
        check_id("fork id", id)?;
        self.inner
            .db
            .studio_run(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("fork {id} does not exist")))
    }

    /// Runs the fork seeded by `seed` on `provider`'s agent in a task,
    /// within [`FORK_TIMEOUT`], and stores how it ended (each LLM call priced
    /// with the price table of the provider that made it); a panic in the
    /// run ends it as failed.
    fn spawn_fork(
        &self,
        seed: Checkpoint,
        provider: Arc<Provider>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        let inner = self.inner.clone();
        let id = seed.thread_id.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let run = {
                let inner = inner.clone();
                let id = id.clone();
                let name = provider.name.clone();
                tokio::spawn(async move {
                    let studio = &inner.studio;
                    let Some(agent) = studio.agents.get(&name) else {
                        return Ok(Err(AgentError::UnknownRun(format!("provider {name}"))));
                    };
                    if let Err(e) = studio.checkpoints.put_owned(seed).await {
                        return Ok(Err(AgentError::Checkpoint(e)));
                    }
                    let outcome = tokio::time::timeout(
                        FORK_TIMEOUT,
                        agent.resume(&id, HashMap::new(), &NoObserver),
                    )
                    .await;
                    studio.checkpoints.remove_thread(&id);
                    outcome
                })
            };
            let ended = match run.await {
                Ok(Ok(Ok(mut trace))) => {
                    inner.providers.price_fork(&provider, &mut trace);
                    inner.db.finish_studio_run(&id, &trace).await
                }
                Ok(Ok(Err(e))) => {
                    tracing::warn!(fork = %id, error = %e, "fork failed");
                    inner
                        .db
                        .fail_studio_run(&id, "the fork failed to run")
                        .await
                }
                Ok(Err(_)) => {
                    inner.studio.checkpoints.remove_thread(&id);
                    let msg = format!("the fork did not end within {} s", FORK_TIMEOUT.as_secs());
                    inner.db.fail_studio_run(&id, &msg).await
                }
                Err(e) => {
                    tracing::error!(fork = %id, error = %e, "fork task panicked");
                    inner.studio.checkpoints.remove_thread(&id);
                    inner
                        .db
                        .fail_studio_run(&id, "the fork stopped unexpectedly")
                        .await
                }
            };
            if let Err(e) = ended {
                tracing::error!(fork = %id, error = %e, "could not store how a fork ended");
            }
        });
    }
}

/// The housekeeping sweep: forks left `running` by a process that died
/// end as failed (a fork on a live instance ends within its timeout,
/// before it is stale).
pub(crate) async fn sweep(inner: &Inner) {
    let stale = chrono::Utc::now()
        - chrono::Duration::from_std(STALE_AFTER).unwrap_or(chrono::Duration::minutes(3));
    match inner
        .db
        .fail_stale_studio_runs(stale, "the fork's server stopped before it ended")
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::warn!(forks = n, "forks left running marked failed"),
        Err(e) => tracing::warn!(error = %e, "could not sweep forks left running"),
    }
}

fn check_message(text: &str) -> Result<String, ServiceError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ServiceError::Invalid("the edited message is empty".into()));
    }
    if text.chars().count() > MAX_FORK_MESSAGE_CHARS {
        return Err(ServiceError::Invalid(format!(
            "the edited message has more than {MAX_FORK_MESSAGE_CHARS} characters"
        )));
    }
    aics_types::validate_text("message", text).map_err(ServiceError::Invalid)?;
    Ok(text.to_owned())
}

fn parse_engine(s: &str) -> Result<EngineKind, ServiceError> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| ServiceError::Invalid(format!("engine {s:?} is not graph or linear")))
}

fn parse_protocol(s: &str) -> Result<PlanProtocol, ServiceError> {
    serde_json::from_value(Value::String(s.to_owned()))
        .map_err(|_| ServiceError::Invalid(format!("protocol {s:?} is not native or json_plan")))
}

/// A tool whose side effect a fork simulates: the arguments are checked
/// against nothing and nothing is written; the model sees that it was
/// simulated.
struct Simulated(Arc<dyn Tool>);

#[async_trait]
impl Tool for Simulated {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn parameters(&self) -> Value {
        self.0.parameters()
    }
    async fn call(&self, _ctx: &ToolContext, args: Value) -> Result<Value, ToolError> {
        Ok(json!({
            "simulated": true,
            "tool": self.0.name(),
            "arguments": args,
            "note": "a fork in the trace studio: nothing was written",
        }))
    }
}

/// The customer's memories for the prompt; what the fork asks to
/// remember is dropped.
struct RecallOnly(SqlMemoryStore);

#[async_trait]
impl MemoryStore for RecallOnly {
    async fn remember(&self, _customer_id: &str, _text: &str) -> Result<(), MemoryError> {
        Ok(())
    }
    async fn recall(&self, customer_id: &str) -> Result<Vec<String>, MemoryError> {
        self.0.recall(customer_id).await
    }
}
