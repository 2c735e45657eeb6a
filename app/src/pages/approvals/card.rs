//! One pending approval: the conversation that led to it, the rule that
//! held it and its deadline, the tool calls and results of the turn before
//! it, its arguments as editable JSON (checked before they can be
//! approved), approve or reject with a reason.

use aics_types::{Approval, ApprovalDecision, ApprovalStatus, MessageRole};
use leptos::prelude::*;
use serde_json::Value;

use super::api::DecideApproval;
use super::deadline::Deadline;
use crate::call::Call;
use crate::components::badges::ApprovalStatusPill;
use crate::components::json::pretty_json;
use crate::components::timeline::ToolCard;

/// One pending approval: context, editable arguments, approve / reject.
#[component]
pub fn ApprovalCard(approval: Approval, decide: Call<DecideApproval>) -> impl IntoView {
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
    let when = format!(
        "{} UTC",
        crate::components::time::month_day_hm(&approval.created_at)
    );
    let context = approval.context.clone();
    let evidence = approval.evidence.clone();
    view! {
        <li
            id=format!("approval-{}", approval.id)
            data-testid="approval-card"
            data-selected="false"
            tabindex="-1"
            data-tool=approval.tool.clone()
            data-session=approval.session_id.clone()
            class="overflow-hidden rounded-2xl border border-slate-200 bg-white shadow-sm outline-none data-[selected=true]:ring-2 data-[selected=true]:ring-indigo-400"
        >
            <div class="flex flex-wrap items-center gap-2 border-b border-slate-100 bg-amber-50/60 px-4 py-3">
                <ApprovalStatusPill status=ApprovalStatus::Pending/>
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
                    {approval.expires_at.map(|until| view! {
                        <Deadline until on_expiry=approval.on_expiry.clone()/>
                    })}
                    <p data-testid="approval-why" class="mb-2 rounded-lg bg-slate-50 px-3 py-2 text-xs text-slate-600">
                        <span class="font-medium">"Why it needs approval: "</span>
                        {if approval.policy_reason.is_empty() {
                            "the approval policy holds this call".to_owned()
                        } else {
                            approval.policy_reason.clone()
                        }}
                        <span class="ml-1 text-slate-500">"· rule "</span>
                        <code data-testid="approval-rule" class="font-mono text-slate-700">
                            {if approval.rule.is_empty() { "—".to_owned() } else { approval.rule.clone() }}
                        </code>
                    </p>
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
            <section data-testid="approval-evidence" class="border-t border-slate-100 px-4 py-3">
                <h3 class="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500">
                    "What the AI looked up before asking"
                </h3>
                {if evidence.is_empty() {
                    view! { <p class="text-sm text-slate-500">"No tool calls before this one."</p> }.into_any()
                } else {
                    view! {
                        <ol class="grid gap-2 md:grid-cols-2">
                            {evidence
                                .into_iter()
                                .enumerate()
                                .map(|(index, record)| view! { <ToolCard record index/> })
                                .collect_view()}
                        </ol>
                    }
                        .into_any()
                }}
            </section>
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
