//! The sentences the support graph says itself: the explanation when a turn
//! ended without an answer, and what a rejected call returns to the model.

use aics_types::StopReason;

/// The text a rejected call returns to the model.
pub fn denied_text(reason: &str) -> String {
    format!("denied by supervisor: {reason}")
}

/// The reply when the turn ended without one, in the customer's language.
pub fn explanatory_reply(reason: StopReason, chinese: bool) -> String {
    match (reason, chinese) {
        (StopReason::LoopDetected, false) => "I noticed I was repeating the same lookup without learning anything new, so I stopped here. A colleague can take a closer look — could you tell me a little more about what you need?".into(),
        (StopReason::LoopDetected, true) => "我发现自己在重复同样的查询却没有新的结果，所以先停下来了。请再补充一些信息，或由人工客服进一步处理。".into(),
        (StopReason::ToolLoopLimit, false) => "I reached the limit of lookups I can do for one message. Here is what I know so far; a colleague can follow up on the rest.".into(),
        (StopReason::ToolLoopLimit, true) => "本轮查询次数已达上限。以上是目前掌握的信息，其余部分将由同事跟进。".into(),
        (StopReason::Error, false) => "Sorry, something went wrong on our side while preparing the answer. Please try again in a moment.".into(),
        (StopReason::Error, true) => "抱歉，生成回复时系统出现了问题，请稍后再试。".into(),
        (_, false) => "Sorry, I could not produce an answer this time. Please rephrase your question or ask for a colleague.".into(),
        (_, true) => "抱歉，这次没能给出答复。请换个说法，或要求转人工。".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::heuristics::is_chinese;

    #[test]
    fn explanations_exist_for_every_stop_reason_in_both_languages() {
        for reason in [
            StopReason::LoopDetected,
            StopReason::ToolLoopLimit,
            StopReason::Error,
            StopReason::FinalAnswer,
        ] {
            assert!(!explanatory_reply(reason, false).is_empty());
            assert!(is_chinese(&explanatory_reply(reason, true)));
        }
        assert_eq!(denied_text("dup"), "denied by supervisor: dup");
    }
}
