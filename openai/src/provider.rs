//! [`OpenAiCompatible`]: the HTTP call, its retries and timeouts, and the
//! stream of chunks it returns.
//!
//! A call goes: build the body → POST with the connect timeout → on a
//! connection error, 429 or 5xx, back off (exponential, jittered) and try
//! again → on 200, wait for the first server-sent event (a connection that
//! breaks before it is retried too) → hand back a stream that reads the
//! events with the first-token, idle and total timeouts. Nothing is retried
//! once the stream is handed back: a chunk may already have reached the user.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use aics_agent::model::{ChatModel, ModelError, ModelRequest, ModelStream};
use async_trait::async_trait;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use rand::Rng;
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER,
};
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;
use tokio::time::{timeout_at, Instant};

use aics_agent::PlanProtocol;

use crate::config::{OpenAiConfig, RetryPolicy};
use crate::decode::{ChunkDecoder, Decoded};
use crate::error::{summarize_body, summarize_text, OpenAiError};
use crate::request::chat_body;

/// The server-sent events of a response body.
type EventResult = Result<Event, EventStreamError<reqwest::Error>>;
type Events = Pin<Box<dyn Stream<Item = EventResult> + Send>>;

/// How much of an error body is read to summarize it.
const MAX_ERROR_BODY_BYTES: usize = 8 * 1024;

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
///
/// ```no_run
/// use aics_openai::{OpenAiCompatible, OpenAiConfig};
/// use aics_agent::model::{collect_response, ChatModel, Message, ModelRequest};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let mut config = OpenAiConfig::new("http://127.0.0.1:11434/v1", "qwen2.5:1.5b");
/// config.api_key_env = Some("OPENAI_API_KEY".into());
/// let model = OpenAiCompatible::new(config)?;
/// let request = ModelRequest { messages: vec![Message::user("hello")], ..Default::default() };
/// let response = collect_response(model.stream(request).await?).await?;
/// println!("{}", response.content);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OpenAiCompatible {
    config: OpenAiConfig,
    endpoint: Url,
    client: reqwest::Client,
    /// Authorization (marked sensitive), Accept and the extra headers.
    headers: HeaderMap,
    /// The resolved key, kept only to mask it in error messages.
    api_key: Option<String>,
}

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The config's Debug redacts; the headers and key are left out.
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &self.endpoint.as_str())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatible {
    /// Checks the config, resolves the API key (from `api_key` or the
    /// variable `api_key_env` names) and builds the HTTP client.
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiError> {
        if config.model.trim().is_empty() {
            return Err(OpenAiError::MissingModel);
        }
        let endpoint = endpoint(&config.base_url)?;
        let api_key = config.resolved_api_key();

        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let invalid = |reason: String| OpenAiError::InvalidHeader {
                name: name.clone(),
                reason,
            };
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid("not a header name".into()))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| invalid("the value has characters a header cannot carry".into()))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = &api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                OpenAiError::InvalidHeader {
                    name: "Authorization".into(),
                    reason: "the API key has characters a header cannot carry".into(),
                }
            })?;
            // Keeps the key out of reqwest's and hyper's Debug output.
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }

        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .user_agent(concat!("aics/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| OpenAiError::Client(err.to_string()))?;

        Ok(Self {
            config,
            endpoint,
            client,
            headers,
            api_key,
        })
    }

    /// The config this provider was built from.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The tool protocol the engine should speak with this model.
    pub fn protocol(&self) -> PlanProtocol {
        self.config.protocol
    }

    /// The URL requests go to: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// One attempt: the request and its status. `Ok` hands back the stream.
    async fn attempt(&self, body: &Value, deadline: Instant) -> Result<ModelStream, Failure> {
        let timeouts = self.config.timeouts;
        let first_deadline = deadline.min(Instant::now() + timeouts.first_token);
        let send = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(body)
            .send();
        let response = match timeout_at(first_deadline, send).await {
            Err(_) => {
                return Err(Failure::fatal(first_token_timeout(
                    first_deadline,
                    deadline,
                    timeouts.first_token,
                    timeouts.total,
                )))
            }
            // Nothing came back, so nothing was streamed: always worth a retry.
            Ok(Err(err)) => {
                return Err(Failure::retry(ModelError::Connect(error_chain(&err)), None))
            }
            Ok(Ok(response)) => response,
        };

        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let body = timeout_at(first_deadline, read_limited(response))
                .await
                .unwrap_or_default();
            let error = ModelError::Status {
                status: status.as_u16(),
                message: summarize_body(&body, self.api_key.as_deref()),
            };
            return Err(if is_retryable(status) {
                Failure::retry(error, retry_after)
            } else {
                Failure::fatal(error)
            });
        }
        // A server that ignored `stream: true` (or reports an error with a
        // 200) answers JSON, which would otherwise look like an empty stream.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            let body = timeout_at(first_deadline, read_limited(response))
                .await
                .unwrap_or_default();
            return Err(Failure::fatal(ModelError::Protocol(format!(
                "expected a stream of server-sent events, got JSON: {}",
                summarize_body(&body, self.api_key.as_deref())
            ))));
        }

        // Waits for the first event here, not in the stream: a connection
        // that breaks before it has streamed nothing, so it can be retried.
        let mut events: Events = Box::pin(response.bytes_stream().eventsource());
        let first = match timeout_at(first_deadline, events.next()).await {
            Err(_) => {
                return Err(Failure::fatal(first_token_timeout(
                    first_deadline,
                    deadline,
                    timeouts.first_token,
                    timeouts.total,
                )))
            }
            Ok(Some(Err(EventStreamError::Transport(err)))) => {
                return Err(Failure::retry(
                    ModelError::Connect(format!(
                        "the connection broke before the first event: {}",
                        error_chain(&err)
                    )),
                    None,
                ))
            }
            Ok(first) => first,
        };
        Ok(self.chunks(first, events, first_deadline, deadline))
    }

    /// The stream of chunks of a successful response.
    /// `first` is the first event (or the end), already read by `attempt`.
    fn chunks(
        &self,
        first: Option<EventResult>,
        mut events: Events,
        first_deadline: Instant,
        deadline: Instant,
    ) -> ModelStream {
        let timeouts = self.config.timeouts;
        let model = self.config.model.clone();
        let stream = async_stream::stream! {
            let mut first = Some(first);
            let mut decoder = ChunkDecoder::default();
            let mut events_seen = 0usize;
            let mut chunks_sent = 0usize;
            loop {
                // Before the first chunk the first-token deadline applies
                // (events that carry nothing, like llama.cpp's role-only
                // first chunk, do not count); after it, the idle one.
                let limit = if chunks_sent == 0 {
                    first_deadline
                } else {
                    deadline.min(Instant::now() + timeouts.idle)
                };
                let next = match first.take() {
                    Some(first) => Ok(first),
                    None => timeout_at(limit, events.next()).await,
                };
                let next = match next {
                    Ok(next) => next,
                    Err(_) => {
                        let error = if limit >= deadline {
                            total_timeout(timeouts.total)
                        } else if chunks_sent == 0 {
                            first_token_timeout(limit, deadline, timeouts.first_token, timeouts.total)
                        } else {
                            ModelError::Timeout(format!(
                                "no chunk for {} after {chunks_sent} chunks (idle timeout)",
                                secs(timeouts.idle)
                            ))
                        };
                        tracing::warn!(%model, %error, "model stream failed");
                        yield Err(error);
                        return;
                    }
                };
                let event = match next {
                    Some(Ok(event)) => event,
                    Some(Err(err)) => {
                        let error = ModelError::Protocol(format!(
                            "the stream broke off after {events_seen} events: {}",
                            summarize_text(&describe(&err), None)
                        ));
                        tracing::warn!(%model, %error, "model stream failed");
                        yield Err(error);
                        return;
                    }
                    None => {
                        let error = ModelError::Protocol(if events_seen == 0 {
                            "the server closed an empty stream: no chunk, no [DONE] (llama-cpp-python \
                             does this when it refuses a request, e.g. tool_choice \"auto\" while \
                             streaming)"
                                .to_owned()
                        } else {
                            format!(
                                "the stream ended after {events_seen} events without [DONE]: the \
                                 answer may be cut short"
                            )
                        });
                        tracing::warn!(%model, %error, "model stream failed");
                        yield Err(error);
                        return;
                    }
                };
                events_seen += 1;
                if event.event == "error" {
                    let error = ModelError::Other(format!(
                        "the model server reported an error mid-stream: {}",
                        summarize_body(event.data.as_bytes(), None)
                    ));
                    tracing::warn!(%model, %error, "model stream failed");
                    yield Err(error);
                    return;
                }
                match decoder.decode(&event.data) {
                    Ok(Decoded::Chunks(chunks)) => {
                        for chunk in chunks {
                            chunks_sent += 1;
                            yield Ok(chunk);
                        }
                    }
                    Ok(Decoded::Done) => {
                        if let Some(finish) = decoder.finish_at_done() {
                            yield Ok(finish);
                        }
                        tracing::debug!(%model, events_seen, chunks_sent, "model stream done");
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(%model, %error, "model stream failed");
                        yield Err(error);
                        return;
                    }
                }
            }
        };
        stream.boxed()
    }
}

#[async_trait]
impl ChatModel for OpenAiCompatible {
    fn name(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    #[tracing::instrument(skip_all, fields(model = %self.config.model))]
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let deadline = Instant::now() + self.config.timeouts.total;
        let body = chat_body(&self.config, &request);
        let policy = self.config.retries;
        let mut retry = 0;
        loop {
            let failure = match self.attempt(&body, deadline).await {
                Ok(stream) => return Ok(stream),
                Err(failure) => failure,
            };
            if !failure.retryable || retry >= policy.max_retries {
                tracing::warn!(error = %failure.error, retries = retry, "model call failed");
                return Err(failure.error);
            }
            let wait = backoff(&policy, retry, failure.retry_after);
            if Instant::now() + wait >= deadline {
                tracing::warn!(error = %failure.error, "model call failed; no time left to retry");
                return Err(failure.error);
            }
            retry += 1;
            tracing::warn!(error = %failure.error, retry, wait_ms = wait.as_millis() as u64,
                "model call failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

/// A failed attempt and whether another one may help.
struct Failure {
    error: ModelError,
    retryable: bool,
    /// The server's `Retry-After`, in seconds.
    retry_after: Option<Duration>,
}

impl Failure {
    fn retry(error: ModelError, retry_after: Option<Duration>) -> Self {
        Self {
            error,
            retryable: true,
            retry_after,
        }
    }

    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// `{base_url}/chat/completions`, whether or not the base ends in `/`.
fn endpoint(base_url: &str) -> Result<Url, OpenAiError> {
    let invalid = |reason: String| OpenAiError::InvalidBaseUrl {
        url: base_url.to_owned(),
        reason,
    };
    let url = Url::parse(&format!(
        "{}/chat/completions",
        base_url.trim().trim_end_matches('/')
    ))
    .map_err(|err| invalid(err.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https".into()));
    }
    Ok(url)
}

/// Rate limits, overload and server errors pass; other 4xx will not.
fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// The wait before retry number `retry + 1`: the base doubled per retry,
/// capped, with "equal jitter" (half fixed, half random) so that clients
/// turned away together do not all come back at the same instant. A server's
/// `Retry-After` is honoured up to the cap.
fn backoff(policy: &RetryPolicy, retry: u32, retry_after: Option<Duration>) -> Duration {
    let exponential = policy
        .base_backoff
        .saturating_mul(1u32 << retry.min(16))
        .min(policy.max_backoff);
    let half = exponential / 2;
    let wait = half + half.mul_f64(rand::thread_rng().gen::<f64>());
    match retry_after {
        Some(asked) => wait.max(asked.min(policy.max_backoff)),
        None => wait,
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from these APIs).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    value
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// At most [`MAX_ERROR_BODY_BYTES`] of a body: an error page can be large.
async fn read_limited(mut response: Response) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(bytes)) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    body
}

/// reqwest's error with its sources: the top line alone ("error sending
/// request") does not say that the connection was refused.
fn error_chain(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// An event-stream error with the transport's causes spelled out.
fn describe(err: &EventStreamError<reqwest::Error>) -> String {
    match err {
        EventStreamError::Transport(err) => error_chain(err),
        // Invalid UTF-8 or a line the SSE grammar refuses.
        other => other.to_string(),
    }
}

fn first_token_timeout(
    limit: Instant,
    deadline: Instant,
    first_token: Duration,
    total: Duration,
) -> ModelError {
    if limit >= deadline {
        total_timeout(total)
    } else {
        ModelError::Timeout(format!(
            "no first token within {} (first-token timeout)",
            secs(first_token)
        ))
    }
}

fn total_timeout(total: Duration) -> ModelError {
    ModelError::Timeout(format!(
        "the call took longer than {} (total timeout)",
        secs(total)
    ))
}

fn secs(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_with_and_without_slash() {
        assert_eq!(
            endpoint("http://127.0.0.1:8000/v1/").map(|u| u.to_string()),
            Ok("http://127.0.0.1:8000/v1/chat/completions".to_string())
        );
        assert_eq!(
            endpoint("https://api.deepseek.com").map(|u| u.to_string()),
            Ok("https://api.deepseek.com/chat/completions".to_string())
        );
        assert!(matches!(
            endpoint("ftp://x"),
            Err(OpenAiError::InvalidBaseUrl { .. })
        ));
        assert!(matches!(
            endpoint("not a url"),
            Err(OpenAiError::InvalidBaseUrl { .. })
        ));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after_up_to_the_cap() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for _ in 0..50 {
            let first = backoff(&policy, 0, None);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = backoff(&policy, 2, None);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let capped = backoff(&policy, 10, None);
            assert!(capped <= Duration::from_secs(1));
        }
        assert_eq!(
            backoff(&policy, 0, Some(Duration::from_secs(30))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn retryable_statuses() {
        assert!(is_retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(is_retryable(StatusCode::BAD_GATEWAY));
        assert!(is_retryable(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!is_retryable(StatusCode::BAD_REQUEST));
        assert!(!is_retryable(StatusCode::UNAUTHORIZED));
    }

    #[test]
    fn bad_configs_are_refused_and_debug_hides_the_key() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key = Some("sk-very-secret".into());
        config
            .headers
            .insert("X-Gateway-Key".into(), "gw-secret".into());
        let model = OpenAiCompatible::new(config.clone()).expect("valid config");
        let debug = format!("{model:?}");
        assert!(!debug.contains("sk-very-secret"), "{debug}");
        assert!(!debug.contains("gw-secret"), "{debug}");
        assert!(debug.contains("X-Gateway-Key"));
        assert_eq!(model.name(), "openai:m");

        let mut bad = config.clone();
        bad.model = " ".into();
        assert_eq!(
            OpenAiCompatible::new(bad).err(),
            Some(OpenAiError::MissingModel)
        );
        let mut bad = config;
        bad.headers.insert("bad header".into(), "x".into());
        assert!(matches!(
            OpenAiCompatible::new(bad),
            Err(OpenAiError::InvalidHeader { .. })
        ));
    }
}
