//! The periodic purge: ended sessions (expired or idle), sign-in
//! failure counts that went quiet, the trace studio's forks that a
//! dead process left running (`crate::studio::sweep`), and replay runs
//! whose lease ran out (`crate::replays::run::sweep`). Every instance
//! runs it; the deletes and updates are idempotent, so several at once
//! only repeat each other's work.

use std::sync::Arc;

use crate::{Console, Inner};

/// Starts the purge task; it ends when the console is dropped.
pub(crate) fn start(console: &Console) {
    let weak = Arc::downgrade(&console.inner);
    let every = console
        .inner
        .config
        .purge_every
        .max(std::time::Duration::from_secs(1));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            purge(&inner).await;
        }
    });
}

async fn purge(inner: &Inner) {
    let now = chrono::Utc::now();
    let idle = chrono::Duration::from_std(inner.config.session_idle)
        .unwrap_or(chrono::Duration::minutes(30));
    let quiet = chrono::Duration::from_std(inner.config.throttle.lock_for)
        .unwrap_or(chrono::Duration::minutes(15));
    match inner.db.purge_sessions(now - idle).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(purged = n, "ended sessions deleted"),
        Err(e) => tracing::warn!(error = %e, "could not purge sessions"),
    }
    if let Err(e) = inner.db.purge_sign_in_failures(now - quiet).await {
        tracing::warn!(error = %e, "could not purge sign-in failure counts");
    }
    crate::studio::sweep(inner).await;
    crate::replays::run::sweep(inner).await;
}
