//! Failed sign-ins, counted in the database so that several instances
//! share one count: a row per key (`user:<name>` or `addr:<address>`) with
//! the failures since the count last went quiet and the time before which
//! the key may not sign in. The policy (how many failures block for how
//! long) is the service's; this module only counts and stores.

use aics_types::Timestamp;

use crate::{now, Database, DbError};

/// The throttle key of a (normalized) username.
pub fn user_key(username: &str) -> String {
    format!("user:{username}")
}

/// The throttle key of a client address.
pub fn addr_key(addr: &std::net::IpAddr) -> String {
    format!("addr:{addr}")
}

impl Database {
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

    /// Counts one failure against `key` and returns the count. A count
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

    /// Forgets the failures of `key` (a successful sign-in, a supervisor's
    /// unlock). Returns whether there were any.
    pub async fn clear_sign_in_failures(&self, key: &str) -> Result<bool, DbError> {
        let n = with_pool!(self, pool => sqlx::query("DELETE FROM sign_in_failures WHERE key = $1")
            .bind(key)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n > 0)
    }

    /// Deletes counts that went quiet before `quiet_since` and are not
    /// blocked any more; returns how many.
    pub async fn purge_sign_in_failures(&self, quiet_since: Timestamp) -> Result<u64, DbError> {
        Ok(with_pool!(self, pool => sqlx::query(
            "DELETE FROM sign_in_failures WHERE last_failure_at < $1 \
             AND (blocked_until IS NULL OR blocked_until < $2)",
        )
        .bind(quiet_since)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected()))
    }
}
