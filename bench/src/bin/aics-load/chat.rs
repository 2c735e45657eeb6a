//! `aics-load chat`: workers sending `POST /api/chat` back to back (the
//! module docs of `main.rs` say what it prints).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aics_bench::{pct, Cores, Usage};
use aics_types::StopReason;

use crate::conn::Conn;
use crate::{check_up, loadavg, server_rss, Args, LoadError};

/// How the chat mode names its conversations (`--session-ids`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SessionIds {
    /// Random (UUIDv4), as an API caller's own ids may be: the default.
    #[default]
    Random,
    /// In the order they are made (UUIDv7), as the server makes its own.
    Ordered,
}

impl SessionIds {
    /// The flag's value, and the result line's.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::Ordered => "ordered",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Self> {
        [Self::Random, Self::Ordered]
            .into_iter()
            .find(|ids| ids.name() == name)
    }

    /// A new conversation's id.
    fn next(self) -> String {
        let id = match self {
            Self::Random => uuid::Uuid::new_v4(),
            Self::Ordered => uuid::Uuid::now_v7(),
        };
        format!("load-{}", id.simple())
    }
}

/// The body of a chat turn.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ChatRequest<'a> {
    session_id: &'a str,
    message: &'a str,
}

/// One `POST /api/chat` on a new conversation; `Ok(true)` when the turn
/// answered as it should.
async fn chat_turn(conn: &mut Conn, args: &Args) -> Result<bool, LoadError> {
    let sid = args.session_ids.next();
    let body = serde_json::to_vec(&ChatRequest {
        session_id: &sid,
        message: &args.message,
    })?;
    let (status, answer) = conn.post_json("/api/chat", body).await?;
    Ok(status.is_success() && answered(&answer))
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
async fn chat_phase(args: &Arc<Args>, until: Instant) -> Result<(Vec<Sent>, usize), LoadError> {
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let args = args.clone();
        let mut conn = Conn::new(&args.base, &args.token)?;
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0usize;
            while Instant::now() < until {
                let (at, started) = (SystemTime::now(), Instant::now());
                match chat_turn(&mut conn, &args).await {
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

pub(crate) async fn chat(args: Arc<Args>) -> Result<(), LoadError> {
    check_up(&reqwest::Client::new(), &args.base).await?;
    let warm_until = Instant::now() + Duration::from_secs_f64(args.warmup);
    chat_phase(&args, warm_until).await?;
    let usage = || args.server_pid.as_deref().and_then(Usage::of);
    let before = usage();
    let own_before = Usage::of("self");
    let cores_before = Cores::now();
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(args.seconds);
    let (mut turns, errors) = chat_phase(&args, until).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cores = match (cores_before, Cores::now()) {
        (Some(before), Some(after)) => after.shares(&before),
        _ => String::new(),
    };
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
        "http=chat concurrency={} session_ids={} turns={} turns_per_s={:.1} p50_ms={:.2} p99_ms={:.2} errors={errors}{}{per_turn}{own}{cores} loadavg={}",
        args.concurrency,
        args.session_ids.name(),
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
