//! Open event streams per user, on this instance: a cap (a browser tab or
//! script cannot open thousands), and an end for all of a user's streams
//! when their sessions end (disabled, password reset, signed out
//! everywhere).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aics_types::UserInfo;
use tokio::sync::watch;

use crate::error::ServiceError;
use crate::Console;

/// Per-user counts and the signal that ends a user's streams.
#[derive(Debug, Default)]
pub(crate) struct StreamLimiter {
    users: Mutex<HashMap<String, UserStreams>>,
    generations: AtomicU64,
}

#[derive(Debug)]
struct UserStreams {
    open: u32,
    /// Which entry this is: a revoked user's next streams get a new one.
    generation: u64,
    revoked: watch::Sender<bool>,
}

/// One open stream of a user; dropping it frees the place.
#[derive(Debug)]
pub struct StreamPermit {
    limiter: Arc<StreamLimiter>,
    username: String,
    generation: u64,
    revoked: watch::Receiver<bool>,
}

impl StreamLimiter {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, UserStreams>> {
        // A panic while holding this lock cannot leave the counts torn
        // (each change is one statement), so a poisoned lock is usable.
        self.users.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends every open stream of `username`.
    pub(crate) fn revoke(&self, username: &str) {
        if let Some(user) = self.lock().remove(username) {
            let _ = user.revoked.send(true);
        }
    }
}

impl StreamPermit {
    /// Resolves when the user's streams are ended (see the module docs).
    pub async fn revoked(&mut self) {
        let _ = self.revoked.wait_for(|r| *r).await;
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut users = self.limiter.lock();
        if let Some(user) = users.get_mut(&self.username) {
            // A revoked user's entry was replaced; only count down our own.
            if user.generation == self.generation {
                user.open = user.open.saturating_sub(1);
                if user.open == 0 {
                    users.remove(&self.username);
                }
            }
        }
    }
}

impl Console {
    /// A place for one more event stream of `user`, or 429 when they have
    /// [`crate::ConsoleConfig::streams_per_user`] open already (the API
    /// token: [`crate::ConsoleConfig::api_streams`]).
    pub fn open_stream(&self, user: &UserInfo) -> Result<StreamPermit, ServiceError> {
        let config = &self.inner.config;
        let cap = if user.username == crate::auth::API_USER {
            config.api_streams
        } else {
            config.streams_per_user
        }
        .max(1);
        let limiter = self.inner.streams.clone();
        let mut users = limiter.lock();
        let entry = users
            .entry(user.username.clone())
            .or_insert_with(|| UserStreams {
                open: 0,
                generation: limiter.generations.fetch_add(1, Ordering::Relaxed),
                revoked: watch::channel(false).0,
            });
        if entry.open >= cap {
            return Err(ServiceError::TooManyRequests {
                message: format!(
                    "you have {cap} live views open already; close some tabs and reload"
                ),
                retry_after: std::time::Duration::from_secs(5),
            });
        }
        entry.open += 1;
        let revoked = entry.revoked.subscribe();
        let generation = entry.generation;
        drop(users);
        Ok(StreamPermit {
            limiter,
            username: user.username.clone(),
            generation,
            revoked,
        })
    }
}
