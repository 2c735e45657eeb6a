//! Open event streams on this instance: caps (a browser tab or script
//! cannot open thousands; a customer's address cannot open more than
//! [`crate::ConsoleConfig::customer_streams_per_address`] across links),
//! and their end. All of a user's streams end when their sessions end
//! (disabled, password reset, signed out everywhere); a stream opened with
//! a session cookie also ends with that session: signed out, ended by a
//! password change elsewhere, expired or idle. Endings on this instance
//! are immediate; a session ended elsewhere (another instance, the purge,
//! the idle timeout) is noticed by the stream's check against the
//! database, every [`session_check_every`] — a stream never keeps its
//! session alive.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aics_db::tokens::hash_token;
use aics_db::Database;
use aics_types::UserInfo;
use http::HeaderMap;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior};

use crate::auth::{ClientAddr, Credential, API_USER};
use crate::error::ServiceError;
use crate::Console;

/// Open streams by user, by session and by customer address, and the
/// signals that end them.
#[derive(Debug, Default)]
pub(crate) struct StreamLimiter {
    open: Mutex<Open>,
    generations: AtomicU64,
}

#[derive(Debug, Default)]
struct Open {
    users: HashMap<String, Entry>,
    /// By the session token's hash.
    sessions: HashMap<String, SessionEntry>,
    /// Customer streams by [`address_key`].
    addresses: HashMap<IpAddr, u32>,
}

/// The open streams under one key.
#[derive(Debug)]
struct Entry {
    open: u32,
    /// Which entry this is: a revoked key's next streams get a new one.
    generation: u64,
    revoked: watch::Sender<bool>,
}

#[derive(Debug)]
struct SessionEntry {
    entry: Entry,
    username: String,
    /// When one of the session's streams last asked the database: one
    /// check per interval serves all of them.
    checked_at: Instant,
}

impl Entry {
    fn new(generation: u64) -> Self {
        Self {
            open: 0,
            generation,
            revoked: watch::channel(false).0,
        }
    }

    /// Counts one stream down; whether the entry is now unused. A revoked
    /// key's entry was replaced: only our own is counted down.
    fn release(&mut self, generation: u64) -> bool {
        if self.generation != generation {
            return false;
        }
        self.open = self.open.saturating_sub(1);
        self.open == 0
    }
}

/// One open stream; dropping it frees its places.
#[derive(Debug)]
pub struct StreamPermit {
    limiter: Arc<StreamLimiter>,
    username: String,
    generation: u64,
    revoked: watch::Receiver<bool>,
    session: Option<SessionBinding>,
    address: Option<IpAddr>,
}

/// The session a stream was opened with, and what checking it takes.
#[derive(Debug)]
struct SessionBinding {
    token_hash: String,
    generation: u64,
    revoked: watch::Receiver<bool>,
    db: Database,
    idle: Duration,
    every: Duration,
}

/// How often a session-bound stream checks its session against the
/// database: a quarter of the idle timeout, between 250 ms and 15 s (so a
/// session ended on another instance ends its streams here within 15 s).
pub fn session_check_every(session_idle: Duration) -> Duration {
    (session_idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(15))
}

/// The key a client address is counted under: an IPv6 client by its /64
/// (one host is given a whole /64), an IPv4-mapped one as IPv4.
pub fn address_key(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        v4 => v4,
    }
}

impl StreamLimiter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // A panic while holding this lock cannot leave the counts torn
        // (each change is one statement), so a poisoned lock is usable.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn generation(&self) -> u64 {
        self.generations.fetch_add(1, Ordering::Relaxed)
    }

    /// Ends every open stream of `username`.
    pub(crate) fn revoke(&self, username: &str) {
        let mut open = self.lock();
        if let Some(user) = open.users.remove(username) {
            let _ = user.revoked.send(true);
        }
        open.sessions.retain(|_, s| {
            let ends = s.username == username;
            if ends {
                let _ = s.entry.revoked.send(true);
            }
            !ends
        });
    }

    /// Ends the open streams of one session (by its token's hash).
    pub(crate) fn revoke_session(&self, token_hash: &str) {
        if let Some(session) = self.lock().sessions.remove(token_hash) {
            let _ = session.entry.revoked.send(true);
        }
    }

    /// Ends the session-bound streams of `username` but those of `keep`
    /// (a password change: the user's other sessions end).
    pub(crate) fn revoke_other_sessions(&self, username: &str, keep: Option<&str>) {
        self.lock().sessions.retain(|hash, s| {
            let ends = s.username == username && Some(hash.as_str()) != keep;
            if ends {
                let _ = s.entry.revoked.send(true);
            }
            !ends
        });
    }

    /// Whether the caller, a stream of the session, should check it now.
    fn claim_check(&self, token_hash: &str, generation: u64, every: Duration) -> bool {
        let mut open = self.lock();
        match open.sessions.get_mut(token_hash) {
            Some(s) if s.entry.generation == generation => {
                let now = Instant::now();
                // Half the interval: each stream ticks every interval, so
                // some stream claims a check at least once per interval.
                if now.duration_since(s.checked_at) >= every / 2 {
                    s.checked_at = now;
                    true
                } else {
                    false
                }
            }
            // Revoked: the signal ends the stream.
            _ => false,
        }
    }
}

impl StreamPermit {
    /// Resolves when the stream must end: the user's streams were ended
    /// (see the module docs), or the session it was opened with ended.
    pub async fn revoked(&mut self) {
        let user = self.revoked.wait_for(|r| *r);
        match &mut self.session {
            None => {
                let _ = user.await;
            }
            Some(session) => {
                tokio::select! {
                    _ = user => {}
                    () = session.ended(&self.limiter, &self.username) => {}
                }
            }
        }
    }
}

impl SessionBinding {
    /// Resolves when the session is revoked here or found ended in the
    /// database (a failed check keeps the stream: the next one decides).
    async fn ended(&mut self, limiter: &StreamLimiter, username: &str) {
        let Self {
            token_hash,
            generation,
            revoked,
            db,
            idle,
            every,
        } = self;
        let signalled = async {
            let _ = revoked.wait_for(|r| *r).await;
        };
        let checked = async {
            let mut ticks = tokio::time::interval_at(Instant::now() + *every, *every);
            ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if !limiter.claim_check(token_hash, *generation, *every) {
                    continue;
                }
                let idle_since = chrono::Utc::now()
                    - chrono::Duration::from_std(*idle).unwrap_or(chrono::Duration::minutes(30));
                match db.session_is_live(token_hash, username, idle_since).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::info!(user = username, "session ended: its event streams end");
                        limiter.revoke_session(token_hash);
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "could not check a stream's session"),
                }
            }
        };
        tokio::select! {
            () = signalled => {}
            () = checked => {}
        }
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.limiter.lock();
        if let Some(user) = open.users.get_mut(&self.username) {
            if user.release(self.generation) {
                open.users.remove(&self.username);
            }
        }
        if let Some(binding) = &self.session {
            if let Some(session) = open.sessions.get_mut(&binding.token_hash) {
                if session.entry.release(binding.generation) {
                    open.sessions.remove(&binding.token_hash);
                }
            }
        }
        if let Some(key) = self.address {
            if let Some(n) = open.addresses.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.addresses.remove(&key);
                }
            }
        }
    }
}

fn too_many(message: String) -> ServiceError {
    ServiceError::TooManyRequests {
        message,
        retry_after: Duration::from_secs(5),
    }
}

impl Console {
    /// A place for one more event stream of `user`, or 429 when they have
    /// [`crate::ConsoleConfig::streams_per_user`] open already (the API
    /// token: [`crate::ConsoleConfig::api_streams`]). It is bound to no
    /// session: see [`Console::open_stream_for`].
    pub fn open_stream(&self, user: &UserInfo) -> Result<StreamPermit, ServiceError> {
        self.admit_stream(user, None, None)
    }

    /// [`Console::open_stream`] for a request of `user`: when the request
    /// was authenticated by a session cookie, the stream is bound to that
    /// session and ends with it. The API token has no session.
    pub fn open_stream_for(
        &self,
        user: &UserInfo,
        headers: &HeaderMap,
    ) -> Result<StreamPermit, ServiceError> {
        let session = match self.credential(headers) {
            Some(Credential::Cookie(token)) if user.username != API_USER => {
                Some(hash_token(&token))
            }
            _ => None,
        };
        self.admit_stream(user, session, None)
    }

    /// A customer's stream (`customer` names the conversation): capped per
    /// conversation like a user's, and per client address across
    /// conversations (429).
    pub(crate) fn open_customer_stream(
        &self,
        customer: &UserInfo,
        client: &ClientAddr,
    ) -> Result<StreamPermit, ServiceError> {
        self.admit_stream(customer, None, client.0.map(address_key))
    }

    fn admit_stream(
        &self,
        user: &UserInfo,
        session: Option<String>,
        address: Option<IpAddr>,
    ) -> Result<StreamPermit, ServiceError> {
        let config = &self.inner.config;
        let cap = if user.username == API_USER {
            config.api_streams
        } else {
            config.streams_per_user
        }
        .max(1);
        let limiter = self.inner.streams.clone();
        let mut open = limiter.lock();
        let by_address = address.map_or(0, |a| open.addresses.get(&a).copied().unwrap_or(0));
        if address.is_some() && by_address >= config.customer_streams_per_address.max(1) {
            return Err(too_many(
                "too many live chats are open from your network; close some and reload".into(),
            ));
        }
        let users_open = open.users.get(&user.username).map_or(0, |u| u.open);
        if users_open >= cap {
            return Err(too_many(format!(
                "you have {cap} live views open already; close some tabs and reload"
            )));
        }
        let entry = open
            .users
            .entry(user.username.clone())
            .or_insert_with(|| Entry::new(limiter.generation()));
        entry.open += 1;
        let revoked = entry.revoked.subscribe();
        let generation = entry.generation;
        let session = session.map(|token_hash| {
            let s = open
                .sessions
                .entry(token_hash.clone())
                .or_insert_with(|| SessionEntry {
                    entry: Entry::new(limiter.generation()),
                    username: user.username.clone(),
                    checked_at: Instant::now(),
                });
            s.entry.open += 1;
            SessionBinding {
                token_hash,
                generation: s.entry.generation,
                revoked: s.entry.revoked.subscribe(),
                db: self.inner.db.clone(),
                idle: config.session_idle,
                every: session_check_every(config.session_idle),
            }
        });
        if let Some(key) = address {
            *open.addresses.entry(key).or_insert(0) += 1;
        }
        drop(open);
        Ok(StreamPermit {
            limiter,
            username: user.username.clone(),
            generation,
            revoked,
            session,
            address,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_counted_by_host() {
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(address_key(v4), v4);
        assert_eq!(address_key("::ffff:192.0.2.7".parse().unwrap()), v4);
        assert_eq!(
            address_key("2001:db8:1:2:aaaa::1".parse().unwrap()),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn checks_follow_the_idle_timeout_up_to_15_s() {
        assert_eq!(
            session_check_every(Duration::from_secs(1800)),
            Duration::from_secs(15)
        );
        assert_eq!(
            session_check_every(Duration::from_secs(4)),
            Duration::from_secs(1)
        );
        assert_eq!(
            session_check_every(Duration::from_millis(100)),
            Duration::from_millis(250)
        );
    }
}
