//! One open conversation: keeps its [`ConversationState`] in a signal, feeds
//! it the conversation's live events, and lays out the transcript, the
//! composer and the tool column, which read it.

use aics_types::{ConversationDetail, Timestamp, WithHtml};
use leptos::prelude::*;

use super::cancel::CancelTurnControl;
use super::composer::Composer;
use super::handling::HandlingBar;
use super::state::{ConversationState, Effects};
use super::tools_panel::ToolsPanel;
use super::transcript::Transcript;
use crate::components::live_dot::LiveDot;
use crate::session::Session;

/// The current time (browser only: the server renders no live events).
pub fn now() -> Timestamp {
    #[cfg(feature = "hydrate")]
    {
        chrono::DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        Timestamp::default()
    }
}

/// The signals the parts of an open conversation share.
#[derive(Clone, Copy)]
pub struct Chat {
    /// The conversation; changes that ask for [`Effects`] go through
    /// [`Chat::update`].
    pub state: RwSignal<ConversationState>,
    /// Whether the event stream is open.
    pub connected: RwSignal<bool>,
    /// The composer's text.
    pub draft: RwSignal<String>,
    /// Bumped to reload the conversation list.
    refresh: RwSignal<u32>,
    /// The conversation's id, to reload it (read by the browser only).
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    session_id: StoredValue<String>,
}

impl Chat {
    /// Changes the state and does what the change asks for.
    pub fn update(self, change: impl FnOnce(&mut ConversationState) -> Effects) {
        if let Some(effects) = self.state.try_update(change) {
            self.run(effects);
        }
    }

    fn run(self, effects: Effects) {
        if effects.refresh_list {
            self.refresh.update(|v| *v += 1);
        }
        if effects.reload {
            self.reload();
        }
        if let Some(text) = effects.restore_draft {
            // Unless something new was typed meanwhile.
            if self.draft.with_untracked(|d| d.trim().is_empty()) {
                self.draft.set(text);
            }
        }
    }
}

impl Chat {
    /// Reloads the stored conversation and resyncs the state with it.
    #[cfg_attr(not(feature = "hydrate"), allow(unused_variables))]
    fn reload(self) {
        #[cfg(feature = "hydrate")]
        {
            let sid = self.session_id.get_value();
            leptos::task::spawn_local(async move {
                if let Ok(loaded) = super::api::get_conversation(sid).await {
                    self.update(|s| {
                        s.set_html(loaded.html);
                        s.resync(loaded.data)
                    });
                }
            });
        }
    }
}

/// The conversation with its live state: header, transcript, composer, tools.
#[component]
pub fn ChatLive(
    loaded: WithHtml<ConversationDetail>,
    session: Session,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let session_id = loaded.data.summary.session_id.clone();
    let mut state = ConversationState::new(loaded.data);
    state.set_html(loaded.html);
    let chat = Chat {
        state: RwSignal::new(state),
        connected: RwSignal::new(false),
        draft: RwSignal::new(String::new()),
        refresh,
        session_id: StoredValue::new(session_id.clone()),
    };
    let title = Memo::new(move |_| chat.state.with(|s| s.title()));
    let running = Memo::new(move |_| chat.state.with(|s| s.running()));

    // The live connection (browser only).
    #[cfg(feature = "hydrate")]
    {
        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        let url = format!("/api/conversations/{session_id}/events");
        // A reconnecting EventSource sends Last-Event-ID: the server replays
        // what it missed, or says `resync` and the state reloads.
        let on_open = move || chat.connected.set(true);
        Effect::new(move |_| {
            let on_event = move |event| chat.update(|s| s.apply(event, now()));
            match EventStream::connect(&url, on_event, on_open) {
                Ok(s) => stream.set_value(Some(s)),
                Err(_) => chat.update(|s| {
                    s.error = Some("Could not connect to the server.".into());
                    Effects::default()
                }),
            }
        });
        on_cleanup(move || stream.dispose());
    }

    let shown_id = session_id.clone();
    view! {
        <section
            data-testid="chat"
            data-session=session_id
            data-connected=move || chat.connected.get().to_string()
            data-running=move || running.get().to_string()
            aria-label="Conversation"
            class="flex h-[calc(100vh-3.5rem)] min-h-[28rem] min-w-0 flex-col bg-slate-50 xl:h-full xl:min-h-0"
        >
            <div class="flex items-center gap-3 border-b border-slate-200 bg-white px-4 py-2.5">
                <h1 data-testid="conversation-title" class="truncate text-sm font-semibold text-slate-800">
                    {move || title.get()}
                </h1>
                <code class="hidden truncate font-mono text-[11px] text-slate-400 sm:inline">{shown_id}</code>
                <span class="ml-auto">
                    <LiveDot connected=chat.connected live="Live"/>
                </span>
            </div>
            {session.is_supervisor().then(|| view! {
                <div class="flex justify-end border-b border-slate-200 bg-white px-4 py-1.5 empty:hidden">
                    <CancelTurnControl chat/>
                </div>
            })}
            <HandlingBar chat session=session.clone()/>
            <Transcript chat supervisor=session.is_supervisor()/>
            <Composer chat/>
        </section>
        <ToolsPanel chat/>
    }
}
