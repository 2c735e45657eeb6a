//! The turn page's server function.

use aics_types::TurnDetail;
use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// One turn with its checkpoints, oldest first.
#[server(prefix = "/fn")]
pub async fn get_turn(graph_execution_id: String) -> Result<TurnDetail, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.turn_detail(&graph_execution_id).await?)
}
