//! The handling bar above the transcript: who handles the conversation and
//! the actions the table of transitions allows from there (take over, hand
//! back, resolve, reopen), and — for the staff member holding it — the
//! reply box with "Draft a reply" (the AI suggests, the agent edits and
//! sends); an internal note can be written by anyone.

use aics_types::{HandlingAction, HandlingState};
use leptos::prelude::*;

use super::api::{AddNote, ChangeHandling, DraftReply, NewChatLink, ReplyAsAgent};
use super::live::Chat;
use super::state::Effects;
use crate::call::Call;
use crate::components::badges::HandlingBadge;
use crate::components::lazy::{lazy_view, part_or_alert};
use crate::session::Session;

#[component]
pub fn HandlingBar(chat: Chat, session: Session) -> impl IntoView {
    let state = chat.state;
    let me = StoredValue::new(session.user.username.clone());
    let handling = Memo::new(move |_| state.with(|s| s.handling));
    let assignee = Memo::new(move |_| state.with(|s| s.assignee.clone()));
    let mine = Memo::new(move |_| {
        handling.get() == HandlingState::Human
            && me.with_value(|m| assignee.get().as_deref() == Some(m.as_str()))
    });
    let error = RwSignal::new(None::<String>);
    let change = Call::<ChangeHandling>::new();
    Effect::new(move |_| match change.answer().get() {
        Some(Ok(summary)) => {
            error.set(None);
            chat.update(|s| {
                s.handling = summary.handling;
                s.assignee = summary.assignee;
                Effects::default()
            });
        }
        Some(Err(e)) => error.set(Some(e.message)),
        None => {}
    });
    let session_id = move || state.with_untracked(|s| s.session_id().to_string());
    let actions = move || {
        HandlingAction::STAFF
            .into_iter()
            .filter(|a| a.allowed_from(handling.get()))
            .map(|action| {
                view! {
                    <button
                        type="button"
                        data-testid=format!("handling-{}", action.as_str())
                        class="rounded-lg border border-slate-300 bg-white px-2.5 py-1 text-xs font-medium text-slate-700 hover:bg-slate-50 disabled:opacity-50"
                        disabled=move || change.pending().get()
                        on:click=move |_| {
                            change.dispatch(ChangeHandling { session_id: session_id(), action });
                        }
                    >
                        {action.label()}
                    </button>
                }
            })
            .collect_view()
    };
    view! {
        <div data-testid="handling-bar" class="flex flex-wrap items-center gap-2 border-b border-slate-200 bg-white px-4 py-1.5 text-xs text-slate-600">
            {move || view! { <HandlingBadge state=handling.get()/> }}
            <span data-testid="assignee">
                {move || assignee.get().map(|a| format!("with {a}")).unwrap_or_default()}
            </span>
            <span class="ml-auto flex gap-2">{actions}</span>
            <CustomerLink chat/>
            <span role="alert" data-testid="handling-error" class="w-full text-red-700 empty:hidden">
                {move || error.get().unwrap_or_default()}
            </span>
        </div>
        <StaffBox chat mine/>
    }
}

/// The reply box (when the conversation is this staff member's) and the
/// note box.
#[component]
fn StaffBox(chat: Chat, mine: Memo<bool>) -> impl IntoView {
    let state = chat.state;
    let text = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let reply = Call::<ReplyAsAgent>::new();
    let note = Call::<AddNote>::new();
    let draft = Call::<DraftReply>::new();
    Effect::new(move |_| match draft.answer().get() {
        Some(Ok(suggested)) => {
            error.set(None);
            text.set(suggested);
        }
        Some(Err(e)) => error.set(Some(e.message)),
        None => {}
    });
    let done =
        move |result: Option<Result<aics_types::ChatMessage, crate::error::AppError>>| match result
        {
            Some(Ok(message)) => {
                error.set(None);
                text.set(String::new());
                chat.update(|s| {
                    s.add_message(message);
                    Effects::default()
                });
            }
            Some(Err(e)) => error.set(Some(e.message)),
            None => {}
        };
    Effect::new(move |_| done(reply.answer().get()));
    Effect::new(move |_| done(note.answer().get()));
    let session_id = move || state.with_untracked(|s| s.session_id().to_string());
    view! {
        <div data-testid="staff-box" class="border-b border-slate-200 bg-slate-50 px-4 py-2">
            <label class="sr-only" for="staff-text">"Reply or note"</label>
            <textarea
                id="staff-text"
                data-testid="staff-text"
                rows="2"
                placeholder=move || if mine.get() { "Reply to the customer, or write an internal note…" } else { "Internal note for the team…" }
                class="w-full resize-none rounded-lg border border-slate-300 bg-white px-3 py-1.5 text-sm"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))
            ></textarea>
            <div class="mt-1 flex items-center gap-2">
                <span role="alert" class="text-xs text-red-700">{move || error.get().unwrap_or_default()}</span>
                <button
                    type="button"
                    data-testid="draft-reply"
                    title="The AI drafts a reply for you to edit and send"
                    class="ml-auto rounded-lg border border-slate-300 bg-white px-3 py-1 text-xs font-medium text-slate-700 disabled:opacity-50"
                    disabled=move || !mine.get() || draft.pending().get()
                    on:click=move |_| {
                        draft.dispatch(DraftReply { session_id: session_id() });
                    }
                >
                    {move || if draft.pending().get() { "Drafting…" } else { "Draft a reply" }}
                </button>
                <button
                    type="button"
                    data-testid="add-note"
                    class="rounded-lg border border-amber-300 bg-amber-50 px-3 py-1 text-xs font-medium text-amber-900 disabled:opacity-50"
                    disabled=move || text.with(|t| t.trim().is_empty())
                    on:click=move |_| {
                        note.dispatch(AddNote { session_id: session_id(), text: text.get_untracked() });
                    }
                >
                    "Add note"
                </button>
                <button
                    type="button"
                    data-testid="send-reply"
                    class="rounded-lg bg-sky-700 px-3 py-1 text-xs font-medium text-white disabled:opacity-50"
                    disabled=move || !mine.get() || text.with(|t| t.trim().is_empty())
                    on:click=move |_| {
                        reply.dispatch(ReplyAsAgent { session_id: session_id(), text: text.get_untracked() });
                    }
                >
                    "Reply as me"
                </button>
            </div>
        </div>
    }
}

/// "Customer link": mints the conversation's link for the customer and
/// copies it (an earlier link stops working). Few conversations need one,
/// so the minting is a lazy part (`components::lazy`), fetched on the first
/// click; every click mints a new link.
#[component]
fn CustomerLink(chat: Chat) -> impl IntoView {
    let clicks = RwSignal::new(0u32);
    let opened = Memo::new(move |_| clicks.get() > 0);
    view! {
        <button
            type="button"
            data-testid="customer-link"
            title="A link for the customer to this conversation (an earlier link stops working)"
            class="rounded-lg border border-indigo-200 bg-indigo-50 px-2.5 py-1 text-xs font-medium text-indigo-800 hover:bg-indigo-100"
            on:click=move |_| clicks.update(|n| *n += 1)
        >
            "Customer link"
        </button>
        {move || opened.get().then(|| view! {
            <Suspense>
                {Suspend::new(async move {
                    part_or_alert(link_minter(chat, clicks).await, "The customer link")
                })}
            </Suspense>
        })}
    }
}

lazy_view! {
    fn link_minter(chat: Chat, clicks: RwSignal<u32>) {
        view! { <LinkMinter chat clicks/> }
    }
}

/// Mints a link on each click (the first one included) and shows it, copied.
#[component]
fn LinkMinter(chat: Chat, clicks: RwSignal<u32>) -> impl IntoView {
    let mint = Call::<NewChatLink>::new();
    let shown = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        clicks.track();
        mint.dispatch(NewChatLink {
            session_id: chat.state.with_untracked(|s| s.session_id().to_string()),
        });
    });
    Effect::new(move |_| {
        if let Some(Ok(link)) = mint.answer().get() {
            #[cfg(feature = "hydrate")]
            let url = web_sys::window()
                .and_then(|w| w.location().origin().ok())
                .map(|origin| format!("{origin}{}", link.path))
                .unwrap_or(link.path.clone());
            #[cfg(not(feature = "hydrate"))]
            let url = link.path.clone();
            #[cfg(feature = "hydrate")]
            if let Some(w) = web_sys::window() {
                let _ = w.navigator().clipboard().write_text(&url);
            }
            shown.set(Some(url));
        }
    });
    view! {
        {move || mint.answer().get().and_then(Result::err).map(|e| view! {
            <span role="alert" class="text-red-700">{e.message}</span>
        })}
        <input
            readonly
            data-testid="customer-link-url"
            aria-label="Customer link (copied)"
            class="w-full rounded border border-slate-200 bg-slate-50 px-2 py-1 font-mono text-[11px]"
            class:hidden=move || shown.get().is_none()
            prop:value=move || shown.get().unwrap_or_default()
        />
    }
}
