//! The server functions every page shares: who is signed in, signing
//! out, the configured model providers; and the helpers the pages' server functions authenticate with.

use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
use crate::session::Session;

/// The console service and the user the request's cookie belongs to: the
/// first step of every server function that needs a user.
#[cfg(feature = "ssr")]
pub(crate) async fn signed_in() -> Result<(aics_service::Console, aics_types::UserInfo), AppError> {
    use leptos::server_fn::error::FromServerFnError;
    let console = expect_context::<aics_service::Console>();
    let headers: axum::http::HeaderMap = leptos_axum::extract()
        .await
        .map_err(AppError::from_server_fn_error)?;
    let user = console.authenticate(&headers).await?;
    Ok((console, user))
}

/// Sets (or, with an expired value, clears) the session cookie.
#[cfg(feature = "ssr")]
pub(crate) fn set_cookie(value: &str) {
    if let Ok(value) = axum::http::HeaderValue::from_str(value) {
        expect_context::<leptos_axum::ResponseOptions>()
            .insert_header(axum::http::header::SET_COOKIE, value);
    }
}

/// Who is signed in (`None` when nobody is), and the active model.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn whoami() -> Result<Option<Session>, AppError> {
    match signed_in().await {
        Ok((console, user)) => Ok(Some(Session {
            must_change_password: console.must_change_password(&user).await?,
            user,
            model: console.model_info(),
        })),
        Err(e) if e.is_unauthorized() => {
            // Nobody signed in is an answer here, not an error.
            if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                response.set_status(axum::http::StatusCode::OK);
            }
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The configured model providers and whether each was reachable at
/// start-up (the header's status, the fork form's choice).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_providers() -> Result<Vec<aics_types::ProviderInfo>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.providers())
}

/// Signs out and clears the session cookie.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn logout() -> Result<(), AppError> {
    use leptos::server_fn::error::FromServerFnError;
    let console = expect_context::<aics_service::Console>();
    let headers: axum::http::HeaderMap = leptos_axum::extract()
        .await
        .map_err(AppError::from_server_fn_error)?;
    let cookie = console.logout(&headers).await?;
    set_cookie(&cookie);
    Ok(())
}
