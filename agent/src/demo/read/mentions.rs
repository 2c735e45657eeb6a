//! The order and ticket ids a text names, and in what sense: stated as a
//! fact, given as an example ("for example ORD-123"), or reported unknown
//! ("I couldn't find an order ORD-999"); and the replies' questions and
//! offers that the next message may answer.

use std::sync::LazyLock;

use regex::Regex;

use super::re;
use crate::support::heuristics::extract_order_id;

pub(super) static TICKET_ID: LazyLock<Regex> = LazyLock::new(|| re(r"\bTCK-[0-9A-Za-z]+\b"));

/// Every order the text names, with the byte offset of its digits.
pub(super) fn order_mentions(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    while let Some(id) = extract_order_id(&text[offset..]) {
        let digits = &id["ORD-".len()..];
        let Some(at) = digit_run(&text[offset..], digits) else {
            break;
        };
        out.push((id.clone(), offset + at));
        offset += at + digits.len();
    }
    out
}

/// Where `digits` stands alone (not inside a longer number) in `text`.
fn digit_run(text: &str, digits: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    text.match_indices(digits).map(|(i, _)| i).find(|&i| {
        let before = i.checked_sub(1).map(|b| bytes[b]);
        let after = bytes.get(i + digits.len()).copied();
        !before.is_some_and(|b| b.is_ascii_digit()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}

pub(super) fn dedup(ids: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The text before `at`, up to `n` characters.
fn before(text: &str, at: usize, n: usize) -> &str {
    let head = &text[..at];
    let start = head
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    &head[start..]
}

/// The sentence around byte `at`.
pub(super) fn sentence_at(text: &str, at: usize) -> &str {
    let is_end = |c: char| matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n');
    let start = text[..at]
        .char_indices()
        .rev()
        .find(|&(_, c)| is_end(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[at..]
        .char_indices()
        .find(|&(_, c)| is_end(c))
        .map_or(text.len(), |(i, _)| at + i);
    &text[start..end]
}

/// "(for example ORD-123)": an id given as an example.
pub(super) fn is_example(text: &str, at: usize) -> bool {
    let lead = before(text, at, 20).to_lowercase();
    ["example", "e.g.", "such as", "例如", "比如"]
        .iter()
        .any(|k| lead.contains(k))
}

/// "I couldn't find an order ORD-999": an id the assistant reported unknown.
pub(super) fn reported_unknown(text: &str, at: usize) -> bool {
    let s = sentence_at(text, at).to_lowercase();
    [
        "couldn't find",
        "could not find",
        "can't find",
        "no order",
        "doesn't exist",
        "does not exist",
        "没有找到",
        "未找到",
        "找不到",
        "查不到",
        "不存在",
    ]
    .iter()
    .any(|k| s.contains(k))
}

/// The assistant asked which order, or for the order number.
pub fn asked_for_order(reply: &str) -> bool {
    ["order number", "which order", "订单号", "哪个订单"]
        .iter()
        .any(|k| reply.to_lowercase().contains(k))
}

/// The order named in the sentence of a reply that offers a complaint.
pub(super) fn offer_order(reply: &str) -> Option<String> {
    let at = reply
        .find("open a complaint")
        .or_else(|| reply.find("提交投诉"))?;
    let sentence = sentence_at(reply, at);
    order_mentions(sentence).into_iter().next().map(|m| m.0)
}

/// The assistant offered to open a complaint.
pub fn offered_complaint(reply: &str) -> bool {
    reply.contains("open a complaint") || reply.contains("提交投诉")
}

/// A message that only answers a question: ids, filler words, punctuation.
pub(super) fn is_bare(message: &str) -> bool {
    let mut rest = message.to_lowercase();
    for (id, _) in order_mentions(message) {
        rest = rest.replace(&id.to_lowercase(), " ");
    }
    for filler in [
        "订单号",
        "订单",
        "我的",
        "是",
        "号",
        "呢",
        "还有",
        "那",
        "谢谢",
        "ord",
        "order",
        "number",
        "it's",
        "it is",
        "its",
        "my",
        "the",
        "here",
        "is",
        "and",
        "what about",
        "how about",
        "thanks",
        "sorry",
        "不好意思",
        "抱歉",
        "对不起",
    ] {
        rest = rest.replace(filler, " ");
    }
    rest.chars()
        .all(|c| !c.is_alphanumeric() || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_order_a_message_names_is_found_once() {
        let ids = |t: &str| dedup(order_mentions(t).into_iter().map(|m| m.0));
        assert_eq!(
            ids("ORD-123 and order 124, 订单125"),
            ["ORD-123", "ORD-124", "ORD-125"]
        );
        assert_eq!(ids("I have 12 items in order 12"), ["ORD-12"]);
        assert_eq!(ids("hello"), Vec::<String>::new());
    }
}
