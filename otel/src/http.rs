//! The OTLP exporter's HTTP client: the workspace's async `reqwest`
//! (rustls), so the export adds no second HTTP stack, and runs on the
//! server's tokio runtime with the batch processor.

use std::time::Duration;

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// How long one export may take (connect, send, read the answer).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Posts the exporter's requests with `reqwest`.
#[derive(Debug, Clone)]
pub struct ReqwestClient(reqwest::Client);

impl ReqwestClient {
    pub fn new() -> Result<Self, reqwest::Error> {
        reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map(Self)
    }
}

#[async_trait]
impl HttpClient for ReqwestClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await?;
        let mut answer = Response::builder().status(response.status());
        if let Some(headers) = answer.headers_mut() {
            *headers = response.headers().clone();
        }
        let bytes = response.bytes().await?;
        Ok(answer.body(bytes)?)
    }
}
