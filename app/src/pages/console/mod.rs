//! `/` and `/c/{sessionId}`: the chat console. `/` opens the most recent
//! conversation (a new one when there is none); `/c/{id}` renders that
//! conversation from the server, so a reload keeps everything, then applies
//! its live events on top.
//!
//! # Layout
//! - this file: the routes' pages and the three-column frame.
//! - [`state`]: the conversation as a plain value, updated by each event
//!   (the page's only logic, unit-tested).
//! - [`live`]: one open conversation: wires the state to the event stream,
//!   the server functions and the parts below.
//! - [`conversation_list`]: the left column, with "New".
//! - [`transcript`]: the messages, the streaming reply.
//! - [`approvals`]: pending approvals inline in the transcript.
//! - [`cancel`]: a supervisor cancels the turn that holds the conversation.
//! - [`composer`]: the message box, its errors and status.
//! - [`handling`]: who handles it, take over / hand back / resolve /
//!   reopen, the agent's reply box and internal notes.
//! - [`tools_panel`]: the right column: the customer panel, tool timeline
//!   and trace.
//! - [`customer_panel`]: the conversation's customer (pick, profile,
//!   orders, tickets, past conversations, remembered facts, forget).
//! - [`api`]: the server functions.

pub mod api;
mod approvals;
mod cancel;
mod composer;
mod conversation_list;
mod customer_panel;
mod handling;
mod live;
pub mod state;
mod tools_panel;
mod transcript;

use leptos::prelude::*;
use leptos_router::components::Redirect;
use leptos_router::hooks::use_params_map;
use leptos_router::NavigateOptions;

use crate::components::errors::or_alert;
use crate::components::layout::Layout;
use crate::session::{Authed, Session};
use crate::wire::{ready, resource};
use api::{get_conversation, open_conversation};
use conversation_list::ConversationList;
use live::ChatLive;

/// `/` and `/c/{sessionId}`.
#[component]
pub fn ConsolePage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.read().get("id"));
    view! {
        <Authed let:session>
            <ConsoleBody session id/>
        </Authed>
    }
}

#[component]
fn ConsoleBody(session: Session, id: Memo<Option<String>>) -> impl IntoView {
    // Bumped whenever something may have changed a conversation's summary.
    let refresh = RwSignal::new(0u32);
    view! {
        <Layout session=session.clone()>
            <div class="grid grid-cols-1 md:grid-cols-[15rem_minmax(0,1fr)] xl:h-[calc(100vh-3.5rem)] xl:grid-cols-[17rem_minmax(0,1fr)_24rem] xl:overflow-hidden">
                // `/` only sends the browser on (a redirect), so it neither
                // loads nor draws the list; `/c/{id}` keeps the same list
                // from one conversation to the next.
                <Show when=move || id.with(Option::is_some)>
                    <ConversationList current=id refresh/>
                </Show>
                {move || match id.get() {
                    Some(id) => view! { <ChatView id session=session.clone() refresh/> }.into_any(),
                    None => view! { <OpenConversation/> }.into_any(),
                }}
            </div>
        </Layout>
    }
}

/// `/`: goes to the conversation to work on (a 302 when rendered on the
/// server), replacing `/` in the history so Back does not bounce.
#[component]
fn OpenConversation() -> impl IntoView {
    let target = resource(|| (), |_| open_conversation());
    view! {
        <Suspense fallback=|| view! { <Pane>"Opening the latest conversation…"</Pane> }>
            {move || Suspend::new(async move {
                    or_alert(ready(target).await, "m-6 md:col-start-2 xl:col-span-2", |id| {
                        let options = NavigateOptions {
                            replace: true,
                            ..Default::default()
                        };
                        view! { <Redirect path=format!("/c/{id}") options/> }
                    })
                })}
        </Suspense>
    }
}

/// A quiet line in the conversation's columns while it loads.
#[component]
fn Pane(children: Children) -> impl IntoView {
    view! { <div class="p-6 text-sm text-slate-500 md:col-start-2 xl:col-span-2">{children()}</div> }
}

/// Loads one conversation from the server, then shows it live.
#[component]
fn ChatView(id: String, session: Session, refresh: RwSignal<u32>) -> impl IntoView {
    let key = id.clone();
    let detail = resource(move || key.clone(), get_conversation);
    let session = StoredValue::new(session);
    view! {
        <Transition fallback=|| view! { <Pane>"Loading the conversation…"</Pane> }>
                {move || Suspend::new(async move {
                    let session = session.get_value();
                    or_alert(ready(detail).await, "m-6 md:col-start-2 xl:col-span-2", |loaded| {
                        view! { <ChatLive loaded session refresh/> }
                    })
                })}
        </Transition>
    }
}
