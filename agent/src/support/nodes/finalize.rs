//! `finalize`: the reply (the last AI message without calls; an explanation
//! when it is empty and a stop reason exists; never longer than
//! [`MAX_REPLY_BYTES`]) and the turn's metadata.

use aics_graph::{Next, Node, NodeContext, NodeError};
use aics_types::StopReason;
use async_trait::async_trait;

use crate::llm::{cap_reply, MAX_REPLY_BYTES};
use crate::model::Message;
use crate::support::heuristics::is_chinese;
use crate::support::replies::explanatory_reply;
use crate::support::{Progress, SupportState};

/// Ends the turn with its reply.
pub struct Finalize;

#[async_trait]
impl Node<SupportState> for Finalize {
    async fn run(
        &self,
        s: &mut SupportState,
        ctx: &NodeContext<'_, SupportState>,
    ) -> Result<Next, NodeError> {
        let mut reply = match s.turn_messages().last().map(|m| &**m) {
            Some(Message::Assistant {
                content,
                tool_calls,
            }) if tool_calls.is_empty() => content.trim().to_owned(),
            _ => String::new(),
        };
        // The model call caps what it keeps; this holds for a reply from
        // anywhere else too (a state checkpointed before the cap existed).
        cap_reply(&mut reply, MAX_REPLY_BYTES);
        let reason = *s.stop_reason.get_or_insert(StopReason::FinalAnswer);
        s.final_reply = if reply.is_empty() {
            let text = explanatory_reply(reason, is_chinese(&s.user_message));
            // Nothing streamed for it yet: show it like a reply.
            ctx.progress(Progress::Token(text.clone()));
            text
        } else {
            reply
        };
        s.elapsed_ms += ctx.started.elapsed().as_millis() as u64;
        Ok(Next::End)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::nodes::test_support::ctx;

    #[tokio::test]
    async fn the_reply_is_the_last_answer_trimmed() {
        let mut s = SupportState {
            messages: vec![
                Message::user("x").into(),
                Message::assistant("  The answer. ").into(),
            ],
            ..SupportState::default()
        };
        let next = Finalize.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(next, Next::End);
        assert_eq!(s.final_reply, "The answer.");
        assert_eq!(s.stop_reason, Some(StopReason::FinalAnswer));
    }

    #[tokio::test]
    async fn a_huge_answer_is_capped() {
        let mut s = SupportState {
            messages: vec![
                Message::user("x").into(),
                Message::assistant("la ".repeat(3_000_000)).into(),
            ],
            ..SupportState::default()
        };
        Finalize.run(&mut s, &ctx(None)).await.unwrap();
        assert!(s.final_reply.ends_with(crate::llm::CUT_MARKER));
        assert!(s.final_reply.len() <= MAX_REPLY_BYTES + crate::llm::CUT_MARKER.len());
        assert_eq!(s.stop_reason, Some(StopReason::FinalAnswer));
    }

    #[tokio::test]
    async fn an_empty_answer_gets_the_explanation_of_its_stop_reason() {
        let mut s = SupportState {
            user_message: "你好".into(),
            messages: vec![Message::user("你好").into()],
            stop_reason: Some(StopReason::LoopDetected),
            ..SupportState::default()
        };
        Finalize.run(&mut s, &ctx(None)).await.unwrap();
        assert_eq!(
            s.final_reply,
            explanatory_reply(StopReason::LoopDetected, true)
        );
    }
}
