//! Logs and metrics set up once per process.

use std::io::IsTerminal;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{ConfigError, Settings};

/// Structured logs with tracing, one line per event with its fields as
/// `key=value`: `AICS_LOG` is the filter, `AICS_LOG_FORMAT=json` switches to
/// one JSON object per line. Colours only on a terminal, so that a log file
/// (`make run > aics.log`, the e2e server log) has no escape codes in it.
pub fn init_logs(settings: &Settings) -> Result<(), ConfigError> {
    let filter = EnvFilter::try_new(&settings.log).map_err(|e| ConfigError::Invalid {
        key: "log (AICS_LOG)",
        message: e.to_string(),
    })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal());
    // A second init (tests) keeps the first subscriber.
    let _ = if settings.log_format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    Ok(())
}

/// The process's Prometheus recorder, installed on first use; later calls
/// (several servers in one test process) share it.
pub fn metrics_handle() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("aics_turn_duration_seconds".into()),
                    &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0],
                )
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => Some(handle),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .clone()
}
