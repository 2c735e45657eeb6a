//! The server functions the console calls, and their error type.
//!
//! Each one is thin: take the [`aics_service::Console`] from the context,
//! authenticate the request's cookie, then make one call into the service.
//! They are mounted by the server under `/fn/`.

use aics_types::{
    Approval, ApprovalDecision, ConversationDetail, ConversationSummary, ModelInfo, TurnDetail,
    UserInfo,
};
use leptos::prelude::*;
use leptos::server_fn::codec::{Json, JsonEncoding};
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// What a server function reports when it fails: the API's error code and a
/// sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppError {
    /// A stable code, as in the JSON API (`unauthorized`, `forbidden`, `conflict`, ...).
    pub code: String,
    pub message: String,
}

impl AppError {
    pub fn is_unauthorized(&self) -> bool {
        self.code == "unauthorized"
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        let message = match &value {
            ServerFnErrorErr::Request(_) => {
                "The server could not be reached. Check the connection and try again.".to_string()
            }
            other => other.to_string(),
        };
        Self {
            code: "internal".into(),
            message,
        }
    }
}

#[cfg(feature = "ssr")]
impl From<aics_service::ServiceError> for AppError {
    fn from(error: aics_service::ServiceError) -> Self {
        // The server-fn answer carries the same status as the JSON API would.
        if let (Some(response), Ok(status)) = (
            use_context::<leptos_axum::ResponseOptions>(),
            axum::http::StatusCode::from_u16(error.status_code()),
        ) {
            response.set_status(status);
        }
        let api = error.to_api_error();
        Self {
            code: api.error,
            message: api.message,
        }
    }
}

/// The signed-in user and the model answering, for the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub user: UserInfo,
    pub model: ModelInfo,
}

impl Session {
    pub fn is_supervisor(&self) -> bool {
        self.user.role == aics_types::Role::Supervisor
    }
}

/// The console service and the user the request's cookie belongs to.
#[cfg(feature = "ssr")]
async fn signed_in() -> Result<(aics_service::Console, UserInfo), AppError> {
    let console = expect_context::<aics_service::Console>();
    let headers: axum::http::HeaderMap = leptos_axum::extract()
        .await
        .map_err(AppError::from_server_fn_error)?;
    let user = console.authenticate(&headers).await?;
    Ok((console, user))
}

/// Who is signed in (`None` when nobody is), and the active model.
#[server(prefix = "/fn")]
pub async fn whoami() -> Result<Option<Session>, AppError> {
    match signed_in().await {
        Ok((console, user)) => Ok(Some(Session {
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

/// Signs out and clears the session cookie.
#[server(prefix = "/fn")]
pub async fn logout() -> Result<(), AppError> {
    let console = expect_context::<aics_service::Console>();
    let headers: axum::http::HeaderMap = leptos_axum::extract()
        .await
        .map_err(AppError::from_server_fn_error)?;
    let cookie = console.logout(&headers).await?;
    set_cookie(&cookie);
    Ok(())
}

#[cfg(feature = "ssr")]
fn set_cookie(value: &str) {
    if let Ok(value) = axum::http::HeaderValue::from_str(value) {
        expect_context::<leptos_axum::ResponseOptions>()
            .insert_header(axum::http::header::SET_COOKIE, value);
    }
}

/// Every conversation, newest first.
#[server(prefix = "/fn")]
pub async fn list_conversations() -> Result<Vec<ConversationSummary>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_conversations().await?)
}

/// Starts a new, empty conversation.
#[server(prefix = "/fn")]
pub async fn create_conversation() -> Result<ConversationSummary, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.create_conversation().await?)
}

/// One conversation with its messages and turn traces.
#[server(prefix = "/fn")]
pub async fn get_conversation(session_id: String) -> Result<ConversationDetail, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.conversation(&session_id).await?)
}

/// Stores the customer's message and starts the turn; its events arrive on
/// the conversation's event stream. Answers the graph execution id.
#[server(prefix = "/fn", input = Json)]
pub async fn send_message(session_id: String, message: String) -> Result<String, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.send_message(&user, &session_id, &message).await?)
}

/// The approvals waiting for a supervisor, oldest first.
#[server(prefix = "/fn")]
pub async fn pending_approvals() -> Result<Vec<Approval>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_approvals(true).await?)
}

/// The decided approvals (the audit trail), newest first.
#[server(prefix = "/fn")]
pub async fn decided_approvals() -> Result<Vec<Approval>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_approvals(false).await?)
}

/// A supervisor's decision; the paused turn resumes on the server.
#[server(prefix = "/fn", input = Json)]
pub async fn decide_approval(id: String, decision: ApprovalDecision) -> Result<Approval, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.decide(&user, &id, decision).await?)
}

/// One turn with its checkpoints, oldest first.
#[server(prefix = "/fn")]
pub async fn get_turn(graph_execution_id: String) -> Result<TurnDetail, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.turn_detail(&graph_execution_id).await?)
}
