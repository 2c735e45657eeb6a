//! The aics server: one binary that serves the console, its API and the agent.
//!
//! `main` only wires: configuration → telemetry → state → router → serve.
#![forbid(unsafe_code)]

use std::net::SocketAddr;

use anyhow::Context;
use app::{shell, App};
use axum::routing::get;
use axum::Router;
use leptos::config::get_configuration;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tracing_subscriber::EnvFilter;

mod api;
mod hub;
mod state;

use state::AppState;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("AICS_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();

    let conf = get_configuration(None).context("reading the Leptos configuration")?;
    let leptos_options = conf.leptos_options;
    let addr: SocketAddr = match std::env::var("AICS_ADDR") {
        Ok(text) => text
            .parse()
            .with_context(|| format!("AICS_ADDR is not a socket address: {text:?}"))?,
        Err(_) => leptos_options.site_addr,
    };

    let state = AppState::new(leptos_options.clone());
    let routes = generate_route_list(App);
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .merge(api::router())
        .leptos_routes(&state, routes, {
            let options = leptos_options.clone();
            move || shell(options.clone())
        })
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .with_state(state);

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    tracing::info!("aics serves http://{addr}");
    println!("aics is running: open http://{addr} in a browser");
    axum::serve(listener, router.into_make_service())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving")?;
    Ok(())
}
