//! `GET /api/providers` (any signed-in staff member): the configured model
//! providers, the default one, and whether each answered the start-up
//! probe (docs/API.md).

use aics_service::Console;
use aics_types::ProviderInfo;
use axum::extract::State;
use axum::routing::get;
use axum::Router;

use crate::extract::Json;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/providers", get(list))
}

async fn list(State(console): State<Console>) -> Json<Vec<ProviderInfo>> {
    Json(console.providers())
}
