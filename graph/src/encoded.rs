//! A value that keeps its JSON between checkpoints.
//!
//! A run's state is written as JSON after every node (`StateJson::encode`),
//! and most of a chat state is its message list, which only grows: the
//! customer's message, the model's replies and the tool results (JSON
//! text full of quotes, the costliest strings to escape) are written again
//! at every checkpoint. An [`Encoded`] value remembers the text it was
//! written as the first time and hands it back verbatim to the next
//! checkpoints, so each message is escaped once per run instead of once
//! per node.
//!
//! The text is only reused where the engine writes a checkpoint: there the
//! serializer is sonic-rs's, which takes raw JSON. Anywhere else (serde_json,
//! a test's `to_value`, a trace) an `Encoded<T>` serializes as `T` does, so
//! the JSON is the same everywhere. Changing the value through `&mut`
//! forgets the text.

use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// sonic-rs's name for a raw JSON value: a struct of this name with one
/// field of this name is written as the field's text (its `LazyValue`
/// serializes so). A test below fails if a sonic-rs release renames it.
const SONIC_RAW: &str = "$sonic_rs::LazyValue";

thread_local! {
    /// Set while `StateJson::encode` writes a state with sonic-rs.
    static REUSE: Cell<bool> = const { Cell::new(false) };
    /// The buffers JSON is written in before it is copied out at its size
    /// (a checkpoint's state, a value's first text), kept between writes:
    /// a fresh buffer grew, a copy each time, and sonic-rs reserves six
    /// times a string's length before escaping it. One buffer per write in
    /// progress: a value's text is written while its state's is.
    static SCRATCH: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer grown past this is not kept.
const SCRATCH_KEPT: usize = 1024 * 1024;

/// Runs `write` into a scratch buffer of this thread and returns the text
/// it wrote, checked to be UTF-8, as `R`.
pub(crate) fn in_scratch<R, E>(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), sonic_rs::Error>,
) -> Result<R, E>
where
    R: for<'a> From<&'a str>,
    E: serde::ser::Error,
{
    let mut buffer = SCRATCH.with_borrow_mut(Vec::pop).unwrap_or_default();
    buffer.clear();
    let written = write(&mut buffer)
        .map_err(E::custom)
        // sonic-rs writes UTF-8; safe code checks it before copying it out,
        // with SIMD (`std`'s check was 2 % of a turn in memory, round 27).
        .and_then(|()| {
            simdutf8::basic::from_utf8(&buffer)
                .map(R::from)
                .map_err(E::custom)
        });
    if buffer.capacity() <= SCRATCH_KEPT {
        SCRATCH.with_borrow_mut(|kept| kept.push(buffer));
    }
    written
}

/// Runs `write` (a sonic-rs serialisation) with the cached texts reused.
pub(crate) fn reusing<R>(write: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            REUSE.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(REUSE.with(|r| r.replace(true)));
    write()
}

/// `T`, with the JSON it was last written as in a checkpoint.
///
/// The value is shared ([`Encoded::shared`]): a model request holds the
/// state's messages as they are, not copies (a copy of every message for
/// every model call was 3 % of a turn in memory, BENCHMARKS.md round 27).
/// Changing it through `&mut` copies it first if it is shared.
pub struct Encoded<T> {
    value: Arc<T>,
    json: OnceLock<Arc<str>>,
}

impl<T> Encoded<T> {
    pub fn new(value: T) -> Self {
        Self {
            value: Arc::new(value),
            json: OnceLock::new(),
        }
    }

    /// The value itself, shared with this one.
    pub fn shared(&self) -> Arc<T> {
        Arc::clone(&self.value)
    }

    /// The value, its text forgotten.
    pub fn into_inner(self) -> T
    where
        T: Clone,
    {
        Arc::unwrap_or_clone(self.value)
    }
}

impl<T> From<T> for Encoded<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T> Deref for Encoded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// Changing the value forgets its text (and copies a shared value first).
impl<T: Clone> DerefMut for Encoded<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.json.take();
        Arc::make_mut(&mut self.value)
    }
}

/// A clone shares the value and the text.
impl<T> Clone for Encoded<T> {
    fn clone(&self) -> Self {
        Self {
            value: Arc::clone(&self.value),
            json: self.json.clone(),
        }
    }
}

impl<T: PartialEq> PartialEq for Encoded<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Encoded<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: Serialize> Serialize for Encoded<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !REUSE.with(Cell::get) {
            return (*self.value).serialize(serializer);
        }
        let text = match self.json.get() {
            Some(text) => text,
            None => {
                let text: Arc<str> =
                    in_scratch(|buffer| sonic_rs::to_writer(buffer, &*self.value))?;
                self.json.get_or_init(|| text)
            }
        };
        use serde::ser::SerializeStruct;
        let mut raw = serializer.serialize_struct(SONIC_RAW, 1)?;
        raw.serialize_field(SONIC_RAW, &**text)?;
        raw.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Encoded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StateJson;
    use serde_json::{json, Value};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Message {
        User { content: String },
        Tool { content: String, call: Value },
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct State {
        messages: Vec<Encoded<Message>>,
        #[serde(flatten)]
        extra: Extra,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Extra {
        last: Option<Encoded<Message>>,
    }

    fn state() -> State {
        let tool = Message::Tool {
            content: "{\"order\":\"ORD-1\",\"note\":\"a\\b\\n\u{1}é😀\"}".into(),
            call: json!({"z": 1, "a": [1.5, -2, u64::MAX]}),
        };
        State {
            messages: vec![
                Message::User {
                    content: "where is \"it\"?".into(),
                }
                .into(),
                tool.clone().into(),
            ],
            extra: Extra {
                last: Some(tool.into()),
            },
        }
    }

    /// The checkpoint's text is serde_json's, the first time and when the
    /// texts are reused (a flattened field goes through serde's buffer),
    /// and it reads back as the same state.
    #[test]
    fn a_checkpoint_writes_the_same_json_every_time() {
        let state = state();
        let expected = serde_json::to_string(&state).expect("serde_json");
        let first = StateJson::encode(&state).expect("encode");
        assert!(state.messages.iter().all(|m| m.json.get().is_some()));
        let again = StateJson::encode(&state).expect("encode");
        assert_eq!(first.get(), expected);
        assert_eq!(again.get(), expected);
        assert_eq!(first.decode::<State>().expect("decode"), state);
        // Outside a checkpoint, the value is written as it is.
        assert_eq!(serde_json::to_string(&state).expect("serde_json"), expected);
        assert_eq!(
            serde_json::to_value(&state).expect("to_value"),
            serde_json::from_str::<Value>(&expected).expect("parse")
        );
    }

    /// A checkpoint takes the text remembered, not the value's (seen by
    /// planting another text).
    #[test]
    fn the_text_is_reused() {
        let planted = Encoded {
            value: Arc::new(Message::User {
                content: "real".into(),
            }),
            json: OnceLock::from(Arc::from("{\"type\":\"user\",\"content\":\"planted\"}")),
        };
        let state = State {
            messages: vec![planted],
            extra: Extra { last: None },
        };
        let text = StateJson::encode(&state).expect("encode");
        assert!(text.get().contains("planted"), "{text:?}");
        assert!(serde_json::to_string(&state)
            .expect("serde_json")
            .contains("real"));
    }

    /// A value first written while another is (an `Encoded` inside an
    /// `Encoded`, inside a state) gets a buffer of its own: the texts are
    /// serde_json's, and stay so when reused.
    #[test]
    fn nested_values_are_written_whole() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Outer {
            inner: Vec<Encoded<Encoded<Message>>>,
        }
        let outer = Outer {
            inner: state().messages.into_iter().map(Encoded::new).collect(),
        };
        let expected = serde_json::to_string(&outer).expect("serde_json");
        for _ in 0..2 {
            let text = StateJson::encode(&outer).expect("encode");
            assert_eq!(text.get(), expected);
        }
        assert!(outer.inner.iter().all(|m| m.json.get().is_some()));
    }

    #[test]
    fn a_change_through_mut_is_written() {
        let mut state = state();
        StateJson::encode(&state).expect("encode");
        if let Message::User { content } = &mut *state.messages[0] {
            content.push_str(" now");
        }
        assert!(state.messages[0].json.get().is_none());
        let text = StateJson::encode(&state).expect("encode");
        assert!(text.get().contains("where is \\\"it\\\"? now"), "{text:?}");
        assert_eq!(
            text.get(),
            serde_json::to_string(&state).expect("serde_json")
        );
    }

    /// A value shared with a model request stays as it was sent when the
    /// state's changes.
    #[test]
    fn a_change_through_mut_leaves_a_shared_value_alone() {
        let mut state = state();
        let sent = state.messages[0].shared();
        if let Message::User { content } = &mut *state.messages[0] {
            content.push_str(" now");
        }
        assert_eq!(
            *sent,
            Message::User {
                content: "where is \"it\"?".into()
            }
        );
        assert!(
            matches!(&*state.messages[0], Message::User { content } if content.ends_with(" now"))
        );
        // Unshared, a change is made in place.
        drop(sent);
        let before = Arc::as_ptr(&state.messages[0].value);
        let _ = &mut *state.messages[0];
        assert_eq!(Arc::as_ptr(&state.messages[0].value), before);
    }
}
