//! Sign-in attempts, counted in the database so that several instances
//! share one count, and the addresses each user has signed in from.
//!
//! A row of `sign_in_failures` per key — [`pair_key`] (a name from one
//! address), [`addr_key`] (an address, whatever the names) and
//! [`user_key`] (a name, whatever the address) — holds the attempts since
//! the count last went quiet and the time before which the key may not
//! sign in. [`Database::reserve_sign_in`] counts an attempt under all its
//! keys in one transaction *before* its password is checked, and sets the
//! wait that count calls for there and then: N parallel guesses cannot
//! all pass a check that none of them has counted yet (issue 58).
//! `sign_in_known_addresses` remembers the (name, address) pairs of good
//! sign-ins, whom failures from elsewhere do not slow down.
//!
//! The policy (which keys, how many attempts wait how long) is the
//! service's; this module counts, blocks and stores.

use std::net::IpAddr;
use std::time::Duration;

use aics_types::Timestamp;

use crate::{now, Database, DbError};

/// A known address is forgotten after this long without a sign-in from it.
pub const KNOWN_FOR: chrono::Duration = chrono::Duration::days(90);

/// The throttle key of a (normalized) username, from any address.
pub fn user_key(username: &str) -> String {
    format!("user:{username}")
}

/// The throttle key of a client address.
pub fn addr_key(addr: &IpAddr) -> String {
    format!("addr:{addr}")
}

/// The throttle key of a (normalized) username from one client address
/// (`-` for a caller without one).
pub fn pair_key(username: &str, addr: Option<&IpAddr>) -> String {
    match addr {
        Some(addr) => format!("{}{addr}", pair_prefix(username)),
        None => format!("{}-", pair_prefix(username)),
    }
}

/// What every [`pair_key`] of `username` starts with (an address has no
/// `|`, so the name is what comes before the last one).
fn pair_prefix(username: &str) -> String {
    format!("pair:{username}|")
}

/// The answer of [`Database::reserve_sign_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// The attempt is counted under every key: the `i`-th count is the
    /// `i`-th key's, this attempt included.
    Counted(Vec<i64>),
    /// A key may not sign in before then (the latest of them, if several
    /// are blocked); nothing was counted.
    Blocked(Timestamp),
}

impl Database {
    /// Counts one sign-in attempt under each of `keys`, all or none, unless
    /// one of them is blocked. `wait_after(i, n)` is how long the `i`-th
    /// key must wait after its `n`-th attempt (`None`: not at all); the
    /// wait is set in the same transaction, so the next attempt sees it
    /// whichever instance makes it. A count whose last attempt is older
    /// than `quiet_since` (and that is not blocked) starts again.
    ///
    /// The rows are locked in the order of their keys, so that concurrent
    /// reservations sharing keys never wait for each other in a circle.
    #[tracing::instrument(skip_all, fields(keys = keys.len()))]
    pub async fn reserve_sign_in(
        &self,
        keys: &[String],
        quiet_since: Timestamp,
        wait_after: impl Fn(usize, i64) -> Option<Duration>,
    ) -> Result<Reservation, DbError> {
        let at = now();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        let counts = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut counts = vec![0i64; keys.len()];
            let mut blocked: Option<Timestamp> = None;
            for &i in &order {
                // Creates the row or takes it (the no-op update locks it
                // until the commit), its count already restarted if quiet.
                let (count, until): (i64, Option<Timestamp>) = sqlx::query_as(
                    "INSERT INTO sign_in_failures (key, failures, last_failure_at) \
                     VALUES ($1, 0, $2) \
                     ON CONFLICT (key) DO UPDATE SET failures = CASE \
                       WHEN sign_in_failures.last_failure_at < $3 \
                        AND (sign_in_failures.blocked_until IS NULL \
                             OR sign_in_failures.blocked_until <= $2) THEN 0 \
                       ELSE sign_in_failures.failures END \
                     RETURNING failures, blocked_until",
                )
                .bind(&keys[i])
                .bind(at)
                .bind(quiet_since)
                .fetch_one(&mut *tx)
                .await?;
                if let Some(until) = until.filter(|u| *u > at) {
                    blocked = Some(blocked.map_or(until, |b| b.max(until)));
                }
                counts[i] = count + 1;
            }
            if let Some(until) = blocked {
                tx.rollback().await?;
                return Ok(Reservation::Blocked(until));
            }
            for &i in &order {
                let until = wait_after(i, counts[i]).map(|wait| {
                    // A year is "for ever" here, and keeps the sum in range.
                    let wait = wait.min(Duration::from_secs(365 * 24 * 3600));
                    at + chrono::Duration::from_std(wait).unwrap_or_default()
                });
                sqlx::query(
                    "UPDATE sign_in_failures SET failures = $2, last_failure_at = $3, \
                     blocked_until = $4 WHERE key = $1",
                )
                .bind(&keys[i])
                .bind(counts[i])
                .bind(at)
                .bind(until)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            counts
        });
        Ok(Reservation::Counted(counts))
    }

    /// Takes back one attempt counted under each of `keys` (its check
    /// could not run, or it was a good sign-in that must not add to its
    /// address's count). A wait it set stays.
    #[tracing::instrument(skip_all)]
    pub async fn release_sign_in(&self, keys: &[String]) -> Result<(), DbError> {
        for key in keys {
            with_pool!(self, pool => sqlx::query(
                "UPDATE sign_in_failures SET failures = failures - 1 \
                 WHERE key = $1 AND failures > 0",
            )
            .bind(key)
            .execute(pool)
            .await?
            .rows_affected());
        }
        Ok(())
    }

    /// The latest `blocked_until` of `keys` that is still in the future.
    #[tracing::instrument(skip_all)]
    pub async fn sign_in_blocked_until(
        &self,
        keys: &[String],
    ) -> Result<Option<Timestamp>, DbError> {
        let at = now();
        let mut latest: Option<Timestamp> = None;
        for key in keys {
            let row: Option<(Option<Timestamp>,)> = with_pool!(self, pool => sqlx::query_as(
                "SELECT blocked_until FROM sign_in_failures WHERE key = $1",
            )
            .bind(key)
            .fetch_optional(pool)
            .await?);
            if let Some((Some(until),)) = row {
                if until > at && latest.is_none_or(|l| until > l) {
                    latest = Some(until);
                }
            }
        }
        Ok(latest)
    }

    /// Counts one failure against `key` after the fact and returns the
    /// count (a wrong current password when changing one's own). A count
    /// whose last failure is older than `quiet_since` starts again at one.
    /// One statement, so concurrent failures on any instance all count.
    #[tracing::instrument(skip_all)]
    pub async fn record_sign_in_failure(
        &self,
        key: &str,
        quiet_since: Timestamp,
    ) -> Result<i64, DbError> {
        let (failures,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "INSERT INTO sign_in_failures (key, failures, last_failure_at) VALUES ($1, 1, $2) \
             ON CONFLICT (key) DO UPDATE SET \
               failures = CASE WHEN sign_in_failures.last_failure_at < $3 THEN 1 \
                               ELSE sign_in_failures.failures + 1 END, \
               last_failure_at = $2 \
             RETURNING failures",
        )
        .bind(key)
        .bind(now())
        .bind(quiet_since)
        .fetch_one(pool)
        .await?);
        Ok(failures)
    }

    /// Blocks `key` until `until`, unless it is blocked longer already.
    pub async fn block_sign_in(&self, key: &str, until: Timestamp) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "UPDATE sign_in_failures SET blocked_until = $2 \
             WHERE key = $1 AND (blocked_until IS NULL OR blocked_until < $2)",
        )
        .bind(key)
        .bind(until)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Forgets the count of `key` (a good sign-in). Returns whether there
    /// was one.
    pub async fn clear_sign_in_failures(&self, key: &str) -> Result<bool, DbError> {
        let n = with_pool!(self, pool => sqlx::query("DELETE FROM sign_in_failures WHERE key = $1")
            .bind(key)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n > 0)
    }

    /// Forgets every count of `username`: from everywhere and from each
    /// address (a supervisor's unlock, a password reset). Returns whether
    /// there were any.
    pub async fn clear_user_sign_in_failures(&self, username: &str) -> Result<bool, DbError> {
        let n = with_pool!(self, pool => sqlx::query(
            "DELETE FROM sign_in_failures \
             WHERE key = $1 OR substr(key, 1, length($2)) = $2",
        )
        .bind(user_key(username))
        .bind(pair_prefix(username))
        .execute(pool)
        .await?
        .rows_affected());
        Ok(n > 0)
    }

    /// Remembers that `username` signed in from `addr` (now).
    pub async fn remember_sign_in_address(
        &self,
        username: &str,
        addr: &IpAddr,
    ) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO sign_in_known_addresses (username, address, last_sign_in_at) \
             VALUES ($1, $2, $3) ON CONFLICT (username, address) \
             DO UPDATE SET last_sign_in_at = excluded.last_sign_in_at",
        )
        .bind(username)
        .bind(addr.to_string())
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// Whether `username` signed in from `addr` within [`KNOWN_FOR`].
    pub async fn is_known_sign_in_address(
        &self,
        username: &str,
        addr: &IpAddr,
    ) -> Result<bool, DbError> {
        let row: Option<(Timestamp,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT last_sign_in_at FROM sign_in_known_addresses \
             WHERE username = $1 AND address = $2",
        )
        .bind(username)
        .bind(addr.to_string())
        .fetch_optional(pool)
        .await?);
        Ok(row.is_some_and(|(at,)| at > now() - KNOWN_FOR))
    }

    /// Deletes counts that went quiet before `quiet_since` and are not
    /// blocked any more, and the addresses not signed in from for
    /// [`KNOWN_FOR`]; returns how many rows went.
    pub async fn purge_sign_in_failures(&self, quiet_since: Timestamp) -> Result<u64, DbError> {
        let at = now();
        let counts = with_pool!(self, pool => sqlx::query(
            "DELETE FROM sign_in_failures WHERE last_failure_at < $1 \
             AND (blocked_until IS NULL OR blocked_until < $2)",
        )
        .bind(quiet_since)
        .bind(at)
        .execute(pool)
        .await?
        .rows_affected());
        let addresses = with_pool!(self, pool => sqlx::query(
            "DELETE FROM sign_in_known_addresses WHERE last_sign_in_at < $1",
        )
        .bind(at - KNOWN_FOR)
        .execute(pool)
        .await?
        .rows_affected());
        Ok(counts + addresses)
    }
}
