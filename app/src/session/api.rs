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
    let authenticate = || async { Ok(console.authenticate(&headers).await?) };
    let user = match use_context::<RequestUser>() {
        Some(once) => once.get_or_find(authenticate).await?,
        None => authenticate().await?,
    };
    Ok((console, user))
}

/// The user one request is signed in as, looked up once: a page rendered
/// on the server calls several server functions (a conversation's page:
/// the session, the inbox, the conversation), and each one's
/// [`signed_in`] would look the session up again. The server provides a
/// fresh one to each request; a failure is not kept (the next call tries
/// again).
#[cfg(feature = "ssr")]
#[derive(Clone, Default)]
pub struct RequestUser(std::sync::Arc<tokio::sync::OnceCell<aics_types::UserInfo>>);

#[cfg(feature = "ssr")]
impl RequestUser {
    async fn get_or_find<F, Fut>(&self, find: F) -> Result<aics_types::UserInfo, AppError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<aics_types::UserInfo, AppError>>,
    {
        self.0.get_or_try_init(find).await.cloned()
    }
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

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use aics_types::{Role, UserInfo};

    use super::*;

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            role: Role::Agent,
        }
    }

    /// The calls of one request share one lookup, even at once; a failed
    /// lookup is tried again; another request looks up its own.
    #[tokio::test]
    async fn a_request_looks_its_user_up_once() {
        let lookups = AtomicUsize::new(0);
        let find = || async {
            lookups.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Ok(alice())
        };
        let request = RequestUser::default();
        let (a, b) = tokio::join!(request.get_or_find(find), request.get_or_find(find));
        assert_eq!((a.expect("a"), b.expect("b")), (alice(), alice()));
        assert_eq!(request.get_or_find(find).await.expect("again"), alice());
        assert_eq!(lookups.load(Ordering::SeqCst), 1);

        RequestUser::default()
            .get_or_find(find)
            .await
            .expect("another");
        assert_eq!(lookups.load(Ordering::SeqCst), 2);

        let failing = RequestUser::default();
        let refused = failing
            .get_or_find(|| async {
                lookups.fetch_add(1, Ordering::SeqCst);
                Err(AppError::from(aics_service::ServiceError::Unauthorized))
            })
            .await;
        assert!(refused.expect_err("refused").is_unauthorized());
        assert_eq!(failing.get_or_find(find).await.expect("then"), alice());
        assert_eq!(lookups.load(Ordering::SeqCst), 4);
    }
}
