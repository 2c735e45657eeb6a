//! `/approvals`: the supervisors' live queue of sensitive tool calls, each
//! with the conversation that led to it and its proposed arguments, and the
//! record of recent decisions.
//!
//! # Layout
//! - this file: the page and the live queue.
//! - [`card`]: one pending approval, with editable arguments.
//! - [`decided`]: the table of recent decisions.
//! - [`deadline`]: a card's deadline and its countdown.
//! - `keys`: the page's keyboard (`j`/`k`, `a`, `r`).
//! - [`notify`]: the header's live count, tab title, desktop notices and
//!   the optional sound (`chime`, browser only).
//! - [`api`]: the server functions.

pub mod api;
mod card;
#[cfg(feature = "hydrate")]
mod chime;
pub mod deadline;
mod decided;
mod keys;
pub mod notify;

use leptos::prelude::*;

use crate::call::Call;
use crate::components::icons::{Icon, IconKind};
use crate::components::layout::Layout;
use crate::components::live_dot::LiveDot;
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::{decided_approvals, pending_approvals, DecideApproval};
use card::ApprovalCard;
use decided::DecidedTable;

/// `/approvals`.
#[component]
pub fn ApprovalsPage() -> impl IntoView {
    view! {
        <Authed let:session>
            <ApprovalsBody session/>
        </Authed>
    }
}

#[component]
fn ApprovalsBody(session: Session) -> impl IntoView {
    let supervisor = session.is_supervisor();
    view! {
        <Layout session>
            <main class="mx-auto max-w-5xl p-4 lg:p-6">
                {if supervisor {
                    view! { <ApprovalQueue/> }.into_any()
                } else {
                    view! {
                        <div role="alert" data-testid="approvals-forbidden" class="flex items-start gap-2 rounded-xl border border-amber-200 bg-amber-50 p-4 text-sm text-amber-900">
                            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0"/>
                            "Only supervisors can decide approvals. Pending calls show in their conversation as “waiting for supervisor approval”."
                        </div>
                    }
                        .into_any()
                }}
            </main>
        </Layout>
    }
}

#[component]
fn ApprovalQueue() -> impl IntoView {
    let decide = Call::<DecideApproval>::new();
    // Bumped by the live queue's events.
    let live_version = RwSignal::new(0u32);
    let connected = RwSignal::new(false);
    let approvals = resource(
        move || (decide.answered().get(), live_version.get()),
        |_| pending_approvals(),
    );
    let decided = resource(
        move || (decide.answered().get(), live_version.get()),
        |_| decided_approvals(),
    );

    #[cfg(feature = "hydrate")]
    {
        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        Effect::new(move |_| {
            if let Ok(s) = EventStream::connect(
                "/api/approvals/events",
                move |_event| live_version.update(|v| *v += 1),
                move || connected.set(true),
            ) {
                stream.set_value(Some(s));
            }
        });
        on_cleanup(move || stream.dispose());
        Effect::new(move |_| keys::install());
    }

    let last_error = move || match decide.answer().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };

    view! {
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <h1 class="text-xl font-semibold tracking-tight">"Approvals"</h1>
            <LiveDot connected live="Live queue" testid="approvals-live"/>
            <p class="w-full text-sm text-slate-500">
                "Sensitive tool calls wait here. Check the conversation and the arguments, edit them if needed, then approve — or reject with a reason the AI will pass on."
            </p>
            <p data-testid="approval-keys" class="w-full text-xs text-slate-500">
                "Keyboard: " <kbd class="rounded border px-1 font-mono">"j"</kbd> "/" <kbd class="rounded border px-1 font-mono">"k"</kbd>
                " move between cards · " <kbd class="rounded border px-1 font-mono">"a"</kbd> " approve · "
                <kbd class="rounded border px-1 font-mono">"r"</kbd> " reject (type the reason, then Enter)"
            </p>
        </div>
        {move || last_error().map(|m| view! {
            <p role="alert" data-testid="decision-error" class="mb-3 rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700">{m}</p>
        })}
        // Cards are keyed by approval id, so a new arrival in the live queue
        // keeps what a supervisor is typing into the others.
        <Transition fallback=|| view! { <p class="text-sm text-slate-500">"Loading approvals…"</p> }>
            {move || {
                approvals
                    .get()
                    .map(|result| match result {
                        Err(e) => {
                            view! { <p role="alert" class="text-sm text-red-700">{e.message}</p> }
                                .into_any()
                        }
                        Ok(list) if list.is_empty() => {
                            view! {
                                <div data-testid="approvals-empty" class="rounded-2xl border border-dashed border-slate-300 bg-white p-10 text-center">
                                    <Icon kind=IconKind::Check class="mx-auto mb-2 h-8 w-8 text-emerald-500"/>
                                    <p class="font-medium text-slate-700">"Nothing waits for a decision."</p>
                                    <p class="mt-1 text-sm text-slate-500">"New requests appear here as soon as the AI proposes them."</p>
                                </div>
                            }
                                .into_any()
                        }
                        Ok(_) => ().into_any(),
                    })
            }}
            <ul data-testid="approval-queue" class="space-y-4">
                <For
                    each=move || approvals.get().and_then(Result::ok).unwrap_or_default()
                    key=|approval| approval.id.clone()
                    let:approval
                >
                    <ApprovalCard approval decide/>
                </For>
            </ul>
        </Transition>
        <section aria-labelledby="decided-heading" class="mt-8">
            <div class="mb-2 flex flex-wrap items-end gap-3">
                <h2 id="decided-heading" class="text-sm font-semibold text-slate-700">"Recently decided"</h2>
                // A plain GET form: the browser downloads the CSV itself.
                <form
                    method="get"
                    action="/api/approvals/export.csv"
                    data-testid="approvals-export"
                    class="ml-auto flex flex-wrap items-end gap-2 text-xs text-slate-600"
                >
                    <label class="flex flex-col gap-0.5">
                        "Status"
                        <select name="status" class="rounded-md border border-slate-300 bg-white px-2 py-1">
                            <option value="">"all"</option>
                            <option value="approved">"approved"</option>
                            <option value="rejected">"rejected"</option>
                            <option value="expired">"expired"</option>
                            <option value="cancelled">"cancelled"</option>
                        </select>
                    </label>
                    <label class="flex flex-col gap-0.5">
                        "From"
                        <input type="date" name="from" class="rounded-md border border-slate-300 px-2 py-1"/>
                    </label>
                    <label class="flex flex-col gap-0.5">
                        "To"
                        <input type="date" name="to" class="rounded-md border border-slate-300 px-2 py-1"/>
                    </label>
                    <button
                        type="submit"
                        data-testid="approvals-export-button"
                        class="rounded-md border border-slate-300 bg-white px-3 py-1.5 font-medium text-slate-700 hover:bg-slate-50"
                    >
                        "Export CSV"
                    </button>
                </form>
            </div>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match ready(decided).await {
                        Ok(list) if !list.is_empty() => view! { <DecidedTable list/> }.into_any(),
                        Ok(_) => view! { <p class="text-sm text-slate-500">"No decisions yet."</p> }.into_any(),
                        Err(e) => view! { <p role="alert" class="text-sm text-red-700">{e.message}</p> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
