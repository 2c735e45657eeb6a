//! `approval`: records the decisions a resume brought, and pauses the turn
//! (one interrupt per undecided call the approval policy holds, keyed by its
//! tool-call id, carrying the rule that held it) until every held call of
//! the step is decided.

use std::sync::Arc;

use aics_graph::{Interrupt, Next, Node, NodeContext, NodeError};
use aics_types::{SharedValue, ToolCallStatus};
use async_trait::async_trait;
use serde_json::json;

use super::record;
use crate::policy::Verdict;
use crate::support::agent::Shared;
use crate::support::graph::verdict;
use crate::support::SupportState;

/// Holds sensitive calls for a supervisor.
pub struct Approval(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for Approval {
    async fn run(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        let calls = s.pending_calls().to_vec();
        for call in &calls {
            // The first decision stands: a later resume cannot change it.
            if s.decisions.contains_key(&call.id) {
                continue;
            }
            if let Some(decision) = ctx.resume_value(&call.id) {
                s.decisions.insert(call.id.clone(), decision.clone());
            }
        }
        let mut interrupts = Vec::new();
        for call in &calls {
            if s.decisions.contains_key(&call.id) {
                continue;
            }
            let Verdict::Approve(hold) = verdict(
                &self.0.tools,
                &self.0.config.approvals,
                s,
                call,
                &call.arguments,
            ) else {
                continue;
            };
            s.upsert_record(record(
                call,
                call.arguments.clone().into(),
                SharedValue::default(),
                ToolCallStatus::Pending,
            ));
            interrupts.push(Interrupt::new(
                call.id.clone(),
                json!({
                    "tool": call.name,
                    "args": call.arguments,
                    "reason": hold.reason,
                    "rule": hold.rule,
                }),
            ));
        }
        if interrupts.is_empty() {
            Ok(Next::Continue)
        } else {
            s.elapsed_ms += ctx.started.elapsed().as_millis() as u64;
            Ok(Next::Interrupt(interrupts))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::support::nodes::test_support::{ctx, shared, ticket, with_calls};
    use crate::support::Decision;

    #[tokio::test]
    async fn sensitive_calls_pause_the_turn_one_interrupt_each() {
        let node = Approval(shared(Default::default()));
        let mut s = with_calls(vec![
            ticket("a", "complaint"),
            ticket("b", "inquiry"),
            ticket("c", "refund"),
        ]);
        let Next::Interrupt(list) = node.run(&mut s, &ctx(None)).await.unwrap() else {
            panic!("expected a pause")
        };
        let ids: Vec<&str> = list.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(list[0].value["rule"], "sensitive-ticket");
        assert_eq!(s.tool_records.len(), 2);
        assert!(s
            .tool_records
            .iter()
            .all(|r| r.status == ToolCallStatus::Pending));
    }

    #[tokio::test]
    async fn the_first_decision_stands_and_unknown_ids_are_ignored() {
        let node = Approval(shared(Default::default()));
        let mut s = with_calls(vec![ticket("a", "complaint")]);
        let first = HashMap::from([
            (
                "a".to_owned(),
                Decision::Reject {
                    reason: "no".into(),
                },
            ),
            ("zzz".to_owned(), Decision::Approve { args: None }),
        ]);
        let next = node.run(&mut s, &ctx(Some(&first))).await.unwrap();
        assert_eq!(next, Next::Continue);
        assert_eq!(s.decisions.len(), 1);
        let second = HashMap::from([("a".to_owned(), Decision::Approve { args: None })]);
        node.run(&mut s, &ctx(Some(&second))).await.unwrap();
        assert!(matches!(s.decisions["a"], Decision::Reject { .. }));
    }
}
