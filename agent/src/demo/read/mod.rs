//! What a request says, read the way a support agent reads a conversation:
//! this turn's customer message and its language, what the customer wants
//! (a bare "ORD-123" or "yes" answers the assistant's last question), which
//! order or ticket "it" means in the earlier turns, this turn's tool results,
//! the customer's memories, and which tools may be called.
//!
//! Earlier turns reach the model as plain user and assistant messages (the
//! service stores no tool traffic in the history), so references are
//! resolved from what was said: ids the customer named, and ids the
//! assistant stated as facts — not the ones it gave as an example or
//! reported as unknown.
//!
//! # Layout
//! - this file: [`Reading`], the request read once, and what it refers to.
//! - [`results`]: this turn's tool results ([`Observation`], [`Failure`]).
//! - [`mentions`]: the order and ticket ids a text names, and in what sense.
//! - [`wants`]: what a message asks for (tracking, a refund, a policy…).

mod mentions;
mod results;
mod wants;

use regex::Regex;

use crate::model::{Message, ModelRequest};
use crate::support::heuristics::{is_chinese, mentions_order, sounds_like_complaint};
use crate::support::prompt::{MEMORY_HEADING, PLAN_MARKER};

pub use mentions::offered_complaint;
use mentions::{
    asked_for_order, dedup, is_bare, is_example, offer_order, order_mentions, reported_unknown,
    TICKET_ID,
};
pub use results::{Failure, Observation};
pub use wants::{asks_policy, asks_tracking, explicit_complaint, files_as_inquiry, wants_refund};
use wants::{AFFIRMATIVE, ARRIVED, SHIPPED, TICKET_REF, WHEN};

// The patterns are literals checked by the tests of each module; `expect`
// cannot fire at run time for a pattern that compiled once in a test.
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

/// The customer's language; a reply never mixes the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

/// Which orders the customer's message is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Orders {
    /// The message is not about an order.
    NotAsked,
    /// It is about an order, but none was ever named.
    Missing,
    /// The orders this message names.
    Named(Vec<String>),
    /// "it", "the order": the one order named earlier.
    Earlier(String),
    /// "it" while the last turn that named orders named several.
    Ambiguous(Vec<String>),
}

impl Orders {
    /// The orders to look up.
    pub fn ids(&self) -> &[String] {
        match self {
            Self::Named(ids) => ids,
            Self::Earlier(id) => std::slice::from_ref(id),
            _ => &[],
        }
    }
}

/// What the customer asks about an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// "Has it arrived?", "它到了吗"
    Arrived,
    /// "Has it shipped yet?", "发货了吗"
    Shipped,
    /// "When will it come?", "什么时候到"
    When,
    /// "Where is it?", tracking
    Where,
    /// Anything else: its status.
    Status,
}

/// One earlier message of the conversation.
#[derive(Debug, Clone)]
struct Said {
    by_customer: bool,
    text: String,
}

/// A request, read.
#[derive(Debug, Clone)]
pub struct Reading {
    /// This turn's customer message.
    pub message: String,
    /// What the customer wants this turn: the message, and when it is a bare
    /// answer to the assistant's question for an order number, the message
    /// that question answered.
    pub intent: String,
    pub lang: Lang,
    /// The customer said yes to the assistant's offer to open a complaint.
    pub accepted_complaint: bool,
    /// The order that offer named.
    offered_order: Option<String>,
    /// Tool results since the customer's message.
    pub observations: Vec<Observation>,
    /// The customer's memories from the system prompt.
    pub memories: Vec<String>,
    /// The JSON-plan protocol: the model writes its plan as text.
    pub plan_mode: bool,
    /// Tools may be called this call.
    pub planning: bool,
    tools: Vec<String>,
    /// Earlier messages, newest first.
    earlier: Vec<Said>,
}

impl Reading {
    pub fn new(request: &ModelRequest) -> Self {
        let system = request
            .messages
            .iter()
            .filter_map(|m| match &**m {
                Message::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(**m, Message::User { .. }));
        let message = match last_user.map(|i| &*request.messages[i]) {
            Some(Message::User { content }) => content.clone(),
            _ => String::new(),
        };
        let earlier: Vec<Said> = request.messages[..last_user.unwrap_or(0)]
            .iter()
            .rev()
            .filter_map(|m| match &**m {
                Message::User { content } => Some(Said {
                    by_customer: true,
                    text: content.clone(),
                }),
                Message::Assistant { content, .. } if !content.trim().is_empty() => Some(Said {
                    by_customer: false,
                    text: content.clone(),
                }),
                _ => None,
            })
            .collect();
        let plan_mode = request.tools.is_empty() && system.contains(PLAN_MARKER);
        let tools = if plan_mode {
            plan_tools(&system)
        } else {
            request.tools.iter().map(|t| t.name.clone()).collect()
        };
        let last_reply = earlier.iter().find(|s| !s.by_customer).map(|s| &s.text);
        let accepted_complaint =
            AFFIRMATIVE.is_match(&message) && last_reply.is_some_and(|r| offered_complaint(r));
        let offered_order = last_reply
            .filter(|_| accepted_complaint)
            .and_then(|r| offer_order(r));
        let intent = intent(&message, &earlier);
        Self {
            lang: language(&message, &earlier).unwrap_or(Lang::En),
            observations: results::observations(request, last_user.unwrap_or(0), &system),
            memories: memories(&system),
            planning: !tools.is_empty(),
            plan_mode,
            tools,
            intent,
            accepted_complaint,
            offered_order,
            message,
            earlier,
        }
    }

    pub fn zh(&self) -> bool {
        self.lang == Lang::Zh
    }

    /// Whether the model may call `tool` now.
    pub fn can(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }

    /// Which orders this turn is about.
    pub fn orders(&self) -> Orders {
        let named: Vec<String> = dedup(order_mentions(&self.message).into_iter().map(|m| m.0));
        if !named.is_empty() {
            return Orders::Named(named);
        }
        if let Some(id) = &self.offered_order {
            return Orders::Earlier(id.clone());
        }
        let explicit = mentions_order(&self.intent)
            || sounds_like_complaint(&self.intent)
            || wants_refund(&self.intent);
        if !(explicit || self.accepted_complaint || self.question() != Question::Status) {
            return Orders::NotAsked;
        }
        // "Has it shipped?" is about an order even when none was named (or
        // the one named did not exist); "when are you open?" is not.
        let about_a_parcel = matches!(
            self.question(),
            Question::Arrived | Question::Shipped | Question::Where
        );
        match self.earlier_orders().as_slice() {
            [] if explicit || about_a_parcel => Orders::Missing,
            [] => Orders::NotAsked,
            [one] => Orders::Earlier(one.clone()),
            many => Orders::Ambiguous(many.to_vec()),
        }
    }

    /// The orders of the newest earlier message that named any, without
    /// examples and without ids the assistant reported as unknown.
    fn earlier_orders(&self) -> Vec<String> {
        let unknown: Vec<String> = self
            .earlier
            .iter()
            .filter(|s| !s.by_customer)
            .flat_map(|s| {
                order_mentions(&s.text)
                    .into_iter()
                    .filter(|(_, at)| reported_unknown(&s.text, *at))
                    .map(|m| m.0)
                    .collect::<Vec<_>>()
            })
            .collect();
        self.earlier
            .iter()
            .map(|s| {
                dedup(
                    order_mentions(&s.text)
                        .into_iter()
                        .filter(|(id, at)| !unknown.contains(id) && !is_example(&s.text, *at))
                        .map(|m| m.0),
                )
            })
            .find(|ids| !ids.is_empty())
            .unwrap_or_default()
    }

    /// The ticket the customer asks after: one this message names, or "that
    /// ticket" — the newest one named earlier.
    pub fn ticket_asked_after(&self) -> Option<String> {
        if let Some(m) = TICKET_ID.find(&self.message) {
            return Some(m.as_str().to_owned());
        }
        if !TICKET_REF.is_match(&self.message) || !order_mentions(&self.message).is_empty() {
            return None;
        }
        self.earlier
            .iter()
            .find_map(|s| TICKET_ID.find_iter(&s.text).last())
            .map(|m| m.as_str().to_owned())
    }

    /// The ticket an earlier reply opened for this order, if any.
    pub fn ticket_for(&self, order_id: &str) -> Option<String> {
        self.earlier
            .iter()
            .filter(|s| !s.by_customer)
            .filter(|s| order_mentions(&s.text).iter().any(|(id, _)| id == order_id))
            .find_map(|s| TICKET_ID.find(&s.text))
            .map(|m| m.as_str().to_owned())
    }

    /// What the customer asks about the order.
    pub fn question(&self) -> Question {
        let m = &self.message;
        if WHEN.is_match(m) {
            Question::When
        } else if ARRIVED.is_match(m) && !sounds_like_complaint(m) {
            Question::Arrived
        } else if SHIPPED.is_match(m) {
            Question::Shipped
        } else if asks_tracking(m) {
            Question::Where
        } else {
            Question::Status
        }
    }

    /// Whether the customer's memories ask for updates by email.
    pub fn prefers_email(&self) -> bool {
        self.memories.iter().any(|m| {
            let m = m.to_lowercase();
            m.contains("email") || m.contains("邮件")
        })
    }
}

/// The tools a JSON-plan prompt offers (`- name: description`).
fn plan_tools(system: &str) -> Vec<String> {
    let Some(section) = system.split("### Tools you may call").nth(1) else {
        return Vec::new();
    };
    section
        .lines()
        .skip(1)
        .map_while(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_owned()))
        .collect()
}

/// The `- fact` lines under the memory heading.
fn memories(system: &str) -> Vec<String> {
    let Some(section) = system.split(MEMORY_HEADING).nth(1) else {
        return Vec::new();
    };
    section
        .lines()
        .skip(1)
        .map_while(|l| l.strip_prefix("- "))
        .map(|l| l.trim().to_owned())
        .collect()
}

/// The message's language; a message with neither Chinese nor English words
/// ("ORD-123", "ok") keeps the language the customer wrote in before.
fn language(message: &str, earlier: &[Said]) -> Option<Lang> {
    if is_chinese(message) {
        return Some(Lang::Zh);
    }
    let neutral = ["ok", "okay", "ord", "tck"];
    let english = message
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| w.len() >= 2 && !neutral.contains(&w.to_lowercase().as_str()));
    english.then_some(Lang::En).or_else(|| {
        earlier
            .iter()
            .filter(|s| s.by_customer)
            .find_map(|s| language(&s.text, &[]))
    })
}

/// What the customer wants: the message, preceded by the messages it
/// answers when it is a bare answer ("ORD-124") to the assistant's question
/// for an order number — however many times the number had to be asked for.
fn intent(message: &str, earlier: &[Said]) -> String {
    let mut parts = vec![message];
    let mut current = message;
    let mut rest = earlier;
    while let Some(reply) = rest.iter().position(|s| !s.by_customer) {
        let Some(ask) = rest[reply..].iter().position(|s| s.by_customer) else {
            break;
        };
        if !(is_bare(current) && asked_for_order(&rest[reply].text)) {
            break;
        }
        current = &rest[reply + ask].text;
        parts.push(current);
        rest = &rest[reply + ask + 1..];
    }
    parts.reverse();
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolSpec;
    use serde_json::json;

    fn read(messages: Vec<Message>) -> Reading {
        Reading::new(&ModelRequest {
            tools: vec![ToolSpec {
                name: "order_query".into(),
                description: String::new(),
                parameters: json!({}),
            }]
            .into(),
            ..ModelRequest::new(messages)
        })
    }

    fn chat(turns: &[&str]) -> Reading {
        read(
            turns
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    if i % 2 == 0 {
                        Message::user(*t)
                    } else {
                        Message::assistant(*t)
                    }
                })
                .collect(),
        )
    }

    #[test]
    fn it_means_the_order_named_earlier() {
        let r = chat(&[
            "Where is order 124?",
            "Your order ORD-124 is on its way.",
            "Has it shipped yet?",
        ]);
        assert_eq!(r.orders(), Orders::Earlier("ORD-124".into()));
        assert_eq!(r.question(), Question::Shipped);
        let r = chat(&[
            "订单123到哪了",
            "您的订单 ORD-123 当前状态：运输延误。",
            "它到了吗",
        ]);
        assert_eq!(r.orders(), Orders::Earlier("ORD-123".into()));
        assert_eq!(r.question(), Question::Arrived);
        assert!(r.zh());
        let r = chat(&["订单123到哪了", "……", "那个订单呢？我要投诉"]);
        assert_eq!(r.orders(), Orders::Earlier("ORD-123".into()));
    }

    #[test]
    fn examples_and_unknown_ids_are_not_the_order_meant() {
        let r = chat(&[
            "My parcel is late",
            "Could you give me your order number (for example ORD-123)?",
            "it still hasn't arrived",
        ]);
        assert_eq!(r.orders(), Orders::Missing);
        let r = chat(&[
            "Where is ORD-124?",
            "Your order ORD-124 is on its way.",
            "And ORD-999?",
            "I couldn't find an order ORD-999 — could you double-check the number?",
            "Has it arrived?",
        ]);
        assert_eq!(r.orders(), Orders::Earlier("ORD-124".into()));
    }

    #[test]
    fn a_parcel_question_with_no_known_order_asks_for_one() {
        let r = chat(&[
            "Where is order 1002?",
            "I couldn't find an order ORD-1002 — could you double-check the order number (for example ORD-123)?",
            "Has it shipped yet?",
        ]);
        assert_eq!(r.orders(), Orders::Missing);
        assert_eq!(chat(&["When are you open?"]).orders(), Orders::NotAsked);
    }

    #[test]
    fn two_orders_named_last_make_it_ambiguous() {
        let r = chat(&[
            "Where are ORD-123 and ORD-124?",
            "Your order ORD-123 is delayed. Your order ORD-124 is on its way.",
            "Has it arrived?",
        ]);
        assert_eq!(
            r.orders(),
            Orders::Ambiguous(vec!["ORD-123".into(), "ORD-124".into()])
        );
    }

    #[test]
    fn a_bare_answer_keeps_the_question_it_answers() {
        let r = chat(&[
            "我的包裹一直没到，我要投诉",
            "请提供您的订单号（例如 ORD-123），我马上为您查询。",
            "ORD-124",
        ]);
        assert!(r.zh(), "a bare id keeps the customer's language");
        assert!(explicit_complaint(&r.intent), "{}", r.intent);
        assert_eq!(r.orders(), Orders::Named(vec!["ORD-124".into()]));
        let r = chat(&[
            "我的包裹一直没到，我要投诉",
            "请提供您的订单号（例如 ORD-123），我马上为您查询。",
            "ORD-999",
            "没有找到订单 ORD-999，请您核对一下订单号（例如 ORD-123）好吗？",
            "不好意思，是 ORD-789",
        ]);
        assert!(explicit_complaint(&r.intent), "asked twice: {}", r.intent);
        let r = chat(&["hi", "Hello!", "ORD-124"]);
        assert_eq!(r.intent, "ORD-124");
        assert_eq!(r.lang, Lang::En);
    }

    #[test]
    fn yes_to_the_offer_is_a_complaint_about_that_order() {
        let r = chat(&[
            "Where is ORD-123?",
            "Your order ORD-123 is delayed. Would you like me to open a complaint?",
            "Yes please",
        ]);
        assert!(r.accepted_complaint);
        assert_eq!(r.orders(), Orders::Earlier("ORD-123".into()));
        let r = chat(&["订单123到哪了", "……需要我为您提交投诉吗？", "好的"]);
        assert!(r.accepted_complaint && r.zh());
    }

    #[test]
    fn that_ticket_is_the_newest_one_named() {
        let r = chat(&[
            "ORD-123 is late, I want to complain",
            "I've opened complaint ticket TCK-0042 so our team can follow up.",
            "Any news on that ticket?",
        ]);
        assert_eq!(r.ticket_asked_after().as_deref(), Some("TCK-0042"));
        let r = chat(&["…", "我已为您创建投诉工单 TCK-0042。", "那个工单怎么样了"]);
        assert_eq!(r.ticket_asked_after().as_deref(), Some("TCK-0042"));
        assert_eq!(
            chat(&["open a ticket for ORD-1"]).ticket_asked_after(),
            None
        );
    }

    #[test]
    fn memories_are_the_lines_under_their_heading() {
        let system = format!("persona\n\n{MEMORY_HEADING} (facts)\n- I prefer email\n- 周末收货\n\n### Tools you may call\n- order_query: mail me");
        let r = read(vec![Message::system(system), Message::user("hi")]);
        assert_eq!(r.memories, ["I prefer email", "周末收货"]);
        assert!(r.prefers_email());
    }
}
