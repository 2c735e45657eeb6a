//! Calls that go wrong: error statuses, retries, connection failures,
//! timeouts, and streams that are cut, empty or never finish.

mod support;

use std::time::{Duration, Instant};

use aics_agent::model::{ChatModel, Message, ModelChunk, ModelError, ModelRequest};
use futures::StreamExt;
use support::{
    chunked_and_cut, model, sse, sse_without_done, test_config, MockServer, Part, Reply,
};

fn hello() -> ModelRequest {
    ModelRequest::new([Message::user("hello")])
}

const HELLO_STREAM: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}"#,
];

async fn drain(stream: aics_agent::model::ModelStream) -> (Vec<ModelChunk>, Option<ModelError>) {
    let items: Vec<_> = stream.collect().await;
    let mut chunks = Vec::new();
    let mut error = None;
    for item in items {
        match item {
            Ok(chunk) => {
                assert!(error.is_none(), "nothing may follow an error");
                chunks.push(chunk);
            }
            Err(err) => error = Some(err),
        }
    }
    (chunks, error)
}

#[tokio::test]
async fn a_500_is_retried_then_reported_with_the_servers_message() {
    let server = MockServer::start(vec![Reply::status(
        500,
        r#"{"error":{"message":"CUDA out of memory","type":"server_error"}}"#,
    )])
    .await;
    let model = model(test_config(&server.base_url));
    let err = model.stream(hello()).await.err().expect("an error");
    assert_eq!(
        err,
        ModelError::Status {
            status: 500,
            message: "CUDA out of memory".into()
        }
    );
    // The first attempt and max_retries (2) retries.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_429_then_success_is_retried_after_retry_after() {
    let server = MockServer::start(vec![
        Reply::Status {
            status: 429,
            body: r#"{"error":{"message":"Rate limit reached"}}"#.into(),
            headers: vec![("retry-after".into(), "0".into())],
        },
        Reply::stream(sse(HELLO_STREAM)),
    ])
    .await;
    let model = model(test_config(&server.base_url));
    let (chunks, error) = drain(model.stream(hello()).await.expect("retried into a stream")).await;
    assert_eq!(error, None);
    assert_eq!(
        chunks[..2],
        [
            ModelChunk::Text("Hello".into()),
            ModelChunk::Text(" there".into())
        ]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_400_is_not_retried_and_the_key_is_masked() {
    let server = MockServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-live-abc. You can find your API key at https://example.com.","code":"invalid_api_key"}}"#,
    )])
    .await;
    let mut config = test_config(&server.base_url);
    config.api_key = Some("sk-live-abc".into());
    let err = model(config).stream(hello()).await.err().expect("an error");
    match err {
        ModelError::Status { status, message } => {
            assert_eq!(status, 401);
            assert!(
                message.starts_with("Incorrect API key provided: [redacted]."),
                "{message}"
            );
            assert!(!message.contains("sk-live-abc"));
        }
        other => panic!("expected a status error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_after_the_retries() {
    // A port that was just free: nothing listens there any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let model = model(test_config(&format!("http://127.0.0.1:{port}/v1")));
    let err = model.stream(hello()).await.err().expect("an error");
    match err {
        ModelError::Connect(message) => {
            assert!(message.to_lowercase().contains("connect"), "{message}")
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[tokio::test]
async fn no_response_at_all_hits_the_first_token_timeout_without_retry() {
    let server = MockServer::start(vec![Reply::Silent(Duration::from_secs(5))]).await;
    let mut config = test_config(&server.base_url);
    config.timeouts.first_token = Duration::from_millis(300);
    let started = Instant::now();
    let err = model(config).stream(hello()).await.err().expect("an error");
    assert!(
        matches!(&err, ModelError::Timeout(m) if m.contains("first-token")),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn headers_then_silence_hits_the_first_token_timeout() {
    // The role-only chunk is not a token: the first-token clock keeps running.
    let server = MockServer::start(vec![Reply::Stream(vec![
        Part {
            delay: Duration::ZERO,
            bytes: sse_without_done(&[HELLO_STREAM[0]]).into_bytes(),
        },
        Part {
            delay: Duration::from_secs(5),
            bytes: sse(&HELLO_STREAM[1..]).into_bytes(),
        },
    ])])
    .await;
    let mut config = test_config(&server.base_url);
    config.timeouts.first_token = Duration::from_millis(300);
    let (chunks, error) = drain(model(config).stream(hello()).await.expect("headers came")).await;
    assert!(chunks.is_empty());
    assert!(
        matches!(&error, Some(ModelError::Timeout(m)) if m.contains("first-token")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_pause_between_chunks_hits_the_idle_timeout_and_is_not_retried() {
    let server = MockServer::start(vec![Reply::Stream(vec![
        Part {
            delay: Duration::ZERO,
            bytes: sse_without_done(&HELLO_STREAM[..2]).into_bytes(),
        },
        Part {
            delay: Duration::from_secs(5),
            bytes: sse(&HELLO_STREAM[2..]).into_bytes(),
        },
    ])])
    .await;
    let mut config = test_config(&server.base_url);
    config.timeouts.idle = Duration::from_millis(300);
    let (chunks, error) = drain(model(config).stream(hello()).await.expect("starts")).await;
    assert_eq!(chunks, vec![ModelChunk::Text("Hello".into())]);
    assert!(
        matches!(&error, Some(ModelError::Timeout(m)) if m.contains("idle")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_but_steady_stream_hits_the_total_timeout() {
    let parts = (0..20)
        .map(|i| Part {
            delay: Duration::from_millis(100),
            bytes: format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{i} \"}}}}]}}\n\n")
                .into_bytes(),
        })
        .collect();
    let server = MockServer::start(vec![Reply::Stream(parts)]).await;
    let mut config = test_config(&server.base_url);
    config.timeouts.total = Duration::from_millis(700);
    let (chunks, error) = drain(model(config).stream(hello()).await.expect("starts")).await;
    assert!(!chunks.is_empty() && chunks.len() < 20, "{chunks:?}");
    assert!(
        matches!(&error, Some(ModelError::Timeout(m)) if m.contains("total")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_of_the_json_is_an_error_after_its_text() {
    let mut body = sse_without_done(&HELLO_STREAM[..2]);
    body.push_str(r#"data: {"choices":[{"index":0,"delta":{"content":" the"#);
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert_eq!(chunks, vec![ModelChunk::Text("Hello".into())]);
    assert!(
        matches!(&error, Some(ModelError::Protocol(m)) if m.contains("without [DONE]")),
        "{error:?}"
    );
    // Never retried once something was streamed.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_complete_event_with_truncated_json_is_a_protocol_error() {
    let mut body = sse_without_done(&HELLO_STREAM[..2]);
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\n\n");
    body.push_str(&sse(&HELLO_STREAM[2..]));
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert_eq!(chunks, vec![ModelChunk::Text("Hello".into())]);
    assert!(
        matches!(&error, Some(ModelError::Protocol(m)) if m.contains("did not parse")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_empty_stream_is_a_clear_error() {
    let server = MockServer::start(vec![Reply::stream(Vec::new())]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert!(chunks.is_empty());
    assert!(
        matches!(&error, Some(ModelError::Protocol(m)) if m.contains("empty stream")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_finished_stream_without_done_is_still_an_error() {
    let server = MockServer::start(vec![Reply::stream(sse_without_done(HELLO_STREAM))]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert_eq!(
        chunks,
        vec![
            ModelChunk::Text("Hello".into()),
            ModelChunk::Text(" there".into()),
            ModelChunk::Finish(aics_agent::model::FinishReason::Stop),
        ]
    );
    assert!(
        matches!(&error, Some(ModelError::Protocol(m)) if m.contains("3 events without [DONE]")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_error_payload_mid_stream_ends_the_stream() {
    let mut body = sse_without_done(&HELLO_STREAM[..2]);
    body.push_str("data: {\"error\":{\"message\":\"The server is overloaded\",\"code\":503}}\n\n");
    let server = MockServer::start(vec![Reply::stream(body)]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert_eq!(chunks, vec![ModelChunk::Text("Hello".into())]);
    assert_eq!(
        error,
        Some(ModelError::Other(
            "the model server reported an error mid-stream: The server is overloaded".into()
        ))
    );
}

#[tokio::test]
async fn a_connection_broken_before_the_first_event_is_retried() {
    let server =
        MockServer::start(vec![chunked_and_cut(&[]), Reply::stream(sse(HELLO_STREAM))]).await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("retried into a stream"),
    )
    .await;
    assert_eq!(error, None);
    assert_eq!(chunks[0], ModelChunk::Text("Hello".into()));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_connection_broken_after_a_chunk_is_reported_not_retried() {
    let first = sse_without_done(&HELLO_STREAM[..2]);
    let server = MockServer::start(vec![
        chunked_and_cut(&[&first]),
        Reply::stream(sse(HELLO_STREAM)),
    ])
    .await;
    let (chunks, error) = drain(
        model(test_config(&server.base_url))
            .stream(hello())
            .await
            .expect("starts"),
    )
    .await;
    assert_eq!(chunks, vec![ModelChunk::Text("Hello".into())]);
    assert!(
        matches!(&error, Some(ModelError::Protocol(m)) if m.contains("broke off")),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_json_answer_to_a_streamed_request_is_a_clear_error() {
    let body = r#"{"error":{"message":"stream is not supported for this model"}}"#;
    let raw = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let server = MockServer::start(vec![Reply::Raw(raw.into_bytes())]).await;
    let err = model(test_config(&server.base_url))
        .stream(hello())
        .await
        .err()
        .expect("an error");
    assert_eq!(
        err,
        ModelError::Protocol(
            "expected a stream of server-sent events, got JSON: \
             stream is not supported for this model"
                .into()
        )
    );
    assert_eq!(server.requests().len(), 1);
}
