//! The CSV export of decided approvals (supervisors): filtered by status
//! and decision date, RFC 4180 and formula-safe like the audit log's.

use aics_types::{Approval, ApprovalStatus, UserInfo};
use serde_json::Value;

use super::args_diff;
use crate::error::ServiceError;
use crate::Console;

impl Console {
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
        // A form sends empty fields for the filters left open.
        let from = given(from)
            .map(|t| parse_when("from", t, false))
            .transpose()?;
        let to = given(to).map(|t| parse_when("to", t, true)).transpose()?;
        let list = self
            .inner
            .db
            .decided_approvals_between(status, from, to, crate::audit::MAX_AUDIT_LINES)
            .await?;
        Ok(approvals_to_csv(&list))
    }
}

/// A filter's text, when there is one.
fn given(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
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
