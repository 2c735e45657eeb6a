//! The overview page's server function (supervisors; the service checks).

use aics_types::Overview;
use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;
use crate::wire::JsonStr;

/// The overview of the last `days` days.
#[server(prefix = "/fn", output = JsonStr)]
pub async fn get_overview(days: u32) -> Result<Overview, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.overview(&user, Some(days)).await?)
}
