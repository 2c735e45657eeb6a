//! In-memory fakes for tests: a [`FakeBackend`] that gives the real support
//! tools ([`crate::tools`]) a small fixed shop, tools that fail or hang, a
//! scripted chat model, and a model whose reply runs away. The server's
//! tests may use these too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aics_types::{ArticleHit, Customer, LogisticsEvent, Order, OrderDetail, OrderItem, Ticket};
use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use serde_json::{json, Value};

use crate::model::{
    ChatModel, FinishReason, ModelChunk, ModelError, ModelRequest, ModelStream, ToolCall,
};
use crate::tool::{Tool, ToolContext, ToolError, ToolRegistry};
use crate::tools::{support_tools, BackendError, NewTicket, SupportBackend};

/// The shop of the tests: six fixed orders ORD-123 (delayed), ORD-456
/// (delivered), ORD-789 (lost), ORD-321 (in transit), ORD-654 (refunded),
/// ORD-111 (processing), a few policy articles, and tickets and escalations
/// kept in memory. Event times are relative to when the backend was made, so
/// no order looks stuck because the test ran on a later day.
#[derive(Debug)]
pub struct FakeBackend {
    orders: Vec<OrderDetail>,
    tickets: Mutex<HashMap<String, Ticket>>,
    escalated: Mutex<Vec<String>>,
    /// How many times an order was read.
    order_reads: AtomicUsize,
}

impl Default for FakeBackend {
    fn default() -> Self {
        let now = chrono::Utc::now();
        let ago = |hours: i64| now - chrono::Duration::hours(hours);
        let order = |id: &str,
                     status: &str,
                     customer: (&str, &str),
                     item: &str,
                     total_cents: i64,
                     last: (&str, &str)| {
            let (customer_id, name) = customer;
            OrderDetail {
                order: Order {
                    id: id.into(),
                    customer_id: customer_id.into(),
                    status: status.into(),
                    total_cents,
                    currency: "USD".into(),
                    carrier: Some("SF Express".into()),
                    tracking_number: Some(format!("SF{:0>10}", &id[4..])),
                    shipping_address: "1 Test Street".into(),
                    placed_at: ago(96),
                    promised_by: Some(now + chrono::Duration::days(2)),
                    delivered_at: (status == "delivered").then(|| ago(2)),
                    anomaly: None,
                },
                customer: Customer {
                    id: customer_id.into(),
                    name: name.into(),
                    email: format!("{}@example.com", customer_id.to_lowercase()),
                    lang: "en".into(),
                    tier: "standard".into(),
                },
                items: vec![OrderItem {
                    sku: "SKU-42".into(),
                    name: item.into(),
                    quantity: 1,
                    unit_price_cents: total_cents,
                }],
                events: vec![
                    LogisticsEvent {
                        at: ago(72),
                        location: "Shenzhen".into(),
                        status: "picked_up".into(),
                        description: "Picked up by the carrier".into(),
                        is_anomaly: false,
                    },
                    LogisticsEvent {
                        at: ago(40),
                        location: "Hong Kong hub".into(),
                        status: "in_transit".into(),
                        description: "In transit".into(),
                        is_anomaly: false,
                    },
                    LogisticsEvent {
                        at: ago(6),
                        location: last.1.into(),
                        status: last.0.into(),
                        description: last.0.replace('_', " "),
                        is_anomaly: false,
                    },
                ],
            }
        };
        Self {
            orders: vec![
                order(
                    "ORD-123",
                    "delayed",
                    ("CUST-001", "Li Wei"),
                    "Ceramic table lamp",
                    5900,
                    ("exception", "Regional hub"),
                ),
                order(
                    "ORD-456",
                    "delivered",
                    ("CUST-002", "Emma Brown"),
                    "Linen bedding set",
                    12900,
                    ("delivered", "Front door"),
                ),
                order(
                    "ORD-789",
                    "lost",
                    ("CUST-003", "Zhang Min"),
                    "Wool throw blanket",
                    4550,
                    ("exception", "Hong Kong hub"),
                ),
                order(
                    "ORD-321",
                    "in_transit",
                    ("CUST-004", "Noah Smith"),
                    "Oak side table",
                    21000,
                    ("in_transit", "Shanghai hub"),
                ),
                order(
                    "ORD-654",
                    "refunded",
                    ("CUST-005", "Chen Jie"),
                    "Glass vase",
                    2500,
                    ("returned", "Warehouse"),
                ),
                order(
                    "ORD-111",
                    "processing",
                    ("CUST-006", "Ava Jones"),
                    "Desk organiser",
                    1990,
                    ("label_created", "Warehouse"),
                ),
            ],
            tickets: Mutex::default(),
            escalated: Mutex::default(),
            order_reads: AtomicUsize::new(0),
        }
    }
}

impl FakeBackend {
    /// How many tickets were really created.
    pub fn tickets_created(&self) -> usize {
        self.tickets.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// The conversations handed to a person, in order.
    pub fn escalated(&self) -> Vec<String> {
        self.escalated.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// How many times a tool read an order from this store.
    pub fn order_reads(&self) -> usize {
        self.order_reads.load(Ordering::Relaxed)
    }
}

/// Policy articles of the fake knowledge base: title, search words, text.
const ARTICLES: &[(&str, &str, &str)] = &[
    ("Return policy", "return refund 退货 退款 policy 政策", "Unused items can be returned within 30 days of delivery for a full refund; refunds reach your card in 5–7 working days."),
    ("Shipping times and fees", "shipping delivery fee 运费 配送 多久 how long", "Standard shipping takes 3–5 working days and is free above $50; express takes 1–2 days for $9."),
    ("Warranty", "warranty broken repair 保修 维修", "Furniture and lamps carry a 2-year warranty against manufacturing defects."),
    ("Invoices", "invoice receipt 发票", "Invoices are emailed when the order ships; ask us to re-send one at any time."),
];

#[async_trait]
impl SupportBackend for FakeBackend {
    async fn order(&self, order_id: &str) -> Result<Option<OrderDetail>, BackendError> {
        self.order_reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.orders.iter().find(|o| o.order.id == order_id).cloned())
    }

    async fn create_ticket(&self, new: &NewTicket) -> Result<Ticket, BackendError> {
        let mut tickets = self
            .tickets
            .lock()
            .map_err(|_| BackendError::Invalid("poisoned".into()))?;
        let n = tickets.len() + 1;
        let ticket = tickets
            .entry(new.idempotency_key.clone())
            .or_insert_with(|| Ticket {
                id: format!("TCK-{n:04}"),
                idempotency_key: new.idempotency_key.clone(),
                order_id: new.order_id.clone(),
                customer_id: new.customer_id.clone(),
                session_id: new.session_id.clone(),
                category: new.category.clone(),
                priority: new.priority.clone(),
                status: "open".into(),
                summary: new.summary.clone(),
                created_at: chrono::Utc::now(),
            });
        Ok(ticket.clone())
    }

    async fn search_knowledge(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ArticleHit>, BackendError> {
        let q = query.to_lowercase();
        Ok(ARTICLES
            .iter()
            .enumerate()
            .filter(|(_, (_, keys, _))| keys.split(' ').any(|k| q.contains(k)))
            .take(limit as usize)
            .map(|(i, (title, _, snippet))| ArticleHit {
                id: i as i64 + 1,
                slug: title.to_lowercase().replace(' ', "-"),
                title: (*title).into(),
                lang: "en".into(),
                category: "policy".into(),
                snippet: (*snippet).into(),
            })
            .collect())
    }

    async fn escalate(
        &self,
        session_id: &str,
        _customer_id: Option<&str>,
        _reason: &str,
    ) -> Result<(), BackendError> {
        if let Ok(mut e) = self.escalated.lock() {
            e.push(session_id.to_owned());
        }
        Ok(())
    }
}

/// The five support tools over a new [`FakeBackend`].
pub fn fake_tools() -> ToolRegistry {
    fake_tools_with(Arc::new(FakeBackend::default()))
}

/// The five support tools over `backend` (keep a handle to inspect it).
pub fn fake_tools_with(backend: Arc<FakeBackend>) -> ToolRegistry {
    support_tools(backend)
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
/// `id` is the provider's id the scripted model sends (the engine gives the
/// call one of its own); an empty `id` sends none.
pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: String::new(),
        provider_id: (!id.is_empty()).then(|| id.to_owned()),
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
                    id: c.provider_id,
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

/// A model whose reply runs away: `piece` streamed `times` times, made as it
/// is read (so a 9 MB reply costs the test nothing until it is read), then
/// `stop`. It counts the pieces read, which shows when a caller stops early.
#[derive(Debug, Clone)]
pub struct RunawayModel {
    piece: String,
    times: usize,
    read: Arc<AtomicUsize>,
}

impl RunawayModel {
    pub fn new(piece: impl Into<String>, times: usize) -> Self {
        Self {
            piece: piece.into(),
            times,
            read: Arc::default(),
        }
    }

    /// The bytes of the whole reply, were it all read.
    pub fn reply_len(&self) -> usize {
        self.piece.len() * self.times
    }

    /// How many pieces were read, over all calls.
    pub fn pieces_read(&self) -> usize {
        self.read.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl ChatModel for RunawayModel {
    fn name(&self) -> String {
        "runaway".into()
    }

    async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> {
        let (piece, read) = (self.piece.clone(), self.read.clone());
        let text = stream::iter(0..self.times).map(move |_| {
            read.fetch_add(1, Ordering::Relaxed);
            Ok(ModelChunk::Text(piece.clone()))
        });
        let end = stream::iter([Ok(ModelChunk::Finish(FinishReason::Stop))]);
        Ok(text.chain(end).boxed())
    }
}
