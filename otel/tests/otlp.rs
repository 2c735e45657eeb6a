//! The OTLP exporter really posts: a stub collector on a local port (real
//! TCP, no network) receives the protobuf spans of a real turn, flushed by
//! the export's shutdown.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use aics_db::Database;
use aics_otel::OtelExport;
use aics_service::{Console, ConsoleConfig};
use aics_types::{Role, UserInfo};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message;
use sqlx::SqlitePool;

/// What the stub collector received: each request's content type and body.
type Received = Arc<Mutex<Vec<(String, Bytes)>>>;

async fn collector() -> (String, Received) {
    let received: Received = Arc::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |headers: HeaderMap, body: Bytes| {
            let store = store.clone();
            async move {
                let kind = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                store.lock().unwrap().push((kind, body));
                (
                    StatusCode::OK,
                    [("content-type", "application/x-protobuf")],
                    Bytes::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1/traces"), received)
}

#[sqlx::test(migrations = false)]
async fn the_exporter_posts_protobuf_spans_and_flushes_on_shutdown(pool: SqlitePool) {
    let (endpoint, received) = collector().await;
    let export = OtelExport::start(Some(&endpoint), false).unwrap();
    assert!(!export.capture_content());
    let db = Database::from(pool);
    db.migrate().await.unwrap();
    db.seed().await.unwrap();
    let console = Console::with_observer(db, ConsoleConfig::for_tests(), export.observer())
        .await
        .unwrap();
    let agent = UserInfo {
        username: "agent".into(),
        role: Role::Agent,
    };
    let trace = console
        .chat(&agent, "otlp-1", "Has my order ORD-124 shipped yet?")
        .await
        .unwrap();
    // The batch is not due yet: nothing is posted before the flush.
    export.shutdown().await;

    let requests = received.lock().unwrap().clone();
    assert!(!requests.is_empty(), "the collector got nothing");
    let mut names = Vec::new();
    for (kind, body) in &requests {
        assert_eq!(kind, "application/x-protobuf");
        let request = ExportTraceServiceRequest::decode(body.clone()).unwrap();
        for resource in &request.resource_spans {
            let service = resource
                .resource
                .as_ref()
                .unwrap()
                .attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref()?.value.clone());
            if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
                assert_eq!(service, Some(any_value::Value::StringValue("aics".into())));
            }
            for scope in &resource.scope_spans {
                assert_eq!(scope.scope.as_ref().unwrap().name, "aics");
                for span in &scope.spans {
                    if span.name == "invoke_agent support" {
                        let turn = span
                            .attributes
                            .iter()
                            .find(|kv| kv.key == "aics.turn.id")
                            .and_then(|kv| kv.value.as_ref()?.value.clone());
                        assert_eq!(
                            turn,
                            Some(any_value::Value::StringValue(
                                trace.graph_execution_id.clone()
                            ))
                        );
                    }
                    names.push(span.name.clone());
                }
            }
        }
    }
    names.sort();
    let mut expected: Vec<String> =
        std::iter::repeat_n("chat demo".to_owned(), trace.llm_call_records.len())
            .chain([
                "execute_tool order_query".to_owned(),
                "invoke_agent support".to_owned(),
            ])
            .collect();
    expected.sort();
    assert_eq!(names, expected);
}
