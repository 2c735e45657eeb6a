//! Sensitive calls that wait for a supervisor, inline in the transcript:
//! the rule that held each, approve (with the arguments edited first, if
//! need be) and reject for supervisors, a notice for agents.
//!
//! Most conversations never hold a call, so the cards are a lazy part
//! (`components::lazy`: a chunk of its own in the release build, fetched
//! the first time a conversation has one), drawn by the browser only.

use aics_types::{ApprovalDecision, PendingToolCall};
use leptos::prelude::*;
use serde_json::Value;

use super::live::Chat;
use crate::call::Call;
use crate::components::icons::{Icon, IconKind};
use crate::components::json::{pretty_json, JsonBlock};
use crate::components::lazy::{lazy_view, LoadFailed};
use crate::pages::approvals::api::DecideApproval;
use crate::pages::approvals::deadline::Deadline;

/// The calls that wait, and a note while a decided turn resumes; loaded the
/// first time the open conversation has either.
#[component]
pub fn PendingApprovals(chat: Chat, supervisor: bool) -> impl IntoView {
    let state = chat.state;
    let mounted = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| mounted.set(true));
    // Once needed, kept: a decision's answer is handled by the cards.
    let needed = Memo::new(move |was: Option<&bool>| {
        was == Some(&true)
            || (mounted.get() && state.with(|s| s.resuming() || !s.waiting().is_empty()))
    });
    move || {
        needed.get().then(|| {
            view! {
                <Suspense>
                    {Suspend::new(async move {
                        pending_cards(chat, supervisor).await.unwrap_or_else(|_| {
                            view! { <li><LoadFailed what="The approval controls"/></li> }.into_any()
                        })
                    })}
                </Suspense>
            }
        })
    }
}

lazy_view! {
    fn pending_cards(chat: Chat, supervisor: bool) {
        view! { <PendingList chat supervisor/> }
    }
}

#[component]
fn PendingList(chat: Chat, supervisor: bool) -> impl IntoView {
    let state = chat.state;
    let waiting = Memo::new(move |_| state.with(|s| s.waiting()));
    let resuming = Memo::new(move |_| state.with(|s| s.resuming()));
    let decide = Call::<DecideApproval>::new();
    let decide_error = RwSignal::new(None::<String>);
    Effect::new(move |_| match decide.answer().get() {
        Some(Err(e)) => {
            decide_error.set(Some(e.message));
            state.update(|s| s.decision_failed());
        }
        Some(Ok(_)) => decide_error.set(None),
        None => {}
    });
    view! {
        {move || {
            resuming.get().then(|| view! {
                <li data-testid="approval-resuming" class="self-center rounded-full bg-emerald-50 px-3 py-1 text-xs text-emerald-800 ring-1 ring-emerald-200">
                    "Decision recorded — the turn continues…"
                </li>
            })
        }}
        <For
            each=move || waiting.get()
            key=|p| p.id.clone()
            children=move |call| view! { <PendingCall call chat supervisor decide decide_error/> }
        />
    }
}

#[component]
fn PendingCall(
    call: PendingToolCall,
    chat: Chat,
    supervisor: bool,
    decide: Call<DecideApproval>,
    decide_error: RwSignal<Option<String>>,
) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    let id = StoredValue::new(call.id.clone());
    let proposed = StoredValue::new(call.args.clone());
    let args_text = RwSignal::new(pretty_json(&call.args));
    let parsed = Memo::new(move |_| {
        args_text.with(|t| serde_json::from_str::<Value>(t).map_err(|e| e.to_string()))
    });
    let send = move |approve: bool| {
        let text = reason.get_untracked();
        if !approve && text.trim().is_empty() {
            return;
        }
        // The supervisor's edit, when the JSON changed (and parses).
        let args = match parsed.get_untracked() {
            Ok(args) => proposed.with_value(|p| *p != args).then_some(args),
            Err(_) if approve => return,
            Err(_) => None,
        };
        chat.state.update(|s| s.decide_locally(&id.get_value()));
        decide.dispatch(DecideApproval {
            id: id.get_value(),
            decision: ApprovalDecision {
                approve,
                reason: (!approve).then(|| text.trim().to_string()),
                args: if approve { args } else { None },
                token: None,
            },
        });
    };
    let reason_id = format!("reject-reason-{}", call.id);
    view! {
        <li
            data-testid="approval-inline"
            data-tool=call.tool.clone()
            class="rounded-xl border border-amber-300 bg-amber-50 p-3 text-sm shadow-sm"
        >
            <div class="flex items-center gap-2">
                <span class="grid h-6 w-6 shrink-0 place-items-center rounded-full bg-amber-200 text-amber-900">
                    <Icon kind=IconKind::Alert class="h-4 w-4"/>
                </span>
                <p class="font-medium text-amber-900">
                    "Waiting for supervisor approval: "
                    <code class="font-mono">{call.tool.clone()}</code>
                </p>
            </div>
            {call.expires_at.map(|until| view! {
                <div class="mt-2"><Deadline until on_expiry=None/></div>
            })}
            <p class="mt-1 text-xs text-amber-800">
                {call.reason.clone()}
                {(!call.rule.is_empty()).then(|| view! {
                    <span class="ml-1 text-amber-700">"· rule "</span>
                    <code data-testid="approval-inline-rule" class="font-mono">{call.rule.clone()}</code>
                })}
            </p>
            <details class="mt-2">
                <summary class="cursor-pointer text-xs font-medium text-amber-900">"Proposed arguments"</summary>
                <div class="mt-1.5">
                    <JsonBlock value=call.args.clone() label="proposed arguments"/>
                </div>
            </details>
            {if supervisor {
                view! {
                    <details data-testid="approval-inline-edit" class="mt-2">
                        <summary class="cursor-pointer text-xs font-medium text-amber-900">"Edit the arguments before approving"</summary>
                        <textarea
                            data-testid="approval-inline-args"
                            aria-label="Arguments (JSON)"
                            rows="6"
                            spellcheck="false"
                            aria-invalid=move || parsed.with(|p| p.is_err()).to_string()
                            class="mt-1.5 w-full rounded-lg border border-amber-300 bg-slate-900 p-2 font-mono text-xs text-slate-100 focus:outline-none focus:ring-2 focus:ring-amber-300"
                            prop:value=move || args_text.get()
                            on:input=move |ev| args_text.set(event_target_value(&ev))
                        ></textarea>
                        <p class="min-h-4 text-xs text-red-700" aria-live="polite">
                            {move || parsed.get().err().map(|e| format!("Not valid JSON: {e}"))}
                        </p>
                    </details>
                    <div class="mt-3 flex flex-wrap items-end gap-2">
                        <button
                            type="button"
                            data-testid="approve-inline"
                            class="rounded-lg bg-emerald-600 px-3 py-1.5 font-medium text-white hover:bg-emerald-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-emerald-500 disabled:opacity-50"
                            disabled=move || parsed.with(|p| p.is_err())
                            on:click=move |_| send(true)
                        >
                            "Approve"
                        </button>
                        <div class="flex min-w-48 flex-1 items-end gap-2">
                            <div class="flex-1">
                                <label for=reason_id.clone() class="mb-0.5 block text-xs text-amber-900">"Reason for rejecting"</label>
                                <input
                                    id=reason_id.clone()
                                    data-testid="reject-reason-inline"
                                    class="w-full rounded-lg border border-amber-300 bg-white px-2 py-1.5 text-sm focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-200"
                                    prop:value=move || reason.get()
                                    on:input=move |ev| reason.set(event_target_value(&ev))
                                />
                            </div>
                            <button
                                type="button"
                                data-testid="reject-inline"
                                class="rounded-lg border border-rose-300 bg-white px-3 py-1.5 font-medium text-rose-700 hover:bg-rose-50 disabled:opacity-50"
                                disabled=move || reason.with(|r| r.trim().is_empty())
                                on:click=move |_| send(false)
                            >
                                "Reject"
                            </button>
                        </div>
                    </div>
                    {move || decide_error.get().map(|m| view! { <p role="alert" class="mt-2 text-xs text-red-700">{m}</p> })}
                }
                    .into_any()
            } else {
                view! {
                    <p data-testid="approval-waiting" class="mt-2 text-xs text-amber-900">
                        "A supervisor must approve this call; the reply continues here by itself once they decide."
                    </p>
                }
                    .into_any()
            }}
        </li>
    }
}
