//! Request middleware: the cross-site guard, the API's auth layer, JSON
//! bodies for bare error statuses, and the request counter.

use aics_service::{Console, ServiceError};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{status_error, HttpError};

/// Refuses a state-changing request that a browser marks cross-site, or
/// whose `Origin` is not this server, unless it carries a bearer token
/// (browsers never add one on their own). Covers every path, the Leptos
/// server functions under `/fn` included.
pub async fn cross_site_guard(request: Request, next: Next) -> Response {
    if is_state_changing(request.method()) && !has_bearer(request.headers()) {
        if let Err(why) = same_origin(request.headers()) {
            tracing::warn!(why, path = %request.uri().path(), "cross-site request refused");
            return HttpError::from(ServiceError::Forbidden(format!(
                "cross-site request refused: {why}"
            )))
            .into_response();
        }
    }
    next.run(request).await
}

fn is_state_changing(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

fn has_bearer(headers: &HeaderMap) -> bool {
    aics_service::bearer_token(headers).is_some()
}

/// `Ok` unless the browser says the request came from another site.
/// Requests without either header (curl, old browsers) pass: they carry no
/// ambient credentials a third-party page could abuse.
fn same_origin(headers: &HeaderMap) -> Result<(), &'static str> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if matches!(site, "cross-site" | "same-site") {
            return Err("Sec-Fetch-Site says the request is from another site");
        }
    }
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| "the Origin header is not text")?;
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .ok_or("the request has an Origin but no Host")?;
    // `Origin: null` (sandboxed frames, some redirects) never matches.
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'))
        .ok_or("the Origin header is not a URL")?;
    if origin_host.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err("the Origin does not match the Host")
    }
}

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

/// Counts requests by method and status class.
pub async fn count_requests(request: Request<Body>, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
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
