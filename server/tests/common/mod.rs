//! What the server's integration tests share: a reader of server-sent
//! events, a real `aics` process to start, query and kill, a folder for its
//! files ([`Workdir`]), and the router called in process ([`oneshot`]).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

pub mod oneshot;

pub const API_TOKEN: &str = "test-api-token-0123456789";

/// A folder of its own for one test's databases and logs: removed when the
/// test ends well, kept (and named on stderr) when it fails, for its logs.
pub struct Workdir(PathBuf);

impl Workdir {
    /// `$TMPDIR/aics-{kind}-{name}-{uuid}`, created.
    pub fn new(kind: &str, name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("aics-{kind}-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl std::ops::Deref for Workdir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("the test's files are kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// Reads server-sent events from a response.
pub struct SseReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        Self {
            stream: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next event (keep-alive comments skipped), or `None` at the end.
    pub async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::new();
                let mut id = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if event.is_empty() {
                    continue; // keep-alive comment
                }
                return Some(Sse {
                    event,
                    id,
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.stream.next())
                .await
                .expect("no event within 60 s")?
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Events up to and including `final`.
    pub async fn until_final(&mut self) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let done = event.event == "final";
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before final: {seen:?}");
    }

    /// Events up to and including the first one `stop` accepts.
    pub async fn until(&mut self, stop: impl Fn(&Sse) -> bool) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(event) = self.next().await {
            let done = stop(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the stream ended first: {seen:?}");
    }
}

/// The workspace root (where the binary expects to run from).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real `aics` process.
pub struct Server {
    child: Child,
    pub base: String,
    pub log: PathBuf,
    client: reqwest::Client,
    /// The folder of its database and log, when the server owns it
    /// ([`Server::owning`]); removed after the process is stopped.
    workdir: Option<Workdir>,
}

impl Server {
    /// The built binary on `database_url` with the demo model, a supervisor
    /// API token and `env` on top, its output appended to `log`; and its
    /// address.
    fn command(database_url: &str, log: &Path, env: &[(&str, &str)]) -> (Command, String) {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_aics"));
        command
            .current_dir(workspace())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AICS_ADDR", &addr)
            .env("LEPTOS_SITE_ADDR", &addr)
            .env("AICS_DATABASE_URL", database_url)
            .env("AICS_API_TOKEN", API_TOKEN)
            .env("AICS_API_TOKEN_ROLE", "supervisor")
            .env("AICS_SUPERVISOR_PASSWORD", "supervisor-pass")
            .env("AICS_AGENT_PASSWORD", "agent-pass")
            .env("AICS_DEMO_TOKEN_DELAY_MS", "2")
            .env("AICS_LEASE_SECS", "2")
            .env("AICS_RECOVERY_SWEEP_SECS", "0.5")
            .env("AICS_LOG", "info")
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out));
        for (k, v) in env {
            command.env(k, v);
        }
        (command, addr)
    }

    /// Runs the built binary as [`Server::start`] would and waits for it to
    /// stop by itself, which it must within a minute; answers its exit
    /// status's success.
    pub async fn stops_by_itself(database_url: &str, log: &Path, env: &[(&str, &str)]) -> bool {
        let (mut command, _) = Self::command(database_url, log, env);
        let mut child = command.spawn().expect("the aics binary starts");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "the server did not stop; its log:\n{}",
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the built binary on `database_url` with the demo model, a
    /// supervisor API token and `env` on top; waits until it serves.
    pub async fn start(database_url: &str, log: &Path, env: &[(&str, &str)]) -> Server {
        let (mut command, addr) = Self::command(database_url, log, env);
        let child = command.spawn().expect("the aics binary starts");
        let server = Server {
            child,
            base: format!("http://{addr}"),
            log: log.to_path_buf(),
            client: reqwest::Client::new(),
            workdir: None,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(r) = server.client.get(server.url("/healthz")).send().await {
                if r.status().is_success() {
                    return server;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the server did not start; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server owns `dir` (its database and log): removed once the
    /// server is dropped, if the test did not fail.
    pub fn owning(mut self, dir: Workdir) -> Self {
        self.workdir = Some(dir);
        self
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGKILL: the process dies at once, mid-whatever.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(self.url(path))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(self.url(path))
            .bearer_auth(API_TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// A conversation's live events.
    pub async fn events(&self, session_id: &str, last_event_id: Option<&str>) -> SseReader {
        let mut request = self
            .client
            .get(self.url(&format!("/api/conversations/{session_id}/events")))
            .bearer_auth(API_TOKEN);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        SseReader::new(request.send().await.unwrap())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
