//! Graph tests of the support agent with scripted models and the demo model.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aics_agent::demo::{DemoConfig, DemoFaults, DemoModel};
use aics_agent::memory::{InMemoryMemoryStore, MemoryStore};
use aics_agent::model::{ChatModel, Message, ModelError};
use aics_agent::testing::{
    call, fake_tools, fake_tools_with, FailingTool, FakeBackend, Scripted, ScriptedModel, SlowTool,
};
use aics_agent::tool::ToolRegistry;
use aics_agent::{
    Decision, EngineKind, EventSink, PlanProtocol, SupportAgent, SupportConfig, TurnInput,
};
use aics_graph::{Checkpointer, MemoryCheckpointer};
use aics_types::{AgentEvent, ChatTurnTraceResult, Intent, StopReason, ToolCallStatus};
use serde_json::json;

struct Fixture {
    agent: SupportAgent,
    checkpointer: Arc<MemoryCheckpointer>,
    memory: Arc<InMemoryMemoryStore>,
}

fn fixture(model: Arc<dyn ChatModel>, tools: ToolRegistry, config: SupportConfig) -> Fixture {
    let checkpointer = Arc::new(MemoryCheckpointer::new());
    let memory = Arc::new(InMemoryMemoryStore::default());
    let agent = SupportAgent::new(model, tools, checkpointer.clone(), memory.clone(), config);
    Fixture {
        agent,
        checkpointer,
        memory,
    }
}

fn demo(config: SupportConfig) -> Fixture {
    fixture(Arc::new(DemoModel::instant()), fake_tools(), config)
}

async fn turn(agent: &SupportAgent, input: TurnInput) -> (ChatTurnTraceResult, Vec<AgentEvent>) {
    let (sink, mut rx) = EventSink::channel();
    let collect = async {
        let mut all = Vec::new();
        while let Some(ev) = rx.recv().await {
            all.push(ev);
        }
        all
    };
    let id = uuid::Uuid::new_v4().to_string();
    let run = async move { agent.run_turn(&id, input, &sink).await };
    let (trace, events) = tokio::join!(run, collect);
    (trace.expect("turn"), events)
}

async fn resume(
    agent: &SupportAgent,
    id: &str,
    decisions: Vec<(&str, Decision)>,
) -> (ChatTurnTraceResult, Vec<AgentEvent>) {
    let (sink, mut rx) = EventSink::channel();
    let decisions: HashMap<String, Decision> = decisions
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let collect = async {
        let mut all = Vec::new();
        while let Some(ev) = rx.recv().await {
            all.push(ev);
        }
        all
    };
    let run = async move { agent.resume(id, decisions, &sink).await };
    let (trace, events) = tokio::join!(run, collect);
    (trace.expect("resume"), events)
}

fn names(trace: &ChatTurnTraceResult) -> Vec<&str> {
    trace.tool_calls.iter().map(|c| c.name.as_str()).collect()
}

fn tokens(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::LlmToken { token, .. } => Some(token.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn seed_004_chain_with_the_demo_model_pauses_for_the_complaint_ticket_then_replies() {
    let f = demo(SupportConfig::default());
    let msg = "订单ORD-123一直没收到，帮我查一下并创建投诉工单";
    let (paused, events) = turn(&f.agent, TurnInput::new("react-demo", msg)).await;
    assert_eq!(paused.intent, Intent::Complaint);
    assert!(paused.pending_approval);
    assert_eq!(paused.stop_reason, Some(StopReason::AwaitingApproval));
    // The approval token is the service's to mint, not the engine's.
    assert_eq!(paused.approval_token, None);
    assert_eq!(names(&paused), ["order_query", "ticket_create"]);
    assert_eq!(paused.tool_calls[0].status, ToolCallStatus::Ok);
    assert_eq!(paused.tool_calls[1].status, ToolCallStatus::Pending);
    assert_eq!(paused.pending_tool_calls.len(), 1);
    assert_eq!(paused.pending_tool_calls[0].args["category"], "complaint");
    assert_eq!(
        paused.executed_nodes,
        [
            "init_state",
            "memory_trigger",
            "route",
            "agent",
            "tools",
            "agent",
            "approval"
        ]
    );
    // The pause is the outcome; announcing it is the service's, once stored.
    assert!(!events.iter().any(|e| matches!(
        e,
        AgentEvent::ApprovalRequired { .. } | AgentEvent::Final { .. }
    )));
    assert!(matches!(events.last(), Some(AgentEvent::NodeEnd { node }) if node == "approval"));

    let id = paused.graph_execution_id.clone();
    let ticket_id = paused.pending_tool_calls[0].id.clone();
    let (done, _) = resume(
        &f.agent,
        &id,
        vec![(&ticket_id, Decision::Approve { args: None })],
    )
    .await;
    assert!(!done.pending_approval);
    assert_eq!(done.approval_token, None);
    assert_eq!(done.stop_reason, Some(StopReason::FinalAnswer));
    assert_eq!(done.tools_used, ["order_query", "ticket_create"]);
    assert_eq!(done.llm_calls, 3);
    assert_eq!(done.steps_taken, 2);
    assert!(
        done.reply.contains("ORD-123") && done.reply.contains("运输延误"),
        "{}",
        done.reply
    );
    assert!(done.reply.contains("TCK-0001"), "{}", done.reply);
    assert_eq!(done.tool_calls[1].status, ToolCallStatus::Ok);
    assert_eq!(
        done.executed_nodes.last().map(String::as_str),
        Some("finalize")
    );
    assert!(done.usage.total_tokens > 0);

    // Resuming again is harmless: nothing runs, the same reply comes back.
    let (again, _) = resume(
        &f.agent,
        &id,
        vec![(&ticket_id, Decision::Approve { args: None })],
    )
    .await;
    assert_eq!(again.reply, done.reply);
    assert_eq!(again.tool_calls.len(), 2);
}

#[tokio::test]
async fn seed_004_chain_with_a_scripted_model_and_numbered_results_in_the_json_plan() {
    let model = Arc::new(ScriptedModel::new([
        Scripted::Text(r#"{"action":"call_tool","toolName":"order_query","toolInput":"ORD-123"}"#.into()),
        Scripted::Text(r#"{"action":"call_tool","toolName":"ticket_create","toolInput":{"order_id":"ORD-123","category":"inquiry","summary":"late"}}"#.into()),
        Scripted::Text(r#"{"action":"respond","toolName":"","toolInput":""}"#.into()),
        Scripted::Text("Your order ORD-123 is delayed; ticket TCK-0001 is open.".into()),
    ]));
    let config = SupportConfig {
        protocol: PlanProtocol::JsonPlan,
        ..Default::default()
    };
    let f = fixture(model.clone(), fake_tools(), config);
    // A question, not a complaint: an inquiry ticket of a complaint would
    // wait for a supervisor (the approval policy's intent check).
    let (trace, events) = turn(
        &f.agent,
        TurnInput::new("s", "订单123现在在哪里？帮我建个咨询工单"),
    )
    .await;
    assert_eq!(
        trace.reply,
        "Your order ORD-123 is delayed; ticket TCK-0001 is open."
    );
    assert_eq!(names(&trace), ["order_query", "ticket_create"]);
    assert_eq!(trace.tool_calls[0].input, json!({"order_id": "ORD-123"}));
    assert_eq!(trace.llm_calls, 4);
    let requests = model.requests();
    assert!(requests.iter().all(|r| r.tools.is_empty()));
    let Message::System { content } = &*requests[2].messages[0] else {
        panic!("system first")
    };
    assert!(
        content.contains("### 工具结果\n[1] order_query\n{"),
        "{content}"
    );
    assert!(
        content.contains("}\n\n[2] ticket_create\n{\"category\":\"inquiry\""),
        "{content}"
    );
    assert!(content.contains("Reply with exactly one JSON object"));
    // The plan text is reasoning, only the answer is reply tokens.
    assert_eq!(tokens(&events), trace.reply);
}

#[tokio::test]
async fn an_unparsable_json_plan_falls_back_to_respond() {
    let model = Arc::new(ScriptedModel::new([
        Scripted::Text("Let me think about order_query...".into()),
        Scripted::Text("Happy to help!".into()),
    ]));
    let config = SupportConfig {
        protocol: PlanProtocol::JsonPlan,
        ..Default::default()
    };
    let f = fixture(model.clone(), fake_tools(), config);
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "hi")).await;
    assert_eq!(trace.reply, "Happy to help!");
    assert!(trace.tool_calls.is_empty());
    assert_eq!(trace.llm_calls, 2);
    assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    let Message::System { content } = &*model.requests()[1].messages[0] else {
        panic!()
    };
    assert!(!content.contains("Reply with exactly one JSON object"));
}

#[tokio::test]
async fn the_same_call_with_the_same_result_twice_is_a_loop() {
    let model = Arc::new(ScriptedModel::always(Scripted::Calls(vec![call(
        "",
        "order_query",
        json!({"order_id": "ORD-123"}),
    )])));
    let f = fixture(model.clone(), fake_tools(), SupportConfig::default());
    let (trace, events) = turn(&f.agent, TurnInput::new("s", "where is ORD-123")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::LoopDetected));
    assert_eq!(trace.tool_calls.len(), 2);
    assert_ne!(
        trace.tool_calls[0].id, trace.tool_calls[1].id,
        "ids are made unique"
    );
    assert_eq!(trace.llm_calls, 2);
    assert!(trace.reply.contains("repeating"), "{}", trace.reply);
    assert_eq!(tokens(&events), trace.reply);
}

#[tokio::test]
async fn the_demo_models_repeat_fault_is_caught_by_loop_detection() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        faults: DemoFaults {
            repeat_call: true,
            ..Default::default()
        },
        ..Default::default()
    });
    let f = fixture(Arc::new(model), fake_tools(), SupportConfig::default());
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "订单123在哪")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::LoopDetected));
    assert!(trace.reply.contains("重复"), "{}", trace.reply);
}

#[tokio::test]
async fn at_the_tool_loop_limit_the_model_is_called_without_tools() {
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![call(
            "a",
            "order_query",
            json!({"order_id": "ORD-123"}),
        )]),
        Scripted::Calls(vec![call(
            "b",
            "order_query",
            json!({"order_id": "ORD-456"}),
        )]),
        Scripted::Text("Both orders checked.".into()),
    ]));
    let config = SupportConfig {
        max_tool_loops: 2,
        ..Default::default()
    };
    let f = fixture(model.clone(), fake_tools(), config);
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "check my orders")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::ToolLoopLimit));
    assert_eq!(trace.steps_taken, 2);
    assert_eq!(trace.reply, "Both orders checked.");
    let requests = model.requests();
    assert!(!requests[1].tools.is_empty());
    assert!(requests[2].tools.is_empty());
    assert_eq!(requests[2].tool_choice, aics_agent::model::ToolChoice::None);
}

#[tokio::test]
async fn calls_the_model_makes_at_the_limit_are_dropped_and_explained() {
    let model = Arc::new(ScriptedModel::always(Scripted::Calls(vec![call(
        "",
        "knowledge_search",
        json!({"query": "x"}),
    )])));
    let config = SupportConfig {
        max_tool_loops: 1,
        ..Default::default()
    };
    let f = fixture(model, fake_tools(), config);
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "policy?")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::ToolLoopLimit));
    assert_eq!(trace.tool_calls.len(), 1);
    assert!(trace.reply.contains("limit"), "{}", trace.reply);
}

#[tokio::test(start_paused = true)]
async fn the_calls_of_one_step_run_concurrently() {
    let a = SlowTool::new("slow_a", Duration::from_millis(300));
    let b = SlowTool {
        name: "slow_b",
        ..a.clone()
    };
    let tools = ToolRegistry::new().with(a.clone()).with(b);
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![
            call("1", "slow_a", json!({})),
            call("2", "slow_b", json!({})),
        ]),
        Scripted::Text("done".into()),
    ]));
    let f = fixture(model, tools, SupportConfig::default());
    let started = tokio::time::Instant::now();
    let (trace, events) = turn(&f.agent, TurnInput::new("s", "go")).await;
    assert_eq!(a.max_running.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(started.elapsed() < Duration::from_millis(450));
    assert_eq!(trace.steps_taken, 1);
    assert!(trace
        .tool_calls
        .iter()
        .all(|c| c.status == ToolCallStatus::Ok));
    let starts = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolStart { .. }))
        .count();
    assert_eq!(starts, 2);
}

#[tokio::test]
async fn the_calls_of_one_step_read_an_order_once_and_the_next_step_afresh() {
    let backend = Arc::new(FakeBackend::default());
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![
            call("1", "order_query", json!({"order_id": "ORD-123"})),
            call("2", "logistics_track", json!({"order_id": "123"})),
            call("3", "order_query", json!({"order_id": "ORD-456"})),
        ]),
        Scripted::Calls(vec![call(
            "4",
            "order_query",
            json!({"order_id": "ORD-123"}),
        )]),
        Scripted::Text("done".into()),
    ]));
    let f = fixture(
        model,
        fake_tools_with(backend.clone()),
        SupportConfig::default(),
    );
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "where are my orders")).await;
    assert_eq!(trace.steps_taken, 2);
    // Step one: ORD-123 for two tools (one of them asked as "123"), and
    // ORD-456; step two: ORD-123 again, read anew.
    assert_eq!(backend.order_reads(), 3);
    let outputs: Vec<_> = trace.tool_calls.iter().map(|c| &c.output).collect();
    assert_eq!(outputs[0]["order_id"], "ORD-123");
    assert_eq!(outputs[1]["order_id"], "ORD-123");
    assert!(outputs[1]["events"]
        .as_array()
        .is_some_and(|e| !e.is_empty()));
    assert_eq!(outputs[2]["order_id"], "ORD-456");
    assert_eq!(outputs[3]["status"], outputs[0]["status"]);
}

#[tokio::test]
async fn failing_unknown_and_malformed_calls_become_error_results_the_model_sees() {
    let tools = fake_tools().with(FailingTool("crm_lookup"));
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![
            call("1", "crm_lookup", json!({})),
            call("2", "no_such_tool", json!({})),
            call("3", "order_query", json!("{\"order_id\": ORD")),
            call("4", "order_query", json!({"id": 5})),
        ]),
        Scripted::Text("Sorry, our systems are struggling.".into()),
    ]));
    let f = fixture(model.clone(), tools, SupportConfig::default());
    let (trace, events) = turn(&f.agent, TurnInput::new("s", "hello")).await;
    assert_eq!(trace.reply, "Sorry, our systems are struggling.");
    assert!(trace
        .tool_calls
        .iter()
        .all(|c| c.status == ToolCallStatus::Error));
    let errors: Vec<String> = trace
        .tool_calls
        .iter()
        .map(|c| c.output["error"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(errors[0].contains("unreachable"));
    assert!(errors[1].contains("unknown tool: no_such_tool"));
    assert!(errors[2].contains("invalid arguments"));
    assert!(errors[3].contains("invalid arguments"));
    let tool_messages = model.requests()[1]
        .messages
        .iter()
        .filter(|m| matches!(&***m, Message::Tool { content, .. } if content.contains("error")))
        .count();
    assert_eq!(tool_messages, 4);
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::ToolEnd(end) if end.status() == ToolCallStatus::Error
    )));
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_takes_too_long_times_out() {
    let tools = ToolRegistry::new().with(SlowTool::new("slow", Duration::from_secs(60)));
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![call("1", "slow", json!({}))]),
        Scripted::Text("It timed out.".into()),
    ]));
    let config = SupportConfig {
        tool_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let f = fixture(model, tools, config);
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "go")).await;
    assert_eq!(trace.tool_calls[0].status, ToolCallStatus::Error);
    assert!(trace.tool_calls[0].output["error"]
        .as_str()
        .unwrap_or("")
        .contains("timed out"));
    assert_eq!(trace.reply, "It timed out.");
}

fn complaint_script() -> ScriptedModel {
    ScriptedModel::new([
        Scripted::Calls(vec![call(
            "t1",
            "ticket_create",
            json!({"order_id": "ORD-123", "category": "complaint", "summary": "late"}),
        )]),
        Scripted::Text("Done.".into()),
    ])
}

#[tokio::test]
async fn approve_runs_the_call_with_the_supervisors_edited_arguments() {
    let tickets = Arc::new(FakeBackend::default());
    let tools = fake_tools_with(tickets.clone());
    let model = Arc::new(complaint_script());
    let f = fixture(model.clone(), tools, SupportConfig::default());
    let (paused, _) = turn(&f.agent, TurnInput::new("s", "complain")).await;
    assert!(paused.pending_approval);
    assert_eq!(
        tickets.tickets_created(),
        0,
        "nothing runs before the decision"
    );
    let edited =
        json!({"order_id": "ORD-123", "category": "complaint", "summary": "late by a week"});
    let call_id = paused.pending_tool_calls[0].id.clone();
    let (done, events) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(
            &call_id,
            Decision::Approve {
                args: Some(edited.clone()),
            },
        )],
    )
    .await;
    assert_eq!(tickets.tickets_created(), 1);
    assert_eq!(done.tool_calls[0].status, ToolCallStatus::Ok);
    assert_eq!(done.tool_calls[0].input, edited);
    assert_eq!(done.tool_calls[0].output["summary"], "late by a week");
    assert!(matches!(
        &events[0],
        AgentEvent::NodeStart { node } if node == "approval"
    ));
    assert_eq!(done.reply, "Done.");
}

#[tokio::test]
async fn reject_gives_the_model_the_supervisors_reason() {
    let tickets = Arc::new(FakeBackend::default());
    let tools = fake_tools_with(tickets.clone());
    let model = Arc::new(complaint_script());
    let f = fixture(model.clone(), tools, SupportConfig::default());
    let (paused, _) = turn(&f.agent, TurnInput::new("s", "complain")).await;
    let call_id = paused.pending_tool_calls[0].id.clone();
    let (done, _) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(
            &call_id,
            Decision::Reject {
                reason: "duplicate of TCK-0007".into(),
            },
        )],
    )
    .await;
    assert_eq!(tickets.tickets_created(), 0);
    assert_eq!(done.tool_calls[0].status, ToolCallStatus::Denied);
    let seen = model.requests()[1].messages.iter().any(|m| {
        matches!(&**m, Message::Tool { content, .. } if content == "denied by supervisor: duplicate of TCK-0007")
    });
    assert!(seen);
}

#[tokio::test]
async fn a_new_agent_over_the_same_checkpointer_resumes_the_paused_turn() {
    let checkpointer = Arc::new(MemoryCheckpointer::new());
    let memory: Arc<dyn MemoryStore> = Arc::new(InMemoryMemoryStore::default());
    let first = SupportAgent::new(
        Arc::new(DemoModel::instant()),
        fake_tools(),
        checkpointer.clone(),
        memory.clone(),
        SupportConfig::default(),
    );
    let (paused, _) = turn(
        &first,
        TurnInput::new("s", "My order ORD-789 never arrived, I want to complain"),
    )
    .await;
    assert!(paused.pending_approval);
    drop(first); // "restart"
    let second = SupportAgent::new(
        Arc::new(DemoModel::instant()),
        fake_tools(),
        checkpointer.clone(),
        memory,
        SupportConfig::default(),
    );
    let id = paused.pending_tool_calls[0].id.clone();
    let (done, _) = resume(
        &second,
        &paused.graph_execution_id,
        vec![(&id, Decision::Approve { args: None })],
    )
    .await;
    assert!(done.reply.contains("lost"), "{}", done.reply);
    assert!(done.reply.contains("TCK-0001"), "{}", done.reply);
    let steps = checkpointer.list(&paused.graph_execution_id).await.unwrap();
    assert_eq!(steps.first().map(|c| c.node.as_str()), Some("__start__"));
    assert_eq!(steps.get(1).map(|c| c.node.as_str()), Some("init_state"));
    assert_eq!(steps.last().map(|c| c.node.as_str()), Some("finalize"));
    assert!(steps.iter().any(|c| !c.pending_interrupts.is_empty()));
}

#[tokio::test]
async fn two_pending_approvals_in_one_step_are_keyed_by_call_id() {
    let tickets = Arc::new(FakeBackend::default());
    let tools = fake_tools_with(tickets.clone());
    let model = Arc::new(ScriptedModel::new([
        Scripted::Calls(vec![
            call(
                "c1",
                "ticket_create",
                json!({"order_id": "ORD-123", "category": "complaint", "summary": "a"}),
            ),
            call(
                "c2",
                "ticket_create",
                json!({"order_id": "ORD-456", "category": "refund", "summary": "b"}),
            ),
            call(
                "c3",
                "ticket_create",
                json!({"order_id": "ORD-789", "category": "inquiry", "summary": "c"}),
            ),
        ]),
        Scripted::Text("All handled.".into()),
    ]));
    let f = fixture(model, tools, SupportConfig::default());
    let (paused, _) = turn(&f.agent, TurnInput::new("s", "two problems")).await;
    let ids: Vec<String> = paused
        .pending_tool_calls
        .iter()
        .map(|p| p.id.clone())
        .collect();
    let categories: Vec<&str> = paused
        .pending_tool_calls
        .iter()
        .map(|p| p.args["category"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(categories, ["complaint", "refund"]);
    assert_ne!(ids[0], ids[1]);
    assert!(
        ids.iter().all(|id| id.starts_with("call_")),
        "ours: {ids:?}"
    );

    // Only one decided: the turn pauses again for the other.
    let (still, _) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(&ids[0], Decision::Approve { args: None })],
    )
    .await;
    assert!(still.pending_approval);
    assert_eq!(still.pending_tool_calls.len(), 1);
    assert_eq!(still.pending_tool_calls[0].id, ids[1]);
    assert_eq!(tickets.tickets_created(), 0);

    let (done, _) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(
            &ids[1],
            Decision::Reject {
                reason: "not eligible".into(),
            },
        )],
    )
    .await;
    assert_eq!(done.reply, "All handled.");
    let statuses: Vec<ToolCallStatus> = done.tool_calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            ToolCallStatus::Ok,
            ToolCallStatus::Denied,
            ToolCallStatus::Ok
        ]
    );
    assert_eq!(tickets.tickets_created(), 2);
}

#[tokio::test]
async fn events_come_in_graph_order_and_final_is_last() {
    let f = demo(SupportConfig::default());
    let (trace, events) = turn(
        &f.agent,
        TurnInput::new("s", "What's the status of order 456?"),
    )
    .await;
    let kinds: Vec<String> = events
        .iter()
        .filter(|e| !matches!(e, AgentEvent::LlmToken { .. }))
        .map(|e| match e {
            AgentEvent::NodeStart { node } => format!("start:{node}"),
            AgentEvent::NodeEnd { node } => format!("end:{node}"),
            AgentEvent::ToolStart(start) => format!("tool_start:{}", start.tool()),
            AgentEvent::ToolEnd(end) => format!("tool_end:{}", end.tool()),
            other => other.kind().to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start:init_state",
            "end:init_state",
            "start:memory_trigger",
            "end:memory_trigger",
            "start:route",
            "end:route",
            "start:agent",
            "end:agent",
            "start:tools",
            "tool_start:order_query",
            "tool_end:order_query",
            "end:tools",
            "start:agent",
            "end:agent",
            "start:finalize",
            "end:finalize",
        ]
    );
    // The reply streamed token by token inside the second agent node.
    let token_count = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::LlmToken { .. }))
        .count();
    assert!(token_count > 5);
    assert_eq!(tokens(&events), trace.reply);
    assert!(
        trace.reply.contains("ORD-456 is delivered"),
        "{}",
        trace.reply
    );
}

#[tokio::test]
async fn a_model_error_ends_the_turn_with_an_error_trace() {
    let model = Arc::new(ScriptedModel::new([Scripted::Fail(ModelError::Status {
        status: 503,
        message: "overloaded".into(),
    })]));
    let f = fixture(model, fake_tools(), SupportConfig::default());
    let (trace, events) = turn(&f.agent, TurnInput::new("s", "hello")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::Error));
    assert!(trace.error.as_deref().unwrap_or("").contains("503"));
    assert!(
        !trace.error.as_deref().unwrap_or("").contains("overloaded"),
        "the provider's detail stays in the log"
    );
    assert!(trace.reply.contains("went wrong"));
    // Telling the streams is the service's, after it stored the trace.
    assert!(!events
        .iter()
        .any(|e| matches!(e, AgentEvent::Error { .. } | AgentEvent::Final { .. })));
}

#[tokio::test]
async fn message_fault_markers_inject_faults_into_the_demo_model() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        message_faults: true,
        ..Default::default()
    });
    let f = fixture(Arc::new(model), fake_tools(), SupportConfig::default());
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "hi [fault:error]")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::Error));
    let (trace, _) = turn(
        &f.agent,
        TurnInput::new("s", "where is ORD-123 [fault:unknown_tool]"),
    )
    .await;
    assert_eq!(trace.tool_calls[0].status, ToolCallStatus::Error);
    assert_eq!(trace.tool_calls[1].name, "order_query");
    assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    let (trace, _) = turn(
        &f.agent,
        TurnInput::new("s", "where is ORD-123 [fault:malformed]"),
    )
    .await;
    assert!(trace.tool_calls[0].output["error"]
        .as_str()
        .unwrap_or("")
        .contains("invalid arguments"));
    assert!(trace.reply.contains("delayed"), "{}", trace.reply);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_model_times_out_into_an_error_trace() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        faults: DemoFaults {
            timeout: true,
            ..Default::default()
        },
        stall: Duration::from_secs(3600),
        ..Default::default()
    });
    let config = SupportConfig {
        model_timeout: Duration::from_secs(3),
        ..Default::default()
    };
    let f = fixture(Arc::new(model), fake_tools(), config);
    let (trace, _) = turn(&f.agent, TurnInput::new("s", "hi")).await;
    assert_eq!(trace.stop_reason, Some(StopReason::Error));
    assert!(trace.error.as_deref().unwrap_or("").contains("timed out"));
}

#[tokio::test]
async fn the_linear_engine_makes_one_routed_call_then_responds() {
    let f = demo(SupportConfig {
        engine: EngineKind::Linear,
        ..Default::default()
    });
    let (trace, _) = turn(
        &f.agent,
        TurnInput::new("s", "Order 123 is a week late, I want to complain"),
    )
    .await;
    assert_eq!(names(&trace), ["order_query"]);
    assert_eq!(trace.llm_calls, 2);
    assert_eq!(trace.engine, "linear");
    assert_eq!(trace.stop_reason, Some(StopReason::FinalAnswer));
    assert!(trace
        .tool_result
        .as_deref()
        .unwrap_or("")
        .contains("delayed"));
    assert!(trace.reply.contains("delayed"), "{}", trace.reply);
}

#[tokio::test]
async fn memories_are_stored_and_rendered_into_later_prompts() {
    let model = Arc::new(ScriptedModel::new([
        Scripted::Text("Noted.".into()),
        Scripted::Text("Sure.".into()),
    ]));
    let f = fixture(model.clone(), fake_tools(), SupportConfig::default());
    let mut input = TurnInput::new("s1", "Please remember that I prefer email.");
    input.customer_id = Some("cust-7".into());
    turn(&f.agent, input).await;
    assert_eq!(f.memory.recall("cust-7").await.unwrap(), ["I prefer email"]);
    let mut next = TurnInput::new("s2", "记住我只在周末收货");
    next.customer_id = Some("cust-7".into());
    next.history = vec![Message::user("hi"), Message::assistant("hello")];
    turn(&f.agent, next).await;
    let requests = model.requests();
    let Message::System { content } = &*requests[1].messages[0] else {
        panic!()
    };
    assert!(
        content.contains("- I prefer email\n- 我只在周末收货"),
        "{content}"
    );
    assert_eq!(*requests[1].messages[1], Message::user("hi"));
}

#[tokio::test]
async fn demo_plans_parallel_tracking_escalation_and_policy_lookups() {
    let f = demo(SupportConfig::default());
    let (t, _) = turn(
        &f.agent,
        TurnInput::new("s", "Where is my parcel for order ORD-321? Please track it"),
    )
    .await;
    assert_eq!(names(&t), ["order_query", "logistics_track"]);
    assert_eq!(t.steps_taken, 1);
    assert!(
        t.reply.contains("on its way") && t.reply.contains("SF Express"),
        "{}",
        t.reply
    );

    let (t, _) = turn(&f.agent, TurnInput::new("s", "I want to talk to a human")).await;
    assert_eq!(t.intent, Intent::Escalate);
    assert_eq!(names(&t), ["escalate_to_human"]);
    assert!(t.reply.contains("human colleague"));

    let (t, _) = turn(&f.agent, TurnInput::new("s", "转人工")).await;
    assert!(t.reply.contains("人工客服"), "{}", t.reply);

    let (t, _) = turn(&f.agent, TurnInput::new("s", "What is your return policy?")).await;
    assert_eq!(names(&t), ["knowledge_search"]);
    assert!(t.reply.contains("30 days"), "{}", t.reply);

    let (t, _) = turn(&f.agent, TurnInput::new("s", "Hello!")).await;
    assert!(t.tool_calls.is_empty());
    assert!(t.reply.starts_with("Hello!"));
}

#[tokio::test]
async fn the_demo_model_speaks_the_json_plan_protocol() {
    let f = demo(SupportConfig {
        protocol: PlanProtocol::JsonPlan,
        ..Default::default()
    });
    let (paused, _) = turn(
        &f.agent,
        TurnInput::new("s", "订单ORD-123一直没收到，帮我查一下并创建投诉工单"),
    )
    .await;
    assert_eq!(names(&paused), ["order_query", "ticket_create"]);
    assert!(paused.pending_approval);
    let id = paused.pending_tool_calls[0].id.clone();
    let (done, _) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(&id, Decision::Approve { args: None })],
    )
    .await;
    assert!(done.reply.contains("TCK-0001"), "{}", done.reply);
    assert!(done.reply.contains("运输延误"), "{}", done.reply);
}

#[tokio::test]
async fn resume_of_an_unknown_turn_is_an_error() {
    let f = demo(SupportConfig::default());
    let err = f
        .agent
        .resume("nope", HashMap::new(), &EventSink::none())
        .await
        .unwrap_err();
    assert!(matches!(err, aics_agent::AgentError::UnknownRun(_)));
}

#[tokio::test]
async fn the_trace_and_checkpoints_of_a_turn_can_be_read_back() {
    let f = demo(SupportConfig::default());
    let (t, _) = turn(&f.agent, TurnInput::new("s", "Where is order 456?")).await;
    let again = f.agent.trace(&t.graph_execution_id).await.unwrap();
    assert_eq!(again.reply, t.reply);
    let steps = f.agent.checkpoints(&t.graph_execution_id).await.unwrap();
    // The input checkpoint, then one per executed node.
    let nodes: Vec<&str> = steps.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes[0], "__start__");
    assert_eq!(nodes[1..], t.executed_nodes);
    assert_eq!(
        f.checkpointer
            .list(&t.graph_execution_id)
            .await
            .unwrap()
            .len(),
        steps.len()
    );
}

#[tokio::test]
async fn a_paused_turn_can_be_forked_and_decided_differently() {
    let f = demo(SupportConfig::default());
    let msg = "Order ORD-789 never arrived, I want to complain";
    let (paused, _) = turn(&f.agent, TurnInput::new("s", msg)).await;
    let id = paused.graph_execution_id.clone();
    let call = paused.pending_tool_calls[0].id.clone();
    let pause = f
        .agent
        .checkpoints(&id)
        .await
        .unwrap()
        .last()
        .unwrap()
        .checkpoint_id
        .clone();
    let fork = f.agent.fork(&id, &pause).await.unwrap();
    assert_ne!(fork, id);

    let (approved, _) = resume(
        &f.agent,
        &id,
        vec![(&call, Decision::Approve { args: None })],
    )
    .await;
    let (rejected, _) = resume(
        &f.agent,
        &fork,
        vec![(
            &call,
            Decision::Reject {
                reason: "already refunded".into(),
            },
        )],
    )
    .await;
    assert_eq!(approved.graph_execution_id, id);
    assert_eq!(rejected.graph_execution_id, fork);
    assert!(approved.reply.contains("TCK-0001"), "{}", approved.reply);
    assert!(
        rejected.reply.contains("already refunded"),
        "{}",
        rejected.reply
    );
    assert_eq!(rejected.tool_calls[1].status, ToolCallStatus::Denied);
    let fork_steps = f.agent.checkpoints(&fork).await.unwrap();
    assert_eq!(fork_steps[0].node, "approval");
    assert_eq!(fork_steps[0].parent_id.as_deref(), Some(pause.as_str()));
    assert_eq!(
        fork_steps[0].state.to_value()["graph_execution_id"],
        fork.as_str()
    );
}

#[tokio::test]
async fn the_demo_model_follows_the_conversation_and_uses_memories() {
    let f = demo(SupportConfig::default());
    let mut first = TurnInput::new(
        "s",
        "Where is order 123? Please remember that I prefer email.",
    );
    first.customer_id = Some("c1".into());
    let (t1, _) = turn(&f.agent, first).await;
    assert!(t1.reply.contains("ORD-123 is delayed"), "{}", t1.reply);
    assert!(
        t1.reply.contains("Noted") || t1.tool_calls.len() == 1,
        "{}",
        t1.reply
    );

    // The follow-up names no order: the earlier one is meant.
    let mut second = TurnInput::new("s", "This is unacceptable, I want to complain.");
    second.customer_id = Some("c1".into());
    second.history = vec![
        Message::user("Where is order 123? Please remember that I prefer email."),
        Message::assistant(t1.reply.clone()),
    ];
    let (paused, _) = turn(&f.agent, second).await;
    assert_eq!(names(&paused), ["order_query", "ticket_create"]);
    let call = paused.pending_tool_calls[0].id.clone();
    let (done, _) = resume(
        &f.agent,
        &paused.graph_execution_id,
        vec![(&call, Decision::Approve { args: None })],
    )
    .await;
    assert!(done.reply.contains("TCK-0001"), "{}", done.reply);
    assert!(done.reply.contains("by email"), "{}", done.reply);
}

#[tokio::test(start_paused = true)]
async fn the_timeout_marker_ends_the_turn_after_the_demo_stall() {
    let model = DemoModel::new(DemoConfig {
        token_delay: Duration::ZERO,
        message_faults: true,
        ..Default::default()
    });
    let f = fixture(Arc::new(model), fake_tools(), SupportConfig::default());
    let started = tokio::time::Instant::now();
    let (trace, events) = turn(&f.agent, TurnInput::new("s", "hi [fault:timeout]")).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(trace.stop_reason, Some(StopReason::Error));
    // The short sentence, not the provider's detail.
    assert_eq!(trace.error.as_deref(), Some("the model provider timed out"));
    assert!(!events.is_empty());
}

#[tokio::test]
async fn every_llm_call_is_recorded_with_what_was_sent_and_what_came_back() {
    use aics_agent::model::{FinishReason, ModelChunk};
    let model = Arc::new(ScriptedModel::new([
        Scripted::Chunks(vec![
            ModelChunk::Reasoning("The customer wants order ORD-123.".into()),
            ModelChunk::ToolCallDelta {
                index: 0,
                id: Some("prov_1".into()),
                name: Some("order_query".into()),
                arguments: r#"{"order_id":"ORD-123"}"#.into(),
            },
            ModelChunk::Usage(aics_types::TokenUsage {
                prompt_tokens: 50,
                completion_tokens: 7,
                total_tokens: 57,
            }),
            ModelChunk::Finish(FinishReason::ToolCalls),
        ]),
        Scripted::Text("It is on its way.".into()),
    ]));
    let f = fixture(model, fake_tools(), SupportConfig::default());
    let (trace, _) = turn(&f.agent, TurnInput::new("s-rec", "where is ORD-123?")).await;
    assert_eq!(trace.llm_call_records.len(), 2);
    assert_eq!(trace.llm_call_records.len() as u32, trace.llm_calls);

    let first = &trace.llm_call_records[0];
    assert_eq!(first.node, "agent");
    assert_eq!(first.purpose, "answer");
    assert_eq!(first.model, "scripted");
    assert_eq!(first.protocol, "native");
    assert_eq!(first.tool_choice, "auto");
    assert!(first.tools.contains(&"order_query".to_string()));
    // As sent: the rendered system prompt first, the customer's message last.
    assert_eq!(first.messages[0].role, "system");
    assert_eq!(
        first.messages.last().map(|m| m.content.as_str()),
        Some("where is ORD-123?")
    );
    assert_eq!(first.reasoning, "The customer wants order ORD-123.");
    assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(first.usage.prompt_tokens, 50);
    // The call carries our id, the one the tool record has.
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].id, trace.tool_calls[0].id);
    assert!(first.ttft_ms.is_some());
    assert!(first.ttft_ms.unwrap_or_default() <= first.latency_ms);
    assert_eq!(first.cost_usd, None, "priced by the service");

    let second = &trace.llm_call_records[1];
    assert_eq!(second.output, "It is on its way.");
    assert!(second.step > first.step);
    // The second call was sent the tool result.
    assert!(second
        .messages
        .iter()
        .any(|m| m.role == "tool"
            && m.tool_call_id.as_deref() == Some(trace.tool_calls[0].id.as_str())));

    // A failed call is recorded with its short error.
    let failing = Arc::new(ScriptedModel::new([Scripted::Fail(ModelError::Timeout(
        "slow".into(),
    ))]));
    let f = fixture(failing, fake_tools(), SupportConfig::default());
    let (trace, _) = turn(&f.agent, TurnInput::new("s-rec2", "hello")).await;
    assert_eq!(trace.llm_call_records.len(), 1);
    assert_eq!(
        trace.llm_call_records[0].error.as_deref(),
        Some("the model provider timed out")
    );
}

#[tokio::test]
async fn the_json_plan_records_its_planning_call_with_the_planned_tool() {
    let f = demo(SupportConfig {
        protocol: PlanProtocol::JsonPlan,
        ..SupportConfig::default()
    });
    let (trace, _) = turn(
        &f.agent,
        TurnInput::new("s-plan", "where is order ORD-123?"),
    )
    .await;
    let purposes: Vec<&str> = trace
        .llm_call_records
        .iter()
        .map(|r| r.purpose.as_str())
        .collect();
    assert_eq!(purposes.first(), Some(&"plan"));
    assert_eq!(purposes.last(), Some(&"answer"));
    let planned = &trace.llm_call_records[0];
    assert_eq!(planned.protocol, "json_plan");
    assert!(planned.tools.is_empty(), "the tools are in the prompt");
    if let Some(call) = planned.tool_calls.first() {
        assert_eq!(call.id, trace.tool_calls[0].id);
    }
}
