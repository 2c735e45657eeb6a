//! The turn page's parts rendered to HTML on the server: the path, a step
//! with its diff, LLM call and tool call.

use aics_types::{CheckpointView, LlmCallRecord, TokenUsage};
use leptos::prelude::*;
use serde_json::json;

use super::path::PathGraph;
use super::step::StepItem;

fn render(view: impl FnOnce() -> AnyView) -> String {
    let owner = Owner::new();
    owner.with(|| view().to_html())
}

fn cp(step: u32, node: &str, state: serde_json::Value, interrupts: usize) -> CheckpointView {
    CheckpointView {
        checkpoint_id: format!("c{step}"),
        parent_id: None,
        thread_id: "g".into(),
        step,
        node: node.into(),
        state,
        pending_interrupts: (0..interrupts).map(|i| format!("i{i}")).collect(),
        created_at: "2026-12-01T00:00:00Z".parse().unwrap(),
    }
}

#[test]
fn a_step_shows_its_diff_llm_call_and_tool_call() {
    let call = LlmCallRecord {
        step: 4,
        node: "agent".into(),
        purpose: "answer".into(),
        model: "demo".into(),
        protocol: "native".into(),
        tools: vec!["order_query".into()],
        tool_choice: "auto".into(),
        output: "<b>not markup</b>".into(),
        reasoning: "thinking".into(),
        latency_ms: 12,
        ttft_ms: Some(3),
        usage: TokenUsage {
            prompt_tokens: 40,
            completion_tokens: 5,
            total_tokens: 45,
        },
        cost_usd: Some(0.0),
        started_at: "2026-12-01T00:00:00Z".parse().unwrap(),
        ..LlmCallRecord::default()
    };
    let before = cp(
        3,
        "route",
        json!({"messages": [{"role": "user", "content": "hi"}]}),
        0,
    );
    let after = cp(
        4,
        "agent",
        json!({
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "llm_call_records": [serde_json::to_value(&call).unwrap()],
            "tool_records": [{"id": "call_1", "name": "order_query", "input": {}, "output": null,
                              "status": "running", "timestamp": "2026-12-01T00:00:00Z"}],
        }),
        0,
    );
    let html = render(move || {
        view! { <StepItem checkpoint=after before=Some(before) next="tools".to_string()/> }
            .into_any()
    });
    assert!(html.contains("data-field=\"messages\""), "{html}");
    assert!(html.contains("+ appended"));
    assert!(html.contains("[assistant] hello"));
    assert!(html.contains("data-testid=\"llm-call\""));
    assert!(html.contains("TTFT 3 ms"));
    assert!(html.contains("40 in / 5 out"));
    assert!(
        html.contains("&lt;b&gt;not markup&lt;/b&gt;"),
        "output is text"
    );
    assert!(html.contains("order_query"));
    assert!(html.contains("id=\"step-4\""));
}

#[test]
fn the_path_marks_loops_and_the_interrupt() {
    let checkpoints: Vec<_> = [
        "__start__",
        "init_state",
        "agent",
        "tools",
        "agent",
        "approval",
    ]
    .iter()
    .enumerate()
    .map(|(i, n)| cp(i as u32, n, json!({}), usize::from(*n == "approval")))
    .collect();
    let path = super::model::path_of(&checkpoints);
    let html = render(move || view! { <PathGraph path/> }.into_any());
    assert!(html.contains("1 agent ⇄ tools loop(s)"), "{html}");
    assert!(html.contains("agent #2"));
    assert!(html.contains("data-interrupt=\"true\""));
    assert!(!html.contains("__start__"));
}

#[test]
fn a_step_offers_a_fork_only_where_the_page_provides_one() {
    let state = json!({"messages": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "where is ORD-123?"}
    ]});
    assert_eq!(
        super::forks::last_customer_message(&state),
        "where is ORD-123?"
    );
    assert_eq!(super::forks::last_customer_message(&json!({})), "");
    let step = cp(1, "agent", state, 0);
    let plain = {
        let step = step.clone();
        render(move || {
            view! { <StepItem checkpoint=step before=None next="tools".to_string()/> }.into_any()
        })
    };
    assert!(!plain.contains("fork-here"), "{plain}");
    let offered = {
        let step = step.clone();
        render(move || {
            provide_context(super::forks::ForkTarget(RwSignal::new(None)));
            view! { <StepItem checkpoint=step before=None next="tools".to_string()/> }.into_any()
        })
    };
    assert!(offered.contains("fork-here"), "{offered}");
    // Not at the step the turn ended at.
    let at_end = render(move || {
        provide_context(super::forks::ForkTarget(RwSignal::new(None)));
        view! { <StepItem checkpoint=step before=None next="END".to_string()/> }.into_any()
    });
    assert!(!at_end.contains("fork-here"), "{at_end}");
}

#[test]
fn fork_deltas_read_as_signed_numbers() {
    use super::compare::{cost_delta, signed};
    assert_eq!(signed(12, "tokens"), "+12 tokens");
    assert_eq!(signed(-300, "ms"), "−300 ms");
    assert_eq!(signed(0, "ms"), "±0 ms");
    assert_eq!(cost_delta(None), "— (no price)");
    assert_eq!(cost_delta(Some(0.0)), "±$0");
    assert_eq!(cost_delta(Some(-0.0125)), "−$0.0125");
}

fn provider(name: &str, model: &str, is_default: bool) -> aics_types::ProviderInfo {
    aics_types::ProviderInfo {
        name: name.into(),
        kind: "openai".into(),
        model: model.into(),
        is_default,
        protocol: "native".into(),
        base_url: None,
        price: None,
        reachability: aics_types::Reachability::Unknown,
        reason: None,
        model_listed: None,
        checked_at: None,
    }
}

#[test]
fn the_fork_form_preselects_the_turns_provider() {
    use super::forks::preselected;
    let list = vec![
        provider("a", "openai:m1", false),
        provider("b", "openai:m2", false),
        provider("c", "openai:m2", true),
        provider("demo", "demo", false),
    ];
    assert_eq!(preselected(&list, "demo").as_deref(), Some("demo"));
    assert_eq!(preselected(&list, "openai:m1").as_deref(), Some("a"));
    // Two providers with the turn's model: the default first.
    assert_eq!(preselected(&list, "openai:m2").as_deref(), Some("c"));
    // A model no provider has any more: the default.
    assert_eq!(preselected(&list, "openai:gone").as_deref(), Some("c"));
    assert_eq!(preselected(&[], "demo"), None);
}
