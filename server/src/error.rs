//! The HTTP layer's error: every failure becomes `ApiError {error, message}`
//! JSON with the right status. A 500 is logged (with the request id of the
//! surrounding span) and answered with a generic sentence.

use aics_service::ServiceError;
use aics_types::ApiError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// What a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A service error: its own status (400, 401, 403, 404, 409, 500).
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The body is not the JSON expected (400), or too large (413).
    #[error(transparent)]
    Json(#[from] JsonRejection),
    /// A path segment does not parse (400).
    #[error(transparent)]
    Path(#[from] PathRejection),
    /// The query string does not parse (400).
    #[error(transparent)]
    Query(#[from] QueryRejection),
}

impl HttpError {
    /// The status of each variant, in one place.
    pub fn status_code(&self) -> StatusCode {
        match self {
            Self::Service(e) => {
                StatusCode::from_u16(e.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
            Self::Json(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            // A wrong content type (415) is still the client's mistake: 400
            // keeps the API's answers to one family.
            Self::Json(_) | Self::Path(_) | Self::Query(_) => StatusCode::BAD_REQUEST,
        }
    }

    fn body(&self) -> ApiError {
        match self {
            Self::Service(e) => e.to_api_error(),
            Self::Json(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError {
                error: "payload_too_large".into(),
                message: "the request body is too large".into(),
            },
            Self::Json(e) => ApiError {
                error: "invalid_request".into(),
                message: format!(
                    "the body is not valid JSON of the expected shape: {}",
                    e.body_text()
                ),
            },
            Self::Path(e) => ApiError {
                error: "invalid_request".into(),
                message: e.body_text(),
            },
            Self::Query(e) => ApiError {
                error: "invalid_request".into(),
                message: e.body_text(),
            },
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        if status.is_server_error() {
            // The detail goes to the log only; the span carries the request id.
            tracing::error!(error = %self, "request failed");
        }
        let retry_after = match &self {
            Self::Service(e) => e.retry_after_secs(),
            _ => None,
        };
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

/// 413 for a body past the limit (or one that did not arrive in time).
pub fn too_large_or_unreadable() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        axum::Json(ApiError {
            error: "payload_too_large".into(),
            message: "the request body is too large or did not arrive in time".into(),
        }),
    )
        .into_response()
}

/// A bare status as `ApiError` JSON (for answers that have no error value,
/// such as axum's own 404 and 405, or a body-limit 413).
pub fn status_error(status: StatusCode) -> ApiError {
    let error = match status {
        StatusCode::BAD_REQUEST
        | StatusCode::UNSUPPORTED_MEDIA_TYPE
        | StatusCode::UNPROCESSABLE_ENTITY => "invalid_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::TOO_MANY_REQUESTS => "too_many_requests",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        s if s.is_client_error() => "invalid_request",
        _ => "internal",
    };
    let message = match status {
        StatusCode::NOT_FOUND => "no such API route".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => "this route does not take that method".to_owned(),
        StatusCode::PAYLOAD_TOO_LARGE => "the request body is too large".to_owned(),
        s => s.canonical_reason().unwrap_or("error").to_owned(),
    };
    ApiError {
        error: error.into(),
        message,
    }
}
