//! `/turns/{graphExecutionId}`: one turn step by step, from its checkpoints.

use aics_types::TurnDetail;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{get_turn, Session};
use crate::auth::{Authed, Layout};
use crate::timeline::{JsonBlock, ToolTimeline, TracePanel};

/// `/turns/{graphExecutionId}`.
#[component]
pub fn TurnPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.read().get("id").unwrap_or_default());
    view! {
        <Authed let:session>
            <TurnBody session id/>
        </Authed>
    }
}

#[component]
fn TurnBody(session: Session, id: Memo<String>) -> impl IntoView {
    let detail = Resource::new(move || id.get(), get_turn);
    view! {
        <Layout session>
            <main class="mx-auto max-w-6xl p-4 lg:p-6">
                <Transition fallback=|| view! { <p class="text-sm text-slate-500">"Loading the turn…"</p> }>
                    <ErrorBoundary fallback=|errors| view! {
                        <p role="alert" class="rounded-xl border border-red-200 bg-red-50 p-4 text-sm text-red-800">
                            {move || errors.get().into_iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>().join(" ")}
                        </p>
                    }>
                        {move || Suspend::new(async move {
                            detail.await.map(|detail| view! { <TurnView detail/> })
                        })}
                    </ErrorBoundary>
                </Transition>
            </main>
        </Layout>
    }
}

#[component]
fn TurnView(detail: TurnDetail) -> impl IntoView {
    let trace = detail.trace;
    let session_id = trace.session_id.clone();
    let checkpoints = detail.checkpoints;
    // What ran after each checkpoint: the next checkpoint's node, or what
    // the run waits for at the end.
    let nexts: Vec<String> = (0..checkpoints.len())
        .map(|i| match checkpoints.get(i + 1) {
            Some(next) => next.node.clone(),
            None if !checkpoints[i].pending_interrupts.is_empty() => {
                "approval (interrupt)".to_string()
            }
            None => "END".to_string(),
        })
        .collect();
    let calls = trace.tool_calls.clone();
    let fallback = trace.tool_result.clone();
    view! {
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <a href=format!("/c/{session_id}") class="text-sm text-indigo-600 hover:underline">
                "← Back to the conversation"
            </a>
            <h1 class="w-full text-xl font-semibold tracking-tight">"Step history"</h1>
            <code data-testid="turn-gid" class="font-mono text-xs text-slate-500">{trace.graph_execution_id.clone()}</code>
        </div>
        <div class="grid gap-4 lg:grid-cols-[minmax(0,1fr)_20rem]">
            <section aria-label="Checkpoints">
                <h2 class="mb-2 text-sm font-semibold text-slate-700">
                    {format!("Checkpoints ({})", checkpoints.len())}
                </h2>
                {if checkpoints.is_empty() {
                    view! { <p class="text-sm text-slate-500">"No checkpoints were saved for this turn."</p> }.into_any()
                } else {
                    view! {
                        <ol data-testid="checkpoints" class="space-y-2">
                            {checkpoints
                                .into_iter()
                                .zip(nexts)
                                .map(|(c, next)| {
                                    let interrupts = c.pending_interrupts.clone();
                                    view! {
                                        <li data-testid="checkpoint" data-node=c.node.clone() class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
                                            <div class="flex flex-wrap items-center gap-2 text-sm">
                                                <span class="rounded-md bg-slate-800 px-2 py-0.5 font-mono text-xs text-white">
                                                    {format!("step {}", c.step)}
                                                </span>
                                                <code data-testid="checkpoint-node" class="font-mono font-semibold text-slate-800">{c.node.clone()}</code>
                                                <span aria-hidden="true" class="text-slate-400">"→"</span>
                                                <span class="sr-only">"next: "</span>
                                                <code class="font-mono text-slate-600">{next}</code>
                                                {(!interrupts.is_empty()).then(|| view! {
                                                    <span class="rounded-full bg-amber-100 px-2 py-0.5 text-xs text-amber-900">
                                                        {format!("{} pending interrupt(s)", interrupts.len())}
                                                    </span>
                                                })}
                                                <span class="ml-auto text-xs tabular-nums text-slate-400">
                                                    {c.created_at.format("%H:%M:%S%.3f").to_string()}
                                                </span>
                                            </div>
                                            <details class="mt-2">
                                                <summary class="cursor-pointer text-xs font-medium text-slate-600 hover:text-slate-900">"State"</summary>
                                                <div class="mt-1.5">
                                                    <JsonBlock value=c.state.clone() label="state" testid="checkpoint-state"/>
                                                </div>
                                            </details>
                                        </li>
                                    }
                                })
                                .collect_view()}
                        </ol>
                    }.into_any()
                }}
            </section>
            <aside class="space-y-3">
                <TracePanel trace/>
                <h2 class="text-sm font-semibold text-slate-700">"Tool calls"</h2>
                <ToolTimeline calls=Signal::stored(calls) fallback=Signal::stored(fallback)/>
            </aside>
        </div>
    }
}
