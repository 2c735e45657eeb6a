//! This turn's tool results as the model received them: tool messages with
//! the arguments of the call that asked for them, and the numbered list of
//! the JSON-plan prompt; each with why it failed, if it did.

use serde_json::Value;
use sonic_rs::JsonValueTrait;

use crate::model::{Message, ModelRequest};
use crate::support::heuristics::extract_order_id;
use crate::support::prompt::TOOL_RESULTS_HEADING;
use crate::tools::order::is_order_number;

/// Why a tool call failed, in the terms the customer is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// What was asked for does not exist (an unknown order id).
    NotFound,
    /// The call's arguments were wrong; the model may call again.
    InvalidArguments,
    /// No such tool: the model's own mistake, never the customer's business.
    UnknownTool,
    /// The system behind the tool did not answer (a timeout, a store down).
    Unavailable,
}

impl Failure {
    /// Reads a tool error as [`crate::tool::ToolError`] displays it.
    fn of(error: &str) -> Self {
        if error.starts_with("not found") {
            Self::NotFound
        } else if error.starts_with("invalid arguments") {
            Self::InvalidArguments
        } else if error.starts_with("unknown tool") {
            Self::UnknownTool
        } else {
            Self::Unavailable
        }
    }
}

/// One tool result the model received this turn.
#[derive(Debug, Clone)]
pub struct Observation {
    pub tool: String,
    /// The arguments it ran with, where the request shows them (native
    /// protocol: the assistant message that asked for the call).
    pub args: Option<Value>,
    /// The result's JSON (or its text, when it is not JSON), read by
    /// sonic-rs: its values sit in one block, so a result of a dozen
    /// fields is read and dropped about five times as fast as a
    /// `serde_json::Value` tree of them (BENCHMARKS.md, round 37).
    pub result: sonic_rs::Value,
    /// The supervisor's reason when the call was rejected.
    pub denied: Option<String>,
}

impl Observation {
    pub(super) fn new(tool: &str, content: &str, args: Option<Value>) -> Self {
        let denied = content
            .strip_prefix("denied by supervisor:")
            .map(|r| r.trim().to_owned());
        let result = sonic_rs::from_str::<sonic_rs::Value>(content)
            .unwrap_or_else(|_| sonic_rs::Value::copy_str(content));
        Self {
            tool: tool.to_owned(),
            args,
            result,
            denied,
        }
    }

    /// The error text of a failed call.
    pub fn error(&self) -> Option<String> {
        self.result.get("error").map(|e| match e.as_str() {
            Some(s) => s.to_owned(),
            None => e.to_string(),
        })
    }

    pub fn failure(&self) -> Option<Failure> {
        self.error().map(|e| Failure::of(&e))
    }

    pub fn ok(&self) -> bool {
        self.denied.is_none() && self.error().is_none()
    }

    /// The order the call was about: its arguments, else its result, else
    /// the id its error names.
    pub fn order_id(&self) -> Option<String> {
        let arg = self
            .args
            .as_ref()
            .and_then(|a| a.get("order_id"))
            .and_then(Value::as_str);
        arg.and_then(normalize_order_id)
            .or_else(|| {
                self.result["order_id"]
                    .as_str()
                    .and_then(normalize_order_id)
            })
            .or_else(|| {
                // Only a not-found error names the order meant; others may
                // quote an example id.
                (self.failure() == Some(Failure::NotFound))
                    .then(|| self.error().and_then(|e| extract_order_id(&e)))
                    .flatten()
            })
    }
}

/// "ORD-123", "ord123", "123" → `ORD-123`.
fn normalize_order_id(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if !raw.is_empty() && raw.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("ORD-{raw}"));
    }
    // The form the tools take and give: already normal, no pattern to run.
    if raw.strip_prefix("ORD-").is_some_and(is_order_number) {
        return Some(raw.to_owned());
    }
    extract_order_id(raw)
}

/// Tool results since the last customer message: tool messages (with the
/// arguments of the assistant's call), and the numbered list of the
/// JSON-plan prompt.
pub(super) fn observations(
    request: &ModelRequest,
    last_user: usize,
    system: &str,
) -> Vec<Observation> {
    let turn = &request.messages[last_user..];
    let args_of = |id: &str| {
        turn.iter().find_map(|m| match &**m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.arguments.clone()),
            _ => None,
        })
    };
    let mut out: Vec<Observation> = turn
        .iter()
        .filter_map(|m| match &**m {
            Message::Tool {
                tool_call_id,
                name,
                content,
            } => Some(Observation::new(name, content, args_of(tool_call_id))),
            _ => None,
        })
        .collect();
    if let Some(section) = system.split(TOOL_RESULTS_HEADING).nth(1) {
        let mut lines = section.lines();
        while let Some(line) = lines.next() {
            let Some((_, name)) = line
                .trim()
                .strip_prefix('[')
                .and_then(|r| r.split_once("] "))
            else {
                continue;
            };
            if let Some(body) = lines.next() {
                let content = match serde_json::from_str::<Value>(body) {
                    Ok(Value::String(s)) => s,
                    _ => body.to_owned(),
                };
                out.push(Observation::new(name.trim(), &content, None));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use crate::tool::ToolError;
    use serde_json::json;

    #[test]
    fn failures_are_read_from_the_tool_errors_display() {
        for (e, f) in [
            (
                ToolError::NotFound("there is no order ORD-9".into()),
                Failure::NotFound,
            ),
            (
                ToolError::InvalidArguments("x".into()),
                Failure::InvalidArguments,
            ),
            (ToolError::UnknownTool("x".into()), Failure::UnknownTool),
            (ToolError::Timeout(5), Failure::Unavailable),
            (ToolError::Failed("down".into()), Failure::Unavailable),
        ] {
            assert_eq!(Failure::of(&e.to_string()), f, "{e}");
        }
    }

    #[test]
    fn an_observation_knows_its_order_from_args_result_or_error() {
        let call = ToolCall {
            id: "c1".into(),
            provider_id: None,
            name: "order_query".into(),
            arguments: json!({"order_id": "999"}),
        };
        let request = ModelRequest::new(vec![
            Message::user("where is 999"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "order_query".into(),
                content: json!({"error": "not found: order ORD-999"}).to_string(),
            },
        ]);
        let seen = observations(&request, 0, "");
        let o = &seen[0];
        assert_eq!(o.order_id().as_deref(), Some("ORD-999"));
        assert_eq!(o.failure(), Some(Failure::NotFound));
        let plain = Observation::new(
            "order_query",
            r#"{"error":"not found: there is no order ORD-7"}"#,
            None,
        );
        assert_eq!(plain.order_id().as_deref(), Some("ORD-7"));
        // Other errors may quote an example id: it is not the order meant.
        let bad = Observation::new(
            "order_query",
            r#"{"error":"invalid arguments: order_id \"x\" is not an order number; expected e.g. \"ORD-123\""}"#,
            None,
        );
        assert_eq!(bad.order_id(), None);
    }

    #[test]
    fn a_result_reads_as_json_or_as_its_text() {
        let text = Observation::new("order_query", "denied by supervisor: not now", None);
        assert_eq!(text.result.as_str(), Some("denied by supervisor: not now"));
        assert_eq!(text.denied.as_deref(), Some("not now"));
        assert!(!text.ok());
        let object_error = Observation::new(
            "order_query",
            r#"{"error":{"code":503,"why":"down"}}"#,
            None,
        );
        assert_eq!(
            object_error.error().as_deref(),
            Some(r#"{"code":503,"why":"down"}"#)
        );
        assert_eq!(object_error.failure(), Some(Failure::Unavailable));
        let found = Observation::new(
            "order_query",
            r#"{"order_id":"ORD-5","status":"shipped","logistics":[{"event":"picked_up"}]}"#,
            None,
        );
        assert!(found.ok());
        assert_eq!(found.order_id().as_deref(), Some("ORD-5"));
        assert_eq!(
            found.result["logistics"][0]["event"].as_str(),
            Some("picked_up")
        );
    }

    #[test]
    fn a_normal_id_reads_as_the_pattern_reads_it() {
        for raw in [
            "ORD-123",
            " ORD-0042 ",
            "ORD-",
            "ORD-12a",
            "ORD-1 ORD-2",
            "ord-5",
            "ORD5",
            "123",
            "ORD-１２",
            "order 77",
        ] {
            let pattern =
                if raw.trim().bytes().all(|b| b.is_ascii_digit()) && !raw.trim().is_empty() {
                    Some(format!("ORD-{}", raw.trim()))
                } else {
                    extract_order_id(raw.trim())
                };
            assert_eq!(normalize_order_id(raw), pattern, "{raw:?}");
        }
    }
}
