//! `/account`: the signed-in user's own password (the rules are checked as
//! they type, with the same function the server applies) and "sign out
//! everywhere".

pub mod api;

use leptos::prelude::*;

use crate::call::Call;
use crate::components::layout::Layout;
use crate::components::server_form::{field, ServerForm};
use crate::session::{reload_to, Authed, Session};
use api::{ChangePassword, SignOutEverywhere};

/// `/account`.
#[component]
pub fn AccountPage() -> impl IntoView {
    view! {
        <Authed let:session>
            <AccountBody session/>
        </Authed>
    }
}

const INPUT: &str = "w-full rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200";

#[component]
fn AccountBody(session: Session) -> impl IntoView {
    let username = session.user.username.clone();
    let change = Call::<ChangePassword>::new();
    let everywhere = Call::<SignOutEverywhere>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = everywhere.answer().get() {
            reload_to("/login");
        }
    });
    let new_password = RwSignal::new(String::new());
    let confirm = RwSignal::new(String::new());
    let name = StoredValue::new(username.clone());
    // The same rule the server applies, as the user types.
    let problem = move || {
        let new = new_password.get();
        if new.is_empty() {
            return None;
        }
        if let Err(why) = name.with_value(|n| aics_types::check_new_password(&new, n)) {
            return Some(why);
        }
        let again = confirm.get();
        (!again.is_empty() && again != new).then(|| "the two new passwords differ".to_owned())
    };
    let ready = move || {
        let new = new_password.get();
        !new.is_empty() && problem().is_none() && confirm.get() == new
    };
    let outcome = move || change.answer().get();
    view! {
        <Layout session>
            <main class="mx-auto max-w-xl space-y-6 p-4 lg:p-6">
                <h1 class="text-xl font-semibold tracking-tight">"Your account"</h1>
                <section class="rounded-2xl border border-slate-200 bg-white p-6 shadow-sm">
                    <h2 class="mb-1 font-medium">"Change your password"</h2>
                    <p class="mb-4 text-sm text-slate-500">
                        {format!(
                            "At least {} characters; not a common password, not close to “{}”. Your other signed-in browsers are signed out.",
                            aics_types::MIN_NEW_PASSWORD_CHARS,
                            username,
                        )}
                    </p>
                    <ServerForm
                        action=change
                        input=|form| ChangePassword {
                            current_password: field(form, "current_password"),
                            new_password: field(form, "new_password"),
                        }
                        attr:class="space-y-3"
                        attr:data-testid="change-password-form"
                    >
                        <div>
                            <label for="current_password" class="mb-1 block text-sm font-medium text-slate-700">"Current password"</label>
                            <input id="current_password" name="current_password" type="password" autocomplete="current-password" required class=INPUT/>
                        </div>
                        <div>
                            <label for="new_password" class="mb-1 block text-sm font-medium text-slate-700">"New password"</label>
                            <input
                                id="new_password"
                                name="new_password"
                                type="password"
                                autocomplete="new-password"
                                required
                                class=INPUT
                                on:input=move |ev| new_password.set(event_target_value(&ev))
                            />
                        </div>
                        <div>
                            <label for="confirm_password" class="mb-1 block text-sm font-medium text-slate-700">"New password again"</label>
                            <input
                                id="confirm_password"
                                type="password"
                                autocomplete="new-password"
                                required
                                class=INPUT
                                on:input=move |ev| confirm.set(event_target_value(&ev))
                            />
                        </div>
                        {move || problem().map(|why| view! {
                            <p data-testid="password-rule" class="text-sm text-amber-800">{why}</p>
                        })}
                        {move || match outcome() {
                            Some(Ok(())) => Some(view! {
                                <p role="status" data-testid="password-changed" class="rounded-lg bg-emerald-50 px-3 py-2 text-sm text-emerald-800">
                                    "Your password is changed. Other browsers were signed out."
                                </p>
                            }.into_any()),
                            Some(Err(e)) => Some(view! {
                                <p role="alert" data-testid="password-error" class="rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700">{e.message}</p>
                            }.into_any()),
                            None => None,
                        }}
                        <button
                            type="submit"
                            data-testid="change-password"
                            disabled=move || change.pending().get() || !ready()
                            class="rounded-lg bg-indigo-600 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-700 disabled:opacity-60"
                        >
                            "Change password"
                        </button>
                    </ServerForm>
                </section>
                <section class="rounded-2xl border border-slate-200 bg-white p-6 shadow-sm">
                    <h2 class="mb-1 font-medium">"Sessions"</h2>
                    <p class="mb-3 text-sm text-slate-500">
                        "Signed in on a shared or lost computer? End every session, this one too."
                    </p>
                    <ServerForm action=everywhere input=|_| SignOutEverywhere {}>
                        <button
                            type="submit"
                            data-testid="sign-out-everywhere"
                            class="rounded-lg border border-red-200 px-4 py-2 text-sm font-medium text-red-700 hover:bg-red-50"
                        >
                            "Sign out everywhere"
                        </button>
                    </ServerForm>
                </section>
            </main>
        </Layout>
    }
}
