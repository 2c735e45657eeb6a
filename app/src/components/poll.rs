//! Polling from the browser: `tick` every `every` while the component
//! lives. An `Effect`, so it never runs on the server and changes nothing
//! the server rendered; the interval is cleared when the component goes.

use std::time::Duration;

use leptos::prelude::*;

/// Calls `tick` every `every` from mount until cleanup.
pub fn poll_every(every: Duration, tick: impl Fn() + Clone + 'static) {
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(tick.clone(), every) {
            on_cleanup(move || handle.clear());
        }
    });
}
