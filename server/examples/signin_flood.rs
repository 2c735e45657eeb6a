//! A load figure, not a test: `/healthz` latency and the gaps between the
//! events of a running chat stream, first on a quiet server, then while 64
//! clients hammer the sign-in with wrong passwords.
//!
//! Start a server (release build) that believes `X-Forwarded-For` from
//! loopback, so each wrong sign-in can claim a fresh address and username
//! and none is throttled (the worst case: every attempt costs a hash):
//!
//! ```sh
//! AICS_TRUSTED_PROXIES=127.0.0.1 AICS_AGENT_PASSWORD=agent-pass-123 \
//!   AICS_DATABASE_URL=sqlite:///tmp/flood.db target/release/aics &
//! cargo run --release -p aics --example signin_flood -- http://127.0.0.1:3000 agent-pass-123
//! ```
//!
//! Add `same-address` as a third argument to send every wrong sign-in from
//! one address (the throttle then answers most with 429 before hashing).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

const PHASE: Duration = Duration::from_secs(15);
const ATTACKERS: usize = 64;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:3000".into());
    let password = args.next().unwrap_or_else(|| "agent-pass-123".into());
    let same_address = args.next().as_deref() == Some("same-address");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let cookie = sign_in(&http, &base, &password).await;

    println!("phase    | healthz p50 / p99 (ms) | stream gap p50 / p99 (ms) | sign-ins/s (401 / 429 / 503)");
    let quiet = measure(&http, &base, &cookie, None).await;
    print_row("before", &quiet);
    let flood = Flood::start(&http, &base, same_address);
    let loaded = measure(&http, &base, &cookie, Some(&flood)).await;
    flood.stop.store(true, Ordering::SeqCst);
    print_row("during", &loaded);
}

struct Figures {
    healthz: Vec<f64>,
    gaps: Vec<f64>,
    sign_ins: [u64; 3],
    secs: f64,
}

fn print_row(phase: &str, f: &Figures) {
    let total: u64 = f.sign_ins.iter().sum();
    println!(
        "{phase:8} | {:>8.1} / {:>8.1}      | {:>8.1} / {:>8.1}         | {:.0} ({} / {} / {})",
        pct(&f.healthz, 0.50),
        pct(&f.healthz, 0.99),
        pct(&f.gaps, 0.50),
        pct(&f.gaps, 0.99),
        total as f64 / f.secs,
        f.sign_ins[0],
        f.sign_ins[1],
        f.sign_ins[2],
    );
}

fn pct(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[((s.len() as f64 - 1.0) * q).round() as usize]
}

async fn sign_in(http: &reqwest::Client, base: &str, password: &str) -> String {
    let answer = http
        .post(format!("{base}/api/auth/login"))
        .json(&json!({"username": "agent", "password": password}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "sign-in: {}", answer.status());
    let cookie = answer.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// `/healthz` every 20 ms and chat streams back to back, for one phase.
async fn measure(
    http: &reqwest::Client,
    base: &str,
    cookie: &str,
    flood: Option<&Flood>,
) -> Figures {
    let started = Instant::now();
    let before = flood.map(Flood::counts).unwrap_or([0; 3]);
    let probe = {
        let (http, base) = (http.clone(), base.to_owned());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while started.elapsed() < PHASE {
                tick.tick().await;
                let t = Instant::now();
                let ok = http.get(format!("{base}/healthz")).send().await;
                if ok.is_ok_and(|r| r.status().is_success()) {
                    samples.push(t.elapsed().as_secs_f64() * 1000.0);
                }
            }
            samples
        })
    };
    let mut gaps = Vec::new();
    let mut n = 0;
    while started.elapsed() < PHASE {
        n += 1;
        gaps.extend(chat_stream(http, base, cookie, n).await);
    }
    let after = flood.map(Flood::counts).unwrap_or([0; 3]);
    Figures {
        healthz: probe.await.unwrap(),
        gaps,
        sign_ins: [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2],
        ],
        secs: started.elapsed().as_secs_f64(),
    }
}

/// One streamed turn; the gaps between its events, in ms.
async fn chat_stream(http: &reqwest::Client, base: &str, cookie: &str, n: u32) -> Vec<f64> {
    let response = http
        .post(format!("{base}/api/chat/stream"))
        .header("cookie", cookie)
        .header("origin", base)
        .json(&json!({
            "sessionId": format!("flood-{}-{n}", std::process::id()),
            "message": "What is your refund policy for late orders?"
        }))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "stream: {}",
        response.status()
    );
    let mut body = response.bytes_stream();
    let mut gaps = Vec::new();
    let mut last = Instant::now();
    let mut first = true;
    while let Some(Ok(chunk)) = body.next().await {
        if chunk.windows(6).any(|w| w == b"event:") {
            if !first {
                gaps.push(last.elapsed().as_secs_f64() * 1000.0);
            }
            first = false;
            last = Instant::now();
        }
        if chunk.windows(11).any(|w| w == b"event:final") {
            break;
        }
    }
    gaps
}

/// 64 clients signing in with wrong passwords as fast as answers come.
struct Flood {
    stop: Arc<AtomicBool>,
    counts: Arc<[AtomicU64; 3]>,
}

impl Flood {
    fn start(http: &reqwest::Client, base: &str, same_address: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
        for worker in 0..ATTACKERS {
            let (http, base, stop, counts) =
                (http.clone(), base.to_owned(), stop.clone(), counts.clone());
            tokio::spawn(async move {
                let mut i = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let addr = if same_address {
                        "198.51.100.1".to_owned()
                    } else {
                        format!("10.{}.{}.{}", worker, (i >> 8) & 255, i & 255)
                    };
                    let answer = http
                        .post(format!("{base}/api/auth/login"))
                        .header("x-forwarded-for", addr)
                        .json(&json!({"username": format!("guess-{worker}-{i}"), "password": "wrong-password"}))
                        .send()
                        .await;
                    let slot = match answer.map(|a| a.status().as_u16()) {
                        Ok(401) => 0,
                        Ok(429) => 1,
                        _ => 2,
                    };
                    counts[slot].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        Self { stop, counts }
    }

    fn counts(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.counts[i].load(Ordering::Relaxed))
    }
}
