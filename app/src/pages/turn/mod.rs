//! `/turns/{graphExecutionId}`: one turn step by step, from its checkpoints,
//! beside its trace and tool calls.

pub mod api;

use aics_types::{CheckpointView, TurnDetail};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::components::errors::ErrorList;
use crate::components::icons::{Icon, IconKind};
use crate::components::json::JsonBlock;
use crate::components::layout::Layout;
use crate::components::timeline::ToolTimeline;
use crate::components::trace::TracePanel;
use crate::session::{Authed, Session};
use api::get_turn;

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
                    <ErrorBoundary fallback=|errors| view! { <ErrorList errors/> }>
                        {move || Suspend::new(async move {
                            detail.await.map(|detail| view! { <TurnView detail/> })
                        })}
                    </ErrorBoundary>
                </Transition>
            </main>
        </Layout>
    }
}

/// What ran after each checkpoint: the next checkpoint's node, or what the
/// run waits for at the end.
fn next_steps(checkpoints: &[CheckpointView]) -> Vec<String> {
    (0..checkpoints.len())
        .map(|i| match checkpoints.get(i + 1) {
            Some(next) => next.node.clone(),
            None if !checkpoints[i].pending_interrupts.is_empty() => {
                "approval (interrupt)".to_string()
            }
            None => "END".to_string(),
        })
        .collect()
}

#[component]
fn TurnView(detail: TurnDetail) -> impl IntoView {
    let trace = detail.trace;
    let session_id = trace.session_id.clone();
    let checkpoints = detail.checkpoints;
    let nexts = next_steps(&checkpoints);
    let calls = trace.tool_calls.clone();
    let fallback = trace.tool_result.clone();
    view! {
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <a href=format!("/c/{session_id}") class="inline-flex items-center gap-1 text-sm text-indigo-600 hover:underline">
                <Icon kind=IconKind::ArrowLeft class="h-3.5 w-3.5"/>
                "Back to the conversation"
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
                                .map(|(checkpoint, next)| view! { <CheckpointItem checkpoint next/> })
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

/// One checkpoint: its step, its node, what ran next, and its state.
#[component]
fn CheckpointItem(checkpoint: CheckpointView, next: String) -> impl IntoView {
    let interrupts = checkpoint.pending_interrupts.len();
    view! {
        <li data-testid="checkpoint" data-node=checkpoint.node.clone() class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
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
                    {checkpoint.created_at.format("%H:%M:%S%.3f").to_string()}
                </span>
            </div>
            <details class="mt-2">
                <summary class="cursor-pointer text-xs font-medium text-slate-600 hover:text-slate-900">"State"</summary>
                <div class="mt-1.5">
                    <JsonBlock value=checkpoint.state.clone() label="state" testid="checkpoint-state"/>
                </div>
            </details>
        </li>
    }
}
