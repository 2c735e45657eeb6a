//! The states a run's next checkpoint is stored on.
//!
//! On SQLite a checkpoint's state is compressed with its parent's state as
//! the dictionary when the writer has that text (`crate::packed`,
//! [`crate::packed::Packed::on_parent`]): a node changes little of the
//! state, and the row then holds little more than the change. The writer
//! has it in two cases: the parent is an earlier row of the same write (a
//! run in `exit` mode hands over its whole turn at once), or it is the
//! last row the writer committed for that run, which [`Parents`]
//! remembers for every run in flight (in `sync` and `async` modes each
//! node's checkpoint is a write of its own).
//!
//! A row stored on its parent's is read with it, and the parent perhaps
//! with its own: every [`MAX_CHAIN`]-th row of a chain is stored whole,
//! so a read decompresses a few short rows at most. Rows are never
//! updated or deleted one by one, so a parent outlives the rows stored on
//! it. A row is
//! stored on a parent only when it names that parent (`parent_id`) in its
//! own run: a fork's first row, whose parent is in another run, is whole.
//!
//! What is remembered is bounded ([`BUDGET`]): a run that ends is
//! forgotten at once, and past the budget a run in flight is forgotten
//! and its next checkpoint stored whole. Forgetting costs bytes, never
//! correctness.

use std::collections::HashMap;
use std::sync::Mutex;

use aics_graph::{Checkpoint, Name, StateJson};

use crate::packed::Packed;

/// The longest chain of rows stored each on the one before: the next row
/// is stored whole.
const MAX_CHAIN: u32 = 16;
/// The bytes of state text remembered at most (the streams of
/// `scripts/bench-http`, 1,000 turns at once, stay well within it only
/// while most of those runs are forgotten, which costs them bytes).
const BUDGET: usize = 4 << 20;

/// A run's last committed row.
struct Last {
    checkpoint_id: String,
    state: StateJson,
    /// Rows stored on a parent between this one and a whole row (0: this
    /// row is whole).
    depth: u32,
}

/// The last committed state of every run in flight, for one writer.
#[derive(Default)]
pub(crate) struct Parents {
    inner: Mutex<Runs>,
}

#[derive(Default)]
struct Runs {
    last: HashMap<Name, Last>,
    bytes: usize,
}

/// A row's state as stored, and its depth in its chain.
pub(crate) struct Stored {
    pub(crate) value: rusqlite::types::Value,
    pub(crate) depth: u32,
}

impl std::fmt::Debug for Parents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let runs = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Parents")
            .field("runs", &runs.last.len())
            .field("bytes", &runs.bytes)
            .finish()
    }
}

impl Parents {
    /// The stored form of each row's state, in order: on its parent's
    /// when that is an earlier row of `rows` or the run's last committed
    /// row, else whole.
    pub(crate) fn pack(&self, rows: &[&Checkpoint]) -> Vec<Stored> {
        let runs = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Stored> = Vec::with_capacity(rows.len());
        for (i, cp) in rows.iter().enumerate() {
            let parent = cp.parent_id.as_deref().and_then(|parent_id| {
                rows[..i]
                    .iter()
                    .zip(&out)
                    .rev()
                    .find(|(p, _)| p.thread_id == cp.thread_id && p.checkpoint_id == parent_id)
                    .map(|(p, stored)| (p.state.get(), stored.depth))
                    .or_else(|| {
                        runs.last
                            .get(cp.thread_id.as_str())
                            .filter(|last| last.checkpoint_id == parent_id)
                            .map(|last| (last.state.get(), last.depth))
                    })
            });
            let text = cp.state.get();
            let (packed, depth) = match parent {
                Some((parent, depth)) if depth + 1 < MAX_CHAIN => {
                    let packed = Packed::on_parent(text, parent);
                    let depth = if packed.is_on_parent() { depth + 1 } else { 0 };
                    (packed, depth)
                }
                _ => (Packed::of(text), 0),
            };
            out.push(Stored {
                value: packed.into_value(),
                depth,
            });
        }
        out
    }

    /// Remembers the rows of a committed write, with the depths
    /// [`Parents::pack`] gave them: each run's last row, unless the run
    /// ended there.
    pub(crate) fn committed(&self, rows: impl IntoIterator<Item = (Checkpoint, u32)>) {
        let mut runs = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (cp, depth) in rows {
            let replaced = if cp.next.is_none() {
                runs.last.remove(cp.thread_id.as_str())
            } else {
                runs.bytes += cp.state.get().len();
                runs.last.insert(
                    cp.thread_id,
                    Last {
                        checkpoint_id: cp.checkpoint_id,
                        state: cp.state,
                        depth,
                    },
                )
            };
            if let Some(old) = replaced {
                runs.bytes -= old.state.get().len();
            }
        }
        while runs.bytes > BUDGET {
            let Some(run) = runs.last.keys().next().cloned() else {
                break;
            };
            if let Some(old) = runs.last.remove(&run) {
                runs.bytes -= old.state.get().len();
            }
        }
    }
}
