//! `/approvals`: the supervisors' live queue of sensitive tool calls, each
//! with the conversation that led to it and its proposed arguments, which a
//! supervisor may edit before approving, or reject with a reason.

use aics_types::{Approval, ApprovalDecision, ApprovalStatus, MessageRole};
use leptos::prelude::*;
use serde_json::Value;

use crate::api::{decided_approvals, pending_approvals, DecideApproval, Session};
use crate::auth::{Authed, Layout};
use crate::timeline::pretty_json;

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
                        <div role="alert" data-testid="approvals-forbidden" class="rounded-xl border border-amber-200 bg-amber-50 p-4 text-sm text-amber-900">
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
    let decide = ServerAction::<DecideApproval>::new();
    // Bumped by the live queue's events.
    let live_version = RwSignal::new(0u32);
    let connected = RwSignal::new(false);
    let approvals = Resource::new(
        move || (decide.version().get(), live_version.get()),
        |_| pending_approvals(),
    );
    let decided = Resource::new(
        move || (decide.version().get(), live_version.get()),
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
    }

    let last_error = move || match decide.value().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };

    view! {
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <h1 class="text-xl font-semibold tracking-tight">"Approvals"</h1>
            <span class="flex items-center gap-1.5 text-xs text-slate-500" data-testid="approvals-live" data-connected=move || connected.get().to_string()>
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
                {move || if connected.get() { "Live queue" } else { "Connecting…" }}
            </span>
            <p class="w-full text-sm text-slate-500">
                "Sensitive tool calls wait here. Check the conversation and the arguments, edit them if needed, then approve — or reject with a reason the AI will pass on."
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
            <h2 id="decided-heading" class="mb-2 text-sm font-semibold text-slate-700">"Recently decided"</h2>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match decided.await {
                        Ok(list) if !list.is_empty() => view! { <DecidedTable list/> }.into_any(),
                        Ok(_) => view! { <p class="text-sm text-slate-500">"No decisions yet."</p> }.into_any(),
                        Err(e) => view! { <p role="alert" class="text-sm text-red-700">{e.message}</p> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

/// One pending approval: context, editable arguments, approve / reject.
#[component]
fn ApprovalCard(approval: Approval, decide: ServerAction<DecideApproval>) -> impl IntoView {
    let proposed = approval.proposed_args.clone();
    let original = pretty_json(&proposed);
    let args_text = RwSignal::new(original.clone());
    let reason = RwSignal::new(String::new());
    let parsed = Memo::new(move |_| {
        args_text.with(|t| serde_json::from_str::<Value>(t).map_err(|e| e.to_string()))
    });
    let id = StoredValue::new(approval.id.clone());
    let proposed = StoredValue::new(proposed);
    let pending = decide.pending();

    let approve = move || {
        let Ok(args) = parsed.get_untracked() else {
            return;
        };
        let edited = proposed.with_value(|p| *p != args);
        decide.dispatch(DecideApproval {
            id: id.get_value(),
            decision: ApprovalDecision {
                approve: true,
                reason: None,
                args: edited.then_some(args),
                token: None,
            },
        });
    };
    let reject = move || {
        let text = reason.get_untracked();
        if text.trim().is_empty() {
            return;
        }
        decide.dispatch(DecideApproval {
            id: id.get_value(),
            decision: ApprovalDecision {
                approve: false,
                reason: Some(text.trim().to_string()),
                args: None,
                token: None,
            },
        });
    };

    let args_id = format!("args-{}", approval.id);
    let reason_id = format!("reason-{}", approval.id);
    let args_error_id = format!("args-error-{}", approval.id);
    let when = approval.created_at.format("%b %-d, %H:%M UTC").to_string();
    let context = approval.context.clone();
    view! {
        <li
            data-testid="approval-card"
            data-tool=approval.tool.clone()
            data-session=approval.session_id.clone()
            class="overflow-hidden rounded-2xl border border-slate-200 bg-white shadow-sm"
        >
            <div class="flex flex-wrap items-center gap-2 border-b border-slate-100 bg-amber-50/60 px-4 py-3">
                <span class="rounded-full bg-amber-100 px-2 py-0.5 text-xs font-medium text-amber-900 ring-1 ring-amber-200">"pending"</span>
                <code class="font-mono text-sm font-semibold text-slate-800">{approval.tool.clone()}</code>
                <span class="text-sm text-slate-500">"in"</span>
                <a
                    href=format!("/c/{}", approval.session_id)
                    class="truncate text-sm font-medium text-indigo-600 hover:underline"
                >
                    {format!("conversation {}", approval.session_id)}
                </a>
                <span class="ml-auto text-xs tabular-nums text-slate-500">{when}</span>
            </div>
            <div class="grid gap-4 p-4 md:grid-cols-2">
                <div>
                    <h3 class="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500">"Conversation"</h3>
                    {(!approval.policy_reason.is_empty()).then(|| view! {
                        <p class="mb-2 rounded-lg bg-slate-50 px-3 py-2 text-xs text-slate-600">
                            <span class="font-medium">"Why it needs approval: "</span>
                            {approval.policy_reason.clone()}
                        </p>
                    })}
                    <ol data-testid="approval-context" class="space-y-2">
                        {if context.is_empty() {
                            view! { <li class="text-sm text-slate-500">"No messages."</li> }.into_any()
                        } else {
                            context.into_iter().map(|m| {
                                let customer = m.role == MessageRole::Customer;
                                view! {
                                    <li class=if customer {
                                        "whitespace-pre-wrap break-words rounded-xl rounded-bl-md bg-slate-100 px-3 py-2 text-sm text-slate-800"
                                    } else {
                                        "whitespace-pre-wrap break-words rounded-xl border border-slate-200 px-3 py-2 text-sm text-slate-700"
                                    }>
                                        <span class="mb-0.5 block text-[11px] font-medium uppercase tracking-wide text-slate-500">
                                            {if customer { "Customer" } else { "AI" }}
                                        </span>
                                        {m.content}
                                    </li>
                                }
                            }).collect_view().into_any()
                        }}
                    </ol>
                </div>
                <div class="flex flex-col">
                    <label for=args_id.clone() class="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500">
                        "Arguments (JSON, editable)"
                    </label>
                    <textarea
                        id=args_id
                        data-testid="approval-args"
                        rows="8"
                        spellcheck="false"
                        aria-invalid=move || parsed.with(|p| p.is_err()).to_string()
                        aria-describedby=args_error_id.clone()
                        class=move || {
                            if parsed.with(|p| p.is_err()) {
                                "min-h-40 flex-1 rounded-lg border border-red-400 bg-slate-900 p-3 font-mono text-xs leading-relaxed text-slate-100 focus:outline-none focus:ring-2 focus:ring-red-300"
                            } else {
                                "min-h-40 flex-1 rounded-lg border border-slate-300 bg-slate-900 p-3 font-mono text-xs leading-relaxed text-slate-100 focus:outline-none focus:ring-2 focus:ring-indigo-300"
                            }
                        }
                        prop:value=move || args_text.get()
                        on:input=move |ev| args_text.set(event_target_value(&ev))
                    ></textarea>
                    <p id=args_error_id data-testid="approval-args-error" class="mt-1 min-h-4 text-xs text-red-700" aria-live="polite">
                        {move || parsed.get().err().map(|e| format!("Not valid JSON: {e}"))}
                    </p>
                </div>
            </div>
            <div class="flex flex-wrap items-end gap-3 border-t border-slate-100 bg-slate-50/60 px-4 py-3">
                <button
                    type="button"
                    data-testid="approve"
                    class="rounded-lg bg-emerald-600 px-4 py-2 text-sm font-medium text-white shadow-sm hover:bg-emerald-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-emerald-500 disabled:opacity-50"
                    disabled=move || pending.get() || parsed.with(|p| p.is_err())
                    on:click=move |_| approve()
                >
                    "Approve"
                </button>
                <div class="flex min-w-64 flex-1 items-end gap-2">
                    <div class="flex-1">
                        <label for=reason_id.clone() class="mb-0.5 block text-xs text-slate-600">"Reason for rejecting (required)"</label>
                        <input
                            id=reason_id
                            data-testid="reject-reason"
                            class="w-full rounded-lg border border-slate-300 bg-white px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                            prop:value=move || reason.get()
                            on:input=move |ev| reason.set(event_target_value(&ev))
                            on:keydown=move |ev| {
                                if ev.key() == "Enter" {
                                    ev.prevent_default();
                                    reject();
                                }
                            }
                        />
                    </div>
                    <button
                        type="button"
                        data-testid="reject"
                        class="rounded-lg border border-rose-300 bg-white px-4 py-2 text-sm font-medium text-rose-700 hover:bg-rose-50 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-rose-500 disabled:opacity-50"
                        disabled=move || pending.get() || reason.with(|r| r.trim().is_empty())
                        on:click=move |_| reject()
                    >
                        "Reject"
                    </button>
                </div>
            </div>
        </li>
    }
}

/// The audit trail: who decided what, when and why.
#[component]
fn DecidedTable(list: Vec<Approval>) -> impl IntoView {
    view! {
        <div class="overflow-x-auto rounded-xl border border-slate-200 bg-white">
            <table data-testid="decided-approvals" class="w-full text-left text-sm">
                <thead class="bg-slate-50 text-xs uppercase tracking-wide text-slate-500">
                    <tr>
                        <th scope="col" class="px-3 py-2 font-medium">"Decision"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Tool"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Conversation"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"By"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"Reason"</th>
                        <th scope="col" class="px-3 py-2 font-medium">"When"</th>
                    </tr>
                </thead>
                <tbody class="divide-y divide-slate-100">
                    {list
                        .into_iter()
                        .take(20)
                        .map(|a| {
                            let (label, colours) = match a.status {
                                ApprovalStatus::Approved => ("approved", "bg-emerald-100 text-emerald-800"),
                                ApprovalStatus::Rejected => ("rejected", "bg-rose-100 text-rose-800"),
                                ApprovalStatus::Pending => ("pending", "bg-amber-100 text-amber-900"),
                                ApprovalStatus::Cancelled => ("cancelled", "bg-slate-100 text-slate-700"),
                                ApprovalStatus::Expired => ("expired", "bg-slate-100 text-slate-700"),
                            };
                            let edited = a.approved_args.as_ref().is_some_and(|x| *x != a.proposed_args);
                            let when = a
                                .decided_at
                                .map(|t| t.format("%b %-d, %H:%M UTC").to_string())
                                .unwrap_or_default();
                            view! {
                                <tr data-testid="decided-approval" data-status=a.status.as_str()>
                                    <td class="px-3 py-2">
                                        <span class=format!("rounded-full px-2 py-0.5 text-xs font-medium {colours}")>{label}</span>
                                        {edited.then(|| view! { <span class="ml-1 text-xs text-slate-500">"(edited)"</span> })}
                                    </td>
                                    <td class="px-3 py-2 font-mono text-xs">{a.tool.clone()}</td>
                                    <td class="max-w-48 truncate px-3 py-2">
                                        <a class="text-indigo-600 hover:underline" href=format!("/c/{}", a.session_id)>
                                            {a.session_id.clone()}
                                        </a>
                                    </td>
                                    <td class="px-3 py-2">{a.decided_by.clone().unwrap_or_default()}</td>
                                    <td class="max-w-64 px-3 py-2 text-slate-600">{a.decision_reason.clone().unwrap_or_default()}</td>
                                    <td class="whitespace-nowrap px-3 py-2 text-xs tabular-nums text-slate-500">{when}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
