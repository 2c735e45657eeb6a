//! Faults the demo model injects, so that tests and demos can show how the
//! engine and the console handle a failing model: an error mid-stream, a
//! stall until a timeout, malformed tool arguments, an unknown tool, and a
//! call repeated until loop detection stops it.
//!
//! They come from [`super::DemoConfig::faults`] for every call, or from
//! `[fault:…]` markers in the customer's message when
//! [`super::DemoConfig::message_faults`] is on.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use serde_json::json;

use super::plan::Call;
use super::read::Reading;
use crate::model::{ModelChunk, ModelError, ModelStream};

/// Faults the demo model injects (for tests and demos of failure handling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DemoFaults {
    /// Every call fails with [`ModelError::Injected`] after a few tokens.
    pub error: bool,
    /// Every call stalls for [`super::DemoConfig::stall`], then fails with a
    /// timeout (or the engine's model timeout ends it first).
    pub timeout: bool,
    /// The first planning call sends tool arguments that are not valid JSON.
    pub malformed_args: bool,
    /// The first planning call asks for a tool that does not exist.
    pub unknown_tool: bool,
    /// Every planning call repeats the same `order_query` (loop detection ends it).
    pub repeat_call: bool,
}

impl DemoFaults {
    /// The faults a message asks for with `[fault:…]` markers.
    pub fn from_message(message: &str) -> Self {
        Self {
            error: message.contains("[fault:error]"),
            timeout: message.contains("[fault:timeout]"),
            malformed_args: message.contains("[fault:malformed]"),
            unknown_tool: message.contains("[fault:unknown_tool]"),
            repeat_call: message.contains("[fault:repeat]"),
        }
    }

    /// Both sets of faults.
    pub fn or(self, other: Self) -> Self {
        Self {
            error: self.error || other.error,
            timeout: self.timeout || other.timeout,
            malformed_args: self.malformed_args || other.malformed_args,
            unknown_tool: self.unknown_tool || other.unknown_tool,
            repeat_call: self.repeat_call || other.repeat_call,
        }
    }

    /// The wrong calls a planning step makes instead of the right ones, if
    /// any: the order the customer named (ORD-123 when none).
    pub fn calls(self, r: &Reading) -> Option<Vec<Call>> {
        if !(self.repeat_call || self.unknown_tool || self.malformed_args) {
            // No planning fault: nothing to name, so nothing to read.
            return None;
        }
        let oid = r
            .orders()
            .ids()
            .first()
            .cloned()
            .unwrap_or_else(|| "ORD-123".into());
        let first = r.observations.is_empty();
        if self.repeat_call && r.can("order_query") {
            return Some(vec![Call::new("order_query", json!({"order_id": oid}))]);
        }
        if self.unknown_tool && first {
            return Some(vec![Call::new(
                "refund_everything",
                json!({"order_id": oid}),
            )]);
        }
        if self.malformed_args && first && r.can("order_query") {
            return Some(vec![Call {
                name: "order_query".into(),
                arguments: format!("{{\"order_id\": {oid}"),
            }]);
        }
        None
    }
}

/// Silent for `stall`, then a provider-style timeout: the engine's own idle
/// timeout fires first when it is shorter.
pub fn stall(stall: Duration) -> ModelStream {
    stream::once(async move {
        tokio::time::sleep(stall).await;
        Err(ModelError::Timeout(format!(
            "the demo model stalled for {} ms",
            stall.as_millis()
        )))
    })
    .boxed()
}

/// The first two chunks of a response, then an injected error.
pub fn fail_midway(chunks: Vec<ModelChunk>) -> Vec<Result<ModelChunk, ModelError>> {
    let mut items: Vec<_> = chunks.into_iter().take(2).map(Ok).collect();
    items.push(Err(ModelError::Injected(
        "the demo model was told to fail".into(),
    )));
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{collect_response, Message, ModelRequest, ToolSpec};

    fn reading(message: &str) -> Reading {
        Reading::new(&ModelRequest {
            tools: vec![ToolSpec {
                name: "order_query".into(),
                description: String::new(),
                parameters: json!({}),
            }]
            .into(),
            ..ModelRequest::new(vec![Message::user(message)])
        })
    }

    #[test]
    fn markers_name_the_faults() {
        let f = DemoFaults::from_message("hi [fault:timeout] [fault:repeat]");
        assert!(f.timeout && f.repeat_call && !f.error);
        assert_eq!(DemoFaults::from_message("hi"), DemoFaults::default());
        let both = f.or(DemoFaults {
            error: true,
            ..Default::default()
        });
        assert!(both.error && both.timeout);
    }

    #[test]
    fn malformed_arguments_are_not_json_and_name_the_order() {
        let calls = DemoFaults {
            malformed_args: true,
            ..Default::default()
        }
        .calls(&reading("where is ORD-7"))
        .unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&calls[0].arguments).is_err());
        assert!(calls[0].arguments.contains("ORD-7"));
        assert!(DemoFaults::default().calls(&reading("ORD-7")).is_none());
    }

    #[tokio::test]
    async fn an_error_arrives_after_two_chunks() {
        let items = fail_midway(vec![
            ModelChunk::Text("a ".into()),
            ModelChunk::Text("b ".into()),
            ModelChunk::Text("c".into()),
        ]);
        assert_eq!(items.len(), 3);
        let err = collect_response(stream::iter(items).boxed()).await;
        assert!(matches!(err, Err(ModelError::Injected(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stall_ends_in_a_timeout() {
        let err = collect_response(stall(Duration::from_secs(3))).await;
        assert!(matches!(err, Err(ModelError::Timeout(m)) if m.contains("3000 ms")));
    }
}
