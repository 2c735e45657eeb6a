//! `<ServerForm>`: a form that posts to a server function, as Leptos's
//! `<ActionForm>` does — a plain `POST` to the function's URL before the
//! page's script runs, the action dispatched without a reload after — but
//! with the function's arguments read from the form by the page itself.
//! `<ActionForm>` decodes them from the form data with `serde_qs`; that
//! decoder and the form machinery around it were 55 KB of the main wasm
//! (17 KB brotli) for the sign-out button, "New" and the sign-in form
//! (BENCHMARKS.md "Client bundle"). Every form of the console uses this one.

use leptos::prelude::*;
use leptos::server_fn::error::FromServerFnError;
use leptos::server_fn::ServerFn;

use crate::call::Call;

/// A `<form method="post">` to `S`'s URL; on submit (once hydrated) it
/// calls `action` with the arguments `input` reads from the form.
#[component]
pub fn ServerForm<S>(
    action: Call<S>,
    /// The server function's arguments, read from the submitted form.
    input: fn(&web_sys::HtmlFormElement) -> S,
    children: Children,
) -> impl IntoView
where
    S: ServerFn + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: FromServerFnError + Send + Sync + 'static,
{
    let on_submit = move |ev: web_sys::SubmitEvent| {
        if ev.default_prevented() {
            return;
        }
        ev.prevent_default();
        action.dispatch(input(&event_target(&ev)));
    };
    view! {
        <form action=S::url() method="post" on:submit=on_submit>
            {children()}
        </form>
    }
}

/// The text of the form's field `name` (empty when it has none).
pub fn field(form: &web_sys::HtmlFormElement, name: &str) -> String {
    web_sys::FormData::new_with_form(form)
        .ok()
        .and_then(|data| data.get(name).as_string())
        .unwrap_or_default()
}
