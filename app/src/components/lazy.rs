//! Rarely used parts of a page that is always loaded (the console's inline
//! approval cards, its cancel-turn form, the customer link's minting): code
//! the release build (`cargo leptos build --split`) moves into a wasm chunk
//! of its own, fetched the first time the browser draws the part.
//!
//! [`lazy_view!`] declares such a part as an `async fn` returning its
//! `AnyView`. A part is drawn only by the browser, after mount or a click,
//! in a `Suspense` the browser creates: the server renders nothing there,
//! because a lazy view hydrated from the server's HTML loses its state.
//! The lazy routes (`crate::lazy_pages`) are declared with it too.
//!
//! Unlike `#[leptos::lazy]`, whose failed fetch panics (and a panic stops
//! the whole wasm), a chunk that cannot be fetched is an `Err`, shown as
//! [`LoadFailed`]: the usual cause is a console left open across an update
//! of the server, whose new chunks have new names.

use leptos::prelude::*;

/// Why a lazy part is missing: its chunk could not be fetched.
pub use leptos::wasm_split::SplitLoaderError as ChunkError;

/// `lazy_view! { fn name(arg: Type, …) { view! { … } } }` declares
/// `async fn name(arg: Type, …) -> Result<AnyView, ChunkError>`. In the
/// browser it is a split point (its body and what only it uses go into the
/// chunk `split_name`); on the server a plain function that asks the page
/// to preload that chunk (`<link rel=preload>`), for the lazy routes the
/// server renders (`crate::lazy_pages`).
///
/// `lazy_view! { fn name() preload load_name { … } }` also declares
/// `async fn load_name() -> Result<(), ChunkError>`, which fetches the
/// chunk without drawing anything (on the server it does nothing). A lazy
/// route needs it: the router awaits its `preload` before the page
/// hydrates, and `name` must then complete at once.
macro_rules! lazy_view {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $crate::components::lazy::lazy_view!(@browser [] $(#[$attr])* fn $name($($arg: $ty),*) $body);
        $crate::components::lazy::lazy_view!(@server $(#[$attr])* fn $name($($arg: $ty),*) $body);
    };
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) preload $load:ident $body:block) => {
        $crate::components::lazy::lazy_view!(@browser [, preload($load)] $(#[$attr])* fn $name($($arg: $ty),*) $body);
        #[cfg(not(feature = "hydrate"))]
        async fn $load() -> Result<(), $crate::components::lazy::ChunkError> {
            Ok(())
        }
        $crate::components::lazy::lazy_view!(@server $(#[$attr])* fn $name($($arg: $ty),*) $body);
    };
    (@browser [$($option:tt)*] $(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$attr])*
        #[cfg(feature = "hydrate")]
        #[::leptos::wasm_split::wasm_split($name, wasm_split_path = ::leptos::wasm_split, fallible $($option)*)]
        fn $name($($arg: $ty),*) -> Result<::leptos::prelude::AnyView, $crate::components::lazy::ChunkError> {
            Ok(::leptos::prelude::IntoAny::into_any($body))
        }
    };
    (@server $(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$attr])*
        #[cfg(not(feature = "hydrate"))]
        async fn $name($($arg: $ty),*) -> Result<::leptos::prelude::AnyView, $crate::components::lazy::ChunkError> {
            // The page the server renders with it preloads its chunk.
            ::leptos::prefetch_lazy_fn_on_server(stringify!($name));
            Ok(::leptos::prelude::IntoAny::into_any($body))
        }
    };
}
pub(crate) use lazy_view;

/// In place of a part whose chunk could not be fetched: what is missing
/// and a way to get it back.
#[component]
pub fn LoadFailed(
    /// What the part does, as the end of "… could not be loaded".
    what: &'static str,
) -> impl IntoView {
    view! {
        <span role="alert" data-testid="lazy-load-failed" class="text-xs text-red-700">
            {what}
            " could not be loaded (the server may have been updated since this page opened). "
            <button
                type="button"
                class="font-medium underline"
                on:click=|_| {
                    #[cfg(feature = "hydrate")]
                    if let Some(w) = web_sys::window() {
                        let _ = w.location().reload();
                    }
                }
            >
                "Reload the page"
            </button>
        </span>
    }
}

/// A lazy part's view, or [`LoadFailed`] in its place.
pub fn part_or_alert(part: Result<AnyView, ChunkError>, what: &'static str) -> AnyView {
    part.unwrap_or_else(|_| view! { <LoadFailed what/> }.into_any())
}

/// A lazy route's page, or, when its chunk could not be fetched, what
/// happened and a reload in its place.
pub fn page_or_reload(page: Result<AnyView, ChunkError>) -> AnyView {
    page.unwrap_or_else(|_| {
        view! {
            <main class="mx-auto max-w-xl p-8">
                <LoadFailed what="This page"/>
            </main>
        }
        .into_any()
    })
}
