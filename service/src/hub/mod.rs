//! Live events: each conversation's stream, in order and with sequence
//! numbers, with a bounded replay buffer; the supervisors' approvals stream;
//! and the relay that carries both between instances (PostgreSQL
//! `LISTEN/NOTIFY`, [`relay`]).
//!
//! Publishing never waits: every subscriber reads from its own bounded view
//! of a broadcast ring, so a slow reader falls behind alone and is told to
//! [`AgentEvent::Resync`]; it never slows the turn. A reconnecting client
//! names the last event it saw (`Last-Event-ID`) and gets what it missed
//! from the replay buffer, or a `resync` when the buffer no longer holds it.
//!
//! Sequence numbers ([`EventId`]) are `(epoch, n)`: each publisher of a
//! conversation (a run starting or resuming, a decision) takes the next
//! epoch from the database once, then counts; numbers grow across
//! instances without a write per event.

mod relay;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aics_db::Database;
use aics_types::AgentEvent;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

/// How far a subscriber may fall behind before it is told to resync.
const SUBSCRIBER_CAPACITY: usize = 1024;
/// How many events of a conversation are kept for reconnecting clients.
const REPLAY_CAPACITY: usize = 4096;
/// A conversation's buffer is dropped after this long with no event and no
/// subscriber.
const IDLE_EVICTION: Duration = Duration::from_secs(600);

/// The sequence number of a conversation's event: `(epoch, n)`, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId {
    pub epoch: u64,
    pub n: u64,
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.epoch, self.n)
    }
}

impl std::str::FromStr for EventId {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        let (epoch, n) = s.trim().split_once('-').ok_or(())?;
        Ok(Self {
            epoch: epoch.parse().map_err(|_| ())?,
            n: n.parse().map_err(|_| ())?,
        })
    }
}

/// One event of a conversation with its sequence number and the run it
/// belongs to (when a run published it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequenced {
    pub id: EventId,
    #[serde(default)]
    pub run: Option<String>,
    pub event: AgentEvent,
}

/// What a subscriber of a conversation gets first: the events it missed, or
/// the word that it must reload.
#[derive(Debug)]
pub enum CatchUp {
    /// Nothing to catch up on (no `Last-Event-ID`).
    Live,
    /// The events after the one the client saw, oldest first.
    Replay(Vec<Arc<Sequenced>>),
    /// The buffer no longer holds the client's last event.
    Resync,
}

/// A conversation's live stream on this instance.
struct Channel {
    tx: broadcast::Sender<Arc<Sequenced>>,
    replay: VecDeque<Arc<Sequenced>>,
    touched: Instant,
}

impl Channel {
    fn new() -> Self {
        Self {
            tx: broadcast::channel(SUBSCRIBER_CAPACITY).0,
            replay: VecDeque::new(),
            touched: Instant::now(),
        }
    }
}

/// Where an event goes: one conversation's streams or the approvals queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "to")]
pub(crate) enum Relayed {
    Session {
        session_id: String,
        event: Sequenced,
    },
    Approvals {
        event: AgentEvent,
    },
}

/// The local streams and, on PostgreSQL, the relay's queue. Cheap to clone.
#[derive(Clone)]
pub(crate) struct EventHub {
    channels: Arc<Mutex<HashMap<String, Channel>>>,
    approvals: broadcast::Sender<AgentEvent>,
    relay: Option<mpsc::UnboundedSender<Relayed>>,
    db: Database,
}

impl EventHub {
    /// A hub for one instance; on PostgreSQL it starts the relay tasks.
    pub(crate) async fn start(db: &Database, instance_id: &str) -> Result<Self, aics_db::DbError> {
        let mut hub = Self {
            channels: Arc::default(),
            approvals: broadcast::channel(SUBSCRIBER_CAPACITY).0,
            relay: None,
            db: db.clone(),
        };
        hub.relay = relay::start(db, instance_id, hub.local()).await?;
        Ok(hub)
    }

    /// The same streams without the relay (what the relay's listener
    /// publishes to).
    fn local(&self) -> Self {
        Self {
            channels: self.channels.clone(),
            approvals: self.approvals.clone(),
            relay: None,
            db: self.db.clone(),
        }
    }

    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<String, Channel>> {
        // A poisoned lock only means a publisher panicked mid-push.
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A publisher for conversation `session_id` (events of run `run`, when
    /// given) with the conversation's next epoch.
    pub(crate) async fn publisher(&self, session_id: &str, run: Option<&str>) -> Publisher {
        let epoch = match self.db.next_event_epoch(session_id).await {
            Ok(e) => e,
            Err(e) => {
                // Events still flow; only a reconnect across this gap may
                // have to resync instead of replaying.
                tracing::warn!(error = %e, session_id, "could not take an event epoch");
                0
            }
        };
        Publisher {
            hub: self.clone(),
            session_id: session_id.to_owned(),
            run: run.map(str::to_owned),
            epoch,
            next: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Subscribes to a conversation, catching up after event `last` when
    /// the client saw one. Taken under one lock with the buffer, so nothing
    /// is missed or seen twice between the replay and the live events.
    pub(crate) fn subscribe(
        &self,
        session_id: &str,
        last: Option<EventId>,
    ) -> (CatchUp, broadcast::Receiver<Arc<Sequenced>>) {
        let mut channels = self.channels();
        evict_idle(&mut channels);
        let channel = channels
            .entry(session_id.to_owned())
            .or_insert_with(Channel::new);
        channel.touched = Instant::now();
        let rx = channel.tx.subscribe();
        let catch_up = match last {
            None => CatchUp::Live,
            Some(last) => match channel.replay.iter().position(|e| e.id == last) {
                Some(at) => CatchUp::Replay(channel.replay.iter().skip(at + 1).cloned().collect()),
                None => CatchUp::Resync,
            },
        };
        (catch_up, rx)
    }

    /// Subscribes to `approval_required` and `approval_decided` of every
    /// conversation.
    pub(crate) fn subscribe_approvals(&self) -> broadcast::Receiver<AgentEvent> {
        self.approvals.subscribe()
    }

    /// Sends an event to every approvals stream, on every instance.
    pub(crate) fn publish_approvals(&self, event: AgentEvent) {
        if let Some(relay) = &self.relay {
            let _ = relay.send(Relayed::Approvals {
                event: event.clone(),
            });
        }
        let _ = self.approvals.send(event);
    }

    fn publish_session(&self, session_id: &str, event: Sequenced) {
        if let Some(relay) = &self.relay {
            // The relay task outlives the hub's users; a closed queue only
            // means the process is shutting down.
            let _ = relay.send(Relayed::Session {
                session_id: session_id.to_owned(),
                event: event.clone(),
            });
        }
        self.deliver(session_id, Arc::new(event));
    }

    /// Buffers and broadcasts one event on this instance.
    fn deliver(&self, session_id: &str, event: Arc<Sequenced>) {
        let mut channels = self.channels();
        let channel = channels
            .entry(session_id.to_owned())
            .or_insert_with(Channel::new);
        channel.touched = Instant::now();
        if channel.replay.len() == REPLAY_CAPACITY {
            channel.replay.pop_front();
        }
        channel.replay.push_back(event.clone());
        // No subscriber is fine: everything that matters is stored.
        let _ = channel.tx.send(event);
    }

    /// What the relay's listener received from another instance.
    fn deliver_relayed(&self, relayed: Relayed) {
        match relayed {
            Relayed::Session { session_id, event } => self.deliver(&session_id, Arc::new(event)),
            Relayed::Approvals { event } => {
                let _ = self.approvals.send(event);
            }
        }
    }
}

/// Drops the buffers of conversations nobody watched or wrote for a while.
fn evict_idle(channels: &mut HashMap<String, Channel>) {
    channels.retain(|_, c| c.tx.receiver_count() > 0 || c.touched.elapsed() < IDLE_EVICTION);
}

/// Publishes one epoch of a conversation's events, numbering them. Cheap to
/// clone; clones share the counter.
#[derive(Clone)]
pub(crate) struct Publisher {
    hub: EventHub,
    session_id: String,
    run: Option<String>,
    epoch: u64,
    next: Arc<AtomicU64>,
}

impl Publisher {
    /// Sends an event to every open stream of the conversation, on every
    /// instance; never waits.
    pub(crate) fn publish(&self, event: AgentEvent) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.hub.publish_session(
            &self.session_id,
            Sequenced {
                id: EventId {
                    epoch: self.epoch,
                    n,
                },
                run: self.run.clone(),
                event,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> EventHub {
        EventHub {
            channels: Arc::default(),
            approvals: broadcast::channel(8).0,
            relay: None,
            db: Database::Sqlite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .connect_lazy("sqlite::memory:")
                    .unwrap(),
            ),
        }
    }

    fn publisher(hub: &EventHub, epoch: u64) -> Publisher {
        Publisher {
            hub: hub.clone(),
            session_id: "s".into(),
            run: Some("r".into()),
            epoch,
            next: Arc::default(),
        }
    }

    fn token(t: &str) -> AgentEvent {
        AgentEvent::LlmToken {
            token: t.into(),
            reasoning_token: None,
        }
    }

    #[test]
    fn ids_print_and_parse_and_order_by_epoch_first() {
        let id: EventId = "7-12".parse().unwrap();
        assert_eq!(id, EventId { epoch: 7, n: 12 });
        assert_eq!(id.to_string(), "7-12");
        assert!(EventId { epoch: 8, n: 0 } > EventId { epoch: 7, n: 99 });
        assert!("x".parse::<EventId>().is_err());
        assert!("1-".parse::<EventId>().is_err());
    }

    #[tokio::test]
    async fn a_reconnect_gets_exactly_what_it_missed() {
        let hub = hub();
        let p = publisher(&hub, 3);
        for t in ["a", "b", "c", "d"] {
            p.publish(token(t));
        }
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 3, n: 1 }));
        let CatchUp::Replay(missed) = catch_up else {
            panic!("expected a replay")
        };
        let ids: Vec<String> = missed.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(ids, ["3-2", "3-3"]);
        // The last event seen: nothing missed.
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 3, n: 3 }));
        assert!(matches!(catch_up, CatchUp::Replay(v) if v.is_empty()));
        // An event the buffer never held (or no longer holds): reload.
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 1, n: 0 }));
        assert!(matches!(catch_up, CatchUp::Resync));
    }

    #[tokio::test]
    async fn a_subscriber_that_never_reads_lags_alone_and_never_blocks_the_publisher() {
        let hub = hub();
        let p = publisher(&hub, 1);
        let (_, mut stuck) = hub.subscribe("s", None);
        let (_, mut reader) = hub.subscribe("s", None);
        for i in 0..(SUBSCRIBER_CAPACITY * 3) {
            p.publish(token(&i.to_string()));
            // The other subscriber keeps up.
            assert!(reader.try_recv().is_ok());
        }
        assert!(matches!(
            stuck.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
    }

    #[tokio::test]
    async fn the_replay_buffer_is_bounded() {
        let hub = hub();
        let p = publisher(&hub, 1);
        for i in 0..(REPLAY_CAPACITY + 10) {
            p.publish(token(&i.to_string()));
        }
        let kept = hub.channels().get("s").map(|c| c.replay.len());
        assert_eq!(kept, Some(REPLAY_CAPACITY));
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 1, n: 0 }));
        assert!(
            matches!(catch_up, CatchUp::Resync),
            "evicted from the buffer"
        );
    }
}
