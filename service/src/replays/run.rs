//! The task of one replay run, and the sweep of runs whose process died.
//!
//! The task forks the run's turns one after the other through
//! [`Console::fork_turn`] — from each turn's first checkpoint whose next
//! node is `agent`, with no edit — and records each fork's id (or why the
//! turn could not be forked) on its item. The studio runs at most a few
//! forks per process and refuses more with [`ServiceError::Busy`]; the task
//! then waits and tries again, backing off, so a set of 200 turns queues
//! rather than fails. Once every turn is forked it waits for the forks to
//! end and marks the run `done`. All along a heartbeat renews the run's
//! lease; if the lease is lost (the sweep ended the run) the task stops.
//!
//! A process that dies leaves its run `running` with a lease that runs
//! out: the housekeeping sweep ([`sweep`]) ends it `interrupted` and its
//! turns not yet forked as errors, in one transaction; forks it had started
//! are ended by the studio's own sweep, and the report counts a fork still
//! running in an interrupted run as an error.

use std::time::Duration;

use aics_agent::support::nodes::AGENT;
use aics_agent::{EngineKind, PlanProtocol};
use aics_types::{ForkRequest, UserInfo};

use super::ForkOptions;
use crate::{Console, Inner, ServiceError};

/// How long a replay run's lease lasts; the task renews it every third.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// How often the task looks whether its forks have ended.
const POLL: Duration = Duration::from_millis(200);

/// The first and the longest wait before asking again for a fork slot.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Starts the task of replay run `run_id`, run as `user`.
pub(crate) fn spawn(console: &Console, run_id: String, user: UserInfo, options: ForkOptions) {
    let console = console.clone();
    tokio::spawn(async move {
        let db = &console.inner.db;
        let owner = console.inner.instance_id.clone();
        let work = replay_all(&console, &run_id, &user, &options);
        tokio::pin!(work);
        let mut beat = tokio::time::interval(LEASE / 3);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        beat.tick().await;
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                _ = beat.tick() => match db.renew_replay_lease(&run_id, &owner, LEASE).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(replay_run = %run_id, "replay run lost its lease; stopping");
                        return;
                    }
                    Err(e) => tracing::warn!(replay_run = %run_id, error = %e, "could not renew a replay run's lease"),
                },
            }
        };
        match outcome {
            // A run that could not go on stays `running` without a
            // heartbeat: the sweep ends it as interrupted.
            Err(e) => {
                tracing::error!(replay_run = %run_id, error = %e, "replay run stopped");
            }
            Ok(()) => match db.finish_replay_run(&run_id, &owner).await {
                Ok(true) => tracing::info!(replay_run = %run_id, "replay run done"),
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(replay_run = %run_id, error = %e, "could not end a replay run")
                }
            },
        }
    });
}

/// Forks every item not yet forked, then waits until no fork of the run
/// runs.
async fn replay_all(
    console: &Console,
    run_id: &str,
    user: &UserInfo,
    options: &ForkOptions,
) -> Result<(), ServiceError> {
    let db = &console.inner.db;
    let items = db.replay_run_items(run_id).await?;
    for item in items
        .iter()
        .filter(|i| i.fork_id.is_none() && i.error.is_none())
    {
        let still_ours = match replay_one(console, user, &item.graph_execution_id, options).await {
            Ok(fork_id) => {
                db.set_replay_item_fork(run_id, item.position, &fork_id)
                    .await?
            }
            Err(why) => db.fail_replay_item(run_id, item.position, &why).await?,
        };
        if !still_ours {
            // The sweep ended this item (and so the run): stop forking.
            return Ok(());
        }
    }
    while db.running_replay_forks(run_id).await? > 0 {
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

/// Forks one turn from the checkpoint before its agent first answers,
/// waiting for a free fork slot; the fork's id, or why it could not start.
async fn replay_one(
    console: &Console,
    user: &UserInfo,
    graph_execution_id: &str,
    options: &ForkOptions,
) -> Result<String, String> {
    let checkpoints = console
        .inner
        .db
        .list_checkpoints(graph_execution_id)
        .await
        .map_err(|e| {
            tracing::warn!(turn = graph_execution_id, error = %e, "could not read a turn's checkpoints");
            "could not read the turn's checkpoints".to_owned()
        })?;
    let Some(before_agent) = checkpoints
        .iter()
        .find(|c| c.next.as_deref() == Some(AGENT))
    else {
        return Err("the turn has no checkpoint before its agent answered".into());
    };
    let request = fork_request(&before_agent.checkpoint_id, options);
    let mut wait = FIRST_BACKOFF;
    loop {
        match console.fork_turn(user, graph_execution_id, &request).await {
            Ok(run) => return Ok(run.id),
            Err(ServiceError::Busy) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(e.to_api_error().message),
        }
    }
}

/// The fork of one turn: from `checkpoint_id`, nothing edited, with the
/// run's options.
fn fork_request(checkpoint_id: &str, options: &ForkOptions) -> ForkRequest {
    ForkRequest {
        checkpoint_id: checkpoint_id.to_owned(),
        provider: options.provider.clone(),
        engine: options.engine.map(|e| EngineKind::as_str(e).to_owned()),
        protocol: options.protocol.map(|p| PlanProtocol::as_str(p).to_owned()),
        ..ForkRequest::default()
    }
}

/// The housekeeping sweep: replay runs whose lease ran out (their process
/// died or stalled) end `interrupted`, their turns not yet forked as
/// errors.
pub(crate) async fn sweep(inner: &Inner) {
    match inner
        .db
        .interrupt_stale_replay_runs(
            chrono::Utc::now(),
            "the replay's server stopped before this turn was forked",
        )
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            replay_runs = n,
            "replay runs left running marked interrupted"
        ),
        Err(e) => tracing::warn!(error = %e, "could not sweep replay runs left running"),
    }
}
