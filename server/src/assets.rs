//! The client bundle on the wire: `/pkg/*` (the wasm, its JS glue and the
//! stylesheet) served from the site root with the brotli and gzip copies the
//! release build writes beside each file (`cargo leptos build --release
//! --precompress`), chosen by the request's `Accept-Encoding`.
//!
//! A release build names each bundle file by its content hash
//! (`hash-files` in Cargo.toml's Leptos metadata; the hashes are in
//! `hash.txt` beside the server binary), so a name never changes meaning and
//! the files are cached for a year, `immutable`. Without hashes (a debug
//! build, `cargo leptos watch`) they are revalidated on every use.
//!
//! Everything else the server answers is compressed on the fly by
//! [`compression`] when the client accepts it and the body is worth it; event
//! streams never (so that tokens are not held back in a compressor's
//! buffer): their routes bypass the compressor altogether, whose body
//! (about 6 KB, boxed) every open stream would otherwise keep for nothing.

use std::path::{Path, PathBuf};
use std::task::{Context, Poll};

use axum::http::header::{CACHE_CONTROL, VARY};
use axum::http::{HeaderValue, Request, Response};
use axum::Router;
use futures::future::BoxFuture;
use leptos::config::LeptosOptions;
use tower::layer::layer_fn;
use tower::{Layer, Service, ServiceExt};
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

/// `Cache-Control` of a content-hashed bundle file.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// `Cache-Control` of a bundle file whose name does not change with it.
pub const REVALIDATE: &str = "no-cache";

/// Whether this build's bundle has content-hashed names: the
/// `LEPTOS_HASH_FILES` variable when cargo-leptos runs the server, otherwise
/// whether the build left its `hash.txt` beside the running binary (the
/// file Leptos reads the names from).
pub fn hashed_bundle(options: &LeptosOptions) -> bool {
    if let Ok(value) = std::env::var("LEPTOS_HASH_FILES") {
        return value == "true";
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(options.hash_file.as_ref())))
        .is_some_and(|path| path.is_file())
}

/// The router of `/{site_pkg_dir}`: precompressed files, cached by name.
pub fn router<S: Clone + Send + Sync + 'static>(options: &LeptosOptions) -> Router<S> {
    let dir = pkg_dir(options);
    let cache = HeaderValue::from_static(if options.hash_files {
        IMMUTABLE
    } else {
        REVALIDATE
    });
    let files = ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .append_index_html_on_directories(false);
    Router::new().nest_service(
        &format!("/{}", options.site_pkg_dir.trim_matches('/')),
        tower::ServiceBuilder::new()
            // Which copy was sent depends on Accept-Encoding: caches must know.
            .layer(SetResponseHeaderLayer::if_not_present(
                VARY,
                HeaderValue::from_static("accept-encoding"),
            ))
            // Only what was found: a 404 stays `no-store` (crate::headers).
            .layer(SetResponseHeaderLayer::overriding(
                CACHE_CONTROL,
                move |response: &Response<_>| response.status().is_success().then(|| cache.clone()),
            ))
            .service(files),
    )
}

/// On-the-fly compression of the other answers (pages, JSON, CSV), past
/// the event streams' routes ([`crate::middleware::is_event_stream`]).
pub fn compression<S>() -> impl Layer<S, Service = Compress<S>> + Clone
where
    S: Clone,
{
    layer_fn(|inner: S| Compress {
        compressed: CompressionLayer::new()
            .br(true)
            .gzip(true)
            .layer(inner.clone()),
        plain: inner,
    })
}

/// The service of [`compression`].
#[derive(Clone)]
pub struct Compress<S> {
    compressed: tower_http::compression::Compression<S>,
    plain: S,
}

impl<S, B> Service<Request<axum::body::Body>> for Compress<S>
where
    S: Service<Request<axum::body::Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: axum::body::HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError> + Send,
{
    type Response = Response<axum::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Each call drives a clone to readiness itself (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<axum::body::Body>) -> Self::Future {
        if crate::middleware::is_event_stream(request.uri().path()) {
            let plain = self.plain.clone().oneshot(request);
            Box::pin(async move { Ok(plain.await?.map(axum::body::Body::new)) })
        } else {
            let compressed = self.compressed.clone().oneshot(request);
            Box::pin(async move { Ok(compressed.await?.map(axum::body::Body::new)) })
        }
    }
}

fn pkg_dir(options: &LeptosOptions) -> PathBuf {
    Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref())
}
