//! Security headers on every answer: a Content-Security-Policy (HTML pages
//! allow their own scripts, the Leptos hydration script by a fresh nonce,
//! and WebAssembly; everything else nothing), `frame-ancestors 'none'`
//! (the customer chat, `/chat*`, may be framed by this server's pages and
//! the configured embed origins; `/widget.js` may be loaded cross-origin),
//! nosniff, Referrer-Policy, HSTS over HTTPS, and `Cache-Control: no-store`
//! on everything that carries data (pages, JSON, event streams, exports).
//!
//! The nonce is put in the request's extensions here as [`CspNonce`], and
//! made the first time it is read: by the Leptos render (see `crate::app`)
//! or by the header of an HTML answer, which therefore always agree. An
//! answer that is not a page (an API call) never makes one.

use std::sync::{Arc, OnceLock};

use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY,
    STRICT_TRANSPORT_SECURITY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

use crate::web::WebConfig;

/// The CSP nonce of one request: 128 random bits, hex, made on first read.
/// Clones share it.
#[derive(Debug, Clone, Default)]
pub struct CspNonce(Arc<OnceLock<String>>);

impl CspNonce {
    /// The nonce, the same at every call.
    pub fn get(&self) -> &str {
        self.0
            .get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
    }
}

/// What a non-HTML answer may load: nothing (and it may not be framed).
const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/// The policy of an HTML page with `nonce`.
pub fn page_csp(nonce: &str, reload_port: Option<u16>) -> String {
    // `cargo leptos watch` reloads the page over a WebSocket on its own port.
    let reload = reload_port
        .map(|port| format!(" ws://127.0.0.1:{port} ws://localhost:{port}"))
        .unwrap_or_default();
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'{reload}; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// The script a shop's page embeds the customer chat with.
pub const WIDGET_PATH: &str = "/widget.js";

/// A page policy that the customer pages use: framed by this server's own
/// pages and by `embed_origins` (the shop's), instead of by nobody.
pub fn framed_by(csp: &str, embed_origins: &[String]) -> String {
    let mut ancestors = String::from("frame-ancestors 'self'");
    for origin in embed_origins {
        ancestors.push(' ');
        ancestors.push_str(origin);
    }
    csp.replace("frame-ancestors 'none'", &ancestors)
}

/// Adds the headers of the module docs to every answer that lacks them.
pub async fn security_headers(
    State(web): State<Arc<WebConfig>>,
    mut request: Request,
    next: Next,
) -> Response {
    let nonce = CspNonce::default();
    request.extensions_mut().insert(nonce.clone());
    let path = request.uri().path();
    let customer_page = path == "/chat" || path.starts_with("/chat/");
    let widget = path == WIDGET_PATH;
    let mut response = next.run(request).await;
    let kind = content_kind(response.headers());
    let headers = response.headers_mut();
    // Only a page's policy is made per answer; the other values are
    // constants, set without a copy.
    let csp = match kind {
        Kind::Html if customer_page => HeaderValue::from_str(&framed_by(
            &page_csp(nonce.get(), web.reload_port),
            &web.embed_origins,
        )),
        Kind::Html => HeaderValue::from_str(&page_csp(nonce.get(), web.reload_port)),
        _ => Ok(HeaderValue::from_static(API_CSP)),
    };
    if let Ok(csp) = csp {
        set_default(headers, CONTENT_SECURITY_POLICY, csp);
    }
    set_default(
        headers,
        X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if !customer_page {
        // The customer pages say who may frame them in their CSP alone.
        set_default(headers, X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    if widget {
        // The shop's page loads the widget's script from here.
        set_default(
            headers,
            HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("cross-origin"),
        );
    }
    // Not `no-referrer`: with it a browser sends `Origin: null` on a plain
    // form post (the console before its script has loaded), which the
    // cross-site guard must refuse. Nothing leaves for other sites either
    // way.
    set_default(
        headers,
        REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    set_default(
        headers,
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    set_default(
        headers,
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    set_default(
        headers,
        HeaderName::from_static("permissions-policy"),
        HeaderValue::from_static("camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
    );
    if web.hsts {
        set_default(
            headers,
            STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    if kind != Kind::Asset {
        set_default(headers, CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    /// JSON, event streams, CSV, plain text (metrics), or no body type.
    Data,
    /// Scripts, wasm, styles, images, fonts: cacheable.
    Asset,
}

fn content_kind(headers: &HeaderMap) -> Kind {
    let Some(ct) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return Kind::Data;
    };
    let ct = ct.to_ascii_lowercase();
    if ct.starts_with("text/html") {
        Kind::Html
    } else if ct.starts_with("application/json")
        || ct.starts_with("text/event-stream")
        || ct.starts_with("text/csv")
        || ct.starts_with("text/plain")
        || ct.starts_with("application/x-www-form-urlencoded")
    {
        Kind::Data
    } else {
        Kind::Asset
    }
}

fn set_default(headers: &mut HeaderMap, name: HeaderName, value: HeaderValue) {
    if let axum::http::header::Entry::Vacant(entry) = headers.entry(name) {
        entry.insert(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_policy_allows_only_the_nonce_inline() {
        let csp = page_csp("abc123", None);
        assert!(csp.contains("script-src 'self' 'nonce-abc123' 'wasm-unsafe-eval';"));
        assert!(!csp.contains("unsafe-inline"));
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(!csp.contains("ws://"));
        assert!(page_csp("n", Some(3001)).contains("ws://127.0.0.1:3001"));
        let a = CspNonce::default();
        assert_eq!(a.get().len(), 32);
        assert_eq!(a.get(), a.clone().get(), "clones share it");
        assert_ne!(a.get(), CspNonce::default().get());
    }

    #[test]
    fn only_the_customer_pages_may_be_framed_and_only_by_the_embed_origins() {
        let csp = framed_by(&page_csp("n", None), &["https://shop.example".to_owned()]);
        assert!(
            csp.contains("frame-ancestors 'self' https://shop.example"),
            "{csp}"
        );
        assert!(!csp.contains("frame-ancestors 'none'"));
        assert!(page_csp("n", None).contains("frame-ancestors 'none'"));
    }

    #[test]
    fn kinds_by_content_type() {
        let kind = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(CONTENT_TYPE, ct.parse().unwrap());
            content_kind(&h)
        };
        assert_eq!(kind("text/html; charset=utf-8"), Kind::Html);
        assert_eq!(kind("application/json"), Kind::Data);
        assert_eq!(kind("text/event-stream"), Kind::Data);
        assert_eq!(kind("application/wasm"), Kind::Asset);
        assert_eq!(kind("text/javascript"), Kind::Asset);
        assert_eq!(content_kind(&HeaderMap::new()), Kind::Data);
    }
}
