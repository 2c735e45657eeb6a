//! `route`: the heuristic intent label of the message (no LLM call).

use aics_graph::{Next, Node, NodeContext, NodeError};
use async_trait::async_trait;

use crate::support::heuristics::classify_intent;
use crate::support::SupportState;

/// Labels the turn `consult`, `order`, `complaint` or `escalate`.
pub struct Route;

#[async_trait]
impl Node<SupportState> for Route {
    async fn run(
        &self,
        s: &mut SupportState,
        _: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        let intent = classify_intent(&s.user_message);
        tracing::debug!(intent = intent.as_str(), "routed");
        s.intent = Some(intent);
        Ok(Next::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::nodes::test_support::ctx;

    #[tokio::test]
    async fn it_labels_the_intent() {
        let mut s = SupportState {
            user_message: "转人工".into(),
            ..SupportState::default()
        };
        Route.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(s.intent, Some(aics_types::Intent::Escalate));
    }
}
