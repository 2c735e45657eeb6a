//! `/accounts`: the supervisors' named accounts — create one, disable or
//! re-enable, reset a password, lift a sign-in lock, see the last sign-in —
//! and the newest lines of the audit log with its CSV export. A generated
//! password is shown once, in [`issued`].
//!
//! # Layout
//! - this file: the page, the create form and the table.
//! - [`issued`]: the once-only password panel.
//! - [`audit`]: the audit log.
//! - [`api`]: the server functions.

pub mod api;
mod audit;
mod issued;

use aics_types::{Account, IssuedPassword, Role, Timestamp};
use leptos::prelude::*;

use crate::call::Call;
use crate::components::icons::{Icon, IconKind};
use crate::components::layout::Layout;
use crate::components::server_form::{field, ServerForm};
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::{list_accounts, CreateAccount, ResetPassword, SetDisabled, UnlockAccount};

/// `/accounts`.
#[component]
pub fn AccountsPage() -> impl IntoView {
    view! {
        <Authed let:session>
            <AccountsBody session/>
        </Authed>
    }
}

#[component]
fn AccountsBody(session: Session) -> impl IntoView {
    let supervisor = session.is_supervisor();
    let me = session.user.username.clone();
    view! {
        <Layout session>
            <main class="mx-auto max-w-5xl space-y-6 p-4 lg:p-6">
                {if supervisor {
                    view! { <Accounts me/> <audit::AuditLog/> }.into_any()
                } else {
                    view! {
                        <div role="alert" data-testid="accounts-forbidden" class="flex items-start gap-2 rounded-xl border border-amber-200 bg-amber-50 p-4 text-sm text-amber-900">
                            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0"/>
                            "Only supervisors manage accounts. To change your own password, open your account from the header."
                        </div>
                    }
                        .into_any()
                }}
            </main>
        </Layout>
    }
}

/// "3 Dec 14:05", for people.
pub(crate) fn when(at: &Timestamp) -> String {
    crate::components::time::day_month_hm(at)
}

#[component]
fn Accounts(me: String) -> impl IntoView {
    let create = Call::<CreateAccount>::new();
    let disable = Call::<SetDisabled>::new();
    let reset = Call::<ResetPassword>::new();
    let unlock = Call::<UnlockAccount>::new();
    let accounts = resource(
        move || {
            (
                create.answered().get(),
                disable.answered().get(),
                reset.answered().get(),
                unlock.answered().get(),
            )
        },
        |_| list_accounts(),
    );
    // The last password issued here (new account or reset), shown once.
    let issued = RwSignal::new(None::<IssuedPassword>);
    Effect::new(move |_| {
        if let Some(Ok(p)) = create.answer().get() {
            issued.set(Some(p));
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(p)) = reset.answer().get() {
            issued.set(Some(p));
        }
    });
    let error = move || {
        [
            create.answer().get().and_then(Result::err),
            disable.answer().get().and_then(|r| r.err()),
            reset.answer().get().and_then(Result::err),
            unlock.answer().get().and_then(|r| r.err()),
        ]
        .into_iter()
        .flatten()
        .next()
        .map(|e| e.message)
    };
    let me = StoredValue::new(me);
    view! {
        <div class="flex flex-wrap items-end justify-between gap-3">
            <div>
                <h1 class="text-xl font-semibold tracking-tight">"Accounts"</h1>
                <p class="text-sm text-slate-500">"Each person signs in with their own account; decisions and changes are recorded under their name."</p>
            </div>
            <ServerForm
                action=create
                input=|form| CreateAccount {
                    username: field(form, "username"),
                    role: Role::parse(&field(form, "role")).unwrap_or(Role::Agent),
                }
                attr:class="flex flex-wrap items-end gap-2"
                attr:data-testid="create-account-form"
            >
                <div>
                    <label for="new-username" class="mb-1 block text-xs font-medium text-slate-600">"Username"</label>
                    <input id="new-username" name="username" required minlength="2" maxlength="64" autocomplete="off" class="rounded-lg border border-slate-300 px-3 py-1.5 text-sm"/>
                </div>
                <div>
                    <label for="new-role" class="mb-1 block text-xs font-medium text-slate-600">"Role"</label>
                    <select id="new-role" name="role" class="rounded-lg border border-slate-300 px-3 py-1.5 text-sm">
                        <option value="agent" selected>"Support agent"</option>
                        <option value="supervisor">"Supervisor"</option>
                    </select>
                </div>
                <button type="submit" data-testid="create-account" class="rounded-lg bg-indigo-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-indigo-700">
                    "Create account"
                </button>
            </ServerForm>
        </div>
        {move || error().map(|m| view! {
            <p role="alert" data-testid="accounts-error" class="rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700">{m}</p>
        })}
        {move || issued.get().map(|p| view! { <issued::IssuedPanel issued=p on_close=move || issued.set(None)/> })}
        <Transition fallback=|| view! { <p class="text-sm text-slate-500">"Loading accounts…"</p> }>
            {move || Suspend::new(async move {
                match ready(accounts).await {
                    Err(e) => view! { <p role="alert" class="text-sm text-red-700">{e.message}</p> }.into_any(),
                    Ok(list) => view! {
                        <div class="overflow-x-auto rounded-2xl border border-slate-200 bg-white shadow-sm">
                            <table data-testid="accounts-table" class="w-full text-left text-sm">
                                <thead class="border-b border-slate-200 bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
                                    <tr>
                                        <th class="px-4 py-2">"User"</th>
                                        <th class="px-4 py-2">"Role"</th>
                                        <th class="px-4 py-2">"Status"</th>
                                        <th class="px-4 py-2">"Last sign-in"</th>
                                        <th class="px-4 py-2">"Sessions"</th>
                                        <th class="px-4 py-2 text-right">"Actions"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {list.into_iter().map(|a| view! {
                                        <AccountRow account=a me=me.get_value() disable reset unlock/>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </div>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn AccountRow(
    account: Account,
    me: String,
    disable: Call<SetDisabled>,
    reset: Call<ResetPassword>,
    unlock: Call<UnlockAccount>,
) -> impl IntoView {
    let name = account.username.clone();
    let is_me = name == me;
    let status = if account.disabled {
        ("Disabled", "bg-slate-200 text-slate-700")
    } else if account.locked_until.is_some() {
        ("Locked", "bg-red-100 text-red-800")
    } else {
        ("Active", "bg-emerald-100 text-emerald-800")
    };
    let locked_note = account.locked_until.map(|until| {
        format!(
            "until {} · {} failed",
            when(&until),
            account.failed_sign_ins
        )
    });
    let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
    let disabled = account.disabled;
    let locked = account.locked_until.is_some();
    view! {
        <tr data-testid="account-row" data-username=name.clone() class="border-b border-slate-100 last:border-0">
            <td class="px-4 py-2 font-medium">
                {name.clone()}
                {account.must_change_password.then(|| view! {
                    <span class="ml-2 text-xs font-normal text-amber-700">"password to change"</span>
                })}
            </td>
            <td class="px-4 py-2">{account.role.as_str()}</td>
            <td class="px-4 py-2">
                <span data-testid="account-status" class=format!("rounded-full px-2 py-0.5 text-xs font-medium {}", status.1)>{status.0}</span>
                {locked_note.map(|n| view! { <span class="ml-2 text-xs text-slate-500">{n}</span> })}
            </td>
            <td class="px-4 py-2 text-slate-600">{account.last_sign_in_at.as_ref().map(when).unwrap_or_else(|| "never".into())}</td>
            <td class="px-4 py-2 text-slate-600">{account.active_sessions}</td>
            <td class="space-x-1 whitespace-nowrap px-4 py-2 text-right">
                {locked.then(|| view! {
                    <button type="button" data-testid="unlock" class="rounded-md border border-slate-200 px-2 py-1 text-xs hover:bg-slate-50"
                        on:click=move |_| { unlock.dispatch(api::UnlockAccount { username: n1.clone() }); }>"Unlock"</button>
                })}
                <button type="button" data-testid="reset-password" class="rounded-md border border-slate-200 px-2 py-1 text-xs hover:bg-slate-50"
                    on:click=move |_| { reset.dispatch(api::ResetPassword { username: n2.clone() }); }>"Reset password"</button>
                {(!is_me).then(|| view! {
                    <button type="button" data-testid=if disabled { "enable" } else { "disable" }
                        class="rounded-md border border-slate-200 px-2 py-1 text-xs hover:bg-slate-50"
                        on:click=move |_| { disable.dispatch(api::SetDisabled { username: n3.clone(), disabled: !disabled }); }>
                        {if disabled { "Enable" } else { "Disable" }}
                    </button>
                })}
            </td>
        </tr>
    }
}
