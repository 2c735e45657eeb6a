//! The trace studio's forks (docs/API.md), supervisors only:
//! `POST /api/turns/{id}/forks` starts one (202 with its id),
//! `GET /api/turns/{id}/forks` lists a turn's forks, `GET /api/forks/{id}`
//! reads one.

use aics_service::Console;
use aics_types::{ForkRequest, ForkStarted, StudioRun, UserInfo};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Extension, Router};

use crate::error::HttpError;
use crate::extract::Json;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/turns/{graph_execution_id}/forks",
            get(list).post(start),
        )
        .route("/api/forks/{id}", get(one))
}

async fn start(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(graph_execution_id): Path<String>,
    Json(body): Json<ForkRequest>,
) -> Result<(StatusCode, Json<ForkStarted>), HttpError> {
    let run = console.fork_turn(&user, &graph_execution_id, &body).await?;
    Ok((StatusCode::ACCEPTED, Json(ForkStarted { id: run.id })))
}

async fn list(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(graph_execution_id): Path<String>,
) -> Result<Json<Vec<StudioRun>>, HttpError> {
    Ok(Json(console.list_forks(&user, &graph_execution_id).await?))
}

async fn one(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(id): Path<String>,
) -> Result<Json<StudioRun>, HttpError> {
    Ok(Json(console.fork(&user, &id).await?))
}
