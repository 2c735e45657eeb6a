//! The aics console: Leptos pages and components, rendered on the server and
//! hydrated in the browser.
//!
//! # Layout
//! - [`shell`] and [`App`]: the HTML document and the router.
//! - [`api`]: the server functions (thin calls into `aics_service::Console`).
//! - [`auth`]: the sign-in page, the header, and the guard that sends
//!   signed-out visitors to `/login`.
//! - [`chat`]: the chat console: conversation list, streaming reply, composer,
//!   inline approvals.
//! - [`timeline`]: the tool-call timeline, the trace panel and JSON blocks.
//! - [`approvals`]: the supervisors' live approval queue.
//! - [`turns`]: one turn's step history (its checkpoints).
//! - [`sse`]: the browser's live connection to an event stream (hydrate only).
#![forbid(unsafe_code)]
// Leptos views are deeply nested types; the release wasm build (opt-level z,
// LTO) computes their layouts past rustc's default query depth of 128.
#![recursion_limit = "256"]

pub mod api;
pub mod approvals;
pub mod auth;
pub mod chat;
pub mod sse;
pub mod timeline;
pub mod turns;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::{ParamSegment, SsrMode, StaticSegment};

/// The HTML document every page is rendered into.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en" class="h-full">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" type="image/svg+xml" href="/favicon.svg"/>
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
/// [`auth::Authed`]; they wait for their data on the server (`SsrMode::Async`)
/// so that a reload renders everything and a signed-out visitor gets a real
/// redirect.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Who is signed in: fetched once per page load (sign-in and sign-out
    // reload the page), shared by every page through the context.
    provide_context(auth::SessionResource(Resource::new(
        || (),
        |_| api::whoami(),
    )));
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <Stylesheet id="leptos" href="/pkg/aics.css"/>
        <Title text="aics — AI customer support"/>
        <div id="app" class="min-h-full" data-hydrated=move || hydrated.get().to_string()>
            <Router>
                <Routes fallback=|| view! { <NotFound/> }>
                    <Route path=StaticSegment("login") view=auth::LoginPage ssr=SsrMode::Async/>
                    <Route path=StaticSegment("") view=chat::ConsolePage ssr=SsrMode::Async/>
                    <Route
                        path=(StaticSegment("c"), ParamSegment("id"))
                        view=chat::ConsolePage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=StaticSegment("approvals")
                        view=approvals::ApprovalsPage
                        ssr=SsrMode::Async
                    />
                    <Route
                        path=(StaticSegment("turns"), ParamSegment("id"))
                        view=turns::TurnPage
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
