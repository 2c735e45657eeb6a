//! The turn page's forks (supervisors, on a finished or paused turn): the
//! "Fork from here" target a step sets ([`ForkTarget`]), the small form to
//! edit the customer's message and pick a protocol and a provider, and the
//! list of the turn's forks, each compared with the original
//! ([`super::compare`]).
//!
//! The list is loaded by the browser only, after mount, into a signal (the
//! server and the hydrating page render the same "Loading" line; not a
//! `LocalResource` in `Suspense`, which can contradict the Suspense's
//! markers when it resolves during hydration); it is loaded again when a
//! fork starts and every two seconds while one still runs. The form's
//! providers are loaded the same way when it opens.

use aics_types::{ChatTurnTraceResult, CheckpointView, ProviderInfo, StudioRunState};
use leptos::prelude::*;

use crate::call::Call;
use crate::components::poll::poll_every;
use serde_json::Value;

use super::api::{list_forks, StartFork};
use super::compare::ForkCard;

/// The step a supervisor chose to fork from.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkFrom {
    pub checkpoint_id: String,
    pub step: u32,
    pub node: String,
    /// The last customer message in the step's state (the form's default).
    pub message: String,
}

/// Provided by the turn page when the user may fork this turn; the steps
/// show "Fork from here" only when it is there.
#[derive(Debug, Clone, Copy)]
pub struct ForkTarget(pub RwSignal<Option<ForkFrom>>);

impl ForkFrom {
    pub fn of(checkpoint: &CheckpointView) -> Self {
        Self {
            checkpoint_id: checkpoint.checkpoint_id.clone(),
            step: checkpoint.step,
            node: checkpoint.node.clone(),
            message: last_customer_message(&checkpoint.state),
        }
    }
}

/// The content of the last `user` message of a checkpointed state.
pub fn last_customer_message(state: &Value) -> String {
    state
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|messages| {
            messages
                .iter()
                .rev()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        })
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The form and the forks of turn `gid`, compared with `original`.
#[component]
pub fn ForksPanel(gid: String, original: ChatTurnTraceResult, target: ForkTarget) -> impl IntoView {
    let version = RwSignal::new(0u32);
    // None until the browser has loaded the list (and on the server).
    let forks = RwSignal::new(None::<Result<Vec<aics_types::StudioRun>, String>>);
    let list_gid = StoredValue::new(gid.clone());
    let load = move || {
        leptos::task::spawn_local(async move {
            let result = list_forks(list_gid.get_value())
                .await
                .map_err(|e| e.to_string());
            forks.set(Some(result));
        })
    };
    let start = Call::<StartFork>::new();
    Effect::new(move |_| {
        if let Some(Ok(_)) = start.answer().get() {
            target.0.set(None);
            version.update(|v| *v += 1);
        }
    });
    // Effects run in the browser only, after hydration: the first load,
    // a load after each fork started, and every two seconds while one runs.
    Effect::new(move |_| {
        version.track();
        load();
    });
    poll_every(std::time::Duration::from_secs(2), move || {
        let running = forks.with_untracked(|f| {
            matches!(f, Some(Ok(runs)) if runs.iter().any(|r| r.state == StudioRunState::Running))
        });
        if running {
            load();
        }
    });
    let turn_model = original.model.clone();
    let original = StoredValue::new(original);
    view! {
        <section aria-label="Forks" data-testid="forks" class="mt-6 space-y-3">
            <h2 class="text-sm font-semibold text-slate-700">"Forks"</h2>
            <p class="text-xs text-slate-500">
                "A fork runs again from a step, apart from the conversation: it sends no message, opens no ticket and asks for no approval (ticket and escalation calls are simulated)."
            </p>
            {move || target.0.get().map(|from| view! {
                <ForkForm gid=gid.clone() from start target turn_model=turn_model.clone()/>
            })}
            {move || match forks.get() {
                None => view! { <p class="text-xs text-slate-500">"Loading forks…"</p> }.into_any(),
                Some(Ok(runs)) if runs.is_empty() => view! {
                    <p data-testid="no-forks" class="text-xs text-slate-500">"No forks yet: use “Fork from here” on a step."</p>
                }.into_any(),
                Some(Ok(runs)) => view! {
                    <ul data-testid="fork-list" class="space-y-3">
                        {runs
                            .into_iter()
                            .map(|run| view! { <ForkCard run original=original.get_value()/> })
                            .collect_view()}
                    </ul>
                }.into_any(),
                Some(Err(e)) => view! {
                    <p class="text-xs text-red-700">{format!("Could not load the forks: {e}")}</p>
                }.into_any(),
            }}
        </section>
    }
}

/// The provider a fork of a turn answered by `model` starts on: the one
/// with that model (the default first), else the default.
pub fn preselected(providers: &[ProviderInfo], model: &str) -> Option<String> {
    let mut by_model: Vec<&ProviderInfo> = providers.iter().filter(|p| p.model == model).collect();
    by_model.sort_by_key(|p| !p.is_default);
    by_model
        .first()
        .copied()
        .or_else(|| providers.iter().find(|p| p.is_default))
        .map(|p| p.name.clone())
}

/// The form for one fork: the customer's message (editable), the
/// protocol, and the provider (the turn's preselected).
#[component]
fn ForkForm(
    gid: String,
    from: ForkFrom,
    start: Call<StartFork>,
    target: ForkTarget,
    /// The model that answered the turn (`trace.model`).
    turn_model: String,
) -> impl IntoView {
    let original_message = from.message.clone();
    let message = RwSignal::new(from.message.clone());
    let protocol = RwSignal::new(String::new());
    // Empty until the browser loaded the providers: the turn's own then.
    let provider = RwSignal::new(String::new());
    let providers = RwSignal::new(Vec::<ProviderInfo>::new());
    Effect::new(move |_| {
        let turn_model = turn_model.clone();
        leptos::task::spawn_local(async move {
            if let Ok(list) = crate::session::api::list_providers().await {
                // The options first, then the choice among them.
                let choice = preselected(&list, &turn_model);
                providers.set(list);
                if let Some(name) = choice {
                    provider.set(name);
                }
            }
        })
    });
    let checkpoint_id = from.checkpoint_id.clone();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = message.get_untracked();
        // The unchanged message is no edit.
        let edited = if text.trim() == original_message.trim() {
            String::new()
        } else {
            text
        };
        start.dispatch(StartFork {
            graph_execution_id: gid.clone(),
            checkpoint_id: checkpoint_id.clone(),
            message: edited,
            protocol: protocol.get_untracked(),
            provider: provider.get_untracked(),
        });
    };
    let error = move || match start.answer().get() {
        Some(Err(e)) => e.to_string(),
        _ => String::new(),
    };
    view! {
        <form data-testid="fork-form" on:submit=on_submit class="space-y-2 rounded-xl border border-indigo-200 bg-indigo-50/50 p-3">
            <p class="text-sm font-medium text-slate-800">
                {format!("Fork from step {} ({})", from.step, from.node)}
            </p>
            <label class="block text-xs text-slate-600">
                "Customer message"
                <textarea
                    data-testid="fork-message"
                    rows="3"
                    class="mt-1 block w-full rounded-md border border-slate-300 p-2 text-sm"
                    prop:value=move || message.get()
                    on:input=move |ev| message.set(event_target_value(&ev))
                ></textarea>
            </label>
            <label class="block text-xs text-slate-600">
                "Protocol "
                <select
                    data-testid="fork-protocol"
                    class="rounded-md border border-slate-300 p-1 text-xs"
                    on:change=move |ev| protocol.set(event_target_value(&ev))
                >
                    <option value="">"as the turn"</option>
                    <option value="native">"native tool calls"</option>
                    <option value="json_plan">"JSON plan"</option>
                </select>
            </label>
            <label class="block text-xs text-slate-600">
                "Provider "
                <select
                    data-testid="fork-provider"
                    class="rounded-md border border-slate-300 p-1 text-xs"
                    prop:value=move || provider.get()
                    on:change=move |ev| provider.set(event_target_value(&ev))
                >
                    <option value="">"as the turn"</option>
                    {move || {
                        providers
                            .get()
                            .into_iter()
                            .map(|p| {
                                let label = format!(
                                    "{} · {}{} · {}",
                                    p.name,
                                    p.model,
                                    if p.is_default { " (default)" } else { "" },
                                    p.status_text(),
                                );
                                let selected = provider.get_untracked() == p.name;
                                view! { <option value=p.name selected=selected>{label}</option> }
                            })
                            .collect_view()
                    }}
                </select>
            </label>
            <div class="flex items-center gap-2">
                <button
                    type="submit"
                    data-testid="fork-start"
                    class="rounded-md bg-indigo-600 px-3 py-1 text-xs font-medium text-white hover:bg-indigo-700 disabled:opacity-50"
                    disabled=move || start.pending().get()
                >
                    "Start the fork"
                </button>
                <button type="button" class="text-xs text-slate-600 hover:underline" on:click=move |_| target.0.set(None)>
                    "Cancel"
                </button>
                <span role="alert" class="text-xs text-red-700">{error}</span>
            </div>
        </form>
    }
}

/// The step's "Fork from here" button, when the page offers forks.
#[component]
pub fn ForkButton(checkpoint: CheckpointView) -> impl IntoView {
    let target = use_context::<ForkTarget>();
    target.map(|target| {
        let from = ForkFrom::of(&checkpoint);
        view! {
            <button
                type="button"
                data-testid="fork-here"
                class="rounded-md border border-indigo-200 px-2 py-0.5 text-xs text-indigo-700 hover:bg-indigo-50"
                on:click=move |_| target.0.set(Some(from.clone()))
            >
                "Fork from here"
            </button>
        }
    })
}
