//! Message content in the GenAI conventions' JSON shapes: the input and
//! output messages of an LLM call (`gen_ai.input.messages`,
//! `gen_ai.output.messages`: `{role, parts: [{type, ...}]}`) and a tool
//! call's arguments and result. Recorded only when content capture is on
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).

use aics_types::{LlmCallRecord, LlmMessage, LlmToolCall};
use serde_json::{json, Value};

/// Whether the environment turns content capture on: `true` (or the newer
/// conventions' `span_only` / `span_and_event`), in any case.
pub fn capture_from_env() -> bool {
    std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .map(|v| capture_value(&v))
        .unwrap_or(false)
}

/// [`capture_from_env`] on one value.
pub fn capture_value(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "span_only" | "span_and_event"
    )
}

/// `gen_ai.input.messages` of a call: its messages as sent, in order.
pub fn input_messages(call: &LlmCallRecord) -> String {
    let messages: Vec<Value> = call.messages.iter().map(input_message).collect();
    Value::Array(messages).to_string()
}

fn input_message(m: &LlmMessage) -> Value {
    let mut parts = Vec::new();
    if m.role == "tool" {
        parts.push(json!({
            "type": "tool_call_response",
            "id": m.tool_call_id.clone().unwrap_or_default(),
            "result": m.content,
        }));
    } else if !m.content.is_empty() || m.tool_calls.is_empty() {
        parts.push(json!({ "type": "text", "content": m.content }));
    }
    parts.extend(m.tool_calls.iter().map(tool_call_part));
    json!({ "role": m.role, "parts": parts })
}

/// `gen_ai.output.messages` of a call: the one answer, with its reasoning,
/// text, tool calls and finish reason.
pub fn output_messages(call: &LlmCallRecord) -> String {
    let mut parts = Vec::new();
    if !call.reasoning.is_empty() {
        parts.push(json!({ "type": "reasoning", "content": call.reasoning }));
    }
    if !call.output.is_empty() {
        parts.push(json!({ "type": "text", "content": call.output }));
    }
    parts.extend(call.tool_calls.iter().map(tool_call_part));
    json!([{
        "role": "assistant",
        "parts": parts,
        "finish_reason": call.finish_reason.clone().unwrap_or_default(),
    }])
    .to_string()
}

fn tool_call_part(c: &LlmToolCall) -> Value {
    json!({ "type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments })
}

/// A JSON value as the attribute's string (a string stays as it is).
pub fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_is_on_only_when_asked() {
        for on in ["true", "TRUE", " True ", "1", "span_only", "SPAN_AND_EVENT"] {
            assert!(capture_value(on), "{on}");
        }
        for off in ["", "false", "no_content", "event_only", "yes please"] {
            assert!(!capture_value(off), "{off}");
        }
    }

    #[test]
    fn messages_follow_the_parts_shape() {
        let call = LlmCallRecord {
            messages: vec![
                LlmMessage {
                    role: "system".into(),
                    content: "be kind".into(),
                    ..LlmMessage::default()
                },
                LlmMessage {
                    role: "assistant".into(),
                    content: String::new(),
                    tool_calls: vec![LlmToolCall {
                        id: "call_1".into(),
                        name: "order_query".into(),
                        arguments: json!({"orderId": "ORD-123"}),
                    }],
                    ..LlmMessage::default()
                },
                LlmMessage {
                    role: "tool".into(),
                    content: "{\"status\":\"shipped\"}".into(),
                    tool_call_id: Some("call_1".into()),
                    name: Some("order_query".into()),
                    ..LlmMessage::default()
                },
            ],
            output: "It shipped.".into(),
            reasoning: "look it up".into(),
            finish_reason: Some("stop".into()),
            ..LlmCallRecord::default()
        };
        let input: Value = serde_json::from_str(&input_messages(&call)).unwrap();
        assert_eq!(input[0]["parts"][0]["content"], "be kind");
        assert_eq!(input[1]["parts"].as_array().unwrap().len(), 1);
        assert_eq!(input[1]["parts"][0]["type"], "tool_call");
        assert_eq!(input[1]["parts"][0]["arguments"]["orderId"], "ORD-123");
        assert_eq!(input[2]["parts"][0]["type"], "tool_call_response");
        assert_eq!(input[2]["parts"][0]["id"], "call_1");
        let output: Value = serde_json::from_str(&output_messages(&call)).unwrap();
        assert_eq!(output[0]["parts"][0]["type"], "reasoning");
        assert_eq!(output[0]["parts"][1]["content"], "It shipped.");
        assert_eq!(output[0]["finish_reason"], "stop");
    }
}
