//! Several providers at once, on fresh SQLite databases and on PostgreSQL:
//! every configured provider is built, the OpenAI-compatible ones are
//! probed in the background (a stub server on a real local TCP listener:
//! reachable with the model listed or not, and a closed port), and a fork
//! may run on another provider than the turn: its trace and LLM-call
//! records name that model and are priced with its price table, the run
//! records the provider, and the conversation is untouched.

#![allow(clippy::unwrap_used)]

mod common;

use common::{agent, ready, supervisor, CHAIN};

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aics_agent::policy::ApprovalsConfig;
use aics_db::Database;
use aics_openai::{OpenAiConfig, Price, ProviderConfig};
use aics_service::{Console, ConsoleConfig};
use aics_types::{ForkRequest, ProviderInfo, Reachability, StudioRun, StudioRunState};
use sqlx::{PgPool, SqlitePool};

const KEY: &str = "sk-probe-secret-key";

/// A stub OpenAI-compatible server: `GET /v1/models` lists `stub-model`
/// (and counts the requests that carried the key), every chat completion
/// streams one plain answer with its usage.
mod stub {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::http::HeaderMap;
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use axum::Router;
    use serde_json::json;

    pub const REPLY: &str = "Answered by the stub model.";

    pub struct Stub {
        pub base_url: String,
        pub completions: Arc<AtomicUsize>,
        pub keyed_probes: Arc<AtomicUsize>,
    }

    pub async fn start() -> Stub {
        let completions = Arc::new(AtomicUsize::new(0));
        let keyed_probes = Arc::new(AtomicUsize::new(0));
        let (c, k) = (completions.clone(), keyed_probes.clone());
        let app = Router::new()
            .route(
                "/v1/models",
                get(move |headers: HeaderMap| {
                    let k = k.clone();
                    async move {
                        let bearer = format!("Bearer {}", super::KEY);
                        if headers.get("authorization").and_then(|v| v.to_str().ok())
                            == Some(bearer.as_str())
                        {
                            k.fetch_add(1, Ordering::SeqCst);
                        }
                        axum::Json(json!({"object": "list",
                            "data": [{"id": "stub-model", "object": "model"}]}))
                    }
                }),
            )
            .route(
                "/v1/chat/completions",
                post(move || {
                    let c = c.clone();
                    async move {
                        c.fetch_add(1, Ordering::SeqCst);
                        let chunks = [
                            json!({"choices": [{"delta": {"content": REPLY},
                                                "finish_reason": "stop"}]}),
                            json!({"choices": [], "usage":
                                {"prompt_tokens": 1000, "completion_tokens": 500}}),
                        ];
                        let mut body = String::new();
                        for chunk in chunks {
                            body.push_str(&format!("data: {chunk}\n\n"));
                        }
                        body.push_str("data: [DONE]\n\n");
                        ([("content-type", "text/event-stream")], body).into_response()
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Stub {
            base_url: format!("http://{addr}/v1"),
            completions,
            keyed_probes,
        }
    }
}

/// A local address nothing listens on.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/v1")
}

fn openai(base_url: &str, model: &str) -> OpenAiConfig {
    OpenAiConfig {
        base_url: base_url.into(),
        model: model.into(),
        ..OpenAiConfig::default()
    }
}

/// The demo model answers live turns (no approval rule); `stub` (priced,
/// with a key), `unlisted` (the stub, another model) and `gone` (a closed
/// port) are configured besides.
async fn console(db: Database, stub: &stub::Stub) -> Console {
    let mut providers = BTreeMap::new();
    providers.insert(
        "stub".to_string(),
        ProviderConfig::Openai(OpenAiConfig {
            api_key: Some(KEY.into()),
            price: Some(Price {
                prompt_per_1k: 0.001,
                completion_per_1k: 0.002,
            }),
            ..openai(&stub.base_url, "stub-model")
        }),
    );
    providers.insert(
        "unlisted".to_string(),
        ProviderConfig::Openai(openai(&stub.base_url, "missing-model")),
    );
    providers.insert(
        "gone".to_string(),
        ProviderConfig::Openai(openai(&closed_port().await, "whatever")),
    );
    let config = ConsoleConfig {
        providers,
        approvals: ApprovalsConfig {
            rules: Vec::new(),
            ..ApprovalsConfig::default()
        },
        ..ConsoleConfig::for_tests()
    };
    Console::new(db, config).await.unwrap()
}

/// The providers once every probe has ended.
async fn probed(console: &Console) -> Vec<ProviderInfo> {
    for _ in 0..250 {
        let list = console.providers();
        if list.iter().all(|p| p.reachability != Reachability::Unknown) {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the probes did not end: {:?}", console.providers());
}

async fn ended(console: &Console, id: &str) -> StudioRun {
    for _ in 0..500 {
        let run = console.fork(&supervisor(), id).await.unwrap();
        if run.state != StudioRunState::Running {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fork {id} still running");
}

async fn forks_in_db(db: &Database) -> i64 {
    let sql = "SELECT COUNT(*) FROM studio_runs";
    match db {
        Database::Sqlite(sqlite) => sqlx::query_scalar(sql)
            .fetch_one(sqlite.pool())
            .await
            .unwrap(),
        Database::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
    }
}

async fn providers_are_probed_once_in_the_background(db: Database) {
    let stub = stub::start().await;
    let console = console(ready(db).await, &stub).await;
    let list = probed(&console).await;
    let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["demo", "gone", "stub", "unlisted"]);
    let by = |name: &str| list.iter().find(|p| p.name == name).unwrap().clone();

    let demo = by("demo");
    assert!(demo.is_default);
    assert_eq!(demo.reachability, Reachability::Demo);
    assert_eq!(demo.model, "demo");
    assert_eq!(demo.price.unwrap().prompt_per_1k, 0.0);

    let ok = by("stub");
    assert!(!ok.is_default);
    assert_eq!(ok.kind, "openai");
    assert_eq!(ok.model, "openai:stub-model");
    assert_eq!(ok.reachability, Reachability::Reachable, "{ok:?}");
    assert_eq!(ok.model_listed, Some(true));
    assert!(ok.checked_at.is_some());
    assert_eq!(ok.base_url.as_deref(), Some(stub.base_url.as_str()));
    assert_eq!(ok.price.unwrap().completion_per_1k, 0.002);
    assert_eq!(
        stub.keyed_probes.load(Ordering::SeqCst),
        1,
        "the probe sends the key"
    );

    let unlisted = by("unlisted");
    assert_eq!(unlisted.reachability, Reachability::Reachable);
    assert_eq!(unlisted.model_listed, Some(false));
    assert_eq!(unlisted.status_text(), "reachable, model not listed");

    let gone = by("gone");
    assert_eq!(gone.reachability, Reachability::Unreachable);
    assert_eq!(gone.reason.as_deref(), Some("could not connect"));
    assert!(gone.checked_at.is_some());

    // Nothing secret in what staff read.
    let json = serde_json::to_string(&list).unwrap();
    assert!(!json.contains(KEY), "{json}");
    // Probes run once: no completion was asked for.
    assert_eq!(stub.completions.load(Ordering::SeqCst), 0);
}

async fn a_fork_runs_on_another_provider(db: Database) {
    let stub = stub::start().await;
    let db = ready(db).await;
    let console = console(db.clone(), &stub).await;
    let sid = "fork-provider";
    let original = console.chat(&agent(), sid, CHAIN).await.unwrap();
    assert_eq!(original.model, "demo");
    let gid = original.graph_execution_id.clone();
    let messages = console.conversation(sid).await.unwrap().messages.len();
    let input = console.turn_detail(&gid).await.unwrap().checkpoints[0].clone();

    let started = console
        .fork_turn(
            &supervisor(),
            &gid,
            &ForkRequest {
                checkpoint_id: input.checkpoint_id.clone(),
                provider: Some("stub".into()),
                ..ForkRequest::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(started.provider.as_deref(), Some("stub"));
    let run = ended(&console, &started.id).await;
    assert_eq!(run.state, StudioRunState::Done, "{:?}", run.error);
    assert_eq!(run.provider.as_deref(), Some("stub"));
    assert_eq!(run.source_graph_execution_id, gid);
    assert_eq!(run.source_checkpoint_id, input.checkpoint_id);
    let trace = run.trace.unwrap();
    assert_eq!(trace.model, "openai:stub-model");
    assert_eq!(trace.reply, stub::REPLY);
    assert!(trace.tool_calls.is_empty());
    assert!(!trace.llm_call_records.is_empty());
    for call in &trace.llm_call_records {
        assert_eq!(call.model, "openai:stub-model");
        // 1000 prompt tokens at $0.001/1k + 500 completion at $0.002/1k.
        let cost = call.cost_usd.unwrap();
        assert!((cost - 0.002).abs() < 1e-9, "{cost}");
    }
    assert!(trace.cost_usd.unwrap() > 0.0);
    assert_eq!(
        stub.completions.load(Ordering::SeqCst),
        trace.llm_call_records.len()
    );

    // From a later step, the calls the fork inherited stay the demo
    // model's (at its zero price); its own are the stub's.
    let checkpoints = console.turn_detail(&gid).await.unwrap().checkpoints;
    let after_a_call = checkpoints
        .iter()
        .find(|c| {
            c.node == "agent"
                && c.state["llm_call_records"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty())
        })
        .unwrap();
    let later = console
        .fork_turn(
            &supervisor(),
            &gid,
            &ForkRequest {
                checkpoint_id: after_a_call.checkpoint_id.clone(),
                provider: Some("stub".into()),
                ..ForkRequest::default()
            },
        )
        .await
        .unwrap();
    let later = ended(&console, &later.id).await;
    assert_eq!(later.state, StudioRunState::Done, "{:?}", later.error);
    let trace = later.trace.unwrap();
    assert_eq!(trace.reply, stub::REPLY);
    let models: Vec<&str> = trace
        .llm_call_records
        .iter()
        .map(|c| c.model.as_str())
        .collect();
    assert_eq!(models.first(), Some(&"demo"), "{models:?}");
    assert_eq!(models.last(), Some(&"openai:stub-model"), "{models:?}");
    for call in &trace.llm_call_records {
        let expected = if call.model == "demo" { 0.0 } else { 0.002 };
        assert!((call.cost_usd.unwrap() - expected).abs() < 1e-9, "{call:?}");
    }
    let stub_calls = models.iter().filter(|m| **m != "demo").count() as f64;
    assert!((trace.cost_usd.unwrap() - 0.002 * stub_calls).abs() < 1e-9);

    // Without a provider, the fork runs on the turn's (the demo model).
    let same = console
        .fork_turn(
            &supervisor(),
            &gid,
            &ForkRequest {
                checkpoint_id: input.checkpoint_id.clone(),
                ..ForkRequest::default()
            },
        )
        .await
        .unwrap();
    let same = ended(&console, &same.id).await;
    assert_eq!(same.provider.as_deref(), Some("demo"));
    let same_trace = same.trace.unwrap();
    assert_eq!(same_trace.model, "demo");
    assert_eq!(same_trace.cost_usd, Some(0.0));

    // An unknown provider: 400 naming the configured ones, and no row.
    let rows = forks_in_db(&db).await;
    let err = console
        .fork_turn(
            &supervisor(),
            &gid,
            &ForkRequest {
                checkpoint_id: input.checkpoint_id.clone(),
                provider: Some("nope".into()),
                ..ForkRequest::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.status_code(), 400);
    let message = err.to_string();
    assert!(
        message.contains("nope") && message.contains("demo, gone, stub, unlisted"),
        "{message}"
    );
    assert_eq!(forks_in_db(&db).await, rows);

    // The conversation and its one turn are untouched.
    assert_eq!(
        console.conversation(sid).await.unwrap().messages.len(),
        messages
    );
    assert_eq!(console.list_turns(sid).await.unwrap().len(), 1);
    let listed = console.list_forks(&supervisor(), &gid).await.unwrap();
    assert_eq!(listed.len(), 3);
}

#[sqlx::test(migrations = false)]
async fn sqlite_providers_are_probed_once_in_the_background(pool: SqlitePool) {
    providers_are_probed_once_in_the_background(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_providers_are_probed_once_in_the_background(pool: PgPool) {
    providers_are_probed_once_in_the_background(Database::Postgres(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn sqlite_a_fork_runs_on_another_provider(pool: SqlitePool) {
    a_fork_runs_on_another_provider(Database::from(pool)).await;
}

#[sqlx::test(migrations = false)]
async fn postgres_a_fork_runs_on_another_provider(pool: PgPool) {
    a_fork_runs_on_another_provider(Database::Postgres(pool)).await;
}

/// A default named in `providers` too is built once, from `provider`.
#[sqlx::test(migrations = false)]
async fn the_default_replaces_its_entry(pool: SqlitePool) {
    let db = ready(Database::from(pool)).await;
    let stub = stub::start().await;
    let mut providers = BTreeMap::new();
    providers.insert(
        "main".to_string(),
        ProviderConfig::Openai(openai(&stub.base_url, "old-model")),
    );
    let console = Console::new(
        db,
        ConsoleConfig {
            provider_name: "main".into(),
            provider: ProviderConfig::Openai(openai(&stub.base_url, "stub-model")),
            providers,
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let list = probed(&console).await;
    let main = list.iter().find(|p| p.name == "main").unwrap();
    assert!(main.is_default);
    assert_eq!(main.model, "openai:stub-model");
    assert_eq!(main.model_listed, Some(true));
    assert!(list.iter().any(|p| p.name == "demo" && !p.is_default));
}
