//! Sign-in: password check, server-side sessions behind the `aics_session`
//! cookie, and the scripts' bearer token.

use std::time::Duration;

use aics_db::tokens::{hash_token, new_token};
use aics_types::{Role, UserInfo};
use http::header::{AUTHORIZATION, COOKIE};
use http::HeaderMap;

use crate::error::ServiceError;
use crate::Console;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "aics_session";

/// The built-in user the API token acts as.
pub const API_USER: &str = "api";

/// How a request proves who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// `Authorization: Bearer …` (scripts; not sent by browsers on their own,
    /// hence exempt from the cross-site checks).
    Bearer(String),
    /// The `aics_session` cookie.
    Cookie(String),
}

/// The credential a request carries, bearer first.
pub fn credential(headers: &HeaderMap) -> Option<Credential> {
    if let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .unwrap_or_default()
            .trim();
        return Some(Credential::Bearer(token.to_owned()));
    }
    session_cookie(headers).map(Credential::Cookie)
}

/// The value of the `aics_session` cookie, if sent.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

impl Console {
    /// Who sent the request: the bearer token's user or the session
    /// cookie's. A wrong bearer token does not fall back to the cookie.
    #[tracing::instrument(skip_all)]
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<UserInfo, ServiceError> {
        match credential(headers) {
            Some(Credential::Bearer(token)) => {
                let Some(expected) = &self.inner.api_token_hash else {
                    return Err(ServiceError::Unauthorized);
                };
                // Comparing digests: equal-length values whose timing says
                // nothing about the token itself.
                if !token.is_empty() && hash_token(&token) == *expected {
                    Ok(UserInfo {
                        username: API_USER.to_owned(),
                        role: self.inner.config.api_token_role,
                    })
                } else {
                    Err(ServiceError::Unauthorized)
                }
            }
            Some(Credential::Cookie(token)) => {
                let Some(username) = self.inner.db.session_user(&hash_token(&token)).await? else {
                    return Err(ServiceError::Unauthorized);
                };
                self.inner
                    .db
                    .user(&username)
                    .await?
                    .ok_or(ServiceError::Unauthorized)
            }
            None => Err(ServiceError::Unauthorized),
        }
    }

    /// Checks the password and opens a session; returns the user and the
    /// `Set-Cookie` value. Unknown user and wrong password look the same.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn login(
        &self,
        username: &str,
        password: &str,
    ) -> Result<(UserInfo, String), ServiceError> {
        tracing::Span::current().record("username", username);
        if username.trim().is_empty() || password.is_empty() {
            return Err(ServiceError::Invalid(
                "username and password are required".into(),
            ));
        }
        if username.chars().count() > 64 || password.chars().count() > 1024 {
            return Err(ServiceError::Unauthorized);
        }
        let Some(user) = self.inner.db.verify_password(username, password).await? else {
            tracing::info!("sign-in refused");
            return Err(ServiceError::Unauthorized);
        };
        let token = new_token();
        let ttl = self.inner.config.session_ttl;
        let expires_at = chrono::Utc::now()
            + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::hours(12));
        self.inner
            .db
            .insert_session(&hash_token(&token), &user.username, expires_at)
            .await?;
        tracing::info!(role = user.role.as_str(), "signed in");
        Ok((user, self.cookie(&token, ttl)))
    }

    /// Ends the request's session (if any) and returns the clearing cookie.
    #[tracing::instrument(skip_all)]
    pub async fn logout(&self, headers: &HeaderMap) -> Result<String, ServiceError> {
        if let Some(token) = session_cookie(headers) {
            self.inner.db.delete_session(&hash_token(&token)).await?;
        }
        Ok(self.cookie("", Duration::ZERO))
    }

    fn cookie(&self, token: &str, max_age: Duration) -> String {
        let secure = if self.inner.config.cookie_secure {
            "; Secure"
        } else {
            ""
        };
        format!(
            "{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
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
    pub(crate) fn api_token_digest(token: &str) -> String {
        hash_token(token)
    }
}
