//! The approval webhook against local stubs: a failing endpoint is retried
//! with backoff until it takes the post, and a hanging one never delays the
//! turn that stored the approval.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aics_agent::policy::ApprovalsConfig;
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use common::{agent, ready, CHAIN};
use serde_json::Value;
use sqlx::SqlitePool;

/// What the stub received, and how it answers the n-th post (0-based).
#[derive(Clone, Default)]
struct Stub {
    posts: Arc<Mutex<Vec<Value>>>,
}

async fn serve(stub: Stub, answer: fn(usize) -> Option<StatusCode>) -> String {
    let app = Router::new().route(
        "/hook",
        post(move |Json(body): Json<Value>| {
            let stub = stub.clone();
            async move {
                let n = {
                    let mut posts = stub.posts.lock().unwrap();
                    posts.push(body);
                    posts.len() - 1
                };
                match answer(n) {
                    Some(status) => status,
                    None => {
                        // Hangs far longer than any turn may take.
                        tokio::time::sleep(Duration::from_secs(120)).await;
                        StatusCode::OK
                    }
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/hook")
}

async fn console(pool: SqlitePool, url: String) -> Console {
    Console::new(
        ready(Database::from(pool)).await,
        ConsoleConfig {
            approvals: ApprovalsConfig {
                webhook_url: Some(url),
                public_url: Some("https://console.example.com/".into()),
                ..ApprovalsConfig::default()
            },
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_failing_webhook_is_retried_until_it_takes_the_post(pool: SqlitePool) {
    let stub = Stub::default();
    let url = serve(stub.clone(), |n| {
        Some(if n < 2 {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        })
    })
    .await;
    let console = console(pool, url).await;
    let trace = console.chat(&agent(), "hook", CHAIN).await.unwrap();
    assert!(trace.pending_approval);
    let id = trace.pending_tool_calls[0].id.clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while stub.posts.lock().unwrap().len() < 3 {
        assert!(Instant::now() < deadline, "no third post within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Delivered on the third try; nothing more after that.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let posts = stub.posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 3, "two failures, one success, then quiet");
    let body = &posts[2];
    assert_eq!(body, &posts[0], "each try posts the same body");
    assert_eq!(body["approval"]["id"], id.as_str());
    assert_eq!(body["approval"]["rule"], "sensitive-ticket");
    assert_eq!(
        body["url"],
        format!("https://console.example.com/approvals#approval-{id}")
    );
    assert!(body["text"].as_str().unwrap().contains("ticket_create"));
}

#[sqlx::test(migrations = false)]
async fn a_hanging_webhook_never_delays_the_turn(pool: SqlitePool) {
    let stub = Stub::default();
    let url = serve(stub.clone(), |_| None).await;
    let console = console(pool, url).await;
    let started = Instant::now();
    let trace = console.chat(&agent(), "hang", CHAIN).await.unwrap();
    assert!(trace.pending_approval);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the turn took {:?}",
        started.elapsed()
    );
    // The post did go out (and hangs in its own task).
    let deadline = Instant::now() + Duration::from_secs(5);
    while stub.posts.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no post within 5 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The queue works on regardless.
    assert_eq!(console.list_approvals(true).await.unwrap().len(), 1);
}
