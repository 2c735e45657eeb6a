//! Approval deadlines. When a paused turn stores its approvals, each gets
//! the deadline of the rule that held it (stored with the approval, so it
//! holds across restarts and instances). The recovery sweep of every
//! instance (`turns/recovery.rs`, the one loop) also ends the approvals
//! whose deadline passed: one conditional update per approval decides which
//! instance ends it, exactly once; that instance writes `approval.expire`
//! to the audit log, announces it like a decision, hands the conversation
//! to a human when the rule says `handover`, and resumes the turn through
//! the one path decisions take (`Console::resume_if_decided`), so the model
//! receives the stated reason as a rejection and tells the customer.

use aics_db::NewApproval;
use aics_types::{AgentEvent, ChatTurnTraceResult, HandlingAction, PendingToolCall};

use crate::Console;

/// Approvals ended per sweep at most.
const EXPIRE_BATCH: u32 = 100;

impl Console {
    /// The approval to store for a call the policy held in `trace`, with
    /// its rule's deadline.
    pub(crate) fn new_approval(
        &self,
        trace: &ChatTurnTraceResult,
        call: &PendingToolCall,
    ) -> NewApproval {
        let deadline = self
            .inner
            .policy
            .rule(&call.rule)
            .and_then(|r| r.deadline.clone());
        // Whole milliseconds: what every database stores exactly, so the
        // trace and the approval show the same instant.
        let expires_at = deadline.as_ref().map(|d| {
            let at = chrono::Utc::now()
                + chrono::Duration::from_std(d.after).unwrap_or(chrono::Duration::days(30));
            chrono::SubsecRound::trunc_subsecs(at, 3)
        });
        NewApproval {
            id: call.id.clone(),
            session_id: trace.session_id.clone(),
            graph_execution_id: trace.graph_execution_id.clone(),
            tool: call.tool.clone(),
            proposed_args: call.args.clone(),
            policy_reason: call.reason.clone(),
            rule: call.rule.clone(),
            expires_at,
            on_expiry: deadline.as_ref().map(|d| d.on_expiry.as_str().to_owned()),
            expiry_reason: deadline.map(|d| d.reason),
        }
    }

    /// One deadline sweep: ends the approvals whose deadline passed (those
    /// this instance won) and resumes their turns. Returns how many it ended.
    pub async fn expire_approvals(&self) -> usize {
        let expired = match self
            .inner
            .db
            .expire_due_approvals(chrono::Utc::now(), EXPIRE_BATCH)
            .await
        {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!(error = %e, "could not expire approvals");
                return 0;
            }
        };
        let n = expired.len();
        for aics_db::ExpiredApproval {
            approval,
            on_expiry,
        } in expired
        {
            let reason = approval.decision_reason.clone().unwrap_or_default();
            tracing::info!(approval_id = %approval.id, on_expiry, "an approval's deadline passed");
            self.audit(
                "system",
                "approval.expire",
                &approval.id,
                &format!(
                    "{on_expiry}: {} (rule {}, conversation {}): {reason}",
                    approval.tool, approval.rule, approval.session_id
                ),
            )
            .await;
            if on_expiry == "handover" {
                // Into the "waiting for human" queue through the one table of
                // transitions, as `escalate_to_human` does; a conversation a
                // person already holds stays theirs.
                match self
                    .inner
                    .db
                    .change_handling(&approval.session_id, HandlingAction::Escalate, "system")
                    .await
                {
                    Ok(change) => {
                        let publisher = self.inner.hub.publisher(&approval.session_id, None).await;
                        publisher.publish(AgentEvent::Message {
                            message: Box::new(change.line),
                        });
                        publisher.publish(AgentEvent::Handling {
                            handling: change.summary.handling,
                            assignee: change.summary.assignee.clone(),
                        });
                    }
                    Err(aics_db::DbError::Conflict(_)) => {}
                    Err(e) => tracing::warn!(error = %e, "could not hand the conversation over"),
                }
            }
            let event = AgentEvent::ApprovalDecided(Box::new(aics_types::ApprovalDecided {
                id: approval.id.clone(),
                approved: false,
                reason: Some(reason),
                decided_by: Some("system".into()),
            }));
            self.inner.hub.publish_approvals(event.clone());
            self.inner
                .hub
                .publisher(&approval.session_id, None)
                .await
                .publish(event);
            if let Err(e) = self
                .resume_if_decided(&approval.session_id, &approval.graph_execution_id)
                .await
            {
                // The recovery sweep resumes a decided run that did not.
                tracing::warn!(error = %e, "could not resume a turn after a deadline");
            }
        }
        if n > 0 {
            self.refresh_pending_gauge().await;
        }
        n
    }
}
