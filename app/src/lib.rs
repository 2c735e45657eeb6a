//! The aics console: Leptos pages and components, rendered on the server and
//! hydrated in the browser.
//!
//! # Layout
//! - [`shell`] and [`App`] (this file): the HTML document and the router.
//! - [`pages`]: a folder per page, each with its components and the server
//!   functions only it calls (`api.rs`):
//!   - [`pages::console`]: `/` and `/c/{id}`, the chat console: conversation
//!     list, transcript with the streaming reply, composer, inline approvals,
//!     tool timeline and trace; its live state is a plain reducer
//!     ([`pages::console::state`]).
//!   - [`pages::approvals`]: `/approvals`, the supervisors' live queue and
//!     the record of decisions.
//!   - [`pages::turn`]: `/turns/{id}`, one turn's step history: its path,
//!     each step's state diff, LLM calls and tool calls, live.
//!   - [`pages::overview`]: `/overview`, the supervisors' charts.
//!   - [`pages::replays`]: `/replays`, the supervisors' replay sets, their
//!     replay runs and each run's summary of what changed.
//!   - [`pages::chat`]: `/chat` and `/chat/{token}`, the customer's side
//!     (no staff navigation; frameable by the widget).
//!   - [`pages::login`]: `/login`, the sign-in form.
//!   - [`pages::account`]: `/account`, one's own password and sessions.
//!   - [`pages::accounts`]: `/accounts`, the supervisors' named accounts
//!     and the audit log.
//! - [`lazy_pages`]: the pages that are lazy routes (all but the console):
//!   their code is a wasm chunk of its own, fetched when the page is first
//!   shown.
//! - [`components`]: the UI atoms every page shares, defined once: icons
//!   (inline SVG), labels, the live dot, errors, JSON blocks, the tool
//!   timeline, the trace panel, the page frame.
//! - [`session`]: who is signed in, the guard that sends signed-out visitors
//!   to `/login`, and the shared server functions (`whoami`, `logout`).
//! - [`error`]: [`error::AppError`], what every server function fails with.
//! - [`call`]: [`call::Call`], a server function called from the page, its
//!   answer and whether a call is on its way.
//! - [`sse`]: the browser's live connection to an event stream (hydrate only).
//! - [`wire`]: [`wire::JsonStr`], how every server function's answer travels
//!   (JSON, decoded from text like everything else the browser decodes),
//!   and [`wire::resource`], the resources that hydrate the same way.
//! - [`remote`]: [`remote::Remote`], the protocol every server function
//!   speaks (`#[server(prefix = "/fn", protocol = UrlArgs)]`).
//!
//! Server functions are thin: authenticate the request, then one call into
//! `aics_service::Console`. They are mounted by the server under `/fn/`.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]
// Leptos views are deeply nested types; the release wasm build (opt-level z,
// LTO) computes their layouts past rustc's default query depth of 128.
#![recursion_limit = "256"]

pub mod call;
pub mod components;
pub mod error;
pub mod lazy_pages;
pub mod pages;
pub mod remote;
pub mod session;
pub mod sse;
pub mod wire;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{Lazy, ParamSegment, SsrMode, StaticSegment};

/// The HTML document every page is rendered into.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en" class="h-full">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" type="image/svg+xml" href="/favicon.svg"/>
                // Content-hashed names in a release build (server/src/assets.rs).
                <HashedStylesheet options=options.clone() id="leptos"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body class="h-full bg-slate-100 text-slate-900 antialiased">
                <App/>
            </body>
        </html>
    }
}

/// The console's routes. Pages that need a user render through
/// [`session::Authed`]; they wait for their data on the server (`SsrMode::Async`)
/// so that a reload renders everything and a signed-out visitor gets a real
/// redirect.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Who is signed in: fetched once per page load, shared by every page.
    session::SessionResource::provide();
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <Title text="aics — AI customer support"/>
        <div id="app" class="min-h-full" data-hydrated=move || hydrated.get().to_string()>
            <Router>
                <Routes fallback=|| view! { <NotFound/> }>
                    <Route path=StaticSegment("login") view={Lazy::<lazy_pages::LoginRoute>::new()} ssr=SsrMode::Async/>
                    <Route path=StaticSegment("") view=pages::console::ConsolePage ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("c"), ParamSegment("id"))
                        view=pages::console::ConsolePage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("approvals")
                        view={Lazy::<lazy_pages::ApprovalsRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("account")
                        view={Lazy::<lazy_pages::AccountRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("accounts")
                        view={Lazy::<lazy_pages::AccountsRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route path=StaticSegment("chat") view={Lazy::<lazy_pages::ChatStartRoute>::new()} ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("chat"), ParamSegment("token"))
                        view={Lazy::<lazy_pages::CustomerChatRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("overview")
                        view={Lazy::<lazy_pages::OverviewRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("replays")
                        view={Lazy::<lazy_pages::ReplaysRoute>::new()}
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=(StaticSegment("turns"), ParamSegment("id"))
                        view={Lazy::<lazy_pages::TurnRoute>::new()}
                        ssr=SsrMode::Async
                    />
                </Routes>
            </Router>
        </div>
    }
}

#[component]
fn NotFound() -> impl IntoView {
    view! {
        <main class="mx-auto max-w-md p-10 text-center">
            <h1 class="text-xl font-semibold">"Page not found"</h1>
            <a class="mt-4 inline-block text-indigo-600 hover:underline" href="/">
                "Back to the console"
            </a>
        </main>
    }
}
