//! The one state struct every handler shares.

use std::sync::Arc;

use aics_service::Console;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::watch;

/// What every handler may read ([`Shared`]), behind one `Arc`: axum clones
/// the state with the service that holds it for every request (once per
/// route layer), and a clone of the fields themselves touched eight shared
/// counters (the Leptos options' five `Arc`s among them), then dropped them
/// again.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The fields of [`AppState`]; handlers extract each one by its type
/// (`State<Console>`, …) or read them through the state.
pub struct Shared {
    pub leptos_options: LeptosOptions,
    pub console: Console,
    /// Renders `/metrics`; `None` when no recorder is installed.
    pub metrics: Option<PrometheusHandle>,
    /// Turns `true` when the server shuts down, ending the open event streams
    /// (otherwise a graceful shutdown would wait for them forever).
    pub shutdown: watch::Receiver<bool>,
}

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for Console {
    fn from_ref(state: &AppState) -> Self {
        state.console.clone()
    }
}

impl FromRef<AppState> for Option<PrometheusHandle> {
    fn from_ref(state: &AppState) -> Self {
        state.metrics.clone()
    }
}

impl FromRef<AppState> for watch::Receiver<bool> {
    fn from_ref(state: &AppState) -> Self {
        state.shutdown.clone()
    }
}
