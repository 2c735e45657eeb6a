//! Password hashing (argon2id) off the async workers, a few at a time.
//!
//! An argon2 hash takes tens of milliseconds of one core and 19 MiB by
//! design. Run on the async worker threads, a handful of concurrent
//! sign-ins would stall every request and event stream of a small server;
//! so every hash and check runs on tokio's blocking pool, behind a
//! process-wide semaphore of [`max_concurrent`] permits (half the cores,
//! at least one), with at most [`MAX_WAITING`] more queued: past that a
//! sign-in is refused as busy rather than queued without bound.
//!
//! Before a sign-in may queue, its client address is [`admit`]ted: a few
//! sign-ins of one address at a time, so that one address's flood cannot
//! fill the queue everyone else's sign-in waits in (issue 58).
//!
//! A check for an unknown user runs against a dummy hash made with the
//! same parameters, so it costs what a real one does and timing cannot
//! tell which usernames exist.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use rand::distributions::{Alphanumeric, DistString};
use tokio::sync::{OnceCell, Semaphore};

use crate::DbError;

/// How many sign-ins may wait for a hashing permit before more are refused.
pub const MAX_WAITING: usize = 256;

struct Hashing {
    permits: Semaphore,
    waiting: AtomicUsize,
    dummy: OnceCell<String>,
}

fn hashing() -> &'static Hashing {
    static HASHING: OnceLock<Hashing> = OnceLock::new();
    HASHING.get_or_init(|| Hashing {
        permits: Semaphore::new(max_concurrent()),
        waiting: AtomicUsize::new(0),
        dummy: OnceCell::new(),
    })
}

/// The number of hashes that run at once: half the cores, at least one,
/// so the other half keeps serving while sign-ins are hammered.
pub fn max_concurrent() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .clamp(1, 8)
}

/// Runs `work` on the blocking pool once a permit is free.
async fn run_bounded<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DbError> {
    let h = hashing();
    if h.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_WAITING {
        h.waiting.fetch_sub(1, Ordering::SeqCst);
        return Err(DbError::Busy);
    }
    let permit = h.permits.acquire().await;
    h.waiting.fetch_sub(1, Ordering::SeqCst);
    let _permit = permit.map_err(|_| DbError::Busy)?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| DbError::Password(format!("the hashing task failed: {e}")))
}

fn hash_now(password: &str) -> Result<String, DbError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| DbError::Password(e.to_string()))
}

/// The argon2id PHC string of `password` (default parameters: 19 MiB,
/// two passes, one lane).
pub async fn hash(password: &str) -> Result<String, DbError> {
    let password = password.to_owned();
    run_bounded(move || hash_now(&password)).await?
}

/// How many client addresses may have sign-ins in flight at once: an
/// entry lives only while its address has one, so this bounds the map
/// however many addresses a flood comes from.
pub const MAX_ADDRESSES: usize = 4096;

/// Why [`admit`] refused a sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its address has as many sign-ins in flight as it may.
    Address,
    /// [`MAX_ADDRESSES`] addresses have sign-ins in flight.
    Full,
}

/// A sign-in's place among its address's sign-ins in flight, given back
/// when dropped (the sign-in ended, or its request went away).
#[derive(Debug)]
#[must_use = "the place is given back when this is dropped"]
pub struct AddressSlot {
    addr: IpAddr,
}

fn in_flight() -> &'static Mutex<HashMap<IpAddr, usize>> {
    // Process-wide, like the hashing permits it guards.
    static IN_FLIGHT: OnceLock<Mutex<HashMap<IpAddr, usize>>> = OnceLock::new();
    IN_FLIGHT.get_or_init(Mutex::default)
}

/// A place for one more sign-in from `addr`, if it has fewer than
/// `per_address` (at least one) in flight in this process. Never waits.
pub fn admit(addr: IpAddr, per_address: usize) -> Result<AddressSlot, Refused> {
    let mut map = in_flight().lock().unwrap_or_else(|e| e.into_inner());
    let full = map.len() >= MAX_ADDRESSES;
    match map.get_mut(&addr) {
        Some(n) if *n >= per_address.max(1) => Err(Refused::Address),
        Some(n) => {
            *n += 1;
            Ok(AddressSlot { addr })
        }
        None if full => Err(Refused::Full),
        None => {
            map.insert(addr, 1);
            Ok(AddressSlot { addr })
        }
    }
}

/// How many sign-ins of `addr` are in flight in this process.
pub fn in_flight_from(addr: &IpAddr) -> usize {
    let map = in_flight().lock().unwrap_or_else(|e| e.into_inner());
    map.get(addr).copied().unwrap_or(0)
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut map = in_flight().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.addr);
            }
        }
    }
}

/// How many password checks this process has run (known and unknown users
/// alike): lets tests see that both take the same path.
pub fn checks_done() -> u64 {
    CHECKS.load(Ordering::SeqCst)
}

static CHECKS: AtomicU64 = AtomicU64::new(0);

/// Whether `password` matches the stored PHC string; `None` (an unknown
/// user) checks against the dummy hash and is always `false`.
pub async fn verify(password: &str, stored: Option<&str>) -> Result<bool, DbError> {
    let (phc, real) = match stored {
        Some(phc) => (phc.to_owned(), true),
        None => (dummy_hash().await?.to_owned(), false),
    };
    let password = password.to_owned();
    let matched = run_bounded(move || {
        CHECKS.fetch_add(1, Ordering::SeqCst);
        let hash = PasswordHash::new(&phc).map_err(|e| DbError::Corrupt(e.to_string()))?;
        Ok::<_, DbError>(
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok(),
        )
    })
    .await??;
    Ok(matched && real)
}

/// A hash of a random password nobody knows, made once per process.
async fn dummy_hash() -> Result<&'static str, DbError> {
    let h = hashing();
    h.dummy
        .get_or_try_init(|| async {
            let secret = Alphanumeric.sample_string(&mut rand::thread_rng(), 32);
            hash(&secret).await
        })
        .await
        .map(String::as_str)
}

/// A fresh random password for someone else to type once: 20 letters and
/// digits (about 119 bits).
pub fn generate() -> String {
    Alphanumeric.sample_string(&mut rand::thread_rng(), 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_unknown_users_never_match() {
        let phc = hash("correct horse battery").await.expect("hash");
        assert!(phc.starts_with("$argon2id$"));
        assert!(verify("correct horse battery", Some(&phc))
            .await
            .expect("verify"));
        assert!(!verify("wrong", Some(&phc)).await.expect("verify"));
        assert!(!verify("anything", None).await.expect("verify"));
        assert!(verify("x", Some("not a hash")).await.is_err());
        assert_eq!(generate().len(), 20);
        assert_ne!(generate(), generate());
    }

    #[test]
    fn an_address_gets_a_few_places_and_gives_them_back() {
        let addr: IpAddr = "192.0.2.200".parse().expect("ip");
        let other: IpAddr = "192.0.2.201".parse().expect("ip");
        let held: Vec<_> = (0..3).map(|_| admit(addr, 3).expect("a place")).collect();
        assert_eq!(admit(addr, 3).expect_err("a fourth"), Refused::Address);
        let beside = admit(other, 3).expect("a place");
        assert_eq!(in_flight_from(&addr), 3);
        drop(held);
        assert_eq!(in_flight_from(&addr), 0);
        let again = admit(addr, 3).expect("a place");
        drop((again, beside));
        // Nothing is kept for an address with none in flight.
        let map = in_flight().lock().expect("lock");
        assert!(!map.contains_key(&addr) && !map.contains_key(&other));
    }

    #[test]
    fn at_least_one_permit() {
        assert!(max_concurrent() >= 1);
    }
}
