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
//! A check for an unknown user runs against a dummy hash made with the
//! same parameters, so it costs what a real one does and timing cannot
//! tell which usernames exist.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

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
    fn at_least_one_permit() {
        assert!(max_concurrent() >= 1);
    }
}
