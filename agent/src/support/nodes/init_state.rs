//! `init_state`: resets the per-turn fields.

use std::sync::Arc;

use aics_graph::{Next, Node, NodeContext, NodeError};
use async_trait::async_trait;

use crate::support::agent::Shared;
use crate::support::SupportState;

/// Resets the step counter, the limit and the stop flag of the turn.
pub struct InitState(pub(crate) Arc<Shared>);

#[async_trait]
impl Node<SupportState> for InitState {
    async fn run(
        &self,
        s: &mut SupportState,
        _: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        s.current_step = 0;
        s.max_steps = self.0.config.max_tool_loops;
        s.stop = false;
        s.stop_reason = None;
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::nodes::test_support::{ctx, shared};
    use crate::support::SupportConfig;

    #[tokio::test]
    async fn it_resets_the_turn() {
        let node = InitState(shared(SupportConfig {
            max_tool_loops: 3,
            ..Default::default()
        }));
        let mut s = SupportState {
            current_step: 9,
            stop: true,
            ..SupportState::default()
        };
        node.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!((s.current_step, s.max_steps, s.stop), (0, 3, false));
    }
}
