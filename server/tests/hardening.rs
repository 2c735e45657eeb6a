//! The low-severity findings of the wire, each against the server that has
//! them: an over-limit body to a server function is a 413 whatever its
//! content type (a real `aics` process: the limit is the accept loop's and
//! the router's together); the Origin check compares the scheme too (the
//! site's: a trusted proxy's `X-Forwarded-Proto`, else whether the
//! deployment is served over HTTPS); a conversation's title drops the
//! characters that reorder or hide what staff read. SQLite.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;

use aics::state::{AppState, Shared};
use aics::web::{HostRule, WebConfig};
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use common::{Server, Workdir};
use leptos::config::LeptosOptions;
use serde_json::json;
use sqlx::SqlitePool;
use tower::ServiceExt;

async fn server(name: &str) -> Server {
    let dir = Workdir::new("hardening", name);
    Server::start(
        &format!("sqlite://{}/aics.db", dir.display()),
        &dir.join("server.log"),
        &[],
    )
    .await
    .owning(dir)
}

/// 70 KB, past the default 64 KB limit.
const OVER: usize = 70 * 1024;

/// A body past the limit to a server function, the customer's among them,
/// is a 413 whatever its content type, sent with its length or chunked
/// (the function would otherwise find its body cut and answer 500); one
/// within the limit still reaches the function.
#[tokio::test]
async fn an_over_limit_body_to_a_server_function_is_413_whatever_its_type() {
    let server = server("fn-limit").await;
    let client = reqwest::Client::new();
    for path in ["/fn/customer_send", "/fn/start_chat", "/fn/login"] {
        for content_type in [
            Some("text/plain"),
            Some("application/octet-stream"),
            None,
            Some("application/json"),
            Some("application/x-www-form-urlencoded"),
        ] {
            for chunked in [false, true] {
                let body = "x".repeat(OVER);
                let body = if chunked {
                    let pieces = body
                        .into_bytes()
                        .chunks(4096)
                        .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
                        .collect::<Vec<_>>();
                    reqwest::Body::wrap_stream(futures::stream::iter(pieces))
                } else {
                    reqwest::Body::from(body)
                };
                let mut request = client.post(server.url(path)).body(body);
                if let Some(content_type) = content_type {
                    request = request.header(header::CONTENT_TYPE, content_type);
                }
                // A server that answers before reading the body and hangs
                // up resets the connection: the client never sees a status.
                let status = match request.send().await {
                    Ok(answer) => Ok(answer.status().as_u16()),
                    Err(err) => Err(err.to_string()),
                };
                assert_eq!(status, Ok(413), "{path} {content_type:?} chunked={chunked}");
            }
        }
    }
    // Within the limit the function runs (and refuses the wrong token).
    let answer = client
        .post(server.url("/fn/customer_send"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(json!({"token": "no-such-token", "message": "hello"}).to_string())
        .send()
        .await
        .unwrap();
    assert_ne!(answer.status(), 413);
    assert!(answer.status().is_client_error(), "{}", answer.status());
}

/// A title made from a first message keeps none of the characters that
/// reorder or hide text (an override makes "exe.pdf" of "fdp.exe").
#[tokio::test]
async fn a_title_drops_direction_and_zero_width_characters() {
    let server = server("titles").await;
    let (status, trace) = server
        .post(
            "/api/chat",
            json!({
                "sessionId": "bidi-title",
                "message": "Invoice\u{202E}fdp.exe\u{200B} is\u{2066} wrong\u{FEFF}",
            }),
        )
        .await;
    assert_eq!(status, 200, "{trace}");
    let (status, detail) = server.get("/api/conversations/bidi-title").await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["summary"]["title"], "Invoicefdp.exe is wrong");
    let (_, list) = server.get("/api/conversations").await;
    let listed = list
        .as_array()
        .or_else(|| list["conversations"].as_array())
        .cloned()
        .unwrap_or_default();
    let title = listed
        .iter()
        .find(|c| c["sessionId"] == "bidi-title")
        .map(|c| c["title"].clone());
    assert_eq!(
        title,
        Some(json!("Invoicefdp.exe is wrong")),
        "the inbox lists it so"
    );
}

const HOST: &str = "console.example.com";

async fn console(pool: SqlitePool) -> Console {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    Console::new(db, ConsoleConfig::for_tests()).await.unwrap()
}

fn router(console: &Console, web: WebConfig) -> (Router, tokio::sync::watch::Sender<bool>) {
    let console = console.clone();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options: LeptosOptions::builder().output_name("aics").build(),
        console,
        metrics: aics::telemetry::metrics_handle(),
        shutdown: rx,
    });
    (aics::app(state, web), tx)
}

/// A new conversation asked for from `origin` through `peer`, with a
/// forwarded scheme and no credentials: 403 when the cross-site guard
/// refuses, 401 (not signed in) when it lets the request through.
async fn post_from(
    app: &Router,
    origin: &str,
    peer: &str,
    forwarded_proto: Option<&str>,
) -> StatusCode {
    let peer: SocketAddr = peer.parse().unwrap();
    let mut request = Request::builder()
        .method(Method::POST)
        .uri("/api/conversations")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, origin)
        .header(header::CONTENT_TYPE, "application/json")
        .extension(ConnectInfo(peer));
    if let Some(proto) = forwarded_proto {
        request = request.header("x-forwarded-proto", proto);
    }
    let body = json!({}).to_string();
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    response.status()
}

/// Without `allowed-origins` the Origin must be the request's own host
/// *and* the site's scheme: `http://host` is refused on an https site, and
/// `https://host` on a plain-http one.
#[sqlx::test(migrations = false)]
async fn an_origin_of_the_other_scheme_is_refused(pool: SqlitePool) {
    let https = WebConfig {
        hosts: HostRule::List(vec![HOST.into()]),
        hsts: true,
        ..WebConfig::default()
    };
    let console = console(pool).await;
    let (app, _keep) = router(&console, https);
    let stranger = "198.51.100.7:40000";
    let http_origin = format!("http://{HOST}");
    let https_origin = format!("https://{HOST}");
    assert_eq!(
        post_from(&app, &http_origin, stranger, None).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post_from(&app, &https_origin, stranger, None).await,
        StatusCode::UNAUTHORIZED
    );
    // A forwarded scheme from a peer that is no trusted proxy changes nothing.
    assert_eq!(
        post_from(&app, &http_origin, stranger, Some("http")).await,
        StatusCode::FORBIDDEN
    );

    // Plain http, behind a trusted proxy that says which scheme it served.
    let proxied = WebConfig {
        hosts: HostRule::List(vec![HOST.into()]),
        trusted_proxies: vec!["10.0.0.1/32".parse().unwrap()],
        hsts: false,
        ..WebConfig::default()
    };
    let (app, _keep) = router(&console, proxied);
    let proxy = "10.0.0.1:40000";
    assert_eq!(
        post_from(&app, &https_origin, proxy, Some("http")).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post_from(&app, &http_origin, proxy, Some("https")).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post_from(&app, &https_origin, proxy, Some("https")).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post_from(&app, &http_origin, proxy, Some("http")).await,
        StatusCode::UNAUTHORIZED
    );
}
