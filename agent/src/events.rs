//! Where a running turn's events go.
//!
//! The engine reports what happens ([`AgentEvent`]) through an
//! [`EventSink`]: a bounded tokio channel. Sending waits while the channel is
//! full, so a slow consumer (an SSE client on a bad connection) slows the run
//! down instead of losing events. When the receiver is gone (the browser
//! closed the tab) the events are dropped and the run goes on, so the turn
//! still finishes and its trace is stored.

use aics_types::AgentEvent;
use tokio::sync::mpsc;

/// The sending side of a turn's event stream; cheap to clone.
///
/// ```
/// use aics_agent::events::EventSink;
/// use aics_types::AgentEvent;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (sink, mut rx) = EventSink::channel(16);
/// sink.emit(AgentEvent::NodeStart { node: "agent".into() }).await;
/// drop(sink);
/// assert_eq!(rx.recv().await.map(|e| e.kind()), Some("node_start"));
/// assert!(rx.recv().await.is_none());
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct EventSink {
    tx: Option<mpsc::Sender<AgentEvent>>,
}

impl EventSink {
    /// A sink that forwards to `tx`.
    pub fn new(tx: mpsc::Sender<AgentEvent>) -> Self {
        Self { tx: Some(tx) }
    }

    /// A sink that drops every event (for callers that only want the trace).
    pub fn none() -> Self {
        Self { tx: None }
    }

    /// A new bounded channel and the sink that feeds it.
    pub fn channel(capacity: usize) -> (Self, mpsc::Receiver<AgentEvent>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Self::new(tx), rx)
    }

    /// Whether anyone listens; lets callers skip building costly events.
    pub fn is_active(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Sends one event, waiting while the channel is full (backpressure).
    pub async fn emit(&self, event: AgentEvent) {
        if let Some(tx) = &self.tx {
            // A closed channel means the listener left; the run goes on.
            let _ = tx.send(event).await;
        }
    }
}
