//! How a page says it is loading, or that something failed.

use leptos::prelude::*;

use crate::components::icons::{Icon, IconKind};

/// The fallback of an `ErrorBoundary`: its errors as one alert.
#[component]
pub fn ErrorList(
    errors: ArcRwSignal<Errors>,
    /// Placement and spacing; the colours are the alert's own.
    #[prop(optional)]
    class: &'static str,
) -> impl IntoView {
    view! {
        <div
            role="alert"
            class=format!(
                "flex items-start gap-2 rounded-xl border border-red-200 bg-red-50 p-4 text-sm text-red-800 {class}",
            )
        >
            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0 text-red-600"/>
            <span>
                {move || {
                    errors
                        .get()
                        .into_iter()
                        .map(|(_, e)| e.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                }}
            </span>
        </div>
    }
}

/// A page that could not load.
#[component]
pub fn PageError(message: String) -> impl IntoView {
    view! {
        <div
            role="alert"
            class="mx-auto mt-10 flex max-w-lg items-start gap-2 rounded-xl border border-red-200 bg-red-50 p-4 text-sm text-red-800"
        >
            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0 text-red-600"/>
            <span>{message}</span>
        </div>
    }
}

/// A page waiting for its data.
#[component]
pub fn PageLoading() -> impl IntoView {
    view! {
        <div class="flex min-h-[50vh] items-center justify-center text-sm text-slate-500">
            "Loading…"
        </div>
    }
}
