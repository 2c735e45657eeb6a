//! The right column: the conversation's customer panel, then the running
//! turn's tool calls as they happen, or the latest (or picked) turn's calls
//! with its trace.

use leptos::prelude::*;

use super::customer_panel::CustomerPanelView;
use super::live::Chat;
use super::state::TimelineMode;
use crate::components::timeline::{NodePath, ToolTimeline};
use crate::components::trace::TracePanel;

#[component]
pub fn ToolsPanel(chat: Chat) -> impl IntoView {
    let state = chat.state;
    let view_ = Memo::new(move |_| state.with(|s| s.timeline()));
    let live = Memo::new(move |_| view_.with(|v| v.live));
    let picked = Memo::new(move |_| view_.with(|v| v.picked));
    let mode = Memo::new(move |_| view_.with(|v| v.mode));
    let nodes = Memo::new(move |_| view_.with(|v| v.nodes.clone()));
    let calls = Memo::new(move |_| view_.with(|v| v.calls.clone()));
    let fallback = Memo::new(move |_| view_.with(|v| v.fallback.clone()));
    let trace = Memo::new(move |_| view_.with(|v| v.trace.clone()));
    view! {
        <aside
            data-testid="timeline-panel"
            aria-label="Tool calls and trace"
            class="min-w-0 space-y-3 border-t border-slate-200 bg-slate-50 p-4 md:col-start-2 xl:col-start-3 xl:h-full xl:overflow-y-auto xl:border-l xl:border-t-0"
        >
            <CustomerPanelView chat/>
            <div class="flex items-center gap-2">
                <h2 class="text-sm font-semibold text-slate-700">"Tool calls"</h2>
                {move || {
                    live.get().then(|| view! {
                        <span data-testid="timeline-live" class="inline-flex items-center gap-1 rounded-full bg-sky-100 px-2 py-0.5 text-[11px] font-medium text-sky-800">
                            <span aria-hidden="true" class="h-1.5 w-1.5 animate-pulse rounded-full bg-sky-500"></span>
                            "live"
                        </span>
                    })
                }}
                {move || {
                    picked.get().then(|| view! {
                        <button
                            type="button"
                            class="ml-auto text-xs font-medium text-indigo-600 hover:underline"
                            on:click=move |_| state.update(|s| s.select_turn(None))
                        >
                            "Show latest turn"
                        </button>
                    })
                }}
            </div>
            {move || {
                let nodes = nodes.get();
                (live.get() && !nodes.is_empty()).then(|| view! { <NodePath nodes/> })
            }}
            {move || match mode.get() {
                TimelineMode::Nothing => view! {
                    <p class="rounded-xl border border-dashed border-slate-300 p-4 text-center text-sm text-slate-500">
                        "Tool calls of the AI's turns appear here while they run."
                    </p>
                }.into_any(),
                TimelineMode::Planning => view! {
                    <p data-testid="timeline-planning" class="rounded-xl border border-dashed border-sky-300 bg-sky-50/50 p-4 text-center text-sm text-sky-800">
                        "The AI is planning its next step…"
                    </p>
                }.into_any(),
                TimelineMode::Calls => view! { <ToolTimeline calls fallback/> }.into_any(),
            }}
            {move || trace.get().map(|trace| view! { <TracePanel trace link=true/> })}
        </aside>
    }
}
