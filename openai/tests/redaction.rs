//! A key in the base URL (`…/v1?api-key=…`, or `user:password@`) reaches
//! neither an error, nor its Debug, nor a log line, nor a trace's
//! sentence, whichever way the call fails: nobody listening, a server that
//! echoes the request's URL in its error body, a stream that breaks off.
//! The key still goes to the server, in the query, after the path.

mod support;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aics_agent::model::{ChatModel, Message, ModelError, ModelRequest};
use aics_openai::{OpenAiCompatible, OpenAiConfig, OpenAiError};
use futures::StreamExt;
use support::{chunked_and_cut, model, test_config, MockServer, Reply};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const KEY: &str = "SECRETKEY0123";
const PASSWORD: &str = "PASSWORD0123";

fn hello() -> ModelRequest {
    ModelRequest::new([Message::user("hello")])
}

/// Every field of every span and event, as text: what a log would show.
#[derive(Clone, Default)]
struct Logged {
    text: Arc<Mutex<String>>,
    ids: Arc<AtomicU64>,
}

impl Logged {
    fn text(&self) -> String {
        self.text.lock().expect("lock").clone()
    }
}

impl Visit for Logged {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = self.text.lock().expect("lock");
        let _ = writeln!(text, "{}={value:?}", field.name());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let mut text = self.text.lock().expect("lock");
        let _ = writeln!(text, "{}={value}", field.name());
    }
}

impl Subscriber for Logged {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        span.record(&mut self.clone());
        Id::from_u64(self.ids.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut self.clone());
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        event.record(&mut self.clone());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Nothing of the key or the password in `text`.
fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(KEY), "the key in {what}: {text}");
    assert!(!text.contains(PASSWORD), "the password in {what}: {text}");
}

/// The error, its Debug, its user sentence and the log, all clean.
fn assert_error_clean(error: &ModelError, logged: &Logged) {
    assert_clean("the error", &error.to_string());
    assert_clean("the error's Debug", &format!("{error:?}"));
    assert_clean("the trace's sentence", &error.user_message());
    let log = logged.text();
    assert!(!log.is_empty(), "the failure was logged");
    assert_clean("the log", &log);
}

/// `base` (`http://127.0.0.1:PORT/v1`) with the key in its query and a
/// user and password before the host.
fn with_secrets(base: &str) -> String {
    let base = base.replacen("http://", &format!("http://gateway:{PASSWORD}@"), 1);
    format!("{base}?api-key={KEY}")
}

fn quick(base_url: &str) -> OpenAiConfig {
    let mut config = test_config(base_url);
    config.retries.max_retries = 1;
    config
}

#[tokio::test]
async fn nobody_listening_shows_no_key() {
    let logged = Logged::default();
    let _log = tracing::subscriber::set_default(logged.clone());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let model = model(quick(&with_secrets(&format!("http://127.0.0.1:{port}/v1"))));
    assert_clean("the provider's Debug", &format!("{model:?}"));
    assert_clean("the config's Debug", &format!("{:?}", model.config()));

    let error = model.stream(hello()).await.err().expect("nothing listens");
    assert!(matches!(error, ModelError::Connect(_)), "{error:?}");
    // Still says where it went, without the secrets.
    assert!(
        error.to_string().contains("127.0.0.1"),
        "the host is kept: {error}"
    );
    assert_error_clean(&error, &logged);
}

#[tokio::test]
async fn a_server_that_echoes_the_url_shows_no_key() {
    let logged = Logged::default();
    let _log = tracing::subscriber::set_default(logged.clone());
    let echo = format!(
        r#"{{"error":{{"message":"no deployment at http://127.0.0.1/v1/chat/completions?api-key={KEY} (/v1/chat/completions?api-key={KEY})"}}}}"#
    );
    let server = MockServer::start(vec![Reply::status(404, &echo)]).await;
    let model = model(quick(&with_secrets(&server.base_url)));

    let error = model.stream(hello()).await.err().expect("an error status");
    assert!(
        matches!(error, ModelError::Status { status: 404, .. }),
        "{error:?}"
    );
    assert_error_clean(&error, &logged);

    // The key went where the gateway wants it: the query, after the path.
    let requests = server.requests();
    let line = requests[0]
        .head
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        line,
        format!("POST /v1/chat/completions?api-key={KEY} HTTP/1.1")
    );
}

#[tokio::test]
async fn a_stream_that_breaks_off_shows_no_key() {
    let logged = Logged::default();
    let _log = tracing::subscriber::set_default(logged.clone());
    let server = MockServer::start(vec![chunked_and_cut(&[
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    ])])
    .await;
    let model = model(quick(&with_secrets(&server.base_url)));

    let stream = model.stream(hello()).await.expect("the stream starts");
    let items: Vec<_> = stream.collect().await;
    let error = items
        .into_iter()
        .find_map(Result::err)
        .expect("the stream breaks off");
    assert_error_clean(&error, &logged);
}

#[test]
fn a_refused_base_url_is_shown_redacted() {
    let error = OpenAiCompatible::new(OpenAiConfig::new(
        format!("ftp://gateway:{PASSWORD}@127.0.0.1/v1?api-key={KEY}"),
        "m",
    ))
    .expect_err("not http");
    assert!(
        matches!(error, OpenAiError::InvalidBaseUrl { .. }),
        "{error:?}"
    );
    assert_clean("the config error", &error.to_string());
    assert_clean("the config error's Debug", &format!("{error:?}"));
    assert_eq!(
        aics_openai::redact_url(&format!("http://u:{PASSWORD}@h:1/v1?api-key={KEY}")),
        "http://[redacted]@h:1/v1?[redacted]"
    );
}
