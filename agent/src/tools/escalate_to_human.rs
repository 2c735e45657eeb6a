//! `escalate_to_human`: hands the conversation to a person.

use std::sync::Arc;

use aics_types::HandlingState;
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::backend::SupportBackend;
use super::check_text;
use crate::tool::{ToolContext, ToolError, TypedTool};

/// `escalate_to_human`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalateArgs {
    /// Why a person should take over.
    pub reason: String,
}

/// Puts the conversation in the "waiting for human" state.
pub struct EscalateToHuman(pub Arc<dyn SupportBackend>);

#[async_trait]
impl TypedTool for EscalateToHuman {
    type Args = EscalateArgs;
    const NAME: &'static str = "escalate_to_human";
    const DESCRIPTION: &'static str =
        "Hand the conversation to a human support agent, with the reason. \
         Use it when the customer asks for a person or the case is beyond the tools.";

    async fn run(&self, ctx: &ToolContext, args: EscalateArgs) -> Result<Value, ToolError> {
        let reason = check_text("reason", &args.reason)?;
        if ctx.session_id.is_empty() {
            return Err(ToolError::InvalidArguments(
                "escalate_to_human needs the conversation's session".into(),
            ));
        }
        self.0
            .escalate(&ctx.session_id, ctx.customer_id.as_deref(), &reason)
            .await?;
        Ok(json!({
            "status": HandlingState::WaitingHuman.as_str(),
            "session_id": ctx.session_id,
            "reason": reason,
            "message": "A human support agent will take over this conversation.",
        }))
    }
}
