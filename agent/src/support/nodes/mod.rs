//! The nodes of the support graph, one file each, and what they share.
//!
//! ```text
//! START → init_state → memory_trigger → route → agent ─┬─(tool calls)──→ tools ─→ agent
//!                                                       ├─(sensitive call)→ approval (interrupt) ─→ tools
//!                                                       └─(no calls / stop)→ finalize → END
//! ```

mod agent;
mod approval;
mod finalize;
mod init_state;
mod memory_trigger;
mod route;
mod tools;

pub use agent::{loop_detected, new_call_id, Agent};
pub use approval::Approval;
pub use finalize::Finalize;
pub use init_state::InitState;
pub use memory_trigger::MemoryTrigger;
pub use route::Route;
pub use tools::Tools;

use aics_types::{SharedValue, ToolCallRecord, ToolCallStatus};

use crate::model::ToolCall;

pub const INIT_STATE: &str = "init_state";
pub const MEMORY_TRIGGER: &str = "memory_trigger";
pub const ROUTE: &str = "route";
pub const AGENT: &str = "agent";
pub const APPROVAL: &str = "approval";
pub const TOOLS: &str = "tools";
pub const FINALIZE: &str = "finalize";

/// A timeline entry for a call, stamped now.
pub(crate) fn record(
    call: &ToolCall,
    input: SharedValue,
    output: SharedValue,
    status: ToolCallStatus,
) -> ToolCallRecord {
    ToolCallRecord {
        id: call.id.clone(),
        name: call.name.clone(),
        input,
        output,
        status,
        timestamp: chrono::Utc::now(),
        duration_ms: None,
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::collections::HashMap;
    use std::sync::Arc;

    use aics_graph::{NoObserver, NodeContext};
    use serde_json::json;

    use crate::model::{Message, ToolCall};
    use crate::support::agent::Shared;
    use crate::support::{Decision, SupportConfig, SupportState};

    /// A state whose last message is an AI message with these calls.
    pub(crate) fn with_calls(calls: Vec<ToolCall>) -> SupportState {
        SupportState {
            messages: vec![
                Message::user("hi").into(),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: calls,
                }
                .into(),
            ],
            ..SupportState::default()
        }
    }

    /// A `ticket_create` call of this category.
    pub(crate) fn ticket(id: &str, category: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            provider_id: None,
            name: "ticket_create".into(),
            arguments: json!({"category": category, "summary": "s"}),
        }
    }

    pub(crate) fn shared(config: SupportConfig) -> Arc<Shared> {
        Arc::new(Shared {
            model: Arc::new(crate::demo::DemoModel::instant()),
            tools: crate::testing::fake_tools(),
            memory: Arc::new(crate::memory::InMemoryMemoryStore::default()),
            config,
        })
    }

    pub(crate) fn ctx<'a>(
        resume: Option<&'a HashMap<String, Decision>>,
    ) -> NodeContext<'a, SupportState> {
        NodeContext::detached("t", "n", resume, &NoObserver)
    }
}
