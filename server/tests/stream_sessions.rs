//! Event streams end with the session they were opened with: signing out,
//! a password change in another browser, the idle timeout, and a sign-out
//! on another instance sharing the database (noticed at the stream's next
//! check). The API token's streams belong to no session. Real HTTP to the
//! app served by `aics::serve`, in process, so that a session's idle
//! timeout can be seconds.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aics::serve::ServeLimits;
use aics::state::{AppState, Shared};
use aics_db::Database;
use aics_service::{Console, ConsoleConfig};
use leptos::config::LeptosOptions;
use reqwest::header::{AUTHORIZATION, COOKIE, ORIGIN, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::SqlitePool;
use tokio::sync::watch;

const API_TOKEN: &str = "test-api-token-0123456789";

/// One server: the app on a free loopback port.
struct Instance {
    base: String,
    client: reqwest::Client,
    _shutdown: watch::Sender<bool>,
}

async fn ready(pool: SqlitePool) -> Database {
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    db.ensure_default_accounts(Some("supervisor-pass"), Some("agent-pass"))
        .await
        .unwrap();
    db
}

async fn instance(db: Database, session_idle: Duration) -> Instance {
    let console = Console::new(
        db,
        ConsoleConfig {
            api_token: Some(API_TOKEN.into()),
            session_idle,
            ..ConsoleConfig::for_tests()
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
    let router = aics::app(state, aics::web::WebConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(aics::serve::serve(
        listener,
        router,
        ServeLimits::default(),
        std::future::pending(),
    ));
    Instance {
        base,
        client: reqwest::Client::new(),
        _shutdown: tx,
    }
}

impl Instance {
    /// A state-changing request from the console's own page.
    async fn post(&self, path: &str, cookie: &str, body: Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header(COOKIE, cookie)
            .header(ORIGIN, &self.base)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    /// Signs in; the `name=value` of the session cookie.
    async fn sign_in(&self, username: &str, password: &str) -> String {
        let answer = self
            .post(
                "/api/auth/login",
                "",
                json!({"username": username, "password": password}),
            )
            .await;
        assert_eq!(answer.status(), StatusCode::OK);
        let cookie = answer.headers()[SET_COOKIE].to_str().unwrap();
        cookie.split(';').next().unwrap().to_owned()
    }

    /// Opens an event stream with `credential`: a cookie, or `Bearer …`.
    async fn stream(&self, path: &str, credential: &str) -> reqwest::Response {
        let request = self.client.get(format!("{}{path}", self.base));
        let request = if credential.starts_with("Bearer ") {
            request.header(AUTHORIZATION, credential)
        } else {
            request.header(COOKIE, credential)
        };
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        response
    }
}

/// Reads the stream until it ends; whether that was within `within`.
async fn ends_within(stream: &mut reqwest::Response, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await
    .is_ok()
}

const EVENTS: &str = "/api/conversations/stream-sessions/events";
const APPROVALS: &str = "/api/approvals/events";

#[sqlx::test(migrations = false)]
async fn signing_out_ends_that_sessions_streams_only(pool: SqlitePool) {
    let server = instance(ready(pool).await, Duration::from_secs(1800)).await;
    let here = server.sign_in("agent", "agent-pass").await;
    let elsewhere = server.sign_in("agent", "agent-pass").await;
    let mut events = server.stream(EVENTS, &here).await;
    let mut approvals = server.stream(APPROVALS, &here).await;
    let mut other_browser = server.stream(EVENTS, &elsewhere).await;
    let mut script = server.stream(EVENTS, &format!("Bearer {API_TOKEN}")).await;

    let out = server.post("/api/auth/logout", &here, json!({})).await;
    assert_eq!(out.status(), StatusCode::NO_CONTENT);
    assert!(
        ends_within(&mut events, Duration::from_secs(3)).await,
        "the signed-out session's stream ended"
    );
    assert!(ends_within(&mut approvals, Duration::from_secs(3)).await);
    let (other, api) = tokio::join!(
        ends_within(&mut other_browser, Duration::from_secs(1)),
        ends_within(&mut script, Duration::from_secs(1)),
    );
    assert!(!other, "the user's other session keeps its stream");
    assert!(!api, "the API token's stream belongs to no session");
}

#[sqlx::test(migrations = false)]
async fn a_password_change_ends_the_other_sessions_streams(pool: SqlitePool) {
    let server = instance(ready(pool).await, Duration::from_secs(1800)).await;
    let stolen = server.sign_in("agent", "agent-pass").await;
    let mine = server.sign_in("agent", "agent-pass").await;
    let mut theirs = server.stream(EVENTS, &stolen).await;
    let mut ours = server.stream(APPROVALS, &mine).await;

    let changed = server
        .post(
            "/api/auth/password",
            &mine,
            json!({"currentPassword": "agent-pass", "newPassword": "a fresh one, long enough 42"}),
        )
        .await;
    assert_eq!(changed.status(), StatusCode::NO_CONTENT);
    assert!(
        ends_within(&mut theirs, Duration::from_secs(3)).await,
        "the other session's stream ended"
    );
    assert!(
        !ends_within(&mut ours, Duration::from_secs(1)).await,
        "the browser that changed it stays signed in, its stream open"
    );
}

#[sqlx::test(migrations = false)]
async fn an_idle_session_ends_its_streams(pool: SqlitePool) {
    // Idle after 3 s: its streams check it every 750 ms.
    let server = instance(ready(pool).await, Duration::from_secs(3)).await;
    let cookie = server.sign_in("agent", "agent-pass").await;
    let mut events = server.stream(EVENTS, &cookie).await;
    assert!(
        !ends_within(&mut events, Duration::from_secs(1)).await,
        "a live session's stream stays"
    );
    // Nothing else uses the session: the stream alone must not keep it.
    assert!(
        ends_within(&mut events, Duration::from_secs(6)).await,
        "the stream ended once its session idled out"
    );
}

#[sqlx::test(migrations = false)]
async fn a_sign_out_on_another_instance_ends_the_streams_here(pool: SqlitePool) {
    // Two instances on one database; an idle timeout of 20 s makes the
    // streams check their session every 5 s.
    let db = ready(pool).await;
    let idle = Duration::from_secs(20);
    let here = instance(db.clone(), idle).await;
    let there = instance(db, idle).await;
    let cookie = here.sign_in("agent", "agent-pass").await;
    let mut events = here.stream(EVENTS, &cookie).await;

    let out = there.post("/api/auth/logout", &cookie, json!({})).await;
    assert_eq!(out.status(), StatusCode::NO_CONTENT);
    assert!(
        ends_within(&mut events, Duration::from_secs(9)).await,
        "the stream here ended at its next check, well before the idle timeout"
    );
}
