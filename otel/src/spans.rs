//! [`GenAiObserver`]: each stored run segment of a turn as spans of the
//! OpenTelemetry GenAI conventions, made after the fact with the times of
//! its records:
//!
//! ```text
//! invoke_agent support            (INTERNAL; one per run segment, the root)
//! ├── chat {model}                (CLIENT; each LLM call of the segment)
//! ├── execute_tool {tool}         (INTERNAL; each tool call that ended in it)
//! └── events: aics.approval.requested / approved / rejected / expired
//! ```
//!
//! A turn that pauses for approval is one trace per run segment: the
//! segment that paused carries `aics.approval.requested` for each held call;
//! the segment that resumed carries the decisions (who, when) and a link to
//! the paused segment's span when this process made it. Every span has
//! `gen_ai.conversation.id` and the root `aics.turn.id` (the graph
//! execution id) to join them. Content (messages, tool arguments and
//! results, free-text reasons) is recorded only when capture is on.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use aics_service::{SegmentFailure, TurnObserver, TurnSegment};
use aics_types::{
    Approval, ApprovalStatus, LlmCallRecord, StopReason, Timestamp, ToolCallRecord, ToolCallStatus,
};
use opentelemetry::trace::{
    Link, Span, SpanBuilder, SpanContext, SpanKind, Status, TraceContextExt,
};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::SdkTracer;

use crate::content;

/// `gen_ai.agent.name` of the support agent.
pub const AGENT_NAME: &str = "support";

/// How many paused turns' spans are remembered for the resumed segment's
/// link (a turn resumed elsewhere, or after a restart, has none).
const REMEMBERED_PAUSES: usize = 4096;

/// Makes the spans of each run segment; see the module docs.
#[derive(Debug)]
pub struct GenAiObserver {
    tracer: SdkTracer,
    capture_content: bool,
    /// The root span of each turn's last paused segment, by graph execution id.
    paused: Mutex<HashMap<String, SpanContext>>,
}

impl GenAiObserver {
    /// An observer making spans with `tracer`, content only when
    /// `capture_content`.
    pub fn new(tracer: SdkTracer, capture_content: bool) -> Self {
        Self {
            tracer,
            capture_content,
            paused: Mutex::default(),
        }
    }

    fn remember_pause(&self, id: &str, span: Option<SpanContext>) -> Option<SpanContext> {
        let mut paused = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = paused.remove(id);
        if let Some(span) = span {
            if paused.len() >= REMEMBERED_PAUSES {
                paused.clear();
            }
            paused.insert(id.to_owned(), span);
        }
        earlier
    }
}

impl TurnObserver for GenAiObserver {
    fn segment_stored(&self, segment: &TurnSegment<'_>) {
        let trace = segment.trace;
        let provider = provider_name(&segment.model.provider);
        let request_model = model_of(&segment.model.model);
        let conversation = KeyValue::new("gen_ai.conversation.id", trace.session_id.clone());
        let calls: Vec<&LlmCallRecord> = trace
            .llm_call_records
            .iter()
            .skip(segment.earlier_llm_calls)
            .collect();
        let tools: Vec<&ToolCallRecord> = trace
            .tool_calls
            .iter()
            .filter(|c| !matches!(c.status, ToolCallStatus::Pending | ToolCallStatus::Running))
            .filter(|c| !segment.earlier_tool_calls.contains(&c.id))
            .collect();
        let (input_tokens, output_tokens) = calls.iter().fold((0, 0), |(i, o), c| {
            (i + c.usage.prompt_tokens, o + c.usage.completion_tokens)
        });
        let paused = trace.stop_reason == Some(StopReason::AwaitingApproval);
        let failed = trace.stop_reason == Some(StopReason::Error);

        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.provider.name", provider.clone()),
            KeyValue::new("gen_ai.agent.name", AGENT_NAME),
            KeyValue::new("gen_ai.request.model", request_model.clone()),
            conversation.clone(),
            KeyValue::new("gen_ai.usage.input_tokens", input_tokens as i64),
            KeyValue::new("gen_ai.usage.output_tokens", output_tokens as i64),
            KeyValue::new("aics.turn.id", trace.graph_execution_id.clone()),
            KeyValue::new("aics.turn.segment", segment.kind.as_str()),
            KeyValue::new("aics.turn.engine", trace.engine.clone()),
            KeyValue::new("aics.turn.intent", trace.intent.as_str()),
        ];
        if !trace.model.is_empty() {
            attributes.push(KeyValue::new(
                "gen_ai.response.model",
                model_of(&trace.model),
            ));
        }
        if let Some(reason) = trace.stop_reason {
            attributes.push(KeyValue::new("aics.turn.stop_reason", reason.as_str()));
        }
        if let Some(last) = calls.last().and_then(|c| c.finish_reason.clone()) {
            attributes.push(strings("gen_ai.response.finish_reasons", vec![last]));
        }
        let cost: Option<f64> = calls.iter().filter_map(|c| c.cost_usd).reduce(|a, b| a + b);
        if let Some(cost) = cost {
            attributes.push(KeyValue::new("aics.cost_usd", cost));
        }
        if failed {
            attributes.push(KeyValue::new("error.type", turn_error_type(&calls)));
        }
        let earlier = self.remember_pause(&trace.graph_execution_id, None);
        let mut root = SpanBuilder::from_name(format!("invoke_agent {AGENT_NAME}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(time(segment.started_at))
            .with_attributes(attributes)
            .with_links(
                earlier
                    .into_iter()
                    .map(|paused| {
                        Link::new(
                            paused,
                            vec![KeyValue::new("aics.link", "paused_segment")],
                            0,
                        )
                    })
                    .collect(),
            )
            .start(&self.tracer);
        for decision in segment.decisions {
            self.decision_event(&mut root, decision);
        }
        if paused {
            for call in &trace.pending_tool_calls {
                let mut attrs = vec![
                    KeyValue::new("gen_ai.tool.name", call.tool.clone()),
                    KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
                    KeyValue::new("aics.approval.rule", call.rule.clone()),
                ];
                if let Some(at) = call.expires_at {
                    attrs.push(KeyValue::new("aics.approval.expires_at", at.to_rfc3339()));
                }
                if self.capture_content {
                    attrs.push(KeyValue::new("aics.approval.reason", call.reason.clone()));
                    attrs.push(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        content::json_text(&call.args),
                    ));
                }
                root.add_event_with_timestamp(
                    "aics.approval.requested",
                    time(segment.ended_at),
                    attrs,
                );
            }
        }
        if failed {
            root.set_status(Status::error(if self.capture_content {
                trace
                    .error
                    .clone()
                    .unwrap_or_else(|| "the turn failed".into())
            } else {
                "the turn failed".into()
            }));
        }
        let cx = Context::new().with_span(root);
        for call in calls {
            self.chat_span(&cx, call, &provider, &request_model, &conversation);
        }
        for call in tools {
            self.tool_span(&cx, call, segment.started_at, &conversation);
        }
        let root = cx.span();
        if paused {
            self.remember_pause(&trace.graph_execution_id, Some(root.span_context().clone()));
        }
        root.end_with_timestamp(time(segment.ended_at));
    }

    fn segment_failed(&self, failure: &SegmentFailure<'_>) {
        let mut root = SpanBuilder::from_name(format!("invoke_agent {AGENT_NAME}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(time(failure.started_at))
            .with_attributes(vec![
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new(
                    "gen_ai.provider.name",
                    provider_name(&failure.model.provider),
                ),
                KeyValue::new("gen_ai.agent.name", AGENT_NAME),
                KeyValue::new("gen_ai.request.model", model_of(&failure.model.model)),
                KeyValue::new("gen_ai.conversation.id", failure.session_id.to_owned()),
                KeyValue::new("aics.turn.id", failure.graph_execution_id.to_owned()),
                KeyValue::new("aics.turn.segment", failure.kind.as_str()),
                KeyValue::new("error.type", failure.error_type),
            ])
            .start(&self.tracer);
        root.set_status(Status::error(failure.error_type));
        root.end_with_timestamp(time(failure.ended_at));
    }
}

impl GenAiObserver {
    /// `chat {model}` for one LLM call.
    fn chat_span(
        &self,
        parent: &Context,
        call: &LlmCallRecord,
        provider: &str,
        request_model: &str,
        conversation: &KeyValue,
    ) {
        let response_model = model_of(&call.model);
        let model = if response_model.is_empty() {
            request_model.to_owned()
        } else {
            response_model.clone()
        };
        let start = time(call.started_at);
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", request_model.to_owned()),
            KeyValue::new("gen_ai.response.model", model.clone()),
            conversation.clone(),
            KeyValue::new("gen_ai.usage.input_tokens", call.usage.prompt_tokens as i64),
            KeyValue::new(
                "gen_ai.usage.output_tokens",
                call.usage.completion_tokens as i64,
            ),
            KeyValue::new("gen_ai.output.type", "text"),
            KeyValue::new("aics.llm.purpose", call.purpose.clone()),
            KeyValue::new("aics.llm.protocol", call.protocol.clone()),
            KeyValue::new("aics.llm.step", i64::from(call.step)),
            strings("aics.llm.tools", call.tools.clone()),
        ];
        if let Some(reason) = &call.finish_reason {
            attributes.push(strings(
                "gen_ai.response.finish_reasons",
                vec![reason.clone()],
            ));
        }
        if let Some(ttft) = call.ttft_ms {
            attributes.push(KeyValue::new("aics.llm.ttft_ms", ttft as i64));
        }
        if let Some(cost) = call.cost_usd {
            attributes.push(KeyValue::new("aics.cost_usd", cost));
        }
        if call.error.is_some() {
            attributes.push(KeyValue::new("error.type", "llm_error"));
        }
        if self.capture_content {
            attributes.push(KeyValue::new(
                "gen_ai.input.messages",
                content::input_messages(call),
            ));
            attributes.push(KeyValue::new(
                "gen_ai.output.messages",
                content::output_messages(call),
            ));
        }
        let mut span = SpanBuilder::from_name(format!("chat {model}"))
            .with_kind(SpanKind::Client)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        if let Some(error) = &call.error {
            // The error sentence is ours (`ModelError::user_message`).
            span.set_status(Status::error(error.clone()));
        }
        span.end_with_timestamp(start + Duration::from_millis(call.latency_ms));
    }

    /// `execute_tool {tool}` for one call that ended in this segment. A call
    /// held for approval was proposed in an earlier segment: it starts no
    /// earlier than this one.
    fn tool_span(
        &self,
        parent: &Context,
        call: &ToolCallRecord,
        segment_start: Timestamp,
        conversation: &KeyValue,
    ) {
        let start = time(call.timestamp.max(segment_start));
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", call.name.clone()),
            KeyValue::new("gen_ai.tool.call.id", call.id.clone()),
            KeyValue::new("gen_ai.tool.type", "function"),
            conversation.clone(),
            KeyValue::new("aics.tool.status", call.status.as_str()),
        ];
        let error = match call.status {
            ToolCallStatus::Error => Some("tool_error"),
            ToolCallStatus::Denied => Some("denied"),
            _ => None,
        };
        if let Some(kind) = error {
            attributes.push(KeyValue::new("error.type", kind));
        }
        if self.capture_content {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                content::json_text(&call.input),
            ));
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.result",
                content::json_text(&call.output),
            ));
        }
        let mut span = SpanBuilder::from_name(format!("execute_tool {}", call.name))
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        if let Some(kind) = error {
            span.set_status(Status::error(kind));
        }
        span.end_with_timestamp(start + Duration::from_millis(call.duration_ms.unwrap_or(0)));
    }

    /// A supervisor's (or a deadline's) decision as an event on the span of
    /// the segment it resumed.
    fn decision_event(&self, root: &mut opentelemetry_sdk::trace::Span, decision: &Approval) {
        let name = match decision.status {
            ApprovalStatus::Approved => "aics.approval.approved",
            ApprovalStatus::Rejected => "aics.approval.rejected",
            ApprovalStatus::Expired => "aics.approval.expired",
            ApprovalStatus::Cancelled => "aics.approval.cancelled",
            ApprovalStatus::Pending => return,
        };
        let mut attrs = vec![
            KeyValue::new("gen_ai.tool.name", decision.tool.clone()),
            KeyValue::new("gen_ai.tool.call.id", decision.id.clone()),
            KeyValue::new("aics.approval.rule", decision.rule.clone()),
            KeyValue::new("aics.approval.edited", decision.approved_args.is_some()),
        ];
        if let Some(by) = &decision.decided_by {
            attrs.push(KeyValue::new("aics.approval.decided_by", by.clone()));
        }
        if self.capture_content {
            if let Some(reason) = &decision.decision_reason {
                attrs.push(KeyValue::new(
                    "aics.approval.decision_reason",
                    reason.clone(),
                ));
            }
        }
        let at = decision.decided_at.unwrap_or(decision.created_at);
        root.add_event_with_timestamp(name, time(at), attrs);
    }
}

/// `gen_ai.provider.name`: the conventions' `openai` for the
/// OpenAI-compatible provider, `aics.demo` for the demo model.
fn provider_name(provider: &str) -> String {
    match provider {
        "demo" => "aics.demo".into(),
        other => other.to_owned(),
    }
}

/// The model of `provider:model` (`openai:gpt-4o-mini` → `gpt-4o-mini`).
fn model_of(name: &str) -> String {
    name.split_once(':')
        .map_or(name, |(_, model)| model)
        .to_owned()
}

/// The `error.type` of a failed turn: `llm_error` when an LLM call failed.
fn turn_error_type(calls: &[&LlmCallRecord]) -> &'static str {
    if calls.iter().any(|c| c.error.is_some()) {
        "llm_error"
    } else {
        "_OTHER"
    }
}

fn strings(key: &'static str, values: Vec<String>) -> KeyValue {
    KeyValue::new(
        key,
        Value::Array(opentelemetry::Array::String(
            values.into_iter().map(Into::into).collect(),
        )),
    )
}

fn time(t: Timestamp) -> SystemTime {
    t.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_provider_and_model() {
        assert_eq!(model_of("openai:gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(model_of("demo"), "demo");
        assert_eq!(provider_name("demo"), "aics.demo");
        assert_eq!(provider_name("openai"), "openai");
    }
}
