//! The replays page's server functions (supervisors; the service checks).

use aics_types::{
    NewReplaySet, ReplayFilter, ReplayOptions, ReplayPreview, ReplayRunInfo, ReplayRunReport,
    ReplaySet, ReplaySetSummary,
};
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::{JsonArgs, UrlArgs};
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// The replay sets, newest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_replay_sets() -> Result<Vec<ReplaySetSummary>, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.list_replay_sets(&user).await?)
}

/// How many stored turns a filter matches.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn preview_replay(filter: ReplayFilter) -> Result<ReplayPreview, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.preview_replay_filter(&user, &filter).await?)
}

/// Saves a replay set.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn create_replay_set(request: NewReplaySet) -> Result<ReplaySet, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.create_replay_set(&user, &request).await?)
}

/// One replay set with its runs.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn get_replay_set(id: String) -> Result<ReplaySet, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.replay_set(&user, &id).await?)
}

/// Starts a replay run of a set.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn start_replay(
    set_id: String,
    options: ReplayOptions,
) -> Result<ReplayRunInfo, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.start_replay(&user, &set_id, &options).await?)
}

/// A replay run and its summary.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn get_replay_run(id: String) -> Result<ReplayRunReport, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.replay_run(&user, &id).await?)
}
