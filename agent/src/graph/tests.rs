use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::*;
use crate::checkpoint::MemoryCheckpointer;

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct S {
    path: Vec<String>,
    n: u32,
    approved: Option<bool>,
}

fn visit(name: &'static str) -> FnNode<S> {
    FnNode::new(move |s: &mut S, _| {
        s.path.push(name.into());
        Ok(Next::Continue)
    })
}

fn chain() -> Graph<S> {
    GraphBuilder::new()
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn plain_edges_run_in_order_and_checkpoint_every_node() {
    let cp = MemoryCheckpointer::new();
    let out = chain()
        .invoke("t1", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    assert_eq!(out.state.path, ["a", "b"]);
    assert_eq!(out.status, RunStatus::Finished);
    let list = cp.list("t1").await.unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].node, "a");
    assert_eq!(list[0].next.as_deref(), Some("b"));
    assert_eq!(list[0].parent_id, None);
    assert_eq!(
        list[1].parent_id.as_deref(),
        Some(list[0].checkpoint_id.as_str())
    );
    assert_eq!(list[1].next, None);
    assert_eq!(list[1].step, 1);
    assert_eq!(list[1].state["path"], json!(["a", "b"]));
    assert_eq!(
        out.checkpoint_id.as_deref(),
        Some(list[1].checkpoint_id.as_str())
    );
}

#[tokio::test]
async fn conditional_edges_follow_the_state() {
    let graph = GraphBuilder::new()
        .add_node(
            "inc",
            FnNode::new(|s: &mut S, _| {
                s.n += 1;
                Ok(Next::Continue)
            }),
        )
        .add_node("done", visit("done"))
        .add_edge(START, "inc")
        .add_conditional_edges("inc", |s: &S| {
            if s.n < 4 { "inc" } else { "done" }.to_owned()
        })
        .add_edge("done", END)
        .compile()
        .unwrap();
    let cp = MemoryCheckpointer::new();
    let out = graph
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    assert_eq!(out.state.n, 4);
    assert_eq!(out.state.path, ["done"]);
    assert_eq!(cp.list("t").await.unwrap().len(), 5);
}

#[tokio::test]
async fn an_endless_cycle_ends_with_the_step_limit_error() {
    let graph = GraphBuilder::new()
        .add_node("spin", visit("spin"))
        .add_edge(START, "spin")
        .add_edge("spin", "spin")
        .step_limit(7)
        .compile()
        .unwrap();
    let cp = MemoryCheckpointer::new();
    let err = graph
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::StepLimit { limit: 7, .. }),
        "{err}"
    );
    // Every step that ran is still inspectable.
    assert_eq!(cp.list("t").await.unwrap().len(), 7);
}

#[tokio::test]
async fn goto_and_end_override_the_edges() {
    let graph = GraphBuilder::new()
        .add_node("a", FnNode::new(|_: &mut S, _| Ok(Next::Goto("c".into()))))
        .add_node("b", visit("b"))
        .add_node(
            "c",
            FnNode::new(|s: &mut S, _| {
                s.path.push("c".into());
                Ok(Next::End)
            }),
        )
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .add_edge("c", "b")
        .compile()
        .unwrap();
    let cp = MemoryCheckpointer::new();
    let out = graph
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    assert_eq!(out.state.path, ["c"]);
}

#[test]
fn compile_rejects_bad_wiring() {
    let missing_target = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a")
        .add_edge("a", "nowhere")
        .compile();
    assert!(matches!(missing_target, Err(GraphError::UnknownNode(n)) if n == "nowhere"));
    let dangling = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a")
        .compile();
    assert!(matches!(dangling, Err(GraphError::NoEdge(n)) if n == "a"));
    let no_start = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge("a", END)
        .compile();
    assert!(matches!(no_start, Err(GraphError::NoEdge(_))));
}

fn gate_graph() -> Graph<S> {
    GraphBuilder::new()
        .add_node("before", visit("before"))
        .add_node(
            "gate",
            FnNode::new(
                |s: &mut S, ctx| match ctx.resume.and_then(|d| d.get("q1")) {
                    Some(v) => {
                        s.approved = v.as_bool();
                        Ok(Next::Continue)
                    }
                    None => Ok(Next::Interrupt(vec![Interrupt {
                        id: "q1".into(),
                        node: "gate".into(),
                        value: json!({"question": "ok?"}),
                    }])),
                },
            ),
        )
        .add_node("after", visit("after"))
        .add_edge(START, "before")
        .add_edge("before", "gate")
        .add_edge("gate", "after")
        .add_edge("after", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn interrupt_pauses_and_a_new_engine_resumes_from_the_checkpoint() {
    let cp = MemoryCheckpointer::new();
    let out = gate_graph()
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    let RunStatus::Interrupted(list) = &out.status else {
        panic!("expected an interrupt, got {:?}", out.status)
    };
    assert_eq!(list[0].id, "q1");
    let latest = cp.latest("t").await.unwrap().unwrap();
    assert_eq!(latest.next.as_deref(), Some("gate"));
    assert_eq!(latest.pending_interrupts.len(), 1);

    // A fresh graph (as after a restart) over the same checkpoints.
    let graph = gate_graph();
    let decisions = HashMap::from([("q1".to_owned(), json!(true))]);
    let out = graph
        .resume("t", decisions.clone(), &cp, &EventSink::none())
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Finished);
    assert_eq!(out.state.path, ["before", "after"]);
    assert_eq!(out.state.approved, Some(true));
    let steps = cp.list("t").await.unwrap();
    assert_eq!(steps.len(), 4);
    assert_eq!(
        steps[2].parent_id.as_deref(),
        Some(steps[1].checkpoint_id.as_str())
    );

    // Resuming again runs nothing.
    let again = graph
        .resume("t", decisions, &cp, &EventSink::none())
        .await
        .unwrap();
    assert_eq!(again.status, RunStatus::AlreadyFinished);
    assert_eq!(again.state.path, ["before", "after"]);
    assert_eq!(cp.list("t").await.unwrap().len(), 4);
}

#[tokio::test]
async fn resume_without_the_decision_pauses_again() {
    let cp = MemoryCheckpointer::new();
    let graph = gate_graph();
    graph
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    let out = graph
        .resume("t", HashMap::new(), &cp, &EventSink::none())
        .await
        .unwrap();
    assert!(matches!(out.status, RunStatus::Interrupted(_)));
}

#[tokio::test]
async fn resume_of_an_unknown_thread_is_a_typed_error() {
    let cp = MemoryCheckpointer::new();
    let err = chain()
        .resume("ghost", HashMap::new(), &cp, &EventSink::none())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::UnknownThread(_)));
}

#[tokio::test]
async fn fork_continues_from_an_old_checkpoint_on_a_new_thread() {
    let cp = MemoryCheckpointer::new();
    let graph = gate_graph();
    graph
        .invoke("t", S::default(), &cp, &EventSink::none())
        .await
        .unwrap();
    graph
        .resume(
            "t",
            HashMap::from([("q1".into(), json!(true))]),
            &cp,
            &EventSink::none(),
        )
        .await
        .unwrap();
    // Fork at the pause and decide differently there.
    let paused = &cp.list("t").await.unwrap()[1];
    let fork = graph
        .fork(&cp, "t", &paused.checkpoint_id, "t-fork")
        .await
        .unwrap();
    assert_eq!(
        fork.parent_id.as_deref(),
        Some(paused.checkpoint_id.as_str())
    );
    let out = graph
        .resume(
            "t-fork",
            HashMap::from([("q1".into(), json!(false))]),
            &cp,
            &EventSink::none(),
        )
        .await
        .unwrap();
    assert_eq!(out.state.approved, Some(false));
    let original: S = graph
        .state_at(
            &cp,
            "t",
            &cp.latest("t").await.unwrap().unwrap().checkpoint_id,
        )
        .await
        .unwrap();
    assert_eq!(original.approved, Some(true));
}

#[tokio::test]
async fn node_start_and_end_events_frame_every_node() {
    let cp = MemoryCheckpointer::new();
    let (sink, mut rx) = EventSink::channel(1);
    let graph = chain();
    let run = graph.invoke("t", S::default(), &cp, &sink);
    let collect = async {
        let mut kinds = Vec::new();
        while let Some(ev) = rx.recv().await {
            if let AgentEvent::NodeStart { node } | AgentEvent::NodeEnd { node } = &ev {
                kinds.push(format!("{}:{node}", ev.kind()));
            }
            if kinds.len() == 4 {
                break;
            }
        }
        kinds
    };
    // Capacity 1: the run only finishes because events are consumed (backpressure).
    let (out, kinds) = tokio::join!(run, collect);
    out.unwrap();
    assert_eq!(
        kinds,
        ["node_start:a", "node_end:a", "node_start:b", "node_end:b"]
    );
}

#[tokio::test]
async fn a_failing_node_is_a_typed_error() {
    let graph = GraphBuilder::new()
        .add_node(
            "bad",
            FnNode::new(|_: &mut S, _| Err(NodeError("boom".into()))),
        )
        .add_edge(START, "bad")
        .add_edge("bad", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke(
            "t",
            S::default(),
            &MemoryCheckpointer::new(),
            &EventSink::none(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::Node { ref node, .. } if node == "bad"));
}
