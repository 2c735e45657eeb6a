//! The trace of a turn ([`ChatTurnTraceResult`]) from its state, the path
//! the engine recorded and how the invocation ended.

use aics_graph::{Encoded, Interrupt, RunStatus};
use aics_types::{ChatTurnTraceResult, Intent, PendingToolCall, StopReason, ToolCallStatus};
use serde_json::Value;

use super::SupportState;

fn pending_of(interrupts: &[Interrupt]) -> Vec<PendingToolCall> {
    interrupts
        .iter()
        .map(|i| PendingToolCall {
            id: i.id.clone(),
            tool: i
                .value
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            args: i.value.get("args").cloned().unwrap_or(Value::Null),
            reason: i
                .value
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            rule: i
                .value
                .get("rule")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            // The deadline is the service's to set, when it stores the approval.
            expires_at: None,
        })
        .collect()
}

/// The trace of a turn from its state, the executed node path and how the
/// invocation ended. A paused turn's approval token is not the engine's to
/// make: the service mints it when it stores the pending approvals.
///
/// The state is taken, not borrowed: its records (each LLM call with the
/// messages it was sent, each tool call with its input and output) move
/// into the trace. A copy would double them while the turn is stored and
/// announced, for every turn ending at once (BENCHMARKS.md, round 14).
pub fn build_trace(s: SupportState, path: &[String], status: &RunStatus) -> ChatTurnTraceResult {
    let (pending, paused, stop_reason) = match status {
        RunStatus::Interrupted(list) => {
            (pending_of(list), true, Some(StopReason::AwaitingApproval))
        }
        _ => (Vec::new(), false, s.stop_reason),
    };
    let mut tools_used: Vec<String> = Vec::new();
    for r in s.finished_records() {
        if !tools_used.contains(&r.name) {
            tools_used.push(r.name.clone());
        }
    }
    let finished: Vec<_> = s.finished_records().collect();
    let tool_result = match finished.as_slice() {
        [only] => Some(match &*only.output {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }),
        _ => None,
    };
    ChatTurnTraceResult {
        graph_execution_id: s.graph_execution_id,
        session_id: s.session_id,
        reply: if paused { String::new() } else { s.final_reply },
        intent: s.intent.unwrap_or(Intent::Consult),
        tool_calls: s
            .tool_records
            .into_iter()
            .map(Encoded::into_inner)
            .collect(),
        executed_nodes: path.to_vec(),
        duration_ms: s.elapsed_ms,
        llm_calls: s.llm_calls,
        steps_taken: s.current_step,
        stop_reason,
        pending_approval: paused,
        approval_token: None,
        pending_tool_calls: pending,
        usage: s.usage,
        tools_used,
        tool_result,
        engine: s.engine.as_str().to_owned(),
        model: s.model,
        cost_usd: None,
        error: s.error,
        started_at: s.started_at,
        llm_call_records: s
            .llm_call_records
            .into_iter()
            .map(Encoded::into_inner)
            .collect(),
    }
}

/// Whether any call of the trace is still waiting for a supervisor.
pub fn has_pending(trace: &ChatTurnTraceResult) -> bool {
    trace
        .tool_calls
        .iter()
        .any(|c| c.status == ToolCallStatus::Pending)
}
