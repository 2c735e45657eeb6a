//! Request middleware: the API's auth layer, the per-user cap on event
//! streams, JSON bodies for bare error statuses, and the request counter.
//! (The guards before them are in [`crate::guards`], the security headers
//! in [`crate::headers`].)

use aics_service::Console;
use aics_types::UserInfo;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::error::{status_error, HttpError};

/// The auth layer of `/api/*`: a valid session cookie or bearer token, else
/// 401. The user goes into the request's extensions for the handlers.
pub async fn require_user(
    State(console): State<Console>,
    mut request: Request,
    next: Next,
) -> Response {
    match console.authenticate(request.headers()).await {
        Ok(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(e) => HttpError::from(e).into_response(),
    }
}

/// Gives bare error answers of the API (axum's 404/405, a body-limit 413)
/// the `ApiError` JSON body every API error has.
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        let (mut parts, _) = response.into_parts();
        parts.headers.remove(CONTENT_TYPE);
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        let body = axum::Json(status_error(status)).into_response();
        let (json_parts, json_body) = body.into_parts();
        parts.headers.extend(json_parts.headers);
        return Response::from_parts(parts, json_body);
    }
    response
}

/// Whether `path` is one of the routes that answer with an event stream
/// (`…/events`, `…/stream`).
pub fn is_event_stream(path: &str) -> bool {
    path.ends_with("/events") || path.ends_with("/stream")
}

/// Holds a place among the user's open event streams (see
/// `Console::open_stream_for`) for as long as the stream's body lives, and
/// ends the body when the user's sessions end or, for a stream opened with
/// a session cookie, when that session ends (signed out, a password change
/// elsewhere, idle, expired). Applies to the routes that answer with event
/// streams (`…/events`, `…/stream`); 429 past the cap.
pub async fn stream_cap(State(console): State<Console>, request: Request, next: Next) -> Response {
    if !is_event_stream(request.uri().path()) {
        return next.run(request).await;
    }
    let Some(user) = request.extensions().get::<UserInfo>().cloned() else {
        return next.run(request).await;
    };
    let mut permit = match console.open_stream_for(&user, request.headers()) {
        Ok(permit) => permit,
        Err(e) => return HttpError::from(e).into_response(),
    };
    let response = next.run(request).await;
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        return response;
    }
    let (parts, body) = response.into_parts();
    let revoked = async move { permit.revoked().await };
    let body = Body::from_stream(body.into_data_stream().take_until(Box::pin(revoked)));
    Response::from_parts(parts, body)
}

/// The `method` label of a request: a standard method, or `other` (an
/// unauthenticated client may send any token as a method, and each label
/// is a series kept forever).
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Counts requests by method and status class.
pub async fn count_requests(request: Request<Body>, next: Next) -> Response {
    let method = method_label(request.method());
    let response = next.run(request).await;
    let class = match response.status().as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    };
    metrics::counter!("aics_http_requests_total", "method" => method, "status" => class)
        .increment(1);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_methods_fold_into_other() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::TRACE), "other");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
