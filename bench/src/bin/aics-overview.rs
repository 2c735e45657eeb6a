//! `aics-overview`: how long the overview page's query takes on a large
//! history (scripts/bench-overview).
//!
//! ```text
//! aics-overview [--turns 100000] [--days 30] [--database-url URL]
//! ```
//!
//! Fills a fresh database (a temporary SQLite file, or the PostgreSQL
//! database `--database-url` names, which it migrates and fills) with
//! `--turns` stored turns spread over the last `--days` days, each trace
//! the size of a real two-call turn (its LLM calls' messages included),
//! then times `Database::overview` over 30 days: the first call and the
//! p50 of ten more. Prints one `key=value` line, like `aics-bench`.
#![forbid(unsafe_code)]

use std::time::Instant;

use aics_db::Database;
use aics_types::{
    ChatTurnTraceResult, Intent, LlmCallRecord, LlmMessage, StopReason, TokenUsage, ToolCallRecord,
    ToolCallStatus,
};
use serde_json::json;

struct Args {
    turns: usize,
    days: u32,
    database_url: Option<String>,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        turns: 100_000,
        days: 30,
        database_url: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--turns" => out.turns = value.parse().map_err(|e| format!("--turns: {e}"))?,
            "--days" => out.days = value.parse().map_err(|e| format!("--days: {e}"))?,
            "--database-url" => out.database_url = Some(value),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(out)
}

/// A turn as a real one stores it: an order lookup, a ticket now and then,
/// two LLM calls with the messages they were sent.
fn trace(i: usize, days: u32, now: chrono::DateTime<chrono::Utc>) -> ChatTurnTraceResult {
    let started_at =
        now - chrono::Duration::seconds((i as i64 * 7919) % (i64::from(days) * 86_400));
    let order = format!("ORD-{}", 1000 + i % 500);
    let mut tool_calls = vec![ToolCallRecord {
        id: format!("call_{i}_a"),
        name: "order_query".into(),
        input: json!({"order_id": order}).into(),
        output: json!({"order_id": order, "status": "shipped", "items": ["a mug", "a kettle"]})
            .into(),
        status: ToolCallStatus::Ok,
        timestamp: started_at,
        duration_ms: Some(3),
    }];
    if i.is_multiple_of(4) {
        tool_calls.push(ToolCallRecord {
            id: format!("call_{i}_b"),
            name: "ticket_create".into(),
            input: json!({"category": "logistics", "summary": "late parcel"}).into(),
            output: json!({"ticket_id": format!("T-{i}")}).into(),
            status: if i.is_multiple_of(40) {
                ToolCallStatus::Error
            } else {
                ToolCallStatus::Ok
            },
            timestamp: started_at,
            duration_ms: Some(5),
        });
    }
    let question =
        format!("Hello, where is my order {order}? It was due last week and nothing came.");
    let reply = format!(
        "Your order {order} has shipped and is on its way; it should reach you within two days."
    );
    let system = "You are the support agent of a small shop. ".repeat(12);
    let call = |output: &str, usage: u64| LlmCallRecord {
        node: "agent".into(),
        purpose: "answer".into(),
        model: "demo".into(),
        protocol: "native".into(),
        messages: vec![
            LlmMessage {
                role: "system".into(),
                content: system.clone(),
                ..LlmMessage::default()
            },
            LlmMessage {
                role: "user".into(),
                content: question.clone(),
                ..LlmMessage::default()
            },
        ],
        tools: vec![
            "order_query".into(),
            "ticket_create".into(),
            "knowledge_search".into(),
        ],
        output: output.into(),
        started_at,
        latency_ms: 40,
        usage: TokenUsage {
            prompt_tokens: usage,
            completion_tokens: 30,
            total_tokens: usage + 30,
        },
        cost_usd: Some(0.0004),
        ..LlmCallRecord::default()
    };
    ChatTurnTraceResult {
        graph_execution_id: format!("bench-overview-{i}"),
        session_id: format!("bench-overview-s{}", i / 3),
        reply: reply.clone(),
        intent: Intent::Order,
        tools_used: tool_calls.iter().map(|c| c.name.clone()).collect(),
        tool_calls,
        executed_nodes: [
            "init_state",
            "memory_trigger",
            "route",
            "agent",
            "tools",
            "agent",
            "finalize",
        ]
        .map(String::from)
        .to_vec(),
        duration_ms: 20 + (i as u64 * 31) % 900,
        llm_calls: 2,
        steps_taken: 7,
        stop_reason: Some(if i.is_multiple_of(50) {
            StopReason::Error
        } else {
            StopReason::FinalAnswer
        }),
        usage: TokenUsage {
            prompt_tokens: 420,
            completion_tokens: 60,
            total_tokens: 480,
        },
        engine: "graph".into(),
        model: "demo".into(),
        cost_usd: Some(0.0008),
        started_at,
        llm_call_records: vec![call("", 200), call(&reply, 220)],
        ..ChatTurnTraceResult::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args().map_err(|e| format!("aics-overview: {e}"))?;
    let dir = std::env::temp_dir().join(format!("aics-overview-{}", std::process::id()));
    let url = match &args.database_url {
        Some(url) => url.clone(),
        None => format!("sqlite://{}/overview.db", dir.display()),
    };
    let db = Database::connect(&url).await?;
    db.migrate().await?;
    let now = chrono::Utc::now();
    let filled = Instant::now();
    for i in 0..args.turns {
        db.save_turn(&trace(i, args.days, now)).await?;
    }
    let fill_s = filled.elapsed().as_secs_f64();
    let first = Instant::now();
    let overview = db.overview(now, 30).await?;
    let first_ms = first.elapsed().as_secs_f64() * 1000.0;
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        db.overview(now, 30).await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let counted: u64 = overview.per_day.iter().map(|d| d.turns).sum();
    println!(
        "overview backend={} turns={} counted={counted} days={} fill_s={fill_s:.1} first_ms={first_ms:.1} p50_ms={:.1} max_ms={:.1}",
        db.backend(),
        args.turns,
        overview.per_day.len(),
        times[times.len() / 2],
        times[times.len() - 1],
    );
    if args.database_url.is_none() {
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}
