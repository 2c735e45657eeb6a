//! Pages rendered on the server, through the router (`oneshot`) on a
//! fresh SQLite database: what a page loads and carries for its
//! hydration.

#![allow(clippy::unwrap_used)]

mod common;

use aics_service::Console;
use aics_types::{ChatTurnTraceResult, Role, UserInfo};
use axum::http::{Method, StatusCode};
use axum::Router;
use common::oneshot::{call, page, router, sign_in};
use sqlx::SqlitePool;

const SUPERVISOR: &str = "supervisor";

/// The router, the supervisor's cookie and a turn of conversation
/// `session` the supervisor ran.
async fn with_a_turn(
    pool: SqlitePool,
    session: &str,
) -> (Router, Console, String, std::sync::Arc<ChatTurnTraceResult>) {
    let (app, console) = router(pool).await;
    let cookie = sign_in(&app, SUPERVISOR, "supervisor-pass").await;
    let turn = console
        .chat(&supervisor(), session, "Where is my order ORD-123?")
        .await
        .unwrap()
        .trace;
    (app, console, cookie, turn)
}

fn supervisor() -> UserInfo {
    UserInfo {
        username: SUPERVISOR.into(),
        role: Role::Supervisor,
    }
}

/// How many resources a page's hydration data carries.
fn resources(html: &str) -> usize {
    html.matches("__RESOLVED_RESOURCES[").count()
}

/// A conversation's page loads the signed-in user, the inbox and the
/// conversation, each once: a page drawn again while it waits for them
/// (Leptos walks a `Suspense`'s children more than once) must not load
/// them again, nor send them twice.
#[sqlx::test(migrations = false)]
async fn a_conversation_page_loads_each_thing_once(pool: SqlitePool) {
    let (app, _console, boss, _turn) = with_a_turn(pool, "page-1").await;
    // The duplicates depended on which load finished first: ask often.
    for _ in 0..30 {
        let (status, html) = page(&app, "/c/page-1", &boss).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("ORD-123"), "the conversation is drawn");
        assert_eq!(resources(&html), 3, "the user, the inbox, the conversation");
    }
    // Signed out: sent to sign in, and nothing of the conversation loaded.
    let (status, html) = page(&app, "/c/page-1", "").await;
    assert_eq!(status, StatusCode::FOUND, "{html}");
    assert_eq!(resources(&html), 1, "only the (absent) user");
    assert!(!html.contains("ORD-123"), "{html}");
}

/// Every page with data loads each thing once too: the user, then the
/// page's own data (the customer's chat included, which nobody signs in
/// to).
#[sqlx::test(migrations = false)]
async fn each_page_loads_each_thing_once(pool: SqlitePool) {
    let (app, console, boss, turn) = with_a_turn(pool, "page-2").await;
    let turn_page = format!("/turns/{}", turn.graph_execution_id);
    let link = console.chat_link(&supervisor(), "page-2").await.unwrap();
    let pages = [
        (link.path.as_str(), 2, "the user, the customer's chat"),
        (
            "/approvals",
            3,
            "the user, the pending and the decided approvals",
        ),
        ("/overview", 2, "the user, the overview"),
        (turn_page.as_str(), 2, "the user, the turn"),
        ("/replays", 2, "the user, the replay sets"),
        ("/accounts", 3, "the user, the accounts, the audit log"),
    ];
    for (path, loads, what) in pages {
        for _ in 0..10 {
            let (status, html) = page(&app, path, &boss).await;
            assert_eq!(status, StatusCode::OK, "{path}: {html}");
            assert_eq!(resources(&html), loads, "{path}: {what}");
        }
    }
}

/// `/` sends a user to the latest conversation, and makes one when there
/// is none: one, however the page's loads interleave.
#[sqlx::test(migrations = false)]
async fn the_console_opens_one_conversation(pool: SqlitePool) {
    let (app, _console) = router(pool).await;
    let boss = sign_in(&app, SUPERVISOR, "supervisor-pass").await;
    for _ in 0..30 {
        let (status, html) = page(&app, "/", &boss).await;
        assert_eq!(status, StatusCode::FOUND, "{html}");
        assert_eq!(resources(&html), 2, "the user, the conversation to open");
    }
    let (status, list, _) = call(&app, Method::GET, "/api/conversations", &boss, None).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
}
