//! The path the turn took, drawn as a row of node boxes: each box links to
//! its step below, a repeated `agent`/`tools` box is numbered (the loops),
//! the box where the run paused is amber.

use leptos::prelude::*;

use super::model::{loops, PathStep};
use crate::components::icons::{Icon, IconKind};

/// The path as boxes and arrows, and the number of loops.
#[component]
pub fn PathGraph(path: Vec<PathStep>) -> impl IntoView {
    let rounds = loops(&path);
    let last = path.len().saturating_sub(1);
    view! {
        <section aria-label="Path" class="mb-4 rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            <div class="mb-2 flex items-baseline gap-3">
                <h2 class="text-sm font-semibold text-slate-700">"Path"</h2>
                <span data-testid="path-loops" class="text-xs text-slate-500">
                    {format!("{rounds} agent ⇄ tools loop(s)")}
                </span>
            </div>
            <ol data-testid="turn-path" class="flex flex-wrap items-center gap-1.5">
                {path
                    .into_iter()
                    .enumerate()
                    .map(|(i, step)| {
                        let colour = if step.interrupt {
                            "bg-amber-100 text-amber-900 ring-amber-300"
                        } else if step.node == "agent" {
                            "bg-indigo-50 text-indigo-900 ring-indigo-200"
                        } else if step.node == "tools" {
                            "bg-emerald-50 text-emerald-900 ring-emerald-200"
                        } else {
                            "bg-slate-50 text-slate-800 ring-slate-200"
                        };
                        let label = if step.visit > 1 {
                            format!("{} #{}", step.node, step.visit)
                        } else {
                            step.node.clone()
                        };
                        view! {
                            <li class="flex items-center gap-1.5">
                                <a
                                    href=format!("#step-{}", step.step)
                                    data-testid="path-node"
                                    data-node=step.node.clone()
                                    data-interrupt=step.interrupt.to_string()
                                    class=format!("rounded-lg px-2 py-1 font-mono text-xs ring-1 hover:ring-2 {colour}")
                                    title=format!("step {}", step.step)
                                >
                                    {label}
                                    {step.interrupt.then(|| view! { <span class="ml-1">"⏸ interrupt"</span> })}
                                </a>
                                {(i < last).then(|| view! { <Icon kind=IconKind::ArrowRight class="h-3.5 w-3.5 text-slate-400"/> })}
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        </section>
    }
}
