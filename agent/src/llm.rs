//! One streamed model call, with its text handed on as it arrives.
//!
//! Every node that talks to a model goes through [`stream_call`]: it starts
//! the stream, hands each text delta to the caller as [`Streamed::Reply`]
//! (or [`Streamed::Reasoning`] for reasoning deltas and planning output)
//! while folding the chunks into one [`ModelResponse`], and bounds the wait
//! for each chunk so a stalled provider ends the call with
//! [`ModelError::Timeout`] instead of hanging. The text a call keeps is
//! capped at [`MAX_REPLY_BYTES`] ([`cap_reply`]): a model that runs away
//! is cut off with a marker, not stored, streamed and rendered whole.
//! [`stream_call_timed`] also measures the call (latency, time to the
//! first chunk), and
//! [`sent_messages`] / [`tool_choice_name`] / [`finish_name`] turn the
//! request and response into the words of an [`aics_types::LlmCallRecord`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use aics_types::{LlmMessage, LlmToolCall};
use futures::{FutureExt, StreamExt};

use crate::model::{
    ChatModel, FinishReason, Message, ModelChunk, ModelError, ModelRequest, ModelResponse,
    ResponseBuilder, ToolCall, ToolChoice,
};

/// The most text a model call keeps, in bytes (and as much again of its
/// reasoning): a support reply is a few hundred; past this a model is
/// repeating itself, and every byte would be stored, streamed to each
/// viewer and rendered on every page showing the conversation.
pub const MAX_REPLY_BYTES: usize = 32 * 1024;

/// What ends a reply cut at [`MAX_REPLY_BYTES`].
pub const CUT_MARKER: &str = "\n\n[…] (the reply was too long and was cut here)";

/// Cuts `text` to at most `max` bytes (on a character boundary) and adds
/// [`CUT_MARKER`]; whether it was cut. Text within the cap, or cut already,
/// is left as it is.
pub fn cap_reply(text: &mut String, max: usize) -> bool {
    let cut_already = text.ends_with(CUT_MARKER) && text.len() <= max + CUT_MARKER.len();
    if text.len() <= max || cut_already {
        return false;
    }
    text.truncate(floor_char_boundary(text, max));
    text.push_str(CUT_MARKER);
    true
}

/// The largest index at most `at` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Text gathered from the deltas of a call up to [`MAX_REPLY_BYTES`].
#[derive(Default)]
struct Capped {
    text: String,
    cut: bool,
}

impl Capped {
    /// Appends `piece` and answers what of it to hand on: all of it, or —
    /// for the piece that crosses the cap — its start and [`CUT_MARKER`];
    /// `None` once the text was cut.
    fn push(&mut self, piece: String) -> Option<String> {
        if self.cut {
            return None;
        }
        if self.text.len() + piece.len() <= MAX_REPLY_BYTES {
            self.text.push_str(&piece);
            return Some(piece);
        }
        let room = floor_char_boundary(&piece, MAX_REPLY_BYTES - self.text.len());
        let kept = format!("{}{CUT_MARKER}", &piece[..room]);
        self.text.push_str(&kept);
        self.cut = true;
        Some(kept)
    }
}

/// How the text of a call is shown while it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRoute {
    /// Text deltas are the reply.
    Reply,
    /// Text deltas are planning output (a JSON plan): shown as reasoning.
    Reasoning,
    /// Nothing is handed on.
    Silent,
}

/// A piece of streamed text, as the caller shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Streamed {
    /// A piece of the reply.
    Reply(String),
    /// A piece of the model's reasoning (or of a plan).
    Reasoning(String),
}

/// How long one call took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallTiming {
    /// From the request to the end of the stream (or the error).
    pub latency: Duration,
    /// From the request to the first chunk of any kind; `None` when none came.
    pub first_chunk: Option<Duration>,
}

/// Runs one model call to its end, handing streamed text to `on_text`.
/// `idle_timeout` bounds the wait for the stream and for each next chunk.
pub async fn stream_call(
    model: &dyn ChatModel,
    request: ModelRequest,
    route: TokenRoute,
    idle_timeout: Duration,
    on_text: &mut (dyn FnMut(Streamed) + Send),
) -> Result<ModelResponse, ModelError> {
    stream_call_timed(model, request, route, idle_timeout, on_text)
        .await
        .0
}

/// [`stream_call`], and how long the call took.
pub async fn stream_call_timed(
    model: &dyn ChatModel,
    request: ModelRequest,
    route: TokenRoute,
    idle_timeout: Duration,
    on_text: &mut (dyn FnMut(Streamed) + Send),
) -> (Result<ModelResponse, ModelError>, CallTiming) {
    let started = Instant::now();
    let mut first_chunk = None;
    let result = call_inner(
        model,
        request,
        route,
        idle_timeout,
        on_text,
        &mut first_chunk,
        started,
    )
    .await;
    let timing = CallTiming {
        latency: started.elapsed(),
        first_chunk,
    };
    (result, timing)
}

async fn call_inner(
    model: &dyn ChatModel,
    request: ModelRequest,
    route: TokenRoute,
    idle_timeout: Duration,
    on_text: &mut (dyn FnMut(Streamed) + Send),
    first_chunk: &mut Option<Duration>,
    started: Instant,
) -> Result<ModelResponse, ModelError> {
    let timed_out = || ModelError::Timeout(format!("no data for {} ms", idle_timeout.as_millis()));
    let mut stream = tokio::time::timeout(idle_timeout, model.stream(request))
        .await
        .map_err(|_| timed_out())??;
    let mut builder = ResponseBuilder::default();
    let mut content = Capped::default();
    let mut reasoning = Capped::default();
    loop {
        // A chunk that is already there needs no timer: arming one per
        // chunk costs a clock read and a timer-wheel entry per token.
        let next = match stream.next().now_or_never() {
            Some(next) => next,
            None => tokio::time::timeout(idle_timeout, stream.next())
                .await
                .map_err(|_| timed_out())?,
        };
        let Some(chunk) = next else { break };
        let chunk = chunk?;
        if first_chunk.is_none() {
            *first_chunk = Some(started.elapsed());
        }
        // Text is appended here rather than through the builder so that the
        // delta can be moved to the caller instead of copied.
        match (chunk, route) {
            (ModelChunk::Text(text), route) => {
                let kept = content.push(text);
                match (kept, route) {
                    (Some(text), TokenRoute::Reply) if !text.is_empty() => {
                        on_text(Streamed::Reply(text))
                    }
                    (Some(text), TokenRoute::Reasoning) if !text.is_empty() => {
                        on_text(Streamed::Reasoning(text))
                    }
                    _ => {}
                }
                if content.cut {
                    // The rest is not read: a runaway model would otherwise
                    // hold the turn until its own limit or the timeout.
                    tracing::warn!(
                        max_bytes = MAX_REPLY_BYTES,
                        model = %model.name(),
                        "the model's reply was cut at the cap"
                    );
                    break;
                }
            }
            (ModelChunk::Reasoning(text), route) => {
                if let Some(text) = reasoning.push(text) {
                    builder.push(ModelChunk::Reasoning(text.clone()));
                    if route != TokenRoute::Silent && !text.is_empty() {
                        on_text(Streamed::Reasoning(text));
                    }
                }
            }
            (other, _) => builder.push(other),
        }
    }
    let mut response = builder.finish();
    response.content = content.text;
    if content.cut {
        // Calls whose deltas were still to come would be broken: a cut
        // reply is an answer, ended by its length.
        response.tool_calls.clear();
        response.finish = Some(FinishReason::Length);
    }
    Ok(response)
}

/// The messages of a request as an LLM call record keeps them.
pub fn sent_messages(messages: &[Arc<Message>]) -> Vec<LlmMessage> {
    messages
        .iter()
        .map(|m| match &**m {
            Message::System { content } => LlmMessage {
                role: "system".into(),
                content: content.clone(),
                ..LlmMessage::default()
            },
            Message::User { content } => LlmMessage {
                role: "user".into(),
                content: content.clone(),
                ..LlmMessage::default()
            },
            Message::Assistant {
                content,
                tool_calls,
            } => LlmMessage {
                role: "assistant".into(),
                content: content.clone(),
                tool_calls: record_calls(tool_calls),
                ..LlmMessage::default()
            },
            Message::Tool {
                tool_call_id,
                name,
                content,
            } => LlmMessage {
                role: "tool".into(),
                content: content.clone(),
                tool_call_id: Some(tool_call_id.clone()),
                name: Some(name.clone()),
                ..LlmMessage::default()
            },
        })
        .collect()
}

/// Tool calls as a record keeps them: our id, or the provider's before ours
/// is given.
pub fn record_calls(calls: &[ToolCall]) -> Vec<LlmToolCall> {
    calls
        .iter()
        .map(|c| LlmToolCall {
            id: if c.id.is_empty() {
                c.provider_id.clone().unwrap_or_default()
            } else {
                c.id.clone()
            },
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        })
        .collect()
}

/// `auto`, `none`, `required` or the forced tool's name.
pub fn tool_choice_name(choice: &ToolChoice) -> String {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Named(name) => name.clone(),
    }
}

/// The finish reason in the provider's words.
pub fn finish_name(finish: &FinishReason) -> String {
    match finish {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Other(other) => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FinishReason, ModelChunk, ModelStream};
    use async_trait::async_trait;
    use futures::stream;

    struct Fixed(Vec<ModelChunk>);

    #[async_trait]
    impl ChatModel for Fixed {
        fn name(&self) -> String {
            "fixed".into()
        }
        async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> {
            Ok(stream::iter(self.0.clone().into_iter().map(Ok)).boxed())
        }
    }

    struct Stalled;

    #[async_trait]
    impl ChatModel for Stalled {
        fn name(&self) -> String {
            "stalled".into()
        }
        async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> {
            Ok(stream::pending().boxed())
        }
    }

    #[tokio::test]
    async fn text_and_reasoning_are_forwarded_in_order() {
        let model = Fixed(vec![
            ModelChunk::Reasoning("think".into()),
            ModelChunk::Text("Hel".into()),
            ModelChunk::Text("lo".into()),
            ModelChunk::Finish(FinishReason::Stop),
        ]);
        let mut seen = Vec::new();
        let r = stream_call(
            &model,
            ModelRequest::default(),
            TokenRoute::Reply,
            Duration::from_secs(1),
            &mut |t| seen.push(t),
        )
        .await
        .unwrap();
        assert_eq!(r.content, "Hello");
        assert_eq!(r.reasoning, "think");
        assert_eq!(
            seen,
            [
                Streamed::Reasoning("think".into()),
                Streamed::Reply("Hel".into()),
                Streamed::Reply("lo".into())
            ]
        );
    }

    #[tokio::test]
    async fn the_timed_call_measures_the_first_chunk_and_the_whole_call() {
        let model = Fixed(vec![ModelChunk::Text("hi".into())]);
        let (result, timing) = stream_call_timed(
            &model,
            ModelRequest::default(),
            TokenRoute::Silent,
            Duration::from_secs(1),
            &mut |_| {},
        )
        .await;
        assert_eq!(result.unwrap().content, "hi");
        let first = timing.first_chunk.expect("a chunk came");
        assert!(first <= timing.latency);
        let (_, none) = stream_call_timed(
            &Fixed(Vec::new()),
            ModelRequest::default(),
            TokenRoute::Silent,
            Duration::from_secs(1),
            &mut |_| {},
        )
        .await;
        assert_eq!(none.first_chunk, None);
    }

    #[test]
    fn sent_messages_keep_roles_calls_and_tool_ids() {
        let mut call = ToolCall::new("order_query", serde_json::json!({"order_id": "A1"}));
        call.id = "call_ours".into();
        let sent = sent_messages(
            &[
                Message::system("sys"),
                Message::user("where?"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call],
                },
                Message::Tool {
                    tool_call_id: "call_ours".into(),
                    name: "order_query".into(),
                    content: "{}".into(),
                },
            ]
            .map(Arc::new),
        );
        let roles: Vec<_> = sent.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        assert_eq!(sent[2].tool_calls[0].id, "call_ours");
        assert_eq!(sent[3].tool_call_id.as_deref(), Some("call_ours"));
        assert_eq!(tool_choice_name(&ToolChoice::Named("x".into())), "x");
        assert_eq!(finish_name(&FinishReason::ToolCalls), "tool_calls");
    }

    #[tokio::test]
    async fn a_runaway_reply_is_cut_at_the_cap_and_not_read_on() {
        // 9 MB of a reply, in pieces of multi-byte characters that the cap
        // falls inside of.
        let model = crate::testing::RunawayModel::new("订单已发货。 ", 9 * 1024 * 1024 / 19);
        assert!(model.reply_len() > 9_000_000);
        let mut streamed = String::new();
        let response = stream_call(
            &model,
            ModelRequest::default(),
            TokenRoute::Reply,
            Duration::from_secs(5),
            &mut |t| match t {
                Streamed::Reply(t) => streamed.push_str(&t),
                Streamed::Reasoning(_) => panic!("no reasoning was sent"),
            },
        )
        .await
        .unwrap();
        assert!(response.content.ends_with(CUT_MARKER));
        assert!(
            response.content.len() <= MAX_REPLY_BYTES + CUT_MARKER.len(),
            "{} bytes kept",
            response.content.len()
        );
        assert!(response.content.len() > MAX_REPLY_BYTES - 32);
        assert_eq!(streamed, response.content, "viewers saw what is kept");
        assert_eq!(response.finish, Some(FinishReason::Length));
        assert!(
            model.pieces_read() <= MAX_REPLY_BYTES / 19 + 2,
            "the rest was not read: {} pieces",
            model.pieces_read()
        );
    }

    #[tokio::test]
    async fn reasoning_is_capped_too_and_the_answer_still_read() {
        let mut chunks = vec![ModelChunk::Reasoning("x".repeat(1024)); 100];
        chunks.push(ModelChunk::Text("The answer.".into()));
        let response = stream_call(
            &Fixed(chunks),
            ModelRequest::default(),
            TokenRoute::Reply,
            Duration::from_secs(1),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(response.content, "The answer.");
        assert!(response.reasoning.ends_with(CUT_MARKER));
        assert_eq!(response.reasoning.len(), MAX_REPLY_BYTES + CUT_MARKER.len());
    }

    #[test]
    fn cap_reply_cuts_on_a_character_boundary() {
        let mut short = "short".to_owned();
        assert!(!cap_reply(&mut short, 10));
        assert_eq!(short, "short");
        let mut long = "订单".repeat(10);
        assert!(cap_reply(&mut long, 10));
        assert_eq!(long, format!("订单订{CUT_MARKER}"));
        assert!(!cap_reply(&mut long, 10), "cut once");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_stream_times_out() {
        let err = stream_call(
            &Stalled,
            ModelRequest::default(),
            TokenRoute::Reply,
            Duration::from_secs(5),
            &mut |_| {},
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ModelError::Timeout(_)));
    }
}
