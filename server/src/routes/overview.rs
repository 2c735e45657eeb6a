//! `GET /api/overview?days=N`: the supervisors' overview (docs/API.md).

use aics_service::Console;
use aics_types::{Overview, UserInfo};
use axum::extract::State;
use axum::routing::get;
use axum::{Extension, Router};
use serde::Deserialize;

use crate::error::HttpError;
use crate::extract::{Json, Query};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/overview", get(overview))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverviewQuery {
    #[serde(default)]
    days: Option<u32>,
}

async fn overview(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Query(query): Query<OverviewQuery>,
) -> Result<Json<Overview>, HttpError> {
    Ok(Json(console.overview(&user, query.days).await?))
}
