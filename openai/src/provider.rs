//! [`OpenAiCompatible`]: the HTTP call, its retries and timeouts, and the
//! stream of chunks it returns.
//!
//! A call goes: build the body → POST with the connect timeout → on a
//! connection error, 429 or 5xx, back off (exponential, jittered) and try
//! again → on 200, wait for the first server-sent event (a connection that
//! breaks before it is retried too) → hand back a stream that reads the
//! events with the first-token, idle and total timeouts. Nothing is retried
//! once the stream is handed back: a chunk may already have reached the user.
//!
//! Some servers refuse tools while streaming (llama-cpp-python answers
//! `tool_choice: "auto"` with `stream: true` by an error, or by an empty
//! stream). Such a refusal, when tools were sent, is not retried: the call
//! is made again unstreamed (`stream: false`, the reply arriving as one
//! chunk), and the provider remembers it, so its later calls with tools go
//! unstreamed straight away. Calls without tools keep streaming.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
use crate::decode::{decode_completion, ChunkDecoder, Decoded};
use crate::error::{summarize_body, summarize_text, OpenAiError};
use crate::redact::{redact_url, Redactor};
use crate::request::{chat_body, unstreamed_body};

/// The server-sent events of a response body.
type EventResult = Result<Event, EventStreamError<reqwest::Error>>;
type Events = Pin<Box<dyn Stream<Item = EventResult> + Send>>;

/// How much of an error body is read to summarize it.
const MAX_ERROR_BODY_BYTES: usize = 8 * 1024;

/// How much of an unstreamed completion is read.
const MAX_COMPLETION_BYTES: usize = 4 * 1024 * 1024;

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
/// let request = ModelRequest::new(vec![Message::user("hello")]);
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
    /// Masks the key, the header values and the URL's secrets in every
    /// error and log line.
    redactor: Redactor,
    /// The server refused tools while streaming once: calls with tools go
    /// unstreamed from then on. Shared by the clones of this provider.
    unstreamed_tools: Arc<AtomicBool>,
}

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The config's Debug redacts; the headers and key are left out.
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &redact_url(self.endpoint.as_str()))
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

        let redactor = Redactor::new(
            &config.base_url,
            api_key.as_deref(),
            config.headers.values().map(String::as_str),
        );
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
            redactor,
            unstreamed_tools: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Whether this provider's calls with tools go unstreamed, because its
    /// server refused tools while streaming.
    pub fn tools_unstreamed(&self) -> bool {
        self.unstreamed_tools.load(Ordering::Relaxed)
    }

    /// The config this provider was built from.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The tool protocol the engine should speak with this model.
    pub fn protocol(&self) -> PlanProtocol {
        self.config.protocol
    }

    /// The URL requests go to: `{base_url}/chat/completions`, the base's
    /// query kept. Show it only through [`redact_url`].
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// One attempt: the request and its status. `Ok` hands back the stream.
    /// `tools_sent`: the body has tools, so a refusal to stream them is
    /// told apart ([`Failure::refused`]).
    async fn attempt(
        &self,
        body: &Value,
        deadline: Instant,
        tools_sent: bool,
    ) -> Result<ModelStream, Failure> {
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
                return Err(Failure::retry(
                    ModelError::Connect(self.redactor.scrub(&error_chain(&err))),
                    None,
                ))
            }
            Ok(Ok(response)) => response,
        };

        let status = response.status();
        if !status.is_success() {
            return Err(self
                .status_failure(response, first_deadline, tools_sent)
                .await);
        }
        // A server that ignored `stream: true` (or reports an error with a
        // 200) answers JSON, which would otherwise look like an empty stream.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            let body = timeout_at(first_deadline, read_limited(response, MAX_ERROR_BODY_BYTES))
                .await
                .unwrap_or_default();
            let error = ModelError::Protocol(format!(
                "expected a stream of server-sent events, got JSON: {}",
                summarize_body(&body, &self.redactor)
            ));
            // With tools, a server that will not stream them may say so in
            // a JSON body: the unstreamed call is worth making.
            return Err(if tools_sent {
                Failure::refused(error)
            } else {
                Failure::fatal(error)
            });
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
            // A server that raises while it streams tools (llama-cpp-python
            // behind some ASGI stacks) breaks the body before any event.
            Ok(Some(Err(EventStreamError::Transport(err)))) if tools_sent => {
                return Err(Failure::refused(ModelError::Connect(format!(
                    "the connection broke before the first event of a request with tools: {}",
                    self.redactor.scrub(&error_chain(&err))
                ))))
            }
            Ok(Some(Err(EventStreamError::Transport(err)))) => {
                return Err(Failure::retry(
                    ModelError::Connect(format!(
                        "the connection broke before the first event: {}",
                        self.redactor.scrub(&error_chain(&err))
                    )),
                    None,
                ))
            }
            // llama-cpp-python closes an empty stream when it refuses tools
            // while streaming.
            Ok(None) if tools_sent => {
                return Err(Failure::refused(ModelError::Protocol(
                    "the server closed an empty stream to a request with tools".into(),
                )))
            }
            Ok(first) => first,
        };
        Ok(self.chunks(first, events, first_deadline, deadline))
    }

    /// The failure an error status stands for: a refusal of tools while
    /// streaming, a retryable one (429, 5xx) or a fatal one.
    async fn status_failure(
        &self,
        response: Response,
        limit: Instant,
        tools_sent: bool,
    ) -> Failure {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = timeout_at(limit, read_limited(response, MAX_ERROR_BODY_BYTES))
            .await
            .unwrap_or_default();
        let message = summarize_body(&body, &self.redactor);
        let refused = tools_sent && refuses_streamed_tools(status, &message);
        let error = ModelError::Status {
            status: status.as_u16(),
            message,
        };
        if refused {
            Failure::refused(error)
        } else if is_retryable(status) {
            Failure::retry(error, retry_after)
        } else {
            Failure::fatal(error)
        }
    }

    /// One unstreamed attempt (`stream: false`): the whole completion, read
    /// within the total deadline (nothing arrives before the model is done),
    /// handed back as the chunks a stream would have carried.
    async fn attempt_unstreamed(
        &self,
        body: &Value,
        deadline: Instant,
    ) -> Result<ModelStream, Failure> {
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let send = self
            .client
            .post(self.endpoint.clone())
            .headers(headers)
            .json(body)
            .send();
        let total = self.config.timeouts.total;
        let response = match timeout_at(deadline, send).await {
            Err(_) => return Err(Failure::fatal(total_timeout(total))),
            Ok(Err(err)) => {
                return Err(Failure::retry(
                    ModelError::Connect(self.redactor.scrub(&error_chain(&err))),
                    None,
                ))
            }
            Ok(Ok(response)) => response,
        };
        if !response.status().is_success() {
            return Err(self.status_failure(response, deadline, false).await);
        }
        let body = timeout_at(deadline, read_limited(response, MAX_COMPLETION_BYTES))
            .await
            .map_err(|_| Failure::fatal(total_timeout(total)))?;
        let chunks = decode_completion(&String::from_utf8_lossy(&body)).map_err(Failure::fatal)?;
        Ok(futures::stream::iter(chunks.into_iter().map(Ok)).boxed())
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries or
    /// the time run out (a refusal is never retried).
    async fn with_retries<F, Fut>(
        &self,
        deadline: Instant,
        attempt: F,
    ) -> Result<ModelStream, Failure>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<ModelStream, Failure>>,
    {
        let policy = self.config.retries;
        let mut retry = 0;
        loop {
            let mut failure = match attempt().await {
                Ok(stream) => return Ok(stream),
                Err(failure) => failure,
            };
            // Whatever an attempt wrote, nothing of the URL's secrets is logged.
            failure.error = self.redactor.error(failure.error);
            if !failure.retryable || retry >= policy.max_retries {
                if !failure.refused {
                    tracing::warn!(error = %failure.error, retries = retry, "model call failed");
                }
                return Err(failure);
            }
            let wait = backoff(&policy, retry, failure.retry_after);
            if Instant::now() + wait >= deadline {
                tracing::warn!(error = %failure.error, "model call failed; no time left to retry");
                return Err(failure);
            }
            retry += 1;
            tracing::warn!(error = %failure.error, retry, wait_ms = wait.as_millis() as u64,
                "model call failed; retrying");
            tokio::time::sleep(wait).await;
        }
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
        let redactor = self.redactor.clone();
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
                            summarize_text(&describe(&err), &redactor)
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
                        summarize_body(event.data.as_bytes(), &redactor)
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
                        // A decoding error quotes the chunk, which may echo anything.
                        let error = redactor.error(error);
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
        let tools_sent = self.config.protocol == PlanProtocol::Native && !request.tools.is_empty();
        let unstreamed = || async {
            let body = unstreamed_body(&self.config, &request);
            self.with_retries(deadline, || self.attempt_unstreamed(&body, deadline))
                .await
                .map_err(|failure| failure.error)
        };
        if tools_sent && self.tools_unstreamed() {
            return unstreamed().await;
        }
        let body = chat_body(&self.config, &request);
        match self
            .with_retries(deadline, || self.attempt(&body, deadline, tools_sent))
            .await
        {
            Ok(stream) => Ok(stream),
            Err(failure) if failure.refused => {
                self.unstreamed_tools.store(true, Ordering::Relaxed);
                tracing::warn!(model = %self.config.model, error = %failure.error,
                    "the server refused tools while streaming; this provider's calls with \
                     tools go unstreamed from now on");
                unstreamed().await
            }
            Err(failure) => Err(failure.error),
        }
    }
}

/// Whether an error answer to a streamed request with tools is the server
/// refusing to stream tool calls ("Automatic streaming tool choice is not
/// supported"): a 4xx other than auth, not-found and rate limits, or a 5xx,
/// whose message speaks of streaming or of the tool choice.
fn refuses_streamed_tools(status: StatusCode, message: &str) -> bool {
    let status_fits = status.is_server_error()
        || (status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 404 | 408 | 429));
    let message = message.to_ascii_lowercase();
    status_fits
        && (message.contains("stream")
            || message.contains("tool_choice")
            || message.contains("tool choice"))
}

/// A failed attempt and whether another one may help.
struct Failure {
    error: ModelError,
    retryable: bool,
    /// The server refused tools while streaming: never retried as such,
    /// the call goes unstreamed instead.
    refused: bool,
    /// The server's `Retry-After`, in seconds.
    retry_after: Option<Duration>,
}

impl Failure {
    fn retry(error: ModelError, retry_after: Option<Duration>) -> Self {
        Self {
            error,
            retryable: true,
            refused: false,
            retry_after,
        }
    }

    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            refused: false,
            retry_after: None,
        }
    }

    fn refused(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            refused: true,
            retry_after: None,
        }
    }
}

/// `{base_url}/chat/completions`, whether or not the base ends in `/`; a
/// query of the base (a gateway's `?api-version=`, `?api-key=`) stays after
/// the path.
fn endpoint(base_url: &str) -> Result<Url, OpenAiError> {
    let invalid = |reason: String| OpenAiError::InvalidBaseUrl {
        url: redact_url(base_url),
        reason,
    };
    let mut url = Url::parse(base_url.trim()).map_err(|err| invalid(err.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https".into()));
    }
    url.set_fragment(None);
    let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
    url.set_path(&path);
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

/// At most `limit` bytes of a body: an error page can be large.
async fn read_limited(mut response: Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(bytes)) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(limit);
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
        assert_eq!(
            endpoint("https://gw.example/v1/?api-version=2024-06-01").map(|u| u.to_string()),
            Ok("https://gw.example/v1/chat/completions?api-version=2024-06-01".to_string())
        );
        let refused = endpoint("ftp://user:PASSWORD@gw.example/v1?api-key=SECRET")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            refused.contains("ftp://[redacted]@gw.example/v1?[redacted]"),
            "{refused}"
        );
        assert!(
            !refused.contains("SECRET") && !refused.contains("PASSWORD"),
            "{refused}"
        );
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
    fn refusals_of_streamed_tools_are_told_apart() {
        let refusal = "Automatic streaming tool choice is not supported";
        assert!(refuses_streamed_tools(
            StatusCode::INTERNAL_SERVER_ERROR,
            refusal
        ));
        assert!(refuses_streamed_tools(StatusCode::BAD_REQUEST, refusal));
        assert!(refuses_streamed_tools(
            StatusCode::UNPROCESSABLE_ENTITY,
            "tool_choice 'auto' requires stream=false"
        ));
        assert!(!refuses_streamed_tools(
            StatusCode::INTERNAL_SERVER_ERROR,
            "CUDA out of memory"
        ));
        assert!(!refuses_streamed_tools(StatusCode::UNAUTHORIZED, refusal));
        assert!(!refuses_streamed_tools(
            StatusCode::TOO_MANY_REQUESTS,
            refusal
        ));
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
