//! `aics-load`: drives a running aics server over HTTP (scripts/bench-http).
//!
//! ```text
//! aics-load chat    --base URL --token T [--concurrency 64] [--warmup-seconds 3]
//!                   [--seconds 10] [--server-pid PID] [--message TEXT]
//!                   [--latencies FILE]
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
//! (`load_cpu_ms_per_turn`), taken from the same cores. `--latencies`
//! writes each good turn of the measured phase to FILE, one line each:
//! when it was sent (seconds since the Unix epoch, to line it up with the
//! server's log) and its latency in milliseconds.
//!
//! `streams`: `--streams` turns at once through `POST /api/chat/stream`;
//! each stream's `llm_token` events are joined and compared with the reply
//! its `final` event carries. Prints how many streams got every token, the
//! tokens delivered and the characters missing, and the server's memory.
//!
//! Each prints one `key=value` line, like `aics-bench`.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aics_bench::{pct, rss_mb, Usage};
use aics_types::StopReason;
use futures::StreamExt;
use serde_json::{json, Value};

/// The turn both modes send: one `order_query`, then the streamed answer.
const MESSAGE: &str = "Where is my order ORD-123?";

#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("{0}")]
    Usage(String),
    #[error("http client: {0}")]
    Http(#[from] reqwest::Error),
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
}

fn parse_args() -> Result<Args, LoadError> {
    let usage = || {
        LoadError::Usage(
            "aics-load chat|streams --base URL --token T [--concurrency N] [--warmup-seconds S] \
             [--seconds S] [--streams N] [--server-pid PID] [--message TEXT] \
             [--latencies FILE]"
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
            _ => return Err(usage()),
        }
    }
    Ok(args)
}

/// One `POST /api/chat` on a new conversation; `Ok(true)` when the turn
/// answered as it should.
async fn chat_turn(client: &reqwest::Client, args: &Args) -> Result<bool, LoadError> {
    let sid = format!("load-{}", uuid::Uuid::new_v4().simple());
    let response = client
        .post(format!("{}/api/chat", args.base))
        .bearer_auth(&args.token)
        .json(&json!({"sessionId": sid, "message": args.message}))
        .send()
        .await?;
    if !response.status().is_success() {
        return Ok(false);
    }
    Ok(answered(&response.bytes().await?))
}

/// Whether a chat turn's trace (`body`) answered as it should: stop reason
/// `final_answer` and a reply. Only those two fields are read; the rest is
/// skipped. This process shares the server's cores, and building the whole
/// trace as a `Value` took about a sixth of the CPU the server spends on
/// the turn (`load_cpu_ms_per_turn`: 0.15 ms, 0.08 now).
fn answered(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answered {
        stop_reason: Option<StopReason>,
        reply: String,
    }
    serde_json::from_slice::<Answered>(body)
        .is_ok_and(|a| a.stop_reason == Some(StopReason::FinalAnswer) && !a.reply.is_empty())
}

/// One good turn: when it was sent, and its latency in milliseconds.
struct Sent {
    at: SystemTime,
    ms: f64,
}

/// Workers sending turns back to back until `until`; the good turns, in
/// no order, and the count of bad ones.
async fn chat_phase(
    client: &reqwest::Client,
    args: &Arc<Args>,
    until: Instant,
) -> Result<(Vec<Sent>, usize), LoadError> {
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (client, args) = (client.clone(), args.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            while Instant::now() < until {
                let (at, started) = (SystemTime::now(), Instant::now());
                match chat_turn(&client, &args).await {
                    Ok(true) => latencies.push(Sent {
                        at,
                        ms: started.elapsed().as_secs_f64() * 1000.0,
                    }),
                    Ok(false) | Err(_) => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for worker in workers {
        let (l, e) = worker.await?;
        latencies.extend(l);
        errors += e;
    }
    Ok((latencies, errors))
}

/// `--latencies`: each good turn as `SENT_UNIX_S LATENCY_MS`, in the
/// order they were sent.
fn write_latencies(path: &str, turns: &mut [Sent]) -> Result<(), LoadError> {
    turns.sort_by_key(|t| t.at);
    let text: String = turns
        .iter()
        .map(|t| {
            let at =
                t.at.duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
            format!("{:.6} {:.3}\n", at.as_secs_f64(), t.ms)
        })
        .collect();
    std::fs::write(path, text).map_err(|e| LoadError::Usage(format!("--latencies {path}: {e}")))
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

async fn chat(args: Arc<Args>) -> Result<(), LoadError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    check_up(&client, &args.base).await?;
    let warm_until = Instant::now() + Duration::from_secs_f64(args.warmup);
    chat_phase(&client, &args, warm_until).await?;
    let usage = || args.server_pid.as_deref().and_then(Usage::of);
    let before = usage();
    let own_before = Usage::of("self");
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(args.seconds);
    let (mut turns, errors) = chat_phase(&client, &args, until).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies: Vec<f64> = turns.iter().map(|t| t.ms).collect();
    latencies.sort_by(f64::total_cmp);
    // What the server spent on each turn of the measured phase, and this
    // load generator (on the same machine, it takes CPU the server could
    // have used).
    let per_turn = match (before, usage()) {
        (Some(before), Some(after)) => after.per_turn(&before, latencies.len(), "server_"),
        _ => String::new(),
    };
    let own = match (own_before, Usage::of("self")) {
        (Some(before), Some(after)) => format!(
            " load_cpu_ms_per_turn={:.3}",
            after.cpu_ms_per_turn(&before, latencies.len())
        ),
        _ => String::new(),
    };
    println!(
        "http=chat concurrency={} turns={} turns_per_s={:.1} p50_ms={:.2} p99_ms={:.2} errors={errors}{}{per_turn}{own} loadavg={}",
        args.concurrency,
        latencies.len(),
        latencies.len() as f64 / elapsed,
        pct(&latencies, 50.0),
        pct(&latencies, 99.0),
        server_rss(&args),
        loadavg(),
    );
    // After the figures: writing the file is not the load's CPU.
    if let Some(path) = &args.latencies {
        write_latencies(path, &mut turns)?;
    }
    Ok(())
}

/// What one stream delivered.
#[derive(Default)]
struct Delivered {
    tokens: usize,
    text: String,
    reply: Option<String>,
    resyncs: usize,
}

/// One `POST /api/chat/stream`, read to its `final` event.
async fn stream_turn(client: &reqwest::Client, args: &Args) -> Result<Delivered, LoadError> {
    let sid = format!("stream-{}", uuid::Uuid::new_v4().simple());
    let response = client
        .post(format!("{}/api/chat/stream", args.base))
        .bearer_auth(&args.token)
        .json(&json!({"sessionId": sid, "message": args.message}))
        .send()
        .await?
        .error_for_status()?;
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut out = Delivered::default();
    while let Some(chunk) = body.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut event = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            let data: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            match event {
                "llm_token" => {
                    if let Some(token) = data["token"].as_str().filter(|t| !t.is_empty()) {
                        out.tokens += 1;
                        out.text.push_str(token);
                    }
                }
                "resync" => out.resyncs += 1,
                "final" => {
                    out.reply = data["trace"]["reply"].as_str().map(str::to_owned);
                    return Ok(out);
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

async fn streams(args: Arc<Args>) -> Result<(), LoadError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.streams)
        .build()?;
    check_up(&client, &args.base).await?;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.streams);
    for _ in 0..args.streams {
        let (client, args) = (client.clone(), args.clone());
        tasks.push(tokio::spawn(
            async move { stream_turn(&client, &args).await },
        ));
    }
    let (mut complete, mut incomplete, mut errors, mut tokens, mut missing, mut resyncs) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    for task in tasks {
        match task.await? {
            Ok(d) => {
                tokens += d.tokens;
                resyncs += d.resyncs;
                match d.reply {
                    Some(reply) if reply == d.text => complete += 1,
                    Some(reply) => {
                        incomplete += 1;
                        missing += reply.chars().count().saturating_sub(d.text.chars().count());
                    }
                    None => errors += 1,
                }
            }
            Err(_) => errors += 1,
        }
    }
    println!(
        "http=streams streams={} complete={complete} incomplete={incomplete} errors={errors} \
         tokens_delivered={tokens} chars_missing={missing} resyncs={resyncs} seconds={:.2}{} loadavg={}",
        args.streams,
        started.elapsed().as_secs_f64(),
        server_rss(&args),
        loadavg(),
    );
    Ok(())
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
                "chat" => chat(args).await,
                _ => streams(args).await,
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

#[cfg(test)]
mod tests {
    use aics_types::ChatTurnTraceResult;

    use super::*;

    /// The check reads the server's own trace type as the server writes it.
    #[test]
    fn a_turn_answered_when_it_stopped_with_a_reply() {
        let trace = |stop_reason, reply: &str| {
            serde_json::to_vec(&ChatTurnTraceResult {
                stop_reason,
                reply: reply.into(),
                ..ChatTurnTraceResult::default()
            })
            .expect("a trace serialises")
        };
        assert!(answered(&trace(Some(StopReason::FinalAnswer), "Shipped.")));
        assert!(!answered(&trace(Some(StopReason::FinalAnswer), "")));
        assert!(!answered(&trace(Some(StopReason::AwaitingApproval), "")));
        assert!(!answered(&trace(Some(StopReason::Error), "Sorry.")));
        assert!(!answered(&trace(None, "Shipped.")));
        assert!(!answered(b"{\"error\":\"busy\"}"));
        assert!(!answered(b"not json"));
    }
}
