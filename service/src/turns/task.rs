//! A run's task: it announces the run, forwards the engine's events to the
//! conversation's streams, holds the run's lease while the engine works
//! (and stops the run the moment the lease is gone: cancelled, or taken
//! over), then hands the outcome to `finish`.

use std::collections::HashMap;
use std::time::Instant;

use aics_agent::{Decision, EventSink, TurnInput};
use aics_types::{AgentEvent, ChatTurnTraceResult};
use tokio::sync::{mpsc, oneshot};

use super::finish::Ended;
use super::TurnOutcome;
use crate::error::ServiceError;
use crate::hub::Publisher;
use crate::observe::{SegmentKind, SegmentStart};
use crate::{metrics, Console};

/// What a run's task does.
pub(crate) enum Job {
    /// A new turn, whose events take `event_epoch` (taken with its run);
    /// the first of them is the customer's `message` as stored, so every
    /// page on the conversation (the console, the customer's) shows it
    /// live, in order, wherever it was written.
    New {
        input: TurnInput,
        event_epoch: u64,
        message: aics_types::ChatMessage,
        /// Its caller answers with the trace's JSON (`POST /api/chat`):
        /// the outcome keeps the text the database stored. Other callers
        /// (a stream, nobody) do without it.
        answer_json: bool,
    },
    /// Continue a paused turn with the supervisors' decisions.
    Resume(HashMap<String, Decision>),
    /// Continue a turn whose owner died, from its last checkpoint (with the
    /// decisions taken so far, for a turn that was resuming).
    Recover(HashMap<String, Decision>),
}

/// The outcome of a run's task, for whoever started it.
pub(crate) type Done = oneshot::Receiver<Result<TurnOutcome, ServiceError>>;

impl Console {
    /// Runs `job` as run `graph_execution_id` of conversation `session_id`
    /// in a background task this process tracks (and can abort).
    pub(crate) fn spawn_run(
        &self,
        session_id: String,
        graph_execution_id: String,
        job: Job,
    ) -> Done {
        let (tx, rx) = oneshot::channel();
        let console = self.clone();
        let guard = self.track();
        let id = graph_execution_id.clone();
        // Held while spawning, so the task's own removal comes after.
        let mut tasks = self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let handle = tokio::spawn(async move {
            let _guard = guard;
            let outcome = console.run_task(&session_id, &id, job).await;
            console
                .inner
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            let _ = tx.send(outcome);
        });
        tasks.insert(graph_execution_id, handle.abort_handle());
        rx
    }

    #[tracing::instrument(skip_all, fields(session_id, graph_execution_id))]
    async fn run_task(
        &self,
        session_id: &str,
        graph_execution_id: &str,
        job: Job,
    ) -> Result<TurnOutcome, ServiceError> {
        let span = tracing::Span::current();
        span.record("session_id", session_id);
        span.record("graph_execution_id", graph_execution_id);
        let publisher = match &job {
            Job::New { event_epoch, .. } => {
                self.inner
                    .hub
                    .publisher_at(session_id, Some(graph_execution_id), *event_epoch)
            }
            _ => {
                self.inner
                    .hub
                    .publisher(session_id, Some(graph_execution_id))
                    .await
            }
        };
        let new = matches!(job, Job::New { .. });
        let answer_json = matches!(
            job,
            Job::New {
                answer_json: true,
                ..
            }
        );
        let recovering = matches!(job, Job::Recover(_));
        // What a run counted (and reported) before a pause was counted then.
        let previous = if new {
            None
        } else {
            self.stored_trace(graph_execution_id).await
        };
        let counted = previous
            .as_ref()
            .map(metrics::Counted::before)
            .unwrap_or_default();
        let kind = match &job {
            Job::New { .. } => SegmentKind::New,
            Job::Resume(_) => SegmentKind::Resumed,
            Job::Recover(_) => SegmentKind::Recovered,
        };
        let start = SegmentStart::new(kind, previous.as_ref());
        if let Job::New { message, .. } = &job {
            publisher.publish(AgentEvent::Message {
                message: Box::new(message.clone()),
            });
        }
        publisher.publish(AgentEvent::TurnStart {
            session_id: session_id.to_owned(),
            graph_execution_id: graph_execution_id.to_owned(),
            resumed: !new,
        });
        let (sink, rx) = EventSink::channel();
        let forward = tokio::spawn(forward(rx, publisher.clone()));
        let agent = &self.inner.agent;
        let run = async {
            match job {
                Job::New { input, .. } => agent.run_turn(graph_execution_id, input, &sink).await,
                Job::Resume(decisions) | Job::Recover(decisions) => {
                    agent.resume(graph_execution_id, decisions, &sink).await
                }
            }
        };
        let result = tokio::select! {
            result = run => Some(result),
            () = self.hold_lease(graph_execution_id) => None,
        };
        // The sink is gone with the run: the forwarder drains and ends, so
        // every event precedes the ones `finish` publishes.
        drop(sink);
        let _ = forward.await;
        let Some(result) = result else {
            tracing::warn!("the run is no longer this instance's; stopped it");
            return Err(ServiceError::Conflict(
                "the turn was stopped: it was cancelled or taken over".into(),
            ));
        };
        let ended = Ended {
            session_id,
            recovering,
            answer_json,
            resumed: !new,
            counted: &counted,
            start: &start,
        };
        self.finish_run(&publisher, graph_execution_id, result, ended)
            .await
    }

    /// Renews the run's lease every third of its length; returns when the
    /// lease is lost (the run was cancelled or taken over), or when the
    /// database stayed unreachable for a whole lease (another instance may
    /// have taken it over by then).
    async fn hold_lease(&self, graph_execution_id: &str) {
        let lease = self.inner.config.lease;
        let mut failing_since: Option<Instant> = None;
        loop {
            tokio::time::sleep(lease / 3).await;
            match self
                .inner
                .db
                .renew_lease(graph_execution_id, &self.inner.instance_id, lease)
                .await
            {
                Ok(true) => failing_since = None,
                Ok(false) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "could not renew a run's lease");
                    if failing_since.get_or_insert_with(Instant::now).elapsed() >= lease {
                        return;
                    }
                }
            }
        }
    }

    /// The stored trace of a run that paused before (what the metrics and
    /// the observer were told then).
    async fn stored_trace(&self, graph_execution_id: &str) -> Option<ChatTurnTraceResult> {
        self.inner.db.turn(graph_execution_id).await.ok().flatten()
    }
}

/// Events forwarded at once, at most.
const FORWARD_BATCH: usize = 256;

/// Forwards the engine's events to the conversation's streams, all those
/// waiting at once: the engine emits many between two polls of this task
/// (a reply's tokens), and the hub takes them under one lock.
async fn forward(mut rx: mpsc::UnboundedReceiver<AgentEvent>, publisher: Publisher) {
    // Grown as batches need: a streamed reply's tokens come one at a
    // time, and a thousand turns in flight each hold theirs.
    let mut batch = Vec::new();
    while rx.recv_many(&mut batch, FORWARD_BATCH).await > 0 {
        publisher.publish_all(batch.drain(..));
    }
}
