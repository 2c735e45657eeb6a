//! Live events: each conversation's stream, in order and with sequence
//! numbers, with a bounded replay buffer (the buffers, and the sweep that
//! bounds how many are kept: [`channels`]); the supervisors' approvals
//! stream; and the relay that carries both between instances (PostgreSQL
//! `LISTEN/NOTIFY`, [`relay`]).
//!
//! A conversation gets its buffer when a stream of it first opens on this
//! instance. Until then, a lone instance (SQLite: no relay) drops its
//! events as they are published: no client can name one of them to
//! reconnect after, since ids are only handed out on a stream, and a
//! client that opens one later starts live and reads the rest from the
//! database. An instance among several keeps them from the first event,
//! because a client watching on another instance may reconnect to this one.
//!
//! Publishing never waits: every subscriber reads from its own bounded view
//! of a small broadcast ring, so a slow reader falls behind alone; it then
//! catches up from the replay buffer ([`subscription`]), and only when that
//! no longer holds what it missed is it told to [`AgentEvent::Resync`]. It
//! never slows the turn. A reconnecting client
//! names the last event it saw (`Last-Event-ID`) and gets what it missed
//! from the replay buffer, or a `resync` when the buffer no longer holds it.
//!
//! Sequence numbers ([`EventId`]) are `(epoch, n)`: each publisher of a
//! conversation (a run starting or resuming, a decision) takes the next
//! epoch from the database once, then counts; numbers grow across
//! instances without a write per event.

mod channels;
mod relay;
mod subscription;

use channels::{Channels, Swept};
use subscription::CaughtUp;
pub(crate) use subscription::{Received, Subscription};

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aics_db::Database;
use aics_types::AgentEvent;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

/// A watched conversation's broadcast ring: how far a subscriber may fall
/// behind before it catches up from the replay buffer. Small, because tokio
/// allocates every slot when the ring is made, for every watched
/// conversation.
const RING_CAPACITY: usize = 64;
/// How far an approvals stream may fall behind before it is told to resync
/// (one ring for the whole instance).
const APPROVALS_CAPACITY: usize = 1024;
// A lagging subscriber catches up from the replay buffer: it must hold
// many rings' worth.
const _: () = assert!(REPLAY_CAPACITY >= RING_CAPACITY * 8);
/// How many events of a conversation are kept for reconnecting clients.
const REPLAY_CAPACITY: usize = 4096;

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
/// belongs to (when a run published it). The run id is shared by all of
/// its events (one allocation a run, not one an event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequenced {
    pub id: EventId,
    #[serde(default, with = "shared_str")]
    pub run: Option<Arc<str>>,
    pub event: AgentEvent,
}

/// `Option<Arc<str>>` as an optional string (serde's `rc` feature would
/// change every crate's build for this one field).
mod shared_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(s: &Option<Arc<str>>, to: S) -> Result<S::Ok, S::Error> {
        s.as_deref().serialize(to)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Option<Arc<str>>, D::Error> {
        Ok(Option::<String>::deserialize(from)?.map(Arc::from))
    }
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
    channels: Arc<Mutex<Channels>>,
    approvals: broadcast::Sender<AgentEvent>,
    relay: Option<mpsc::UnboundedSender<Relayed>>,
    /// Whether a conversation no stream has opened on this instance keeps
    /// its events (an instance among several; see the module's comment).
    keep_unwatched: bool,
    db: Database,
}

impl EventHub {
    /// A hub for one instance; on PostgreSQL it starts the relay tasks.
    pub(crate) async fn start(db: &Database, instance_id: &str) -> Result<Self, aics_db::DbError> {
        let mut hub = Self {
            channels: Arc::default(),
            approvals: broadcast::channel(APPROVALS_CAPACITY).0,
            relay: None,
            keep_unwatched: false,
            db: db.clone(),
        };
        hub.relay = relay::start(db, instance_id, hub.local()).await?;
        hub.keep_unwatched = hub.relay.is_some();
        Ok(hub)
    }

    /// The same streams without the relay (what the relay's listener
    /// publishes to).
    fn local(&self) -> Self {
        Self {
            channels: self.channels.clone(),
            approvals: self.approvals.clone(),
            relay: None,
            keep_unwatched: self.keep_unwatched,
            db: self.db.clone(),
        }
    }

    fn channels(&self) -> std::sync::MutexGuard<'_, Channels> {
        // A poisoned lock only means a publisher panicked mid-push.
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The channels under the lock, swept when a sweep is due.
    fn channels_swept(&self) -> Swept<'_> {
        let mut channels = self.channels();
        let evicted = channels.sweep_if_due();
        Swept {
            channels,
            _evicted: evicted,
        }
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
        self.publisher_at(session_id, run, epoch)
    }

    /// A publisher with an epoch already taken (a new turn takes its own in
    /// the transaction that begins it).
    pub(crate) fn publisher_at(
        &self,
        session_id: &str,
        run: Option<&str>,
        epoch: u64,
    ) -> Publisher {
        Publisher {
            hub: self.clone(),
            session_id: session_id.to_owned(),
            run: run.map(Arc::from),
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
    ) -> (CatchUp, Subscription) {
        let mut channels = self.channels_swept();
        let channel = channels.of(session_id);
        let rx = channel.subscribe();
        let catch_up = match last {
            None => CatchUp::Live,
            Some(last) => match channel.replay.iter().position(|e| e.id == last) {
                Some(at) => CatchUp::Replay(channel.replay.iter().skip(at + 1).cloned().collect()),
                None => CatchUp::Resync,
            },
        };
        let subscription = Subscription {
            hub: self.clone(),
            session_id: session_id.to_owned(),
            rx,
            next: channel.pushed,
            backlog: VecDeque::new(),
        };
        (catch_up, subscription)
    }

    /// A subscriber that fell behind the ring at position `next`: the
    /// buffered events from there on (when still held) and a new place in
    /// the ring after them, taken under one lock.
    fn catch_up(&self, session_id: &str, next: u64) -> CaughtUp {
        let mut channels = self.channels_swept();
        let channel = channels.of(session_id);
        let rx = channel.subscribe();
        let oldest = channel.pushed - channel.replay.len() as u64;
        if (oldest..=channel.pushed).contains(&next) {
            let skip = (next - oldest) as usize;
            CaughtUp {
                missed: Some(channel.replay.iter().skip(skip).cloned().collect()),
                rx,
                next,
            }
        } else {
            CaughtUp {
                missed: None,
                rx,
                next: channel.pushed,
            }
        }
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

    fn publish_session(&self, session_id: &str, events: impl IntoIterator<Item = Sequenced>) {
        if !self.keep_unwatched && !self.channels_swept().map.contains_key(session_id) {
            // A lone instance, and no stream of this conversation opened
            // here (or its buffer was swept): nobody can ask for these.
            return;
        }
        // Made ready before `deliver` takes the hub's lock, which every
        // conversation shares: the relay's copies and the shared events.
        let events: Vec<Arc<Sequenced>> = events
            .into_iter()
            .map(|event| {
                if let Some(relay) = &self.relay {
                    // The relay task outlives the hub's users; a closed queue
                    // only means the process is shutting down.
                    let _ = relay.send(Relayed::Session {
                        session_id: session_id.to_owned(),
                        event: event.clone(),
                    });
                }
                Arc::new(event)
            })
            .collect();
        self.deliver(session_id, events);
    }

    /// Buffers and broadcasts events of one conversation on this instance,
    /// in order, under one lock.
    fn deliver(&self, session_id: &str, events: impl IntoIterator<Item = Arc<Sequenced>>) {
        let mut channels = self.channels_swept();
        if !self.keep_unwatched && !channels.map.contains_key(session_id) {
            // Swept since `publish_session` looked: nobody watched it.
            return;
        }
        let channel = channels.of(session_id);
        for event in events {
            if channel.replay.len() == REPLAY_CAPACITY {
                channel.replay.pop_front();
            }
            // No subscriber is fine: everything that matters is stored.
            if let Some(tx) = &channel.tx {
                let _ = tx.send(event.clone());
            }
            channel.replay.push_back(event);
            channel.pushed += 1;
        }
    }

    /// What the relay's listener received from another instance.
    fn deliver_relayed(&self, relayed: Relayed) {
        match relayed {
            Relayed::Session { session_id, event } => {
                self.deliver(&session_id, [Arc::new(event)]);
            }
            Relayed::Approvals { event } => {
                let _ = self.approvals.send(event);
            }
        }
    }
}

/// Publishes one epoch of a conversation's events, numbering them. Cheap to
/// clone; clones share the counter.
#[derive(Clone)]
pub(crate) struct Publisher {
    hub: EventHub,
    session_id: String,
    run: Option<Arc<str>>,
    epoch: u64,
    next: Arc<AtomicU64>,
}

impl Publisher {
    /// Sends an event to every open stream of the conversation, on every
    /// instance; never waits.
    pub(crate) fn publish(&self, event: AgentEvent) {
        self.publish_all([event]);
    }

    /// Sends events in order, numbered one after the other and buffered
    /// under one lock (a run's task forwards the engine's events in such
    /// batches: a reply's tokens come many at a time).
    pub(crate) fn publish_all<I>(&self, events: I)
    where
        I: IntoIterator<Item = AgentEvent>,
        I::IntoIter: ExactSizeIterator,
    {
        let events = events.into_iter();
        let first = self.next.fetch_add(events.len() as u64, Ordering::Relaxed);
        let sequenced = (first..).zip(events).map(|(n, event)| Sequenced {
            id: EventId {
                epoch: self.epoch,
                n,
            },
            run: self.run.clone(),
            event,
        });
        self.hub.publish_session(&self.session_id, sequenced);
    }
}

#[cfg(test)]
mod tests {
    use super::channels::{EVICTED_PER_CALL, MAX_IDLE_CHANNELS, SWEEP_AFTER_MADE};
    use super::*;

    /// A lone instance's hub (as on SQLite).
    fn hub() -> EventHub {
        EventHub {
            channels: Arc::default(),
            approvals: broadcast::channel(8).0,
            relay: None,
            keep_unwatched: false,
            db: Database::from(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .connect_lazy("sqlite::memory:")
                    .unwrap(),
            ),
        }
    }

    /// The hub of an instance among several (as on PostgreSQL), without
    /// the relay: it keeps every conversation's events.
    fn hub_among_several() -> EventHub {
        EventHub {
            keep_unwatched: true,
            ..hub()
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

    /// The events a catch-up replays (it must be a replay).
    fn replayed(catch_up: CatchUp) -> Vec<Arc<Sequenced>> {
        match catch_up {
            CatchUp::Replay(missed) => missed,
            other => panic!("expected a replay, got {other:?}"),
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
        // The client watches the first two events, then its stream drops.
        let (_, first) = hub.subscribe("s", None);
        for t in ["a", "b"] {
            p.publish(token(t));
        }
        drop(first);
        for t in ["c", "d"] {
            p.publish(token(t));
        }
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 3, n: 1 }));
        let missed = replayed(catch_up);
        let ids: Vec<String> = missed.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(ids, ["3-2", "3-3"]);
        // The last event seen: nothing missed.
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 3, n: 3 }));
        assert!(matches!(catch_up, CatchUp::Replay(v) if v.is_empty()));
        // An event the buffer never held (or no longer holds): reload.
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 1, n: 0 }));
        assert!(matches!(catch_up, CatchUp::Resync));
    }

    fn n_of(received: Received) -> u64 {
        match received {
            Received::Event(e) => e.id.n,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_the_ring_catches_up_from_the_buffer() {
        let hub = hub();
        let p = publisher(&hub, 1);
        let (_, mut slow) = hub.subscribe("s", None);
        let (_, mut reader) = hub.subscribe("s", None);
        let total = (RING_CAPACITY * 3) as u64;
        for i in 0..total {
            p.publish(token(&i.to_string()));
            // The other subscriber keeps up; the publisher never waits.
            assert_eq!(n_of(reader.recv().await), i);
        }
        // Far past its ring: every event still comes, in order, once.
        for i in 0..total {
            assert_eq!(n_of(slow.recv().await), i);
        }
        // And it is live again afterwards.
        p.publish(token("live"));
        assert_eq!(n_of(slow.recv().await), total);
    }

    #[tokio::test]
    async fn a_batch_is_numbered_in_order_and_reaches_a_subscriber_whole() {
        let hub = hub();
        let p = publisher(&hub, 2);
        let (_, mut rx) = hub.subscribe("s", None);
        p.publish(token("first"));
        // One batch far larger than the ring: the subscriber falls behind
        // within it and catches up from the buffer.
        let total = RING_CAPACITY * 3;
        p.publish_all((0..total).map(|i| token(&i.to_string())));
        let total = total as u64;
        p.publish(token("last"));
        for n in 0..=total + 1 {
            assert_eq!(n_of(rx.recv().await), n);
        }
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 2, n: total }));
        let missed = replayed(catch_up);
        assert_eq!(missed.len(), 1);
        assert_eq!(missed[0].event, token("last"));
    }

    #[tokio::test]
    async fn events_published_while_catching_up_are_neither_lost_nor_doubled() {
        let hub = hub();
        let p = publisher(&hub, 1);
        let (_, mut slow) = hub.subscribe("s", None);
        let mut published = 0u64;
        let mut seen = Vec::new();
        // Publish in bursts bigger than the ring, reading a little between.
        for _ in 0..20 {
            for _ in 0..(RING_CAPACITY + 7) {
                p.publish(token("t"));
                published += 1;
            }
            for _ in 0..5 {
                seen.push(n_of(slow.recv().await));
            }
        }
        while (seen.len() as u64) < published {
            seen.push(n_of(slow.recv().await));
        }
        assert_eq!(seen, (0..published).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_subscriber_past_the_replay_buffer_is_told_and_goes_on_live() {
        let hub = hub();
        let p = publisher(&hub, 1);
        let (_, mut stuck) = hub.subscribe("s", None);
        for i in 0..(REPLAY_CAPACITY + 10) {
            p.publish(token(&i.to_string()));
        }
        assert!(matches!(stuck.recv().await, Received::FellBehind));
        p.publish(token("next"));
        assert_eq!(n_of(stuck.recv().await), (REPLAY_CAPACITY + 10) as u64);
    }

    #[tokio::test]
    async fn a_lone_instance_keeps_no_events_of_a_conversation_no_stream_opened() {
        let hub = hub();
        let p = publisher(&hub, 1);
        p.publish(token("unseen"));
        assert!(hub.channels().map.is_empty(), "no buffer was made");
        // Nobody was handed an id: a stream that names one reloads.
        let (catch_up, stream) = hub.subscribe("s", Some(EventId { epoch: 1, n: 0 }));
        assert!(matches!(catch_up, CatchUp::Resync));
        // From the first stream on, the conversation keeps its events,
        // also once the stream has closed.
        p.publish(token("seen"));
        drop(stream);
        p.publish(token("missed"));
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 1, n: 1 }));
        let missed = replayed(catch_up);
        assert_eq!(missed.len(), 1);
        assert_eq!(missed[0].event, token("missed"));
    }

    #[tokio::test]
    async fn an_instance_among_several_keeps_the_events_nobody_here_watched() {
        // A client watching on another instance may reconnect to this one.
        let hub = hub_among_several();
        let p = publisher(&hub, 4);
        for t in ["a", "b", "c"] {
            p.publish(token(t));
        }
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 4, n: 0 }));
        let missed = replayed(catch_up);
        let ids: Vec<String> = missed.iter().map(|e| e.id.to_string()).collect();
        assert_eq!(ids, ["4-1", "4-2"]);
    }

    #[tokio::test]
    async fn the_replay_buffer_is_bounded() {
        let hub = hub_among_several();
        let p = publisher(&hub, 1);
        for i in 0..(REPLAY_CAPACITY + 10) {
            p.publish(token(&i.to_string()));
        }
        let kept = hub.channels().map.get("s").map(|c| c.replay.len());
        assert_eq!(kept, Some(REPLAY_CAPACITY));
        let (catch_up, _rx) = hub.subscribe("s", Some(EventId { epoch: 1, n: 0 }));
        assert!(
            matches!(catch_up, CatchUp::Resync),
            "evicted from the buffer"
        );
    }

    #[tokio::test]
    async fn buffers_are_doomed_a_few_at_a_time_however_fast_conversations_come() {
        // Far more conversations than SWEEP_EVERY's clock would look at:
        // the count alone makes the sweeps.
        let hub = hub_among_several();
        let mut most_doomed = 0;
        for i in 0..(MAX_IDLE_CHANNELS + 20 * SWEEP_AFTER_MADE) {
            let p = Publisher {
                session_id: format!("idle-{i}"),
                ..publisher(&hub, 1)
            };
            p.publish(token("x"));
            let channels = hub.channels();
            most_doomed = most_doomed.max(channels.doomed.len());
            let kept = channels.map.len();
            assert!(
                kept <= MAX_IDLE_CHANNELS + 2 * SWEEP_AFTER_MADE,
                "{kept} buffers kept after {i} conversations"
            );
        }
        assert!(
            most_doomed <= SWEEP_AFTER_MADE + EVICTED_PER_CALL,
            "{most_doomed} buffers doomed at once"
        );
        assert!(most_doomed > 0, "nothing was ever doomed");
    }

    #[tokio::test]
    async fn conversations_nobody_watches_are_bounded_and_the_watched_ones_stay() {
        let hub = hub_among_several();
        let (_, _watching) = hub.subscribe("watched", None);
        let watched = Publisher {
            session_id: "watched".into(),
            ..publisher(&hub, 1)
        };
        watched.publish(token("first"));
        for i in 0..(MAX_IDLE_CHANNELS * 3) {
            let p = Publisher {
                session_id: format!("idle-{i}"),
                ..publisher(&hub, 1)
            };
            p.publish(token("x"));
            // The sweep runs at most every SWEEP_EVERY: force it now and then.
            if i % 500 == 0 {
                hub.channels().swept = None;
            }
        }
        hub.channels().swept = None;
        // Later calls drop the doomed buffers, a few each.
        while !hub.channels_swept().doomed.is_empty() {}
        watched.publish(token("second"));
        let channels = hub.channels();
        let idle = channels.map.values().filter(|c| !c.watched()).count();
        assert!(idle <= MAX_IDLE_CHANNELS, "{idle} idle buffers kept");
        assert!(
            channels.map.contains_key("idle-3071"),
            "the newest idle ones stay"
        );
        assert!(!channels.map.contains_key("idle-0"), "the oldest go first");
        let kept = channels.map.get("watched").map(|c| c.replay.len());
        assert_eq!(kept, Some(2), "a watched conversation keeps its buffer");
        let rings = channels.map.values().filter(|c| c.tx.is_some()).count();
        assert_eq!(rings, 1, "only the watched conversation has a ring");
    }
}
