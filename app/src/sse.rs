//! The browser's live connection to a conversation's event stream.
//!
//! The server sends each [`AgentEvent`] as a named server-sent event (its
//! `event:` is the event's tag), so the browser listens for every tag in
//! [`AgentEvent::KINDS`]. Only the hydrated client opens connections; on the
//! server this module is empty.

#[cfg(feature = "hydrate")]
pub use client::EventStream;

#[cfg(feature = "hydrate")]
mod client {
    use std::rc::Rc;

    use aics_types::AgentEvent;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::{JsCast, JsValue};
    use web_sys::{EventSource, MessageEvent};

    type Listener = Closure<dyn FnMut(MessageEvent)>;

    /// An open `EventSource`; closed when dropped.
    pub struct EventStream {
        source: EventSource,
        _listeners: Vec<Listener>,
        _on_open: Closure<dyn FnMut(web_sys::Event)>,
    }

    impl EventStream {
        /// Connects to `url` and calls `on_event` for every event that
        /// parses, and `on_open` each time the connection (re)opens.
        pub fn connect(
            url: &str,
            on_event: impl Fn(AgentEvent) + 'static,
            on_open: impl Fn() + 'static,
        ) -> Result<Self, JsValue> {
            Self::connect_to(url, &AgentEvent::KINDS, on_event, on_open)
        }

        /// The same for any event type whose tags are `kinds` (the
        /// customer's stream).
        pub fn connect_to<T: serde::de::DeserializeOwned + 'static>(
            url: &str,
            kinds: &[&str],
            on_event: impl Fn(T) + 'static,
            on_open: impl Fn() + 'static,
        ) -> Result<Self, JsValue> {
            let source = EventSource::new(url)?;
            let on_event = Rc::new(on_event);
            let mut listeners = Vec::with_capacity(kinds.len());
            for kind in kinds {
                let handler = on_event.clone();
                let listener = Listener::new(move |message: MessageEvent| {
                    let Some(text) = message.data().as_string() else {
                        return;
                    };
                    match aics_types::json::from_str::<T>(&text) {
                        Ok(event) => handler(event),
                        Err(err) => leptos::logging::warn!("unreadable event: {err}"),
                    }
                });
                source.add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref())?;
                listeners.push(listener);
            }
            let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| on_open());
            source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
            Ok(Self {
                source,
                _listeners: listeners,
                _on_open: on_open,
            })
        }
    }

    impl Drop for EventStream {
        fn drop(&mut self) {
            self.source.close();
        }
    }
}
