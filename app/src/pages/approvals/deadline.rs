//! An approval's deadline on its card: the absolute time, rendered by the
//! server (the same text at hydration), and a countdown that only starts
//! ticking in an `Effect` after mount, so the server's HTML and the first
//! client render never differ.

use aics_types::Timestamp;
use leptos::prelude::*;

/// "4m 05s left", "12s left", "due now" for `ms` milliseconds to go.
pub fn remaining_text(ms: i64) -> String {
    if ms <= 0 {
        return "due now".to_owned();
    }
    let secs = (ms + 999) / 1000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h {m:02}m left")
    } else if m > 0 {
        format!("{m}m {s:02}s left")
    } else {
        format!("{s}s left")
    }
}

/// What the deadline does, in words.
pub fn expiry_words(on_expiry: Option<&str>) -> &'static str {
    match on_expiry {
        Some("handover") => "Hands over to a person at",
        Some(_) => "Rejected automatically at",
        None => "Ends automatically at",
    }
}

/// The deadline line of a card.
#[component]
pub fn Deadline(until: Timestamp, on_expiry: Option<String>) -> impl IntoView {
    let left = RwSignal::new(String::new());
    let until_ms = until.timestamp_millis();
    // Browser only: an Effect never runs on the server.
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        {
            let tick = move || left.set(remaining_text(until_ms - js_sys::Date::now() as i64));
            tick();
            if let Ok(handle) = set_interval_with_handle(tick, std::time::Duration::from_secs(1)) {
                on_cleanup(move || handle.clear());
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = until_ms;
    });
    view! {
        <p
            data-testid="approval-deadline"
            data-expires-at=crate::components::time::rfc3339(&until)
            class="mb-2 flex flex-wrap items-center gap-2 rounded-lg bg-rose-50 px-3 py-2 text-xs text-rose-800"
        >
            <span>
                {expiry_words(on_expiry.as_deref())}
                " "
                <time datetime=crate::components::time::rfc3339(&until) class="font-medium tabular-nums">
                    {format!("{} UTC", crate::components::time::hms(&until))}
                </time>
            </span>
            <span data-testid="approval-countdown" class="ml-auto font-semibold tabular-nums">
                {move || left.get()}
            </span>
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_countdown_reads_well() {
        assert_eq!(remaining_text(-5), "due now");
        assert_eq!(remaining_text(0), "due now");
        assert_eq!(remaining_text(1), "1s left");
        assert_eq!(remaining_text(12_000), "12s left");
        assert_eq!(remaining_text(245_000), "4m 05s left");
        assert_eq!(remaining_text(3_600_000 + 60_000), "1h 01m left");
        assert_eq!(expiry_words(Some("handover")), "Hands over to a person at");
        assert_eq!(expiry_words(Some("reject")), "Rejected automatically at");
        assert_eq!(expiry_words(None), "Ends automatically at");
    }
}
