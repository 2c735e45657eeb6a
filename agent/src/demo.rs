//! The demo model: deterministic, offline, the default provider.
//!
//! [`DemoModel`] reads the conversation and plans like a competent support
//! agent of the demo company: an order question → `order_query` (with
//! `logistics_track` in parallel when the customer asks about tracking); a
//! late or lost order with a complaint → `order_query`, then
//! `ticket_create` (category complaint, which needs approval); a refund
//! request → a refund ticket; a policy question → `knowledge_search`; "I
//! want a human" / "转人工" → `escalate_to_human`; otherwise a direct answer.
//! It answers from the tool results it received (the real order status, the
//! ticket id), in the customer's language, and streams its answer word by
//! word (Chinese: two characters at a time) with a configurable delay.
//!
//! It speaks both planning protocols: native tool calls when tools are
//! bound, and seed 004's JSON plan as text when the system prompt asks for
//! one ([`crate::support::prompt::PLAN_MARKER`]).
//!
//! Faults for tests come from [`DemoFaults`], or per message when
//! [`DemoConfig::message_faults`] is on: a message containing
//! `[fault:error]`, `[fault:timeout]`, `[fault:malformed]`,
//! `[fault:unknown_tool]` or `[fault:repeat]` triggers that fault.

use std::time::Duration;

use aics_types::TokenUsage;
use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use serde_json::{json, Value};

use crate::model::{
    ChatModel, FinishReason, Message, ModelChunk, ModelError, ModelRequest, ModelStream,
};
use crate::support::heuristics::{
    extract_order_id, is_chinese, memory_instruction, mentions_order, sounds_like_complaint,
    wants_human,
};
use crate::support::prompt::{MEMORY_HEADING, PLAN_MARKER, TOOL_RESULTS_HEADING};

/// Faults the demo model injects (for tests and demos of failure handling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DemoFaults {
    /// Every call fails with [`ModelError::Injected`] after a few tokens.
    pub error: bool,
    /// Every call stalls for [`DemoConfig::stall`], then fails with a timeout
    /// (or the engine's model timeout ends it first).
    pub timeout: bool,
    /// The first planning call sends tool arguments that are not valid JSON.
    pub malformed_args: bool,
    /// The first planning call asks for a tool that does not exist.
    pub unknown_tool: bool,
    /// Every planning call repeats the same `order_query` (loop detection ends it).
    pub repeat_call: bool,
}

impl DemoFaults {
    /// The faults a message asks for with `[fault:…]` markers.
    pub fn from_message(message: &str) -> Self {
        Self {
            error: message.contains("[fault:error]"),
            timeout: message.contains("[fault:timeout]"),
            malformed_args: message.contains("[fault:malformed]"),
            unknown_tool: message.contains("[fault:unknown_tool]"),
            repeat_call: message.contains("[fault:repeat]"),
        }
    }

    fn or(self, other: Self) -> Self {
        Self {
            error: self.error || other.error,
            timeout: self.timeout || other.timeout,
            malformed_args: self.malformed_args || other.malformed_args,
            unknown_tool: self.unknown_tool || other.unknown_tool,
            repeat_call: self.repeat_call || other.repeat_call,
        }
    }
}

/// How the demo model behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// The pause between streamed tokens (about 20 ms reads naturally in
    /// the UI; 0 for benchmarks and tests).
    pub token_delay: Duration,
    /// Faults injected into every call.
    pub faults: DemoFaults,
    /// Whether `[fault:…]` markers in a message inject faults.
    pub message_faults: bool,
    /// How long the timeout fault stays silent before it reports a timeout
    /// (short, so end-to-end tests through the UI do not wait a minute).
    pub stall: Duration,
    /// The company name used in English greetings.
    pub company: String,
    /// The company name used in Chinese greetings.
    pub company_zh: String,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            token_delay: Duration::from_millis(20),
            faults: DemoFaults::default(),
            message_faults: false,
            stall: Duration::from_secs(3),
            company: "Northwind Gadgets".into(),
            company_zh: "北风数码".into(),
        }
    }
}

/// The deterministic offline model.
#[derive(Debug, Clone, Default)]
pub struct DemoModel {
    config: DemoConfig,
}

/// One tool result the model has seen this turn.
#[derive(Debug, Clone)]
struct Observation {
    tool: String,
    result: Value,
    denied: Option<String>,
}

impl Observation {
    fn ok(&self) -> bool {
        self.denied.is_none() && self.result.get("error").is_none()
    }
    fn error(&self) -> Option<String> {
        self.result.get("error").map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }
}

/// What the model decided for one call.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Call these tools: (name, arguments as raw JSON text).
    Call(Vec<(String, String)>),
    Answer(String),
}

impl DemoModel {
    pub fn new(config: DemoConfig) -> Self {
        Self { config }
    }

    /// The demo model without token delay (tests, benchmarks).
    pub fn instant() -> Self {
        Self::new(DemoConfig {
            token_delay: Duration::ZERO,
            ..DemoConfig::default()
        })
    }

    pub fn config(&self) -> &DemoConfig {
        &self.config
    }

    fn system_text(request: &ModelRequest) -> String {
        request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Tool results since the last customer message, from tool messages and
    /// from the numbered list of the JSON-plan prompt.
    fn observations(request: &ModelRequest, system: &str) -> Vec<Observation> {
        let mut out = Vec::new();
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .unwrap_or(0);
        for m in &request.messages[last_user..] {
            if let Message::Tool { name, content, .. } = m {
                out.push(observation(name, content));
            }
        }
        if let Some(section) = system.split(TOOL_RESULTS_HEADING).nth(1) {
            let mut lines = section.lines().peekable();
            while let Some(line) = lines.next() {
                let line = line.trim();
                let Some(rest) = line.strip_prefix('[') else {
                    continue;
                };
                let Some((_, name)) = rest.split_once("] ") else {
                    continue;
                };
                if let Some(body) = lines.next() {
                    let content = match serde_json::from_str::<Value>(body) {
                        Ok(Value::String(s)) => s,
                        _ => body.to_owned(),
                    };
                    out.push(observation(name.trim(), &content));
                }
            }
        }
        out
    }

    fn tool_available(request: &ModelRequest, system: &str, name: &str) -> bool {
        request.tools.iter().any(|t| t.name == name)
            || (system.contains(PLAN_MARKER) && system.contains(&format!("- {name}:")))
    }

    fn plan(&self, request: &ModelRequest, faults: DemoFaults) -> Step {
        let system = Self::system_text(request);
        let message = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let zh = is_chinese(&message);
        let obs = Self::observations(request, &system);
        let planning = !request.tools.is_empty() || system.contains(PLAN_MARKER);
        // A call rejected for its arguments may be retried; anything else counts as done.
        let done = |tool: &str| {
            obs.iter().any(|o| {
                o.tool == tool && !o.error().is_some_and(|e| e.contains("invalid arguments"))
            })
        };
        // A follow-up ("I want to complain about it") refers to the order
        // named earlier in the conversation.
        let order_id = extract_order_id(&message).or_else(|| {
            (mentions_order(&message) || sounds_like_complaint(&message) || wants_refund(&message))
                .then(|| {
                    request.messages.iter().rev().find_map(|m| match m {
                        Message::User { content } => extract_order_id(content),
                        _ => None,
                    })
                })
                .flatten()
        });

        if planning {
            let can = |tool: &str| Self::tool_available(request, &system, tool);
            let oid = order_id.clone().unwrap_or_else(|| "ORD-123".into());
            if faults.repeat_call && can("order_query") {
                return Step::Call(vec![(
                    "order_query".into(),
                    json!({"order_id": oid}).to_string(),
                )]);
            }
            if faults.unknown_tool && obs.is_empty() {
                return Step::Call(vec![(
                    "refund_everything".into(),
                    json!({"order_id": oid}).to_string(),
                )]);
            }
            if faults.malformed_args && obs.is_empty() && can("order_query") {
                return Step::Call(vec![(
                    "order_query".into(),
                    format!("{{\"order_id\": {oid}"),
                )]);
            }
            if wants_human(&message) && can("escalate_to_human") && !done("escalate_to_human") {
                let reason = if zh {
                    "客户要求转人工"
                } else {
                    "The customer asked for a human agent"
                };
                return Step::Call(vec![(
                    "escalate_to_human".into(),
                    json!({"reason": reason}).to_string(),
                )]);
            }
            if let Some(oid) = &order_id {
                if !done("order_query") && can("order_query") {
                    let mut calls = vec![(
                        "order_query".to_owned(),
                        json!({"order_id": oid}).to_string(),
                    )];
                    if asks_tracking(&message) && can("logistics_track") && !done("logistics_track")
                    {
                        calls.push((
                            "logistics_track".into(),
                            json!({"order_id": oid}).to_string(),
                        ));
                    }
                    return Step::Call(calls);
                }
                let order = obs.iter().find(|o| o.tool == "order_query" && o.ok());
                if let Some(order) = order {
                    let status = order.result["status"].as_str().unwrap_or_default();
                    // Seed 004: notice the logistics anomaly (a parcel stuck for
                    // days counts even while the status still says in transit).
                    let anomaly = order.result.get("anomaly").is_some_and(|a| !a.is_null());
                    let troubled = matches!(status, "delayed" | "lost") || anomaly;
                    let complaint = sounds_like_complaint(&message)
                        && (troubled || explicit_complaint(&message));
                    let refund = wants_refund(&message);
                    if (complaint || refund) && !done("ticket_create") && can("ticket_create") {
                        let category = if refund && !complaint {
                            "refund"
                        } else {
                            "complaint"
                        };
                        let summary = if zh {
                            format!("客户反映订单 {oid} {}，要求跟进处理。", status_zh(status))
                        } else {
                            format!(
                                "Customer reports order {oid} is {}; requests follow-up.",
                                status_en(status)
                            )
                        };
                        let args =
                            json!({"order_id": oid, "category": category, "summary": summary});
                        return Step::Call(vec![("ticket_create".into(), args.to_string())]);
                    }
                }
            }
            if asks_policy(&message) && can("knowledge_search") && !done("knowledge_search") {
                return Step::Call(vec![(
                    "knowledge_search".into(),
                    json!({"query": message}).to_string(),
                )]);
            }
        }
        let mut answer = self.answer(&message, order_id.as_deref(), &obs, zh);
        if prefers_email(&system) && obs.iter().any(|o| o.tool == "ticket_create" && o.ok()) {
            answer.push_str(if zh {
                "我们会按您的偏好通过邮件通知进展。"
            } else {
                " As you prefer, we'll send updates by email."
            });
        }
        Step::Answer(answer)
    }

    fn answer(
        &self,
        message: &str,
        order_id: Option<&str>,
        obs: &[Observation],
        zh: bool,
    ) -> String {
        let mut parts: Vec<String> = Vec::new();
        for o in obs {
            parts.push(describe(o, zh));
        }
        if memory_instruction(message).is_some() {
            parts.push(if zh {
                "好的，我已经记下了，以后会按照您的偏好处理。".into()
            } else {
                "Noted — I'll keep that in mind for your future requests.".into()
            });
        }
        if obs.is_empty() {
            if wants_human(message) {
                parts.push(if zh {
                    "我会请人工客服尽快联系您。".into()
                } else {
                    "I'll ask a colleague to take over as soon as possible.".into()
                });
            } else if order_id.is_none()
                && (mentions_order(message) || sounds_like_complaint(message))
            {
                parts.push(if zh { "请提供您的订单号（例如 ORD-123），我马上为您查询。".into() } else {
                    "Could you give me your order number (for example ORD-123)? I'll look it up right away.".into()
                });
            } else if parts.is_empty() {
                parts.push(if zh {
                    format!("您好！我是{}的智能客服，可以帮您查询订单和物流、处理投诉与退款，或解答退换货政策。请问有什么可以帮您？", self.config.company_zh)
                } else {
                    format!("Hello! I'm the {} support assistant. I can check orders and deliveries, handle complaints and refunds, or explain our policies. How can I help?", self.config.company)
                });
            }
        } else if obs.iter().any(|o| o.tool == "ticket_create" && o.ok()) {
            parts.push(if zh {
                "如有其他问题，随时告诉我。".into()
            } else {
                "Is there anything else I can do for you?".into()
            });
        }
        parts.join(if zh { "" } else { " " })
    }

    fn usage(request: &ModelRequest, completion: usize) -> TokenUsage {
        let prompt_chars: usize = request
            .messages
            .iter()
            .map(|m| match m {
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
                            .map(|c| c.arguments.to_string().len())
                            .sum::<usize>()
                }
            })
            .sum::<usize>()
            + request
                .tools
                .iter()
                .map(|t| t.parameters.to_string().len() + t.description.len())
                .sum::<usize>();
        let prompt = (prompt_chars / 4).max(1) as u64;
        let completion = completion as u64;
        TokenUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
        }
    }
}

fn observation(tool: &str, content: &str) -> Observation {
    let denied = content
        .strip_prefix("denied by supervisor:")
        .map(|r| r.trim().to_owned());
    let result = serde_json::from_str::<Value>(content)
        .unwrap_or_else(|_| Value::String(content.to_owned()));
    Observation {
        tool: tool.to_owned(),
        result,
        denied,
    }
}

/// Whether the customer's memories (in the system prompt) ask for email.
fn prefers_email(system: &str) -> bool {
    system.split(MEMORY_HEADING).nth(1).is_some_and(|m| {
        let m = m.to_lowercase();
        m.contains("email") || m.contains("邮件")
    })
}

fn asks_tracking(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "track",
        "where is",
        "where's",
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

fn explicit_complaint(message: &str) -> bool {
    let m = message.to_lowercase();
    ["complain", "投诉", "unacceptable", "ticket", "工单"]
        .iter()
        .any(|k| m.contains(k))
}

fn wants_refund(message: &str) -> bool {
    let m = message.to_lowercase();
    (m.contains("refund") || m.contains("退款")) && !asks_policy(message)
}

fn asks_policy(message: &str) -> bool {
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

fn status_en(status: &str) -> &str {
    match status {
        "delivered" => "delivered",
        "shipped" => "shipped",
        "in_transit" => "on its way",
        "delayed" => "delayed",
        "lost" => "reported lost in transit",
        "refunded" => "refunded",
        "processing" => "being prepared for shipment",
        other => other,
    }
}

fn status_zh(status: &str) -> &str {
    match status {
        "delivered" => "已签收",
        "shipped" => "已发货",
        "in_transit" => "运输中",
        "delayed" => "运输延误",
        "lost" => "在运输途中丢失",
        "refunded" => "已退款",
        "processing" => "正在备货",
        _ => "状态未知",
    }
}

fn event_text(event: &Value) -> Option<String> {
    match event {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => {
            let what = map
                .get("event")
                .or_else(|| map.get("description"))
                .or_else(|| map.get("status"))
                .and_then(Value::as_str)?;
            let at = map.get("location").and_then(Value::as_str);
            Some(match at {
                Some(at) => format!("{} ({at})", what.replace('_', " ")),
                None => what.replace('_', " "),
            })
        }
        _ => None,
    }
}

fn describe(o: &Observation, zh: bool) -> String {
    if let Some(reason) = &o.denied {
        return if zh {
            format!("很抱歉，创建该工单的请求未获主管批准（{reason}）。我们会通过其他方式跟进您的问题。")
        } else {
            format!("I wasn't able to complete that step: a supervisor declined it ({reason}). We'll follow up with you another way.")
        };
    }
    if let Some(err) = o.error() {
        return if zh {
            format!("查询时出现问题（{err}），请核对信息后再试。")
        } else {
            format!(
                "I ran into a problem with that lookup ({err}); please double-check the details."
            )
        };
    }
    let r = &o.result;
    match o.tool.as_str() {
        "order_query" => {
            let id = r["order_id"].as_str().unwrap_or("your order");
            let status = r["status"].as_str().unwrap_or("unknown");
            let latest = event_text(&r["latest_event"]).or_else(|| {
                r["logistics"]
                    .as_array()
                    .and_then(|a| a.last())
                    .and_then(event_text)
            });
            let mut text = match (zh, &latest) {
                (false, Some(l)) => {
                    format!(
                        "Your order {id} is {}. Latest update: {l}.",
                        status_en(status)
                    )
                }
                (false, None) => format!("Your order {id} is {}.", status_en(status)),
                (true, Some(l)) => {
                    format!(
                        "您的订单 {id} 当前状态：{}。最新动态：{l}。",
                        status_zh(status)
                    )
                }
                (true, None) => format!("您的订单 {id} 当前状态：{}。", status_zh(status)),
            };
            let anomaly = r["anomaly"]["description"]
                .as_str()
                .filter(|a| !latest.as_deref().is_some_and(|l| l.contains(a)));
            if let Some(a) = anomaly.map(|a| a.trim_end_matches(['.', '。', ' '])) {
                let chinese = a.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
                text.push_str(&match (zh, chinese) {
                    (true, true) => format!("物流异常：{a}。"),
                    // Quote the carrier's record as written rather than mix languages mid-sentence.
                    (true, false) => format!("物流存在异常（承运商记录：\"{a}\"）。"),
                    (false, _) => format!(" Logistics anomaly: {a}."),
                });
            }
            text
        }
        "logistics_track" => {
            let last = r["events"]
                .as_array()
                .and_then(|a| a.last())
                .and_then(event_text);
            let carrier = r["carrier"].as_str().unwrap_or("the carrier");
            match (zh, last) {
                (false, Some(l)) => format!("The latest scan from {carrier}: {l}."),
                (true, Some(l)) => format!("{carrier} 最新物流信息：{l}。"),
                (false, None) => "There are no tracking events yet.".into(),
                (true, None) => "暂时还没有物流记录。".into(),
            }
        }
        "ticket_create" => {
            let id = r["ticket_id"].as_str().unwrap_or("a ticket");
            let category = r["category"].as_str().unwrap_or("support");
            if zh {
                format!(
                    "我已为您创建{}工单 {id}，相关团队会尽快跟进处理。",
                    if category == "refund" {
                        "退款"
                    } else {
                        "投诉"
                    }
                )
            } else {
                format!("I've opened {category} ticket {id} so our team can follow up and resolve this quickly.")
            }
        }
        "knowledge_search" => match r["articles"].as_array().and_then(|a| a.first()) {
            Some(a) => {
                let title = a["title"].as_str().unwrap_or_default();
                let snippet = a["snippet"].as_str().unwrap_or_default();
                if zh {
                    format!("根据帮助中心的「{title}」：{snippet}")
                } else {
                    format!("From our help center, \"{title}\": {snippet}")
                }
            }
            None => {
                if zh {
                    "帮助中心里没有找到相关政策，我可以请同事为您解答。".into()
                } else {
                    "I couldn't find a help-center article on that; a colleague can answer it for you.".into()
                }
            }
        },
        "escalate_to_human" => {
            if zh {
                "已为您转接人工客服，请稍候，同事马上就来。".into()
            } else {
                "I've handed this conversation to a human colleague — they'll be with you shortly."
                    .into()
            }
        }
        other => {
            if zh {
                format!("{other} 已完成。")
            } else {
                format!("{other} finished.")
            }
        }
    }
}

/// Splits an answer into stream tokens: a word with its trailing space, or
/// two CJK characters (with the punctuation after them).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cjk_run = 0;
    for c in text.chars() {
        let cjk = is_chinese(c.encode_utf8(&mut [0; 4]));
        if cjk {
            if cjk_run == 0 && !cur.is_empty() && !cur.ends_with(' ') {
                // Latin text glued to Chinese: cut before the ideograph.
                out.push(std::mem::take(&mut cur));
            }
            if cjk_run == 2 {
                out.push(std::mem::take(&mut cur));
                cjk_run = 0;
            }
            cur.push(c);
            cjk_run += 1;
        } else if c == ' ' {
            cur.push(c);
            out.push(std::mem::take(&mut cur));
            cjk_run = 0;
        } else {
            if cjk_run > 0 && c.is_alphanumeric() {
                out.push(std::mem::take(&mut cur));
                cjk_run = 0;
            }
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[async_trait]
impl ChatModel for DemoModel {
    fn name(&self) -> String {
        "demo".into()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let last_user = request.messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        });
        let mut faults = self.config.faults;
        if self.config.message_faults {
            faults = faults.or(DemoFaults::from_message(last_user.unwrap_or_default()));
        }
        if faults.timeout {
            // Silent for `stall`, then a provider-style timeout: the engine's
            // own idle timeout fires first when it is shorter.
            let stall = self.config.stall;
            return Ok(stream::once(async move {
                tokio::time::sleep(stall).await;
                Err(ModelError::Timeout(format!(
                    "the demo model stalled for {} ms",
                    stall.as_millis()
                )))
            })
            .boxed());
        }
        let system = Self::system_text(&request);
        let plan_mode = request.tools.is_empty() && system.contains(PLAN_MARKER);
        let mut chunks: Vec<ModelChunk> = Vec::new();
        let step = self.plan(&request, faults);
        let finish = match (&step, plan_mode) {
            (Step::Call(calls), false) => {
                for (index, (name, args)) in calls.iter().enumerate() {
                    chunks.push(ModelChunk::ToolCallDelta {
                        index,
                        id: Some(format!("call_{}", uuid::Uuid::new_v4().simple())),
                        name: Some(name.clone()),
                        arguments: args.clone(),
                    });
                }
                FinishReason::ToolCalls
            }
            (Step::Call(calls), true) => {
                // The JSON plan names one tool per step: the first one.
                let (name, args) = &calls[0];
                let input: Value =
                    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.clone()));
                let plan = json!({"action": "call_tool", "toolName": name, "toolInput": input})
                    .to_string();
                chunks.extend(tokenize(&plan).into_iter().map(ModelChunk::Text));
                FinishReason::Stop
            }
            (Step::Answer(_), true) => {
                let plan = r#"{"action":"respond","toolName":"","toolInput":""}"#;
                chunks.push(ModelChunk::Text(plan.into()));
                FinishReason::Stop
            }
            (Step::Answer(text), false) => {
                chunks.extend(tokenize(text).into_iter().map(ModelChunk::Text));
                FinishReason::Stop
            }
        };
        let completion = chunks.len();
        let mut items: Vec<Result<ModelChunk, ModelError>> = chunks.into_iter().map(Ok).collect();
        if faults.error {
            items.truncate(2);
            items.push(Err(ModelError::Injected(
                "the demo model was told to fail".into(),
            )));
        } else {
            items.push(Ok(ModelChunk::Usage(Self::usage(&request, completion))));
            items.push(Ok(ModelChunk::Finish(finish)));
        }
        let delay = self.config.token_delay;
        if delay.is_zero() {
            return Ok(stream::iter(items).boxed());
        }
        Ok(stream::iter(items)
            .then(move |item| async move {
                if matches!(item, Ok(ModelChunk::Text(_))) {
                    tokio::time::sleep(delay).await;
                }
                item
            })
            .boxed())
    }
}

#[cfg(test)]
mod tests;
