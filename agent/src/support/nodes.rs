//! The nodes and edge rules of the support graph (SPEC "The agent graph",
//! seeds 000 and 004).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use aics_types::{AgentEvent, StopReason, ToolCallRecord, ToolCallStatus};
use async_trait::async_trait;
use serde_json::{json, Value};

use super::heuristics::{classify_intent, is_chinese, memory_instruction, similarity};
use super::prompt::{
    parse_plan, plan_arguments, plan_instruction, render_tool_results, results_section,
    system_prompt, Plan,
};
use super::state::{SupportState, ToolCallSig};
use super::{Decision, EngineKind, PlanProtocol, Shared};
use crate::checkpoint::Interrupt;
use crate::graph::{Next, Node, NodeContext, NodeError};
use crate::llm::{stream_call, TokenRoute};
use crate::model::{Message, ModelError, ModelRequest, ModelResponse, ToolCall, ToolChoice};
use crate::tool::{ToolContext, ToolError, ToolRegistry};

pub const INIT_STATE: &str = "init_state";
pub const MEMORY_TRIGGER: &str = "memory_trigger";
pub const ROUTE: &str = "route";
pub const AGENT: &str = "agent";
pub const APPROVAL: &str = "approval";
pub const TOOLS: &str = "tools";
pub const FINALIZE: &str = "finalize";

/// The text a rejected call returns to the model.
pub fn denied_text(reason: &str) -> String {
    format!("denied by supervisor: {reason}")
}

/// Why a call must wait for a supervisor, if it must (unknown tools never do:
/// the tools node turns them into an error result).
pub fn approval_reason(tools: &ToolRegistry, call: &ToolCall) -> Option<String> {
    tools.get(&call.name)?.approval_reason(&call.arguments)
}

/// The edge rule after `agent` (seed 000's `should_continue`, plus approval):
/// stop → finalize; calls of which one is sensitive and undecided →
/// approval; other calls → tools; no calls → finalize.
pub fn route_after_agent(tools: &ToolRegistry, s: &SupportState) -> &'static str {
    if s.stop {
        return FINALIZE;
    }
    let calls = s.pending_calls();
    if calls.is_empty() {
        return FINALIZE;
    }
    let undecided_sensitive = calls
        .iter()
        .any(|c| !s.decisions.contains_key(&c.id) && approval_reason(tools, c).is_some());
    if undecided_sensitive {
        APPROVAL
    } else {
        TOOLS
    }
}

/// Seed 000's loop detection: the last two calls are of the same tool with
/// similar arguments and got similar results.
pub fn loop_detected(s: &SupportState, threshold: f64) -> bool {
    let n = s.tool_call_history.len();
    if n < 2 || s.tool_result_history.len() < n {
        return false;
    }
    let (a, b) = (&s.tool_call_history[n - 2], &s.tool_call_history[n - 1]);
    a.name == b.name
        && similarity(&a.args.to_string(), &b.args.to_string()) >= threshold
        && similarity(&s.tool_result_history[n - 2], &s.tool_result_history[n - 1]) >= threshold
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn record(call: &ToolCall, input: Value, output: Value, status: ToolCallStatus) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id.clone(),
        name: call.name.clone(),
        input,
        output,
        status,
        timestamp: chrono::Utc::now(),
        duration_ms: None,
    }
}

/// `init_state`: resets the per-turn fields.
pub struct InitState(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for InitState {
    async fn run(&self, s: &mut SupportState, _: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(INIT_STATE.into());
        s.current_step = 0;
        s.max_steps = self.0.config.max_tool_loops;
        s.stop = false;
        s.stop_reason = None;
        Ok(Next::Continue)
    }
}

/// `memory_trigger`: stores a memory instruction of the message, then loads
/// the customer's memories for the system prompt. A failing store is logged,
/// never fatal: the customer still gets an answer.
pub struct MemoryTrigger(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for MemoryTrigger {
    async fn run(&self, s: &mut SupportState, _: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(MEMORY_TRIGGER.into());
        let owner = s.memory_owner().to_owned();
        if let Some(text) = memory_instruction(&s.user_message) {
            s.memory_triggered = true;
            if let Err(e) = self.0.memory.remember(&owner, &text).await {
                tracing::warn!(error = %e, "could not store a memory");
            }
        }
        s.memories = match self.0.memory.recall(&owner).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "could not load memories");
                Vec::new()
            }
        };
        Ok(Next::Continue)
    }
}

/// `route`: the heuristic intent label (no LLM call).
pub struct Route;

#[async_trait]
impl Node<SupportState> for Route {
    async fn run(&self, s: &mut SupportState, _: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(ROUTE.into());
        let intent = classify_intent(&s.user_message);
        tracing::debug!(intent = intent.as_str(), "routed");
        s.intent = Some(intent);
        Ok(Next::Continue)
    }
}

/// `agent`: one model step (two calls in the JSON-plan protocol when the
/// plan says respond). At the tool-loop limit the model is called without
/// tools; a detected loop stops the turn without a call; a model error stops
/// it with stop reason `error` and an `error` event.
pub struct Agent(pub(crate) Arc<Shared>);

impl Agent {
    fn limit_reached(&self, s: &SupportState) -> bool {
        match s.engine {
            EngineKind::Graph => s.current_step >= s.max_steps,
            // Linear: one routed tool call, then respond.
            EngineKind::Linear => s.current_step >= 1,
        }
    }

    fn stop_reason_for_answer(&self, s: &SupportState, limit: bool) -> StopReason {
        if limit && s.engine == EngineKind::Graph {
            StopReason::ToolLoopLimit
        } else {
            StopReason::FinalAnswer
        }
    }

    async fn call(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_>,
        request: ModelRequest,
        route: TokenRoute,
    ) -> Result<ModelResponse, ModelError> {
        s.llm_calls += 1;
        let response = stream_call(
            self.0.model.as_ref(),
            request,
            ctx.events,
            route,
            self.0.config.model_timeout,
        )
        .await?;
        if let Some(usage) = response.usage {
            s.usage.add(usage);
        }
        Ok(response)
    }

    /// Gives every call a non-empty id, unique within the turn: approvals
    /// and idempotency keys depend on it, and some servers send none.
    fn fix_ids(s: &SupportState, calls: &mut [ToolCall]) {
        let mut seen: HashSet<String> = s.tool_records.iter().map(|r| r.id.clone()).collect();
        for c in calls.iter_mut() {
            if c.id.trim().is_empty() || seen.contains(&c.id) {
                c.id = format!("call_{}", uuid::Uuid::new_v4().simple());
            }
            seen.insert(c.id.clone());
        }
    }

    async fn native_step(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_>,
        limit: bool,
    ) -> Result<(), ModelError> {
        let cfg = &self.0.config;
        let mut messages = Vec::with_capacity(s.messages.len() + 1);
        messages.push(Message::system(system_prompt(&cfg.persona, &s.memories)));
        messages.extend(s.messages.iter().cloned());
        let request = ModelRequest {
            messages,
            tools: if limit {
                Vec::new()
            } else {
                self.0.tools.specs()
            },
            tool_choice: if limit {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            },
        };
        let response = self.call(s, ctx, request, TokenRoute::Reply).await?;
        let mut calls = response.tool_calls;
        if limit {
            calls.clear();
        } else if s.engine == EngineKind::Linear {
            calls.truncate(1);
        }
        Self::fix_ids(s, &mut calls);
        if calls.is_empty() {
            s.stop = true;
            s.stop_reason = Some(self.stop_reason_for_answer(s, limit));
        }
        s.messages.push(Message::Assistant {
            content: response.content,
            tool_calls: calls,
        });
        Ok(())
    }

    /// The conversation without this turn's tool traffic: in the JSON-plan
    /// protocol tool results reach the model as the numbered list instead.
    fn plain_conversation(s: &SupportState) -> Vec<Message> {
        s.messages
            .iter()
            .filter(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls.is_empty(),
                Message::Tool { .. } | Message::System { .. } => false,
                Message::User { .. } => true,
            })
            .cloned()
            .collect()
    }

    async fn plan_step(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_>,
        limit: bool,
    ) -> Result<(), ModelError> {
        let cfg = &self.0.config;
        let results = render_tool_results(s.finished_records());
        let base = system_prompt(&cfg.persona, &s.memories);
        let conversation = Self::plain_conversation(s);
        if !limit {
            let specs = self.0.tools.specs();
            let mut messages = vec![Message::system(format!(
                "{base}{}",
                plan_instruction(&specs, &results)
            ))];
            messages.extend(conversation.iter().cloned());
            let request = ModelRequest {
                messages,
                tools: Vec::new(),
                tool_choice: ToolChoice::None,
            };
            let response = self.call(s, ctx, request, TokenRoute::Reasoning).await?;
            match parse_plan(&response.content) {
                Some(Plan::CallTool { tool, input }) => {
                    let spec = specs.iter().find(|t| t.name == tool);
                    let mut calls = vec![ToolCall {
                        id: format!("plan_{}", uuid::Uuid::new_v4().simple()),
                        arguments: plan_arguments(input, spec),
                        name: tool,
                    }];
                    Self::fix_ids(s, &mut calls);
                    s.messages.push(Message::Assistant {
                        content: String::new(),
                        tool_calls: calls,
                    });
                    return Ok(());
                }
                Some(Plan::Respond) => {}
                None => tracing::warn!(
                    plan = %response.content.chars().take(200).collect::<String>(),
                    "tool plan did not parse; falling back to respond"
                ),
            }
        }
        let mut messages = vec![Message::system(format!(
            "{base}{}",
            results_section(&results)
        ))];
        messages.extend(conversation);
        let request = ModelRequest {
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
        };
        let response = self.call(s, ctx, request, TokenRoute::Reply).await?;
        s.stop = true;
        s.stop_reason = Some(self.stop_reason_for_answer(s, limit));
        s.messages.push(Message::assistant(response.content));
        Ok(())
    }
}

#[async_trait]
impl Node<SupportState> for Agent {
    async fn run(&self, s: &mut SupportState, ctx: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(AGENT.into());
        let limit = self.limit_reached(s);
        if limit && s.engine == EngineKind::Graph {
            tracing::warn!(
                graph_execution_id = ctx.thread_id,
                max_tool_loops = s.max_steps,
                "tool loop limit reached"
            );
        }
        if !limit && loop_detected(s, self.0.config.loop_similarity) {
            tracing::warn!(
                graph_execution_id = ctx.thread_id,
                "loop detected; stopping"
            );
            s.stop = true;
            s.stop_reason = Some(StopReason::LoopDetected);
            return Ok(Next::Continue);
        }
        let result = match s.protocol {
            PlanProtocol::Native => self.native_step(s, ctx, limit).await,
            PlanProtocol::JsonPlan => self.plan_step(s, ctx, limit).await,
        };
        if let Err(e) = result {
            tracing::warn!(graph_execution_id = ctx.thread_id, error = %e, "model call failed");
            s.stop = true;
            s.stop_reason = Some(StopReason::Error);
            s.error = Some(e.to_string());
            ctx.events
                .emit(AgentEvent::Error {
                    message: format!("the model failed: {e}"),
                })
                .await;
        }
        Ok(Next::Continue)
    }
}

/// `approval`: records the decisions a resume brought, and pauses the turn
/// (one interrupt per undecided sensitive call, keyed by its tool-call id)
/// until every sensitive call of the step is decided.
pub struct Approval(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for Approval {
    async fn run(&self, s: &mut SupportState, ctx: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(APPROVAL.into());
        let calls = s.pending_calls().to_vec();
        if let Some(decisions) = ctx.resume {
            for call in &calls {
                let Some(raw) = decisions.get(&call.id) else {
                    continue;
                };
                if s.decisions.contains_key(&call.id) {
                    continue; // decided by an earlier resume: the first decision stands
                }
                let decision: Decision = serde_json::from_value(raw.clone())
                    .map_err(|e| NodeError(format!("bad decision for {}: {e}", call.id)))?;
                let (approved, reason) = match &decision {
                    Decision::Approve { .. } => (true, None),
                    Decision::Reject { reason } => (false, Some(reason.clone())),
                };
                ctx.events
                    .emit(AgentEvent::ApprovalDecided {
                        id: call.id.clone(),
                        approved,
                        reason,
                        decided_by: None,
                    })
                    .await;
                s.decisions.insert(call.id.clone(), decision);
            }
        }
        let mut interrupts = Vec::new();
        for call in &calls {
            if s.decisions.contains_key(&call.id) {
                continue;
            }
            let Some(reason) = approval_reason(&self.0.tools, call) else {
                continue;
            };
            s.upsert_record(record(
                call,
                call.arguments.clone(),
                Value::Null,
                ToolCallStatus::Pending,
            ));
            ctx.events
                .emit(AgentEvent::ApprovalRequired {
                    tool: call.name.clone(),
                    args: call.arguments.clone(),
                    id: call.id.clone(),
                    session_id: s.session_id.clone(),
                    graph_execution_id: s.graph_execution_id.clone(),
                    reason: reason.clone(),
                })
                .await;
            interrupts.push(Interrupt {
                id: call.id.clone(),
                node: APPROVAL.into(),
                value: json!({ "tool": call.name, "args": call.arguments, "reason": reason }),
            });
        }
        if interrupts.is_empty() {
            Ok(Next::Continue)
        } else {
            s.elapsed_ms += ctx.started.elapsed().as_millis() as u64;
            Ok(Next::Interrupt(interrupts))
        }
    }
}

/// `tools`: runs every call of the last AI message concurrently; each
/// failure (unknown tool, invalid arguments, tool error, timeout) or
/// rejection becomes the result the model sees.
pub struct Tools(pub(crate) Arc<Shared>);

/// How one call of a step is to be handled.
enum CallPlan {
    Run(Value),
    Deny(String),
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
}

#[async_trait]
impl Node<SupportState> for Tools {
    async fn run(&self, s: &mut SupportState, ctx: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(TOOLS.into());
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
            let input = match plan {
                CallPlan::Run(args) => args.clone(),
                CallPlan::Deny(_) => call.arguments.clone(),
            };
            let running = record(call, input.clone(), Value::Null, ToolCallStatus::Running);
            ctx.events
                .emit(AgentEvent::ToolStart {
                    tool: call.name.clone(),
                    args: input,
                    id: call.id.clone(),
                    record: running.clone(),
                })
                .await;
            s.upsert_record(running);
        }
        let state: &SupportState = s;
        let runs = calls.iter().zip(&plans).map(|(call, plan)| async move {
            let started = Instant::now();
            let (output, status) = match plan {
                CallPlan::Deny(reason) => {
                    (Value::String(denied_text(reason)), ToolCallStatus::Denied)
                }
                CallPlan::Run(args) => self.execute(state, call, args.clone()).await,
            };
            let duration_ms = started.elapsed().as_millis() as u64;
            let input = match plan {
                CallPlan::Run(args) => args.clone(),
                CallPlan::Deny(_) => call.arguments.clone(),
            };
            let mut rec = record(call, input, output.clone(), status);
            if let Some(existing) = state.tool_records.iter().find(|r| r.id == call.id) {
                rec.timestamp = existing.timestamp;
            }
            rec.duration_ms = Some(duration_ms);
            ctx.events
                .emit(AgentEvent::ToolEnd {
                    tool: call.name.clone(),
                    id: call.id.clone(),
                    result: output,
                    status,
                    duration_ms,
                    record: rec.clone(),
                })
                .await;
            rec
        });
        let outcomes = futures::future::join_all(runs).await;
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

/// The reply when the turn ended without one (seed 000's finalize rule).
pub fn explanatory_reply(reason: StopReason, chinese: bool) -> String {
    match (reason, chinese) {
        (StopReason::LoopDetected, false) => "I noticed I was repeating the same lookup without learning anything new, so I stopped here. A colleague can take a closer look — could you tell me a little more about what you need?".into(),
        (StopReason::LoopDetected, true) => "我发现自己在重复同样的查询却没有新的结果，所以先停下来了。请再补充一些信息，或由人工客服进一步处理。".into(),
        (StopReason::ToolLoopLimit, false) => "I reached the limit of lookups I can do for one message. Here is what I know so far; a colleague can follow up on the rest.".into(),
        (StopReason::ToolLoopLimit, true) => "本轮查询次数已达上限。以上是目前掌握的信息，其余部分将由同事跟进。".into(),
        (StopReason::Error, false) => "Sorry, something went wrong on our side while preparing the answer. Please try again in a moment.".into(),
        (StopReason::Error, true) => "抱歉，生成回复时系统出现了问题，请稍后再试。".into(),
        (_, false) => "Sorry, I could not produce an answer this time. Please rephrase your question or ask for a colleague.".into(),
        (_, true) => "抱歉，这次没能给出答复。请换个说法，或要求转人工。".into(),
    }
}

/// `finalize`: the reply (the last AI message without calls; an explanation
/// when it is empty and a stop reason exists) and the turn's metadata.
pub struct Finalize;

#[async_trait]
impl Node<SupportState> for Finalize {
    async fn run(&self, s: &mut SupportState, ctx: &NodeContext<'_>) -> Result<Next, NodeError> {
        s.executed_nodes.push(FINALIZE.into());
        let reply = match s.turn_messages().last() {
            Some(Message::Assistant {
                content,
                tool_calls,
            }) if tool_calls.is_empty() => content.trim().to_owned(),
            _ => String::new(),
        };
        let reason = *s.stop_reason.get_or_insert(StopReason::FinalAnswer);
        s.final_reply = if reply.is_empty() {
            let text = explanatory_reply(reason, is_chinese(&s.user_message));
            // Nothing streamed for it yet: show it like a reply.
            ctx.events
                .emit(AgentEvent::LlmToken {
                    token: text.clone(),
                    reasoning_token: None,
                })
                .await;
            text
        } else {
            reply
        };
        s.elapsed_ms += ctx.started.elapsed().as_millis() as u64;
        Ok(Next::End)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fake_tools;

    fn with_calls(calls: Vec<ToolCall>) -> SupportState {
        SupportState {
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: calls,
                },
            ],
            ..SupportState::default()
        }
    }

    fn ticket(id: &str, category: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "ticket_create".into(),
            arguments: json!({"category": category, "summary": "s"}),
        }
    }

    #[test]
    fn after_agent_stop_and_no_calls_go_to_finalize() {
        let tools = fake_tools();
        let mut s = with_calls(vec![]);
        assert_eq!(route_after_agent(&tools, &s), FINALIZE);
        s = with_calls(vec![ticket("a", "inquiry")]);
        s.stop = true;
        assert_eq!(route_after_agent(&tools, &s), FINALIZE);
    }

    #[test]
    fn after_agent_plain_calls_go_to_tools_and_sensitive_ones_to_approval() {
        let tools = fake_tools();
        assert_eq!(
            route_after_agent(&tools, &with_calls(vec![ticket("a", "inquiry")])),
            TOOLS
        );
        let mut s = with_calls(vec![ticket("a", "inquiry"), ticket("b", "refund")]);
        assert_eq!(route_after_agent(&tools, &s), APPROVAL);
        s.decisions
            .insert("b".into(), Decision::Approve { args: None });
        assert_eq!(route_after_agent(&tools, &s), TOOLS);
        // Unknown tools are never held: the tools node reports them.
        let unknown = ToolCall {
            id: "x".into(),
            name: "nope".into(),
            arguments: json!({}),
        };
        assert_eq!(route_after_agent(&tools, &with_calls(vec![unknown])), TOOLS);
    }

    #[test]
    fn loop_detection_needs_same_tool_similar_args_and_similar_results() {
        let sig = |name: &str, id: &str| ToolCallSig {
            id: "x".into(),
            name: name.into(),
            args: json!({"order_id": id}),
        };
        let mut s = SupportState {
            tool_call_history: vec![sig("order_query", "ORD-1"), sig("order_query", "ORD-1")],
            tool_result_history: vec![
                "{\"status\":\"delayed\"}".into(),
                "{\"status\":\"delayed\"}".into(),
            ],
            ..SupportState::default()
        };
        assert!(loop_detected(&s, 0.9));
        s.tool_result_history[1] = "{\"status\":\"delivered\",\"ticket\":\"TCK-1\"}".into();
        assert!(!loop_detected(&s, 0.9), "different results");
        s.tool_result_history[1] = s.tool_result_history[0].clone();
        s.tool_call_history[1] = sig("order_query", "ORD-2");
        assert!(!loop_detected(&s, 0.9), "different arguments");
        s.tool_call_history[1] = sig("logistics_track", "ORD-1");
        assert!(!loop_detected(&s, 0.9), "different tool");
        s.tool_call_history.truncate(1);
        s.tool_result_history.truncate(1);
        assert!(!loop_detected(&s, 0.9), "one call is no loop");
    }

    #[test]
    fn explanations_exist_for_every_stop_reason_in_both_languages() {
        for reason in [
            StopReason::LoopDetected,
            StopReason::ToolLoopLimit,
            StopReason::Error,
            StopReason::FinalAnswer,
        ] {
            assert!(!explanatory_reply(reason, false).is_empty());
            assert!(is_chinese(&explanatory_reply(reason, true)));
        }
        assert_eq!(denied_text("dup"), "denied by supervisor: dup");
    }

    fn ctx_for<'a>(
        events: &'a crate::events::EventSink,
        resume: Option<&'a std::collections::HashMap<String, Value>>,
    ) -> NodeContext<'a> {
        NodeContext {
            thread_id: "t",
            node: "n",
            step: 0,
            events,
            resume,
            started: Instant::now(),
        }
    }

    #[tokio::test]
    async fn init_route_and_finalize_nodes() {
        let shared = Arc::new(Shared {
            model: Arc::new(crate::demo::DemoModel::instant()),
            tools: fake_tools(),
            memory: Arc::new(crate::memory::InMemoryMemoryStore::default()),
            config: super::super::SupportConfig {
                max_tool_loops: 3,
                ..Default::default()
            },
        });
        let events = crate::events::EventSink::none();
        let mut s = SupportState {
            current_step: 9,
            stop: true,
            user_message: "转人工".into(),
            ..SupportState::default()
        };
        InitState(shared.clone())
            .run(&mut s, &ctx_for(&events, None))
            .await
            .unwrap();
        assert_eq!((s.current_step, s.max_steps, s.stop), (0, 3, false));
        Route.run(&mut s, &ctx_for(&events, None)).await.unwrap();
        assert_eq!(s.intent, Some(aics_types::Intent::Escalate));
        s.user_message = "remember that I live in Berlin".into();
        MemoryTrigger(shared)
            .run(&mut s, &ctx_for(&events, None))
            .await
            .unwrap();
        assert!(s.memory_triggered);
        assert_eq!(s.memories, ["I live in Berlin"]);
        s.messages = vec![Message::user("x"), Message::assistant("  The answer. ")];
        let next = Finalize.run(&mut s, &ctx_for(&events, None)).await.unwrap();
        assert_eq!(next, Next::End);
        assert_eq!(s.final_reply, "The answer.");
        assert_eq!(s.stop_reason, Some(StopReason::FinalAnswer));
        assert_eq!(
            s.executed_nodes,
            [INIT_STATE, ROUTE, MEMORY_TRIGGER, FINALIZE]
        );
    }

    #[tokio::test]
    async fn approval_keeps_the_first_decision_and_ignores_unknown_ids() {
        let shared = Arc::new(Shared {
            model: Arc::new(crate::demo::DemoModel::instant()),
            tools: fake_tools(),
            memory: Arc::new(crate::memory::InMemoryMemoryStore::default()),
            config: Default::default(),
        });
        let events = crate::events::EventSink::none();
        let mut s = with_calls(vec![ticket("a", "complaint")]);
        let first = std::collections::HashMap::from([
            (
                "a".to_owned(),
                serde_json::to_value(Decision::Reject {
                    reason: "no".into(),
                })
                .unwrap(),
            ),
            (
                "zzz".to_owned(),
                serde_json::to_value(Decision::Approve { args: None }).unwrap(),
            ),
        ]);
        let next = Approval(shared.clone())
            .run(&mut s, &ctx_for(&events, Some(&first)))
            .await
            .unwrap();
        assert_eq!(next, Next::Continue);
        assert_eq!(s.decisions.len(), 1);
        let second = std::collections::HashMap::from([(
            "a".to_owned(),
            serde_json::to_value(Decision::Approve { args: None }).unwrap(),
        )]);
        Approval(shared)
            .run(&mut s, &ctx_for(&events, Some(&second)))
            .await
            .unwrap();
        assert!(matches!(s.decisions["a"], Decision::Reject { .. }));
    }
}
