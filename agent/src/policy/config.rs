//! `[approvals]` as the operator writes it (TOML, kebab-case keys), and its
//! compilation into an [`ApprovalPolicy`]: every rule parsed once, every
//! mistake a start-up error that names its key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::expr::parse;
use super::{Action, ApprovalPolicy, Deadline, OnExpiry, Rule};

/// `[approvals]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ApprovalsConfig {
    /// Per tool: `always` (every call waits for a supervisor) or `never`
    /// (every call is refused; the model is told it is not allowed).
    /// Checked before `rules`.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
    /// The rules, in order; the first that matches a call decides. Writing
    /// any replaces the default ones (see aics.example.toml).
    #[serde(default = "default_rules")]
    pub rules: Vec<RuleConfig>,
    /// Where each new approval is posted as JSON (`AICS_APPROVALS_WEBHOOK_URL`).
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// The console's public address, for the links in webhook posts
    /// (`AICS_PUBLIC_URL`), e.g. `https://console.example.com`.
    #[serde(default)]
    pub public_url: Option<String>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            rules: default_rules(),
            webhook_url: None,
            public_url: None,
        }
    }
}

/// `[[approvals.rules]]`: one rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RuleConfig {
    /// Shown on the approval card and stored with the approval; default
    /// `<tool>#<n>`.
    #[serde(default)]
    pub name: Option<String>,
    /// The tool the rule is about (`*`: every tool).
    pub tool: String,
    /// The condition over the call's arguments (see `policy::expr`);
    /// omitted: every call of the tool.
    #[serde(default)]
    pub when: Option<String>,
    /// `approve` (default: the call waits for a supervisor) or `refuse`
    /// (the call never runs; the model is told it is not allowed).
    #[serde(default)]
    pub action: Option<String>,
    /// Why, in words, for the supervisor (and the model, when refused).
    #[serde(default)]
    pub reason: Option<String>,
    /// How long the approval may wait, e.g. `15m`, `90s`, `2h`, `1h30m`.
    #[serde(default)]
    pub timeout: Option<String>,
    /// What happens when it passes: `reject` (default) or `handover` (reject
    /// and mark the conversation as waiting for a human).
    #[serde(default)]
    pub on_timeout: Option<String>,
    /// The reason the model receives when the deadline rejects the call.
    #[serde(default)]
    pub timeout_reason: Option<String>,
}

/// The rules of today: complaint and refund tickets wait for a
/// supervisor, and so does a ticket whose category contradicts what the
/// customer's own words say (the server's classifier, not the model), and
/// a customer's ticket about an order when the classifier is unsure of
/// those words (disguised, or in a language it does not read).
pub fn default_rules() -> Vec<RuleConfig> {
    vec![
        RuleConfig {
            name: Some("sensitive-ticket".into()),
            tool: "ticket_create".into(),
            when: Some("category in [complaint, refund]".into()),
            reason: Some("complaint and refund tickets are reviewed by a supervisor".into()),
            ..RuleConfig::default()
        },
        RuleConfig {
            name: Some("ticket-intent-mismatch".into()),
            tool: "ticket_create".into(),
            when: Some(
                "$customer in [complaint, refund] and category not in [complaint, refund]".into(),
            ),
            reason: Some(
                "the customer's words read as a complaint or a refund request, but the ticket \
                 is filed under another category"
                    .into(),
            ),
            ..RuleConfig::default()
        },
        // The classifier's silence proves nothing when it could not read the
        // words; on the console a person on staff wrote them.
        RuleConfig {
            name: Some("unsure-customer-ticket".into()),
            tool: "ticket_create".into(),
            when: Some("$channel == customer and order_id and $customer contains unsure".into()),
            reason: Some(
                "the customer's words could not be read with confidence (another language or \
                 disguised letters), so their ticket about an order is reviewed by a supervisor"
                    .into(),
            ),
            ..RuleConfig::default()
        },
    ]
}

/// A setting of `[approvals]` that cannot be used; `key` names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct PolicyError {
    pub key: String,
    pub message: String,
}

fn err(key: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        message: message.into(),
    }
}

/// Reads `15m`, `90s`, `2h`, `1d`, `1h30m` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(format!("{text:?}: unknown unit {c:?} (use s, m, h or d)")),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("{text:?}: expected a number before {c:?}"))?;
        digits.clear();
        total = total.saturating_add(n.saturating_mul(unit));
    }
    if !digits.is_empty() {
        return Err(format!("{text:?}: a number needs a unit (s, m, h or d)"));
    }
    Ok(Duration::from_secs(total))
}

impl ApprovalsConfig {
    /// Compiles the policy; the error names the key at fault, e.g.
    /// `approvals.rules[1].when`.
    pub fn compile(&self) -> Result<ApprovalPolicy, PolicyError> {
        for (key, url) in [
            ("approvals.webhook-url", &self.webhook_url),
            ("approvals.public-url", &self.public_url),
        ] {
            if let Some(url) = url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(err(
                        key,
                        format!("{url:?} is not an http:// or https:// URL"),
                    ));
                }
            }
        }
        let mut rules = Vec::new();
        for (tool, mode) in &self.tools {
            let key = format!("approvals.tools.{tool}");
            check_tool(&key, tool)?;
            let action = match mode.trim().to_ascii_lowercase().as_str() {
                "always" => Action::Approve,
                "never" => Action::Refuse,
                other => {
                    return Err(err(
                        key,
                        format!("expected always or never, found {other:?}"),
                    ))
                }
            };
            rules.push(Rule {
                name: format!("tools.{tool}"),
                tool: tool.clone(),
                when: super::expr::Expr::Const(true),
                action,
                reason: match action {
                    Action::Approve => format!("every {tool} call is reviewed by a supervisor"),
                    Action::Refuse => format!("{tool} is not allowed"),
                },
                deadline: None,
            });
        }
        let mut names = std::collections::HashSet::new();
        for (i, r) in self.rules.iter().enumerate() {
            let key = format!("approvals.rules[{i}]");
            check_tool(&format!("{key}.tool"), &r.tool)?;
            let when = match r.when.as_deref() {
                None => super::expr::Expr::Const(true),
                Some(src) => parse(src).map_err(|e| err(format!("{key}.when"), e.to_string()))?,
            };
            let action = match r.action.as_deref().map(|a| a.trim().to_ascii_lowercase()) {
                None => Action::Approve,
                Some(a) if a == "approve" => Action::Approve,
                Some(a) if a == "refuse" => Action::Refuse,
                Some(other) => {
                    return Err(err(
                        format!("{key}.action"),
                        format!("expected approve or refuse, found {other:?}"),
                    ))
                }
            };
            let name = r
                .name
                .clone()
                .map(|n| n.trim().to_owned())
                .unwrap_or_else(|| format!("{}#{i}", r.tool));
            if name.is_empty() || name.chars().count() > 64 {
                return Err(err(format!("{key}.name"), "1 to 64 characters"));
            }
            if !names.insert(name.clone()) {
                return Err(err(
                    format!("{key}.name"),
                    format!("{name:?} is used twice"),
                ));
            }
            let deadline = match &r.timeout {
                None => {
                    if r.on_timeout.is_some() || r.timeout_reason.is_some() {
                        return Err(err(
                            format!("{key}.timeout"),
                            "on-timeout and timeout-reason need a timeout",
                        ));
                    }
                    None
                }
                Some(t) => {
                    if action == Action::Refuse {
                        return Err(err(
                            format!("{key}.timeout"),
                            "a refused call waits for no one",
                        ));
                    }
                    let after = parse_duration(t).map_err(|m| err(format!("{key}.timeout"), m))?;
                    if after < Duration::from_secs(1) || after > Duration::from_secs(30 * 86_400) {
                        return Err(err(
                            format!("{key}.timeout"),
                            "between 1 second and 30 days",
                        ));
                    }
                    let on_expiry = match r
                        .on_timeout
                        .as_deref()
                        .map(|a| a.trim().to_ascii_lowercase())
                    {
                        None => OnExpiry::Reject,
                        Some(a) if a == "reject" => OnExpiry::Reject,
                        Some(a) if a == "handover" => OnExpiry::Handover,
                        Some(other) => {
                            return Err(err(
                                format!("{key}.on-timeout"),
                                format!("expected reject or handover, found {other:?}"),
                            ))
                        }
                    };
                    let reason = r.timeout_reason.clone().unwrap_or_else(|| match on_expiry {
                        OnExpiry::Reject => "no supervisor decided in time".to_owned(),
                        OnExpiry::Handover => {
                            "no supervisor decided in time; a colleague will take over the conversation"
                                .to_owned()
                        }
                    });
                    Some(Deadline {
                        after,
                        on_expiry,
                        reason,
                    })
                }
            };
            rules.push(Rule {
                reason: r
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("rule {name} holds this call")),
                name,
                tool: r.tool.clone(),
                when,
                action,
                deadline,
            });
        }
        Ok(ApprovalPolicy { rules })
    }
}

fn check_tool(key: &str, tool: &str) -> Result<(), PolicyError> {
    let ok = tool == "*"
        || (!tool.is_empty()
            && tool.len() <= 64
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')));
    if ok {
        Ok(())
    } else {
        Err(err(key, format!("{tool:?} is not a tool name")))
    }
}
