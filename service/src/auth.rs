//! Sign-in and sessions: the password check (throttled per username and
//! per client address, counted in the database), server-side sessions
//! behind the session cookie (absolute expiry, idle timeout, a cap per
//! user, "sign out everywhere"), and the scripts' bearer token.

use std::net::IpAddr;
use std::time::Duration;

use aics_db::passwords::{self, AddressSlot};
use aics_db::throttle::{addr_key, pair_key, user_key, Reservation};
use aics_db::tokens::{hash_token, new_token};
use aics_db::CredentialCheck;
use aics_types::{normalize_username, Role, UserInfo};
use http::header::{AUTHORIZATION, COOKIE};
use http::HeaderMap;
use secrecy::ExposeSecret;

use crate::error::ServiceError;
use crate::Console;

/// The session cookie's name over plain-http loopback (`make run`).
pub const SESSION_COOKIE: &str = "aics_session";
/// Its name when the cookie is `Secure`: the `__Host-` prefix makes the
/// browser refuse it unless it is Secure, has `Path=/` and no `Domain`, so
/// no other host or plain-http page can plant or shadow it.
pub const SECURE_SESSION_COOKIE: &str = "__Host-aics_session";

/// The built-in user the API token acts as.
pub const API_USER: &str = "api";

/// A session is marked as used at most this often (a write per request
/// would cost more than the idle timeout's precision is worth).
const TOUCH_EVERY: chrono::Duration = chrono::Duration::seconds(60);

/// The address a request came from, as the server worked it out (the
/// proxy's `X-Forwarded-For` honoured only from configured proxies). The
/// server puts it in every request's extensions; sign-in reads it there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientAddr(pub Option<IpAddr>);

/// How a request proves who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Bearer …` (scripts; never sent by browsers on their
    /// own).
    Bearer(String),
    /// The session cookie.
    Cookie(String),
}

/// The bearer token of an `Authorization: Bearer …` header, if there is
/// one. Other schemes (a proxy's `Basic`) are not ours and are ignored.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The value of the cookie named `name`, if sent.
pub fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// A signed-in browser: the user, the `Set-Cookie` value, and whether the
/// password was set by someone else and should be changed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub user: UserInfo,
    pub set_cookie: String,
    pub must_change_password: bool,
}

/// "15 minutes", "1 minute", "30 seconds": how long to wait, for people.
pub fn wait_text(wait: Duration) -> String {
    let secs = wait.as_secs_f64().ceil() as u64;
    match secs {
        0..=1 => "a second".to_owned(),
        2..=59 => format!("{secs} seconds"),
        60..=119 => "a minute".to_owned(),
        _ => format!("{} minutes", secs.div_ceil(60)),
    }
}

/// The counts a sign-in attempt is made under ([`crate::ThrottlePolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    /// The name from this address: waits, then a lock of this pair alone.
    Pair,
    /// The address, whatever the name: waits, then a lock.
    Address,
    /// The name from any address it never signed in from: waits only.
    Name,
}

impl Count {
    /// The wait this count sets after its `attempts`-th attempt.
    fn wait(self, policy: &crate::ThrottlePolicy, attempts: i64) -> Option<Duration> {
        match self {
            Self::Pair => policy.pair_wait(attempts),
            Self::Address => policy.addr_wait(attempts),
            Self::Name => policy.name_wait(attempts),
        }
    }
}

/// One attempt's counts and their keys in the database.
struct Counts(Vec<(Count, String)>);

impl Counts {
    /// The counts of `username` from `addr`: an address the name signed in
    /// from before (`known`) skips the name's and the address's, as its
    /// pair alone bounds its guesses; a caller without an address has a
    /// pair of its own and no address count.
    fn of(username: &str, addr: Option<IpAddr>, known: bool) -> Self {
        let mut counts = vec![(Count::Pair, pair_key(username, addr.as_ref()))];
        if !known {
            if let Some(addr) = &addr {
                counts.push((Count::Address, addr_key(addr)));
            }
            counts.push((Count::Name, user_key(username)));
        }
        Self(counts)
    }

    fn keys(&self) -> Vec<String> {
        self.0.iter().map(|(_, key)| key.clone()).collect()
    }
}

/// A place among `addr`'s sign-ins in flight, or 429 at once (503 when a
/// flood from very many addresses fills the table).
fn admit_sign_in(addr: IpAddr, per_address: u32) -> Result<AddressSlot, ServiceError> {
    passwords::admit(addr, per_address as usize).map_err(|refused| match refused {
        passwords::Refused::Address => {
            metrics::counter!("aics_sign_ins_total", "outcome" => "in_flight").increment(1);
            tracing::info!("sign-in refused: too many at once from this address");
            ServiceError::TooManyRequests {
                message: "Too many sign-ins at once from your address. Try again in a moment."
                    .into(),
                retry_after: Duration::from_secs(1),
            }
        }
        passwords::Refused::Full => ServiceError::Busy,
    })
}

impl Console {
    /// The session cookie's name in this deployment.
    pub fn session_cookie_name(&self) -> &'static str {
        if self.inner.config.cookie_secure {
            SECURE_SESSION_COOKIE
        } else {
            SESSION_COOKIE
        }
    }

    /// The credential a request carries: a bearer token first, else the
    /// session cookie.
    pub fn credential(&self, headers: &HeaderMap) -> Option<Credential> {
        if let Some(token) = bearer_token(headers) {
            return Some(Credential::Bearer(token.to_owned()));
        }
        cookie_value(headers, self.session_cookie_name())
            .map(|token| Credential::Cookie(token.to_owned()))
    }

    /// Whether the request carries the configured API token (the one
    /// credential that exempts a request from the cross-site guard).
    pub fn has_valid_bearer(&self, headers: &HeaderMap) -> bool {
        bearer_token(headers).is_some_and(|token| self.is_api_token(token))
    }

    fn is_api_token(&self, token: &str) -> bool {
        // Comparing digests: equal-length values whose timing says nothing
        // about the token itself.
        match &self.inner.api_token_hash {
            Some(expected) => !token.is_empty() && hash_token(token) == *expected,
            None => false,
        }
    }

    /// Who sent the request: the bearer token's user or the session
    /// cookie's. A wrong bearer token does not fall back to the cookie; a
    /// session that expired, sat idle too long or belongs to a disabled
    /// account is refused.
    #[tracing::instrument(skip_all)]
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<UserInfo, ServiceError> {
        match self.credential(headers) {
            Some(Credential::Bearer(token)) => {
                if self.is_api_token(&token) {
                    Ok(UserInfo {
                        username: API_USER.to_owned(),
                        role: self.inner.config.api_token_role,
                    })
                } else {
                    Err(ServiceError::Unauthorized)
                }
            }
            Some(Credential::Cookie(token)) => {
                let db = &self.inner.db;
                let token_hash = hash_token(&token);
                let now = chrono::Utc::now();
                let Some(session) = db.live_session(&token_hash, now - self.idle()).await? else {
                    return Err(ServiceError::Unauthorized);
                };
                let user = db
                    .active_user(&session.username)
                    .await?
                    .ok_or(ServiceError::Unauthorized)?;
                if now - session.last_seen_at > TOUCH_EVERY {
                    if let Err(e) = db.touch_session(&token_hash).await {
                        tracing::warn!(error = %e, "could not mark the session used");
                    }
                }
                Ok(user)
            }
            None => Err(ServiceError::Unauthorized),
        }
    }

    fn idle(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.inner.config.session_idle)
            .unwrap_or(chrono::Duration::minutes(30))
    }

    /// Checks the password and opens a session, throttled as
    /// [`crate::ThrottlePolicy`] says. Before any hashing: beyond
    /// `addr_in_flight` sign-ins at once from the client's address, 429 at
    /// once; then the attempt is counted in the database under its name
    /// from this address, its address, and its name from everywhere (not
    /// for an address the name signed in from before), or refused with 429
    /// (even with the right password) while one of them waits. So N
    /// parallel guesses check at most as many passwords as the policy lets
    /// through. The right password clears the name's counts and remembers
    /// the address. Unknown users and wrong passwords look the same, in
    /// answer and in time.
    #[tracing::instrument(skip_all, fields(username, client = ?client.0))]
    pub async fn sign_in(
        &self,
        username: &str,
        password: &str,
        client: ClientAddr,
    ) -> Result<SignedIn, ServiceError> {
        aics_types::validate_text("the username", username).map_err(ServiceError::Invalid)?;
        aics_types::validate_text("the password", password).map_err(ServiceError::Invalid)?;
        let username = normalize_username(username);
        tracing::Span::current().record("username", username.as_str());
        if username.is_empty() || password.is_empty() {
            return Err(ServiceError::Invalid(
                "username and password are required".into(),
            ));
        }
        if username.chars().count() > aics_types::MAX_USERNAME_CHARS
            || password.chars().count() > aics_types::MAX_PASSWORD_CHARS
        {
            return Err(ServiceError::Invalid(
                "the username or password is too long".into(),
            ));
        }
        let policy = self.inner.config.throttle;
        // Held until the answer: one address's flood queues for no hash.
        let _slot = match client.0 {
            Some(addr) => Some(admit_sign_in(addr, policy.addr_in_flight)?),
            None => None,
        };
        let db = &self.inner.db;
        let known = match client.0 {
            Some(addr) => db.is_known_sign_in_address(&username, &addr).await?,
            None => false,
        };
        let counts = Counts::of(&username, client.0, known);
        let quiet_since =
            chrono::Utc::now() - chrono::Duration::from_std(policy.lock_for).unwrap_or_default();
        let reservation = db
            .reserve_sign_in(&counts.keys(), quiet_since, |i, n| {
                counts.0[i].0.wait(&policy, n)
            })
            .await?;
        let attempts = match reservation {
            Reservation::Counted(attempts) => attempts,
            Reservation::Blocked(until) => {
                metrics::counter!("aics_sign_ins_total", "outcome" => "throttled").increment(1);
                let wait = (until - chrono::Utc::now())
                    .to_std()
                    .unwrap_or(Duration::from_secs(1));
                tracing::info!(wait_secs = wait.as_secs(), "sign-in refused: throttled");
                return Err(ServiceError::TooManyRequests {
                    message: format!(
                        "Too many failed sign-ins. Wait {} before trying again.",
                        wait_text(wait)
                    ),
                    retry_after: wait,
                });
            }
        };
        let check = match db.check_credentials(&username, password).await {
            Ok(check) => check,
            Err(e) => {
                // Not checked (the hash queue is full, say): not an attempt.
                if let Err(release) = db.release_sign_in(&counts.keys()).await {
                    tracing::warn!(error = %release, "could not release a sign-in attempt");
                }
                return Err(e.into());
            }
        };
        match check {
            CredentialCheck::Valid(user) => {
                for (count, key) in &counts.0 {
                    match count {
                        Count::Pair => {
                            db.clear_sign_in_failures(key).await?;
                        }
                        // An office's good sign-ins do not add up to its lock.
                        Count::Address => db.release_sign_in(std::slice::from_ref(key)).await?,
                        Count::Name => {}
                    }
                }
                // The name's count from everywhere goes too, even when this
                // (known) address did not count under it.
                db.clear_sign_in_failures(&user_key(&username)).await?;
                if let Some(addr) = client.0 {
                    db.remember_sign_in_address(&user.username, &addr).await?;
                }
                db.record_sign_in(&user.username).await?;
                let must_change_password = db.must_change_password(&user.username).await?;
                let set_cookie = self.open_session(&user).await?;
                metrics::counter!("aics_sign_ins_total", "outcome" => "ok").increment(1);
                tracing::info!(role = user.role.as_str(), "signed in");
                Ok(SignedIn {
                    user,
                    set_cookie,
                    must_change_password,
                })
            }
            CredentialCheck::Disabled(_) => {
                // The right password: not a failure to count.
                db.release_sign_in(&counts.keys()).await?;
                metrics::counter!("aics_sign_ins_total", "outcome" => "disabled").increment(1);
                tracing::info!("sign-in refused: the account is disabled");
                Err(ServiceError::Forbidden(
                    "This account is disabled. Ask a supervisor to enable it.".into(),
                ))
            }
            CredentialCheck::Invalid => {
                metrics::counter!("aics_sign_ins_total", "outcome" => "refused").increment(1);
                let now = chrono::Utc::now();
                for ((count, key), attempts) in counts.0.iter().zip(attempts) {
                    // The wait set with the reservation, counted again from
                    // this answer: a slow check must not use it up.
                    if let Some(wait) = count.wait(&policy, attempts) {
                        // A year is "for ever" here, and keeps the sum in range.
                        let wait = wait.min(Duration::from_secs(365 * 24 * 3600));
                        let wait = chrono::Duration::from_std(wait).unwrap_or_default();
                        db.block_sign_in(key, now + wait).await?;
                    }
                    self.audit_throttle(*count, attempts, &username, client.0)
                        .await;
                }
                tracing::info!("sign-in refused");
                Err(ServiceError::Unauthorized)
            }
        }
    }

    /// Writes the audit line of a count that the failed attempt numbered
    /// `attempts` has just locked (or, for a name, has started to slow).
    async fn audit_throttle(
        &self,
        count: Count,
        attempts: i64,
        username: &str,
        addr: Option<IpAddr>,
    ) {
        let policy = self.inner.config.throttle;
        let from = addr.map_or_else(|| "an unknown address".to_owned(), |a| a.to_string());
        let (action, subject, detail) = match count {
            Count::Pair if attempts == i64::from(policy.user_lock_after) => (
                "sign_in.lock",
                username,
                format!(
                    "{attempts} failed sign-ins from {from}; that address is locked out for {}",
                    wait_text(policy.lock_for)
                ),
            ),
            Count::Address if attempts == i64::from(policy.addr_lock_after) => (
                "sign_in.lock",
                from.as_str(),
                format!(
                    "{attempts} failed sign-ins; locked for {}",
                    wait_text(policy.lock_for)
                ),
            ),
            Count::Name if attempts == i64::from(policy.name_free) + 1 => (
                "sign_in.throttle",
                username,
                format!(
                    "{attempts} failed sign-ins from addresses it never signed in from; \
                     each next one from those waits longer, up to {}",
                    wait_text(policy.name_max_delay)
                ),
            ),
            _ => return,
        };
        tracing::warn!(
            action,
            subject,
            attempts,
            "sign-in throttled after repeated failures"
        );
        self.audit("system", action, subject, &detail).await;
    }

    /// A new session for `user` (the oldest beyond the per-user cap end);
    /// returns its `Set-Cookie` value.
    async fn open_session(&self, user: &UserInfo) -> Result<String, ServiceError> {
        let token = new_token();
        let ttl = self.inner.config.session_ttl;
        let expires_at = chrono::Utc::now()
            + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(12));
        self.inner
            .db
            .insert_session(
                &hash_token(&token),
                &user.username,
                expires_at,
                self.inner.config.sessions_per_user,
            )
            .await?;
        Ok(self.cookie(&token, ttl))
    }

    /// [`Console::sign_in`] without a client address (callers that have
    /// none; the username's throttle still applies). Returns the user and
    /// the `Set-Cookie` value.
    pub async fn login(
        &self,
        username: &str,
        password: &str,
    ) -> Result<(UserInfo, String), ServiceError> {
        let signed_in = self.sign_in(username, password, ClientAddr(None)).await?;
        Ok((signed_in.user, signed_in.set_cookie))
    }

    /// Ends the request's session (if any) and returns the clearing cookie.
    #[tracing::instrument(skip_all)]
    pub async fn logout(&self, headers: &HeaderMap) -> Result<String, ServiceError> {
        if let Some(token) = cookie_value(headers, self.session_cookie_name()) {
            let token_hash = hash_token(token);
            self.inner.db.delete_session(&token_hash).await?;
            // Its event streams here end now, not at their next check.
            self.inner.streams.revoke_session(&token_hash);
        }
        Ok(self.cookie("", Duration::ZERO))
    }

    /// Ends every session of the signed-in user, this browser's too, and
    /// their open event streams here; returns the clearing cookie.
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    pub async fn sign_out_everywhere(&self, user: &UserInfo) -> Result<String, ServiceError> {
        if user.username == API_USER {
            return Err(ServiceError::Forbidden(
                "the API token has no sessions to end".into(),
            ));
        }
        let ended = self.inner.db.delete_user_sessions(&user.username).await?;
        self.inner.streams.revoke(&user.username);
        self.audit(
            &user.username,
            "account.sign_out_everywhere",
            &user.username,
            &format!("{ended} sessions ended"),
        )
        .await;
        Ok(self.cookie("", Duration::ZERO))
    }

    /// The stored form of the request's session token, if it has one.
    pub(crate) fn session_token_hash(&self, headers: &HeaderMap) -> Option<String> {
        cookie_value(headers, self.session_cookie_name()).map(hash_token)
    }

    fn cookie(&self, token: &str, max_age: Duration) -> String {
        let secure = if self.inner.config.cookie_secure {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
            self.session_cookie_name(),
            max_age.as_secs()
        )
    }

    /// Fails with 403 unless the user is a supervisor.
    pub fn require_supervisor(&self, user: &UserInfo) -> Result<(), ServiceError> {
        if user.role == Role::Supervisor {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(
                "only supervisors may do this".into(),
            ))
        }
    }

    /// The digest the API token is compared by.
    pub(crate) fn api_token_digest(token: &secrecy::SecretString) -> String {
        hash_token(token.expose_secret())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_address_counts_only_its_pair() {
        let addr: IpAddr = "192.0.2.1".parse().unwrap();
        let kinds = |c: Counts| c.0.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            kinds(Counts::of("ann", Some(addr), false)),
            [Count::Pair, Count::Address, Count::Name]
        );
        assert_eq!(kinds(Counts::of("ann", Some(addr), true)), [Count::Pair]);
        let none = Counts::of("ann", None, false);
        assert_eq!(none.keys(), ["pair:ann|-", "user:ann"]);
    }

    #[test]
    fn only_bearer_is_a_bearer() {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(AUTHORIZATION, "bearer  abc ".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(AUTHORIZATION, "Basic YWxhZGRpbjpvcGVu".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
        h.insert(AUTHORIZATION, "Bearer".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
    }

    #[test]
    fn cookies_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            "theme=dark; __Host-aics_session=s1; aics_session=s2"
                .parse()
                .unwrap(),
        );
        assert_eq!(cookie_value(&h, SECURE_SESSION_COOKIE), Some("s1"));
        assert_eq!(cookie_value(&h, SESSION_COOKIE), Some("s2"));
        assert_eq!(cookie_value(&h, "other"), None);
    }

    #[test]
    fn waits_read_well() {
        assert_eq!(wait_text(Duration::from_millis(300)), "a second");
        assert_eq!(wait_text(Duration::from_secs(8)), "8 seconds");
        assert_eq!(wait_text(Duration::from_secs(60)), "a minute");
        assert_eq!(wait_text(Duration::from_secs(900)), "15 minutes");
        assert_eq!(wait_text(Duration::from_secs(899)), "15 minutes");
    }
}
