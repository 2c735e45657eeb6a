//! Durability: when an invocation's checkpoints reach the store, and what a
//! crash can therefore lose (LangGraph's `durability` setting).
//!
//! | mode | a checkpoint is written | a crash mid-run loses |
//! |---|---|---|
//! | [`Durability::Sync`] | before the next node starts | the node in progress |
//! | [`Durability::Async`] | while the next node runs (one write in flight, in order) | the node in progress and the one before it |
//! | [`Durability::Exit`] | with all the invocation's others, in one batch when it ends, fails or pauses | the whole invocation |
//!
//! In every mode an invocation returns only once all its checkpoints are
//! written, whether it ended, paused or failed: an interrupt is always
//! durable before the caller hears of it, and a failed write fails the
//! invocation. What a lost checkpoint means for a run taken over after a
//! crash is the caller's story (docs/ARCHITECTURE.md, "Durability").

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer};

/// When an invocation's checkpoints are written; see the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Every checkpoint is written before the next node starts.
    #[default]
    Sync,
    /// A checkpoint is written while the next node runs; at most one write
    /// is in flight, and writes land in order.
    Async,
    /// The invocation's checkpoints are kept in memory and written in one
    /// batch ([`Checkpointer::put_batch`]) when it ends, fails or pauses.
    Exit,
}

impl Durability {
    /// Every mode, in the order of the module docs.
    pub const ALL: [Durability; 3] = [Self::Sync, Self::Async, Self::Exit];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Async => "async",
            Self::Exit => "exit",
        }
    }

    /// Reads `sync` / `async` / `exit` (any case).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "sync" => Some(Self::Sync),
            "async" => Some(Self::Async),
            "exit" => Some(Self::Exit),
            _ => None,
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The checkpoint writes of one invocation, in its mode.
pub(crate) struct Writes<'a> {
    checkpointer: &'a dyn Checkpointer,
    mode: Durability,
    /// `Async`: the write in flight (polled only beside the next node, or
    /// by `flush`).
    pending: Option<BoxFuture<'a, Result<(), CheckpointError>>>,
    /// `Exit`: the checkpoints not written yet, oldest first.
    buffer: Vec<Checkpoint>,
}

impl<'a> Writes<'a> {
    pub(crate) fn new(checkpointer: &'a dyn Checkpointer, mode: Durability) -> Self {
        Self {
            checkpointer,
            mode,
            pending: None,
            buffer: Vec::new(),
        }
    }

    /// Hands over the next checkpoint: written now (`Sync`), started
    /// (`Async`, after the previous write completed) or kept (`Exit`).
    pub(crate) async fn push(&mut self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        match self.mode {
            Durability::Sync => self.checkpointer.put_owned(checkpoint).await,
            Durability::Async => {
                // In order, one at a time.
                if let Some(previous) = self.pending.take() {
                    previous.await?;
                }
                self.pending = Some(self.checkpointer.put_owned(checkpoint));
                Ok(())
            }
            Durability::Exit => {
                self.buffer.push(checkpoint);
                Ok(())
            }
        }
    }

    /// Runs `work` (the next node) while the write in flight, if any,
    /// completes beside it. A failed write fails the invocation once `work`
    /// is done (a node is never abandoned half-way).
    pub(crate) async fn beside<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, CheckpointError> {
        match self.pending.take() {
            None => Ok(work.await),
            Some(write) => {
                let (written, out) = futures::future::join(write, work).await;
                written.map(|()| out)
            }
        }
    }

    /// Makes every checkpoint handed over durable: the write in flight
    /// completes, the kept ones are written in one batch.
    pub(crate) async fn flush(&mut self) -> Result<(), CheckpointError> {
        if let Some(write) = self.pending.take() {
            write.await?;
        }
        if !self.buffer.is_empty() {
            let batch = std::mem::take(&mut self.buffer);
            self.checkpointer.put_batch(batch).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for mode in Durability::ALL {
            assert_eq!(Durability::parse(mode.as_str()), Some(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
        }
        assert_eq!(Durability::parse(" EXIT "), Some(Durability::Exit));
        assert_eq!(Durability::parse("never"), None);
        assert_eq!(Durability::default(), Durability::Sync);
    }
}
