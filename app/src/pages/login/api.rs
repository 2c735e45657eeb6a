//! The sign-in page's server function.

use aics_types::UserInfo;
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
#[cfg(feature = "ssr")]
use crate::session::api::set_cookie;

/// Signs in and sets the session cookie. Throttled like the JSON API, by
/// username and by the client address the server worked out; a throttled
/// attempt answers 429 with `Retry-After` and says how long to wait.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn login(username: String, password: String) -> Result<UserInfo, AppError> {
    let console = expect_context::<aics_service::Console>();
    let client = leptos_axum::extract::<axum::Extension<aics_service::ClientAddr>>()
        .await
        .map(|axum::Extension(client)| client)
        .unwrap_or_default();
    let (user, cookie) = match console.sign_in(&username, &password, client).await {
        Ok(signed_in) => (signed_in.user, signed_in.set_cookie),
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
