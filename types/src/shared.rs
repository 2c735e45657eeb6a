//! [`SharedValue`]: a JSON value that many owners hold at once.
//!
//! A tool call's arguments and result are held by the turn's state, its
//! `tool_start` and `tool_end` events (kept for reconnecting clients), the
//! calls' history and the trace. As plain `serde_json::Value`s each holder
//! had its own deep copy: a tree of map nodes and strings made, and later
//! freed, once per holder. Shared, the tree is made once and freed once,
//! and a copy is a reference count (docs/ARCHITECTURE.md, "The life of one
//! chat turn"; BENCHMARKS.md, round 33).
//!
//! It reads and writes as the value itself: the JSON is unchanged.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A JSON value behind a reference count: cloning it is cheap, and it is
/// never changed in place (make a new one instead).
#[derive(Clone, PartialEq, Default)]
pub struct SharedValue(Arc<Value>);

impl Deref for SharedValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl From<Value> for SharedValue {
    fn from(value: Value) -> Self {
        Self(Arc::new(value))
    }
}

impl PartialEq<Value> for SharedValue {
    fn eq(&self, other: &Value) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedValue> for Value {
    fn eq(&self, other: &SharedValue) -> bool {
        *self == *other.0
    }
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for SharedValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn it_reads_and_writes_as_the_value_itself() {
        let value = json!({"order_id": "ORD-1", "items": [1, 2.5, null], "ok": true});
        let shared = SharedValue::from(value.clone());
        let text = serde_json::to_string(&shared).expect("a value serialises");
        assert_eq!(text, serde_json::to_string(&value).expect("serialises"));
        let back: SharedValue = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back, shared);
        assert_eq!(back, value);
        assert_eq!(shared["order_id"], "ORD-1");
        assert!(SharedValue::default().is_null());
    }

    #[test]
    fn a_copy_shares_the_tree() {
        let shared = SharedValue::from(json!({"a": [1, 2, 3]}));
        let copy = shared.clone();
        assert!(std::ptr::eq(&*shared, &*copy), "a copy shares the value");
    }
}
