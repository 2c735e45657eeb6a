//! `agent`: one model step. Native tool calling makes one call with the
//! tools bound; the JSON-plan protocol makes a planning call, then (when the
//! plan says respond) an answering call. At the tool-loop limit the model is
//! called without tools; a detected loop stops the turn without a call; a
//! model error stops it with stop reason `error`.

use std::collections::HashSet;
use std::sync::Arc;

use aics_graph::{Encoded, Next, Node, NodeContext, NodeError};
use aics_types::{LlmCallRecord, StopReason};
use async_trait::async_trait;

use crate::llm::{
    finish_name, record_calls, sent_messages, stream_call_timed, tool_choice_name, Streamed,
    TokenRoute,
};
use crate::model::{Message, ModelError, ModelRequest, ModelResponse, ToolCall, ToolChoice};
use crate::support::agent::Shared;
use crate::support::heuristics::similarity;
use crate::support::prompt::{
    parse_plan, plan_arguments, plan_instruction, render_tool_results, results_section,
    system_prompt, Plan,
};
use crate::support::{EngineKind, PlanProtocol, Progress, SupportState};

/// Loop detection: the last two calls are of the same tool with similar
/// arguments and got similar results.
pub fn loop_detected(s: &SupportState, threshold: f64) -> bool {
    let n = s.tool_call_history.len();
    if n < 2 {
        return false;
    }
    let (a, b) = (&s.tool_call_history[n - 2], &s.tool_call_history[n - 1]);
    let (Some(a_result), Some(b_result)) = (s.tool_result(&a.id), s.tool_result(&b.id)) else {
        return false;
    };
    a.name == b.name
        && similarity(&a.args.to_string(), &b.args.to_string()) >= threshold
        && similarity(a_result, b_result) >= threshold
}

/// A new id of ours for a tool call: `call_` and 32 hex digits.
pub fn new_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Calls the model and decides whether the turn needs tools.
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

    /// One model call, counted and kept as an [`LlmCallRecord`] in the
    /// state (so it is checkpointed and stored with the turn's trace).
    /// `purpose` is `answer` or `plan`.
    async fn call(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
        request: ModelRequest,
        route: TokenRoute,
        purpose: &str,
    ) -> Result<ModelResponse, ModelError> {
        s.llm_calls += 1;
        let mut record = LlmCallRecord {
            step: ctx.step,
            node: ctx.node.to_owned(),
            purpose: purpose.to_owned(),
            model: self.0.model.name(),
            protocol: s.protocol.as_str().to_owned(),
            messages: sent_messages(&request.messages),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            tool_choice: tool_choice_name(&request.tool_choice),
            started_at: chrono::Utc::now(),
            ..LlmCallRecord::default()
        };
        let mut forward = |text: Streamed| {
            ctx.progress(match text {
                Streamed::Reply(t) => Progress::Token(t),
                Streamed::Reasoning(t) => Progress::Reasoning(t),
            })
        };
        let (result, timing) = stream_call_timed(
            self.0.model.as_ref(),
            request,
            route,
            self.0.config.model_timeout,
            &mut forward,
        )
        .await;
        record.latency_ms = millis(timing.latency);
        record.ttft_ms = timing.first_chunk.map(millis);
        match &result {
            Ok(response) => {
                record.output = response.content.clone();
                record.reasoning = response.reasoning.clone();
                record.tool_calls = record_calls(&response.tool_calls);
                record.finish_reason = response.finish.as_ref().map(finish_name);
                if let Some(usage) = response.usage {
                    record.usage = usage;
                    s.usage.add(usage);
                }
            }
            Err(e) => record.error = Some(e.user_message()),
        }
        s.llm_call_records.push(record.into());
        result
    }

    /// The calls the turn goes on with, with our ids, on the record of the
    /// call that asked for them (a plan's call, too).
    fn note_calls(s: &mut SupportState, calls: &[ToolCall]) {
        if let Some(record) = s.llm_call_records.last_mut() {
            record.tool_calls = record_calls(calls);
        }
    }

    /// Gives every call our id, unique across all runs: approvals, the
    /// idempotency keys of side effects and the console depend on it, and
    /// providers send none, blank ones, or the same `call_0` in every
    /// conversation. The provider's id is kept for the messages sent back to
    /// it, unless it is blank or repeats one of this conversation.
    fn assign_ids(s: &SupportState, calls: &mut [ToolCall]) {
        let mut seen: HashSet<String> = s
            .messages
            .iter()
            .filter_map(|m| match &**m {
                Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
            .filter_map(|c| c.provider_id.clone())
            .collect();
        for c in calls.iter_mut() {
            c.id = new_call_id();
            c.provider_id = c
                .provider_id
                .take()
                .filter(|p| !p.trim().is_empty() && seen.insert(p.clone()));
        }
    }

    async fn native_step(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
        limit: bool,
    ) -> Result<(), ModelError> {
        let cfg = &self.0.config;
        let mut messages = Vec::with_capacity(s.messages.len() + 1);
        messages.push(Arc::new(Message::system(system_prompt(
            &cfg.persona,
            &s.memories,
        ))));
        messages.extend(s.messages.iter().map(Encoded::shared));
        let request = ModelRequest {
            messages,
            tools: if limit {
                Arc::default()
            } else {
                self.0.tools.specs()
            },
            tool_choice: if limit {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            },
        };
        let response = self
            .call(s, ctx, request, TokenRoute::Reply, "answer")
            .await?;
        let mut calls = response.tool_calls;
        if limit {
            calls.clear();
        } else if s.engine == EngineKind::Linear {
            calls.truncate(1);
        }
        Self::assign_ids(s, &mut calls);
        Self::note_calls(s, &calls);
        if calls.is_empty() {
            s.stop = true;
            s.stop_reason = Some(self.stop_reason_for_answer(s, limit));
        }
        s.messages.push(
            Message::Assistant {
                content: response.content,
                tool_calls: calls,
            }
            .into(),
        );
        Ok(())
    }

    /// The conversation without this turn's tool traffic: in the JSON-plan
    /// protocol tool results reach the model as the numbered list instead.
    fn plain_conversation(s: &SupportState) -> Vec<Arc<Message>> {
        s.messages
            .iter()
            .filter(|m| match &***m {
                Message::Assistant { tool_calls, .. } => tool_calls.is_empty(),
                Message::Tool { .. } | Message::System { .. } => false,
                Message::User { .. } => true,
            })
            .map(Encoded::shared)
            .collect()
    }

    async fn plan_step(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
        limit: bool,
    ) -> Result<(), ModelError> {
        let cfg = &self.0.config;
        let results = render_tool_results(s.finished_records());
        let base = system_prompt(&cfg.persona, &s.memories);
        let conversation = Self::plain_conversation(s);
        if !limit {
            let specs = self.0.tools.specs();
            let mut messages = vec![Arc::new(Message::system(format!(
                "{base}{}",
                plan_instruction(&specs, &results)
            )))];
            messages.extend(conversation.iter().cloned());
            let request = ModelRequest {
                messages,
                tools: Arc::default(),
                tool_choice: ToolChoice::None,
            };
            let response = self
                .call(s, ctx, request, TokenRoute::Reasoning, "plan")
                .await?;
            match parse_plan(&response.content) {
                Some(Plan::CallTool { tool, input }) => {
                    let spec = specs.iter().find(|t| t.name == tool);
                    let mut calls = vec![ToolCall::new(tool, plan_arguments(input, spec))];
                    Self::assign_ids(s, &mut calls);
                    Self::note_calls(s, &calls);
                    s.messages.push(
                        Message::Assistant {
                            content: String::new(),
                            tool_calls: calls,
                        }
                        .into(),
                    );
                    return Ok(());
                }
                Some(Plan::Respond) => {}
                None => tracing::warn!(
                    plan = %response.content.chars().take(200).collect::<String>(),
                    "tool plan did not parse; falling back to respond"
                ),
            }
        }
        let mut messages = vec![Arc::new(Message::system(format!(
            "{base}{}",
            results_section(&results)
        )))];
        messages.extend(conversation);
        let request = ModelRequest {
            messages,
            tools: Arc::default(),
            tool_choice: ToolChoice::None,
        };
        let response = self
            .call(s, ctx, request, TokenRoute::Reply, "answer")
            .await?;
        s.stop = true;
        s.stop_reason = Some(self.stop_reason_for_answer(s, limit));
        s.messages.push(Message::assistant(response.content).into());
        Ok(())
    }
}

#[async_trait]
impl Node<SupportState> for Agent {
    async fn run(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
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
            // Viewers and the stored trace get the short sentence; the
            // detail (endpoint, body) is in the log line above.
            s.error = Some(e.user_message());
        }
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::support::state::ToolCallSig;

    /// A model that runs away (9 MB of reply) ends its turn with the reply
    /// cut at the cap, as an answer, its call's finish reason `length`; what
    /// streamed to viewers is no more than what is kept.
    #[tokio::test]
    async fn a_runaway_reply_is_cut_and_ends_the_turn_as_an_answer() {
        use crate::llm::{CUT_MARKER, MAX_REPLY_BYTES};
        use aics_types::AgentEvent;

        let model = Arc::new(crate::testing::RunawayModel::new("la ", 3_000_000));
        assert!(model.reply_len() >= 9_000_000);
        let agent = crate::SupportAgent::new(
            model.clone(),
            crate::testing::fake_tools(),
            Arc::new(aics_graph::MemoryCheckpointer::new()),
            Arc::new(crate::memory::InMemoryMemoryStore::default()),
            crate::SupportConfig::default(),
        );
        let (sink, mut events) = crate::EventSink::channel();
        let trace = agent
            .run_turn(
                "g-runaway",
                crate::TurnInput::new("s-runaway", "Tell me everything"),
                &sink,
            )
            .await
            .unwrap();
        drop(sink);
        assert!(trace.reply.ends_with(CUT_MARKER), "cut with the marker");
        assert!(trace.reply.len() <= MAX_REPLY_BYTES + CUT_MARKER.len());
        assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
        let calls = &trace.llm_call_records;
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].finish_reason.as_deref(), Some("length"));
        assert_eq!(calls[0].output.len(), trace.reply.len());
        let mut streamed = 0;
        while let Ok(event) = events.try_recv() {
            if let AgentEvent::LlmToken { token, .. } = event {
                streamed += token.len();
            }
        }
        assert!(
            streamed <= MAX_REPLY_BYTES + CUT_MARKER.len(),
            "{streamed} bytes streamed"
        );
        assert!(model.pieces_read() < 20_000, "the rest was not read");
    }

    #[test]
    fn loop_detection_needs_same_tool_similar_args_and_similar_results() {
        let sig = |name: &str, id: &str, order: &str| ToolCallSig {
            id: id.into(),
            name: name.into(),
            args: json!({"order_id": order}).into(),
        };
        let result = |id: &str, content: &str| Message::Tool {
            tool_call_id: id.into(),
            name: "order_query".into(),
            content: content.into(),
        };
        let delayed = "{\"status\":\"delayed\"}";
        let mut s = SupportState {
            tool_call_history: vec![
                sig("order_query", "c1", "ORD-1"),
                sig("order_query", "c2", "ORD-1"),
            ],
            messages: vec![result("c1", delayed).into(), result("c2", delayed).into()],
            ..SupportState::default()
        };
        assert!(loop_detected(&s, 0.9));
        s.messages[1] = result("c2", "{\"status\":\"delivered\",\"ticket\":\"TCK-1\"}").into();
        assert!(!loop_detected(&s, 0.9), "different results");
        s.messages[1] = result("c2", delayed).into();
        s.tool_call_history[1] = sig("order_query", "c2", "ORD-2");
        assert!(!loop_detected(&s, 0.9), "different arguments");
        s.tool_call_history[1] = sig("logistics_track", "c2", "ORD-1");
        assert!(!loop_detected(&s, 0.9), "different tool");
        s.tool_call_history[1] = sig("order_query", "c2", "ORD-1");
        s.messages.truncate(1);
        assert!(
            !loop_detected(&s, 0.9),
            "a call without its result is no loop"
        );
        s.tool_call_history.truncate(1);
        assert!(!loop_detected(&s, 0.9), "one call is no loop");
    }
}
