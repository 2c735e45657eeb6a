//! The dot that says whether a page's live event stream is connected.

use leptos::prelude::*;

/// A green dot and `live` once connected; a pulsing grey dot and
/// "Connecting…" before.
#[component]
pub fn LiveDot(
    #[prop(into)] connected: Signal<bool>,
    /// What to say once connected ("Live", "Live queue").
    live: &'static str,
    #[prop(optional)] testid: &'static str,
) -> impl IntoView {
    view! {
        <span
            data-testid=(!testid.is_empty()).then_some(testid)
            data-connected=move || connected.get().to_string()
            class="flex items-center gap-1.5 text-xs text-slate-500"
        >
            <span
                aria-hidden="true"
                class=move || {
                    if connected.get() {
                        "h-2 w-2 rounded-full bg-emerald-500"
                    } else {
                        "h-2 w-2 animate-pulse rounded-full bg-slate-300"
                    }
                }
            ></span>
            {move || if connected.get() { live } else { "Connecting…" }}
        </span>
    }
}
