//! Live events: per-conversation broadcast channels and the supervisors'
//! approvals channel, plus the relay that carries them between instances.
//!
//! Every instance publishes its own events locally first (no round trip).
//! On PostgreSQL it also sends them with `NOTIFY aics_events` (batched, in
//! order, by one sender task); every instance `LISTEN`s and republishes what
//! other instances sent. A payload that would not fit a notification
//! (8000 bytes) is parked in `event_spool` and sent by reference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aics_db::{Database, EventListener};
use aics_types::AgentEvent;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

/// How many events a slow subscriber may fall behind before it misses some.
const CAPACITY: usize = 1024;
/// The PostgreSQL channel the instances talk on.
const CHANNEL: &str = "aics_events";
/// Stay well below PostgreSQL's 8000-byte payload limit.
const MAX_NOTIFY_BYTES: usize = 7000;

/// Where an event goes: one conversation's streams or the approvals queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "to", content = "id")]
pub(crate) enum Topic {
    Session(String),
    Approvals,
}

/// What travels between instances.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    /// The sending instance; a listener skips its own.
    from: String,
    /// Events in order, or `spool` naming a parked batch.
    #[serde(default)]
    events: Vec<(Topic, AgentEvent)>,
    #[serde(default)]
    spool: Option<String>,
}

/// The local channels and, on PostgreSQL, the relay's queue.
#[derive(Clone)]
pub(crate) struct EventHub {
    sessions: Arc<Mutex<HashMap<String, broadcast::Sender<AgentEvent>>>>,
    approvals: broadcast::Sender<AgentEvent>,
    relay: Option<mpsc::UnboundedSender<(Topic, AgentEvent)>>,
}

impl EventHub {
    /// A hub for one instance; on PostgreSQL it starts the relay tasks.
    pub(crate) async fn start(db: &Database, instance_id: &str) -> Result<Self, aics_db::DbError> {
        let mut hub = Self {
            sessions: Arc::default(),
            approvals: broadcast::channel(CAPACITY).0,
            relay: None,
        };
        if let Some(listener) = db.listen(CHANNEL).await? {
            let (tx, rx) = mpsc::unbounded_channel();
            hub.relay = Some(tx);
            tokio::spawn(send_loop(db.clone(), instance_id.to_owned(), rx));
            tokio::spawn(listen_loop(
                db.clone(),
                instance_id.to_owned(),
                listener,
                hub.local(),
            ));
        }
        Ok(hub)
    }

    /// The same channels without the relay (what the listener publishes to).
    fn local(&self) -> Self {
        Self {
            sessions: self.sessions.clone(),
            approvals: self.approvals.clone(),
            relay: None,
        }
    }

    fn session_sender(&self, session_id: &str) -> broadcast::Sender<AgentEvent> {
        let mut channels = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        // Drop channels nobody listens to any more, so the map stays small.
        channels.retain(|_, tx| tx.receiver_count() > 0);
        channels
            .entry(session_id.to_owned())
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .clone()
    }

    pub(crate) fn subscribe(&self, session_id: &str) -> broadcast::Receiver<AgentEvent> {
        self.session_sender(session_id).subscribe()
    }

    pub(crate) fn subscribe_approvals(&self) -> broadcast::Receiver<AgentEvent> {
        self.approvals.subscribe()
    }

    /// Sends an event to every open stream of the topic, on every instance.
    pub(crate) fn publish(&self, topic: Topic, event: AgentEvent) {
        if let Some(relay) = &self.relay {
            // The relay task outlives the hub's users; a closed queue only
            // means the process is shutting down.
            let _ = relay.send((topic.clone(), event.clone()));
        }
        self.publish_local(&topic, event);
    }

    fn publish_local(&self, topic: &Topic, event: AgentEvent) {
        // No subscriber is fine: everything that matters is stored.
        let _ = match topic {
            Topic::Session(id) => self.session_sender(id).send(event),
            Topic::Approvals => self.approvals.send(event),
        };
    }
}

/// Sends queued events as notifications, batching what is ready, in order.
async fn send_loop(
    db: Database,
    from: String,
    mut rx: mpsc::UnboundedReceiver<(Topic, AgentEvent)>,
) {
    let mut last_prune = std::time::Instant::now();
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < 64 {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if let Err(e) = notify(&db, &from, batch).await {
            tracing::error!(error = %e, "could not relay live events to other instances");
        }
        if last_prune.elapsed() > Duration::from_secs(60) {
            last_prune = std::time::Instant::now();
            let before = chrono::Utc::now()
                - chrono::Duration::from_std(Database::SPOOL_RETENTION)
                    .unwrap_or(chrono::Duration::minutes(5));
            if let Err(e) = db.prune_spool(before).await {
                tracing::warn!(error = %e, "could not prune the event spool");
            }
        }
    }
}

async fn notify(
    db: &Database,
    from: &str,
    events: Vec<(Topic, AgentEvent)>,
) -> Result<(), crate::ServiceError> {
    let envelope = Envelope {
        from: from.to_owned(),
        events,
        spool: None,
    };
    let mut payload = serde_json::to_string(&envelope)
        .map_err(|e| crate::ServiceError::Internal(e.to_string()))?;
    if payload.len() > MAX_NOTIFY_BYTES {
        let id = uuid::Uuid::new_v4().to_string();
        db.spool_event(&id, &payload).await?;
        payload = serde_json::to_string(&Envelope {
            from: from.to_owned(),
            events: Vec::new(),
            spool: Some(id),
        })
        .map_err(|e| crate::ServiceError::Internal(e.to_string()))?;
    }
    db.notify(CHANNEL, &payload).await?;
    Ok(())
}

/// Republishes the events other instances sent; reconnects after errors
/// (the listener re-listens by itself on a new connection).
async fn listen_loop(db: Database, me: String, mut listener: EventListener, hub: EventHub) {
    loop {
        let payload = match listener.recv().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "event relay lost its connection; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let envelope: Envelope = match serde_json::from_str(&payload) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "ignoring a malformed relayed event");
                continue;
            }
        };
        if envelope.from == me {
            continue;
        }
        let events = match envelope.spool {
            None => envelope.events,
            Some(id) => match db.spooled_event(&id).await {
                Ok(Some(text)) => match serde_json::from_str::<Envelope>(&text) {
                    Ok(inner) => inner.events,
                    Err(e) => {
                        tracing::warn!(error = %e, "ignoring a malformed spooled event");
                        continue;
                    }
                },
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read a spooled event");
                    continue;
                }
            },
        };
        for (topic, event) in events {
            hub.publish_local(&topic, event);
        }
    }
}
