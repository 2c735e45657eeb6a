//! The console's router on a fresh SQLite database, called in process
//! (`oneshot`) with a signed-in cookie: what the route tests of forks and
//! replay sets share.

use aics::state::{AppState, Shared};
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

pub async fn router(pool: SqlitePool) -> (Router, Console) {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    let console = Console::new(db, ConsoleConfig::for_tests()).await.unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options: LeptosOptions::builder().output_name("aics").build(),
        console: console.clone(),
        metrics: aics::telemetry::metrics_handle(),
        shutdown: rx,
    });
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

pub async fn call(
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

pub async fn sign_in(app: &Router, username: &str, password: &str) -> String {
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

/// A page as a browser asks for it: its status and HTML.
pub async fn page(app: &Router, path: &str, cookie: &str) -> (StatusCode, String) {
    let request = req(Method::GET, path, cookie)
        .header(header::ACCEPT, "text/html")
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}
