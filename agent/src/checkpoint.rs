//! Checkpoints: the state of a graph run, saved after every node.
//!
//! The engine writes one [`Checkpoint`] after each node through a
//! [`Checkpointer`]. That is what lets a run be listed step by step, resumed
//! after an interrupt by another engine instance (or another server), and
//! forked from any step. [`MemoryCheckpointer`] keeps them in memory; the
//! database crate has the SQLite and PostgreSQL ones.

use std::collections::HashMap;
use std::sync::Mutex;

use aics_types::Timestamp;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pause a node asked for, waiting for a decision keyed by `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// The key the decision must carry (for approvals: the tool-call id).
    pub id: String,
    /// The node that paused.
    pub node: String,
    /// What the node wants decided (for approvals: tool, args, reason).
    pub value: Value,
}

/// The state of one run after one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run: one chat turn's graph execution id.
    pub thread_id: String,
    pub checkpoint_id: String,
    /// The checkpoint this one follows; `None` for the first.
    pub parent_id: Option<String>,
    /// 0 for the first node of a run, then 1, 2, ...
    pub step: u32,
    /// The node that just ran.
    pub node: String,
    /// The node the run continues with; `None` when the run ended.
    pub next: Option<String>,
    /// The whole graph state, serialised.
    pub state: Value,
    /// Interrupts waiting for a decision at this point.
    pub pending_interrupts: Vec<Interrupt>,
    pub created_at: Timestamp,
}

/// What can go wrong saving or loading checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store failed (the database is unreachable, say).
    #[error("checkpoint store failed: {0}")]
    Store(String),
    /// A stored checkpoint could not be read back.
    #[error("checkpoint is corrupt: {0}")]
    Corrupt(String),
}

/// Saves and loads checkpoints.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Saves a checkpoint. Saving the same `checkpoint_id` twice is harmless.
    async fn put(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError>;

    /// Saves a checkpoint the caller no longer needs; stores that keep the
    /// value (the in-memory one) override it to skip a deep copy.
    async fn put_owned(&self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        self.put(&checkpoint).await
    }

    /// The newest checkpoint of a run.
    async fn latest(&self, thread_id: &str) -> Result<Option<Checkpoint>, CheckpointError>;

    /// One checkpoint of a run.
    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Checkpoint>, CheckpointError>;

    /// Every checkpoint of a run, oldest first.
    async fn list(&self, thread_id: &str) -> Result<Vec<Checkpoint>, CheckpointError>;
}

/// Checkpoints in memory, for tests, benchmarks and single-process use.
#[derive(Debug)]
pub struct MemoryCheckpointer {
    shards: Vec<Mutex<HashMap<String, Vec<Checkpoint>>>>,
}

/// Lock shards of [`MemoryCheckpointer`].
const SHARDS: usize = 16;

impl Default for MemoryCheckpointer {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl MemoryCheckpointer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets a run and says how many checkpoints it had (benchmarks drop
    /// finished runs so memory stays flat over millions of turns).
    pub fn remove_thread(&self, thread_id: &str) -> usize {
        self.runs(thread_id)
            .remove(thread_id)
            .map_or(0, |r| r.len())
    }

    /// The shard that holds a thread: runs on different threads rarely
    /// share a lock, so concurrent turns do not queue behind one mutex.
    fn runs(&self, thread_id: &str) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Checkpoint>>> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(thread_id, &mut hasher);
        let shard = &self.shards[std::hash::Hasher::finish(&hasher) as usize % SHARDS];
        // A poisoned lock only means another thread panicked mid-push; the
        // map itself is still whole.
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Checkpointer for MemoryCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        let mut runs = self.runs(&checkpoint.thread_id);
        let run = runs.entry(checkpoint.thread_id.clone()).or_default();
        if !run
            .iter()
            .any(|c| c.checkpoint_id == checkpoint.checkpoint_id)
        {
            run.push(checkpoint.clone());
        }
        Ok(())
    }

    async fn put_owned(&self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        let mut runs = self.runs(&checkpoint.thread_id);
        let run = runs.entry(checkpoint.thread_id.clone()).or_default();
        if !run
            .iter()
            .any(|c| c.checkpoint_id == checkpoint.checkpoint_id)
        {
            run.push(checkpoint);
        }
        Ok(())
    }

    async fn latest(&self, thread_id: &str) -> Result<Option<Checkpoint>, CheckpointError> {
        Ok(self
            .runs(thread_id)
            .get(thread_id)
            .and_then(|r| r.last().cloned()))
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Option<Checkpoint>, CheckpointError> {
        Ok(self
            .runs(thread_id)
            .get(thread_id)
            .and_then(|r| r.iter().find(|c| c.checkpoint_id == checkpoint_id).cloned()))
    }

    async fn list(&self, thread_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        Ok(self
            .runs(thread_id)
            .get(thread_id)
            .cloned()
            .unwrap_or_default())
    }
}
