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
    /// The number the run's thread has in `checkpoint_threads`.
    thread_n: i64,
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

/// A row's state as stored, its depth in its chain, and its thread's
/// number when the run's last row told it.
pub(crate) struct Stored {
    pub(crate) value: rusqlite::types::Value,
    pub(crate) depth: u32,
    pub(crate) thread_n: Option<i64>,
}

/// What the write of a row told: its depth, as [`Stored`] gave it, and
/// its thread's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) depth: u32,
    pub(crate) thread_n: i64,
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
    /// when that is the run's row just before in `rows` or, for the run's
    /// first row in `rows`, its last committed one; else whole.
    pub(crate) fn pack(&self, rows: &[&Checkpoint]) -> Vec<Stored> {
        let runs = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Stored> = Vec::with_capacity(rows.len());
        // Each run's latest row so far in `rows`, by index.
        let mut latest: HashMap<&str, usize> = HashMap::new();
        for (i, cp) in rows.iter().enumerate() {
            let thread = cp.thread_id.as_str();
            let last = runs.last.get(thread);
            let parent = cp
                .parent_id
                .as_deref()
                .and_then(|parent_id| match latest.get(thread) {
                    Some(&p) => (rows[p].checkpoint_id == parent_id)
                        .then(|| (rows[p].state.get(), out[p].depth)),
                    None => last
                        .filter(|last| last.checkpoint_id == parent_id)
                        .map(|last| (last.state.get(), last.depth)),
                });
            latest.insert(thread, i);
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
                thread_n: last.map(|last| last.thread_n),
            });
        }
        out
    }

    /// Remembers the rows of a committed write, with what their write
    /// told: each run's last row, unless the run ended there.
    pub(crate) fn committed(&self, rows: impl IntoIterator<Item = (Checkpoint, Written)>) {
        let mut runs = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for (cp, Written { depth, thread_n }) in rows {
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
                        thread_n,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::unpack_on_parent;

    fn row(thread: &str, step: u32, next: Option<&str>) -> Checkpoint {
        let messages: Vec<String> = (0..=step)
            .map(|i| format!("订单 ORD-{i:04} 已发货"))
            .collect();
        Checkpoint {
            thread_id: thread.into(),
            checkpoint_id: format!("{thread}-{step}"),
            parent_id: step.checked_sub(1).map(|p| format!("{thread}-{p}")),
            step,
            node: "agent".into(),
            next: next.map(Into::into),
            path: Vec::new(),
            state: (&serde_json::json!({ "messages": messages, "step": step })).into(),
            pending_interrupts: Vec::new(),
            created_at: chrono::Utc::now(),
        }
    }

    /// What a write told of rows with these depths and thread numbers.
    fn written(
        depths: impl IntoIterator<Item = u32>,
        numbers: impl IntoIterator<Item = i64>,
    ) -> impl Iterator<Item = Written> {
        depths
            .into_iter()
            .zip(numbers)
            .map(|(depth, thread_n)| Written { depth, thread_n })
    }

    fn bytes(stored: &Stored) -> &[u8] {
        match &stored.value {
            rusqlite::types::Value::Blob(b) => b,
            rusqlite::types::Value::Text(t) => t.as_bytes(),
            other => panic!("{other:?}"),
        }
    }

    /// Two runs interleaved in one write: each row after a run's first is
    /// stored on the row before it in that run, and reads back with it;
    /// once committed, each run's next write starts on its last row.
    #[test]
    fn interleaved_runs_are_each_stored_on_their_own_rows() {
        let parents = Parents::default();
        let rows: Vec<Checkpoint> = (0..6)
            .map(|i| row(if i % 2 == 0 { "a" } else { "b" }, i / 2, Some("tools")))
            .collect();
        let refs: Vec<&Checkpoint> = rows.iter().collect();
        let stored = parents.pack(&refs);
        let depths: Vec<u32> = stored.iter().map(|s| s.depth).collect();
        assert_eq!(depths, [0, 0, 1, 1, 2, 2]);
        for i in 2..6 {
            let text = unpack_on_parent(bytes(&stored[i]), rows[i - 2].state.get()).expect("reads");
            assert_eq!(text, rows[i].state.get());
        }
        let numbers = rows
            .iter()
            .map(|cp| if cp.thread_id == "a" { 1 } else { 2 });
        parents.committed(rows.iter().cloned().zip(written(depths, numbers)));
        let next = [row("a", 3, Some("tools")), row("b", 3, None)];
        let stored = parents.pack(&[&next[0], &next[1]]);
        assert_eq!(stored.iter().map(|s| s.depth).collect::<Vec<_>>(), [3, 3]);
        // Each run's thread number is remembered with its last row.
        assert_eq!(
            stored.iter().map(|s| s.thread_n).collect::<Vec<_>>(),
            [Some(1), Some(2)]
        );
        // A run that ended is forgotten.
        parents.committed(next.into_iter().zip(written([3, 3], [1, 2])));
        let runs = parents.inner.lock().expect("lock");
        assert!(runs.last.contains_key("a") && !runs.last.contains_key("b"));
    }

    /// A chain stops at [`MAX_CHAIN`], and what is remembered stays
    /// within [`BUDGET`].
    #[test]
    fn chains_and_memory_are_bounded() {
        let parents = Parents::default();
        let mut depths = Vec::new();
        for step in 0..40 {
            let cp = row("long", step, Some("agent"));
            let depth = parents.pack(&[&cp])[0].depth;
            depths.push(depth);
            parents.committed([(cp, Written { depth, thread_n: 1 })]);
        }
        assert!(depths.iter().all(|&d| d < MAX_CHAIN), "{depths:?}");
        assert_eq!(depths.iter().filter(|&&d| d == 0).count(), 3, "{depths:?}");

        let big = "x".repeat(BUDGET / 8);
        for run in 0..32 {
            let mut cp = row(&format!("big-{run}"), 0, Some("agent"));
            cp.state = (&serde_json::json!({ "blob": big })).into();
            parents.committed([(
                cp,
                Written {
                    depth: 0,
                    thread_n: run,
                },
            )]);
        }
        let runs = parents.inner.lock().expect("lock");
        assert!(runs.bytes <= BUDGET, "{} bytes", runs.bytes);
        assert!(runs.last.len() < 32);
        assert_eq!(
            runs.bytes,
            runs.last
                .values()
                .map(|l| l.state.get().len())
                .sum::<usize>()
        );
    }
}
