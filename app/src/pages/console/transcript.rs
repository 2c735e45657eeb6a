//! The message pane: the stored messages, the reply streaming in token by
//! token, and pending approvals inline. It follows the newest text unless the
//! reader scrolled up to read. Replies (the AI's, the agents') show the
//! safe HTML the server rendered of their Markdown (`components::markdown`);
//! customers' words, and a reply still streaming, are text.

use aics_types::{ChatMessage, MessageRole};
use leptos::prelude::*;

use super::approvals::PendingApprovals;
use super::live::Chat;
use crate::components::icons::{Icon, IconKind};
use crate::components::markdown::Markdown;

/// The scrolling transcript of the open conversation.
#[component]
pub fn Transcript(chat: Chat, supervisor: bool) -> impl IntoView {
    let state = chat.state;
    // Each message with its HTML: a reload that brings a reply's HTML
    // redraws that line.
    let messages = Memo::new(move |_| {
        state.with(|s| {
            s.messages
                .iter()
                .map(|m| (m.clone(), s.html_of(m.id)))
                .collect::<Vec<_>>()
        })
    });
    let pane = NodeRef::<leptos::html::Div>::new();
    // Follow the newest text unless the reader scrolled up to read.
    let follow = RwSignal::new(true);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        state.track();
        if let Some(el) = pane.get() {
            if follow.get_untracked() {
                el.set_scroll_top(el.scroll_height());
            }
        }
    });
    view! {
        <div
            node_ref=pane
            class="min-h-0 flex-1 overflow-y-auto px-4 py-4 [overflow-anchor:none]"
            on:scroll=move |ev| {
                let el = event_target::<web_sys::HtmlElement>(&ev);
                follow.set(el.scroll_height() - el.scroll_top() - el.client_height() < 80);
            }
        >
            <ol data-testid="transcript" aria-label="Messages" class="mx-auto flex max-w-3xl flex-col gap-3">
                <For
                    each=move || messages.get().into_iter().enumerate()
                    key=|(i, (m, html))| (*i, m.id, html.is_some())
                    children=move |(_, (message, html))| view! { <MessageLine message html chat/> }
                />
                {move || messages.with(|m| m.is_empty()).then(|| view! { <EmptyTranscript/> })}
                <StreamingReply chat/>
                <PendingApprovals chat supervisor/>
            </ol>
        </div>
    }
}

/// A conversation without messages yet: what to do next.
#[component]
fn EmptyTranscript() -> impl IntoView {
    view! {
        <li data-testid="empty-transcript" class="flex flex-col items-center gap-2 py-12 text-center">
            <span class="grid h-12 w-12 place-items-center rounded-2xl bg-indigo-100 text-indigo-700">
                <Icon kind=IconKind::Chat class="h-6 w-6"/>
            </span>
            <p class="text-sm font-medium text-slate-700">"No messages yet"</p>
            <p class="max-w-sm text-sm text-slate-500">
                "Type what the customer wrote below; the AI replies here and its tool calls show on the right."
            </p>
        </li>
    }
}

/// The AI's round avatar.
#[component]
fn Avatar() -> impl IntoView {
    view! {
        <span aria-hidden="true" class="mt-1 grid h-7 w-7 shrink-0 place-items-center rounded-full bg-slate-800 text-[11px] font-bold text-white">
            "AI"
        </span>
    }
}

/// Up to two letters of a staff member's name, for their avatar. Usernames
/// are ASCII (`aics_types::validate_username`): the ASCII upper case is
/// theirs, and keeps Unicode's case tables out of the wasm.
fn initials(name: Option<&str>) -> String {
    name.unwrap_or("?")
        .chars()
        .filter(|c| c.is_alphanumeric())
        .take(2)
        .collect::<String>()
        .to_ascii_uppercase()
}

/// One message of the transcript.
#[component]
fn MessageLine(message: ChatMessage, html: Option<String>, chat: Chat) -> impl IntoView {
    let state = chat.state;
    match message.role {
        MessageRole::Customer => view! {
            <li data-role="customer" class="flex justify-end">
                <div class="max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-br-md bg-indigo-600 px-4 py-2 text-sm text-white shadow-sm">
                    {message.content}
                </div>
            </li>
        }
        .into_any(),
        MessageRole::Assistant => {
            let gid = message.graph_execution_id.clone();
            let reasoning = gid
                .as_deref()
                .and_then(|g| state.with_untracked(|s| s.reasoning_for(g)));
            view! {
                <li data-role="assistant" class="flex gap-2">
                    <Avatar/>
                    <div class="min-w-0 max-w-[85%]">
                        {reasoning.map(|text| view! { <Reasoning text/> })}
                        <div data-testid="assistant-text" class="break-words rounded-2xl rounded-tl-md border border-slate-200 bg-white px-4 py-2 text-sm text-slate-800 shadow-sm">
                            <Markdown text=message.content html/>
                        </div>
                        {gid.map(|g| {
                            let shown = StoredValue::new(g);
                            let pressed = move || {
                                state.with(|s| shown.with_value(|g| s.selected.as_deref() == Some(g.as_str())))
                            };
                            view! {
                                <button
                                    type="button"
                                    data-testid="show-trace"
                                    class="mt-1 text-xs text-slate-500 hover:text-indigo-700 hover:underline"
                                    aria-pressed=move || pressed().to_string()
                                    on:click=move |_| state.update(|s| s.select_turn(Some(shown.get_value())))
                                >
                                    "Show this turn's tools and trace"
                                </button>
                            }
                        })}
                    </div>
                </li>
            }
            .into_any()
        }
        MessageRole::System => view! {
            <li data-role="system" class="self-center rounded-full bg-slate-200/70 px-3 py-1 text-xs text-slate-600">
                {message.content}
            </li>
        }
        .into_any(),
        MessageRole::Agent => view! {
            <li data-role="agent" class="flex gap-2">
                <span aria-hidden="true" class="mt-1 grid h-7 w-7 shrink-0 place-items-center rounded-full bg-sky-700 text-[11px] font-bold text-white">
                    {initials(message.author.as_deref())}
                </span>
                <div class="min-w-0 max-w-[85%]">
                    <p class="mb-0.5 text-xs text-slate-500">{message.author.clone().unwrap_or_default()}</p>
                    <div data-testid="agent-text" class="break-words rounded-2xl rounded-tl-md border border-sky-200 bg-sky-50 px-4 py-2 text-sm text-slate-800 shadow-sm">
                        <Markdown text=message.content html/>
                    </div>
                </div>
            </li>
        }
        .into_any(),
        MessageRole::Note => view! {
            <li data-role="note" class="mx-auto w-full max-w-[85%] rounded-lg border border-amber-200 bg-amber-50 px-3 py-2 text-sm text-amber-900">
                <p class="text-xs font-medium">
                    "Internal note · " {message.author.clone().unwrap_or_default()} " · not shown to the customer"
                </p>
                <p data-testid="note-text" class="whitespace-pre-wrap break-words">{message.content}</p>
            </li>
        }
        .into_any(),
    }
}

#[component]
fn Reasoning(text: String) -> impl IntoView {
    view! {
        <details data-testid="reasoning" class="mb-1 rounded-lg border border-slate-200 bg-slate-50 px-3 py-1.5 text-xs text-slate-600">
            <summary class="cursor-pointer select-none font-medium">"Reasoning"</summary>
            <p class="mt-1 whitespace-pre-wrap break-words">{text}</p>
        </details>
    }
}

/// The reply of the running turn, token by token.
#[component]
fn StreamingReply(chat: Chat) -> impl IntoView {
    let state = chat.state;
    let shown = Memo::new(move |_| state.with(|s| s.streaming()));
    let reply = Memo::new(move |_| {
        state.with(|s| s.live.as_ref().map(|l| l.reply.clone()).unwrap_or_default())
    });
    let reasoning = Memo::new(move |_| {
        state.with(|s| {
            s.live
                .as_ref()
                .map(|l| l.reasoning.clone())
                .filter(|r| !r.is_empty())
        })
    });
    let activity = Memo::new(move |_| state.with(|s| s.activity()));
    view! {
        <Show when=move || shown.get()>
            <li class="flex gap-2">
                <Avatar/>
                <div class="min-w-0 max-w-[85%]">
                    {move || reasoning.get().map(|text| view! { <Reasoning text/> })}
                    <div
                        data-testid="streaming-reply"
                        aria-live="polite"
                        aria-busy="true"
                        class="min-h-10 break-words rounded-2xl rounded-tl-md border border-indigo-200 bg-white px-4 py-2 text-sm text-slate-800 shadow-sm"
                    >
                        {move || {
                            let text = reply.get();
                            if text.is_empty() {
                                view! {
                                    <span class="text-slate-500" data-testid="activity">{move || activity.get()}</span>
                                }.into_any()
                            } else {
                                view! {
                                    <Markdown text html=None/>
                                    <span aria-hidden="true" class="ml-0.5 inline-block h-4 w-1.5 animate-pulse bg-indigo-400 align-middle"></span>
                                }.into_any()
                            }
                        }}
                    </div>
                </div>
            </li>
        </Show>
    }
}
