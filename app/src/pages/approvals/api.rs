//! The approvals' server functions. `decide_approval` is also what the
//! console's inline approval buttons call.

use aics_types::{Approval, ApprovalDecision};
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::{JsonArgs, UrlArgs};
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// The approvals waiting for a supervisor, oldest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn pending_approvals() -> Result<Vec<Approval>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_approvals(true).await?)
}

/// The decided approvals (the audit trail), newest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn decided_approvals() -> Result<Vec<Approval>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_approvals(false).await?)
}

/// A supervisor's decision; the paused turn resumes on the server. It
/// answers nothing: the queue reloads and the console follows the
/// conversation's events (the decided `Approval` would only put its decoder
/// into the console's wasm).
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn decide_approval(id: String, decision: ApprovalDecision) -> Result<(), AppError> {
    let (console, user) = signed_in().await?;
    console.decide(&user, &id, decision).await?;
    Ok(())
}

/// Supervisors: how many approvals wait (the header's live count).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn pending_approval_count() -> Result<i64, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.pending_approval_count(&user).await?)
}
