//! The wiring of the support graph: its nodes, its edges, and the rule that
//! decides where a turn goes after the `agent` node.

use std::sync::Arc;

use aics_graph::{Graph, GraphBuilder, GraphError, END, START};

use super::agent::Shared;
use super::nodes::{
    Agent, Approval, Finalize, InitState, MemoryTrigger, Route, Tools, AGENT, APPROVAL, FINALIZE,
    INIT_STATE, MEMORY_TRIGGER, ROUTE, TOOLS,
};
use super::SupportState;
use crate::model::ToolCall;
use crate::policy::{ApprovalPolicy, Evidence, Verdict};
use crate::tool::ToolRegistry;

/// The approval policy's verdict on a call with `args` in this turn: the
/// server's judgement of what the call does and of the customer's own
/// words, never the model's account of it. Unknown tools are allowed here:
/// the tools node turns them into an error result.
pub fn verdict(
    tools: &ToolRegistry,
    policy: &ApprovalPolicy,
    s: &SupportState,
    call: &ToolCall,
    args: &serde_json::Value,
) -> Verdict {
    if tools.get(&call.name).is_none() {
        return Verdict::Allow;
    }
    policy.judge(&call.name, args, &Evidence::of(s))
}

/// The edge rule after `agent`: stop → finalize; calls of which one the
/// policy holds and is undecided → approval; other calls (refused ones
/// too: the tools node tells the model) → tools; no calls → finalize.
pub fn route_after_agent(
    tools: &ToolRegistry,
    policy: &ApprovalPolicy,
    s: &SupportState,
) -> &'static str {
    if s.stop {
        return FINALIZE;
    }
    let calls = s.pending_calls();
    if calls.is_empty() {
        return FINALIZE;
    }
    let undecided_sensitive = calls.iter().any(|c| {
        !s.decisions.contains_key(&c.id)
            && matches!(
                verdict(tools, policy, s, c, &c.arguments),
                Verdict::Approve(_)
            )
    });
    if undecided_sensitive {
        APPROVAL
    } else {
        TOOLS
    }
}

/// Builds the support graph over `shared`.
pub(crate) fn build_graph(shared: Arc<Shared>) -> Result<Graph<SupportState>, GraphError> {
    let tools = shared.tools.clone();
    let policy = shared.config.approvals.clone();
    let durability = shared.config.durability;
    // Enough room for every tool step, its approval and the forced answer.
    let limit = 8 + 3 * shared.config.max_tool_loops;
    GraphBuilder::new()
        .add_node(INIT_STATE, InitState(shared.clone()))
        .add_node(MEMORY_TRIGGER, MemoryTrigger(shared.clone()))
        .add_node(ROUTE, Route)
        .add_node(AGENT, Agent(shared.clone()))
        .add_node(APPROVAL, Approval(shared.clone()))
        .add_node(TOOLS, Tools(shared))
        .add_node(FINALIZE, Finalize)
        .add_edge(START, INIT_STATE)
        .add_edge(INIT_STATE, MEMORY_TRIGGER)
        .add_edge(MEMORY_TRIGGER, ROUTE)
        .add_edge(ROUTE, AGENT)
        .add_conditional_edges(AGENT, [TOOLS, APPROVAL, FINALIZE], move |s| {
            route_after_agent(&tools, &policy, s)
        })
        .add_edge(APPROVAL, TOOLS)
        .add_edge(TOOLS, AGENT)
        .add_edge(FINALIZE, END)
        .step_limit(limit)
        .durability(durability)
        .compile()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::support::nodes::test_support::{ticket, with_calls};
    use crate::support::Decision;
    use crate::testing::fake_tools;

    #[test]
    fn after_agent_stop_and_no_calls_go_to_finalize() {
        let tools = fake_tools();
        let p = ApprovalPolicy::default();
        let mut s = with_calls(vec![]);
        assert_eq!(route_after_agent(&tools, &p, &s), FINALIZE);
        s = with_calls(vec![ticket("a", "inquiry")]);
        s.stop = true;
        assert_eq!(route_after_agent(&tools, &p, &s), FINALIZE);
    }

    #[test]
    fn after_agent_plain_calls_go_to_tools_and_sensitive_ones_to_approval() {
        let tools = fake_tools();
        let p = ApprovalPolicy::default();
        assert_eq!(
            route_after_agent(&tools, &p, &with_calls(vec![ticket("a", "inquiry")])),
            TOOLS
        );
        let mut s = with_calls(vec![ticket("a", "inquiry"), ticket("b", "refund")]);
        assert_eq!(route_after_agent(&tools, &p, &s), APPROVAL);
        s.decisions
            .insert("b".into(), Decision::Approve { args: None });
        assert_eq!(route_after_agent(&tools, &p, &s), TOOLS);
        // Unknown tools are never held: the tools node reports them.
        let unknown = ToolCall {
            id: "x".into(),
            provider_id: None,
            name: "nope".into(),
            arguments: json!({}),
        };
        assert_eq!(
            route_after_agent(&tools, &p, &with_calls(vec![unknown])),
            TOOLS
        );
    }

    #[test]
    fn the_graph_compiles() {
        let shared = crate::support::nodes::test_support::shared(Default::default());
        assert!(build_graph(shared).is_ok());
    }
}
