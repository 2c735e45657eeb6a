//! The HTTP API driven through the router with `oneshot` on fresh SQLite
//! databases (`#[sqlx::test]`), and through a real listening server for the
//! event streams. The demo model answers instantly.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aics::state::{AppState, Shared};
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use leptos::config::LeptosOptions;
use serde_json::{json, Value};
use sqlx::SqlitePool;
use tokio::sync::watch;
use tower::ServiceExt;

mod common;

use common::{SseReader, API_TOKEN};

const CHAIN: &str = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";
const HOST: &str = "console.test";

struct TestApp {
    router: Router,
    console: Console,
    shutdown: watch::Sender<bool>,
}

async fn ready_db(db: Database) -> Database {
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    db
}

async fn test_app(db: Database) -> TestApp {
    // The recorder first, as the server's main does: the console counts
    // the pending approvals as it starts.
    let metrics = aics::telemetry::metrics_handle();
    let console = Console::new(
        db,
        ConsoleConfig {
            api_token: Some(API_TOKEN.into()),
            ..ConsoleConfig::for_tests()
        },
    )
    .await
    .unwrap();
    let (tx, rx) = watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options: LeptosOptions::builder().output_name("aics").build(),
        console: console.clone(),
        metrics,
        shutdown: rx,
    });
    TestApp {
        router: aics::app(state, web_for_tests()),
        console,
        shutdown: tx,
    }
}

/// The wire policy of the tests: the test host is ours.
fn web_for_tests() -> aics::web::WebConfig {
    aics::web::WebConfig {
        hosts: aics::web::HostRule::List(vec![HOST.into()]),
        ..aics::web::WebConfig::default()
    }
}

async fn app(pool: SqlitePool) -> TestApp {
    test_app(ready_db(Database::from(pool)).await).await
}

/// A request builder with the Host header every browser sends, from a
/// loopback peer (as `aics::serve` records it).
fn req(method: Method, path: &str) -> axum::http::request::Builder {
    let peer: std::net::SocketAddr = "127.0.0.1:50000".parse().unwrap();
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
        .extension(axum::extract::ConnectInfo(peer))
}

fn bearer(b: axum::http::request::Builder) -> axum::http::request::Builder {
    b.header(header::AUTHORIZATION, format!("Bearer {API_TOKEN}"))
}

fn json_body(b: axum::http::request::Builder, body: Value) -> Request<Body> {
    b.header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }
    /// Asserts an `ApiError` body with this status and code.
    fn error(&self, status: StatusCode, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        let body = self.json();
        assert_eq!(body["error"], code, "{body}");
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

async fn send(app: &TestApp, request: Request<Body>) -> Answer {
    let response = app.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    Answer {
        status,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Signs in and returns the `Cookie` header value.
async fn sign_in(app: &TestApp, username: &str, password: &str) -> String {
    let answer = send(
        app,
        json_body(
            req(Method::POST, "/api/auth/login"),
            json!({"username": username, "password": password}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let cookie = answer.headers[header::SET_COOKIE].to_str().unwrap();
    cookie.split(';').next().unwrap().to_owned()
}

/// A same-origin browser request with the session cookie.
fn browser(method: Method, path: &str, cookie: &str) -> axum::http::request::Builder {
    req(method, path)
        .header(header::COOKIE, cookie)
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header("sec-fetch-site", "same-origin")
}

#[sqlx::test(migrations = false)]
async fn operations_endpoints(pool: SqlitePool) {
    let app = app(pool).await;
    let health = send(
        &app,
        req(Method::GET, "/healthz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(
        (health.status, health.text.as_str()),
        (StatusCode::OK, "ok")
    );
    assert!(health.headers.contains_key("x-request-id"));
    let ready = send(
        &app,
        req(Method::GET, "/readyz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(ready.status, StatusCode::OK);

    let chat = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")),
            json!({"sessionId": "ops", "message": "Where is ORD-123?"}),
        ),
    )
    .await;
    assert_eq!(chat.status, StatusCode::OK, "{}", chat.text);
    let metrics = send(
        &app,
        req(Method::GET, "/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(metrics.status, StatusCode::OK);
    for series in [
        "aics_turns_total",
        "aics_turn_duration_seconds",
        "aics_tool_calls_total",
        "aics_llm_calls_total",
        "aics_llm_tokens_total",
        "aics_pending_approvals",
        "aics_http_requests_total",
    ] {
        assert!(
            metrics.text.contains(series),
            "{series} missing from /metrics"
        );
    }
    let config = send(
        &app,
        bearer(req(Method::GET, "/api/config"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(config.status, StatusCode::OK);
    assert_eq!(
        config.json(),
        json!({"provider": "demo", "model": "demo", "engine": "graph", "maxToolLoops": 5})
    );
}

/// `POST /api/chat` answers with the trace the turn stored, as serde_json
/// writes it.
#[sqlx::test(migrations = false)]
async fn chat_answers_with_the_trace_it_stored(pool: SqlitePool) {
    let app = app(pool).await;
    let chat = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")),
            json!({"sessionId": "answer-1", "message": "Where is my order ORD-123?"}),
        ),
    )
    .await;
    assert_eq!(chat.status, StatusCode::OK, "{}", chat.text);
    assert_eq!(
        chat.headers.get(header::CONTENT_TYPE).unwrap(),
        "application/json"
    );
    let answered: aics_types::ChatTurnTraceResult =
        serde_json::from_str(&chat.text).expect("a trace");
    assert_eq!(
        answered.stop_reason,
        Some(aics_types::StopReason::FinalAnswer)
    );
    assert!(!answered.pending_approval);
    assert_eq!(chat.text, serde_json::to_string(&answered).unwrap());
    let stored = send(
        &app,
        bearer(req(
            Method::GET,
            &format!("/api/turns/{}", answered.graph_execution_id),
        ))
        .body(Body::empty())
        .unwrap(),
    )
    .await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.text);
    let stored: aics_types::TurnDetail = serde_json::from_str(&stored.text).expect("a turn");
    assert_eq!(stored.trace, answered);
}

#[sqlx::test(migrations = false)]
async fn readyz_is_503_when_the_database_is_gone(pool: SqlitePool) {
    let app = app(pool).await;
    app.console.db().close().await;
    let ready = send(
        &app,
        req(Method::GET, "/readyz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
}

#[sqlx::test(migrations = false)]
async fn sign_in_me_and_sign_out(pool: SqlitePool) {
    let app = app(pool).await;
    let wrong = send(
        &app,
        json_body(
            req(Method::POST, "/api/auth/login"),
            json!({"username": "agent", "password": "nope-nope"}),
        ),
    )
    .await;
    wrong.error(StatusCode::UNAUTHORIZED, "unauthorized");

    let answer = send(
        &app,
        json_body(
            req(Method::POST, "/api/auth/login"),
            json!({"username": "agent", "password": "agent-pass"}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json(), json!({"username": "agent", "role": "agent"}));
    let set_cookie = answer.headers[header::SET_COOKIE].to_str().unwrap();
    for attr in ["aics_session=", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set_cookie.contains(attr), "{set_cookie}");
    }
    let cookie = set_cookie.split(';').next().unwrap().to_owned();

    let me = send(
        &app,
        browser(Method::GET, "/api/auth/me", &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(me.json(), json!({"username": "agent", "role": "agent"}));
    let api = send(
        &app,
        bearer(req(Method::GET, "/api/auth/me"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(api.json(), json!({"username": "api", "role": "agent"}));

    let out = send(
        &app,
        browser(Method::POST, "/api/auth/logout", &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    assert!(out.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    let me = send(
        &app,
        browser(Method::GET, "/api/auth/me", &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    me.error(StatusCode::UNAUTHORIZED, "unauthorized");
}

#[sqlx::test(migrations = false)]
async fn every_api_route_needs_a_user(pool: SqlitePool) {
    let app = app(pool).await;
    for (method, path) in [
        (Method::GET, "/api/auth/me"),
        (Method::POST, "/api/auth/logout"),
        (Method::GET, "/api/conversations"),
        (Method::POST, "/api/conversations"),
        (Method::GET, "/api/conversations/s1"),
        (Method::GET, "/api/conversations/s1/events"),
        (Method::POST, "/api/conversations/s1/messages"),
        (Method::GET, "/api/conversations/s1/turns"),
        (Method::POST, "/api/chat"),
        (Method::POST, "/api/chat/stream"),
        (Method::GET, "/api/turns/t1"),
        (Method::GET, "/api/approvals"),
        (Method::GET, "/api/approvals/events"),
        (Method::GET, "/api/approvals/a1"),
        (Method::POST, "/api/approvals/a1/decision"),
        (Method::GET, "/api/config"),
    ] {
        let answer = send(&app, json_body(req(method.clone(), path), json!({}))).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path}");
        answer.error(StatusCode::UNAUTHORIZED, "unauthorized");
        let wrong = send(
            &app,
            json_body(
                req(method.clone(), path).header(header::AUTHORIZATION, "Bearer not-the-token"),
                json!({}),
            ),
        )
        .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
}

#[sqlx::test(migrations = false)]
async fn conversations_chat_and_turns(pool: SqlitePool) {
    let app = app(pool).await;
    let created = send(
        &app,
        bearer(req(Method::POST, "/api/conversations"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let sid = created.json()["sessionId"].as_str().unwrap().to_owned();

    let accepted = send(
        &app,
        json_body(
            bearer(req(
                Method::POST,
                &format!("/api/conversations/{sid}/messages"),
            )),
            json!({"message": "What is your return policy?"}),
        ),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.text);
    let gid = accepted.json()["graphExecutionId"]
        .as_str()
        .unwrap()
        .to_owned();

    // The documented curl example (with the token).
    let chat = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")),
            json!({"sessionId": "react-demo-001", "message": CHAIN}),
        ),
    )
    .await;
    assert_eq!(chat.status, StatusCode::OK, "{}", chat.text);
    let trace = chat.json();
    for key in [
        "toolCalls",
        "executedNodes",
        "graphExecutionId",
        "durationMs",
        "pendingApproval",
        "approvalToken",
    ] {
        assert!(trace.get(key).is_some(), "{key} missing");
    }
    assert_eq!(trace["toolCalls"][0]["name"], "order_query");
    assert_eq!(trace["pendingApproval"], true);
    assert_eq!(trace["pendingToolCalls"][0]["tool"], "ticket_create");

    // While it waits: 409 and the message is not stored.
    let busy = send(
        &app,
        json_body(
            bearer(req(
                Method::POST,
                "/api/conversations/react-demo-001/messages",
            )),
            json!({"message": "hello?"}),
        ),
    )
    .await;
    busy.error(StatusCode::CONFLICT, "conflict");
    let busy = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")),
            json!({"sessionId": "react-demo-001", "message": "hello?"}),
        ),
    )
    .await;
    busy.error(StatusCode::CONFLICT, "conflict");

    let list = send(
        &app,
        bearer(req(Method::GET, "/api/conversations"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let list = list.json();
    assert_eq!(list.as_array().unwrap().len(), 2);
    // The other conversation's background turn may touch it later: find ours.
    let ours = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["sessionId"] == "react-demo-001")
        .unwrap();
    assert_eq!(ours["handling"], "waiting_approval");
    // A limit asks for fewer; a bad one is a 400.
    let one = send(
        &app,
        bearer(req(Method::GET, "/api/conversations?limit=1"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(one.json().as_array().unwrap().len(), 1);
    for bad in ["limit=-1", "limit=many", "page=2"] {
        send(
            &app,
            bearer(req(Method::GET, &format!("/api/conversations?{bad}")))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    }

    let detail = send(
        &app,
        bearer(req(Method::GET, "/api/conversations/react-demo-001"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let detail = detail.json();
    assert_eq!(detail["messages"].as_array().unwrap().len(), 1);
    assert_eq!(detail["messages"][0]["role"], "customer");
    assert!(detail["turns"][0]["approvalToken"].is_null());

    // The background turn of the first conversation has ended by now or soon.
    let mut turns = Value::Null;
    for _ in 0..100 {
        turns = send(
            &app,
            bearer(req(Method::GET, &format!("/api/conversations/{sid}/turns")))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .json();
        if turns.as_array().is_some_and(|t| !t.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(turns[0]["graphExecutionId"], gid.as_str());
    let turn = send(
        &app,
        bearer(req(Method::GET, &format!("/api/turns/{gid}")))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(turn.status, StatusCode::OK);
    let turn = turn.json();
    assert_eq!(turn["trace"]["graphExecutionId"], gid.as_str());
    assert!(turn["checkpoints"].as_array().unwrap().len() > 3);
    // The input, then one checkpoint per node.
    assert_eq!(turn["checkpoints"][0]["node"], "__start__");
    assert_eq!(turn["checkpoints"][1]["node"], "init_state");
}

#[sqlx::test(migrations = false)]
async fn approvals_and_the_role_rules(pool: SqlitePool) {
    let app = app(pool).await;
    let chat = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")),
            json!({"sessionId": "appr", "message": CHAIN}),
        ),
    )
    .await;
    let id = chat.json()["pendingToolCalls"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let agent = sign_in(&app, "agent", "agent-pass").await;
    let supervisor = sign_in(&app, "supervisor", "supervisor-pass").await;

    let pending = send(
        &app,
        browser(Method::GET, "/api/approvals?status=pending", &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let pending = pending.json();
    assert_eq!(pending[0]["id"], id.as_str());
    assert_eq!(pending[0]["status"], "pending");
    assert!(!pending[0]["context"].as_array().unwrap().is_empty());
    let one = send(
        &app,
        browser(Method::GET, &format!("/api/approvals/{id}"), &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(one.json()["tool"], "ticket_create");
    send(
        &app,
        browser(Method::GET, "/api/approvals/nope", &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .error(StatusCode::NOT_FOUND, "not_found");
    send(
        &app,
        browser(Method::GET, "/api/approvals?status=maybe", &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .error(StatusCode::BAD_REQUEST, "invalid_request");

    let decision = format!("/api/approvals/{id}/decision");
    // Agents (and the agent-role API token) get 403.
    send(
        &app,
        json_body(
            browser(Method::POST, &decision, &agent),
            json!({"approve": true}),
        ),
    )
    .await
    .error(StatusCode::FORBIDDEN, "forbidden");
    send(
        &app,
        json_body(
            bearer(req(Method::POST, &decision)),
            json!({"approve": true}),
        ),
    )
    .await
    .error(StatusCode::FORBIDDEN, "forbidden");
    // A rejection needs a reason; a wrong token is refused.
    send(
        &app,
        json_body(
            browser(Method::POST, &decision, &supervisor),
            json!({"approve": false}),
        ),
    )
    .await
    .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(
        &app,
        json_body(
            browser(Method::POST, &decision, &supervisor),
            json!({"approve": true, "token": "f".repeat(64)}),
        ),
    )
    .await
    .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(
        &app,
        json_body(
            browser(Method::POST, "/api/approvals/nope/decision", &supervisor),
            json!({"approve": true}),
        ),
    )
    .await
    .error(StatusCode::NOT_FOUND, "not_found");

    let decided = send(
        &app,
        json_body(
            browser(Method::POST, &decision, &supervisor),
            json!({"approve": true}),
        ),
    )
    .await;
    assert_eq!(decided.status, StatusCode::OK, "{}", decided.text);
    assert_eq!(decided.json()["status"], "approved");
    assert_eq!(decided.json()["decidedBy"], "supervisor");
    send(
        &app,
        json_body(
            browser(Method::POST, &decision, &supervisor),
            json!({"approve": true}),
        ),
    )
    .await
    .error(StatusCode::CONFLICT, "conflict");
    let audit = send(
        &app,
        browser(Method::GET, "/api/approvals?status=decided", &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(audit.json()[0]["id"], id.as_str());
}

#[sqlx::test(migrations = false)]
async fn bad_input_gets_json_errors_and_changes_nothing(pool: SqlitePool) {
    let app = app(pool).await;
    let post = |path: &str, body: Body| {
        bearer(req(Method::POST, path))
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap()
    };
    // Oversized body (over the 64 KiB limit).
    let big = json!({"sessionId": "bad", "message": "x".repeat(70_000)}).to_string();
    send(&app, post("/api/chat", Body::from(big)))
        .await
        .error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    // Malformed JSON, wrong shape, missing field, wrong content type.
    for body in [
        r#"{"sessionId": "bad", "message": "#,
        r#"[1, 2]"#,
        r#"{"sessionId": "bad"}"#,
        "not json",
    ] {
        send(&app, post("/api/chat", Body::from(body)))
            .await
            .error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let plain = bearer(req(Method::POST, "/api/chat"))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(
            json!({"sessionId": "bad", "message": "hi"}).to_string(),
        ))
        .unwrap();
    send(&app, plain)
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    // Empty, blank and over-long messages; malformed session ids.
    for body in [
        json!({"sessionId": "bad", "message": ""}),
        json!({"sessionId": "bad", "message": "  \n "}),
        json!({"sessionId": "bad", "message": "x".repeat(8001)}),
        json!({"sessionId": "bad id", "message": "hi"}),
        json!({"sessionId": "", "message": "hi"}),
        json!({"sessionId": "x".repeat(65), "message": "hi"}),
    ] {
        send(&app, post("/api/chat", Body::from(body.to_string())))
            .await
            .error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    send(
        &app,
        post(
            "/api/conversations/bad%20id/messages",
            Body::from(json!({"message": "hi"}).to_string()),
        ),
    )
    .await
    .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(
        &app,
        post(
            "/api/conversations/ok/messages",
            Body::from(json!({"message": ""}).to_string()),
        ),
    )
    .await
    .error(StatusCode::BAD_REQUEST, "invalid_request");
    // Unknown and malformed ids.
    let get = |path: &str| bearer(req(Method::GET, path)).body(Body::empty()).unwrap();
    send(&app, get("/api/conversations/unknown"))
        .await
        .error(StatusCode::NOT_FOUND, "not_found");
    send(&app, get("/api/conversations/unknown/turns"))
        .await
        .error(StatusCode::NOT_FOUND, "not_found");
    send(&app, get("/api/conversations/bad%20id"))
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(&app, get("/api/conversations/bad%20id/events"))
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(&app, get("/api/turns/unknown"))
        .await
        .error(StatusCode::NOT_FOUND, "not_found");
    send(&app, get("/api/turns/a%2Fb"))
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(&app, get("/api/approvals/a%20b"))
        .await
        .error(StatusCode::BAD_REQUEST, "invalid_request");
    send(&app, get("/api/no-such-route"))
        .await
        .error(StatusCode::NOT_FOUND, "not_found");
    let wrong_method = bearer(req(Method::DELETE, "/api/conversations"))
        .body(Body::empty())
        .unwrap();
    let answer = send(&app, wrong_method).await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(answer.json()["error"].is_string());
    // Nothing was stored.
    let list = send(&app, get("/api/conversations")).await;
    assert_eq!(list.json(), json!([]));
}

#[sqlx::test(migrations = false)]
async fn cross_site_requests_are_refused(pool: SqlitePool) {
    let app = app(pool).await;
    let cookie = sign_in(&app, "supervisor", "supervisor-pass").await;
    let body = || json!({"message": "Where is ORD-123?"});
    let path = "/api/conversations/xs/messages";
    let with_cookie = |b: axum::http::request::Builder| b.header(header::COOKIE, cookie.as_str());

    for request in [
        json_body(
            with_cookie(req(Method::POST, path)).header("sec-fetch-site", "cross-site"),
            body(),
        ),
        json_body(
            with_cookie(req(Method::POST, path)).header("sec-fetch-site", "same-site"),
            body(),
        ),
        json_body(
            with_cookie(req(Method::POST, path)).header(header::ORIGIN, "https://evil.example"),
            body(),
        ),
        json_body(
            with_cookie(req(Method::POST, path)).header(header::ORIGIN, "null"),
            body(),
        ),
        // Login CSRF and the Leptos server functions are covered too.
        json_body(
            req(Method::POST, "/api/auth/login").header(header::ORIGIN, "https://evil.example"),
            json!({"username": "agent", "password": "agent-pass"}),
        ),
        json_body(
            req(Method::POST, "/fn/anything").header("sec-fetch-site", "cross-site"),
            json!({}),
        ),
    ] {
        send(&app, request)
            .await
            .error(StatusCode::FORBIDDEN, "forbidden");
    }
    assert_eq!(app.console.list_conversations(200).await.unwrap().len(), 0);

    // Same origin passes; a bearer-token request is not cookie-borne and passes.
    let same = send(
        &app,
        json_body(browser(Method::POST, path, &cookie), body()),
    )
    .await;
    assert_eq!(same.status, StatusCode::ACCEPTED, "{}", same.text);
    let scripted = send(
        &app,
        json_body(
            bearer(req(Method::POST, "/api/chat")).header("sec-fetch-site", "cross-site"),
            json!({"sessionId": "xs2", "message": "hi"}),
        ),
    )
    .await;
    assert_eq!(scripted.status, StatusCode::OK, "{}", scripted.text);
    // Reads are never refused.
    let read = send(
        &app,
        with_cookie(req(Method::GET, "/api/auth/me"))
            .header("sec-fetch-site", "cross-site")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(read.status, StatusCode::OK);
}

/// Serves the app on a free port; returns its base URL.
async fn serve(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app.router.clone();
    tokio::spawn(async move {
        aics::serve::serve(
            listener,
            router,
            aics::serve::ServeLimits::default(),
            std::future::pending(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}

fn kinds(events: &[common::Sse]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

fn position(events: &[common::Sse], kind: &str, tool: Option<&str>) -> usize {
    events
        .iter()
        .position(|e| e.event == kind && tool.is_none_or(|t| e.data["tool"] == t))
        .unwrap_or_else(|| panic!("no {kind} {tool:?} in {:?}", kinds(events)))
}

/// The SSE event order of the complaint chain on a real server: order_query,
/// ticket_create pauses for approval, the approval resumes it, the final
/// reply names the ticket.
#[sqlx::test(migrations = false)]
async fn seed_004_chain_over_sse(pool: SqlitePool) {
    let app = app(pool).await;
    let base = serve(&app).await;
    let http = reqwest::Client::new();
    let sid = "react-demo-001";

    let mut stream = SseReader::new(
        http.get(format!("{base}/api/conversations/{sid}/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let mut queue = SseReader::new(
        http.get(format!("{base}/api/approvals/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let accepted = http
        .post(format!("{base}/api/conversations/{sid}/messages"))
        .bearer_auth(API_TOKEN)
        .json(&json!({"message": CHAIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);

    let first = stream.until_final().await;
    let k = kinds(&first);
    assert_eq!(k[..2], ["message", "turn_start"], "{k:?}");
    assert!(
        position(&first, "node_start", None) < position(&first, "tool_start", Some("order_query"))
    );
    assert!(
        position(&first, "tool_start", Some("order_query"))
            < position(&first, "tool_end", Some("order_query"))
    );
    assert!(
        position(&first, "tool_end", Some("order_query"))
            < position(&first, "approval_required", Some("ticket_create"))
    );
    assert!(!first
        .iter()
        .any(|e| e.event == "tool_start" && e.data["tool"] == "ticket_create"));
    let paused = &first.last().unwrap().data["trace"];
    assert_eq!(paused["pendingApproval"], true);
    assert!(
        paused["approvalToken"].is_null(),
        "the token is not broadcast"
    );
    let required = queue.next().await.unwrap();
    assert_eq!(required.event, "approval_required");
    let id = required.data["id"].as_str().unwrap().to_owned();

    // A supervisor approves in the browser.
    let login = http
        .post(format!("{base}/api/auth/login"))
        .json(&json!({"username": "supervisor", "password": "supervisor-pass"}))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let decided = http
        .post(format!("{base}/api/approvals/{id}/decision"))
        .header("cookie", cookie)
        .header("origin", base.as_str())
        .json(&json!({"approve": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200);
    assert_eq!(queue.next().await.unwrap().event, "approval_decided");

    let second = stream.until_final().await;
    let k = kinds(&second);
    assert_eq!(k[0], "approval_decided", "{k:?}");
    let resumed = position(&second, "turn_start", None);
    assert_eq!(second[resumed].data["resumed"], true);
    assert!(resumed < position(&second, "tool_start", Some("ticket_create")));
    assert!(
        position(&second, "tool_start", Some("ticket_create"))
            < position(&second, "tool_end", Some("ticket_create"))
    );
    assert!(
        position(&second, "tool_end", Some("ticket_create")) < position(&second, "llm_token", None)
    );
    let trace = &second.last().unwrap().data["trace"];
    assert_eq!(trace["pendingApproval"], false);
    let reply = trace["reply"].as_str().unwrap();
    let ticket = second[position(&second, "tool_end", Some("ticket_create"))].data["result"]
        ["ticket_id"]
        .as_str()
        .map(str::to_owned);
    assert!(reply.contains("TCK-"), "{reply}");
    if let Some(ticket) = ticket {
        assert!(reply.contains(&ticket), "{reply} lacks {ticket}");
    }
}

/// `POST /api/chat/stream`: this turn's events, ending with `final`.
#[sqlx::test(migrations = false)]
async fn chat_stream_ends_with_final(pool: SqlitePool) {
    let app = app(pool).await;
    let base = serve(&app).await;
    let http = reqwest::Client::new();
    let mut stream = SseReader::new(
        http.post(format!("{base}/api/chat/stream"))
            .bearer_auth(API_TOKEN)
            .json(&json!({"sessionId": "streamed", "message": "Where is my order ORD-123?"}))
            .send()
            .await
            .unwrap(),
    );
    let events = stream.until_final().await;
    // The stored customer message first, then the turn, on one sequence.
    assert_eq!(events[0].event, "message");
    assert_eq!(events[0].data["message"]["role"], "customer");
    assert_eq!(events[1].event, "turn_start");
    assert!(events.iter().any(|e| e.event == "llm_token"));
    assert!(stream.next().await.is_none(), "the stream ends after final");
    let reply = events.last().unwrap().data["trace"]["reply"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reply.contains("ORD-123"), "{reply}");

    // A failing model: an error event, then final with stop reason error.
    let mut stream = SseReader::new(
        http.post(format!("{base}/api/chat/stream"))
            .bearer_auth(API_TOKEN)
            .json(&json!({"sessionId": "streamed", "message": "[fault:error] Where is ORD-123?"}))
            .send()
            .await
            .unwrap(),
    );
    let events = stream.until_final().await;
    assert!(events.iter().any(|e| e.event == "error"));
    assert_eq!(events.last().unwrap().data["trace"]["stopReason"], "error");
    let detail = app.console.conversation("streamed").await.unwrap();
    assert_eq!(detail.turns.len(), 2);
    assert!(detail
        .messages
        .iter()
        .any(|m| m.content.starts_with("[fault:error]")));
}

/// The Leptos pages render with the console in context, and server
/// functions are routed under `/fn`.
#[sqlx::test(migrations = false)]
async fn leptos_pages_and_server_functions_are_served(pool: SqlitePool) {
    let app = app(pool).await;
    let page = send(&app, req(Method::GET, "/").body(Body::empty()).unwrap()).await;
    assert!(
        page.status.is_success() || page.status.is_redirection(),
        "{} {}",
        page.status,
        page.text
    );
    let unknown_fn = send(
        &app,
        req(Method::POST, "/fn/no_such_function")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(unknown_fn.status.is_client_error() || unknown_fn.status.is_server_error());
    let oversized = send(
        &app,
        req(Method::POST, "/fn/no_such_function")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::CONTENT_LENGTH, "70000")
            .body(Body::from("x".repeat(70_000)))
            .unwrap(),
    )
    .await;
    assert_eq!(oversized.status, StatusCode::PAYLOAD_TOO_LARGE);
}

/// Two instances on one PostgreSQL: a browser on A watches the conversation,
/// the turn runs on A and pauses, a supervisor signed in on A approves
/// through B (the session is shared), the turn resumes exactly once and its
/// events reach the stream on A; a stream on B sees them too.
#[sqlx::test(migrations = false)]
async fn two_instances_on_one_postgres(pool: sqlx::PgPool) {
    let db = ready_db(Database::Postgres(pool)).await;
    let a = test_app(db.clone()).await;
    let b = test_app(db).await;
    let (base_a, base_b) = (serve(&a).await, serve(&b).await);
    let http = reqwest::Client::new();
    let sid = "pg-two";

    let mut on_a = SseReader::new(
        http.get(format!("{base_a}/api/conversations/{sid}/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let mut on_b = SseReader::new(
        http.get(format!("{base_b}/api/conversations/{sid}/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let mut queue_b = SseReader::new(
        http.get(format!("{base_b}/api/approvals/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let chat = http
        .post(format!("{base_a}/api/chat"))
        .bearer_auth(API_TOKEN)
        .json(&json!({"sessionId": sid, "message": CHAIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 200);
    let first_a = on_a.until_final().await;
    let first_b = on_b.until_final().await;
    assert_eq!(
        kinds(&first_a),
        kinds(&first_b),
        "B sees A's turn, in order"
    );
    let required = queue_b.next().await.unwrap();
    assert_eq!(required.event, "approval_required");
    let id = required.data["id"].as_str().unwrap().to_owned();

    // B refuses a second message: the lock is in the database.
    let busy = http
        .post(format!("{base_b}/api/conversations/{sid}/messages"))
        .bearer_auth(API_TOKEN)
        .json(&json!({"message": "hello?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status(), 409);

    let login = http
        .post(format!("{base_a}/api/auth/login"))
        .json(&json!({"username": "supervisor", "password": "supervisor-pass"}))
        .send()
        .await
        .unwrap();
    let cookie = login.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let decide = |base: String| {
        let http = http.clone();
        let cookie = cookie.clone();
        let id = id.clone();
        async move {
            http.post(format!("{base}/api/approvals/{id}/decision"))
                .header("cookie", cookie)
                .header("origin", base.as_str())
                .json(&json!({"approve": true}))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let (x, y) = tokio::join!(decide(base_b.clone()), decide(base_a.clone()));
    let mut statuses = [x.as_u16(), y.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);

    let second = on_a.until_final().await;
    assert!(
        position(&second, "tool_end", Some("ticket_create")) < position(&second, "final", None)
    );
    let reply = second.last().unwrap().data["trace"]["reply"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reply.contains("TCK-"), "{reply}");
    let second_b = on_b.until_final().await;
    assert_eq!(
        second_b.last().unwrap().data["trace"]["reply"],
        reply.as_str()
    );

    tokio::time::sleep(Duration::from_millis(500)).await;
    let detail = a.console.conversation(sid).await.unwrap();
    let replies = detail
        .messages
        .iter()
        .filter(|m| m.role == aics_types::MessageRole::Assistant)
        .count();
    assert_eq!(replies, 1, "resumed exactly once");
}

/// Says plainly what is missing instead of letting the PostgreSQL test fail
/// with sqlx's terse message.
#[test]
fn postgres_tests_have_a_database_url() {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    assert!(
        url.starts_with("postgres://") || url.starts_with("postgresql://"),
        "DATABASE_URL must point at PostgreSQL for two_instances_on_one_postgres (got {url:?}); \
         run `export DATABASE_URL=$(scripts/postgres.sh | tail -n 1)` first"
    );
}

/// A shutdown ends the open event streams (else a graceful shutdown would
/// wait for them forever), and the open-streams gauge counts them.
#[sqlx::test(migrations = false)]
async fn shutdown_ends_the_event_streams(pool: SqlitePool) {
    let app = app(pool).await;
    let base = serve(&app).await;
    let http = reqwest::Client::new();
    let mut stream = SseReader::new(
        http.get(format!("{base}/api/conversations/down/events"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap(),
    );
    let metrics = send(
        &app,
        req(Method::GET, "/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert!(
        metrics.text.contains("aics_open_streams"),
        "{}",
        metrics.text
    );
    app.shutdown.send(true).unwrap();
    assert!(stream.next().await.is_none(), "the stream ends on shutdown");
}

#[sqlx::test(migrations = false)]
async fn the_overview_is_for_supervisors_and_checks_its_window(pool: SqlitePool) {
    let app = app(pool).await;
    let supervisor = sign_in(&app, "supervisor", "supervisor-pass").await;
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let answer = send(
        &app,
        browser(Method::GET, "/api/overview?days=7", &supervisor)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let body = answer.json();
    assert_eq!(body["days"], 7);
    assert_eq!(body["perDay"].as_array().map(Vec::len), Some(7));
    assert!(body["approvals"]["approvalRate"].is_null());
    send(
        &app,
        browser(Method::GET, "/api/overview", &agent)
            .body(Body::empty())
            .unwrap(),
    )
    .await
    .error(StatusCode::FORBIDDEN, "forbidden");
    for bad in [
        "/api/overview?days=0",
        "/api/overview?days=400",
        "/api/overview?days=x",
    ] {
        let answer = send(
            &app,
            browser(Method::GET, bad, &supervisor)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            answer.text
        );
    }
}
