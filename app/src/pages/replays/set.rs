//! One replay set: its name, filter and size, the form that starts a
//! replay run of it (provider, engine, protocol; each "as each turn" when
//! left so), and its runs, newest first, each linking to its summary.
//! Loaded by the browser after mount, again when a run starts, and every
//! two seconds while one of its runs is running.

use aics_types::{ReplayOptions, ReplayRunState, ReplaySet};
use leptos::prelude::*;

use crate::components::poll::poll_every;
use leptos_router::hooks::use_navigate;

use super::api::{get_replay_set, start_replay};

/// What the set's filter says, in words.
pub fn describe(set: &ReplaySet) -> String {
    let Some(f) = &set.filter else {
        return "chosen by turn id".into();
    };
    let mut parts = Vec::new();
    if let Some(q) = &f.q {
        parts.push(format!("message contains “{q}”"));
    }
    if let Some(from) = f.from {
        parts.push(format!("from {}", crate::components::time::date(&from)));
    }
    if let Some(to) = f.to {
        parts.push(format!("before {}", crate::components::time::date(&to)));
    }
    if let Some(tool) = &f.tool {
        parts.push(format!("used {tool}"));
    }
    if let Some(o) = f.outcome {
        parts.push(format!("ended {}", o.as_str()));
    }
    if parts.is_empty() {
        "every stored turn".into()
    } else {
        parts.join(" · ")
    }
}

pub fn state_badge(state: ReplayRunState) -> &'static str {
    match state {
        ReplayRunState::Running => "bg-sky-100 text-sky-900",
        ReplayRunState::Done => "bg-emerald-100 text-emerald-900",
        ReplayRunState::Interrupted => "bg-red-100 text-red-900",
    }
}

#[component]
pub fn SetPanel(id: String, run_id: Memo<Option<String>>) -> impl IntoView {
    let set = RwSignal::new(None::<Result<ReplaySet, String>>);
    let version = RwSignal::new(0u32);
    let id = StoredValue::new(id);
    let load = move || {
        leptos::task::spawn_local(async move {
            let result = get_replay_set(id.get_value())
                .await
                .map_err(|e| e.to_string());
            set.set(Some(result));
        })
    };
    Effect::new(move |_| {
        version.track();
        run_id.track();
        load();
    });
    poll_every(std::time::Duration::from_secs(2), move || {
        let running = set.with_untracked(|s| {
            matches!(s, Some(Ok(s)) if s.runs.iter().any(|r| r.state == ReplayRunState::Running))
        });
        if running {
            load();
        }
    });
    view! {
        <section aria-label="Replay set" data-testid="replay-set" class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            {move || match set.get() {
                None => view! { <p class="text-xs text-slate-500">"Loading the set…"</p> }.into_any(),
                Some(Err(e)) => view! { <p role="alert" class="text-xs text-red-700">{e}</p> }.into_any(),
                Some(Ok(s)) => view! { <SetView set=s version/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn SetView(set: ReplaySet, version: RwSignal<u32>) -> impl IntoView {
    let engine = RwSignal::new(String::new());
    let protocol = RwSignal::new(String::new());
    let provider = RwSignal::new(String::new());
    // The configured providers, loaded when the panel opens.
    let providers = RwSignal::new(Vec::<aics_types::ProviderInfo>::new());
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            if let Ok(list) = crate::session::api::list_providers().await {
                providers.set(list);
            }
        });
    });
    let error = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let set_id = set.id.clone();
    let navigate = use_navigate();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let some = |s: String| Some(s).filter(|s| !s.trim().is_empty());
        let options = ReplayOptions {
            provider: some(provider.get_untracked()),
            engine: some(engine.get_untracked()),
            protocol: some(protocol.get_untracked()),
        };
        let set_id = set_id.clone();
        let navigate = navigate.clone();
        busy.set(true);
        leptos::task::spawn_local(async move {
            let result = start_replay(set_id.clone(), options).await;
            busy.set(false);
            match result {
                Ok(run) => {
                    error.set(String::new());
                    version.update(|v| *v += 1);
                    navigate(
                        &format!("/replays?set={set_id}&run={}", run.id),
                        Default::default(),
                    );
                }
                Err(e) => error.set(e.to_string()),
            }
        });
    };
    const FIELD: &str = "rounded-md border border-slate-300 p-1 text-xs";
    let runs = set.runs.clone();
    let sid = set.id.clone();
    view! {
        <div class="flex flex-wrap items-baseline gap-2">
            <h2 data-testid="replay-set-name" class="text-base font-semibold text-slate-800">{set.name.clone()}</h2>
            <span data-testid="replay-set-size" class="text-xs text-slate-500">
                {format!("{} turns · {} · by {}", set.turn_ids.len(), describe(&set), set.created_by)}
            </span>
        </div>
        <form data-testid="replay-start-form" on:submit=on_submit class="mt-3 flex flex-wrap items-end gap-3 rounded-lg bg-indigo-50/60 p-2 text-xs text-slate-600">
            <label class="block">
                "Provider "
                <select data-testid="replay-provider" class=FIELD on:change=move |ev| provider.set(event_target_value(&ev))>
                    <option value="">"as each turn"</option>
                    {move || providers.get().into_iter().map(|p| {
                        let label = format!("{} ({})", p.name, p.model);
                        view! { <option value=p.name.clone()>{label}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label class="block">
                "Engine "
                <select data-testid="replay-engine" class=FIELD on:change=move |ev| engine.set(event_target_value(&ev))>
                    <option value="">"as each turn"</option>
                    <option value="graph">"graph"</option>
                    <option value="linear">"linear"</option>
                </select>
            </label>
            <label class="block">
                "Protocol "
                <select data-testid="replay-protocol" class=FIELD on:change=move |ev| protocol.set(event_target_value(&ev))>
                    <option value="">"as each turn"</option>
                    <option value="native">"native tool calls"</option>
                    <option value="json_plan">"JSON plan"</option>
                </select>
            </label>
            <button type="submit" data-testid="replay-start" disabled=move || busy.get()
                class="rounded-md bg-indigo-600 px-3 py-1 text-xs font-medium text-white hover:bg-indigo-700 disabled:opacity-50">
                "Replay the set"
            </button>
            <span role="alert" data-testid="replay-start-error" class="text-red-700">{move || error.get()}</span>
        </form>
        <h3 class="mt-3 text-xs font-semibold text-slate-600">"Replay runs"</h3>
        {if runs.is_empty() {
            view! { <p data-testid="no-replay-runs" class="text-xs text-slate-500">"Not replayed yet."</p> }.into_any()
        } else {
            view! {
                <ul data-testid="replay-runs" class="mt-1 space-y-1 text-xs">
                    {runs.into_iter().map(|r| {
                        let options = format!(
                            "engine {} · protocol {} · provider {}",
                            r.engine.clone().unwrap_or_else(|| "as each turn".into()),
                            r.protocol.clone().unwrap_or_else(|| "as each turn".into()),
                            r.provider.clone().unwrap_or_else(|| "as each turn".into()),
                        );
                        view! {
                            <li>
                                <a data-testid="replay-run-link" data-state=r.state.as_str()
                                    href=format!("/replays?set={sid}&run={}", r.id)
                                    class="flex flex-wrap items-center gap-2 rounded px-1 hover:bg-slate-50">
                                    <span class=format!("rounded-full px-2 py-0.5 font-medium {}", state_badge(r.state))>{r.state.as_str()}</span>
                                    <span class="font-mono">{crate::components::time::date_hms(&r.created_at)}</span>
                                    <span class="text-slate-500">{options}</span>
                                </a>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            }.into_any()
        }}
    }
}
