//! Checkpoints: the state of a run, saved after every node.
//!
//! The engine writes one [`Checkpoint`] after each node through a
//! [`Checkpointer`], when the graph's [`crate::Durability`] says. That is what lets a run be listed step by step, resumed
//! after an interrupt by another process, and forked from any step.
//! [`crate::MemoryCheckpointer`] keeps them in memory; aics-db has the SQLite
//! and PostgreSQL ones.

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::{Name, Timestamp};

/// A pause a node asked for, waiting for a resume value keyed by `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// The key the resume value must carry.
    pub id: String,
    /// The node that paused (the engine fills it in).
    pub node: String,
    /// What the node wants decided, for whoever decides.
    pub value: Value,
}

impl Interrupt {
    /// An interrupt with this id and value; the engine names the node.
    pub fn new(id: impl Into<String>, value: Value) -> Self {
        Self {
            id: id.into(),
            node: String::new(),
            value,
        }
    }
}

/// The state of one run after one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run.
    pub thread_id: Name,
    pub checkpoint_id: String,
    /// The checkpoint this one follows (in a fork: the one it was copied
    /// from, in the source thread); `None` for the first.
    pub parent_id: Option<String>,
    /// 0 for the run's input (node [`crate::START`]), then 1, 2, … for the
    /// nodes that ran.
    pub step: u32,
    /// The node that just ran ([`crate::START`] for the input).
    pub node: Name,
    /// The node the run continues with; `None` when the run ended.
    pub next: Option<Name>,
    /// The nodes the run executed so far, in order (across interrupts).
    #[serde(default)]
    pub path: Vec<Name>,
    /// The whole state, serialised.
    pub state: StateJson,
    /// Interrupts waiting for a resume value at this point.
    pub pending_interrupts: Vec<Interrupt>,
    pub created_at: Timestamp,
}

/// A state serialised to JSON once, when its checkpoint is made, and kept
/// as that text: a store writes it as it is, and it is decoded only where
/// it is read (a resume, a fork, the trace view). A tree of
/// [`serde_json::Value`]s would cost a second serialisation for every
/// write and several times the memory of the text while it waits.
///
/// The text is always JSON: it comes from [`StateJson::encode`], or from a
/// store through [`StateJson::from_text`] or a [`RawValue`], both checked.
#[derive(Clone)]
pub struct StateJson(Box<str>);

impl StateJson {
    /// Serialises `state`. sonic-rs writes the same JSON as serde_json
    /// (a test below holds it to that) but finds the characters to escape
    /// with SIMD: a support turn's state is mostly strings, its tool
    /// results JSON text full of quotes, and escaping them was the largest
    /// cost of a checkpoint. The [`crate::Encoded`] values in it are
    /// written as the text they were written as before. The text is
    /// written in a buffer the thread keeps, then copied out at its size.
    pub fn encode<S: Serialize + ?Sized>(state: &S) -> Result<Self, serde_json::Error> {
        crate::encoded::in_scratch(|buffer| {
            crate::encoded::reusing(|| sonic_rs::to_writer(buffer, state))
        })
        .map(Self)
    }

    /// Takes stored JSON text, checking that it is JSON.
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(Self::from)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// Decodes the state.
    pub fn decode<S: DeserializeOwned>(&self) -> Result<S, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// The state as a tree of values (for views and tests).
    pub fn to_value(&self) -> Value {
        // The text is JSON (see the type's doc).
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

/// Written as the JSON it is, not as a string.
impl Serialize for StateJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StateJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self::from)
    }
}

/// Equal when the JSON is: PostgreSQL's `jsonb` gives back the same state
/// with its keys in another order.
impl PartialEq for StateJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.to_value() == other.to_value()
    }
}

impl std::fmt::Debug for StateJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get())
    }
}

impl From<Box<RawValue>> for StateJson {
    fn from(raw: Box<RawValue>) -> Self {
        Self(raw.into())
    }
}

impl From<&Value> for StateJson {
    fn from(value: &Value) -> Self {
        // A value always serialises.
        Self::encode(value).unwrap_or_else(|_| unreachable!("a JSON value serialises"))
    }
}

/// What can go wrong saving or loading checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store failed (the database is unreachable, say).
    #[error("checkpoint store failed: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored checkpoint could not be read back.
    #[error("checkpoint is corrupt: {0}")]
    Corrupt(String),
}

impl CheckpointError {
    /// A store failure caused by `source`.
    pub fn store(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Store(Box::new(source))
    }
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

    /// Saves checkpoints of one run, oldest first, as
    /// [`crate::Durability::Exit`] hands them over when an invocation
    /// returns. The default saves them one by one; a store with
    /// transactions overrides it to save all or none.
    async fn put_batch(&self, checkpoints: Vec<Checkpoint>) -> Result<(), CheckpointError> {
        for checkpoint in checkpoints {
            self.put_owned(checkpoint).await?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// sonic-rs and serde_json write the same text for what a state holds:
    /// escapes, non-ASCII, tagged enums, maps, numbers at the edges, and
    /// a non-finite float (null).
    #[test]
    fn encode_writes_what_serde_json_writes() {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Message {
            Tool { content: String, call: Value },
        }
        #[derive(Serialize)]
        struct State {
            messages: Vec<Message>,
            counts: std::collections::BTreeMap<u32, f64>,
            missing: Option<String>,
            quote: char,
        }
        let state = State {
            messages: vec![Message::Tool {
                content: "{\"order\":\"ORD-1\",\"note\":\"a\\b\\n\u{1}\u{7f}é😀\"}".into(),
                call: json!({"z": 1, "a": [1.5, -2, u64::MAX, i64::MIN, 1e300]}),
            }],
            counts: [(1, 0.1), (2, f64::NAN)].into(),
            missing: None,
            quote: '"',
        };
        let ours = StateJson::encode(&state).expect("encode");
        assert_eq!(
            ours.get(),
            serde_json::to_string(&state).expect("serde_json")
        );
    }

    #[test]
    fn it_serialises_as_json_not_as_a_string() {
        let state = StateJson::from(&json!({"a": [1, "b"]}));
        let outer = serde_json::to_string(&json!({"state": state.to_value()})).expect("outer");
        #[derive(Serialize, Deserialize)]
        struct Outer {
            state: StateJson,
        }
        assert_eq!(
            serde_json::to_string(&Outer { state }).expect("to_string"),
            outer
        );
        let back: Outer = serde_json::from_str(&outer).expect("from_str");
        assert_eq!(back.state.to_value(), json!({"a": [1, "b"]}));
        assert!(StateJson::from_text("{not json".into()).is_err());
    }
}
