//! `tools`: runs every call of the last AI message concurrently; each
//! failure (unknown tool, invalid arguments, tool error, timeout) or
//! rejection becomes the result the model sees, never a crash.

use std::sync::Arc;
use std::time::Instant;

use aics_graph::{Next, Node, NodeContext, NodeError};
use aics_types::{ToolCallRecord, ToolCallStatus};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::{record, value_text};
use crate::model::{Message, ToolCall};
use crate::support::agent::Shared;
use crate::support::replies::denied_text;
use crate::support::state::ToolCallSig;
use crate::support::{Decision, Progress, SupportState};
use crate::tool::{ToolContext, ToolError};

/// Executes the step's tool calls.
pub struct Tools(pub(crate) Arc<Shared>);

/// How one call of a step is to be handled.
enum CallPlan {
    Run(Value),
    Deny(String),
}

impl CallPlan {
    /// The arguments the timeline shows: what ran, or what was proposed.
    fn input(&self, call: &ToolCall) -> Value {
        match self {
            CallPlan::Run(args) => args.clone(),
            CallPlan::Deny(_) => call.arguments.clone(),
        }
    }
}

impl Tools {
    async fn execute(
        &self,
        s: &SupportState,
        call: &ToolCall,
        args: Value,
    ) -> (Value, ToolCallStatus) {
        let result = match self.0.tools.get(&call.name) {
            None => Err(ToolError::UnknownTool(call.name.clone())),
            Some(_) if !args.is_object() => Err(ToolError::InvalidArguments(format!(
                "expected a JSON object, got {}",
                value_text(&args).chars().take(200).collect::<String>()
            ))),
            Some(tool) => {
                let ctx = ToolContext {
                    session_id: s.session_id.clone(),
                    customer_id: s.customer_id.clone(),
                    graph_execution_id: s.graph_execution_id.clone(),
                    tool_call_id: call.id.clone(),
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
    ) -> ToolCallRecord {
        let started = Instant::now();
        let (output, status) = match plan {
            CallPlan::Deny(reason) => (Value::String(denied_text(reason)), ToolCallStatus::Denied),
            CallPlan::Run(args) => self.execute(s, call, args.clone()).await,
        };
        let mut rec = record(call, plan.input(call), output, status);
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
        let plans: Vec<CallPlan> = calls
            .iter()
            .map(|c| match s.decisions.get(&c.id) {
                Some(Decision::Reject { reason }) => CallPlan::Deny(reason.clone()),
                Some(Decision::Approve { args: Some(edited) }) => CallPlan::Run(edited.clone()),
                _ => CallPlan::Run(c.arguments.clone()),
            })
            .collect();
        for (call, plan) in calls.iter().zip(&plans) {
            let running = record(call, plan.input(call), Value::Null, ToolCallStatus::Running);
            ctx.progress(Progress::ToolStarted(running.clone()));
            s.upsert_record(running);
        }
        let state: &SupportState = s;
        let outcomes = futures::future::join_all(
            calls
                .iter()
                .zip(&plans)
                .map(|(call, plan)| self.settle(state, ctx, call, plan)),
        )
        .await;
        for (call, rec) in calls.iter().zip(outcomes) {
            let input = rec.input.clone();
            let content = value_text(&rec.output);
            s.upsert_record(rec);
            s.tool_call_history.push(ToolCallSig {
                id: call.id.clone(),
                name: call.name.clone(),
                args: input.clone(),
            });
            s.tool_result_history.push(content.clone());
            s.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
            });
            // The conversation shows the arguments that actually ran.
            if input != call.arguments {
                for m in s.messages.iter_mut().rev() {
                    if let Message::Assistant { tool_calls, .. } = m {
                        if let Some(c) = tool_calls.iter_mut().find(|c| c.id == call.id) {
                            c.arguments = input.clone();
                            break;
                        }
                    }
                }
            }
        }
        s.current_step += 1;
        Ok(Next::Continue)
    }
}
