//! The one state struct every handler shares.

use aics_service::Console;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::watch;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub console: Console,
    /// Renders `/metrics`; `None` when no recorder is installed.
    pub metrics: Option<PrometheusHandle>,
    /// Turns `true` when the server shuts down, ending the open event streams
    /// (otherwise a graceful shutdown would wait for them forever).
    pub shutdown: watch::Receiver<bool>,
}
