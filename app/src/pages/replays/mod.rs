//! `/replays`: the supervisors' replay sets. The list of sets (rendered on
//! the server), the form that makes one from a filter or from turn ids
//! ([`create`]), and, chosen by the address (`?set=…&run=…`, the same on
//! the server and in the browser), one set with its replay runs and the
//! form that starts one ([`set`]), and one run's summary table ([`run`]),
//! polled while it runs. The set and the run are loaded by the browser
//! after mount into signals (see `pages::turn::forks` for why).

pub mod api;
pub mod create;
pub mod run;
pub mod set;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::components::errors::or_alert;
use crate::components::icons::{Icon, IconKind};
use crate::components::layout::Layout;
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::list_replay_sets;

/// `/replays`.
#[component]
pub fn ReplaysPage() -> impl IntoView {
    view! {
        <Authed let:session>
            <ReplaysBody session/>
        </Authed>
    }
}

#[component]
fn ReplaysBody(session: Session) -> impl IntoView {
    let supervisor = session.is_supervisor();
    view! {
        <Layout session>
            <main class="mx-auto max-w-6xl space-y-4 p-4 lg:p-6">
                {if supervisor {
                    view! { <ReplaysView/> }.into_any()
                } else {
                    view! {
                        <div role="alert" data-testid="replays-forbidden" class="flex items-start gap-2 rounded-xl border border-amber-200 bg-amber-50 p-4 text-sm text-amber-900">
                            <Icon kind=IconKind::Alert class="mt-0.5 h-4 w-4 shrink-0"/>
                            "Only supervisors replay turns."
                        </div>
                    }
                        .into_any()
                }}
            </main>
        </Layout>
    }
}

#[component]
fn ReplaysView() -> impl IntoView {
    let query = use_query_map();
    let set_id = Memo::new(move |_| query.read().get("set").filter(|s| !s.is_empty()));
    let run_id = Memo::new(move |_| query.read().get("run").filter(|s| !s.is_empty()));
    // Bumped when a set is saved, so the list is read again.
    let version = RwSignal::new(0u32);
    let sets = resource(move || version.get(), |_| list_replay_sets());
    view! {
        <div class="flex flex-wrap items-baseline gap-3">
            <h1 class="text-xl font-semibold tracking-tight">"Replays"</h1>
            <p class="text-sm text-slate-500">
                "Save a set of turns, replay them all on another engine or protocol, and see what changed. Replays are forks: nothing reaches the customers."
            </p>
        </div>
        <div class="grid gap-4 lg:grid-cols-3">
            <div class="space-y-4">
                <create::CreateSet version/>
                <section aria-label="Replay sets" class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
                    <h2 class="mb-2 text-sm font-semibold text-slate-700">"Sets"</h2>
                    <Transition fallback=|| view! { <p class="text-xs text-slate-500">"Loading…"</p> }>
                            {move || Suspend::new(async move {
                                or_alert(ready(sets).await, "", |sets| {
                                    if sets.is_empty() {
                                        view! { <p data-testid="no-replay-sets" class="text-xs text-slate-500">"No sets yet."</p> }.into_any()
                                    } else {
                                        view! {
                                            <ul data-testid="replay-sets" class="divide-y divide-slate-100 text-sm">
                                                {sets.into_iter().map(|s| {
                                                    let sid = s.id.clone();
                                                    let current = move || (set_id.get().as_deref() == Some(sid.as_str())).then_some("page");
                                                    view! {
                                                        <li class="py-1.5">
                                                            <a
                                                                data-testid="replay-set-link"
                                                                href=format!("/replays?set={}", s.id)
                                                                aria-current=current
                                                                class="block rounded px-1 hover:bg-slate-50 aria-[current=page]:bg-indigo-50"
                                                            >
                                                                <span class="font-medium text-slate-800">{s.name.clone()}</span>
                                                                <span class="ml-2 text-xs text-slate-500">
                                                                    {format!("{} turns · {} · {}", s.turns, s.created_by, crate::components::time::date_hm(&s.created_at))}
                                                                </span>
                                                            </a>
                                                        </li>
                                                    }
                                                }).collect_view()}
                                            </ul>
                                        }.into_any()
                                    }
                                })
                            })}
                    </Transition>
                </section>
            </div>
            <div class="space-y-4 lg:col-span-2">
                {move || match set_id.get() {
                    Some(id) => view! { <set::SetPanel id run_id/> }.into_any(),
                    None => view! {
                        <p data-testid="replay-pick" class="rounded-xl border border-dashed border-slate-300 p-6 text-center text-sm text-slate-500">
                            "Pick a set, or make one from a filter."
                        </p>
                    }.into_any(),
                }}
                {move || run_id.get().map(|id| view! { <run::RunSummary id/> })}
            </div>
        </div>
    }
}
