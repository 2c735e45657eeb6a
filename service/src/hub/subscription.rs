//! One subscriber's view of a conversation's live events.
//!
//! The common case reads the conversation's broadcast ring, which is small
//! (its slots are allocated whole for every watched conversation, so a
//! thousand open streams would otherwise cost a thousand big rings). A
//! subscriber that falls behind the ring does not lose what it missed: it
//! takes the missing events from the conversation's replay buffer and a
//! fresh place in the ring, under the hub's lock, so nothing is seen twice
//! or skipped. Only when the replay buffer no longer holds them is it told
//! it [fell behind](Received::FellBehind) (its stream says `resync`).
//!
//! Positions are counted per channel on this instance (`Channel::pushed`):
//! the ring and the replay buffer are filled in the same order under one
//! lock, so the n-th event a receiver gets is the one pushed n events after
//! it subscribed.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};

use super::{EventHub, Sequenced};

/// What [`Subscription::recv`] gives.
#[derive(Debug)]
pub(crate) enum Received {
    Event(Arc<Sequenced>),
    /// Events were missed that the replay buffer no longer holds; the
    /// subscription goes on with the live events.
    FellBehind,
    /// The conversation's ring is gone (the process is shutting down).
    Closed,
}

/// A subscriber of one conversation. Made by [`EventHub::subscribe`].
pub(crate) struct Subscription {
    pub(super) hub: EventHub,
    pub(super) session_id: String,
    pub(super) rx: broadcast::Receiver<Arc<Sequenced>>,
    /// The channel position of the next event this subscriber is owed.
    pub(super) next: u64,
    /// Events taken from the replay buffer after a lag, not yet handed out.
    pub(super) backlog: VecDeque<Arc<Sequenced>>,
}

impl Subscription {
    /// The next event, in order; never waits for anyone but the publisher.
    pub(crate) async fn recv(&mut self) -> Received {
        loop {
            if let Some(event) = self.backlog.pop_front() {
                self.next += 1;
                return Received::Event(event);
            }
            match self.rx.recv().await {
                Ok(event) => {
                    self.next += 1;
                    return Received::Event(event);
                }
                Err(RecvError::Lagged(missed)) => {
                    let caught = self.hub.catch_up(&self.session_id, self.next);
                    self.rx = caught.rx;
                    self.next = caught.next;
                    match caught.missed {
                        Some(events) => {
                            tracing::debug!(
                                missed,
                                replayed = events.len(),
                                "an event stream fell behind its ring; it catches up from the replay buffer"
                            );
                            self.backlog = events;
                        }
                        None => {
                            tracing::warn!(
                                missed,
                                "an event stream fell behind the replay buffer; it resyncs"
                            );
                            return Received::FellBehind;
                        }
                    }
                }
                Err(RecvError::Closed) => return Received::Closed,
            }
        }
    }
}

/// What [`EventHub::catch_up`] hands a lagging subscriber.
pub(super) struct CaughtUp {
    /// The events from its position on, when the replay buffer still holds
    /// them all.
    pub(super) missed: Option<VecDeque<Arc<Sequenced>>>,
    /// A new place in the ring, right after the last buffered event.
    pub(super) rx: broadcast::Receiver<Arc<Sequenced>>,
    /// The position of the first event `missed` holds (or of the next live
    /// one).
    pub(super) next: u64,
}
