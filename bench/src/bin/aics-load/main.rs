//! `aics-load`: drives a running aics server over HTTP (scripts/bench-http).
//!
//! ```text
//! aics-load chat    --base URL --token T [--concurrency 64] [--warmup-seconds 3]
//!                   [--seconds 10] [--server-pid PID] [--message TEXT]
//!                   [--latencies FILE] [--session-ids random|ordered]
//! aics-load streams --base URL --token T [--streams 1000] [--server-pid PID]
//! ```
//!
//! `chat`: `--concurrency` workers each send `POST /api/chat` back to back,
//! every turn on a conversation of its own, until the deadline; a turn counts
//! when it answers 200 with stop reason `final_answer` and a reply, anything
//! else is an error. Prints turns/s, p50/p99 latency, errors and, with
//! `--server-pid`, the server's resident memory and what it spent per turn
//! of the measured phase: CPU milliseconds, KB and calls written (files and
//! sockets; `aics_bench::Usage`), which move far less than turns/s on a
//! shared machine; and the CPU milliseconds this process spent per turn
//! (`load_cpu_ms_per_turn`), taken from the same cores; and how much of
//! the machine's CPU time sat idle meanwhile (`machine_idle_pct`, with the
//! time spent waiting for the disk and the time stolen by the hypervisor
//! beside it: `aics_bench::Cores`). `--latencies`
//! writes each good turn of the measured phase to FILE, one line each:
//! when it was sent (seconds since the Unix epoch, to line it up with the
//! server's log) and its latency in milliseconds. `--session-ids` picks
//! the conversations' ids: `random` (the default: an API caller's own ids,
//! which sort nowhere in particular) or `ordered` (in the order they are
//! made, as the ids the server gives its own conversations).
//!
//! `streams`: `--streams` turns at once through `POST /api/chat/stream`;
//! each stream's `llm_token` events are joined and compared with the reply
//! its `final` event carries. Prints how many streams got every token, the
//! tokens delivered and the characters missing, and the server's memory.
//!
//! Each prints one `key=value` line, like `aics-bench`.
//!
//! - `main.rs`: the arguments, what both modes share, `main`;
//! - `chat.rs`: the `chat` mode;
//! - `conn.rs`: its workers' connections;
//! - `streams.rs`: the `streams` mode.
#![forbid(unsafe_code)]

mod chat;
mod conn;
mod streams;

use std::sync::Arc;

use aics_bench::rss_mb;

/// mimalloc, as the server has: this process shares its cores.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The turn both modes send: one `order_query`, then the streamed answer.
const MESSAGE: &str = "Where is my order ORD-123?";

#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("{0}")]
    Usage(String),
    #[error("http client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("http connection: {0}")]
    Hyper(#[from] hyper::Error),
    #[error("connecting: {0}")]
    Io(#[from] std::io::Error),
    #[error("a request's body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("a worker panicked: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("the server does not answer at {0}: {1}")]
    Down(String, String),
}

/// Fails at once when the server is not up (rather than counting a
/// refused connection as an error turn, thousands of times).
async fn check_up(client: &reqwest::Client, base: &str) -> Result<(), LoadError> {
    let down = |e: String| LoadError::Down(base.to_owned(), e);
    let response = client
        .get(format!("{base}/healthz"))
        .send()
        .await
        .map_err(|e| down(e.to_string()))?;
    if !response.status().is_success() {
        return Err(down(response.status().to_string()));
    }
    Ok(())
}

struct Args {
    mode: String,
    base: String,
    token: String,
    concurrency: usize,
    warmup: f64,
    seconds: f64,
    streams: usize,
    server_pid: Option<String>,
    message: String,
    latencies: Option<String>,
    /// `--session-ids`: how the chat mode names its conversations.
    session_ids: chat::SessionIds,
}

fn parse_args() -> Result<Args, LoadError> {
    let usage = || {
        LoadError::Usage(
            "aics-load chat|streams --base URL --token T [--concurrency N] [--warmup-seconds S] \
             [--seconds S] [--streams N] [--server-pid PID] [--message TEXT] \
             [--latencies FILE] [--session-ids random|ordered]"
                .into(),
        )
    };
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or_else(usage)?;
    if !matches!(mode.as_str(), "chat" | "streams") {
        return Err(usage());
    }
    let mut args = Args {
        mode,
        base: "http://127.0.0.1:3000".into(),
        token: String::new(),
        concurrency: 64,
        warmup: 3.0,
        seconds: 10.0,
        streams: 1000,
        server_pid: None,
        message: MESSAGE.into(),
        latencies: None,
        session_ids: chat::SessionIds::default(),
    };
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| LoadError::Usage(format!("{flag} needs a value")))
        };
        let num = |v: String| {
            v.parse::<f64>()
                .map_err(|e| LoadError::Usage(format!("bad number {v}: {e}")))
        };
        match flag.as_str() {
            "--base" => args.base = value()?.trim_end_matches('/').to_owned(),
            "--token" => args.token = value()?,
            "--concurrency" => args.concurrency = num(value()?)?.max(1.0) as usize,
            "--warmup-seconds" => args.warmup = num(value()?)?,
            "--seconds" => args.seconds = num(value()?)?,
            "--streams" => args.streams = num(value()?)?.max(1.0) as usize,
            "--server-pid" => args.server_pid = Some(value()?),
            "--message" => args.message = value()?,
            "--latencies" => args.latencies = Some(value()?),
            "--session-ids" => {
                let name = value()?;
                args.session_ids = chat::SessionIds::parse(&name).ok_or_else(|| {
                    LoadError::Usage(format!("--session-ids is random or ordered, not {name}"))
                })?;
            }
            _ => return Err(usage()),
        }
    }
    Ok(args)
}

fn server_rss(args: &Args) -> String {
    match &args.server_pid {
        Some(pid) => {
            let (now, peak) = rss_mb(pid);
            format!(" server_rss_mb={now:.1} server_peak_rss_mb={peak:.1}")
        }
        None => String::new(),
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

fn main() -> std::process::ExitCode {
    let outcome = parse_args().and_then(|args| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| LoadError::Usage(format!("no runtime: {e}")))?;
        let args = Arc::new(args);
        runtime.block_on(async move {
            match args.mode.as_str() {
                "chat" => chat::chat(args).await,
                _ => streams::streams(args).await,
            }
        })
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aics-load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
