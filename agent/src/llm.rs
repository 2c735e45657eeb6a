//! One streamed model call, with its text handed on as it arrives.
//!
//! Every node that talks to a model goes through [`stream_call`]: it starts
//! the stream, hands each text delta to the caller as [`Streamed::Reply`]
//! (or [`Streamed::Reasoning`] for reasoning deltas and planning output)
//! while folding the chunks into one [`ModelResponse`], and bounds the wait
//! for each chunk so a stalled provider ends the call with
//! [`ModelError::Timeout`] instead of hanging.

use std::time::Duration;

use futures::{FutureExt, StreamExt};

use crate::model::{
    ChatModel, ModelChunk, ModelError, ModelRequest, ModelResponse, ResponseBuilder,
};

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

/// Runs one model call to its end, handing streamed text to `on_text`.
/// `idle_timeout` bounds the wait for the stream and for each next chunk.
pub async fn stream_call(
    model: &dyn ChatModel,
    request: ModelRequest,
    route: TokenRoute,
    idle_timeout: Duration,
    on_text: &mut (dyn FnMut(Streamed) + Send),
) -> Result<ModelResponse, ModelError> {
    let timed_out = || ModelError::Timeout(format!("no data for {} ms", idle_timeout.as_millis()));
    let mut stream = tokio::time::timeout(idle_timeout, model.stream(request))
        .await
        .map_err(|_| timed_out())??;
    let mut builder = ResponseBuilder::default();
    let mut content = String::new();
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
        // Text is appended here rather than through the builder so that the
        // delta can be moved to the caller instead of copied.
        match (chunk, route) {
            (ModelChunk::Text(text), TokenRoute::Reply) => {
                content.push_str(&text);
                if !text.is_empty() {
                    on_text(Streamed::Reply(text));
                }
            }
            (ModelChunk::Text(text), TokenRoute::Reasoning) => {
                content.push_str(&text);
                if !text.is_empty() {
                    on_text(Streamed::Reasoning(text));
                }
            }
            (ModelChunk::Text(text), TokenRoute::Silent) => content.push_str(&text),
            (ModelChunk::Reasoning(text), TokenRoute::Reply | TokenRoute::Reasoning) => {
                builder.push(ModelChunk::Reasoning(text.clone()));
                if !text.is_empty() {
                    on_text(Streamed::Reasoning(text));
                }
            }
            (other, _) => builder.push(other),
        }
    }
    let mut response = builder.finish();
    response.content = content;
    Ok(response)
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
