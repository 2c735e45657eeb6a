//! The wire: cookie flags, security headers on HTML and JSON, the host
//! allowlist, the bearer-only exemption of the cross-site guard, control
//! characters refused, sign-in throttling over HTTP (Retry-After, the
//! forwarded address from trusted proxies only), the account routes'
//! roles, the stream cap, metrics access and label folding, and the
//! header-read timeout of the accept loop. SQLite; the PostgreSQL path of
//! the same stores is covered by the db and service suites.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use aics::state::{AppState, Shared};
use aics::web::{HostRule, MetricsAccess, WebConfig};
use aics_db::Database;
use aics_service::{Console, ConsoleConfig, ThrottlePolicy};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use leptos::config::LeptosOptions;
use serde_json::{json, Value};
use sqlx::SqlitePool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tower::ServiceExt;

const API_TOKEN: &str = "test-api-token-0123456789";
const HOST: &str = "console.example.com";
const ORIGIN: &str = "https://console.example.com";

struct App {
    router: Router,
    _shutdown: watch::Sender<bool>,
}

async fn app_with(pool: SqlitePool, config: ConsoleConfig, web: WebConfig) -> App {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    let console = Console::new(
        db,
        ConsoleConfig {
            api_token: Some(API_TOKEN.into()),
            ..config
        },
    )
    .await
    .unwrap();
    let (tx, rx) = watch::channel(false);
    let state = AppState::new(Shared {
        leptos_options: LeptosOptions::builder().output_name("aics").build(),
        console,
        metrics: aics::telemetry::metrics_handle(),
        shutdown: rx,
    });
    App {
        router: aics::app(state, web),
        _shutdown: tx,
    }
}

/// Served over HTTPS behind a proxy at 10.0.0.1: Secure cookies, HSTS,
/// one origin.
fn https_web() -> WebConfig {
    WebConfig {
        hosts: HostRule::List(vec![HOST.into()]),
        allowed_origins: vec![ORIGIN.into()],
        trusted_proxies: vec!["10.0.0.1/32".parse().unwrap()],
        hsts: true,
        ..WebConfig::default()
    }
}

fn https_config() -> ConsoleConfig {
    ConsoleConfig {
        cookie_secure: true,
        ..ConsoleConfig::for_tests()
    }
}

async fn app(pool: SqlitePool) -> App {
    app_with(pool, https_config(), https_web()).await
}

fn req(method: Method, path: &str, peer: &str) -> axum::http::request::Builder {
    let peer: SocketAddr = peer.parse().unwrap();
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
        .extension(ConnectInfo(peer))
}

fn local(method: Method, path: &str) -> axum::http::request::Builder {
    req(method, path, "127.0.0.1:40000")
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
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header: {:?}", self.headers))
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
}

async fn send(app: &App, request: Request<Body>) -> Answer {
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

/// Signs in through a proxy from `client`; returns the `name=value` cookie.
async fn sign_in(app: &App, username: &str, password: &str) -> String {
    let answer = send(
        app,
        json_body(
            local(Method::POST, "/api/auth/login"),
            json!({"username": username, "password": password}),
        ),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer
        .header("set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

fn with_cookie(b: axum::http::request::Builder, cookie: &str) -> axum::http::request::Builder {
    b.header(header::COOKIE, cookie)
        .header(header::ORIGIN, ORIGIN)
        .header("sec-fetch-site", "same-origin")
}

#[sqlx::test(migrations = false)]
async fn cookie_is_host_prefixed_and_secure_over_https(pool: SqlitePool) {
    let app = app(pool).await;
    let answer = send(
        &app,
        json_body(
            local(Method::POST, "/api/auth/login"),
            json!({"username": "agent", "password": "agent-pass"}),
        ),
    )
    .await;
    let cookie = answer.header("set-cookie");
    assert!(cookie.starts_with("__Host-aics_session="), "{cookie}");
    for attr in ["; HttpOnly", "; SameSite=Strict", "; Path=/", "; Secure"] {
        assert!(cookie.contains(attr), "{attr} missing: {cookie}");
    }
    assert!(!cookie.contains("Domain"), "{cookie}");
    // The unprefixed name is not read in this deployment.
    let pair = cookie.split(';').next().unwrap();
    let plain = pair.replacen("__Host-", "", 1);
    let me = send(
        &app,
        local(Method::GET, "/api/auth/me")
            .header(header::COOKIE, plain)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(me.status, StatusCode::UNAUTHORIZED);
    let me = send(
        &app,
        local(Method::GET, "/api/auth/me")
            .header(header::COOKIE, pair)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(me.status, StatusCode::OK);
}

#[sqlx::test(migrations = false)]
async fn plain_http_loopback_cookie_has_no_secure_flag(pool: SqlitePool) {
    let app = app_with(pool, ConsoleConfig::for_tests(), WebConfig::default()).await;
    let answer = send(
        &app,
        json_body(
            Request::builder()
                .method(Method::POST)
                .uri("/api/auth/login")
                .header(header::HOST, "127.0.0.1:3000")
                .extension(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap())),
            json!({"username": "agent", "password": "agent-pass"}),
        ),
    )
    .await;
    let cookie = answer.header("set-cookie");
    assert!(cookie.starts_with("aics_session="), "{cookie}");
    assert!(!cookie.contains("Secure"), "{cookie}");
    assert!(answer.headers.get("strict-transport-security").is_none());
}

fn assert_common_headers(answer: &Answer, what: &str) {
    assert_eq!(answer.header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(answer.header("x-frame-options"), "DENY", "{what}");
    assert_eq!(answer.header("referrer-policy"), "same-origin", "{what}");
    assert_eq!(
        answer.header("strict-transport-security"),
        "max-age=31536000",
        "{what}"
    );
    assert!(
        answer
            .header("content-security-policy")
            .contains("frame-ancestors 'none'"),
        "{what}"
    );
    assert_eq!(
        answer.header("cross-origin-opener-policy"),
        "same-origin",
        "{what}"
    );
}

#[sqlx::test(migrations = false)]
async fn every_answer_has_the_security_headers(pool: SqlitePool) {
    let app = app(pool).await;
    // An HTML page: the CSP allows its inline script by the nonce it carries.
    let page = send(
        &app,
        local(Method::GET, "/login").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.header("content-type").starts_with("text/html"));
    assert_common_headers(&page, "html");
    assert_eq!(page.header("cache-control"), "no-store");
    let csp = page.header("content-security-policy");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("'wasm-unsafe-eval'"), "{csp}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap();
    assert!(nonce.len() >= 22, "{nonce}");
    assert!(
        page.text.contains(&format!("nonce=\"{nonce}\"")),
        "the hydration script carries the header's nonce"
    );
    let scripts = page.text.matches("<script").count();
    let nonced = page
        .text
        .matches(&format!("<script type=\"module\" nonce=\"{nonce}\""))
        .count()
        + page
            .text
            .matches(&format!("<script nonce=\"{nonce}\""))
            .count();
    assert_eq!(scripts, nonced, "every inline script has the nonce");
    let again = send(
        &app,
        local(Method::GET, "/login").body(Body::empty()).unwrap(),
    )
    .await;
    assert_ne!(
        again.header("content-security-policy"),
        csp,
        "a fresh nonce per page"
    );

    // JSON, an error, a redirect, the health check.
    for (request, what) in [
        (
            local(Method::GET, "/api/auth/me")
                .body(Body::empty())
                .unwrap(),
            "401 json",
        ),
        (
            local(Method::GET, "/api/nothing")
                .body(Body::empty())
                .unwrap(),
            "404 json",
        ),
        (
            local(Method::GET, "/").body(Body::empty()).unwrap(),
            "redirect",
        ),
        (
            local(Method::GET, "/healthz").body(Body::empty()).unwrap(),
            "healthz",
        ),
    ] {
        let answer = send(&app, request).await;
        assert_common_headers(&answer, what);
        assert_eq!(answer.header("cache-control"), "no-store", "{what}");
    }
    let cookie = sign_in(&app, "agent", "agent-pass").await;
    let list = send(
        &app,
        with_cookie(local(Method::GET, "/api/conversations"), &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(list.status, StatusCode::OK);
    assert_common_headers(&list, "json");
    assert_eq!(list.header("cache-control"), "no-store");
    assert_eq!(
        list.header("content-security-policy"),
        "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
    );
}

#[sqlx::test(migrations = false)]
async fn only_our_hosts_are_answered(pool: SqlitePool) {
    let app = app(pool).await;
    let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
    for (host, ok) in [
        (HOST, true),
        ("CONSOLE.example.com:443", true),
        ("127.0.0.1:3000", true),
        ("localhost", true),
        ("rebind.attacker.example", false),
        ("console.example.com.attacker.example", false),
    ] {
        let answer = send(
            &app,
            Request::builder()
                .uri("/api/auth/me")
                .header(header::HOST, host)
                .extension(ConnectInfo(peer))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        if ok {
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{host}");
        } else {
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{host}");
            assert_eq!(answer.json()["error"], "invalid_request");
        }
    }
    // Probes answer any host.
    let probe = send(
        &app,
        Request::builder()
            .uri("/healthz")
            .header(header::HOST, "10.1.2.3:3000")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(probe.status, StatusCode::OK);
}

#[sqlx::test(migrations = false)]
async fn only_a_valid_bearer_token_skips_the_cross_site_guard(pool: SqlitePool) {
    let app = app(pool).await;
    let cross = |auth: Option<&str>| {
        let mut b = local(Method::POST, "/api/conversations")
            .header(header::ORIGIN, "https://evil.example")
            .header("sec-fetch-site", "cross-site");
        if let Some(a) = auth {
            b = b.header(header::AUTHORIZATION, a);
        }
        b.body(Body::empty()).unwrap()
    };
    for auth in [
        None,
        Some("Basic YWdlbnQ6YWdlbnQtcGFzcw=="),
        Some("Bearer wrong-token-000000"),
    ] {
        let answer = send(&app, cross(auth)).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{auth:?}");
        assert!(answer.json()["message"]
            .as_str()
            .unwrap()
            .contains("cross-site"));
    }
    let bearer = format!("Bearer {API_TOKEN}");
    assert_eq!(
        send(&app, cross(Some(&bearer))).await.status,
        StatusCode::CREATED
    );
    // The configured origin passes; another one does not, even same-site.
    let cookie = sign_in(&app, "agent", "agent-pass").await;
    let ok = send(
        &app,
        with_cookie(local(Method::POST, "/api/conversations"), &cookie)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(ok.status, StatusCode::CREATED);
    let other = send(
        &app,
        local(Method::POST, "/api/conversations")
            .header(header::COOKIE, &cookie)
            .header(header::ORIGIN, "https://console.example.com.evil.example")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    // A proxy's Basic header does not hide the session cookie.
    let me = send(
        &app,
        local(Method::GET, "/api/auth/me")
            .header(header::COOKIE, &cookie)
            .header(header::AUTHORIZATION, "Basic cHJveHk6cHJveHk=")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
}

#[sqlx::test(migrations = false)]
async fn control_characters_are_a_400_everywhere(pool: SqlitePool) {
    let app = app(pool).await;
    let cookie = sign_in(&app, "supervisor", "supervisor-pass").await;
    let bearer = format!("Bearer {API_TOKEN}");
    let cases: Vec<(Request<Body>, &str)> = vec![
        (
            json_body(
                local(Method::POST, "/api/auth/login"),
                json!({"username": "agent\u{0}", "password": "agent-pass"}),
            ),
            "username",
        ),
        (
            json_body(
                local(Method::POST, "/api/chat").header(header::AUTHORIZATION, &bearer),
                json!({"sessionId": "nul-test", "message": "where is\u{0} ORD-123"}),
            ),
            "message",
        ),
        (
            json_body(
                local(Method::POST, "/api/conversations/nul-test/messages")
                    .header(header::AUTHORIZATION, &bearer),
                json!({"message": "bell \u{7} in the text"}),
            ),
            "message (BEL)",
        ),
        (
            json_body(
                with_cookie(
                    local(Method::POST, "/api/approvals/call_x/decision"),
                    &cookie,
                ),
                json!({"approve": false, "reason": "no\u{0}"}),
            ),
            "reason",
        ),
        (
            json_body(
                with_cookie(
                    local(Method::POST, "/api/approvals/call_x/decision"),
                    &cookie,
                ),
                json!({"approve": true, "args": {"summary": "x\u{1b}[2J"}}),
            ),
            "arguments",
        ),
        (
            with_cookie(local(Method::POST, "/fn/login"), "")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from("username=agent%00&password=agent-pass"))
                .unwrap(),
            "server-function form",
        ),
        (
            local(Method::GET, "/api/audit?actor=a%00b")
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
            "query",
        ),
        (
            local(Method::GET, "/api/accounts/a%00b")
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
            "path",
        ),
    ];
    for (request, what) in cases {
        let answer = send(&app, request).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{what}: {}",
            answer.text
        );
        assert!(
            answer.text.contains("control character"),
            "{what}: {}",
            answer.text
        );
    }
    // Tabs and line breaks are text.
    let ok = send(
        &app,
        json_body(
            local(Method::POST, "/api/conversations/nul-test/messages")
                .header(header::AUTHORIZATION, &bearer),
            json!({"message": "line one\nline two\ttabbed"}),
        ),
    )
    .await;
    assert_eq!(ok.status, StatusCode::ACCEPTED, "{}", ok.text);
}

#[sqlx::test(migrations = false)]
async fn sign_in_throttle_over_http(pool: SqlitePool) {
    let config = ConsoleConfig {
        throttle: ThrottlePolicy {
            user_free: 2,
            user_lock_after: 3,
            addr_free: 4,
            addr_lock_after: 6,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            lock_for: Duration::from_secs(60),
            ..ThrottlePolicy::default()
        },
        ..https_config()
    };
    let app = app_with(pool, config, https_web()).await;
    let login = |username: &str, password: &str, peer: &str, xff: Option<&str>| {
        let mut b = req(Method::POST, "/api/auth/login", peer);
        if let Some(xff) = xff {
            b = b.header("x-forwarded-for", xff);
        }
        json_body(b, json!({"username": username, "password": password}))
    };
    for _ in 0..3 {
        let a = send(
            &app,
            login("agent", "wrong", "10.0.0.1:1", Some("203.0.113.7")),
        )
        .await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.text);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let locked = send(
        &app,
        login("agent", "agent-pass", "10.0.0.1:1", Some("203.0.113.7")),
    )
    .await;
    assert_eq!(locked.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = locked.header("retry-after").parse().unwrap();
    assert!((55..=60).contains(&retry), "{retry}");
    assert_eq!(locked.json()["error"], "too_many_requests");
    assert!(
        locked.json()["message"]
            .as_str()
            .unwrap()
            .contains("Try again")
            || locked.text.contains("Wait")
    );

    // The proxy's X-Forwarded-For names the address: other clients behind
    // it are counted apart. A stranger's X-Forwarded-For is ignored.
    for i in 0..6 {
        let a = send(
            &app,
            login(
                &format!("ghost{i}"),
                "x",
                "198.51.100.9:1",
                Some("192.0.2.50"),
            ),
        )
        .await;
        assert!(matches!(a.status.as_u16(), 401 | 429), "{}", a.text);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    // 198.51.100.9 (not a proxy) is now locked, whatever it claims.
    let stranger = send(
        &app,
        login(
            "supervisor",
            "supervisor-pass",
            "198.51.100.9:1",
            Some("192.0.2.51"),
        ),
    )
    .await;
    assert_eq!(stranger.status, StatusCode::TOO_MANY_REQUESTS);
    // Through the proxy, 192.0.2.50 was never counted.
    let via_proxy = send(
        &app,
        login(
            "supervisor",
            "supervisor-pass",
            "10.0.0.1:1",
            Some("192.0.2.50"),
        ),
    )
    .await;
    assert_eq!(via_proxy.status, StatusCode::OK, "{}", via_proxy.text);
}

#[sqlx::test(migrations = false)]
async fn accounts_and_audit_routes(pool: SqlitePool) {
    let app = app(pool).await;
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let boss = sign_in(&app, "supervisor", "supervisor-pass").await;
    for (method, path) in [
        (Method::GET, "/api/accounts"),
        (Method::POST, "/api/accounts"),
        (Method::POST, "/api/accounts/supervisor/disable"),
        (Method::POST, "/api/accounts/supervisor/password-reset"),
        (Method::GET, "/api/audit"),
        (Method::GET, "/api/audit.csv"),
    ] {
        let answer = send(
            &app,
            json_body(
                with_cookie(local(method.clone(), path), &agent),
                json!({"username": "x1", "role": "agent"}),
            ),
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{method} {path}: {}",
            answer.text
        );
    }
    let created = send(
        &app,
        json_body(
            with_cookie(local(Method::POST, "/api/accounts"), &boss),
            json!({"username": "erin", "role": "agent"}),
        ),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let password = created.json()["password"].as_str().unwrap().to_owned();
    let erin = sign_in(&app, "erin", &password).await;
    let changed = send(
        &app,
        json_body(
            with_cookie(local(Method::POST, "/api/auth/password"), &erin),
            json!({"currentPassword": password, "newPassword": "erin's own long phrase"}),
        ),
    )
    .await;
    assert_eq!(changed.status, StatusCode::NO_CONTENT, "{}", changed.text);
    let disabled = send(
        &app,
        with_cookie(local(Method::POST, "/api/accounts/erin/disable"), &boss)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(disabled.json()["disabled"], true);
    let me = send(
        &app,
        with_cookie(local(Method::GET, "/api/auth/me"), &erin)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(
        me.status,
        StatusCode::UNAUTHORIZED,
        "a disabled user's session ended"
    );
    let csv = send(
        &app,
        with_cookie(local(Method::GET, "/api/audit.csv"), &boss)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert!(csv.header("content-type").starts_with("text/csv"));
    assert!(csv.header("content-disposition").starts_with("attachment"));
    assert_eq!(csv.header("cache-control"), "no-store");
    assert!(csv
        .text
        .starts_with("id,at,actor,action,subject,detail\r\n"));
    for action in [
        "account.create",
        "account.password_change",
        "account.disable",
    ] {
        assert!(csv.text.contains(action), "{action} missing: {}", csv.text);
    }
    let everywhere = send(
        &app,
        with_cookie(local(Method::POST, "/api/auth/logout-all"), &boss)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(everywhere.status, StatusCode::NO_CONTENT);
    assert!(everywhere.header("set-cookie").contains("Max-Age=0"));
}

#[sqlx::test(migrations = false)]
async fn event_streams_are_capped_per_user(pool: SqlitePool) {
    let config = ConsoleConfig {
        streams_per_user: 2,
        ..https_config()
    };
    let app = app_with(pool, config, https_web()).await;
    let cookie = sign_in(&app, "agent", "agent-pass").await;
    let open = || {
        with_cookie(local(Method::GET, "/api/approvals/events"), &cookie)
            .body(Body::empty())
            .unwrap()
    };
    let first = app.router.clone().oneshot(open()).await.unwrap();
    let second = app.router.clone().oneshot(open()).await.unwrap();
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    let third = send(&app, open()).await;
    assert_eq!(
        third.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        third.text
    );
    assert!(third.headers.contains_key("retry-after"));
    drop(first);
    let again = app.router.clone().oneshot(open()).await.unwrap();
    assert_eq!(
        again.status(),
        StatusCode::OK,
        "a closed stream frees its place"
    );
    drop((second, again));
}

#[sqlx::test(migrations = false)]
async fn metrics_access_and_label_folding(pool: SqlitePool) {
    let app = app(pool).await;
    // Unknown methods become `other`.
    send(
        &app,
        local(Method::from_bytes(b"BREWCOFFEE").unwrap(), "/healthz")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let metrics = send(
        &app,
        local(Method::GET, "/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics.text.contains("method=\"other\""),
        "{}",
        metrics.text
    );
    assert!(!metrics.text.contains("BREWCOFFEE"));
    // Loopback only by default: not from elsewhere, not through a proxy.
    let remote = send(
        &app,
        req(Method::GET, "/metrics", "192.0.2.9:1")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(remote.status, StatusCode::NOT_FOUND);
    let proxied = send(
        &app,
        local(Method::GET, "/metrics")
            .header("x-forwarded-for", "192.0.2.9")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(proxied.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrations = false)]
async fn metrics_by_token(pool: SqlitePool) {
    let web = WebConfig {
        metrics: MetricsAccess::Token(aics_db::tokens::hash_token("scrape-token-0123456789")),
        ..https_web()
    };
    let app = app_with(pool, https_config(), web).await;
    let without = send(
        &app,
        local(Method::GET, "/metrics").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(
        without.status,
        StatusCode::NOT_FOUND,
        "loopback is not enough"
    );
    let with = send(
        &app,
        req(Method::GET, "/metrics", "192.0.2.9:1")
            .header(header::AUTHORIZATION, "Bearer scrape-token-0123456789")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(with.status, StatusCode::OK);
}

/// A client that sends half a request line and then nothing is cut off
/// after the header-read timeout, while a well-behaved one is served.
#[sqlx::test(migrations = false)]
async fn slow_headers_are_cut_off(pool: SqlitePool) {
    let app = app_with(pool, https_config(), https_web()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = aics::serve::ServeLimits {
        header_read_timeout: Duration::from_millis(500),
        ..aics::serve::ServeLimits::default()
    };
    tokio::spawn(aics::serve::serve(
        listener,
        app.router.clone(),
        limits,
        std::future::pending(),
    ));
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "the server closed the slow connection");
    let ok = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

#[sqlx::test(migrations = false)]
async fn the_approvals_export_is_for_supervisors(pool: SqlitePool) {
    let app = app(pool).await;
    let agent = sign_in(&app, "agent", "agent-pass").await;
    let boss = sign_in(&app, "supervisor", "supervisor-pass").await;
    let get = |path: &'static str, cookie: &str| {
        with_cookie(local(Method::GET, path), cookie)
            .body(Body::empty())
            .unwrap()
    };
    let refused = send(&app, get("/api/approvals/export.csv", &agent)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    let csv = send(
        &app,
        get(
            "/api/approvals/export.csv?status=expired&from=2026-12-01",
            &boss,
        ),
    )
    .await;
    assert_eq!(csv.status, StatusCode::OK, "{}", csv.text);
    assert!(csv.header("content-type").starts_with("text/csv"));
    assert!(csv.header("content-disposition").starts_with("attachment"));
    assert!(csv
        .text
        .starts_with("id,decidedAt,status,decidedBy,tool,rule,"));
    // The page's form sends the filters left open as empty fields.
    let form = send(
        &app,
        get("/api/approvals/export.csv?status=&from=&to=", &boss),
    )
    .await;
    assert_eq!(form.status, StatusCode::OK, "{}", form.text);
    let bad = send(&app, get("/api/approvals/export.csv?status=pending", &boss)).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    let unknown = send(&app, get("/api/approvals/export.csv?colour=red", &boss)).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.text);
}
