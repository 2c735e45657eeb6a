use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    assert_eq!(list[0].state.to_value()["visited"], json!([]));
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
    assert_eq!(list[2].state.to_value()["visited"], json!(["a", "b"]));
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
/// process that dies mid-run, as far as the store can tell. A batch is all
/// or nothing, as a transaction is.
struct DiesAfter {
    inner: MemoryCheckpointer,
    ok: std::sync::atomic::AtomicUsize,
}

impl DiesAfter {
    fn new(ok: usize) -> Self {
        Self {
            inner: MemoryCheckpointer::new(),
            ok: ok.into(),
        }
    }

    /// Takes `n` writes from the allowance, or dies (and writes nothing).
    fn take(&self, n: usize) -> Result<(), CheckpointError> {
        use std::sync::atomic::Ordering::SeqCst;
        let left = self.ok.load(SeqCst);
        if left < n {
            self.ok.store(0, SeqCst);
            return Err(CheckpointError::Corrupt("the process died".into()));
        }
        self.ok.store(left - n, SeqCst);
        Ok(())
    }
}

#[async_trait::async_trait]
impl Checkpointer for DiesAfter {
    async fn put(&self, c: &Checkpoint) -> Result<(), CheckpointError> {
        self.take(1)?;
        self.inner.put(c).await
    }
    async fn put_batch(&self, batch: Vec<Checkpoint>) -> Result<(), CheckpointError> {
        self.take(batch.len())?;
        self.inner.put_batch(batch).await
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
        let dying = DiesAfter::new(saved);
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

// ---- Durability modes ------------------------------------------------------

/// `a → b → c`, each node counting its executions in `runs` (a side effect
/// outside the state, like a tool call), in `mode`.
/// `START → a → b → c → END` in `mode`, each node made by `node(name)`.
fn three_nodes<N: Node<S> + 'static>(
    mode: Durability,
    node: impl Fn(&'static str) -> N,
) -> Graph<S> {
    GraphBuilder::new()
        .add_node("a", node("a"))
        .add_node("b", node("b"))
        .add_node("c", node("c"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .durability(mode)
        .compile()
        .unwrap()
}

fn counted_chain(mode: Durability, runs: &Arc<Mutex<Vec<String>>>) -> Graph<S> {
    three_nodes(mode, |name| {
        let runs = runs.clone();
        FnNode::new(move |s: &mut S, _| {
            runs.lock().unwrap().push(name.into());
            s.visited.push(name.into());
            Ok(Next::Continue)
        })
    })
}

fn shape(list: &[Checkpoint]) -> Vec<(u32, String, Option<String>, usize)> {
    list.iter()
        .map(|c| {
            (
                c.step,
                c.node.to_string(),
                c.next.as_ref().map(|n| n.to_string()),
                c.pending_interrupts.len(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_mode_leaves_the_same_checkpoints_in_the_same_order() {
    let mut shapes = Vec::new();
    for mode in Durability::ALL {
        let cp = MemoryCheckpointer::new();
        let graph = GraphBuilder::new()
            .add_node("before", visit("before"))
            .add_node(
                "gate",
                FnNode::new(|s: &mut S, ctx| match ctx.resume_value("q1") {
                    Some(v) => {
                        s.approved = Some(*v);
                        Ok(Next::Continue)
                    }
                    None => Ok(Next::Interrupt(vec![Interrupt::new("q1", json!({}))])),
                }),
            )
            .add_node("after", visit("after"))
            .add_edge(START, "before")
            .add_edge("before", "gate")
            .add_edge("gate", "after")
            .add_edge("after", END)
            .durability(mode)
            .compile()
            .unwrap();
        assert_eq!(graph.durability(), mode);
        let out = graph
            .invoke("t", S::default(), &cp, &NoObserver)
            .await
            .unwrap();
        assert!(matches!(out.status, RunStatus::Interrupted(_)), "{mode}");
        // The pause is in the store when the caller hears of it.
        let latest = cp.latest("t").await.unwrap().unwrap();
        assert_eq!(latest.pending_interrupts.len(), 1, "{mode}");
        assert_eq!(
            out.checkpoint_id.as_deref(),
            Some(latest.checkpoint_id.as_str())
        );
        let out = graph
            .resume("t", HashMap::from([("q1".into(), true)]), &cp, &NoObserver)
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Finished, "{mode}");
        let list = cp.list("t").await.unwrap();
        for pair in list.windows(2) {
            assert_eq!(
                pair[1].parent_id.as_deref(),
                Some(pair[0].checkpoint_id.as_str()),
                "{mode}: each checkpoint follows the one before"
            );
        }
        shapes.push(shape(&list));
    }
    assert_eq!(shapes[0].len(), 5);
    assert_eq!(shapes[0], shapes[1]);
    assert_eq!(shapes[0], shapes[2]);
}

/// Logs when writes begin and end, yielding in between (a store doing I/O).
#[derive(Default)]
struct SlowLog {
    inner: MemoryCheckpointer,
    log: Arc<Mutex<Vec<String>>>,
    batches: Mutex<Vec<usize>>,
}

#[async_trait::async_trait]
impl Checkpointer for SlowLog {
    async fn put(&self, c: &Checkpoint) -> Result<(), CheckpointError> {
        self.log.lock().unwrap().push(format!("begin:{}", c.step));
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.log.lock().unwrap().push(format!("end:{}", c.step));
        self.inner.put(c).await
    }
    async fn put_batch(&self, batch: Vec<Checkpoint>) -> Result<(), CheckpointError> {
        self.batches.lock().unwrap().push(batch.len());
        self.inner.put_batch(batch).await
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

/// An async node that logs its start and end, yielding in between.
struct Busy(&'static str, Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Node<S> for Busy {
    async fn run(&self, s: &mut S, _: &NodeContext<'_, S>) -> Result<Next, NodeError> {
        self.1.lock().unwrap().push(format!("start:{}", self.0));
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        s.visited.push(self.0.into());
        self.1.lock().unwrap().push(format!("done:{}", self.0));
        Ok(Next::Continue)
    }
}

async fn logged_run(mode: Durability) -> (Vec<String>, Vec<usize>, usize) {
    let store = SlowLog::default();
    let log = store.log.clone();
    let graph = GraphBuilder::new()
        .add_node("a", Busy("a", log.clone()))
        .add_node("b", Busy("b", log.clone()))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .durability(mode)
        .compile()
        .unwrap();
    graph
        .invoke("t", S::default(), &store, &NoObserver)
        .await
        .unwrap();
    let written = store.inner.list("t").await.unwrap().len();
    let log = log.lock().unwrap().clone();
    let batches = store.batches.lock().unwrap().clone();
    (log, batches, written)
}

#[tokio::test]
async fn sync_writes_before_the_next_node_and_async_beside_it_in_order() {
    let (log, _, written) = logged_run(Durability::Sync).await;
    assert_eq!(written, 3);
    assert_eq!(
        log,
        [
            "begin:0", "end:0", "start:a", "done:a", "begin:1", "end:1", "start:b", "done:b",
            "begin:2", "end:2"
        ]
    );

    let (log, _, written) = logged_run(Durability::Async).await;
    assert_eq!(
        written, 3,
        "every checkpoint is written before invoke returns"
    );
    let at = |e: &str| log.iter().position(|l| l == e).unwrap();
    // The input's write overlaps node a, a's checkpoint overlaps node b.
    assert!(at("start:a") < at("end:0"), "{log:?}");
    assert!(at("start:b") < at("end:1"), "{log:?}");
    // At most one write in flight, in order; the last one is awaited.
    assert!(
        at("end:0") < at("begin:1") && at("end:1") < at("begin:2"),
        "{log:?}"
    );
    assert_eq!(log.last().map(String::as_str), Some("end:2"));
}

/// A node that never waits: it logs its start and end and returns.
struct Quick(&'static str, Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Node<S> for Quick {
    async fn run(&self, s: &mut S, _: &NodeContext<'_, S>) -> Result<Next, NodeError> {
        self.1.lock().unwrap().push(format!("start:{}", self.0));
        s.visited.push(self.0.into());
        self.1.lock().unwrap().push(format!("done:{}", self.0));
        Ok(Next::Continue)
    }
}

#[tokio::test]
async fn async_never_makes_a_node_wait_and_writes_what_queued_in_one_batch() {
    let store = SlowLog::default();
    let log = store.log.clone();
    let graph = three_nodes(Durability::Async, |name| Quick(name, log.clone()));
    graph
        .invoke("t", S::default(), &store, &NoObserver)
        .await
        .unwrap();
    // Nodes that never wait never give the input's write a turn: it runs
    // when the invocation returns, then the three nodes' checkpoints in
    // one batch behind it.
    assert_eq!(
        *log.lock().unwrap(),
        ["start:a", "done:a", "start:b", "done:b", "start:c", "done:c", "begin:0", "end:0"]
    );
    assert_eq!(*store.batches.lock().unwrap(), [3]);
    let steps: Vec<u32> = store
        .inner
        .list("t")
        .await
        .unwrap()
        .iter()
        .map(|c| c.step)
        .collect();
    assert_eq!(steps, [0, 1, 2, 3], "all written, in order");
}

#[tokio::test]
async fn exit_writes_the_invocation_in_one_batch_when_it_ends() {
    let (log, batches, written) = logged_run(Durability::Exit).await;
    assert_eq!(batches, [3], "the input and both nodes, once");
    assert_eq!(written, 3);
    assert_eq!(log, ["start:a", "done:a", "start:b", "done:b"]);
}

#[tokio::test]
async fn a_failing_node_or_step_limit_still_leaves_what_ran_in_every_mode() {
    for mode in Durability::ALL {
        let graph = GraphBuilder::new()
            .add_node("a", visit("a"))
            .add_node(
                "bad",
                FnNode::new(|_: &mut S, _| Err(NodeError::new("broken"))),
            )
            .add_edge(START, "a")
            .add_edge("a", "bad")
            .add_edge("bad", END)
            .durability(mode)
            .compile()
            .unwrap();
        let cp = MemoryCheckpointer::new();
        let err = graph
            .invoke("t", S::default(), &cp, &NoObserver)
            .await
            .unwrap_err();
        assert!(matches!(err, GraphError::Node { .. }), "{mode}: {err}");
        let nodes: Vec<String> = cp
            .list("t")
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.node.into())
            .collect();
        assert_eq!(nodes, [START, "a"], "{mode}");

        let spin = GraphBuilder::new()
            .add_node("spin", visit("spin"))
            .add_edge(START, "spin")
            .add_edge("spin", "spin")
            .step_limit(3)
            .durability(mode)
            .compile()
            .unwrap();
        let err = spin
            .invoke("s", S::default(), &cp, &NoObserver)
            .await
            .unwrap_err();
        assert!(matches!(err, GraphError::StepLimit { .. }), "{mode}");
        assert_eq!(cp.list("s").await.unwrap().len(), 4, "{mode}");
    }
}

/// A kill during a new run, in each mode, as docs/ARCHITECTURE.md
/// ("Durability") describes it: the store dies at its `ok + 1`-th write;
/// what is left, and which nodes a new process runs again when it resumes
/// (the node executions beyond the first three).
#[tokio::test]
async fn a_kill_mid_run_loses_what_each_mode_says() {
    for mode in Durability::ALL {
        for ok in 1..=3usize {
            let runs = Arc::new(Mutex::new(Vec::new()));
            let dying = DiesAfter::new(ok);
            let err = counted_chain(mode, &runs)
                .invoke("t", S::default(), &dying, &NoObserver)
                .await
                .unwrap_err();
            assert!(
                matches!(err, GraphError::Checkpoint(_)),
                "{mode} {ok}: {err}"
            );
            let left = dying.inner.list("t").await.unwrap();
            // A new process over the same store.
            let resumed = counted_chain(mode, &runs)
                .resume("t", HashMap::new(), &dying.inner, &NoObserver)
                .await;
            let runs = runs.lock().unwrap().clone();
            match mode {
                // Lost: the node whose checkpoint failed; it runs again.
                Durability::Sync => {
                    assert_eq!(left.len(), ok, "{mode} {ok}");
                    assert_eq!(runs.len(), 3 + 1, "{mode} {ok}: {runs:?}");
                    assert_eq!(runs[ok - 1], runs[ok], "{mode} {ok}: {runs:?}");
                }
                // Lost: every checkpoint after the last write that
                // completed. These nodes never wait, so the input's write
                // was still in flight when they ran, and their three
                // checkpoints went together in the write that died: all
                // three run again.
                Durability::Async => {
                    assert_eq!(left.len(), 1, "{mode} {ok}");
                    assert_eq!(runs.len(), 3 + 3, "{mode} {ok}: {runs:?}");
                }
                // Lost: the whole invocation; nothing to resume from.
                Durability::Exit => {
                    assert!(left.is_empty(), "{mode} {ok}");
                    assert!(
                        matches!(resumed, Err(GraphError::UnknownThread(_))),
                        "{mode} {ok}"
                    );
                    assert_eq!(runs.len(), 3, "{mode} {ok}");
                    continue;
                }
            }
            let out = resumed.unwrap();
            assert_eq!(out.status, RunStatus::Finished, "{mode} {ok}");
            assert_eq!(out.state.visited, ["a", "b", "c"], "{mode} {ok}");
            assert_eq!(out.path, ["a", "b", "c"], "{mode} {ok}");
        }
    }
}

/// A node that waits (as one calling a model does) and counts its runs.
struct Waits(&'static str, Arc<Mutex<Vec<String>>>);

#[async_trait::async_trait]
impl Node<S> for Waits {
    async fn run(&self, s: &mut S, _: &NodeContext<'_, S>) -> Result<Next, NodeError> {
        self.1.lock().unwrap().push(self.0.into());
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        s.visited.push(self.0.into());
        Ok(Next::Continue)
    }
}

/// `async` with nodes that wait: each checkpoint is written while the next
/// node waits, so a kill loses the node in progress and the one before it
/// (docs/ARCHITECTURE.md, "Durability"), as with a real model.
#[tokio::test]
async fn async_with_nodes_that_wait_loses_that_node_and_the_one_before() {
    let waiting_chain = |runs: &Arc<Mutex<Vec<String>>>| {
        three_nodes(Durability::Async, |name| Waits(name, runs.clone()))
    };
    for ok in 1..=3usize {
        let runs = Arc::new(Mutex::new(Vec::new()));
        let dying = DiesAfter::new(ok);
        let err = waiting_chain(&runs)
            .invoke("t", S::default(), &dying, &NoObserver)
            .await
            .unwrap_err();
        assert!(matches!(err, GraphError::Checkpoint(_)), "{ok}: {err}");
        assert_eq!(dying.inner.list("t").await.unwrap().len(), ok, "{ok}");
        let out = waiting_chain(&runs)
            .resume("t", HashMap::new(), &dying.inner, &NoObserver)
            .await
            .unwrap();
        assert_eq!(out.state.visited, ["a", "b", "c"], "{ok}");
        let again = if ok < 3 { 2 } else { 1 };
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len(), 3 + again, "{ok}: {runs:?}");
    }
}

/// In every mode a pause is durable before it is reported: when its write
/// fails, the caller gets the error, never the interrupt.
#[tokio::test]
async fn an_interrupt_is_never_reported_before_its_checkpoint_is_written() {
    for mode in Durability::ALL {
        // gate_graph writes: input, before, gate (the pause).
        let dying = DiesAfter::new(2);
        let graph = GraphBuilder::new()
            .add_node("before", visit("before"))
            .add_node(
                "gate",
                FnNode::new(|_: &mut S, _| {
                    Ok(Next::Interrupt(vec![Interrupt::new("q1", json!({}))]))
                }),
            )
            .add_edge(START, "before")
            .add_edge("before", "gate")
            .add_edge("gate", END)
            .durability(mode)
            .compile()
            .unwrap();
        let out = graph.invoke("t", S::default(), &dying, &NoObserver).await;
        assert!(
            matches!(out, Err(GraphError::Checkpoint(_))),
            "{mode}: {out:?}"
        );
        let latest = dying.inner.latest("t").await.unwrap();
        assert!(
            latest.is_none_or(|c| c.pending_interrupts.is_empty()),
            "{mode}: no pause in the store"
        );
    }
}

/// `exit`: a resumed run killed mid-way goes back to its pause, and runs
/// again from there with the same decisions.
#[tokio::test]
async fn exit_a_resumed_run_killed_mid_way_goes_back_to_its_pause() {
    let runs = Arc::new(Mutex::new(Vec::new()));
    let graph = |runs: &Arc<Mutex<Vec<String>>>| {
        let after = runs.clone();
        GraphBuilder::new()
            .add_node(
                "gate",
                FnNode::new(|s: &mut S, ctx| match ctx.resume_value("q1") {
                    Some(v) => {
                        s.approved = Some(*v);
                        Ok(Next::Continue)
                    }
                    None => Ok(Next::Interrupt(vec![Interrupt::new("q1", json!({}))])),
                }),
            )
            .add_node(
                "after",
                FnNode::new(move |s: &mut S, _| {
                    after.lock().unwrap().push("after".into());
                    s.visited.push("after".into());
                    Ok(Next::Continue)
                }),
            )
            .add_edge(START, "gate")
            .add_edge("gate", "after")
            .add_edge("after", END)
            .durability(Durability::Exit)
            .compile()
            .unwrap()
    };
    // The first invocation pauses: input and gate, in one batch.
    let dying = DiesAfter::new(2);
    let out = graph(&runs)
        .invoke("t", S::default(), &dying, &NoObserver)
        .await
        .unwrap();
    assert!(matches!(out.status, RunStatus::Interrupted(_)));
    // The resume dies before its batch is written.
    let decision = HashMap::from([("q1".to_owned(), true)]);
    let err = graph(&runs)
        .resume("t", decision.clone(), &dying, &NoObserver)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::Checkpoint(_)));
    let latest = dying.inner.latest("t").await.unwrap().unwrap();
    assert_eq!(latest.pending_interrupts.len(), 1, "back at the pause");
    // A new process resumes with the same decision and finishes.
    let out = graph(&runs)
        .resume("t", decision, &dying.inner, &NoObserver)
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Finished);
    assert_eq!(out.state.approved, Some(true));
    assert_eq!(out.state.visited, ["after"]);
    assert_eq!(
        *runs.lock().unwrap(),
        ["after", "after"],
        "the step after the pause ran twice"
    );
}

#[test]
fn new_ids_sort_in_the_order_they_were_made() {
    let ids: Vec<String> = (0..1000).map(|_| crate::new_id()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert!(ids.iter().all(|id| id.len() == 36 && &id[14..15] == "7"));
}

/// A checkpoint's id carries the millisecond of its `created_at`: both
/// come from one reading of the clock. Two readings a checkpoint apart
/// would straddle a millisecond in about one checkpoint of a few hundred:
/// a thousand checkpoints are checked.
#[tokio::test]
async fn a_checkpoint_id_names_the_millisecond_it_was_created() {
    let cp = MemoryCheckpointer::new();
    let graph = chain();
    for run in 0..334 {
        let thread = format!("t{run}");
        graph
            .invoke(&thread, S::default(), &cp, &NoObserver)
            .await
            .unwrap();
        let saved = cp.list(&thread).await.unwrap();
        assert_eq!(saved.len(), 3);
        for c in saved {
            let id = uuid::Uuid::parse_str(&c.checkpoint_id).unwrap();
            let (secs, nanos) = id.get_timestamp().unwrap().to_unix();
            let id_ms = secs * 1000 + u64::from(nanos) / 1_000_000;
            assert_eq!(
                i64::try_from(id_ms).unwrap(),
                c.created_at.timestamp_millis(),
                "{c:?}"
            );
        }
    }
}

/// Ids made on several threads at once still name the millisecond of
/// their own clock reading: no thread's id is pushed forward by another
/// thread's later one.
#[test]
fn ids_made_at_once_on_several_threads_keep_their_own_time() {
    let threads: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                (0..20_000)
                    .map(|_| crate::stamp())
                    .filter(|(id, at)| {
                        let id = uuid::Uuid::parse_str(id).unwrap();
                        let (secs, nanos) = id.get_timestamp().unwrap().to_unix();
                        let id_ms = secs * 1000 + u64::from(nanos) / 1_000_000;
                        i64::try_from(id_ms).unwrap() != at.timestamp_millis()
                    })
                    .count()
            })
        })
        .collect();
    let wrong: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(wrong, 0, "ids whose time is not their reading's");
}
