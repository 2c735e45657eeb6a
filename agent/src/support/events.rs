//! [`EventSink`]: the observer that turns a run of the support graph into the
//! console's [`AgentEvent`]s (node starts and ends, tokens, tool calls), sent
//! into a channel the caller drains. The events of the turn's lifecycle
//! (`turn_start`, `approval_required`, `final`, `error`) are not the engine's:
//! the service sends them once it has stored what they announce.
//!
//! Sending never waits: the channel is unbounded, so a slow consumer never
//! slows the turn (a turn's events are bounded by the turn itself). When the
//! receiver is gone (the browser closed the tab) events are dropped and the
//! run goes on, so the turn still finishes and its trace is stored.

use aics_graph::{Checkpoint, Observer};
use aics_types::{AgentEvent, ToolEnd, ToolStart};
use tokio::sync::mpsc;

use super::progress::Progress;
use super::state::SupportState;

/// The sending side of a turn's event stream; cheap to clone.
///
/// ```
/// use aics_agent::EventSink;
/// use aics_types::AgentEvent;
///
/// let (sink, mut rx) = EventSink::channel();
/// sink.emit(AgentEvent::NodeStart { node: "agent".into() });
/// drop(sink);
/// assert_eq!(rx.try_recv().map(|e| e.kind()), Ok("node_start"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct EventSink {
    tx: Option<mpsc::UnboundedSender<AgentEvent>>,
}

impl EventSink {
    /// A sink that forwards to `tx`.
    pub fn new(tx: mpsc::UnboundedSender<AgentEvent>) -> Self {
        Self { tx: Some(tx) }
    }

    /// A sink that drops every event (for callers that only want the trace).
    pub fn none() -> Self {
        Self { tx: None }
    }

    /// A new channel and the sink that feeds it.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self::new(tx), rx)
    }

    /// Whether anyone listens; lets callers skip building costly events.
    pub fn is_active(&self) -> bool {
        self.tx.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Sends one event; never waits.
    pub fn emit(&self, event: AgentEvent) {
        if let Some(tx) = &self.tx {
            // A closed channel means the listener left; the run goes on.
            let _ = tx.send(event);
        }
    }
}

impl Observer<SupportState> for EventSink {
    fn node_started(&self, _thread_id: &str, node: &str, _step: u32) {
        self.emit(AgentEvent::NodeStart {
            node: node.to_owned(),
        });
    }

    fn node_finished(&self, _thread_id: &str, node: &str, _step: u32) {
        self.emit(AgentEvent::NodeEnd {
            node: node.to_owned(),
        });
    }

    fn checkpoint_saved(&self, _checkpoint: &Checkpoint) {}

    fn progress(&self, _thread_id: &str, _node: &str, progress: Progress) {
        let event = match progress {
            Progress::Token(token) => AgentEvent::LlmToken {
                token,
                reasoning_token: None,
            },
            Progress::Reasoning(text) => AgentEvent::LlmToken {
                token: String::new(),
                reasoning_token: Some(text),
            },
            Progress::ToolStarted(record) => AgentEvent::ToolStart(Box::new(ToolStart { record })),
            Progress::ToolFinished(record) => AgentEvent::ToolEnd(Box::new(ToolEnd { record })),
        };
        self.emit(event);
    }
}
