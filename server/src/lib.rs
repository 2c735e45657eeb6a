//! The aics server: the console's web app, its JSON/SSE API and the
//! operations endpoints, over one [`aics_service::Console`].
//!
//! # Layout
//! - [`config`]: the operator's settings (TOML file + `AICS_*` variables).
//! - [`telemetry`]: logs (text or JSON), the Prometheus recorder, the
//!   OpenTelemetry export of turns (feature `otel`).
//! - [`state`]: [`state::AppState`], the one state struct.
//! - [`routes`]: the API of docs/API.md, one module per area with its `router()`.
//! - [`web`]: [`web::WebConfig`], the wire policy (hosts, origins, proxies,
//!   metrics access, HSTS, body limits).
//! - [`headers`]: CSP with a per-request nonce, the other security headers,
//!   `no-store`.
//! - [`guards`]: the host allowlist, the client address, the cross-site
//!   guard, control characters refused.
//! - [`middleware`]: the auth layer, the per-user stream cap, JSON error
//!   bodies, the request counter.
//! - [`assets`]: the client bundle, precompressed and cached by its hashed
//!   names, and compression of everything else.
//! - [`serve`]: the accept loop with connection cap and timeouts.
//! - [`error`], [`extract`]: the HTTP error and the extractors that reject with it.
//! - [`app`] (this file): the whole router, Leptos pages and server
//!   functions (`/fn/*`) included.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod assets;
pub mod config;
pub mod error;
pub mod extract;
pub mod guards;
pub mod headers;
pub mod middleware;
pub mod routes;
pub mod serve;
pub mod state;
pub mod telemetry;
pub mod web;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::HeaderName;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use leptos::prelude::{provide_context, use_context};
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::guards::Guards;
use crate::headers::CspNonce;
use crate::state::AppState;
use crate::web::WebConfig;

/// The request id header, set when the client sent none.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application: API, operations, Leptos pages and server
/// functions, behind the security headers, the host allowlist, the
/// cross-site guard, the control-character check, the body limit and
/// timeout, request ids and tracing.
pub fn app(state: AppState, web: WebConfig) -> Router {
    let body_limit = web.body_limit;
    let web = Arc::new(web);
    let guards = Guards {
        web: web.clone(),
        console: state.console.clone(),
    };
    let console = state.console.clone();
    let context = move || {
        provide_context(console.clone());
        provide_context(app::session::api::RequestUser::default());
        // The page's inline hydration script carries the nonce the CSP
        // header names (both made by `headers::security_headers`).
        if let Some(parts) = use_context::<axum::http::request::Parts>() {
            if let Some(nonce) = parts.extensions.get::<CspNonce>() {
                provide_context(leptos::nonce::Nonce::from_value(nonce.get().to_owned()));
            }
        }
    };
    let routes = generate_route_list(app::App);
    let shell = {
        let options = state.leptos_options.clone();
        move || app::shell(options.clone())
    };
    let server_fns = {
        let context = context.clone();
        move |request: Request<Body>| {
            let context = context.clone();
            async move {
                leptos_axum::handle_server_fns_with_context(context, request)
                    .await
                    .into_response()
            }
        }
    };
    Router::new()
        .merge(routes::ops::router())
        .merge(routes::api_router(&state))
        // Server functions read their bodies themselves, past axum's
        // DefaultBodyLimit: the same limit is enforced on the stream here.
        .route(
            "/fn/{*fn_name}",
            get(server_fns.clone())
                .post(server_fns)
                .layer(RequestBodyLimitLayer::new(body_limit)),
        )
        .merge(assets::router(&state.leptos_options))
        .leptos_routes_with_context(&state, routes, context.clone(), shell)
        .fallback(leptos_axum::file_and_error_handler_with_context::<
            AppState,
            _,
        >(context, app::shell))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(assets::compression())
                .layer(
                    TraceLayer::new_for_http().make_span_with(|request: &Request<Body>| {
                        let id = request
                            .headers()
                            .get(REQUEST_ID)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-");
                        tracing::info_span!(
                            "request",
                            request_id = %id,
                            method = %request.method(),
                            path = %request.uri().path(),
                        )
                    }),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(axum::middleware::from_fn_with_state(
                    web.clone(),
                    headers::security_headers,
                ))
                .layer(axum::middleware::from_fn(middleware::count_requests))
                .layer(axum::middleware::from_fn_with_state(guards, guards::guard))
                .layer(axum::Extension(web))
                .layer(DefaultBodyLimit::max(body_limit)),
        )
        .with_state(state)
}

/// How long a graceful shutdown waits for running turns by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);
