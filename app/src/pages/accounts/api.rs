//! The accounts page's server functions (supervisors; the service checks).

use aics_types::{Account, AuditEntry, IssuedPassword, Role};
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::UrlArgs;
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// Every account with its sign-in state.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_accounts() -> Result<Vec<Account>, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.list_accounts(&user).await?)
}

/// A new account; its generated password is answered this once.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn create_account(username: String, role: Role) -> Result<IssuedPassword, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console
        .create_account(&user, &aics_types::NewAccount { username, role })
        .await?)
}

/// Disables or re-enables an account.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn set_disabled(username: String, disabled: bool) -> Result<Account, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console
        .set_account_disabled(&user, &username, disabled)
        .await?)
}

/// A new generated password for someone else, answered this once.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn reset_password(username: String) -> Result<IssuedPassword, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.reset_password(&user, &username).await?)
}

/// Lifts a sign-in lock.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn unlock_account(username: String) -> Result<Account, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.unlock_account(&user, &username).await?)
}

/// The newest lines of the audit log.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn audit_log() -> Result<Vec<AuditEntry>, AppError> {
    let (console, user) = signed_in().await?;
    let query = aics_service::AuditQuery {
        limit: 50,
        ..aics_service::AuditQuery::default()
    };
    Ok(console.list_audit(&user, &query).await?)
}
