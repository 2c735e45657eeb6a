//! The left column: the most recently active conversations (a page of
//! them, and "Show older" for the next) with their handling label and last
//! message, "New", and the inbox's search and handling filter.
//!
//! The list is one stop for Tab (the open conversation, or the first):
//! arrow keys, Home and End move within it, so the composer is a few Tabs
//! away however many conversations are shown.

use aics_types::{ConversationSummary, HandlingState, InboxQuery, INBOX_MAX, INBOX_PAGE};
use leptos::prelude::*;

use super::api::{list_conversations, search_conversations, CreateConversation};
use super::state::UNTITLED;
use crate::call::Call;
use crate::components::badges::HandlingBadge;
use crate::components::errors::or_alert;
use crate::components::icons::{Icon, IconKind};
use crate::components::server_form::ServerForm;
use crate::session::reload_to;
use crate::wire::{ready, resource};

/// The conversation list; `refresh` reloads it.
#[component]
pub fn ConversationList(current: Memo<Option<String>>, refresh: RwSignal<u32>) -> impl IntoView {
    let create = Call::<CreateConversation>::new();
    // The inbox's search and handling filter: empty (as on the server)
    // lists every conversation.
    let text = RwSignal::new(String::new());
    let handling = RwSignal::new(String::new());
    // How many the unfiltered list asks for: a page, and a page more for
    // each "Show older". A live refresh asks for as many again, so what
    // is shown stays shown.
    let shown = RwSignal::new(INBOX_PAGE);
    let conversations = resource(
        move || {
            (
                refresh.get(),
                create.answered().get(),
                text.get(),
                handling.get(),
                shown.get(),
            )
        },
        |(_, _, q, handling, shown)| async move {
            let handling = HandlingState::parse(&handling);
            if q.trim().is_empty() && handling.is_none() {
                list_conversations(shown).await
            } else {
                search_conversations(InboxQuery {
                    q: Some(q).filter(|q| !q.trim().is_empty()),
                    handling,
                    ..InboxQuery::default()
                })
                .await
            }
        },
    );
    // On success the server function redirects to the new conversation.
    Effect::new(move |_| {
        if let Some(Err(e)) = create.answer().get() {
            if e.is_unauthorized() {
                reload_to("/login");
            }
        }
    });
    let create_error = move || match create.answer().get() {
        Some(Err(e)) if !e.is_unauthorized() => Some(e.message),
        _ => None,
    };
    view! {
        <aside
            aria-label="Conversations"
            class="flex max-h-72 flex-col border-b border-slate-200 bg-white md:sticky md:top-14 md:row-span-2 md:h-[calc(100vh-3.5rem)] md:max-h-none md:self-start md:border-b-0 md:border-r xl:static xl:row-span-1 xl:h-full"
        >
            <div class="flex items-center justify-between gap-2 px-3 py-3">
                <h2 class="text-sm font-semibold text-slate-700">"Conversations"</h2>
                <NewConversation create/>
            </div>
            <div class="flex gap-1 px-3 pb-2">
                <label class="sr-only" for="inbox-search">"Search conversations"</label>
                <input
                    id="inbox-search"
                    type="search"
                    data-testid="inbox-search"
                    placeholder="Search…"
                    class="min-w-0 flex-1 rounded-lg border border-slate-300 px-2 py-1 text-xs"
                    on:input=move |ev| text.set(event_target_value(&ev))
                />
                <label class="sr-only" for="inbox-handling">"Handling"</label>
                <select
                    id="inbox-handling"
                    data-testid="inbox-handling"
                    class="rounded-lg border border-slate-300 px-1 py-1 text-xs"
                    on:change=move |ev| handling.set(event_target_value(&ev))
                >
                    <option value="">"All"</option>
                    <option value="ai">"AI"</option>
                    <option value="waiting_human">"Waiting for human"</option>
                    <option value="human">"Human"</option>
                    <option value="waiting_approval">"Waiting for approval"</option>
                    <option value="closed">"Closed"</option>
                </select>
            </div>
            {move || {
                create_error()
                    .map(|m| view! { <p role="alert" class="mx-3 mb-2 rounded bg-red-50 px-2 py-1 text-xs text-red-700">{m}</p> })
            }}
            <div class="min-h-0 flex-1 overflow-y-auto">
                <Transition fallback=|| view! { <p class="px-3 py-2 text-sm text-slate-500">"Loading…"</p> }>
                        {move || Suspend::new(async move {
                            or_alert(ready(conversations).await, "mx-3 p-2", |list| {
                                    if list.is_empty() {
                                        view! {
                                            <p class="px-3 py-2 text-sm text-slate-500">"No conversations yet."</p>
                                        }
                                            .into_any()
                                    } else {
                                        // A full list may have older ones
                                        // (a search shows its first page).
                                        let more = list.len() as u32 >= shown.get_untracked()
                                            && shown.get_untracked() < INBOX_MAX
                                            && text.with_untracked(|t| t.trim().is_empty())
                                            && handling.with_untracked(String::is_empty);
                                        let ids: Vec<String> =
                                            list.iter().map(|c| c.session_id.clone()).collect();
                                        let tab_stop = Memo::new(move |_| {
                                            current
                                                .get()
                                                .filter(|c| ids.contains(c))
                                                .or_else(|| ids.first().cloned())
                                        });
                                        view! {
                                            <ul
                                                data-testid="conversation-list"
                                                class="space-y-0.5 px-2 pb-3"
                                                on:keydown=move_focus
                                            >
                                                {list
                                                    .into_iter()
                                                    .map(|c| view! { <ConversationItem summary=c current tab_stop/> })
                                                    .collect_view()}
                                            </ul>
                                            {more.then(|| view! {
                                                <button
                                                    type="button"
                                                    data-testid="show-older"
                                                    class="mx-3 mb-3 w-[calc(100%-1.5rem)] rounded-lg border border-slate-200 px-2 py-1.5 text-xs text-slate-600 hover:bg-slate-50"
                                                    on:click=move |_| shown.update(|n| *n = (*n + INBOX_PAGE).min(INBOX_MAX))
                                                >
                                                    "Show older"
                                                </button>
                                            })}
                                        }
                                            .into_any()
                                    }
                                })
                        })}
                </Transition>
            </div>
        </aside>
    }
}

/// "New": a plain form post, so it works as soon as the page is visible;
/// once the page's script runs, the same form is sent without a reload.
#[component]
fn NewConversation(create: Call<CreateConversation>) -> impl IntoView {
    view! {
        <ServerForm action=create input=|_| CreateConversation {}>
            <button
                type="submit"
                data-testid="new-conversation"
                class="inline-flex items-center gap-1 rounded-lg bg-indigo-600 px-2.5 py-1.5 text-sm font-medium text-white shadow-sm hover:bg-indigo-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500 disabled:opacity-60"
                disabled=move || create.pending().get()
            >
                <Icon kind=IconKind::Plus class="h-4 w-4"/>
                "New"
                <span class="sr-only">" conversation"</span>
            </button>
        </ServerForm>
    }
}

/// Arrow keys, Home and End move the focus between the list's links.
fn move_focus(ev: web_sys::KeyboardEvent) {
    use wasm_bindgen::JsCast;
    let Some(link) = ev
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|e| e.closest("li").ok().flatten())
    else {
        return;
    };
    let li = match ev.key().as_str() {
        "ArrowDown" => link.next_element_sibling(),
        "ArrowUp" => link.previous_element_sibling(),
        "Home" => link
            .parent_element()
            .and_then(|ul| ul.first_element_child()),
        "End" => link.parent_element().and_then(|ul| ul.last_element_child()),
        _ => return,
    };
    ev.prevent_default();
    if let Some(a) = li
        .and_then(|li| li.first_element_child())
        .and_then(|a| a.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = a.focus();
    }
}

#[component]
fn ConversationItem(
    summary: ConversationSummary,
    current: Memo<Option<String>>,
    /// The one conversation Tab stops at.
    tab_stop: Memo<Option<String>>,
) -> impl IntoView {
    let id = StoredValue::new(summary.session_id.clone());
    let is_current =
        move || current.with(|c| id.with_value(|id| c.as_deref() == Some(id.as_str())));
    let tabindex = move || {
        let stop = tab_stop.with(|s| id.with_value(|id| s.as_deref() == Some(id.as_str())));
        if stop {
            "0"
        } else {
            "-1"
        }
    };
    let title = if summary.title.trim().is_empty() {
        UNTITLED.to_string()
    } else {
        summary.title.clone()
    };
    let last = summary
        .last_message
        .clone()
        .unwrap_or_else(|| "No messages yet".into());
    let when = crate::components::time::month_day_hm(&summary.updated_at);
    // A person should answer: the customer wrote last and the AI does not.
    let unread = summary.awaiting_reply
        && matches!(
            summary.handling,
            HandlingState::WaitingHuman | HandlingState::Human
        );
    let unread_class = if unread {
        "h-2 w-2 shrink-0 rounded-full bg-rose-500"
    } else {
        "hidden"
    };
    view! {
        <li>
            <a
                href=format!("/c/{}", summary.session_id)
                data-testid="conversation-item"
                data-session=summary.session_id.clone()
                aria-current=move || is_current().then_some("page")
                tabindex=tabindex
                class=move || {
                    if is_current() {
                        "block rounded-lg bg-indigo-50 px-2.5 py-2 ring-1 ring-indigo-200"
                    } else {
                        "block rounded-lg px-2.5 py-2 hover:bg-slate-50"
                    }
                }
            >
                <div class="flex items-center gap-2">
                    <span
                        data-testid="unread"
                        title="New message from the customer"
                        class=unread_class
                    ></span>
                    <span class="truncate text-sm font-medium text-slate-800">{title}</span>
                    <span class="ml-auto shrink-0 text-[11px] tabular-nums text-slate-400">{when}</span>
                </div>
                <div class="mt-1 flex items-center gap-2">
                    <HandlingBadge state=summary.handling/>
                    {summary.assignee.clone().map(|a| view! { <span class="shrink-0 text-[11px] text-sky-700">{a}</span> })}
                    <span data-testid="last-message" class="truncate text-xs text-slate-500">
                        {last}
                    </span>
                </div>
            </a>
        </li>
    }
}
