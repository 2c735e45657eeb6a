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

/// A loaded `result`'s view: `ok`'s, or its error as the same alert as
/// [`ErrorList`]. Pages render a server function's answer with this rather
/// than an `ErrorBoundary`: the console hydrates asynchronously
/// (`hydrate_lazy`, for the lazy routes), and an `ErrorBoundary` there decides
/// between its children and its fallback before its children have thrown,
/// so a server-rendered error state failed to hydrate now and then.
pub fn or_alert<T, E, V>(
    result: Result<T, E>,
    class: &'static str,
    ok: impl FnOnce(T) -> V,
) -> AnyView
where
    E: std::fmt::Display,
    V: IntoView + 'static,
{
    match result {
        Ok(value) => ok(value).into_any(),
        Err(error) => view! { <ErrorAlert message=error.to_string() class/> }.into_any(),
    }
}

/// One error as an alert (the markup of [`ErrorList`]).
#[component]
pub fn ErrorAlert(
    message: String,
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
            <span>{message}</span>
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
