//! Replay sets (docs/API.md), supervisors only: `POST /api/replays`
//! saves a set (from turn ids or a filter), `GET /api/replays` lists them,
//! `POST /api/replays/preview` counts a filter's turns, `GET
//! /api/replays/{id}` reads one, `POST /api/replays/{id}/runs` starts a
//! replay run (202), `GET /api/replay-runs/{id}` reads it with its summary.

use aics_service::Console;
use aics_types::{
    NewReplaySet, ReplayFilter, ReplayOptions, ReplayPreview, ReplayRunInfo, ReplayRunReport,
    ReplaySet, ReplaySetSummary, UserInfo,
};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::error::HttpError;
use crate::extract::{Json, Path};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/replays", get(list).post(create))
        .route("/api/replays/preview", post(preview))
        .route("/api/replays/{id}", get(one))
        .route("/api/replays/{id}/runs", post(start))
        .route("/api/replay-runs/{id}", get(run))
}

async fn create(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Json(body): Json<NewReplaySet>,
) -> Result<(StatusCode, Json<ReplaySet>), HttpError> {
    let set = console.create_replay_set(&user, &body).await?;
    Ok((StatusCode::CREATED, Json(set)))
}

async fn list(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
) -> Result<Json<Vec<ReplaySetSummary>>, HttpError> {
    Ok(Json(console.list_replay_sets(&user).await?))
}

async fn preview(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Json(body): Json<ReplayFilter>,
) -> Result<Json<ReplayPreview>, HttpError> {
    Ok(Json(console.preview_replay_filter(&user, &body).await?))
}

async fn one(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(id): Path<String>,
) -> Result<Json<ReplaySet>, HttpError> {
    Ok(Json(console.replay_set(&user, &id).await?))
}

async fn start(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(id): Path<String>,
    Json(body): Json<ReplayOptions>,
) -> Result<(StatusCode, Json<ReplayRunInfo>), HttpError> {
    let run = console.start_replay(&user, &id, &body).await?;
    Ok((StatusCode::ACCEPTED, Json(run)))
}

async fn run(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(id): Path<String>,
) -> Result<Json<ReplayRunReport>, HttpError> {
    Ok(Json(console.replay_run(&user, &id).await?))
}
