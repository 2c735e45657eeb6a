//! The opt-in tier, whole graph: the support graph of aics (the complaint chain's
//! scenario) driven by a real OpenAI-compatible server, only when
//! `AICS_TEST_OPENAI_BASE_URL` names one (see openai/README.md). The tools
//! are the engine's in-memory fakes, so only the model is real.
//!
//! `AICS_TEST_OPENAI_PROTOCOL=json_plan` runs the JSON plan protocol
//! instead of native tool calls (for servers that refuse `tools` with
//! streaming, such as llama-cpp-python with `tool_choice: auto`).

use std::sync::Arc;
use std::time::Duration;

use aics_agent::memory::InMemoryMemoryStore;
use aics_agent::{EventSink, PlanProtocol, SupportAgent, SupportConfig, TurnInput};
use aics_graph::MemoryCheckpointer;
use aics_openai::{OpenAiCompatible, OpenAiConfig};
use aics_types::{AgentEvent, StopReason};

#[tokio::test]
async fn live_support_graph_answers_seed_004() {
    let Ok(base_url) = std::env::var("AICS_TEST_OPENAI_BASE_URL") else {
        println!("live_support_graph_answers_seed_004: skipped (set AICS_TEST_OPENAI_BASE_URL to run the opt-in live tier)");
        return;
    };
    let model_name =
        std::env::var("AICS_TEST_OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
    let protocol = std::env::var("AICS_TEST_OPENAI_PROTOCOL")
        .ok()
        .and_then(|p| PlanProtocol::parse(&p))
        .unwrap_or_default();
    let mut config = OpenAiConfig::new(base_url, model_name);
    config.api_key_env = Some("AICS_TEST_OPENAI_API_KEY".into());
    config.temperature = Some(0.0);
    config.max_tokens = Some(256);
    config.timeouts.first_token = Duration::from_secs(300);
    config.timeouts.idle = Duration::from_secs(60);
    config.timeouts.total = Duration::from_secs(900);
    let model = OpenAiCompatible::new(config).expect("a valid live config");

    let agent = SupportAgent::new(
        Arc::new(model),
        aics_agent::testing::fake_tools(),
        Arc::new(MemoryCheckpointer::new()),
        Arc::new(InMemoryMemoryStore::default()),
        SupportConfig {
            protocol,
            model_timeout: Duration::from_secs(300),
            ..SupportConfig::default()
        },
    );
    let (sink, mut events) = EventSink::channel();
    let collector = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            seen.push(event);
        }
        seen
    });
    let trace = agent
        .run_turn(
            "live-run-1",
            TurnInput::new(
                "live-seed-004",
                "My order ORD-123 still hasn't arrived, please check it and open a complaint ticket",
            ),
            &sink,
        )
        .await
        .expect("the turn ran");
    drop(sink);
    let seen = collector.await.expect("events collected");
    println!(
        "{}",
        serde_json::to_string_pretty(&trace).unwrap_or_default()
    );

    // A real model may plan differently; what must hold is that the graph
    // ran end to end through the real provider without an error.
    assert_ne!(
        trace.stop_reason,
        Some(StopReason::Error),
        "{:?}",
        trace.error
    );
    assert!(trace.llm_calls >= 1);
    assert!(trace.executed_nodes.iter().any(|n| n == "agent"));
    assert!(trace.model.starts_with("openai:"));
    assert!(matches!(seen.last(), Some(AgentEvent::Final { .. })));
    if !trace.pending_approval {
        assert!(!trace.reply.trim().is_empty(), "an empty reply");
    }
}
