//! `tools`: runs every call of the last AI message concurrently; each
//! failure (unknown tool, invalid arguments, tool error, timeout),
//! rejection or refusal becomes the result the model sees, never a crash.
//! The approval policy judges the arguments that would run here once more
//! (a supervisor's edit included): a refused call never runs.

use std::sync::Arc;
use std::time::Instant;

use aics_graph::{Next, Node, NodeContext, NodeError};
use aics_types::{SharedValue, ToolCallRecord, ToolCallStatus};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::record;
use crate::model::{Message, ToolCall};
use crate::policy::{Hold, Verdict};
use crate::support::agent::Shared;
use crate::support::graph::verdict;
use crate::support::replies::denied_text;
use crate::support::state::ToolCallSig;
use crate::support::{Decision, Progress, SupportState};
use crate::tool::result_text;
use crate::tool::{ToolContext, ToolError};
use crate::tools::StepReads;

/// Executes the step's tool calls.
pub struct Tools(pub(crate) Arc<Shared>);

/// How one call of a step is to be handled.
enum CallPlan {
    /// Run with these arguments: shared by the call's record, its events
    /// and the calls' history, as the result will be.
    Run(SharedValue),
    /// Rejected by a supervisor, with the reason.
    Deny(String),
    /// Refused by the policy: what the model is told, the arguments judged.
    Refuse(String, SharedValue),
}

impl CallPlan {
    /// The arguments the timeline shows: what ran, or what was proposed.
    fn input(&self, call: &ToolCall) -> SharedValue {
        match self {
            CallPlan::Run(args) | CallPlan::Refuse(_, args) => args.clone(),
            CallPlan::Deny(_) => call.arguments.clone().into(),
        }
    }
}

/// What the model reads for a call the policy refused.
pub(crate) fn refused_text(hold: &Hold) -> String {
    format!(
        "not allowed: {} (approval rule {}). The call was not made; tell the customer it \
         cannot be done here.",
        hold.reason, hold.rule
    )
}

/// The plan of `call`: a supervisor's rejection stands; otherwise the
/// arguments that would run (the edit, else the proposal) are judged, and a
/// call held for approval that nobody approved does not run either.
fn plan_of(shared: &Shared, s: &SupportState, call: &ToolCall) -> CallPlan {
    let judge = |args: &Value| verdict(&shared.tools, &shared.config.approvals, s, call, args);
    let (args, approved) = match s.decisions.get(&call.id) {
        Some(Decision::Reject { reason }) => return CallPlan::Deny(reason.clone()),
        Some(Decision::Approve { args: Some(edited) }) => (edited.clone(), true),
        Some(Decision::Approve { args: None }) => (call.arguments.clone(), true),
        None => (call.arguments.clone(), false),
    };
    match judge(&args) {
        Verdict::Refuse(hold) => CallPlan::Refuse(refused_text(&hold), args.into()),
        Verdict::Approve(hold) if !approved => CallPlan::Refuse(
            refused_text(&Hold {
                reason: format!("it needs a supervisor's approval ({})", hold.reason),
                ..hold
            }),
            args.into(),
        ),
        _ => CallPlan::Run(args.into()),
    }
}

impl Tools {
    async fn execute(
        &self,
        s: &SupportState,
        call: &ToolCall,
        args: Value,
        reads: &StepReads,
    ) -> (Value, ToolCallStatus) {
        let result = match self.0.tools.get(&call.name) {
            None => Err(ToolError::UnknownTool(call.name.clone())),
            Some(_) if !args.is_object() => Err(ToolError::InvalidArguments(format!(
                "expected a JSON object, got {}",
                result_text(&args).chars().take(200).collect::<String>()
            ))),
            Some(tool) => {
                let ctx = ToolContext {
                    session_id: s.session_id.clone(),
                    customer_id: s.customer_id.clone(),
                    channel: s.channel,
                    graph_execution_id: s.graph_execution_id.clone(),
                    tool_call_id: call.id.clone(),
                    reads: reads.clone(),
                };
                let timeout = self.0.config.tool_timeout;
                match tokio::time::timeout(timeout, tool.call(&ctx, args)).await {
                    Ok(r) => r,
                    Err(_) => Err(ToolError::Timeout(timeout.as_millis() as u64)),
                }
            }
        };
        match result {
            Ok(v) => (v, ToolCallStatus::Ok),
            Err(e) => (json!({ "error": e.to_string() }), ToolCallStatus::Error),
        }
    }

    /// Runs (or denies) one call and reports its finished record.
    async fn settle(
        &self,
        s: &SupportState,
        ctx: &NodeContext<'_, SupportState>,
        call: &ToolCall,
        plan: &CallPlan,
        reads: &StepReads,
    ) -> ToolCallRecord {
        let started = Instant::now();
        let (output, status) = match plan {
            CallPlan::Deny(reason) => (Value::String(denied_text(reason)), ToolCallStatus::Denied),
            CallPlan::Refuse(text, _) => (Value::String(text.clone()), ToolCallStatus::Denied),
            CallPlan::Run(args) => self.execute(s, call, Value::clone(args), reads).await,
        };
        let mut rec = record(call, plan.input(call), output.into(), status);
        if let Some(existing) = s.tool_records.iter().find(|r| r.id == call.id) {
            rec.timestamp = existing.timestamp;
        }
        rec.duration_ms = Some(started.elapsed().as_millis() as u64);
        ctx.progress(Progress::ToolFinished(rec.clone()));
        rec
    }
}

#[async_trait]
impl Node<SupportState> for Tools {
    async fn run(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        let calls = s.pending_calls().to_vec();
        let plans: Vec<CallPlan> = calls.iter().map(|c| plan_of(&self.0, s, c)).collect();
        for (call, plan) in calls.iter().zip(&plans) {
            let running = record(
                call,
                plan.input(call),
                SharedValue::default(),
                ToolCallStatus::Running,
            );
            ctx.progress(Progress::ToolStarted(running.clone()));
            s.upsert_record(running);
        }
        let state: &SupportState = s;
        // The step's calls share what they read (an order two of them ask
        // about is read once); the next step reads afresh.
        let reads = StepReads::default();
        let outcomes = futures::future::join_all(
            calls
                .iter()
                .zip(&plans)
                .map(|(call, plan)| self.settle(state, ctx, call, plan, &reads)),
        )
        .await;
        for (call, rec) in calls.iter().zip(outcomes) {
            let input = rec.input.clone();
            let content = result_text(&rec.output);
            s.upsert_record(rec);
            s.tool_call_history.push(ToolCallSig {
                id: call.id.clone(),
                name: call.name.clone(),
                args: input.clone(),
            });
            s.messages.push(
                Message::Tool {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    content,
                }
                .into(),
            );
            // The conversation shows the arguments that actually ran.
            if input != call.arguments {
                // Only the message changed is written anew (`&mut` on an
                // `Encoded` forgets its JSON).
                let asked = s.messages.iter_mut().rev().find(|m| {
                    matches!(&***m, Message::Assistant { tool_calls, .. }
                        if tool_calls.iter().any(|c| c.id == call.id))
                });
                if let Some(Message::Assistant { tool_calls, .. }) = asked.map(|m| &mut **m) {
                    if let Some(c) = tool_calls.iter_mut().find(|c| c.id == call.id) {
                        c.arguments = Value::clone(&input);
                    }
                }
            }
        }
        s.current_step += 1;
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::{ApprovalsConfig, RuleConfig};
    use crate::support::nodes::test_support::{ctx, ticket, with_calls};
    use crate::support::SupportConfig;
    use crate::testing::{fake_tools_with, FakeBackend};

    /// Tools over a backend the test can inspect, under `policy`.
    fn node(policy: ApprovalsConfig) -> (Tools, Arc<FakeBackend>) {
        let backend = Arc::new(FakeBackend::default());
        let shared = Arc::new(Shared {
            model: Arc::new(crate::demo::DemoModel::instant()),
            tools: fake_tools_with(backend.clone()),
            memory: Arc::new(crate::memory::InMemoryMemoryStore::default()),
            config: SupportConfig {
                approvals: Arc::new(policy.compile().unwrap()),
                ..SupportConfig::default()
            },
        });
        (Tools(shared), backend)
    }

    fn refuse_wire_transfers() -> ApprovalsConfig {
        ApprovalsConfig {
            rules: vec![
                RuleConfig {
                    tool: "ticket_create".into(),
                    when: Some("category in [complaint, refund]".into()),
                    ..RuleConfig::default()
                },
                RuleConfig {
                    name: Some("no-wires".into()),
                    tool: "ticket_create".into(),
                    when: Some("summary contains wire".into()),
                    action: Some("refuse".into()),
                    reason: Some("we never pay by wire".into()),
                    ..RuleConfig::default()
                },
            ],
            ..ApprovalsConfig::default()
        }
    }

    #[tokio::test]
    async fn a_refused_call_never_runs_and_the_model_is_told() {
        let mut tools = std::collections::BTreeMap::new();
        tools.insert("ticket_create".to_owned(), "never".to_owned());
        let (node, backend) = node(ApprovalsConfig {
            tools,
            ..ApprovalsConfig::default()
        });
        let mut s = with_calls(vec![ticket("a", "inquiry")]);
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(backend.tickets_created(), 0);
        assert_eq!(s.tool_records[0].status, ToolCallStatus::Denied);
        let Some(Message::Tool { content, .. }) = s.messages.last().map(|m| &**m) else {
            panic!("no tool result")
        };
        assert!(content.starts_with("not allowed:"), "{content}");
        assert!(content.contains("tools.ticket_create"), "{content}");
    }

    #[tokio::test]
    async fn the_supervisors_edit_is_judged_again() {
        let (node, backend) = node(refuse_wire_transfers());
        // Approved, but edited into a call the policy refuses: it does not run.
        let mut s = with_calls(vec![ticket("a", "complaint")]);
        s.decisions.insert(
            "a".into(),
            Decision::Approve {
                args: Some(json!({"category": "complaint", "summary": "pay them by wire"})),
            },
        );
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(backend.tickets_created(), 0);
        assert_eq!(s.tool_records[0].status, ToolCallStatus::Denied);
        assert_eq!(s.tool_records[0].input["summary"], "pay them by wire");
        // An edit the policy allows runs, with the edited arguments.
        let mut s = with_calls(vec![ticket("b", "complaint")]);
        s.decisions.insert(
            "b".into(),
            Decision::Approve {
                args: Some(json!({"category": "refund", "summary": "refund it"})),
            },
        );
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(backend.tickets_created(), 1);
        assert_eq!(s.tool_records[0].status, ToolCallStatus::Ok);
        assert_eq!(s.tool_records[0].output["category"], "refund");
    }

    #[tokio::test]
    async fn a_held_call_nobody_approved_does_not_run() {
        let (node, backend) = node(ApprovalsConfig::default());
        let mut s = with_calls(vec![ticket("a", "refund")]);
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(backend.tickets_created(), 0);
        assert_eq!(s.tool_records[0].status, ToolCallStatus::Denied);
    }
}
