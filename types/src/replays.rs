//! Replay sets: a named, saved list of turns ([`ReplaySet`]) a supervisor
//! replays in one action against another provider, engine or protocol
//! ([`ReplayOptions`]), each turn forked from the checkpoint before its
//! agent first answers. A replay run's report ([`ReplayRunReport`]) says
//! for each turn whether the replay made the same tool chain, a different
//! one, or failed, with the deltas of [`crate::compare_runs`] — the one
//! comparison of a fork with its original ([`replay_item`]).

use serde::{Deserialize, Serialize};

use crate::{compare_runs, ChatTurnTraceResult, StopReason, StudioRun, StudioRunState, Timestamp};

/// The most turns a replay set holds.
pub const MAX_REPLAY_SET_TURNS: usize = 200;

/// The longest name of a replay set, in characters.
pub const MAX_REPLAY_SET_NAME_CHARS: usize = 120;

/// The longest search text of a filter, in characters.
pub const MAX_REPLAY_FILTER_TEXT_CHARS: usize = 200;

/// Which stored turns a set is made of: every given condition holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayFilter {
    /// Text the turn's customer message contains (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Turns started at or after this point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub from: Option<Timestamp>,
    /// Turns started before this point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub to: Option<Timestamp>,
    /// Turns that called this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Turns that ended so ([`StopReason`], e.g. `final_answer`, `error`,
    /// `awaiting_approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StopReason>,
}

/// `POST /api/replays`: a set from explicit turn ids or from a filter
/// (exactly one of the two).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewReplaySet {
    pub name: String,
    #[serde(default)]
    pub turn_ids: Vec<String>,
    #[serde(default)]
    pub filter: Option<ReplayFilter>,
}

/// `POST /api/replays/preview`: how many turns a filter matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayPreview {
    pub matched: u64,
    /// The most a set may hold ([`MAX_REPLAY_SET_TURNS`]).
    pub limit: u64,
}

/// A replay set in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySetSummary {
    pub id: String,
    pub name: String,
    pub created_by: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    pub turns: u64,
}

/// One replay set: its turns, in order, and its replay runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySet {
    pub id: String,
    pub name: String,
    pub created_by: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    /// The filter it was made from, if it was.
    #[serde(default)]
    pub filter: Option<ReplayFilter>,
    pub turn_ids: Vec<String>,
    pub runs: Vec<ReplayRunInfo>,
}

/// `POST /api/replays/{id}/runs`: what the replays run with; each absent
/// field keeps the turn's own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayOptions {
    /// A configured provider's name.
    #[serde(default)]
    pub provider: Option<String>,
    /// `graph` or `linear`.
    #[serde(default)]
    pub engine: Option<String>,
    /// `native` or `json_plan`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// Where a replay run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayRunState {
    /// Its task starts the forks and waits for them.
    Running,
    /// Every turn was forked (or could not be) and every fork ended.
    Done,
    /// Its server stopped first: the turns not yet forked ended as errors.
    Interrupted,
}

impl ReplayRunState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done => "done",
            Self::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "running" => Some(Self::Running),
            "done" => Some(Self::Done),
            "interrupted" => Some(Self::Interrupted),
            _ => None,
        }
    }
}

/// One replay run of a set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayRunInfo {
    pub id: String,
    pub set_id: String,
    pub created_by: String,
    #[serde(deserialize_with = "crate::timestamp::deserialize")]
    pub created_at: Timestamp,
    pub state: ReplayRunState,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub engine: Option<String>,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    #[serde(deserialize_with = "crate::timestamp::option")]
    pub finished_at: Option<Timestamp>,
}

/// How one turn's replay came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayVerdict {
    /// Not forked yet, or its fork still runs.
    Pending,
    /// The replay called the same tools in the same order.
    Same,
    /// It called other tools, or in another order.
    Different,
    /// It could not be forked, its fork failed, or the replay ended in an
    /// error.
    Error,
}

impl ReplayVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Same => "same",
            Self::Different => "different",
            Self::Error => "error",
        }
    }
}

/// One turn of a replay run's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayItem {
    pub graph_execution_id: String,
    /// The fork that replayed it (`GET /api/forks/{id}`), once started.
    #[serde(default)]
    pub fork_id: Option<String>,
    pub verdict: ReplayVerdict,
    /// Tool names in call order.
    #[serde(default)]
    pub original_chain: Vec<String>,
    #[serde(default)]
    pub replay_chain: Vec<String>,
    /// Whether the reply's text differs (none until the fork ran).
    #[serde(default)]
    pub reply_changed: Option<bool>,
    /// Replay minus original.
    #[serde(default)]
    pub tokens_delta: Option<i64>,
    #[serde(default)]
    pub cost_delta_usd: Option<f64>,
    #[serde(default)]
    pub latency_delta_ms: Option<i64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// The counts at the top of a report; they add up to `total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayTotals {
    pub total: u64,
    pub same: u64,
    pub different: u64,
    pub error: u64,
    pub pending: u64,
}

/// `GET /api/replay-runs/{id}`: a replay run and its summary table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayRunReport {
    pub run: ReplayRunInfo,
    pub set_name: String,
    pub totals: ReplayTotals,
    pub items: Vec<ReplayItem>,
}

/// One turn of a report, from what is stored: the item's own error (it
/// could not be forked), the original turn's trace and the fork. A fork
/// that is still running in a run that was `interrupted` counts as an
/// error (its server stopped).
pub fn replay_item(
    graph_execution_id: &str,
    item_error: Option<&str>,
    original: Option<&ChatTurnTraceResult>,
    fork: Option<&StudioRun>,
    run_state: ReplayRunState,
) -> ReplayItem {
    let chain = |t: &ChatTurnTraceResult| t.tool_calls.iter().map(|c| c.name.clone()).collect();
    let mut item = ReplayItem {
        graph_execution_id: graph_execution_id.to_owned(),
        fork_id: fork.map(|f| f.id.clone()),
        verdict: ReplayVerdict::Pending,
        original_chain: original.map(chain).unwrap_or_default(),
        replay_chain: Vec::new(),
        reply_changed: None,
        tokens_delta: None,
        cost_delta_usd: None,
        latency_delta_ms: None,
        error: None,
    };
    let fail = |mut item: ReplayItem, why: &str| {
        item.verdict = ReplayVerdict::Error;
        item.error = Some(why.to_owned());
        item
    };
    if let Some(why) = item_error {
        return fail(item, why);
    }
    let interrupted = run_state == ReplayRunState::Interrupted;
    let Some(fork) = fork else {
        return if interrupted {
            fail(
                item,
                "the replay's server stopped before this turn was forked",
            )
        } else {
            item
        };
    };
    match (fork.state, &fork.trace) {
        (StudioRunState::Running, _) if interrupted => {
            fail(item, "the replay's server stopped before this fork ended")
        }
        (StudioRunState::Running, _) => item,
        (StudioRunState::Failed, _) | (StudioRunState::Done, None) => {
            let why = fork
                .error
                .clone()
                .unwrap_or_else(|| "the fork failed".into());
            fail(item, &why)
        }
        (StudioRunState::Done, Some(trace)) => {
            item.replay_chain = chain(trace);
            if let Some(error) = trace
                .error
                .clone()
                .or_else(|| (trace.stop_reason == Some(StopReason::Error)).then(String::new))
            {
                let why = if error.is_empty() {
                    "the replay ended in an error".to_owned()
                } else {
                    error
                };
                return fail(item, &why);
            }
            let Some(original) = original else {
                return fail(item, "the original turn is no longer stored");
            };
            let c = compare_runs(original, trace);
            item.verdict = if c.same_chain {
                ReplayVerdict::Same
            } else {
                ReplayVerdict::Different
            };
            item.reply_changed = Some(original.reply.trim() != trace.reply.trim());
            item.tokens_delta = Some(c.tokens_delta);
            item.cost_delta_usd = c.cost_delta_usd;
            item.latency_delta_ms = Some(c.latency_delta_ms);
            item
        }
    }
}

/// The counts of a report's items.
pub fn replay_totals(items: &[ReplayItem]) -> ReplayTotals {
    let mut t = ReplayTotals {
        total: items.len() as u64,
        ..ReplayTotals::default()
    };
    for item in items {
        match item.verdict {
            ReplayVerdict::Same => t.same += 1,
            ReplayVerdict::Different => t.different += 1,
            ReplayVerdict::Error => t.error += 1,
            ReplayVerdict::Pending => t.pending += 1,
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TokenUsage, ToolCallRecord, ToolCallStatus};

    fn trace(tools: &[&str], reply: &str, tokens: u64) -> ChatTurnTraceResult {
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
            ..ChatTurnTraceResult::default()
        }
    }

    fn fork(state: StudioRunState, trace: Option<ChatTurnTraceResult>) -> StudioRun {
        StudioRun {
            id: "f1".into(),
            source_graph_execution_id: "g1".into(),
            source_checkpoint_id: "c1".into(),
            created_by: "supervisor".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            state,
            message: None,
            engine: None,
            protocol: None,
            provider: None,
            trace,
            error: None,
            finished_at: None,
        }
    }

    #[test]
    fn verdicts_follow_the_fork_and_the_chain() {
        let a = trace(&["order_query", "ticket_create"], "done", 100);
        let running = ReplayRunState::Running;
        let same = replay_item(
            "g1",
            None,
            Some(&a),
            Some(&fork(StudioRunState::Done, Some(a.clone()))),
            running,
        );
        assert_eq!(same.verdict, ReplayVerdict::Same);
        assert_eq!(same.reply_changed, Some(false));
        assert_eq!(same.tokens_delta, Some(0));
        let b = trace(&["order_query"], "other", 80);
        let different = replay_item(
            "g1",
            None,
            Some(&a),
            Some(&fork(StudioRunState::Done, Some(b))),
            running,
        );
        assert_eq!(different.verdict, ReplayVerdict::Different);
        assert_eq!(different.replay_chain, ["order_query"]);
        assert_eq!(different.reply_changed, Some(true));
        assert_eq!(different.tokens_delta, Some(-20));
        let mut failed = trace(&[], "", 0);
        failed.stop_reason = Some(StopReason::Error);
        let error = replay_item(
            "g1",
            None,
            Some(&a),
            Some(&fork(StudioRunState::Done, Some(failed))),
            running,
        );
        assert_eq!(error.verdict, ReplayVerdict::Error);
        let pending = replay_item(
            "g1",
            None,
            Some(&a),
            Some(&fork(StudioRunState::Running, None)),
            running,
        );
        assert_eq!(pending.verdict, ReplayVerdict::Pending);
        let queued = replay_item("g1", None, Some(&a), None, running);
        assert_eq!(queued.verdict, ReplayVerdict::Pending);
        // An interrupted run leaves nothing pending.
        let stopped = replay_item("g1", None, Some(&a), None, ReplayRunState::Interrupted);
        assert_eq!(stopped.verdict, ReplayVerdict::Error);
        let own = replay_item("g1", Some("no checkpoint"), Some(&a), None, running);
        assert_eq!(own.error.as_deref(), Some("no checkpoint"));
        let totals = replay_totals(&[same, different, error, pending, queued, stopped, own]);
        assert_eq!(
            totals,
            ReplayTotals {
                total: 7,
                same: 1,
                different: 1,
                error: 3,
                pending: 2
            }
        );
    }
}
