//! What can go wrong while building a provider, and how a server's error
//! body is turned into a short, secret-free message.
//!
//! Errors of a call itself are the engine's [`aics_agent::model::ModelError`].

use serde_json::Value;

use crate::redact::Redactor;

/// Why an [`crate::OpenAiCompatible`] could not be built from its config.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiError {
    /// `base_url` is not an http(s) URL (`url` is shown redacted: a key
    /// may ride in its query).
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl { url: String, reason: String },
    /// An extra header has an invalid name or value (the value is not shown:
    /// it may be a secret).
    #[error("invalid extra header {name:?}: {reason}")]
    InvalidHeader { name: String, reason: String },
    /// The model name is empty.
    #[error("no model configured")]
    MissingModel,
    /// The HTTP client could not be set up (TLS roots, ...).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// The longest summary of an error body kept in a `ModelError`.
const MAX_SUMMARY_CHARS: usize = 300;

/// A one-line summary of an HTTP error body: OpenAI's `error.message` (or a
/// plain `message`/`detail`/`error` string) when it is JSON, the text
/// otherwise; whitespace collapsed, URLs and secrets redacted, truncated.
pub(crate) fn summarize_body(body: &[u8], redactor: &Redactor) -> String {
    let text = String::from_utf8_lossy(body);
    let message = match serde_json::from_str::<Value>(&text) {
        Ok(json) => json_message(&json).unwrap_or_else(|| json.to_string()),
        Err(_) => text.into_owned(),
    };
    summarize_text(&message, redactor)
}

/// The human message of an error payload, wherever the server put it.
pub(crate) fn json_message(json: &Value) -> Option<String> {
    let candidates = [
        json.pointer("/error/message"),
        json.get("message"),
        json.get("detail"),
        json.get("error"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_owned))
}

/// Collapses whitespace, redacts URLs and secrets and truncates on a char
/// boundary.
pub(crate) fn summarize_text(text: &str, redactor: &Redactor) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Some servers echo the key they refused, or the URL it came in: it
    // must not reach a log or a trace.
    let text = redactor.scrub(&text);
    if text.is_empty() {
        return "(empty body)".into();
    }
    match text.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_error_bodies_are_summarized_without_the_key() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-secret-123.\n  See docs.","type":"invalid_request_error"}}"#;
        assert_eq!(
            summarize_body(
                body,
                &Redactor::new("http://h/v1", Some("sk-secret-123"), [])
            ),
            "Incorrect API key provided: [redacted]. See docs."
        );
    }

    #[test]
    fn long_and_empty_bodies() {
        let long = "é".repeat(1000);
        let none = Redactor::default();
        let summary = summarize_body(long.as_bytes(), &none);
        assert_eq!(summary.chars().count(), MAX_SUMMARY_CHARS + 1);
        assert_eq!(summarize_body(b"  \n", &none), "(empty body)");
        assert_eq!(
            summarize_body(br#"{"detail":"Not Found"}"#, &none),
            "Not Found"
        );
    }
}
