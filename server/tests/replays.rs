//! The replay routes through the router (`oneshot`) on a fresh SQLite
//! database: a set saved (201), previewed, listed and read, a replay run
//! started (202) and read until done, 403 for agents, 400 for bad bodies.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::oneshot::{call, router, sign_in};
use serde_json::{json, Value};
use sqlx::SqlitePool;

#[sqlx::test(migrations = false)]
async fn replays_over_http(pool: SqlitePool) {
    let (app, console) = router(pool).await;
    let boss = sign_in(&app, "supervisor", "supervisor-pass").await;
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let user = aics_types::UserInfo {
        username: "agent".into(),
        role: aics_types::Role::Agent,
    };
    let gid = console
        .chat(&user, "replay-http", "Where is my order ORD-123?")
        .await
        .unwrap()
        .graph_execution_id
        .clone();
    let filter = json!({"q": "where is my order"});

    let (status, value, _) = call(
        &app,
        Method::POST,
        "/api/replays/preview",
        &agent,
        Some(filter.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(&app, Method::GET, "/api/replays", &agent, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(
        &app,
        Method::POST,
        "/api/replays/preview",
        &boss,
        Some(filter.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{value}");
    assert_eq!(value, json!({"matched": 1, "limit": 200}));

    let body = json!({"name": "orders", "filter": filter});
    let (status, value, _) = call(
        &app,
        Method::POST,
        "/api/replays",
        &agent,
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(
        &app,
        Method::POST,
        "/api/replays",
        &boss,
        Some(json!({"name": "none"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{value}");
    assert_eq!(value["error"], "invalid_request");
    let (status, value, _) = call(
        &app,
        Method::POST,
        "/api/replays",
        &boss,
        Some(json!({"turnIds": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{value}");
    let (status, set, _) = call(&app, Method::POST, "/api/replays", &boss, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{set}");
    assert_eq!(set["turnIds"], json!([gid]));
    let id = set["id"].as_str().unwrap().to_owned();
    let (status, list, _) = call(&app, Method::GET, "/api/replays", &boss, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list[0]["turns"], 1);

    let runs = format!("/api/replays/{id}/runs");
    let (status, value, _) = call(&app, Method::POST, &runs, &agent, Some(json!({}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{value}");
    let (status, value, _) = call(
        &app,
        Method::POST,
        &runs,
        &boss,
        Some(json!({"engine": "warp"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{value}");
    let (status, run, _) = call(
        &app,
        Method::POST,
        &runs,
        &boss,
        Some(json!({"protocol": "json_plan"})),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{run}");
    assert_eq!(run["state"], "running");
    let one = format!("/api/replay-runs/{}", run["id"].as_str().unwrap());
    let (status, _, _) = call(&app, Method::GET, &one, &agent, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut report = Value::Null;
    for _ in 0..500 {
        let (status, value, _) = call(&app, Method::GET, &one, &boss, None).await;
        assert_eq!(status, StatusCode::OK, "{value}");
        report = value;
        if report["run"]["state"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(report["run"]["state"], "done", "{report}");
    assert_eq!(report["run"]["protocol"], "json_plan");
    assert_eq!(report["totals"]["total"], 1);
    assert_eq!(report["items"][0]["graphExecutionId"], gid.as_str());
    assert!(report["items"][0]["forkId"].is_string());
    let (status, shown, _) = call(
        &app,
        Method::GET,
        &format!("/api/replays/{id}"),
        &boss,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["runs"].as_array().map(Vec::len), Some(1));
    let (status, _, _) = call(&app, Method::GET, "/api/replays/no-such-set", &boss, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
