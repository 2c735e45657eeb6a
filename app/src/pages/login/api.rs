//! The sign-in page's server function.

use aics_types::UserInfo;
use leptos::prelude::*;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::session::api::set_cookie;

/// Signs in and sets the session cookie.
#[server(prefix = "/fn")]
pub async fn login(username: String, password: String) -> Result<UserInfo, AppError> {
    let console = expect_context::<aics_service::Console>();
    let (user, cookie) = match console.login(username.trim(), &password).await {
        Ok(signed_in) => signed_in,
        Err(aics_service::ServiceError::Unauthorized) => {
            if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                response.set_status(axum::http::StatusCode::UNAUTHORIZED);
            }
            return Err(AppError {
                code: "unauthorized".into(),
                message: "Wrong username or password.".into(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    set_cookie(&cookie);
    Ok(user)
}
