//! The pages the console's first load does not download: each is a Leptos
//! lazy route (`LazyRoute`), whose view the release build (`cargo leptos
//! build --split`) moves into a WASM chunk of its own, fetched when the page
//! is first shown (and preloaded by the server's `<link rel=preload>`
//! when it is the page being loaded). The console (`/`, `/c/{id}`) stays in
//! the main bundle; the sign-in form is a lazy route too, since a returning
//! user (signed in, on the console) never needs it.
//!
//! A page is made lazy here, not in its own folder: one `lazy_page!` line
//! (a unit struct whose `impl LazyRoute` awaits a `lazy_view!` of
//! `components::lazy` rendering the page's component unchanged), and
//! `view={Lazy::<lazy_pages::XRoute>::new()}` on its `<Route>` in `lib.rs`.
//! Not `#[lazy_route]`: its chunk that cannot be fetched (a console open
//! across a server update, then a click to another page) panics and stops
//! the page; here it shows what happened and a reload. The server renders
//! the same HTML as before (the view is the same component); the browser
//! loads the chunk before it hydrates (the router awaits `preload`;
//! `leptos::mount::hydrate_lazy` in frontend/).

use leptos::prelude::*;
use leptos_router::LazyRoute;

use crate::components::lazy::{lazy_view, page_or_reload};
use crate::pages::{
    account::AccountPage,
    accounts::AccountsPage,
    approvals::ApprovalsPage,
    chat::{ChatStartPage, CustomerChatPage},
    login::LoginPage,
    overview::OverviewPage,
    replays::ReplaysPage,
    turn::TurnPage,
};

/// `lazy_page!(/// doc; XRoute => Page, split_name, load_name)`: the route
/// `XRoute`, its page's chunk `split_name` and the chunk's loader.
macro_rules! lazy_page {
    ($(#[$doc:meta])* $route:ident => $page:ident, $split:ident, $load:ident) => {
        $(#[$doc])*
        pub struct $route;

        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            async fn preload() {
                // A failure shows in `view`, which tries again.
                let _ = $load().await;
            }

            async fn view(_this: Self) -> AnyView {
                page_or_reload($split().await)
            }
        }

        lazy_view! {
            fn $split() preload $load {
                view! { <$page/> }
            }
        }
    };
}

lazy_page!(
    /// `/login`.
    LoginRoute => LoginPage, login_page, load_login_page
);
lazy_page!(
    /// `/approvals`.
    ApprovalsRoute => ApprovalsPage, approvals_page, load_approvals_page
);
lazy_page!(
    /// `/account`.
    AccountRoute => AccountPage, account_page, load_account_page
);
lazy_page!(
    /// `/accounts`.
    AccountsRoute => AccountsPage, accounts_page, load_accounts_page
);
lazy_page!(
    /// `/chat`.
    ChatStartRoute => ChatStartPage, chat_start_page, load_chat_start_page
);
lazy_page!(
    /// `/chat/{token}`.
    CustomerChatRoute => CustomerChatPage, customer_chat_page, load_customer_chat_page
);
lazy_page!(
    /// `/overview`.
    OverviewRoute => OverviewPage, overview_page, load_overview_page
);
lazy_page!(
    /// `/turns/{id}`.
    TurnRoute => TurnPage, turn_page, load_turn_page
);
lazy_page!(
    /// `/replays`.
    ReplaysRoute => ReplaysPage, replays_page, load_replays_page
);
