//! The Prometheus metrics the service records, through the `metrics`
//! facade (the server installs the exporter). Names are those of docs/API.md.

use std::collections::HashSet;

use aics_types::{ChatTurnTraceResult, StopReason, ToolCallStatus};

/// What the metrics already counted of a run before it paused: a resumed
/// run's trace carries the whole turn (its LLM calls, tokens and duration
/// accumulate across the pause), so only what it added is counted again.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counted {
    /// The ids of the tool calls that had ended.
    pub(crate) tool_calls: HashSet<String>,
    pub(crate) llm_calls: u32,
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
}

impl Counted {
    /// What was counted when `trace` (the stored trace of the paused run)
    /// was recorded.
    pub(crate) fn before(trace: &ChatTurnTraceResult) -> Self {
        Self {
            tool_calls: trace
                .tool_calls
                .iter()
                .filter(|c| c.status != ToolCallStatus::Pending)
                .map(|c| c.id.clone())
                .collect(),
            llm_calls: trace.llm_calls,
            prompt_tokens: trace.usage.prompt_tokens,
            completion_tokens: trace.usage.completion_tokens,
        }
    }
}

/// What one recording adds to the metrics.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Increments {
    pub(crate) status: &'static str,
    /// The turn's duration in seconds, once: when it ends, not when it pauses.
    pub(crate) duration_secs: Option<f64>,
    /// `(tool label, status)` of each call not counted before.
    pub(crate) tool_calls: Vec<(&'static str, &'static str)>,
    pub(crate) llm_calls: u64,
    pub(crate) prompt_tokens: u64,
    pub(crate) completion_tokens: u64,
}

/// What `trace` adds, given what was counted before it paused.
pub(crate) fn increments(trace: &ChatTurnTraceResult, counted: &Counted) -> Increments {
    let paused = trace.stop_reason == Some(StopReason::AwaitingApproval);
    let status = match trace.stop_reason {
        Some(StopReason::AwaitingApproval) => "paused",
        Some(StopReason::Error) => "error",
        _ => "ok",
    };
    Increments {
        status,
        // The trace's duration covers every invocation of the turn, so it is
        // observed once, at the end.
        duration_secs: (!paused).then(|| trace.duration_ms as f64 / 1000.0),
        tool_calls: trace
            .tool_calls
            .iter()
            .filter(|c| c.status != ToolCallStatus::Pending && !counted.tool_calls.contains(&c.id))
            .map(|c| (tool_label(&c.name), c.status.as_str()))
            .collect(),
        llm_calls: u64::from(trace.llm_calls.saturating_sub(counted.llm_calls)),
        prompt_tokens: trace
            .usage
            .prompt_tokens
            .saturating_sub(counted.prompt_tokens),
        completion_tokens: trace
            .usage
            .completion_tokens
            .saturating_sub(counted.completion_tokens),
    }
}

/// A finished (or paused) turn: its status, duration, tools, LLM calls and
/// tokens, less what was `counted` before it paused.
pub(crate) fn record_turn(trace: &ChatTurnTraceResult, counted: &Counted) {
    let add = increments(trace, counted);
    metrics::counter!("aics_turns_total", "status" => add.status).increment(1);
    if let Some(secs) = add.duration_secs {
        metrics::histogram!("aics_turn_duration_seconds").record(secs);
    }
    for (tool, status) in add.tool_calls {
        metrics::counter!("aics_tool_calls_total", "tool" => tool, "status" => status).increment(1);
    }
    metrics::counter!("aics_llm_calls_total").increment(add.llm_calls);
    metrics::counter!("aics_llm_tokens_total", "kind" => "prompt").increment(add.prompt_tokens);
    metrics::counter!("aics_llm_tokens_total", "kind" => "completion")
        .increment(add.completion_tokens);
}

/// The `tool` label of a call: a registered tool's name, or `other` for a
/// name the model made up (each distinct label is a series kept forever).
pub fn tool_label(name: &str) -> &'static str {
    aics_agent::tools::SUPPORT_TOOL_NAMES
        .iter()
        .find(|known| **known == name)
        .copied()
        .unwrap_or("other")
}

/// A turn that failed before it produced a trace.
pub(crate) fn record_failed_turn() {
    metrics::counter!("aics_turns_total", "status" => "error").increment(1);
}

/// The number of approvals waiting, as the database counts them (so the
/// gauge agrees across instances).
pub(crate) fn set_pending_approvals(count: i64) {
    metrics::gauge!("aics_pending_approvals").set(count as f64);
}

/// Counts one open event stream while alive.
#[derive(Debug)]
pub struct OpenStreamGuard(());

impl OpenStreamGuard {
    pub fn new() -> Self {
        metrics::gauge!("aics_open_streams").increment(1.0);
        Self(())
    }
}

impl Default for OpenStreamGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OpenStreamGuard {
    fn drop(&mut self) {
        metrics::gauge!("aics_open_streams").decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tools_fold_into_other() {
        assert_eq!(tool_label("order_query"), "order_query");
        assert_eq!(tool_label("rm_rf_slash"), "other");
        assert_eq!(tool_label(""), "other");
    }

    fn trace(llm_calls: u32, prompt: u64, completion: u64, ms: u64) -> ChatTurnTraceResult {
        let mut trace: ChatTurnTraceResult = serde_json::from_value(serde_json::json!({
            "graphExecutionId": "g", "sessionId": "s", "reply": "", "intent": "consult",
            "toolCalls": [], "executedNodes": [], "durationMs": ms, "llmCalls": llm_calls,
            "stepsTaken": 0, "pendingApproval": false, "pendingToolCalls": [],
            "usage": {"promptTokens": prompt, "completionTokens": completion,
                      "totalTokens": prompt + completion},
            "toolsUsed": [], "engine": "graph", "model": "demo",
            "startedAt": "2026-12-01T00:00:00Z"
        }))
        .expect("a trace");
        trace.llm_calls = llm_calls;
        trace
    }

    #[test]
    fn a_paused_then_resumed_turn_counts_its_llm_calls_tokens_and_duration_once() {
        // Paused after one LLM call of 100 + 20 tokens, 300 ms in.
        let mut paused = trace(1, 100, 20, 300);
        paused.stop_reason = Some(StopReason::AwaitingApproval);
        paused.pending_approval = true;
        let first = increments(&paused, &Counted::default());
        assert_eq!(first.status, "paused");
        assert_eq!(first.llm_calls, 1);
        assert_eq!((first.prompt_tokens, first.completion_tokens), (100, 20));
        assert_eq!(first.duration_secs, None, "the duration waits for the end");

        // Resumed: one more call (the trace carries both), ended at 500 ms.
        let mut ended = trace(2, 250, 45, 500);
        ended.stop_reason = Some(StopReason::FinalAnswer);
        let second = increments(&ended, &Counted::before(&paused));
        assert_eq!(second.status, "ok");
        assert_eq!(second.llm_calls, 1);
        assert_eq!((second.prompt_tokens, second.completion_tokens), (150, 25));
        assert_eq!(second.duration_secs, Some(0.5));

        // Summed over both recordings: the turn's own totals, once.
        assert_eq!(first.llm_calls + second.llm_calls, 2);
        assert_eq!(first.prompt_tokens + second.prompt_tokens, 250);
        assert_eq!(first.completion_tokens + second.completion_tokens, 45);
    }

    #[test]
    fn a_turn_that_never_paused_counts_everything() {
        let ended = trace(3, 10, 5, 1200);
        let add = increments(&ended, &Counted::default());
        assert_eq!(add.llm_calls, 3);
        assert_eq!(add.duration_secs, Some(1.2));
    }
}
