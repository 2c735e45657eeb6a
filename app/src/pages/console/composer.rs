//! The composer: the box the agent types the customer's message into, why
//! the last turn failed, and what the AI is doing.
//!
//! It is focused as soon as the page shows (`autofocus`), so the agent can
//! type before the page's script has loaded. The text box is not bound to
//! the draft by a property (hydration would reset it and lose what was
//! typed): the draft is read from its input, and written back only when the
//! page changes it (cleared on send, given back on failure).

use leptos::prelude::*;

use super::api::SendMessage;
use super::live::{now, Chat};
use super::state::SendRefused;
use crate::call::Call;
use crate::components::icons::{Icon, IconKind};
use crate::session::reload_to;

#[component]
pub fn Composer(chat: Chat) -> impl IntoView {
    let Chat {
        state,
        connected,
        draft,
        ..
    } = chat;
    let running = Memo::new(move |_| state.with(|s| s.running()));
    let blocked = Memo::new(move |_| state.with(|s| s.blocked()));
    let error = Memo::new(move |_| state.with(|s| s.error.clone()));
    let composer = NodeRef::<leptos::html::Textarea>::new();

    let send_action = Call::<SendMessage>::new();
    let send = move || {
        if !connected.get_untracked() {
            return;
        }
        let text = draft.get_untracked();
        let started = state
            .try_update(|s| s.start_send(&text, now()))
            .unwrap_or(Err(SendRefused::Busy));
        if started.is_ok() {
            draft.set(String::new());
            send_action.dispatch(SendMessage {
                session_id: state.with_untracked(|s| s.session_id().to_string()),
                message: text,
            });
        }
    };
    Effect::new(move |_| match send_action.answer().get() {
        Some(Ok(accepted)) => chat.update(|s| s.send_accepted(accepted)),
        Some(Err(e)) => {
            if e.is_unauthorized() {
                reload_to("/login");
            }
            chat.update(|s| s.send_failed(e.message));
        }
        None => {}
    });

    // The box and the draft (browser only).
    #[cfg(feature = "hydrate")]
    {
        crate::components::draft::keep_draft(draft, composer, || {});
        Effect::new(move |_| {
            if let Some(el) = composer.get() {
                focus_when_shown(el, FOCUS_TRIES);
            }
        });
        // Back to the box when a turn ends.
        Effect::new(move |was_blocked: Option<bool>| {
            let now_blocked = blocked.get();
            if was_blocked == Some(true) && !now_blocked {
                if let Some(el) = composer.get_untracked() {
                    focus_when_shown(el, FOCUS_TRIES);
                }
            }
            now_blocked
        });
    }

    let status = move || {
        if running.get() {
            "The AI is replying…"
        } else if blocked.get() {
            "Paused: waiting for supervisor approval"
        } else if !connected.get() {
            "Connecting…"
        } else {
            ""
        }
    };

    view! {
        <div class="border-t border-slate-200 bg-white px-4 py-3">
            <div class="mx-auto max-w-3xl">
                {move || error.get().map(|message| view! { <TurnError message/> })}
                <form
                    class="flex items-end gap-2"
                    on:submit=move |ev| {
                        ev.prevent_default();
                        send();
                    }
                >
                    <label class="sr-only" for="composer">"Customer message"</label>
                    <textarea
                        id="composer"
                        node_ref=composer
                        data-testid="composer"
                        rows="2"
                        autofocus
                        placeholder="Type the customer's message…"
                        aria-describedby="composer-hint"
                        class="min-h-14 flex-1 resize-none rounded-xl border border-slate-300 bg-white px-3 py-2 text-sm shadow-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200 disabled:bg-slate-50 disabled:text-slate-500"
                        disabled=move || blocked.get()
                        on:input=move |ev| draft.set(event_target_value(&ev))
                        on:keydown=move |ev| {
                            if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                                ev.prevent_default();
                                send();
                            }
                        }
                    ></textarea>
                    <button
                        type="submit"
                        data-testid="send"
                        class="h-14 rounded-xl bg-indigo-600 px-5 text-sm font-medium text-white shadow-sm hover:bg-indigo-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500 disabled:cursor-not-allowed disabled:opacity-50"
                        disabled=move || {
                            blocked.get() || !connected.get() || draft.with(|d| d.trim().is_empty())
                        }
                    >
                        "Send"
                    </button>
                </form>
                <p id="composer-hint" class="mt-1.5 flex gap-3 text-xs text-slate-500">
                    <span>
                        <kbd class="rounded border border-slate-300 bg-slate-50 px-1 font-sans">"Enter"</kbd>
                        " sends · "
                        <kbd class="rounded border border-slate-300 bg-slate-50 px-1 font-sans">"Shift+Enter"</kbd>
                        " new line"
                    </span>
                    <span data-testid="composer-status" class="ml-auto">{status}</span>
                </p>
            </div>
        </div>
    }
}

/// How many frames to wait for the box to be shown.
#[cfg(feature = "hydrate")]
const FOCUS_TRIES: u8 = 10;

/// Focuses the box once it is in the document and enabled: a conversation
/// opened from within the page is built before it replaces the old one, and
/// a box is re-enabled after the render that ends its turn.
#[cfg(feature = "hydrate")]
fn focus_when_shown(el: web_sys::HtmlTextAreaElement, tries: u8) {
    if el.is_connected() && !el.disabled() {
        let _ = el.focus();
    } else if tries > 0 {
        request_animation_frame(move || focus_when_shown(el, tries - 1));
    }
}

/// Why the last turn failed, and that the message was kept.
#[component]
fn TurnError(message: String) -> impl IntoView {
    view! {
        <p
            role="alert"
            data-testid="turn-error"
            class="mb-2 flex items-start gap-2 rounded-lg border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800"
        >
            <Icon kind=IconKind::Alert class="mt-0.5 h-5 w-5 shrink-0 text-red-600"/>
            <span>
                <span class="block font-medium">"The AI's reply failed."</span>
                <span class="block text-red-700">{message}</span>
                <span class="block text-xs text-red-700">
                    "Your message is kept in the composer — send it again when ready."
                </span>
            </span>
        </p>
    }
}
