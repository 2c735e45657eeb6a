//! The audit log as the service writes and supervisors read it:
//! [`Console::record_audit`] is the one call for every component (account
//! changes here, approval decisions and turn cancellations in theirs).

use aics_db::AuditQuery;
use aics_types::{AuditEntry, UserInfo};

use crate::error::ServiceError;
use crate::Console;

/// The most lines one read or export returns.
pub const MAX_AUDIT_LINES: u32 = 10_000;

impl Console {
    /// Appends a line to the audit log: `actor` did `action` (a dotted name,
    /// e.g. `approval.decide`, `turn.cancel`) to `subject`; `detail` is a
    /// short sentence. Control characters are replaced, long text is cut.
    pub async fn record_audit(
        &self,
        actor: &str,
        action: &str,
        subject: &str,
        detail: &str,
    ) -> Result<AuditEntry, ServiceError> {
        Ok(self
            .inner
            .db
            .record_audit(actor, action, subject, detail)
            .await?)
    }

    /// [`Console::record_audit`] for callers whose own work already
    /// succeeded: a failure to write is logged (with the line), not
    /// returned, so it cannot undo the change it describes.
    pub(crate) async fn audit(&self, actor: &str, action: &str, subject: &str, detail: &str) {
        if let Err(e) = self.record_audit(actor, action, subject, detail).await {
            tracing::error!(error = %e, actor, action, subject, detail, "could not write the audit log");
        }
    }

    /// Supervisors only: audit lines, newest first.
    pub async fn list_audit(
        &self,
        user: &UserInfo,
        query: &AuditQuery,
    ) -> Result<Vec<AuditEntry>, ServiceError> {
        self.require_supervisor(user)?;
        if let Some(actor) = &query.actor {
            aics_types::validate_text("actor", actor).map_err(ServiceError::Invalid)?;
        }
        if let Some(action) = &query.action_prefix {
            aics_types::validate_text("action", action).map_err(ServiceError::Invalid)?;
        }
        let query = AuditQuery {
            limit: query.limit.clamp(1, MAX_AUDIT_LINES),
            ..query.clone()
        };
        Ok(self.inner.db.list_audit(&query).await?)
    }

    /// Supervisors only: the same lines as CSV (RFC 4180, a header row).
    pub async fn audit_csv(
        &self,
        user: &UserInfo,
        query: &AuditQuery,
    ) -> Result<String, ServiceError> {
        let lines = self.list_audit(user, query).await?;
        Ok(to_csv(&lines))
    }
}

/// RFC 4180 CSV of audit lines. Every field is quoted; a field that a
/// spreadsheet would run as a formula (`= + - @`, tab, CR) gets a leading
/// apostrophe, so an account named `=HYPERLINK(…)` stays text.
pub fn to_csv(lines: &[AuditEntry]) -> String {
    let mut out = String::from("id,at,actor,action,subject,detail\r\n");
    for line in lines {
        let at = line.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let fields = [
            line.id.to_string(),
            at,
            line.actor.clone(),
            line.action.clone(),
            line.subject.clone(),
            line.detail.clone(),
        ];
        let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&row.join(","));
        out.push_str("\r\n");
    }
    out
}

/// One RFC 4180 field, quoted, formula-safe (see [`to_csv`]).
pub(crate) fn csv_field(value: &str) -> String {
    let guarded = if value.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{value}")
    } else {
        value.to_owned()
    };
    format!("\"{}\"", guarded.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let at = "2026-12-02T10:00:00Z".parse().unwrap();
        let csv = to_csv(&[AuditEntry {
            id: 7,
            at,
            actor: "supervisor".into(),
            action: "account.create".into(),
            subject: "=HYPERLINK(\"x\")".into(),
            detail: "role \"agent\", ok".into(),
        }]);
        let mut lines = csv.split("\r\n");
        assert_eq!(lines.next(), Some("id,at,actor,action,subject,detail"));
        assert_eq!(
            lines.next(),
            Some(
                "\"7\",\"2026-12-02T10:00:00.000Z\",\"supervisor\",\"account.create\",\
                 \"'=HYPERLINK(\"\"x\"\")\",\"role \"\"agent\"\", ok\""
            )
        );
    }
}
