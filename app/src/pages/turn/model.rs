//! What the turn page draws, computed from the checkpoints alone (so it is
//! the same on the server and at hydration, and live: each checkpoint's
//! state carries the LLM call records and tool records made so far).
//!
//! - [`path_of`]: the path the turn took, one box per node run, with the
//!   agent ⇄ tools loops numbered and the interrupt marked.
//! - [`calls_at`]: the LLM calls a step made.
//! - [`tools_at`]: the tool calls a step started or ended.

use aics_types::{CheckpointView, LlmCallRecord, ToolCallRecord};
use serde_json::Value;

/// One box of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathStep {
    pub step: u32,
    pub node: String,
    /// How many times this node had run, this one included (1 = first).
    pub visit: u32,
    /// The run paused here (pending interrupts at this checkpoint).
    pub interrupt: bool,
}

/// The path of the turn, in step order: the input (`__start__`) left out.
pub fn path_of(checkpoints: &[CheckpointView]) -> Vec<PathStep> {
    let mut seen: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    checkpoints
        .iter()
        .filter(|c| c.step > 0)
        .map(|c| {
            let visit = seen.entry(c.node.as_str()).or_default();
            *visit += 1;
            PathStep {
                step: c.step,
                node: c.node.clone(),
                visit: *visit,
                interrupt: !c.pending_interrupts.is_empty(),
            }
        })
        .collect()
}

/// How many times the turn went round agent → tools.
pub fn loops(path: &[PathStep]) -> usize {
    path.iter().filter(|s| s.node == "tools").count()
}

fn list<T: serde::de::DeserializeOwned>(state: &Value, field: &str) -> Vec<T> {
    state
        .get(field)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The LLM calls the node of `checkpoint` made (their step is its step).
pub fn calls_at(checkpoint: &CheckpointView) -> Vec<LlmCallRecord> {
    list::<LlmCallRecord>(&checkpoint.state, "llm_call_records")
        .into_iter()
        .filter(|r| r.step == checkpoint.step)
        .collect()
}

/// The tool calls that are new or changed at `checkpoint` since `before`.
pub fn tools_at(
    before: Option<&CheckpointView>,
    checkpoint: &CheckpointView,
) -> Vec<ToolCallRecord> {
    let earlier: Vec<ToolCallRecord> = before
        .map(|b| list(&b.state, "tool_records"))
        .unwrap_or_default();
    list::<ToolCallRecord>(&checkpoint.state, "tool_records")
        .into_iter()
        .filter(|r| !earlier.contains(r))
        .collect()
}

/// A value on one line, cut to `max` characters.
pub fn short(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cp(step: u32, node: &str, state: Value, interrupts: usize) -> CheckpointView {
        CheckpointView {
            checkpoint_id: format!("c{step}"),
            parent_id: None,
            thread_id: "g".into(),
            step,
            node: node.into(),
            state,
            pending_interrupts: (0..interrupts).map(|i| format!("i{i}")).collect(),
            created_at: "2026-12-01T00:00:00Z".parse().unwrap(),
        }
    }

    fn record(step: u32) -> Value {
        json!({"step": step, "node": "agent", "purpose": "answer", "model": "demo",
               "protocol": "native", "messages": [], "startedAt": "2026-12-01T00:00:00Z",
               "latencyMs": 5})
    }

    #[test]
    fn the_path_numbers_loops_and_marks_the_interrupt() {
        let nodes = [
            "__start__",
            "init_state",
            "agent",
            "tools",
            "agent",
            "tools",
            "agent",
            "approval",
        ];
        let checkpoints: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| cp(i as u32, n, json!({}), usize::from(*n == "approval")))
            .collect();
        let path = path_of(&checkpoints);
        assert_eq!(path.len(), 7, "the input is not a node");
        assert_eq!(path[5].node, "agent");
        assert_eq!(path[5].visit, 3);
        assert!(path[6].interrupt && !path[5].interrupt);
        assert_eq!(loops(&path), 2);
    }

    #[test]
    fn a_steps_llm_calls_and_tool_calls_are_its_own() {
        let tool = |status: &str| {
            json!({"id": "call_1", "name": "order_query", "input": {}, "output": null,
                   "status": status, "timestamp": "2026-12-01T00:00:00Z"})
        };
        let agent = cp(
            3,
            "agent",
            json!({"llm_call_records": [record(1), record(3)], "tool_records": [tool("running")]}),
            0,
        );
        let calls = calls_at(&agent);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].step, 3);
        let tools = cp(4, "tools", json!({"tool_records": [tool("ok")]}), 0);
        let changed = tools_at(Some(&agent), &tools);
        assert_eq!(changed.len(), 1);
        assert!(tools_at(Some(&tools), &tools).is_empty());
        assert!(calls_at(&cp(5, "x", json!({"llm_call_records": "bad"}), 0)).is_empty());
        assert_eq!(short(&json!("abcdef"), 3), "abc…");
    }
}
