//! The support graph's cheap, deterministic judgements: intent labels,
//! memory instructions, the customer's language, order ids, and the
//! similarity test behind loop detection. No LLM call is spent on these.

use std::collections::HashSet;
use std::sync::LazyLock;

use aics_types::Intent;
use regex::Regex;

// The patterns are literals checked by the tests below; `expect` cannot fire
// at run time for a pattern that compiled once in a test.
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static ESCALATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(human|real person|live agent|a person|manager|supervisor|representative)(?-u:\b)|转人工|人工|真人|客服经理",
    )
});
static COMPLAINT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(complain\w*|complaint|unacceptable|terrible|angry|furious|disappointed|still not|never arrived|hasn'?t arrived|not arrived|haven'?t (received|got)|lost|late|delayed?)(?-u:\b)|投诉|不满|太差|一直没|没收到|还没到|没到|丢|延误|太慢",
    )
});
static ORDER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(order|orders|ord-?\d+|package|parcel|shipment|shipping|delivery|deliver|track\w*|refund)(?-u:\b)|订单|物流|快递|包裹|发货|退款",
    )
});
static ORDER_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)ORD-?(\d+)(?-u:\b)|(?-u:\b)order\s*(?:#|no\.?|number|id)?\s*[:#]?\s*(\d{2,})(?-u:\b)|订单\s*(?:号|编号)?\s*[:：#]?\s*(\d{2,})",
    )
});
static MEMORY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?-u:\b)(remember( that)?|please note( that)?|note that|my name is|i prefer|call me)(?-u:\b)|记住|请记得|记一下|记得我|我喜欢|我偏好|以后请|叫我",
    )
});
static MEMORY_LEAD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(please\s+)?(remember( that)?|note( that)?)\s*[,:]?\s*|^\s*(请)?(记住|记得|记一下)[，,:：]?\s*",
    )
});

/// Whether the text contains CJK ideographs: the customer writes Chinese.
pub fn is_chinese(text: &str) -> bool {
    text.chars().any(is_cjk)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF)
}

/// The route node's intent label: escalate beats complaint beats order.
pub fn classify_intent(message: &str) -> Intent {
    if ESCALATE.is_match(message) {
        Intent::Escalate
    } else if COMPLAINT.is_match(message) {
        Intent::Complaint
    } else if ORDER.is_match(message) || ORDER_ID.is_match(message) {
        Intent::Order
    } else {
        Intent::Consult
    }
}

/// Whether the customer asks for a person.
pub fn wants_human(message: &str) -> bool {
    ESCALATE.is_match(message)
}

/// Whether the message sounds like a complaint or a late/lost delivery.
pub fn sounds_like_complaint(message: &str) -> bool {
    COMPLAINT.is_match(message)
}

/// Whether the message is about orders, parcels or deliveries.
pub fn mentions_order(message: &str) -> bool {
    ORDER.is_match(message)
}

/// The order id the message names, normalised: "ORD-123", "order 123",
/// "订单123" all give `ORD-123`.
pub fn extract_order_id(message: &str) -> Option<String> {
    let caps = ORDER_ID.captures(message)?;
    let digits = caps.iter().skip(1).flatten().next()?.as_str();
    Some(format!("ORD-{digits}"))
}

/// The memory to store when the message is a memory instruction
/// ("remember that …", "记住 …", "please note …", "I prefer …"): the
/// sentence that holds the instruction, without its lead words.
pub fn memory_instruction(message: &str) -> Option<String> {
    let found = MEMORY.find(message)?;
    // The sentence around the match: from the previous sentence end to the next.
    let is_end = |c: char| matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n');
    let start = message[..found.start()]
        .char_indices()
        .rev()
        .find(|&(_, c)| is_end(c))
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    let end = message[found.end()..]
        .char_indices()
        .find(|&(_, c)| is_end(c))
        .map(|(i, _)| found.end() + i)
        .unwrap_or(message.len());
    let sentence = message[start..end].trim();
    let text = MEMORY_LEAD.replace(sentence, "").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn tokens(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut word = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.insert(std::mem::take(&mut word));
            }
            out.insert(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.insert(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.insert(word);
    }
    out
}

/// Jaccard similarity of the word sets of two texts, 0.0 ..= 1.0.
pub fn similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.is_empty() && tb.is_empty() {
        return 1.0;
    }
    let inter = ta.intersection(&tb).count() as f64;
    let union = ta.union(&tb).count() as f64;
    inter / union
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_follow_the_seed_labels() {
        assert_eq!(
            classify_intent("订单123一直没到，我要投诉"),
            Intent::Complaint
        );
        assert_eq!(classify_intent("Where is my order ORD-5?"), Intent::Order);
        assert_eq!(
            classify_intent("What is your return policy?"),
            Intent::Consult
        );
        assert_eq!(
            classify_intent("I want to talk to a human"),
            Intent::Escalate
        );
        assert_eq!(classify_intent("转人工"), Intent::Escalate);
        assert_eq!(
            classify_intent("Hi, my order ORD-123 hasn't arrived yet"),
            Intent::Complaint
        );
    }

    #[test]
    fn order_ids_are_normalised() {
        assert_eq!(
            extract_order_id("order 123 is late").as_deref(),
            Some("ORD-123")
        );
        assert_eq!(
            extract_order_id("订单123一直没到").as_deref(),
            Some("ORD-123")
        );
        assert_eq!(extract_order_id("订单号：456").as_deref(), Some("ORD-456"));
        assert_eq!(extract_order_id("see ord-77").as_deref(), Some("ORD-77"));
        assert_eq!(extract_order_id("ORD123").as_deref(), Some("ORD-123"));
        assert_eq!(extract_order_id("hello there"), None);
    }

    #[test]
    fn memory_instructions_in_both_languages() {
        assert_eq!(
            memory_instruction("Hi. Please remember that I prefer email. Thanks").as_deref(),
            Some("I prefer email")
        );
        assert_eq!(
            memory_instruction("记住我只在周末收货。").as_deref(),
            Some("我只在周末收货")
        );
        assert_eq!(
            memory_instruction("please note my flat is on floor 3").as_deref(),
            Some("my flat is on floor 3")
        );
        assert_eq!(memory_instruction("Where is my parcel?"), None);
    }

    #[test]
    fn similarity_is_jaccard_over_words() {
        assert_eq!(similarity("{\"a\":1}", "{\"a\":1}"), 1.0);
        assert!(similarity("order ORD-1 delayed", "order ORD-1 delayed now") > 0.7);
        assert!(similarity("order ORD-1", "ticket TCK-9") < 0.2);
        assert!(is_chinese("订单") && !is_chinese("order"));
    }
}
