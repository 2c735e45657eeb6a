//! The pages the console's first load does not download: each is a Leptos
//! lazy route (`LazyRoute`), whose view the release build (`cargo leptos
//! build --split`) moves into a WASM chunk of its own, fetched when the page
//! is first shown (and preloaded by the server's `<link rel=modulepreload>`
//! when it is the page being loaded). The console (`/`, `/c/{id}`) stays in
//! the main bundle; the sign-in form is a lazy route too, since a returning
//! user (signed in, on the console) never needs it.
//!
//! A page is made lazy here, not in its own folder: one unit struct, one
//! `#[lazy_route] impl LazyRoute` whose `view` renders the page's component
//! unchanged, and `view={Lazy::<pages::X>::new()}` on its `<Route>` in
//! `lib.rs`. The server renders the same HTML as before (the view is the same
//! component); the browser loads the chunk before it hydrates
//! (`leptos::mount::hydrate_lazy` in frontend/).

use leptos::prelude::*;
use leptos_router::{lazy_route, LazyRoute};

use crate::pages;

/// `/login`.
pub struct LoginRoute;

#[lazy_route]
impl LazyRoute for LoginRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::login::LoginPage/> }.into_any()
    }
}

/// `/approvals`.
pub struct ApprovalsRoute;

#[lazy_route]
impl LazyRoute for ApprovalsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::approvals::ApprovalsPage/> }.into_any()
    }
}

/// `/account`.
pub struct AccountRoute;

#[lazy_route]
impl LazyRoute for AccountRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::account::AccountPage/> }.into_any()
    }
}

/// `/accounts`.
pub struct AccountsRoute;

#[lazy_route]
impl LazyRoute for AccountsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::accounts::AccountsPage/> }.into_any()
    }
}

/// `/chat`.
pub struct ChatStartRoute;

#[lazy_route]
impl LazyRoute for ChatStartRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::chat::ChatStartPage/> }.into_any()
    }
}

/// `/chat/{token}`.
pub struct CustomerChatRoute;

#[lazy_route]
impl LazyRoute for CustomerChatRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::chat::CustomerChatPage/> }.into_any()
    }
}

/// `/overview`.
pub struct OverviewRoute;

#[lazy_route]
impl LazyRoute for OverviewRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::overview::OverviewPage/> }.into_any()
    }
}

/// `/turns/{id}`.
pub struct TurnRoute;

#[lazy_route]
impl LazyRoute for TurnRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::turn::TurnPage/> }.into_any()
    }
}

/// `/replays`.
pub struct ReplaysRoute;

#[lazy_route]
impl LazyRoute for ReplaysRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <pages::replays::ReplaysPage/> }.into_any()
    }
}
