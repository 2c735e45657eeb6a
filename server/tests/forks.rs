//! The forks routes through the router (`oneshot`) on a fresh SQLite
//! database: 202 with the fork's id, the list and the one fork, 403 for
//! agents, 400 for a malformed body or an unknown provider; and
//! `GET /api/providers` (any signed-in user, 401 without).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::oneshot::{call, router, sign_in};
use serde_json::{json, Value};
use sqlx::SqlitePool;

#[sqlx::test(migrations = false)]
async fn forks_over_http(pool: SqlitePool) {
    let (app, console) = router(pool).await;
    let boss = sign_in(&app, "supervisor", "supervisor-pass").await;
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let user = aics_types::UserInfo {
        username: "agent".into(),
        role: aics_types::Role::Agent,
    };
    let trace = console
        .chat(&user, "fork-http", "Where is my order ORD-123?")
        .await
        .unwrap();
    let gid = trace.graph_execution_id.clone();
    let checkpoint = console.turn_detail(&gid).await.unwrap().checkpoints[0]
        .checkpoint_id
        .clone();
    let forks = format!("/api/turns/{gid}/forks");
    let body = json!({"checkpointId": checkpoint, "message": "Where is my order ORD-456?"});

    let (status, value, _) = call(&app, Method::POST, &forks, &agent, Some(body.clone())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(&app, Method::GET, &forks, &agent, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(
        &app,
        Method::POST,
        &forks,
        &boss,
        Some(json!({"message": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{value}");

    let unknown = json!({"checkpointId": checkpoint, "provider": "nope"});
    let (status, value, _) = call(&app, Method::POST, &forks, &boss, Some(unknown)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{value}");
    assert!(
        value["message"]
            .as_str()
            .is_some_and(|m| m.contains("configured: demo")),
        "{value}"
    );

    let (status, value, _) = call(&app, Method::POST, &forks, &boss, Some(body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{value}");
    let id = value["id"].as_str().unwrap().to_owned();
    let one = format!("/api/forks/{id}");
    let mut fork = Value::Null;
    for _ in 0..300 {
        let (status, value, _) = call(&app, Method::GET, &one, &boss, None).await;
        assert_eq!(status, StatusCode::OK, "{value}");
        fork = value;
        if fork["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fork["state"], "done", "{fork}");
    assert_eq!(fork["sourceGraphExecutionId"], gid.as_str());
    assert_eq!(fork["message"], "Where is my order ORD-456?");
    assert_eq!(fork["provider"], "demo", "the turn's provider");
    assert!(fork["trace"]["reply"]
        .as_str()
        .is_some_and(|r| !r.is_empty()));
    let (status, list, _) = call(&app, Method::GET, &forks, &boss, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    let (status, _, _) = call(&app, Method::GET, "/api/forks/no-such-fork", &boss, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrations = false)]
async fn providers_over_http(pool: SqlitePool) {
    let (app, _console) = router(pool).await;
    let (status, _, _) = call(&app, Method::GET, "/api/providers", "", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let (status, list, _) = call(&app, Method::GET, "/api/providers", &agent, None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["name"], "demo");
    assert_eq!(list[0]["kind"], "demo");
    assert_eq!(list[0]["isDefault"], true);
    assert_eq!(list[0]["reachability"], "demo");
    assert_eq!(list[0]["protocol"], "native");
}
