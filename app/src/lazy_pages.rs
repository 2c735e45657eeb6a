//! The pages the console's first load does not download: each is a Leptos
//! lazy route (`LazyRoute`), whose view the release build (`cargo leptos
//! build --split`) moves into a WASM chunk of its own, fetched when the page
//! is first shown (and preloaded by the server's `<link rel=preload>`
//! when it is the page being loaded). The console (`/`, `/c/{id}`) stays in
//! the main bundle; the sign-in form is a lazy route too, since a returning
//! user (signed in, on the console) never needs it.
//!
//! A page is made lazy here, not in its own folder: one unit struct, an
//! `impl LazyRoute` whose `view` awaits a `lazy_view!` (`components::lazy`)
//! rendering the page's component unchanged, and
//! `view={Lazy::<pages::X>::new()}` on its `<Route>` in `lib.rs`. Not
//! `#[lazy_route]`: its chunk that cannot be fetched (a console open across
//! a server update, then a click to another page) panics and stops the
//! page; here it shows what happened and a reload. The server renders the same HTML as before (the view is the same
//! component); the browser loads the chunk before it hydrates
//! (`leptos::mount::hydrate_lazy` in frontend/).

use leptos::prelude::*;
use leptos_router::LazyRoute;

use crate::components::lazy::{lazy_view, page_or_reload};
use crate::pages;

/// `/login`.
pub struct LoginRoute;

impl LazyRoute for LoginRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_login_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(login_page().await)
    }
}

lazy_view! {
    fn login_page() preload load_login_page {
        view! { <pages::login::LoginPage/> }
    }
}

/// `/approvals`.
pub struct ApprovalsRoute;

impl LazyRoute for ApprovalsRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_approvals_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(approvals_page().await)
    }
}

lazy_view! {
    fn approvals_page() preload load_approvals_page {
        view! { <pages::approvals::ApprovalsPage/> }
    }
}

/// `/account`.
pub struct AccountRoute;

impl LazyRoute for AccountRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_account_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(account_page().await)
    }
}

lazy_view! {
    fn account_page() preload load_account_page {
        view! { <pages::account::AccountPage/> }
    }
}

/// `/accounts`.
pub struct AccountsRoute;

impl LazyRoute for AccountsRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_accounts_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(accounts_page().await)
    }
}

lazy_view! {
    fn accounts_page() preload load_accounts_page {
        view! { <pages::accounts::AccountsPage/> }
    }
}

/// `/chat`.
pub struct ChatStartRoute;

impl LazyRoute for ChatStartRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_chat_start_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(chat_start_page().await)
    }
}

lazy_view! {
    fn chat_start_page() preload load_chat_start_page {
        view! { <pages::chat::ChatStartPage/> }
    }
}

/// `/chat/{token}`.
pub struct CustomerChatRoute;

impl LazyRoute for CustomerChatRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_customer_chat_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(customer_chat_page().await)
    }
}

lazy_view! {
    fn customer_chat_page() preload load_customer_chat_page {
        view! { <pages::chat::CustomerChatPage/> }
    }
}

/// `/overview`.
pub struct OverviewRoute;

impl LazyRoute for OverviewRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_overview_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(overview_page().await)
    }
}

lazy_view! {
    fn overview_page() preload load_overview_page {
        view! { <pages::overview::OverviewPage/> }
    }
}

/// `/turns/{id}`.
pub struct TurnRoute;

impl LazyRoute for TurnRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_turn_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(turn_page().await)
    }
}

lazy_view! {
    fn turn_page() preload load_turn_page {
        view! { <pages::turn::TurnPage/> }
    }
}

/// `/replays`.
pub struct ReplaysRoute;

impl LazyRoute for ReplaysRoute {
    fn data() -> Self {
        Self
    }

    async fn preload() {
        // A failure shows in `view`, which tries again.
        let _ = load_replays_page().await;
    }

    async fn view(_this: Self) -> AnyView {
        page_or_reload(replays_page().await)
    }
}

lazy_view! {
    fn replays_page() preload load_replays_page {
        view! { <pages::replays::ReplaysPage/> }
    }
}
