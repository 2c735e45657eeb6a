//! Approvals: sensitive tool calls held for a supervisor.
//!
//! An approval is keyed by its tool-call id. Its token is handed out once
//! (in the turn's trace) and stored only as a SHA-256 hash; a decision made
//! with it clears the hash, so the token works once. A decision happens
//! exactly once: the update only matches a row that is still pending, so two
//! racing decisions cannot both win. The row keeps who decided, when, why,
//! how, and the arguments proposed and approved: it is the audit record.

use aics_types::{Approval, ApprovalDecision, ApprovalStatus, Timestamp};
use serde_json::Value;
use sqlx::types::Json;

use crate::tokens::hash_token;
use crate::{now, parse_stored, Database, DbError};

/// How many customer messages an approval shows as context.
const CONTEXT_MESSAGES: u32 = 6;

/// A sensitive call to hold for a supervisor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewApproval {
    /// The tool-call id.
    pub id: String,
    pub session_id: String,
    pub graph_execution_id: String,
    pub tool: String,
    pub proposed_args: Value,
    /// Why the policy holds the call.
    pub policy_reason: String,
    /// The name of the approval rule that held it.
    pub rule: String,
    /// When nobody decided by then, the deadline sweep ends it.
    pub expires_at: Option<Timestamp>,
    /// `reject` or `handover` (with `expires_at`).
    pub on_expiry: Option<String>,
    /// The reason the model receives when the deadline rejects the call.
    pub expiry_reason: Option<String>,
}

/// An approval the deadline sweep expired, with what should follow.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpiredApproval {
    pub approval: Approval,
    /// `reject` or `handover`.
    pub on_expiry: String,
}

#[derive(sqlx::FromRow)]
struct ApprovalRow {
    id: String,
    session_id: String,
    graph_execution_id: String,
    tool: String,
    proposed_args: Json<Value>,
    approved_args: Option<Json<Value>>,
    policy_reason: String,
    status: String,
    created_at: Timestamp,
    decided_by: Option<String>,
    decided_at: Option<Timestamp>,
    decision_reason: Option<String>,
    rule: String,
    expires_at: Option<Timestamp>,
    on_expiry: Option<String>,
}

impl TryFrom<ApprovalRow> for Approval {
    type Error = DbError;
    fn try_from(r: ApprovalRow) -> Result<Self, DbError> {
        Ok(Approval {
            status: parse_stored("approval status", &r.status, ApprovalStatus::parse)?,
            id: r.id,
            session_id: r.session_id,
            graph_execution_id: r.graph_execution_id,
            tool: r.tool,
            proposed_args: r.proposed_args.0,
            approved_args: r.approved_args.map(|j| j.0),
            policy_reason: r.policy_reason,
            context: Vec::new(),
            created_at: r.created_at,
            decided_by: r.decided_by,
            decided_at: r.decided_at,
            decision_reason: r.decision_reason,
            rule: r.rule,
            expires_at: r.expires_at,
            on_expiry: r.on_expiry,
            evidence: Vec::new(),
        })
    }
}

const COLUMNS: &str = "id, session_id, graph_execution_id, tool, proposed_args, approved_args, \
     policy_reason, status, created_at, decided_by, decided_at, decision_reason, rule, expires_at, \
     on_expiry";

/// Inserts a pending approval on executor `$exec` (creating the same id
/// again changes nothing, so a re-run step does not reset a decision).
macro_rules! insert_approval {
    ($exec:expr, $new:expr, $token_hash:expr) => {{
        let new: &$crate::approvals::NewApproval = $new;
        sqlx::query(
            "INSERT INTO approvals (id, session_id, graph_execution_id, tool, proposed_args, \
             policy_reason, status, token_hash, created_at, rule, expires_at, on_expiry, \
             expiry_reason) \
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&new.id)
        .bind(&new.session_id)
        .bind(&new.graph_execution_id)
        .bind(&new.tool)
        .bind(sqlx::types::Json(&new.proposed_args))
        .bind(&new.policy_reason)
        .bind($token_hash)
        .bind($crate::now())
        .bind(&new.rule)
        .bind(new.expires_at)
        .bind(new.on_expiry.as_deref())
        .bind(new.expiry_reason.as_deref())
        .execute($exec)
        .await?
        .rows_affected()
    }};
}

impl Database {
    /// Stores a pending approval whose token is `token` (kept only as its
    /// hash). Several calls of one step may share a token; each is still
    /// decided once. Creating the same tool-call id again changes nothing, so
    /// a re-run step does not reset a decision.
    #[tracing::instrument(skip_all, fields(id = %new.id, tool = %new.tool))]
    pub async fn create_approval(
        &self,
        new: &NewApproval,
        token: &str,
    ) -> Result<Approval, DbError> {
        if token.len() < 16 {
            return Err(DbError::InvalidInput(
                "an approval token must be at least 16 characters".into(),
            ));
        }
        let token_hash = hash_token(token);
        with_pool!(self, pool => insert_approval!(pool, new, &token_hash));
        self.approval(&new.id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("approval {}", new.id)))
    }

    /// How many approvals wait for a decision.
    pub async fn pending_approval_count(&self) -> Result<i64, DbError> {
        let (n,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "SELECT COUNT(*) FROM approvals WHERE status = 'pending'",
        )
        .fetch_one(pool)
        .await?);
        Ok(n)
    }

    /// One approval with its conversation context.
    #[tracing::instrument(skip_all, fields(id))]
    pub async fn approval(&self, id: &str) -> Result<Option<Approval>, DbError> {
        tracing::Span::current().record("id", id);
        let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1");
        let row = with_pool!(self, pool => sqlx::query_as::<_, ApprovalRow>(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await?);
        match row {
            Some(row) => {
                let approval = self.with_context(Approval::try_from(row)?).await?;
                Ok(Some(self.with_evidence(approval).await?))
            }
            None => Ok(None),
        }
    }

    /// Pending approvals, oldest first, each with its conversation context.
    #[tracing::instrument(skip_all)]
    pub async fn list_pending_approvals(&self) -> Result<Vec<Approval>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' ORDER BY created_at, id"
        );
        let mut out = Vec::new();
        for approval in self.approvals_where(&sql, None).await? {
            out.push(self.with_evidence(approval).await?);
        }
        Ok(out)
    }

    /// The approvals of one graph run, oldest first.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn approvals_of_execution(
        &self,
        graph_execution_id: &str,
    ) -> Result<Vec<Approval>, DbError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE graph_execution_id = $1 ORDER BY created_at, id"
        );
        self.approvals_where(&sql, Some(graph_execution_id)).await
    }

    /// Decided approvals, newest first: the audit log.
    #[tracing::instrument(skip_all, fields(limit))]
    pub async fn decided_approvals(&self, limit: u32) -> Result<Vec<Approval>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE status <> 'pending' \
             ORDER BY decided_at DESC, id LIMIT {}",
            limit.min(1000)
        );
        self.approvals_where(&sql, None).await
    }

    /// Decided approvals (newest first) with the given status, decided in
    /// `[from, to)`; at most `limit` (the CSV export).
    #[tracing::instrument(skip_all)]
    pub async fn decided_approvals_between(
        &self,
        status: Option<ApprovalStatus>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
        limit: u32,
    ) -> Result<Vec<Approval>, DbError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE status <> 'pending' \
             AND ($1 IS NULL OR status = $1) AND ($2 IS NULL OR decided_at >= $2) \
             AND ($3 IS NULL OR decided_at < $3) ORDER BY decided_at DESC, id LIMIT $4"
        );
        let rows = with_pool!(self, pool => sqlx::query_as::<_, ApprovalRow>(&sql)
            .bind(status.map(ApprovalStatus::as_str))
            .bind(from)
            .bind(to)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        rows.into_iter().map(Approval::try_from).collect()
    }

    async fn approvals_where(
        &self,
        sql: &str,
        arg: Option<&str>,
    ) -> Result<Vec<Approval>, DbError> {
        let rows = with_pool!(self, pool => {
            let mut q = sqlx::query_as::<_, ApprovalRow>(sql);
            if let Some(arg) = arg {
                q = q.bind(arg);
            }
            q.fetch_all(pool).await?
        });
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.with_context(Approval::try_from(row)?).await?);
        }
        Ok(out)
    }

    /// The finished tool calls of the paused turn's stored trace: what
    /// the model learned before it asked for the held call.
    async fn with_evidence(&self, mut approval: Approval) -> Result<Approval, DbError> {
        if let Some(trace) = self.turn(&approval.graph_execution_id).await? {
            approval.evidence = trace
                .tool_calls
                .into_iter()
                .filter(|c| {
                    c.id != approval.id
                        && !matches!(
                            c.status,
                            aics_types::ToolCallStatus::Pending
                                | aics_types::ToolCallStatus::Running
                        )
                })
                .collect();
        }
        Ok(approval)
    }

    async fn with_context(&self, mut approval: Approval) -> Result<Approval, DbError> {
        approval.context = self
            .recent_messages(&approval.session_id, CONTEXT_MESSAGES)
            .await?;
        Ok(approval)
    }

    /// Decides a pending approval, exactly once.
    ///
    /// With `decision.token` the token must match and is used up; without it
    /// the caller vouches for `decided_by` (a signed-in supervisor). A
    /// rejection needs a reason. Fails with [`DbError::AlreadyDecided`] when
    /// the approval was decided before, [`DbError::InvalidToken`] when the
    /// token is wrong or used, [`DbError::NotFound`] when there is no such id.
    #[tracing::instrument(skip_all, fields(id, approve = decision.approve, decided_by))]
    pub async fn decide_approval(
        &self,
        id: &str,
        decision: &ApprovalDecision,
        decided_by: &str,
    ) -> Result<Approval, DbError> {
        let span = tracing::Span::current();
        span.record("id", id);
        span.record("decided_by", decided_by);
        let reason = decision
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        if !decision.approve && reason.is_none() {
            return Err(DbError::InvalidInput("a rejection needs a reason".into()));
        }
        if decided_by.trim().is_empty() {
            return Err(DbError::InvalidInput(
                "a decision needs the name of who decided".into(),
            ));
        }
        let status = if decision.approve {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Rejected
        };
        // Approved arguments: the supervisor's edit, else what was proposed.
        let approved_args = decision.approve.then(|| decision.args.clone()).flatten();
        let token_hash = decision.token.as_deref().map(hash_token);
        let via = if token_hash.is_some() {
            "token"
        } else {
            "session"
        };
        // One conditional update: it matches only a pending row (and, with a
        // token, only the right unused token), so a decision happens once.
        let changed = with_pool!(self, pool => sqlx::query(
            "UPDATE approvals SET status = $2, decided_by = $3, decided_at = $4, \
             decision_reason = $5, decided_via = $6, \
             approved_args = CASE WHEN $2 = 'approved' THEN COALESCE($7, proposed_args) ELSE NULL END, \
             token_hash = CASE WHEN $8 IS NULL THEN token_hash ELSE NULL END \
             WHERE id = $1 AND status = 'pending' AND ($8 IS NULL OR token_hash = $8) \
             AND (expires_at IS NULL OR expires_at > $4)",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(decided_by)
        .bind(now())
        .bind(reason)
        .bind(via)
        .bind(approved_args.as_ref().map(Json))
        .bind(token_hash.as_deref())
        .execute(pool)
        .await?
        .rows_affected());
        let approval = self
            .approval(id)
            .await?
            .ok_or_else(|| DbError::NotFound(format!("approval {id}")))?;
        if changed == 1 {
            return Ok(approval);
        }
        let past_deadline = approval.expires_at.is_some_and(|at| at <= now());
        if approval.status != ApprovalStatus::Pending || past_deadline {
            // Past its deadline it is the sweep's to end (as expired).
            let status = if approval.status == ApprovalStatus::Pending {
                ApprovalStatus::Expired
            } else {
                approval.status
            };
            return Err(DbError::AlreadyDecided {
                id: id.to_owned(),
                status: status.as_str().to_owned(),
            });
        }
        Err(DbError::InvalidToken)
    }
}

impl Database {
    /// Ends every pending approval whose deadline passed by `at` as
    /// expired (decided by `system`, with the reason the model receives),
    /// each with one conditional update: of several instances sweeping at
    /// once exactly one ends each approval, and only its sweep returns it.
    #[tracing::instrument(skip_all)]
    pub async fn expire_due_approvals(
        &self,
        at: Timestamp,
        limit: u32,
    ) -> Result<Vec<ExpiredApproval>, DbError> {
        let due: Vec<(String,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT id FROM approvals WHERE status = 'pending' AND expires_at IS NOT NULL \
             AND expires_at <= $1 ORDER BY expires_at, id LIMIT $2",
        )
        .bind(at)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?);
        let mut won = Vec::new();
        for (id,) in due {
            let changed = with_pool!(self, pool => sqlx::query(
                "UPDATE approvals SET status = 'expired', decided_by = 'system', decided_at = $2, \
                 decision_reason = COALESCE(expiry_reason, 'no supervisor decided in time'), \
                 decided_via = 'deadline', token_hash = NULL \
                 WHERE id = $1 AND status = 'pending' AND expires_at <= $2",
            )
            .bind(&id)
            .bind(at)
            .execute(pool)
            .await?
            .rows_affected());
            if changed == 1 {
                if let Some(approval) = self.approval(&id).await? {
                    let on_expiry = approval
                        .on_expiry
                        .clone()
                        .unwrap_or_else(|| "reject".to_owned());
                    won.push(ExpiredApproval {
                        approval,
                        on_expiry,
                    });
                }
            }
        }
        Ok(won)
    }
}
