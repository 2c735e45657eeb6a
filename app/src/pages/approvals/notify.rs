//! The supervisors' notice of waiting approvals, in the header of every
//! page: a live count beside "Approvals", the count in the tab title
//! ("(3) aics …"), optional desktop notifications (the Notifications
//! API, asked for once when the supervisor turns them on; the choice is kept
//! in localStorage) and an optional sound (`super::chime`). The server renders the same placeholder the first
//! client render shows; everything after that happens in Effects, in the
//! browser only.

use leptos::prelude::*;

/// The tab title without a count (the app's `<Title>`).
pub const BASE_TITLE: &str = "aics — AI customer support";

/// The tab title with `n` approvals waiting.
pub fn title_with(n: i64) -> String {
    if n > 0 {
        format!("({n}) {BASE_TITLE}")
    } else {
        BASE_TITLE.to_owned()
    }
}

#[cfg(feature = "hydrate")]
const NOTIFY_KEY: &str = "aics.notify-approvals";

/// The live count and the notification toggle.
#[component]
pub fn PendingNotice() -> impl IntoView {
    let count = RwSignal::new(None::<i64>);
    let notify = RwSignal::new(false);
    let sound = RwSignal::new(false);
    // How many chimes this page played: what a test can see of a sound.
    let chimes = RwSignal::new(0u32);

    #[cfg(feature = "hydrate")]
    {
        use aics_types::AgentEvent;

        use crate::sse::EventStream;

        let refresh = move || {
            leptos::task::spawn_local(async move {
                if let Ok(n) = super::api::pending_approval_count().await {
                    count.set(Some(n));
                }
            });
        };
        let stream = StoredValue::new_local(None::<EventStream>);
        Effect::new(move |_| {
            notify.set(stored_choice() && permission_granted());
            sound.set(super::chime::stored());
            let on_event = move |event: AgentEvent| {
                if let AgentEvent::ApprovalRequired(required) = &event {
                    if notify.get_untracked() {
                        desktop_notice(&required.tool, &required.session_id);
                    }
                    if sound.get_untracked() {
                        super::chime::play();
                        chimes.update(|n| *n += 1);
                    }
                }
                refresh();
            };
            if let Ok(s) = EventStream::connect("/api/approvals/events", on_event, refresh) {
                stream.set_value(Some(s));
            }
        });
        on_cleanup(move || stream.dispose());
        Effect::new(move |_| {
            if let Some(n) = count.get() {
                document().set_title(&title_with(n));
            }
        });
    }

    let toggle = move |_| {
        let on = !notify.get_untracked();
        #[cfg(feature = "hydrate")]
        {
            if on && !permission_granted() {
                ask_permission(notify);
                return;
            }
            remember(on);
        }
        notify.set(on);
    };
    let toggle_sound = move |_| {
        let on = !sound.get_untracked();
        #[cfg(feature = "hydrate")]
        {
            if on {
                super::chime::unlock();
            }
            super::chime::remember(on);
        }
        sound.set(on);
    };
    let shown = move || count.get().filter(|n| *n > 0);
    view! {
        <span
            data-testid="pending-count"
            data-count=move || count.get().map(|n| n.to_string()).unwrap_or_default()
            aria-live="polite"
            aria-label=move || format!("{} approvals waiting", shown().unwrap_or(0))
            class=move || if shown().is_some() {
                "ml-1 inline-grid min-w-5 place-items-center rounded-full bg-rose-600 px-1.5 text-[11px] font-semibold leading-5 text-white tabular-nums"
            } else {
                "hidden"
            }
        >
            {move || shown().map(|n| n.to_string()).unwrap_or_default()}
        </span>
        <button
            type="button"
            data-testid="notify-toggle"
            aria-pressed=move || notify.get().to_string()
            title=move || if notify.get() {
                "Desktop notifications for new approvals: on"
            } else {
                "Desktop notifications for new approvals: off"
            }
            class="ml-1 rounded-md px-1.5 py-1 text-xs text-slate-500 hover:bg-slate-100 aria-[pressed=true]:text-indigo-700"
            on:click=toggle
        >
            <span aria-hidden="true">{move || if notify.get() { "🔔" } else { "🔕" }}</span>
            <span class="sr-only">"Desktop notifications"</span>
        </button>
        <button
            type="button"
            data-testid="sound-toggle"
            data-chimes=move || chimes.get().to_string()
            aria-pressed=move || sound.get().to_string()
            title=move || if sound.get() {
                "A sound for new approvals: on"
            } else {
                "A sound for new approvals: off"
            }
            class="rounded-md px-1.5 py-1 text-xs text-slate-500 hover:bg-slate-100 aria-[pressed=true]:text-indigo-700"
            on:click=toggle_sound
        >
            <span aria-hidden="true">{move || if sound.get() { "🔊" } else { "🔈" }}</span>
            <span class="sr-only">"Sound for new approvals"</span>
        </button>
    }
    .into_any()
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

#[cfg(feature = "hydrate")]
fn stored_choice() -> bool {
    storage()
        .and_then(|s| s.get_item(NOTIFY_KEY).ok().flatten())
        .is_some_and(|v| v == "1")
}

#[cfg(feature = "hydrate")]
fn remember(on: bool) {
    if let Some(s) = storage() {
        let _ = s.set_item(NOTIFY_KEY, if on { "1" } else { "0" });
    }
}

#[cfg(feature = "hydrate")]
fn permission_granted() -> bool {
    web_sys::Notification::permission() == web_sys::NotificationPermission::Granted
}

/// Asks once; turns the toggle on when the browser says yes.
#[cfg(feature = "hydrate")]
fn ask_permission(notify: RwSignal<bool>) {
    let Ok(promise) = web_sys::Notification::request_permission() else {
        return;
    };
    leptos::task::spawn_local(async move {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
        let granted = permission_granted();
        remember(granted);
        notify.set(granted);
    });
}

#[cfg(feature = "hydrate")]
fn desktop_notice(tool: &str, session_id: &str) {
    let options = web_sys::NotificationOptions::new();
    options.set_body(&format!(
        "{tool} in conversation {session_id} waits for a decision"
    ));
    options.set_tag("aics-approval");
    let _ = web_sys::Notification::new_with_options("Approval needed", &options);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_carries_the_count() {
        assert_eq!(title_with(0), BASE_TITLE);
        assert_eq!(title_with(3), format!("(3) {BASE_TITLE}"));
    }
}
