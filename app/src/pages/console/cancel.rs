//! A supervisor's way out of a stuck conversation: cancel the turn that
//! holds it (running, waiting for approval, or resuming). The server ends
//! the run and its pending approvals, notes who cancelled it, and the
//! conversation takes messages again; the `final` that follows updates the
//! page like any other.

use leptos::prelude::*;

use crate::call::Call;
use crate::components::lazy::{lazy_view, part_or_alert};

use super::api::CancelTurn;
use super::live::Chat;

/// "Cancel turn", with an optional reason, for supervisors while a run
/// holds the conversation. The form behind the button is rarely opened: it
/// is a lazy part (`components::lazy`), fetched on the click.
#[component]
pub fn CancelTurnControl(chat: Chat) -> impl IntoView {
    let active = Memo::new(move |_| chat.state.with(|s| s.active_run()));
    let asking = RwSignal::new(false);
    view! {
        <Show when=move || active.get().is_some()>
            <div data-testid="cancel-turn" class="flex items-center gap-2 text-xs">
                <Show
                    when=move || asking.get()
                    fallback=move || view! {
                        <button
                            type="button"
                            data-testid="cancel-turn-open"
                            class="rounded-md px-2 py-1 font-medium text-rose-700 ring-1 ring-rose-200 hover:bg-rose-50"
                            on:click=move |_| asking.set(true)
                        >
                            "Cancel turn"
                        </button>
                    }
                >
                    <Suspense>
                        {Suspend::new(async move {
                            part_or_alert(cancel_form(active, asking).await, "The cancel form")
                        })}
                    </Suspense>
                </Show>
            </div>
        </Show>
    }
}

lazy_view! {
    fn cancel_form(active: Memo<Option<String>>, asking: RwSignal<bool>) {
        view! { <CancelForm active asking/> }
    }
}

/// The reason, "Cancel the turn" and "Keep it"; closed when the server
/// has cancelled the turn.
#[component]
fn CancelForm(active: Memo<Option<String>>, asking: RwSignal<bool>) -> impl IntoView {
    let cancel = Call::<CancelTurn>::new();
    let reason = RwSignal::new(String::new());
    let error = Memo::new(move |_| match cancel.answer().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = cancel.answer().get() {
            asking.set(false);
        }
    });
    let confirm = move |_| {
        if let Some(id) = active.get_untracked() {
            let text = reason.get_untracked();
            let text = text.trim();
            cancel.dispatch(CancelTurn {
                graph_execution_id: id,
                reason: (!text.is_empty()).then(|| text.to_owned()),
            });
        }
    };
    view! {
        <input
            type="text"
            data-testid="cancel-turn-reason"
            aria-label="Why the turn is cancelled (optional)"
            placeholder="Reason (optional)"
            class="w-44 rounded-md border border-slate-300 px-2 py-1"
            prop:value=move || reason.get()
            on:input=move |ev| reason.set(event_target_value(&ev))
        />
        <button
            type="button"
            data-testid="cancel-turn-confirm"
            class="rounded-md bg-rose-600 px-2 py-1 font-medium text-white hover:bg-rose-700 disabled:opacity-50"
            disabled=move || cancel.pending().get()
            on:click=confirm
        >
            "Cancel the turn"
        </button>
        <button
            type="button"
            class="rounded-md px-2 py-1 text-slate-600 hover:bg-slate-100"
            on:click=move |_| asking.set(false)
        >
            "Keep it"
        </button>
        {move || error.get().map(|e| view! {
            <span role="alert" class="text-rose-700">{e}</span>
        })}
    }
}
