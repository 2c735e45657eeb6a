//! `/login`: the sign-in form. Signing in reloads the page at `/`, which
//! opens the most recent conversation.

pub mod api;

use leptos::prelude::*;
use leptos_router::components::Redirect;

use crate::call::Call;
use crate::components::errors::PageLoading;
use crate::components::icons::{Icon, IconKind};
use crate::components::server_form::{field, ServerForm};
use crate::session::{reload_to, SessionResource};
use crate::wire::ready;
use api::Login;

/// `/login`: the sign-in form; a signed-in visitor goes to the console.
#[component]
pub fn LoginPage() -> impl IntoView {
    let session = expect_context::<SessionResource>().0;
    view! {
        <Suspense fallback=|| view! { <PageLoading/> }>
            {move || Suspend::new(async move {
                match ready(session).await {
                    Ok(Some(_)) => view! { <Redirect path="/"/> }.into_any(),
                    _ => view! { <LoginForm/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn LoginForm() -> impl IntoView {
    let login = Call::<Login>::new();
    Effect::new(move |_| {
        if let Some(Ok(_)) = login.answer().get() {
            reload_to("/");
        }
    });
    let error = move || match login.answer().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };
    let pending = login.pending();
    view! {
        <main class="flex min-h-screen items-center justify-center bg-gradient-to-br from-slate-100 via-white to-indigo-50 p-4">
            <div class="w-full max-w-sm">
                <div class="mb-6 flex items-center gap-3">
                    <span
                        aria-hidden="true"
                        class="grid h-10 w-10 place-items-center rounded-xl bg-indigo-600 font-bold text-white"
                    >
                        "ai"
                    </span>
                    <div>
                        <h1 class="text-xl font-semibold tracking-tight">"Sign in to aics"</h1>
                        <p class="text-sm text-slate-500">"AI customer-support console"</p>
                    </div>
                </div>
                <ServerForm
                    action=login
                    input=|form| Login { username: field(form, "username"), password: field(form, "password") }
                    attr:class="space-y-4 rounded-2xl border border-slate-200 bg-white p-6 shadow-sm"
                >
                    <div>
                        <label for="username" class="mb-1 block text-sm font-medium text-slate-700">
                            "Username"
                        </label>
                        <input
                            id="username"
                            name="username"
                            data-testid="login-username"
                            autocomplete="username"
                            required
                            autofocus
                            class="w-full rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                        />
                    </div>
                    <div>
                        <label for="password" class="mb-1 block text-sm font-medium text-slate-700">
                            "Password"
                        </label>
                        <input
                            id="password"
                            name="password"
                            type="password"
                            data-testid="login-password"
                            autocomplete="current-password"
                            required
                            class="w-full rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                        />
                    </div>
                    {move || {
                        error()
                            .map(|message| {
                                view! {
                                    <p
                                        role="alert"
                                        data-testid="login-error"
                                        class="flex items-center gap-2 rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700"
                                    >
                                        <Icon kind=IconKind::Alert class="h-4 w-4 shrink-0"/>
                                        {message}
                                    </p>
                                }
                            })
                    }}
                    <button
                        type="submit"
                        data-testid="login-submit"
                        disabled=move || pending.get()
                        class="w-full rounded-lg bg-indigo-600 px-4 py-2 font-medium text-white hover:bg-indigo-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500 disabled:opacity-60"
                    >
                        {move || if pending.get() { "Signing in…" } else { "Sign in" }}
                    </button>
                </ServerForm>
                <p class="mt-4 text-center text-xs text-slate-500">
                    "Roles: support agent or supervisor. Ask your administrator for an account."
                </p>
            </div>
        </main>
    }
}
