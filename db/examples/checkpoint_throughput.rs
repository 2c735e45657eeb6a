//! How many turns per second the SQL checkpointer alone can store: each
//! "turn" writes the six checkpoints of the benchmark graph (init_state,
//! memory_trigger, agent, tools, agent, finalize) with a state of realistic
//! size, on a new thread id, then reads the latest back. No engine runs, so
//! this is the checkpointer's ceiling, not the engine's turns/s.
//!
//! ```text
//! cargo run --release -p aics-db --example checkpoint_throughput -- sqlite://data/bench.db [seconds] [concurrency]
//! cargo run --release -p aics-db --example checkpoint_throughput -- postgres://aics:aics@127.0.0.1/aics 10 32
//! ```

use std::time::{Duration, Instant};

use aics_db::{Database, SqlCheckpointer};
use aics_graph::{Checkpoint, Checkpointer};
use serde_json::json;

const NODES: [&str; 6] = [
    "init_state",
    "memory_trigger",
    "agent",
    "tools",
    "agent",
    "finalize",
];

async fn turn(saver: &SqlCheckpointer) -> Result<(), Box<dyn std::error::Error>> {
    let thread = uuid::Uuid::new_v4().to_string();
    let mut parent: Option<String> = None;
    let mut messages = vec![
        json!({"role": "user", "content": "Hi, my order ORD-123 hasn't arrived yet and it's a week late. Please remember I prefer email."}),
    ];
    for (step, node) in NODES.iter().enumerate() {
        messages.push(json!({"role": "node", "content": format!("output of {node}"), "order": {"order_id": "ORD-123", "status": "delayed"}}));
        let id = format!("{thread}-{step}");
        let cp = Checkpoint {
            thread_id: thread.as_str().into(),
            checkpoint_id: id.clone(),
            parent_id: parent.replace(id),
            step: u32::try_from(step)?,
            node: (*node).into(),
            next: NODES.get(step + 1).map(|n| (*n).into()),
            path: NODES[..=step].iter().map(|n| (*n).into()).collect(),
            state: (&json!({"messages": messages, "current_step": step, "max_steps": 5, "stop": false}))
                .into(),
            pending_interrupts: Vec::new(),
            created_at: chrono::Utc::now(),
        };
        saver.put(&cp).await?;
    }
    saver
        .latest(&thread)
        .await?
        .ok_or("latest checkpoint missing")?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "sqlite://data/checkpoint-bench.db".to_owned());
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(5);
    let concurrency: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1);
    let db = Database::connect(&url).await?;
    db.migrate().await?;
    let saver = SqlCheckpointer::new(db.clone());
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let saver = saver.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                if let Err(e) = turn(&saver).await {
                    return Err(e.to_string());
                }
                latencies.push(t.elapsed());
            }
            Ok(latencies)
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await?.map_err(|e| e.to_string())?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| {
        let i = ((all.len() as f64 - 1.0) * p).round() as usize;
        all.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "checkpointer={} concurrency={concurrency} turns={} turns_per_s={:.0} p50_ms={:.2} p99_ms={:.2}",
        db.backend(),
        all.len(),
        all.len() as f64 / elapsed,
        pct(0.5),
        pct(0.99)
    );
    db.close().await;
    Ok(())
}
