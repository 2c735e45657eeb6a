//! The account page's server functions: one's own password and sessions.

use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
#[cfg(feature = "ssr")]
use crate::session::api::{set_cookie, signed_in};

/// Changes the signed-in user's password; their other sessions end.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn change_password(
    current_password: String,
    new_password: String,
) -> Result<(), AppError> {
    use leptos::server_fn::error::FromServerFnError;
    let (console, user) = signed_in().await?;
    let headers: axum::http::HeaderMap = leptos_axum::extract()
        .await
        .map_err(AppError::from_server_fn_error)?;
    let change = aics_types::PasswordChange {
        current_password,
        new_password,
    };
    Ok(console
        .change_own_password(&user, &headers, &change)
        .await?)
}

/// Ends every session of the signed-in user, this one too.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn sign_out_everywhere() -> Result<(), AppError> {
    let (console, user) = signed_in().await?;
    let cookie = console.sign_out_everywhere(&user).await?;
    set_cookie(&cookie);
    Ok(())
}
