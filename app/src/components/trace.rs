//! The trace panel: what one finished (or paused) turn did, in figures.
//! Used by the console and the turn page.

use aics_types::{ChatTurnTraceResult, StopReason};
use leptos::prelude::*;

use crate::components::icons::{Icon, IconKind};
use crate::components::timeline::NodePath;

/// The trace of a finished (or paused) turn; `link` adds the way to its
/// step history.
#[component]
pub fn TracePanel(trace: ChatTurnTraceResult, #[prop(optional)] link: bool) -> impl IntoView {
    let stop = trace
        .stop_reason
        .map(|s| s.as_str().replace('_', " "))
        .unwrap_or_else(|| "—".into());
    let stop_colour = match trace.stop_reason {
        Some(StopReason::FinalAnswer) => "text-emerald-700",
        Some(StopReason::AwaitingApproval) => "text-amber-700",
        Some(StopReason::Error) => "text-red-700",
        Some(_) => "text-orange-700",
        None => "text-slate-700",
    };
    let usage = trace.usage;
    let gid = trace.graph_execution_id.clone();
    let row = |name: &'static str, value: String, testid: &'static str| {
        view! {
            <div class="flex items-baseline justify-between gap-3 py-1">
                <dt class="text-slate-500">{name}</dt>
                <dd data-testid=testid class="text-right font-medium tabular-nums text-slate-800">
                    {value}
                </dd>
            </div>
        }
    };
    view! {
        <section
            data-testid="trace-panel"
            aria-label="Turn trace"
            class="rounded-xl border border-slate-200 bg-white p-3 text-sm shadow-sm"
        >
            <h3 class="mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500">"Trace"</h3>
            <dl class="divide-y divide-slate-100">
                {row("Intent", trace.intent.as_str().to_string(), "trace-intent")}
                <div class="flex items-baseline justify-between gap-3 py-1">
                    <dt class="text-slate-500">"Stop reason"</dt>
                    <dd data-testid="trace-stop-reason" class=format!("text-right font-medium {stop_colour}")>
                        {stop}
                    </dd>
                </div>
                {row("LLM calls", trace.llm_calls.to_string(), "trace-llm-calls")}
                {row("Steps", trace.steps_taken.to_string(), "trace-steps")}
                {row(
                    "Tokens",
                    format!(
                        "{} ({} in / {} out)",
                        usage.total_tokens,
                        usage.prompt_tokens,
                        usage.completion_tokens,
                    ),
                    "trace-tokens",
                )}
                {row("Duration", format!("{} ms", trace.duration_ms), "trace-duration")}
                {row(
                    "Cost",
                    trace.cost_usd.map(|c| format!("${c:.6}")).unwrap_or_else(|| "—".into()),
                    "trace-cost",
                )}
                {row(
                    "Model",
                    if trace.engine.is_empty() {
                        trace.model.clone()
                    } else {
                        format!("{} · {}", trace.model, trace.engine)
                    },
                    "trace-model",
                )}
            </dl>
            {trace
                .error
                .clone()
                .map(|error| {
                    view! {
                        <p class="mt-2 rounded-lg bg-red-50 px-2 py-1.5 text-xs text-red-700">{error}</p>
                    }
                })}
            <div class="mt-2">
                <p class="mb-1 text-xs text-slate-500">"Executed nodes"</p>
                <NodePath nodes=trace.executed_nodes.clone()/>
            </div>
            <div class="mt-3 flex items-center gap-2 border-t border-slate-100 pt-2">
                <span class="text-xs text-slate-500">"Graph execution"</span>
                <code data-testid="trace-gid" class="truncate font-mono text-[11px] text-slate-700" title=gid.clone()>
                    {gid.clone()}
                </code>
            </div>
            {link
                .then(|| {
                    view! {
                        <a
                            data-testid="step-history-link"
                            href=format!("/turns/{gid}")
                            class="mt-2 inline-flex items-center gap-1 text-sm font-medium text-indigo-600 hover:text-indigo-800 hover:underline"
                        >
                            "Step history"
                            <Icon kind=IconKind::ArrowRight class="h-3.5 w-3.5"/>
                        </a>
                    }
                })}
        </section>
    }
}
