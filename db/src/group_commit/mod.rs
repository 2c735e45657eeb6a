//! Group commit: one writer per [`crate::SqlCheckpointer`] (the console
//! builds one per database) runs the checkpoint writes of every concurrent
//! run in shared transactions.
//!
//! A caller hands over its checkpoints (one, or an invocation's batch) and
//! waits; the writer takes everything queued, inserts it with multi-row
//! statements in one transaction, and answers each caller when that
//! transaction commits (or failed). A checkpoint is therefore as durable
//! when its caller hears back as if it had been written alone, which keeps
//! the engine's `sync` mode honest, while the commits — the expensive part
//! of a small write — are shared. Under load the queue fills while the
//! previous batch commits.
//!
//! Under no load there is nothing to share: a caller that finds the writer
//! idle and nothing queued writes its rows itself, holding the writer's
//! slot, which saves the hop to the writer task and back (a sequential run
//! on SQLite is bound by that hop). The writer takes the same slot before
//! each batch, so a direct write and a batch never overlap. A run has at
//! most one write in flight (aics_graph's durability modes), so its own
//! writes stay in order whichever way each one goes.
//!
//! On SQLite a batch is one write of the direct connection's writer
//! (`crate::direct`), which may share its commit further, with the turns'
//! starts and ends queued at the same moment.
//!
//! On SQLite the writer also stores each state on its parent's where it
//! can (`crate::parents`), remembering each run's last committed state
//! before it answers that run's caller, whose next checkpoint follows it.
//! A row names its run's thread by a number, given the first time the
//! thread is written (`checkpoint_threads`; the migration
//! `20261208000001_checkpoint_threads` says why), which the writer
//! remembers with the state.
//!
//! A failed batch is retried caller by caller, so one caller's bad row (say
//! a state PostgreSQL's `jsonb` refuses) fails that caller alone. Each
//! caller's rows are written all or none, in the order given.
//!
//! - `mod.rs`: the writer, which decides which rows go together;
//! - `insert.rs`: how a write's rows are inserted on each database.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use aics_graph::Checkpoint;
use tokio::sync::{mpsc, oneshot};

use crate::parents::{Parents, Written};
use crate::{Database, DbError};

mod insert;

pub(crate) use insert::insert;

/// Rows per transaction: a batch stops growing here, so one commit never
/// holds the database for long.
const ROWS_PER_BATCH: usize = 512;

/// One caller's write.
struct Job {
    rows: Vec<Checkpoint>,
    done: oneshot::Sender<Result<(), DbError>>,
}

/// What the writer has done so far (tests and benchmarks read it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Callers' writes handed over.
    pub jobs: u64,
    /// Transactions committed (or tried), direct writes included.
    pub batches: u64,
    /// Of `jobs`, those written by their caller, the writer being idle.
    pub direct: u64,
    /// Checkpoints written.
    pub rows: u64,
}

#[derive(Default)]
struct Counters {
    jobs: AtomicU64,
    batches: AtomicU64,
    direct: AtomicU64,
    rows: AtomicU64,
    /// Jobs handed to the writer that it has not yet taken.
    queued: AtomicUsize,
}

/// The writer of one database's checkpoints. Cheap to clone; clones share
/// the writer, which runs while any clone lives.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    db: Database,
    queue: Arc<Mutex<Option<mpsc::UnboundedSender<Job>>>>,
    /// Held by whoever writes: the writer for a batch, or a caller writing
    /// directly.
    slot: Arc<tokio::sync::Mutex<()>>,
    counters: Arc<Counters>,
    /// The states the next checkpoints are stored on (SQLite).
    parents: Arc<Parents>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("backend", &self.db.backend())
            .field("stats", &self.stats())
            .finish()
    }
}

impl GroupCommit {
    pub(crate) fn new(db: Database) -> Self {
        Self {
            db,
            queue: Arc::default(),
            slot: Arc::default(),
            counters: Arc::default(),
            parents: Arc::default(),
        }
    }

    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            jobs: self.counters.jobs.load(Ordering::Relaxed),
            batches: self.counters.batches.load(Ordering::Relaxed),
            direct: self.counters.direct.load(Ordering::Relaxed),
            rows: self.counters.rows.load(Ordering::Relaxed),
        }
    }

    /// Writes `rows` (all or none, in order) in the next batch; returns
    /// when that batch committed.
    pub(crate) async fn write(&self, rows: Vec<Checkpoint>) -> Result<(), DbError> {
        if rows.is_empty() {
            return Ok(());
        }
        if self.counters.queued.load(Ordering::Acquire) == 0 {
            if let Ok(_slot) = self.slot.try_lock() {
                self.counters.jobs.fetch_add(1, Ordering::Relaxed);
                self.counters.direct.fetch_add(1, Ordering::Relaxed);
                self.counters.batches.fetch_add(1, Ordering::Relaxed);
                let all: Vec<&Checkpoint> = rows.iter().collect();
                let depths = insert(&self.db, &all, Some(&self.parents)).await?;
                self.counters
                    .rows
                    .fetch_add(rows.len() as u64, Ordering::Relaxed);
                remember(&self.parents, rows, depths);
                return Ok(());
            }
        }
        let (done, answer) = oneshot::channel();
        self.enqueue(Job { rows, done });
        // A writer that vanished mid-batch (its runtime shut down) leaves
        // the caller unanswered: that is a failed write.
        answer.await.unwrap_or_else(|_| {
            Err(DbError::Corrupt(
                "the checkpoint writer stopped before it answered".into(),
            ))
        })
    }

    /// Hands a job to the writer, starting one when there is none (the
    /// first write, or after the runtime that ran the last one ended).
    fn enqueue(&self, job: Job) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        self.counters.jobs.fetch_add(1, Ordering::Relaxed);
        self.counters.queued.fetch_add(1, Ordering::AcqRel);
        let job = match queue.as_ref() {
            Some(q) => match q.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // Just made, with its receiver alive: this send cannot fail.
        let _ = tx.send(job);
        tokio::spawn(run(
            self.db.clone(),
            rx,
            self.slot.clone(),
            self.counters.clone(),
            self.parents.clone(),
        ));
        *queue = Some(tx);
    }
}

/// The writer: a batch at a time until every handle is gone.
async fn run(
    db: Database,
    mut queue: mpsc::UnboundedReceiver<Job>,
    slot: Arc<tokio::sync::Mutex<()>>,
    counters: Arc<Counters>,
    parents: Arc<Parents>,
) {
    let mut batch: Vec<Job> = Vec::new();
    while let Some(first) = queue.recv().await {
        // A caller writing directly finishes first; what queued meanwhile
        // joins this batch.
        let _slot = slot.lock().await;
        let mut rows = first.rows.len();
        batch.push(first);
        while rows < ROWS_PER_BATCH {
            match queue.try_recv() {
                Ok(job) => {
                    rows += job.rows.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        counters.queued.fetch_sub(batch.len(), Ordering::AcqRel);
        counters.batches.fetch_add(1, Ordering::Relaxed);
        let all: Vec<&Checkpoint> = batch.iter().flat_map(|j| &j.rows).collect();
        match insert(&db, &all, Some(&parents)).await {
            Ok(depths) => {
                counters.rows.fetch_add(rows as u64, Ordering::Relaxed);
                let rows = batch.iter_mut().flat_map(|j| std::mem::take(&mut j.rows));
                remember(&parents, rows, depths);
                for job in batch.drain(..) {
                    let _ = job.done.send(Ok(()));
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some(job) = batch.pop() {
                    let _ = job.done.send(Err(e));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, callers = batch.len(), "a checkpoint batch failed; writing its callers one by one");
                for job in batch.drain(..) {
                    counters.batches.fetch_add(1, Ordering::Relaxed);
                    let rows: Vec<&Checkpoint> = job.rows.iter().collect();
                    let result = insert(&db, &rows, Some(&parents)).await;
                    let result = result.map(|depths| {
                        counters
                            .rows
                            .fetch_add(job.rows.len() as u64, Ordering::Relaxed);
                        remember(&parents, job.rows, depths);
                    });
                    let _ = job.done.send(result);
                }
            }
        }
    }
}

/// Tells `parents` what a write committed: its rows, with what [`insert()`]
/// told of each, its depth and its thread's number (nothing on
/// PostgreSQL, which stores every state whole and names threads by their
/// id, so nothing is remembered there).
fn remember(parents: &Parents, rows: impl IntoIterator<Item = Checkpoint>, written: Vec<Written>) {
    parents.committed(rows.into_iter().zip(written));
}
