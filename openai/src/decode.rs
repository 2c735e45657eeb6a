//! Turns the `data:` of one server-sent event into [`ModelChunk`]s.
//!
//! The wire types are lenient on purpose: every field is optional, unknown
//! fields are ignored, `null` is as good as absent. That absorbs what
//! OpenAI-compatible servers vary on: llama.cpp repeating the tool-call id and
//! name in every chunk and sending a legacy `function_call` beside
//! `tool_calls`, DeepSeek's `reasoning_content` (vLLM's `reasoning`), usage in
//! a last chunk with no choices, and an empty-string `finish_reason`.

use aics_agent::model::{FinishReason, ModelChunk, ModelError};
use aics_types::TokenUsage;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{json_message, summarize_text};
// URLs are redacted here; the provider masks its own secrets in these errors.
use crate::redact::Redactor;

/// What one event meant.
#[derive(Debug, PartialEq)]
pub(crate) enum Decoded {
    /// Zero or more chunks for the engine.
    Chunks(Vec<ModelChunk>),
    /// `[DONE]`: the stream ended properly.
    Done,
}

/// Decodes the events of one stream; it remembers what the end needs.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    /// A real finish reason was passed on.
    finished: bool,
    /// A server sent `finish_reason: ""`, which we hold back as "not yet".
    empty_finish: bool,
}

impl ChunkDecoder {
    /// Decodes one event's data; a chunk that does not parse is a
    /// [`ModelError::Protocol`], an error payload a [`ModelError::Other`].
    pub(crate) fn decode(&mut self, data: &str) -> Result<Decoded, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Decoded::Done);
        }
        if data.is_empty() {
            // An event with an empty data line (a keep-alive some proxies send).
            return Ok(Decoded::Chunks(Vec::new()));
        }
        let chunk: WireChunk = serde_json::from_str(data).map_err(|err| {
            ModelError::Protocol(format!(
                "a chunk did not parse ({err}): {}",
                summarize_text(data, &Redactor::default())
            ))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = json_message(&serde_json::json!({ "error": error }))
                .unwrap_or_else(|| error.to_string());
            return Err(ModelError::Other(format!(
                "the model server reported an error mid-stream: {}",
                summarize_text(&message, &Redactor::default())
            )));
        }

        let mut out = Vec::new();
        // We never ask for n > 1; other choices, should a server send them, are ignored.
        for choice in chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.delta {
                self.decode_delta(delta, &mut out);
            }
            match choice.finish_reason.as_deref().map(str::trim) {
                None => {}
                // Some servers send "" (or the text "null") in every chunk.
                Some("") | Some("null") => self.empty_finish = true,
                Some(reason) => {
                    self.finished = true;
                    out.push(ModelChunk::Finish(finish_reason(reason)));
                }
            }
        }
        if let Some(usage) = chunk.usage.and_then(WireUsage::into_usage) {
            out.push(ModelChunk::Usage(usage));
        }
        Ok(Decoded::Chunks(out))
    }

    /// What to pass on at `[DONE]`: when the server only ever said
    /// `finish_reason: ""`, that is what the engine gets, as it was sent.
    pub(crate) fn finish_at_done(&self) -> Option<ModelChunk> {
        (!self.finished && self.empty_finish)
            .then(|| ModelChunk::Finish(FinishReason::Other(String::new())))
    }

    fn decode_delta(&mut self, delta: WireDelta, out: &mut Vec<ModelChunk>) {
        // DeepSeek says reasoning_content, vLLM and OpenRouter say reasoning;
        // a server sending both means the same text.
        if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning) {
            if !reasoning.is_empty() {
                out.push(ModelChunk::Reasoning(reasoning));
            }
        }
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            out.push(ModelChunk::Text(content));
        }
        let tool_calls = delta.tool_calls.unwrap_or_default();
        if !tool_calls.is_empty() {
            // The legacy function_call beside tool_calls repeats the same
            // call (llama-cpp-python): counting it would double the arguments.
            for (position, call) in tool_calls.into_iter().enumerate() {
                let function = call.function.unwrap_or_default();
                push_tool_delta(
                    out,
                    // Without an index, the position in the chunk (0 for a
                    // lone call) is the best guess.
                    call.index.unwrap_or(position),
                    call.id,
                    function.name,
                    function.arguments,
                );
            }
        } else if let Some(function) = delta.function_call {
            // A server speaking only the legacy field: one call, index 0.
            push_tool_delta(out, 0, None, function.name, function.arguments);
        }
    }
}

/// Decodes the JSON body of an unstreamed completion (`stream: false`, the
/// fallback for servers that refuse tools while streaming) into the chunks a
/// stream would have carried: the whole reply as one text chunk, each tool
/// call as one delta, then the finish reason and the usage.
pub(crate) fn decode_completion(body: &str) -> Result<Vec<ModelChunk>, ModelError> {
    let completion: WireCompletion = serde_json::from_str(body.trim()).map_err(|err| {
        ModelError::Protocol(format!(
            "an unstreamed completion did not parse ({err}): {}",
            summarize_text(body, &Redactor::default())
        ))
    })?;
    if let Some(error) = completion.error.filter(|e| !e.is_null()) {
        let message = json_message(&serde_json::json!({ "error": error }))
            .unwrap_or_else(|| error.to_string());
        return Err(ModelError::Other(format!(
            "the model server reported an error: {}",
            summarize_text(&message, &Redactor::default())
        )));
    }
    let mut decoder = ChunkDecoder::default();
    let mut out = Vec::new();
    let choice = completion
        .choices
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.index.unwrap_or(0) == 0)
        .ok_or_else(|| ModelError::Protocol("an unstreamed completion had no choice".into()))?;
    if let Some(message) = choice.message {
        decoder.decode_delta(message, &mut out);
    }
    match choice.finish_reason.as_deref().map(str::trim) {
        None | Some("") | Some("null") => {}
        Some(reason) => out.push(ModelChunk::Finish(finish_reason(reason))),
    }
    if let Some(usage) = completion.usage.and_then(WireUsage::into_usage) {
        out.push(ModelChunk::Usage(usage));
    }
    Ok(out)
}

fn push_tool_delta(
    out: &mut Vec<ModelChunk>,
    index: usize,
    id: Option<String>,
    name: Option<String>,
    arguments: Option<Value>,
) {
    let arguments = match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        // Some servers send the arguments as an object, not as JSON text.
        Some(other) => other.to_string(),
    };
    let id = id.filter(|s| !s.is_empty());
    let name = name.filter(|s| !s.is_empty());
    if id.is_none() && name.is_none() && arguments.is_empty() {
        return;
    }
    out.push(ModelChunk::ToolCallDelta {
        index,
        id,
        name,
        arguments,
    });
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "eos" => FinishReason::Stop,
        // "function_call" is the legacy spelling of the same thing.
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

#[derive(Debug, Deserialize)]
struct WireChunk {
    choices: Option<Vec<WireChoice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

/// A whole (unstreamed) completion: the message in place of the delta.
#[derive(Debug, Deserialize)]
struct WireCompletion {
    choices: Option<Vec<WireMessageChoice>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireMessageChoice {
    index: Option<u64>,
    message: Option<WireDelta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    index: Option<u64>,
    delta: Option<WireDelta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireDelta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
    function_call: Option<WireFunction>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    index: Option<usize>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

impl WireUsage {
    fn into_usage(self) -> Option<TokenUsage> {
        if self.prompt_tokens.is_none()
            && self.completion_tokens.is_none()
            && self.total_tokens.is_none()
        {
            return None;
        }
        let prompt_tokens = self.prompt_tokens.unwrap_or(0);
        let completion_tokens = self.completion_tokens.unwrap_or(0);
        Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            total_tokens: self
                .total_tokens
                .unwrap_or(prompt_tokens + completion_tokens),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(decoder: &mut ChunkDecoder, data: &str) -> Vec<ModelChunk> {
        match decoder.decode(data) {
            Ok(Decoded::Chunks(chunks)) => chunks,
            other => panic!("expected chunks, got {other:?}"),
        }
    }

    #[test]
    fn legacy_function_call_beside_tool_calls_is_not_counted_twice() {
        let mut d = ChunkDecoder::default();
        let got = chunks(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{"},
                "tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{"}}]}}]}"#,
        );
        assert_eq!(
            got,
            vec![ModelChunk::ToolCallDelta {
                index: 0,
                id: Some("c1".into()),
                name: Some("f".into()),
                arguments: "{".into()
            }]
        );
    }

    #[test]
    fn legacy_function_call_alone_is_call_zero() {
        let mut d = ChunkDecoder::default();
        let got = chunks(
            &mut d,
            r#"{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}},"finish_reason":"function_call"}]}"#,
        );
        assert_eq!(
            got,
            vec![
                ModelChunk::ToolCallDelta {
                    index: 0,
                    id: None,
                    name: Some("f".into()),
                    arguments: "{}".into()
                },
                ModelChunk::Finish(FinishReason::ToolCalls)
            ]
        );
    }

    #[test]
    fn usage_without_choices_and_nulls_everywhere() {
        let mut d = ChunkDecoder::default();
        assert_eq!(
            chunks(
                &mut d,
                r#"{"id":"x","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#
            ),
            vec![ModelChunk::Usage(TokenUsage {
                prompt_tokens: 7,
                completion_tokens: 3,
                total_tokens: 10
            })]
        );
        assert_eq!(
            chunks(
                &mut d,
                r#"{"choices":null,"usage":null,"error":null,"extra":{"a":1}}"#
            ),
            vec![]
        );
        assert_eq!(
            chunks(
                &mut d,
                r#"{"choices":[{"delta":{"content":null,"tool_calls":null,"role":"assistant"},"finish_reason":null}]}"#
            ),
            vec![]
        );
    }

    #[test]
    fn empty_finish_reason_is_held_back_until_done() {
        let mut d = ChunkDecoder::default();
        assert_eq!(
            chunks(
                &mut d,
                r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":""}]}"#
            ),
            vec![ModelChunk::Text("hi".into())]
        );
        assert_eq!(d.decode(" [DONE] "), Ok(Decoded::Done));
        assert_eq!(
            d.finish_at_done(),
            Some(ModelChunk::Finish(FinishReason::Other(String::new())))
        );

        let mut d = ChunkDecoder::default();
        chunks(&mut d, r#"{"choices":[{"delta":{},"finish_reason":""}]}"#);
        chunks(
            &mut d,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        );
        assert_eq!(d.finish_at_done(), None);
    }

    #[test]
    fn reasoning_in_either_field_and_object_arguments() {
        let mut d = ChunkDecoder::default();
        assert_eq!(
            chunks(
                &mut d,
                r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"a"}}]}"#
            ),
            vec![ModelChunk::Reasoning("a".into())]
        );
        assert_eq!(
            chunks(&mut d, r#"{"choices":[{"delta":{"reasoning":"b"}}]}"#),
            vec![ModelChunk::Reasoning("b".into())]
        );
        assert_eq!(
            chunks(
                &mut d,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":{"x":1}}}]}}]}"#
            ),
            vec![ModelChunk::ToolCallDelta {
                index: 0,
                id: None,
                name: Some("f".into()),
                arguments: "{\"x\":1}".into()
            }]
        );
    }

    #[test]
    fn garbage_and_error_payloads_are_errors_not_panics() {
        let mut d = ChunkDecoder::default();
        assert!(matches!(
            d.decode(r#"{"choices":[{"delta":{"content":"Hel"#),
            Err(ModelError::Protocol(m)) if m.contains("did not parse")
        ));
        assert!(matches!(
            d.decode(r#"{"choices":"nope"}"#),
            Err(ModelError::Protocol(_))
        ));
        assert!(matches!(
            d.decode(r#"{"error":{"message":"model overloaded","code":503}}"#),
            Err(ModelError::Other(m)) if m.contains("model overloaded")
        ));
    }

    #[test]
    fn an_unstreamed_completion_becomes_the_chunks_of_a_stream() {
        let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":null,"reasoning_content":"think",
            "tool_calls":[{"id":"call_1","type":"function","function":{"name":"order_query",
            "arguments":"{\"order_id\": \"A1\"}"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#;
        let chunks = decode_completion(body).expect("parses");
        assert_eq!(
            chunks,
            vec![
                ModelChunk::Reasoning("think".into()),
                ModelChunk::ToolCallDelta {
                    index: 0,
                    id: Some("call_1".into()),
                    name: Some("order_query".into()),
                    arguments: "{\"order_id\": \"A1\"}".into(),
                },
                ModelChunk::Finish(FinishReason::ToolCalls),
                ModelChunk::Usage(TokenUsage {
                    prompt_tokens: 10,
                    completion_tokens: 5,
                    total_tokens: 15
                }),
            ]
        );
        assert!(matches!(
            decode_completion(r#"{"error":{"message":"nope"}}"#),
            Err(ModelError::Other(m)) if m.contains("nope")
        ));
        assert!(matches!(
            decode_completion("not json"),
            Err(ModelError::Protocol(_))
        ));
    }
}
