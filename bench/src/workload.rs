//! The workload of `shared/bench/langgraph/README.md`, on the aics engine.
//!
//! Graph: `START → init_state → memory_trigger → agent ⇄ tools → finalize → END`,
//! the same state fields, the same fake model (call 1 → `order_query`, call 2
//! → `ticket_create`, call 3 → a 60-token answer streamed one chunk per
//! token), the same two tools, a new thread id per turn, and the same checks
//! on every turn. The tools are the product's own (`aics_agent::tools`) over
//! [`BenchBackend`], a fixed shop in memory. The model is called through
//! [`stream_call`]; every token is reported as the node's progress, and an
//! observer sends it through a channel to the caller, who counts the ones
//! streamed inside the `agent` node (the path a token takes to a browser).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use aics_agent::llm::{stream_call, Streamed, TokenRoute};
use aics_agent::model::{
    ChatModel, FinishReason, Message, ModelChunk, ModelError, ModelRequest, ModelStream, ToolCall,
};
use aics_agent::tool::{ToolContext, ToolRegistry};
use aics_agent::tools::{support_tools, BackendError, NewTicket, SupportBackend};
use aics_graph::{
    Checkpointer, Encoded, FnNode, Graph, GraphBuilder, Next, Node, NodeContext, NodeError,
    Observer, END, START,
};
use aics_types::{ArticleHit, Customer, LogisticsEvent, Order, OrderDetail, OrderItem, Ticket};
use async_trait::async_trait;
use futures::stream::{self, StreamExt};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const FINAL_WORDS: [&str; 60] = [
    "Thanks",
    "for",
    "your",
    "patience.",
    "Your",
    "order",
    "ORD-123",
    "is",
    "currently",
    "delayed",
    "at",
    "the",
    "regional",
    "hub",
    "because",
    "of",
    "a",
    "carrier",
    "backlog.",
    "The",
    "latest",
    "scan",
    "shows",
    "it",
    "left",
    "the",
    "sorting",
    "center",
    "this",
    "morning.",
    "I",
    "have",
    "opened",
    "complaint",
    "ticket",
    "TCK-0001",
    "so",
    "our",
    "logistics",
    "team",
    "can",
    "follow",
    "up",
    "and",
    "expedite",
    "delivery.",
    "You",
    "will",
    "receive",
    "an",
    "email",
    "update",
    "within",
    "24",
    "hours.",
    "Is",
    "there",
    "anything",
    "else?",
    "Bye.",
];

/// The 60 streamed tokens: each word with a trailing space, the last without.
static FINAL_TOKENS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let last = FINAL_WORDS.len() - 1;
    FINAL_WORDS
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i < last {
                format!("{w} ")
            } else {
                (*w).to_owned()
            }
        })
        .collect()
});

/// The expected final reply.
pub static FINAL_TEXT: LazyLock<String> = LazyLock::new(|| FINAL_TOKENS.concat());

const TICKET_SUMMARY: &str =
    "Customer reports order ORD-123 is delayed; requests an update and compensation.";
const USER_MSG: &str =
    "Hi, my order ORD-123 hasn't arrived yet and it's a week late. Please remember I prefer email.";

/// The arguments of the model's two tool calls, as a provider streams
/// them: JSON text, the same every turn.
static ORDER_ARGS: LazyLock<String> = LazyLock::new(|| json!({"order_id": "ORD-123"}).to_string());
static TICKET_ARGS: LazyLock<String> = LazyLock::new(|| {
    json!({"order_id": "ORD-123", "category": "complaint", "summary": TICKET_SUMMARY}).to_string()
});

#[allow(clippy::expect_used)] // a literal pattern
static MEMORY_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(remember|my name is|i prefer|always|never|call me)\b").expect("regex")
});

/// The graph state (the Python `State` TypedDict).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Each message's JSON is written once ([`Encoded`]).
    pub messages: Vec<Encoded<Message>>,
    pub current_step: u32,
    pub max_steps: u32,
    pub tool_call_history: Vec<Encoded<Value>>,
    pub tool_result_history: Vec<Encoded<Value>>,
    pub stop: bool,
    pub stop_reason: Option<String>,
    pub memory_triggered: bool,
    pub final_reply: String,
    pub metadata: Option<Value>,
}

impl aics_graph::State for State {
    type Resume = ();
    /// A streamed token.
    type Progress = String;
}

/// The fake chat model: deterministic, never sleeps or awaits I/O.
pub struct FakeReactModel;

#[async_trait]
impl ChatModel for FakeReactModel {
    fn name(&self) -> String {
        "fake-react".into()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let index = 1 + request
            .messages
            .iter()
            .filter(|m| matches!(***m, Message::Assistant { .. }))
            .count();
        let call = match index {
            1 => Some(("order_query", &*ORDER_ARGS, "call_x_1")),
            2 => Some(("ticket_create", &*TICKET_ARGS, "call_x_2")),
            _ => None,
        };
        let chunks: Vec<Result<ModelChunk, ModelError>> = match call {
            // A tool call comes as one chunk, as in the Python fake.
            Some((name, args, id)) => vec![
                Ok(ModelChunk::ToolCallDelta {
                    index: 0,
                    id: Some(id.into()),
                    name: Some(name.into()),
                    arguments: args.clone(),
                }),
                Ok(ModelChunk::Finish(FinishReason::ToolCalls)),
            ],
            None => FINAL_TOKENS
                .iter()
                .map(|t| Ok(ModelChunk::Text(t.clone())))
                .chain([Ok(ModelChunk::Finish(FinishReason::Stop))])
                .collect(),
        };
        Ok(stream::iter(chunks).boxed())
    }
}

fn at(text: &str) -> aics_types::Timestamp {
    text.parse().unwrap_or_default()
}

/// The shop of the benchmark: ORD-123, delayed, one item, three logistics
/// events; every ticket is TCK-0001.
pub struct BenchBackend {
    order: OrderDetail,
}

impl Default for BenchBackend {
    fn default() -> Self {
        let event = |ts: &str, status: &str, location: &str| LogisticsEvent {
            at: at(ts),
            location: location.into(),
            status: status.into(),
            description: status.replace('_', " "),
            is_anomaly: false,
        };
        Self {
            order: OrderDetail {
                order: Order {
                    id: "ORD-123".into(),
                    customer_id: "CUST-001".into(),
                    status: "delayed".into(),
                    total_cents: 5900,
                    currency: "USD".into(),
                    carrier: Some("SF Express".into()),
                    tracking_number: Some("SF123".into()),
                    shipping_address: "1 Bench Street".into(),
                    placed_at: at("2024-04-30T10:00:00Z"),
                    promised_by: None,
                    delivered_at: None,
                    anomaly: None,
                },
                customer: Customer {
                    id: "CUST-001".into(),
                    name: "Li Wei".into(),
                    email: "li.wei@example.com".into(),
                    lang: "en".into(),
                    tier: "standard".into(),
                },
                items: vec![OrderItem {
                    sku: "SKU-42".into(),
                    name: "Ceramic table lamp".into(),
                    quantity: 1,
                    unit_price_cents: 5900,
                }],
                events: vec![
                    event("2024-05-01T08:00:00Z", "picked_up", "Shenzhen"),
                    event("2024-05-02T12:30:00Z", "in_transit", "Hong Kong hub"),
                    event("2024-05-04T09:15:00Z", "delayed", "Regional hub"),
                ],
            },
        }
    }
}

#[async_trait]
impl SupportBackend for BenchBackend {
    async fn order(&self, order_id: &str) -> Result<Option<OrderDetail>, BackendError> {
        Ok((order_id == self.order.order.id).then(|| self.order.clone()))
    }

    async fn create_ticket(&self, t: &NewTicket) -> Result<Ticket, BackendError> {
        Ok(Ticket {
            id: "TCK-0001".into(),
            idempotency_key: t.idempotency_key.clone(),
            order_id: t.order_id.clone(),
            customer_id: t.customer_id.clone(),
            session_id: t.session_id.clone(),
            category: t.category.clone(),
            priority: t.priority.clone(),
            status: "open".into(),
            summary: t.summary.clone(),
            created_at: at("2024-05-05T00:00:00Z"),
        })
    }

    async fn search_knowledge(&self, _: &str, _: u32) -> Result<Vec<ArticleHit>, BackendError> {
        Ok(Vec::new())
    }

    async fn escalate(&self, _: &str, _: Option<&str>, _: &str) -> Result<(), BackendError> {
        Ok(())
    }
}

struct AgentNode(Arc<dyn ChatModel>);

#[async_trait]
impl Node<State> for AgentNode {
    async fn run(&self, s: &mut State, ctx: &NodeContext<'_, State>) -> Result<Next, NodeError> {
        let step = s.current_step + 1;
        // Like `llm.ainvoke(messages)`: the fake is called without bound
        // tools, and given the state's messages (shared, not copied).
        let request = ModelRequest {
            messages: s.messages.iter().map(Encoded::shared).collect(),
            ..ModelRequest::default()
        };
        let mut forward = |text: Streamed| {
            if let Streamed::Reply(token) = text {
                ctx.progress(token);
            }
        };
        let ai = stream_call(
            self.0.as_ref(),
            request,
            TokenRoute::Reply,
            Duration::from_secs(30),
            &mut forward,
        )
        .await
        .map_err(|e| NodeError::with_source("the model failed", e))?;
        let has_calls = !ai.tool_calls.is_empty();
        s.messages.push(Encoded::new(Message::Assistant {
            content: ai.content,
            tool_calls: ai.tool_calls,
        }));
        s.current_step = step;
        if !has_calls {
            s.stop = true;
            s.stop_reason = Some("final_answer".into());
        } else if step >= s.max_steps {
            s.stop = true;
            s.stop_reason = Some("max_steps".into());
        }
        Ok(Next::Continue)
    }
}

struct ToolsNode(ToolRegistry);

#[async_trait]
impl Node<State> for ToolsNode {
    async fn run(&self, s: &mut State, ctx: &NodeContext<'_, State>) -> Result<Next, NodeError> {
        let calls: Vec<ToolCall> = match s.messages.last().map(|m| &**m) {
            Some(Message::Assistant { tool_calls, .. }) => tool_calls.clone(),
            _ => Vec::new(),
        };
        for call in calls {
            let tool = self
                .0
                .get(&call.name)
                .ok_or_else(|| NodeError::new(format!("unknown tool {}", call.name)))?;
            let tctx = ToolContext {
                graph_execution_id: ctx.thread_id.to_owned(),
                tool_call_id: call.id.clone(),
                ..ToolContext::default()
            };
            let out = tool
                .call(&tctx, call.arguments.clone())
                .await
                .map_err(|e| NodeError::with_source("a tool failed", e))?;
            let content = aics_agent::tool::result_text(&out);
            // The history holds the call's own arguments, as the Python
            // dict refers to them (`json!` would copy the tree).
            let mut sig = json!({"name": call.name, "id": call.id});
            sig["args"] = call.arguments;
            s.tool_call_history.push(sig.into());
            s.tool_result_history
                .push(json!({"id": call.id, "name": call.name, "content": content}).into());
            s.messages.push(Encoded::new(Message::Tool {
                tool_call_id: call.id,
                name: call.name,
                content,
            }));
        }
        Ok(Next::Continue)
    }
}

fn route_after_agent(s: &State) -> &'static str {
    let has_calls = matches!(s.messages.last().map(|m| &**m), Some(Message::Assistant { tool_calls, .. }) if !tool_calls.is_empty());
    if !s.stop && has_calls {
        "tools"
    } else {
        "finalize"
    }
}

/// Builds the benchmark graph with checkpoints written as `durability` says.
pub fn build_graph(
    durability: aics_graph::Durability,
) -> Result<Graph<State>, aics_graph::GraphError> {
    let tools: ToolRegistry = support_tools(Arc::new(BenchBackend::default()));
    GraphBuilder::new()
        .durability(durability)
        .add_node(
            "init_state",
            FnNode::new(|s: &mut State, _| {
                s.current_step = 0;
                s.max_steps = 5;
                s.stop = false;
                s.stop_reason = None;
                Ok(Next::Continue)
            }),
        )
        .add_node(
            "memory_trigger",
            FnNode::new(|s: &mut State, _| {
                let user = s.messages.iter().rev().find_map(|m| match &**m {
                    Message::User { content } => Some(content.as_str()),
                    _ => None,
                });
                s.memory_triggered = user.is_some_and(|u| MEMORY_RE.is_match(u));
                Ok(Next::Continue)
            }),
        )
        .add_node("agent", AgentNode(Arc::new(FakeReactModel)))
        .add_node("tools", ToolsNode(tools))
        .add_node(
            "finalize",
            FnNode::new(|s: &mut State, _| {
                s.final_reply = match s.messages.last().map(|m| &**m) {
                    Some(Message::Assistant { content, .. }) => content.clone(),
                    _ => String::new(),
                };
                let tools_used: Vec<Value> = s
                    .tool_call_history
                    .iter()
                    .map(|c| c["name"].clone())
                    .collect();
                let llm_calls = s
                    .messages
                    .iter()
                    .filter(|m| matches!(***m, Message::Assistant { .. }))
                    .count();
                s.metadata = Some(json!({
                    "steps_taken": s.current_step,
                    "tools_used": tools_used,
                    "stop_reason": s.stop_reason.clone().unwrap_or_else(|| "final_answer".into()),
                    "llm_calls": llm_calls,
                }));
                Ok(Next::Continue)
            }),
        )
        .add_edge(START, "init_state")
        .add_edge("init_state", "memory_trigger")
        .add_edge("memory_trigger", "agent")
        .add_conditional_edges("agent", ["tools", "finalize"], route_after_agent)
        .add_edge("tools", "agent")
        .add_edge("finalize", END)
        .compile()
}

/// A turn that failed its checks.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("the graph failed: {0}")]
    Graph(#[from] aics_graph::GraphError),
    #[error("expected 60 streamed tokens, got {0}")]
    Tokens(usize),
    #[error("bad final output: reply={reply:?} metadata={metadata:?}")]
    Output {
        reply: String,
        metadata: Option<Value>,
    },
    #[error("expected {expected} checkpoints, found {found}")]
    Checkpoints { expected: usize, found: usize },
}

/// Sends the tokens streamed inside the `agent` node to the caller.
struct TokenSink(mpsc::UnboundedSender<String>);

impl Observer<State> for TokenSink {
    fn progress(&self, _thread_id: &str, node: &str, token: String) {
        if node == "agent" {
            let _ = self.0.send(token);
        }
    }
}

/// How each turn's new thread is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadIds {
    /// A random UUID (v4), as the workload prescribes: a caller names the
    /// thread, as LangGraph's callers do.
    Random,
    /// A UUID that sorts by time, as the server names every turn's thread
    /// (`aics_graph::new_id`): the rows of one turn after another then
    /// append to the checkpoints' index instead of each landing on a
    /// random page of it.
    Time,
}

impl ThreadIds {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "random" => Some(Self::Random),
            "time" => Some(Self::Time),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::Time => "time",
        }
    }

    fn next(self) -> String {
        match self {
            Self::Random => uuid::Uuid::new_v4().to_string(),
            Self::Time => aics_graph::new_id(),
        }
    }
}

/// One turn: a new thread, the user message, the token stream consumed and
/// the tokens of the `agent` node counted, then the checks.
pub async fn run_turn(
    graph: &Graph<State>,
    checkpointer: &dyn Checkpointer,
    ids: ThreadIds,
) -> Result<String, TurnError> {
    let thread_id = ids.next();
    let state = State {
        messages: vec![Message::user(USER_MSG).into()],
        ..State::default()
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let consume = async move {
        let mut tokens = 0usize;
        while let Some(token) = rx.recv().await {
            if !token.is_empty() {
                tokens += 1;
            }
        }
        tokens
    };
    let run = async move {
        let observer = TokenSink(tx);
        graph
            .invoke(&thread_id, state, checkpointer, &observer)
            .await
            .map(|o| (o, thread_id))
    };
    let (outcome, tokens) = tokio::join!(run, consume);
    let (outcome, thread_id) = outcome?;
    if tokens != 60 {
        return Err(TurnError::Tokens(tokens));
    }
    let expected = json!({
        "steps_taken": 3,
        "tools_used": ["order_query", "ticket_create"],
        "stop_reason": "final_answer",
        "llm_calls": 3,
    });
    let s = outcome.state;
    if s.final_reply != *FINAL_TEXT || s.metadata.as_ref() != Some(&expected) {
        return Err(TurnError::Output {
            reply: s.final_reply,
            metadata: s.metadata,
        });
    }
    Ok(thread_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aics_graph::MemoryCheckpointer;

    #[tokio::test]
    async fn one_turn_passes_its_checks_and_writes_its_input_and_eight_checkpoints() {
        let graph = build_graph(aics_graph::Durability::Sync).expect("graph");
        let cp = MemoryCheckpointer::new();
        let thread = run_turn(&graph, &cp, ThreadIds::Random)
            .await
            .expect("turn");
        assert_eq!(
            uuid::Uuid::parse_str(&thread).map(|u| u.get_version_num()),
            Ok(4)
        );
        let steps = cp.list(&thread).await.expect("list");
        let nodes: Vec<&str> = steps.iter().map(|c| c.node.as_str()).collect();
        assert_eq!(
            nodes,
            [
                "__start__",
                "init_state",
                "memory_trigger",
                "agent",
                "tools",
                "agent",
                "tools",
                "agent",
                "finalize"
            ]
        );
        assert_eq!(FINAL_TOKENS.len(), 60);
    }

    #[tokio::test]
    async fn time_ordered_threads_are_named_as_the_server_names_them() {
        let graph = build_graph(aics_graph::Durability::Sync).expect("graph");
        let cp = MemoryCheckpointer::new();
        let first = run_turn(&graph, &cp, ThreadIds::Time).await.expect("turn");
        let second = run_turn(&graph, &cp, ThreadIds::Time).await.expect("turn");
        assert_eq!(
            uuid::Uuid::parse_str(&first).map(|u| u.get_version_num()),
            Ok(7)
        );
        assert!(first < second, "{first} then {second}");
        assert_eq!(ThreadIds::parse("time"), Some(ThreadIds::Time));
        assert_eq!(ThreadIds::parse("v4"), None);
    }
}
