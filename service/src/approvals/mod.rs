//! Approvals: the supervisors' queue and their decisions. A decision is
//! taken exactly once (the database's conditional update); when it was the
//! last pending call of a paused run, the run is claimed (exactly one
//! instance turns it from paused to resuming) and resumed with every
//! decision. Should this process die in between, the recovery sweep finds
//! the decided run and resumes it.
//!
//! - `detail`: the `approval.decide` audit line (rule, edits, reason).
//! - `export`: the CSV export of decided approvals.

mod detail;
mod export;

use aics_agent::policy::{Evidence, Verdict};
use aics_types::{AgentEvent, Approval, ApprovalDecision, ApprovalStatus, MessageRole, UserInfo};

pub(crate) use detail::args_diff;
use detail::decision_detail;

use crate::error::ServiceError;
use crate::turns::{decisions_of, Job};
use crate::{check_id, Console};

/// How many decided approvals the audit list shows.
const DECIDED_LIMIT: u32 = 200;

impl Console {
    /// Pending approvals (oldest first, with context) or decided ones
    /// (newest first: the audit log).
    pub async fn list_approvals(&self, pending: bool) -> Result<Vec<Approval>, ServiceError> {
        Ok(if pending {
            self.inner.db.list_pending_approvals().await?
        } else {
            self.inner.db.decided_approvals(DECIDED_LIMIT).await?
        })
    }

    /// Supervisors only: how many approvals wait (the header's live count).
    pub async fn pending_approval_count(&self, user: &UserInfo) -> Result<i64, ServiceError> {
        self.require_supervisor(user)?;
        Ok(self.inner.db.pending_approval_count().await?)
    }

    /// One approval by its tool-call id.
    pub async fn approval(&self, approval_id: &str) -> Result<Approval, ServiceError> {
        check_id("approval id", approval_id)?;
        self.inner
            .db
            .approval(approval_id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("approval {approval_id} does not exist")))
    }

    /// Supervisors only: decides a pending call; resumes the paused turn
    /// when this was its last pending call. 409 when already decided.
    #[tracing::instrument(skip_all, fields(approval_id, user = %user.username, approve = decision.approve))]
    pub async fn decide(
        &self,
        user: &UserInfo,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<Approval, ServiceError> {
        tracing::Span::current().record("approval_id", approval_id);
        self.require_supervisor(user)?;
        check_id("approval id", approval_id)?;
        if let Some(args) = &decision.args {
            if decision.approve && !args.is_object() {
                return Err(ServiceError::Invalid(
                    "edited args must be a JSON object".into(),
                ));
            }
        }
        if let Some(reason) = &decision.reason {
            if reason.chars().count() > 2000 {
                return Err(ServiceError::Invalid(
                    "a reason is at most 2000 characters".into(),
                ));
            }
        }
        let db = &self.inner.db;
        // 404 before anything else, so a wrong id never reads as a wrong token.
        let Some(current) = db.approval(approval_id).await? else {
            return Err(ServiceError::NotFound(format!(
                "approval {approval_id} does not exist"
            )));
        };
        self.check_edit(&current, &decision)?;
        let decided = db
            .decide_approval(approval_id, &decision, &user.username)
            .await?;
        tracing::info!(status = decided.status.as_str(), "approval decided");
        self.audit(
            &user.username,
            "approval.decide",
            &decided.id,
            &decision_detail(&decided),
        )
        .await;
        let event = AgentEvent::ApprovalDecided(Box::new(aics_types::ApprovalDecided {
            id: decided.id.clone(),
            approved: decided.status == ApprovalStatus::Approved,
            reason: decided.decision_reason.clone(),
            decided_by: decided.decided_by.clone(),
        }));
        self.inner.hub.publish_approvals(event.clone());
        self.inner
            .hub
            .publisher(&decided.session_id, None)
            .await
            .publish(event);
        self.refresh_pending_gauge().await;
        self.resume_if_decided(&decided.session_id, &decided.graph_execution_id)
            .await?;
        Ok(decided)
    }

    /// 400 when a supervisor's edit turns a pending call into one the policy
    /// refuses (judged on the customer's words of the conversation, as the
    /// turn will judge it again before it runs): nothing changes.
    fn check_edit(
        &self,
        current: &Approval,
        decision: &ApprovalDecision,
    ) -> Result<(), ServiceError> {
        if !decision.approve || current.status != ApprovalStatus::Pending {
            return Ok(());
        }
        let Some(edited) = decision
            .args
            .as_ref()
            .filter(|a| **a != current.proposed_args)
        else {
            return Ok(());
        };
        let words = current
            .context
            .iter()
            .filter(|m| m.role == MessageRole::Customer)
            .map(|m| m.content.as_str());
        match self
            .inner
            .policy
            .judge(&current.tool, edited, &Evidence::of_words(None, words))
        {
            Verdict::Refuse(hold) => Err(ServiceError::Invalid(format!(
                "the edited call is not allowed (approval rule {}): {}",
                hold.rule, hold.reason
            ))),
            _ => Ok(()),
        }
    }

    /// Resumes a paused run once none of its calls waits any more; exactly
    /// one caller (on any instance, or the recovery sweep) wins the claim.
    /// `true` when this one did.
    pub(crate) async fn resume_if_decided(
        &self,
        session_id: &str,
        graph_execution_id: &str,
    ) -> Result<bool, ServiceError> {
        let db = &self.inner.db;
        let approvals = db.approvals_of_execution(graph_execution_id).await?;
        if approvals
            .iter()
            .any(|a| a.status == ApprovalStatus::Pending)
        {
            return Ok(false);
        }
        if !db
            .claim_paused_run(
                graph_execution_id,
                &self.inner.instance_id,
                self.inner.config.lease,
            )
            .await?
        {
            tracing::info!(graph_execution_id, "the run is resumed elsewhere");
            return Ok(false);
        }
        let decisions = decisions_of(approvals);
        tracing::info!(
            graph_execution_id,
            calls = decisions.len(),
            "resuming the turn"
        );
        drop(self.spawn_run(
            session_id.to_owned(),
            graph_execution_id.to_owned(),
            Job::Resume(decisions),
        ));
        Ok(true)
    }
}
