//! Who is signed in: the [`Session`] every page reads, loaded once per page
//! load, and the [`Authed`] guard that sends signed-out visitors to `/login`.

pub mod api;

use aics_types::{ModelInfo, UserInfo};
use leptos::prelude::*;
use leptos_router::components::Redirect;
use serde::{Deserialize, Serialize};

use crate::components::errors::{PageError, PageLoading};
use crate::error::AppError;
use crate::wire::{ready, resource, Resource};

/// The signed-in user and the model answering, for the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub user: UserInfo,
    pub model: ModelInfo,
    /// A supervisor set the password (a new account, a reset): the header
    /// asks the user to choose their own.
    #[serde(default)]
    pub must_change_password: bool,
}

impl Session {
    pub fn is_supervisor(&self) -> bool {
        self.user.role == aics_types::Role::Supervisor
    }
}

/// The signed-in session, loaded once by [`crate::App`]: sign-in and
/// sign-out reload the page, so it never goes stale within one load.
#[derive(Clone, Copy)]
pub struct SessionResource(pub Resource<Result<Option<Session>, AppError>>);

impl SessionResource {
    pub fn provide() {
        provide_context(Self(resource(|| (), |_| api::whoami())));
    }
}

/// Sends the browser to `path` with a full page load, so that every
/// resource is fetched again with the new cookie.
pub fn reload_to(path: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href(path);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = path;
}

/// Renders `children` with the signed-in [`Session`]; redirects to `/login`
/// when nobody is signed in (a real 302 when rendered on the server). On
/// the server the page is built once ([`crate::wire::ready`]).
#[component]
pub fn Authed<F, V>(children: F) -> impl IntoView
where
    F: Fn(Session) -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let session = expect_context::<SessionResource>().0;
    let children = StoredValue::new(children);
    view! {
        <Suspense fallback=|| view! { <PageLoading/> }>
            {move || Suspend::new(async move {
                match ready(session).await {
                    Ok(Some(session)) => children.with_value(|c| c(session)).into_any(),
                    Ok(None) => view! { <Redirect path="/login"/> }.into_any(),
                    Err(e) => view! { <PageError message=e.message/> }.into_any(),
                }
            })}
        </Suspense>
    }
}
