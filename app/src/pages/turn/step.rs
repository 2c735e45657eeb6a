//! One step of the turn (a checkpoint): its node and what ran next, and
//! behind disclosures its state diff against the previous checkpoint
//! (messages added, fields changed), the LLM calls it made, the tool calls
//! it started or ended, and the whole state.

use aics_types::{state_diff, ChangeKind, CheckpointView, FieldChange};
use leptos::prelude::*;
use serde_json::Value;

use super::forks::ForkButton;
use super::llm_call::LlmCallCard;
use super::model::{calls_at, short, tools_at};
use crate::components::icons::{Icon, IconKind};
use crate::components::json::JsonBlock;

/// One checkpoint; `before` is the previous one (none for the input).
#[component]
pub fn StepItem(
    checkpoint: CheckpointView,
    before: Option<CheckpointView>,
    next: String,
) -> impl IntoView {
    let interrupts = checkpoint.pending_interrupts.len();
    // A step the turn ended at has nothing to run again.
    let fork = (next != "END").then(|| view! { <ForkButton checkpoint=checkpoint.clone()/> });
    let diff = state_diff(before.as_ref().map(|b| &b.state), &checkpoint.state);
    let calls = calls_at(&checkpoint);
    let tools = tools_at(before.as_ref(), &checkpoint);
    let summary = format!(
        "Changes ({}) · LLM calls ({}) · tool calls ({})",
        diff.len(),
        calls.len(),
        tools.len()
    );
    view! {
        <li
            id=format!("step-{}", checkpoint.step)
            data-testid="checkpoint"
            data-node=checkpoint.node.clone()
            class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm"
        >
            <div class="flex flex-wrap items-center gap-2 text-sm">
                <span class="rounded-md bg-slate-800 px-2 py-0.5 font-mono text-xs text-white">
                    {format!("step {}", checkpoint.step)}
                </span>
                <code data-testid="checkpoint-node" class="font-mono font-semibold text-slate-800">{checkpoint.node.clone()}</code>
                <Icon kind=IconKind::ArrowRight class="h-3.5 w-3.5 text-slate-400"/>
                <span class="sr-only">"next: "</span>
                <code class="font-mono text-slate-600">{next}</code>
                {(interrupts > 0).then(|| view! {
                    <span class="rounded-full bg-amber-100 px-2 py-0.5 text-xs text-amber-900">
                        {format!("{interrupts} pending interrupt(s)")}
                    </span>
                })}
                <span class="ml-auto text-xs tabular-nums text-slate-400">
                    {crate::components::time::hms_millis(&checkpoint.created_at)}
                </span>
                {fork}
            </div>
            <details data-testid="step-details" class="mt-2">
                <summary class="cursor-pointer text-xs font-medium text-slate-600 hover:text-slate-900">{summary}</summary>
                <div class="mt-2 space-y-3">
                    <div>
                        <h4 class="mb-1 text-xs font-semibold uppercase tracking-wide text-slate-500">"State diff"</h4>
                        <ul data-testid="step-diff" class="space-y-1">
                            {diff.into_iter().map(|change| view! { <ChangeRow change/> }).collect_view()}
                        </ul>
                    </div>
                    <div>
                        <h4 class="mb-1 text-xs font-semibold uppercase tracking-wide text-slate-500">"LLM calls"</h4>
                        <div class="space-y-2">
                            {calls.into_iter().map(|call| view! { <LlmCallCard call/> }).collect_view()}
                        </div>
                    </div>
                    <div>
                        <h4 class="mb-1 text-xs font-semibold uppercase tracking-wide text-slate-500">"Tool calls"</h4>
                        <ul data-testid="step-tools" class="space-y-1 text-xs">
                            {tools
                                .into_iter()
                                .map(|t| view! {
                                    <li class="rounded bg-emerald-50/60 p-1.5 ring-1 ring-emerald-100">
                                        <span class="font-mono font-semibold">{t.name.clone()}</span>
                                        {format!(" · {} · {}", t.status.as_str(), t.duration_ms.map(|d| format!("{d} ms")).unwrap_or_else(|| "—".into()))}
                                        <div class="mt-1 grid gap-1 md:grid-cols-2">
                                            <JsonBlock value=t.input.clone() label="input"/>
                                            <JsonBlock value=t.output.clone() label="output"/>
                                        </div>
                                    </li>
                                })
                                .collect_view()}
                        </ul>
                    </div>
                    <details>
                        <summary class="cursor-pointer text-xs font-medium text-slate-600 hover:text-slate-900">"Whole state"</summary>
                        <div class="mt-1.5">
                            <JsonBlock value=checkpoint.state.clone() label="state" testid="checkpoint-state"/>
                        </div>
                    </details>
                </div>
            </details>
        </li>
    }
}

/// One changed field: appended items (messages shown by role and text),
/// or before → after.
#[component]
fn ChangeRow(change: FieldChange) -> impl IntoView {
    let FieldChange {
        field,
        kind,
        before,
        after,
    } = change;
    let (badge, colour) = match kind {
        ChangeKind::Appended => ("+ appended", "bg-emerald-100 text-emerald-900"),
        ChangeKind::Changed => ("~ changed", "bg-sky-100 text-sky-900"),
        ChangeKind::Added => ("+ added", "bg-emerald-100 text-emerald-900"),
        ChangeKind::Removed => ("− removed", "bg-red-100 text-red-900"),
    };
    let body = match (kind, after) {
        (ChangeKind::Appended, Some(Value::Array(items))) => items
            .iter()
            .map(|item| match (item.get("role"), item.get("content")) {
                (Some(role), Some(content)) => {
                    format!("[{}] {}", short(role, 20), short(content, 400))
                }
                _ => short(item, 400),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        (_, after) => {
            let old = before.map(|b| short(&b, 200));
            let new = after.map(|a| short(&a, 200));
            match (old, new) {
                (Some(old), Some(new)) => format!("{old}  →  {new}"),
                (None, Some(new)) => new,
                (Some(old), None) => old,
                (None, None) => String::new(),
            }
        }
    };
    let name = field.clone();
    view! {
        <li data-testid="diff-field" data-field=name class="rounded bg-slate-50 p-1.5 text-xs ring-1 ring-slate-200">
            <code class="font-mono font-semibold text-slate-800">{field}</code>
            <span class=format!("ml-2 rounded px-1 py-0.5 text-[10px] {colour}")>{badge}</span>
            <pre class="mt-1 whitespace-pre-wrap break-words font-mono text-[11px] text-slate-700">{body}</pre>
        </li>
    }
}
