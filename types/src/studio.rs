//! The trace studio's forks: a run started from a checkpoint of a stored
//! turn, away from the customer's conversation ([`StudioRun`]), what a
//! supervisor asks for ([`ForkRequest`]), and how a fork compares with the
//! turn it came from ([`compare_runs`], [`word_diff`]), computed the same
//! way on the server and in the browser.

use serde::{Deserialize, Serialize};

use crate::{ChatTurnTraceResult, Timestamp};

/// The longest edited customer message a fork takes, in characters.
pub const MAX_FORK_MESSAGE_CHARS: usize = 4_000;

/// `POST /api/turns/{id}/forks`: the checkpoint to start from and,
/// optionally, another last customer message, engine, protocol or
/// provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkRequest {
    pub checkpoint_id: String,
    /// Replaces the last customer message of the checkpoint's state.
    #[serde(default)]
    pub message: Option<String>,
    /// `graph` or `linear`; the source turn's engine when absent.
    #[serde(default)]
    pub engine: Option<String>,
    /// `native` or `json_plan`; when absent, the source turn's protocol
    /// (or, on another provider, that provider's configured one).
    #[serde(default)]
    pub protocol: Option<String>,
    /// A provider name of `GET /api/providers`; when absent, the provider
    /// whose model answered the source turn (else the default one).
    #[serde(default)]
    pub provider: Option<String>,
}

/// `202` to a fork request: the fork's id, to poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkStarted {
    pub id: String,
}

/// Where a fork is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StudioRunState {
    Running,
    Done,
    Failed,
}

impl StudioRunState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "running" => Some(Self::Running),
            "done" => Some(Self::Done),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One fork of a turn: its lineage (the source run and checkpoint), who
/// started it, and once done the trace it produced. A fork that met an
/// approval has `trace.pendingApproval` and the held calls (with their
/// rule) in `trace.pendingToolCalls`; no approval exists for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StudioRun {
    pub id: String,
    /// The turn it was forked from.
    pub source_graph_execution_id: String,
    pub source_checkpoint_id: String,
    pub created_by: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    pub state: StudioRunState,
    /// The edited customer message, when one was given.
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub protocol: Option<String>,
    /// The provider the fork ran on (none for forks stored before
    /// providers were recorded).
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub trace: Option<ChatTurnTraceResult>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub finished_at: Option<Timestamp>,
}

/// One word of a reply diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op", content = "text")]
pub enum DiffWord {
    Same(String),
    Removed(String),
    Added(String),
}

/// A word-level diff of two texts (split on whitespace), by longest common
/// subsequence. Texts are replies, a few hundred words at most; beyond
/// 2,000 words each, the rest is reported as removed and added.
pub fn word_diff(before: &str, after: &str) -> Vec<DiffWord> {
    const MAX_WORDS: usize = 2_000;
    let a: Vec<&str> = before.split_whitespace().collect();
    let b: Vec<&str> = after.split_whitespace().collect();
    let (a_head, a_tail) = a.split_at(a.len().min(MAX_WORDS));
    let (b_head, b_tail) = b.split_at(b.len().min(MAX_WORDS));
    let (n, m) = (a_head.len(), b_head.len());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a_head[i] == b_head[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if a_head[i] == b_head[j] {
            out.push(DiffWord::Same(a_head[i].to_owned()));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(DiffWord::Removed(a_head[i].to_owned()));
            i += 1;
        } else {
            out.push(DiffWord::Added(b_head[j].to_owned()));
            j += 1;
        }
    }
    out.extend(
        a_head[i..]
            .iter()
            .chain(a_tail)
            .map(|w| DiffWord::Removed((*w).to_owned())),
    );
    out.extend(
        b_head[j..]
            .iter()
            .chain(b_tail)
            .map(|w| DiffWord::Added((*w).to_owned())),
    );
    out
}

/// How a fork's trace differs from the original turn's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunComparison {
    /// The tool names in call order, original and fork.
    pub original_chain: Vec<String>,
    pub fork_chain: Vec<String>,
    pub same_chain: bool,
    pub reply_diff: Vec<DiffWord>,
    /// Fork minus original.
    pub tokens_delta: i64,
    pub cost_delta_usd: Option<f64>,
    pub latency_delta_ms: i64,
}

/// Compares a fork's trace with the original's.
pub fn compare_runs(original: &ChatTurnTraceResult, fork: &ChatTurnTraceResult) -> RunComparison {
    let chain = |t: &ChatTurnTraceResult| -> Vec<String> {
        t.tool_calls.iter().map(|c| c.name.clone()).collect()
    };
    let (original_chain, fork_chain) = (chain(original), chain(fork));
    let signed = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    RunComparison {
        same_chain: original_chain == fork_chain,
        original_chain,
        fork_chain,
        reply_diff: word_diff(&original.reply, &fork.reply),
        tokens_delta: signed(fork.usage.total_tokens) - signed(original.usage.total_tokens),
        cost_delta_usd: match (original.cost_usd, fork.cost_usd) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        latency_delta_ms: signed(fork.duration_ms) - signed(original.duration_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TokenUsage, ToolCallRecord, ToolCallStatus};

    fn words(diff: &[DiffWord]) -> String {
        diff.iter()
            .map(|w| match w {
                DiffWord::Same(t) => t.clone(),
                DiffWord::Removed(t) => format!("-{t}"),
                DiffWord::Added(t) => format!("+{t}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn word_diff_keeps_the_common_words_and_marks_the_rest() {
        let d = word_diff(
            "your ticket TCK-1 is open",
            "your refund ticket is open now",
        );
        assert_eq!(words(&d), "your +refund ticket -TCK-1 is open +now");
        assert!(word_diff("a b", "a b")
            .iter()
            .all(|w| matches!(w, DiffWord::Same(_))));
        assert_eq!(words(&word_diff("", "hi there")), "+hi +there");
        assert_eq!(words(&word_diff("bye", "")), "-bye");
        assert!(word_diff("", "").is_empty());
    }

    #[test]
    fn word_diff_of_long_texts_reports_the_tail() {
        let long: String = (0..2_100).map(|i| format!("w{i} ")).collect();
        let d = word_diff(&long, &long);
        assert_eq!(d.len(), 2_000 + 200);
        assert!(matches!(d.last(), Some(DiffWord::Added(_))));
    }

    fn trace(tools: &[&str], reply: &str, tokens: u64, ms: u64) -> ChatTurnTraceResult {
        ChatTurnTraceResult {
            reply: reply.into(),
            tool_calls: tools
                .iter()
                .map(|t| ToolCallRecord {
                    id: format!("call-{t}"),
                    name: (*t).into(),
                    input: Default::default(),
                    output: Default::default(),
                    status: ToolCallStatus::Ok,
                    timestamp: chrono::DateTime::UNIX_EPOCH,
                    duration_ms: Some(1),
                })
                .collect(),
            usage: TokenUsage {
                total_tokens: tokens,
                ..TokenUsage::default()
            },
            duration_ms: ms,
            cost_usd: Some(0.0),
            ..ChatTurnTraceResult::default()
        }
    }

    #[test]
    fn comparison_reports_chain_and_deltas() {
        let a = trace(&["order_query", "ticket_create"], "done", 100, 900);
        let b = trace(&["order_query"], "done here", 80, 1_000);
        let c = compare_runs(&a, &b);
        assert!(!c.same_chain);
        assert_eq!(c.tokens_delta, -20);
        assert_eq!(c.latency_delta_ms, 100);
        assert_eq!(c.cost_delta_usd, Some(0.0));
        assert_eq!(words(&c.reply_diff), "done +here");
        assert!(compare_runs(&a, &a).same_chain);
    }
}
