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

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::model::{Message, ModelRequest};
use crate::support::heuristics::{
    extract_order_id, is_chinese, mentions_order, sounds_like_complaint,
};
use crate::support::prompt::{MEMORY_HEADING, PLAN_MARKER, TOOL_RESULTS_HEADING};

// The patterns are literals checked by the tests below; `expect` cannot fire
// at run time for a pattern that compiled once in a test.
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static ARRIVED: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(arrived?|delivered|received?|got it|get it|here yet)\b|到了|到货|收到|送到|签收|到没到",
    )
});
static SHIPPED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(shipped|ship|sent|dispatched)\b|发货|发出|寄出"));
static WHEN: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\bwhen\b|什么时候|几时|哪天"));
static TICKET_ID: LazyLock<Regex> = LazyLock::new(|| re(r"\bTCK-[0-9A-Za-z]+\b"));
static TICKET_REF: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(that|the|my|this|our) (ticket|complaint|case)\b|(那|这)个(工单|投诉)|我的(工单|投诉)|(工单|投诉).{0,6}(怎么样|进展|进度|状态|处理|结果)",
    )
});
static AFFIRMATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^\s*(yes|yeah|yep|sure|ok|okay|please( do)?|go ahead|do it|that would be great)\b|^\s*(好|可以|是的|行|嗯|麻烦|请|要)",
    )
});

/// The customer's language; a reply never mixes the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
}

/// Why a tool call failed, in the terms the customer is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// What was asked for does not exist (an unknown order id).
    NotFound,
    /// The call's arguments were wrong; the model may call again.
    InvalidArguments,
    /// No such tool: the model's own mistake, never the customer's business.
    UnknownTool,
    /// The system behind the tool did not answer (a timeout, a store down).
    Unavailable,
}

impl Failure {
    /// Reads a tool error as [`crate::tool::ToolError`] displays it.
    fn of(error: &str) -> Self {
        if error.starts_with("not found") {
            Self::NotFound
        } else if error.starts_with("invalid arguments") {
            Self::InvalidArguments
        } else if error.starts_with("unknown tool") {
            Self::UnknownTool
        } else {
            Self::Unavailable
        }
    }
}

/// One tool result the model received this turn.
#[derive(Debug, Clone)]
pub struct Observation {
    pub tool: String,
    /// The arguments it ran with, where the request shows them (native
    /// protocol: the assistant message that asked for the call).
    pub args: Option<Value>,
    pub result: Value,
    /// The supervisor's reason when the call was rejected.
    pub denied: Option<String>,
}

impl Observation {
    fn new(tool: &str, content: &str, args: Option<Value>) -> Self {
        let denied = content
            .strip_prefix("denied by supervisor:")
            .map(|r| r.trim().to_owned());
        let result = serde_json::from_str::<Value>(content)
            .unwrap_or_else(|_| Value::String(content.to_owned()));
        Self {
            tool: tool.to_owned(),
            args,
            result,
            denied,
        }
    }

    /// The error text of a failed call.
    pub fn error(&self) -> Option<String> {
        self.result.get("error").map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    pub fn failure(&self) -> Option<Failure> {
        self.error().map(|e| Failure::of(&e))
    }

    pub fn ok(&self) -> bool {
        self.denied.is_none() && self.error().is_none()
    }

    /// The order the call was about: its arguments, else its result, else
    /// the id its error names.
    pub fn order_id(&self) -> Option<String> {
        let arg = self
            .args
            .as_ref()
            .and_then(|a| a.get("order_id"))
            .and_then(Value::as_str);
        arg.and_then(normalize_order_id)
            .or_else(|| {
                self.result["order_id"]
                    .as_str()
                    .and_then(normalize_order_id)
            })
            .or_else(|| {
                // Only a not-found error names the order meant; others may
                // quote an example id.
                (self.failure() == Some(Failure::NotFound))
                    .then(|| self.error().and_then(|e| extract_order_id(&e)))
                    .flatten()
            })
    }
}

/// "ORD-123", "ord123", "123" → `ORD-123`.
fn normalize_order_id(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if !raw.is_empty() && raw.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("ORD-{raw}"));
    }
    extract_order_id(raw)
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
    /// The system prompt(s), joined.
    pub system: String,
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
            .filter_map(|m| match m {
                Message::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }));
        let message = match last_user.map(|i| &request.messages[i]) {
            Some(Message::User { content }) => content.clone(),
            _ => String::new(),
        };
        let earlier: Vec<Said> = request.messages[..last_user.unwrap_or(0)]
            .iter()
            .rev()
            .filter_map(|m| match m {
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
            observations: observations(request, last_user.unwrap_or(0), &system),
            memories: memories(&system),
            planning: !tools.is_empty(),
            plan_mode,
            tools,
            intent,
            accepted_complaint,
            offered_order,
            message,
            earlier,
            system,
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
        match self.earlier_orders().as_slice() {
            [] if explicit => Orders::Missing,
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

/// Tool results since the last customer message: tool messages (with the
/// arguments of the assistant's call), and the numbered list of the
/// JSON-plan prompt.
fn observations(request: &ModelRequest, last_user: usize, system: &str) -> Vec<Observation> {
    let turn = &request.messages[last_user..];
    let args_of = |id: &str| {
        turn.iter().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.arguments.clone()),
            _ => None,
        })
    };
    let mut out: Vec<Observation> = turn
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                name,
                content,
            } => Some(Observation::new(name, content, args_of(tool_call_id))),
            _ => None,
        })
        .collect();
    if let Some(section) = system.split(TOOL_RESULTS_HEADING).nth(1) {
        let mut lines = section.lines();
        while let Some(line) = lines.next() {
            let Some((_, name)) = line
                .trim()
                .strip_prefix('[')
                .and_then(|r| r.split_once("] "))
            else {
                continue;
            };
            if let Some(body) = lines.next() {
                let content = match serde_json::from_str::<Value>(body) {
                    Ok(Value::String(s)) => s,
                    _ => body.to_owned(),
                };
                out.push(Observation::new(name.trim(), &content, None));
            }
        }
    }
    out
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

/// Every order the text names, with the byte offset of its digits.
fn order_mentions(text: &str) -> Vec<(String, usize)> {
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

fn dedup(ids: impl Iterator<Item = String>) -> Vec<String> {
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
fn sentence_at(text: &str, at: usize) -> &str {
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
fn is_example(text: &str, at: usize) -> bool {
    let lead = before(text, at, 20).to_lowercase();
    ["example", "e.g.", "such as", "例如", "比如"]
        .iter()
        .any(|k| lead.contains(k))
}

/// "I couldn't find an order ORD-999": an id the assistant reported unknown.
fn reported_unknown(text: &str, at: usize) -> bool {
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

/// The order named in the sentence of a reply that offers a complaint.
fn offer_order(reply: &str) -> Option<String> {
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
fn is_bare(message: &str) -> bool {
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

/// "track", "where is", "物流": the customer wants the parcel's journey.
pub fn asks_tracking(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "track",
        "where",
        "logistics",
        "carrier",
        "物流",
        "快递",
        "到哪",
        "在哪",
    ]
    .iter()
    .any(|k| m.contains(k))
}

/// An outright complaint or ticket request (a late parcel alone is not one).
pub fn explicit_complaint(message: &str) -> bool {
    let m = message.to_lowercase();
    ["complain", "投诉", "unacceptable", "ticket", "工单"]
        .iter()
        .any(|k| m.contains(k))
}

/// The customer wants money back (not a question about the refund policy).
pub fn wants_refund(message: &str) -> bool {
    let m = message.to_lowercase();
    (m.contains("refund") || m.contains("退款")) && !asks_policy(message)
}

/// A question the help center answers.
pub fn asks_policy(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "policy",
        "return",
        "how long",
        "shipping fee",
        "shipping cost",
        "warranty",
        "invoice",
        "政策",
        "退货",
        "运费",
        "多久",
        "保修",
        "发票",
        "怎么退",
        "如何",
    ]
    .iter()
    .any(|k| m.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolCall, ToolSpec};
    use crate::tool::ToolError;
    use serde_json::json;

    fn read(messages: Vec<Message>) -> Reading {
        Reading::new(&ModelRequest {
            messages,
            tools: vec![ToolSpec {
                name: "order_query".into(),
                description: String::new(),
                parameters: json!({}),
            }],
            ..Default::default()
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
    fn failures_are_read_from_the_tool_errors_display() {
        for (e, f) in [
            (
                ToolError::NotFound("there is no order ORD-9".into()),
                Failure::NotFound,
            ),
            (
                ToolError::InvalidArguments("x".into()),
                Failure::InvalidArguments,
            ),
            (ToolError::UnknownTool("x".into()), Failure::UnknownTool),
            (ToolError::Timeout(5), Failure::Unavailable),
            (ToolError::Failed("down".into()), Failure::Unavailable),
        ] {
            assert_eq!(Failure::of(&e.to_string()), f, "{e}");
        }
    }

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
    fn an_observation_knows_its_order_from_args_result_or_error() {
        let call = ToolCall {
            id: "c1".into(),
            name: "order_query".into(),
            arguments: json!({"order_id": "999"}),
        };
        let r = read(vec![
            Message::user("where is 999"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![call],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                name: "order_query".into(),
                content: json!({"error": "not found: order ORD-999"}).to_string(),
            },
        ]);
        let o = &r.observations[0];
        assert_eq!(o.order_id().as_deref(), Some("ORD-999"));
        assert_eq!(o.failure(), Some(Failure::NotFound));
        let plain = Observation::new(
            "order_query",
            r#"{"error":"not found: there is no order ORD-7"}"#,
            None,
        );
        assert_eq!(plain.order_id().as_deref(), Some("ORD-7"));
    }

    #[test]
    fn memories_are_the_lines_under_their_heading() {
        let system = format!("persona\n\n{MEMORY_HEADING} (facts)\n- I prefer email\n- 周末收货\n\n### Tools you may call\n- order_query: mail me");
        let r = read(vec![Message::system(system), Message::user("hi")]);
        assert_eq!(r.memories, ["I prefer email", "周末收货"]);
        assert!(r.prefers_email());
    }
}
