//! The chat console: the customer's messages, and the AI's reply streaming in
//! token by token over the conversation's event stream.

use aics_types::{AgentEvent, MessageRole};
use leptos::prelude::*;

/// One line of the transcript.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    role: MessageRole,
    text: String,
}

/// The chat page: transcript, live reply and composer.
#[component]
pub fn ChatPage() -> impl IntoView {
    let lines = RwSignal::new(Vec::<Line>::new());
    let reply = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let connected = RwSignal::new(false);
    let hydrated = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let draft = RwSignal::new(String::new());
    let session = RwSignal::new(String::new());

    let apply = move |event: AgentEvent| match event {
        AgentEvent::LlmToken { token, .. } => reply.update(|r| r.push_str(&token)),
        AgentEvent::Final { trace } => {
            let text = if trace.reply.is_empty() {
                reply.get_untracked()
            } else {
                trace.reply
            };
            lines.update(|l| {
                l.push(Line {
                    role: MessageRole::Assistant,
                    text,
                })
            });
            reply.set(String::new());
            busy.set(false);
        }
        AgentEvent::Error { message } => {
            error.set(Some(message));
            reply.set(String::new());
            busy.set(false);
        }
        _ => {}
    };

    #[cfg(feature = "hydrate")]
    {
        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        Effect::new(move |_| {
            let id = new_session_id();
            session.set(id.clone());
            let url = format!("/api/conversations/{id}/events");
            match EventStream::connect(&url, apply, move || connected.set(true)) {
                Ok(s) => stream.set_value(Some(s)),
                Err(_) => error.set(Some("Could not connect to the server.".into())),
            }
            hydrated.set(true);
        });
        on_cleanup(move || stream.dispose());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = apply;

    let send = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        reply.set(String::new());
        lines.update(|l| {
            l.push(Line {
                role: MessageRole::Customer,
                text: text.clone(),
            })
        });
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            match post_message(&session.get_untracked(), &text).await {
                Ok(()) => draft.set(String::new()),
                Err(message) => {
                    error.set(Some(message));
                    busy.set(false);
                }
            }
        });
        #[cfg(not(feature = "hydrate"))]
        let _ = (text, session);
    };

    view! {
        <section
            data-testid="chat"
            data-hydrated=move || hydrated.get().to_string()
            class="flex flex-col gap-4 rounded-xl border border-slate-200 bg-white p-4 shadow-sm"
        >
            <ol data-testid="transcript" class="flex min-h-64 flex-col gap-3" aria-live="polite">
                <For
                    each=move || lines.get().into_iter().enumerate()
                    key=|(i, _)| *i
                    children=move |(_, line)| {
                        let customer = line.role == MessageRole::Customer;
                        view! {
                            <li
                                data-role=if customer { "customer" } else { "assistant" }
                                class=if customer {
                                    "self-end max-w-[80%] whitespace-pre-wrap rounded-2xl bg-indigo-600 px-4 py-2 text-white"
                                } else {
                                    "self-start max-w-[80%] whitespace-pre-wrap rounded-2xl bg-slate-100 px-4 py-2"
                                }
                            >
                                {line.text}
                            </li>
                        }
                    }
                />
                <Show when=move || busy.get()>
                    <li
                        data-testid="streaming-reply"
                        class="self-start max-w-[80%] whitespace-pre-wrap rounded-2xl bg-slate-100 px-4 py-2"
                    >
                        {move || reply.get()}
                        <span class="ml-1 inline-block h-4 w-1.5 animate-pulse bg-slate-400 align-middle"></span>
                    </li>
                </Show>
            </ol>
            <Show when=move || error.get().is_some()>
                <p role="alert" class="rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700">
                    {move || error.get().unwrap_or_default()}
                </p>
            </Show>
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
                    data-testid="composer"
                    rows="2"
                    placeholder="Type the customer's message — Enter sends, Shift+Enter adds a line"
                    class="min-h-12 flex-1 resize-y rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                    prop:value=move || draft.get()
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
                    class="rounded-lg bg-indigo-600 px-4 py-2 font-medium text-white hover:bg-indigo-700 disabled:cursor-not-allowed disabled:opacity-50"
                    disabled=move || busy.get() || !connected.get()
                >
                    "Send"
                </button>
            </form>
        </section>
    }
}

/// A new conversation id, random enough to be unguessable.
#[cfg(feature = "hydrate")]
fn new_session_id() -> String {
    let mut bytes = [0u8; 12];
    for b in &mut bytes {
        *b = (js_sys::Math::random() * 256.0) as u8;
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("c-{hex}")
}

/// Posts the customer's message; the reply arrives on the event stream.
#[cfg(feature = "hydrate")]
async fn post_message(session_id: &str, message: &str) -> Result<(), String> {
    let response =
        gloo_net::http::Request::post(&format!("/api/conversations/{session_id}/messages"))
            .json(&serde_json::json!({ "message": message }))
            .map_err(|e| e.to_string())?
            .send()
            .await
            .map_err(|_| "The server could not be reached; your message is kept.".to_string())?;
    if response.ok() {
        return Ok(());
    }
    let body = response
        .json::<aics_types::ApiError>()
        .await
        .map(|e| e.message)
        .unwrap_or_else(|_| format!("The server answered {}.", response.status()));
    Err(body)
}
