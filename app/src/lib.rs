//! The aics console: Leptos pages and components, rendered on the server and
//! hydrated in the browser.
//!
//! # Layout
//! - [`shell`] and [`App`]: the HTML document and the router.
//! - [`chat`]: the chat console, where replies stream in token by token.
//! - [`sse`]: the browser's live connection to a conversation's event stream
//!   (hydrate only).
#![forbid(unsafe_code)]

pub mod chat;
pub mod sse;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::StaticSegment;

/// The HTML document every page is rendered into.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body class="h-full bg-slate-50 text-slate-900 antialiased">
                <App/>
            </body>
        </html>
    }
}

/// The console: header and routes.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/aics.css"/>
        <Title text="aics — AI customer support"/>
        <Router>
            <header class="flex items-center gap-3 border-b border-slate-200 bg-white px-6 py-3">
                <span class="text-lg font-semibold tracking-tight">"aics"</span>
                <span class="text-sm text-slate-500">"AI customer-support console"</span>
            </header>
            <main class="mx-auto max-w-5xl p-6">
                <Routes fallback=|| view! { <p>"Page not found."</p> }>
                    <Route path=StaticSegment("") view=chat::ChatPage/>
                </Routes>
            </main>
        </Router>
    }
}
