//! `/turns/{graphExecutionId}`: one turn step by step. The path it took
//! drawn as node boxes (loops numbered, the interrupt marked), then every
//! checkpoint, expandable to its state diff against the previous one, the
//! LLM calls it made and its tool calls; beside them the trace and the tool
//! timeline. Live: while the turn can still move (running or paused), the
//! page listens to the conversation's events and refetches on each step.
//!
//! Supervisors fork a finished or paused turn from a step and compare the
//! forks with it below the steps.
//!
//! - `model`: what is drawn, computed from the checkpoints (unit-tested).
//! - `path`: the path graph. `step`: one checkpoint. `llm_call`: one call.
//! - `forks`: the fork form and list. `compare`: one fork beside the turn.

pub mod api;
pub mod compare;
mod forks;
mod llm_call;
pub mod model;
mod path;
mod step;
#[cfg(all(test, feature = "ssr"))]
mod tests;

use aics_types::{CheckpointView, StopReason, TurnDetail};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::components::errors::or_alert;
use crate::components::icons::{Icon, IconKind};
use crate::components::layout::Layout;
use crate::components::timeline::ToolTimeline;
use crate::components::trace::TracePanel;
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::get_turn;
use path::PathGraph;
use step::StepItem;

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

/// Whether a turn may still change: running (no stop reason yet) or paused.
fn may_change(detail: &TurnDetail) -> bool {
    matches!(
        detail.trace.stop_reason,
        None | Some(StopReason::AwaitingApproval)
    )
}

#[component]
fn TurnBody(session: Session, id: Memo<String>) -> impl IntoView {
    let supervisor = session.is_supervisor();
    // Bumped by the conversation's events while the turn may change.
    let live_version = RwSignal::new(0u32);
    let detail = resource(
        move || (id.get(), live_version.get()),
        |(id, _)| get_turn(id),
    );

    // The live connection (browser only, opened once the turn is known and
    // only while it may still change); nothing it does changes the markup
    // rendered at hydration.
    #[cfg(feature = "hydrate")]
    {
        use aics_types::AgentEvent;

        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        Effect::new(move |_| {
            let Some(Ok(detail)) = detail.get() else {
                return;
            };
            if !may_change(&detail) || stream.with_value(Option::is_some) {
                return;
            }
            let url = format!("/api/conversations/{}/events", detail.trace.session_id);
            let on_event = move |event: AgentEvent| {
                if matches!(
                    event,
                    AgentEvent::NodeEnd { .. }
                        | AgentEvent::ApprovalRequired { .. }
                        | AgentEvent::ApprovalDecided { .. }
                        | AgentEvent::Final { .. }
                        | AgentEvent::Error { .. }
                        | AgentEvent::Resync { .. }
                ) {
                    live_version.update(|v| *v += 1);
                }
            };
            if let Ok(s) = EventStream::connect(&url, on_event, || {}) {
                stream.set_value(Some(s));
            }
        });
        on_cleanup(move || stream.dispose());
    }

    view! {
        <Layout session>
            <main class="mx-auto max-w-6xl p-4 lg:p-6">
                <Transition fallback=|| view! { <p class="text-sm text-slate-500">"Loading the turn…"</p> }>
                    {move || Suspend::new(async move {
                        or_alert(ready(detail).await, "", |detail| view! { <TurnView detail supervisor/> })
                    })}
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
fn TurnView(detail: TurnDetail, supervisor: bool) -> impl IntoView {
    let live = may_change(&detail);
    let trace = detail.trace;
    // Supervisors fork a turn that paused or ended (the same on the server
    // and at hydration: it depends on the session and the detail only).
    let forkable = supervisor && trace.stop_reason.is_some();
    let fork_target = forks::ForkTarget(RwSignal::new(None));
    if forkable {
        provide_context(fork_target);
    }
    let fork_panel = forkable.then(|| {
        view! {
            <forks::ForksPanel
                gid=trace.graph_execution_id.clone()
                original=trace.clone()
                target=fork_target
            />
        }
    });
    let session_id = trace.session_id.clone();
    let checkpoints = detail.checkpoints;
    let nexts = next_steps(&checkpoints);
    let path = model::path_of(&checkpoints);
    let calls = trace.tool_calls.clone();
    let fallback = trace.tool_result.clone();
    let befores: Vec<Option<CheckpointView>> = std::iter::once(None)
        .chain(checkpoints.iter().cloned().map(Some))
        .take(checkpoints.len())
        .collect();
    view! {
        <div class="mb-4 flex flex-wrap items-center gap-3">
            <a href=format!("/c/{session_id}") class="inline-flex items-center gap-1 text-sm text-indigo-600 hover:underline">
                <Icon kind=IconKind::ArrowLeft class="h-3.5 w-3.5"/>
                "Back to the conversation"
            </a>
            <h1 class="w-full text-xl font-semibold tracking-tight">"Step history"</h1>
            <code data-testid="turn-gid" class="font-mono text-xs text-slate-500">{trace.graph_execution_id.clone()}</code>
            <span data-testid="turn-live" data-live=live.to_string() class="text-xs text-slate-500">
                {if live { "live: updates as the turn moves" } else { "finished" }}
            </span>
        </div>
        <PathGraph path/>
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
                                .zip(befores)
                                .zip(nexts)
                                .map(|((checkpoint, before), next)| view! { <StepItem checkpoint before next/> })
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
        {fork_panel}
    }
}
