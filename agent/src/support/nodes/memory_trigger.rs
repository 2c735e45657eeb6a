//! `memory_trigger`: stores a memory instruction of the message ("remember
//! that …", "记住 …"), then loads the customer's memories for the prompt.

use std::sync::Arc;

use aics_graph::{Next, Node, NodeContext, NodeError};
use async_trait::async_trait;

use crate::support::agent::Shared;
use crate::support::heuristics::memory_instruction;
use crate::support::SupportState;

/// Remembers and recalls. A failing store is logged, never fatal: the
/// customer still gets an answer.
pub struct MemoryTrigger(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for MemoryTrigger {
    async fn run(
        &self,
        s: &mut SupportState,
        _: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        let owner = s.memory_owner().to_owned();
        if let Some(text) = memory_instruction(&s.user_message) {
            s.memory_triggered = true;
            if let Err(e) = self.0.memory.remember(&owner, &text).await {
                tracing::warn!(error = %e, "could not store a memory");
            }
        }
        s.memories = match self.0.memory.recall(&owner).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "could not load memories");
                Vec::new()
            }
        };
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::nodes::test_support::{ctx, shared};

    #[tokio::test]
    async fn an_instruction_is_stored_and_recalled() {
        let node = MemoryTrigger(shared(Default::default()));
        let mut s = SupportState {
            user_message: "remember that I live in Berlin".into(),
            ..SupportState::default()
        };
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert!(s.memory_triggered);
        assert_eq!(s.memories, ["I live in Berlin"]);
        s.user_message = "where is my order?".into();
        s.memory_triggered = false;
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert!(!s.memory_triggered);
        assert_eq!(s.memories, ["I live in Berlin"], "recalled in a later turn");
    }
}
