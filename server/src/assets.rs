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
//! Nothing under a name that starts with a dot is served ([`is_hidden`]):
//! the site root holds the build's own files too (`.client-inputs`, the
//! stamp of what the bundle was built from), and the router's fallback
//! would serve any file there. The guards answer such a path 404 before any
//! handler runs (`crate::guards`).
//!
//! Everything else the server answers is compressed on the fly by
//! [`compression`] when the client accepts it and the body is worth it; event
//! streams never (so that tokens are not held back in a compressor's
//! buffer): their routes bypass the compressor altogether, whose body
//! (about 6 KB, boxed) every open stream would otherwise keep for nothing.

use std::path::{Path, PathBuf};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::header::{CACHE_CONTROL, VARY};
use axum::http::{HeaderValue, Request, Response};
use axum::BoxError;
use axum::Router;
use futures::future::{Either, MapOk};
use futures::TryFutureExt;
use leptos::config::LeptosOptions;
use tower::layer::layer_fn;
use tower::{Layer, Service};
use tower_http::compression::{
    Compression, CompressionBody, CompressionLayer, DefaultPredicate, ResponseFuture,
};
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

/// Whether `path` (a request's path, percent-decoded) names a dotfile or
/// something in a dot-directory: a segment that starts with `.`. None is
/// the site's; `..` never reaches a file either.
pub fn is_hidden(path: &str) -> bool {
    path.split(['/', '\\'])
        .any(|segment| segment.starts_with('.'))
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

/// The service of [`compression`]: each request goes to one of the two
/// services, each with its own clone of the inner one.
#[derive(Clone)]
pub struct Compress<S> {
    compressed: Compression<S>,
    plain: S,
}

/// A response with its body as axum's `Body` (boxed once, as the router
/// would box it anyway).
type ToBody<B> = fn(Response<B>) -> Response<Body>;

fn to_body<B>(response: Response<B>) -> Response<Body>
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    response.map(Body::new)
}

impl<S, B> Service<Request<Body>> for Compress<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError> + Send,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Either<
        MapOk<S::Future, ToBody<B>>,
        MapOk<ResponseFuture<S::Future, DefaultPredicate>, ToBody<CompressionBody<B>>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Either may take the next request.
        std::task::ready!(self.plain.poll_ready(cx))?;
        self.compressed.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if crate::middleware::is_event_stream(request.uri().path()) {
            Either::Left(self.plain.call(request).map_ok(to_body as ToBody<B>))
        } else {
            Either::Right(self.compressed.call(request).map_ok(to_body as _))
        }
    }
}

fn pkg_dir(options: &LeptosOptions) -> PathBuf {
    Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_names_are_hidden() {
        for path in [
            "/.client-inputs",
            "/.git/config",
            "/pkg/.hidden.wasm",
            "/a/../b",
            "/pkg\\.x",
        ] {
            assert!(is_hidden(path), "{path}");
        }
        for path in [
            "/",
            "/pkg/aics.0123abcd.wasm",
            "/chat/abc",
            "/favicon.ico",
            "/a.b/c.",
        ] {
            assert!(!is_hidden(path), "{path}");
        }
    }
}
