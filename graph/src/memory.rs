//! Checkpoints in memory, for tests, benchmarks and single-process use.

use std::hash::BuildHasher;
use std::sync::Mutex;

use async_trait::async_trait;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer};
use crate::Name;

/// Lock shards: runs on different threads rarely share a lock, so
/// concurrent runs do not queue behind one mutex.
const SHARDS: usize = 16;

/// A [`Checkpointer`] in memory.
#[derive(Debug)]
pub struct MemoryCheckpointer {
    shards: Vec<Mutex<FxHashMap<Name, Vec<Checkpoint>>>>,
}

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
    /// finished runs so memory stays flat over millions of runs).
    pub fn remove_thread(&self, thread_id: &str) -> usize {
        self.runs(thread_id)
            .remove(thread_id)
            .map_or(0, |r| r.len())
    }

    fn runs(&self, thread_id: &str) -> std::sync::MutexGuard<'_, FxHashMap<Name, Vec<Checkpoint>>> {
        // Middle bits: the maps inside a shard index by the low ones and
        // tag by the high ones.
        let hash = FxBuildHasher.hash_one(thread_id);
        let shard = &self.shards[(hash >> 32) as usize % SHARDS];
        // A poisoned lock only means another thread panicked mid-push; the
        // map itself is still whole.
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, checkpoint: Checkpoint) {
        let mut runs = self.runs(&checkpoint.thread_id);
        let run = runs.entry(checkpoint.thread_id.clone()).or_default();
        if !run
            .iter()
            .any(|c| c.checkpoint_id == checkpoint.checkpoint_id)
        {
            run.push(checkpoint);
        }
    }
}

#[async_trait]
impl Checkpointer for MemoryCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
        self.insert(checkpoint.clone());
        Ok(())
    }

    async fn put_owned(&self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        self.insert(checkpoint);
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
