//! Durability: when an invocation's checkpoints reach the store, and what a
//! crash can therefore lose (LangGraph's `durability` setting).
//!
//! | mode | a checkpoint is written | a crash mid-run loses |
//! |---|---|---|
//! | [`Durability::Sync`] | before the next node starts | the node in progress |
//! | [`Durability::Async`] | while the next nodes run: one write in flight, those handed over meanwhile in the next, in order | the node in progress and those since the last write that completed |
//! | [`Durability::Exit`] | with all the invocation's others, in one batch when it ends, fails or pauses | the whole invocation |
//!
//! In every mode an invocation returns only once all its checkpoints are
//! written, whether it ended, paused or failed: an interrupt is always
//! durable before the caller hears of it, and a failed write fails the
//! invocation. What a lost checkpoint means for a run taken over after a
//! crash is the caller's story (docs/ARCHITECTURE.md, "Durability").

use futures::future::{BoxFuture, Either};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer};

/// When an invocation's checkpoints are written; see the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Every checkpoint is written before the next node starts.
    #[default]
    Sync,
    /// A checkpoint is written while the next nodes run: one write is in
    /// flight at a time, the checkpoints handed over meanwhile go together
    /// in the next one, and writes land in order.
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
///
/// `Async` never makes a node wait for a write: the write in flight is
/// polled only while a node waits for something else (a model, a tool, the
/// database), and the checkpoints handed over before it completes wait in
/// `buffer` and go together in the next write, one transaction on the
/// stores that have them. A run whose nodes never wait — the offline demo
/// model without its token delay, a benchmark's fake one — thus writes
/// nothing until it returns (a write starts only when it is polled), then
/// its first checkpoint and the rest in one batch: a crash before that
/// loses the whole invocation, as in `Exit`. A run waiting on a real model
/// writes each checkpoint during the next node's call.
pub(crate) struct Writes<'a> {
    checkpointer: &'a dyn Checkpointer,
    mode: Durability,
    /// `Async`: the write in flight (polled only beside the next node, or
    /// by `flush`).
    pending: Option<BoxFuture<'a, Result<(), CheckpointError>>>,
    /// The checkpoints handed over and not yet being written, oldest first:
    /// all of them in `Exit`, those that came while a write was in flight in
    /// `Async`.
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

    /// Hands over the next checkpoint: written now (`Sync`), started or
    /// queued behind the write in flight (`Async`), or kept (`Exit`).
    pub(crate) async fn push(&mut self, checkpoint: Checkpoint) -> Result<(), CheckpointError> {
        match self.mode {
            Durability::Sync => self.checkpointer.put_owned(checkpoint).await,
            Durability::Async if self.pending.is_none() => {
                self.pending = Some(self.checkpointer.put_owned(checkpoint));
                Ok(())
            }
            Durability::Async | Durability::Exit => {
                self.buffer.push(checkpoint);
                Ok(())
            }
        }
    }

    /// Starts writing the queued checkpoints: one alone as a plain write,
    /// several as one batch.
    fn start_queued(&mut self) {
        self.pending = match self.buffer.len() {
            0 => None,
            1 => self
                .buffer
                .pop()
                .map(|one| self.checkpointer.put_owned(one)),
            _ => Some(
                self.checkpointer
                    .put_batch(std::mem::take(&mut self.buffer)),
            ),
        };
    }

    /// Runs `work` (the next node), driving the writes in flight whenever it
    /// waits; a write that completes starts the next one with what queued.
    /// `work` is polled first and never waits for a write: one still in
    /// flight when it returns stays in flight. A failed write fails the
    /// invocation once `work` is done (a node is never abandoned half-way),
    /// and the checkpoints queued behind it are not written.
    pub(crate) async fn beside<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, CheckpointError> {
        let mut work = std::pin::pin!(work);
        loop {
            let Some(write) = self.pending.take() else {
                return Ok(work.await);
            };
            match futures::future::select(work.as_mut(), write).await {
                Either::Left((out, write)) => {
                    self.pending = Some(write);
                    return Ok(out);
                }
                Either::Right((Ok(()), _)) => self.start_queued(),
                Either::Right((Err(e), _)) => {
                    work.await;
                    self.buffer.clear();
                    return Err(e);
                }
            }
        }
    }

    /// Makes every checkpoint handed over durable: the write in flight
    /// completes, then the queued or kept ones are written in one batch.
    pub(crate) async fn flush(&mut self) -> Result<(), CheckpointError> {
        loop {
            if let Some(write) = self.pending.take() {
                if let Err(e) = write.await {
                    self.buffer.clear();
                    return Err(e);
                }
            }
            self.start_queued();
            if self.pending.is_none() {
                return Ok(());
            }
        }
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
