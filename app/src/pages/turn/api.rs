//! The turn page's server functions: the turn, and its forks.

use aics_types::TurnDetail;
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// One turn with its checkpoints, oldest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn get_turn(graph_execution_id: String) -> Result<TurnDetail, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.turn_detail(&graph_execution_id).await?)
}

/// Supervisors only: starts a fork of the turn from one checkpoint; an
/// empty `message`, `protocol` or `provider` keeps the turn's. The fork's id.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn start_fork(
    graph_execution_id: String,
    checkpoint_id: String,
    message: String,
    protocol: String,
    provider: String,
) -> Result<String, AppError> {
    let (console, user) = signed_in().await?;
    let some = |s: String| Some(s).filter(|s| !s.trim().is_empty());
    let request = aics_types::ForkRequest {
        checkpoint_id,
        message: some(message),
        engine: None,
        protocol: some(protocol),
        provider: some(provider),
    };
    Ok(console
        .fork_turn(&user, &graph_execution_id, &request)
        .await?
        .id)
}

/// Supervisors only: the turn's forks, newest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_forks(
    graph_execution_id: String,
) -> Result<Vec<aics_types::StudioRun>, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.list_forks(&user, &graph_execution_id).await?)
}
