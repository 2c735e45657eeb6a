//! The audit log: who did what to whom, and when. Account changes,
//! approval decisions and turn cancellations are written here by the
//! service ([`Database::record_audit`]); supervisors read and export it.

use aics_types::{AuditEntry, Timestamp};

use crate::{now, Database, DbError};

/// Which audit lines to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// At most this many, newest first.
    pub limit: u32,
    /// Only lines older than this id (paging back).
    pub before_id: Option<i64>,
    /// Only this actor's.
    pub actor: Option<String>,
    /// Only actions starting with this (`account.` for all account changes).
    pub action_prefix: Option<String>,
}

#[derive(sqlx::FromRow)]
struct AuditRow {
    id: i64,
    at: Timestamp,
    actor: String,
    action: String,
    subject: String,
    detail: String,
}

/// Text longer than this is cut (with an ellipsis) before it is stored.
const MAX_FIELD_CHARS: usize = 500;

fn clip(text: &str) -> String {
    // Control characters would break the CSV export's lines and cannot be
    // stored by PostgreSQL when NUL: replace them.
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.chars().count() > MAX_FIELD_CHARS {
        let mut cut: String = clean.chars().take(MAX_FIELD_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        clean
    }
}

impl Database {
    /// Appends one line to the audit log and returns it.
    #[tracing::instrument(skip_all, fields(actor, action))]
    pub async fn record_audit(
        &self,
        actor: &str,
        action: &str,
        subject: &str,
        detail: &str,
    ) -> Result<AuditEntry, DbError> {
        tracing::Span::current().record("actor", actor);
        tracing::Span::current().record("action", action);
        let (actor, action, subject, detail) =
            (clip(actor), clip(action), clip(subject), clip(detail));
        // PostgreSQL keeps microseconds: the entry returned is the one stored.
        let at = chrono::SubsecRound::trunc_subsecs(now(), 6);
        let (id,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "INSERT INTO audit_log (at, actor, action, subject, detail) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(at)
        .bind(&actor)
        .bind(&action)
        .bind(&subject)
        .bind(&detail)
        .fetch_one(pool)
        .await?);
        Ok(AuditEntry {
            id,
            at,
            actor,
            action,
            subject,
            detail,
        })
    }

    /// Audit lines, newest first.
    #[tracing::instrument(skip_all)]
    pub async fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, DbError> {
        let prefix = query.action_prefix.as_deref().map(|p| {
            format!(
                "{}%",
                p.replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            )
        });
        let rows = with_pool!(self, pool => sqlx::query_as::<_, AuditRow>(
            "SELECT id, at, actor, action, subject, detail FROM audit_log \
             WHERE ($1 IS NULL OR id < $1) AND ($2 IS NULL OR actor = $2) \
               AND ($3 IS NULL OR action LIKE $3 ESCAPE '\\') \
             ORDER BY id DESC LIMIT $4",
        )
        .bind(query.before_id)
        .bind(query.actor.as_deref())
        .bind(prefix.as_deref())
        .bind(i64::from(query.limit.max(1)))
        .fetch_all(pool)
        .await?);
        Ok(rows
            .into_iter()
            .map(|r| AuditEntry {
                id: r.id,
                at: r.at,
                actor: r.actor,
                action: r.action,
                subject: r.subject,
                detail: r.detail,
            })
            .collect())
    }
}
