//! How an answer leaves the demo model: cut into stream tokens the way an
//! LLM streams them, and counted as token usage.

use aics_types::TokenUsage;

use crate::model::{Message, ModelRequest};
use crate::support::heuristics::is_chinese;

/// Splits an answer into stream tokens: a word with its trailing space, or
/// two CJK characters (with the punctuation after them). Each token is
/// copied out of `text` once, at its size.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(text.len() / 4 + 1);
    // Where the token being read starts.
    let mut start = 0;
    let mut cjk_run = 0;
    for (i, c) in text.char_indices() {
        let cjk = is_chinese(c.encode_utf8(&mut [0; 4]));
        if cjk {
            if cjk_run == 0 && start < i && !text[start..i].ends_with(' ') {
                // Latin text glued to Chinese: cut before the ideograph.
                out.push(text[start..i].to_owned());
                start = i;
            }
            if cjk_run == 2 {
                out.push(text[start..i].to_owned());
                start = i;
                cjk_run = 0;
            }
            cjk_run += 1;
        } else if c == ' ' {
            out.push(text[start..=i].to_owned());
            start = i + 1;
            cjk_run = 0;
        } else if cjk_run > 0 && c.is_alphanumeric() {
            out.push(text[start..i].to_owned());
            start = i;
            cjk_run = 0;
        }
    }
    if start < text.len() {
        out.push(text[start..].to_owned());
    }
    out
}

/// The usage of one call: about four characters of prompt per token, one
/// token per streamed chunk.
pub fn usage(request: &ModelRequest, completion: usize) -> TokenUsage {
    let prompt_chars: usize = request
        .messages
        .iter()
        .map(|m| match &**m {
            Message::System { content }
            | Message::User { content }
            | Message::Tool { content, .. } => content.len(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| json_len(&c.arguments))
                        .sum::<usize>()
            }
        })
        .sum::<usize>()
        + request
            .tools
            .iter()
            .map(|t| json_len(&t.parameters) + t.description.len())
            .sum::<usize>();
    let prompt = (prompt_chars / 4).max(1) as u64;
    let completion = completion as u64;
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
    }
}

/// The length of `value`'s JSON text, counted as it is written rather
/// than written into a string first (every call counts every tool's
/// schema).
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing into a counter cannot fail, nor can a `Value` refuse.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_splits_words_and_character_pairs() {
        assert_eq!(tokenize("Hello big world"), ["Hello ", "big ", "world"]);
        assert_eq!(
            tokenize("您的订单 ORD-1 已签收。"),
            ["您的", "订单 ", "ORD-1 ", "已签", "收。"]
        );
        assert_eq!(tokenize("").len(), 0);
        assert_eq!(
            tokenize("两个字 then 中文字x y"),
            ["两个", "字 ", "then ", "中文", "字", "x ", "y"]
        );
        assert_eq!(tokenize("  a"), [" ", " ", "a"]);
    }

    #[test]
    fn json_len_is_the_length_of_the_text() {
        let v = serde_json::json!({"order_id": "ORD-1", "n": [1, 2.5, null], "名": "李伟"});
        assert_eq!(json_len(&v), v.to_string().len());
    }

    #[test]
    fn usage_counts_the_prompt_and_the_chunks() {
        let request = ModelRequest::new(vec![Message::user("x".repeat(40))]);
        let u = usage(&request, 3);
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (10, 3, 13)
        );
    }
}
