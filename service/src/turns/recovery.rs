//! Recovery: every instance sweeps, at start-up and then periodically, for
//! runs nobody runs any more, and takes each over exactly once (a
//! conditional update decides between instances):
//! - a run whose lease expired (its owner died mid-turn) continues from its
//!   last checkpoint; tool calls carry idempotency keys, so a step that runs
//!   again repeats no side effect; after `max_attempts` starts it fails with
//!   a note instead (a turn that kills its process must not loop);
//! - a paused run all of whose calls were decided (the decision landed, its
//!   resume never started) is resumed with those decisions;
//! - the same loop ends approvals whose deadline passed (`deadlines.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use aics_agent::Decision;
use aics_types::{Approval, ApprovalStatus};

use super::finish::INTERRUPTED_NOTE;
use super::Job;
use crate::Console;

/// Runs looked at per sweep and kind.
const SWEEP_BATCH: u32 = 100;

/// The decisions taken on a run's calls, as the engine resumes with them.
pub(crate) fn decisions_of(approvals: Vec<Approval>) -> HashMap<String, Decision> {
    approvals
        .into_iter()
        .filter_map(|a| {
            let decision = match a.status {
                ApprovalStatus::Approved => Decision::Approve {
                    args: a.approved_args.filter(|v| !v.is_null()),
                },
                ApprovalStatus::Rejected | ApprovalStatus::Expired => Decision::Reject {
                    reason: a.decision_reason.unwrap_or_default(),
                },
                ApprovalStatus::Pending | ApprovalStatus::Cancelled => return None,
            };
            Some((a.id, decision))
        })
        .collect()
}

impl Console {
    /// Sweeps once, then every `sweep_interval` for as long as the console
    /// lives. The first sweep runs before `Console::new` returns: a
    /// restarted instance has taken over what it can before it serves, and
    /// nothing the caller does next races with it. Each sweep also recounts
    /// the pending approvals for the gauge: other instances change them
    /// too, and a turn that never paused does not recount them.
    pub(crate) async fn start_recovery(&self) {
        self.sweep().await;
        let inner = Arc::downgrade(&self.inner);
        let every = self.inner.config.sweep_interval;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(inner) = inner.upgrade() else { return };
                Console { inner }.sweep().await;
            }
        });
    }

    /// One pass of the recovery loop.
    async fn sweep(&self) {
        self.recover_runs().await;
        self.expire_approvals().await;
        self.refresh_pending_gauge().await;
    }

    /// One recovery sweep; returns how many runs it took over.
    pub async fn recover_runs(&self) -> usize {
        let db = &self.inner.db;
        let mut taken = 0;
        match db.expired_runs(SWEEP_BATCH).await {
            Ok(expired) => {
                for run in expired {
                    match db
                        .take_over_run(
                            &run.graph_execution_id,
                            &self.inner.instance_id,
                            self.inner.config.lease,
                        )
                        .await
                    {
                        Ok(Some(run)) => {
                            taken += 1;
                            self.recover(run).await;
                        }
                        Ok(None) => {} // another instance was faster
                        Err(e) => tracing::warn!(error = %e, "could not take over a run"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "recovery could not list expired runs"),
        }
        match db.decided_paused_runs(SWEEP_BATCH).await {
            Ok(paused) => {
                for run in paused {
                    tracing::warn!(
                        graph_execution_id = %run.graph_execution_id,
                        "a decided turn was never resumed; resuming it"
                    );
                    match self
                        .resume_if_decided(&run.session_id, &run.graph_execution_id)
                        .await
                    {
                        Ok(true) => taken += 1,
                        Ok(false) => {}
                        Err(e) => tracing::warn!(error = %e, "could not resume a decided turn"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "recovery could not list paused runs"),
        }
        taken
    }

    /// Continues a run taken over from a dead owner, or gives it up.
    async fn recover(&self, run: aics_types::RunInfo) {
        let id = run.graph_execution_id.clone();
        tracing::warn!(graph_execution_id = %id, attempt = run.attempts, "recovering a turn whose owner stopped");
        if run.attempts > self.inner.config.max_attempts {
            let publisher = self.inner.hub.publisher(&run.session_id, Some(&id)).await;
            if let Err(e) = self.fail_run(&publisher, &id, INTERRUPTED_NOTE).await {
                tracing::error!(error = %e, "could not give up a turn");
            }
            return;
        }
        let decisions = match self.inner.db.approvals_of_execution(&id).await {
            Ok(approvals) => decisions_of(approvals),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a recovered turn's decisions");
                return; // its lease runs out again; the next sweep retries
            }
        };
        // Its outcome is stored and announced like any other run's.
        drop(self.spawn_run(run.session_id, id, Job::Recover(decisions)));
    }
}
