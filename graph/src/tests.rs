use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::*;

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct S {
    visited: Vec<String>,
    n: u32,
    approved: Option<bool>,
}

impl State for S {
    type Resume = bool;
    type Progress = String;
}

fn visit(name: &'static str) -> FnNode<S> {
    FnNode::new(move |s: &mut S, _| {
        s.visited.push(name.into());
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
        .invoke("t1", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    assert_eq!(out.state.visited, ["a", "b"]);
    assert_eq!(out.status, RunStatus::Finished);
    assert_eq!(out.path, ["a", "b"]);
    let list = cp.list("t1").await.unwrap();
    assert_eq!(list.len(), 3, "the input, then one per node");
    assert_eq!(
        (
            list[0].node.as_str(),
            list[0].step,
            list[0].parent_id.as_deref()
        ),
        (START, 0, None)
    );
    assert_eq!(list[0].next.as_deref(), Some("a"));
    assert!(list[0].path.is_empty());
    assert_eq!(list[0].state["visited"], json!([]));
    assert_eq!(list[1].node, "a");
    assert_eq!(list[1].next.as_deref(), Some("b"));
    assert_eq!(
        list[1].parent_id.as_deref(),
        Some(list[0].checkpoint_id.as_str())
    );
    assert_eq!(list[1].path, ["a"]);
    assert_eq!(
        list[2].parent_id.as_deref(),
        Some(list[1].checkpoint_id.as_str())
    );
    assert_eq!(list[2].next, None);
    assert_eq!(list[2].step, 2);
    assert_eq!(list[2].path, ["a", "b"]);
    assert_eq!(list[2].state["visited"], json!(["a", "b"]));
    assert_eq!(
        out.checkpoint_id.as_deref(),
        Some(list[2].checkpoint_id.as_str())
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
        .add_conditional_edges(
            "inc",
            ["inc", "done"],
            |s: &S| {
                if s.n < 4 {
                    "inc"
                } else {
                    "done"
                }
            },
        )
        .add_edge("done", END)
        .compile()
        .unwrap();
    let cp = MemoryCheckpointer::new();
    let out = graph
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    assert_eq!(out.state.n, 4);
    assert_eq!(out.state.visited, ["done"]);
    assert_eq!(out.path, ["inc", "inc", "inc", "inc", "done"]);
    assert_eq!(cp.list("t").await.unwrap().len(), 6);
}

#[tokio::test]
async fn a_route_to_an_undeclared_target_fails_the_run() {
    let graph = GraphBuilder::new()
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_edge(START, "a")
        .add_conditional_edges("a", [END], |_: &S| "b")
        .add_edge("b", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke("t", S::default(), &MemoryCheckpointer::new(), &NoObserver)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::UndeclaredTarget { from, to } if from == "a" && to == "b"),
        "{err}"
    );
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
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::StepLimit { limit: 7, .. }),
        "{err}"
    );
    // The input and every step that ran are still inspectable.
    assert_eq!(cp.list("t").await.unwrap().len(), 8);
}

#[tokio::test]
async fn goto_and_end_override_the_edges() {
    let graph = GraphBuilder::new()
        .add_node("a", FnNode::new(|_: &mut S, _| Ok(Next::Goto("c".into()))))
        .add_node("b", visit("b"))
        .add_node(
            "c",
            FnNode::new(|s: &mut S, _| {
                s.visited.push("c".into());
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
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    assert_eq!(out.state.visited, ["c"]);
    assert_eq!(out.path, ["a", "c"]);
}

#[test]
fn compile_rejects_bad_wiring() {
    let missing_target = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a")
        .add_edge("a", "nowhere")
        .compile();
    assert!(matches!(missing_target, Err(GraphError::UnknownNode(n)) if n == "nowhere"));
    let undeclared = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a")
        .add_conditional_edges("a", ["a", "ghost"], |_: &S| "a")
        .compile();
    assert!(matches!(undeclared, Err(GraphError::UnknownNode(n)) if n == "ghost"));
    let no_targets = GraphBuilder::<S>::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a")
        .add_conditional_edges("a", Vec::<String>::new(), |_: &S| END)
        .compile();
    assert!(matches!(no_targets, Err(GraphError::NoEdge(n)) if n == "a"));
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
            FnNode::new(|s: &mut S, ctx| match ctx.resume_value("q1") {
                Some(v) => {
                    s.approved = Some(*v);
                    Ok(Next::Continue)
                }
                None => Ok(Next::Interrupt(vec![Interrupt::new(
                    "q1",
                    json!({"question": "ok?"}),
                )])),
            }),
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
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    let RunStatus::Interrupted(list) = &out.status else {
        panic!("expected an interrupt, got {:?}", out.status)
    };
    assert_eq!(list[0].id, "q1");
    assert_eq!(list[0].node, "gate", "the engine names the node");
    let latest = cp.latest("t").await.unwrap().unwrap();
    assert_eq!(latest.next.as_deref(), Some("gate"));
    assert_eq!(latest.pending_interrupts.len(), 1);

    // A fresh graph (as after a restart) over the same checkpoints.
    let graph = gate_graph();
    let resume = HashMap::from([("q1".to_owned(), true)]);
    let out = graph
        .resume("t", resume.clone(), &cp, &NoObserver)
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Finished);
    assert_eq!(out.state.visited, ["before", "after"]);
    assert_eq!(out.state.approved, Some(true));
    assert_eq!(out.path, ["before", "gate", "gate", "after"]);
    let steps = cp.list("t").await.unwrap();
    assert_eq!(steps.len(), 5);
    assert_eq!(
        steps[3].parent_id.as_deref(),
        Some(steps[2].checkpoint_id.as_str())
    );

    // Resuming again runs nothing.
    let again = graph.resume("t", resume, &cp, &NoObserver).await.unwrap();
    assert_eq!(again.status, RunStatus::AlreadyFinished);
    assert_eq!(again.state.visited, ["before", "after"]);
    assert_eq!(cp.list("t").await.unwrap().len(), 5);
}

#[tokio::test]
async fn resume_without_the_value_pauses_again() {
    let cp = MemoryCheckpointer::new();
    let graph = gate_graph();
    graph
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    let out = graph
        .resume("t", HashMap::new(), &cp, &NoObserver)
        .await
        .unwrap();
    assert!(matches!(out.status, RunStatus::Interrupted(_)));
}

#[tokio::test]
async fn resume_of_an_unknown_thread_is_a_typed_error() {
    let cp = MemoryCheckpointer::new();
    let err = chain()
        .resume("ghost", HashMap::new(), &cp, &NoObserver)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::UnknownThread(_)));
}

#[tokio::test]
async fn snapshots_decode_the_newest_and_any_checkpoint() {
    let cp = MemoryCheckpointer::new();
    let graph = gate_graph();
    assert!(graph.snapshot(&cp, "t").await.unwrap().is_none());
    graph
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    let paused = graph.snapshot(&cp, "t").await.unwrap().unwrap();
    assert_eq!(paused.next.as_deref(), Some("gate"));
    assert!(!paused.is_finished());
    assert_eq!(paused.interrupts[0].id, "q1");
    assert_eq!(paused.state.visited, ["before"]);
    assert_eq!(paused.path, ["before", "gate"]);
    let first = cp.list("t").await.unwrap()[1].checkpoint_id.clone();
    let at = graph.snapshot_at(&cp, "t", &first).await.unwrap();
    assert_eq!(at.node, "before");
    let missing = graph.snapshot_at(&cp, "t", "nope").await.unwrap_err();
    assert!(matches!(missing, GraphError::UnknownCheckpoint { .. }));
}

#[tokio::test]
async fn fork_continues_from_an_old_checkpoint_on_a_new_thread_with_a_patch() {
    let cp = MemoryCheckpointer::new();
    let graph = gate_graph();
    graph
        .invoke("t", S::default(), &cp, &NoObserver)
        .await
        .unwrap();
    graph
        .resume("t", HashMap::from([("q1".into(), true)]), &cp, &NoObserver)
        .await
        .unwrap();
    // Fork at the pause, change the state, and decide differently there.
    let paused = &cp.list("t").await.unwrap()[2];
    let fork = graph
        .fork(&cp, "t", &paused.checkpoint_id, "t-fork", |s: &mut S| {
            s.n = 42
        })
        .await
        .unwrap();
    assert_eq!(
        fork.parent_id.as_deref(),
        Some(paused.checkpoint_id.as_str())
    );
    assert_eq!(fork.thread_id, "t-fork");
    assert_eq!(fork.state.n, 42);
    assert_eq!(fork.interrupts.len(), 1);
    let out = graph
        .resume(
            "t-fork",
            HashMap::from([("q1".into(), false)]),
            &cp,
            &NoObserver,
        )
        .await
        .unwrap();
    assert_eq!(out.state.approved, Some(false));
    assert_eq!(out.state.n, 42);
    let original = graph.snapshot(&cp, "t").await.unwrap().unwrap();
    assert_eq!(original.state.approved, Some(true));
    assert_eq!(original.state.n, 0);
}

/// Records what the observer hears, in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Observer<S> for Recorder {
    fn node_started(&self, _: &str, node: &str, step: u32) {
        self.0.lock().unwrap().push(format!("start:{node}:{step}"));
    }
    fn node_finished(&self, _: &str, node: &str, _: u32) {
        self.0.lock().unwrap().push(format!("end:{node}"));
    }
    fn checkpoint_saved(&self, checkpoint: &Checkpoint) {
        self.0
            .lock()
            .unwrap()
            .push(format!("saved:{}", checkpoint.node));
    }
    fn progress(&self, _: &str, node: &str, progress: String) {
        self.0
            .lock()
            .unwrap()
            .push(format!("progress:{node}:{progress}"));
    }
}

#[tokio::test]
async fn the_observer_hears_nodes_checkpoints_and_progress_in_order() {
    let graph = GraphBuilder::new()
        .add_node(
            "talk",
            FnNode::new(|_: &mut S, ctx| {
                ctx.progress("hello".into());
                Ok(Next::Continue)
            }),
        )
        .add_node("b", visit("b"))
        .add_edge(START, "talk")
        .add_edge("talk", "b")
        .add_edge("b", END)
        .compile()
        .unwrap();
    let recorder = Recorder::default();
    graph
        .invoke("t", S::default(), &MemoryCheckpointer::new(), &recorder)
        .await
        .unwrap();
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [
            "saved:__start__",
            "start:talk:1",
            "progress:talk:hello",
            "end:talk",
            "saved:talk",
            "start:b:2",
            "end:b",
            "saved:b"
        ]
    );
}

/// A checkpointer that fails every write after the first `ok` ones: a
/// process that dies mid-run, as far as the store can tell.
struct DiesAfter {
    inner: MemoryCheckpointer,
    ok: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Checkpointer for DiesAfter {
    async fn put(&self, c: &Checkpoint) -> Result<(), CheckpointError> {
        let left = self.ok.load(std::sync::atomic::Ordering::SeqCst);
        if left == 0 {
            return Err(CheckpointError::Corrupt("the process died".into()));
        }
        self.ok.store(left - 1, std::sync::atomic::Ordering::SeqCst);
        self.inner.put(c).await
    }
    async fn latest(&self, t: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.inner.latest(t).await
    }
    async fn get(&self, t: &str, c: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        self.inner.get(t, c).await
    }
    async fn list(&self, t: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        self.inner.list(t).await
    }
}

#[tokio::test]
async fn a_run_that_died_resumes_from_its_last_checkpoint_even_before_its_first_node() {
    for saved in [1, 2] {
        // Only the input (1), or the input and node a (2), were saved.
        let dying = DiesAfter {
            inner: MemoryCheckpointer::new(),
            ok: saved.into(),
        };
        let err = chain()
            .invoke("t", S::default(), &dying, &NoObserver)
            .await
            .unwrap_err();
        assert!(matches!(err, GraphError::Checkpoint(_)));
        // A new process over the same store picks the run up where it stood.
        let out = chain()
            .resume("t", HashMap::new(), &dying.inner, &NoObserver)
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Finished);
        assert_eq!(out.path, ["a", "b"], "saved={saved}");
        assert_eq!(
            out.state.visited,
            ["a", "b"],
            "a node that ran but was not saved runs again"
        );
    }
}

#[tokio::test]
async fn a_failing_node_is_a_typed_error_with_its_source() {
    let graph = GraphBuilder::new()
        .add_node(
            "bad",
            FnNode::new(|_: &mut S, _| {
                let cause = std::io::Error::other("disk on fire");
                Err(NodeError::with_source("could not write", cause))
            }),
        )
        .add_edge(START, "bad")
        .add_edge("bad", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke("t", S::default(), &MemoryCheckpointer::new(), &NoObserver)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::Node { ref node, .. } if node == "bad"));
    let node_error = std::error::Error::source(&err).unwrap();
    assert_eq!(node_error.to_string(), "could not write");
    let cause = node_error.source().unwrap();
    assert_eq!(cause.to_string(), "disk on fire");
}
