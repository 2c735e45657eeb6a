//! The chat console: the conversation list, the message pane where the reply
//! streams in token by token, the composer, pending approvals inline, and the
//! tool-call timeline with the trace beside it.
//!
//! The page renders the conversation from the server (so a reload keeps
//! everything), then applies the conversation's live events on top of it.

use aics_types::{
    validate_message, AgentEvent, ChatMessage, ChatTurnTraceResult, ConversationSummary,
    HandlingState, MessageRole, PendingToolCall, StopReason, Timestamp, ToolCallRecord,
    ToolCallStatus,
};
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map};
use serde_json::Value;

use crate::api::{
    get_conversation, list_conversations, CreateConversation, DecideApproval, SendMessage, Session,
};
use crate::auth::{Authed, Layout};
use crate::timeline::{JsonBlock, NodePath, ToolTimeline, TracePanel};

/// The current time (browser only; the server never builds live records).
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

/// `/` and `/c/{sessionId}`: the console.
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
                <ConversationList current=id refresh/>
                {move || match id.get() {
                    Some(id) => {
                        view! { <ChatView id session=session.clone() refresh/> }.into_any()
                    }
                    None => view! { <EmptyConsole/> }.into_any(),
                }}
            </div>
        </Layout>
    }
}

#[component]
fn EmptyConsole() -> impl IntoView {
    view! {
        <section class="flex min-h-[50vh] flex-col items-center justify-center gap-3 p-8 text-center md:col-start-2 xl:col-span-2">
            <div class="grid h-12 w-12 place-items-center rounded-2xl bg-indigo-100 text-xl text-indigo-700" aria-hidden="true">
                "💬"
            </div>
            <h1 class="text-lg font-semibold">"No conversation open"</h1>
            <p class="max-w-sm text-sm text-slate-500">
                "Pick a conversation on the left, or start a new one to type the customer's message."
            </p>
        </section>
    }
}

/// The badge of a conversation's handling state.
#[component]
pub fn HandlingBadge(state: HandlingState) -> impl IntoView {
    let colours = match state {
        HandlingState::Ai => "bg-emerald-50 text-emerald-700 ring-emerald-200",
        HandlingState::WaitingApproval => "bg-amber-50 text-amber-800 ring-amber-300",
        HandlingState::WaitingHuman => "bg-rose-50 text-rose-700 ring-rose-200",
        HandlingState::Closed => "bg-slate-100 text-slate-600 ring-slate-200",
    };
    view! {
        <span
            data-testid="handling-label"
            data-state=state.as_str()
            class=format!(
                "inline-flex shrink-0 items-center rounded-full px-2 py-0.5 text-[11px] font-medium ring-1 {colours}",
            )
        >
            {state.label()}
        </span>
    }
}

/// The list of conversations with their handling labels and last messages.
#[component]
fn ConversationList(current: Memo<Option<String>>, refresh: RwSignal<u32>) -> impl IntoView {
    let create = ServerAction::<CreateConversation>::new();
    let conversations = Resource::new(
        move || (refresh.get(), create.version().get()),
        |_| list_conversations(),
    );
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(summary)) = create.value().get() {
            navigate(&format!("/c/{}", summary.session_id), Default::default());
        }
    });
    let create_error = move || match create.value().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };
    view! {
        <aside
            aria-label="Conversations"
            class="flex max-h-72 flex-col border-b border-slate-200 bg-white md:sticky md:top-14 md:row-span-2 md:h-[calc(100vh-3.5rem)] md:max-h-none md:self-start md:border-b-0 md:border-r xl:static xl:row-span-1 xl:h-full"
        >
            <div class="flex items-center justify-between gap-2 px-3 py-3">
                <h2 class="text-sm font-semibold text-slate-700">"Conversations"</h2>
                <button
                    type="button"
                    data-testid="new-conversation"
                    class="inline-flex items-center gap-1 rounded-lg bg-indigo-600 px-2.5 py-1.5 text-sm font-medium text-white shadow-sm hover:bg-indigo-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500 disabled:opacity-60"
                    disabled=move || create.pending().get()
                    on:click=move |_| {
                        create.dispatch(CreateConversation {});
                    }
                >
                    <span aria-hidden="true">"+"</span>
                    "New"
                    <span class="sr-only">" conversation"</span>
                </button>
            </div>
            {move || {
                create_error()
                    .map(|m| view! { <p role="alert" class="mx-3 mb-2 rounded bg-red-50 px-2 py-1 text-xs text-red-700">{m}</p> })
            }}
            <div class="min-h-0 flex-1 overflow-y-auto">
                <Transition fallback=|| view! { <p class="px-3 py-2 text-sm text-slate-500">"Loading…"</p> }>
                    <ErrorBoundary fallback=|errors| {
                        view! {
                            <p role="alert" class="px-3 py-2 text-sm text-red-700">
                                {move || {
                                    errors
                                        .get()
                                        .into_iter()
                                        .map(|(_, e)| e.to_string())
                                        .collect::<Vec<_>>()
                                        .join(" ")
                                }}
                            </p>
                        }
                    }>
                        {move || Suspend::new(async move {
                            conversations
                                .await
                                .map(|list| {
                                    if list.is_empty() {
                                        view! {
                                            <p class="px-3 py-2 text-sm text-slate-500">"No conversations yet."</p>
                                        }
                                            .into_any()
                                    } else {
                                        view! {
                                            <ul data-testid="conversation-list" class="space-y-0.5 px-2 pb-3">
                                                {list
                                                    .into_iter()
                                                    .map(|c| view! { <ConversationItem summary=c current/> })
                                                    .collect_view()}
                                            </ul>
                                        }
                                            .into_any()
                                    }
                                })
                        })}
                    </ErrorBoundary>
                </Transition>
            </div>
        </aside>
    }
}

#[component]
fn ConversationItem(summary: ConversationSummary, current: Memo<Option<String>>) -> impl IntoView {
    let id = summary.session_id.clone();
    let is_current = {
        let id = id.clone();
        move || current.get().as_deref() == Some(id.as_str())
    };
    let is_current2 = is_current.clone();
    let title = if summary.title.trim().is_empty() {
        "New conversation".to_string()
    } else {
        summary.title.clone()
    };
    let last = summary
        .last_message
        .clone()
        .unwrap_or_else(|| "No messages yet".into());
    let when = summary.updated_at.format("%b %-d, %H:%M").to_string();
    view! {
        <li>
            <a
                href=format!("/c/{id}")
                data-testid="conversation-item"
                data-session=id.clone()
                aria-current=move || is_current().then_some("page")
                class=move || {
                    if is_current2() {
                        "block rounded-lg bg-indigo-50 px-2.5 py-2 ring-1 ring-indigo-200"
                    } else {
                        "block rounded-lg px-2.5 py-2 hover:bg-slate-50"
                    }
                }
            >
                <div class="flex items-center gap-2">
                    <span class="truncate text-sm font-medium text-slate-800">{title}</span>
                    <span class="ml-auto shrink-0 text-[11px] tabular-nums text-slate-400">{when}</span>
                </div>
                <div class="mt-1 flex items-center gap-2">
                    <HandlingBadge state=summary.handling/>
                    <span data-testid="last-message" class="truncate text-xs text-slate-500">
                        {last}
                    </span>
                </div>
            </a>
        </li>
    }
}

/// Loads one conversation from the server, then shows it live.
#[component]
fn ChatView(id: String, session: Session, refresh: RwSignal<u32>) -> impl IntoView {
    let key = id.clone();
    let detail = Resource::new(move || key.clone(), get_conversation);
    view! {
        <Transition fallback=|| {
            view! {
                <div class="p-6 text-sm text-slate-500 md:col-start-2 xl:col-span-2">"Loading the conversation…"</div>
            }
        }>
            <ErrorBoundary fallback=|errors| {
                view! {
                    <div role="alert" class="m-6 rounded-xl border border-red-200 bg-red-50 p-4 text-sm text-red-800 md:col-start-2 xl:col-span-2">
                        {move || {
                            errors
                                .get()
                                .into_iter()
                                .map(|(_, e)| e.to_string())
                                .collect::<Vec<_>>()
                                .join(" ")
                        }}
                    </div>
                }
            }>
                {
                    let session = session.clone();
                    move || {
                        let session = session.clone();
                        Suspend::new(async move {
                            detail.await.map(|detail| view! { <ChatLive detail session refresh/> })
                        })
                    }
                }
            </ErrorBoundary>
        </Transition>
    }
}

/// What the timeline column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimelineMode {
    /// No turn yet.
    Nothing,
    /// A turn runs and has not called a tool yet.
    Planning,
    /// The live turn's calls, or the selected turn's.
    Calls,
}

/// The turn that is running right now, as its events arrive.
#[derive(Debug, Clone, Default, PartialEq)]
struct LiveTurn {
    graph_execution_id: Option<String>,
    reply: String,
    reasoning: String,
    calls: Vec<ToolCallRecord>,
    nodes: Vec<String>,
    pending: Vec<PendingToolCall>,
}

#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
impl LiveTurn {
    fn call_mut(&mut self, id: &str) -> Option<&mut ToolCallRecord> {
        self.calls.iter_mut().find(|c| c.id == id)
    }
}

/// Applies one event of the conversation's stream to the page's state.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
struct ChatState {
    messages: RwSignal<Vec<ChatMessage>>,
    turns: RwSignal<Vec<ChatTurnTraceResult>>,
    live: RwSignal<Option<LiveTurn>>,
    error: RwSignal<Option<String>>,
    draft: RwSignal<String>,
    sent_text: RwSignal<Option<String>>,
    selected: RwSignal<Option<String>>,
    decided: RwSignal<Vec<String>>,
    reasoning: RwSignal<Vec<(String, String)>>,
    refresh: RwSignal<u32>,
}

#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
impl ChatState {
    fn live_mut(&self, f: impl FnOnce(&mut LiveTurn)) {
        self.live
            .update(|l| f(l.get_or_insert_with(LiveTurn::default)));
    }

    /// A turn failed: show why and give the typed message back.
    fn fail(&self, message: String) {
        self.error.set(Some(message));
        if let Some(text) = self.sent_text.get_untracked() {
            self.sent_text.set(None);
            if self.draft.with_untracked(|d| d.trim().is_empty()) {
                self.draft.set(text);
            }
        }
        self.live.set(None);
    }

    /// Takes the stored conversation after a lost connection came back:
    /// events sent while it was down are in the stored messages and traces.
    fn resync(&self, detail: aics_types::ConversationDetail) {
        let live_gid = self
            .live
            .with_untracked(|l| l.as_ref().and_then(|l| l.graph_execution_id.clone()));
        // A turn's trace is stored when it ends or pauses.
        let ended =
            live_gid.is_some_and(|g| detail.turns.iter().any(|t| t.graph_execution_id == g));
        self.messages.set(detail.messages);
        self.turns.set(detail.turns);
        self.decided.set(Vec::new());
        if ended {
            self.sent_text.set(None);
            self.live.set(None);
        }
        self.refresh.update(|v| *v += 1);
    }

    fn apply(&self, event: AgentEvent) {
        match event {
            AgentEvent::TurnStart {
                graph_execution_id,
                resumed,
                ..
            } => {
                let earlier = self.turns.with_untracked(|t| {
                    t.iter()
                        .find(|x| x.graph_execution_id == graph_execution_id)
                        .map(|x| x.tool_calls.clone())
                });
                self.live_mut(|l| {
                    l.graph_execution_id = Some(graph_execution_id);
                    if resumed {
                        l.calls = earlier.unwrap_or_default();
                        l.pending.clear();
                    }
                });
                self.selected.set(None);
                self.refresh.update(|v| *v += 1);
            }
            AgentEvent::NodeStart { node } => self.live_mut(|l| l.nodes.push(node)),
            AgentEvent::LlmToken {
                token,
                reasoning_token,
            } => self.live_mut(|l| {
                l.reply.push_str(&token);
                if let Some(r) = reasoning_token {
                    l.reasoning.push_str(&r);
                }
            }),
            AgentEvent::NodeEnd { .. } => {}
            AgentEvent::ToolStart { tool, args, id, .. } => self.live_mut(|l| {
                if let Some(call) = l.call_mut(&id) {
                    call.status = ToolCallStatus::Running;
                    call.input = args;
                } else {
                    l.calls.push(ToolCallRecord {
                        id,
                        name: tool,
                        input: args,
                        output: Value::Null,
                        status: ToolCallStatus::Running,
                        timestamp: now(),
                        duration_ms: None,
                    });
                }
            }),
            AgentEvent::ToolEnd {
                tool,
                id,
                result,
                status,
                duration_ms,
                ..
            } => self.live_mut(|l| {
                if let Some(call) = l.call_mut(&id) {
                    call.output = result;
                    call.status = status;
                    call.duration_ms = Some(duration_ms);
                } else {
                    l.calls.push(ToolCallRecord {
                        id,
                        name: tool,
                        input: Value::Null,
                        output: result,
                        status,
                        timestamp: now(),
                        duration_ms: Some(duration_ms),
                    });
                }
            }),
            AgentEvent::ApprovalRequired {
                tool,
                args,
                id,
                reason,
                ..
            } => {
                self.live_mut(|l| {
                    if let Some(call) = l.call_mut(&id) {
                        call.status = ToolCallStatus::Pending;
                    } else {
                        l.calls.push(ToolCallRecord {
                            id: id.clone(),
                            name: tool.clone(),
                            input: args.clone(),
                            output: Value::Null,
                            status: ToolCallStatus::Pending,
                            timestamp: now(),
                            duration_ms: None,
                        });
                    }
                    if !l.pending.iter().any(|p| p.id == id) {
                        l.pending.push(PendingToolCall {
                            id,
                            tool,
                            args,
                            reason,
                        });
                    }
                });
                self.refresh.update(|v| *v += 1);
            }
            AgentEvent::ApprovalDecided { id, approved, .. } => {
                self.decided.update(|d| {
                    if !d.contains(&id) {
                        d.push(id.clone());
                    }
                });
                if !approved {
                    self.turns.update(|t| {
                        for call in t.iter_mut().flat_map(|x| x.tool_calls.iter_mut()) {
                            if call.id == id {
                                call.status = ToolCallStatus::Denied;
                            }
                        }
                    });
                }
                self.refresh.update(|v| *v += 1);
            }
            AgentEvent::Final { trace } => {
                let trace = *trace;
                let failed = trace.stop_reason == Some(StopReason::Error) || trace.error.is_some();
                let reasoning = self
                    .live
                    .with_untracked(|l| l.as_ref().map(|l| l.reasoning.clone()))
                    .unwrap_or_default();
                let gid = trace.graph_execution_id.clone();
                if !reasoning.is_empty() {
                    self.reasoning.update(|r| r.push((gid.clone(), reasoning)));
                }
                // A failed turn's explanatory reply is stored too: show it as a reload would.
                if !trace.reply.is_empty() && !trace.pending_approval {
                    let reply = trace.reply.clone();
                    self.messages.update(|m| {
                        m.push(ChatMessage {
                            id: -(m.len() as i64) - 1,
                            role: MessageRole::Assistant,
                            content: reply,
                            graph_execution_id: Some(gid.clone()),
                            created_at: now(),
                        })
                    });
                }
                let paused = trace.pending_approval;
                let error = trace.error.clone();
                self.turns.update(|t| {
                    if !paused {
                        for x in t.iter_mut() {
                            x.pending_approval = false;
                        }
                    }
                    match t.iter_mut().find(|x| x.graph_execution_id == gid) {
                        Some(x) => *x = trace,
                        None => t.push(trace),
                    }
                });
                if failed {
                    self.fail(error.unwrap_or_else(|| "The turn failed.".into()));
                } else {
                    self.sent_text.set(None);
                    self.live.set(None);
                }
                self.selected.set(None);
                self.refresh.update(|v| *v += 1);
            }
            AgentEvent::Error { message } => {
                self.fail(message);
                self.refresh.update(|v| *v += 1);
            }
            // Handled by the connection: it reloads the conversation.
            AgentEvent::Resync { .. } => {}
        }
    }
}

/// The conversation with its live state: message pane, composer, timeline.
#[component]
fn ChatLive(
    detail: aics_types::ConversationDetail,
    session: Session,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let session_id = detail.summary.session_id.clone();
    let stored_title = detail.summary.title.trim().to_string();
    let state = ChatState {
        messages: RwSignal::new(detail.messages),
        turns: RwSignal::new(detail.turns),
        live: RwSignal::new(None),
        error: RwSignal::new(None),
        draft: RwSignal::new(String::new()),
        sent_text: RwSignal::new(None),
        selected: RwSignal::new(None),
        decided: RwSignal::new(Vec::new()),
        reasoning: RwSignal::new(Vec::new()),
        refresh,
    };
    let connected = RwSignal::new(false);
    let supervisor = session.is_supervisor();
    // A conversation without a title of its own is named by its first message.
    let title = Memo::new(move |_| {
        if !stored_title.is_empty() {
            return stored_title.clone();
        }
        state.messages.with(|m| {
            m.iter()
                .find(|m| m.role == MessageRole::Customer)
                .map(|m| {
                    let mut t: String = m.content.chars().take(60).collect();
                    if m.content.chars().count() > 60 {
                        t.push('…');
                    }
                    t
                })
                .unwrap_or_else(|| "New conversation".into())
        })
    });

    let running = Memo::new(move |_| state.live.with(|l| l.is_some()));
    // The calls that wait for a supervisor, minus those decided from here.
    let waiting = Memo::new(move |_| {
        let decided = state.decided.get();
        let pending = state.live.with(|l| l.as_ref().map(|l| l.pending.clone()));
        let pending = match pending {
            Some(p) => p,
            None => state.turns.with(|t| {
                t.last()
                    .filter(|x| x.pending_approval)
                    .map(|x| x.pending_tool_calls.clone())
                    .unwrap_or_default()
            }),
        };
        pending
            .into_iter()
            .filter(|p| !decided.contains(&p.id))
            .collect::<Vec<_>>()
    });
    // A decision was taken and the turn has not resumed yet.
    let resuming = Memo::new(move |_| {
        !running.get()
            && waiting.get().is_empty()
            && state
                .turns
                .with(|t| t.last().is_some_and(|x| x.pending_approval))
    });
    let blocked = move || running.get() || !waiting.get().is_empty() || resuming.get();

    // ---- the live connection (browser only) ----
    #[cfg(feature = "hydrate")]
    {
        use crate::sse::EventStream;
        let stream = StoredValue::new_local(None::<EventStream>);
        let url = format!("/api/conversations/{session_id}/events");
        let sid = session_id.clone();
        // A reconnecting EventSource sends Last-Event-ID and the server
        // replays what it missed; when it cannot, it sends `resync` and the
        // page reloads the stored conversation.
        let on_open = move || connected.set(true);
        let on_event = move |event: AgentEvent| {
            if let AgentEvent::Resync { .. } = event {
                let sid = sid.clone();
                leptos::task::spawn_local(async move {
                    if let Ok(detail) = get_conversation(sid).await {
                        state.resync(detail);
                    }
                });
            } else {
                state.apply(event);
            }
        };
        Effect::new(
            move |_| match EventStream::connect(&url, on_event.clone(), on_open) {
                Ok(s) => stream.set_value(Some(s)),
                Err(_) => state
                    .error
                    .set(Some("Could not connect to the server.".into())),
            },
        );
        on_cleanup(move || stream.dispose());
    }

    // ---- sending ----
    let send_action = ServerAction::<SendMessage>::new();
    let sid = StoredValue::new(session_id.clone());
    let send = move || {
        let text = state.draft.get_untracked();
        if validate_message(&text).is_err() || running.get_untracked() || !connected.get_untracked()
        {
            return;
        }
        if !waiting.get_untracked().is_empty() || resuming.get_untracked() {
            return;
        }
        state.error.set(None);
        state.sent_text.set(Some(text.clone()));
        state.draft.set(String::new());
        state.messages.update(|m| {
            m.push(ChatMessage {
                id: -(m.len() as i64) - 1,
                role: MessageRole::Customer,
                content: text.clone(),
                graph_execution_id: None,
                created_at: now(),
            })
        });
        state.live.set(Some(LiveTurn::default()));
        state.selected.set(None);
        send_action.dispatch(SendMessage {
            session_id: sid.get_value(),
            message: text,
        });
    };
    Effect::new(move |_| {
        if let Some(Err(e)) = send_action.value().get() {
            // Not accepted, so not stored: take the optimistic line back.
            state.messages.update(|m| {
                if m.last()
                    .is_some_and(|x| x.id < 0 && x.role == MessageRole::Customer)
                {
                    m.pop();
                }
            });
            if e.is_unauthorized() {
                crate::auth::reload_to("/login");
            }
            state.fail(e.message);
        }
    });

    // ---- scrolling and focus (browser only) ----
    let pane = NodeRef::<leptos::html::Div>::new();
    let composer = NodeRef::<leptos::html::Textarea>::new();
    // Follow the newest text unless the reader scrolled up to read.
    let follow = RwSignal::new(true);
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| {
            state.messages.track();
            state.live.track();
            waiting.track();
            if let Some(el) = pane.get() {
                if follow.get_untracked() {
                    el.set_scroll_top(el.scroll_height());
                }
            }
        });
        Effect::new(move |_| {
            if let Some(el) = composer.get() {
                let _ = el.focus();
            }
        });
        Effect::new(move |was_blocked: Option<bool>| {
            let now_blocked = blocked();
            if was_blocked == Some(true) && !now_blocked {
                if let Some(el) = composer.get() {
                    let _ = el.focus();
                }
            }
            now_blocked
        });
    }

    // ---- approvals from this page (supervisors) ----
    let decide = ServerAction::<DecideApproval>::new();
    let decide_error = RwSignal::new(None::<String>);
    Effect::new(move |_| match decide.value().get() {
        Some(Err(e)) => {
            decide_error.set(Some(e.message));
            state.decided.set(Vec::new());
        }
        Some(Ok(_)) => decide_error.set(None),
        None => {}
    });

    let panel_turn = Memo::new(move |_| {
        let selected = state.selected.get();
        state.turns.with(|t| match selected {
            Some(g) => t.iter().find(|x| x.graph_execution_id == g).cloned(),
            None => t.last().cloned(),
        })
    });
    let showing_live = move || running.get() && state.selected.get().is_none();
    let timeline_calls = Signal::derive(move || {
        if showing_live() {
            state
                .live
                .with(|l| l.as_ref().map(|l| l.calls.clone()))
                .unwrap_or_default()
        } else {
            panel_turn.get().map(|t| t.tool_calls).unwrap_or_default()
        }
    });
    let timeline_mode = Memo::new(move |_| {
        if showing_live() {
            if timeline_calls.with(|c| c.is_empty()) {
                TimelineMode::Planning
            } else {
                TimelineMode::Calls
            }
        } else if panel_turn.with(|t| t.is_none()) {
            TimelineMode::Nothing
        } else {
            TimelineMode::Calls
        }
    });
    let timeline_fallback = Signal::derive(move || {
        if showing_live() {
            None
        } else {
            panel_turn.get().and_then(|t| t.tool_result)
        }
    });

    view! {
        <section
            data-testid="chat"
            data-connected=move || connected.get().to_string()
            data-running=move || running.get().to_string()
            aria-label="Conversation"
            class="flex h-[calc(100vh-3.5rem)] min-h-[28rem] min-w-0 flex-col bg-slate-50 xl:h-full xl:min-h-0"
        >
            <div class="flex items-center gap-3 border-b border-slate-200 bg-white px-4 py-2.5">
                <h1 data-testid="conversation-title" class="truncate text-sm font-semibold text-slate-800">
                    {move || title.get()}
                </h1>
                <code class="hidden truncate font-mono text-[11px] text-slate-400 sm:inline">{session_id.clone()}</code>
                <span class="ml-auto flex items-center gap-1.5 text-xs text-slate-500">
                    <span
                        aria-hidden="true"
                        class=move || {
                            if connected.get() {
                                "h-2 w-2 rounded-full bg-emerald-500"
                            } else {
                                "h-2 w-2 animate-pulse rounded-full bg-slate-300"
                            }
                        }
                    ></span>
                    {move || if connected.get() { "Live" } else { "Connecting…" }}
                </span>
            </div>

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
                        each=move || state.messages.get().into_iter().enumerate()
                        key=|(i, m)| (*i, m.id)
                        children=move |(_, message)| view! { <MessageLine message state/> }
                    />
                    {move || {
                        state.messages.with(|m| m.is_empty()).then(|| view! {
                            <li class="py-10 text-center text-sm text-slate-500">
                                "No messages yet. Type what the customer wrote below."
                            </li>
                        })
                    }}
                    <StreamingReply state/>
                    <PendingApprovals
                        waiting
                        resuming
                        supervisor
                        decide
                        decide_error
                        decided=state.decided
                    />
                </ol>
            </div>

            <div class="border-t border-slate-200 bg-white px-4 py-3">
                <div class="mx-auto max-w-3xl">
                    {move || {
                        state.error.get().map(|message| view! {
                            <p
                                role="alert"
                                data-testid="turn-error"
                                class="mb-2 flex items-start gap-2 rounded-lg border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800"
                            >
                                <span aria-hidden="true" class="mt-0.5 grid h-5 w-5 shrink-0 place-items-center rounded-full bg-red-600 text-xs font-bold text-white">"!"</span>
                                <span>
                                    <span class="block font-medium">"The AI's reply failed."</span>
                                    <span class="block text-red-700">{message}</span>
                                    <span class="block text-xs text-red-700">
                                        "Your message is kept in the composer — send it again when ready."
                                    </span>
                                </span>
                            </p>
                        })
                    }}
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
                            placeholder="Type the customer's message…"
                            aria-describedby="composer-hint"
                            class="min-h-14 flex-1 resize-none rounded-xl border border-slate-300 bg-white px-3 py-2 text-sm shadow-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200 disabled:bg-slate-50 disabled:text-slate-500"
                            disabled=blocked
                            prop:value=move || state.draft.get()
                            on:input=move |ev| state.draft.set(event_target_value(&ev))
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
                                blocked() || !connected.get()
                                    || state.draft.with(|d| d.trim().is_empty())
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
                        <span data-testid="composer-status" class="ml-auto">
                            {move || {
                                if running.get() {
                                    "The AI is replying…"
                                } else if !waiting.get().is_empty() || resuming.get() {
                                    "Paused: waiting for supervisor approval"
                                } else if !connected.get() {
                                    "Connecting…"
                                } else {
                                    ""
                                }
                            }}
                        </span>
                    </p>
                </div>
            </div>
        </section>

        <aside
            data-testid="timeline-panel"
            aria-label="Tool calls and trace"
            class="min-w-0 space-y-3 border-t border-slate-200 bg-slate-50 p-4 md:col-start-2 xl:col-start-3 xl:h-full xl:overflow-y-auto xl:border-l xl:border-t-0"
        >
            <div class="flex items-center gap-2">
                <h2 class="text-sm font-semibold text-slate-700">"Tool calls"</h2>
                {move || {
                    showing_live().then(|| view! {
                        <span data-testid="timeline-live" class="inline-flex items-center gap-1 rounded-full bg-sky-100 px-2 py-0.5 text-[11px] font-medium text-sky-800">
                            <span aria-hidden="true" class="h-1.5 w-1.5 animate-pulse rounded-full bg-sky-500"></span>
                            "live"
                        </span>
                    })
                }}
                {move || {
                    state.selected.get().map(|_| view! {
                        <button
                            type="button"
                            class="ml-auto text-xs font-medium text-indigo-600 hover:underline"
                            on:click=move |_| state.selected.set(None)
                        >
                            "Show latest turn"
                        </button>
                    })
                }}
            </div>
            {move || {
                showing_live().then(|| {
                    let nodes = state.live.with(|l| l.as_ref().map(|l| l.nodes.clone())).unwrap_or_default();
                    (!nodes.is_empty()).then(|| view! { <NodePath nodes/> })
                })
            }}
            {move || match timeline_mode.get() {
                TimelineMode::Nothing => view! {
                    <p class="rounded-xl border border-dashed border-slate-300 p-4 text-center text-sm text-slate-500">
                        "Tool calls of the AI's turns appear here while they run."
                    </p>
                }.into_any(),
                TimelineMode::Planning => view! {
                    <p data-testid="timeline-planning" class="rounded-xl border border-dashed border-sky-300 bg-sky-50/50 p-4 text-center text-sm text-sky-800">
                        "The AI is planning its next step…"
                    </p>
                }.into_any(),
                TimelineMode::Calls => {
                    view! { <ToolTimeline calls=timeline_calls fallback=timeline_fallback/> }.into_any()
                }
            }}
            {move || {
                (!showing_live()).then(|| panel_turn.get().map(|trace| view! { <TracePanel trace link=true/> }))
            }}
        </aside>
    }
}

/// One message of the transcript. Model output is text, never HTML.
#[component]
fn MessageLine(message: ChatMessage, state: ChatState) -> impl IntoView {
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
            let reasoning = gid.clone().and_then(|g| {
                state
                    .reasoning
                    .with_untracked(|r| r.iter().find(|(x, _)| *x == g).map(|(_, t)| t.clone()))
            });
            view! {
                <li data-role="assistant" class="flex gap-2">
                    <span aria-hidden="true" class="mt-1 grid h-7 w-7 shrink-0 place-items-center rounded-full bg-slate-800 text-[11px] font-bold text-white">
                        "AI"
                    </span>
                    <div class="min-w-0 max-w-[85%]">
                        {reasoning.map(|text| view! { <Reasoning text/> })}
                        <div data-testid="assistant-text" class="whitespace-pre-wrap break-words rounded-2xl rounded-tl-md border border-slate-200 bg-white px-4 py-2 text-sm text-slate-800 shadow-sm">
                            {message.content}
                        </div>
                        {gid.map(|g| {
                            let g2 = g.clone();
                            view! {
                                <button
                                    type="button"
                                    data-testid="show-trace"
                                    class="mt-1 text-xs text-slate-500 hover:text-indigo-700 hover:underline"
                                    aria-pressed=move || (state.selected.get().as_deref() == Some(g.as_str())).to_string()
                                    on:click=move |_| state.selected.set(Some(g2.clone()))
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
fn StreamingReply(state: ChatState) -> impl IntoView {
    let reply = move || state.live.with(|l| l.as_ref().map(|l| l.reply.clone()));
    let reasoning = move || {
        state
            .live
            .with(|l| l.as_ref().map(|l| l.reasoning.clone()))
            .filter(|r| !r.is_empty())
    };
    let activity = move || {
        state.live.with(|l| {
            let l = l.as_ref()?;
            if let Some(call) = l
                .calls
                .iter()
                .rev()
                .find(|c| c.status == ToolCallStatus::Running)
            {
                return Some(format!("Calling {}…", call.name));
            }
            Some(match l.nodes.last().map(String::as_str) {
                Some("tools") => "Running tools…".to_string(),
                _ => "Thinking…".to_string(),
            })
        })
    };
    view! {
        <Show when=move || state.live.with(|l| l.as_ref().is_some_and(|l| l.pending.is_empty()))>
            <li class="flex gap-2">
                <span aria-hidden="true" class="mt-1 grid h-7 w-7 shrink-0 place-items-center rounded-full bg-slate-800 text-[11px] font-bold text-white">
                    "AI"
                </span>
                <div class="min-w-0 max-w-[85%]">
                    {move || reasoning().map(|text| view! { <Reasoning text/> })}
                    <div
                        data-testid="streaming-reply"
                        aria-live="polite"
                        aria-busy="true"
                        class="min-h-10 whitespace-pre-wrap break-words rounded-2xl rounded-tl-md border border-indigo-200 bg-white px-4 py-2 text-sm text-slate-800 shadow-sm"
                    >
                        {move || {
                            let text = reply().unwrap_or_default();
                            if text.is_empty() {
                                view! {
                                    <span class="text-slate-500" data-testid="activity">{activity}</span>
                                }.into_any()
                            } else {
                                view! {
                                    <span>{text}</span>
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

/// Sensitive calls that wait for a supervisor: buttons for supervisors, a
/// notice for agents.
#[component]
fn PendingApprovals(
    waiting: Memo<Vec<PendingToolCall>>,
    resuming: Memo<bool>,
    supervisor: bool,
    decide: ServerAction<DecideApproval>,
    decide_error: RwSignal<Option<String>>,
    decided: RwSignal<Vec<String>>,
) -> impl IntoView {
    view! {
        {move || {
            resuming.get().then(|| view! {
                <li data-testid="approval-resuming" class="self-center rounded-full bg-emerald-50 px-3 py-1 text-xs text-emerald-800 ring-1 ring-emerald-200">
                    "Decision recorded — the turn continues…"
                </li>
            })
        }}
        <For
            each=move || waiting.get()
            key=|p| p.id.clone()
            children=move |call| {
                view! { <PendingCall call supervisor decide decide_error decided/> }
            }
        />
    }
}

#[component]
fn PendingCall(
    call: PendingToolCall,
    supervisor: bool,
    decide: ServerAction<DecideApproval>,
    decide_error: RwSignal<Option<String>>,
    decided: RwSignal<Vec<String>>,
) -> impl IntoView {
    let reason = RwSignal::new(String::new());
    let id = StoredValue::new(call.id.clone());
    let send = move |approve: bool| {
        let text = reason.get_untracked();
        if !approve && text.trim().is_empty() {
            return;
        }
        decided.update(|d| d.push(id.get_value()));
        decide.dispatch(DecideApproval {
            id: id.get_value(),
            decision: aics_types::ApprovalDecision {
                approve,
                reason: (!approve).then(|| text.trim().to_string()),
                args: None,
                token: None,
            },
        });
    };
    let reason_id = format!("reject-reason-{}", call.id);
    view! {
        <li
            data-testid="approval-inline"
            data-tool=call.tool.clone()
            class="rounded-xl border border-amber-300 bg-amber-50 p-3 text-sm shadow-sm"
        >
            <div class="flex items-center gap-2">
                <span aria-hidden="true" class="grid h-6 w-6 place-items-center rounded-full bg-amber-200 text-xs font-bold text-amber-900">"!"</span>
                <p class="font-medium text-amber-900">
                    "Waiting for supervisor approval: "
                    <code class="font-mono">{call.tool.clone()}</code>
                </p>
            </div>
            {(!call.reason.is_empty()).then(|| view! { <p class="mt-1 text-xs text-amber-800">{call.reason.clone()}</p> })}
            <details class="mt-2">
                <summary class="cursor-pointer text-xs font-medium text-amber-900">"Proposed arguments"</summary>
                <div class="mt-1.5">
                    <JsonBlock value=call.args.clone() label="proposed arguments"/>
                </div>
            </details>
            {if supervisor {
                view! {
                    <div class="mt-3 flex flex-wrap items-end gap-2">
                        <button
                            type="button"
                            data-testid="approve-inline"
                            class="rounded-lg bg-emerald-600 px-3 py-1.5 font-medium text-white hover:bg-emerald-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-emerald-500"
                            on:click=move |_| send(true)
                        >
                            "Approve"
                        </button>
                        <div class="flex min-w-48 flex-1 items-end gap-2">
                            <div class="flex-1">
                                <label for=reason_id.clone() class="mb-0.5 block text-xs text-amber-900">"Reason for rejecting"</label>
                                <input
                                    id=reason_id.clone()
                                    data-testid="reject-reason-inline"
                                    class="w-full rounded-lg border border-amber-300 bg-white px-2 py-1.5 text-sm focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-200"
                                    prop:value=move || reason.get()
                                    on:input=move |ev| reason.set(event_target_value(&ev))
                                />
                            </div>
                            <button
                                type="button"
                                data-testid="reject-inline"
                                class="rounded-lg border border-rose-300 bg-white px-3 py-1.5 font-medium text-rose-700 hover:bg-rose-50 disabled:opacity-50"
                                disabled=move || reason.with(|r| r.trim().is_empty())
                                on:click=move |_| send(false)
                            >
                                "Reject"
                            </button>
                        </div>
                    </div>
                    {move || decide_error.get().map(|m| view! { <p role="alert" class="mt-2 text-xs text-red-700">{m}</p> })}
                }
                    .into_any()
            } else {
                view! {
                    <p data-testid="approval-waiting" class="mt-2 text-xs text-amber-900">
                        "A supervisor must approve this call; the reply continues here by itself once they decide."
                    </p>
                }
                    .into_any()
            }}
        </li>
    }
}
