//! The webhook for new approvals (`[approvals] webhook-url`): a JSON POST
//! for each approval a paused turn stores, with a link to its card, in a
//! task of its own. A failing endpoint is retried with backoff; a hanging
//! one times out. Nothing here ever blocks or fails the turn: the turn has
//! already been stored and announced when a post starts.
//!
//! The body is Slack-compatible (`text`), with the approval itself beside it:
//! `{text, url, approval: {id, tool, sessionId, rule, reason, args,
//! createdAt, expiresAt}}`.

use std::time::Duration;

use aics_types::Approval;
use serde_json::{json, Value};

/// Tries per approval (the first and the retries).
const ATTEMPTS: u32 = 5;
/// The first retry waits this long; each next one twice as long.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// One attempt, connection included, may take this long.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where new approvals are posted.
#[derive(Debug, Clone)]
pub(crate) struct Webhook {
    url: String,
    /// The console's public address, for the card's link.
    public_url: String,
    client: reqwest::Client,
}

impl Webhook {
    /// The webhook of `url`, if one is configured.
    pub(crate) fn new(url: Option<&str>, public_url: Option<&str>) -> Option<Self> {
        let url = url.map(str::trim).filter(|u| !u.is_empty())?;
        let client = reqwest::Client::builder()
            .connect_timeout(ATTEMPT_TIMEOUT)
            .timeout(ATTEMPT_TIMEOUT)
            .build()
            .ok()?;
        Some(Self {
            url: url.to_owned(),
            public_url: public_url
                .unwrap_or_default()
                .trim()
                .trim_end_matches('/')
                .to_owned(),
            client,
        })
    }

    /// The body posted for `approval`.
    pub(crate) fn body(&self, approval: &Approval) -> Value {
        let link = format!("{}/approvals#approval-{}", self.public_url, approval.id);
        json!({
            "text": format!(
                "Approval needed: {} in conversation {} (rule {}): {} {link}",
                approval.tool, approval.session_id, approval.rule, approval.policy_reason
            ),
            "url": link,
            "approval": {
                "id": approval.id,
                "tool": approval.tool,
                "sessionId": approval.session_id,
                "rule": approval.rule,
                "reason": approval.policy_reason,
                "args": approval.proposed_args,
                "createdAt": approval.created_at,
                "expiresAt": approval.expires_at,
            },
        })
    }

    /// Posts `approval` in a task of its own, retrying with backoff.
    pub(crate) fn send(&self, approval: &Approval) {
        let hook = self.clone();
        let body = self.body(approval);
        let id = approval.id.clone();
        tokio::spawn(async move {
            let mut wait = FIRST_BACKOFF;
            for attempt in 1..=ATTEMPTS {
                match hook.client.post(&hook.url).json(&body).send().await {
                    Ok(r) if r.status().is_success() => {
                        tracing::debug!(approval_id = %id, attempt, "approval webhook delivered");
                        return;
                    }
                    Ok(r) => {
                        tracing::warn!(approval_id = %id, attempt, status = r.status().as_u16(), "the approval webhook refused")
                    }
                    Err(e) => {
                        tracing::warn!(approval_id = %id, attempt, error = %e, "the approval webhook failed")
                    }
                }
                if attempt < ATTEMPTS {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
            tracing::error!(approval_id = %id, "the approval webhook gave up");
        });
    }
}
