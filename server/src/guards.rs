//! The guards every request passes before a handler, in this order: the
//! host allowlist, no dotfiles (404, [`crate::assets::is_hidden`]), the
//! client's address (for the sign-in throttle), the cross-site guard (the
//! `Origin`'s scheme and host against the site's), the refusal of control
//! characters in the path, the query and the body (a NUL cannot be stored
//! by PostgreSQL, and no person types one), and the body limit (413 for any
//! body past it, whatever its type).
//!
//! They are one layer, [`guard`], that runs each check in turn: every
//! `from_fn` layer boxes its future and clones the services inside it for
//! each request, and four of them cost a request more than their checks
//! did (BENCHMARKS.md, round 35).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use aics_service::{ClientAddr, Console, ServiceError};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, EXPECT, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

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
    if crate::assets::is_hidden(&percent_decode(request.uri().path(), false)) {
        return HttpError::from(ServiceError::NotFound("no such file".into())).into_response();
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
        let scheme = g.web.request_scheme(peer(request), request.headers());
        if let Err(why) = same_origin(request.headers(), &g.web.allowed_origins, scheme) {
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
/// ambient credentials a third-party page could abuse. Without `allowed`
/// origins the `Origin` must be the request's `Host` reached by `scheme`,
/// the site's ([`WebConfig::request_scheme`]): a page on `http://` of our
/// host (whoever controls the plain-http path writes it) is another origin
/// than the `https://` site, and the other way round.
fn same_origin(headers: &HeaderMap, allowed: &[String], scheme: &str) -> Result<(), &'static str> {
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
    let (origin_scheme, origin_host) = origin
        .split_once("://")
        .ok_or("the Origin header is not a URL")?;
    if !origin_host.eq_ignore_ascii_case(host) {
        Err("the Origin does not match the Host")
    } else if !origin_scheme.eq_ignore_ascii_case(scheme) {
        Err("the Origin's scheme is not the site's")
    } else {
        Ok(())
    }
}

/// Refuses control characters (but tab and line breaks; see
/// [`aics_types::find_control_char`]) in the decoded path and query, and in
/// every string of a JSON or form body, with 400 before any handler runs.
/// Every body is read here, whatever its type, within the body limit and
/// timeout (413 past either): a handler that met the limit on its own
/// stream — a server function reading a text/plain body — would answer 500.
async fn without_control_chars(g: &Guards, request: Request) -> Result<Request, Box<Response>> {
    let uri = request.uri();
    for (field, text, plus_is_space) in [
        ("the URL path", uri.path(), false),
        ("the URL query", uri.query().unwrap_or(""), true),
    ] {
        aics_types::validate_text(field, &percent_decode(text, plus_is_space))
            .map_err(|why| Box::new(refuse(why)))?;
    }
    // Most requests (every GET) have no body: nothing to read or time.
    if request.body().is_end_stream() {
        return Ok(request);
    }
    let kind = body_kind(request.headers());
    let (parts, body) = request.into_parts();
    let bytes = read_body(&parts.headers, body, g.web.body_limit, g.web.body_timeout)
        .await
        .map_err(|()| Box::new(crate::error::too_large_or_unreadable()))?;
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

/// How much of a body past the limit is still read, and dropped, before
/// the 413 goes out: a client still sending when the server closes would
/// get a reset connection instead of the answer. A larger body gets its 413
/// at once.
const DRAIN_BYTES: usize = 1024 * 1024;

/// A request body of at most `limit` bytes, read within `timeout`; `Err`
/// for one past the limit, late, or broken.
async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ()> {
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = length.filter(|l| *l > limit as u64) {
        // A client that waits for "100 Continue" sends nothing once it has
        // the 413, and one sending far past the limit is not waited for.
        let waits = headers
            .get(EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if waits || length > (limit + DRAIN_BYTES) as u64 {
            return Err(());
        }
    }
    let mut stream = body.into_data_stream();
    let read = async {
        // One piece (the usual small body) is kept as it came, uncopied.
        let mut first = Bytes::new();
        let mut joined: Vec<u8> = Vec::new();
        let mut total = 0usize;
        while let Some(piece) = stream.next().await {
            let piece = piece.map_err(|_| ())?;
            total += piece.len();
            if total > limit {
                // Read on (and drop) what the client is still sending, so
                // that it reads the 413 (see DRAIN_BYTES).
                while let Some(Ok(piece)) = stream.next().await {
                    total += piece.len();
                    if total > limit + DRAIN_BYTES {
                        break;
                    }
                }
                return Err(());
            }
            if first.is_empty() && joined.is_empty() {
                first = piece;
            } else {
                if joined.is_empty() {
                    joined.extend_from_slice(&first);
                }
                joined.extend_from_slice(&piece);
            }
        }
        Ok(if joined.is_empty() {
            first
        } else {
            Bytes::from(joined)
        })
    };
    tokio::time::timeout(timeout, read).await.map_err(|_| ())?
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
        assert!(same_origin(&h, &[], "http").is_ok());
        assert!(same_origin(&h, &["https://console.example.com".into()], "http").is_err());
        h.insert(ORIGIN, "https://console.example.com".parse().unwrap());
        assert!(same_origin(&h, &["https://console.example.com".into()], "https").is_ok());
        assert!(same_origin(&h, &[], "https").is_err());
        h.insert(ORIGIN, "null".parse().unwrap());
        assert!(same_origin(&h, &[], "http").is_err());
    }

    #[test]
    fn the_origins_scheme_must_be_the_sites() {
        let mut h = HeaderMap::new();
        h.insert(HOST, "console.test".parse().unwrap());
        h.insert(ORIGIN, "http://console.test".parse().unwrap());
        assert!(same_origin(&h, &[], "http").is_ok());
        assert_eq!(
            same_origin(&h, &[], "https"),
            Err("the Origin's scheme is not the site's")
        );
        h.insert(ORIGIN, "HTTPS://Console.test".parse().unwrap());
        assert!(same_origin(&h, &[], "https").is_ok());
        assert!(same_origin(&h, &[], "http").is_err());
        // The allowed origins name their schemes themselves.
        let allowed = ["https://console.test".to_owned()];
        assert!(same_origin(&h, &allowed, "http").is_ok());
        h.insert(ORIGIN, "http://console.test".parse().unwrap());
        assert!(same_origin(&h, &allowed, "http").is_err());
    }

    #[tokio::test]
    async fn bodies_past_the_limit_are_refused_whatever_their_type() {
        let read = |body: Body, headers: HeaderMap| async move {
            read_body(&headers, body, 8, Duration::from_secs(5)).await
        };
        assert_eq!(
            read(Body::from("12345678"), HeaderMap::new()).await,
            Ok(Bytes::from("12345678"))
        );
        assert_eq!(
            read(Body::from("123456789"), HeaderMap::new()).await,
            Err(())
        );
        // In pieces, with no length said (chunked).
        let pieces = |n: usize| {
            Body::from_stream(futures::stream::iter(
                (0..n).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(b"abc"))),
            ))
        };
        assert_eq!(
            read(pieces(2), HeaderMap::new()).await,
            Ok(Bytes::from("abcabc"))
        );
        assert_eq!(read(pieces(3), HeaderMap::new()).await, Err(()));
        // A length past the limit from a client waiting to be told to go on.
        let mut waiting = HeaderMap::new();
        waiting.insert(CONTENT_LENGTH, "9".parse().unwrap());
        waiting.insert(EXPECT, "100-continue".parse().unwrap());
        assert_eq!(read(Body::from("123456789"), waiting).await, Err(()));
    }
}
