//! The password the server just generated for someone else, shown once:
//! it is stored only as a hash, so closing this panel loses it.

use aics_types::IssuedPassword;
use leptos::prelude::*;

#[component]
pub fn IssuedPanel(
    issued: IssuedPassword,
    on_close: impl Fn() + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <div role="status" data-testid="issued-password-panel" class="rounded-2xl border border-emerald-200 bg-emerald-50 p-4 text-sm text-emerald-900">
            <p class="mb-2">
                "The password of " <strong data-testid="issued-username">{issued.username.clone()}</strong>
                " — give it to them now; it is not shown again. They are asked to choose their own after signing in."
            </p>
            <code data-testid="issued-password" class="select-all rounded bg-white px-2 py-1 font-mono text-base">{issued.password.clone()}</code>
            <button type="button" class="ml-3 rounded-md border border-emerald-300 px-2 py-1 text-xs hover:bg-emerald-100" on:click=move |_| on_close()>
                "Done"
            </button>
        </div>
    }
}
