//! `aics-bench`: LangGraph's chat-turn benchmark (shared/bench/langgraph)
//! on the aics graph engine, with the same phases and the same result line.
//!
//! ```text
//! aics-bench --variant memory [--warmup-seconds 2] [--seq-seconds 10]
//!            [--conc-seconds 10] [--concurrency 32] [--durability sync|async|exit]
//!            [--thread-ids random|time]
//! ```
//!
//! `--durability` is the graph's checkpoint mode (aics_graph::Durability,
//! LangGraph's option of the same name); the default is `sync`, the
//! server's default. `--thread-ids` names each turn's thread: `random`
//! (v4, the default) as the workload prescribes, `time` as the server
//! names its turns (`workload::ThreadIds`).
//!
//! # Layout
//! - `workload`: the graph, the fake model, the shop behind the tools, one
//!   checked turn.
//! - this file: the checkpointer variants, the warm-up / sequential /
//!   concurrent phases, percentiles, peak RSS and the result line.
#![forbid(unsafe_code)]

mod workload;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::{Duration, Instant};

use aics_graph::{Checkpointer, Graph, MemoryCheckpointer};

use aics_bench::{pct, rss_mb};
use workload::{build_graph, run_turn, State, ThreadIds};

/// Checkpoints per turn: the input, then one per node executed
/// (init_state, memory_trigger, agent ×3, tools ×2, finalize), as LangGraph
/// writes them.
const CHECKPOINTS_PER_TURN: usize = 9;

#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error("{0}")]
    Usage(String),
    #[error("turn failed: {0}")]
    Turn(#[from] workload::TurnError),
    #[error("the benchmark graph is broken: {0}")]
    Graph(#[from] aics_graph::GraphError),
    #[error("a worker panicked: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error("the checkpoint database failed: {0}")]
    Db(#[from] aics_db::DbError),
}

struct Args {
    variant: String,
    warmup: f64,
    seq: f64,
    conc: f64,
    concurrency: usize,
    label: Option<String>,
    durability: aics_graph::Durability,
    thread_ids: ThreadIds,
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        variant: "memory".into(),
        warmup: 2.0,
        seq: 10.0,
        conc: 10.0,
        concurrency: 32,
        label: None,
        durability: aics_graph::Durability::Sync,
        thread_ids: ThreadIds::Random,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| BenchError::Usage(format!("{flag} needs a value")))
        };
        let num = |v: String| {
            v.parse::<f64>()
                .map_err(|e| BenchError::Usage(format!("bad number {v}: {e}")))
        };
        match flag.as_str() {
            "--variant" => args.variant = value()?,
            "--warmup-seconds" => args.warmup = num(value()?)?,
            "--seq-seconds" => args.seq = num(value()?)?,
            "--conc-seconds" => args.conc = num(value()?)?,
            "--concurrency" => args.concurrency = num(value()?)?.max(1.0) as usize,
            "--label" => args.label = Some(value()?),
            "--durability" => {
                let v = value()?;
                args.durability = aics_graph::Durability::parse(&v).ok_or_else(|| {
                    BenchError::Usage(format!("--durability is sync, async or exit, not {v}"))
                })?;
            }
            "--thread-ids" => {
                let v = value()?;
                args.thread_ids = ThreadIds::parse(&v).ok_or_else(|| {
                    BenchError::Usage(format!("--thread-ids is random or time, not {v}"))
                })?;
            }
            "-h" | "--help" => {
                return Err(BenchError::Usage(
                    "aics-bench --variant memory|sqlite|postgres [--warmup-seconds S] [--seq-seconds S] \
                     [--conc-seconds S] [--concurrency N] [--label NAME] [--durability sync|async|exit] \
                     [--thread-ids random|time]"
                        .into(),
                ))
            }
            other => return Err(BenchError::Usage(format!("unknown argument {other}"))),
        }
    }
    Ok(args)
}

/// Where the checkpoints go, and what happens after a turn.
struct Store {
    checkpointer: Arc<dyn Checkpointer>,
    /// The SQL stores' checkpointer, whose group-commit writer's counts are
    /// printed after each phase (how many writes shared a commit).
    sql: Option<Arc<aics_db::SqlCheckpointer>>,
    /// The in-memory store: finished threads are checked and dropped, so
    /// memory stays flat (LangGraph's `none` variant keeps nothing at all).
    memory: Option<Arc<MemoryCheckpointer>>,
}

impl Store {
    /// `# writer after <phase>: jobs=… batches=… direct=… rows=…` (since
    /// the start), for the SQL stores.
    fn print_writer_stats(&self, phase: &str) {
        if let Some(sql) = &self.sql {
            let s = sql.writer_stats();
            eprintln!(
                "# writer after {phase}: jobs={} batches={} direct={} rows={}",
                s.jobs, s.batches, s.direct, s.rows
            );
        }
    }

    fn after_turn(&self, thread_id: &str) -> Result<(), workload::TurnError> {
        if let Some(memory) = &self.memory {
            let found = memory.remove_thread(thread_id);
            if found != CHECKPOINTS_PER_TURN {
                return Err(workload::TurnError::Checkpoints {
                    expected: CHECKPOINTS_PER_TURN,
                    found,
                });
            }
        }
        Ok(())
    }
}

/// The one place where a variant's checkpointer is built.
///
/// `sqlite`: `aics_db`'s SQL checkpointer on a fresh file under `data/`
/// (deleted at start), with the server's settings: WAL, synchronous = NORMAL,
/// 4 connections. `postgres`: the same checkpointer on
/// `AICS_BENCH_DATABASE_URL` (else `DATABASE_URL`), 5 connections,
/// checkpoints committed with `synchronous_commit = off` (the server's
/// setting). Both keep every checkpoint, as LangGraph's SQLite variant does.
async fn make_store(variant: &str) -> Result<Store, BenchError> {
    match variant {
        "memory" => {
            let memory = Arc::new(MemoryCheckpointer::new());
            Ok(Store {
                sql: None,
                checkpointer: memory.clone(),
                memory: Some(memory),
            })
        }
        "sqlite" => {
            let path = std::path::Path::new("data").join("aics-bench-checkpoints.db");
            for suffix in ["", "-wal", "-shm"] {
                // Missing files are fine: the point is a fresh database.
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            sql_store(&format!("sqlite://{}", path.display())).await
        }
        "postgres" => {
            let url = std::env::var("AICS_BENCH_DATABASE_URL")
                .or_else(|_| std::env::var("DATABASE_URL"))
                .map_err(|_| {
                    BenchError::Usage(
                        "the postgres variant needs AICS_BENCH_DATABASE_URL \
                         (e.g. $(scripts/postgres.sh | tail -n 1))"
                            .into(),
                    )
                })?;
            sql_store(&url).await
        }
        other => Err(BenchError::Usage(format!("unknown variant {other}"))),
    }
}

async fn sql_store(url: &str) -> Result<Store, BenchError> {
    let db = aics_db::Database::connect(url).await?;
    db.migrate().await?;
    let sql = Arc::new(aics_db::SqlCheckpointer::new(db));
    Ok(Store {
        sql: Some(sql.clone()),
        checkpointer: sql,
        memory: None,
    })
}

async fn one_turn(graph: &Graph<State>, store: &Store, ids: ThreadIds) -> Result<(), BenchError> {
    let thread = run_turn(graph, store.checkpointer.as_ref(), ids).await?;
    store.after_turn(&thread)?;
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn run(args: Args) -> Result<(), BenchError> {
    let graph = Arc::new(build_graph(args.durability)?);
    let store = Arc::new(make_store(&args.variant).await?);
    let ids = args.thread_ids;

    // Warm-up: at least WARMUP seconds and 5 turns.
    let end = Instant::now() + Duration::from_secs_f64(args.warmup);
    let mut warm = 0usize;
    while Instant::now() < end || warm < 5 {
        one_turn(&graph, &store, ids).await?;
        warm += 1;
    }

    // Sequential: back to back until SEQ seconds have passed.
    let mut lat = Vec::new();
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(args.seq);
    loop {
        let s = Instant::now();
        one_turn(&graph, &store, ids).await?;
        let e = Instant::now();
        lat.push(ms(e - s));
        if e >= end {
            break;
        }
    }
    let seq_elapsed = t0.elapsed().as_secs_f64();
    store.print_writer_stats("sequential");
    lat.sort_by(f64::total_cmp);
    let seq_tps = lat.len() as f64 / seq_elapsed;

    // Concurrent: N workers on the multi-threaded runtime, each running
    // turns back to back until the deadline.
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(args.conc);
    let mut workers = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let (graph, store) = (graph.clone(), store.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while Instant::now() < end {
                let s = Instant::now();
                one_turn(&graph, &store, ids).await?;
                lat.push(ms(s.elapsed()));
            }
            Ok::<_, BenchError>(lat)
        }));
    }
    let mut clat = Vec::new();
    for w in workers {
        clat.extend(w.await??);
    }
    let conc_elapsed = t0.elapsed().as_secs_f64();
    store.print_writer_stats("concurrent");
    clat.sort_by(f64::total_cmp);
    let conc_tps = clat.len() as f64 / conc_elapsed;

    let (_, rss) = rss_mb("self");
    let c = args.concurrency;
    eprintln!(
        "# warmup_turns={warm} seq_turns={} seq_s={seq_elapsed:.2} conc_turns={} conc_s={conc_elapsed:.2} workers={} allocator={}",
        lat.len(),
        clat.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        if cfg!(feature = "mimalloc") { "mimalloc" } else { "system" },
    );
    println!(
        "engine=aics variant={} durability={} thread_ids={} turns_per_s={seq_tps:.1} p50_ms={:.3} p99_ms={:.3} rss_mb={rss:.1} \
         conc{c}_turns_per_s={conc_tps:.1} conc{c}_p50_ms={:.3} conc{c}_p99_ms={:.3} seq_turns={} conc_turns={}",
        args.label.as_deref().unwrap_or(&args.variant),
        args.durability,
        ids.as_str(),
        pct(&lat, 50.0),
        pct(&lat, 99.0),
        pct(&clat, 50.0),
        pct(&clat, 99.0),
        lat.len(),
        clat.len(),
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let outcome = parse_args().and_then(|args| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| BenchError::Usage(format!("no runtime: {e}")))?;
        runtime.block_on(run(args))
    });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aics-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_variant_checks_and_drops_each_turns_checkpoints() {
        let graph = build_graph(aics_graph::Durability::Sync).expect("graph");
        let store = make_store("memory").await.expect("store");
        one_turn(&graph, &store, ThreadIds::Random)
            .await
            .expect("turn");
        assert!(matches!(
            make_store("nosuch").await,
            Err(BenchError::Usage(_))
        ));
    }
}
