//! One fork beside the original turn: its state, the edited message, and
//! once it ran the comparison ([`aics_types::compare_runs`]): the two tool
//! chains (same or different), the reply's word diff, and the token, cost
//! and latency deltas. A fork that met an approval says which call and rule.

use aics_types::{compare_runs, ChatTurnTraceResult, DiffWord, StudioRun, StudioRunState};
use leptos::prelude::*;

/// A signed delta with its unit (`+12 tokens`, `−300 ms`).
pub fn signed(delta: i64, unit: &str) -> String {
    match delta {
        0 => format!("±0 {unit}"),
        d if d > 0 => format!("+{d} {unit}"),
        d => format!("−{} {unit}", d.unsigned_abs()),
    }
}

/// A cost delta in US dollars, or a dash when either side has no price.
pub fn cost_delta(delta: Option<f64>) -> String {
    match delta {
        None => "— (no price)".into(),
        Some(d) if d.abs() < 1e-9 => "±$0".into(),
        Some(d) if d > 0.0 => format!("+${d:.4}"),
        Some(d) => format!("−${:.4}", d.abs()),
    }
}

#[component]
pub fn ForkCard(run: StudioRun, original: ChatTurnTraceResult) -> impl IntoView {
    let state = run.state.as_str();
    let badge = match run.state {
        StudioRunState::Running => "bg-sky-100 text-sky-900",
        StudioRunState::Done => "bg-emerald-100 text-emerald-900",
        StudioRunState::Failed => "bg-red-100 text-red-900",
    };
    let header = format!(
        "fork {} · by {} · {}",
        run.id.chars().take(8).collect::<String>(),
        run.created_by,
        crate::components::time::date_hms(&run.created_at) + " UTC"
    );
    let settings = format!(
        "from checkpoint {} · protocol {}",
        run.source_checkpoint_id.chars().take(8).collect::<String>(),
        run.protocol.clone().unwrap_or_else(|| "as the turn".into())
    );
    let provider = match (&run.provider, &run.trace) {
        (Some(name), Some(trace)) => format!("provider {name} ({})", trace.model),
        (Some(name), None) => format!("provider {name}"),
        (None, _) => "provider as the turn".into(),
    };
    let message = run
        .message
        .clone()
        .map(|m| format!("Edited customer message: {m}"))
        .unwrap_or_else(|| "Customer message unchanged".into());
    let body = match (&run.trace, &run.error) {
        (Some(trace), _) => view! { <Comparison original trace=trace.clone()/> }.into_any(),
        (None, Some(error)) => {
            view! { <p class="text-xs text-red-700">{error.clone()}</p> }.into_any()
        }
        (None, None) => view! { <p class="text-xs text-slate-500">"Running…"</p> }.into_any(),
    };
    view! {
        <li data-testid="fork" data-state=state class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            <div class="flex flex-wrap items-center gap-2 text-xs text-slate-600">
                <span class=format!("rounded-full px-2 py-0.5 font-medium {badge}")>{state}</span>
                <span class="font-mono">{header}</span>
                <span>{settings}</span>
                <span data-testid="fork-provider-name">{provider}</span>
            </div>
            <p data-testid="fork-edit" class="mt-1 text-xs text-slate-700">{message}</p>
            <div class="mt-2">{body}</div>
        </li>
    }
}

/// The original and the fork side by side.
#[component]
fn Comparison(original: ChatTurnTraceResult, trace: ChatTurnTraceResult) -> impl IntoView {
    let c = compare_runs(&original, &trace);
    let chain = |names: &[String]| {
        if names.is_empty() {
            "(no tool calls)".to_string()
        } else {
            names.join(" → ")
        }
    };
    let (same_text, same_class) = if c.same_chain {
        ("same tool chain", "bg-emerald-100 text-emerald-900")
    } else {
        ("different tool chain", "bg-amber-100 text-amber-900")
    };
    let paused = trace
        .pending_tool_calls
        .iter()
        .map(|p| {
            format!(
                "{} (rule {})",
                p.tool,
                if p.rule.is_empty() { "—" } else { &p.rule }
            )
        })
        .collect::<Vec<_>>();
    let outcome = if trace.pending_approval {
        format!("paused for approval: {}", paused.join(", "))
    } else {
        trace
            .stop_reason
            .map(|r| format!("ended: {r:?}"))
            .unwrap_or_else(|| "ended".into())
    };
    view! {
        <div data-testid="fork-comparison" data-same-chain=c.same_chain.to_string() class="space-y-2 text-xs">
            <div class="flex flex-wrap items-center gap-2">
                <span class=format!("rounded px-1.5 py-0.5 {same_class}")>{same_text}</span>
                <span data-testid="fork-outcome" class="text-slate-700">{outcome}</span>
            </div>
            <div class="grid gap-2 md:grid-cols-2">
                <div class="rounded bg-slate-50 p-2 ring-1 ring-slate-200">
                    <h4 class="mb-1 font-semibold text-slate-600">"Original"</h4>
                    <p class="font-mono">{chain(&c.original_chain)}</p>
                </div>
                <div class="rounded bg-indigo-50/60 p-2 ring-1 ring-indigo-100">
                    <h4 class="mb-1 font-semibold text-slate-600">"Fork"</h4>
                    <p data-testid="fork-chain" class="font-mono">{chain(&c.fork_chain)}</p>
                </div>
            </div>
            <div>
                <h4 class="mb-1 font-semibold text-slate-600">"Reply (fork against original)"</h4>
                <p data-testid="fork-reply-diff" class="whitespace-pre-wrap rounded bg-white p-2 leading-relaxed ring-1 ring-slate-200">
                    {c.reply_diff.into_iter().map(|w| view! { <DiffSpan word=w/> }).collect_view()}
                </p>
            </div>
            <dl class="flex flex-wrap gap-4 tabular-nums text-slate-700">
                <div><dt class="inline text-slate-500">"Tokens "</dt><dd class="inline" data-testid="fork-tokens">{signed(c.tokens_delta, "tokens")}</dd></div>
                <div><dt class="inline text-slate-500">"Cost "</dt><dd class="inline">{cost_delta(c.cost_delta_usd)}</dd></div>
                <div><dt class="inline text-slate-500">"Latency "</dt><dd class="inline">{signed(c.latency_delta_ms, "ms")}</dd></div>
            </dl>
        </div>
    }
}

#[component]
fn DiffSpan(word: DiffWord) -> impl IntoView {
    let (text, class) = match word {
        DiffWord::Same(t) => (t, "text-slate-800"),
        DiffWord::Removed(t) => (t, "bg-red-100 text-red-900 line-through"),
        DiffWord::Added(t) => (t, "bg-emerald-100 text-emerald-900"),
    };
    view! { <span class=class>{text}</span>" " }
}
