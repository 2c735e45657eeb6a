//! In-memory fakes for tests: the five support tools over a small fixed
//! data set, tools that fail or hang, and a scripted chat model.
//!
//! The argument names are those of the real tools (the db crate):
//! `order_query {order_id}`, `logistics_track {order_id}`,
//! `ticket_create {order_id?, category, summary}`, `knowledge_search {query}`,
//! `escalate_to_human {reason}`. The server's tests may use these too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::model::{
    ChatModel, FinishReason, ModelChunk, ModelError, ModelRequest, ModelStream, ToolCall,
};
use crate::tool::{Tool, ToolContext, ToolError, ToolRegistry, TypedTool};

/// Arguments of `order_query` and `logistics_track`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrderIdArgs {
    /// The order id, e.g. "ORD-123".
    pub order_id: String,
}

/// Arguments of `ticket_create`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TicketArgs {
    pub order_id: Option<String>,
    /// complaint | refund | inquiry | other
    pub category: String,
    pub summary: String,
}

/// Arguments of `knowledge_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    pub query: String,
}

/// Arguments of `escalate_to_human`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReasonArgs {
    pub reason: String,
}

fn order_doc(order_id: &str) -> Option<Value> {
    let (status, customer, item, total, event, location) = match order_id {
        "ORD-123" => (
            "delayed",
            "Li Wei",
            "Ceramic table lamp",
            59.0,
            "delayed",
            "Regional hub",
        ),
        "ORD-456" => (
            "delivered",
            "Emma Brown",
            "Linen bedding set",
            129.0,
            "delivered",
            "Front door",
        ),
        "ORD-789" => (
            "lost",
            "Zhang Min",
            "Wool throw blanket",
            45.5,
            "lost",
            "Hong Kong hub",
        ),
        "ORD-321" => (
            "in_transit",
            "Noah Smith",
            "Oak side table",
            210.0,
            "in_transit",
            "Shanghai hub",
        ),
        "ORD-654" => (
            "refunded",
            "Chen Jie",
            "Glass vase",
            25.0,
            "refunded",
            "Warehouse",
        ),
        "ORD-111" => (
            "processing",
            "Ava Jones",
            "Desk organiser",
            19.9,
            "label_created",
            "Warehouse",
        ),
        _ => return None,
    };
    Some(json!({
        "order_id": order_id,
        "status": status,
        "customer": customer,
        "items": [{"sku": "SKU-42", "name": item, "qty": 1}],
        "total": total,
        "latest_event": {"ts": "2026-11-27T09:15:00Z", "event": event, "location": location},
        "logistics": [
            {"ts": "2026-11-24T08:00:00Z", "event": "picked_up", "location": "Shenzhen"},
            {"ts": "2026-11-25T12:30:00Z", "event": "in_transit", "location": "Hong Kong hub"},
            {"ts": "2026-11-27T09:15:00Z", "event": event, "location": location},
        ],
    }))
}

/// `order_query` over the fixed orders ORD-123 (delayed), ORD-456
/// (delivered), ORD-789 (lost), ORD-321 (in transit), ORD-654 (refunded),
/// ORD-111 (processing).
#[derive(Debug, Default, Clone)]
pub struct FakeOrderQuery;

#[async_trait]
impl TypedTool for FakeOrderQuery {
    type Args = OrderIdArgs;
    const NAME: &'static str = "order_query";
    const DESCRIPTION: &'static str =
        "Look up an order by id (e.g. ORD-123): status, items, total, logistics.";
    async fn run(&self, _: &ToolContext, args: OrderIdArgs) -> Result<Value, ToolError> {
        order_doc(&args.order_id).ok_or(ToolError::NotFound(format!("order {}", args.order_id)))
    }
}

/// `logistics_track`: the logistics events of a fixed order.
#[derive(Debug, Default, Clone)]
pub struct FakeLogisticsTrack;

#[async_trait]
impl TypedTool for FakeLogisticsTrack {
    type Args = OrderIdArgs;
    const NAME: &'static str = "logistics_track";
    const DESCRIPTION: &'static str = "Track the parcel of an order: carrier events, newest last.";
    async fn run(&self, _: &ToolContext, args: OrderIdArgs) -> Result<Value, ToolError> {
        let doc = order_doc(&args.order_id)
            .ok_or(ToolError::NotFound(format!("order {}", args.order_id)))?;
        Ok(json!({"order_id": args.order_id, "carrier": "SF Express", "events": doc["logistics"]}))
    }
}

/// `ticket_create`: numbered tickets TCK-0001, ...; sensitive for the
/// categories complaint and refund; idempotent per tool-call id.
#[derive(Debug, Default, Clone)]
pub struct FakeTicketCreate {
    by_call: Arc<Mutex<HashMap<String, Value>>>,
}

impl FakeTicketCreate {
    /// How many tickets were really created.
    pub fn created(&self) -> usize {
        self.by_call.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[async_trait]
impl TypedTool for FakeTicketCreate {
    type Args = TicketArgs;
    const NAME: &'static str = "ticket_create";
    const DESCRIPTION: &'static str =
        "Open a support ticket. category: complaint | refund | inquiry | other.";

    fn approval_reason(&self, args: &TicketArgs) -> Option<String> {
        matches!(args.category.as_str(), "complaint" | "refund")
            .then(|| format!("a {} ticket needs a supervisor's approval", args.category))
    }

    async fn run(&self, ctx: &ToolContext, args: TicketArgs) -> Result<Value, ToolError> {
        if !matches!(
            args.category.as_str(),
            "complaint" | "refund" | "inquiry" | "other"
        ) {
            return Err(ToolError::InvalidArguments(format!(
                "unknown category {}",
                args.category
            )));
        }
        let mut map = self
            .by_call
            .lock()
            .map_err(|_| ToolError::Failed("poisoned".into()))?;
        let n = map.len() + 1;
        let doc = map.entry(ctx.tool_call_id.clone()).or_insert_with(|| {
            json!({
                "ticket_id": format!("TCK-{n:04}"),
                "status": "open",
                "order_id": args.order_id,
                "category": args.category,
                "summary": args.summary,
            })
        });
        Ok(doc.clone())
    }
}

/// `knowledge_search` over a few policy articles (English and Chinese).
#[derive(Debug, Default, Clone)]
pub struct FakeKnowledgeSearch;

const ARTICLES: &[(&str, &str, &str)] = &[
    ("Return policy", "return refund 退货 退款 policy 政策", "Unused items can be returned within 30 days of delivery for a full refund; refunds reach your card in 5–7 working days."),
    ("Shipping times and fees", "shipping delivery fee 运费 配送 多久 how long", "Standard shipping takes 3–5 working days and is free above $50; express takes 1–2 days for $9."),
    ("Warranty", "warranty broken repair 保修 维修", "Furniture and lamps carry a 2-year warranty against manufacturing defects."),
    ("Invoices", "invoice receipt 发票", "Invoices are emailed when the order ships; ask us to re-send one at any time."),
];

#[async_trait]
impl TypedTool for FakeKnowledgeSearch {
    type Args = QueryArgs;
    const NAME: &'static str = "knowledge_search";
    const DESCRIPTION: &'static str =
        "Search the help-center articles (policies, shipping, returns, warranty).";
    async fn run(&self, _: &ToolContext, args: QueryArgs) -> Result<Value, ToolError> {
        let q = args.query.to_lowercase();
        let articles: Vec<Value> = ARTICLES
            .iter()
            .filter(|(_, keys, _)| keys.split(' ').any(|k| q.contains(k)))
            .map(|(title, _, snippet)| json!({"title": title, "snippet": snippet}))
            .collect();
        Ok(json!({ "articles": articles }))
    }
}

/// `escalate_to_human`: marks the conversation as waiting for a person.
#[derive(Debug, Default, Clone)]
pub struct FakeEscalate;

#[async_trait]
impl TypedTool for FakeEscalate {
    type Args = ReasonArgs;
    const NAME: &'static str = "escalate_to_human";
    const DESCRIPTION: &'static str = "Hand the conversation to a human colleague.";
    async fn run(&self, _: &ToolContext, args: ReasonArgs) -> Result<Value, ToolError> {
        Ok(json!({"status": "waiting_human", "reason": args.reason}))
    }
}

/// The five support tools as fakes.
pub fn fake_tools() -> ToolRegistry {
    ToolRegistry::new()
        .with(FakeOrderQuery)
        .with(FakeLogisticsTrack)
        .with(FakeTicketCreate::default())
        .with(FakeKnowledgeSearch)
        .with(FakeEscalate)
}

/// A tool that always fails.
#[derive(Debug, Clone)]
pub struct FailingTool(pub &'static str);

#[async_trait]
impl Tool for FailingTool {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "Always fails."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _: &ToolContext, _: Value) -> Result<Value, ToolError> {
        Err(ToolError::Failed("the backing store is unreachable".into()))
    }
}

/// A tool that sleeps before it answers (for timeouts and concurrency).
#[derive(Debug, Clone)]
pub struct SlowTool {
    pub name: &'static str,
    pub delay: Duration,
    /// How many calls are running right now, and the most seen at once.
    pub running: Arc<AtomicUsize>,
    pub max_running: Arc<AtomicUsize>,
}

impl SlowTool {
    pub fn new(name: &'static str, delay: Duration) -> Self {
        Self {
            name,
            delay,
            running: Arc::default(),
            max_running: Arc::default(),
        }
    }
}

#[async_trait]
impl Tool for SlowTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Answers after a delay."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _: &ToolContext, args: Value) -> Result<Value, ToolError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(json!({"slept_ms": self.delay.as_millis() as u64, "args": args}))
    }
}

/// One scripted model answer.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// A text answer, streamed word by word.
    Text(String),
    /// Tool calls (with optional text before them).
    Calls(Vec<ToolCall>),
    /// Raw chunks, as they are.
    Chunks(Vec<ModelChunk>),
    /// The call fails.
    Fail(ModelError),
}

/// A tool call for a script.
pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

/// A model that plays a script, one answer per call, and keeps every
/// request it got. After the script it answers "(end of script)".
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<std::collections::VecDeque<Scripted>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Repeat the last answer for ever instead of ending the script.
    repeat_last: bool,
    last: Mutex<Option<Scripted>>,
}

impl ScriptedModel {
    pub fn new(script: impl IntoIterator<Item = Scripted>) -> Self {
        Self {
            script: Mutex::new(script.into_iter().collect()),
            ..Self::default()
        }
    }

    /// A model that plays `answer` on every call.
    pub fn always(answer: Scripted) -> Self {
        Self {
            script: Mutex::new([answer].into_iter().collect()),
            repeat_last: true,
            ..Self::default()
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn chunks_of(answer: Scripted) -> Result<Vec<ModelChunk>, ModelError> {
    Ok(match answer {
        Scripted::Text(text) => {
            let mut out: Vec<ModelChunk> = text
                .split_inclusive(' ')
                .map(|w| ModelChunk::Text(w.to_owned()))
                .collect();
            out.push(ModelChunk::Usage(aics_types::TokenUsage {
                prompt_tokens: 10,
                completion_tokens: out.len() as u64,
                total_tokens: 10 + out.len() as u64,
            }));
            out.push(ModelChunk::Finish(FinishReason::Stop));
            out
        }
        Scripted::Calls(calls) => {
            let mut out: Vec<ModelChunk> = calls
                .into_iter()
                .enumerate()
                .map(|(index, c)| ModelChunk::ToolCallDelta {
                    index,
                    id: Some(c.id),
                    name: Some(c.name),
                    arguments: match c.arguments {
                        Value::String(raw) => raw,
                        other => other.to_string(),
                    },
                })
                .collect();
            out.push(ModelChunk::Finish(FinishReason::ToolCalls));
            out
        }
        Scripted::Chunks(chunks) => chunks,
        Scripted::Fail(e) => return Err(e),
    })
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> String {
        "scripted".into()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        if let Ok(mut r) = self.requests.lock() {
            r.push(request);
        }
        let next = self.script.lock().ok().and_then(|mut s| s.pop_front());
        let answer = match next {
            Some(a) => {
                if let Ok(mut last) = self.last.lock() {
                    *last = Some(a.clone());
                }
                a
            }
            None if self.repeat_last => self
                .last
                .lock()
                .ok()
                .and_then(|l| l.clone())
                .unwrap_or(Scripted::Text("(end of script)".into())),
            None => Scripted::Text("(end of script)".into()),
        };
        let chunks = chunks_of(answer)?;
        Ok(stream::iter(chunks.into_iter().map(Ok)).boxed())
    }
}
