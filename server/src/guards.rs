//! The guards every request passes before a handler, in this order: the
//! host allowlist, the client's address (for the sign-in throttle), the
//! cross-site guard, and the refusal of control characters in the path,
//! the query and the body (a NUL cannot be stored by PostgreSQL, and no
//! person types one).
//!
//! They are one layer, [`guard`], that runs each check in turn: every
//! `from_fn` layer boxes its future and clones the services inside it for
//! each request, and four of them cost a request more than their checks
//! did (BENCHMARKS.md, round 35).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use aics_service::{ClientAddr, Console, ServiceError};
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::HttpError;
use crate::web::WebConfig;

/// What the guards need: the wire policy and the console (for the API
/// token).
#[derive(Clone)]
pub struct Guards {
    pub web: Arc<WebConfig>,
    pub console: Console,
}

fn refuse(why: String) -> Response {
    HttpError::from(ServiceError::Invalid(why)).into_response()
}

/// The TCP peer, when the server was started with connection info.
pub fn peer(request: &Request) -> Option<SocketAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
}

/// Runs the guards of the module docs in order; the first that refuses
/// answers, and the handler never runs.
pub async fn guard(State(g): State<Guards>, request: Request, next: Next) -> Response {
    if let Some(refused) = refuse_other_host(&g, &request) {
        return refused;
    }
    let request = with_client_addr(&g, request);
    if let Some(refused) = refuse_cross_site(&g, &request) {
        return refused;
    }
    match without_control_chars(&g, request).await {
        Ok(request) => next.run(request).await,
        Err(refused) => *refused,
    }
}

/// Refuses (400) a `Host` this server is not (DNS rebinding sends the
/// attacker's name); `/healthz` and `/readyz` answer any host, for probes.
fn refuse_other_host(g: &Guards, request: &Request) -> Option<Response> {
    let path = request.uri().path();
    if path != "/healthz" && path != "/readyz" {
        let host = request
            .headers()
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()))
            .unwrap_or("");
        if !g.web.hosts.allows(host) {
            tracing::warn!(host, "request for a host that is not ours refused");
            return Some(refuse(
                "this server does not answer for that host name".into(),
            ));
        }
    }
    None
}

/// Puts the client's [`ClientAddr`] in the request's extensions.
fn with_client_addr(g: &Guards, mut request: Request) -> Request {
    let addr = g.web.client_addr(peer(&request), request.headers());
    request.extensions_mut().insert(ClientAddr(addr));
    request
}

/// Refuses a state-changing request that a browser marks cross-site, or
/// whose `Origin` is not ours, unless it carries the valid API token
/// (browsers never add one on their own; any other `Authorization`, a
/// proxy's `Basic` say, does not exempt). Covers every path, the Leptos
/// server functions under `/fn` included.
fn refuse_cross_site(g: &Guards, request: &Request) -> Option<Response> {
    if is_state_changing(request.method()) && !g.console.has_valid_bearer(request.headers()) {
        if let Err(why) = same_origin(request.headers(), &g.web.allowed_origins) {
            tracing::warn!(why, path = %request.uri().path(), "cross-site request refused");
            return Some(
                HttpError::from(ServiceError::Forbidden(format!(
                    "cross-site request refused: {why}"
                )))
                .into_response(),
            );
        }
    }
    None
}

fn is_state_changing(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// `Ok` unless the browser says the request came from another site.
/// Requests without either header (curl, old browsers) pass: they carry no
/// ambient credentials a third-party page could abuse.
fn same_origin(headers: &HeaderMap, allowed: &[String]) -> Result<(), &'static str> {
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
        .map_err(|_| "the Origin header is not text")?
        .trim_end_matches('/');
    if !allowed.is_empty() {
        return if allowed.iter().any(|a| a.eq_ignore_ascii_case(origin)) {
            Ok(())
        } else {
            Err("the Origin is not one of the allowed origins")
        };
    }
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .ok_or("the request has an Origin but no Host")?;
    // `Origin: null` (sandboxed frames, some redirects) never matches.
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest)
        .ok_or("the Origin header is not a URL")?;
    if origin_host.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err("the Origin does not match the Host")
    }
}

/// Refuses control characters (but tab and line breaks; see
/// [`aics_types::find_control_char`]) in the decoded path and query, and in
/// every string of a JSON or form body, with 400 before any handler runs.
/// Also bounds how long a body may take to arrive (413 past it): JSON and
/// form bodies are read here, others get the deadline on their stream.
async fn without_control_chars(g: &Guards, request: Request) -> Result<Request, Box<Response>> {
    let uri = request.uri();
    for (field, text, plus_is_space) in [
        ("the URL path", uri.path(), false),
        ("the URL query", uri.query().unwrap_or(""), true),
    ] {
        aics_types::validate_text(field, &percent_decode(text, plus_is_space))
            .map_err(|why| Box::new(refuse(why)))?;
    }
    let kind = body_kind(request.headers());
    let (parts, body) = request.into_parts();
    if kind == BodyKind::Other {
        let body = Body::new(tower_http::timeout::TimeoutBody::new(
            g.web.body_timeout,
            body,
        ));
        return Ok(Request::from_parts(parts, body));
    }
    let read = axum::body::to_bytes(body, g.web.body_limit);
    let bytes = match tokio::time::timeout(g.web.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        _ => return Err(Box::new(crate::error::too_large_or_unreadable())),
    };
    match kind {
        // Not JSON: the handler answers with its own 400.
        BodyKind::Json => aics_types::validate_json_text("the request body", &bytes),
        BodyKind::Form => aics_types::validate_text(
            "the form",
            &percent_decode(&String::from_utf8_lossy(&bytes), true),
        ),
        BodyKind::Other => Ok(()),
    }
    .map_err(|why| Box::new(refuse(why)))?;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Json,
    Form,
    Other,
}

fn body_kind(headers: &HeaderMap) -> BodyKind {
    let ct = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ct.starts_with("application/json") || ct.contains("+json") {
        BodyKind::Json
    } else if ct.starts_with("application/x-www-form-urlencoded") {
        BodyKind::Form
    } else {
        BodyKind::Other
    }
}

/// `%XX` decoded (and `+` as a space in forms and queries); invalid UTF-8
/// becomes U+FFFD, invalid escapes stay as written. Text with nothing to
/// decode (most paths and queries) is returned as it is.
fn percent_decode(text: &str, plus_is_space: bool) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    if !bytes
        .iter()
        .any(|&b| b == b'%' || (plus_is_space && b == b'+'))
    {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' if plus_is_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("a%20b+c", true), "a b c");
        assert_eq!(percent_decode("a+b", false), "a+b");
        assert_eq!(percent_decode("nul%00", false), "nul\0");
        assert_eq!(percent_decode("bad%zz%", false), "bad%zz%");
        assert_eq!(percent_decode("%C2%85", false), "\u{85}");
        assert_eq!(percent_decode("%E4%BD%A0", false), "你");
        assert!(matches!(
            percent_decode("/api/chat", true),
            Cow::Borrowed(_)
        ));
        assert!(matches!(percent_decode("a+b", false), Cow::Borrowed(_)));
    }

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        h.insert(HOST, "console.test".parse().unwrap());
        h.insert(ORIGIN, "http://console.test".parse().unwrap());
        assert!(same_origin(&h, &[]).is_ok());
        assert!(same_origin(&h, &["https://console.example.com".into()]).is_err());
        h.insert(ORIGIN, "https://console.example.com".parse().unwrap());
        assert!(same_origin(&h, &["https://console.example.com".into()]).is_ok());
        assert!(same_origin(&h, &[]).is_err());
        h.insert(ORIGIN, "null".parse().unwrap());
        assert!(same_origin(&h, &[]).is_err());
    }
}
