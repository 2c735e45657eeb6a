//! A scripted OpenAI-compatible server on 127.0.0.1 (random port), written
//! on a raw TCP listener so that a test controls every byte and every pause:
//! recordings replayed byte for byte, streams cut mid-JSON, servers that go
//! silent. Each connection gets the next scripted reply; the provider's
//! requests are recorded for assertions.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aics_openai::{OpenAiCompatible, OpenAiConfig, RetryPolicy, Timeouts};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// 200 `text/event-stream`: each part written after its delay, then the
    /// connection is closed (the body is delimited by the close, as HTTP/1.1
    /// allows, so a cut stream looks exactly like one).
    Stream(Vec<Part>),
    /// An error status with a body and extra headers.
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Reads the request, then says nothing for this long and hangs up.
    Silent(Duration),
    /// These bytes as the whole response, head included, then a close.
    Raw(Vec<u8>),
}

#[derive(Clone, Debug)]
pub struct Part {
    pub delay: Duration,
    pub bytes: Vec<u8>,
}

impl Reply {
    /// A stream written in one go.
    pub fn stream(bytes: impl Into<Vec<u8>>) -> Self {
        Self::Stream(vec![Part {
            delay: Duration::ZERO,
            bytes: bytes.into(),
        }])
    }

    /// A stream written `size` bytes at a time, so that events and even
    /// UTF-8 characters are split across reads.
    pub fn stream_in_pieces(bytes: &[u8], size: usize) -> Self {
        Self::Stream(
            bytes
                .chunks(size)
                .map(|piece| Part {
                    delay: Duration::ZERO,
                    bytes: piece.to_vec(),
                })
                .collect(),
        )
    }

    /// 200 `application/json` with this body: an unstreamed completion.
    pub fn json(body: &str) -> Self {
        Self::status(200, body)
    }

    pub fn status(status: u16, body: &str) -> Self {
        Self::Status {
            status,
            body: body.to_owned(),
            headers: Vec::new(),
        }
    }
}

/// One request the provider sent.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The request line and headers, as sent.
    pub head: String,
    pub body: Value,
}

impl Recorded {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    }
}

pub struct MockServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl MockServer {
    /// Serves `replies` in order, one per request; the last one repeats.
    pub async fn start(replies: Vec<Reply>) -> Self {
        assert!(!replies.is_empty());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut served = 0usize;
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[served.min(replies.len() - 1)].clone();
                served += 1;
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    serve(socket, reply, recorded).await;
                });
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            requests,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    // Small pieces go out as written, not held back by Nagle's algorithm.
    let _ = socket.set_nodelay(true);
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().expect("lock").push(request);
    match reply {
        Reply::Stream(parts) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        cache-control: no-cache\r\nconnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for part in parts {
                tokio::time::sleep(part.delay).await;
                if socket.write_all(&part.bytes).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
        }
        Reply::Status {
            status,
            body,
            headers,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Whatever\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
        Reply::Silent(pause) => tokio::time::sleep(pause).await,
        Reply::Raw(bytes) => {
            let _ = socket.write_all(&bytes).await;
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads one request: the head up to the blank line, then Content-Length
/// bytes of body (reqwest sends a length with a JSON body).
async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded { head, body })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A chunked 200 whose body is `chunks` (each one HTTP chunk) and then
/// nothing: no terminating zero-size chunk, so the client sees a broken body.
pub fn chunked_and_cut(chunks: &[&str]) -> Reply {
    let mut bytes = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                      transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        .to_vec();
    for chunk in chunks {
        bytes.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
    }
    Reply::Raw(bytes)
}

/// A recording from `shared/fixtures/openai-sse/`, read at test time.
///
/// `shared/` lies beside the checkout (as in CI); `AICS_FIXTURES_DIR` names
/// another folder. The manifest dir is read at run time, so a moved checkout
/// still finds it.
pub fn fixture(name: &str) -> Vec<u8> {
    let dir = fixtures_dir();
    let path = format!("{dir}/{name}");
    std::fs::read(&path).unwrap_or_else(|err| {
        panic!("reading fixture {path}: {err} (shared/ must lie beside the checkout, or set AICS_FIXTURES_DIR)")
    })
}

/// The folder of the recordings (see [`fixture`]).
pub fn fixtures_dir() -> String {
    std::env::var("AICS_FIXTURES_DIR").unwrap_or_else(|_| {
        let manifest = std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
        format!("{manifest}/../../shared/fixtures/openai-sse")
    })
}

/// SSE events with these data lines, ending with `[DONE]`.
pub fn sse(data: &[&str]) -> String {
    let mut out = sse_without_done(data);
    out.push_str("data: [DONE]\n\n");
    out
}

/// SSE events with these data lines and no `[DONE]`.
pub fn sse_without_done(data: &[&str]) -> String {
    data.iter().map(|d| format!("data: {d}\n\n")).collect()
}

/// A config for the mock server with short timeouts and quick retries.
pub fn test_config(base_url: &str) -> OpenAiConfig {
    OpenAiConfig {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_token: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            total: Duration::from_secs(20),
        },
        retries: RetryPolicy {
            max_retries: 2,
            base_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        },
        ..OpenAiConfig::new(base_url, "test-model")
    }
}

pub fn model(config: OpenAiConfig) -> OpenAiCompatible {
    OpenAiCompatible::new(config).expect("valid config")
}
