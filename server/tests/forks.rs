//! The forks routes through the router (`oneshot`) on a fresh SQLite
//! database: 202 with the fork's id, the list and the one fork, 403 for
//! agents, 400 for a malformed body or an unknown provider; and
//! `GET /api/providers` (any signed-in user, 401 without).

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
    let gid = trace.graph_execution_id;
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
