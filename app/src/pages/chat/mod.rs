//! `/chat` and `/chat/{token}`: the customer's side. No staff navigation,
//! phone-first, in the customer's language (en/zh), frameable by the shop's
//! pages (the widget, `/widget.js`). `/chat` asks for a name and an email
//! and opens a conversation; `/chat/{token}` is one conversation: the
//! stored replies rendered on the server (their HTML sent beside them:
//! `components::markdown`), then its customer stream live
//! (the AI's reply token by token, agents' replies, handling changes).
//!
//! # Layout
//! - this file: the two pages and their parts.
//! - [`state`]: the page as a plain value, updated per event (unit-tested).
//! - [`api`]: the server functions (the link token is the key).

pub mod api;
pub mod state;

use aics_types::{CustomerChat, CustomerMessage, MessageRole, Timestamp, WithHtml};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::call::Call;
use crate::components::markdown::Markdown;
use crate::components::server_form::{field, ServerForm};
use crate::wire::{ready, resource};
use api::{load_customer_chat, CustomerSend, StartChat};
use state::ChatState;

/// The page's words in the customer's language.
struct Words {
    title: &'static str,
    intro: &'static str,
    name: &'static str,
    email: &'static str,
    start: &'static str,
    placeholder: &'static str,
    send: &'static str,
    typing: &'static str,
    with_human: &'static str,
    failed: &'static str,
    not_found: &'static str,
    support: &'static str,
}

const EN: Words = Words {
    title: "Chat with us",
    intro: "Tell us who you are and we will answer right away.",
    name: "Your name",
    email: "Your email",
    start: "Start chatting",
    placeholder: "Write a message…",
    send: "Send",
    typing: "Typing…",
    with_human: "You are chatting with a member of our team.",
    failed: "Sorry, we could not answer just now. Please write again.",
    not_found: "This chat link does not exist (any more).",
    support: "Support",
};

const ZH: Words = Words {
    title: "在线客服",
    intro: "留下您的称呼和邮箱，我们马上为您服务。",
    name: "您的称呼",
    email: "您的邮箱",
    start: "开始对话",
    placeholder: "请输入消息…",
    send: "发送",
    typing: "正在输入…",
    with_human: "现在由我们的客服人员为您服务。",
    failed: "抱歉，暂时无法回复，请稍后再发一次。",
    not_found: "该对话链接不存在或已失效。",
    support: "客服",
};

fn words(lang: &str) -> &'static Words {
    if lang == "zh" {
        &ZH
    } else {
        &EN
    }
}

/// The frame of both pages: a narrow column, nothing of the console.
#[component]
fn ChatFrame(lang: String, children: Children) -> impl IntoView {
    view! {
        <main lang=lang data-testid="customer-page" class="mx-auto flex h-[100dvh] max-w-xl flex-col bg-white sm:my-4 sm:h-[calc(100dvh-2rem)] sm:rounded-2xl sm:shadow">
            {children()}
        </main>
    }
}

/// `/chat`: name and email, then the conversation.
#[component]
pub fn ChatStartPage() -> impl IntoView {
    let start = Call::<StartChat>::new();
    Effect::new(move |_| {
        if let Some(Ok(link)) = start.answer().get() {
            crate::session::reload_to(&link.path);
        }
    });
    let error = move || match start.answer().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };
    let w = &EN;
    view! {
        <ChatFrame lang="en".to_string()>
            <div class="flex flex-1 flex-col justify-center gap-4 p-6">
                <h1 class="text-xl font-semibold">{w.title} " · " {ZH.title}</h1>
                <p class="text-sm text-slate-600">{w.intro}</p>
                <ServerForm
                    action=start
                    input=|form| StartChat {
                        name: field(form, "name"),
                        email: field(form, "email"),
                        lang: field(form, "lang"),
                    }
                    attr:class="flex flex-col gap-3"
                    attr:data-testid="chat-start"
                >
                    <label class="text-sm">
                        {w.name}
                        <input name="name" required maxlength="80" data-testid="chat-name" class="mt-1 w-full rounded-lg border border-slate-300 px-3 py-2"/>
                    </label>
                    <label class="text-sm">
                        {w.email}
                        <input name="email" type="email" required data-testid="chat-email" class="mt-1 w-full rounded-lg border border-slate-300 px-3 py-2"/>
                    </label>
                    <label class="text-sm">
                        "Language · 语言"
                        <select name="lang" data-testid="chat-lang" class="mt-1 w-full rounded-lg border border-slate-300 px-3 py-2">
                            <option value="en">"English"</option>
                            <option value="zh">"中文"</option>
                        </select>
                    </label>
                    <p role="alert" class="text-sm text-red-700">{error}</p>
                    <button type="submit" data-testid="chat-start-button" class="rounded-lg bg-indigo-600 px-4 py-2 font-medium text-white disabled:opacity-50" disabled=move || start.pending().get()>
                        {w.start}
                    </button>
                </ServerForm>
            </div>
        </ChatFrame>
    }
}

/// `/chat/{token}`: one conversation, live.
#[component]
pub fn CustomerChatPage() -> impl IntoView {
    let params = use_params_map();
    let token = Memo::new(move |_| params.read().get("token").unwrap_or_default());
    let chat = resource(move || token.get(), load_customer_chat);
    view! {
        <Suspense fallback=|| view! { <ChatFrame lang="en".to_string()><p class="p-6 text-sm text-slate-500">"…"</p></ChatFrame> }>
            {move || Suspend::new(async move {
                match ready(chat).await {
                    Ok(loaded) => view! { <LiveChat loaded token=token.get_untracked()/> }.into_any(),
                    Err(_) => view! {
                        <ChatFrame lang="en".to_string()>
                            <p data-testid="chat-not-found" class="p-6 text-sm text-slate-600">{EN.not_found} " " {ZH.not_found}</p>
                        </ChatFrame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The current time (browser only: the server renders no live events).
fn now() -> Timestamp {
    #[cfg(feature = "hydrate")]
    {
        chrono::DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        Timestamp::default()
    }
}

#[component]
fn LiveChat(loaded: WithHtml<CustomerChat>, token: String) -> impl IntoView {
    let state = RwSignal::new(ChatState::loaded(&loaded));
    let chat = loaded.data;
    let w = words(&chat.lang);
    let draft = RwSignal::new(String::new());
    let token = StoredValue::new(token);
    let composer = NodeRef::<leptos::html::Textarea>::new();
    // Whether the box answers yet: false in the page the server sends,
    // true once the page's script has taken the box over.
    let ready = RwSignal::new(false);

    #[cfg(feature = "hydrate")]
    {
        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        let url = format!("/api/channel/{}/events", token.get_value());
        let reload = move || {
            leptos::task::spawn_local(async move {
                if let Ok(chat) = load_customer_chat(token.get_value()).await {
                    state.update(|s| s.reload(&chat));
                }
            });
        };
        Effect::new(move |_| {
            let on_event = move |event| {
                let stale = state.try_update(|s| s.apply(event, now())).unwrap_or(false);
                if stale {
                    reload();
                }
            };
            // Each (re)connection reloads the messages: nothing that
            // happened before the stream opened is missed.
            if let Ok(s) =
                EventStream::connect_to(&url, &aics_types::CustomerEvent::KINDS, on_event, reload)
            {
                stream.set_value(Some(s));
            }
        });
        on_cleanup(move || stream.dispose());

        // The box and the draft: what was typed before the page's script
        // ran (the page is lazy: its script may come after the customer
        // starts typing) is kept.
        crate::components::draft::keep_draft(draft, composer, move || ready.set(true));
    }

    let send_action = Call::<CustomerSend>::new();
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| match send_action.answer().get() {
        Some(Err(e)) => {
            // The refused text goes back into the box, unless something
            // new was typed there meanwhile.
            if let Some(text) = state.try_update(|s| s.send_failed()).flatten() {
                draft.update(|d| {
                    if d.is_empty() {
                        *d = text;
                    }
                });
            }
            error.set(Some(e.message));
        }
        Some(Ok(_)) => error.set(None),
        None => {}
    });
    let send = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() {
            return;
        }
        state.update(|s| s.sent(&text, now()));
        draft.set(String::new());
        send_action.dispatch(CustomerSend {
            token: token.get_value(),
            message: text,
        });
    };
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
    let streaming = Memo::new(move |_| state.with(|s| s.streaming.clone()));
    let title = chat
        .customer_name
        .clone()
        .map(|n| format!("{} · {n}", w.support))
        .unwrap_or_else(|| w.support.to_string());
    view! {
        <ChatFrame lang=chat.lang.clone()>
            <header class="flex items-center gap-2 border-b border-slate-200 px-4 py-3">
                <span aria-hidden="true" class="grid h-8 w-8 place-items-center rounded-full bg-indigo-600 text-xs font-bold text-white">"ai"</span>
                <h1 class="text-sm font-semibold">{title}</h1>
            </header>
            <p data-testid="with-human" class="border-b border-sky-100 bg-sky-50 px-4 py-1.5 text-xs text-sky-900" class:hidden=move || !state.with(|s| s.with_human)>
                {w.with_human}
            </p>
            <ol data-testid="customer-messages" aria-live="polite" class="flex flex-1 flex-col gap-2 overflow-y-auto p-4">
                <For each=move || messages.get() key=|(m, html)| (m.id, m.content.len(), html.is_some()) let:line>
                    <CustomerLine message=line.0 html=line.1/>
                </For>
                <li class="flex" class:hidden=move || streaming.get().is_none()>
                    <div data-testid="customer-streaming" class="max-w-[85%] rounded-2xl rounded-tl-md bg-slate-100 px-4 py-2 text-sm text-slate-800">
                        {move || match streaming.get() {
                            Some(text) if !text.is_empty() => view! { <Markdown text html=None/> }.into_any(),
                            _ => view! { <span class="text-slate-500">{w.typing}</span> }.into_any(),
                        }}
                    </div>
                </li>
            </ol>
            <p role="alert" class="px-4 text-xs text-red-700" class:hidden=move || !state.with(|s| s.failed) && error.get().is_none()>
                {move || error.get().unwrap_or_else(|| w.failed.to_string())}
            </p>
            <form
                class="flex gap-2 border-t border-slate-200 p-3"
                on:submit=move |ev| {
                    ev.prevent_default();
                    send();
                }
            >
                <label class="sr-only" for="customer-composer">{w.placeholder}</label>
                <textarea
                    id="customer-composer"
                    data-testid="customer-composer"
                    rows="1"
                    placeholder=w.placeholder
                    class="min-h-11 flex-1 resize-none rounded-xl border border-slate-300 px-3 py-2 text-base sm:text-sm"
                    node_ref=composer
                    data-ready=move || ready.get().to_string()
                    on:input=move |ev| draft.set(event_target_value(&ev))
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                            ev.prevent_default();
                            send();
                        }
                    }
                ></textarea>
                <button type="submit" data-testid="customer-send" class="rounded-xl bg-indigo-600 px-4 text-sm font-medium text-white">
                    {w.send}
                </button>
            </form>
        </ChatFrame>
    }
}

/// One message as the customer sees it: theirs on the right, replies on the
/// left (Markdown), an agent's with their name.
#[component]
fn CustomerLine(message: CustomerMessage, html: Option<String>) -> impl IntoView {
    match message.role {
        MessageRole::Customer => view! {
            <li data-role="customer" class="flex justify-end">
                <div class="max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-br-md bg-indigo-600 px-4 py-2 text-sm text-white">
                    {message.content}
                </div>
            </li>
        }
        .into_any(),
        role => view! {
            <li data-role=if role == MessageRole::Agent { "agent" } else { "assistant" } class="flex flex-col items-start">
                <span class="mb-0.5 text-[11px] text-slate-500">{message.author.clone().unwrap_or_default()}</span>
                <div class="max-w-[85%] rounded-2xl rounded-tl-md bg-slate-100 px-4 py-2 text-sm text-slate-800">
                    <Markdown text=message.content html/>
                </div>
            </li>
        }
        .into_any(),
    }
}
