//! The OpenTelemetry export of aics turns (the server's `otel` feature).
//!
//! When `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, [`OtelExport::from_env`] builds an OTLP exporter over
//! HTTP/protobuf (the workspace's `reqwest`, no gRPC), a batch span
//! processor on the tokio runtime, and a [`GenAiObserver`] the server builds
//! its console with (`aics_service::Console::with_observer`): each stored
//! run segment of a turn becomes spans of the GenAI semantic conventions
//! (`invoke_agent support`, `chat {model}`, `execute_tool {tool}`, approvals
//! as events; see [`spans`]). [`OtelExport::shutdown`] flushes what is
//! queued when the server stops.
//!
//! Message content (prompts, replies, reasoning, tool arguments and
//! results, free-text reasons) is off by default; it is recorded with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. The standard
//! `OTEL_*` variables apply otherwise: `OTEL_SERVICE_NAME` (default `aics`),
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED`.
//!
//! - [`spans`]: the observer and its spans.
//! - [`content`]: message content in the conventions' JSON shapes.
//! - [`http`]: the exporter's HTTP client.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod content;
pub mod http;
pub mod spans;

use std::sync::Arc;
use std::time::Duration;

use aics_service::TurnObserver;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::runtime;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

pub use spans::GenAiObserver;

/// The instrumentation scope of the spans.
pub const SCOPE: &str = "aics";

/// How long [`OtelExport::shutdown`] waits for the last spans to go out.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the export could not be set up (the server does not start then:
/// the operator asked for it).
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    #[error("OpenTelemetry: the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error("OpenTelemetry: the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// The running export: its tracer provider and the observer that feeds it.
#[derive(Debug)]
pub struct OtelExport {
    provider: SdkTracerProvider,
    observer: Arc<GenAiObserver>,
    capture_content: bool,
}

impl OtelExport {
    /// The export the environment asks for: `None` unless an OTLP endpoint
    /// is set (and `OTEL_SDK_DISABLED` is not `true`). Call it inside the
    /// tokio runtime (the batch processor runs on it).
    pub fn from_env() -> Result<Option<Self>, OtelError> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let disabled =
            std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        if disabled
            || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        {
            return Ok(None);
        }
        Self::start(None, content::capture_from_env()).map(Some)
    }

    /// The export to `endpoint` (the full traces URL, e.g.
    /// `http://127.0.0.1:4318/v1/traces`; `None`: from the environment).
    pub fn start(endpoint: Option<&str>, capture_content: bool) -> Result<Self, OtelError> {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_http_client(http::ReqwestClient::new()?);
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let exporter = builder.build()?;
        let processor = BatchSpanProcessor::builder(exporter, runtime::Tokio).build();
        let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ));
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("aics");
        }
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource.build())
            .build();
        let observer = Arc::new(GenAiObserver::new(provider.tracer(SCOPE), capture_content));
        Ok(Self {
            provider,
            observer,
            capture_content,
        })
    }

    /// The observer to build the console with.
    pub fn observer(&self) -> Arc<dyn TurnObserver> {
        self.observer.clone()
    }

    /// Whether message content is recorded.
    pub fn capture_content(&self) -> bool {
        self.capture_content
    }

    /// Exports what is queued and stops (waiting at most a few seconds for
    /// an unreachable collector).
    pub async fn shutdown(self) {
        let provider = self.provider;
        // The SDK's shutdown blocks until the batch is exported.
        let done = tokio::task::spawn_blocking(move || provider.shutdown());
        match tokio::time::timeout(SHUTDOWN_GRACE, done).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => {
                tracing::warn!(error = %e, "OpenTelemetry: the last spans were not exported")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "OpenTelemetry: the shutdown failed"),
            Err(_) => {
                tracing::warn!("OpenTelemetry: the collector did not take the last spans in time")
            }
        }
    }
}
