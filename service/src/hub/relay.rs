//! The relay of live events between instances on PostgreSQL.
//!
//! Every instance delivers its own events locally first (no round trip),
//! then queues them here: one sender task batches what is ready, in order,
//! into `NOTIFY aics_events`; every instance `LISTEN`s and delivers what the
//! others sent, sequence numbers included. A batch too large for one
//! notification (8000 bytes) is parked in the spool and sent by reference.
//! On SQLite there is one instance and nothing is relayed.

use std::time::Duration;

use aics_db::{Database, EventListener};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::{EventHub, Relayed};

/// The PostgreSQL channel the instances talk on.
const CHANNEL: &str = "aics_events";
/// Stay well below PostgreSQL's 8000-byte payload limit.
const MAX_NOTIFY_BYTES: usize = 7000;
/// Events per notification at most.
const BATCH: usize = 64;

/// What travels between instances.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    /// The sending instance; a listener skips its own.
    from: String,
    /// Events in order, or `spool` naming a parked batch.
    #[serde(default)]
    events: Vec<Relayed>,
    #[serde(default)]
    spool: Option<String>,
}

/// Starts the relay on PostgreSQL and returns its queue; `None` on SQLite.
pub(super) async fn start(
    db: &Database,
    instance_id: &str,
    local: EventHub,
) -> Result<Option<mpsc::UnboundedSender<Relayed>>, aics_db::DbError> {
    let Some(listener) = db.listen(CHANNEL).await? else {
        return Ok(None);
    };
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(send_loop(db.clone(), instance_id.to_owned(), rx));
    tokio::spawn(listen_loop(
        db.clone(),
        instance_id.to_owned(),
        listener,
        local,
    ));
    Ok(Some(tx))
}

/// Sends queued events as notifications, batching what is ready, in order.
async fn send_loop(db: Database, from: String, mut rx: mpsc::UnboundedReceiver<Relayed>) {
    let mut last_prune = std::time::Instant::now();
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
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

async fn notify(db: &Database, from: &str, events: Vec<Relayed>) -> Result<(), aics_db::DbError> {
    let envelope = Envelope {
        from: from.to_owned(),
        events,
        spool: None,
    };
    let mut payload = serde_json::to_string(&envelope)
        .map_err(|e| aics_db::DbError::Corrupt(format!("an event does not serialise: {e}")))?;
    if payload.len() > MAX_NOTIFY_BYTES {
        let id = uuid::Uuid::new_v4().to_string();
        db.spool_event(&id, &payload).await?;
        payload = serde_json::to_string(&Envelope {
            from: from.to_owned(),
            events: Vec::new(),
            spool: Some(id),
        })
        .map_err(|e| aics_db::DbError::Corrupt(e.to_string()))?;
    }
    db.notify(CHANNEL, &payload).await
}

/// Delivers the events other instances sent; reconnects after errors (the
/// listener re-listens by itself on a new connection).
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
        for relayed in events {
            hub.deliver_relayed(relayed);
        }
    }
}
