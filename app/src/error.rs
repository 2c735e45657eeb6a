//! What a server function reports when it fails, for every page.

use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

use crate::wire::JsonStrEncoding;

/// A failed server function: the API's error code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppError {
    /// A stable code, as in the JSON API (`unauthorized`, `forbidden`, `conflict`, ...).
    pub code: String,
    pub message: String,
}

impl AppError {
    pub fn is_unauthorized(&self) -> bool {
        self.code == "unauthorized"
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

impl FromServerFnError for AppError {
    type Encoder = JsonStrEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        let message = match &value {
            ServerFnErrorErr::Request(_) => {
                "The server could not be reached. Check the connection and try again.".to_string()
            }
            other => other.to_string(),
        };
        Self {
            code: "internal".into(),
            message,
        }
    }
}

#[cfg(feature = "ssr")]
impl From<aics_service::ServiceError> for AppError {
    fn from(error: aics_service::ServiceError) -> Self {
        // The server-fn answer carries the same status as the JSON API would.
        if let (Some(response), Ok(status)) = (
            leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
            axum::http::StatusCode::from_u16(error.status_code()),
        ) {
            response.set_status(status);
            if let Some(secs) = error.retry_after_secs() {
                response.insert_header(axum::http::header::RETRY_AFTER, secs.into());
            }
        }
        let api = error.to_api_error();
        Self {
            code: api.error,
            message: api.message,
        }
    }
}
