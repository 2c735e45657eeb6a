//! The replay routes through the router (`oneshot`) on a fresh SQLite
//! database: a set saved (201), previewed, listed and read, a replay run
//! started (202) and read until done, 403 for agents, 400 for bad bodies.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aics::state::AppState;
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use leptos::config::LeptosOptions;
use serde_json::{json, Value};
use sqlx::SqlitePool;
use tower::ServiceExt;

const HOST: &str = "console.test";

async fn router(pool: SqlitePool) -> (Router, Console) {
    let db = Database::Sqlite(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let state = AppState {
        leptos_options: LeptosOptions::builder().output_name("aics").build(),
        console: console.clone(),
        metrics: aics::telemetry::metrics_handle(),
        shutdown: rx,
    };
    let web = aics::web::WebConfig {
        hosts: aics::web::HostRule::List(vec![HOST.into()]),
        ..aics::web::WebConfig::default()
    };
    (aics::app(state, web), console)
}

fn req(method: Method, path: &str, cookie: &str) -> axum::http::request::Builder {
    let peer: std::net::SocketAddr = "127.0.0.1:50000".parse().unwrap();
    let b = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header("sec-fetch-site", "same-origin")
        .extension(axum::extract::ConnectInfo(peer));
    if cookie.is_empty() {
        b
    } else {
        b.header(header::COOKIE, cookie)
    }
}

async fn call(
    app: &Router,
    method: Method,
    path: &str,
    cookie: &str,
    body: Option<Value>,
) -> (StatusCode, Value, String) {
    let b = req(method, path, cookie);
    let request = match body {
        Some(v) => b
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(v.to_string()))
            .unwrap(),
        None => b.body(Body::empty()).unwrap(),
    };
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let set_cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split(';').next())
        .unwrap_or_default()
        .to_owned();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value, set_cookie)
}

async fn sign_in(app: &Router, username: &str, password: &str) -> String {
    let (status, _, cookie) = call(
        app,
        Method::POST,
        "/api/auth/login",
        "",
        Some(json!({"username": username, "password": password})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    cookie
}

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
        .graph_execution_id;
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
