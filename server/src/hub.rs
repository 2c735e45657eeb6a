//! The per-conversation event hub: every open event stream of a conversation
//! receives the events of its running turns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aics_types::AgentEvent;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it misses some.
const CAPACITY: usize = 1024;

/// Broadcast channels keyed by session id, created on first use.
#[derive(Clone, Default)]
pub struct Hub {
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<AgentEvent>>>>,
}

impl Hub {
    fn sender(&self, session_id: &str) -> broadcast::Sender<AgentEvent> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        // Drop channels nobody listens to any more, so the map stays small.
        channels.retain(|_, tx| tx.receiver_count() > 0);
        channels
            .entry(session_id.to_owned())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .clone()
    }

    /// Subscribes to a conversation's events.
    pub fn subscribe(&self, session_id: &str) -> broadcast::Receiver<AgentEvent> {
        self.sender(session_id).subscribe()
    }

    /// Sends an event to every open stream of a conversation.
    pub fn publish(&self, session_id: &str, event: AgentEvent) {
        // No subscriber is fine: the turn is stored either way.
        let _ = self.sender(session_id).send(event);
    }
}
