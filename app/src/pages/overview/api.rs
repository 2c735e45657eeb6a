//! The overview page's server function (supervisors; the service checks).

use aics_types::Overview;
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// The overview of the last `days` days.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn get_overview(days: u32) -> Result<Overview, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.overview(&user, Some(days)).await?)
}
