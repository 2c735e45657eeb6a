//! The JSON body of a chat-completions request, in OpenAI's shape: streamed,
//! or unstreamed for servers that refuse tools while streaming.

use std::collections::HashMap;

use aics_agent::model::{Message, ModelRequest, ToolCall, ToolChoice, ToolSpec};
use serde_json::{json, Map, Value};

use aics_agent::PlanProtocol;

use crate::config::OpenAiConfig;

/// The body for `request`: model, messages, tools and tool_choice (native
/// protocol only), sampling options, `stream: true` and
/// `stream_options.include_usage` so that the last chunk carries the usage.
/// `max_tokens` is sent unless the config sets it to 0.
pub fn chat_body(config: &OpenAiConfig, request: &ModelRequest) -> Value {
    body(config, request, true)
}

/// The same body with `stream: false` and no `stream_options`: the fallback
/// for a server that refuses tools while streaming (llama-cpp-python).
pub fn unstreamed_body(config: &OpenAiConfig, request: &ModelRequest) -> Value {
    body(config, request, false)
}

fn body(config: &OpenAiConfig, request: &ModelRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    // A tool message names its call by our id; the provider knows the call
    // by the id it gave (its wire id), so translate on the way out.
    let wire_ids: HashMap<&str, &str> = request
        .messages
        .iter()
        .filter_map(|m| match &**m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .map(|c| (c.id.as_str(), c.wire_id()))
        .collect();
    body.insert(
        "messages".into(),
        Value::Array(
            request
                .messages
                .iter()
                .map(|m| message(m, &wire_ids))
                .collect(),
        ),
    );
    // Servers reject tool_choice without tools, and models without native
    // tool calling reject tools: with the JSON plan the tools are in the prompt.
    if config.protocol == PlanProtocol::Native && !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
    }
    if let Some(temperature) = config.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = config.max_tokens.filter(|m| *m > 0) {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    body.insert("stream".into(), Value::Bool(stream));
    if stream {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    Value::Object(body)
}

fn message(message: &Message, wire_ids: &HashMap<&str, &str>) -> Value {
    match message {
        Message::System { content } => json!({ "role": "system", "content": content }),
        Message::User { content } => json!({ "role": "user", "content": content }),
        Message::Assistant {
            content,
            tool_calls,
        } if !tool_calls.is_empty() => {
            // OpenAI wants `null`, not "", beside tool calls; some servers
            // refuse an empty string there.
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({
                "role": "assistant",
                "content": content,
                "tool_calls": tool_calls.iter().map(tool_call).collect::<Vec<_>>(),
            })
        }
        Message::Assistant { content, .. } => json!({ "role": "assistant", "content": content }),
        // OpenAI's tool message has no `name`; the id ties it to its call.
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => {
            let id = wire_ids
                .get(tool_call_id.as_str())
                .copied()
                .unwrap_or(tool_call_id);
            json!({ "role": "tool", "tool_call_id": id, "content": content })
        }
    }
}

fn tool_call(call: &ToolCall) -> Value {
    // Arguments travel as JSON text. Ones that did not parse were kept as a
    // string by the response builder: send that text back as it came.
    let arguments = match &call.arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    json!({
        "id": call.wire_id(),
        "type": "function",
        "function": { "name": call.name, "arguments": arguments },
    })
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_tool_calls_and_tool_results_take_openai_shape() {
        let request = ModelRequest {
            tools: vec![].into(),
            tool_choice: ToolChoice::Auto,
            ..ModelRequest::new(vec![
                Message::user("where is A1?"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_ours1".into(),
                            provider_id: Some("call_1".into()),
                            name: "order_query".into(),
                            arguments: json!({"order_id": "A1"}),
                        },
                        ToolCall {
                            id: "call_ours2".into(),
                            provider_id: None,
                            name: "broken".into(),
                            arguments: Value::String("{not json".into()),
                        },
                    ],
                },
                Message::Tool {
                    tool_call_id: "call_ours1".into(),
                    name: "order_query".into(),
                    content: "{\"status\":\"shipped\"}".into(),
                },
            ])
        };
        let body = chat_body(&OpenAiConfig::default(), &request);
        let assistant = &body["messages"][1];
        assert_eq!(assistant["content"], Value::Null);
        assert_eq!(
            assistant["tool_calls"][0]["function"]["arguments"],
            "{\"order_id\":\"A1\"}"
        );
        assert_eq!(
            assistant["tool_calls"][1]["function"]["arguments"],
            "{not json"
        );
        assert_eq!(assistant["tool_calls"][0]["type"], "function");
        // The provider's own id goes back to it; ours where it gave none.
        assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
        assert_eq!(assistant["tool_calls"][1]["id"], "call_ours2");
        assert_eq!(
            body["messages"][2],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"shipped\"}"})
        );
        // No tools bound: neither tools nor tool_choice is sent.
        assert!(body.get("tools").is_none());
        assert!(body.get("tool_choice").is_none());
        assert_eq!(body["stream_options"]["include_usage"], true);
        // max_tokens by default, so a small model cannot run on forever.
        assert_eq!(body["max_tokens"], 1024);
    }

    #[test]
    fn max_tokens_zero_sends_none_and_the_unstreamed_body_has_no_stream_options() {
        let config = OpenAiConfig {
            max_tokens: Some(0),
            ..OpenAiConfig::default()
        };
        let request = ModelRequest::new(vec![Message::user("hi")]);
        assert!(chat_body(&config, &request).get("max_tokens").is_none());
        let body = unstreamed_body(&OpenAiConfig::default(), &request);
        assert_eq!(body["stream"], false);
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["max_tokens"], 1024);
    }

    #[test]
    fn json_plan_providers_never_send_tools() {
        let config = OpenAiConfig {
            protocol: PlanProtocol::JsonPlan,
            ..OpenAiConfig::default()
        };
        let request = ModelRequest {
            tools: vec![ToolSpec {
                name: "order_query".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            tool_choice: ToolChoice::Required,
            ..ModelRequest::new(vec![Message::user("hi")])
        };
        let body = chat_body(&config, &request);
        assert!(body.get("tools").is_none());
        assert!(body.get("tool_choice").is_none());
    }

    #[test]
    fn tool_choices() {
        assert_eq!(tool_choice(&ToolChoice::Auto), json!("auto"));
        assert_eq!(tool_choice(&ToolChoice::None), json!("none"));
        assert_eq!(tool_choice(&ToolChoice::Required), json!("required"));
        assert_eq!(
            tool_choice(&ToolChoice::Named("order_query".into())),
            json!({"type": "function", "function": {"name": "order_query"}})
        );
    }
}
