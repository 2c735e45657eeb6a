//! Chat models: what the `agent` node sends to an LLM and what streams back.
//!
//! A provider implements [`ChatModel`]: it takes a [`ModelRequest`] (the
//! conversation and the tools it may call) and returns a stream of
//! [`ModelChunk`]s — text deltas, reasoning deltas, tool-call deltas keyed by
//! index, usage and the finish reason — exactly as OpenAI-compatible servers
//! stream them. [`collect_response`] folds such a stream into one
//! [`ModelResponse`], the way the engine does while forwarding tokens.

use std::collections::BTreeMap;
use std::sync::Arc;

use aics_types::TokenUsage;
use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call an assistant message asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Our id of the call, unique across every run (`call_…`): approvals,
    /// idempotency keys, events and the console use it. The engine assigns
    /// it the moment it receives the call; empty until then.
    pub id: String,
    /// The id the provider gave the call, kept only for the messages sent
    /// back to that provider; `None` when it sent none (or a blank or
    /// repeated one), and then our id goes on the wire instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    pub name: String,
    /// The arguments as the model sent them: usually a JSON object, a
    /// `Value::String` holding the raw text when it was not valid JSON.
    pub arguments: Value,
}

/// A message of the conversation the model reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
    },
}

impl ToolCall {
    /// A call with no ids yet (the engine assigns ours).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: String::new(),
            provider_id: None,
            name: name.into(),
            arguments,
        }
    }

    /// The id to send to the provider: its own when it gave one, else ours.
    pub fn wire_id(&self) -> &str {
        self.provider_id.as_deref().unwrap_or(&self.id)
    }
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }
}

/// A tool as the model is told of it (OpenAI's `tools[].function`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON schema of the arguments object.
    pub parameters: Value,
}

/// Whether, and which, tools the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default when tools are bound).
    #[default]
    Auto,
    /// The model must not call tools (used at the tool-loop limit).
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Named(String),
}

/// One request to a chat model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The conversation, its messages shared with the state they come from
    /// (`aics_graph::Encoded::shared`): a request for a long conversation
    /// copies pointers, not texts.
    pub messages: Vec<Arc<Message>>,
    /// The tools bound for this call; empty means answer without tools.
    /// Shared with the registry that made them ([`crate::tool::ToolRegistry::specs`]):
    /// a request takes a pointer, not a copy of every tool's JSON schema.
    pub tools: Arc<[ToolSpec]>,
    pub tool_choice: ToolChoice,
}

impl ModelRequest {
    /// A request for `messages`, without tools.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Self {
        Self {
            messages: messages.into_iter().map(Arc::new).collect(),
            ..Self::default()
        }
    }
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    /// Anything else a server sent (some send an empty string).
    Other(String),
}

/// One piece of a streamed model response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ModelChunk {
    /// A piece of the answer text.
    Text(String),
    /// A piece of the model's reasoning (DeepSeek's `reasoning_content`).
    Reasoning(String),
    /// A piece of tool call number `index`: the id and name may come once or
    /// be repeated; the arguments come as text fragments to be concatenated.
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Tokens used by this call.
    Usage(TokenUsage),
    /// The model finished.
    Finish(FinishReason),
}

/// What can go wrong when calling a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The endpoint could not be reached (connection refused, DNS, TLS).
    #[error("could not reach the model: {0}")]
    Connect(String),
    /// The endpoint answered with an HTTP error status.
    #[error("the model server answered {status}: {message}")]
    Status { status: u16, message: String },
    /// No answer (or no next chunk) in time.
    #[error("the model timed out: {0}")]
    Timeout(String),
    /// The stream ended early or carried something that does not parse.
    #[error("the model's stream was malformed: {0}")]
    Protocol(String),
    /// A fault injected on purpose (the demo model's test switches).
    #[error("injected fault: {0}")]
    Injected(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl ModelError {
    /// The short sentence people see and traces store ("the model provider
    /// timed out"); the full text, which may name the endpoint's URL, goes
    /// to the log only.
    pub fn user_message(&self) -> String {
        match self {
            Self::Connect(_) => "could not reach the model provider".into(),
            Self::Status { status, .. } => {
                format!("the model provider answered with an error (HTTP {status})")
            }
            Self::Timeout(_) => "the model provider timed out".into(),
            Self::Protocol(_) => "the model provider sent an answer that could not be read".into(),
            // The demo model's test switches: their text is the point.
            Self::Injected(what) => format!("injected fault: {what}"),
            Self::Other(_) => "the model provider failed".into(),
        }
    }
}

/// A model response as a stream of chunks.
pub type ModelStream = BoxStream<'static, Result<ModelChunk, ModelError>>;

/// A chat model with tool calling: the demo model, or an OpenAI-compatible
/// endpoint.
///
/// ```
/// use aics_agent::model::{collect_response, ChatModel, Message, ModelChunk, ModelError,
///     ModelRequest, ModelStream, FinishReason};
/// use async_trait::async_trait;
/// use futures::stream::{self, StreamExt};
///
/// struct Echo;
///
/// #[async_trait]
/// impl ChatModel for Echo {
///     fn name(&self) -> String { "echo".into() }
///     async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
///         let last = match request.messages.last().map(|m| &**m) {
///             Some(Message::User { content }) => content.clone(),
///             _ => String::new(),
///         };
///         let chunks = vec![Ok(ModelChunk::Text(last)), Ok(ModelChunk::Finish(FinishReason::Stop))];
///         Ok(stream::iter(chunks).boxed())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let request = ModelRequest::new([Message::user("hi")]);
/// let response = collect_response(Echo.stream(request).await.unwrap()).await.unwrap();
/// assert_eq!(response.content, "hi");
/// # });
/// ```
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The provider and model, as the trace records it (`demo`, `openai:gpt-4o`).
    fn name(&self) -> String;

    /// Starts one call; the chunks arrive as the model produces them.
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError>;
}

/// A whole model response, folded from its chunks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    pub content: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
    pub finish: Option<FinishReason>,
}

/// Accumulates tool-call deltas by index, as OpenAI streams them.
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    response: ModelResponse,
    calls: BTreeMap<usize, (Option<String>, Option<String>, String)>,
}

impl ResponseBuilder {
    /// Adds one chunk.
    pub fn push(&mut self, chunk: ModelChunk) {
        match chunk {
            ModelChunk::Text(text) => self.response.content.push_str(&text),
            ModelChunk::Reasoning(text) => self.response.reasoning.push_str(&text),
            ModelChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                let entry = self.calls.entry(index).or_default();
                if id.as_deref().is_some_and(|s| !s.is_empty()) {
                    entry.0 = id;
                }
                if name.as_deref().is_some_and(|s| !s.is_empty()) {
                    entry.1 = name;
                }
                entry.2.push_str(&arguments);
            }
            ModelChunk::Usage(usage) => self.response.usage = Some(usage),
            ModelChunk::Finish(reason) => self.response.finish = Some(reason),
        }
    }

    /// The response: tool-call arguments parsed as JSON where they parse
    /// (empty text becomes `{}`), kept as a string where they do not. The
    /// provider's id of each call goes to `provider_id`; `id` stays empty
    /// for the engine to fill with ours.
    pub fn finish(mut self) -> ModelResponse {
        for (_index, (id, name, args)) in self.calls {
            let arguments = if args.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(&args).unwrap_or(Value::String(args))
            };
            self.response.tool_calls.push(ToolCall {
                id: String::new(),
                provider_id: id,
                name: name.unwrap_or_default(),
                arguments,
            });
        }
        self.response
    }
}

/// Drains a stream into one response; the first error ends it.
pub async fn collect_response(mut stream: ModelStream) -> Result<ModelResponse, ModelError> {
    let mut builder = ResponseBuilder::default();
    while let Some(chunk) = stream.next().await {
        builder.push(chunk?);
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_deltas_accumulate_by_index() {
        let mut b = ResponseBuilder::default();
        for chunk in [
            ModelChunk::ToolCallDelta {
                index: 0,
                id: Some("call_a".into()),
                name: Some("order_query".into()),
                arguments: "{\"order".into(),
            },
            ModelChunk::ToolCallDelta {
                index: 1,
                id: Some("call_b".into()),
                name: Some("knowledge_search".into()),
                arguments: String::new(),
            },
            // Servers like llama.cpp repeat id and name in every chunk.
            ModelChunk::ToolCallDelta {
                index: 0,
                id: Some("call_a".into()),
                name: Some("order_query".into()),
                arguments: "_id\":\"ORD-123\"}".into(),
            },
            ModelChunk::ToolCallDelta {
                index: 1,
                id: None,
                name: None,
                arguments: "not json".into(),
            },
            ModelChunk::Finish(FinishReason::ToolCalls),
        ] {
            b.push(chunk);
        }
        let r = b.finish();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments["order_id"], "ORD-123");
        assert_eq!(r.tool_calls[1].provider_id.as_deref(), Some("call_b"));
        assert!(
            r.tool_calls[1].id.is_empty(),
            "ours is the engine's to give"
        );
        assert_eq!(r.tool_calls[1].arguments, Value::String("not json".into()));
        assert_eq!(r.finish, Some(FinishReason::ToolCalls));
    }
}
