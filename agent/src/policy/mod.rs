//! The approval policy: which tool calls wait for a supervisor, which are
//! refused, and how long an approval may wait. The operator writes it in
//! `[approvals]` ([`ApprovalsConfig`]); it is compiled once at start-up
//! ([`ApprovalPolicy`]) and the server judges every call with it, on the
//! arguments that would run (after a supervisor's edit too) and on its own
//! reading of the customer's words ([`Evidence`]), never on what the model
//! says about the call.
//!
//! - [`expr`]: the rule language (`category in [complaint, refund]`,
//!   `amount > 50`, `$customer contains refund`, `$channel == customer`, …).
//! - [`config`]: the TOML shape, the defaults (today's behaviour), and the
//!   compilation with errors naming their key.

pub mod config;
pub mod expr;

use std::time::Duration;

use serde_json::{json, Value};

pub use config::{default_rules, parse_duration, ApprovalsConfig, PolicyError, RuleConfig};
use expr::{Expr, Variables};

use crate::model::Message;
pub use crate::support::heuristics::asks_refund;
use crate::support::heuristics::read_customer;
use crate::support::{Channel, SupportState};

/// What a matching rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The call waits for a supervisor.
    Approve,
    /// The call never runs; the model is told it is not allowed.
    Refuse,
}

/// What happens when an approval's deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExpiry {
    /// The call is rejected with the rule's stated reason.
    Reject,
    /// Rejected too, and the conversation waits for a human.
    Handover,
}

impl OnExpiry {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Handover => "handover",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "reject" => Some(Self::Reject),
            "handover" => Some(Self::Handover),
            _ => None,
        }
    }
}

/// How long an approval held by a rule may wait, and what then.
#[derive(Debug, Clone, PartialEq)]
pub struct Deadline {
    pub after: Duration,
    pub on_expiry: OnExpiry,
    /// What the model receives as the rejection's reason.
    pub reason: String,
}

/// One compiled rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    /// A tool name, or `*`.
    pub tool: String,
    pub when: Expr,
    pub action: Action,
    pub reason: String,
    pub deadline: Option<Deadline>,
}

/// Which rule decided a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub rule: String,
    pub reason: String,
}

/// The policy's judgement of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Runs without review.
    Allow,
    /// Waits for a supervisor.
    Approve(Hold),
    /// Never runs; the model is told so.
    Refuse(Hold),
}

/// The compiled approval policy. [`Default`] is the policy of
/// [`ApprovalsConfig::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPolicy {
    rules: Vec<Rule>,
}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        // The default rules are literals checked by the tests below.
        #[allow(clippy::expect_used)]
        ApprovalsConfig::default()
            .compile()
            .expect("the default approval rules compile")
    }
}

impl ApprovalPolicy {
    /// A policy that holds nothing (tests and tools without review).
    pub fn allow_all() -> Self {
        Self { rules: Vec::new() }
    }

    /// Judges a call of `tool` with `args`: a matching refusal beats
    /// everything, then the first matching approval rule, else it runs.
    pub fn judge(&self, tool: &str, args: &Value, evidence: &Evidence) -> Verdict {
        let applies = |r: &&Rule| (r.tool == tool || r.tool == "*") && r.when.eval(args, evidence);
        let hold = |r: &Rule| Hold {
            rule: r.name.clone(),
            reason: r.reason.clone(),
        };
        if let Some(r) = self
            .rules
            .iter()
            .filter(|r| r.action == Action::Refuse)
            .find(applies)
        {
            return Verdict::Refuse(hold(r));
        }
        match self
            .rules
            .iter()
            .filter(|r| r.action == Action::Approve)
            .find(applies)
        {
            Some(r) => Verdict::Approve(hold(r)),
            None => Verdict::Allow,
        }
    }

    /// The rule named `name`, e.g. for its deadline.
    pub fn rule(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// The tool names the rules mention (not `*`), to check them against
    /// the registry at start-up.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.rules
            .iter()
            .map(|r| r.tool.as_str())
            .filter(|t| *t != "*")
    }
}

/// What the server itself reads in the conversation: the route's intent
/// label (`$intent`), the labels its classifier finds in the customer's
/// own messages (`$customer`: any of `complaint`, `refund`, `escalate`,
/// `order`, and `unsure` when a message was disguised or is in a language
/// the classifier does not read) and where the turn's message came from
/// (`$channel`: `console` or `customer`). Nothing the model wrote counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    pub intent: Option<String>,
    pub customer: Vec<&'static str>,
    pub channel: Channel,
}

impl Evidence {
    /// The evidence of the customer's messages `texts` and the intent label
    /// (on the console channel; see [`Evidence::on`]).
    pub fn of_words<'a>(
        intent: Option<aics_types::Intent>,
        texts: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut labels: Vec<&'static str> = Vec::new();
        let mut add = |l: &'static str| {
            if !labels.contains(&l) {
                labels.push(l);
            }
        };
        if intent == Some(aics_types::Intent::Complaint) {
            add("complaint");
        }
        for text in texts {
            let read = read_customer(text);
            for (found, label) in [
                (read.complaint, "complaint"),
                (read.refund, "refund"),
                (read.escalate, "escalate"),
                (read.order, "order"),
                (read.unsure, "unsure"),
            ] {
                if found {
                    add(label);
                }
            }
        }
        Self {
            intent: intent.map(|i| i.as_str().to_owned()),
            customer: labels,
            channel: Channel::Console,
        }
    }

    /// The same evidence, for a turn on `channel`.
    pub fn on(self, channel: Channel) -> Self {
        Self { channel, ..self }
    }

    /// The evidence of a turn: its intent, its channel and every customer
    /// message the turn holds (earlier turns' too, so an instruction in a
    /// later message cannot relabel an earlier complaint).
    pub fn of(s: &SupportState) -> Self {
        let texts = s
            .messages
            .iter()
            .filter_map(|m| match &**m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .chain(std::iter::once(s.user_message.as_str()));
        Self::of_words(s.intent, texts).on(s.channel)
    }
}

impl Variables for Evidence {
    fn var(&self, name: &str) -> Value {
        match name {
            "intent" => self.intent.clone().map_or(Value::Null, Value::String),
            "customer" => json!(self.customer),
            "channel" => json!(match self.channel {
                Channel::Console => "console",
                Channel::Customer => "customer",
            }),
            _ => Value::Null,
        }
    }
}

#[cfg(test)]
mod tests;
