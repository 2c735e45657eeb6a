//! The one error type of the service layer and its HTTP mapping.

use aics_agent::AgentError;
use aics_db::DbError;
use aics_types::ApiError;

/// What a console call can fail with. The doc line of each variant says
/// its HTTP status; [`ServiceError::status_code`] is the one place that maps.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input breaks a rule (400 `invalid_request`).
    #[error("{0}")]
    Invalid(String),
    /// No valid session cookie or bearer token (401 `unauthorized`).
    #[error("sign in first")]
    Unauthorized,
    /// Signed in, but not allowed to do this (403 `forbidden`).
    #[error("{0}")]
    Forbidden(String),
    /// The thing asked for does not exist (404 `not_found`).
    #[error("{0}")]
    NotFound(String),
    /// It clashes with the current state, e.g. a turn already runs (409 `conflict`).
    #[error("{0}")]
    Conflict(String),
    /// Too many failed sign-ins, or too many open streams (429
    /// `too_many_requests`, with `Retry-After`).
    #[error("{message}")]
    TooManyRequests {
        message: String,
        retry_after: std::time::Duration,
    },
    /// The server is too busy right now, e.g. a flood of sign-ins (503
    /// `unavailable`, with `Retry-After`).
    #[error("the server is busy; try again in a moment")]
    Busy,
    /// Anything else (500 `internal`): logged with its detail, never shown.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServiceError {
    /// The HTTP status of this error.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::Invalid(_) => 400,
            Self::Unauthorized => 401,
            Self::Forbidden(_) => 403,
            Self::NotFound(_) => 404,
            Self::Conflict(_) => 409,
            Self::TooManyRequests { .. } => 429,
            Self::Busy => 503,
            Self::Internal(_) => 500,
        }
    }

    /// The stable code of the JSON body's `error` field.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::Conflict(_) => "conflict",
            Self::TooManyRequests { .. } => "too_many_requests",
            Self::Busy => "unavailable",
            Self::Internal(_) => "internal",
        }
    }

    /// The `Retry-After` of the answer, in whole seconds (at least one).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::TooManyRequests { retry_after, .. } => {
                Some(retry_after.as_secs_f64().ceil().max(1.0) as u64)
            }
            Self::Busy => Some(1),
            _ => None,
        }
    }

    /// The JSON body; an internal error gets a generic sentence, because its
    /// detail may name tables, hosts or paths.
    pub fn to_api_error(&self) -> ApiError {
        let message = match self {
            Self::Internal(_) => {
                "something went wrong on our side; the request id is in the x-request-id header"
                    .to_owned()
            }
            other => other.to_string(),
        };
        ApiError {
            error: self.code().to_owned(),
            message,
        }
    }
}

impl From<DbError> for ServiceError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::NotFound(what) => Self::NotFound(format!("{what} does not exist")),
            DbError::InvalidInput(why) => Self::Invalid(why),
            e @ DbError::AlreadyDecided { .. } => Self::Conflict(e.to_string()),
            DbError::Conflict(why) => Self::Conflict(why),
            // API.md: a wrong token is a 400 (the request is wrong, not the caller).
            e @ DbError::InvalidToken => Self::Invalid(e.to_string()),
            DbError::Busy => Self::Busy,
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<AgentError> for ServiceError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::UnknownRun(id) => Self::NotFound(format!("turn {id} does not exist")),
            other => Self::Internal(other.to_string()),
        }
    }
}
