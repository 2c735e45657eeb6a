//! Logs, metrics and the OpenTelemetry export of turns, set up once per
//! process.

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};

use aics_service::TurnObserver;

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

/// The OpenTelemetry export of turns: with the `otel` feature, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
/// is set; otherwise nothing.
#[derive(Debug)]
pub struct Otel {
    #[cfg(feature = "otel")]
    export: Option<aics_otel::OtelExport>,
}

impl Otel {
    /// The export the environment asks for (inside the tokio runtime).
    pub fn from_env() -> anyhow::Result<Self> {
        #[cfg(feature = "otel")]
        {
            let export = aics_otel::OtelExport::from_env()?;
            if let Some(export) = &export {
                tracing::info!(
                    capture_content = export.capture_content(),
                    "exporting turns as OpenTelemetry spans (OTLP/HTTP)"
                );
            }
            Ok(Self { export })
        }
        #[cfg(not(feature = "otel"))]
        {
            if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
                || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            {
                tracing::warn!(
                    "an OTLP endpoint is set, but this binary was built without the `otel` \
                     feature: nothing is exported (cargo build --features otel)"
                );
            }
            Ok(Self {})
        }
    }

    /// The observer to build the console with, if exporting.
    pub fn observer(&self) -> Option<Arc<dyn TurnObserver>> {
        #[cfg(feature = "otel")]
        {
            self.export.as_ref().map(aics_otel::OtelExport::observer)
        }
        #[cfg(not(feature = "otel"))]
        {
            None
        }
    }

    /// Flushes the spans still queued (after the console's shutdown, so the
    /// last turns are in).
    pub async fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(export) = self.export {
            export.shutdown().await;
        }
    }
}
