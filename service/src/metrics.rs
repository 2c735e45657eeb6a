//! The Prometheus metrics the service records, through the `metrics`
//! facade (the server installs the exporter). Names are those of docs/API.md.

use std::collections::HashSet;

use aics_types::{ChatTurnTraceResult, StopReason, ToolCallStatus};

/// A finished (or paused) turn: its status, duration, tools, LLM calls and tokens.
/// `already_counted` holds the tool-call ids a resumed turn counted before it paused.
pub(crate) fn record_turn(trace: &ChatTurnTraceResult, already_counted: &HashSet<String>) {
    let status = match trace.stop_reason {
        Some(StopReason::AwaitingApproval) => "paused",
        Some(StopReason::Error) => "error",
        _ => "ok",
    };
    metrics::counter!("aics_turns_total", "status" => status).increment(1);
    metrics::histogram!("aics_turn_duration_seconds").record(trace.duration_ms as f64 / 1000.0);
    for call in &trace.tool_calls {
        if call.status == ToolCallStatus::Pending || already_counted.contains(&call.id) {
            continue;
        }
        metrics::counter!(
            "aics_tool_calls_total",
            "tool" => tool_label(&call.name),
            "status" => call.status.as_str()
        )
        .increment(1);
    }
    metrics::counter!("aics_llm_calls_total").increment(u64::from(trace.llm_calls));
    metrics::counter!("aics_llm_tokens_total", "kind" => "prompt")
        .increment(trace.usage.prompt_tokens);
    metrics::counter!("aics_llm_tokens_total", "kind" => "completion")
        .increment(trace.usage.completion_tokens);
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
}
