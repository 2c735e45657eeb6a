//! Approvals: the supervisors' queue and their decisions. A decision is
//! taken exactly once (the database's conditional update); when it was the
//! last pending call of a paused run, the run is claimed (exactly one
//! instance turns it from paused to resuming) and resumed with every
//! decision. Should this process die in between, the recovery sweep finds
//! the decided run and resumes it.

use aics_types::{AgentEvent, Approval, ApprovalDecision, ApprovalStatus, UserInfo};
use serde_json::Value;

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

    /// Supervisors only: decided approvals as CSV (RFC 4180, formula-safe,
    /// newest first, up to 10 000), optionally of one `status` and decided
    /// from `from` to `to` (dates `YYYY-MM-DD`, both included, or RFC 3339
    /// times).
    pub async fn approvals_csv(
        &self,
        user: &UserInfo,
        status: Option<&str>,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<String, ServiceError> {
        self.require_supervisor(user)?;
        let status = match status.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(name) => match ApprovalStatus::parse(name) {
                Some(ApprovalStatus::Pending) | None => {
                    return Err(ServiceError::Invalid(format!(
                        "status must be approved, rejected, expired or cancelled, not {name:?}"
                    )))
                }
                found => found,
            },
        };
        let from = from.map(|t| parse_when("from", t, false)).transpose()?;
        let to = to.map(|t| parse_when("to", t, true)).transpose()?;
        let list = self
            .inner
            .db
            .decided_approvals_between(status, from, to, crate::audit::MAX_AUDIT_LINES)
            .await?;
        Ok(approvals_to_csv(&list))
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
        if db.approval(approval_id).await?.is_none() {
            return Err(ServiceError::NotFound(format!(
                "approval {approval_id} does not exist"
            )));
        }
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
        let event = AgentEvent::ApprovalDecided {
            id: decided.id.clone(),
            approved: decided.status == ApprovalStatus::Approved,
            reason: decided.decision_reason.clone(),
            decided_by: decided.decided_by.clone(),
        };
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

/// The audit line of a decision: how, the tool and the rule, what the
/// supervisor changed in the arguments (each changed key, proposed → run),
/// and the reason.
pub(crate) fn decision_detail(a: &Approval) -> String {
    let mut out = format!("{}: {} (rule {})", a.status.as_str(), a.tool, rule_name(a));
    if let Some(edited) = a.approved_args.as_ref().filter(|e| **e != a.proposed_args) {
        out.push_str("; edited ");
        out.push_str(&args_diff(&a.proposed_args, edited));
    }
    if let Some(reason) = a.decision_reason.as_deref().filter(|r| !r.is_empty()) {
        out.push_str("; reason: ");
        out.push_str(reason);
    }
    out
}

fn rule_name(a: &Approval) -> &str {
    if a.rule.is_empty() {
        "-"
    } else {
        &a.rule
    }
}

/// `key: old → new` for each key that differs (`∅` when absent).
pub(crate) fn args_diff(before: &Value, after: &Value) -> String {
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return format!("{before} → {after}");
    };
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    let show = |v: Option<&Value>| v.map_or_else(|| "∅".to_owned(), Value::to_string);
    keys.into_iter()
        .filter(|k| b.get(*k) != a.get(*k))
        .map(|k| format!("{k}: {} → {}", show(b.get(k)), show(a.get(k))))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::args_diff;

    #[test]
    fn the_diff_names_each_changed_key() {
        let d = args_diff(
            &json!({"category": "inquiry", "summary": "s", "gone": 1}),
            &json!({"category": "complaint", "summary": "s", "new": true}),
        );
        assert_eq!(
            d,
            r#"category: "inquiry" → "complaint", gone: 1 → ∅, new: ∅ → true"#
        );
    }
}

/// `YYYY-MM-DD` (a day: its start, or with `end` the next day's start) or
/// an RFC 3339 time.
fn parse_when(what: &str, text: &str, end: bool) -> Result<aics_types::Timestamp, ServiceError> {
    let text = text.trim();
    if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let day = if end {
            day.succ_opt().unwrap_or(day)
        } else {
            day
        };
        return Ok(day.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|_| {
            ServiceError::Invalid(format!(
                "{what} must be a date like 2026-12-01 or an RFC 3339 time"
            ))
        })
}

/// The CSV of decided approvals: who decided what, when, under which rule,
/// the arguments proposed and run, and why.
pub(crate) fn approvals_to_csv(list: &[Approval]) -> String {
    use crate::audit::csv_field;
    let mut out = String::from(
        "id,decidedAt,status,decidedBy,tool,rule,sessionId,proposedArgs,approvedArgs,edits,reason,policyReason,createdAt\r\n",
    );
    let at = |t: &aics_types::Timestamp| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    for a in list {
        let edits = a
            .approved_args
            .as_ref()
            .filter(|e| **e != a.proposed_args)
            .map(|e| args_diff(&a.proposed_args, e))
            .unwrap_or_default();
        let fields = [
            a.id.clone(),
            a.decided_at.as_ref().map(at).unwrap_or_default(),
            a.status.as_str().to_owned(),
            a.decided_by.clone().unwrap_or_default(),
            a.tool.clone(),
            a.rule.clone(),
            a.session_id.clone(),
            a.proposed_args.to_string(),
            a.approved_args
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            edits,
            a.decision_reason.clone().unwrap_or_default(),
            a.policy_reason.clone(),
            at(&a.created_at),
        ];
        let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&row.join(","));
        out.push_str("\r\n");
    }
    out
}
